//! One generated token at f32: the decode step of softmax attention,
//! which appends to and reads a KV cache of every past token, and the
//! decode step of linear attention, which updates and reads a state of
//! fixed size. Both allocate nothing per step once their memory is
//! reserved, so that the benchmark times the step and not the allocator.

use super::linear_attention::recurrent_token_f32;
use super::softmax::{exp2_minus_sum, largest};

in_widest_vectors! {
    /// `cache_read` in the widest vectors this CPU has.
    fn cache_read_wide(
        keys: &[f32],
        values: &[f32],
        q: &[f32],
        scores: &mut [f32],
        out: &mut [f32],
    ) = cache_read;
}

in_widest_vectors! {
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

/// Panics unless a token's vectors have the widths the memory was made
/// for, naming both.
fn check_widths(q: &[f32], k: &[f32], v: &[f32], d: usize, m: usize) {
    assert!(
        q.len() == d && k.len() == d,
        "q has {} entries and k {}, but the memory's keys have d = {d}",
        q.len(),
        k.len()
    );
    assert_eq!(
        v.len(),
        m,
        "v has {} entries, the memory's m = {m}",
        v.len()
    );
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
    pub fn step(&mut self, q: &[f32], k: &[f32], v: &[f32], out: &mut [f32]) {
        check_widths(q, k, v, self.d, self.m);
        self.keys.extend_from_slice(k);
        self.values.extend_from_slice(v);
        self.scores.resize(self.len(), 0.0);
        let (keys, values) = (&self.keys, &self.values);
        cache_read_wide(keys, values, q, &mut self.scores, out);
    }

    /// Append k and v without a read: the keys and values of a prompt
    /// whose outputs are not needed.
    pub fn push(&mut self, k: &[f32], v: &[f32]) {
        check_widths(k, k, v, self.d, self.m);
        self.keys.extend_from_slice(k);
        self.values.extend_from_slice(v);
    }

    /// Tokens cached.
    pub fn len(&self) -> usize {
        self.keys.len() / self.d
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
#[inline(always)]
pub fn cache_read(
    keys: &[f32],
    values: &[f32],
    q: &[f32],
    scores: &mut [f32],
    out: &mut [f32],
) {
    let (d, m) = (q.len(), out.len());
    let scale = std::f32::consts::LOG2_E / (d as f32).sqrt(); // base 2
    for (s, k_j) in scores.iter_mut().zip(keys.chunks_exact(d)) {
        *s = dot(k_j, q) * scale;
    }
    let total = exp2_minus_sum::<false>(scores, largest(scores));
    out.fill(0.0);
    for (&w, v_j) in scores.iter().zip(values.chunks_exact(m)) {
        let w = w / total;
        out.iter_mut().zip(v_j).for_each(|(o, &v)| *o += w * v);
    }
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
}

impl LinearStateF32 {
    /// The empty state S_0 = 0, z_0 = 0 for features of width p, values m.
    pub fn new(p: usize, m: usize) -> LinearStateF32 {
        LinearStateF32 {
            s: vec![0.0; p * m],
            z: vec![0.0; p],
            m,
        }
    }

    /// One decode step: S += v φ(k)ᵀ, z += φ(k), then
    /// out = S φ(q) / zᵀφ(q), into out: (m). phi_q, phi_k: (p), v: (m).
    pub fn step(
        &mut self,
        phi_q: &[f32],
        phi_k: &[f32],
        v: &[f32],
        out: &mut [f32],
    ) {
        check_widths(phi_q, phi_k, v, self.z.len(), self.m);
        let (s, z) = (&mut self.s, &mut self.z);
        let norm = state_step_wide(s, z, phi_q, phi_k, v, out);
        out.iter_mut().for_each(|o| *o /= norm);
    }

    /// Bytes the state holds: (m p + p) floats of 4, whatever t is.
    pub fn bytes(&self) -> usize {
        (self.s.len() + self.z.len()) * size_of::<f32>()
    }
}
// ANCHOR_END: LinearStateF32
