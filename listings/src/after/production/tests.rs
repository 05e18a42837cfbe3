//! KDA, RWKV-7 and DeltaProduct: each chunkwise form against its
//! recurrence, each step against its transition as a matrix, and the
//! orientations of the published references.

use super::*;
use crate::after::family::{
    Coefficients, random_qkv, rule_chunkwise, rule_recurrent, rule_step,
};
use crate::after::spectrum::delta_product_recurrent;
use crate::linalg::worst_row_relative_difference;
use crate::m3::attention::unit_rows;

fn assert_close(a: &Array2<f64>, b: &Array2<f64>, tol: f64, what: &str) {
    let diff = worst_row_relative_difference(a, b);
    assert!(diff < tol, "{what}: relative difference {diff}");
}

fn outer(a: &ArrayRef1<f64>, b: &ArrayRef1<f64>) -> Array2<f64> {
    a.view()
        .insert_axis(Axis(1))
        .dot(&b.view().insert_axis(Axis(0)))
}

/// A KDA rule over N tokens and p features: gates log-uniform in [lo, 1]
/// per token and feature, write strengths uniform in [0, 1].
fn random_kda(seed: u64, n: usize, p: usize, lo: f64) -> Rule {
    let mut rng = seeded(seed ^ 0xda);
    let alpha = log_uniform_gates(&mut rng, n, p, lo);
    let beta = Array1::from_shape_simple_fn(n, || rng.random::<f64>());
    kda_rule(alpha, beta)
}

const SHAPES: [(usize, usize, usize); 4] =
    [(1, 3, 2), (37, 8, 5), (100, 5, 3), (64, 16, 8)];

#[test]
fn kda_chunkwise_equals_the_recurrence() {
    // Chunks of one token, odd chunks, chunks longer than N; gates near
    // one, near 10⁻³ and down to 10⁻¹²; several seeds and shapes.
    for seed in 0..5 {
        for (n, p, m) in SHAPES {
            let [q, k, v] = random_qkv(seed, n, p, m);
            for lo in [0.9, 1e-3, 1e-12] {
                let rule = random_kda(seed, n, p, lo);
                let rec = rule_recurrent(&rule, &q, &k, &v).unwrap();
                for chunk in [1, 3, 7, 16, n, n + 5] {
                    let ch = rule_chunkwise(&rule, &q, &k, &v, chunk).unwrap();
                    let what = format!("n {n} p {p} C {chunk} lo {lo}");
                    assert_close(&ch.output, &rec.output, 1e-9, &what);
                    assert_close(&ch.memory, &rec.memory, 1e-9, &what);
                }
            }
        }
    }
}

#[test]
fn kda_is_one_affine_step_with_a_gate_per_feature() {
    // S_t = S_{t−1} diag(α_t) (I − β_t k_t k_tᵀ) + β_t v_t k_tᵀ with
    // unit k, multiplied out as p × p matrices.
    for seed in 0..4 {
        for (n, p, m) in SHAPES {
            let [q, k, v] = random_qkv(seed, n, p, m);
            let rule = random_kda(seed, n, p, 1e-2);
            let Rule::Kda { alpha, beta } = &rule else {
                unreachable!()
            };
            let (qu, ku) = (unit_rows(&q), unit_rows(&k));
            let mut s = Array2::<f64>::zeros((m, p));
            let mut y = Array2::<f64>::zeros((n, m));
            for t in 0..n {
                let kk = outer(&ku.row(t), &ku.row(t));
                let h = Array2::from_diag(&alpha.row(t))
                    .dot(&(Array2::eye(p) - kk * beta[t]));
                s = s.dot(&h) + outer(&v.row(t), &ku.row(t)) * beta[t];
                y.row_mut(t).assign(&s.dot(&qu.row(t)));
            }
            let rec = rule_recurrent(&rule, &q, &k, &v).unwrap();
            assert_close(&rec.output, &y, 1e-10, "reads");
            assert_close(&rec.memory, &s, 1e-10, "memory");
        }
    }
}

#[test]
fn the_books_kda_memory_is_the_transpose_of_flas_naive_kda_state() {
    // fla's naive recurrent KDA keeps S: (p, m), features by values:
    // S ← diag(exp g) S, S ← S + β k (v − Sᵀ k)ᵀ, o = Sᵀ q (its scale
    // 1/√p left out). The book's memory is that S transposed, after
    // every token, and the reads are the same.
    for seed in 0..4 {
        for (n, p, m) in SHAPES {
            let [q, k, v] = random_qkv(seed, n, p, m);
            let rule = random_kda(seed, n, p, 1e-2);
            let Rule::Kda { alpha, beta } = &rule else {
                unreachable!()
            };
            let (qu, ku) = (unit_rows(&q), unit_rows(&k));
            let mut s = Array2::<f64>::zeros((p, m));
            let mut o = Array2::<f64>::zeros((n, m));
            for t in 0..n {
                let g = alpha.row(t).mapv(f64::ln);
                s *= &g.mapv(f64::exp).insert_axis(Axis(1)); // row i × α_i
                let err = &v.row(t) - &s.t().dot(&ku.row(t));
                s = s + outer(&ku.row(t), &err) * beta[t];
                o.row_mut(t).assign(&s.t().dot(&qu.row(t)));
            }
            let rec = rule_recurrent(&rule, &q, &k, &v).unwrap();
            assert_close(&rec.output, &o, 1e-10, "reads");
            assert_close(&rec.memory, &s.t().to_owned(), 1e-10, "memory");
        }
    }
}

#[test]
fn rwkv7_is_one_affine_step_with_its_transition() {
    // S_t = S_{t−1} (diag(α_t) − ǩ_t (ζ_t ⊙ ǩ_t)ᵀ) + v_t k̆_tᵀ, with ǩ_t
    // scaled to unit length, multiplied out as p × p matrices.
    for seed in 0..4 {
        for (n, p, m) in SHAPES {
            let [q, _, v] = random_qkv(seed, n, p, m);
            let g = random_rwkv7(seed, n, p, 1e-2);
            let removal = unit_rows(&g.removal);
            let mut s = Array2::<f64>::zeros((m, p));
            let mut y = Array2::<f64>::zeros((n, m));
            for t in 0..n {
                let erase = &g.zeta.row(t) * &removal.row(t);
                let h = Array2::from_diag(&g.alpha.row(t))
                    - outer(&removal.row(t), &erase);
                s = s.dot(&h) + outer(&v.row(t), &g.replacement.row(t));
                y.row_mut(t).assign(&s.dot(&q.row(t)));
            }
            let rec = rwkv7_recurrent(&q, &v, &g).unwrap();
            assert_close(&rec.output, &y, 1e-10, "reads");
            assert_close(&rec.memory, &s, 1e-10, "memory");
        }
    }
}

#[test]
fn the_books_rwkv7_memory_is_the_transpose_of_flas_dplr_state() {
    // fla's naive DPLR recurrence keeps S: (p, m) and computes
    // S ← diag(exp g) S + k vᵀ + b (aᵀ S), o = Sᵀ q, with a = −ǩ and
    // b = ζ ⊙ ǩ for RWKV-7 (its scale 1/√p left out). The book's memory
    // is that S transposed.
    for seed in 0..4 {
        for (n, p, m) in SHAPES {
            let [q, _, v] = random_qkv(seed, n, p, m);
            let g = random_rwkv7(seed, n, p, 1e-2);
            let removal = unit_rows(&g.removal);
            let mut s = Array2::<f64>::zeros((p, m));
            let mut o = Array2::<f64>::zeros((n, m));
            for t in 0..n {
                let a = -&removal.row(t);
                let b = &g.zeta.row(t) * &removal.row(t);
                let low_rank = outer(&b, &s.t().dot(&a)); // b (aᵀ S)
                s *= &g.alpha.row(t).insert_axis(Axis(1));
                s = s + outer(&g.replacement.row(t), &v.row(t)) + low_rank;
                o.row_mut(t).assign(&s.t().dot(&q.row(t)));
            }
            let rec = rwkv7_recurrent(&q, &v, &g).unwrap();
            assert_close(&rec.output, &o, 1e-10, "reads");
            assert_close(&rec.memory, &s.t().to_owned(), 1e-10, "memory");
        }
    }
}

#[test]
fn rwkv7_chunkwise_equals_the_recurrence() {
    // Chunks of one token, odd chunks, one chunk of exactly N and one
    // longer; decays near one, near 10⁻³ and down to 10⁻¹².
    for seed in 0..5 {
        for (n, p, m) in SHAPES {
            let [q, _, v] = random_qkv(seed, n, p, m);
            for lo in [0.9, 1e-3, 1e-12] {
                let g = random_rwkv7(seed, n, p, lo);
                let rec = rwkv7_recurrent(&q, &v, &g).unwrap();
                for chunk in [1, 3, 7, 16, n, n + 5] {
                    let ch = rwkv7_chunkwise(&q, &v, &g, chunk).unwrap();
                    let what = format!("n {n} p {p} C {chunk} lo {lo}");
                    assert_close(&ch.output, &rec.output, 1e-9, &what);
                    assert_close(&ch.memory, &rec.memory, 1e-9, &what);
                }
            }
        }
    }
}

#[test]
fn rwkv7_with_no_decay_one_key_and_a_rate_of_beta_is_the_delta_rule() {
    // α = 1, ζ = β 1, ǩ = k (unit) and k̆ = β k: H_t = I − β_t k_t k_tᵀ
    // and B_t = β_t v_t k_tᵀ, DeltaNet's step.
    for seed in 0..4 {
        for (n, p, m) in SHAPES {
            let [q, k, v] = random_qkv(seed, n, p, m);
            let (qu, ku) = (unit_rows(&q), unit_rows(&k));
            let mut rng = seeded(seed);
            let beta = Array1::from_shape_simple_fn(n, || rng.random::<f64>());
            let b = beta.view().insert_axis(Axis(1));
            let g = Rwkv7 {
                alpha: Array2::ones((n, p)),
                zeta: b.broadcast((n, p)).unwrap().to_owned(),
                removal: ku.clone(),
                replacement: &ku * &b,
            };
            let rwkv = rwkv7_recurrent(&qu, &v, &g).unwrap();
            let delta = Rule::Delta(beta.clone());
            let want = rule_recurrent(&delta, &q, &k, &v).unwrap();
            assert_close(&rwkv.output, &want.output, 1e-10, "reads");
            assert_close(&rwkv.memory, &want.memory, 1e-10, "memory");
        }
    }
}

#[test]
fn rwkv7s_bad_inputs_are_refused_with_their_name() {
    let (n, p, m) = (6, 4, 3);
    let [q, _, v] = random_qkv(1, n, p, m);
    let good = random_rwkv7(1, n, p, 0.1);
    let cases: Vec<(Rwkv7, &str)> = vec![
        (
            Rwkv7 {
                alpha: good.alpha.slice(s![..5, ..]).to_owned(),
                ..good.clone()
            },
            "alpha is [5, 4]",
        ),
        (
            Rwkv7 {
                alpha: {
                    let mut a = good.alpha.clone();
                    a[[2, 1]] = 1.5;
                    a
                },
                ..good.clone()
            },
            "alpha",
        ),
        (
            Rwkv7 {
                alpha: {
                    let mut a = good.alpha.clone();
                    a[[2, 1]] = 0.0;
                    a
                },
                ..good.clone()
            },
            "(0, 1]",
        ),
        (
            Rwkv7 {
                zeta: {
                    let mut a = good.zeta.clone();
                    a[[3, 0]] = -0.1;
                    a
                },
                ..good.clone()
            },
            "zeta",
        ),
        (
            Rwkv7 {
                removal: {
                    let mut a = good.removal.clone();
                    a.row_mut(4).fill(0.0);
                    a
                },
                ..good.clone()
            },
            "removal",
        ),
        (
            Rwkv7 {
                replacement: {
                    let mut a = good.replacement.clone();
                    a[[0, 0]] = f64::NAN;
                    a
                },
                ..good.clone()
            },
            "replacement",
        ),
    ];
    // A NaN gate is named as not finite, not as outside its range, and
    // before a later operand's fault (here a zero removal row).
    let nan_at = |a: &Array2<f64>| {
        let mut a = a.clone();
        a[[1, 2]] = f64::NAN;
        a
    };
    let mut zero_removal = good.removal.clone();
    zero_removal.row_mut(4).fill(0.0);
    let nan_gates = [
        Rwkv7 {
            alpha: nan_at(&good.alpha),
            removal: zero_removal.clone(),
            ..good.clone()
        },
        Rwkv7 {
            zeta: nan_at(&good.zeta),
            removal: zero_removal,
            ..good.clone()
        },
    ];
    let cases = cases
        .into_iter()
        .chain(nan_gates.into_iter().zip(["NaN in alpha", "NaN in zeta"]));
    let (q32, v32) = (q.mapv(|x| x as f32), v.mapv(|x| x as f32));
    use crate::fast::production::{rwkv7_chunkwise_f32, rwkv7_recurrent_f32};
    for (g, name) in cases {
        let msg = rwkv7_recurrent(&q, &v, &g).err().unwrap().to_string();
        assert!(msg.contains(name), "{name}: {msg}");
        let err = rwkv7_chunkwise(&q, &v, &g, 2).err().unwrap();
        assert_eq!(err.to_string(), msg);
        let err = rwkv7_recurrent_f32(&q32, &v32, &g).err().unwrap();
        assert_eq!(err.to_string(), msg, "f32 recurrence");
        let err = rwkv7_chunkwise_f32(&q32, &v32, &g, 2).err().unwrap();
        assert_eq!(err.to_string(), msg, "f32 chunks");
    }
    let short_v = v.slice(s![..5, ..]).to_owned();
    let msg = rwkv7_recurrent(&q, &short_v, &good).err().unwrap();
    assert!(msg.to_string().contains("v is [5, 3]"), "{msg}");
    let msg = rwkv7_chunkwise(&q, &v, &good, 0).err().unwrap();
    assert!(msg.to_string().contains("chunk"), "{msg}");
}

#[test]
fn delta_product_chunkwise_equals_the_recurrence() {
    // n_h ∈ {1, 2, 3} writes per token with unit keys and strengths in
    // [0, 2]; chunks of one token, odd ones, exactly N and longer.
    for seed in 0..5 {
        for (n, p, m) in SHAPES {
            for n_h in [1, 2, 3] {
                let mut rng = seeded(seed + 100);
                let q = randn(&mut rng, n, p);
                let (k, v, beta) =
                    random_delta_product(&mut rng, (n, p, m), n_h);
                let rec =
                    delta_product_recurrent(&q, &k, &v, &beta, n_h).unwrap();
                for chunk in [1, 3, 7, n, n + 2] {
                    let ch =
                        delta_product_chunkwise(&q, &k, &v, &beta, n_h, chunk)
                            .unwrap();
                    let what = format!("n {n} n_h {n_h} C {chunk}");
                    assert_close(&ch, &rec, 1e-9, &what);
                }
            }
        }
    }
}

#[test]
fn delta_product_chunkwise_refuses_a_chunk_of_zero() {
    let mut rng = seeded(3);
    let (q, k, v) = (
        randn(&mut rng, 4, 3),
        randn(&mut rng, 8, 3),
        randn(&mut rng, 8, 2),
    );
    let beta = Array1::from_elem(8, 0.5);
    let err = delta_product_chunkwise(&q, &k, &v, &beta, 2, 0).err();
    assert!(err.unwrap().to_string().contains("chunk"));
    let err = delta_product_chunkwise(&q, &k, &v, &beta, 3, 2).err();
    assert!(err.unwrap().to_string().contains("n_h rows"));
}

#[test]
fn a_write_strength_apart_from_the_erase_strength_keeps_the_chunk_exact() {
    // ω_t ≠ β_t: ω uniform in [0, 2], β in [0, 1], gates per feature.
    // Still S_t = S_{t−1} H_t + B_t, so the chunk of the family computes
    // it: chunk by chunk equals step by step.
    for seed in 0..5 {
        for (n, p, m) in SHAPES {
            let [q, k, v] = random_qkv(seed, n, p, m);
            let (q, k) = (unit_rows(&q), unit_rows(&k));
            let mut rng = seeded(seed + 7);
            let c = Coefficients {
                log_alpha: log_uniform_gates(&mut rng, n, p, 1e-3)
                    .mapv(f64::ln),
                beta: Array1::from_shape_simple_fn(n, || rng.random::<f64>()),
                omega: Array1::from_shape_simple_fn(n, || {
                    2.0 * rng.random::<f64>()
                }),
            };
            assert!(c.beta.iter().zip(&c.omega).any(|(b, o)| b != o));
            let mut s = Array2::zeros((m, p));
            let mut want = Array2::zeros((n, m));
            for t in 0..n {
                let alpha = c.log_alpha.row(t).mapv(f64::exp);
                let (b, o) = (c.beta[t], c.omega[t]);
                rule_step(&mut s, &k.row(t), &v.row(t), &alpha, b, o).unwrap();
                want.row_mut(t).assign(&s.dot(&q.row(t)));
            }
            for chunk in [1, 3, 7, n + 1] {
                let mut memory = Array2::zeros((m, p));
                let mut got = Array2::zeros((n, m));
                for start in (0..n).step_by(chunk) {
                    let rows = s![start..(start + chunk).min(n), ..];
                    let at = s![start..(start + chunk).min(n)];
                    let y = rule_chunk(
                        &mut memory,
                        &q.slice(rows),
                        &k.slice(rows),
                        &v.slice(rows),
                        &c.log_alpha.slice(rows),
                        &c.beta.slice(at),
                        &c.omega.slice(at),
                    );
                    got.slice_mut(rows).assign(&y);
                }
                let what = format!("n {n} C {chunk}");
                assert_close(&got, &want, 1e-9, &what);
                assert_close(&memory, &s, 1e-9, &what);
            }
        }
    }
}

#[test]
fn factored_decays_overflow_f32_once_a_chunks_decay_passes_its_range() {
    // exp(λ_i − λ_j) = exp(λ_i) exp(−λ_j) turns the decayed scores into
    // one product (Γ ⊙ Q)(K ⊘ Γ)ᵀ. In f32, exp(−λ_j) is infinite once
    // λ_j < −ln(f32::MAX) ≈ −88.7, a decay below about 3e-39, and the
    // factored scores are then infinite or NaN; the differences are not.
    let limit = -(f32::MAX.ln());
    assert!(((-limit) * 1.001).exp().is_infinite());
    assert!(((-limit) * 0.999).exp().is_finite());
    let (c, p) = (64, 4);
    let mut rng = seeded(5);
    let (q, k) = (randn(&mut rng, c, p), randn(&mut rng, c, p));
    for (gate, overflows) in
        [(0.1f32, true), (0.2, true), (0.3, false), (0.5, false)]
    {
        // λ_i = (i + 1) ln a: past −88.7 after 39 gates of 0.1 and 56
        // of 0.2; 64 gates of 0.3 or 0.5 stay inside f32's range.
        let lambda = |i: usize| (i + 1) as f32 * gate.ln();
        let (mut factored, mut differences) = (true, true);
        for i in 0..c {
            for j in 0..=i {
                let dot: f32 =
                    (0..p).map(|f| (q[[i, f]] * k[[j, f]]) as f32).sum();
                let fac = dot * lambda(i).exp() * (-lambda(j)).exp();
                let dif = dot * (lambda(i) - lambda(j)).exp();
                factored &= fac.is_finite();
                differences &= dif.is_finite();
            }
        }
        assert!(differences, "gate {gate}");
        assert_eq!(!factored, overflows, "gate {gate}");
        let passes = lambda(c - 1) < limit;
        assert_eq!(passes, overflows, "gate {gate}");
    }
}
