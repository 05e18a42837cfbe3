//! Causal softmax attention at f32 as production kernels compute it: the
//! online softmax of `m3::cost::softmax_attention_tiled` over blocks of
//! queries × blocks of keys, the blocks above the diagonal skipped, each
//! block's scores and reads as matrix products into buffers made once, and
//! the exponentials in the widest vectors this CPU has. It holds one block
//! of scores, never the N × N matrix.

use super::general_mat_mul;
use super::simd::LANES;
use crate::input::{InputError, check_qkv, finite};
use crate::m3::cost::check_block;
use ndarray::{Array2, ArrayRef2, s};

/// Queries per block: the rows of a block of scores. With `KEY_BLOCK`,
/// the fastest of the sizes from 32 × 128 to 512 × 1024 timed at N = 16384,
/// d = 64 on the machine that wrote this (a 512 KiB block of scores).
pub const QUERY_BLOCK: usize = 256;
/// Keys per block, a multiple of `QUERY_BLOCK`, so that a block of keys
/// never reaches past the last query of its block of queries.
pub const KEY_BLOCK: usize = 512;

dispatched! {
    /// `online_softmax_rows` on the current path (`simd::Path`): the
    /// exponential's polynomial is a chain of multiply–adds, fused on the
    /// paths with FMA.
    fn online_softmax_rows_wide(
        p: &mut [f32],
        stride: usize,
        columns: usize,
        diagonal: usize,
        max: &mut [f32],
        denominator: &mut [f32],
        out: &mut [f32],
    ) -> Result<(), (usize, usize, f32)>
        = online_softmax_rows::<true>, else online_softmax_rows::<false>;
}

// ANCHOR: online_softmax_rows
/// The online-softmax update of a block of scores s, in base 2 (scores
/// come pre-multiplied by log₂ e), in place. Row i of p holds `columns`
/// scores (rows `stride` apart) of which query i sees the first
/// `diagonal` + i + 1: they become 2^(s − μ'), the rest 0; its running
/// maximum μ becomes μ', its denominator ℓ becomes
/// 2^(μ − μ') ℓ + Σ 2^(s − μ'), and its row of the unnormalised output
/// `out` (rows of m floats) is multiplied by 2^(μ − μ'). A score query i
/// sees that is not finite (a product that overflowed f32) stops it:
/// Err((i, j, s_ij)) for the first in its row. FMA: fuse the multiply–adds
/// of the exponential (only where the CPU has FMA).
#[inline(always)]
pub fn online_softmax_rows<const FMA: bool>(
    p: &mut [f32],
    stride: usize,
    columns: usize,
    diagonal: usize,
    max: &mut [f32],
    denominator: &mut [f32],
    out: &mut [f32],
) -> Result<(), (usize, usize, f32)> {
    let m = out.len() / max.len();
    let rows = p.chunks_exact_mut(stride).zip(out.chunks_exact_mut(m));
    for (i, (p_i, out_i)) in rows.enumerate() {
        let visible = (diagonal + i + 1).min(columns);
        let (seen, future) = p_i[..columns].split_at_mut(visible);
        let (largest, finite) = largest_and_finite(seen);
        if !finite {
            let j = seen.iter().position(|x| !x.is_finite()).unwrap_or(0);
            return Err((i, j, seen[j]));
        }
        future.fill(0.0); // the future gets weight 0
        let new_max = largest.max(max[i]);
        let rescale = exp2::<FMA>(max[i] - new_max); // 2^(−126) at first
        let total = exp2_minus_sum::<FMA>(seen, new_max);
        denominator[i] = denominator[i] * rescale + total;
        out_i.iter_mut().for_each(|o| *o *= rescale);
        max[i] = new_max;
    }
    Ok(())
}

/// The largest entry, `LANES` (16) lanes at a time, and whether every
/// entry is finite, in the same pass: the bits of |x| as an integer are
/// below those of +∞ exactly when x is finite (NaN's are above).
#[inline(always)]
#[allow(clippy::needless_range_loop)] // index loops over lanes vectorise
pub fn largest_and_finite(x: &[f32]) -> (f32, bool) {
    const ABS: u32 = 0x7fff_ffff; // every bit but the sign
    let mut lanes = [f32::NEG_INFINITY; LANES];
    let mut widest = [0u32; LANES]; // the largest |x| seen, as bits
    let mut chunks = x.chunks_exact(LANES);
    for c in &mut chunks {
        for l in 0..LANES {
            lanes[l] = if c[l] > lanes[l] { c[l] } else { lanes[l] };
            widest[l] = widest[l].max(c[l].to_bits() & ABS);
        }
    }
    let rest = chunks.remainder();
    let widest = rest.iter().map(|x| x.to_bits() & ABS).chain(widest);
    let finite = widest.max().unwrap_or(0) < f32::INFINITY.to_bits();
    let largest = lanes
        .iter()
        .chain(rest)
        .fold(f32::NEG_INFINITY, |a, &b| a.max(b));
    (largest, finite)
}

/// x ← 2^(x − μ) for every entry (all x ≤ μ), and their sum, `LANES`
/// lanes at a time.
#[inline(always)]
#[allow(clippy::needless_range_loop)]
pub fn exp2_minus_sum<const FMA: bool>(x: &mut [f32], mu: f32) -> f32 {
    let mut lanes = [0.0f32; LANES];
    let mut chunks = x.chunks_exact_mut(LANES);
    for c in &mut chunks {
        for l in 0..LANES {
            c[l] = exp2::<FMA>(c[l] - mu);
            lanes[l] += c[l];
        }
    }
    let mut total: f32 = lanes.iter().sum();
    for x in chunks.into_remainder() {
        *x = exp2::<FMA>(*x - mu);
        total += *x;
    }
    total
}

/// 2ˣ for x ≤ 0 without branches, so that loops over it vectorise:
/// x = k + r with |r| ≤ 1/2, 2ʳ by its Taylor polynomial of degree 7
/// (relative error below 2e-7, tested against f64), 2ᵏ from the exponent
/// bits; x below −126 is taken as −126 (2⁻¹²⁶ ≈ 1e-38, as good as 0 here).
#[inline(always)]
pub fn exp2<const FMA: bool>(x: f32) -> f32 {
    const ROUND: f32 = 12_582_912.0; // 1.5 · 2²³: adding it rounds to an integer
    const TAYLOR: [f32; 7] = [
        1.525_273_4e-5, // (ln 2)⁷ / 7!
        1.540_353e-4,
        1.333_355_8e-3,
        9.618_129e-3,
        5.550_411e-2,
        0.240_226_5,
        std::f32::consts::LN_2,
    ];
    let x = x.max(-126.0);
    let rounded = x + ROUND;
    let r = x - (rounded - ROUND);
    let mut p = TAYLOR[0];
    for c in &TAYLOR[1..] {
        p = if FMA { p.mul_add(r, *c) } else { p * r + c };
    }
    p = if FMA { p.mul_add(r, 1.0) } else { p * r + 1.0 };
    // The low bits of `rounded` hold k; 2ᵏ has exponent field k + 127.
    let bits = rounded.to_bits().wrapping_sub(ROUND.to_bits() - 127) << 23;
    p * f32::from_bits(bits)
}
// ANCHOR_END: online_softmax_rows

/// The largest entry of finite scores (the decode steps check them
/// first): [`largest_and_finite`]'s maximum.
#[inline(always)]
pub fn largest(x: &[f32]) -> f32 {
    largest_and_finite(x).0
}

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
    softmax_attention_blocks_f32(q, k, v, QUERY_BLOCK, KEY_BLOCK)
}

/// `softmax_attention_tiled_f32` with blocks of `queries` × `keys`, keys
/// a multiple of queries (the block sizes the bench tries).
pub fn softmax_attention_blocks_f32(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    queries: usize,
    keys: usize,
) -> Result<Array2<f32>, InputError> {
    check_qkv(q, k, v, true)?;
    check_block(queries)?;
    if keys % queries != 0 || keys == 0 {
        let rule = "a block of keys is a whole number of blocks of queries";
        let (name, value) = ("keys", keys);
        return Err(InputError::BadParameter { name, value, rule });
    }
    let (n, m, stride) = (q.nrows(), v.ncols(), keys);
    let scale = std::f32::consts::LOG2_E / (q.ncols() as f32).sqrt();
    let q = q * scale; // Q log₂e /√d, once: e^(s/√d) = 2^(s log₂e /√d)
    let mut scores = Array2::<f32>::zeros((queries, keys));
    let (mut max, mut denominator) = (vec![0.0; queries], vec![0.0; queries]);
    let mut o = Array2::<f32>::zeros((n, m)); // unnormalised until the end
    for start in (0..n).step_by(queries) {
        let rows = start..(start + queries).min(n);
        let r = rows.len();
        let q_b = q.slice(s![rows.clone(), ..]);
        max.fill(f32::NEG_INFINITY);
        denominator.fill(0.0);
        for first in (0..rows.end).step_by(keys) {
            let cols = first..(first + keys).min(rows.end);
            let mut p = scores.slice_mut(s![..r, ..cols.len()]);
            let k_b = k.slice(s![cols.clone(), ..]);
            general_mat_mul(1.0, &q_b, &k_b.t(), 0.0, &mut p); // scores
            let out = &mut o.as_slice_mut().expect("new")[start * m..][..r * m];
            let p = &mut scores.as_slice_mut().expect("new")[..r * stride];
            online_softmax_rows_wide(
                p,
                stride,
                cols.len(),
                start - first, // keys start at or before the first query
                &mut max[..r],
                &mut denominator[..r],
                out,
            )
            .map_err(|(i, j, x)| InputError::Overflow {
                name: "the scores Q Kᵀ log₂e / √d",
                at: [start + i, first + j],
                value: f64::from(x),
            })?;
            let p = scores.slice(s![..r, ..cols.len()]);
            let mut out = o.slice_mut(s![rows.clone(), ..]);
            general_mat_mul(1.0, &p, &v.slice(s![cols, ..]), 1.0, &mut out);
        }
        let mut out = o.slice_mut(s![rows, ..]);
        for (mut o_t, &l) in out.rows_mut().into_iter().zip(&denominator) {
            o_t.mapv_inplace(|x| x / l);
        }
    }
    finite("O", o)
}
// ANCHOR_END: softmax_attention_tiled_f32
