//! The machine's own ceiling: single-thread f32 matrix products through
//! the `gemm` crate, which picks its kernel at run time from the vectors
//! the CPU has, beside ndarray's `dot` (matrixmultiply), whose widest
//! kernel is AVX2+FMA. The bench compares every form with the better.

use listings::ndarray::Array2;

/// C = A B on one thread through `gemm`: a: (m, k), b: (k, n), both in
/// row-major order (as `to_f32` makes them). Panics on shapes that do
/// not chain, which the bench never passes.
pub fn sgemm(a: &Array2<f32>, b: &Array2<f32>) -> Array2<f32> {
    let ((m, k), (k2, n)) = (a.dim(), b.dim());
    assert_eq!(k, k2, "A is {m} × {k} but B is {k2} × {n}");
    let (a, b) = (a.as_standard_layout(), b.as_standard_layout());
    let mut c = Array2::<f32>::zeros((m, n));
    // SAFETY: the three pointers cover m × k, k × n and m × n row-major
    // f32 matrices (column stride 1, row stride the row length), which
    // live until the call returns; C does not overlap A or B.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            1,
            n as isize,
            false, // C is not read: C = 0·C + 1·A B
            a.as_ptr(),
            1,
            k as isize,
            b.as_ptr(),
            1,
            n as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
    c
}

/// The vector instruction sets this CPU offers, widest first, as the
/// bench names them; detected at run time.
pub fn vector_sets() -> Vec<&'static str> {
    let mut sets = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            sets.push("AVX-512F");
        }
        if std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma")
        {
            sets.push("AVX2+FMA");
        }
    }
    #[cfg(target_arch = "aarch64")]
    sets.push("NEON");
    sets
}

#[cfg(test)]
mod tests {
    use super::*;
    use listings::fast::{random_inputs, to_f32};

    #[test]
    fn gemm_products_equal_ndarrays_to_f32_rounding() {
        // Square and oblong, small and past the kernels' block sizes.
        for (m, k, n) in [(1, 1, 1), (3, 5, 2), (64, 64, 64), (130, 70, 257)] {
            let a = to_f32(&random_inputs(4, m, k, 1)[0]); // (m, k)
            let b = to_f32(&random_inputs(5, k, n, 1)[0]); // (k, n)
            let (ours, theirs) = (sgemm(&a, &b), a.dot(&b));
            let scale = theirs.iter().fold(1.0f32, |s, x| s.max(x.abs()));
            let worst =
                (&ours - &theirs).iter().fold(0.0f32, |w, x| w.max(x.abs()));
            assert!(worst <= 1e-5 * scale * k as f32, "{m}×{k}×{n}: {worst}");
        }
    }
}
