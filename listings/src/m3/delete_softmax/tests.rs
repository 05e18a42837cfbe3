use super::study::*;
use super::*;
use crate::linalg::worst_row_relative_difference;
use crate::m3::attention::softmax_attention;
use crate::phi::elu_plus_one;
use crate::random::{randn, seeded};
use approx::assert_relative_eq;
use ndarray::{array, s};

/// "The last bits of a double": 64 units in the last place of 1.
const LAST_BITS: f64 = 64.0 * f64::EPSILON;

/// Shapes (N, d, m) from a single token to a few hundred.
const SHAPES: [(usize, usize, usize); 5] =
    [(1, 1, 1), (2, 3, 4), (12, 8, 8), (50, 16, 5), (200, 64, 32)];

fn random(seed: u64, n: usize, d: usize, m: usize) -> [Array2<f64>; 3] {
    let mut rng = seeded(seed);
    [
        randn(&mut rng, n, d),
        randn(&mut rng, n, d),
        randn(&mut rng, n, m),
    ]
}

#[test]
fn softmax_is_kernel_attention_with_the_exp_kernel() {
    for seed in 0..10 {
        for (n, d, m) in SHAPES {
            let [q, k, v] = random(seed, n, d, m);
            for mask in [Mask::None, Mask::Causal] {
                let a = softmax_attention(&q, &k, &v, mask).unwrap();
                let b =
                    kernel_attention(&q, &k, &v, mask, softmax_kernel).unwrap();
                assert_relative_eq!(
                    a.weights,
                    b.weights,
                    max_relative = 1e-10,
                    epsilon = 1e-14
                );
                assert_relative_eq!(
                    a.output,
                    b.output,
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
            }
        }
    }
}

#[test]
fn kernel_attention_with_any_positive_kernel_averages_the_values() {
    // Four positive kernels: every weight a visible key gets lies in
    // (0, 1], a key the mask hides gets 0, each row sums to one, and
    // each output lies inside the range of the values its query sees.
    type Kernel = fn(&ArrayRef1<f64>, &ArrayRef1<f64>) -> f64;
    let kernels: [Kernel; 4] = [
        softmax_kernel,
        |q, k| (-(q - k).mapv(|x| x * x).sum() / 2.0).exp(),
        |q, k| elu_plus_one(q).dot(&elu_plus_one(k)),
        |_, _| 0.5,
    ];
    for seed in 0..5 {
        for (n, d, m) in SHAPES {
            let [q, k, v] = random(seed, n, d, m);
            for mask in [Mask::None, Mask::Causal] {
                for sim in kernels {
                    let a = kernel_attention(&q, &k, &v, mask, sim).unwrap();
                    for t in 0..n {
                        let seen = if mask == Mask::Causal { t + 1 } else { n };
                        let row = a.weights.row(t);
                        assert_relative_eq!(row.sum(), 1.0, epsilon = 1e-12);
                        for (j, &w) in row.iter().enumerate() {
                            if j < seen {
                                assert!(w > 0.0 && w <= 1.0, "{w}");
                            } else {
                                assert_eq!(w, 0.0);
                            }
                        }
                        for c in 0..m {
                            let past = v.slice(ndarray::s![..seen, c]);
                            let lo = past.fold(f64::INFINITY, |a, &b| a.min(b));
                            let hi =
                                past.fold(f64::NEG_INFINITY, |a, &b| a.max(b));
                            let o = a.output[[t, c]];
                            assert!(o >= lo - 1e-12 && o <= hi + 1e-12);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn kernel_attention_with_a_feature_kernel_is_linear_attention() {
    let phi_kernel = |q: &ArrayRef1<f64>, k: &ArrayRef1<f64>| {
        elu_plus_one(q).dot(&elu_plus_one(k))
    };
    for seed in 0..10 {
        for (n, d, m) in SHAPES {
            let [q, k, v] = random(seed, n, d, m);
            let a =
                kernel_attention(&q, &k, &v, Mask::None, phi_kernel).unwrap();
            let (phi_q, phi_k) = (elu_plus_one(&q), elu_plus_one(&k));
            for b in [
                linear_attention_memory_first(&phi_q, &phi_k, &v),
                linear_attention_scores_first(&phi_q, &phi_k, &v),
            ] {
                let b = b.unwrap();
                assert!(worst_row_relative_difference(&a.output, &b) < 1e-12);
            }
            // The chain as the chapter writes it, with the mask: the
            // kernel read over j ≤ t equals S_t φ(q_t) / z_tᵀ φ(q_t), S_t
            // and z_t the memory of the first t tokens alone.
            let a =
                kernel_attention(&q, &k, &v, Mask::Causal, phi_kernel).unwrap();
            for t in 0..n {
                let past = s![..=t, ..];
                let (q_t, rows) = (phi_q.slice(s![t..=t, ..]), t + 1);
                let b = linear_attention_memory_first(
                    &q_t,
                    &phi_k.slice(past),
                    &v.slice(past),
                )
                .unwrap();
                let want = a.output.slice(s![t..=t, ..]).to_owned();
                assert!(
                    worst_row_relative_difference(&want, &b) < 1e-12,
                    "seed {seed}, N {n}, t {t} of {rows}"
                );
            }
            // ... and the mask matters: the unmasked read differs.
            if n > 1 {
                let none = kernel_attention(&q, &k, &v, Mask::None, phi_kernel);
                let gap = worst_row_relative_difference(
                    &none.unwrap().output,
                    &a.output,
                );
                assert!(gap > 1e-6, "seed {seed}, N {n}: {gap}");
            }
        }
    }
}

#[test]
fn both_groupings_give_the_same_outputs() {
    let lengths = [1, 2, 7, 64, 500, 2000];
    for seed in 0..5 {
        for (i, &n) in lengths.iter().enumerate() {
            let (d, m) = ([4, 8, 16][i % 3], [1, 8, 5][i % 3]);
            let [q, k, v] = random(seed, n, d, m);
            let (phi_q, phi_k) = (elu_plus_one(&q), elu_plus_one(&k));
            let a = linear_attention_scores_first(&phi_q, &phi_k, &v).unwrap();
            let b = linear_attention_memory_first(&phi_q, &phi_k, &v).unwrap();
            assert_relative_eq!(a, b, max_relative = 1e-10, epsilon = 1e-12);
            assert!(worst_row_relative_difference(&a, &b) < 1e-12);
        }
    }
    // ... and with a query count different from the key count.
    let [q, _, _] = random(9, 30, 8, 8);
    let [_, k, v] = random(10, 70, 8, 3);
    let (phi_q, phi_k) = (elu_plus_one(&q), elu_plus_one(&k));
    let a = linear_attention_scores_first(&phi_q, &phi_k, &v).unwrap();
    let b = linear_attention_memory_first(&phi_q, &phi_k, &v).unwrap();
    assert_eq!(a.dim(), (30, 3));
    assert!(worst_row_relative_difference(&a, &b) < 1e-12);
}

#[test]
fn memory_shape_does_not_depend_on_the_sequence_length() {
    for (p, m) in [(1, 1), (8, 8), (16, 5)] {
        for n in [1, 10, 100, 1000, 4000] {
            let mut rng = seeded(n as u64);
            let phi_k = elu_plus_one(&randn(&mut rng, n, p));
            let v = randn(&mut rng, n, m);
            let Memory { s, z } = sequence_memory(&phi_k, &v);
            assert_eq!(s.dim(), (m, p));
            assert_eq!(z.dim(), p);
        }
    }
}

#[test]
fn memory_is_a_sum_of_outer_products_v_phi_k() {
    // S = Σ_j v_j φ(k_j)ᵀ, entry by entry: S_ab = Σ_j v_ja φ(k_j)_b.
    for seed in 0..5 {
        let mut rng = seeded(seed);
        let phi_k = elu_plus_one(&randn(&mut rng, 9, 4));
        let v = randn(&mut rng, 9, 3);
        let Memory { s, z } = sequence_memory(&phi_k, &v);
        let mut sum = Array2::<f64>::zeros((3, 4));
        for j in 0..9 {
            for a in 0..3 {
                for b in 0..4 {
                    sum[[a, b]] += v[[j, a]] * phi_k[[j, b]];
                }
            }
        }
        assert_relative_eq!(s, sum, max_relative = 1e-12);
        assert_relative_eq!(z, phi_k.sum_axis(Axis(0)), max_relative = 0.0);
    }
}

#[test]
fn memory_grows_by_one_outer_product_per_token() {
    // S_t = S_{t−1} + v_t φ(k_t)ᵀ and z_t = z_{t−1} + φ(k_t), from the
    // memory of the empty prefix, S_0 = 0 and z_0 = 0.
    for seed in 0..5 {
        for (n, p, m) in [(1, 1, 1), (9, 4, 3), (40, 8, 5)] {
            let mut rng = seeded(seed);
            let phi_k = elu_plus_one(&randn(&mut rng, n, p));
            let v = randn(&mut rng, n, m);
            let prefix = |t: usize| {
                let rows = ndarray::s![..t, ..];
                sequence_memory(&phi_k.slice(rows), &v.slice(rows))
            };
            let empty = prefix(0);
            assert!(empty.s.iter().chain(&empty.z).all(|&x| x == 0.0));
            for t in 0..n {
                let (before, after) = (prefix(t), prefix(t + 1));
                let (v_t, k_t) = (v.row(t), phi_k.row(t));
                let term =
                    Array2::from_shape_fn((m, p), |(a, b)| v_t[a] * k_t[b]);
                assert_relative_eq!(
                    after.s,
                    before.s + term,
                    max_relative = 1e-12,
                    epsilon = 1e-14
                );
                assert_relative_eq!(
                    after.z,
                    before.z + k_t,
                    max_relative = 1e-12
                );
            }
        }
    }
}

#[test]
fn grouping_study_builds_n_by_n_scores_and_a_fixed_memory() {
    // The chapter's table: the scores-first product grows with N in
    // both directions, S is (m, p) = (8, 8) at every N, and the outputs
    // differ by rounding only.
    let rows = grouping_study(&GROUPING_LENGTHS, GROUPING_SEEDS);
    for r in &rows {
        assert_eq!(r.scores_shape, (r.n, r.n));
        assert_eq!(r.memory_shape, (8, 8));
        assert!(r.difference < LAST_BITS, "N = {}: {:e}", r.n, r.difference);
    }
    assert_eq!(rows.last().unwrap().n, 2000);
}

#[test]
fn groupings_reject_mismatched_or_empty_input() {
    let [q, k, v] = random(0, 12, 8, 8);
    let narrow = randn(&mut seeded(1), 12, 6);
    for f in [linear_attention_scores_first, linear_attention_memory_first] {
        let msg = f(&q, &narrow, &v).err().unwrap().to_string();
        assert!(msg.contains("q is [12, 8]") && msg.contains("k is [12, 6]"));
        let short = randn(&mut seeded(2), 11, 8);
        let msg = f(&q, &k, &short).err().unwrap().to_string();
        assert!(msg.contains("k is [12, 8]") && msg.contains("v is [11, 8]"));
        let e = Array2::<f64>::zeros((0, 8));
        assert!(matches!(f(&e, &e, &e), Err(InputError::Empty { .. })));
        for (i, bad) in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY]
            .into_iter()
            .enumerate()
        {
            let mut operands = [q.clone(), k.clone(), v.clone()];
            operands[i][[4, 1]] = bad;
            let [a, b, c] = &operands;
            let err = f(a, b, c);
            assert!(matches!(err, Err(InputError::NonFinite { .. })));
        }
    }
    let mut bad = q.clone();
    bad[[4, 1]] = f64::NAN;
    let err = kernel_attention(&bad, &k, &v, Mask::None, softmax_kernel);
    assert!(matches!(err, Err(InputError::NonFinite { .. })));
}

#[test]
fn entropy_is_ln_n_for_uniform_and_zero_for_one_hot() {
    for n in [1, 2, 12, 1000] {
        let uniform = Array1::from_elem(n, 1.0 / n as f64);
        assert_relative_eq!(
            entropy(&uniform),
            (n as f64).ln(),
            epsilon = 1e-12
        );
        let mut one_hot = Array1::zeros(n);
        one_hot[n - 1] = 1.0;
        assert_eq!(entropy(&one_hot), 0.0);
        // Any other row of weights has less than ln N.
        for seed in 0..10 {
            let raw = randn(&mut seeded(seed), 1, n).mapv(f64::exp);
            let row = raw.row(0).to_owned() / raw.sum();
            let h = entropy(&row);
            assert!(h >= 0.0 && h <= (n as f64).ln() + 1e-12);
            if n > 1 {
                assert!(h < (n as f64).ln(), "n = {n}, seed {seed}");
            }
        }
    }
}

#[test]
fn hot_softmax_has_nearly_uniform_weights() {
    // The chapter's table: as τ grows, entropy / ln N climbs towards 1
    // and the top weight falls towards 1/N.
    let (n, d, seeds) = TEMPERATURE_N_D_SEEDS;
    let rows = temperature_study(&TEMPERATURES, n, d, seeds);
    for pair in rows.windows(2) {
        assert!(pair[1].tau_over_sqrt_d > pair[0].tau_over_sqrt_d);
        assert!(pair[1].entropy_ratio > pair[0].entropy_ratio);
        assert!(pair[1].top_weight < pair[0].top_weight);
    }
    let hot = rows.last().unwrap();
    assert!(hot.entropy_ratio > 0.999, "{}", hot.entropy_ratio);
    assert!(hot.top_weight < 1.2 / n as f64, "{}", hot.top_weight);
    // At τ = √d itself, the weights are far from uniform.
    let own = rows.iter().find(|r| r.tau_over_sqrt_d == 1.0).unwrap();
    assert!(own.entropy_ratio < 0.9);
}

#[test]
fn hot_softmax_kernel_matrix_keeps_full_rank() {
    // Nearly uniform weights, yet no fixed-size state reproduces them:
    // the N × N kernel matrix has rank N, far above d + 1, the rank of
    // its large-τ limit 1 + qᵀk/τ.
    // The temperatures of the chapter's table, from sharp to flat.
    let (n, d, seeds) = TEMPERATURE_N_D_SEEDS;
    let rows = temperature_study(&TEMPERATURES, n, d, seeds);
    for r in &rows {
        assert_eq!(r.kernel_rank, n, "tau = {}√d", r.tau_over_sqrt_d);
    }
    assert!(rows.last().unwrap().entropy_ratio > 0.999);
}

#[test]
fn numerical_rank_finds_the_rank_of_known_matrices() {
    assert_eq!(numerical_rank(&Array2::<f64>::eye(7), RANK_TOL), 7);
    assert_eq!(numerical_rank(&Array2::<f64>::zeros((5, 3)), RANK_TOL), 0);
    for seed in 0..10 {
        for (rows, cols, r) in [(6, 6, 1), (20, 30, 7), (50, 40, 25)] {
            // A product of (rows, r) and (r, cols) has rank r.
            let mut rng = seeded(seed);
            let a = randn(&mut rng, rows, r).dot(&randn(&mut rng, r, cols));
            assert_eq!(numerical_rank(&a, RANK_TOL), r, "seed {seed}");
            assert_eq!(numerical_rank(&a.t(), RANK_TOL), r);
        }
    }
    // A repeated row adds nothing; scale does not matter.
    let a = array![[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]];
    assert_eq!(numerical_rank(&a, RANK_TOL), 2);
    assert_eq!(numerical_rank(&(&a * 1e-200), RANK_TOL), 2);
    assert_eq!(numerical_rank(&(&a * 1e200), RANK_TOL), 2);
    // A tiny but genuine direction counts only above the tolerance.
    let b = array![[1.0, 0.0], [0.0, 1e-12]];
    assert_eq!(numerical_rank(&b, 1e-10), 1);
    assert_eq!(numerical_rank(&b, 1e-14), 2);
}

#[test]
fn exp_kernel_rank_grows_with_n_while_feature_kernels_stop_at_p() {
    let lengths = [4, 8, 16, 32, 64, 128, 256];
    let d = 4;
    for seed in 0..3 {
        let study = rank_study(&lengths, d, 16.0, seed);
        for pair in study.rows.windows(2) {
            assert!(pair[1].softmax > pair[0].softmax, "seed {seed}");
            assert!(pair[1].softmax_hot > pair[0].softmax_hot);
        }
        let p2 = taylor_dimension(d, 2) as usize;
        for r in &study.rows {
            assert_eq!(r.elu, r.n.min(d), "seed {seed}, N = {}", r.n);
            assert_eq!(r.taylor2, r.n.min(p2), "seed {seed}, N = {}", r.n);
            if r.n > p2 {
                assert!(r.softmax_hot > p2, "seed {seed}, N = {}", r.n);
            }
        }
    }
}

#[test]
fn hot_exp_kernel_loses_rank_to_the_tolerance_only_at_the_largest_n() {
    // The chapter's figure: the exp kernel at τ = √d stays within 5% of
    // rank N at every N; the hot one has rank N at small N, falls more
    // than 5% below N at the largest, and stays far above the degree-2
    // Taylor map's p.
    let d = 4;
    let p2 = taylor_dimension(d, 2) as usize;
    for seed in 0..3 {
        let study = rank_study(&RANK_LENGTHS, d, 16.0, seed);
        for r in &study.rows {
            // Within 5% of the diagonal at every N.
            assert!(20 * r.softmax >= 19 * r.n, "seed {seed}, N = {}", r.n);
        }
        let (first, last) = (&study.rows[0], study.rows.last().unwrap());
        assert_eq!(first.softmax_hot, first.n, "seed {seed}");
        assert!(20 * last.softmax_hot < 19 * last.n, "seed {seed}");
        assert!(last.softmax_hot > 4 * p2, "seed {seed}");
    }
}

#[test]
fn hot_exp_kernel_tends_to_a_kernel_of_d_plus_one_features() {
    // exp(s/τ) ≈ 1 + s/τ for large τ, and 1 + xᵀy/τ is the kernel of
    // the d + 1 features (1, x/√τ): its Gram matrix has rank d + 1.
    // The exp kernel's own matrix keeps rank N at every τ here, but its
    // smallest directions shrink as τ grows: counted above a tolerance
    // looser than the book's, its rank falls.
    let d = 4;
    for seed in 0..3 {
        let x = randn(&mut seeded(seed), 40, d);
        let at = |tau_over_sqrt_d: f64, tol: f64| {
            let tau = tau_over_sqrt_d * (d as f64).sqrt();
            let g = gram_matrix(&x, |a, b| (a.dot(b) / tau).exp());
            numerical_rank(&g, tol)
        };
        let mut loose = usize::MAX;
        for ratio in [1.0, 4.0, 16.0, 64.0] {
            let tau = ratio * (d as f64).sqrt();
            let limit = gram_matrix(&x, |a, b| 1.0 + a.dot(b) / tau);
            assert_eq!(numerical_rank(&limit, RANK_TOL), d + 1);
            assert_eq!(at(ratio, 1e-13), 40, "seed {seed}, τ = {ratio}√d");
            let now = at(ratio, 1e-6);
            assert!(now <= loose, "seed {seed}, τ = {ratio}√d");
            loose = now;
        }
        assert!(loose < at(1.0, 1e-6), "seed {seed}");
    }
}

#[test]
fn any_feature_kernel_has_gram_rank_at_most_p() {
    for seed in 0..5 {
        for (n, p) in [(10, 3), (40, 12), (100, 20)] {
            // Any φ at all: here, random positive features.
            let phi = randn(&mut seeded(seed), n, p).mapv(f64::exp);
            let rank = numerical_rank(&phi.dot(&phi.t()), RANK_TOL);
            assert!(rank <= p, "seed {seed}");
            assert_eq!(rank, p.min(n), "seed {seed}");
        }
    }
}

#[test]
fn taylor_features_reproduce_the_truncated_series() {
    for seed in 0..5 {
        // Every degree from 0 to the largest, so that the features of
        // each degree alone give that power: (qᵀk)^i / i!.
        for (d, n) in (0..=6)
            .map(|n| (1, n))
            .chain((0..=4).map(|n| (2, n)))
            .chain((0..=3).map(|n| (3, n)))
            .chain((0..=2).map(|n| (5, n)))
            .chain([(8, 0), (8, 1)])
        {
            let mut rng = seeded(seed);
            let q = randn(&mut rng, 6, d) * 0.7;
            let k = randn(&mut rng, 6, d) * 0.7;
            let approx =
                taylor_features(&q, n).dot(&taylor_features(&k, n).t());
            let series = q.dot(&k.t()).mapv(|s| {
                (0..=n as i32)
                    .map(|i| s.powi(i) / factorial(i as u32))
                    .sum::<f64>()
            });
            assert_relative_eq!(
                approx,
                series,
                max_relative = 1e-12,
                epsilon = 1e-12
            );
        }
    }
}

#[test]
fn taylor_dimension_is_d_plus_degree_choose_degree() {
    for d in 1..6 {
        for l in 0..5 {
            let x = Array2::<f64>::ones((1, d));
            let p = taylor_features(&x, l).ncols() as u64;
            assert_eq!(taylor_dimension(d, l), p, "d = {d}, degree {l}");
        }
    }
    assert_eq!(taylor_dimension(64, 0), 1);
    assert_eq!(taylor_dimension(64, 1), 65);
    assert_eq!(taylor_dimension(64, 2), 65 * 66 / 2);
    assert_eq!(taylor_dimension(4, 4), 70);
}

#[test]
fn taylor_error_falls_with_degree_while_dimension_grows() {
    for seed in 0..3 {
        let study = taylor_study(0..=12, 4, 64, 24, seed);
        for pair in study.rows.windows(2) {
            let (lo, hi) = (&pair[0], &pair[1]);
            assert!(hi.median_error < lo.median_error, "seed {seed}");
            assert!(hi.dimension > lo.dimension);
            assert!(hi.wide_dimension > lo.wide_dimension);
        }
        let (first, last) = (&study.rows[0], study.rows.last().unwrap());
        assert!(last.median_error < 1e-10 * first.median_error);
        assert!(last.max_error < first.max_error, "seed {seed}");
        // For keys of width 64, p is in the millions by degree five,
        // and passes a trillion by the last degree.
        assert_eq!(study.rows[5].degree, 5);
        assert!(study.rows[5].wide_dimension > 1_000_000);
        assert!(last.wide_dimension > 1_000_000_000_000);
    }
}

#[test]
fn taylor_worst_pair_lags_far_behind_the_median() {
    // Past the constant term: the worst pair lags the median by orders
    // of magnitude, and it is the pair with the lowest score. The pair
    // with the highest score falls further behind the median with every
    // degree, by many orders of magnitude at the last.
    for seed in 0..3 {
        let study = taylor_study(1..=12, 4, 64, 24, seed);
        let lag = |r: &TaylorRow| r.top_score_error / r.median_error;
        for r in &study.rows {
            assert!(r.max_error > 100.0 * r.median_error, "seed {seed}");
            assert_eq!(r.max_error, r.bottom_score_error, "seed {seed}");
            assert!(r.max_error > r.top_score_error, "seed {seed}");
            assert!(lag(r) > 1.0, "seed {seed}");
        }
        for pair in study.rows.windows(2) {
            assert!(lag(&pair[1]) > lag(&pair[0]), "seed {seed}");
        }
        assert!(lag(study.rows.last().unwrap()) > 1e6, "seed {seed}");
    }
}

#[test]
fn taylor_error_grows_with_the_size_of_the_score() {
    // q = s e_1 and k = e_1 give qᵀk = s; for a fixed degree, the
    // relative error grows with |s| on either side of zero.
    let e1 = array![[1.0, 0.0, 0.0]];
    for n in 0..=12 {
        for sign in [1.0, -1.0] {
            let errors: Vec<f64> = (1..=30)
                .map(|i| {
                    let s = sign * 0.2 * i as f64;
                    let q = &e1 * s;
                    let approx = taylor_features(&q, n)
                        .dot(&taylor_features(&e1, n).t())[[0, 0]];
                    (approx - s.exp()).abs() / s.exp()
                })
                .collect();
            for pair in errors.windows(2) {
                assert!(pair[1] > pair[0], "degree {n}, sign {sign}");
            }
        }
    }
}

#[test]
fn kernel_attention_reads_any_number_of_keys_but_a_causal_read_one_per_query() {
    // Three queries over five keys: allowed without a mask (each query
    // reads all five), an error naming the shapes under the causal mask,
    // which pairs query t with key t.
    let mut rng = seeded(7);
    let (q, k, v) = (
        randn(&mut rng, 3, 4),
        randn(&mut rng, 5, 4),
        randn(&mut rng, 5, 2),
    );
    let open =
        kernel_attention(&q, &k, &v, Mask::None, softmax_kernel).unwrap();
    assert_eq!(open.weights.dim(), (3, 5));
    let causal = kernel_attention(&q, &k, &v, Mask::Causal, softmax_kernel);
    assert!(matches!(causal, Err(InputError::ShapeMismatch { .. })));
}
