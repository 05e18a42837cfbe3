//! Chapter "The delta rule": the paper's update rule, which reads what the
//! memory holds for a key before it writes, and writes only a correction
//! (Schlag et al. 2021, §4.2); the rule as one gradient step on a
//! regression loss and as a transition H = I − β k̄ k̄ᵀ; its write strength
//! β, its sum normalisation, the gated rule of Appendix A and the decaying
//! memory it is compared with, the chunkwise form that trains in parallel
//! (Yang et al. 2024), derived through the WY representation, and the
//! backward pass that undoes each write.
//!
//! Shapes: feature-mapped keys and queries phi_k, phi_q: (N, p), values
//! v: (N, m), write strengths beta: (N). The memory S is (m, p), values by
//! features, as everywhere in the book: written with v k̄ᵀ, read S q̄.

use crate::causal::causal_scores;
use crate::input::{
    Entry, InputError, check_chunk, check_qkv, finite, nonempty_finite,
    positive_row_sums, same_cols,
};
use crate::input::{check_write, finite_number, normaliser, same_rows};
use crate::m3::fast_weight_memory::fast_weight_write;
use crate::m3::schedules::{AffineStep, check_grad_o};
use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2, Axis, s};

pub mod study;

// ANCHOR: sum_normalise
/// Sum normalisation, k̄ = φ(k) / Σ_i φ(k)_i: non-negative features become
/// weights that sum to 1. x: (p), with a positive, finite sum.
pub fn sum_normalise(x: &ArrayRef1<f64>) -> Result<Array1<f64>, InputError> {
    let total = normaliser("the sum of the features", 0, x.sum())?; // > 0
    Ok(x.mapv(|f| f / total))
}
// ANCHOR_END: sum_normalise

/// `sum_normalise` of every row: x: (N, p), each row with a positive,
/// finite sum.
pub fn sum_normalise_rows(
    x: &ArrayRef2<f64>,
) -> Result<Array2<f64>, InputError> {
    positive_row_sums("the features", x)?;
    let sums = x.sum_axis(Axis(1)).insert_axis(Axis(1)); // (N, 1)
    Ok(x.to_owned() / &sums)
}

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
/// One write of the delta rule: retrieve v̄ = S k̄, then
/// S ← S + β (v − v̄) k̄ᵀ. memory: (m, p), k_bar: (p), v: (m).
/// Returns v̄, what the memory held for k̄ before the write.
pub fn delta_rule_step(
    memory: &mut Array2<f64>,
    k_bar: &ArrayRef1<f64>,
    v: &ArrayRef1<f64>,
    beta: f64,
) -> Result<Array1<f64>, InputError> {
    check_write(memory, v, k_bar)?;
    finite_number("beta", beta)?;
    let v_bar = memory.dot(k_bar); // what is stored for this key now
    let correction = (&v.view() - &v_bar) * beta;
    fast_weight_write(memory, &correction, k_bar)?; // add β (v − v̄) k̄ᵀ
    Ok(v_bar)
}
// ANCHOR_END: delta_rule_step

// ANCHOR: regression_gradient
/// The gradient of the regression loss L(S) = ½‖S k̄ − v‖² for one
/// association: ∇L = (S k̄ − v) k̄ᵀ. memory: (m, p), k_bar: (p), v: (m).
pub fn regression_gradient(
    memory: &ArrayRef2<f64>,
    k_bar: &ArrayRef1<f64>,
    v: &ArrayRef1<f64>,
) -> Result<Array2<f64>, InputError> {
    check_write(memory, v, k_bar)?;
    let error = finite("S k̄ − v", memory.dot(k_bar) - v)?; // the read's error
    let mut gradient = Array2::zeros(memory.raw_dim());
    fast_weight_write(&mut gradient, &error, k_bar)?; // (S k̄ − v) k̄ᵀ
    Ok(gradient)
}
// ANCHOR_END: regression_gradient

/// The regression loss ½‖S k̄ − v‖² of one association.
pub fn regression_loss(
    memory: &ArrayRef2<f64>,
    k_bar: &ArrayRef1<f64>,
    v: &ArrayRef1<f64>,
) -> Result<f64, InputError> {
    check_write(memory, v, k_bar)?;
    let error = memory.dot(k_bar) - v;
    Ok(0.5 * error.dot(&error))
}

// ANCHOR: delta_transition
/// The delta rule's transition H = I − β k̄ k̄ᵀ, with which one write is
/// S_t = S_{t−1} H + β v k̄ᵀ. k_bar: (p); returns H: (p, p).
pub fn delta_transition(
    k_bar: &ArrayRef1<f64>,
    beta: f64,
) -> Result<Array2<f64>, InputError> {
    finite_number("beta", beta)?;
    let mut h = Array2::eye(k_bar.len());
    fast_weight_write(&mut h, &k_bar.mapv(|x| -beta * x), k_bar)?;
    Ok(h)
}
// ANCHOR_END: delta_transition

// ANCHOR: gated_rule_step
/// The gated rule of Peng et al. (2021), as Appendix A of the paper writes
/// it: S ← (1 − β) S + β v kᵀ. memory: (m, p), k: (p), v: (m).
pub fn gated_rule_step(
    memory: &mut Array2<f64>,
    k: &ArrayRef1<f64>,
    v: &ArrayRef1<f64>,
    beta: f64,
) -> Result<(), InputError> {
    check_write(memory, v, k)?;
    finite_number("beta", beta)?;
    *memory *= 1.0 - beta; // every association fades ...
    fast_weight_write(memory, &v.mapv(|x| x * beta), k) // ... v kᵀ comes in
}
// ANCHOR_END: gated_rule_step

// ANCHOR: decayed_write_step
/// A memory that decays before every write: S ← a S + v kᵀ, one decay a
/// per token.
/// memory: (m, p), k: (p), v: (m).
pub fn decayed_write_step(
    memory: &mut Array2<f64>,
    k: &ArrayRef1<f64>,
    v: &ArrayRef1<f64>,
    a: f64,
) -> Result<(), InputError> {
    check_write(memory, v, k)?;
    finite_number("a", a)?;
    *memory *= a; // every association fades by a ...
    fast_weight_write(memory, v, k) // ... and v kᵀ is added at full strength
}
// ANCHOR_END: decayed_write_step

// ANCHOR: delta_rule_recurrent
/// What a delta-rule layer returns: the reads Y: (N, m) and the memory
/// after the last token, S_N: (m, p).
pub struct DeltaRead {
    pub output: Array2<f64>,
    pub memory: Array2<f64>,
}

/// The delta-rule layer, token by token, from S_0 = 0: with
/// k̄_t = φ(k_t) / Σ φ(k_t) and q̄_t likewise,
/// S_t = S_{t−1} + β_t (v_t − S_{t−1} k̄_t) k̄_tᵀ,  y_t = S_t q̄_t.
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
        let k_bar = sum_normalise(&phi_k.row(t))?;
        delta_rule_step(&mut memory, &k_bar, &v.row(t), beta[t])?; // write
        let q_bar = sum_normalise(&phi_q.row(t))?;
        output.row_mut(t).assign(&memory.dot(&q_bar)); // read
    }
    let (output, memory) = (finite("Y", output)?, finite("S", memory)?);
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
/// Solve (I + Λ) X = B for Λ: (C, C) strictly lower triangular, B: (C, n),
/// one row at a time: x_i = b_i − Σ_{j<i} Λ_ij x_j.
pub fn forward_substitution(
    lambda: &ArrayRef2<f64>,
    b: &ArrayRef2<f64>,
) -> Array2<f64> {
    let mut x = b.to_owned();
    for i in 1..x.nrows() {
        let known = lambda.slice(s![i, ..i]).dot(&x.slice(s![..i, ..]));
        let row = &x.row(i) - &known;
        x.row_mut(i).assign(&row);
    }
    x
}
// ANCHOR_END: forward_substitution

// ANCHOR: ut_transform
/// The UT transform of a chunk, T = (I + Λ)⁻¹ diag(β) with
/// Λ = tril(diag(β) K̄ K̄ᵀ, −1), by forward substitution.
/// k_bar: (C, p), beta: (C); returns T: (C, C), lower triangular.
pub fn ut_transform(
    k_bar: &ArrayRef2<f64>,
    beta: &ArrayRef1<f64>,
) -> Array2<f64> {
    let mut lambda = k_bar.dot(&k_bar.t()); // K̄ K̄ᵀ, then below the diagonal
    lambda
        .indexed_iter_mut()
        .for_each(|((i, j), x)| *x = if j < i { beta[i] * *x } else { 0.0 });
    forward_substitution(&lambda, &Array2::from_diag(&beta.view()))
}
// ANCHOR_END: ut_transform

// ANCHOR: wy_representation
/// A chunk of delta-rule writes folded into one affine step (the WY form):
/// with T the UT transform, K̂ = T K̄ and V̂ = T V, the chunk maps
/// S ↦ S (I − K̂ᵀ K̄) + V̂ᵀ K̄. k_bar: (C, p), v: (C, m), beta: (C).
pub fn wy_representation(
    k_bar: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    beta: &ArrayRef1<f64>,
) -> AffineStep {
    let t = ut_transform(k_bar, beta);
    let (k_hat, v_hat) = (t.dot(k_bar), t.dot(v)); // (C, p), (C, m)
    AffineStep {
        h: Array2::eye(k_bar.ncols()) - k_hat.t().dot(k_bar),
        b: v_hat.t().dot(k_bar),
    }
}
// ANCHOR_END: wy_representation

// ANCHOR: delta_rule_chunkwise
/// The delta-rule layer in chunks of C tokens (Yang et al. 2024, in the
/// book's orientation). Per chunk, with K̄, Q̄: (C, p), V: (C, m), S_0 the
/// memory before it and T the UT transform: U = T V − (T K̄) S_0ᵀ,
/// Y = Q̄ S_0ᵀ + tril(Q̄ K̄ᵀ) U, S ← S_0 + Uᵀ K̄.
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
    let (k_all, q_all) =
        (sum_normalise_rows(phi_k)?, sum_normalise_rows(phi_q)?);
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
        let u = t.dot(&vc) - t.dot(&k).dot(&memory.t()); // V̂ − K̂ S_0ᵀ
        let scores = causal_scores(&q, &k); // tril(Q̄ K̄ᵀ), diagonal included
        let y = q.dot(&memory.t()) + scores.dot(&u);
        output.slice_mut(s![start..end, ..]).assign(&y);
        memory += &u.t().dot(&k); // S ← S_0 + Uᵀ K̄
    }
    let (output, memory) = (finite("Y", output)?, finite("S", memory)?);
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

/// Backward through S_t = S_{t−1} + u_t k̄_tᵀ, u_t = β_t (v_t − S_{t−1} k̄_t),
/// y_t = S_t q̄_t, given ∂L/∂Y: (N, m). The forward sweep keeps each
/// inserted vector u_t and the last memory; the backward sweep carries
/// D = ∂L/∂S_t and undoes each write, S_{t−1} = S_t − u_t k̄_tᵀ.
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
    let mut s = Array2::zeros((m, p));
    let mut inserted = Array2::zeros((n, m)); // u_t, one row per token
    for t in 0..n {
        let v_bar = delta_rule_step(&mut s, &k_bar.row(t), &v.row(t), beta[t])?;
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
    let mut d = Array2::<f64>::zeros((m, p)); // ∂L/∂S_t
    for t in (0..n).rev() {
        let (k, u, g) = (k_bar.row(t), inserted.row(t), grad_y.row(t));
        grads.q_bar.row_mut(t).assign(&s.t().dot(&g)); // y_t = S_t q̄_t
        fast_weight_write(&mut d, &g, &q_bar.row(t))?; // D += g_t q̄_tᵀ
        fast_weight_write(&mut s, &(-&u), &k)?; // undo: S is S_{t−1}
        let grad_u = d.dot(&k); // ∂L/∂u_t
        let v_bar = s.dot(&k);
        grads.v.row_mut(t).assign(&(&grad_u * beta[t]));
        grads.beta[t] = grad_u.dot(&(&v.row(t) - &v_bar));
        let grad_k = d.t().dot(&u) - s.t().dot(&grad_u) * beta[t];
        grads.k_bar.row_mut(t).assign(&grad_k);
        fast_weight_write(&mut d, &(&grad_u * -beta[t]), &k)?; // D H_t
    }
    Ok(DeltaGradients {
        q_bar: finite("∂q̄", grads.q_bar)?,
        k_bar: finite("∂k̄", grads.k_bar)?,
        v: finite("∂v", grads.v)?,
        beta: finite("∂β", grads.beta)?,
    })
}
// ANCHOR_END: delta_rule_backward

#[cfg(test)]
mod tests;
