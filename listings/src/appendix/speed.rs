//! Appendix "Where speed comes from": the book's schedules of causal linear
//! attention and of the delta rule again, in f32 and written for speed.
//! Each one computes what its f64 form of Part I or II computes, and a test
//! below checks that it does, to f32 precision.
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

use crate::causal::mask_future;
use crate::input::{InputError, check_chunk, check_qkv};
use crate::linalg::worst_row_relative_difference;
use crate::m3::fast_weight_memory::linear_attention_recurrent;
use crate::m3::schedules::{Clock, Machine, time_once};
use crate::paper::delta_rule::check_delta;
use crate::phi::elu_plus_one;
use crate::random::{randn, seeded};
use crate::summary::Spread;
use ndarray::linalg::{general_mat_mul, general_mat_vec_mul};
use ndarray::{
    Array1, Array2, ArrayRef1, ArrayRef2, Axis, CowArray, Ix2, Zip, s,
};
use std::fmt;
use std::sync::OnceLock;

/// `fn $wide(args) = $body;` makes `$wide`, which runs `$body(args)`
/// compiled for AVX2 where this CPU has it (asked at run time, a cached
/// flag), else as baseline x86-64 code with 4-wide vectors. The compiler
/// vectorises the loops of `$body` (inlined) 8 floats at a time under AVX2;
/// matrixmultiply makes the same choice inside its kernels, and our loops
/// have to ask for it.
macro_rules! in_widest_vectors {
    ($(#[$doc:meta])* fn $wide:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? = $body:ident;) => {
        $(#[$doc])*
        fn $wide($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx2")]
                unsafe fn avx2($($arg: $ty),*) $(-> $ret)? {
                    $body($($arg),*)
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: this CPU has AVX2, the one feature `avx2`
                    // assumes.
                    return unsafe { avx2($($arg),*) };
                }
            }
            $body($($arg),*)
        }
    };
}

in_widest_vectors! {
    /// `recurrent_token_f32` in the widest vectors this CPU has.
    fn recurrent_token_wide(
        s: &mut [f32],
        z: &mut [f32],
        q: &[f32],
        k: &[f32],
        v: &[f32],
        read: &mut [f32],
    ) -> f32 = recurrent_token_f32;
}

in_widest_vectors! {
    /// `delta_token_f32` in the widest vectors this CPU has.
    fn delta_token_wide(
        w: &mut [f32],
        q: &[f32],
        k: &[f32],
        v: &[f32],
        beta: f32,
        y: &mut [f32],
    ) = delta_token_f32;
}

// ANCHOR: recurrent_token_f32
/// One token of the f32 recurrence, in place, with S: (m, p) kept by
/// columns (s_j is s[j m..(j + 1) m]). The write s_j += k_j v and the read
/// Σ_j q_j s_j go together, one pass over the columns for each block of
/// `ROWS` value rows, whose read stays in registers until the pass ends;
/// then z += k and the normaliser zᵀq. q, k, z: (p), v, read: (m).
#[inline(always)] // so that the caller's vector width applies here
pub fn recurrent_token_f32(
    s: &mut [f32],
    z: &mut [f32],
    q: &[f32],
    k: &[f32],
    v: &[f32],
    read: &mut [f32],
) -> f32 {
    let m = v.len();
    let whole = m - m % ROWS;
    for first in (0..whole).step_by(ROWS) {
        recurrent_rows::<ROWS>(s, first, q, k, v, read);
    }
    for first in whole..m {
        recurrent_rows::<1>(s, first, q, k, v, read); // the rows left over
    }
    let mut norm = 0.0;
    for ((z_j, &k_j), &q_j) in z.iter_mut().zip(k).zip(q) {
        *z_j += k_j;
        norm += *z_j * q_j;
    }
    norm
}

/// Value rows per block: two AVX2 registers of f32 for each of a block's
/// running sums, few enough that all of them stay in registers.
const ROWS: usize = 16;

/// Rows first..first + B of one token of `recurrent_token_f32`.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // index loops over B vectorise best
fn recurrent_rows<const B: usize>(
    s: &mut [f32],
    first: usize,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    read: &mut [f32],
) {
    let (m, rows) = (v.len(), first..first + B); // rows of each column
    let v: &[f32; B] = v[rows.clone()].try_into().expect("B rows");
    let mut sum = [0.0f32; B];
    for (s_j, (&q_j, &k_j)) in s.chunks_exact_mut(m).zip(q.iter().zip(k)) {
        let s_j: &mut [f32; B] =
            (&mut s_j[rows.clone()]).try_into().expect("B rows");
        for i in 0..B {
            s_j[i] += k_j * v[i]; // write
            sum[i] += q_j * s_j[i]; // read
        }
    }
    read[rows].copy_from_slice(&sum);
}
// ANCHOR_END: recurrent_token_f32

// ANCHOR: linear_attention_recurrent_f32
/// The recurrence of `linear_attention_recurrent` in f32: S and z are made
/// before the loop, each token's rows are read where they lie, and each
/// token updates S and z in place and writes its read straight into O,
/// with `recurrent_token_f32` (in the widest vectors this CPU has).
/// phi_q, phi_k: (N, p), v: (N, m); returns O: (N, m).
pub fn linear_attention_recurrent_f32(
    phi_q: &ArrayRef2<f32>,
    phi_k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Array2<f32>, InputError> {
    check_qkv(phi_q, phi_k, v, true)?;
    let (n, p, m) = (phi_q.nrows(), phi_q.ncols(), v.ncols());
    let mut s = vec![0.0f32; p * m]; // S_0 = 0, by columns
    let mut z = vec![0.0f32; p]; // z_0 = 0
    let [q_all, k_all, v_all] = row_major(phi_q, phi_k, v);
    let q_rows = slice(&q_all).chunks_exact(p);
    let k_rows = slice(&k_all).chunks_exact(p);
    let v_rows = slice(&v_all).chunks_exact(m);
    let mut o = Array2::<f32>::zeros((n, m));
    let o_rows = o.as_slice_mut().expect("a new array").chunks_exact_mut(m);
    for (((q_t, k_t), v_t), o_t) in q_rows.zip(k_rows).zip(v_rows).zip(o_rows) {
        let norm = recurrent_token_wide(&mut s, &mut z, q_t, k_t, v_t, o_t);
        o_t.iter_mut().for_each(|o| *o /= norm); // o_t = S_t q / z_tᵀ q
    }
    Ok(o)
}
// ANCHOR_END: linear_attention_recurrent_f32

// ANCHOR: linear_attention_chunkwise_f32
/// The chunkwise schedule of `linear_attention_chunkwise` in f32, each
/// chunk of c ≤ `chunk` tokens as matrix products into buffers made once:
/// O_c = (Φ_Q Sᵀ + tril(Φ_Q Φ_Kᵀ) V) / (Φ_Q z + tril(Φ_Q Φ_Kᵀ) 1), then
/// S += Vᵀ Φ_K, z += Φ_Kᵀ 1. phi_q, phi_k: (N, p), v: (N, m), chunk ≥ 1.
pub fn linear_attention_chunkwise_f32(
    phi_q: &ArrayRef2<f32>,
    phi_k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    chunk: usize,
) -> Result<Array2<f32>, InputError> {
    check_qkv(phi_q, phi_k, v, true)?;
    check_chunk(chunk)?;
    let (n, p, m) = (phi_q.nrows(), phi_q.ncols(), v.ncols());
    let mut s = Array2::<f32>::zeros((m, p)); // S_0 = 0
    let mut z = Array1::<f32>::zeros(p); // z_0 = 0
    let c_max = chunk.min(n);
    let mut scores = Array2::<f32>::zeros((c_max, c_max));
    let mut norm = Array1::<f32>::zeros(c_max);
    let mut o = Array2::<f32>::zeros((n, m));
    for start in (0..n).step_by(chunk) {
        let rows = s![start..(start + chunk).min(n), ..];
        let (q, k, v_c) = (phi_q.slice(rows), phi_k.slice(rows), v.slice(rows));
        let c = q.nrows(); // the last chunk may be shorter
        let mut a = scores.slice_mut(s![..c, ..c]);
        general_mat_mul(1.0, &q, &k.t(), 0.0, &mut a); // Φ_Q Φ_Kᵀ
        mask_future(&mut a, 0.0); // tril: no later key
        let mut out = o.slice_mut(rows);
        general_mat_mul(1.0, &q, &s.t(), 0.0, &mut out); // earlier chunks
        general_mat_mul(1.0, &a, &v_c, 1.0, &mut out); // this chunk
        let mut norm_c = norm.slice_mut(s![..c]);
        general_mat_vec_mul(1.0, &q, &z, 0.0, &mut norm_c);
        Zip::from(&mut norm_c)
            .and(a.rows())
            .for_each(|x, row| *x += row.sum());
        Zip::from(out.rows_mut())
            .and(&norm_c)
            .for_each(|mut o_t, &x| o_t.mapv_inplace(|y| y / x));
        general_mat_mul(1.0, &v_c.t(), &k, 1.0, &mut s); // S += Vᵀ Φ_K
        k.rows().into_iter().for_each(|k_t| z += &k_t); // z += Φ_Kᵀ 1
    }
    Ok(o)
}
// ANCHOR_END: linear_attention_chunkwise_f32

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

// ANCHOR: delta_token_f32
/// One token of the f32 delta rule, in place, with W: (m, p) kept by
/// columns w_j. Row i of W meets only v_i, so the rows go in blocks of
/// `ROWS`, each block's numbers held in registers while it makes two
/// passes over its part of the columns: the prediction ŵ = Σ_j k_j w_j and
/// the step u = β (v − ŵ), then the write w_j += k_j u and the read
/// y = Σ_j q_j w_j. q, k: (p) sum-normalised, v, y: (m).
#[inline(always)] // so that the caller's vector width applies here
pub fn delta_token_f32(
    w: &mut [f32],
    q: &[f32],
    k: &[f32],
    v: &[f32],
    beta: f32,
    y: &mut [f32],
) {
    let m = v.len();
    let whole = m - m % ROWS;
    for first in (0..whole).step_by(ROWS) {
        delta_rows::<ROWS>(w, first, q, k, v, beta, y);
    }
    for first in whole..m {
        delta_rows::<1>(w, first, q, k, v, beta, y); // the rows left over
    }
}

/// Rows first..first + B of one delta-rule token (see `delta_token_f32`).
#[inline(always)]
fn delta_rows<const B: usize>(
    w: &mut [f32],
    first: usize,
    q: &[f32],
    k: &[f32],
    v: &[f32],
    beta: f32,
    y: &mut [f32],
) {
    let m = v.len();
    let rows = first..first + B; // of each column
    let mut u = [0.0f32; B];
    for (w_j, &k_j) in w.chunks_exact(m).zip(k) {
        let w_j: &[f32; B] = w_j[rows.clone()].try_into().expect("B rows");
        for i in 0..B {
            u[i] += k_j * w_j[i]; // ŵ
        }
    }
    for i in 0..B {
        u[i] = beta * (v[first + i] - u[i]); // u
    }
    let mut read = [0.0f32; B];
    for (w_j, (&q_j, &k_j)) in w.chunks_exact_mut(m).zip(q.iter().zip(k)) {
        let w_j: &mut [f32; B] =
            (&mut w_j[rows.clone()]).try_into().expect("B rows");
        for i in 0..B {
            w_j[i] += k_j * u[i]; // write
            read[i] += q_j * w_j[i]; // read
        }
    }
    y[first..first + B].copy_from_slice(&read);
}
// ANCHOR_END: delta_token_f32

// ANCHOR: delta_rule_recurrent_f32
/// The delta rule of `delta_rule_recurrent` in f32: W and the scratch rows
/// are made before the loop, and each token updates them in place with
/// `delta_token_f32` (in the widest vectors this CPU has).
/// phi_q, phi_k: (N, p) with positive row sums, v: (N, m), beta: (N).
pub fn delta_rule_recurrent_f32(
    phi_q: &ArrayRef2<f32>,
    phi_k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    beta: &ArrayRef1<f32>,
) -> Result<Array2<f32>, InputError> {
    check_delta(phi_q, phi_k, v, beta)?;
    let (n, p, m) = (phi_q.nrows(), phi_q.ncols(), v.ncols());
    let mut w = vec![0.0f32; p * m]; // W_0 = 0, by columns
    let (mut q_bar, mut k_bar) = (vec![0.0f32; p], vec![0.0f32; p]);
    let [q_all, k_all, v_all] = row_major(phi_q, phi_k, v);
    let q_rows = slice(&q_all).chunks_exact(p);
    let k_rows = slice(&k_all).chunks_exact(p);
    let v_rows = slice(&v_all).chunks_exact(m);
    let mut y = Array2::<f32>::zeros((n, m));
    let y_rows = y.as_slice_mut().expect("a new array").chunks_exact_mut(m);
    let tokens = q_rows.zip(k_rows).zip(v_rows).zip(y_rows).zip(beta);
    for ((((q_t, k_t), v_t), y_t), &b) in tokens {
        sum_normalise_into(k_t.iter().copied(), &mut k_bar);
        sum_normalise_into(q_t.iter().copied(), &mut q_bar);
        delta_token_wide(&mut w, &q_bar, &k_bar, v_t, b, y_t);
    }
    Ok(y)
}
// ANCHOR_END: delta_rule_recurrent_f32

// ANCHOR: delta_rule_chunkwise_f32
/// The chunkwise delta rule of `delta_rule_chunkwise` in f32, into buffers
/// made once, with four matrix products per chunk. With G_k = K̄ K̄ᵀ, the
/// rows of X = T [K̄ | V] follow by forward substitution, without forming
/// T: x_i = β_i ([k̄_i | v_i] − Σ_{j<i} (G_k)_ij x_j). Then
/// [Q̄ W_0ᵀ; T K̄ W_0ᵀ] is one product, U = T V − T K̄ W_0ᵀ,
/// Y = Q̄ W_0ᵀ + tril(Q̄ K̄ᵀ) U and W ← W_0 + Uᵀ K̄.
/// Shapes as in `delta_rule_recurrent_f32`; chunk ≥ 1.
pub fn delta_rule_chunkwise_f32(
    phi_q: &ArrayRef2<f32>,
    phi_k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    beta: &ArrayRef1<f32>,
    chunk: usize,
) -> Result<Array2<f32>, InputError> {
    check_delta(phi_q, phi_k, v, beta)?;
    check_chunk(chunk)?;
    let (n, p, m) = (phi_q.nrows(), phi_q.ncols(), v.ncols());
    let c_max = chunk.min(n);
    let mut w = Array2::<f32>::zeros((m, p)); // W_0 = 0
    let mut kv = Array2::<f32>::zeros((c_max, p + m)); // [K̄ | V], then X
    let mut kq = Array2::<f32>::zeros((3 * c_max, p)); // [K̄; Q̄; T K̄]
    let mut g = Array2::<f32>::zeros((2 * c_max, c_max)); // [K̄ K̄ᵀ; Q̄ K̄ᵀ]
    let mut r = Array2::<f32>::zeros((2 * c_max, m)); // [Q̄ W_0ᵀ; T K̄ W_0ᵀ]
    let mut y = Array2::<f32>::zeros((n, m));
    let [q_all, k_all, v_all] = row_major(phi_q, phi_k, v);
    let (q_all, k_all, v_all) = (slice(&q_all), slice(&k_all), slice(&v_all));
    for start in (0..n).step_by(chunk) {
        let end = (start + chunk).min(n);
        let c = end - start; // the last chunk may be shorter
        let b = beta.slice(s![start..end]);
        let mut kv_c = kv.slice_mut(s![..c, ..]);
        let mut kq_c = kq.slice_mut(s![..3 * c, ..]);
        let kq_rows = kq_c.as_slice_mut().expect("leading rows of a buffer");
        let (k_rows, q_rows) = kq_rows.split_at_mut(c * p);
        let kv_rows = kv_c.as_slice_mut().expect("leading rows of a buffer");
        for (i, x) in kv_rows.chunks_exact_mut(p + m).enumerate() {
            let (k_i, v_i) = x.split_at_mut(p);
            let t = start + i;
            sum_normalise_into(k_all[t * p..(t + 1) * p].iter().copied(), k_i);
            v_i.copy_from_slice(&v_all[t * m..(t + 1) * m]);
            k_rows[i * p..(i + 1) * p].copy_from_slice(k_i);
            let q_i = &mut q_rows[i * p..(i + 1) * p];
            sum_normalise_into(q_all[t * p..(t + 1) * p].iter().copied(), q_i);
        }
        let mut g_c = g.slice_mut(s![..2 * c, ..c]);
        let (k_and_q, k_bar) =
            (kq_c.slice(s![..2 * c, ..]), kq_c.slice(s![..c, ..]));
        general_mat_mul(1.0, &k_and_q, &k_bar.t(), 0.0, &mut g_c);
        let (k_bar, mut q_tk) = kq_c.view_mut().split_at(Axis(0), c);
        // X = T [K̄ | V], row by row: each row needs the rows above it.
        let x = kv_c.as_slice_mut().expect("leading rows of a buffer");
        for i in 0..c {
            let (done, rest) = x.split_at_mut(i * (p + m));
            let x_i = &mut rest[..p + m];
            for (j, x_j) in done.chunks_exact(p + m).enumerate() {
                let g_ij = g_c[[i, j]]; // (K̄ K̄ᵀ)_ij
                x_i.iter_mut().zip(x_j).for_each(|(a, &b)| *a -= g_ij * b);
            }
            x_i.iter_mut().for_each(|a| *a *= b[i]);
        }
        let (tk, mut u) = kv_c.view_mut().split_at(Axis(1), p);
        q_tk.slice_mut(s![c.., ..]).assign(&tk); // [Q̄; T K̄]
        let mut r_c = r.slice_mut(s![..2 * c, ..]);
        general_mat_mul(1.0, &q_tk, &w.t(), 0.0, &mut r_c);
        u -= &r_c.slice(s![c.., ..]); // U = T V − T K̄ W_0ᵀ
        let mut scores = g_c.slice_mut(s![c.., ..]); // Q̄ K̄ᵀ
        mask_future(&mut scores, 0.0); // tril, diagonal kept
        let mut y_c = y.slice_mut(s![start..end, ..]);
        y_c.assign(&r_c.slice(s![..c, ..])); // Q̄ W_0ᵀ: earlier chunks
        general_mat_mul(1.0, &scores, &u, 1.0, &mut y_c); // this chunk
        general_mat_mul(1.0, &u.t(), &k_bar, 1.0, &mut w); // W += Uᵀ K̄
    }
    Ok(y)
}
// ANCHOR_END: delta_rule_chunkwise_f32

/// Causal softmax attention, softmax(Q Kᵀ / √d) V, at f32: the baseline
/// the benchmark times against, computed as `softmax_attention` with
/// `Mask::Causal` computes it, except that the masked scores are skipped
/// rather than set to −∞. q, k: (N, d), v: (N, m); returns O: (N, m).
pub fn softmax_attention_causal_f32(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Array2<f32>, InputError> {
    check_qkv(q, k, v, true)?;
    let scale = 1.0 / (q.ncols() as f32).sqrt();
    let mut weights = q.dot(&k.t());
    for (t, mut row) in weights.rows_mut().into_iter().enumerate() {
        let (mut seen, mut future) = row.view_mut().split_at(Axis(0), t + 1);
        seen.mapv_inplace(|x| x * scale);
        let max = seen.fold(f32::NEG_INFINITY, |a, &b| a.max(b));
        seen.mapv_inplace(|x| (x - max).exp());
        let total = seen.sum();
        seen /= total;
        future.fill(0.0); // the future gets weight 0
    }
    Ok(weights.dot(v))
}

/// `linear_attention_parallel` at f32: the masked N × N product.
pub fn linear_attention_parallel_f32(
    phi_q: &ArrayRef2<f32>,
    phi_k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Array2<f32>, InputError> {
    check_qkv(phi_q, phi_k, v, true)?;
    let mut scores = phi_q.dot(&phi_k.t());
    mask_future(&mut scores, 0.0); // the causal mask
    Ok(weighted_read(&scores, v))
}

/// (A V) / (A 1): each row of scores A as weights over the rows of V.
fn weighted_read(scores: &ArrayRef2<f32>, v: &ArrayRef2<f32>) -> Array2<f32> {
    let denominator = scores.sum_axis(Axis(1)).insert_axis(Axis(1));
    scores.dot(v) / denominator
}

/// `linear_attention_scores_first` at f32 (non-causal): builds (N, N_k).
pub fn linear_attention_scores_first_f32(
    phi_q: &ArrayRef2<f32>,
    phi_k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Array2<f32>, InputError> {
    check_qkv(phi_q, phi_k, v, false)?;
    Ok(weighted_read(&phi_q.dot(&phi_k.t()), v))
}

/// `linear_attention_memory_first` at f32 (non-causal): S and z first.
pub fn linear_attention_memory_first_f32(
    phi_q: &ArrayRef2<f32>,
    phi_k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Array2<f32>, InputError> {
    check_qkv(phi_q, phi_k, v, false)?;
    let (s, z) = (v.t().dot(phi_k), phi_k.sum_axis(Axis(0)));
    Ok(phi_q.dot(&s.t()) / phi_q.dot(&z).insert_axis(Axis(1)))
}

// ANCHOR: across_value_columns
/// Run `form` on `threads` groups of value columns at once, one scoped
/// thread per group, and set the outputs side by side. Right for every
/// form of this module: output column i depends on value column i (and on
/// the queries and keys) only, since no weight depends on the values and
/// row i of S or W meets only entry i of each value. Each thread repeats
/// the work that does not depend on the values (normalisers, scores), one
/// reason the speed-up falls short of the number of threads.
/// v: (N, m); `form` maps (N, m') values to (N, m') outputs.
pub fn across_value_columns<F>(
    v: &ArrayRef2<f32>,
    threads: usize,
    form: F,
) -> Result<Array2<f32>, InputError>
where
    F: Fn(&ArrayRef2<f32>) -> Result<Array2<f32>, InputError> + Sync,
{
    let m = v.ncols();
    let threads = threads.clamp(1, m.max(1)); // no group without a column
    if threads == 1 {
        return form(v); // nothing to split
    }
    let group =
        |i: usize| v.slice(s![.., i * m / threads..(i + 1) * m / threads]);
    let form = &form;
    let parts = std::thread::scope(|scope| {
        let workers: Vec<_> = (1..threads)
            .map(|i| {
                let columns = group(i);
                scope.spawn(move || form(&columns))
            })
            .collect();
        let mut parts = vec![form(&group(0))]; // the first group, right here
        for worker in workers {
            parts.push(worker.join().expect("a worker thread does not panic"));
        }
        parts
    });
    let parts = parts.into_iter().collect::<Result<Vec<_>, _>>()?;
    let views: Vec<_> = parts.iter().map(|part| part.view()).collect();
    Ok(ndarray::concatenate(Axis(1), &views).expect("parts of one length"))
}
// ANCHOR_END: across_value_columns

/// A form as `across_value_columns` takes it: values in, outputs out, the
/// queries, keys and settings captured.
pub type ValueForm<'a> =
    dyn Fn(&ArrayRef2<f32>) -> Result<Array2<f32>, InputError> + Sync + 'a;

/// A form the benchmark times, each one a function of this module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timed {
    /// `softmax_attention_causal_f32`.
    Softmax,
    /// `linear_attention_parallel_f32`.
    Parallel,
    /// `linear_attention_recurrent_f32`.
    Recurrent,
    /// `linear_attention_chunkwise_f32`.
    Chunkwise,
    /// `delta_rule_recurrent_f32` (and the book's f64 listing).
    DeltaRecurrent,
    /// `delta_rule_chunkwise_f32`.
    DeltaChunkwise,
    /// `linear_attention_scores_first_f32` (non-causal).
    ScoresFirst,
    /// `linear_attention_memory_first_f32` (non-causal).
    MemoryFirst,
}

/// Floating-point operations of one call of a form (a multiply-add counts
/// two), counting every product it computes, the masked half of a score
/// block included: N tokens, p features, m value entries, chunks of c.
/// Small terms (normalisers, masks, sums of rows) are left out.
pub fn arithmetic(form: Timed, n: usize, p: usize, m: usize, c: usize) -> f64 {
    let (n, p, m) = (n as f64, p as f64, m as f64);
    let c = (c.max(1) as f64).min(n);
    let chunks = (n / c).ceil();
    match form {
        // Q Kᵀ: 2 N² p, then the weights times V: 2 N² m.
        Timed::Softmax | Timed::Parallel | Timed::ScoresFirst => {
            2.0 * n * n * (p + m)
        }
        // Per token: the write of S (2pm) and the read S φ(q) (2pm).
        Timed::Recurrent => 4.0 * n * p * m,
        // S = Vᵀ Φ_K (2Npm), then Φ_Q Sᵀ (2Npm).
        Timed::MemoryFirst => 4.0 * n * p * m,
        // Per chunk: Φ_Q Sᵀ and S += Vᵀ Φ_K (2cpm each), Φ_Q Φ_Kᵀ (2c²p)
        // and the scores times V (2c²m).
        Timed::Chunkwise => chunks * (4.0 * c * p * m + 2.0 * c * c * (p + m)),
        // Per token: the prediction W k̄ (2pm), the write (2pm) and the
        // read W q̄ (2pm).
        Timed::DeltaRecurrent => 6.0 * n * p * m,
        // Per chunk: [K̄; Q̄] K̄ᵀ (4c²p), forward substitution on [K̄ | V]
        // (c(c − 1)(p + m)), [Q̄; T K̄] W₀ᵀ (4cpm), tril(Q̄ K̄ᵀ) U (2c²m),
        // W += Uᵀ K̄ (2cpm).
        Timed::DeltaChunkwise => {
            chunks
                * (6.0 * c * p * m
                    + 4.0 * c * c * p
                    + 2.0 * c * c * m
                    + c * (c - 1.0) * (p + m))
        }
    }
}

/// Arithmetic per token of the delta rule's two schedules, at widths
/// d = p = m and several chunk sizes: what the chunkwise form must make up
/// for in speed.
pub struct DeltaArithmetic {
    pub d: usize,
    /// Operations per token of the recurrence.
    pub recurrent: f64,
    /// (C, operations per token of the chunkwise form).
    pub chunkwise: Vec<(usize, f64)>,
}

/// The appendix's count: d = 64 and chunks from 1 to 256.
pub fn delta_arithmetic() -> DeltaArithmetic {
    let (d, n) = (64, 1 << 14);
    let per_token = |form, c| arithmetic(form, n, d, d, c) / n as f64;
    DeltaArithmetic {
        d,
        recurrent: per_token(Timed::DeltaRecurrent, 1),
        chunkwise: [1, 4, 16, 64, 256]
            .into_iter()
            .map(|c| (c, per_token(Timed::DeltaChunkwise, c)))
            .collect(),
    }
}

impl fmt::Display for DeltaArithmetic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "operations per token, d = m = {}: recurrence {:.0}",
            self.d, self.recurrent
        )?;
        writeln!(f, "{:>6}  {:>10}  {:>14}", "C", "chunkwise", "÷ recurrence")?;
        for &(c, ops) in &self.chunkwise {
            writeln!(f, "{c:>6}  {ops:>10.0}  {:>14.2}", ops / self.recurrent)?;
        }
        let least = self.chunkwise.iter().map(|x| x.1).fold(f64::MAX, f64::min);
        write!(
            f,
            "at best the chunkwise form does {:.2}x the recurrence's arithmetic",
            least / self.recurrent
        )
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

/// One length of the accuracy study: the worst row-relative error of each
/// f32 schedule against the f64 recurrence, worst over the seeds.
pub struct AccuracyRow {
    pub n: usize,
    pub recurrent: f64,
    pub chunkwise: f64,
}

/// The f32 schedules against an f64 reference as N grows.
pub struct AccuracyStudy {
    pub d: usize,
    pub chunk: usize,
    pub seeds: u64,
    pub rows: Vec<AccuracyRow>,
}

/// Run the f32 recurrent and chunkwise forms and the book's f64 recurrence
/// on the same inputs (rounded to f32 first, so the f64 run sees exactly
/// what the f32 runs see), at each length, for seeds 0..seeds.
pub fn accuracy_study(
    lengths: &[usize],
    d: usize,
    chunk: usize,
    seeds: u64,
) -> AccuracyStudy {
    let rows = lengths
        .iter()
        .map(|&n| {
            let (mut recurrent, mut chunkwise) = (0.0f64, 0.0f64);
            for seed in 0..seeds {
                let inputs = random_inputs(seed, n, d, d).map(|a| to_f32(&a));
                let [q, k, v] = &inputs;
                let [q64, k64, v64] = [q, k, v].map(|a| to_f64(a));
                let reference = linear_attention_recurrent(&q64, &k64, &v64)
                    .expect("the shapes agree");
                let error = |o: Array2<f32>| {
                    worst_row_relative_difference(&to_f64(&o), &reference)
                };
                let rec = linear_attention_recurrent_f32(q, k, v);
                let chk = linear_attention_chunkwise_f32(q, k, v, chunk);
                recurrent = recurrent.max(error(rec.expect("shapes agree")));
                chunkwise = chunkwise.max(error(chk.expect("shapes agree")));
            }
            AccuracyRow {
                n,
                recurrent,
                chunkwise,
            }
        })
        .collect();
    AccuracyStudy {
        d,
        chunk,
        seeds,
        rows,
    }
}

/// The appendix's accuracy study: d = m = 32, chunks of 64, two seeds.
pub fn speed_accuracy() -> AccuracyStudy {
    accuracy_study(&[256, 1024, 4096, 16384], 32, 64, 2)
}

impl fmt::Display for AccuracyStudy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "worst row-relative error of f32 against the f64 recurrence \
             (d = m = {}, C = {}, worst of {} seeds)",
            self.d, self.chunk, self.seeds
        )?;
        writeln!(f, "{:>7}  {:>11}  {:>11}", "N", "recurrent", "chunkwise")?;
        for r in &self.rows {
            writeln!(
                f,
                "{:>7}  {:>11.2e}  {:>11.2e}",
                r.n, r.recurrent, r.chunkwise
            )?;
        }
        Ok(())
    }
}

/// Time per call of the f32 chunkwise form against the chunk size C, at one
/// length, beside the f32 recurrence (one chunk per token, no products).
pub struct ChunkSizeStudy {
    pub n: usize,
    pub d: usize,
    pub reps: usize,
    pub clock: Clock,
    pub machine: Machine,
    /// (C, median seconds per call).
    pub chunks: Vec<(usize, f64)>,
    /// Median seconds per call of `linear_attention_recurrent_f32`.
    pub recurrent: f64,
}

/// Time the chunkwise form at each chunk size and the recurrence, `reps`
/// rounds of every one, and keep the medians (φ = elu+1 of random inputs,
/// d = m, seed 0, made before any clock starts).
pub fn chunk_size_study(
    n: usize,
    d: usize,
    chunks: &[usize],
    reps: usize,
) -> ChunkSizeStudy {
    let clock = Clock::best();
    let [q, k, v] = random_inputs(0, n, d, d).map(|a| to_f32(&a));
    let mut samples = vec![Vec::new(); chunks.len() + 1];
    for _ in 0..reps {
        for (&c, times) in chunks.iter().zip(&mut samples) {
            times.push(time_once(clock, || {
                linear_attention_chunkwise_f32(&q, &k, &v, c)
            }));
        }
        let last = samples.last_mut().expect("one for the recurrence");
        last.push(time_once(clock, || {
            linear_attention_recurrent_f32(&q, &k, &v)
        }));
    }
    let median = |xs: &[f64]| Spread::of(xs).median;
    ChunkSizeStudy {
        n,
        d,
        reps,
        clock,
        machine: Machine::now(),
        chunks: chunks
            .iter()
            .zip(&samples)
            .map(|(&c, s)| (c, median(s)))
            .collect(),
        recurrent: median(samples.last().expect("one for the recurrence")),
    }
}

/// The appendix's chunk-size study, measured once per process so that
/// the figure and the table of one build show the same run.
pub fn measured_chunk_sizes() -> &'static ChunkSizeStudy {
    static STUDY: OnceLock<ChunkSizeStudy> = OnceLock::new();
    STUDY.get_or_init(|| {
        chunk_size_study(
            4096,
            32,
            &[2, 4, 8, 16, 32, 64, 128, 256, 512, 1024],
            3,
        )
    })
}

impl ChunkSizeStudy {
    /// The chunk size with the shortest median time.
    pub fn best(&self) -> usize {
        let fastest = self.chunks.iter().min_by(|a, b| a.1.total_cmp(&b.1));
        fastest.expect("at least one chunk size").0
    }

    /// Where, when and how the study was measured, on two lines.
    pub fn provenance(&self) -> String {
        format!(
            "measured {} on {} ({} cores), one thread, f32, N = {}, d = m = {};\n\
             the build's profile, median of {} runs",
            self.machine.date,
            self.machine.cpu,
            self.machine.cores,
            self.n,
            self.d,
            self.reps
        )
    }
}

impl fmt::Display for ChunkSizeStudy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.provenance())?;
        writeln!(f, "{:>6}  {:>8}", "C", "ms")?;
        for &(c, s) in &self.chunks {
            writeln!(f, "{c:>6}  {:>8.3}", s * 1e3)?;
        }
        writeln!(f, "recurrent: {:.3} ms", self.recurrent * 1e3)?;
        write!(
            f,
            "fastest C: {}, {:.1}x faster than C = {} and {:.1}x faster than C = {}",
            self.best(),
            self.chunks[0].1 / self.time_of(self.best()),
            self.chunks[0].0,
            self.chunks.last().expect("chunks").1 / self.time_of(self.best()),
            self.chunks.last().expect("chunks").0,
        )
    }
}

impl ChunkSizeStudy {
    fn time_of(&self, chunk: usize) -> f64 {
        let row = self.chunks.iter().find(|r| r.0 == chunk);
        row.expect("a measured chunk size").1
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::m3::schedules::linear_attention_chunkwise;
    use crate::paper::delta_rule::{
        delta_rule_chunkwise, delta_rule_recurrent,
    };
    use ndarray::ShapeBuilder;

    /// f32 forms against their f64 forms: the worst row-relative error.
    fn gap(fast: &Array2<f32>, book: &Array2<f64>) -> f64 {
        worst_row_relative_difference(&to_f64(fast), book)
    }

    const CASES: [(usize, usize, usize); 5] = [
        (1, 1, 4),
        (7, 3, 5),
        (64, 16, 8),
        (100, 16, 8),
        (257, 64, 16),
    ];

    #[test]
    fn recurrent_f32_equals_the_book_recurrence() {
        for seed in 0..3 {
            for (n, _, d) in CASES {
                let [q, k, v] = random_inputs(seed, n, d, d + 1);
                let book = linear_attention_recurrent(&q, &k, &v).unwrap();
                let [q, k, v] = [&q, &k, &v].map(|a| to_f32(a));
                let fast = linear_attention_recurrent_f32(&q, &k, &v);
                let e = gap(&fast.unwrap(), &book);
                assert!(e < 1e-4, "seed {seed}, N {n}: {e}");
                // The same inputs in column-major layout: copied, not misread.
                let mut q_cols = Array2::zeros(q.dim().f());
                q_cols.assign(&q);
                let fast = linear_attention_recurrent_f32(&q_cols, &k, &v);
                let e = gap(&fast.unwrap(), &book);
                assert!(e < 1e-4, "column-major, seed {seed}, N {n}: {e}");
            }
        }
    }

    #[test]
    fn chunkwise_f32_equals_the_book_chunkwise_form() {
        for seed in 0..3 {
            for (n, chunk, d) in CASES {
                let [q, k, v] = random_inputs(seed, n, d, d + 1);
                let book = linear_attention_chunkwise(&q, &k, &v, chunk);
                let [q, k, v] = [&q, &k, &v].map(|a| to_f32(a));
                let fast = linear_attention_chunkwise_f32(&q, &k, &v, chunk);
                let e = gap(&fast.unwrap(), &book.unwrap());
                assert!(e < 1e-4, "seed {seed}, N {n}, C {chunk}: {e}");
            }
        }
    }

    fn betas(seed: u64, n: usize) -> Array1<f64> {
        randn(&mut seeded(seed + 50), n, 1)
            .column(0)
            .mapv(|x| 1.0 / (1.0 + (-x).exp()))
    }

    #[test]
    fn delta_rule_f32_forms_equal_the_book_delta_rule() {
        for seed in 0..3 {
            for (n, chunk, d) in CASES {
                let [q, k, v] = random_inputs(seed, n, d, d + 1);
                let beta = betas(seed, n);
                let rec = delta_rule_recurrent(&q, &k, &v, &beta).unwrap();
                let chk =
                    delta_rule_chunkwise(&q, &k, &v, &beta, chunk).unwrap();
                let [q, k, v] = [&q, &k, &v].map(|a| to_f32(a));
                let beta = beta.mapv(|x| x as f32);
                let fast_rec = delta_rule_recurrent_f32(&q, &k, &v, &beta);
                let fast_chk =
                    delta_rule_chunkwise_f32(&q, &k, &v, &beta, chunk);
                let e_rec = gap(&fast_rec.unwrap(), &rec.output);
                let e_chk = gap(&fast_chk.unwrap(), &chk.output);
                assert!(e_rec < 1e-4, "seed {seed}, N {n}: {e_rec}");
                assert!(e_chk < 1e-4, "seed {seed}, N {n}, C {chunk}: {e_chk}");
            }
        }
    }

    #[test]
    fn chunk_size_does_not_change_the_f32_output_beyond_rounding() {
        let [q, k, v] = random_inputs(4, 300, 8, 8).map(|a| to_f32(&a));
        let one = linear_attention_chunkwise_f32(&q, &k, &v, 1).unwrap();
        for chunk in [2, 7, 64, 300, 1000] {
            let o = linear_attention_chunkwise_f32(&q, &k, &v, chunk).unwrap();
            let e = worst_row_relative_difference(&to_f64(&o), &to_f64(&one));
            assert!(e < 1e-4, "C {chunk}: {e}");
        }
    }

    #[test]
    fn f32_baselines_equal_their_book_forms() {
        use crate::m3::attention::{Mask, softmax_attention};
        use crate::m3::delete_softmax::{
            linear_attention_memory_first, linear_attention_scores_first,
        };
        use crate::m3::fast_weight_memory::linear_attention_parallel;
        for seed in 0..3 {
            for (n, _, d) in CASES {
                let [q, k, v] = random_inputs(seed, n, d, d + 1);
                let [q32, k32, v32] = [&q, &k, &v].map(|a| to_f32(a));
                let soft = softmax_attention(&q, &k, &v, Mask::Causal);
                let fast = softmax_attention_causal_f32(&q32, &k32, &v32);
                let e = gap(&fast.unwrap(), &soft.unwrap().output);
                assert!(e < 1e-4, "softmax, seed {seed}, N {n}: {e}");
                let book = linear_attention_parallel(&q, &k, &v).unwrap();
                let fast = linear_attention_parallel_f32(&q32, &k32, &v32);
                let e = gap(&fast.unwrap(), &book);
                assert!(e < 1e-4, "parallel, seed {seed}, N {n}: {e}");
                // Non-causal: fewer queries than keys, as a read allows.
                let few = q.slice(s![..n.div_ceil(2), ..]);
                let few32 = q32.slice(s![..n.div_ceil(2), ..]);
                for (name, book, fast) in [
                    (
                        "scores first",
                        linear_attention_scores_first(&few, &k, &v),
                        linear_attention_scores_first_f32(&few32, &k32, &v32),
                    ),
                    (
                        "memory first",
                        linear_attention_memory_first(&few, &k, &v),
                        linear_attention_memory_first_f32(&few32, &k32, &v32),
                    ),
                ] {
                    let e = gap(&fast.unwrap(), &book.unwrap());
                    assert!(e < 1e-4, "{name}, seed {seed}, N {n}: {e}");
                }
            }
        }
    }

    #[test]
    fn chunkwise_delta_rule_does_more_arithmetic_per_token_than_its_recurrence()
    {
        for (p, m) in [(8, 8), (32, 16), (64, 64), (128, 64)] {
            let n = 4096;
            let rec = arithmetic(Timed::DeltaRecurrent, n, p, m, 1);
            for c in [1, 2, 3, 16, 64, 100, 512, 4096] {
                let chk = arithmetic(Timed::DeltaChunkwise, n, p, m, c);
                assert!(chk > rec, "p {p}, m {m}, C {c}: {chk} vs {rec}");
            }
        }
        let table = delta_arithmetic();
        assert!(table.chunkwise.iter().all(|&(_, x)| x > table.recurrent));
    }

    #[test]
    fn arithmetic_grows_as_each_form_says() {
        use Timed::*;
        for (p, m, c) in [(8, 8, 4), (64, 32, 16), (64, 64, 64)] {
            let ops = |form, n| arithmetic(form, n, p, m, c);
            for form in [Recurrent, Chunkwise, DeltaRecurrent, DeltaChunkwise] {
                // Linear in N once N is a whole number of chunks.
                let (one, two) = (ops(form, 1024), ops(form, 2048));
                assert!((two / one - 2.0).abs() < 1e-12, "{form:?}");
            }
            for form in [Softmax, Parallel, ScoresFirst] {
                let (one, two) = (ops(form, 1024), ops(form, 2048));
                assert!((two / one - 4.0).abs() < 1e-12, "{form:?}");
            }
            // A chunk of one token is the recurrence plus the work of
            // scoring that token against itself.
            let one = arithmetic(Chunkwise, 1024, p, m, 1);
            let rec = ops(Recurrent, 1024);
            let extra = 2.0 * 1024.0 * (p + m) as f64;
            assert!((one - rec - extra).abs() < 1e-6, "{one} {rec}");
        }
    }

    #[test]
    fn each_value_row_of_the_delta_rule_evolves_on_its_own() {
        // Row i of W sees only column i of V: the value entries can be
        // split between threads with no exchange, in either schedule.
        for seed in 0..3 {
            for (n, chunk, d) in [(9, 4, 3), (100, 16, 8), (64, 8, 16)] {
                let [q, k, v] = random_inputs(seed, n, d, 6);
                let beta = betas(seed, n);
                let whole = delta_rule_recurrent(&q, &k, &v, &beta).unwrap();
                for (a, b) in [(0, 1), (1, 4), (4, 6)] {
                    let part = v.slice(s![.., a..b]);
                    let rec = delta_rule_recurrent(&q, &k, &part, &beta);
                    let chk = delta_rule_chunkwise(&q, &k, &part, &beta, chunk);
                    let expected = whole.output.slice(s![.., a..b]);
                    for read in [rec.unwrap(), chk.unwrap()] {
                        let gap = (&read.output - &expected)
                            .fold(0.0f64, |g, x| g.max(x.abs()));
                        assert!(gap < 1e-12, "seed {seed}, rows {a}..{b}");
                    }
                }
            }
        }
    }

    #[test]
    fn every_form_gives_the_same_output_across_threads() {
        for seed in 0..2 {
            for (n, chunk, d) in [(9, 4, 3), (100, 16, 8), (130, 32, 16)] {
                for m in [1, 5, 17, 40] {
                    let [q, k, v] = random_inputs(seed, n, d, m);
                    let [q, k, v] = [&q, &k, &v].map(|a| to_f32(a));
                    let beta = betas(seed, n).mapv(|x| x as f32);
                    let forms: [(&str, &ValueForm); 4] = [
                        ("recurrent", &|v| {
                            linear_attention_recurrent_f32(&q, &k, v)
                        }),
                        ("chunkwise", &|v| {
                            linear_attention_chunkwise_f32(&q, &k, v, chunk)
                        }),
                        ("delta recurrent", &|v| {
                            delta_rule_recurrent_f32(&q, &k, v, &beta)
                        }),
                        ("delta chunkwise", &|v| {
                            delta_rule_chunkwise_f32(&q, &k, v, &beta, chunk)
                        }),
                    ];
                    for (name, form) in forms {
                        let one = form(&v).unwrap();
                        for threads in [1, 2, 3, 64] {
                            let split = across_value_columns(&v, threads, form);
                            let e = worst_row_relative_difference(
                                &to_f64(&split.unwrap()),
                                &to_f64(&one),
                            );
                            assert!(e < 1e-5, "{name}, m {m}, {threads}: {e}");
                        }
                    }
                }
            }
        }
        // An error inside a thread comes back as the error.
        let [q, k, v] = random_inputs(0, 6, 3, 4).map(|a| to_f32(&a));
        let short = q.slice(s![..5, ..]).to_owned();
        let err = across_value_columns(&v, 2, |v| {
            linear_attention_recurrent_f32(&short, &k, v)
        });
        assert!(err.unwrap_err().to_string().contains("one key per query"));
    }

    #[test]
    fn bad_f32_input_is_an_input_error() {
        let [q, k, v] = random_inputs(0, 5, 3, 2).map(|a| to_f32(&a));
        let beta = Array1::<f32>::ones(5);
        let err = linear_attention_chunkwise_f32(&q, &k, &v, 0).unwrap_err();
        assert!(matches!(err, InputError::BadParameter { .. }), "{err}");
        let err = delta_rule_chunkwise_f32(&q, &k, &v, &beta, 0).unwrap_err();
        assert!(matches!(err, InputError::BadParameter { .. }), "{err}");
        let short = q.slice(s![..4, ..]).to_owned();
        let err = linear_attention_recurrent_f32(&short, &k, &v).unwrap_err();
        assert!(err.to_string().contains("one key per query"), "{err}");
        let mut bad = k.clone();
        bad[[2, 1]] = f32::NAN;
        let err = linear_attention_recurrent_f32(&q, &bad, &v).unwrap_err();
        assert!(matches!(err, InputError::NonFinite { name: "k", .. }));
        let err = delta_rule_recurrent_f32(&q, &k, &v, &beta.slice(s![..4]))
            .unwrap_err();
        assert!(err.to_string().contains("one write strength"), "{err}");
        let err = softmax_attention_causal_f32(&short, &k, &v).unwrap_err();
        assert!(err.to_string().contains("one key per query"), "{err}");
        let err = linear_attention_parallel_f32(&q, &k, &short).unwrap_err();
        assert!(err.to_string().contains("one value"), "{err}");
        let narrow = q.slice(s![.., ..2]).to_owned();
        let err = linear_attention_scores_first_f32(&narrow, &k, &v);
        assert!(err.unwrap_err().to_string().contains("width d"));
        let err = linear_attention_memory_first_f32(&q, &bad, &v);
        assert!(matches!(err, Err(InputError::NonFinite { name: "k", .. })));
        let empty = Array2::<f32>::zeros((0, 3));
        let err = linear_attention_recurrent_f32(&empty, &empty, &empty);
        assert!(matches!(err, Err(InputError::Empty { name: "q", .. })));
    }

    #[test]
    fn chunkwise_f32_drifts_less_than_the_recurrent_f32_sum() {
        let study = speed_accuracy();
        for row in &study.rows {
            assert!(row.chunkwise < row.recurrent, "{study}");
        }
        let (first, last) = (&study.rows[0], &study.rows[study.rows.len() - 1]);
        assert!(last.recurrent > first.recurrent, "{study}");
        assert!(last.chunkwise > first.chunkwise, "{study}");
    }
}
