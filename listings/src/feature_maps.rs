//! Feature maps φ: ℝ^d → ℝ^p. Linear attention replaces the softmax's
//! similarity exp(qᵀk/√d) with φ(q)ᵀφ(k); each map here takes queries or
//! keys with one token per row, x: (N, d), and returns φ(x): (N, p).
//!
//! Chapter "Delete the softmax" uses elu+1 (Katharopoulos et al. 2020).

use ndarray::{Array, ArrayRef, Dimension};

// ANCHOR: elu_plus_one
/// φ(x) = elu(x) + 1, entry by entry: x + 1 for x > 0, eˣ for x ≤ 0.
/// Every feature is positive, and p = d. x: (N, d) or a single row (d).
pub fn elu_plus_one<D: Dimension>(x: &ArrayRef<f64, D>) -> Array<f64, D> {
    x.mapv(|x| if x > 0.0 { x + 1.0 } else { x.exp() })
}
// ANCHOR_END: elu_plus_one

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::{randn, seeded};
    use ndarray::array;

    #[test]
    fn elu_plus_one_is_positive() {
        for seed in 0..10 {
            for (n, d) in [(1, 1), (12, 8), (300, 64)] {
                // Entries of size up to about ±30: e^x underflows only
                // far below that (x < −745).
                let x = randn(&mut seeded(seed), n, d) * 10.0;
                let phi = elu_plus_one(&x);
                assert_eq!(phi.dim(), (n, d));
                assert!(phi.iter().all(|&f| f > 0.0), "seed {seed}");
            }
        }
    }

    #[test]
    fn elu_plus_one_is_x_plus_one_above_zero_and_exp_below() {
        for seed in 0..10 {
            let x = randn(&mut seeded(seed), 20, 6) * 3.0;
            let phi = elu_plus_one(&x);
            for (&x, &f) in x.iter().zip(&phi) {
                let want = if x > 0.0 { x + 1.0 } else { x.exp() };
                assert_eq!(f, want);
            }
        }
        let x = array![-2.0, -1e-9, 0.0, 1e-9, 3.0];
        let phi = elu_plus_one(&x);
        assert_eq!(phi[2], 1.0); // the two pieces meet at φ(0) = 1
        assert_eq!(phi[4], 4.0);
        assert_eq!(phi[0], (-2.0_f64).exp());
        // continuous at 0: both sides within 1e-9 of 1
        assert!((phi[1] - 1.0).abs() < 1e-8 && (phi[3] - 1.0).abs() < 1e-8);
    }

    #[test]
    fn elu_plus_one_maps_rows_like_it_maps_the_matrix() {
        let x = randn(&mut seeded(3), 5, 4);
        let phi = elu_plus_one(&x);
        for (t, row) in x.rows().into_iter().enumerate() {
            assert_eq!(elu_plus_one(&row), phi.row(t));
        }
    }
}
