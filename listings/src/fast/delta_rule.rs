//! The delta rule at f32: the recurrence, one token at a time in place,
//! and the chunkwise form, which solves each chunk's triangular system.

use super::{
    ROWS, general_mat_mul, row_major, slice, sub_scaled, sum_normalise_into,
    tally,
};
use crate::causal::mask_future;
use crate::input::{InputError, check_chunk, finite};
use crate::paper::delta_rule::check_delta;
use ndarray::{Array2, ArrayRef1, ArrayRef2, Axis, s};

dispatched! {
    /// `delta_token_f32` in the widest vectors this CPU has.
    fn delta_token_wide(
        s: &mut [f32],
        q: &[f32],
        k: &[f32],
        v: &[f32],
        beta: f32,
        y: &mut [f32],
    ) = delta_token_f32;
}

// ANCHOR: delta_token_f32
/// One token of the f32 delta rule, in place, with S: (m, p) kept by
/// columns s_j. Row i of S meets only v_i, so the rows go in blocks of
/// `ROWS`, each block's numbers held in registers while it makes two
/// passes over its part of the columns: the prediction v̄ = Σ_j k_j s_j and
/// the step u = β (v − v̄), then the write s_j += k_j u and the read
/// y = Σ_j q_j s_j. q, k: (p) sum-normalised, v, y: (m).
#[inline(always)] // so that the caller's vector width applies here
pub fn delta_token_f32(
    s: &mut [f32],
    q: &[f32],
    k: &[f32],
    v: &[f32],
    beta: f32,
    y: &mut [f32],
) {
    let m = v.len();
    let whole = m - m % ROWS;
    for first in (0..whole).step_by(ROWS) {
        delta_rows::<ROWS>(s, first, q, k, v, beta, y);
    }
    for first in whole..m {
        delta_rows::<1>(s, first, q, k, v, beta, y); // the rows left over
    }
}

/// Rows first..first + B of one delta-rule token (see `delta_token_f32`).
#[inline(always)]
fn delta_rows<const B: usize>(
    s: &mut [f32],
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
    for (s_j, &k_j) in s.chunks_exact(m).zip(k) {
        let s_j: &[f32; B] = s_j[rows.clone()].try_into().expect("B rows");
        for i in 0..B {
            u[i] += k_j * s_j[i]; // v̄
        }
        tally(2 * B); // one multiply–add a row, counted under test
    }
    for i in 0..B {
        u[i] = beta * (v[first + i] - u[i]); // u
    }
    let mut read = [0.0f32; B];
    for (s_j, (&q_j, &k_j)) in s.chunks_exact_mut(m).zip(q.iter().zip(k)) {
        let s_j: &mut [f32; B] =
            (&mut s_j[rows.clone()]).try_into().expect("B rows");
        for i in 0..B {
            s_j[i] += k_j * u[i]; // write
            read[i] += q_j * s_j[i]; // read
        }
        tally(4 * B); // two multiply–adds a row, counted under test
    }
    y[first..first + B].copy_from_slice(&read);
}
// ANCHOR_END: delta_token_f32

// ANCHOR: delta_rule_recurrent_f32
/// The delta rule of `delta_rule_recurrent` in f32: S and the scratch rows
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
    let mut s = vec![0.0f32; p * m]; // S_0 = 0, by columns
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
        delta_token_wide(&mut s, &q_bar, &k_bar, v_t, b, y_t);
    }
    finite("Y", y)
}
// ANCHOR_END: delta_rule_recurrent_f32

// ANCHOR: delta_rule_chunkwise_f32
/// The chunkwise delta rule of `delta_rule_chunkwise` in f32, into buffers
/// made once, with four matrix products per chunk. With G_k = K̄ K̄ᵀ, the
/// rows of X = T [K̄ | V] follow by forward substitution, without forming
/// T: x_i = β_i ([k̄_i | v_i] − Σ_{j<i} (G_k)_ij x_j). Then
/// [Q̄ S_0ᵀ; T K̄ S_0ᵀ] is one product, U = T V − T K̄ S_0ᵀ,
/// Y = Q̄ S_0ᵀ + tril(Q̄ K̄ᵀ) U and S ← S_0 + Uᵀ K̄.
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
    let mut s = Array2::<f32>::zeros((m, p)); // S_0 = 0
    let mut kv = Array2::<f32>::zeros((c_max, p + m)); // [K̄ | V], then X
    let mut kq = Array2::<f32>::zeros((3 * c_max, p)); // [K̄; Q̄; T K̄]
    let mut g = Array2::<f32>::zeros((2 * c_max, c_max)); // [K̄ K̄ᵀ; Q̄ K̄ᵀ]
    let mut r = Array2::<f32>::zeros((2 * c_max, m)); // [Q̄ S_0ᵀ; T K̄ S_0ᵀ]
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
                sub_scaled(x_i, g_ij, x_j); // x_i −= g_ij x_j
            }
            x_i.iter_mut().for_each(|a| *a *= b[i]);
        }
        let (tk, mut u) = kv_c.view_mut().split_at(Axis(1), p);
        q_tk.slice_mut(s![c.., ..]).assign(&tk); // [Q̄; T K̄]
        let mut r_c = r.slice_mut(s![..2 * c, ..]);
        general_mat_mul(1.0, &q_tk, &s.t(), 0.0, &mut r_c);
        u -= &r_c.slice(s![c.., ..]); // U = T V − T K̄ S_0ᵀ
        let mut scores = g_c.slice_mut(s![c.., ..]); // Q̄ K̄ᵀ
        mask_future(&mut scores, 0.0); // tril, diagonal kept
        let mut y_c = y.slice_mut(s![start..end, ..]);
        y_c.assign(&r_c.slice(s![..c, ..])); // Q̄ S_0ᵀ: earlier chunks
        general_mat_mul(1.0, &scores, &u, 1.0, &mut y_c); // this chunk
        general_mat_mul(1.0, &u.t(), &k_bar, 1.0, &mut s); // S += Uᵀ K̄
    }
    finite("Y", y)
}
// ANCHOR_END: delta_rule_chunkwise_f32
