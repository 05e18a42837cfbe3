//! Chapter "Why attention is expensive": what softmax attention stores and
//! computes as the sequence grows, counted by code rather than measured by
//! a clock. One head of one layer throughout; a model multiplies every
//! count by its number of heads and layers. The printed cost tables are in
//! [`study`], the tests in `tests.rs`.
//!
//! Shapes: q_t, k_t: (d), v_t: (m); the cache after t tokens holds
//! keys: (t, d) and values: (t, m).

pub mod study;

use crate::causal::mask_future;
use crate::input::{InputError, check_qkv, finite, same_cols};
use crate::m3::attention::softmax_rows;
use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2, ArrayView2, Axis, s};

// ANCHOR: KvCache
/// What a decoder keeps so that the next token can attend to the past:
/// every key and value so far. keys: (t, d), values: (t, m).
pub struct KvCache {
    pub keys: Array2<f64>,
    pub values: Array2<f64>,
}

impl KvCache {
    /// An empty cache for keys of width d and values of width m.
    pub fn new(d: usize, m: usize) -> KvCache {
        KvCache {
            keys: Array2::zeros((0, d)),
            values: Array2::zeros((0, m)),
        }
    }

    /// One decoding step: append k_t and v_t, then read the whole cache
    /// with q_t, o_t = Σ_{j≤t} softmax_j(k_jᵀq_t / √d) v_j. Returns o_t: (m).
    pub fn decode(
        &mut self,
        q: &ArrayRef1<f64>,
        k: &ArrayRef1<f64>,
        v: &ArrayRef1<f64>,
    ) -> Result<Array1<f64>, InputError> {
        let (q, k, v) = (as_row(q), as_row(k), as_row(v)); // (1, width)
        check_qkv(&q, &k, &v, true)?;
        same_cols(("k", &k), ("cached keys", &self.keys), "one width d")?;
        same_cols(("v", &v), ("cached values", &self.values), "one m")?;
        self.keys.append(Axis(0), k).expect("widths checked");
        self.values.append(Axis(0), v).expect("widths checked");
        let d = self.keys.ncols() as f64;
        let scores = q.dot(&self.keys.t()) / d.sqrt(); // (1, t)
        let read = finite("k_jᵀq_t / √d", scores) // as softmax_attention
            .and_then(|s| {
                finite("o_t", softmax_rows(&s).row(0).dot(&self.values))
            });
        if read.is_err() {
            self.forget_last(); // a refused step leaves the cache as it was
        }
        read // o_t: (m)
    }

    /// Drop the last token's key and value.
    fn forget_last(&mut self) {
        let t = self.keys.nrows() - 1;
        self.keys = self.keys.slice(s![..t, ..]).to_owned();
        self.values = self.values.slice(s![..t, ..]).to_owned();
    }

    /// Floats held: t·d for the keys plus t·m for the values.
    pub fn floats(&self) -> usize {
        self.keys.len() + self.values.len()
    }
}
// ANCHOR_END: KvCache

// ANCHOR: softmax_attention_tiled
/// Causal softmax(Q Kᵀ / √d) V without the N × N matrix: blocks of `block`
/// queries meet blocks of keys at or below the diagonal; each query keeps
/// a running maximum, denominator and unnormalised output, rescaled by
/// e^(old max − new max) when a block raises the maximum.
/// q, k: (N, d), v: (N, m), block ≥ 1; returns O: (N, m).
pub fn softmax_attention_tiled(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    block: usize,
) -> Result<Array2<f64>, InputError> {
    check_qkv(q, k, v, true)?;
    check_block(block)?;
    let (n, scale) = (q.nrows(), 1.0 / (q.ncols() as f64).sqrt());
    let mut o = Array2::zeros((n, v.ncols()));
    for start in (0..n).step_by(block) {
        let rows = start..(start + block).min(n);
        let q_b = q.slice(s![rows.clone(), ..]);
        let mut max = Array1::from_elem(rows.len(), f64::NEG_INFINITY);
        let mut denominator = Array1::<f64>::zeros(rows.len());
        let mut out = o.slice_mut(s![rows.clone(), ..]); // unnormalised
        for keys in (0..=start).step_by(block) {
            let cols = keys..(keys + block).min(n);
            let scores = q_b.dot(&k.slice(s![cols.clone(), ..]).t()) * scale;
            let mut p = finite("Q Kᵀ / √d", scores) // as softmax_attention
                .map_err(|e| e.shifted(start, keys))?;
            if keys == start {
                mask_future(&mut p, f64::NEG_INFINITY); // the diagonal block
            }
            for (i, mut p_i) in p.rows_mut().into_iter().enumerate() {
                let new_max = p_i.fold(max[i], |a, &b| a.max(b));
                let rescale = (max[i] - new_max).exp(); // 0 at first
                p_i.mapv_inplace(|x| (x - new_max).exp());
                denominator[i] = denominator[i] * rescale + p_i.sum();
                out.row_mut(i).mapv_inplace(|x| x * rescale);
                max[i] = new_max;
            }
            out += &p.dot(&v.slice(s![cols, ..])); // add this block's reads
        }
        out /= &denominator.insert_axis(Axis(1));
    }
    finite("O", o)
}
// ANCHOR_END: softmax_attention_tiled

/// A tile's size: at least one query and one key.
pub fn check_block(block: usize) -> Result<(), InputError> {
    if block == 0 {
        let rule = "a block holds at least one token";
        return Err(InputError::BadParameter {
            name: "block",
            value: block,
            rule,
        });
    }
    Ok(())
}

/// A vector (w) seen as a matrix with one row, (1, w).
fn as_row(x: &ArrayRef1<f64>) -> ArrayView2<'_, f64> {
    x.view().insert_axis(Axis(0))
}

// ANCHOR: attention_counts
/// Floats in the score matrix Q Kᵀ of a sequence of n tokens: n².
pub fn score_matrix_floats(n: u64) -> u64 {
    n * n
}

/// Scores a causal mask leaves visible: query t sees t keys, so
/// 1 + 2 + … + n = n(n + 1)/2, still growing as n².
pub fn causal_visible_scores(n: u64) -> u64 {
    n * (n + 1) / 2
}

/// Floats in the KV cache after n tokens: n keys of width d and n values
/// of width m.
pub fn kv_cache_floats(n: u64, d: u64, m: u64) -> u64 {
    n * (d + m)
}

/// FLOPs of the decoding step for token t, which reads t cached tokens:
/// t·d multiply–adds for the scores K q_t and t·m for the read Aᵀ V, two
/// FLOPs each. The softmax's few operations per score are left out.
pub fn decode_flops(t: u64, d: u64, m: u64) -> u64 {
    2 * t * (d + m)
}
// ANCHOR_END: attention_counts

// ANCHOR: fixed_state_counts
/// Floats in the fixed-size state of the chapters to come: a memory
/// S: (m, p) and a normaliser z: (p), whatever the length.
pub fn fixed_state_floats(p: u64, m: u64) -> u64 {
    m * p + p
}

/// FLOPs of one step of that state: write v φ(k)ᵀ into S and φ(k) into
/// z, read S φ(q) and zᵀφ(q); m·p + p multiply–adds each way.
pub fn fixed_state_step_flops(p: u64, m: u64) -> u64 {
    2 * 2 * (m * p + p)
}
// ANCHOR_END: fixed_state_counts

#[cfg(test)]
mod tests;
