//! The fast forms: the book's schedules of causal linear attention and of
//! the delta rule again, in f32 and written for speed, and f32 copies of
//! the forms the book shows only in f64, so that the benchmark times every
//! form at one precision. Each one computes what its f64 form of Part I or
//! II computes, and a test checks that it does, to f32 precision.
//! Appendix E ("Where speed comes from", `appendix::speed`) shows
//! and measures them.
//!
//! Two ideas make them fast. The recurrent forms allocate nothing inside
//! the loop over tokens: S, z and every scratch vector exist before the
//! first token, and each token updates them in place over plain slices the
//! compiler can vectorise. The chunkwise forms turn the work of C tokens
//! into a few matrix products, which ndarray hands to matrixmultiply's
//! sgemm kernels; those are the fastest code on a CPU.
//!
//! Shapes as in Part I: phi_q, phi_k: (N, p), v: (N, m), S: (m, p), row t
//! of a matrix is token t; outputs O: (N, m).

use crate::phi::elu_plus_one;
use crate::random::{randn, seeded};
use ndarray::{Array2, ArrayRef2, CowArray, Ix2};

/// `fn $wide(args) = $body;` makes `$wide`, which runs `$body(args)` on
/// the current path of [`simd::Path`]: compiled for AVX-512 or for AVX2
/// and FMA where the path says so (this CPU has them, asked at run time),
/// else as baseline x86-64 code. The compiler vectorises the loops of
/// `$body` (inlined) 16 or 8 floats at a time under those features; our
/// loops have to ask for them, as gemm and matrixmultiply do inside their
/// kernels. `= $fast, else $slow` runs `$fast` on both vector paths.
macro_rules! dispatched {
    ($(#[$doc:meta])* $vis:vis fn $wide:ident($($arg:ident: $ty:ty),* $(,)?)
        $(-> $ret:ty)? = $body:path;) => {
        dispatched! {
            $(#[$doc])*
            $vis fn $wide($($arg: $ty),*) $(-> $ret)? = $body, else $body;
        }
    };
    ($(#[$doc:meta])* $vis:vis fn $wide:ident($($arg:ident: $ty:ty),* $(,)?)
        $(-> $ret:ty)? = $fast:path, else $slow:path;) => {
        $(#[$doc])*
        $vis fn $wide($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f,avx2,fma")]
                unsafe fn avx512($($arg: $ty),*) $(-> $ret)? {
                    $fast($($arg),*)
                }
                #[target_feature(enable = "avx2,fma")]
                unsafe fn avx2($($arg: $ty),*) $(-> $ret)? {
                    $fast($($arg),*)
                }
                match $crate::fast::simd::Path::current() {
                    // SAFETY: `Path::current` names only a path whose
                    // features this CPU has (detected at run time).
                    $crate::fast::simd::Path::Avx512 => {
                        return unsafe { avx512($($arg),*) };
                    }
                    // SAFETY: as above, AVX2 and FMA were detected.
                    $crate::fast::simd::Path::Avx2Fma => {
                        return unsafe { avx2($($arg),*) };
                    }
                    $crate::fast::simd::Path::Scalar => {}
                }
            }
            $slow($($arg),*)
        }
    };
}

pub mod baselines;
pub mod decode;
pub mod delta_rule;
pub mod linear_attention;
pub mod production;
pub mod rules;
pub mod simd;
pub mod softmax;
pub mod threads;

pub use baselines::*;
pub use decode::*;
pub use delta_rule::*;
pub use linear_attention::*;
pub use simd::Path;
pub use softmax::*;
pub use threads::*;

/// Value rows per block: two AVX2 registers of f32 for each of a block's
/// running sums, few enough that all of them stay in registers.
const ROWS: usize = 16;

/// φ(Q), φ(K) and V in row-major (standard) layout, so that each row is a
/// plain slice: borrowed when they already are, as they usually are;
/// copied once if not.
fn row_major<'a>(
    phi_q: &'a ArrayRef2<f32>,
    phi_k: &'a ArrayRef2<f32>,
    v: &'a ArrayRef2<f32>,
) -> [CowArray<'a, f32, Ix2>; 3] {
    [phi_q, phi_k, v].map(|a| a.as_standard_layout())
}

/// The entries of a standard-layout matrix, row after row.
fn slice<'a>(a: &'a CowArray<'_, f32, Ix2>) -> &'a [f32] {
    a.as_slice().expect("standard layout")
}

/// x / Σ x into `out`, for a row of positive features.
fn sum_normalise_into(
    x: impl IntoIterator<Item = f32> + Clone,
    out: &mut [f32],
) {
    let total: f32 = x.clone().into_iter().sum();
    out.iter_mut().zip(x).for_each(|(o, x)| *o = x / total);
}

/// Adds `ops` floating-point operations to [`counted`] in test builds, so
/// that a test can compare the arithmetic a form performs with the count
/// Appendix E prints; nothing at all in other builds.
#[inline(always)]
fn tally(ops: usize) {
    #[cfg(test)]
    counted::add(ops);
    let _ = ops;
}

/// One call of the matrix-product kernel, of `ops` operations: both
/// counted by [`counted`] in test builds; nothing at all in other builds.
#[inline(always)]
fn tally_product(ops: usize) {
    #[cfg(test)]
    counted::add_product();
    tally(ops);
}

/// C ← α A B + β C at f32, its 2·m·k·n operations tallied: through
/// [`simd::product`] (gemm on the AVX-512 path, else ndarray's
/// matrixmultiply).
fn general_mat_mul(
    alpha: f32,
    a: &ArrayRef2<f32>,
    b: &ArrayRef2<f32>,
    beta: f32,
    c: &mut ArrayRef2<f32>,
) {
    tally_product(2 * a.nrows() * a.ncols() * b.ncols());
    simd::product(alpha, a, b, beta, c);
}

/// A B at f32, as [`general_mat_mul`] computes it, its operations tallied.
fn mat_mul(a: &ArrayRef2<f32>, b: &ArrayRef2<f32>) -> Array2<f32> {
    let mut c = Array2::zeros((a.nrows(), b.ncols()));
    general_mat_mul(1.0, a, b, 0.0, &mut c);
    c
}

/// x −= g y, entry by entry, its 2·len operations tallied.
fn sub_scaled(x: &mut [f32], g: f32, y: &[f32]) {
    tally(2 * x.len());
    x.iter_mut().zip(y).for_each(|(a, &b)| *a -= g * b);
}

/// The operations [`tally`] reports on this thread (matrix products,
/// substitutions, the recurrences' multiply–adds), and the calls of the
/// matrix-product kernel, in test builds only.
#[cfg(test)]
pub(crate) mod counted {
    use std::cell::Cell;
    thread_local!(static OPS: Cell<usize> = const { Cell::new(0) });
    thread_local!(static PRODUCTS: Cell<usize> = const { Cell::new(0) });

    pub(crate) fn add(ops: usize) {
        OPS.with(|c| c.set(c.get() + ops));
    }

    pub(crate) fn add_product() {
        PRODUCTS.with(|c| c.set(c.get() + 1));
    }

    /// The calls of the matrix-product kernel `f` makes, counted.
    pub(crate) fn products<R>(f: impl FnOnce() -> R) -> (R, usize) {
        let before = PRODUCTS.with(Cell::get);
        let out = f();
        (out, PRODUCTS.with(Cell::get) - before)
    }

    /// The operations `f` performs, counted.
    pub(crate) fn ops<R>(f: impl FnOnce() -> R) -> (R, usize) {
        let before = OPS.with(Cell::get);
        let out = f();
        (out, OPS.with(Cell::get) - before)
    }
}

/// An f64 matrix rounded to f32.
pub fn to_f32(a: &ArrayRef2<f64>) -> Array2<f32> {
    a.mapv(|x| x as f32)
}

/// An f32 matrix widened to f64 (exactly).
pub fn to_f64(a: &ArrayRef2<f32>) -> Array2<f64> {
    a.mapv(f64::from)
}

/// The inputs of the appendix's experiments at length n: φ = elu+1 of
/// random q and k, and random v, in f64 (q, k: (n, d), v: (n, m)).
pub fn random_inputs(
    seed: u64,
    n: usize,
    d: usize,
    m: usize,
) -> [Array2<f64>; 3] {
    let mut rng = seeded(seed);
    let phi_q = elu_plus_one(&randn(&mut rng, n, d));
    let phi_k = elu_plus_one(&randn(&mut rng, n, d));
    [phi_q, phi_k, randn(&mut rng, n, m)]
}

#[cfg(test)]
mod tests;
