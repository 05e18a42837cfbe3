//! Appendix "Linear-algebra primer": the two facts the capacity chapters
//! lean on. Orthonormal keys make an outer-product memory exact, only d of
//! them fit in ℝ^d, and random unit keys are nearly but not quite
//! orthogonal. The rank of a key set counts its directions; its effective
//! rank (Roy & Vetterli 2007) weighs them by their singular values, and it
//! is the effective rank that sets how much crosstalk the sum rule suffers.
//! The two printed studies are in [`study`], the tests in `tests.rs`.
//!
//! Shapes: keys: (n, d), one key per row, as in the capacity chapter.

pub mod study;

use crate::input::{InputError, nonempty_finite};
use crate::linalg::norm;
use crate::m3::attention::unit_rows;
use crate::m3::delete_softmax::entropy;
use crate::random::randn;
use ndarray::{Array1, Array2, ArrayRef2, Axis, Zip, s};
use rand::Rng;

// ANCHOR: pairwise_overlaps
/// The cosine k_iᵀk_j / (‖k_i‖ ‖k_j‖) of every pair i < j of keys, in the
/// order (0, 1), (0, 2), …, (n−2, n−1). keys: (n, d), n ≥ 2, no zero row.
pub fn pairwise_overlaps(
    keys: &ArrayRef2<f64>,
) -> Result<Array1<f64>, InputError> {
    nonempty_finite("keys", keys)?;
    let n = keys.nrows();
    if n < 2 {
        return Err(InputError::BadParameter {
            name: "number of keys",
            value: n,
            rule: "an overlap needs two keys",
        });
    }
    if let Some(i) = keys.rows().into_iter().position(|k| norm(&k) == 0.0) {
        return Err(InputError::BadParameter {
            name: "index of a zero key",
            value: i,
            rule: "a key of length zero has no direction",
        });
    }
    let units = unit_rows(keys);
    let cosines = units.dot(&units.t()); // (n, n), ones on the diagonal
    let mut out = Vec::with_capacity(n * (n - 1) / 2);
    for i in 0..n {
        for j in i + 1..n {
            out.push(cosines[[i, j]]);
        }
    }
    Ok(Array1::from(out))
}
// ANCHOR_END: pairwise_overlaps

/// Root mean square of a set of numbers.
fn rms(xs: &[f64]) -> f64 {
    (xs.iter().map(|x| x * x).sum::<f64>() / xs.len() as f64).sqrt()
}

/// Eigenvalues, largest first, and unit eigenvectors as the columns of
/// `vectors`, in the same order: a = vectors · diag(values) · vectorsᵀ.
pub struct Eigen {
    pub values: Array1<f64>,
    pub vectors: Array2<f64>,
}

/// Sweeps of [`jacobi_eigen`] before it gives up; it needs about ten.
pub const JACOBI_MAX_SWEEPS: usize = 60;

// ANCHOR: jacobi_eigen
/// The rotation (c, s) in the plane (p, q) that zeroes a_pq of Jᵀ a J,
/// from a_pp, a_qq and a_pq ≠ 0: t = tan θ, the smaller root.
fn zeroing_rotation(app: f64, aqq: f64, apq: f64) -> (f64, f64) {
    let theta = (aqq - app) / (2.0 * apq);
    let t = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
    let c = 1.0 / (t * t + 1.0).sqrt();
    (c, t * c)
}

/// Eigen-decomposition of a symmetric a: (n, n) by Jacobi's method: rotate
/// in one plane (p, q) at a time so that a_pq becomes 0, a ← Jᵀ a J, and
/// collect the rotations in V, until every a_pq is at rounding level.
pub fn jacobi_eigen(a: &ArrayRef2<f64>) -> Result<Eigen, InputError> {
    check_symmetric(a)?;
    let n = a.nrows();
    let mut a = a.to_owned();
    let mut v = Array2::<f64>::eye(n);
    // Entries at rounding level of the whole matrix count as zero.
    let tiny = f64::EPSILON * a.iter().map(|x| x * x).sum::<f64>().sqrt();
    for _ in 0..JACOBI_MAX_SWEEPS {
        let mut rotated = false;
        for p in 0..n {
            for q in p + 1..n {
                if a[[p, q]].abs() <= tiny {
                    continue;
                }
                let (c, s) = zeroing_rotation(a[[p, p]], a[[q, q]], a[[p, q]]);
                rotate(&mut a, &mut v, p, q, c, s);
                (a[[p, q]], a[[q, p]]) = (0.0, 0.0); // zero by construction
                rotated = true;
            }
        }
        if !rotated {
            break;
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&i, &j| a[[j, j]].total_cmp(&a[[i, i]]));
    Ok(Eigen {
        values: order.iter().map(|&i| a[[i, i]]).collect(),
        vectors: v.select(Axis(1), &order),
    })
}
// ANCHOR_END: jacobi_eigen

/// a ← Jᵀ a J and v ← v J for the rotation J that is the identity except
/// J_pp = J_qq = c, J_pq = s, J_qp = −s.
fn rotate(
    a: &mut Array2<f64>,
    v: &mut Array2<f64>,
    p: usize,
    q: usize,
    c: f64,
    s: f64,
) {
    let turn = |x: &mut f64, y: &mut f64| {
        (*x, *y) = (c * *x - s * *y, s * *x + c * *y);
    };
    let (mut col_p, mut col_q) = a.multi_slice_mut((s![.., p], s![.., q]));
    Zip::from(&mut col_p).and(&mut col_q).for_each(turn);
    let (mut row_p, mut row_q) = a.multi_slice_mut((s![p, ..], s![q, ..]));
    Zip::from(&mut row_p).and(&mut row_q).for_each(turn);
    let (mut col_p, mut col_q) = v.multi_slice_mut((s![.., p], s![.., q]));
    Zip::from(&mut col_p).and(&mut col_q).for_each(turn);
}

/// a is finite, non-empty, square and symmetric to rounding.
fn check_symmetric(a: &ArrayRef2<f64>) -> Result<(), InputError> {
    nonempty_finite("a", a)?;
    let (rows, cols) = a.dim();
    if rows != cols {
        return Err(InputError::ShapeMismatch {
            left: ("a", [rows, cols]),
            right: ("aᵀ", [cols, rows]),
            rule: "a symmetric matrix is square",
        });
    }
    let largest = a.iter().fold(0.0, |m: f64, x| m.max(x.abs()));
    for i in 0..rows {
        for j in i + 1..cols {
            if (a[[i, j]] - a[[j, i]]).abs() > 1e-12 * largest {
                return Err(InputError::BadParameter {
                    name: "a row of a that differs from its column",
                    value: i,
                    rule: "Jacobi's method needs a symmetric matrix",
                });
            }
        }
    }
    Ok(())
}

/// Eigenvalues of the Gram matrix at or below this times the largest are
/// taken as zero: forming KᵀK squares the condition number, so singular
/// values below about √ε of the largest are rounding, not signal.
pub const GRAM_TOL: f64 = 1e-13;

// ANCHOR: singular_values
/// Singular values of keys: (n, d), largest first, min(n, d) of them: the
/// square roots of the eigenvalues of the Gram matrix KᵀK: (d, d), or of
/// K Kᵀ: (n, n) when that is smaller; the two share their nonzero ones.
pub fn singular_values(
    keys: &ArrayRef2<f64>,
) -> Result<Array1<f64>, InputError> {
    nonempty_finite("keys", keys)?;
    let gram = if keys.ncols() <= keys.nrows() {
        keys.t().dot(keys)
    } else {
        keys.dot(&keys.t())
    };
    let eigen = jacobi_eigen(&gram)?;
    let largest = eigen.values[0];
    let count = keys.nrows().min(keys.ncols());
    Ok(eigen
        .values
        .iter()
        .take(count)
        .map(|&l| {
            if l > GRAM_TOL * largest {
                l.sqrt()
            } else {
                0.0
            }
        })
        .collect())
}
// ANCHOR_END: singular_values

// ANCHOR: effective_rank
/// Effective rank exp(H(p)) of keys: (n, d), where p = σ / Σσ are the
/// normalised singular values and H(p) = −Σ p_i ln p_i (Roy & Vetterli).
pub fn effective_rank(keys: &ArrayRef2<f64>) -> Result<f64, InputError> {
    let sigma = singular_values(keys)?;
    let total = sigma.sum();
    if total == 0.0 {
        return Err(InputError::BadParameter {
            name: "nonzero keys",
            value: 0,
            rule: "a set of zero keys has no effective rank",
        });
    }
    Ok(entropy(&(sigma / total)).exp())
}
// ANCHOR_END: effective_rank

// ANCHOR: correlated_keys
/// n unit keys in ℝ^d that share one direction c: k_i ∝ √ρ c + √(1−ρ) g_i,
/// with c and every g_i drawn from N(0, I). ρ = 0 gives independent random
/// keys, ρ = 1 n copies of one key; in between, cosines near ρ.
pub fn correlated_keys(
    rng: &mut impl Rng,
    n: usize,
    d: usize,
    rho: f64,
) -> Array2<f64> {
    assert!(
        (0.0..=1.0).contains(&rho),
        "rho must be in [0, 1], not {rho}"
    );
    let shared = randn(rng, 1, d);
    let own = randn(rng, n, d);
    unit_rows(&(&shared * rho.sqrt() + &own * (1.0 - rho).sqrt()))
}
// ANCHOR_END: correlated_keys

#[cfg(test)]
mod tests;
