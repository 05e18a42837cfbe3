use super::study::*;
use super::*;
use crate::linalg::worst_row_relative_difference;
use crate::m3::attention::random_projections;
use crate::m3::delete_softmax::{
    RANK_TOL, linear_attention_memory_first, numerical_rank, sequence_memory,
};
use crate::random::{randn, seeded};
use approx::assert_relative_eq;
use ndarray::{array, s};

fn random(seed: u64, n: usize, d: usize, m: usize) -> [Array2<f64>; 3] {
    let mut rng = seeded(seed);
    let phi_q = elu_plus_one(&randn(&mut rng, n, d));
    let phi_k = elu_plus_one(&randn(&mut rng, n, d));
    [phi_q, phi_k, randn(&mut rng, n, m)]
}

/// Lengths from one token to a couple of thousand, including lengths
/// on either side of powers of two.
const LENGTHS: [usize; 12] = [1, 2, 3, 5, 12, 17, 63, 64, 65, 255, 1000, 2000];

#[test]
fn fast_weight_write_adds_one_outer_product() {
    let mut memory = array![[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
    fast_weight_write(&mut memory, &array![10.0, -1.0], &array![1., 0., 2.])
        .unwrap();
    assert_eq!(memory, array![[11.0, 2.0, 23.0], [3.0, 5.0, 4.0]]);
    // Reading the written key returns v scaled by ‖k‖², plus the rest.
    for seed in 0..5 {
        let mut rng = seeded(seed);
        let (v, k) = (randn(&mut rng, 1, 6), randn(&mut rng, 1, 4));
        let mut m = Array2::zeros((6, 4));
        fast_weight_write(&mut m, &v.row(0), &k.row(0)).unwrap();
        let read = m.dot(&k.row(0));
        let want = &v.row(0) * k.row(0).dot(&k.row(0));
        assert_relative_eq!(read, want, max_relative = 1e-12);
    }
}

#[test]
fn recurrent_form_equals_parallel_form() {
    for (i, &n) in LENGTHS.iter().enumerate() {
        let seeds = if n > 500 { 3 } else { 10 };
        let (p, m) = ([8, 4, 16][i % 3], [8, 1, 5][i % 3]);
        for seed in 0..seeds {
            let [phi_q, phi_k, v] = random(seed, n, p, m);
            let rec = linear_attention_recurrent(&phi_q, &phi_k, &v).unwrap();
            let par = linear_attention_parallel(&phi_q, &phi_k, &v).unwrap();
            assert_eq!(rec.dim(), (n, m));
            assert_relative_eq!(
                rec,
                par,
                max_relative = 1e-10,
                epsilon = 1e-12
            );
            if m > 1 {
                let gap = worst_row_relative_difference(&rec, &par);
                assert!(gap < 1e-12, "N = {n}, seed {seed}: {gap:e}");
            }
        }
    }
    // The study the chapter prints: at each of its lengths and seeds the
    // forms agree to rounding, and the loop with the normaliser is the
    // recurrence bit for bit.
    let rows = agreement_study(&AGREEMENT_LENGTHS, AGREEMENT_SEEDS);
    for row in &rows {
        assert!(row.recurrent_vs_parallel < 1e-12, "N = {}", row.n);
        assert_eq!(row.recurrent_vs_loop, 0.0, "N = {}", row.n);
    }
    let output = crate::outputs::ALL
        .iter()
        .find(|o| o.name == "fast-weights-agreement")
        .expect("the chapter's output");
    let table = AgreementTable {
        seeds: AGREEMENT_SEEDS,
        rows,
    };
    assert_eq!((output.run)(), table.to_string());
}

#[test]
fn parallel_form_takes_its_length_from_the_input() {
    // Calls of different lengths in a row: the mask of one must not
    // leak into the next, and a prefix gives the prefix's outputs.
    for seed in 0..5 {
        for (n, p, m) in [(40, 6, 3), (17, 2, 5), (64, 8, 1)] {
            let [phi_q, phi_k, v] = random(seed, n, p, m);
            let full = linear_attention_parallel(&phi_q, &phi_k, &v).unwrap();
            for cut_at in [1, n / 3, n - 1, n] {
                let cut =
                    |a: &Array2<f64>| a.slice(s![..cut_at, ..]).to_owned();
                let part = linear_attention_parallel(
                    &cut(&phi_q),
                    &cut(&phi_k),
                    &cut(&v),
                )
                .unwrap();
                assert_eq!(part.dim(), (cut_at, m));
                assert_relative_eq!(
                    part,
                    full.slice(s![..cut_at, ..]),
                    max_relative = 1e-12
                );
            }
        }
    }
}

#[test]
fn causal_output_does_not_change_when_the_future_does() {
    for seed in 0..5 {
        for (n, p, m) in [(2, 3, 4), (30, 8, 4), (50, 16, 5)] {
            let [phi_q, phi_k, v] = random(seed, n, p, m);
            let [_, phi_k2, v2] = random(seed + 100, n, p, m);
            // Replace every key and value after position t.
            for t in [0, (n - 1) / 2, n - 2] {
                let mut k_new = phi_k.clone();
                let mut v_new = v.clone();
                k_new
                    .slice_mut(s![t + 1.., ..])
                    .assign(&phi_k2.slice(s![t + 1.., ..]));
                v_new
                    .slice_mut(s![t + 1.., ..])
                    .assign(&v2.slice(s![t + 1.., ..]));
                for form in
                    [linear_attention_recurrent, linear_attention_parallel]
                {
                    let before = form(&phi_q, &phi_k, &v).unwrap();
                    let after = form(&phi_q, &k_new, &v_new).unwrap();
                    assert_eq!(
                        before.slice(s![..=t, ..]),
                        after.slice(s![..=t, ..])
                    );
                    assert_ne!(before.row(t + 1), after.row(t + 1));
                }
            }
        }
    }
}

#[test]
fn last_causal_output_equals_the_non_causal_read() {
    // After the last token the memory holds the whole sequence, so the
    // last query reads what the memory-first grouping reads.
    for seed in 0..5 {
        for n in [1, 12, 300] {
            let [phi_q, phi_k, v] = random(seed, n, 8, 5);
            let rec = linear_attention_recurrent(&phi_q, &phi_k, &v).unwrap();
            let all =
                linear_attention_memory_first(&phi_q, &phi_k, &v).unwrap();
            assert_relative_eq!(
                rec.row(n - 1),
                all.row(n - 1),
                max_relative = 1e-10
            );
        }
    }
}

#[test]
fn linear_attention_is_the_fast_weight_loop_with_phi_keys_plus_a_normaliser() {
    // M2's loop run on φ(k), φ(q) gives the numerator S_t φ(q_t); run on
    // values that are all 1 it gives the denominator z_tᵀφ(q_t).
    for (n, seeds) in [(1, 10), (12, 10), (200, 10), (4000, 2)] {
        for seed in 0..seeds {
            let [phi_q, phi_k, v] = random(seed, n, 8, 8);
            let rec = linear_attention_recurrent(&phi_q, &phi_k, &v).unwrap();
            // Not just close: the same operations, bit for bit.
            let via_loop = loop_with_normaliser(&phi_q, &phi_k, &v);
            assert_eq!(rec, via_loop, "N = {n}, seed {seed}");
            // Without the normaliser the outputs are not averages: they
            // grow with t. The loop alone is not linear attention.
            let raw = fast_weight_loop(&phi_q, &phi_k, &v).unwrap();
            if n > 1 {
                assert!(worst_row_relative_difference(&raw, &rec) > 0.5);
            }
        }
    }
}

#[test]
fn fast_weight_programmer_is_unnormalised_masked_attention_on_unit_keys() {
    for seed in 0..10 {
        for (n, d_model, d, m) in [(1, 4, 2, 3), (12, 16, 8, 8), (90, 8, 5, 4)]
        {
            let mut rng = seeded(seed);
            let slow = random_projections(&mut rng, d_model, d, m);
            let x = randn(&mut rng, n, d_model);
            let y = fast_weight_programmer(&x, &slow).unwrap();
            // y_t = Σ_{j≤t} (k̂_jᵀ q̂_t) v_j, all at once.
            let Qkv { q, k, v } = slow.project(&x).unwrap();
            let (q, k) = (unit_rows(&q), unit_rows(&k));
            let mut scores = q.dot(&k.t());
            scores.indexed_iter_mut().for_each(|((t, j), s)| {
                if j > t {
                    *s = 0.0;
                }
            });
            let scale = (n as f64).sqrt();
            assert_relative_eq!(
                y,
                scores.dot(&v),
                max_relative = 1e-10,
                epsilon = 1e-12 * scale
            );
            // Unit keys and queries: a key reads itself with weight 1.
            assert!(
                k.rows()
                    .into_iter()
                    .all(|r| { (r.dot(&r) - 1.0).abs() < 1e-12 })
            );
        }
    }
}

#[test]
fn convenience_form_applies_phi_then_the_recurrence() {
    for seed in 0..5 {
        for (n, d, m) in [(1, 2, 1), (20, 6, 3), (90, 16, 8)] {
            let mut rng = seeded(seed);
            let q = randn(&mut rng, n, d);
            let k = randn(&mut rng, n, d);
            let v = randn(&mut rng, n, m);
            let o = causal_linear_attention(&q, &k, &v, elu_plus_one).unwrap();
            // The recurrence on φ(q), φ(k): the same numbers, bit for bit.
            let (phi_q, phi_k) = (elu_plus_one(&q), elu_plus_one(&k));
            let want = linear_attention_recurrent(&phi_q, &phi_k, &v).unwrap();
            assert_eq!(o, want, "seed {seed}, N = {n}");
        }
    }
}

#[test]
fn bad_input_is_an_error_naming_the_problem() {
    let [phi_q, phi_k, v] = random(0, 12, 8, 4);
    let short = randn(&mut seeded(1), 11, 8);
    let short_v = randn(&mut seeded(1), 11, 4);
    for form in [
        linear_attention_recurrent,
        linear_attention_parallel,
        fast_weight_loop,
    ] {
        // A causal read needs one key per query.
        let msg = form(&phi_q, &short, &short_v).err().unwrap().to_string();
        assert!(msg.contains("q is [12, 8]") && msg.contains("k is [11, 8]"));
        let msg = form(&phi_q, &phi_k, &short).err().unwrap().to_string();
        assert!(msg.contains("k is [12, 8]") && msg.contains("v is [11, 8]"));
        let e = Array2::<f64>::zeros((0, 8));
        assert!(matches!(form(&e, &e, &e), Err(InputError::Empty { .. })));
        let mut bad = phi_k.clone();
        bad[[3, 3]] = f64::NAN;
        let err = form(&phi_q, &bad, &v).err().unwrap().to_string();
        assert!(err.contains("NaN in k at [3, 3]"), "{err}");
    }
    let slow = random_projections(&mut seeded(0), 16, 8, 8);
    let x = randn(&mut seeded(1), 12, 15);
    let msg = fast_weight_programmer(&x, &slow).err().unwrap().to_string();
    assert!(msg.contains("x is [12, 15]") && msg.contains("w_q is [8, 16]"));
}

#[test]
fn state_after_t_tokens_is_the_memory_of_the_first_t_tokens() {
    for seed in 0..5 {
        for (n, p, m) in [(1, 1, 1), (40, 6, 3), (25, 4, 9)] {
            let [_, phi_k, v] = random(seed, n, p, m);
            let trace = memory_trace(&phi_k, &v).unwrap();
            assert_eq!(trace.len(), n);
            for (t, s_t) in trace.iter().enumerate() {
                let prefix = s![..=t, ..];
                let memory =
                    sequence_memory(&phi_k.slice(prefix), &v.slice(prefix));
                assert_relative_eq!(*s_t, memory.s, max_relative = 1e-12);
            }
        }
    }
}

#[test]
fn memory_after_t_writes_has_rank_min_t_m_p() {
    for seed in 0..5 {
        for (p, m) in [(8, 8), (4, 6), (6, 3)] {
            let [_, phi_k, v] = random(seed, 12, p, m);
            let trace = memory_trace(&phi_k, &v).unwrap();
            for (t, s_t) in trace.iter().enumerate() {
                let rank = numerical_rank(s_t, RANK_TOL);
                assert_eq!(rank, (t + 1).min(m).min(p), "seed {seed}");
            }
        }
    }
    let e = Array2::<f64>::zeros((0, 3));
    assert!(memory_trace(&e, &e).is_err());
}

#[test]
fn outputs_are_weighted_averages_of_past_values() {
    // With φ > 0 every weight is positive, so each entry of o_t lies
    // between the smallest and largest of that entry over v_1 … v_t.
    for seed in 0..10 {
        for (n, p, m) in [(1, 1, 1), (12, 8, 8), (300, 16, 5)] {
            let [phi_q, phi_k, v] = random(seed, n, p, m);
            let o = linear_attention_recurrent(&phi_q, &phi_k, &v).unwrap();
            for t in 0..n {
                for c in 0..m {
                    let past = v.slice(s![..=t, c]);
                    let lo = past.fold(f64::INFINITY, |a, &b| a.min(b));
                    let hi = past.fold(f64::NEG_INFINITY, |a, &b| a.max(b));
                    let slack = 1e-12 * (hi - lo).max(1.0);
                    assert!(o[[t, c]] >= lo - slack, "seed {seed}");
                    assert!(o[[t, c]] <= hi + slack, "seed {seed}");
                }
            }
        }
    }
}

/// Whether some entry of some output lies outside the range of that
/// entry over the values seen so far.
fn some_output_is_not_an_average(o: &Array2<f64>, v: &Array2<f64>) -> bool {
    o.indexed_iter().any(|((t, c), &x)| {
        let past = v.slice(s![..=t, c]);
        let lo = past.fold(f64::INFINITY, |a, &b| a.min(b));
        let hi = past.fold(f64::NEG_INFINITY, |a, &b| a.max(b));
        let slack = 1e-12 * (hi - lo).max(1.0);
        x < lo - slack || x > hi + slack
    })
}

#[test]
fn a_negative_feature_is_refused_so_every_read_returned_is_an_average() {
    // Features that are mostly but not all positive (the identity map
    // on entries drawn around 1) can keep every denominator above zero
    // while some weights φ(k_j)ᵀφ(q_t) fall below it, and such a read
    // would not be an average. The forms refuse any negative feature
    // and name it; whatever they return is an average, and elu+1 on
    // the same draws always reads.
    let identity = |x: &ArrayRef2<f64>| x.to_owned();
    let (mut refused, mut would_not_average) = (0, 0);
    for seed in 0..20 {
        for (n, d, m) in [(12, 2, 3), (40, 4, 5), (100, 8, 8)] {
            let mut rng = seeded(seed);
            let q = randn(&mut rng, n, d) * 0.8 + 1.0;
            let k = randn(&mut rng, n, d) * 0.8 + 1.0;
            let v = randn(&mut rng, n, m);
            let unchecked = loop_with_normaliser(&q, &k, &v);
            if some_output_is_not_an_average(&unchecked, &v) {
                would_not_average += 1;
            }
            match causal_linear_attention(&q, &k, &v, identity) {
                Ok(o) => assert!(!some_output_is_not_an_average(&o, &v)),
                Err(InputError::Outside {
                    name, at, value, ..
                }) => {
                    let x = if name == "phi_q" { &q } else { &k };
                    assert_eq!(x[at], value);
                    assert!(value < 0.0);
                    refused += 1;
                }
                Err(other) => panic!("seed {seed}: {other}"),
            }
            let o = causal_linear_attention(&q, &k, &v, elu_plus_one).unwrap();
            assert!(!some_output_is_not_an_average(&o, &v), "seed {seed}");
        }
    }
    assert!(refused > 0 && would_not_average > 0);
}

#[test]
fn a_denominator_at_or_below_zero_is_an_error_naming_its_position() {
    // Non-negative features whose query row t is all zeros (as relu
    // gives a query with no positive entry): z_tᵀφ(q_t) = 0, and each
    // form stops at that t, the first such row, with the zero named.
    for seed in 0..10 {
        for (n, p, m) in [(1, 3, 2), (12, 8, 8), (40, 5, 3)] {
            let [q, k, v] = random(seed, n, p, m);
            let (mut phi_q, phi_k) = (elu_plus_one(&q), elu_plus_one(&k));
            let t = (seed as usize * 7) % n;
            phi_q.row_mut(t).fill(0.0);
            for result in [
                linear_attention_recurrent(&phi_q, &phi_k, &v),
                linear_attention_parallel(&phi_q, &phi_k, &v),
            ] {
                match result {
                    Err(InputError::NonPositive { at, value, .. }) => {
                        assert_eq!((at, value), (t, 0.0), "seed {seed}");
                    }
                    other => panic!("seed {seed}, t {t}: {other:?}"),
                }
            }
        }
    }
    // The identity map on the walkthrough's inputs, as the chapter's
    // Try it does: refused, naming a negative feature and its place.
    let identity = |x: &ArrayRef2<f64>| x.to_owned();
    let (Qkv { q, k, v }, _) = crate::m3::attention::walkthrough(0);
    let msg = causal_linear_attention(&q, &k, &v, identity)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("phi_q") && msg.contains("negative"), "{msg}");
    let msg = linear_attention_recurrent(&elu_plus_one(&q), &k, &v)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("phi_k") && msg.contains("negative"), "{msg}");
}

#[test]
fn walkthrough_forms_agree() {
    let report = walkthrough_report(0);
    assert_eq!(report.output_shape, (12, 8));
    assert!(report.difference < 1e-12);
}
