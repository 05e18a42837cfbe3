//! Feature maps φ: ℝ^d → ℝ^p. Linear attention replaces the softmax's
//! similarity exp(qᵀk/√d) with φ(q)ᵀφ(k); each map here takes queries or
//! keys with one token per row, x: (N, d), and returns φ(x): (N, p).
//!
//! Chapter "Delete the softmax" uses elu+1 (Katharopoulos et al. 2020).

use ndarray::{
    Array, Array1, Array2, ArrayRef, ArrayRef1, ArrayRef2, Dimension,
};

// ANCHOR: elu_plus_one
/// φ(x) = elu(x) + 1, entry by entry: x + 1 for x > 0, eˣ for x ≤ 0.
/// Every feature is positive, and p = d. x: (N, d) or a single row (d).
pub fn elu_plus_one<D: Dimension>(x: &ArrayRef<f64, D>) -> Array<f64, D> {
    x.mapv(|x| if x > 0.0 { x + 1.0 } else { x.exp() })
}
// ANCHOR_END: elu_plus_one

// ANCHOR: dpfp
/// DPFP-ν (Schlag et al. 2021): with x̃ = [relu(x), relu(−x)] ∈ ℝ^{2d},
/// φ(x) = [x̃ ⊙ roll(x̃, 1), …, x̃ ⊙ roll(x̃, ν)] ∈ ℝ^{2νd}, where
/// roll(x̃, j)_i = x̃_{(i − j) mod 2d}. Deterministic, non-negative, sparse.
pub fn dpfp(x: &ArrayRef1<f64>, nu: usize) -> Array1<f64> {
    let d = x.len();
    assert!(
        (1..2 * d).contains(&nu),
        "DPFP-ν needs 1 ≤ ν < 2d, got ν = {nu} for d = {d}"
    );
    let relu = |v: f64| v.max(0.0);
    let x_tilde: Array1<f64> = x
        .iter()
        .map(|&v| relu(v))
        .chain(x.iter().map(|&v| relu(-v)))
        .collect();
    let m = 2 * d;
    let mut phi = Array1::zeros(nu * m);
    for j in 1..=nu {
        for i in 0..m {
            phi[(j - 1) * m + i] = x_tilde[i] * x_tilde[(i + m - j) % m];
        }
    }
    phi
}
// ANCHOR_END: dpfp

// ANCHOR: favor_plus
/// FAVOR+ (Choromanski et al. 2021) with projection Ω: (d, r):
/// φ(x) = exp([Ωᵀx, −Ωᵀx] − ‖x‖²/2) / √(2r) ∈ ℝ^{2r}. For Ω with
/// N(0, I) columns, E[φ(q)ᵀφ(k)] = exp(qᵀk).
pub fn favor_plus(x: &ArrayRef1<f64>, omega: &ArrayRef2<f64>) -> Array1<f64> {
    assert_eq!(
        x.len(),
        omega.nrows(),
        "FAVOR+: x has width {} but Ω is {:?}",
        x.len(),
        omega.dim()
    );
    let r = omega.ncols();
    let u = omega.t().dot(x);
    let half_sq = x.dot(x) / 2.0;
    let scale = 1.0 / ((2 * r) as f64).sqrt();
    u.iter()
        .copied()
        .chain(u.iter().map(|&u| -u))
        .map(|u| (u - half_sq).exp() * scale)
        .collect()
}
// ANCHOR_END: favor_plus

// ANCHOR: map_rows
/// Apply a feature map of one vector to every row of x: (N, d) → (N, p).
pub fn map_rows(
    x: &ArrayRef2<f64>,
    phi: impl Fn(&ArrayRef1<f64>) -> Array1<f64>,
) -> Array2<f64> {
    let rows: Vec<Array1<f64>> =
        x.rows().into_iter().map(|r| phi(&r)).collect();
    let p = rows.first().map_or(0, |r| r.len());
    Array2::from_shape_fn((rows.len(), p), |(t, i)| rows[t][i])
}
// ANCHOR_END: map_rows

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

#[cfg(test)]
mod dpfp_favor_tests {
    use super::*;
    use crate::random::{randn, seeded};
    use ndarray::array;

    #[test]
    fn dpfp_has_width_two_nu_d_and_is_non_negative() {
        for seed in 0..10 {
            for (d, nu) in [(1, 1), (4, 1), (4, 3), (16, 2)] {
                let x = randn(&mut seeded(seed), 1, d).row(0).to_owned();
                let phi = dpfp(&x, nu);
                assert_eq!(phi.len(), 2 * nu * d);
                assert!(phi.iter().all(|&f| f >= 0.0));
            }
        }
    }

    #[test]
    fn dpfp_uses_relu_of_minus_x_not_minus_relu_of_x() {
        // With x̃ = [relu(x), −relu(x)] the products of a positive and a
        // negative half would be ≤ 0; the correct x̃ makes every one ≥ 0,
        // and a negative input still lights features.
        let phi = dpfp(&array![-1.0, -2.0], 1);
        assert!(phi.iter().all(|&f| f >= 0.0));
        assert!(phi.iter().any(|&f| f > 0.0));
    }

    #[test]
    fn favor_plus_features_are_positive_with_width_two_r() {
        let omega = randn(&mut seeded(1), 4, 6);
        for seed in 0..10 {
            let x = randn(&mut seeded(seed), 1, 4).row(0).to_owned();
            let phi = favor_plus(&x, &omega);
            assert_eq!(phi.len(), 12);
            assert!(phi.iter().all(|&f| f > 0.0));
        }
    }

    #[test]
    fn map_rows_applies_the_map_row_by_row() {
        let x = randn(&mut seeded(2), 5, 3);
        let phi = map_rows(&x, |r| dpfp(r, 2));
        assert_eq!(phi.dim(), (5, 12));
        for t in 0..5 {
            assert_eq!(phi.row(t), dpfp(&x.row(t), 2));
        }
    }
}
