//! Chapter "Fast weight programmers": a slow net that programs a fast net
//! with outer products (Schmidhuber 1992), self-attention without its
//! softmax as exactly such a programmer, and linear attention as the same
//! programmer with a normaliser (Schlag et al. 2021, §2–§3).
//!
//! Shapes: x: (N, d_model); q, k: (N, d); v: (N, m); the fast weights
//! S: (m, d), written with v kᵀ and run on a query as S q (the paper's
//! W⁽ⁱ⁾; its activation σ is ψ here).

use crate::causal::causal_scores;
use crate::input::{InputError, check_qkv, finite};
use crate::m3::attention::{Mask, Projections, Qkv};
use crate::m3::delete_softmax::kernel_attention;
use crate::m3::fast_weight_memory::fast_weight_write;
use crate::phi::elu_plus_one;
use ndarray::{Array2, ArrayRef1, ArrayRef2};

pub mod study;

// ANCHOR: fast_weight_programmer_with
/// A fast-weight programmer with an activation ψ on the fast weights: the
/// slow weights make q_t, k_t, v_t from x_t; the fast weights are
/// programmed by S_t = ψ(S_{t−1} + v_t k_tᵀ) and run as y_t = S_t q_t.
/// x: (N, d_model); returns Y: (N, m).
pub fn fast_weight_programmer_with(
    x: &ArrayRef2<f64>,
    slow: &Projections,
    psi: impl Fn(f64) -> f64,
) -> Result<Array2<f64>, InputError> {
    let Qkv { q, k, v } = slow.project(x)?; // the slow net
    let mut s = Array2::zeros((v.ncols(), k.ncols())); // S_0 = 0: (m, d)
    let mut y = Array2::zeros((x.nrows(), v.ncols()));
    for t in 0..x.nrows() {
        fast_weight_write(&mut s, &v.row(t), &k.row(t))?; // + v_t k_tᵀ
        s.mapv_inplace(&psi); // ψ, entry by entry
        y.row_mut(t).assign(&s.dot(&q.row(t))); // run the fast net
    }
    finite("Y", y)
}
// ANCHOR_END: fast_weight_programmer_with

// ANCHOR: attention_without_softmax
/// Causal self-attention with the softmax deleted and no normaliser:
/// y_t = Σ_{j≤t} (k_jᵀ q_t) v_j, that is Y = tril(Q Kᵀ) V.
/// q, k: (N, d), v: (N, m); returns Y: (N, m).
pub fn attention_without_softmax(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<Array2<f64>, InputError> {
    check_qkv(q, k, v, true)?;
    let scores = causal_scores(q, k); // (N, N): k_jᵀ q_t, none on the future
    finite("Y", scores.dot(v))
}
// ANCHOR_END: attention_without_softmax

/// Linearised softmax attention in the form of the template of "Delete the
/// softmax": the kernel sim(q, k) = φ(q)ᵀφ(k) in place of exp, causal, with
/// φ = elu+1. q, k: (N, d), v: (N, m); returns O: (N, m).
pub fn linearised_softmax(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<Array2<f64>, InputError> {
    let sim = |a: &ArrayRef1<f64>, b: &ArrayRef1<f64>| {
        elu_plus_one(a).dot(&elu_plus_one(b))
    };
    Ok(kernel_attention(q, k, v, Mask::Causal, sim)?.output)
}

#[cfg(test)]
mod tests;
