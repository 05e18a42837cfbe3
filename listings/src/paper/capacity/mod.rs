//! Chapter "The capacity limit": how many associations a fast-weight
//! memory written with the sum rule can hand back. With orthonormal keys it
//! returns every value exactly, but only d such keys fit in ℝ^d; past d,
//! and with random keys before that, the other associations leak into
//! every read (Schlag et al. 2021, §4.1).
//!
//! Shapes: keys: (n, d), one association per row; values: (n, m); the
//! memory S = Σ_i v_i k_iᵀ is (m, d).

use crate::input::{InputError, check_qkv, finite, nonzero_rows};
use crate::linalg::{gram_schmidt, relative_errors};
use crate::m3::attention::unit_rows;
use crate::m3::delete_softmax::sequence_memory;
use crate::random::randn;
use ndarray::{Array1, Array2, ArrayRef2, s};
use rand::Rng;

pub mod study;

// ANCHOR: sum_rule_recall
/// Store every association with the sum rule, S = Σ_i v_i k_iᵀ, read each
/// key back, and return each read's error ‖S k_i − v_i‖ / ‖v_i‖.
/// keys: (n, d), values: (n, m) with no zero row.
pub fn sum_rule_recall(
    keys: &ArrayRef2<f64>,
    values: &ArrayRef2<f64>,
) -> Result<Array1<f64>, InputError> {
    check_qkv(keys, keys, values, false)?;
    nonzero_rows("the norm of a row of values", values)?;
    let memory = sequence_memory(keys, values).s; // S: (m, d)
    let reads = keys.dot(&memory.t()); // row i is (S k_i)ᵀ
    finite("the errors", relative_errors(&reads, values))
}
// ANCHOR_END: sum_rule_recall

// ANCHOR: crosstalk
/// What the read of key i picks up besides v_i:
/// S k_i − v_i = (‖k_i‖² − 1) v_i + Σ_{j≠i} (k_jᵀ k_i) v_j.
/// keys: (n, d), values: (n, m); returns (m).
pub fn crosstalk(
    keys: &ArrayRef2<f64>,
    values: &ArrayRef2<f64>,
    i: usize,
) -> Array1<f64> {
    let k_i = keys.row(i);
    let mut leak = &values.row(i) * (k_i.dot(&k_i) - 1.0);
    for (j, (k_j, v_j)) in
        keys.rows().into_iter().zip(values.rows()).enumerate()
    {
        if j != i {
            leak.scaled_add(k_j.dot(&k_i), &v_j);
        }
    }
    leak
}
// ANCHOR_END: crosstalk

/// Keys that are orthonormal while they can be: the first min(n, d) rows
/// orthonormal, any further ones random unit vectors. (n, d).
pub fn orthonormal_then_random(
    rng: &mut impl Rng,
    n: usize,
    d: usize,
) -> Array2<f64> {
    let mut keys = Array2::zeros((n, d));
    let fit = n.min(d);
    keys.slice_mut(s![..fit, ..])
        .assign(&gram_schmidt(rng, fit, d));
    if n > d {
        let extra = unit_rows(&randn(rng, n - d, d));
        keys.slice_mut(s![d.., ..]).assign(&extra);
    }
    keys
}

/// One-hot values: value i is the i-th unit vector of ℝ^n. (n, n).
pub fn one_hot_values(n: usize) -> Array2<f64> {
    Array2::eye(n)
}

/// Σ_i ‖S k_i − v_i‖² for one-hot values v_i = e_i, where the reads are
/// the columns of the Gram matrix K Kᵀ: the total is ‖K Kᵀ − I‖²_F.
pub fn one_hot_total_error(keys: &ArrayRef2<f64>) -> f64 {
    let n = keys.nrows();
    let gram = keys.dot(&keys.t());
    (gram - Array2::<f64>::eye(n)).mapv(|x| x * x).sum()
}

#[cfg(test)]
mod tests;
