//! Feature maps φ: ℝ^d → ℝ^p. Linear attention replaces the softmax's
//! similarity exp(qᵀk/√d) with φ(q)ᵀφ(k); each map here takes queries or
//! keys with one token per row, x: (N, d), and returns φ(x): (N, p).
//!
//! Chapter "Delete the softmax" uses elu+1 (Katharopoulos et al. 2020).

use crate::input::{InputError, all_finite, finite};
use crate::linalg::gram_schmidt;
use crate::random::standard_normal;
use ndarray::{
    Array, Array1, Array2, ArrayRef, ArrayRef1, ArrayRef2, Dimension,
};
use rand::Rng;

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
/// An error if ν is outside 1 ≤ ν < 2d, x is not finite, or a product
/// overflows.
pub fn dpfp(x: &ArrayRef1<f64>, nu: usize) -> Result<Array1<f64>, InputError> {
    let d = x.len();
    if !(1..2 * d).contains(&nu) {
        let rule = "DPFP-ν needs 1 ≤ ν < 2d for keys of width d";
        return Err(InputError::BadParameter {
            name: "ν",
            value: nu,
            rule,
        });
    }
    all_finite("x", x)?;
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
    finite("DPFP-ν features φ(x)", phi)
}
// ANCHOR_END: dpfp

// ANCHOR: favor_plus
/// FAVOR+ (Choromanski et al. 2021) with projection Ω: (d, r):
/// φ(x) = exp([Ωᵀx, −Ωᵀx] − ‖x‖²/2) / √(2r) ∈ ℝ^{2r}. For Ω with
/// N(0, I) columns, E[φ(q)ᵀφ(k)] = exp(qᵀk). An error if x and Ω
/// disagree in d, either is not finite, or an exponential overflows.
pub fn favor_plus(
    x: &ArrayRef1<f64>,
    omega: &ArrayRef2<f64>,
) -> Result<Array1<f64>, InputError> {
    if x.len() != omega.nrows() {
        return Err(InputError::ShapeMismatch {
            left: ("x", [1, x.len()]),
            right: ("Ω", [omega.nrows(), omega.ncols()]),
            rule: "FAVOR+ needs one row of Ω per entry of x",
        });
    }
    all_finite("x", x)?;
    all_finite("Ω", omega)?;
    let r = omega.ncols();
    let u = omega.t().dot(x);
    let half_sq = x.dot(x) / 2.0;
    let scale = 1.0 / ((2 * r) as f64).sqrt();
    let phi = u
        .iter()
        .copied()
        .chain(u.iter().map(|&u| -u))
        .map(|u| (u - half_sq).exp() * scale)
        .collect();
    finite("FAVOR+ features φ(x)", phi)
}
// ANCHOR_END: favor_plus

// ANCHOR: favor_projection
/// FAVOR+'s random projection Ω: (d, r) with orthogonal columns
/// (Choromanski et al. 2021): blocks of up to d orthonormal directions,
/// each rescaled to the length of a fresh N(0, I_d) vector, so that every
/// column on its own is distributed as N(0, I_d).
pub fn favor_projection(rng: &mut impl Rng, d: usize, r: usize) -> Array2<f64> {
    let mut omega = Array2::zeros((d, r));
    for start in (0..r).step_by(d.max(1)) {
        let cols = (r - start).min(d);
        let block = gram_schmidt(rng, cols, d); // (cols, d), cols ≤ d
        for (c, direction) in block.rows().into_iter().enumerate() {
            let g = Array1::from_shape_simple_fn(d, || standard_normal(rng));
            let length = g.dot(&g).sqrt();
            omega.column_mut(start + c).assign(&(&direction * length));
        }
    }
    omega
}
// ANCHOR_END: favor_projection

/// Apply a feature map of one vector to every row of x: (N, d) → (N, p);
/// an error of row t names row t of x.
pub fn map_rows(
    x: &ArrayRef2<f64>,
    phi: impl Fn(&ArrayRef1<f64>) -> Result<Array1<f64>, InputError>,
) -> Result<Array2<f64>, InputError> {
    let mut rows = Vec::with_capacity(x.nrows());
    for (t, row) in x.rows().into_iter().enumerate() {
        rows.push(phi(&row).map_err(|e| e.in_row(t))?);
    }
    let p = rows.first().map_or(0, |r| r.len());
    Ok(Array2::from_shape_fn((rows.len(), p), |(t, i)| rows[t][i]))
}

// ANCHOR: FeatureMap
/// The feature maps of the book, one type for every chapter.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FeatureMap {
    /// elu(x) + 1, p = d.
    EluPlusOne,
    /// DPFP-ν, p = 2νd.
    Dpfp(usize),
    /// FAVOR+ with r random features, p = 2r.
    Favor(usize),
}

impl FeatureMap {
    /// φ of every row of x: (n, d) → (n, p); `omega` is FAVOR+'s Ω: (d, r).
    pub fn apply(
        self,
        x: &ArrayRef2<f64>,
        omega: &Array2<f64>,
    ) -> Result<Array2<f64>, InputError> {
        match self {
            FeatureMap::EluPlusOne => {
                all_finite("x", x)?;
                Ok(elu_plus_one(x))
            }
            FeatureMap::Dpfp(nu) => map_rows(x, |r| dpfp(r, nu)),
            FeatureMap::Favor(r) if omega.ncols() != r => {
                Err(InputError::ShapeMismatch {
                    left: ("Ω", [omega.nrows(), omega.ncols()]),
                    right: ("FAVOR+ r", [omega.nrows(), r]),
                    rule: "FAVOR+ with r features needs Ω with r columns",
                })
            }
            FeatureMap::Favor(_) => map_rows(x, |r| favor_plus(r, omega)),
        }
    }
}
// ANCHOR_END: FeatureMap

impl FeatureMap {
    /// p for keys of width d.
    pub fn width(self, d: usize) -> usize {
        match self {
            FeatureMap::EluPlusOne => d,
            FeatureMap::Dpfp(nu) => 2 * nu * d,
            FeatureMap::Favor(r) => 2 * r,
        }
    }

    /// The name the outputs and figures use.
    pub fn name(self) -> String {
        match self {
            FeatureMap::EluPlusOne => "elu+1".to_string(),
            FeatureMap::Dpfp(nu) => format!("DPFP-{nu}"),
            FeatureMap::Favor(r) => format!("FAVOR+ r={r}"),
        }
    }

    /// Ω for FAVOR+ (orthogonal random features); an empty (d, 0) otherwise.
    pub fn projection(self, rng: &mut impl Rng, d: usize) -> Array2<f64> {
        match self {
            FeatureMap::Favor(r) => favor_projection(rng, d, r),
            _ => Array2::zeros((d, 0)),
        }
    }
}

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
    fn elu_plus_one_has_a_slope_below_zero_where_relu_has_none() {
        // Central differences at negative inputs: elu+1's slope is e^x,
        // positive; relu's (and relu + 1's) is exactly zero.
        let h = 1e-6;
        let slope =
            |f: &dyn Fn(f64) -> f64, x: f64| (f(x + h) - f(x - h)) / (2.0 * h);
        let elu = |x: f64| elu_plus_one(&array![x])[0];
        let relu_plus_one = |x: f64| x.max(0.0) + 1.0;
        for seed in 0..10 {
            let xs =
                randn(&mut seeded(seed), 1, 50).mapv(|x| -x.abs() * 4.0 - h);
            for &x in &xs {
                let s = slope(&elu, x);
                assert!(s > 0.0, "x = {x}");
                assert!(
                    (s - x.exp()).abs() < 1e-6 * x.exp().max(1e-3),
                    "x = {x}"
                );
                assert_eq!(slope(&relu_plus_one, x), 0.0, "x = {x}");
            }
        }
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
                let phi = dpfp(&x, nu).unwrap();
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
        let phi = dpfp(&array![-1.0, -2.0], 1).unwrap();
        assert!(phi.iter().all(|&f| f >= 0.0));
        assert!(phi.iter().any(|&f| f > 0.0));
    }

    #[test]
    fn favor_plus_features_are_positive_with_width_two_r() {
        let omega = randn(&mut seeded(1), 4, 6);
        for seed in 0..10 {
            let x = randn(&mut seeded(seed), 1, 4).row(0).to_owned();
            let phi = favor_plus(&x, &omega).unwrap();
            assert_eq!(phi.len(), 12);
            assert!(phi.iter().all(|&f| f > 0.0));
        }
    }

    #[test]
    fn map_rows_applies_the_map_row_by_row() {
        let x = randn(&mut seeded(2), 5, 3);
        let phi = map_rows(&x, |r| dpfp(r, 2)).unwrap();
        assert_eq!(phi.dim(), (5, 12));
        for t in 0..5 {
            assert_eq!(phi.row(t), dpfp(&x.row(t), 2).unwrap());
        }
    }
}

#[cfg(test)]
mod feature_map_claims {
    use super::*;
    use crate::random::{randn, seeded};
    use ndarray::array;

    /// Mean and standard error of φ(q)ᵀφ(k) over `draws` projections.
    fn favor_mean_and_error(
        q: &Array1<f64>,
        k: &Array1<f64>,
        r: usize,
        draws: usize,
        orthogonal: bool,
        seed: u64,
    ) -> (f64, f64) {
        let mut rng = seeded(seed);
        let d = q.len();
        let estimates: Vec<f64> = (0..draws)
            .map(|_| {
                let omega = if orthogonal {
                    favor_projection(&mut rng, d, r)
                } else {
                    randn(&mut rng, d, r)
                };
                favor_plus(q, &omega)
                    .unwrap()
                    .dot(&favor_plus(k, &omega).unwrap())
            })
            .collect();
        let n = draws as f64;
        let mean = estimates.iter().sum::<f64>() / n;
        let var = estimates.iter().map(|e| (e - mean).powi(2)).sum::<f64>()
            / (n - 1.0);
        (mean, (var / n).sqrt())
    }

    #[test]
    fn favor_plus_is_an_unbiased_estimate_of_exp_q_dot_k() {
        // Over many draws of Ω the mean estimate must sit within four
        // standard errors of exp(qᵀk); a biased map (say, one missing the
        // −‖x‖²/2) lands many standard errors away.
        for seed in 0..5 {
            for (d, r) in [(2, 1), (4, 8), (8, 16)] {
                let mut rng = seeded(100 + seed);
                // q and k of length 0.8, at a random angle.
                let mut draw = || {
                    let x = randn(&mut rng, 1, d).row(0).to_owned();
                    &x * (0.8 / x.dot(&x).sqrt())
                };
                let (q, k) = (draw(), draw());
                let exact = q.dot(&k).exp();
                for orthogonal in [false, true] {
                    let (mean, se) =
                        favor_mean_and_error(&q, &k, r, 4000, orthogonal, seed);
                    assert!(
                        (mean - exact).abs() < 4.0 * se,
                        "d {d} r {r} seed {seed}: {mean} vs {exact} ± {se}"
                    );
                    assert!(se < 0.05 * exact, "too few draws to tell");
                    // Without the −‖x‖²/2 the estimate is off by the factor
                    // exp((‖q‖² + ‖k‖²)/2), far outside the same band.
                    let lift = ((q.dot(&q) + k.dot(&k)) / 2.0).exp();
                    assert!((mean * lift - exact).abs() > 4.0 * se * lift);
                }
            }
        }
    }

    #[test]
    fn favor_plus_of_inputs_scaled_by_d_to_the_minus_quarter_estimates_the_softmax_kernel()
     {
        // Softmax uses exp(qᵀk / √d). Scaling q and k by d^(−1/4) each
        // turns FAVOR+'s target exp(qᵀk) into it; unscaled, the estimate
        // misses it.
        for seed in 0..5 {
            for (d, r) in [(4, 8), (16, 16)] {
                let mut rng = seeded(200 + seed);
                let mut draw = || {
                    let x = randn(&mut rng, 1, d).row(0).to_owned();
                    &x / x.dot(&x).sqrt()
                };
                // Length 2 each, cosine −3/4: qᵀk = −3, far from −3/√d.
                let (q, u) = (draw() * 2.0, draw());
                let u = &u - &(&q * (u.dot(&q) / 4.0));
                let u = &u / u.dot(&u).sqrt();
                let k = &q * -0.75 + &u * (2.0 * (1.0 - 0.5625_f64).sqrt());
                let softmax = (q.dot(&k) / (d as f64).sqrt()).exp();
                let shrink = (d as f64).powf(-0.25);
                let (q_s, k_s) = (&q * shrink, &k * shrink);
                let (mean, se) =
                    favor_mean_and_error(&q_s, &k_s, r, 4000, true, seed);
                assert!(
                    (mean - softmax).abs() < 4.0 * se,
                    "d {d} seed {seed}: {mean} vs {softmax} ± {se}"
                );
                let (raw, raw_se) =
                    favor_mean_and_error(&q, &k, r, 4000, true, seed);
                assert!(
                    (raw - softmax).abs() > 4.0 * raw_se.max(se),
                    "d {d} seed {seed}: unscaled {raw} vs {softmax}"
                );
            }
        }
    }

    #[test]
    fn favor_projection_is_orthogonal_within_blocks_of_d() {
        for seed in 0..5 {
            for (d, r) in [(4, 4), (4, 10), (8, 3)] {
                let omega = favor_projection(&mut seeded(seed), d, r);
                assert_eq!(omega.dim(), (d, r));
                for a in 0..r {
                    for b in a + 1..r {
                        if a / d == b / d {
                            let dot = omega.column(a).dot(&omega.column(b));
                            assert!(dot.abs() < 1e-10, "columns {a}, {b}");
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn dpfp_splits_the_plane_into_four_regions_each_lighting_one_feature() {
        // ν = 1, d = 2: x̃ = [x₁⁺, x₂⁺, x₁⁻, x₂⁻] and φ_i = x̃_i x̃_{i−1}:
        // quadrant I lights φ₁, II φ₂, III φ₃, IV φ₀.
        let quadrants = [((1.0, 1.0), 1), ((-1.0, 1.0), 2), ((-1.0, -1.0), 3)];
        let quadrants = [quadrants.as_slice(), &[((1.0, -1.0), 0)]].concat();
        for seed in 0..20 {
            let mut rng = seeded(seed);
            let sizes = randn(&mut rng, 4, 2).mapv(f64::abs);
            let mut lit = Vec::new();
            for (i, &((s1, s2), feature)) in quadrants.iter().enumerate() {
                let x = array![s1 * sizes[[i, 0]], s2 * sizes[[i, 1]]];
                let phi = dpfp(&x, 1).unwrap();
                assert_eq!(phi.len(), 4);
                let on: Vec<usize> = (0..4).filter(|&j| phi[j] > 0.0).collect();
                assert_eq!(on, vec![feature], "x = {x}");
                assert_eq!(phi[feature], x[0].abs() * x[1].abs());
                lit.push(phi);
            }
            // Points in different quadrants have orthogonal features.
            for a in 0..4 {
                for b in a + 1..4 {
                    assert_eq!(lit[a].dot(&lit[b]), 0.0);
                }
            }
        }
    }

    #[test]
    fn dpfp_lights_at_most_half_of_its_features() {
        // x̃ has one non-zero entry per pair (x_i⁺, x_i⁻), so d of its 2d
        // entries; each block x̃ ⊙ roll(x̃, j) is non-zero at most there.
        for seed in 0..20 {
            for (d, nu) in [(2, 1), (8, 1), (8, 3), (64, 2)] {
                let x = randn(&mut seeded(seed), 1, d).row(0).to_owned();
                let phi = dpfp(&x, nu).unwrap();
                let lit = phi.iter().filter(|&&f| f > 0.0).count();
                assert!(2 * lit <= phi.len(), "d {d} ν {nu}: {lit}");
            }
        }
    }

    #[test]
    fn dpfp_differs_from_the_minus_relu_variant_in_sign_and_in_what_it_lights()
    {
        // The variant x̃ = [relu(x), −relu(x)] some code uses: its products
        // can be negative, and a vector with no positive entry lights nothing.
        let wrong = |x: &Array1<f64>, nu: usize| {
            let d = x.len();
            let xt: Vec<f64> = x
                .iter()
                .map(|v| v.max(0.0))
                .chain(x.iter().map(|v| -v.max(0.0)))
                .collect();
            let m = 2 * d;
            Array1::from_shape_fn(nu * m, |f| {
                let (j, i) = (f / m + 1, f % m);
                xt[i] * xt[(i + m - j) % m]
            })
        };
        let mut negative_seen = false;
        for seed in 0..20 {
            let x = randn(&mut seeded(seed), 1, 8).row(0).to_owned();
            assert!(dpfp(&x, 2).unwrap().iter().all(|&f| f >= 0.0));
            negative_seen |= wrong(&x, 2).iter().any(|&f| f < 0.0);
            let negative = x.mapv(|v| -v.abs() - 0.1);
            assert!(wrong(&negative, 2).iter().all(|&f| f == 0.0));
            assert!(dpfp(&negative, 2).unwrap().iter().any(|&f| f > 0.0));
        }
        assert!(negative_seen, "the wrong variant makes negative features");
    }

    #[test]
    fn dpfp_one_is_all_zero_only_for_odd_width_with_alternating_signs() {
        // ν = 1 multiplies neighbours of x̃; they can all miss each other
        // only when the signs of x alternate around an odd-length cycle.
        let odd = array![1.0, -2.0, 0.5];
        assert!(dpfp(&odd, 1).unwrap().iter().all(|&f| f == 0.0));
        assert!(dpfp(&odd, 2).unwrap().iter().any(|&f| f > 0.0));
        let even = array![1.0, -2.0, 0.5, -1.0];
        assert!(dpfp(&even, 1).unwrap().iter().any(|&f| f > 0.0));
        // Every sign pattern of an even width lights at least one feature.
        for d in [2, 4, 8] {
            for pattern in 0..(1u32 << d) {
                let x = Array1::from_shape_fn(d, |i| {
                    if pattern >> i & 1 == 1 { 1.0 } else { -1.0 }
                });
                assert!(dpfp(&x, 1).unwrap().iter().any(|&f| f > 0.0), "{x}");
            }
        }
    }
}
