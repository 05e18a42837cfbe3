//! Chapter "Attention, from scratch": queries, keys and values from an input
//! X, scaled dot-product attention, and a query aimed at one key. The
//! chapter's printed studies are in [`study`], its tests in `tests.rs`.
//!
//! Shapes: X: (N, d_model), one token per row; Q, K: (N, d); V: (N, m).

pub mod study;

use crate::causal::mask_future;
use crate::input::{
    InputError, check_qkv, finite, nonempty_finite, normaliser, same_cols,
};
use crate::linalg::norm;
use crate::random::{randn, seeded};
use ndarray::{Array1, Array2, ArrayRef2, Axis};
use rand::Rng;

// ANCHOR: Projections
/// The slow weights: fixed after training, they give each token its roles.
/// w_q: (d, d_model), w_k: (d, d_model), w_v: (m, d_model).
pub struct Projections {
    pub w_q: Array2<f64>,
    pub w_k: Array2<f64>,
    pub w_v: Array2<f64>,
}

/// Queries, keys and values of a sequence: q, k: (N, d), v: (N, m).
pub struct Qkv {
    pub q: Array2<f64>,
    pub k: Array2<f64>,
    pub v: Array2<f64>,
}
// ANCHOR_END: Projections

// ANCHOR: random_projections
/// Random slow weights with N(0, 1/d_model) entries, so a token with
/// entries of variance 1 gets q, k, v entries of variance about 1.
pub fn random_projections(
    rng: &mut impl Rng,
    d_model: usize,
    d: usize,
    m: usize,
) -> Projections {
    let scale = 1.0 / (d_model as f64).sqrt();
    Projections {
        w_q: randn(rng, d, d_model) * scale,
        w_k: randn(rng, d, d_model) * scale,
        w_v: randn(rng, m, d_model) * scale,
    }
}
// ANCHOR_END: random_projections

// ANCHOR: project
impl Projections {
    /// q_t = W_Q x_t, k_t = W_K x_t, v_t = W_V x_t for every row x_t of X,
    /// that is Q = X W_Qᵀ, K = X W_Kᵀ, V = X W_Vᵀ.
    pub fn project(&self, x: &ArrayRef2<f64>) -> Result<Qkv, InputError> {
        nonempty_finite("x", x)?;
        let rule = "x's width is the projections' d_model";
        same_cols(("x", x), ("w_q", &self.w_q), rule)?;
        Ok(Qkv {
            q: finite("q", x.dot(&self.w_q.t()))?,
            k: finite("k", x.dot(&self.w_k.t()))?,
            v: finite("v", x.dot(&self.w_v.t()))?,
        })
    }
}
// ANCHOR_END: project

// ANCHOR: softmax_rows
/// Softmax of each row: exp(s_j − max) / Σ exp(s_i − max). Subtracting the
/// row's max changes nothing in exact arithmetic and keeps exp from
/// overflowing. An entry of −∞ gets weight 0; each row needs a finite one.
pub fn softmax_rows(scores: &ArrayRef2<f64>) -> Array2<f64> {
    let mut weights = scores.to_owned();
    for mut row in weights.rows_mut() {
        let max = row.fold(f64::NEG_INFINITY, |m, &s| m.max(s));
        row.mapv_inplace(|s| (s - max).exp());
        let total = row.sum();
        row /= total;
    }
    weights
}
// ANCHOR_END: softmax_rows

// ANCHOR: softmax_attention
/// Which keys a query may see.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mask {
    /// Every query sees every key.
    None,
    /// Query t sees keys j ≤ t only (one key per query).
    Causal,
}

/// The attention weights A: (N, N_k) and the output O = A V: (N, m).
pub struct Attention {
    pub weights: Array2<f64>,
    pub output: Array2<f64>,
}

/// Scaled dot-product attention, softmax(Q Kᵀ / √d) V.
/// q: (N, d), k: (N_k, d), v: (N_k, m).
pub fn softmax_attention(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    mask: Mask,
) -> Result<Attention, InputError> {
    check_qkv(q, k, v, mask == Mask::Causal)?;
    let d = q.ncols() as f64;
    let mut scores = finite("Q Kᵀ / √d", q.dot(&k.t()) / d.sqrt())?;
    if mask == Mask::Causal {
        mask_future(&mut scores, f64::NEG_INFINITY); // the future gets 0
    }
    let weights = softmax_rows(&scores);
    let output = finite("O", weights.dot(v))?;
    Ok(Attention { weights, output })
}
// ANCHOR_END: softmax_attention

// ANCHOR: aligned_probe
/// What a query aimed at one key reads back.
pub struct Probe {
    /// The attention weights over all N keys.
    pub weights: Array1<f64>,
    /// The weight on the targeted key; uniform weights would give 1/N.
    pub weight_on_target: f64,
    /// ‖o − v_target‖ / ‖v_target‖ for the read-out o.
    pub retrieval_error: f64,
}

/// Aim a query at key `target` (q = gain · k_target), read all keys
/// without a mask, and compare the read-out with the target's value.
pub fn aligned_probe(
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    target: usize,
    gain: f64,
) -> Result<Probe, InputError> {
    if target >= k.nrows() {
        let len = k.nrows();
        return Err(InputError::OutOfRange {
            name: "target",
            index: target,
            len,
        });
    }
    let q = (&k.row(target) * gain).insert_axis(Axis(0)); // (1, d)
    let read = softmax_attention(&q, k, v, Mask::None)?;
    let weights = read.weights.row(0).to_owned();
    let miss = &read.output.row(0) - &v.row(target);
    let size = normaliser("‖v_target‖", target, norm(&v.row(target)))?;
    Ok(Probe {
        weight_on_target: weights[target],
        retrieval_error: norm(&miss) / size,
        weights,
    })
}
// ANCHOR_END: aligned_probe

// ANCHOR: unit_rows
/// Each row divided by its Euclidean length (rows of zeros stay zero).
pub fn unit_rows(a: &ArrayRef2<f64>) -> Array2<f64> {
    let mut out = a.to_owned();
    for mut row in out.rows_mut() {
        let len = norm(&row);
        if len > 0.0 {
            row /= len;
        }
    }
    out
}
// ANCHOR_END: unit_rows

// ANCHOR: walkthrough
/// The chapter's running example: N = 12 tokens of width 16, projected to
/// d = m = 8, read by one causal attention layer. All from one seed.
pub fn walkthrough(seed: u64) -> (Qkv, Attention) {
    let mut rng = seeded(seed);
    let x = randn(&mut rng, 12, 16); // X: (N, d_model)
    let slow = random_projections(&mut rng, 16, 8, 8);
    let qkv = slow.project(&x).expect("x has width d_model");
    let read = softmax_attention(&qkv.q, &qkv.k, &qkv.v, Mask::Causal)
        .expect("q, k, v come from one projection");
    (qkv, read)
}
// ANCHOR_END: walkthrough

/// Largest |Σ_j A_tj − 1| over the rows of A.
pub fn worst_row_sum_error(weights: &ArrayRef2<f64>) -> f64 {
    weights
        .sum_axis(Axis(1))
        .fold(0.0, |worst, &s| f64::max(worst, (s - 1.0).abs()))
}

/// Largest weight a query gives a key after it (j > t).
pub fn largest_future_weight(weights: &ArrayRef2<f64>) -> f64 {
    let mut largest = 0.0_f64;
    for ((t, j), &w) in weights.indexed_iter() {
        if j > t {
            largest = largest.max(w);
        }
    }
    largest
}

#[cfg(test)]
mod tests;
