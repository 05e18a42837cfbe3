//! Every rule as one affine step per token, its chunk, its chunkwise form
//! against the recurrence, and its checks of bad input.

use super::*;

/// The transition and input of token t of a rule, as matrices.
fn affine(
    c: &Coefficients,
    k: &Array2<f64>,
    v: &Array2<f64>,
    t: usize,
) -> AffineStep {
    let p = k.ncols();
    let alpha = Array2::from_diag(&c.log_alpha.row(t).mapv(f64::exp));
    let kk = k
        .row(t)
        .insert_axis(Axis(1))
        .dot(&k.row(t).insert_axis(Axis(0)));
    let a = alpha.dot(&(Array2::eye(p) - kk * c.beta[t]));
    let vk = v
        .row(t)
        .insert_axis(Axis(1))
        .dot(&k.row(t).insert_axis(Axis(0)));
    AffineStep {
        h: a,
        b: vk * c.omega[t],
    }
}

fn outer(a: &ArrayRef1<f64>, b: &ArrayRef1<f64>) -> Array2<f64> {
    a.view()
        .insert_axis(Axis(1))
        .dot(&b.view().insert_axis(Axis(0)))
}

/// Token t's H_t and B_t as the chapter's table writes them, built from
/// the rule's own numbers (not from `coefficients`). k: unit rows for
/// the delta rules.
fn table_step(
    rule: &Rule,
    k: &Array2<f64>,
    v: &Array2<f64>,
    t: usize,
) -> AffineStep {
    let p = k.ncols();
    let (kt, eye) = (k.row(t), Array2::<f64>::eye(p));
    let (kk, vk) = (outer(&kt, &kt), outer(&v.row(t), &kt));
    let (a, b) = match rule {
        Rule::Sum => (eye, vk),
        Rule::FixedDecay(g) => (eye * *g, vk),
        Rule::ScalarDecay(a) => (eye * a[t], vk),
        Rule::DiagonalGates(al) => (Array2::from_diag(&al.row(t)), vk),
        Rule::Delta(b) => (eye - kk * b[t], vk * b[t]),
        Rule::GatedDelta { alpha, beta } => {
            ((eye - kk * beta[t]) * alpha[t], vk * beta[t])
        }
        Rule::Kda { alpha, beta } => {
            let gates = Array2::from_diag(&alpha.row(t));
            (gates.dot(&(eye - kk * beta[t])), vk * beta[t])
        }
    };
    AffineStep { h: a, b }
}

#[test]
fn every_rule_is_one_affine_step_per_token() {
    // W_t = W_{t−1} A_t + B_t with the table's A_t and B_t, multiplied
    // out as p × p matrices: the same read W_t q_t after every token,
    // and the same last memory, as the recurrence.
    for seed in 0..5 {
        for (n, p, m) in [(1, 1, 1), (9, 4, 3), (20, 8, 5)] {
            let [q, k, v] = random_qkv(seed, n, p, m);
            for gate in [None, Some(0.3)] {
                let rules = six_rules(&mut seeded(seed), n, p, gate, Some(0.7));
                for rule in rules {
                    let (qu, ku) = match rule.unit_keys() {
                        true => (unit(&q), unit(&k)),
                        false => (q.clone(), k.clone()),
                    };
                    let mut w = Array2::<f64>::zeros((m, p));
                    let mut y = Array2::<f64>::zeros((n, m));
                    for t in 0..n {
                        w = table_step(&rule, &ku, &v, t).apply(&w).unwrap();
                        y.row_mut(t).assign(&w.dot(&qu.row(t)));
                    }
                    let read = rule_recurrent(&rule, &q, &k, &v).unwrap();
                    assert_close(&read.output, &y, 1e-12, rule.name());
                    assert_close(&read.memory, &w, 1e-12, rule.name());
                }
            }
        }
    }
}

#[test]
fn every_rule_is_one_gate_per_feature_one_erase_and_one_write() {
    // A_t = diag(α_t)(I − β_t k kᵀ), B_t = ω_t v kᵀ gives the table's
    // A_t and B_t; no erase: β = 0, ω = 1; delta rules: ω = β; scalar
    // gates: every feature the same. And one step of `rule_step` from a
    // memory that is not zero is W A_t + B_t.
    for seed in 0..4 {
        for (n, p, m) in [(1, 1, 2), (6, 4, 2), (12, 7, 3)] {
            let [q, k, v] = random_qkv(seed, n, p, m);
            for rule in six_rules(&mut seeded(seed), n, p, None, Some(0.4)) {
                let (_, ku, c) = prepare(&rule, &q, &k, &v).unwrap();
                let erase = rule.unit_keys();
                for t in 0..n {
                    let alpha = c.log_alpha.row(t).mapv(f64::exp);
                    if erase {
                        assert_eq!(c.omega[t], c.beta[t]);
                    } else {
                        assert_eq!((c.beta[t], c.omega[t]), (0.0, 1.0));
                    }
                    if !matches!(rule, Rule::DiagonalGates(_)) {
                        assert!(alpha.iter().all(|&a| a == alpha[0]));
                    }
                    let kt = ku.row(t);
                    let pattern = Array2::from_diag(&alpha)
                        .dot(&(Array2::eye(p) - outer(&kt, &kt) * c.beta[t]));
                    let want = table_step(&rule, &ku, &v, t);
                    assert_close(&pattern, &want.h, 1e-13, rule.name());
                    let b = outer(&v.row(t), &kt) * c.omega[t];
                    assert_close(&b, &want.b, 1e-13, rule.name());
                    let mut w = randn(&mut seeded(seed + 50), m, p);
                    let expect = want.apply(&w).unwrap();
                    let (beta, omega) = (c.beta[t], c.omega[t]);
                    rule_step(&mut w, &kt, &v.row(t), &alpha, beta, omega)
                        .unwrap();
                    assert_close(&w, &expect, 1e-12, rule.name());
                }
            }
        }
    }
}

#[test]
fn the_gates_between_two_tokens_multiply_to_the_exp_of_a_difference() {
    // Π_{j<s≤i} α_s = exp(g_i − g_j) and Π_{s≤i} α_s = exp(g_i), entry
    // by entry, for gates in (0, 1].
    for seed in 0..5 {
        let mut rng = seeded(seed);
        for (c, p) in [(1, 1), (9, 3), (30, 5)] {
            let alpha = Array2::from_shape_simple_fn((c, p), || {
                1.0 - rng.random::<f64>()
            });
            let g = cumulative_log_gates(&alpha.mapv(f64::ln));
            for i in 0..c {
                for j in 0..=i {
                    for f in 0..p {
                        let prod: f64 =
                            (j + 1..=i).map(|s| alpha[[s, f]]).product();
                        let got = (g[[i, f]] - g[[j, f]]).exp();
                        assert!((got / prod - 1.0).abs() < 1e-12);
                    }
                }
                for f in 0..p {
                    let prod: f64 = (0..=i).map(|s| alpha[[s, f]]).product();
                    assert!((g[[i, f]].exp() / prod - 1.0).abs() < 1e-12);
                }
            }
        }
    }
}

#[test]
fn with_every_gate_one_the_chunk_is_the_delta_chapters_chunk() {
    // log α = 0, ω = β, and the delta chapter's sum-normalised keys:
    // the chunks give the delta chapter's chunkwise reads and memory.
    use crate::paper::delta_rule::{delta_rule_chunkwise, sum_normalise};
    for seed in 0..4 {
        for (n, p, m, chunk) in [(5, 3, 2, 1), (23, 6, 4, 5), (40, 8, 3, 16)] {
            let [q, k, v] = random_qkv(seed, n, p, m);
            let (q, k) = (q.mapv(f64::exp), k.mapv(f64::exp));
            let beta = Array1::from_shape_fn(n, |t| (t as f64 * 0.37).fract());
            let want = delta_rule_chunkwise(&q, &k, &v, &beta, chunk).unwrap();
            let norm = |x: &Array2<f64>| {
                let mut out = x.clone();
                for mut r in out.rows_mut() {
                    let s = sum_normalise(&r.view()).unwrap();
                    r.assign(&s);
                }
                out
            };
            let (qb, kb) = (norm(&q), norm(&k));
            let zeros = Array2::<f64>::zeros((n, p));
            let mut w = Array2::<f64>::zeros((m, p));
            let mut y = Array2::<f64>::zeros((n, m));
            for start in (0..n).step_by(chunk) {
                let r = s![start..(start + chunk).min(n), ..];
                let at = s![start..(start + chunk).min(n)];
                let yc = rule_chunk(
                    &mut w,
                    &qb.slice(r),
                    &kb.slice(r),
                    &v.slice(r),
                    &zeros.slice(r),
                    &beta.slice(at),
                    &beta.slice(at),
                );
                y.slice_mut(r).assign(&yc);
            }
            assert_close(&y, &want.output, 1e-10, "reads");
            assert_close(&w, &want.memory, 1e-10, "memory");
        }
    }
}

#[test]
fn with_no_erase_the_chunk_is_the_decayed_masked_product() {
    // β = 0, ω = 1, from W_0 = 0: Y = (Q Kᵀ ⊙ L) V with L_ij the
    // product of the gates a_{j+1} … a_i for j ≤ i, 0 above.
    for seed in 0..4 {
        for (c, p, m) in [(1, 2, 2), (8, 3, 2), (25, 5, 4)] {
            let [q, k, v] = random_qkv(seed, c, p, m);
            let mut rng = seeded(seed + 9);
            let a: Vec<f64> =
                (0..c).map(|_| 1.0 - 0.9 * rng.random::<f64>()).collect();
            let log_alpha = Array2::from_shape_fn((c, p), |(t, _)| a[t].ln());
            let mut w = Array2::<f64>::zeros((m, p));
            let (beta, omega) = (Array1::zeros(c), Array1::ones(c));
            let y = rule_chunk(&mut w, &q, &k, &v, &log_alpha, &beta, &omega);
            let mut scores = q.dot(&k.t());
            for ((i, j), x) in scores.indexed_iter_mut() {
                *x *= match j <= i {
                    true => (j + 1..=i).map(|s| a[s]).product::<f64>(),
                    false => 0.0,
                };
            }
            assert_close(&y, &scores.dot(&v), 1e-11, "masked product");
        }
    }
}

#[test]
fn the_table_names_each_rules_transition() {
    // Sum: A = I; fixed decay: γ I; the delta rule: I − β k kᵀ with a
    // unit k; the gated delta rule: α (I − β k kᵀ).
    let [q, k, v] = random_qkv(3, 6, 4, 2);
    let mut rng = seeded(3);
    let rules = six_rules(&mut rng, 6, 4, None, Some(0.4));
    let step = |r: &Rule, t| {
        let (_, kp, c) = prepare(r, &q, &k, &v).unwrap();
        (affine(&c, &kp, &v, t), kp)
    };
    let (sum, _) = step(&rules[0], 2);
    assert_eq!(sum.h, Array2::eye(4));
    let (fixed, _) = step(&rules[1], 2);
    assert_close(&fixed.h, &(Array2::eye(4) * 0.99), 1e-14, "γ I");
    let (delta, kp) = step(&rules[4], 2);
    let kt = kp.row(2);
    assert!((kt.dot(&kt) - 1.0).abs() < 1e-14, "unit key");
    let house = crate::paper::delta_rule::delta_transition(&kt, 0.4).unwrap();
    assert_close(&delta.h, &house, 1e-14, "I − β k kᵀ");
    let (gated, _) = step(&rules[5], 2);
    let Rule::GatedDelta { alpha, .. } = &rules[5] else {
        unreachable!()
    };
    assert_close(&gated.h, &(house * alpha[2]), 1e-13, "α (I − β k kᵀ)");
}

#[test]
fn chunkwise_rule_equals_the_recurrence() {
    // Every rule, chunks of one token, chunks that do not divide N,
    // one chunk for the whole sequence; gates near 1 and far from it.
    for seed in 0..6 {
        for (n, p, m) in [(1, 3, 2), (37, 8, 8), (100, 5, 3)] {
            let [q, k, v] = random_qkv(seed, n, p, m);
            for gate in [None, Some(0.5), Some(1.0 - 1e-9), Some(1e-3)] {
                let rules = six_rules(&mut seeded(seed), n, p, gate, Some(0.6));
                for rule in rules {
                    let rec = rule_recurrent(&rule, &q, &k, &v).unwrap();
                    for chunk in [1, 3, 8, 16, 64, n, n + 5] {
                        let ch =
                            rule_chunkwise(&rule, &q, &k, &v, chunk).unwrap();
                        let what = format!(
                            "{} n {n} C {chunk} gate {gate:?}",
                            rule.name()
                        );
                        assert_close(&ch.output, &rec.output, 1e-9, &what);
                        assert_close(&ch.memory, &rec.memory, 1e-9, &what);
                    }
                }
            }
        }
    }
}

#[test]
fn with_tiny_gates_a_cumulative_product_underflows_but_the_chunks_do_not() {
    // Every gate 10⁻³ over N = 4096 tokens: the product of the gates
    // since the start is 0 after a few hundred tokens, and the ratio of
    // two such products, the decay between two tokens, is 0/0 = NaN.
    let (n, p, m) = (4096, 8, 4);
    let gates = Array1::from_elem(n, 1e-3);
    let cumulative: Vec<f64> = gates
        .iter()
        .scan(1.0, |prod, &a| {
            *prod *= a;
            Some(*prod)
        })
        .collect();
    assert_eq!(cumulative[n - 1], 0.0);
    assert!((cumulative[n - 1] / cumulative[n - 2]).is_nan());
    // Any gate of 0.1 or less: zero within four hundred tokens.
    for a in [0.1, 0.05, 1e-2, 1e-3] {
        let prod = (0..400).fold(1.0f64, |p, _| p * a);
        assert_eq!(prod, 0.0, "gate {a}");
        assert!((prod / prod).is_nan());
    }
    for seed in 0..3 {
        let [q, k, v] = random_qkv(seed, n, p, m);
        for rule in six_rules(&mut seeded(seed), n, p, Some(1e-3), None) {
            if matches!(rule, Rule::Sum | Rule::Delta(_)) {
                continue; // no gates
            }
            let rec = rule_recurrent(&rule, &q, &k, &v).unwrap();
            for chunk in [64, 500] {
                let ch = rule_chunkwise(&rule, &q, &k, &v, chunk).unwrap();
                assert!(ch.output.iter().all(|x| x.is_finite()));
                let what = format!("{} C {chunk}", rule.name());
                assert_close(&ch.output, &rec.output, 1e-9, &what);
            }
        }
    }
}

#[test]
fn every_exponent_the_chunks_take_is_at_most_zero() {
    // The chunk exponentiates only g_i − g_j for j ≤ i (and g_i itself,
    // g_0 = 0): sums of logarithms of gates in (0, 1]. First with the
    // six rules' own log-gates (gates of 1 included), every factor in
    // [0, 1]; then with log-gates down to −150 or so.
    for seed in 0..4 {
        for gate in [None, Some(1.0), Some(0.5), Some(1e-3)] {
            let mut rng = seeded(seed);
            for rule in six_rules(&mut rng, 40, 5, gate, None) {
                let c = rule.coefficients(40, 5).unwrap();
                for chunk in [1, 7, 40] {
                    for start in (0..40).step_by(chunk) {
                        let end = (start + chunk).min(40);
                        let g = cumulative_log_gates(
                            &c.log_alpha.slice(s![start..end, ..]),
                        );
                        for i in 0..end - start {
                            for j in 0..=i {
                                for f in 0..5 {
                                    let x = g[[i, f]] - g[[j, f]];
                                    assert!(x <= 0.0 && g[[i, f]] <= 0.0);
                                    assert!((0.0..=1.0).contains(&x.exp()));
                                }
                            }
                        }
                    }
                }
            }
        }
    }
    for seed in 0..5 {
        let mut rng = seeded(seed);
        let log_alpha = randn(&mut rng, 20, 4).mapv(|x| -(x.abs() * 50.0));
        let g = cumulative_log_gates(&log_alpha);
        for i in 0..20 {
            assert!(g.row(i).iter().all(|&x| x <= 0.0));
            for j in 0..=i {
                assert!((&g.row(i) - &g.row(j)).iter().all(|&x| x <= 0.0));
            }
        }
    }
}

#[test]
fn bad_gates_and_strengths_are_refused_with_their_position() {
    let [q, k, v] = random_qkv(0, 5, 3, 2);
    let mut a = Array1::from_elem(5, 0.9);
    for bad in [0.0, 1.5, -0.2, f64::NAN, f64::INFINITY] {
        a[3] = bad;
        for rule in [
            Rule::ScalarDecay(a.clone()),
            Rule::GatedDelta {
                alpha: a.clone(),
                beta: Array1::from_elem(5, 0.5),
            },
        ] {
            let name = match rule {
                Rule::ScalarDecay(_) => "a is",
                _ => "alpha is",
            };
            let err = rule_recurrent(&rule, &q, &k, &v).err().unwrap();
            let msg = err.to_string();
            assert!(msg.contains("at [3, 0]"), "{msg}");
            assert!(msg.contains("(0, 1]"), "{msg}");
            assert!(msg.contains(name), "{msg}");
            let err = rule_chunkwise(&rule, &q, &k, &v, 2).err().unwrap();
            assert_eq!(err.to_string(), msg);
        }
        let mut gates = Array2::from_elem((5, 3), 0.9);
        gates[[2, 1]] = bad;
        let err = rule_chunkwise(&Rule::DiagonalGates(gates), &q, &k, &v, 2)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("alpha is") && err.contains("at [2, 1]"));
    }
    for bad in [1.5, f64::NAN] {
        let mut beta = Array1::from_elem(5, 0.5);
        beta[4] = bad;
        let rule = Rule::GatedDelta {
            alpha: Array1::from_elem(5, 0.9),
            beta,
        };
        let err = rule_recurrent(&rule, &q, &k, &v).err().unwrap();
        let msg = err.to_string();
        assert!(msg.contains("beta is") && msg.contains("at [4, 0]"));
        assert!(msg.contains("[0, 1]"), "{msg}");
    }
    let beta = Array1::from_vec(vec![0.5, 0.5, -0.1, 0.5, 0.5]);
    let err = rule_chunkwise(&Rule::Delta(beta), &q, &k, &v, 2).err();
    assert!(err.unwrap().to_string().contains("beta is -0.1 at [2, 0]"));
    let err = rule_recurrent(&Rule::FixedDecay(1.01), &q, &k, &v).err();
    assert!(err.unwrap().to_string().contains("gamma is 1.01"));
    let short = Rule::Delta(Array1::from_elem(4, 0.5));
    let err = rule_recurrent(&short, &q, &k, &v).err().unwrap();
    assert!(err.to_string().contains("beta is [4, 1]"), "{err}");
    let wide = Rule::DiagonalGates(Array2::from_elem((5, 4), 0.5));
    let err = rule_recurrent(&wide, &q, &k, &v).err().unwrap();
    assert!(err.to_string().contains("alpha is [5, 4]"), "{err}");
    let err = rule_chunkwise(&Rule::Sum, &q, &k, &v, 0).err().unwrap();
    assert!(err.to_string().contains("chunk"), "{err}");
    let mut zero_k = k.clone();
    zero_k.row_mut(1).fill(0.0);
    let err = rule_recurrent(&Rule::Delta(Array1::ones(5)), &q, &zero_k, &v)
        .err()
        .unwrap();
    assert!(err.to_string().contains("length of k"), "{err}");
    assert!(err.to_string().contains("at row 1"), "{err}");
}
