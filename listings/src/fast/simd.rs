//! The vectors this CPU has, asked once at run time, and the fused loops
//! of the f32 forms, each written once and compiled three times: for
//! AVX-512 (16 floats a register), for AVX2 with FMA (8 floats, fused
//! multiply–adds) and as baseline x86-64 code (the scalar path: SSE2,
//! which every x86-64 CPU has, and no fused multiply–add). Nothing is
//! compiled for a chosen CPU (no `target-cpu=native`): one binary runs on
//! every machine and takes the widest path the machine offers.
//!
//! The loops are plain Rust over fixed lanes, which the compiler turns
//! into vector instructions under each path's features; the paths test
//! (`fast::tests::paths`) checks every path this CPU runs against the
//! scalar one.

use super::softmax::{exp2_minus_sum, largest};
use ndarray::{Array2, ArrayRef2, Zip};
use std::cell::Cell;
use std::sync::OnceLock;

/// One compilation of the fused loops.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Path {
    /// AVX-512F (with AVX2 and FMA): 16 floats a register.
    Avx512,
    /// AVX2 and FMA: 8 floats a register, multiply–adds fused.
    Avx2Fma,
    /// Baseline x86-64 (or any other architecture): no features assumed.
    Scalar,
}

thread_local! {
    /// The path a test or the bench asked for on this thread, if any.
    static CHOSEN: Cell<Option<Path>> = const { Cell::new(None) };
}

impl Path {
    /// Every path, widest first.
    pub const ALL: [Path; 3] = [Path::Avx512, Path::Avx2Fma, Path::Scalar];

    /// The name the bench and the tests print.
    pub fn name(self) -> &'static str {
        match self {
            Path::Avx512 => "AVX-512F",
            Path::Avx2Fma => "AVX2+FMA",
            Path::Scalar => "scalar",
        }
    }

    /// Whether this CPU has every feature the path assumes (asked at run
    /// time).
    pub fn runs_here(self) -> bool {
        #[cfg(target_arch = "x86_64")]
        {
            use std::arch::is_x86_feature_detected as has;
            let avx2 = has!("avx2") && has!("fma");
            match self {
                Path::Avx512 => avx2 && has!("avx512f"),
                Path::Avx2Fma => avx2,
                Path::Scalar => true,
            }
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            self == Path::Scalar
        }
    }

    /// The widest path this CPU runs, asked once and remembered.
    pub fn detect() -> Path {
        static DETECTED: OnceLock<Path> = OnceLock::new();
        *DETECTED.get_or_init(|| {
            let mut paths = Path::ALL.into_iter();
            paths.find(|p| p.runs_here()).unwrap_or(Path::Scalar)
        })
    }

    /// The paths this CPU runs, widest first (the scalar path always).
    pub fn available() -> Vec<Path> {
        Path::ALL.into_iter().filter(|p| p.runs_here()).collect()
    }

    /// The paths this CPU lacks, widest first.
    pub fn absent() -> Vec<Path> {
        Path::ALL.into_iter().filter(|p| !p.runs_here()).collect()
    }

    /// The path the f32 forms take on this thread: the one `forced` set,
    /// else the widest this CPU runs.
    #[inline]
    pub fn current() -> Path {
        CHOSEN.with(Cell::get).unwrap_or_else(Path::detect)
    }

    /// Runs `f` with every fused loop and product of this thread on this
    /// path; `None`, without running `f`, if this CPU lacks the path.
    pub fn forced<R>(self, f: impl FnOnce() -> R) -> Option<R> {
        if !self.runs_here() {
            return None;
        }
        let before = CHOSEN.with(|c| c.replace(Some(self)));
        let out = f();
        CHOSEN.with(|c| c.set(before));
        Some(out)
    }
}

/// Floats of the kernels' running sums: one AVX-512 register, two AVX2
/// ones, four SSE ones; enough independent sums to hide the latency of
/// the additions on every path.
pub const LANES: usize = 16;

dispatched! {
    /// aᵀb on the current path.
    pub fn dot(a: &[f32], b: &[f32]) -> f32 =
        dot_lanes::<true>, else dot_lanes::<false>;
}

dispatched! {
    /// y += α x on the current path.
    pub fn axpy(alpha: f32, x: &[f32], y: &mut [f32]) = axpy_body;
}

dispatched! {
    /// The rank-1 update S += u kᵀ of a state S: (u.len(), k.len()) kept
    /// by rows, on the current path.
    pub fn rank_one(s: &mut [f32], u: &[f32], k: &[f32]) = rank_one_body;
}

dispatched! {
    /// The online-softmax step of one query over a row of scores, on the
    /// current path: see [`softmax_read_body`].
    pub fn softmax_read(
        scores: &mut [f32],
        values: &[f32],
        out: &mut [f32],
    ) -> f32 = softmax_read_body::<true>, else softmax_read_body::<false>;
}

dispatched! {
    /// x ← 2^(x − μ) and their sum, on the current path.
    pub fn exp2_minus(x: &mut [f32], mu: f32) -> f32 =
        exp2_minus_sum::<true>, else exp2_minus_sum::<false>;
}

/// a + b c, fused into one rounding where `FMA` (only on paths with FMA:
/// elsewhere `mul_add` would be a library call).
#[inline(always)]
pub fn madd<const FMA: bool>(a: f32, b: f32, c: f32) -> f32 {
    if FMA { b.mul_add(c, a) } else { a + b * c }
}

/// aᵀb in `LANES` running sums.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // index loops over lanes vectorise
pub fn dot_lanes<const FMA: bool>(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let (mut a_l, mut b_l) = (a.chunks_exact(LANES), b.chunks_exact(LANES));
    for (x, y) in (&mut a_l).zip(&mut b_l) {
        for l in 0..LANES {
            lanes[l] = madd::<FMA>(lanes[l], x[l], y[l]);
        }
    }
    let tail = a_l.remainder().iter().zip(b_l.remainder());
    let tail = tail.fold(0.0f32, |s, (x, y)| madd::<FMA>(s, *x, *y));
    lanes.iter().sum::<f32>() + tail
}

/// y += α x.
#[inline(always)]
pub fn axpy_body(alpha: f32, x: &[f32], y: &mut [f32]) {
    y.iter_mut().zip(x).for_each(|(y, &x)| *y += alpha * x);
}

/// S += u kᵀ, S by rows of k.len() floats.
#[inline(always)]
pub fn rank_one_body(s: &mut [f32], u: &[f32], k: &[f32]) {
    for (s_i, &u_i) in s.chunks_exact_mut(k.len()).zip(u) {
        axpy_body(u_i, k, s_i);
    }
}

/// The read of one query from a row of base-2 scores s (finite, already
/// checked) and their values (rows of out.len() floats): s ← 2^(s − max s),
/// ℓ = Σ s, out = Σ_j (s_j / ℓ) v_j; returns ℓ.
#[inline(always)]
pub fn softmax_read_body<const FMA: bool>(
    scores: &mut [f32],
    values: &[f32],
    out: &mut [f32],
) -> f32 {
    let total = exp2_minus_sum::<FMA>(scores, largest(scores));
    out.fill(0.0);
    for (&w, v_j) in scores.iter().zip(values.chunks_exact(out.len())) {
        axpy_body(w / total, v_j, out);
    }
    total
}

/// Products smaller than this many multiply–adds (m·k·n) stay with
/// matrixmultiply on every path, where gemm's packing would cost more
/// than its wider kernel saves.
pub const GEMM_FROM: usize = 16 * 16 * 16;

/// C ← α A B + β C at f32 on the current path: on the AVX-512 path
/// through `gemm` (its AVX-512 kernel, one thread), else ndarray's
/// `general_mat_mul` (matrixmultiply, AVX2+FMA at most).
/// a: (m, k), b: (k, n), c: (m, n); panics on shapes that do not chain.
pub fn product(
    alpha: f32,
    a: &ArrayRef2<f32>,
    b: &ArrayRef2<f32>,
    beta: f32,
    c: &mut ArrayRef2<f32>,
) {
    let ((m, k), (k2, n)) = (a.dim(), b.dim());
    assert!(
        k == k2 && c.dim() == (m, n),
        "A is {m} × {k}, B {k2} × {n}, C {:?}",
        c.dim()
    );
    if Path::current() != Path::Avx512 || m * k * n < GEMM_FROM {
        return ndarray::linalg::general_mat_mul(alpha, a, b, beta, c);
    }
    let [a_r, a_c] = [a.strides()[0], a.strides()[1]];
    let [b_r, b_c] = [b.strides()[0], b.strides()[1]];
    let [c_r, c_c] = [c.strides()[0], c.strides()[1]];
    // SAFETY: each pointer and its strides (in floats) describe a live
    // ndarray view of the stated shape; C is borrowed mutably, so it
    // overlaps neither A nor B; gemm computes C = β_gemm C + α_gemm A B
    // (its names: `alpha` scales C, read only if `read_dst`).
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            c.as_mut_ptr(),
            c_c,
            c_r,
            beta != 0.0,
            a.as_ptr(),
            a_c,
            a_r,
            b.as_ptr(),
            b_c,
            b_r,
            beta,
            alpha,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

dispatched! {
    /// x ← eˣ for every entry, on the current path (see [`exp`]).
    pub fn exp_in_place(x: &mut [f32]) =
        exp_in_place_body::<true>, else exp_in_place_body::<false>;
}

/// x ← eˣ for every entry, with [`exp`].
#[inline(always)]
pub fn exp_in_place_body<const FMA: bool>(x: &mut [f32]) {
    x.iter_mut().for_each(|x| *x = exp::<FMA>(*x));
}

/// e^(sign · x) at f32 for every entry of an f64 matrix (each exponent
/// rounded to f32 first), on the current path: the gates' decays of the
/// chunkwise rules.
pub fn exps(x: &ArrayRef2<f64>, sign: f64) -> Array2<f32> {
    let mut out = x.mapv(|x| (sign * x) as f32);
    exp_in_place(out.as_slice_memory_order_mut().expect("a new array"));
    out
}

dispatched! {
    /// x ← ln x for every entry, on the current path (see [`ln`]).
    pub fn ln_in_place(x: &mut [f32]) =
        ln_in_place_body::<true>, else ln_in_place_body::<false>;
}

/// x ← ln x for every entry, with [`ln`].
#[inline(always)]
pub fn ln_in_place_body<const FMA: bool>(x: &mut [f32]) {
    x.iter_mut().for_each(|x| *x = ln::<FMA>(*x));
}

/// ln a at f32 for every entry of an f64 matrix of gates in (0, 1], each
/// rounded to f32 first, on the current path: the log-gates of the f32
/// rules. A gate below f32's normal range (which rounds to a subnormal
/// or to 0) takes f64's logarithm instead.
pub fn lns(a: &ArrayRef2<f64>) -> Array2<f32> {
    let mut out = a.mapv(|a| a as f32);
    ln_in_place(out.as_slice_memory_order_mut().expect("a new array"));
    let tiny = f64::from(f32::MIN_POSITIVE);
    Zip::from(&mut out).and(a).for_each(|o, &a| {
        if a < tiny {
            *o = a.ln() as f32;
        }
    });
    out
}

/// ln x in f32 without branches, for normal x > 0, so that loops over it
/// vectorise: x = 2ᵉ μ with μ in [√½, √2) (e from the exponent bits),
/// ln μ = 2 atanh s with s = (μ − 1)/(μ + 1), |s| ≤ 0.172, by its odd
/// series to s⁷ (truncation below 1e-7), e ln 2 in two parts. Relative
/// error below 3e-7 (tested against f64); a subnormal, 0 or a negative x
/// gives a wrong number, so callers keep such x away (see [`lns`]).
#[inline(always)]
pub fn ln<const FMA: bool>(x: f32) -> f32 {
    const HALF_ROOT2: u32 = 0x3f35_04f3; // the bits of √½
    const LN2_HI: f32 = 0.693_359_4; // few bits: e · LN2_HI is exact
    const LN2_LO: f32 = -2.121_944_4e-4; // ln 2 − LN2_HI
    const ATANH: [f32; 4] = [1.0 / 7.0, 1.0 / 5.0, 1.0 / 3.0, 1.0];
    let bits = x.to_bits();
    // The exponent of x / √½, rounded down: μ = x / 2ᵉ lies in [√½, √2).
    let e = (bits.wrapping_sub(HALF_ROOT2) as i32) >> 23;
    let mu = f32::from_bits(bits.wrapping_sub((e as u32) << 23));
    let s = (mu - 1.0) / (mu + 1.0);
    let s2 = s * s;
    let mut p = ATANH[0];
    for c in &ATANH[1..] {
        p = madd::<FMA>(*c, p, s2);
    }
    let e = e as f32;
    madd::<FMA>(madd::<FMA>(2.0 * s * p, e, LN2_LO), e, LN2_HI)
}

/// eˣ in f32 without branches, so that loops over it vectorise:
/// x = k ln 2 + r with |r| ≤ ln 2 / 2 (ln 2 in two parts, so that k ln 2 is exact),
/// eʳ by its Taylor polynomial of degree 7 (truncation below 1e-8), 2ᵏ
/// from the exponent bits. 0 below f32's normal range (x < −87.33, where
/// a subnormal would only slow the sums it joins), x above 88 taken as 88;
/// relative error below 3e-7 (tested against f64).
#[inline(always)]
pub fn exp<const FMA: bool>(x: f32) -> f32 {
    const ROUND: f32 = 12_582_912.0; // 1.5 · 2²³: adding it rounds to an integer
    const SMALLEST: f32 = -87.336_54; // ln of f32's least normal number
    const LN2_HI: f32 = 0.693_359_4; // few bits: k · LN2_HI is exact
    const LN2_LO: f32 = -2.121_944_4e-4; // ln 2 − LN2_HI
    const TAYLOR: [f32; 7] = [
        1.0 / 5040.0,
        1.0 / 720.0,
        1.0 / 120.0,
        1.0 / 24.0,
        1.0 / 6.0,
        0.5,
        1.0,
    ];
    let y = x.clamp(SMALLEST, 88.0);
    let rounded = y * std::f32::consts::LOG2_E + ROUND;
    let k = rounded - ROUND;
    let r = madd::<FMA>(madd::<FMA>(y, -k, LN2_HI), -k, LN2_LO);
    let mut p = TAYLOR[0];
    for c in &TAYLOR[1..] {
        p = madd::<FMA>(*c, p, r);
    }
    p = madd::<FMA>(1.0, p, r);
    // The low bits of `rounded` hold k; 2ᵏ has exponent field k + 127.
    let bits = rounded.to_bits().wrapping_sub(ROUND.to_bits() - 127) << 23;
    let e = p * f32::from_bits(bits);
    if x < SMALLEST { 0.0 } else { e }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::after::family::{random_qkv, six_rules};
    use crate::after::production::{
        kda_rule, log_uniform_gates, random_delta_product, random_rwkv7,
    };
    use crate::fast::production::{
        delta_product_chunkwise_f32, delta_product_recurrent_f32,
        rwkv7_chunkwise_f32, rwkv7_recurrent_f32,
    };
    use crate::fast::rules::{rule_chunkwise_f32, rule_recurrent_f32};
    use crate::fast::*;
    use crate::linalg::worst_row_relative_difference;
    use crate::random::{randn, seeded};
    use ndarray::{Array1, Array2};
    use rand::Rng;

    /// The paths this CPU runs other than the scalar one, after printing
    /// which paths are compared and which this CPU lacks (so not tested
    /// here, and said so).
    fn wide_paths() -> Vec<Path> {
        let names = |p: Vec<Path>| {
            p.iter().map(|p| p.name()).collect::<Vec<_>>().join(", ")
        };
        println!(
            "paths this CPU runs, each compared with the scalar path: {}; absent \
             on this CPU, so not tested here: {}",
            names(Path::available()),
            match Path::absent() {
                a if a.is_empty() => "none".to_string(),
                a => names(a),
            }
        );
        Path::available()
            .into_iter()
            .filter(|&p| p != Path::Scalar)
            .collect()
    }

    /// Lengths around the lane widths: not multiples of 16 or of 8, and
    /// multiples of both.
    const LENGTHS: [usize; 9] = [1, 5, 8, 13, 16, 23, 40, 64, 100];

    fn draw(seed: u64, len: usize) -> Vec<f32> {
        let mut rng = seeded(seed);
        (0..len).map(|_| rng.random_range(-2.0f32..2.0)).collect()
    }

    fn relative(a: &[f32], b: &[f32], scale: f32) -> f32 {
        let worst = a.iter().zip(b).map(|(x, y)| (x - y).abs());
        worst.fold(0.0, f32::max) / scale.max(f32::MIN_POSITIVE)
    }

    /// Each entry of `got` is within `tol` of `want`, relative to the
    /// largest magnitude of `want` (results of sums, which round
    /// differently in lanes of 16, 8 and 4).
    fn close(what: &str, path: Path, got: &[f32], want: &[f32], tol: f32) {
        let scale = want.iter().fold(0.0f32, |s, x| s.max(x.abs()));
        let diff = relative(got, want, scale);
        assert!(diff <= tol, "{what} on {}: {diff:e}", path.name());
    }

    #[test]
    fn every_dispatched_kernel_gives_the_scalar_paths_result_on_each_path() {
        // dot, y += a x, S += u kᵀ, the online-softmax read of one query,
        // 2^(x − μ) with its sum, eˣ and a matrix product, over random
        // inputs at every length of LENGTHS: each path within 1e-6 of the
        // scalar path (relative to the largest result; 2e-6 for the
        // softmax read and the product, sums of many terms).
        let on = |path: Path, f: &dyn Fn() -> Vec<f32>| {
            path.forced(f).expect("a path this CPU runs")
        };
        for path in wide_paths() {
            for (seed, &n) in LENGTHS.iter().enumerate() {
                let seed = seed as u64;
                let (a, b) = (draw(seed, n), draw(seed + 50, n));
                let dot_of = || vec![dot(&a, &b)];
                let abs: f32 =
                    a.iter().zip(&b).map(|(x, y)| (x * y).abs()).sum();
                let d = relative(
                    &on(path, &dot_of),
                    &on(Path::Scalar, &dot_of),
                    abs,
                );
                assert!(d <= 1e-6, "dot n {n} on {}: {d:e}", path.name());
                let axpy_of = || {
                    let mut y = b.clone();
                    axpy(0.7, &a, &mut y);
                    y
                };
                let want = on(Path::Scalar, &axpy_of);
                close("axpy", path, &on(path, &axpy_of), &want, 1e-6);
                let u = draw(seed + 100, 7);
                let rank_of = || {
                    let mut s = draw(seed + 200, 7 * n);
                    rank_one(&mut s, &u, &a);
                    s
                };
                let want = on(Path::Scalar, &rank_of);
                close("rank one", path, &on(path, &rank_of), &want, 1e-6);
                let values = draw(seed + 300, 3 * n);
                let read_of = || {
                    let (mut s, mut out) = (a.clone(), vec![0.0; 3]);
                    let total = softmax_read(&mut s, &values, &mut out);
                    out.push(total);
                    out
                };
                let want = on(Path::Scalar, &read_of);
                close("softmax read", path, &on(path, &read_of), &want, 2e-6);
                let exp2_of = || {
                    let mut x = a.clone();
                    let total = exp2_minus(&mut x, 2.0);
                    x.push(total);
                    x
                };
                let want = on(Path::Scalar, &exp2_of);
                close("2^(x − μ)", path, &on(path, &exp2_of), &want, 1e-6);
                let exp_of = || {
                    let mut x: Vec<f32> = a.iter().map(|x| 20.0 * x).collect();
                    exp_in_place(&mut x);
                    x
                };
                let (got, want) =
                    (on(path, &exp_of), on(Path::Scalar, &exp_of));
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (g - w).abs() <= 1e-6 * w,
                        "exp on {}",
                        path.name()
                    );
                }
                let x = Array2::from_shape_vec((n, 1), a.clone()).unwrap();
                let big = to_f32(&randn(&mut seeded(seed), 40, n));
                let product_of = || {
                    let mut c = Array2::from_elem((40, 1), 1.0f32);
                    product(0.5, &big, &x, 2.0, &mut c);
                    c.into_raw_vec_and_offset().0
                };
                let want = on(Path::Scalar, &product_of);
                close("product", path, &on(path, &product_of), &want, 2e-6);
            }
        }
    }

    #[test]
    fn the_vectorised_exp_is_within_3e_7_of_the_true_exponential() {
        // On every path this CPU runs: e^x for x across f32's normal range
        // (−87.3 to 88) within 3e-7 of f64's exp, relative; 0 below it.
        let xs: Vec<f32> =
            (0..=17_500).map(|i| -87.3 + 0.01 * i as f32).collect();
        for path in Path::available() {
            let got = path
                .forced(|| {
                    let mut x = xs.clone();
                    exp_in_place(&mut x);
                    x
                })
                .expect("a path this CPU runs");
            for (&x, &e) in xs.iter().zip(&got) {
                let want = f64::from(x).exp();
                let err = ((f64::from(e) - want) / want).abs();
                assert!(err < 3e-7, "e^{x} on {}: {err:e}", path.name());
            }
            let below = path.forced(|| {
                let mut x = [-87.5f32, -100.0, -1e30];
                exp_in_place(&mut x);
                x
            });
            assert_eq!(below, Some([0.0; 3]), "on {}", path.name());
        }
    }

    #[test]
    fn the_vectorised_ln_is_within_3e_7_of_the_true_logarithm() {
        // On every path this CPU runs: ln x for x across f32's normal
        // range, from its least normal number to its largest, and for
        // gates just below 1, within 3e-7 of f64's ln, relative; a gate
        // below f32's normal range takes f64's ln through `lns`.
        let mut xs: Vec<f32> = (0..=25_400)
            .map(|i| f32::MIN_POSITIVE * 2f32.powf(0.01 * i as f32))
            .collect();
        xs.extend((1..5_000).map(|i| 1.0 - i as f32 * f32::EPSILON / 2.0));
        xs.extend([f32::MIN_POSITIVE, 0.5, 2.0, f32::MAX]);
        for path in Path::available() {
            let got = path
                .forced(|| {
                    let mut x = xs.clone();
                    ln_in_place(&mut x);
                    x
                })
                .expect("a path this CPU runs");
            for (&x, &l) in xs.iter().zip(&got) {
                let want = f64::from(x).ln();
                let err = (f64::from(l) - want).abs();
                assert!(
                    err <= 3e-7 * want.abs(),
                    "ln {x} on {}: {err:e}",
                    path.name()
                );
            }
            assert_eq!(path.forced(|| ln::<false>(1.0)), Some(0.0));
            let tiny = Array2::from_shape_vec((1, 3), vec![1e-39, 1e-50, 1.0]);
            let got = path.forced(|| lns(&tiny.unwrap())).unwrap();
            for (g, want) in got.iter().zip([1e-39f64.ln(), 1e-50f64.ln(), 0.0])
            {
                let err = (f64::from(*g) - want).abs();
                assert!(
                    err <= 1e-7 * want.abs(),
                    "{g} {want} on {}",
                    path.name()
                );
            }
        }
    }

    /// Every routed f32 form on inputs of N tokens, p features, m values:
    /// (name, output) on the current path.
    fn every_form(
        seed: u64,
        n: usize,
        p: usize,
        m: usize,
    ) -> Vec<(String, Array2<f32>)> {
        let [q, k, v] = random_inputs(seed, n, p, m).map(|a| to_f32(&a));
        let mut rng = seeded(seed);
        let beta = Array1::from_shape_simple_fn(n, || rng.random::<f32>());
        let mut out = vec![
            (
                "softmax tiled".into(),
                softmax_attention_tiled_f32(&q, &k, &v),
            ),
            (
                "softmax blocks 16 × 32".into(),
                softmax_attention_blocks_f32(&q, &k, &v, 16, 32),
            ),
            (
                "linear recurrent".into(),
                linear_attention_recurrent_f32(&q, &k, &v),
            ),
            (
                "linear chunkwise".into(),
                linear_attention_chunkwise_f32(&q, &k, &v, 24),
            ),
            (
                "delta recurrent".into(),
                delta_rule_recurrent_f32(&q, &k, &v, &beta),
            ),
            (
                "delta chunkwise".into(),
                delta_rule_chunkwise_f32(&q, &k, &v, &beta, 24),
            ),
        ];
        let [q, k, v] = random_qkv(seed, n, p, m);
        let (q32, k32, v32) = (to_f32(&q), to_f32(&k), to_f32(&v));
        let mut rules = six_rules(&mut rng, n, p, Some(0.5), Some(0.8));
        let gates = log_uniform_gates(&mut rng, n, p, 0.5);
        rules.push(kda_rule(gates, Array1::from_elem(n, 0.5)));
        for rule in &rules {
            let name = rule.name();
            out.push((
                format!("{name} recurrent"),
                rule_recurrent_f32(rule, &q32, &k32, &v32),
            ));
            out.push((
                format!("{name} chunkwise"),
                rule_chunkwise_f32(rule, &q32, &k32, &v32, 24),
            ));
        }
        let g = random_rwkv7(seed, n, p, 0.5);
        out.push((
            "RWKV-7 recurrent".into(),
            rwkv7_recurrent_f32(&q32, &v32, &g),
        ));
        out.push((
            "RWKV-7 chunkwise".into(),
            rwkv7_chunkwise_f32(&q32, &v32, &g, 24),
        ));
        let (k2, v2, b2) = random_delta_product(&mut rng, (n, p, m), 2);
        let (k2, v2, b2) = (to_f32(&k2), to_f32(&v2), b2.mapv(|b| b as f32));
        out.push((
            "DeltaProduct recurrent".into(),
            delta_product_recurrent_f32(&q32, &k2, &v2, &b2, 2),
        ));
        out.push((
            "DeltaProduct chunkwise".into(),
            delta_product_chunkwise_f32(&q32, &k2, &v2, &b2, 2, 24),
        ));
        let [q, k, v] = random_inputs(seed, n, p, m).map(|a| to_f32(&a));
        let (mut cache, mut state) =
            (KvCacheF32::new(p, m, n), LinearStateF32::new(p, m));
        let (mut soft, mut linear) =
            (Array2::zeros((n, m)), Array2::zeros((n, m)));
        for t in 0..n {
            let (q_t, k_t, v_t) = (q.row(t), k.row(t), v.row(t));
            let (q_t, k_t, v_t) = (
                q_t.as_slice().unwrap(),
                k_t.as_slice().unwrap(),
                v_t.as_slice().unwrap(),
            );
            cache
                .step(q_t, k_t, v_t, soft.row_mut(t).as_slice_mut().unwrap())
                .unwrap();
            state
                .step(q_t, k_t, v_t, linear.row_mut(t).as_slice_mut().unwrap())
                .unwrap();
        }
        out.push(("softmax decode".into(), Ok(soft)));
        out.push(("linear decode".into(), Ok(linear)));
        out.into_iter()
            .map(|(name, o)| (name, o.expect("good inputs")))
            .collect()
    }

    #[test]
    fn every_f32_form_gives_the_scalar_paths_result_on_each_path() {
        // Every routed f32 form (softmax tiled and decode, linear attention
        // and the delta rule both ways, the six rules and KDA, RWKV-7 and
        // DeltaProduct both ways) on each path this CPU runs: within 1e-4
        // of the scalar path's output, worst row, relative, over three
        // seeds and shapes whose widths are not multiples of 16 or 8.
        for (seed, (n, p, m)) in [(70, 13, 9), (300, 16, 8), (530, 64, 40)]
            .into_iter()
            .enumerate()
        {
            let seed = seed as u64;
            let want =
                Path::Scalar.forced(|| every_form(seed, n, p, m)).unwrap();
            for path in wide_paths() {
                let got = path.forced(|| every_form(seed, n, p, m)).unwrap();
                for ((name, got), (_, want)) in got.iter().zip(&want) {
                    let diff = worst_row_relative_difference(
                        &to_f64(got),
                        &to_f64(want),
                    );
                    assert!(
                        diff < 1e-4,
                        "{name} N {n} p {p} m {m} on {}: {diff:e}",
                        path.name()
                    );
                }
            }
        }
    }
}
