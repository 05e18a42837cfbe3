//! One generated token at f32: the decode step of softmax attention,
//! which appends to and reads a KV cache of every past token, and the
//! decode step of linear attention, which updates and reads a state of
//! fixed size. Both allocate nothing per step once their memory is
//! reserved, so that the benchmark times the step and not the allocator.

use super::linear_attention::recurrent_token_f32;
use super::softmax::{exp2_minus_sum, largest};
use crate::input::{
    InputError, no_negative_feature, nonempty_finite, normaliser,
};
use ndarray::ArrayView2;

dispatched! {
    /// `cache_read` in the widest vectors this CPU has.
    fn cache_read_wide(
        keys: &[f32],
        values: &[f32],
        q: &[f32],
        scores: &mut [f32],
        out: &mut [f32],
    ) -> Option<(usize, f32)> = cache_read;
}

dispatched! {
    /// `recurrent_token_f32` in the widest vectors this CPU has.
    fn state_step_wide(
        s: &mut [f32],
        z: &mut [f32],
        q: &[f32],
        k: &[f32],
        v: &[f32],
        read: &mut [f32],
    ) -> f32 = recurrent_token_f32;
}

/// A token's vector as a (1, len) view, for the checks of `input`.
fn row(x: &[f32]) -> ArrayView2<'_, f32> {
    ArrayView2::from_shape((1, x.len()), x).expect("a slice is one row")
}

/// A token's vectors have the widths the memory was made for and only
/// finite entries; an error names the vector, and its width or the
/// position of its first NaN or ±∞, if not. Allocates nothing.
fn check_token(
    [q, k, v]: [(&'static str, &[f32]); 3],
    d: usize,
    m: usize,
) -> Result<(), InputError> {
    for (name, x, want) in [(q.0, q.1, d), (k.0, k.1, d), (v.0, v.1, m)] {
        if x.len() != want {
            return Err(InputError::ShapeMismatch {
                left: (name, [1, x.len()]),
                right: ("the memory's width", [1, want]),
                rule: "a token's vectors have the widths the memory was made for",
            });
        }
        nonempty_finite(name, &row(x))?;
    }
    Ok(())
}

/// The buffer a read goes into has the width of a value.
fn out_width(out: &[f32], m: usize) -> Result<(), InputError> {
    if out.len() == m {
        return Ok(());
    }
    Err(InputError::ShapeMismatch {
        left: ("out", [1, out.len()]),
        right: ("the memory's values", [1, m]),
        rule: "a read has the width of a value",
    })
}

/// A read that left the range of f32: an overflow naming `out` and its
/// first bad entry.
fn finite_read(out: &[f32]) -> Result<(), InputError> {
    match out.iter().position(|x| !x.is_finite()) {
        None => Ok(()),
        Some(j) => Err(InputError::Overflow {
            name: "out",
            at: [0, j],
            value: f64::from(out[j]),
        }),
    }
}

// ANCHOR: KvCacheF32
/// The KV cache of `m3::cost::KvCache` at f32, in flat row-major buffers
/// reserved up front: keys: (t, d), values: (t, m), and t scores.
pub struct KvCacheF32 {
    d: usize,
    m: usize,
    keys: Vec<f32>,
    values: Vec<f32>,
    scores: Vec<f32>,
}

impl KvCacheF32 {
    /// An empty cache with room for `capacity` tokens before it grows.
    pub fn new(d: usize, m: usize, capacity: usize) -> KvCacheF32 {
        KvCacheF32 {
            d,
            m,
            keys: Vec::with_capacity(capacity * d),
            values: Vec::with_capacity(capacity * m),
            scores: Vec::with_capacity(capacity),
        }
    }

    /// One decode step: append k_t and v_t, then read every cached token
    /// with q_t: out = Σ_{j≤t} softmax_j(k_jᵀq_t / √d) v_j, into out: (m).
    /// A bad token is an error and leaves the cache as it was.
    pub fn step(
        &mut self,
        q: &[f32],
        k: &[f32],
        v: &[f32],
        out: &mut [f32],
    ) -> Result<(), InputError> {
        check_token([("q", q), ("k", k), ("v", v)], self.d, self.m)?;
        out_width(out, self.m)?;
        self.keys.extend_from_slice(k);
        self.values.extend_from_slice(v);
        self.scores.resize(self.len(), 0.0);
        let (keys, values) = (&self.keys, &self.values);
        let t = self.len() - 1;
        if let Some((j, score)) =
            cache_read_wide(keys, values, q, &mut self.scores, out)
        {
            self.truncate(t);
            return Err(InputError::Overflow {
                name: "the scores k_jᵀq_t / √d (row t, column j)",
                at: [t, j],
                value: f64::from(score),
            });
        }
        finite_read(out).inspect_err(|_| self.truncate(t))
    }

    /// Append k and v without a read: the keys and values of a prompt
    /// whose outputs are not needed.
    pub fn push(&mut self, k: &[f32], v: &[f32]) -> Result<(), InputError> {
        check_token([("k", k), ("k", k), ("v", v)], self.d, self.m)?;
        self.keys.extend_from_slice(k);
        self.values.extend_from_slice(v);
        Ok(())
    }

    /// Tokens cached.
    pub fn len(&self) -> usize {
        self.keys.len().checked_div(self.d).unwrap_or(0)
    }

    /// Whether no token is cached yet.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Forget every token after the first t (as a decoder that rolls back).
    pub fn truncate(&mut self, t: usize) {
        self.keys.truncate(t * self.d);
        self.values.truncate(t * self.m);
    }

    /// Bytes the cache's keys and values hold: t (d + m) floats of 4.
    pub fn bytes(&self) -> usize {
        (self.keys.len() + self.values.len()) * size_of::<f32>()
    }
}

/// The read of a cache of t tokens: scores K q / √d, their softmax, and
/// the weighted sum of the values into out. keys: (t, d), values: (t, m).
/// Returns the first score that overflowed, and reads nothing, if any did.
#[inline(always)]
pub fn cache_read(
    keys: &[f32],
    values: &[f32],
    q: &[f32],
    scores: &mut [f32],
    out: &mut [f32],
) -> Option<(usize, f32)> {
    let (d, m) = (q.len(), out.len());
    let scale = std::f32::consts::LOG2_E / (d as f32).sqrt(); // base 2
    for (s, k_j) in scores.iter_mut().zip(keys.chunks_exact(d)) {
        *s = dot(k_j, q) * scale;
    }
    if let Some(j) = scores.iter().position(|s| !s.is_finite()) {
        return Some((j, scores[j]));
    }
    let total = exp2_minus_sum::<false>(scores, largest(scores));
    out.fill(0.0);
    for (&w, v_j) in scores.iter().zip(values.chunks_exact(m)) {
        let w = w / total;
        out.iter_mut().zip(v_j).for_each(|(o, &v)| *o += w * v);
    }
    None
}
// ANCHOR_END: KvCacheF32

/// aᵀb, eight lanes at a time.
#[inline(always)]
#[allow(clippy::needless_range_loop)] // index loops over lanes vectorise
fn dot(a: &[f32], b: &[f32]) -> f32 {
    let mut lanes = [0.0f32; 8];
    let (mut a8, mut b8) = (a.chunks_exact(8), b.chunks_exact(8));
    for (x, y) in (&mut a8).zip(&mut b8) {
        for l in 0..8 {
            lanes[l] += x[l] * y[l];
        }
    }
    let tail: f32 = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .map(|(x, y)| x * y)
        .sum();
    lanes.iter().sum::<f32>() + tail
}

// ANCHOR: LinearStateF32
/// The state of causal linear attention at f32: S: (m, p) by columns and
/// z: (p), the same size after every token.
pub struct LinearStateF32 {
    s: Vec<f32>,
    z: Vec<f32>,
    m: usize,
    t: usize,
}

impl LinearStateF32 {
    /// The empty state S_0 = 0, z_0 = 0 for features of width p, values m.
    pub fn new(p: usize, m: usize) -> LinearStateF32 {
        LinearStateF32 {
            s: vec![0.0; p * m],
            z: vec![0.0; p],
            m,
            t: 0,
        }
    }

    /// One decode step: S += v φ(k)ᵀ, z += φ(k), then
    /// out = S φ(q) / zᵀφ(q), into out: (m). phi_q, phi_k: (p), v: (m).
    /// A bad token is an error before anything is written; a normaliser
    /// at or below zero, or a read that overflows, is an error after the
    /// write, and the state then holds the token.
    pub fn step(
        &mut self,
        phi_q: &[f32],
        phi_k: &[f32],
        v: &[f32],
        out: &mut [f32],
    ) -> Result<(), InputError> {
        let (p, m) = (self.z.len(), self.m);
        check_token([("phi_q", phi_q), ("phi_k", phi_k), ("v", v)], p, m)?;
        no_negative_feature("phi_q", &row(phi_q))?;
        no_negative_feature("phi_k", &row(phi_k))?;
        out_width(out, m)?;
        let (s, z) = (&mut self.s, &mut self.z);
        let norm = state_step_wide(s, z, phi_q, phi_k, v, out);
        self.t += 1;
        let norm = normaliser("zᵀφ(q_t)", self.t - 1, norm)?;
        out.iter_mut().for_each(|o| *o /= norm);
        finite_read(out)
    }

    /// Bytes the state holds: (m p + p) floats of 4, whatever t is.
    pub fn bytes(&self) -> usize {
        (self.s.len() + self.z.len()) * size_of::<f32>()
    }
}
// ANCHOR_END: LinearStateF32
