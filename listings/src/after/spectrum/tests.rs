//! Tests of "The transition's spectrum": the delta transition's
//! eigenvalues, the parity layer with β = 2 and the monotone reads with
//! factors in [0, 1], and DeltaProduct's steps and rotations.

use super::study::*;
use super::*;
use crate::after::family::{Rule, rule_chunkwise, rule_recurrent};
use crate::appendix::primer::jacobi_eigen;
use crate::paper::delta_rule::{delta_rule_chunkwise, delta_rule_recurrent};
use crate::random::{BookRng, randn, seeded};
use rand::Rng;

/// A random vector of p entries with a length drawn from [lo, hi).
fn vector(rng: &mut BookRng, p: usize, lo: f64, hi: f64) -> Array1<f64> {
    let x = randn(rng, 1, p).row(0).to_owned();
    let length = rng.random_range(lo..hi) / x.dot(&x).sqrt();
    x * length
}

fn unit(rng: &mut BookRng, p: usize) -> Array1<f64> {
    vector(rng, p, 1.0, 1.0 + f64::EPSILON)
}

#[test]
fn the_transitions_eigenvalues_are_one_minus_beta_k_squared_and_then_ones() {
    for seed in 0..4 {
        let mut rng = seeded(seed);
        for p in [1, 2, 5, 16] {
            for beta in [0.0, 0.3, 1.0, 1.5, 2.0, 3.0] {
                let k = vector(&mut rng, p, 0.3, 1.5);
                let h = delta_transition(&k, beta).unwrap();
                let mut values = jacobi_eigen(&h).unwrap().values.to_vec();
                values.sort_by(f64::total_cmp);
                let along = 1.0 - beta * k.dot(&k);
                let mut expected = vec![1.0; p];
                expected[0] = along;
                expected.sort_by(f64::total_cmp);
                for (got, want) in values.iter().zip(&expected) {
                    assert!((got - want).abs() < 1e-10, "{values:?}");
                }
            }
        }
    }
}

#[test]
fn with_unit_keys_and_beta_in_zero_two_the_eigenvalue_along_k_spans_minus_one_to_one()
 {
    let mut rng = seeded(3);
    let k = unit(&mut rng, 6);
    for i in 0..=20 {
        let beta = 0.1 * f64::from(i);
        let h = delta_transition(&k, beta).unwrap();
        let along = h.dot(&k).dot(&k); // kᵀ H k, the eigenvalue along k
        assert!((along - (1.0 - beta)).abs() < 1e-12);
        assert!((-1.0 - 1e-12..=1.0 + 1e-12).contains(&along));
    }
    let h = delta_transition(&k, 2.0).unwrap(); // a reflection: H k = −k
    assert!((&h.dot(&k) + &k).iter().all(|x| x.abs() < 1e-12));
}

#[test]
fn the_delta_chapters_chunkwise_form_holds_for_strengths_up_to_two() {
    for seed in 0..3 {
        for (n, p, m) in [(7, 3, 2), (40, 8, 4), (65, 16, 8)] {
            let mut rng = seeded(seed);
            let positive = |x: Array2<f64>| x.mapv(|y| y.abs() + 0.1);
            let q = positive(randn(&mut rng, n, p));
            let k = positive(randn(&mut rng, n, p));
            let v = randn(&mut rng, n, m);
            let beta = Array1::from_shape_fn(n, |_| rng.random_range(1.0..2.0));
            let steps = delta_rule_recurrent(&q, &k, &v, &beta).unwrap();
            for chunk in [1, 4, 16, 100] {
                let chunks =
                    delta_rule_chunkwise(&q, &k, &v, &beta, chunk).unwrap();
                let scale = 1.0
                    + steps.output.iter().fold(0.0f64, |a, b| a.max(b.abs()));
                let worst = (&chunks.output - &steps.output)
                    .iter()
                    .fold(0.0f64, |a, b| a.max(b.abs()));
                assert!(worst < 1e-10 * scale, "C = {chunk}: {worst:e}");
            }
        }
    }
}

#[test]
fn a_delta_layer_with_beta_two_reads_the_parity_of_every_prefix_exactly() {
    for (seed, n) in [(0, 1), (1, 17), (2, 1_000), (3, 100_000), (4, 1_000_000)]
    {
        let bits = random_bits(seed, n);
        let parity = prefix_parity(&bits);
        // The first unit vector: every read is exactly 0 or 2.
        let y = parity_reads(&bits, &parity_key(), 2.0).unwrap();
        for (t, (&y, &odd)) in y.iter().zip(&parity).enumerate() {
            assert_eq!(y, 2.0 * f64::from(odd), "token {t} of {n}");
        }
        // A random unit key: reads within rounding, the threshold exact.
        let mut rng = seeded(seed + 10);
        let key = unit(&mut rng, 8);
        let y = parity_reads(&bits, &key, 2.0).unwrap();
        for (&y, &odd) in y.iter().zip(&parity) {
            assert!((y - 2.0 * f64::from(odd)).abs() < 1e-6);
            assert_eq!(u8::from(y > 1.0), odd);
        }
    }
}

/// The reads wᵀ S_n q after n = 1, 2, … tokens that all write the same
/// key, value and strength into the memory `start`.
fn run_of_writes(
    start: &Array2<f64>,
    k: &Array1<f64>,
    v: &Array1<f64>,
    beta: f64,
    (w, q): (&Array1<f64>, &Array1<f64>),
    n: usize,
) -> Vec<f64> {
    let mut memory = start.clone();
    (0..n)
        .map(|_| {
            delta_rule_step(&mut memory, k, v, beta).unwrap();
            w.dot(&memory.dot(q))
        })
        .collect()
}

/// A starting memory, and the key, value and strength of a token.
type Setting = (Array2<f64>, Array1<f64>, Array1<f64>, f64);

/// Every setting of one token's write with its factor 1 − β ‖k‖² in
/// [0, 1]: a random starting memory, key, value, strength, query and
/// read-out, over seeds and shapes.
fn settings_in_zero_one() -> Vec<Setting> {
    let mut out = Vec::new();
    for seed in 0..6 {
        let mut rng = seeded(seed);
        for (m, p) in [(1, 1), (2, 3), (4, 8), (8, 16)] {
            let start = randn(&mut rng, m, p);
            let k = vector(&mut rng, p, 0.2, 2.0);
            let v = randn(&mut rng, 1, m).row(0).to_owned();
            for share in [0.0, 0.05, 0.5, 0.99, 1.0] {
                out.push((
                    start.clone(),
                    k.clone(),
                    v.clone(),
                    share / k.dot(&k),
                ));
            }
        }
    }
    out
}

#[test]
fn with_factors_in_zero_one_a_run_of_ones_is_read_monotonically() {
    let mut rng = seeded(42);
    for (start, k, v, beta) in settings_in_zero_one() {
        let (m, p) = start.dim();
        let w = randn(&mut rng, 1, m).row(0).to_owned();
        let q = randn(&mut rng, 1, p).row(0).to_owned();
        let y = run_of_writes(&start, &k, &v, beta, (&w, &q), 200);
        let scale = 1.0 + y.iter().fold(0.0f64, |a, b| a.max(b.abs()));
        let slack = 1e-12 * scale;
        let rising = y.windows(2).all(|p| p[1] >= p[0] - slack);
        let falling = y.windows(2).all(|p| p[1] <= p[0] + slack);
        assert!(rising || falling, "β = {beta}: {:?}", &y[..5]);
    }
}

#[test]
fn so_no_threshold_reads_the_parity_of_one_two_and_three_ones() {
    let mut rng = seeded(43);
    for (start, k, v, beta) in settings_in_zero_one() {
        let (m, p) = start.dim();
        let w = randn(&mut rng, 1, m).row(0).to_owned();
        let q = randn(&mut rng, 1, p).row(0).to_owned();
        let y = run_of_writes(&start, &k, &v, beta, (&w, &q), 3);
        // y_2 lies between y_1 and y_3 (to rounding), so a threshold that
        // puts 1 and 3 ones on one side puts 2 ones there too.
        let slack =
            1e-12 * (1.0 + y.iter().fold(0.0f64, |a, b| a.max(b.abs())));
        assert!((y[1] - y[0]) * (y[2] - y[1]) >= -slack, "{y:?}");
    }
    // The parity layer itself, at every strength in [0, 1]: its best
    // threshold misreads some prefix of the string 111.
    for i in 0..=100 {
        let beta = 0.01 * f64::from(i);
        let y = parity_reads(&[1, 1, 1], &parity_key(), beta).unwrap();
        assert!(best_threshold_accuracy(&y, &[1, 0, 1]) < 1.0, "β = {beta}");
    }
    let y = parity_reads(&[1, 1, 1], &parity_key(), 2.0).unwrap();
    assert_eq!(best_threshold_accuracy(&y, &[1, 0, 1]), 1.0);
}

#[test]
fn on_random_strings_only_beta_two_reads_parity_better_than_a_coin() {
    let key = parity_key();
    for (seed, n) in [(0, 1_000), (1, 10_000), (2, 100_000)] {
        let bits = random_bits(seed, n);
        let parity = prefix_parity(&bits);
        for beta in PARITY_BETAS {
            let y = parity_reads(&bits, &key, beta).unwrap();
            let share = best_threshold_accuracy(&y, &parity);
            if beta == 2.0 {
                assert_eq!(share, 1.0);
            } else {
                assert!(share < 0.56, "β = {beta}, N = {n}: {share}");
            }
        }
    }
}

#[test]
fn the_best_threshold_is_found_in_either_direction() {
    let y = Array1::from(vec![0.1, 0.9, 0.2, 0.8]);
    assert_eq!(best_threshold_accuracy(&y, &[0, 1, 0, 1]), 1.0);
    assert_eq!(best_threshold_accuracy(&y, &[1, 0, 1, 0]), 1.0);
    assert_eq!(best_threshold_accuracy(&y, &[1, 1, 0, 0]), 0.75);
    let flat = Array1::from(vec![1.0; 4]);
    assert_eq!(best_threshold_accuracy(&flat, &[1, 0, 1, 1]), 0.75);
}

/// n tokens of DeltaProduct with n_h steps each, unit queries and keys
/// (as DeltaNet's, and as the family's delta rules expect), strengths in
/// [lo, hi): (q, k, v, beta).
fn product_inputs(
    seed: u64,
    (n, n_h, p, m): (usize, usize, usize, usize),
    (lo, hi): (f64, f64),
) -> (Array2<f64>, Array2<f64>, Array2<f64>, Array1<f64>) {
    let mut rng = seeded(seed);
    let mut q = randn(&mut rng, n, p);
    let mut k = randn(&mut rng, n * n_h, p);
    for mut row in q.rows_mut().into_iter().chain(k.rows_mut()) {
        let len = row.dot(&row).sqrt();
        row /= len;
    }
    let v = randn(&mut rng, n * n_h, m);
    let beta = Array1::from_shape_fn(n * n_h, |_| rng.random_range(lo..hi));
    (q, k, v, beta)
}

#[test]
fn delta_product_with_one_step_per_token_is_the_delta_rule() {
    for seed in 0..4 {
        for (n, p, m) in [(1, 3, 2), (20, 8, 4), (64, 16, 16)] {
            let (q, k, v, beta) =
                product_inputs(seed, (n, 1, p, m), (0.0, 1.0));
            let product =
                delta_product_recurrent(&q, &k, &v, &beta, 1).unwrap();
            let delta = rule_recurrent(&Rule::Delta(beta), &q, &k, &v).unwrap();
            let worst = (&product - &delta.output)
                .iter()
                .fold(0.0f64, |a, b| a.max(b.abs()));
            assert!(worst < 1e-12, "n = {n}, p = {p}: {worst:e}");
        }
    }
}

#[test]
fn delta_product_is_the_delta_rule_over_its_writes_laid_end_to_end() {
    for seed in 0..3 {
        for (n, n_h, p, m) in [(5, 2, 4, 3), (16, 3, 8, 4), (33, 4, 6, 2)] {
            let (q, k, v, beta) =
                product_inputs(seed, (n, n_h, p, m), (0.0, 1.0));
            let product =
                delta_product_recurrent(&q, &k, &v, &beta, n_h).unwrap();
            // Token t's query at its last write; the other reads unused.
            let mut long_q = k.clone();
            for t in 0..n {
                long_q.row_mut((t + 1) * n_h - 1).assign(&q.row(t));
            }
            for chunk in [1, 3, 8] {
                let long = rule_chunkwise(
                    &Rule::Delta(beta.clone()),
                    &long_q,
                    &k,
                    &v,
                    n_h * chunk,
                )
                .unwrap();
                for t in 0..n {
                    let read = long.output.row((t + 1) * n_h - 1);
                    let worst = (&read - &product.row(t))
                        .iter()
                        .fold(0.0f64, |a, b| a.max(b.abs()));
                    assert!(worst < 1e-10, "n_h = {n_h}, C = {chunk}");
                }
            }
        }
    }
}

#[test]
fn a_delta_product_token_is_its_householder_product_plus_its_writes() {
    for seed in 0..4 {
        for (n_h, p, m) in [(1, 4, 2), (2, 8, 3), (3, 5, 5), (4, 16, 8)] {
            let (_, k, v, beta) =
                product_inputs(seed, (1, n_h, p, m), (0.0, 2.0));
            let mut rng = seeded(seed + 50);
            let start = randn(&mut rng, m, p);
            let mut memory = start.clone();
            delta_product_step(&mut memory, &k, &v, &beta).unwrap();
            // The same writes from an empty memory give B_t alone.
            let mut input = Array2::zeros((m, p));
            delta_product_step(&mut input, &k, &v, &beta).unwrap();
            let expected =
                start.dot(&householder_product(&k, &beta).unwrap()) + input;
            let worst = (&memory - &expected)
                .iter()
                .fold(0.0f64, |a, b| a.max(b.abs()));
            assert!(worst < 1e-10, "n_h = {n_h}: {worst:e}");
        }
    }
}

#[test]
fn two_reflections_make_a_rotation_with_eigenvalues_off_the_real_line() {
    for seed in 0..6 {
        let mut rng = seeded(seed);
        for p in [2, 3, 8] {
            let (k1, k2) = (unit(&mut rng, p), unit(&mut rng, p));
            let keys =
                ndarray::stack(Axis(0), &[k1.view(), k2.view()]).unwrap();
            let h = householder_product(&keys, &Array1::from(vec![2.0, 2.0]))
                .unwrap();
            // Orthogonal: Hᵀ H = I.
            let gram = h.t().dot(&h) - Array2::<f64>::eye(p);
            assert!(gram.iter().all(|x| x.abs() < 1e-12));
            // In the plane of k1 and k2 (orthonormal basis e1, e2), a 2 × 2
            // block with determinant 1 and trace 2 cos 2θ.
            let e1 = k1.clone();
            let e2 = {
                let x = &k2 - &(&k1 * k1.dot(&k2));
                let len = x.dot(&x).sqrt();
                x / len
            };
            let b = |a: &Array1<f64>, c: &Array1<f64>| a.dot(&h.dot(c));
            let (r11, r12, r21, r22) =
                (b(&e1, &e1), b(&e1, &e2), b(&e2, &e1), b(&e2, &e2));
            let (trace, det) = (r11 + r22, r11 * r22 - r12 * r21);
            let cos_theta = k1.dot(&k2);
            let cos_2theta = 2.0 * cos_theta * cos_theta - 1.0;
            assert!((det - 1.0).abs() < 1e-12);
            assert!((trace - 2.0 * cos_2theta).abs() < 1e-12);
            // Eigenvalues (trace ± √(trace² − 4)) / 2: complex unless the
            // keys are parallel or orthogonal.
            assert!(
                trace * trace - 4.0 * det < 0.0,
                "θ = {}",
                cos_theta.acos()
            );
            // A vector orthogonal to both keys is kept.
            if p > 2 {
                let x = randn(&mut rng, 1, p).row(0).to_owned();
                let x = &x - &(&e1 * e1.dot(&x)) - &(&e2 * e2.dot(&x));
                let kept = h.dot(&x) - &x;
                assert!(kept.iter().all(|y| y.abs() < 1e-12));
            }
        }
    }
    // One reflection alone has real eigenvalues ±1 only.
    let k = Array1::from(vec![0.6, 0.8]);
    let h = householder_product(
        &k.view().insert_axis(Axis(0)),
        &Array1::from(vec![2.0]),
    )
    .unwrap();
    let values = jacobi_eigen(&h).unwrap().values;
    assert!(values.iter().all(|l| (l.abs() - 1.0).abs() < 1e-12));
}

#[test]
fn bad_bits_keys_and_steps_are_refused_with_a_clear_error() {
    let key = parity_key();
    assert!(matches!(
        parity_reads(&[0, 1, 2], &key, 2.0),
        Err(InputError::Outside {
            name: "bits",
            at: [2, 0],
            ..
        })
    ));
    assert!(matches!(
        parity_reads(&[], &key, 2.0),
        Err(InputError::Empty { name: "bits", .. })
    ));
    assert!(matches!(
        parity_reads(&[1], &(&key * 2.0), 2.0),
        Err(InputError::Outside {
            name: "the length of key",
            ..
        })
    ));
    let mut nan = key.clone();
    nan[1] = f64::NAN;
    assert!(matches!(
        parity_reads(&[1], &nan, 2.0),
        Err(InputError::NonFinite { name: "key", .. })
    ));
    let (q, k, v, beta) = product_inputs(0, (5, 2, 4, 3), (0.0, 2.0));
    assert!(matches!(
        delta_product_recurrent(&q, &k, &v, &beta, 0),
        Err(InputError::BadParameter { name: "n_h", .. })
    ));
    assert!(matches!(
        delta_product_recurrent(&q, &k, &v, &beta, 3),
        Err(InputError::ShapeMismatch { .. })
    ));
    let mut big = beta.clone();
    big[7] = 2.5;
    assert!(matches!(
        delta_product_recurrent(&q, &k, &v, &big, 2),
        Err(InputError::Outside {
            name: "beta",
            at: [7, 0],
            ..
        })
    ));
    assert!(delta_product_recurrent(&q, &k, &v, &beta, 2).is_ok());
}
