//! f32 copies of the forms the book shows only in f64 (causal softmax
//! attention, the parallel N × N form, the two non-causal groupings), so
//! that the benchmark times every form at one precision.

use super::mat_mul;
use crate::causal::mask_future;
use crate::input::{
    InputError, check_features, check_qkv, finite, normalisers,
};
use ndarray::{Array2, ArrayRef2, Axis};

/// Causal softmax attention, softmax(Q Kᵀ / √d) V, at f32: the baseline
/// the benchmark times against, computed as `softmax_attention` with
/// `Mask::Causal` computes it, except that the masked scores are skipped
/// rather than set to −∞. q, k: (N, d), v: (N, m); returns O: (N, m).
pub fn softmax_attention_causal_f32(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Array2<f32>, InputError> {
    check_qkv(q, k, v, true)?;
    let scale = 1.0 / (q.ncols() as f32).sqrt();
    let mut weights = finite("Q Kᵀ", mat_mul(q, &k.t()))?;
    for (t, mut row) in weights.rows_mut().into_iter().enumerate() {
        let (mut seen, mut future) = row.view_mut().split_at(Axis(0), t + 1);
        seen.mapv_inplace(|x| x * scale);
        let max = seen.fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        seen.mapv_inplace(|x| (x - max).exp());
        let total = seen.sum();
        seen /= total;
        future.fill(0.0); // the future gets weight 0
    }
    finite("O", mat_mul(&weights, v))
}

/// `linear_attention_parallel` at f32: the masked N × N product.
pub fn linear_attention_parallel_f32(
    phi_q: &ArrayRef2<f32>,
    phi_k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Array2<f32>, InputError> {
    check_features(phi_q, phi_k, v, true)?;
    let mut scores = mat_mul(phi_q, &phi_k.t());
    mask_future(&mut scores, 0.0); // the causal mask
    weighted_read(&scores, v)
}

/// (A V) / (A 1): each row of scores A as weights over the rows of V.
fn weighted_read(
    scores: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Array2<f32>, InputError> {
    let denominator = scores.sum_axis(Axis(1));
    normalisers("the row sum of the scores", &denominator)?;
    finite("O", mat_mul(scores, v) / denominator.insert_axis(Axis(1)))
}

/// `linear_attention_scores_first` at f32 (non-causal): builds (N, N_k).
pub fn linear_attention_scores_first_f32(
    phi_q: &ArrayRef2<f32>,
    phi_k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Array2<f32>, InputError> {
    check_features(phi_q, phi_k, v, false)?;
    weighted_read(&mat_mul(phi_q, &phi_k.t()), v)
}

/// `linear_attention_memory_first` at f32 (non-causal): S and z first.
pub fn linear_attention_memory_first_f32(
    phi_q: &ArrayRef2<f32>,
    phi_k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Array2<f32>, InputError> {
    check_features(phi_q, phi_k, v, false)?;
    let (s, z) = (mat_mul(&v.t(), phi_k), phi_k.sum_axis(Axis(0)));
    let denominator = phi_q.dot(&z);
    normalisers("zᵀφ(q_t)", &denominator)?;
    finite(
        "O",
        mat_mul(phi_q, &s.t()) / denominator.insert_axis(Axis(1)),
    )
}
