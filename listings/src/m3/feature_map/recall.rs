//! Chapter "The feature map φ": what a fixed-size memory can hold. A query
//! aimed at one stored key, read by softmax attention and by linear
//! attention; then many associations stored at once, read back by the sum
//! rule of linear attention and by the best memory of the same size. The
//! studies over many seeds and sizes are in [`super::study`].
//!
//! Shapes: keys k: (n, d), values v: (n, m); feature-mapped keys
//! φ(K): (n, p); the memory S: (m, p).

use crate::input::{InputError, check_qkv, normaliser};
use crate::linalg::norm;
use crate::m3::attention::{Mask, softmax_attention};
use crate::m3::delete_softmax::linear_attention_memory_first;
use crate::m3::fast_weight_memory::causal_linear_attention;
use crate::phi::FeatureMap;
use ndarray::{Array2, ArrayRef2};

// ANCHOR: recall_probe
/// How far each layer reads from v_target. Relative error of the read.
pub struct Recall {
    pub softmax: f64,
    pub linear: f64,
}

/// Aim the last query of a causal sequence at one earlier key,
/// q_N = gain · k_target, and compare what causal softmax attention and
/// causal linear attention with the feature map `phi` read there with
/// v_target. k: (N, d), v: (N, m). Only the last query is read.
pub fn recall_probe(
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    target: usize,
    gain: f64,
    phi: impl Fn(&ArrayRef2<f64>) -> Array2<f64>,
) -> Result<Recall, InputError> {
    check_qkv(k, k, v, true)?;
    let n = k.nrows();
    if target >= n {
        let (name, index, len) = ("target", target, n);
        return Err(InputError::OutOfRange { name, index, len });
    }
    let mut q = Array2::zeros(k.raw_dim()); // earlier queries: not read
    q.row_mut(n - 1).assign(&(&k.row(target) * gain));
    let softmax = softmax_attention(&q, k, v, Mask::Causal)?.output;
    let linear = causal_linear_attention(&q, k, v, phi)?;
    let size = normaliser("‖v_target‖", target, norm(&v.row(target)))?;
    let error =
        |o: &Array2<f64>| norm(&(&o.row(n - 1) - &v.row(target))) / size;
    Ok(Recall {
        softmax: error(&softmax),
        linear: error(&linear),
    })
}
// ANCHOR_END: recall_probe

// ANCHOR: Map
/// How a layer compares a query with the stored keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Map {
    /// exp(qᵀk / √d): softmax attention, which keeps every key.
    Softmax,
    /// φ(q)ᵀφ(k) with a deterministic feature map: elu+1 (p = d) or
    /// DPFP-ν (p = 2νd).
    Phi(FeatureMap),
}

impl Map {
    /// φ of every row of x: (n, d) → (n, p). None for softmax, which has
    /// no finite feature map.
    pub fn features(
        self,
        x: &ArrayRef2<f64>,
    ) -> Result<Option<Array2<f64>>, InputError> {
        let no_omega = Array2::zeros((x.ncols(), 0)); // only FAVOR+ draws Ω
        match self {
            Map::Softmax => Ok(None),
            Map::Phi(phi) => phi.apply(x, &no_omega).map(Some),
        }
    }
}
// ANCHOR_END: Map

impl Map {
    /// The width p of φ(x) for keys of width d; None for softmax.
    pub fn p(self, d: usize) -> Option<usize> {
        match self {
            Map::Softmax => None,
            Map::Phi(phi) => Some(phi.width(d)),
        }
    }

    /// A short name for tables and legends.
    pub fn name(self) -> String {
        match self {
            Map::Softmax => "softmax".to_string(),
            Map::Phi(phi) => phi.name(),
        }
    }
}

// ANCHOR: read_back
/// Store n associations k_j → v_j, then query every stored key,
/// q_j = gain · k_j; every query sees all n keys. Softmax reads with its
/// weights; a feature map reads the memory S = Vᵀ Φ_K, z = Φ_Kᵀ 1 that the
/// sum rule writes. k: (n, d), v: (n, m); returns the reads O: (n, m).
pub fn read_back(
    map: Map,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    gain: f64,
) -> Result<Array2<f64>, InputError> {
    check_qkv(k, k, v, false)?;
    let q = k * gain;
    match (map.features(&q)?, map.features(k)?) {
        (Some(phi_q), Some(phi_k)) => {
            linear_attention_memory_first(&phi_q, &phi_k, v)
        }
        _ => Ok(softmax_attention(&q, k, v, Mask::None)?.output),
    }
}
// ANCHOR_END: read_back

// ANCHOR: best_memory
/// The best memory of size m × p for these associations: the S that
/// minimises Σ_j ‖S φ(k_j) − v_j‖², whatever rule wrote it. With n ≤ p
/// and independent φ(k_j), S = Vᵀ (Φ_K Φ_Kᵀ)⁻¹ Φ_K reads every value back
/// exactly; with n > p, S = Vᵀ Φ_K (Φ_Kᵀ Φ_K)⁻¹ is the least-squares fit.
/// phi_k: (n, p), v: (n, m); returns S: (m, p).
pub fn best_memory(phi_k: &ArrayRef2<f64>, v: &ArrayRef2<f64>) -> Array2<f64> {
    let (n, p) = phi_k.dim();
    if n <= p {
        let gram = phi_k.dot(&phi_k.t()); // (n, n)
        let coefficients = solve_spd(&gram, &v.to_owned()); // (n, m)
        coefficients.t().dot(phi_k)
    } else {
        let gram = phi_k.t().dot(phi_k); // (p, p)
        let right = phi_k.t().dot(v); // (p, m)
        solve_spd(&gram, &right).t().to_owned()
    }
}
// ANCHOR_END: best_memory

/// Solve A X = B for a symmetric positive definite A: (r, r), B: (r, c),
/// by the Cholesky factorisation A = L Lᵀ. If A is singular to working
/// precision (a pivot below 1e-12 of the mean diagonal), solve
/// (A + λI) X = B with λ that size instead: a least-squares fit whose
/// features are dependent is then settled with the smallest coefficients.
pub fn solve_spd(a: &ArrayRef2<f64>, b: &ArrayRef2<f64>) -> Array2<f64> {
    let floor = 1e-12 * a.diag().sum() / a.nrows() as f64;
    let l = cholesky(a, 0.0, floor)
        .or_else(|| cholesky(a, floor, 0.0))
        .expect("A + λI is positive definite");
    let r = a.nrows();
    let mut x = b.to_owned();
    for mut column in x.columns_mut() {
        for i in 0..r {
            // forward: L y = b
            let dot: f64 = (0..i).map(|t| l[[i, t]] * column[t]).sum();
            column[i] = (column[i] - dot) / l[[i, i]];
        }
        for i in (0..r).rev() {
            // back: Lᵀ x = y
            let dot: f64 = (i + 1..r).map(|t| l[[t, i]] * column[t]).sum();
            column[i] = (column[i] - dot) / l[[i, i]];
        }
    }
    x
}

/// L with A + ridge·I = L Lᵀ, or None if a pivot falls to `floor` or
/// below.
fn cholesky(a: &ArrayRef2<f64>, ridge: f64, floor: f64) -> Option<Array2<f64>> {
    let r = a.nrows();
    let mut l = Array2::<f64>::zeros((r, r));
    for i in 0..r {
        for j in 0..=i {
            let mut sum = a[[i, j]] + if i == j { ridge } else { 0.0 };
            for t in 0..j {
                sum -= l[[i, t]] * l[[j, t]];
            }
            if i == j {
                if sum <= floor {
                    return None;
                }
                l[[i, i]] = sum.sqrt();
            } else {
                l[[i, j]] = sum / l[[j, j]];
            }
        }
    }
    Some(l)
}
