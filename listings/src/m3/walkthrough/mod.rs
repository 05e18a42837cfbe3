//! Chapter "Code walkthrough": linear attention the way production code
//! computes it, for one head of one sequence. Non-causal: the memory S and
//! the normaliser at once, then one read per query. Causal: the causal
//! product, which is M2's fast-weight loop on φ(q) and φ(k), divided by a
//! running sum of φ(k). And a layer that keeps its fast weights from one
//! segment of a sequence to the next, as a decoder does between tokens.
//! The agreement table is in [`study`], the tests in `tests.rs`.
//!
//! Shapes: q: (N, d), k: (N_k, d), v: (N_k, m); φ(q), φ(k): (N, p); the
//! memory S: (m, p).

pub mod study;

use crate::input::{
    InputError, check_features, check_qkv, finite, normalisers, same_cols,
};
use crate::m3::delete_softmax::{Memory, sequence_memory};
use crate::m3::fast_weight_memory::fast_weight_loop;
use crate::m3::schedules::chunk_step;
use ndarray::{Array1, Array2, ArrayRef2, Axis};

// ANCHOR: linear_attention_one_shot
/// Non-causal linear attention as one shot: φ of queries and keys, the
/// memory S = Vᵀ Φ_K and the key sum Φ_Kᵀ 1 in one pass over the keys,
/// the normaliser 1 / (φ(q_t)ᵀ Φ_Kᵀ 1 + ε), and O = Φ_Q Sᵀ scaled by it.
/// q: (N, d), k: (N_k, d), v: (N_k, m); returns O: (N, m).
pub fn linear_attention_one_shot(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    phi: impl Fn(&ArrayRef2<f64>) -> Array2<f64>,
    eps: f64,
) -> Result<Array2<f64>, InputError> {
    check_qkv(q, k, v, false)?;
    let (phi_q, phi_k) = (phi(q), phi(k));
    let Memory { s, z } = sequence_memory(&phi_k, v); // S: (m, p), z: (p)
    let den = phi_q.dot(&z) + eps; // (N)
    normalisers("φ(q_t)ᵀ Φ_Kᵀ 1 + ε", &den)?; // every one > 0
    let inverse = den.mapv(|den| 1.0 / den).insert_axis(Axis(1));
    finite("O", phi_q.dot(&s.t()) * &inverse)
}
// ANCHOR_END: linear_attention_one_shot

// ANCHOR: causal_linear_attention_product
/// Causal linear attention as the causal product: the numerators
/// S_t φ(q_t) from M2's fast-weight loop on φ(q), φ(k); the denominators
/// from the running sums z_t = Σ_{j≤t} φ(k_j), all at once.
/// q, k: (N, d), v: (N, m); returns O: (N, m).
pub fn causal_linear_attention_product(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    phi: impl Fn(&ArrayRef2<f64>) -> Array2<f64>,
    eps: f64,
) -> Result<Array2<f64>, InputError> {
    check_qkv(q, k, v, true)?;
    let (phi_q, phi_k) = (phi(q), phi(k));
    let mut z = phi_k.clone(); // row t becomes z_t, a cumulative sum
    z.accumulate_axis_inplace(Axis(0), |&before, now| *now += before);
    let den = (&phi_q * &z).sum_axis(Axis(1)) + eps; // z_tᵀφ(q_t) + ε
    normalisers("z_tᵀφ(q_t) + ε", &den)?; // every one > 0
    let inverse = den.mapv(|den| 1.0 / den).insert_axis(Axis(1));
    let numerator = fast_weight_loop(&phi_q, &phi_k, v)?; // S_t φ(q_t)
    finite("O", numerator * &inverse)
}
// ANCHOR_END: causal_linear_attention_product

// ANCHOR: FastWeightLayer
/// A causal linear-attention layer that keeps its fast weights between
/// calls: S: (m, p) and z: (p), zero for a new sequence.
pub struct FastWeightLayer {
    pub memory: Memory,
}

impl FastWeightLayer {
    /// A layer for features of width p and values of width m.
    pub fn new(p: usize, m: usize) -> FastWeightLayer {
        let (s, z) = (Array2::zeros((m, p)), Array1::zeros(p));
        FastWeightLayer {
            memory: Memory { s, z },
        }
    }

    /// Read and write the next segment of the sequence, from one token
    /// (decoding) to many (a chunk of text), continuing from the state the
    /// earlier segments left. phi_q, phi_k: (c, p), v: (c, m); returns
    /// O: (c, m), the segment's rows of the causal outputs.
    pub fn segment(
        &mut self,
        phi_q: &ArrayRef2<f64>,
        phi_k: &ArrayRef2<f64>,
        v: &ArrayRef2<f64>,
    ) -> Result<Array2<f64>, InputError> {
        check_features(phi_q, phi_k, v, true)?;
        let s = &self.memory.s;
        same_cols(("phi_k", phi_k), ("S", s), "S is (m, p)")?;
        same_cols(("v", v), ("S transposed", &s.t()), "S is (m, p)")?;
        chunk_step(&mut self.memory, phi_q, phi_k, v)
    }
}
// ANCHOR_END: FastWeightLayer

#[cfg(test)]
mod tests;
