//! Chapter "The delta rule": the paper's update rule, which reads what the
//! memory holds for a key before it writes, and writes only a correction
//! (Schlag et al. 2021, §4.2); the rule as one gradient step on a
//! regression loss and as a transition I − β k̄ k̄ᵀ; its write strength β,
//! its sum normalisation, the gated rule of Appendix A and the decaying
//! memory it is compared with, the chunkwise form that trains in parallel
//! (Yang et al. 2024), derived through the WY representation, and the
//! backward pass that undoes each write.
//!
//! Shapes: feature-mapped keys and queries phi_k, phi_q: (N, p), values
//! v: (N, m), write strengths beta: (N). The memory W is (m, p), values by
//! features, as everywhere in the book: written with v k̄ᵀ, read W q̄.

use crate::causal::causal_scores;
use crate::input::same_rows;
use crate::input::{
    Entry, InputError, check_chunk, check_qkv, finite, nonempty_finite,
    positive_row_sums, same_cols,
};
use crate::m3::fast_weight_memory::fast_weight_write;
use crate::m3::schedules::{AffineStep, check_grad_o};
use crate::phi::map_rows;
use crate::table::Table;
use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2, Axis, s};

// ANCHOR: sum_normalise
/// Sum normalisation, k̄ = φ(k) / Σ_i φ(k)_i: non-negative features become
/// weights that sum to 1. x: (p), with a positive, finite sum.
pub fn sum_normalise(x: &ArrayRef1<f64>) -> Array1<f64> {
    let total = x.sum();
    assert!(
        total > 0.0 && total.is_finite(),
        "sum normalisation needs features with a positive sum, got {total}"
    );
    x.mapv(|f| f / total)
}
// ANCHOR_END: sum_normalise

// ANCHOR: write_strength
/// The write strength β_t = σ(w_βᵀ x_t) ∈ (0, 1), one per token, computed
/// by the slow net from the input. x: (N, d_model), w_beta: (d_model).
pub fn write_strength(
    x: &ArrayRef2<f64>,
    w_beta: &ArrayRef1<f64>,
) -> Result<Array1<f64>, InputError> {
    nonempty_finite("x", x)?;
    let w = w_beta.view().insert_axis(Axis(0)); // (1, d_model)
    nonempty_finite("w_beta", &w)?;
    same_cols(("x", x), ("w_beta", &w), "one weight per input entry")?;
    Ok(x.dot(w_beta).mapv(|a| 1.0 / (1.0 + (-a).exp())))
}
// ANCHOR_END: write_strength

// ANCHOR: delta_rule_step
/// One write of the delta rule: retrieve v̄ = W k̄, then
/// W ← W + β (v − v̄) k̄ᵀ. memory: (m, p), k_bar: (p), v: (m).
/// Returns v̄, what the memory held for k̄ before the write.
pub fn delta_rule_step(
    memory: &mut Array2<f64>,
    k_bar: &ArrayRef1<f64>,
    v: &ArrayRef1<f64>,
    beta: f64,
) -> Array1<f64> {
    let v_bar = memory.dot(k_bar); // what is stored for this key now
    let correction = (&v.view() - &v_bar) * beta;
    fast_weight_write(memory, &correction, k_bar); // add β (v − v̄) k̄ᵀ
    v_bar
}
// ANCHOR_END: delta_rule_step

// ANCHOR: regression_gradient
/// The gradient of the regression loss L(W) = ½‖W k̄ − v‖² for one
/// association: ∇L = (W k̄ − v) k̄ᵀ. memory: (m, p), k_bar: (p), v: (m).
pub fn regression_gradient(
    memory: &ArrayRef2<f64>,
    k_bar: &ArrayRef1<f64>,
    v: &ArrayRef1<f64>,
) -> Array2<f64> {
    let error = memory.dot(k_bar) - v; // what the read gets wrong
    let mut gradient = Array2::zeros(memory.raw_dim());
    fast_weight_write(&mut gradient, &error, k_bar); // (W k̄ − v) k̄ᵀ
    gradient
}
// ANCHOR_END: regression_gradient

/// The regression loss ½‖W k̄ − v‖² of one association.
pub fn regression_loss(
    memory: &ArrayRef2<f64>,
    k_bar: &ArrayRef1<f64>,
    v: &ArrayRef1<f64>,
) -> f64 {
    let error = memory.dot(k_bar) - v;
    0.5 * error.dot(&error)
}

// ANCHOR: delta_transition
/// The delta rule's transition A = I − β k̄ k̄ᵀ, with which one write is
/// W_t = W_{t−1} A + β v k̄ᵀ. k_bar: (p); returns A: (p, p).
pub fn delta_transition(k_bar: &ArrayRef1<f64>, beta: f64) -> Array2<f64> {
    let mut a = Array2::eye(k_bar.len());
    fast_weight_write(&mut a, &k_bar.mapv(|x| -beta * x), k_bar);
    a
}
// ANCHOR_END: delta_transition

// ANCHOR: gated_rule_step
/// The gated rule of Peng et al. (2021), as Appendix A of the paper writes
/// it: W ← (1 − β) W + β v kᵀ. memory: (m, p), k: (p), v: (m).
pub fn gated_rule_step(
    memory: &mut Array2<f64>,
    k: &ArrayRef1<f64>,
    v: &ArrayRef1<f64>,
    beta: f64,
) {
    *memory *= 1.0 - beta; // every association fades ...
    fast_weight_write(memory, &v.mapv(|x| x * beta), k); // ... v kᵀ comes in
}
// ANCHOR_END: gated_rule_step

// ANCHOR: decayed_write_step
/// The decaying memory of the module's code walkthrough (`train_hope.py`):
/// memory ← a · memory + v kᵀ, one decay a per token.
/// memory: (m, p), k: (p), v: (m).
pub fn decayed_write_step(
    memory: &mut Array2<f64>,
    k: &ArrayRef1<f64>,
    v: &ArrayRef1<f64>,
    a: f64,
) {
    *memory *= a; // every association fades by a ...
    fast_weight_write(memory, v, k); // ... and v kᵀ is added at full strength
}
// ANCHOR_END: decayed_write_step

// ANCHOR: delta_rule_recurrent
/// What a delta-rule layer returns: the reads Y: (N, m) and the memory
/// after the last token, W_N: (m, p).
pub struct DeltaRead {
    pub output: Array2<f64>,
    pub memory: Array2<f64>,
}

/// The delta-rule layer, token by token, from W_0 = 0: with
/// k̄_t = φ(k_t) / Σ φ(k_t) and q̄_t likewise,
/// W_t = W_{t−1} + β_t (v_t − W_{t−1} k̄_t) k̄_tᵀ,  y_t = W_t q̄_t.
/// phi_q, phi_k: (N, p) with positive row sums, v: (N, m), beta: (N).
pub fn delta_rule_recurrent(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    beta: &ArrayRef1<f64>,
) -> Result<DeltaRead, InputError> {
    check_delta(phi_q, phi_k, v, beta)?;
    let (n, p, m) = (phi_k.nrows(), phi_k.ncols(), v.ncols());
    let mut memory = Array2::zeros((m, p));
    let mut output = Array2::zeros((n, m));
    for t in 0..n {
        let k_bar = sum_normalise(&phi_k.row(t));
        delta_rule_step(&mut memory, &k_bar, &v.row(t), beta[t]); // write
        let q_bar = sum_normalise(&phi_q.row(t));
        output.row_mut(t).assign(&memory.dot(&q_bar)); // read
    }
    let (output, memory) = (finite("Y", output)?, finite("W", memory)?);
    Ok(DeltaRead { output, memory })
}
// ANCHOR_END: delta_rule_recurrent

/// The checks of the delta-rule layers: those of a causal read, feature
/// rows with positive sums, and one finite write strength per token.
pub(crate) fn check_delta<T: Entry + ndarray::LinalgScalar>(
    phi_q: &ArrayRef2<T>,
    phi_k: &ArrayRef2<T>,
    v: &ArrayRef2<T>,
    beta: &ArrayRef1<T>,
) -> Result<(), InputError> {
    check_qkv(phi_q, phi_k, v, true)?;
    positive_row_sums("the row sum of phi_k", phi_k)?;
    positive_row_sums("the row sum of phi_q", phi_q)?;
    let beta = beta.view().insert_axis(Axis(1)); // (N, 1)
    nonempty_finite("beta", &beta)?;
    same_rows(("k", phi_k), ("beta", &beta), "one write strength per key")
}

// ANCHOR: forward_substitution
/// Solve (I + A) X = B for A: (C, C) strictly lower triangular, B: (C, n),
/// one row at a time: x_i = b_i − Σ_{j<i} a_ij x_j.
pub fn forward_substitution(
    a: &ArrayRef2<f64>,
    b: &ArrayRef2<f64>,
) -> Array2<f64> {
    let mut x = b.to_owned();
    for i in 1..x.nrows() {
        let known = a.slice(s![i, ..i]).dot(&x.slice(s![..i, ..]));
        let row = &x.row(i) - &known;
        x.row_mut(i).assign(&row);
    }
    x
}
// ANCHOR_END: forward_substitution

// ANCHOR: ut_transform
/// The UT transform of a chunk, T = (I + A)⁻¹ diag(β) with
/// A = tril(diag(β) K̄ K̄ᵀ, −1), by forward substitution.
/// k_bar: (C, p), beta: (C); returns T: (C, C), lower triangular.
pub fn ut_transform(
    k_bar: &ArrayRef2<f64>,
    beta: &ArrayRef1<f64>,
) -> Array2<f64> {
    let mut a = k_bar.dot(&k_bar.t()); // K̄ K̄ᵀ, then keep below the diagonal
    a.indexed_iter_mut()
        .for_each(|((i, j), x)| *x = if j < i { beta[i] * *x } else { 0.0 });
    forward_substitution(&a, &Array2::from_diag(&beta.view()))
}
// ANCHOR_END: ut_transform

// ANCHOR: wy_representation
/// A chunk of delta-rule writes folded into one affine step (the WY form):
/// with T the UT transform, K̂ = T K̄ and V̂ = T V, the chunk maps
/// W ↦ W (I − K̂ᵀ K̄) + V̂ᵀ K̄. k_bar: (C, p), v: (C, m), beta: (C).
pub fn wy_representation(
    k_bar: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    beta: &ArrayRef1<f64>,
) -> AffineStep {
    let t = ut_transform(k_bar, beta);
    let (k_hat, v_hat) = (t.dot(k_bar), t.dot(v)); // (C, p), (C, m)
    AffineStep {
        a: Array2::eye(k_bar.ncols()) - k_hat.t().dot(k_bar),
        b: v_hat.t().dot(k_bar),
    }
}
// ANCHOR_END: wy_representation

// ANCHOR: delta_rule_chunkwise
/// The delta-rule layer in chunks of C tokens (Yang et al. 2024, in the
/// book's orientation). Per chunk, with K̄, Q̄: (C, p), V: (C, m), W_0 the
/// memory before it and T the UT transform: U = T V − (T K̄) W_0ᵀ, Y = Q̄ W_0ᵀ + tril(Q̄ K̄ᵀ) U, W ← W_0 + Uᵀ K̄.
pub fn delta_rule_chunkwise(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    beta: &ArrayRef1<f64>,
    chunk: usize,
) -> Result<DeltaRead, InputError> {
    check_delta(phi_q, phi_k, v, beta)?;
    check_chunk(chunk)?;
    let (n, p, m) = (phi_k.nrows(), phi_k.ncols(), v.ncols());
    let (k_all, q_all) = (
        map_rows(phi_k, sum_normalise),
        map_rows(phi_q, sum_normalise),
    );
    let mut memory = Array2::<f64>::zeros((m, p));
    let mut output = Array2::zeros((n, m));
    for start in (0..n).step_by(chunk) {
        let end = (start + chunk).min(n); // the last chunk may be short
        let (k, q) = (
            k_all.slice(s![start..end, ..]),
            q_all.slice(s![start..end, ..]),
        );
        let (vc, b) = (v.slice(s![start..end, ..]), beta.slice(s![start..end]));
        let t = ut_transform(&k, &b);
        let u = t.dot(&vc) - t.dot(&k).dot(&memory.t()); // V̂ − K̂ W_0ᵀ
        let scores = causal_scores(&q, &k); // tril(Q̄ K̄ᵀ), diagonal included
        let y = q.dot(&memory.t()) + scores.dot(&u);
        output.slice_mut(s![start..end, ..]).assign(&y);
        memory += &u.t().dot(&k); // W ← W_0 + Uᵀ K̄
    }
    let (output, memory) = (finite("Y", output)?, finite("W", memory)?);
    Ok(DeltaRead { output, memory })
}
// ANCHOR_END: delta_rule_chunkwise

// ANCHOR: delta_rule_backward
/// What the delta rule's backward pass returns: the gradients of the loss
/// with respect to q̄, k̄: (N, p), v: (N, m) and β: (N).
pub struct DeltaGradients {
    pub q_bar: Array2<f64>,
    pub k_bar: Array2<f64>,
    pub v: Array2<f64>,
    pub beta: Array1<f64>,
}

/// Backward through W_t = W_{t−1} + u_t k̄_tᵀ, u_t = β_t (v_t − W_{t−1} k̄_t),
/// y_t = W_t q̄_t, given G = ∂L/∂Y: (N, m). The forward sweep keeps each
/// inserted vector u_t and the last memory; the backward sweep carries
/// D = ∂L/∂W_t and undoes each write, W_{t−1} = W_t − u_t k̄_tᵀ.
/// q_bar, k_bar: (N, p), already normalised; v: (N, m); beta: (N).
pub fn delta_rule_backward(
    q_bar: &ArrayRef2<f64>,
    k_bar: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    beta: &ArrayRef1<f64>,
    grad_y: &ArrayRef2<f64>,
) -> Result<DeltaGradients, InputError> {
    check_delta(q_bar, k_bar, v, beta)?;
    check_grad_o(grad_y, v)?;
    let (n, p, m) = (k_bar.nrows(), k_bar.ncols(), v.ncols());
    let mut w = Array2::zeros((m, p));
    let mut inserted = Array2::zeros((n, m)); // u_t, one row per token
    for t in 0..n {
        let v_bar = delta_rule_step(&mut w, &k_bar.row(t), &v.row(t), beta[t]);
        inserted
            .row_mut(t)
            .assign(&((&v.row(t) - &v_bar) * beta[t]));
    }
    let mut grads = DeltaGradients {
        q_bar: Array2::zeros((n, p)),
        k_bar: Array2::zeros((n, p)),
        v: Array2::zeros((n, m)),
        beta: Array1::zeros(n),
    };
    let mut d = Array2::<f64>::zeros((m, p)); // ∂L/∂W_t
    for t in (0..n).rev() {
        let (k, u, g) = (k_bar.row(t), inserted.row(t), grad_y.row(t));
        grads.q_bar.row_mut(t).assign(&w.t().dot(&g)); // y_t = W_t q̄_t
        fast_weight_write(&mut d, &g, &q_bar.row(t)); // D += g_t q̄_tᵀ
        fast_weight_write(&mut w, &(-&u), &k); // undo: W is W_{t−1}
        let e = d.dot(&k); // ∂L/∂u_t
        let v_bar = w.dot(&k);
        grads.v.row_mut(t).assign(&(&e * beta[t]));
        grads.beta[t] = e.dot(&(&v.row(t) - &v_bar));
        let grad_k = d.t().dot(&u) - w.t().dot(&e) * beta[t];
        grads.k_bar.row_mut(t).assign(&grad_k);
        fast_weight_write(&mut d, &(&e * -beta[t]), &k); // D (I − β k̄ k̄ᵀ)
    }
    Ok(grads)
}
// ANCHOR_END: delta_rule_backward

/// One row of the Appendix A comparison at write strength β.
pub struct AppendixARow {
    pub beta: f64,
    /// ‖W' k₂ − ((1 − β) v₂ + β v₃)‖ for the delta rule and the gated rule.
    pub delta_rewritten: f64,
    pub gated_rewritten: f64,
    /// ‖W' k₁ − v₁‖, the unrelated association, for both rules.
    pub delta_unrelated: f64,
    pub gated_unrelated: f64,
    /// ‖W' k₂ − (v₂ + v₃)‖ for the sum rule: it adds, whatever β.
    pub sum_rewritten: f64,
}

/// Appendix A: a memory holds v₁ at k₁ and v₂ at k₂ (orthonormal keys in
/// ℝ^8, unit values in ℝ^4, seed `seed`); then k₂ is written again with v₃.
pub fn appendix_a_study(betas: &[f64], seed: u64) -> Vec<AppendixARow> {
    let mut rng = crate::random::seeded(seed);
    let keys = crate::linalg::orthonormal_keys(&mut rng, 2, 8);
    let values =
        crate::m3::attention::unit_rows(&crate::random::randn(&mut rng, 3, 4));
    let (k1, k2) = (keys.row(0), keys.row(1));
    let (v1, v2, v3) = (values.row(0), values.row(1), values.row(2));
    let mut memory = Array2::zeros((4, 8));
    fast_weight_write(&mut memory, &v1, &k1);
    fast_weight_write(&mut memory, &v2, &k2);
    let gap = |w: &Array2<f64>, k, v: &Array1<f64>| {
        crate::linalg::norm(&(&w.dot(k) - v))
    };
    let mut sum = memory.clone();
    fast_weight_write(&mut sum, &v3, &k2);
    betas
        .iter()
        .map(|&beta| {
            let target = &v2 * (1.0 - beta) + &v3 * beta;
            let mut delta = memory.clone();
            delta_rule_step(&mut delta, &k2, &v3, beta);
            let mut gated = memory.clone();
            gated_rule_step(&mut gated, &k2, &v3, beta);
            AppendixARow {
                beta,
                delta_rewritten: gap(&delta, &k2, &target),
                gated_rewritten: gap(&gated, &k2, &target),
                delta_unrelated: gap(&delta, &k1, &v1.to_owned()),
                gated_unrelated: gap(&gated, &k1, &v1.to_owned()),
                sum_rewritten: gap(&sum, &k2, &(&v2 + &v3)),
            }
        })
        .collect()
}

/// The Appendix A comparison as the chapter prints it.
pub struct AppendixATable(pub Vec<AppendixARow>);

impl std::fmt::Display for AppendixATable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "orthonormal k1, k2 in R^8; unit v1, v2, v3 in R^4; W holds \
             v1 at k1, v2 at k2, then k2 is written with v3"
        )?;
        writeln!(
            f,
            "target at k2: (1 - beta) v2 + beta v3; distances |read - want|"
        )?;
        let mut table = Table::new()
            .right("beta", 5)
            .right("delta: k2", 14)
            .gap(" ")
            .right("delta: k1", 14)
            .gap("  ")
            .right("gated: k2", 14)
            .gap(" ")
            .right("gated: k1", 14)
            .gap("  ")
            .right("sum: k2 vs v2+v3", 16);
        for r in &self.0 {
            table.row([
                format!("{:.2}", r.beta),
                format!("{:.1e}", r.delta_rewritten),
                format!("{:.1e}", r.delta_unrelated),
                format!("{:.1e}", r.gated_rewritten),
                format!("{:.3}", r.gated_unrelated),
                format!("{:.1e}", r.sum_rewritten),
            ]);
        }
        write!(f, "{table}")
    }
}

/// One row of the chunkwise study: length N, chunk size C, and the largest
/// row-relative difference between the chunkwise and recurrent outputs.
pub struct ChunkRow {
    pub n: usize,
    pub chunk: usize,
    pub difference: f64,
}

/// The chunkwise form against the recurrence on random inputs (d = 8,
/// m = 8, φ = elu+1, β = σ of a random projection), seeds 0..seeds.
pub fn chunkwise_study(cases: &[(usize, usize)], seeds: u64) -> Vec<ChunkRow> {
    cases
        .iter()
        .map(|&(n, chunk)| {
            let mut difference = 0.0_f64;
            for seed in 0..seeds {
                let mut rng = crate::random::seeded(seed);
                let mut draw = |c| crate::random::randn(&mut rng, n, c);
                let (q, k, v, x) = (draw(8), draw(8), draw(8), draw(8));
                let w_beta =
                    crate::random::randn(&mut rng, 1, 8).row(0).to_owned();
                let beta = write_strength(&x, &w_beta).expect("x: (N, 8)");
                let (q, k) = (
                    crate::phi::elu_plus_one(&q),
                    crate::phi::elu_plus_one(&k),
                );
                let rec = delta_rule_recurrent(&q, &k, &v, &beta).expect("ok");
                let chunked =
                    delta_rule_chunkwise(&q, &k, &v, &beta, chunk).expect("ok");
                difference = difference.max(
                    crate::linalg::worst_row_relative_difference(
                        &chunked.output,
                        &rec.output,
                    ),
                );
            }
            ChunkRow {
                n,
                chunk,
                difference,
            }
        })
        .collect()
}

/// The chunkwise study as the chapter prints it.
pub struct ChunkTable {
    pub seeds: u64,
    pub rows: Vec<ChunkRow>,
}

impl std::fmt::Display for ChunkTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "phi = elu+1, d = m = 8, beta = sigma(w_beta . x), seeds 0..{}",
            self.seeds
        )?;
        let mut table = Table::new()
            .right("N", 6)
            .gap(" ")
            .right("C", 6)
            .right("chunks", 8)
            .gap("  ")
            .right("chunkwise vs recurrent (rel.)", 30);
        for r in &self.rows {
            table.row([
                r.n.to_string(),
                r.chunk.to_string(),
                r.n.div_ceil(r.chunk).to_string(),
                format!("{:.1e}", r.difference),
            ]);
        }
        write!(f, "{table}")
    }
}

/// The picture of one rewrite: a memory holding p associations on one-hot
/// keys e_j (column j holds v_j), then key e_key written again with a new
/// value, once by the sum rule and once by the delta rule with β = 1.
/// Values are standard normal draws of `seed`; memories are (m, p).
pub fn rewrite_one_key(m: usize, p: usize, key: usize, seed: u64) -> Rewrite {
    assert!(key < p, "key {key} is not one of the {p} one-hot keys");
    let mut rng = crate::random::seeded(seed);
    let values = crate::random::randn(&mut rng, p, m); // row j: v_j
    let new_value = crate::random::randn(&mut rng, 1, m).row(0).to_owned();
    let e =
        |j: usize| Array1::from_shape_fn(p, |i| f64::from(u8::from(i == j)));
    let mut before = Array2::zeros((m, p));
    for (j, v) in values.rows().into_iter().enumerate() {
        fast_weight_write(&mut before, &v, &e(j)); // S += v_j e_jᵀ
    }
    let mut after_sum = before.clone();
    fast_weight_write(&mut after_sum, &new_value, &e(key)); // adds
    let mut after_delta = before.clone();
    delta_rule_step(&mut after_delta, &e(key), &new_value, 1.0); // replaces
    Rewrite {
        key,
        before,
        new_value,
        after_sum,
        after_delta,
    }
}

/// What [`rewrite_one_key`] draws: the memory before, the value written,
/// and the memory after each rule.
pub struct Rewrite {
    pub key: usize,
    pub before: Array2<f64>,
    pub new_value: Array1<f64>,
    pub after_sum: Array2<f64>,
    pub after_delta: Array2<f64>,
}

/// The seed and shape of the rewrite figure.
pub const REWRITE: (usize, usize, usize, u64) = (6, 6, 2, 7);

#[cfg(test)]
mod tests {
    #[test]
    fn a_delta_rewrite_replaces_the_value_at_its_key_a_sum_write_adds_to_it() {
        for (m, p, key, seed) in [(6, 6, 2, 7), (3, 5, 0, 1), (4, 2, 1, 9)] {
            let r = rewrite_one_key(m, p, key, seed);
            let same = |a: ndarray::ArrayView1<f64>, b: &Array1<f64>| {
                a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
            };
            for j in 0..p {
                let (old, sum, delta) = (
                    r.before.column(j),
                    r.after_sum.column(j),
                    r.after_delta.column(j),
                );
                if j == key {
                    // Replaced: the new value; added: old plus new.
                    assert!(same(delta, &r.new_value), "seed {seed}");
                    assert!(same(sum, &(&old + &r.new_value)), "seed {seed}");
                    assert!(!same(delta, &old.to_owned()), "seed {seed}");
                } else {
                    // Every other association stays as it was.
                    assert!(same(delta, &old.to_owned()), "seed {seed}");
                    assert!(same(sum, &old.to_owned()), "seed {seed}");
                }
            }
        }
    }

    use super::*;
    use crate::linalg::orthonormal_keys;
    use crate::linalg::worst_row_relative_difference;
    use crate::phi::{dpfp, elu_plus_one};
    use crate::random::{randn, seeded};
    use approx::assert_relative_eq;
    use ndarray::array;

    /// Two orthonormal keys k1, k2 in ℝ^d and three values: a memory that
    /// holds v1 at k1 and v2 at k2, as the paper's Appendix A sets it up.
    fn appendix_a(seed: u64, d: usize, m: usize) -> [Array2<f64>; 3] {
        let mut rng = seeded(seed);
        let keys = orthonormal_keys(&mut rng, 2, d);
        let values = randn(&mut rng, 3, m);
        let mut memory = Array2::zeros((m, d));
        fast_weight_write(&mut memory, &values.row(0), &keys.row(0));
        fast_weight_write(&mut memory, &values.row(1), &keys.row(1));
        [keys, values, memory]
    }

    const BETAS: [f64; 5] = [0.0, 0.1, 0.5, 0.9, 1.0];

    #[test]
    fn sum_normalised_features_are_weights_that_sum_to_one() {
        for seed in 0..10 {
            let x = randn(&mut seeded(seed), 1, 8).row(0).to_owned();
            for phi in [elu_plus_one(&x), dpfp(&x, 2)] {
                let k_bar = sum_normalise(&phi);
                assert_relative_eq!(k_bar.sum(), 1.0, epsilon = 1e-12);
                assert!(k_bar.iter().all(|&w| w >= 0.0));
                // Weights that sum to one: ‖k̄‖² ≤ 1, below 1 unless one-hot.
                assert!(k_bar.dot(&k_bar) < 1.0, "seed {seed}");
                // Scaling φ(k) changes nothing: only its direction counts.
                assert_relative_eq!(
                    sum_normalise(&(&phi * 7.5)),
                    k_bar,
                    max_relative = 1e-12
                );
            }
        }
    }

    #[test]
    fn a_sum_normalised_key_has_unit_length_only_when_one_hot() {
        // ‖k̄‖² = Σ w_i² ≤ (Σ w_i)² = 1 for weights w_i ≥ 0, with equality
        // only when one weight is 1: over random supports of 1 to p entries.
        for seed in 0..10 {
            let mut rng = seeded(seed);
            for p in [1, 2, 8, 64] {
                let x = randn(&mut rng, 1, p).row(0).mapv(f64::abs);
                for support in 1..=p.min(5) {
                    let mut phi = Array1::zeros(p);
                    for i in 0..support {
                        phi[(i * 7 + seed as usize) % p] = x[i] + 0.1;
                    }
                    let k_bar = sum_normalise(&phi);
                    let n2 = k_bar.dot(&k_bar);
                    if support == 1 {
                        assert_eq!(n2, 1.0, "one-hot, p {p}");
                    } else {
                        assert!(n2 < 1.0 - 1e-6, "p {p}, support {support}");
                    }
                }
            }
        }
    }

    #[test]
    #[should_panic(expected = "positive sum")]
    fn sum_normalising_all_zero_features_is_refused() {
        // DPFP of the zero vector is all zeros: 0/0 would be NaN.
        sum_normalise(&dpfp(&array![0.0, 0.0], 1));
    }

    #[test]
    fn write_strength_is_a_logistic_of_the_input_between_0_and_1() {
        for seed in 0..10 {
            let mut rng = seeded(seed);
            let x = randn(&mut rng, 20, 6) * 3.0;
            let w = randn(&mut rng, 1, 6).row(0).to_owned();
            let beta = write_strength(&x, &w).unwrap();
            for t in 0..20 {
                let a: f64 = x.row(t).dot(&w);
                assert_relative_eq!(beta[t], 1.0 / (1.0 + (-a).exp()));
                assert!(beta[t] > 0.0 && beta[t] < 1.0);
            }
        }
        let zero = Array1::zeros(6);
        let x = randn(&mut seeded(0), 3, 6);
        assert_eq!(write_strength(&x, &zero).unwrap(), array![0.5, 0.5, 0.5]);
        let msg = write_strength(&x, &Array1::zeros(5)).err().unwrap();
        assert!(msg.to_string().contains("w_beta is [1, 5]"), "{msg}");
    }

    #[test]
    fn with_beta_one_a_rewritten_key_returns_the_new_value() {
        for seed in 0..10 {
            for (d, m) in [(2, 1), (8, 8), (32, 5)] {
                let [keys, values, memory] = appendix_a(seed, d, m);
                let (k2, v2, v3) = (keys.row(1), values.row(1), values.row(2));
                // The delta rule replaces v2 by v3 ...
                let mut delta = memory.clone();
                let v_bar = delta_rule_step(&mut delta, &k2, &v3, 1.0);
                assert_relative_eq!(v_bar, v2, max_relative = 1e-12);
                assert_relative_eq!(delta.dot(&k2), v3, max_relative = 1e-10);
                // ... the sum rule returns the sum of old and new.
                let mut sum = memory.clone();
                fast_weight_write(&mut sum, &v3, &k2);
                assert_relative_eq!(
                    sum.dot(&k2),
                    &v2 + &v3,
                    max_relative = 1e-10
                );
            }
        }
    }

    #[test]
    fn beta_interpolates_between_the_old_and_the_new_value() {
        for seed in 0..10 {
            let [keys, values, memory] = appendix_a(seed, 8, 4);
            let (k2, v2, v3) = (keys.row(1), values.row(1), values.row(2));
            for beta in BETAS {
                let mut w = memory.clone();
                delta_rule_step(&mut w, &k2, &v3, beta);
                let want = &v2 * (1.0 - beta) + &v3 * beta;
                assert_relative_eq!(
                    w.dot(&k2),
                    want,
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
            }
        }
    }

    #[test]
    fn the_delta_rule_keeps_unrelated_associations_the_gated_rule_fades_them() {
        // Appendix A: rewrite k2 with v3. Both rules move the read of k2 to
        // (1 − β) v2 + β v3; only the gated rule also scales v1 at k1.
        for seed in 0..10 {
            for (d, m) in [(2, 3), (8, 8), (32, 5)] {
                let [keys, values, memory] = appendix_a(seed, d, m);
                let (k1, k2) = (keys.row(0), keys.row(1));
                let (v1, v2, v3) =
                    (values.row(0), values.row(1), values.row(2));
                for beta in BETAS {
                    let mut delta = memory.clone();
                    delta_rule_step(&mut delta, &k2, &v3, beta);
                    let mut gated = memory.clone();
                    gated_rule_step(&mut gated, &k2, &v3, beta);
                    let new = &v2 * (1.0 - beta) + &v3 * beta;
                    for w in [&delta, &gated] {
                        assert_relative_eq!(
                            w.dot(&k2),
                            new,
                            max_relative = 1e-10,
                            epsilon = 1e-12
                        );
                    }
                    assert_relative_eq!(
                        delta.dot(&k1),
                        v1,
                        max_relative = 1e-10
                    );
                    assert_relative_eq!(
                        gated.dot(&k1),
                        &v1 * (1.0 - beta),
                        max_relative = 1e-10,
                        epsilon = 1e-12
                    );
                    if beta > 0.0 {
                        let lost =
                            crate::linalg::norm(&(&gated.dot(&k1) - &v1));
                        assert!(lost > 0.05 * crate::linalg::norm(&v1));
                    }
                }
            }
        }
    }

    /// A random memory, key, value: the key sum-normalised (`normalised`)
    /// or raw Gaussian, so the claims are checked for any key.
    fn association(
        seed: u64,
        m: usize,
        p: usize,
        normalised: bool,
    ) -> (Array2<f64>, Array1<f64>, Array1<f64>) {
        let mut rng = seeded(seed);
        let w = randn(&mut rng, m, p);
        let raw = randn(&mut rng, 1, p).row(0).to_owned();
        let k = if normalised {
            sum_normalise(&elu_plus_one(&raw))
        } else {
            raw
        };
        let v = randn(&mut rng, 1, m).row(0).to_owned();
        (w, k, v)
    }

    #[test]
    fn at_beta_norm_squared_one_the_write_projects_onto_the_matrices_that_map_the_key_to_the_value()
     {
        // W' k̄ = v exactly, and the change W' − W is orthogonal (in the
        // Frobenius inner product) to every X with X k̄ = 0: it is the
        // orthogonal projection of W onto {W : W k̄ = v}.
        for seed in 0..10 {
            for (m, p, normalised) in
                [(1, 1, true), (4, 8, false), (6, 5, true)]
            {
                let (w, k, v) = association(seed, m, p, normalised);
                let mut written = w.clone();
                delta_rule_step(&mut written, &k, &v, 1.0 / k.dot(&k));
                assert_relative_eq!(
                    written.dot(&k),
                    v,
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
                let change = &written - &w;
                for s in 0..3 {
                    // X = a uᵀ with u ⊥ k̄ maps k̄ to 0.
                    let a = randn(&mut seeded(seed + 50 + s), 1, m)
                        .row(0)
                        .to_owned();
                    let u = orthogonal_to(&k, seed + s);
                    let inner = a.dot(&change.dot(&u));
                    let scale = crate::linalg::norm(&a)
                        * change.mapv(|x| x * x).sum().sqrt()
                        * crate::linalg::norm(&u);
                    assert!(
                        inner.abs() <= 1e-10 * scale.max(1e-300),
                        "{inner}"
                    );
                }
            }
        }
    }

    #[test]
    fn the_regression_gradient_matches_central_differences() {
        let h = 1e-6;
        for seed in 0..5 {
            for (m, p, normalised) in
                [(1, 1, true), (3, 8, false), (5, 6, true)]
            {
                let (w, k, v) = association(seed, m, p, normalised);
                let gradient = regression_gradient(&w, &k, &v);
                for ((a, b), &g) in gradient.indexed_iter() {
                    let (mut up, mut down) = (w.clone(), w.clone());
                    up[[a, b]] += h;
                    down[[a, b]] -= h;
                    let numeric = (regression_loss(&up, &k, &v)
                        - regression_loss(&down, &k, &v))
                        / (2.0 * h);
                    assert_relative_eq!(
                        g,
                        numeric,
                        max_relative = 1e-6,
                        epsilon = 1e-8
                    );
                }
            }
        }
    }

    #[test]
    fn the_delta_write_is_one_gradient_step_on_the_regression_loss() {
        // W − β (W k̄ − v) k̄ᵀ = W + β (v − W k̄) k̄ᵀ: the same matrix, for
        // any memory, any key (normalised or not), any value and any β.
        for seed in 0..10 {
            for (m, p, normalised) in
                [(1, 1, true), (4, 8, false), (6, 5, true)]
            {
                let (w, k, v) = association(seed, m, p, normalised);
                for beta in [0.0, 0.3, 1.0, 1.7] {
                    let descended =
                        &w - &(regression_gradient(&w, &k, &v) * beta);
                    let mut written = w.clone();
                    delta_rule_step(&mut written, &k, &v, beta);
                    assert_relative_eq!(
                        written,
                        descended,
                        max_relative = 1e-12,
                        epsilon = 1e-12
                    );
                }
            }
        }
    }

    #[test]
    fn one_step_multiplies_the_loss_by_one_minus_beta_norm_squared_squared() {
        for seed in 0..10 {
            for (m, p, normalised) in
                [(1, 1, true), (4, 8, false), (6, 5, true)]
            {
                let (mut w, k, v) = association(seed, m, p, normalised);
                let before = regression_loss(&w, &k, &v);
                for beta in [0.0, 0.25, 0.5, 1.0] {
                    let kept = w.clone();
                    delta_rule_step(&mut w, &k, &v, beta);
                    let factor = (1.0 - beta * k.dot(&k)).powi(2);
                    assert_relative_eq!(
                        regression_loss(&w, &k, &v),
                        factor * before,
                        max_relative = 1e-9,
                        epsilon = 1e-12
                    );
                    w = kept;
                }
            }
        }
    }

    #[test]
    fn the_write_is_the_memory_times_the_transition_plus_the_new_association() {
        // W_t = W_{t−1} (I − β k̄ k̄ᵀ) + β v k̄ᵀ.
        for seed in 0..10 {
            for (m, p, normalised) in
                [(1, 1, true), (4, 8, false), (6, 5, true)]
            {
                let (w, k, v) = association(seed, m, p, normalised);
                for beta in [0.0, 0.4, 1.0] {
                    let mut want = w.dot(&delta_transition(&k, beta));
                    fast_weight_write(&mut want, &v.mapv(|x| beta * x), &k);
                    let mut written = w.clone();
                    delta_rule_step(&mut written, &k, &v, beta);
                    assert_relative_eq!(
                        written,
                        want,
                        max_relative = 1e-12,
                        epsilon = 1e-12
                    );
                }
            }
        }
    }

    /// A vector orthogonal to k: a random one with its k part removed.
    fn orthogonal_to(k: &Array1<f64>, seed: u64) -> Array1<f64> {
        let x = randn(&mut seeded(seed + 100), 1, k.len()).row(0).to_owned();
        &x - &(k * (x.dot(k) / k.dot(k)))
    }

    #[test]
    fn the_transition_scales_the_key_by_one_minus_beta_norm_squared_and_keeps_the_rest()
     {
        // Eigenvalues: 1 − β‖k̄‖² along k̄, 1 on the p − 1 directions
        // orthogonal to it.
        for seed in 0..10 {
            for (p, normalised) in [(2, true), (8, false), (16, true)] {
                let (_, k, _) = association(seed, 1, p, normalised);
                let u = orthogonal_to(&k, seed);
                for beta in [0.0, 0.5, 1.0, 2.0] {
                    let a = delta_transition(&k, beta);
                    let lambda = 1.0 - beta * k.dot(&k);
                    assert_relative_eq!(
                        a.dot(&k),
                        &k * lambda,
                        max_relative = 1e-10,
                        epsilon = 1e-12
                    );
                    assert_relative_eq!(
                        a.dot(&u),
                        u,
                        max_relative = 1e-10,
                        epsilon = 1e-12
                    );
                    assert_eq!(a, a.t()); // symmetric: real eigenvalues
                }
            }
        }
    }

    #[test]
    fn the_transition_never_lengthens_a_memory_row_exactly_when_beta_norm_squared_is_in_0_2()
     {
        for seed in 0..10 {
            for (p, normalised) in [(2, true), (8, false), (16, true)] {
                let (w, k, _) = association(seed, 6, p, normalised);
                let n2 = k.dot(&k);
                for step in [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0] {
                    let a = delta_transition(&k, step / n2);
                    // Inside [0, 2] no row of any memory grows ...
                    for row in w.rows() {
                        let after = crate::linalg::norm(&row.dot(&a));
                        let grows =
                            after > crate::linalg::norm(&row) * (1.0 + 1e-12);
                        assert!(!grows || step > 2.0, "seed {seed}: {step}");
                    }
                    // ... outside it the key's own direction does.
                    let along = crate::linalg::norm(&k.dot(&a));
                    let grows = along > crate::linalg::norm(&k) * (1.0 + 1e-12);
                    assert_eq!(grows, step > 2.0, "seed {seed}: {step}");
                }
            }
        }
    }

    #[test]
    fn with_beta_norm_squared_two_the_transition_is_a_householder_reflection() {
        for seed in 0..10 {
            for (p, normalised) in [(2, true), (8, false), (16, true)] {
                let (_, k, _) = association(seed, 1, p, normalised);
                let a = delta_transition(&k, 2.0 / k.dot(&k));
                let eye = Array2::<f64>::eye(p);
                assert_relative_eq!(a.dot(&a), eye, epsilon = 1e-12);
                assert_relative_eq!(a.dot(&k), -&k, epsilon = 1e-12);
                // At β‖k̄‖² = 1 it is a projection instead: k̄ is sent to 0.
                let proj = delta_transition(&k, 1.0 / k.dot(&k));
                assert_relative_eq!(proj.dot(&proj), proj, epsilon = 1e-12);
                assert!(crate::linalg::norm(&proj.dot(&k)) < 1e-12);
            }
        }
    }

    #[test]
    fn a_delta_write_moves_the_read_beta_times_norm_squared_of_the_way() {
        // W' k̄ − v = (1 − β‖k̄‖²)(v̄ − v), for any memory and any key:
        // sum-normalised, raw Gaussian, and long (‖k‖² up to about 50).
        for seed in 0..10 {
            for (p, m, key) in
                [(1, 1, 0), (8, 3, 0), (48, 16, 0), (8, 3, 1), (48, 16, 2)]
            {
                let mut rng = seeded(seed);
                let mut w = randn(&mut rng, m, p);
                let raw = randn(&mut rng, 1, p).row(0).to_owned();
                let k = match key {
                    0 => sum_normalise(&elu_plus_one(&raw)),
                    1 => raw,
                    _ => elu_plus_one(&raw),
                };
                let v = randn(&mut rng, 1, m).row(0).to_owned();
                for beta in BETAS {
                    let before = w.clone();
                    let v_bar = delta_rule_step(&mut w, &k, &v, beta);
                    assert_eq!(v_bar, before.dot(&k));
                    let step = beta * k.dot(&k);
                    let want = (&v_bar - &v) * (1.0 - step);
                    assert_relative_eq!(
                        &w.dot(&k) - &v,
                        want,
                        max_relative = 1e-9,
                        epsilon = 1e-12
                    );
                    w = before;
                }
            }
        }
    }

    #[test]
    fn without_sum_normalisation_repeated_writes_of_one_key_can_diverge() {
        // The error of the read after each write is multiplied by
        // 1 − β‖k‖². A sum-normalised key has ‖k̄‖² ≤ 1, so for β ∈ [0, 1]
        // the factor lies in [0, 1]; a raw φ(k) can make it exceed 1 in size.
        for seed in 0..10 {
            let mut rng = seeded(seed);
            let phi = elu_plus_one(&randn(&mut rng, 1, 16)).row(0).to_owned();
            let v = randn(&mut rng, 1, 4).row(0).to_owned();
            for (key, should_grow) in
                [(phi.clone(), true), (sum_normalise(&phi), false)]
            {
                let mut w = Array2::zeros((4, 16));
                let mut last = crate::linalg::norm(&v);
                for _ in 0..20 {
                    delta_rule_step(&mut w, &key, &v, 0.5);
                    let err = crate::linalg::norm(&(&w.dot(&key) - &v));
                    assert_eq!(err > last, should_grow, "seed {seed}");
                    last = err;
                }
                if should_grow {
                    assert!(last > 1e6, "seed {seed}: {last}");
                }
            }
        }
    }

    #[test]
    fn sum_normalised_reads_are_convex_combinations_of_memory_columns() {
        for seed in 0..10 {
            let mut rng = seeded(seed);
            let w = randn(&mut rng, 5, 24);
            let q = sum_normalise(&dpfp(&randn(&mut rng, 1, 4).row(0), 3));
            let y = w.dot(&q);
            for (i, row) in w.rows().into_iter().enumerate() {
                let lo = row.fold(f64::INFINITY, |a, &b| a.min(b));
                let hi = row.fold(f64::NEG_INFINITY, |a, &b| a.max(b));
                assert!(y[i] >= lo - 1e-12 && y[i] <= hi + 1e-12);
            }
        }
    }

    #[test]
    fn every_rule_is_an_affine_step_with_its_own_transition() {
        // sum: A = I; decayed: A = a I; gated: A = (1 − β) I with input
        // β v kᵀ; delta: A = I − β k̄ k̄ᵀ with input β v k̄ᵀ.
        for seed in 0..5 {
            let (w, k, v) = association(seed, 3, 6, true);
            let (p, m) = (k.len(), v.len());
            let input = |scale: f64| {
                let mut b = Array2::zeros((m, p));
                fast_weight_write(&mut b, &v.mapv(|x| scale * x), &k);
                b
            };
            let eye = Array2::<f64>::eye(p);
            for x in [0.0, 0.3, 0.9, 1.0] {
                let rules: [(Array2<f64>, AffineStep); 4] = [
                    {
                        let mut s = w.clone();
                        fast_weight_write(&mut s, &v, &k);
                        (
                            s,
                            AffineStep {
                                a: eye.clone(),
                                b: input(1.0),
                            },
                        )
                    },
                    {
                        let mut s = w.clone();
                        decayed_write_step(&mut s, &k, &v, x);
                        (
                            s,
                            AffineStep {
                                a: &eye * x,
                                b: input(1.0),
                            },
                        )
                    },
                    {
                        let mut s = w.clone();
                        gated_rule_step(&mut s, &k, &v, x);
                        (
                            s,
                            AffineStep {
                                a: &eye * (1.0 - x),
                                b: input(x),
                            },
                        )
                    },
                    {
                        let mut s = w.clone();
                        delta_rule_step(&mut s, &k, &v, x);
                        let a = delta_transition(&k, x);
                        (s, AffineStep { a, b: input(x) })
                    },
                ];
                for (stepped, affine) in rules {
                    assert_relative_eq!(
                        affine.apply(&w),
                        stepped,
                        max_relative = 1e-12,
                        epsilon = 1e-12
                    );
                }
            }
        }
    }

    #[test]
    fn the_decayed_write_fades_every_association_by_a() {
        // Orthonormal keys: after a write at k2, the read at k1 is a v1.
        for seed in 0..5 {
            let [keys, values, memory] = appendix_a(seed, 8, 4);
            let (k1, k2) = (keys.row(0), keys.row(1));
            for a in [0.0, 0.5, 0.9, 1.0] {
                let mut w = memory.clone();
                decayed_write_step(&mut w, &k2, &values.row(2), a);
                assert_relative_eq!(
                    w.dot(&k1),
                    &values.row(0) * a,
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
                let want = &values.row(1) * a + values.row(2);
                assert_relative_eq!(
                    w.dot(&k2),
                    want,
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
            }
        }
    }

    #[test]
    fn a_z_normalised_read_divides_an_overwritten_value_by_the_number_of_writes()
     {
        // One key written n times with β = 1: W k̄ = v_n, but z = n k̄, so
        // the read W q̄ / zᵀ q̄ at q̄ = k̄ is v_n / n. Sum normalisation alone
        // reads v_n.
        for seed in 0..5 {
            for (p, m) in [(2, 1), (8, 4), (16, 3)] {
                let mut rng = seeded(seed);
                let key = Array1::from_shape_fn(p, |i| f64::from(i == 1));
                let values = randn(&mut rng, 6, m);
                let mut w = Array2::zeros((m, p));
                let mut z = Array1::<f64>::zeros(p);
                for (n, v) in values.rows().into_iter().enumerate() {
                    delta_rule_step(&mut w, &key, &v, 1.0);
                    z += &key;
                    let writes = (n + 1) as f64;
                    let with_z = w.dot(&key) / z.dot(&key);
                    assert_relative_eq!(
                        with_z,
                        &v / writes,
                        max_relative = 1e-12
                    );
                    assert_relative_eq!(w.dot(&key), v, max_relative = 1e-12);
                }
            }
        }
    }

    fn random_layer(
        seed: u64,
        n: usize,
        d: usize,
        m: usize,
        dpfp_nu: Option<usize>,
    ) -> (Array2<f64>, Array2<f64>, Array2<f64>, Array1<f64>) {
        let mut rng = seeded(seed);
        let q = randn(&mut rng, n, d);
        let k = randn(&mut rng, n, d);
        let v = randn(&mut rng, n, m);
        let x = randn(&mut rng, n, 6);
        let w_beta = randn(&mut rng, 1, 6).row(0).to_owned();
        let beta = write_strength(&x, &w_beta).unwrap();
        let phi = |a: &Array2<f64>| match dpfp_nu {
            Some(nu) => map_rows(a, |r| dpfp(r, nu)),
            None => elu_plus_one(a),
        };
        (phi(&q), phi(&k), v, beta)
    }

    #[test]
    fn the_recurrence_is_one_delta_step_and_one_read_per_token() {
        for seed in 0..5 {
            let (q, k, v, beta) = random_layer(seed, 30, 4, 3, None);
            let read = delta_rule_recurrent(&q, &k, &v, &beta).unwrap();
            let mut w = Array2::zeros((3, 4));
            for t in 0..30 {
                let k_bar = sum_normalise(&k.row(t));
                delta_rule_step(&mut w, &k_bar, &v.row(t), beta[t]);
                let y = w.dot(&sum_normalise(&q.row(t)));
                assert_eq!(read.output.row(t), y);
            }
            assert_eq!(read.memory, w);
            // β = 0 never writes: the memory stays empty.
            let zero = Array1::zeros(30);
            let none = delta_rule_recurrent(&q, &k, &v, &zero).unwrap();
            assert!(none.output.iter().all(|&y| y == 0.0));
        }
    }

    #[test]
    fn forward_substitution_solves_identity_plus_strictly_lower() {
        for seed in 0..10 {
            for (c, n) in [(1, 1), (2, 3), (8, 8), (40, 5)] {
                let mut rng = seeded(seed);
                let mut a = randn(&mut rng, c, c) * 0.5;
                a.indexed_iter_mut().for_each(|((i, j), x)| {
                    if j >= i {
                        *x = 0.0;
                    }
                });
                let b = randn(&mut rng, c, n);
                let x = forward_substitution(&a, &b);
                let back = &x + &a.dot(&x); // (I + A) X
                assert_relative_eq!(
                    back,
                    b,
                    max_relative = 1e-9,
                    epsilon = 1e-9
                );
            }
        }
    }

    /// One delta-rule write as an affine step: A = I − β k̄ k̄ᵀ, B = β v k̄ᵀ.
    fn delta_step(
        k: &ArrayRef1<f64>,
        v: &ArrayRef1<f64>,
        beta: f64,
    ) -> AffineStep {
        let mut b = Array2::zeros((v.len(), k.len()));
        fast_weight_write(&mut b, &v.mapv(|x| beta * x), k);
        AffineStep {
            a: delta_transition(k, beta),
            b,
        }
    }

    #[test]
    fn a_chunk_of_delta_writes_folds_into_the_wy_form() {
        // The product of C transitions is I − K̂ᵀ K̄, a rank-C correction of
        // the identity, and the folded inputs are V̂ᵀ K̄.
        for seed in 0..5 {
            for (c, d, m, nu) in
                [(1, 4, 3, None), (5, 4, 2, Some(1)), (12, 3, 4, Some(2))]
            {
                let (_, k, v, beta) = random_layer(seed, c, d, m, nu);
                let k_bar = map_rows(&k, sum_normalise);
                let folded = (1..c).fold(
                    delta_step(&k_bar.row(0), &v.row(0), beta[0]),
                    |acc, t| {
                        acc.then(&delta_step(&k_bar.row(t), &v.row(t), beta[t]))
                    },
                );
                let wy = wy_representation(&k_bar, &v, &beta);
                assert_relative_eq!(
                    wy.a,
                    folded.a,
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
                assert_relative_eq!(
                    wy.b,
                    folded.b,
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
                // And applied to a memory, it is the chunk of writes.
                let mut w = randn(&mut seeded(seed + 9), m, k.ncols());
                let start = w.clone();
                for t in 0..c {
                    delta_rule_step(&mut w, &k_bar.row(t), &v.row(t), beta[t]);
                }
                assert_relative_eq!(
                    wy.apply(&start),
                    w,
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
            }
        }
    }

    /// The layer on keys and queries that are already normalised, so that
    /// finite differences can nudge k̄ and q̄ themselves; L = Σ G ⊙ Y.
    fn weighted_reads(
        q: &Array2<f64>,
        k: &Array2<f64>,
        v: &Array2<f64>,
        beta: &Array1<f64>,
        g: &Array2<f64>,
    ) -> f64 {
        let mut w = Array2::zeros((v.ncols(), k.ncols()));
        let mut loss = 0.0;
        for t in 0..k.nrows() {
            delta_rule_step(&mut w, &k.row(t), &v.row(t), beta[t]);
            loss += w.dot(&q.row(t)).dot(&g.row(t));
        }
        loss
    }

    /// A random layer with its keys and queries sum-normalised, and a
    /// random gradient G of the reads.
    fn normalised_layer(
        seed: u64,
        n: usize,
        d: usize,
        m: usize,
    ) -> ([Array2<f64>; 4], Array1<f64>) {
        let (q, k, v, beta) = random_layer(seed, n, d, m, None);
        let g = randn(&mut seeded(seed + 11), n, m);
        let [q, k] = [q, k].map(|a| map_rows(&a, sum_normalise));
        ([q, k, v, g], beta)
    }

    #[test]
    fn the_delta_rule_backward_pass_matches_finite_differences() {
        let h = 1e-6;
        for seed in 0..4 {
            for (n, d, m) in [(1, 2, 1), (6, 3, 2), (12, 4, 3)] {
                let ([q, k, v, g], beta) = normalised_layer(seed, n, d, m);
                let grads = delta_rule_backward(&q, &k, &v, &beta, &g).unwrap();
                let loss = |x: &[Array2<f64>; 3], b: &Array1<f64>| {
                    weighted_reads(&x[0], &x[1], &x[2], b, &g)
                };
                let inputs = [q.clone(), k.clone(), v.clone()];
                for (which, want) in
                    [&grads.q_bar, &grads.k_bar, &grads.v].iter().enumerate()
                {
                    for ((i, j), &dx) in want.indexed_iter() {
                        let nudged = |delta: f64| {
                            let mut x = inputs.clone();
                            x[which][[i, j]] += delta;
                            loss(&x, &beta)
                        };
                        let numeric = (nudged(h) - nudged(-h)) / (2.0 * h);
                        assert_relative_eq!(
                            dx,
                            numeric,
                            max_relative = 1e-5,
                            epsilon = 1e-7
                        );
                    }
                }
                for t in 0..n {
                    let nudged = |delta: f64| {
                        let mut b = beta.clone();
                        b[t] += delta;
                        loss(&inputs, &b)
                    };
                    let numeric = (nudged(h) - nudged(-h)) / (2.0 * h);
                    assert_relative_eq!(
                        grads.beta[t],
                        numeric,
                        max_relative = 1e-5,
                        epsilon = 1e-7
                    );
                }
            }
        }
    }

    #[test]
    fn subtracting_the_inserted_vectors_recovers_every_earlier_memory() {
        // Even where the transition I − β k̄ k̄ᵀ has no inverse (one-hot keys
        // with β = 1), undoing a write is one subtraction of u_t k̄_tᵀ.
        for seed in 0..4 {
            let (n, p, m) = (1000, 6, 4);
            let mut rng = seeded(seed);
            let keys =
                map_rows(&elu_plus_one(&randn(&mut rng, n, p)), sum_normalise);
            let v = randn(&mut rng, n, m);
            let mut w = Array2::zeros((m, p));
            let mut states = vec![w.clone()];
            let mut inserted = Vec::new();
            for t in 0..n {
                let (k, beta) = if t % 7 == 0 {
                    (Array1::from_shape_fn(p, |i| f64::from(i == t % p)), 1.0)
                } else {
                    (keys.row(t).to_owned(), 0.9)
                };
                if t % 7 == 0 {
                    let a = delta_transition(&k, beta);
                    assert!(crate::linalg::norm(&a.dot(&k)) < 1e-15); // singular
                }
                let v_bar = delta_rule_step(&mut w, &k, &v.row(t), beta);
                inserted.push(((&v.row(t) - &v_bar) * beta, k));
                states.push(w.clone());
            }
            for t in (0..n).rev() {
                let (u, k) = &inserted[t];
                fast_weight_write(&mut w, &(-u), k);
                assert_relative_eq!(w, states[t], epsilon = 1e-12);
            }
        }
    }

    #[test]
    fn chunkwise_delta_rule_equals_the_recurrence() {
        // Lengths that are and are not multiples of C; C = 1, several
        // sizes, and C ≥ N (one chunk: the fully parallel form).
        let lengths = [1, 2, 7, 16, 33, 100, 257];
        let chunks = [1, 3, 8, 16, 64, 300];
        for seed in 0..4 {
            for &n in &lengths {
                for (i, &c) in chunks.iter().enumerate() {
                    let nu = [None, Some(1), Some(2)][i % 3];
                    let (d, m) = [(4, 3), (8, 8), (6, 5)][(i + n) % 3];
                    let (q, k, v, beta) = random_layer(seed, n, d, m, nu);
                    let rec = delta_rule_recurrent(&q, &k, &v, &beta).unwrap();
                    let chunked =
                        delta_rule_chunkwise(&q, &k, &v, &beta, c).unwrap();
                    let gap = worst_row_relative_difference(
                        &chunked.output,
                        &rec.output,
                    );
                    assert!(gap < 1e-10, "N {n} C {c} seed {seed}: {gap:e}");
                    assert_relative_eq!(
                        chunked.memory,
                        rec.memory,
                        max_relative = 1e-10,
                        epsilon = 1e-12
                    );
                }
            }
        }
    }

    #[test]
    fn bad_input_is_an_error_naming_the_problem() {
        let (q, k, v, beta) = random_layer(0, 12, 4, 3, None);
        let short = beta.slice(s![..11]).to_owned();
        for c in [None, Some(4)] {
            let run = |q: &Array2<f64>, k: &Array2<f64>, b: &Array1<f64>| {
                match c {
                    None => delta_rule_recurrent(q, k, &v, b),
                    Some(c) => delta_rule_chunkwise(q, k, &v, b, c),
                }
                .err()
                .unwrap()
                .to_string()
            };
            let msg = run(&q, &k, &short);
            assert!(msg.contains("beta is [11, 1]"), "{msg}");
            let mut nan = beta.clone();
            nan[3] = f64::NAN;
            assert!(run(&q, &k, &nan).contains("NaN in beta at [3, 0]"));
            if c.is_some() {
                let msg = delta_rule_chunkwise(&q, &k, &v, &beta, 0)
                    .err()
                    .unwrap()
                    .to_string();
                assert!(msg.contains("chunk is 0"), "{msg}");
            }
            let narrow = k.slice(s![.., ..3]).to_owned();
            let msg = run(&q, &narrow, &beta);
            assert!(
                msg.contains("q is [12, 4]") && msg.contains("k is [12, 3]")
            );
            // One key per query, one value per key, nothing empty or
            // infinite.
            let fewer = k.slice(s![..11, ..]).to_owned();
            let msg = run(&q, &fewer, &beta);
            assert!(msg.contains("k is [11, 4]"), "{msg}");
            let values = v.slice(s![..11, ..]).to_owned();
            let msg = match c {
                None => delta_rule_recurrent(&q, &k, &values, &beta),
                Some(c) => delta_rule_chunkwise(&q, &k, &values, &beta, c),
            }
            .err()
            .unwrap()
            .to_string();
            assert!(msg.contains("v is [11, 3]"), "{msg}");
            let none = Array2::<f64>::zeros((0, 4));
            let msg = run(&none, &none, &Array1::zeros(0));
            assert!(msg.starts_with("empty input"), "{msg}");
            let mut inf = k.clone();
            inf[[5, 2]] = f64::INFINITY;
            let msg = run(&q, &inf, &beta);
            assert!(msg.contains("inf in k at [5, 2]"), "{msg}");
        }
    }

    #[test]
    fn appendix_a_study_shows_the_contrast_at_every_beta() {
        // The printed study, then more β and seeds.
        let printed_betas = [0.0, 0.3, 0.7, 1.0];
        let printed = (crate::outputs::find("delta-appendix-a").unwrap().run)();
        let table = AppendixATable(appendix_a_study(&printed_betas, 0));
        assert_eq!(printed, table.to_string(), "the output runs this study");
        let mut rows = table.0;
        for seed in 0..5 {
            rows.extend(appendix_a_study(&BETAS, seed));
        }
        for pair in rows[..printed_betas.len()].windows(2) {
            assert!(pair[1].gated_unrelated > pair[0].gated_unrelated);
        }
        for r in rows {
            assert!(r.delta_rewritten < 1e-12 && r.delta_unrelated < 1e-12);
            assert!(r.gated_rewritten < 1e-12);
            // Unit v1: the gated rule leaves (1 − β) v1, off by β.
            assert!((r.gated_unrelated - r.beta).abs() < 1e-12);
            assert!(r.sum_rewritten < 1e-12);
        }
    }

    #[test]
    fn chunkwise_study_agrees_to_rounding() {
        // The printed cases, and a few more.
        let cases = [(1, 1), (7, 3), (64, 16), (100, 16), (257, 64)];
        let printed = (crate::outputs::find("delta-chunkwise").unwrap().run)();
        let rows = chunkwise_study(&cases, 3);
        let table = ChunkTable { seeds: 3, rows };
        assert_eq!(printed, table.to_string(), "the output runs this study");
        assert!(table.rows.iter().all(|r| r.difference < 1e-10));
        let rows = chunkwise_study(&[(1, 1), (100, 7), (100, 100)], 2);
        assert!(rows.iter().all(|r| r.difference < 1e-10));
    }
}
