//! Linear-algebra helpers every chapter uses: lengths, relative errors
//! between two forms of one output, orthonormal keys, and the dot product
//! and y += a x over the slices the trained models keep their rows in.

use crate::input::InputError;
use crate::random::standard_normal;
use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2, s};
use rand::Rng;

/// Euclidean length of a vector.
pub fn norm(x: &ArrayRef1<f64>) -> f64 {
    x.dot(x).sqrt()
}

/// ‖a_i − b_i‖ / ‖b_i‖ for each row i.
pub fn relative_errors(a: &ArrayRef2<f64>, b: &ArrayRef2<f64>) -> Array1<f64> {
    assert_eq!(a.dim(), b.dim(), "compare reads and values of one shape");
    a.rows()
        .into_iter()
        .zip(b.rows())
        .map(|(a, b)| norm(&(&a - &b)) / norm(&b))
        .collect()
}

/// max_t ‖a_t − b_t‖ / ‖b_t‖ over the rows: how far apart two forms of the
/// same outputs are, relative to the size of each output.
pub fn worst_row_relative_difference(
    a: &ArrayRef2<f64>,
    b: &ArrayRef2<f64>,
) -> f64 {
    assert_eq!(a.dim(), b.dim(), "compare outputs of one shape");
    a.rows()
        .into_iter()
        .zip(b.rows())
        .map(|(a, b)| norm(&(&a - &b)) / norm(&b))
        .fold(0.0, f64::max)
}

// ANCHOR: orthonormal_keys
/// n orthonormal keys in ℝ^d as the rows of K: (n, d), so K Kᵀ = I. Only
/// d orthonormal vectors fit in ℝ^d: n > d is an error naming n.
pub fn orthonormal_keys(
    rng: &mut impl Rng,
    n: usize,
    d: usize,
) -> Result<Array2<f64>, InputError> {
    if n > d {
        let rule = "only d orthonormal keys fit in ℝ^d, for keys of width d";
        return Err(InputError::BadParameter {
            name: "n",
            value: n,
            rule,
        });
    }
    Ok(gram_schmidt(rng, n, d))
}

/// min(n, d) orthonormal rows in ℝ^d: random Gaussian vectors made
/// orthogonal one by one (Gram–Schmidt).
pub(crate) fn gram_schmidt(
    rng: &mut impl Rng,
    n: usize,
    d: usize,
) -> Array2<f64> {
    let n = n.min(d);
    let mut keys = Array2::zeros((n, d));
    let mut found = 0;
    while found < n {
        let mut k = Array1::from_shape_simple_fn(d, || standard_normal(rng));
        for b in keys.slice(s![..found, ..]).rows() {
            let along = k.dot(&b);
            k.scaled_add(-along, &b); // remove the part along each key so far
        }
        let len = norm(&k);
        if len > 1e-8 {
            keys.row_mut(found).assign(&(k / len));
            found += 1;
        }
    }
    keys
}
// ANCHOR_END: orthonormal_keys

/// a · b over two slices of the same length (the trained models' rows).
pub fn dot<F: num_traits::Float>(a: &[F], b: &[F]) -> F {
    a.iter().zip(b).fold(F::zero(), |s, (&x, &y)| s + x * y)
}

/// y += a x, over slices of the same length.
pub fn axpy<F: num_traits::Float>(a: F, x: &[F], y: &mut [F]) {
    for (y, &x) in y.iter_mut().zip(x) {
        *y = *y + a * x;
    }
}
