//! The update rules of "After the paper" at f32, for the benchmark: the
//! recurrence, one token at a time in place with nothing allocated in the
//! loop, and the chunkwise form, whose products go to sgemm. Each computes
//! what `after::family::rule_recurrent` computes, to f32 precision.

use super::{row_major, slice};
use crate::after::family::Rule;
use crate::input::{InputError, check_chunk, finite};
use ndarray::linalg::general_mat_mul;
use ndarray::{
    Array1, Array2, ArrayRef2, ArrayView1, ArrayView2, ArrayViewMut2, Axis, s,
};

/// The checked inputs at f32: q and k (unit rows for the delta rules),
/// v, and the rule's coefficients ln α: (N, p), β, ω: (N), rounded.
type Prepared = (
    Array2<f32>,
    Array2<f32>,
    Array2<f32>,
    Array1<f32>,
    Array1<f32>,
);

fn prepare_f32(
    rule: &Rule,
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Prepared, InputError> {
    crate::input::check_qkv(q, k, v, true)?;
    let c = rule.coefficients(k.nrows(), k.ncols())?;
    let unit = |name, x: &ArrayRef2<f32>| -> Result<Array2<f32>, InputError> {
        let mut out = x.to_owned();
        for (t, mut row) in out.rows_mut().into_iter().enumerate() {
            let len = row.iter().map(|&a| f64::from(a).powi(2)).sum::<f64>();
            let len = crate::input::normaliser(name, t, len.sqrt())?;
            row.mapv_inplace(|a| (f64::from(a) / len) as f32);
        }
        Ok(out)
    };
    let (q, k) = if rule.unit_keys() {
        (unit("the length of q", q)?, unit("the length of k", k)?)
    } else {
        (q.to_owned(), k.to_owned())
    };
    let f = |a: f64| a as f32;
    Ok((q, k, c.log_alpha.mapv(f), c.beta.mapv(f), c.omega.mapv(f)))
}

/// Any rule of the family at f32, token by token: W: (m, p) row by row,
/// W ← W diag(α) + u kᵀ with u = ω v − β W diag(α) k; y_t = W q_t.
/// q, k: (N, p), v: (N, m).
pub fn rule_recurrent_f32(
    rule: &Rule,
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Array2<f32>, InputError> {
    let (q, k, log_alpha, beta, omega) = prepare_f32(rule, q, k, v)?;
    let (n, p, m) = (k.nrows(), k.ncols(), v.ncols());
    let alpha = log_alpha.mapv(f32::exp);
    let [q_all, k_all, v_all] = row_major(&q, &k, v);
    let (q_all, k_all, v_all) = (slice(&q_all), slice(&k_all), slice(&v_all));
    let alpha = alpha.as_slice().expect("a new array");
    let mut w = vec![0.0f32; m * p]; // W_0 = 0, row i is w[i p..(i + 1) p]
    let mut y = Array2::<f32>::zeros((n, m));
    let y_all = y.as_slice_mut().expect("a new array");
    for t in 0..n {
        let (q_t, k_t) = (&q_all[t * p..][..p], &k_all[t * p..][..p]);
        let (a_t, v_t) = (&alpha[t * p..][..p], &v_all[t * m..][..m]);
        for (i, w_i) in w.chunks_exact_mut(p).enumerate() {
            let mut read = 0.0f32; // (W diag(α) k)_i
            for ((w, &a), &k) in w_i.iter_mut().zip(a_t).zip(k_t) {
                *w *= a;
                read += *w * k;
            }
            let u = omega[t] * v_t[i] - beta[t] * read;
            let mut out = 0.0f32;
            for ((w, &k), &q) in w_i.iter_mut().zip(k_t).zip(q_t) {
                *w += u * k;
                out += *w * q;
            }
            y_all[t * m + i] = out;
        }
    }
    finite("Y", y)
}

/// Any rule of the family at f32 in chunks of `chunk` tokens, as
/// `after::family::rule_chunk` computes each chunk. When every feature has
/// the same gate (all but the diagonal gates), the decayed scores are one
/// product K Kᵀ times exp(g_i − g_j); with a gate per feature, a sum over
/// the features of exponentials, every exponent ≤ 0.
pub fn rule_chunkwise_f32(
    rule: &Rule,
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    chunk: usize,
) -> Result<Array2<f32>, InputError> {
    check_chunk(chunk)?;
    let (q, k, log_alpha, beta, omega) = prepare_f32(rule, q, k, v)?;
    let per_feature = matches!(rule, Rule::DiagonalGates(_) | Rule::Kda { .. });
    let (n, p, m) = (k.nrows(), k.ncols(), v.ncols());
    let mut w = Array2::<f32>::zeros((m, p));
    let mut y = Array2::<f32>::zeros((n, m));
    for start in (0..n).step_by(chunk) {
        let (rows, at) = (
            s![start..(start + chunk).min(n), ..],
            s![start..(start + chunk).min(n)],
        );
        chunk_f32(
            &mut w,
            [q.slice(rows), k.slice(rows), v.slice(rows)],
            log_alpha.slice(rows),
            [beta.slice(at), omega.slice(at)],
            per_feature,
            y.slice_mut(rows),
        );
    }
    finite("Y", y)
}

/// One chunk of any rule of the family at f32, from the memory W before
/// it, as `after::family::rule_chunk` computes it: writes the chunk's
/// reads into `yc` and carries W to the chunk's end. [q, k, v] and
/// log_alpha: (C, p) (v: (C, m)), [β, ω]: (C).
pub(super) fn chunk_f32(
    w: &mut Array2<f32>,
    [qc, kc, vc]: [ArrayView2<f32>; 3],
    log_alpha: ArrayView2<f32>,
    [b, om]: [ArrayView1<f32>; 2],
    per_feature: bool,
    mut yc: ArrayViewMut2<f32>,
) {
    let (c, p, m) = (kc.nrows(), kc.ncols(), vc.ncols());
    // The running sums of log-gates stay in f64: at f32 a sum near
    // −10⁴ keeps only three decimals, and exp of a difference of two
    // such sums would lose what the gates between them say.
    let mut g = log_alpha.mapv(f64::from);
    g.accumulate_axis_inplace(Axis(0), |&before, now| *now += before);
    let gamma = g.mapv(|x| x.exp() as f32);
    let (kg, qg) = (&kc * &gamma, &qc * &gamma); // Γ ⊙ K, Γ ⊙ Q
    // The decayed scores S (j < i) and M (j ≤ i).
    let (mut s_kk, mut m_qk) = (kc.dot(&kc.t()), qc.dot(&kc.t()));
    for i in 0..c {
        for j in 0..c {
            if j > i {
                s_kk[[i, j]] = 0.0;
                m_qk[[i, j]] = 0.0;
            } else if per_feature {
                let (mut ss, mut mm) = (0.0f32, 0.0f32);
                for f in 0..p {
                    let e = (g[[i, f]] - g[[j, f]]).exp() as f32;
                    ss += kc[[i, f]] * kc[[j, f]] * e;
                    mm += qc[[i, f]] * kc[[j, f]] * e;
                }
                (s_kk[[i, j]], m_qk[[i, j]]) = (ss, mm);
            } else {
                let e = (g[[i, 0]] - g[[j, 0]]).exp() as f32;
                s_kk[[i, j]] *= e;
                m_qk[[i, j]] *= e;
            }
        }
    }
    // U = (I + diag(β) S)⁻¹ (diag(ω) V − diag(β) (Γ ⊙ K) W_0ᵀ).
    let mut u = &vc * &om.insert_axis(Axis(1));
    let mut read = Array2::<f32>::zeros((c, m));
    general_mat_mul(1.0, &kg, &w.t(), 0.0, &mut read);
    u.scaled_add(-1.0, &(read * b.insert_axis(Axis(1))));
    for i in 1..c {
        let (done, mut rest) = u.view_mut().split_at(Axis(0), i);
        let known = s_kk.slice(s![i, ..i]).dot(&done);
        rest.row_mut(0).scaled_add(-b[i], &known);
    }
    general_mat_mul(1.0, &qg, &w.t(), 0.0, &mut yc);
    general_mat_mul(1.0, &m_qk, &u, 1.0, &mut yc);
    let last = g.row(c - 1).to_owned();
    let to_end =
        (&last.view().insert_axis(Axis(0)) - &g).mapv(|x| x.exp() as f32);
    *w *= &last.mapv(|x| x.exp() as f32).insert_axis(Axis(0));
    general_mat_mul(1.0, &u.t(), &(&kc * &to_end), 1.0, w);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::after::family::{random_qkv, rule_recurrent, six_rules};
    use crate::fast::{to_f32, to_f64};
    use crate::linalg::worst_row_relative_difference;
    use crate::random::seeded;

    #[test]
    fn f32_rules_equal_the_f64_recurrence_to_f32_precision() {
        for seed in 0..4 {
            for (n, p, m, gate) in [
                (1, 4, 3, None),
                (50, 8, 8, None),
                (130, 16, 8, Some(0.5)),
                (200, 8, 4, Some(1e-3)),
            ] {
                let [q, k, v] = random_qkv(seed, n, p, m);
                let (q32, k32, v32) = (to_f32(&q), to_f32(&k), to_f32(&v));
                for rule in six_rules(&mut seeded(seed), n, p, gate, Some(0.8))
                {
                    let want =
                        rule_recurrent(&rule, &q, &k, &v).unwrap().output;
                    let rec = rule_recurrent_f32(&rule, &q32, &k32, &v32);
                    let got = to_f64(&rec.unwrap());
                    let diff = worst_row_relative_difference(&got, &want);
                    assert!(diff < 1e-3, "{} recurrent: {diff}", rule.name());
                    for chunk in [1, 7, 16, 64] {
                        let ch =
                            rule_chunkwise_f32(&rule, &q32, &k32, &v32, chunk);
                        let got = to_f64(&ch.unwrap());
                        let diff = worst_row_relative_difference(&got, &want);
                        let name = rule.name();
                        assert!(diff < 1e-3, "{name} C {chunk}: {diff}");
                    }
                }
            }
        }
    }

    /// Every gated rule with gates log-uniform in [1e-12, 1] (per token,
    /// or per token and feature), write strengths uniform in [0, 1].
    fn extreme_rules(seed: u64, n: usize, p: usize) -> Vec<Rule> {
        use crate::after::production::{kda_rule, log_uniform_gates};
        use rand::Rng;
        let mut rng = seeded(seed);
        let lo = 1e-12;
        let per_token =
            |rng: &mut _| log_uniform_gates(rng, n, 1, lo).column(0).to_owned();
        let scalar = per_token(&mut rng);
        let gated = per_token(&mut rng);
        let diagonal = log_uniform_gates(&mut rng, n, p, lo);
        let kda = log_uniform_gates(&mut rng, n, p, lo);
        let beta = Array1::from_shape_simple_fn(n, || rng.random::<f64>());
        let gamma = log_uniform_gates(&mut rng, 1, 1, lo)[[0, 0]];
        vec![
            Rule::FixedDecay(gamma),
            Rule::ScalarDecay(scalar),
            Rule::DiagonalGates(diagonal),
            Rule::GatedDelta {
                alpha: gated,
                beta: beta.clone(),
            },
            kda_rule(kda, beta),
        ]
    }

    #[test]
    fn f32_chunks_are_as_accurate_as_the_f32_recurrence_under_extreme_gates() {
        // Gates log-uniform in [1e-12, 1], chunks of up to 512 tokens:
        // for every gated rule, the f32 chunkwise reads are at most twice
        // as far from the f64 recurrence (relative, row by row) as the f32
        // recurrence's own reads are. With the running log-gate sums kept
        // in f32 (before the fix) this failed: 2.2e-3 against 3.4e-5 for
        // the diagonal gates in chunks of 512.
        for seed in 0..3 {
            let (n, p, m) = (1100, 16, 8);
            let [q, k, v] = random_qkv(seed, n, p, m);
            let (q32, k32, v32) = (to_f32(&q), to_f32(&k), to_f32(&v));
            for rule in extreme_rules(seed, n, p) {
                let want = rule_recurrent(&rule, &q, &k, &v).unwrap().output;
                let rec = rule_recurrent_f32(&rule, &q32, &k32, &v32);
                let rec = to_f64(&rec.unwrap());
                let rec = worst_row_relative_difference(&rec, &want);
                assert!(rec < 1e-3, "{} recurrent: {rec}", rule.name());
                for chunk in [64, 262, 512] {
                    let ch = rule_chunkwise_f32(&rule, &q32, &k32, &v32, chunk);
                    let got = to_f64(&ch.unwrap());
                    let diff = worst_row_relative_difference(&got, &want);
                    let name = rule.name();
                    assert!(
                        diff <= 2.0 * rec,
                        "{name} C {chunk}: {diff} {rec}"
                    );
                }
            }
        }
    }
}
