//! Causal softmax attention at f32 as production kernels compute it: the
//! online softmax of `m3::cost::softmax_attention_tiled` over blocks of
//! queries × blocks of keys, the blocks above the diagonal skipped, each
//! block's scores and reads as matrix products into buffers made once, and
//! the exponentials in the widest vectors this CPU has. It holds one block
//! of scores, never the N × N matrix.

use crate::input::{InputError, check_qkv};
use crate::paper::retrieval::fast::exp;
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayRef2, s};

/// Queries per block: the rows of a block of scores.
pub const QUERY_BLOCK: usize = 64;
/// Keys per block, a multiple of `QUERY_BLOCK`, so that a block of keys
/// never reaches past the last query of its block of queries.
pub const KEY_BLOCK: usize = 256;

in_widest_vectors! {
    /// `online_softmax_rows` in the widest vectors this CPU has.
    fn online_softmax_rows_wide(
        p: &mut [f32],
        stride: usize,
        columns: usize,
        diagonal: usize,
        max: &mut [f32],
        denominator: &mut [f32],
        out: &mut [f32],
    ) = online_softmax_rows;
}

// ANCHOR: online_softmax_rows
/// The online-softmax update of a block of scores s, in place. Row i of
/// p holds `columns` scores (rows `stride` apart) of which query i sees
/// the first `diagonal` + i + 1: they become e^(s − μ'), the rest 0; its
/// running maximum μ becomes μ', its denominator ℓ becomes
/// e^(μ − μ') ℓ + Σ e^(s − μ'), and its row of the unnormalised output
/// `out` (rows of m floats) is multiplied by e^(μ − μ').
#[inline(always)]
pub fn online_softmax_rows(
    p: &mut [f32],
    stride: usize,
    columns: usize,
    diagonal: usize,
    max: &mut [f32],
    denominator: &mut [f32],
    out: &mut [f32],
) {
    let m = out.len() / max.len();
    let rows = p.chunks_exact_mut(stride).zip(out.chunks_exact_mut(m));
    for (i, (p_i, out_i)) in rows.enumerate() {
        let visible = (diagonal + i + 1).min(columns);
        let (seen, future) = p_i[..columns].split_at_mut(visible);
        future.fill(0.0); // the future gets weight 0
        let new_max = largest(seen).max(max[i]);
        let rescale = exp(max[i] - new_max); // e^(−88) ≈ 0 at first
        let total = exp_minus_sum(seen, new_max);
        denominator[i] = denominator[i] * rescale + total;
        out_i.iter_mut().for_each(|o| *o *= rescale);
        max[i] = new_max;
    }
}

/// The largest entry, eight lanes at a time.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // index loops over lanes vectorise
pub(super) fn largest(x: &[f32]) -> f32 {
    let mut lanes = [f32::NEG_INFINITY; 8];
    let mut chunks = x.chunks_exact(8);
    for c in &mut chunks {
        for l in 0..8 {
            lanes[l] = if c[l] > lanes[l] { c[l] } else { lanes[l] };
        }
    }
    let rest = chunks.remainder().iter();
    lanes
        .iter()
        .chain(rest)
        .fold(f32::NEG_INFINITY, |a, &b| a.max(b))
}

/// x ← e^(x − μ) for every entry, and their sum, eight lanes at a time.
#[inline(always)]
#[allow(clippy::needless_range_loop)]
pub(super) fn exp_minus_sum(x: &mut [f32], mu: f32) -> f32 {
    let mut lanes = [0.0f32; 8];
    let mut chunks = x.chunks_exact_mut(8);
    for c in &mut chunks {
        for l in 0..8 {
            c[l] = exp(c[l] - mu);
            lanes[l] += c[l];
        }
    }
    let mut total: f32 = lanes.iter().sum();
    for x in chunks.into_remainder() {
        *x = exp(*x - mu);
        total += *x;
    }
    total
}
// ANCHOR_END: online_softmax_rows

// ANCHOR: softmax_attention_tiled_f32
/// `softmax_attention_tiled` at f32, for speed: blocks of `QUERY_BLOCK`
/// queries × `KEY_BLOCK` keys at or below the diagonal, the scores
/// P = (Q/√d) K_bᵀ and the read O += P V_b as matrix products into one
/// score buffer and the output itself, the online softmax in between.
/// q, k: (N, d), v: (N, m); returns O: (N, m).
pub fn softmax_attention_tiled_f32(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Array2<f32>, InputError> {
    check_qkv(q, k, v, true)?;
    let (n, m) = (q.nrows(), v.ncols());
    let q = q * (1.0 / (q.ncols() as f32).sqrt()); // Q/√d, once
    let mut scores = Array2::<f32>::zeros((QUERY_BLOCK, KEY_BLOCK));
    let (mut max, mut denominator) = ([0.0; QUERY_BLOCK], [0.0; QUERY_BLOCK]);
    let mut o = Array2::<f32>::zeros((n, m)); // unnormalised until the end
    for start in (0..n).step_by(QUERY_BLOCK) {
        let rows = start..(start + QUERY_BLOCK).min(n);
        let r = rows.len();
        let q_b = q.slice(s![rows.clone(), ..]);
        max.fill(f32::NEG_INFINITY);
        denominator.fill(0.0);
        for keys in (0..rows.end).step_by(KEY_BLOCK) {
            let cols = keys..(keys + KEY_BLOCK).min(rows.end);
            let mut p = scores.slice_mut(s![..r, ..cols.len()]);
            let k_b = k.slice(s![cols.clone(), ..]);
            general_mat_mul(1.0, &q_b, &k_b.t(), 0.0, &mut p); // scores
            let out = &mut o.as_slice_mut().expect("new")[start * m..][..r * m];
            let p = &mut scores.as_slice_mut().expect("new")[..r * KEY_BLOCK];
            online_softmax_rows_wide(
                p,
                KEY_BLOCK,
                cols.len(),
                start - keys, // keys start at or before the first query
                &mut max[..r],
                &mut denominator[..r],
                out,
            );
            let p = scores.slice(s![..r, ..cols.len()]);
            let mut out = o.slice_mut(s![rows.clone(), ..]);
            general_mat_mul(1.0, &p, &v.slice(s![cols, ..]), 1.0, &mut out);
        }
        let mut out = o.slice_mut(s![rows, ..]);
        for (mut o_t, &l) in out.rows_mut().into_iter().zip(&denominator) {
            o_t.mapv_inplace(|x| x / l);
        }
    }
    Ok(o)
}
// ANCHOR_END: softmax_attention_tiled_f32
