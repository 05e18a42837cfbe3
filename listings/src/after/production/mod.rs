//! Chapter "The rules in production": three rules that run in released
//! models, each written in the book's orientation with its recurrence and
//! a chunkwise form tested equal to it. KDA (Kimi Linear) is the delta
//! rule with a gate per feature, one more member of the family; RWKV-7's
//! generalised delta rule erases along one key and writes along another,
//! so its chunk needs a triangular solve of its own; DeltaProduct's n_h
//! writes per token are n_h pseudo-tokens of one delta-rule chunk.
//!
//! Shapes: queries and keys q, k: (N, p), values v: (N, m), the memory S:
//! (m, p), values by features, as everywhere in the book; y_t = S_t q_t.

use crate::after::family::{
    Rule, RuleRead, cumulative_log_gates, decayed_scores, rule_chunk,
    unit_rows_checked,
};
use crate::after::spectrum::check_delta_product;
use crate::input::{
    Entry, InputError, all_pass, check_chunk, check_write, finite,
    first_outside, nonempty_finite,
};
use crate::m3::attention::unit_rows;
use crate::m3::fast_weight_memory::fast_weight_write;
use crate::paper::delta_rule::forward_substitution;
use crate::random::{BookRng, randn, seeded};
use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2, Axis, Zip, s};
use rand::Rng;

pub mod study;

// ANCHOR: kda_rule
/// KDA, the delta rule with a gate per token and feature:
/// H_t = diag(α_t) (I − β_t k_t k_tᵀ), B_t = β_t v_t k_tᵀ.
/// alpha: (N, p) in (0, 1], beta: (N) in [0, 1].
pub fn kda_rule(alpha: Array2<f64>, beta: Array1<f64>) -> Rule {
    Rule::Kda { alpha, beta }
}
// ANCHOR_END: kda_rule

/// Gates log-uniform in [lo, 1] for N tokens and p features, as (N, p).
pub fn log_uniform_gates(
    rng: &mut BookRng,
    n: usize,
    p: usize,
    lo: f64,
) -> Array2<f64> {
    Array2::from_shape_simple_fn((n, p), || {
        (lo.ln() * rng.random::<f64>()).exp()
    })
}

/// The numbers of RWKV-7's generalised delta rule for N tokens, each
/// (N, p): the decay α_t in (0, 1], the in-context learning rate ζ_t in
/// [0, 1], the removal key ǩ_t (scaled to unit length by the rule) and
/// the replacement key k̆_t.
#[derive(Clone, Debug)]
pub struct Rwkv7 {
    pub alpha: Array2<f64>,
    pub zeta: Array2<f64>,
    pub removal: Array2<f64>,
    pub replacement: Array2<f64>,
}

// ANCHOR: rwkv7_step
/// One step of RWKV-7, S ← S (diag(α) − ǩ (ζ ⊙ ǩ)ᵀ) + v k̆ᵀ, computed as
/// v̌ = S ǩ (what S holds at the removal key, before the decay), then
/// S ← S diag(α) − v̌ (ζ ⊙ ǩ)ᵀ + v k̆ᵀ.
/// memory: (m, p), alpha, zeta, removal, replacement: (p), v: (m).
pub fn rwkv7_step(
    memory: &mut Array2<f64>,
    alpha: &ArrayRef1<f64>,
    zeta: &ArrayRef1<f64>,
    removal: &ArrayRef1<f64>,
    replacement: &ArrayRef1<f64>,
    v: &ArrayRef1<f64>,
) -> Result<(), InputError> {
    for per_feature in [alpha, zeta, removal, replacement] {
        check_write(memory, v, per_feature)?; // (p) each, v: (m)
    }
    let held = memory.dot(removal); // v̌ = S ǩ
    *memory *= &alpha.view().insert_axis(Axis(0)); // column j times α_j
    let erase = &zeta.view() * &removal.view(); // ζ ⊙ ǩ
    fast_weight_write(memory, &-held, &erase)?; // erase
    fast_weight_write(memory, v, replacement) // write
}
// ANCHOR_END: rwkv7_step

/// The checked inputs of RWKV-7: q: (N, p), v: (N, m), and every operand
/// of `g` (N, p), finite; α in (0, 1], ζ in [0, 1]; the removal keys
/// scaled to unit length (a row of length zero is an error).
pub(crate) fn prepare_rwkv7<T: Entry>(
    q: &ArrayRef2<T>,
    v: &ArrayRef2<T>,
    g: &Rwkv7,
) -> Result<Array2<f64>, InputError> {
    check_rwkv7(q, v, g)?;
    unit_rows_checked("the length of removal", &g.removal)
}

/// [`prepare_rwkv7`]'s checks, without the unit removal keys (a form that
/// scales them a chunk at a time checks their lengths as it goes).
pub(crate) fn check_rwkv7<T: Entry>(
    q: &ArrayRef2<T>,
    v: &ArrayRef2<T>,
    g: &Rwkv7,
) -> Result<(), InputError> {
    nonempty_finite("q", q)?;
    nonempty_finite("v", v)?;
    let (n, p) = q.dim();
    if v.nrows() != n {
        return Err(InputError::ShapeMismatch {
            left: ("q", [n, p]),
            right: ("v", [v.nrows(), v.ncols()]),
            rule: "one value per query",
        });
    }
    // A range holds only for finite entries: a gate operand whose one
    // pass over its range succeeds needs no pass for finiteness. When a
    // range fails, every check runs as below, so the error is the same.
    let alpha_ok = |a: f64| a > 0.0 && a <= 1.0;
    let zeta_ok = |a: f64| (0.0..=1.0).contains(&a);
    let in_range = [all_pass(&g.alpha, alpha_ok), all_pass(&g.zeta, zeta_ok)];
    for (i, (name, x)) in [
        ("alpha", &g.alpha),
        ("zeta", &g.zeta),
        ("removal", &g.removal),
        ("replacement", &g.replacement),
    ]
    .into_iter()
    .enumerate()
    {
        if x.dim() != (n, p) {
            return Err(InputError::ShapeMismatch {
                left: ("q", [n, p]),
                right: (name, [x.nrows(), x.ncols()]),
                rule: "one row per token, one entry per feature",
            });
        }
        if !in_range.get(i).copied().unwrap_or(false) {
            nonempty_finite(name, x)?;
        }
    }
    if !in_range[0] {
        first_outside("alpha", &g.alpha, alpha_ok, "(0, 1]")?;
    }
    if !in_range[1] {
        first_outside("zeta", &g.zeta, zeta_ok, "[0, 1]")?;
    }
    Ok(())
}

// ANCHOR: rwkv7_recurrent
/// RWKV-7's generalised delta rule token by token from S_0 = 0:
/// S_t = S_{t−1} (diag(α_t) − ǩ_t (ζ_t ⊙ ǩ_t)ᵀ) + v_t k̆_tᵀ, y_t = S_t q_t.
/// q: (N, p), v: (N, m), every operand of `g`: (N, p).
pub fn rwkv7_recurrent(
    q: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    g: &Rwkv7,
) -> Result<RuleRead, InputError> {
    let removal = prepare_rwkv7(q, v, g)?;
    let (n, p, m) = (q.nrows(), q.ncols(), v.ncols());
    let mut memory = Array2::zeros((m, p));
    let mut output = Array2::zeros((n, m));
    for t in 0..n {
        rwkv7_step(
            &mut memory,
            &g.alpha.row(t),
            &g.zeta.row(t),
            &removal.row(t),
            &g.replacement.row(t),
            &v.row(t),
        )?;
        output.row_mut(t).assign(&memory.dot(&q.row(t))); // read
    }
    let (output, memory) = (finite("Y", output)?, finite("S", memory)?);
    Ok(RuleRead { output, memory })
}
// ANCHOR_END: rwkv7_recurrent

// ANCHOR: scores_before
/// Scores of a chunk faded by the gates strictly between the tokens:
/// P_ij = Σ_c a_ic b_jc exp(λ̄_ic − λ_jc) for j < i, 0 on and above the
/// diagonal, with λ̄_i = λ_i − ln α_i the log-gates before token i.
/// a, b, g, log_alpha: (C, p). Every exponent is ≤ 0.
pub fn scores_before(
    a: &ArrayRef2<f64>,
    b: &ArrayRef2<f64>,
    g: &ArrayRef2<f64>,
    log_alpha: &ArrayRef2<f64>,
) -> Array2<f64> {
    let before = &g.view() - &log_alpha.view(); // λ̄: the decay up to token i − 1
    let c = a.nrows();
    Array2::from_shape_fn((c, c), |(i, j)| {
        if j >= i {
            return 0.0;
        }
        Zip::from(&a.row(i))
            .and(&b.row(j))
            .and(&before.row(i))
            .and(&g.row(j))
            .fold(0.0, |sum, a, b, g_i, g_j| sum + a * b * (g_i - g_j).exp())
    })
}
// ANCHOR_END: scores_before

// ANCHOR: rwkv7_chunk
/// One chunk of RWKV-7 from the memory S_0 before it. With λ the chunk's
/// cumulative log-gates, Γ = exp(λ), Γ̄ = exp(λ̄), Ě = ζ ⊙ Ǩ (erase rows):
/// (I + P̌) V̌ = (Γ̄ ⊙ Ǩ) S_0ᵀ + P̆ V, P̌ = scores_before(Ǩ, Ě),
/// P̆ = scores_before(Ǩ, K̆); Y = (Γ ⊙ Q) S_0ᵀ − M̌ V̌ + M̆ V, M̌, M̆ the
/// decayed scores of Q with Ě and K̆ (j ≤ i); S ← S_0 diag(Γ_C) plus
/// Vᵀ (K̆ ⊙ exp(λ_C − λ)) − V̌ᵀ (Ě ⊙ exp(λ_C − λ)).
/// q, removal (unit rows), replacement, zeta, log_alpha: (C, p); v: (C, m).
pub fn rwkv7_chunk(
    memory: &mut Array2<f64>,
    q: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    log_alpha: &ArrayRef2<f64>,
    zeta: &ArrayRef2<f64>,
    removal: &ArrayRef2<f64>,
    replacement: &ArrayRef2<f64>,
) -> Array2<f64> {
    let g = cumulative_log_gates(log_alpha);
    let erase = &zeta.view() * &removal.view(); // row j: ζ_j ⊙ ǩ_j
    let p_erase = scores_before(removal, &erase, &g, log_alpha);
    let p_write = scores_before(removal, replacement, &g, log_alpha);
    let gamma_before = (&g - &log_alpha.view()).mapv(f64::exp); // Γ̄
    let rhs =
        (&removal.view() * &gamma_before).dot(&memory.t()) + p_write.dot(v);
    let held = forward_substitution(&p_erase, &rhs); // V̌: row i is S_{i−1} ǩ_i
    let gamma = g.mapv(f64::exp);
    let y = (&q.view() * &gamma).dot(&memory.t())
        - decayed_scores(q, &erase, &g, false).dot(&held)
        + decayed_scores(q, replacement, &g, false).dot(v);
    let last = g.row(g.nrows() - 1);
    let to_end = (&last - &g).mapv(f64::exp); // decay to the chunk's end
    *memory *= &last.mapv(f64::exp).insert_axis(Axis(0));
    *memory += &v.t().dot(&(&replacement.view() * &to_end));
    *memory -= &held.t().dot(&(&erase * &to_end));
    y
}
// ANCHOR_END: rwkv7_chunk

// ANCHOR: rwkv7_chunkwise
/// RWKV-7 in chunks of `chunk` tokens, each computed by `rwkv7_chunk`,
/// the memory carried from one chunk to the next. Shapes as
/// `rwkv7_recurrent`'s, chunk ≥ 1.
pub fn rwkv7_chunkwise(
    q: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    g: &Rwkv7,
    chunk: usize,
) -> Result<RuleRead, InputError> {
    check_chunk(chunk)?;
    let removal = prepare_rwkv7(q, v, g)?;
    let log_alpha = g.alpha.mapv(f64::ln);
    let (n, p, m) = (q.nrows(), q.ncols(), v.ncols());
    let mut memory = Array2::zeros((m, p));
    let mut output = Array2::zeros((n, m));
    for start in (0..n).step_by(chunk) {
        let rows = s![start..(start + chunk).min(n), ..];
        let y = rwkv7_chunk(
            &mut memory,
            &q.slice(rows),
            &v.slice(rows),
            &log_alpha.slice(rows),
            &g.zeta.slice(rows),
            &removal.slice(rows),
            &g.replacement.slice(rows),
        );
        output.slice_mut(rows).assign(&y);
    }
    let (output, memory) = (finite("Y", output)?, finite("S", memory)?);
    Ok(RuleRead { output, memory })
}
// ANCHOR_END: rwkv7_chunkwise

/// Random DeltaProduct inputs for N tokens, n_h writes per token, drawn
/// from `rng`: unit keys (N n_h, p), Gaussian values (N n_h, m) and
/// strengths uniform in [0, 2].
pub fn random_delta_product(
    rng: &mut BookRng,
    (n, p, m): (usize, usize, usize),
    n_h: usize,
) -> (Array2<f64>, Array2<f64>, Array1<f64>) {
    let k = unit_rows(&randn(rng, n * n_h, p));
    let v = randn(rng, n * n_h, m);
    let beta =
        Array1::from_shape_simple_fn(n * n_h, || 2.0 * rng.random::<f64>());
    (k, v, beta)
}

/// Random RWKV-7 numbers for N tokens and p features: α log-uniform in
/// [lo, 1], ζ uniform in [0, 1], removal and replacement keys Gaussian.
pub fn random_rwkv7(seed: u64, n: usize, p: usize, lo: f64) -> Rwkv7 {
    let mut rng = seeded(seed ^ 0x7777);
    let alpha = log_uniform_gates(&mut rng, n, p, lo);
    let zeta = Array2::from_shape_simple_fn((n, p), || rng.random::<f64>());
    Rwkv7 {
        alpha,
        zeta,
        removal: randn(&mut rng, n, p),
        replacement: randn(&mut rng, n, p),
    }
}

// ANCHOR: delta_product_chunkwise
/// DeltaProduct in chunks of `chunk` tokens: each token's n_h writes are
/// n_h consecutive pseudo-tokens of one delta-rule chunk (no gates,
/// ω = β), and only the last of them reads, with the token's query.
/// q: (N, p), k: (N n_h, p), v: (N n_h, m), beta: (N n_h) in [0, 2].
pub fn delta_product_chunkwise(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    beta: &ArrayRef1<f64>,
    n_h: usize,
    chunk: usize,
) -> Result<Array2<f64>, InputError> {
    check_delta_product(q, k, v, beta, n_h)?;
    check_chunk(chunk)?;
    let (n, p, m) = (q.nrows(), q.ncols(), v.ncols());
    let mut reads = Array2::zeros((n * n_h, p)); // a query at every last
    for t in 0..n {
        reads.row_mut(t * n_h + n_h - 1).assign(&q.row(t));
    }
    let no_decay = Array2::zeros((n * n_h, p)); // ln 1
    let mut memory = Array2::zeros((m, p));
    let mut output = Array2::zeros((n, m));
    for start in (0..n).step_by(chunk) {
        let end = (start + chunk).min(n);
        let rows = s![start * n_h..end * n_h, ..];
        let at = s![start * n_h..end * n_h];
        let y = rule_chunk(
            &mut memory,
            &reads.slice(rows),
            &k.slice(rows),
            &v.slice(rows),
            &no_decay.slice(rows),
            &beta.slice(at),
            &beta.slice(at),
        );
        let last = y.slice(s![n_h - 1..;n_h, ..]); // each token's last
        output.slice_mut(s![start..end, ..]).assign(&last);
    }
    finite("Y", output)
}
// ANCHOR_END: delta_product_chunkwise

#[cfg(test)]
mod tests;
