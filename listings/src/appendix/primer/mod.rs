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
/// `vectors`, in the same order: M = vectors · diag(values) · vectorsᵀ.
pub struct Eigen {
    pub values: Array1<f64>,
    pub vectors: Array2<f64>,
}

/// Sweeps of [`jacobi_eigen`] before it gives up; it needs about ten.
pub const JACOBI_MAX_SWEEPS: usize = 60;

// ANCHOR: jacobi_eigen
/// The rotation (cos ϑ, sin ϑ) in the plane (i, j) that zeroes m_ij of
/// Jᵀ M J, from m_ii, m_jj and m_ij ≠ 0: tan ϑ is the smaller root.
fn zeroing_rotation(m_ii: f64, m_jj: f64, m_ij: f64) -> (f64, f64) {
    let theta = (m_jj - m_ii) / (2.0 * m_ij);
    let tan = theta.signum() / (theta.abs() + (theta * theta + 1.0).sqrt());
    let cos = 1.0 / (tan * tan + 1.0).sqrt();
    (cos, tan * cos)
}

/// Eigen-decomposition of a symmetric M: (n, n) by Jacobi's method: rotate
/// in one plane (i, j) at a time so that m_ij becomes 0, M ← Jᵀ M J, and
/// collect the rotations in `vectors`, until every m_ij is at rounding
/// level.
pub fn jacobi_eigen(m: &ArrayRef2<f64>) -> Result<Eigen, InputError> {
    check_symmetric(m)?;
    let n = m.nrows();
    let mut m = m.to_owned();
    let mut vectors = Array2::<f64>::eye(n);
    // Entries at rounding level of the whole matrix count as zero.
    let tiny = f64::EPSILON * m.iter().map(|x| x * x).sum::<f64>().sqrt();
    for _ in 0..JACOBI_MAX_SWEEPS {
        let mut rotated = false;
        for i in 0..n {
            for j in i + 1..n {
                if m[[i, j]].abs() <= tiny {
                    continue;
                }
                let (cos, sin) =
                    zeroing_rotation(m[[i, i]], m[[j, j]], m[[i, j]]);
                rotate(&mut m, &mut vectors, i, j, cos, sin);
                (m[[i, j]], m[[j, i]]) = (0.0, 0.0); // zero by construction
                rotated = true;
            }
        }
        if !rotated {
            break;
        }
    }
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| m[[b, b]].total_cmp(&m[[a, a]]));
    Ok(Eigen {
        values: order.iter().map(|&i| m[[i, i]]).collect(),
        vectors: vectors.select(Axis(1), &order),
    })
}
// ANCHOR_END: jacobi_eigen

/// M ← Jᵀ M J and vectors ← vectors J for the rotation J that is the
/// identity except J_ii = J_jj = cos, J_ij = sin, J_ji = −sin.
fn rotate(
    m: &mut Array2<f64>,
    vectors: &mut Array2<f64>,
    i: usize,
    j: usize,
    cos: f64,
    sin: f64,
) {
    let turn = |x: &mut f64, y: &mut f64| {
        (*x, *y) = (cos * *x - sin * *y, sin * *x + cos * *y);
    };
    let (mut col_i, mut col_j) = m.multi_slice_mut((s![.., i], s![.., j]));
    Zip::from(&mut col_i).and(&mut col_j).for_each(turn);
    let (mut row_i, mut row_j) = m.multi_slice_mut((s![i, ..], s![j, ..]));
    Zip::from(&mut row_i).and(&mut row_j).for_each(turn);
    let (mut col_i, mut col_j) =
        vectors.multi_slice_mut((s![.., i], s![.., j]));
    Zip::from(&mut col_i).and(&mut col_j).for_each(turn);
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
/// Effective rank exp(−Σ σ̂_i ln σ̂_i) of keys: (n, d), where σ̂ = σ / Σσ
/// are the normalised singular values: the exponential of their entropy
/// (Roy & Vetterli).
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
/// n unit keys in ℝ^d that share one direction k₀:
/// k_i ∝ √ρ k₀ + √(1−ρ) g_i, with k₀ and every g_i drawn from N(0, I),
/// one row each. ρ = 0 gives independent random
/// keys, ρ = 1 n copies of one key; in between, cosines near ρ. A ρ
/// outside [0, 1] (or NaN) is an error naming it.
pub fn correlated_keys(
    rng: &mut impl Rng,
    n: usize,
    d: usize,
    rho: f64,
) -> Result<Array2<f64>, InputError> {
    if !(0.0..=1.0).contains(&rho) {
        let (name, at, allowed) = ("ρ", [0, 0], "[0, 1]");
        return Err(InputError::Outside {
            name,
            at,
            value: rho,
            allowed,
        });
    }
    let shared = randn(rng, 1, d);
    let own = randn(rng, n, d);
    Ok(unit_rows(
        &(&shared * rho.sqrt() + &own * (1.0 - rho).sqrt()),
    ))
}
// ANCHOR_END: correlated_keys

#[cfg(test)]
mod tests;
