//! Chapter "That matrix is the fast-weight memory": causal linear attention
//! as a recurrence that writes one outer product per token into a memory
//! S: (m, p), and as one masked product over the whole sequence; and the
//! fast-weight programmer of module M2, which runs the same loop. The
//! printed studies are in [`study`], the tests in `tests.rs`.
//!
//! The functions take keys and queries already passed through a feature
//! map, phi_q, phi_k: (N, p), so any φ plugs in;
//! [`causal_linear_attention`] applies a given φ first.
//! Shapes: v: (N, m); outputs O: (N, m).

pub mod study;

use crate::causal::causal_scores;
use crate::input::{
    InputError, check_features, check_qkv, check_write, finite, normaliser,
    normalisers,
};
use crate::m3::attention::{Projections, Qkv, unit_rows, walkthrough};
use crate::phi::elu_plus_one;
use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2, Axis};

// ANCHOR: fast_weight_write
/// The write: memory ← memory + v kᵀ, one outer product.
/// memory: (m, p), v: (m), k: (p).
pub fn fast_weight_write(
    memory: &mut Array2<f64>,
    v: &ArrayRef1<f64>,
    k: &ArrayRef1<f64>,
) -> Result<(), InputError> {
    check_write(memory, v, k)?; // the shapes agree, v and k are finite
    let column = v.view().insert_axis(Axis(1)); // v as (m, 1)
    let row = k.view().insert_axis(Axis(0)); // kᵀ as (1, p)
    *memory += &column.dot(&row);
    Ok(())
}
// ANCHOR_END: fast_weight_write

// ANCHOR: linear_attention_recurrent
/// Causal linear attention as a recurrence over tokens:
/// S_t = S_{t−1} + v_t φ(k_t)ᵀ,  z_t = z_{t−1} + φ(k_t),
/// o_t = S_t φ(q_t) / z_tᵀ φ(q_t).
/// phi_q, phi_k: (N, p), v: (N, m); returns O: (N, m).
pub fn linear_attention_recurrent(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<Array2<f64>, InputError> {
    check_features(phi_q, phi_k, v, true)?;
    let (n, p, m) = (phi_q.nrows(), phi_q.ncols(), v.ncols());
    let mut s = Array2::zeros((m, p)); // S_0 = 0
    let mut z = Array1::zeros(p); // z_0 = 0
    let mut o = Array2::zeros((n, m));
    for t in 0..n {
        fast_weight_write(&mut s, &v.row(t), &phi_k.row(t))?; // write
        z += &phi_k.row(t);
        let phi_q_t = phi_q.row(t);
        let den = normaliser("z_tᵀφ(q_t)", t, z.dot(&phi_q_t))?; // > 0
        o.row_mut(t).assign(&(s.dot(&phi_q_t) / den)); // read
    }
    finite("O", o)
}
// ANCHOR_END: linear_attention_recurrent

// ANCHOR: linear_attention_parallel
/// Causal linear attention in one masked product over the sequence:
/// O = (tril(Φ_Q Φ_Kᵀ) V) / (tril(Φ_Q Φ_Kᵀ) 1), row by row.
/// phi_q, phi_k: (N, p), v: (N, m); returns O: (N, m).
pub fn linear_attention_parallel(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<Array2<f64>, InputError> {
    check_features(phi_q, phi_k, v, true)?;
    let scores = causal_scores(phi_q, phi_k); // (N, N), N from the input
    let numerator = scores.dot(v); // (N, m)
    let denominator = scores.sum_axis(Axis(1));
    normalisers("z_tᵀφ(q_t)", &denominator)?; // every one > 0
    finite("O", numerator / denominator.insert_axis(Axis(1)))
}
// ANCHOR_END: linear_attention_parallel

// ANCHOR: causal_linear_attention
/// Causal linear attention with the feature map `phi` applied to the rows
/// of q and k first. q, k: (N, d), v: (N, m); returns O: (N, m).
pub fn causal_linear_attention(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    phi: impl Fn(&ArrayRef2<f64>) -> Array2<f64>,
) -> Result<Array2<f64>, InputError> {
    check_qkv(q, k, v, true)?;
    linear_attention_recurrent(&phi(q), &phi(k), v)
}
// ANCHOR_END: causal_linear_attention

// ANCHOR: fast_weight_loop
/// The fast-weight loop: from S_0 = 0, for each t write
/// S_t = S_{t−1} + v_t k_tᵀ and read y_t = S_t q_t. No denominator.
/// q, k: (N, d), v: (N, m); returns Y: (N, m).
pub fn fast_weight_loop(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<Array2<f64>, InputError> {
    check_qkv(q, k, v, true)?;
    let mut memory = Array2::zeros((v.ncols(), k.ncols())); // S: (m, d)
    let mut y = Array2::zeros((q.nrows(), v.ncols()));
    for t in 0..q.nrows() {
        fast_weight_write(&mut memory, &v.row(t), &k.row(t))?; // program
        y.row_mut(t).assign(&memory.dot(&q.row(t))); // run
    }
    finite("Y", y)
}
// ANCHOR_END: fast_weight_loop

// ANCHOR: fast_weight_programmer
/// M2's fast-weight programmer: the slow weights turn each x_t into q_t,
/// k_t, v_t; keys and queries are scaled to unit length; the fast-weight
/// loop writes and reads the memory. x: (N, d_model); returns Y: (N, m).
pub fn fast_weight_programmer(
    x: &ArrayRef2<f64>,
    slow: &Projections,
) -> Result<Array2<f64>, InputError> {
    let Qkv { q, k, v } = slow.project(x)?;
    fast_weight_loop(&unit_rows(&q), &unit_rows(&k), &v)
}
// ANCHOR_END: fast_weight_programmer

// ANCHOR: fast_weights_walkthrough
/// The running example of "Attention, from scratch" (N = 12, d = m = 8),
/// read by causal linear attention with φ = elu+1, both ways.
pub fn fast_weights_walkthrough(seed: u64) -> [Array2<f64>; 2] {
    let (Qkv { q, k, v }, _) = walkthrough(seed);
    let (phi_q, phi_k) = (elu_plus_one(&q), elu_plus_one(&k));
    let recurrent = linear_attention_recurrent(&phi_q, &phi_k, &v)
        .expect("q, k, v come from one projection");
    let parallel = linear_attention_parallel(&phi_q, &phi_k, &v)
        .expect("q, k, v come from one projection");
    [recurrent, parallel]
}
// ANCHOR_END: fast_weights_walkthrough

#[cfg(test)]
mod tests;
