//! Seeded randomness. Every random number in the book comes from a ChaCha
//! generator started from a seed shown in the listing, so every reader, on
//! every machine, gets the same numbers.

use ndarray::Array2;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::f64::consts::PI;

/// The book's random generator.
pub type BookRng = ChaCha8Rng;

// ANCHOR: seeded
/// A generator that gives the same stream for the same seed, everywhere.
pub fn seeded(seed: u64) -> BookRng {
    ChaCha8Rng::seed_from_u64(seed)
}
// ANCHOR_END: seeded

/// One draw from N(0, 1) by the Box–Muller transform.
pub fn standard_normal(rng: &mut impl Rng) -> f64 {
    let u1 = 1.0 - rng.random::<f64>(); // in (0, 1], so ln(u1) is finite
    let u2 = rng.random::<f64>();
    (-2.0 * u1.ln()).sqrt() * (2.0 * PI * u2).cos()
}

/// A (rows, cols) matrix of independent N(0, 1) entries.
pub fn randn(rng: &mut impl Rng, rows: usize, cols: usize) -> Array2<f64> {
    Array2::from_shape_simple_fn((rows, cols), || standard_normal(rng))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_gives_the_same_matrix_and_different_seeds_do_not() {
        for seed in 0..5 {
            let a = randn(&mut seeded(seed), 4, 3);
            let b = randn(&mut seeded(seed), 4, 3);
            let c = randn(&mut seeded(seed + 100), 4, 3);
            assert_eq!(a, b);
            assert_ne!(a, c);
        }
    }

    #[test]
    fn standard_normal_has_mean_zero_and_variance_one() {
        for seed in 0..4 {
            let x = randn(&mut seeded(seed), 200, 500);
            let n = x.len() as f64;
            let mean = x.sum() / n;
            let var = x.mapv(|v| (v - mean).powi(2)).sum() / n;
            // Standard errors at n = 1e5: 0.003 for the mean, 0.0045 for
            // the variance; these bounds are more than four of them.
            assert!(mean.abs() < 0.015, "seed {seed}: mean {mean}");
            assert!((var - 1.0).abs() < 0.02, "seed {seed}: var {var}");
            assert!(x.iter().all(|v| v.is_finite()));
        }
    }
}
