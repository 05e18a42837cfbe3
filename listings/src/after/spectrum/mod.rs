//! Chapter "The transition's spectrum": the delta transition I − β k kᵀ
//! has eigenvalue 1 − β ‖k‖² along k and 1 elsewhere, so with β up to 2
//! it reaches −1; a delta-rule layer with β = 2 on one fixed unit key
//! reads the parity of a bit string at every length, while with factors
//! in [0, 1] a run of ones is read monotonically and parity fails within
//! three tokens (Grazzi et al. 2025); and DeltaProduct, n_h delta-rule
//! steps per token, whose transition is a product of Householder matrices
//! and can rotate. Its `tracking` module trains one-layer models on parity
//! and counting modulo 3 with each range of eigenvalues.
//!
//! Shapes: the memory S: (m, p), values by features, as everywhere in the
//! book; keys k: (p), values v: (m).

use crate::input::{
    Entry, InputError, finite, first_outside, nonempty_finite, same_cols,
    same_rows,
};
use crate::paper::delta_rule::{delta_rule_step, delta_transition};
use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2, Axis, s};

pub mod study;
pub mod tracking;

/// Every entry of `bits` is 0 or 1, and there is at least one.
fn check_bits(bits: &[u8]) -> Result<(), InputError> {
    if bits.is_empty() {
        return Err(InputError::Empty {
            name: "bits",
            shape: [0, 1],
        });
    }
    match bits.iter().position(|&b| b > 1) {
        None => Ok(()),
        Some(t) => Err(InputError::Outside {
            name: "bits",
            at: [t, 0],
            value: f64::from(bits[t]),
            allowed: "a bit, 0 or 1",
        }),
    }
}

/// A finite key of unit length (to rounding).
fn check_unit_key(key: &ArrayRef1<f64>) -> Result<(), InputError> {
    nonempty_finite("key", &key.view().insert_axis(Axis(0)))?;
    let length = key.dot(key).sqrt();
    match (length - 1.0).abs() <= 1e-9 {
        true => Ok(()),
        false => Err(InputError::Outside {
            name: "the length of key",
            at: [0, 0],
            value: length,
            allowed: "a unit key, length 1",
        }),
    }
}

// ANCHOR: parity_reads
/// A one-layer delta rule over bits: token t writes the value 1 on the
/// fixed unit key k with strength β x_t, then reads y_t = S_t k.
/// bits: (N) of 0 and 1, key: (p). With β = 2, y_t is 2 × parity.
pub fn parity_reads(
    bits: &[u8],
    key: &ArrayRef1<f64>,
    beta: f64,
) -> Result<Array1<f64>, InputError> {
    check_bits(bits)?;
    check_unit_key(key)?;
    let mut memory = Array2::zeros((1, key.len())); // m = 1
    let one = Array1::ones(1);
    let mut reads = Array1::zeros(bits.len());
    for (t, &bit) in bits.iter().enumerate() {
        let strength = beta * f64::from(bit); // β on a 1, nothing on a 0
        delta_rule_step(&mut memory, key, &one, strength)?;
        reads[t] = memory.dot(key)[0];
    }
    finite("y", reads)
}
// ANCHOR_END: parity_reads

// ANCHOR: householder_product
/// The transition of one DeltaProduct token, a product of generalised
/// Householder matrices, H = (I − β_1 k_1 k_1ᵀ) ⋯ (I − β_n k_n k_nᵀ).
/// keys: (n_h, p), betas: (n_h); returns H: (p, p).
pub fn householder_product(
    keys: &ArrayRef2<f64>,
    betas: &ArrayRef1<f64>,
) -> Result<Array2<f64>, InputError> {
    one_strength_per_key(keys, betas)?;
    let mut h = Array2::eye(keys.ncols());
    for (k, &beta) in keys.rows().into_iter().zip(betas) {
        h = h.dot(&delta_transition(&k, beta)?); // the steps in order
    }
    Ok(h)
}
// ANCHOR_END: householder_product

// ANCHOR: delta_product_step
/// One DeltaProduct token: n_h delta-rule writes in turn, so that
/// S_t = S_{t−1} H_t + B_t with H_t the product of their transitions.
/// memory: (m, p), keys: (n_h, p), values: (n_h, m), betas: (n_h).
pub fn delta_product_step(
    memory: &mut Array2<f64>,
    keys: &ArrayRef2<f64>,
    values: &ArrayRef2<f64>,
    betas: &ArrayRef1<f64>,
) -> Result<(), InputError> {
    one_strength_per_key(keys, betas)?;
    same_rows(("keys", keys), ("values", values), "one value per key")?;
    for ((k, v), &beta) in keys.rows().into_iter().zip(values.rows()).zip(betas)
    {
        delta_rule_step(memory, &k, &v, beta)?;
    }
    Ok(())
}
// ANCHOR_END: delta_product_step

/// As many write strengths as keys: keys: (n_h, p), betas: (n_h).
fn one_strength_per_key(
    keys: &ArrayRef2<f64>,
    betas: &ArrayRef1<f64>,
) -> Result<(), InputError> {
    let column = betas.view().insert_axis(Axis(1)); // (n_h, 1)
    same_rows(("keys", keys), ("betas", &column), "one strength per key")
}

// ANCHOR: delta_product_recurrent
/// DeltaProduct over a sequence from S_0 = 0: token t takes the n_h rows
/// t n_h .. (t + 1) n_h of k, v and β, then reads y_t = S_t q_t.
/// q: (N, p), k: (N n_h, p), v: (N n_h, m), beta: (N n_h) in [0, 2].
pub fn delta_product_recurrent(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    beta: &ArrayRef1<f64>,
    n_h: usize,
) -> Result<Array2<f64>, InputError> {
    check_delta_product(q, k, v, beta, n_h)?;
    let (n, p, m) = (q.nrows(), q.ncols(), v.ncols());
    let mut memory = Array2::zeros((m, p));
    let mut output = Array2::zeros((n, m));
    for t in 0..n {
        let rows = t * n_h..(t + 1) * n_h; // this token's n_h steps
        let keys = k.slice(s![rows.clone(), ..]);
        let values = v.slice(s![rows.clone(), ..]);
        let betas = beta.slice(s![rows]);
        delta_product_step(&mut memory, &keys, &values, &betas)?;
        output.row_mut(t).assign(&memory.dot(&q.row(t))); // read
    }
    finite("Y", output)
}
// ANCHOR_END: delta_product_recurrent

/// The inputs of DeltaProduct: finite, n_h ≥ 1 rows of k, v and β per
/// query, and every β in [0, 2].
pub fn check_delta_product<T: Entry>(
    q: &ArrayRef2<T>,
    k: &ArrayRef2<T>,
    v: &ArrayRef2<T>,
    beta: &ArrayRef1<T>,
    n_h: usize,
) -> Result<(), InputError> {
    if n_h == 0 {
        return Err(InputError::BadParameter {
            name: "n_h",
            value: 0,
            rule: "at least one step per token",
        });
    }
    nonempty_finite("q", q)?;
    nonempty_finite("k", k)?;
    nonempty_finite("v", v)?;
    let b = beta.view().insert_axis(Axis(1)); // (N n_h, 1)
    nonempty_finite("beta", &b)?;
    same_cols(("q", q), ("k", k), "queries and keys share the width p")?;
    let steps = q.nrows() * n_h;
    for (name, rows, shape) in [
        ("k", k.nrows(), [k.nrows(), k.ncols()]),
        ("v", v.nrows(), [v.nrows(), v.ncols()]),
        ("beta", b.nrows(), [b.nrows(), 1]),
    ] {
        if rows != steps {
            return Err(InputError::ShapeMismatch {
                left: (name, shape),
                right: ("q", [q.nrows(), q.ncols()]),
                rule: "n_h rows of k, v and beta per row of q",
            });
        }
    }
    let column = beta.view().insert_axis(Axis(1)); // (N n_h, 1)
    let allowed = "a strength in [0, 2]";
    first_outside("beta", &column, |b| (0.0..=2.0).contains(&b), allowed)
}

#[cfg(test)]
mod tests;
