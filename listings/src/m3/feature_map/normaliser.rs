//! Chapter "The feature map φ": the first job of φ. Causal linear attention
//! divides every read by z_tᵀφ(q_t), and that division is an average only
//! while the denominator is positive. elu+1 keeps it positive; a map with
//! negative features, such as the identity, does not, and a map with zero
//! features, such as relu, can leave it at zero. The study that counts it
//! is in [`super::study`].
//!
//! Shapes: phi_q, phi_k: (N, p), v: (N, m).

use crate::input::{InputError, finite, nonempty_finite, same_cols, same_rows};
use crate::phi::elu_plus_one;
use ndarray::{Array1, Array2, ArrayRef2};

// ANCHOR: causal_denominators
/// The normaliser of every causal read, z_tᵀφ(q_t) with
/// z_t = Σ_{j≤t} φ(k_j). phi_q, phi_k: (N, p); returns (N).
pub fn causal_denominators(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
) -> Result<Array1<f64>, InputError> {
    nonempty_finite("phi_q", phi_q)?;
    nonempty_finite("phi_k", phi_k)?;
    same_cols(("phi_q", phi_q), ("phi_k", phi_k), "one feature width p")?;
    same_rows(("phi_q", phi_q), ("phi_k", phi_k), "one key per query")?;
    let mut z = Array1::zeros(phi_k.ncols()); // z_0 = 0
    let denominators =
        phi_q.rows().into_iter().zip(phi_k.rows()).map(|(q, k)| {
            z += &k; // z_t = z_{t−1} + φ(k_t)
            z.dot(&q)
        });
    finite("z_tᵀφ(q_t)", denominators.collect())
}
// ANCHOR_END: causal_denominators

// ANCHOR: candidate_maps
/// A feature map to try in the normaliser: its name and the map itself,
/// applied to every entry of x: (N, d), so p = d.
pub struct Candidate {
    pub name: &'static str,
    pub phi: fn(&ArrayRef2<f64>) -> Array2<f64>,
}

/// elu+1, positive; relu, never negative but often zero; the identity,
/// φ(x) = x, with features of either sign.
pub const CANDIDATES: [Candidate; 3] = [
    Candidate {
        name: "elu+1",
        phi: |x| elu_plus_one(x),
    },
    Candidate {
        name: "relu",
        phi: |x| x.mapv(|x| x.max(0.0)),
    },
    Candidate {
        name: "identity",
        phi: |x| x.to_owned(),
    },
];
// ANCHOR_END: candidate_maps
