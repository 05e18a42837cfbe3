//! Chapter "Delete the softmax": attention with a general similarity kernel,
//! softmax as the exponential kernel, and linear attention's two groupings
//! of the same product. Then the chapter's question, made executable: is it
//! the softmax's sharpness that forbids the collapse, or its kernel? The
//! studies that answer it (groupings, temperature, rank, Taylor features)
//! are in [`study`], the tests in `tests.rs`.
//!
//! Shapes: q: (N, d), k: (N_k, d), v: (N_k, m); feature-mapped queries and
//! keys φ(Q), φ(K): (N, p). The memory S is (m, p), values by features.

pub mod study;

use crate::input::{
    InputError, check_features, check_qkv, finite, normaliser, normalisers,
};
use crate::m3::attention::{Attention, Mask};
use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2, Axis};

// ANCHOR: kernel_attention
/// Attention with a similarity kernel (Tsai et al. 2019):
/// o_t = Σ_j sim(q_t, k_j) v_j / Σ_j sim(q_t, k_j), over j ≤ t if causal.
/// q: (N, d), k: (N_k, d), v: (N_k, m). The kernel must be positive.
pub fn kernel_attention(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    mask: Mask,
    sim: impl Fn(&ArrayRef1<f64>, &ArrayRef1<f64>) -> f64,
) -> Result<Attention, InputError> {
    check_qkv(q, k, v, mask == Mask::Causal)?;
    let visible = |t: usize, j: usize| mask == Mask::None || j <= t;
    let mut weights =
        Array2::from_shape_fn((q.nrows(), k.nrows()), |(t, j)| {
            if visible(t, j) {
                sim(&q.row(t), &k.row(j))
            } else {
                0.0
            }
        });
    for (t, mut row) in weights.rows_mut().into_iter().enumerate() {
        row /= normaliser("Σ_j sim(q_t, k_j)", t, row.sum())?; // > 0
    }
    let output = finite("O", weights.dot(v))?;
    Ok(Attention { weights, output })
}
// ANCHOR_END: kernel_attention

// ANCHOR: softmax_kernel
/// The kernel of softmax attention: sim(q, k) = exp(qᵀk / √d).
pub fn softmax_kernel(q: &ArrayRef1<f64>, k: &ArrayRef1<f64>) -> f64 {
    let d = q.len() as f64;
    (q.dot(k) / d.sqrt()).exp()
}
// ANCHOR_END: softmax_kernel

// ANCHOR: linear_attention_scores_first
/// Non-causal linear attention, scores first: (Φ_Q Φ_Kᵀ) V, each row
/// divided by its row sum of Φ_Q Φ_Kᵀ. Builds an (N, N_k) matrix.
/// phi_q: (N, p), phi_k: (N_k, p), v: (N_k, m); returns O: (N, m).
pub fn linear_attention_scores_first(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<Array2<f64>, InputError> {
    check_features(phi_q, phi_k, v, false)?;
    let scores = phi_q.dot(&phi_k.t()); // (N, N_k): grows with N
    let numerator = scores.dot(v); // (N, m)
    let denominator = scores.sum_axis(Axis(1));
    normalisers("zᵀφ(q_t)", &denominator)?; // every one > 0
    finite("O", numerator / denominator.insert_axis(Axis(1)))
}
// ANCHOR_END: linear_attention_scores_first

// ANCHOR: sequence_memory
/// What the memory-first grouping keeps of a whole sequence.
pub struct Memory {
    /// S = Vᵀ Φ_K = Σ_j v_j φ(k_j)ᵀ: (m, p), values by features.
    pub s: Array2<f64>,
    /// z = Φ_Kᵀ 1 = Σ_j φ(k_j): (p), the normaliser.
    pub z: Array1<f64>,
}

/// The memory of a sequence. phi_k: (N_k, p), v: (N_k, m).
pub fn sequence_memory(phi_k: &ArrayRef2<f64>, v: &ArrayRef2<f64>) -> Memory {
    Memory {
        s: v.t().dot(phi_k),
        z: phi_k.sum_axis(Axis(0)),
    }
}
// ANCHOR_END: sequence_memory

// ANCHOR: linear_attention_memory_first
/// Non-causal linear attention, memory first: o_t = S φ(q_t) / zᵀφ(q_t),
/// all rows at once O = Φ_Q Sᵀ / Φ_Q z. Builds no N × N matrix.
/// phi_q: (N, p), phi_k: (N_k, p), v: (N_k, m); returns O: (N, m).
pub fn linear_attention_memory_first(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<Array2<f64>, InputError> {
    check_features(phi_q, phi_k, v, false)?;
    let Memory { s, z } = sequence_memory(phi_k, v); // (m, p) and (p)
    let numerator = phi_q.dot(&s.t()); // (N, m)
    let denominator = phi_q.dot(&z); // (N)
    normalisers("zᵀφ(q_t)", &denominator)?; // every one > 0
    finite("O", numerator / denominator.insert_axis(Axis(1)))
}
// ANCHOR_END: linear_attention_memory_first

// ANCHOR: entropy
/// Entropy of a row of weights, −Σ_j a_j ln a_j, in nats. A uniform row
/// over N keys has the largest, ln N; a one-hot row has 0.
pub fn entropy(weights: &ArrayRef1<f64>) -> f64 {
    -weights
        .iter()
        .filter(|&&a| a > 0.0)
        .map(|&a| a * a.ln())
        .sum::<f64>()
}
// ANCHOR_END: entropy

/// Relative tolerance of the book's numerical ranks: a pivot counts if it
/// is larger than this times the largest one.
pub const RANK_TOL: f64 = 1e-10;

// ANCHOR: numerical_rank
/// The number of pivots of Gaussian elimination with complete pivoting
/// that exceed rel_tol × the first (largest) pivot. a: (rows, cols).
pub fn numerical_rank(a: &ArrayRef2<f64>, rel_tol: f64) -> usize {
    let mut a = a.to_owned();
    let (rows, cols) = a.dim();
    let mut largest = 0.0;
    for r in 0..rows.min(cols) {
        // The largest entry of the part not yet eliminated is the pivot.
        let (mut pr, mut pc, mut pivot) = (r, r, 0.0);
        for i in r..rows {
            for j in r..cols {
                if a[[i, j]].abs() > pivot {
                    (pr, pc, pivot) = (i, j, a[[i, j]].abs());
                }
            }
        }
        if r == 0 {
            largest = pivot;
        }
        if pivot == 0.0 || pivot <= rel_tol * largest {
            return r;
        }
        swap_rows(&mut a, r, pr);
        swap_cols(&mut a, r, pc);
        for i in r + 1..rows {
            let factor = a[[i, r]] / a[[r, r]];
            for j in r..cols {
                a[[i, j]] -= factor * a[[r, j]];
            }
        }
    }
    rows.min(cols)
}
// ANCHOR_END: numerical_rank

fn swap_rows(a: &mut Array2<f64>, i: usize, j: usize) {
    if i != j {
        for c in 0..a.ncols() {
            a.swap([i, c], [j, c]);
        }
    }
}

fn swap_cols(a: &mut Array2<f64>, i: usize, j: usize) {
    if i != j {
        for r in 0..a.nrows() {
            a.swap([r, i], [r, j]);
        }
    }
}

// ANCHOR: gram_matrix
/// The Gram matrix of a kernel on N points: G_ij = sim(x_i, x_j).
/// x: (N, d); returns G: (N, N).
pub fn gram_matrix(
    x: &ArrayRef2<f64>,
    sim: impl Fn(&ArrayRef1<f64>, &ArrayRef1<f64>) -> f64,
) -> Array2<f64> {
    let n = x.nrows();
    Array2::from_shape_fn((n, n), |(i, j)| sim(&x.row(i), &x.row(j)))
}
// ANCHOR_END: gram_matrix

// ANCHOR: taylor_features
/// Taylor features of exp(qᵀk) up to degree ℓ: one feature x^α / √α! per
/// multi-index α with |α| ≤ ℓ, so φ(q)ᵀφ(k) = Σ_{i≤ℓ} (qᵀk)^i / i!.
/// x: (N, d); returns (N, p) with p = C(d + ℓ, ℓ).
pub fn taylor_features(x: &ArrayRef2<f64>, degree: usize) -> Array2<f64> {
    let alphas: Vec<Vec<u32>> = (0..=degree)
        .flat_map(|i| multi_indices(x.ncols(), i))
        .collect();
    Array2::from_shape_fn((x.nrows(), alphas.len()), |(t, f)| {
        let x_t = x.row(t);
        let monomial = |(&x, &a): (&f64, &u32)| x.powi(a as i32);
        let scale: f64 = alphas[f].iter().map(|&a| factorial(a)).product();
        x_t.iter().zip(&alphas[f]).map(monomial).product::<f64>() / scale.sqrt()
    })
}
// ANCHOR_END: taylor_features

/// Every α ∈ ℕ^d with α_1 + … + α_d = degree, largest α_1 first.
pub fn multi_indices(d: usize, degree: usize) -> Vec<Vec<u32>> {
    if d == 0 {
        return if degree == 0 { vec![vec![]] } else { vec![] };
    }
    let mut out = Vec::new();
    for first in (0..=degree).rev() {
        for rest in multi_indices(d - 1, degree - first) {
            let mut alpha = vec![first as u32];
            alpha.extend(rest);
            out.push(alpha);
        }
    }
    out
}

fn factorial(a: u32) -> f64 {
    (1..=a).map(f64::from).product()
}

// ANCHOR: taylor_dimension
/// Number of Taylor features up to degree ℓ in d dimensions: the number of
/// monomials of degree ≤ ℓ in d variables, C(d + ℓ, ℓ).
pub fn taylor_dimension(d: usize, degree: usize) -> u64 {
    // C(d + i, i) = C(d + i − 1, i − 1) · (d + i) / i, exact at each step.
    (1..=degree as u64).fold(1, |c, i| c * (d as u64 + i) / i)
}
// ANCHOR_END: taylor_dimension

#[cfg(test)]
mod tests;
