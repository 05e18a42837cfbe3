//! Causal linear attention at f32: the recurrent form, one token at a
//! time in place, and the chunkwise form, a few matrix products per chunk.

use super::{ROWS, general_mat_mul, row_major, slice, tally};
use crate::causal::mask_future;
use crate::input::{
    InputError, check_chunk, check_features, finite, normaliser, normalisers,
};
use ndarray::linalg::general_mat_vec_mul;
use ndarray::{Array1, Array2, ArrayRef2, Zip, s};

dispatched! {
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
        tally(4 * B); // two multiply–adds a row, counted under test
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
    check_features(phi_q, phi_k, v, true)?;
    let (n, p, m) = (phi_q.nrows(), phi_q.ncols(), v.ncols());
    let mut s = vec![0.0f32; p * m]; // S_0 = 0, by columns
    let mut z = vec![0.0f32; p]; // z_0 = 0
    let [q_all, k_all, v_all] = row_major(phi_q, phi_k, v);
    let q_rows = slice(&q_all).chunks_exact(p);
    let k_rows = slice(&k_all).chunks_exact(p);
    let v_rows = slice(&v_all).chunks_exact(m);
    let mut o = Array2::<f32>::zeros((n, m));
    let o_rows = o.as_slice_mut().expect("a new array").chunks_exact_mut(m);
    let tokens = q_rows.zip(k_rows).zip(v_rows).zip(o_rows).enumerate();
    for (t, (((q_t, k_t), v_t), o_t)) in tokens {
        let norm = recurrent_token_wide(&mut s, &mut z, q_t, k_t, v_t, o_t);
        let norm = normaliser("z_tᵀq_t", t, norm)?; // > 0
        o_t.iter_mut().for_each(|o| *o /= norm); // o_t = S_t q / z_tᵀ q
    }
    finite("O", o)
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
    check_features(phi_q, phi_k, v, true)?;
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
        normalisers("z_tᵀq_t", &norm_c).map_err(|e| e.below(start))?;
        Zip::from(out.rows_mut())
            .and(&norm_c)
            .for_each(|mut o_t, &x| o_t.mapv_inplace(|y| y / x));
        general_mat_mul(1.0, &v_c.t(), &k, 1.0, &mut s); // S += Vᵀ Φ_K
        k.rows().into_iter().for_each(|k_t| z += &k_t); // z += Φ_Kᵀ 1
    }
    finite("O", o)
}
// ANCHOR_END: linear_attention_chunkwise_f32
