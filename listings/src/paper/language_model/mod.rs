//! Chapter "The language-modelling result, small": the fast-weight layers
//! the paper compares on WikiText-103, one head in f64 as the chapter
//! shows them (the rules, the sum normalisation, the attention
//! normaliser), the study's plan and what the chapter prints from the
//! committed data. The f32 trainer that made that data lives in the
//! crate's `trainers::lm`, which builds on this module; this module does
//! not use it.

use crate::input::{InputError, finite, normaliser};
use crate::paper::delta_rule::{check_delta, delta_rule_step, sum_normalise};
use crate::phi::FeatureMap as Phi;
use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2};

pub mod study;

#[cfg(test)]
mod tests;

/// A fast-weight layer's rule. The design leaves room for more rules
/// (gated ones, a short convolution before the map) as new variants.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mixer {
    /// softmax(q kᵀ / √d_h) v, causal.
    Softmax,
    /// The sum rule with the attention normaliser (Katharopoulos et al.):
    /// y_t = Σ_j v_j φ(k_j)ᵀφ(q_t) / Σ_j φ(k_j)ᵀφ(q_t).
    Sum(Phi),
    /// The delta rule W_t = W_{t−1} + β_t (v_t − W_{t−1} k̄_t) k̄_tᵀ,
    /// y_t = W_t q̄_t; `sum_norm`: k̄ = φ(k)/Σφ(k) (and q̄ alike), else
    /// k̄ = φ(k); `attn_norm`: y_t divided by z_tᵀ q̄_t, z_t = Σ_j k̄_j.
    Delta {
        phi: Phi,
        sum_norm: bool,
        attn_norm: bool,
    },
}

/// What keeps sums away from zero: the normaliser's ε of the reference
/// code, also added to each sum of the sum normalisation.
pub const EPS: f64 = 1e-6;

impl Mixer {
    /// The feature map, if the rule has one.
    pub fn phi(self) -> Option<Phi> {
        match self {
            Mixer::Softmax => None,
            Mixer::Sum(phi) | Mixer::Delta { phi, .. } => Some(phi),
        }
    }

    /// Whether the layer learns a write strength β per head.
    pub fn has_beta(self) -> bool {
        matches!(self, Mixer::Delta { .. })
    }

    /// The number of features p of a head of width `dh`.
    pub fn features(self, dh: usize) -> usize {
        match self.phi() {
            None | Some(Phi::EluPlusOne) => dh,
            Some(Phi::Dpfp(nu)) => 2 * nu * dh,
            Some(Phi::Favor(r)) => 2 * r,
        }
    }
}

/// The two normalisers the paper's ablation switches.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Norms {
    /// Keys and queries divided by the sum of their features.
    pub sum: bool,
    /// Each read divided by z_tᵀ q̄_t, z_t = Σ_{j≤t} k̄_j.
    pub attention: bool,
}

// ANCHOR: delta_layer
/// The delta rule's layer, one head: k̄ = φ(k)/Σφ(k) (or φ(k) without
/// sum normalisation), q̄ alike; S_t = S_{t−1} + β_t (v_t − S_{t−1} k̄_t)
/// k̄_tᵀ; y_t = S_t q̄_t, over z_tᵀ q̄_t with the attention normaliser.
/// phi_q, phi_k: (N, p), v: (N, m), beta: (N); returns Y: (N, m).
pub fn delta_layer(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    beta: &ArrayRef1<f64>,
    norms: Norms,
) -> Result<Array2<f64>, InputError> {
    check_delta(phi_q, phi_k, v, beta)?;
    let (n, p, m) = (phi_k.nrows(), phi_k.ncols(), v.ncols());
    let bar = |f: ndarray::ArrayView1<f64>| match norms.sum {
        true => sum_normalise(&f), // weights summing to 1
        false => Ok(f.to_owned()), // the features as they are
    };
    let mut memory = Array2::zeros((m, p));
    let mut z = Array1::<f64>::zeros(p);
    let mut y = Array2::zeros((n, m));
    for t in 0..n {
        let k_bar = bar(phi_k.row(t))?;
        delta_rule_step(&mut memory, &k_bar, &v.row(t), beta[t])?; // write
        z += &k_bar;
        let q_bar = bar(phi_q.row(t))?;
        let den = match norms.attention {
            true => normaliser("z_tᵀ q̄_t", t, z.dot(&q_bar))?,
            false => 1.0, // the paper's layer: no attention normaliser
        };
        y.row_mut(t).assign(&(memory.dot(&q_bar) / den)); // read
    }
    finite("Y", y)
}
// ANCHOR_END: delta_layer
