//! The token mixers of the language model, forward and backward, for
//! every (sequence, head) of a batch: softmax attention and linear
//! attention with the sum rule in their attention (T × T) forms, which
//! pay at a context of a few dozen tokens, and the delta rule in its
//! recurrent form, every fast-weight state kept for the backward pass.
//! Generic over the float type: the trainer runs f32, the gradient
//! checks f64. Nothing here allocates; the caches are made once.

// The loops index several slices at once by the same position.
#![allow(clippy::needless_range_loop)]

pub use crate::paper::language_model::{EPS, Mixer};
use crate::phi::FeatureMap as Phi;
use ndarray::NdFloat;

/// The sizes a mixer works at: `seqs` sequences of `t` tokens, `heads`
/// heads of width `dh`, p features.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Dims {
    pub seqs: usize,
    pub t: usize,
    pub heads: usize,
    pub dh: usize,
    pub p: usize,
}

impl Dims {
    fn d(&self) -> usize {
        self.heads * self.dh
    }
}

/// What the forward pass keeps for the backward pass, made once.
pub struct Cache<T> {
    /// φ(q), φ(k) per (sequence, head, token): p each.
    fq: Vec<T>,
    fk: Vec<T>,
    /// q̄, k̄ (the delta rule's keys and queries) and the sums they were
    /// divided by.
    qb: Vec<T>,
    kb: Vec<T>,
    sq: Vec<T>,
    sk: Vec<T>,
    /// Attention weights per (sequence, head): T × T.
    att: Vec<T>,
    /// The attention normaliser per token.
    den: Vec<T>,
    /// The fast weights after each token (delta rule): d_h × p each, and
    /// the running sum z_t of the keys (p each).
    w: Vec<T>,
    z: Vec<T>,
    /// Scratch of the backward pass.
    dw: Vec<T>,
    dz: Vec<T>,
    g: Vec<T>,
    e: Vec<T>,
    tmp: Vec<T>,
}

impl<T: NdFloat> Cache<T> {
    /// The caches `mixer` needs at `dims`.
    pub fn new(mixer: Mixer, dims: Dims) -> Cache<T> {
        let Dims {
            seqs,
            t,
            heads,
            dh,
            p,
        } = dims;
        let rows = seqs * heads * t;
        let zero = |n: usize| vec![T::zero(); n];
        let delta = mixer.has_beta();
        Cache {
            fq: zero(rows * p),
            fk: zero(rows * p),
            qb: zero(if delta { rows * p } else { 0 }),
            kb: zero(if delta { rows * p } else { 0 }),
            sq: zero(rows),
            sk: zero(rows),
            att: zero(if delta { 0 } else { seqs * heads * t * t }),
            den: zero(rows),
            w: zero(if delta { rows * dh * p } else { 0 }),
            z: zero(if delta { rows * p } else { 0 }),
            dw: zero(dh * p),
            dz: zero(p),
            g: zero(4 * p.max(dh).max(t)),
            e: zero(dh.max(t)),
            tmp: zero(4 * p.max(dh).max(t)),
        }
    }
}

fn c<T: NdFloat>(x: f64) -> T {
    T::from(x).expect("a representable constant")
}

/// φ(x) into `out`.
pub fn phi_into<T: NdFloat>(phi: Phi, x: &[T], out: &mut [T]) {
    match phi {
        Phi::EluPlusOne => {
            for (o, &x) in out.iter_mut().zip(x) {
                *o = if x > T::zero() { x + T::one() } else { x.exp() };
            }
        }
        Phi::Dpfp(nu) => {
            let m = 2 * x.len();
            let xt = |i: usize| {
                let v = x[i % x.len()];
                let v = if i < x.len() { v } else { -v };
                v.max(T::zero())
            };
            for j in 1..=nu {
                for i in 0..m {
                    out[(j - 1) * m + i] = xt(i) * xt((i + m - j) % m);
                }
            }
        }
        Phi::Favor(_) => unimplemented!("FAVOR+ is not among the LM's maps"),
    }
}

/// dL/dx into `dx` from g = dL/dφ(x) and f = φ(x).
pub fn phi_back<T: NdFloat>(phi: Phi, x: &[T], f: &[T], g: &[T], dx: &mut [T]) {
    match phi {
        Phi::EluPlusOne => {
            for ((dx, &f), &g) in dx.iter_mut().zip(f).zip(g) {
                *dx = g * f.min(T::one());
            }
        }
        Phi::Dpfp(nu) => {
            let d = x.len();
            let m = 2 * d;
            let xt = |i: usize| {
                let v = if i < d { x[i] } else { -x[i - d] };
                v.max(T::zero())
            };
            dx.fill(T::zero());
            // dL/dx̃_i, then through x̃ = [relu(x), relu(−x)].
            let mut add = |i: usize, v: T| {
                if i < d {
                    if x[i] > T::zero() {
                        dx[i] += v;
                    }
                } else if x[i - d] < T::zero() {
                    dx[i - d] -= v;
                }
            };
            for j in 1..=nu {
                for i in 0..m {
                    let gi = g[(j - 1) * m + i];
                    let back = (i + m - j) % m;
                    add(i, gi * xt(back));
                    add(back, gi * xt(i));
                }
            }
        }
        Phi::Favor(_) => unimplemented!("FAVOR+ is not among the LM's maps"),
    }
}

/// y = f / (Σf + ε) into `out`, returning the sum.
fn sum_normalise<T: NdFloat>(f: &[T], out: &mut [T]) -> T {
    let s = f.iter().fold(T::zero(), |a, &b| a + b) + c(EPS);
    for (o, &f) in out.iter_mut().zip(f) {
        *o = f / s;
    }
    s
}

/// dL/df from dL/dȳ (in `g`, overwritten) for ȳ = f/s: (g − gᵀȳ)/s.
fn sum_normalise_back<T: NdFloat>(y: &[T], s: T, g: &mut [T]) {
    let gy = dot(g, y);
    for g in g.iter_mut() {
        *g = (*g - gy) / s;
    }
}

fn dot<T: NdFloat>(a: &[T], b: &[T]) -> T {
    a.iter().zip(b).fold(T::zero(), |s, (&a, &b)| s + a * b)
}

/// The layer's output u (rows of d) from qkv (rows of 3d: q, k, v, head
/// after head within each) and β (rows of `heads`, used by the delta
/// rule only).
pub fn forward<T: NdFloat>(
    mixer: Mixer,
    dims: Dims,
    qkv: &[T],
    beta: &[T],
    u: &mut [T],
    cache: &mut Cache<T>,
) {
    let Dims {
        seqs,
        t: n,
        heads,
        dh,
        p,
    } = dims;
    let d = dims.d();
    for b in 0..seqs {
        for h in 0..heads {
            let bh = b * heads + h;
            let q = |t: usize| {
                let r = (b * n + t) * 3 * d + h * dh;
                &qkv[r..r + dh]
            };
            let k = |t: usize| {
                let r = (b * n + t) * 3 * d + d + h * dh;
                &qkv[r..r + dh]
            };
            let v = |t: usize| {
                let r = (b * n + t) * 3 * d + 2 * d + h * dh;
                &qkv[r..r + dh]
            };
            let row = |t: usize| (bh * n + t) * p;
            match mixer {
                Mixer::Softmax | Mixer::Sum(_) => {
                    let att = &mut cache.att[bh * n * n..(bh + 1) * n * n];
                    if let Mixer::Sum(phi) = mixer {
                        for t in 0..n {
                            let r = row(t);
                            phi_into(phi, q(t), &mut cache.fq[r..r + p]);
                            phi_into(phi, k(t), &mut cache.fk[r..r + p]);
                        }
                    }
                    let scale = T::one() / c::<T>(dh as f64).sqrt();
                    for t in 0..n {
                        let a = &mut att[t * n..(t + 1) * n];
                        a.fill(T::zero());
                        let mut total = T::zero();
                        match mixer {
                            Mixer::Softmax => {
                                let mut top = T::neg_infinity();
                                for j in 0..=t {
                                    a[j] = dot(q(t), k(j)) * scale;
                                    top = top.max(a[j]);
                                }
                                for x in &mut a[..=t] {
                                    *x = (*x - top).exp();
                                    total += *x;
                                }
                            }
                            _ => {
                                let fq = &cache.fq[row(t)..row(t) + p];
                                for j in 0..=t {
                                    a[j] =
                                        dot(fq, &cache.fk[row(j)..row(j) + p]);
                                    total += a[j];
                                }
                                total += c(EPS);
                            }
                        }
                        cache.den[bh * n + t] = total;
                        let out = (b * n + t) * d + h * dh;
                        let out = &mut u[out..out + dh];
                        out.fill(T::zero());
                        for j in 0..=t {
                            a[j] /= total;
                            for (o, &vj) in out.iter_mut().zip(v(j)) {
                                *o += a[j] * vj;
                            }
                        }
                    }
                }
                Mixer::Delta {
                    phi,
                    sum_norm,
                    attn_norm,
                } => {
                    let size = dh * p;
                    for t in 0..n {
                        let r = row(t);
                        phi_into(phi, q(t), &mut cache.fq[r..r + p]);
                        phi_into(phi, k(t), &mut cache.fk[r..r + p]);
                        if sum_norm {
                            cache.sq[bh * n + t] = sum_normalise(
                                &cache.fq[r..r + p],
                                &mut cache.qb[r..r + p],
                            );
                            cache.sk[bh * n + t] = sum_normalise(
                                &cache.fk[r..r + p],
                                &mut cache.kb[r..r + p],
                            );
                        } else {
                            cache.qb[r..r + p]
                                .copy_from_slice(&cache.fq[r..r + p]);
                            cache.kb[r..r + p]
                                .copy_from_slice(&cache.fk[r..r + p]);
                        }
                        let s = (bh * n + t) * size;
                        // W_t starts as W_{t−1} (zero at t = 0).
                        if t == 0 {
                            cache.w[s..s + size].fill(T::zero());
                        } else {
                            cache.w.copy_within(s - size..s, s);
                        }
                        let kb = &cache.kb[r..r + p];
                        let w = &mut cache.w[s..s + size];
                        let bt = beta[(b * n + t) * heads + h];
                        for (i, &vi) in v(t).iter().enumerate() {
                            let wi = &mut w[i * p..(i + 1) * p];
                            let err = (vi - dot(wi, kb)) * bt;
                            for (x, &kj) in wi.iter_mut().zip(kb) {
                                *x += err * kj;
                            }
                        }
                        let qb = &cache.qb[r..r + p];
                        let mut den = T::one();
                        if attn_norm {
                            // z_t = z_{t−1} + k̄_t.
                            let (prev, now) = cache.z.split_at_mut(r);
                            let z = &mut now[..p];
                            z.copy_from_slice(kb);
                            if t > 0 {
                                for (zj, &pj) in
                                    z.iter_mut().zip(&prev[r - p..])
                                {
                                    *zj += pj;
                                }
                            }
                            den = dot(z, qb) + c(EPS);
                        }
                        cache.den[bh * n + t] = den;
                        let out = (b * n + t) * d + h * dh;
                        for i in 0..dh {
                            u[out + i] = dot(&w[i * p..(i + 1) * p], qb) / den;
                        }
                    }
                }
            }
        }
    }
}

/// dL/d(qkv) and dL/dβ (overwritten) from dL/du.
#[allow(clippy::too_many_arguments)]
pub fn backward<T: NdFloat>(
    mixer: Mixer,
    dims: Dims,
    qkv: &[T],
    beta: &[T],
    u: &[T],
    du: &[T],
    dqkv: &mut [T],
    dbeta: &mut [T],
    cache: &mut Cache<T>,
) {
    let Dims {
        seqs,
        t: n,
        heads,
        dh,
        p,
    } = dims;
    let d = dims.d();
    dqkv.fill(T::zero());
    dbeta.fill(T::zero());
    let at = |b: usize, t: usize, part: usize, h: usize| {
        (b * n + t) * 3 * d + part * d + h * dh
    };
    for b in 0..seqs {
        for h in 0..heads {
            let bh = b * heads + h;
            let row = |t: usize| (bh * n + t) * p;
            let dy = |t: usize| {
                let r = (b * n + t) * d + h * dh;
                &du[r..r + dh]
            };
            match mixer {
                Mixer::Softmax | Mixer::Sum(_) => {
                    let att = &cache.att[bh * n * n..(bh + 1) * n * n];
                    let scale = T::one() / c::<T>(dh as f64).sqrt();
                    for t in 0..n {
                        let a = &att[t * n..(t + 1) * n];
                        // dP_tj = dy_t · v_j, then the normaliser's backward.
                        let dp = &mut cache.e[..n];
                        let mut mean = T::zero();
                        for j in 0..=t {
                            let vj = &qkv[at(b, j, 2, h)..at(b, j, 2, h) + dh];
                            dp[j] = dot(dy(t), vj);
                            mean += dp[j] * a[j];
                            // dv_j += P_tj dy_t
                            let dv = at(b, j, 2, h);
                            for (x, &g) in
                                dqkv[dv..dv + dh].iter_mut().zip(dy(t))
                            {
                                *x += a[j] * g;
                            }
                        }
                        match mixer {
                            Mixer::Softmax => {
                                // dS = P ⊙ (dP − Σ P dP), S = q kᵀ / √d_h.
                                for j in 0..=t {
                                    let ds = a[j] * (dp[j] - mean) * scale;
                                    let (qi, ki) =
                                        (at(b, t, 0, h), at(b, j, 1, h));
                                    for i in 0..dh {
                                        let (qv, kv) =
                                            (qkv[qi + i], qkv[ki + i]);
                                        dqkv[qi + i] += ds * kv;
                                        dqkv[ki + i] += ds * qv;
                                    }
                                }
                            }
                            _ => {
                                // P = A / den: dA = (dP − Σ P dP) / den.
                                let den = cache.den[bh * n + t];
                                let (gq, gk) = cache.g.split_at_mut(p);
                                gq[..p].fill(T::zero());
                                let fq = &cache.fq[row(t)..row(t) + p];
                                for j in 0..=t {
                                    let da = (dp[j] - mean) / den;
                                    let fk = &cache.fk[row(j)..row(j) + p];
                                    for (x, &f) in gq[..p].iter_mut().zip(fk) {
                                        *x += da * f;
                                    }
                                    // φ' is linear in its gradient: dk_j
                                    // takes each query's share at once.
                                    for (x, &f) in gk[..p].iter_mut().zip(fq) {
                                        *x = da * f;
                                    }
                                    let phi = mixer.phi().expect("a map");
                                    let kj = at(b, j, 1, h);
                                    let dx = &mut cache.tmp[..dh];
                                    phi_back(
                                        phi,
                                        &qkv[kj..kj + dh],
                                        fk,
                                        &gk[..p],
                                        dx,
                                    );
                                    for i in 0..dh {
                                        dqkv[kj + i] += cache.tmp[i];
                                    }
                                }
                                let phi = mixer.phi().expect("a map");
                                let qi = at(b, t, 0, h);
                                let dx = &mut cache.tmp[..dh];
                                phi_back(
                                    phi,
                                    &qkv[qi..qi + dh],
                                    fq,
                                    &gq[..p],
                                    dx,
                                );
                                for i in 0..dh {
                                    dqkv[qi + i] += cache.tmp[i];
                                }
                            }
                        }
                    }
                }
                Mixer::Delta {
                    phi,
                    sum_norm,
                    attn_norm,
                } => {
                    let size = dh * p;
                    cache.dw.fill(T::zero());
                    cache.dz.fill(T::zero());
                    for t in (0..n).rev() {
                        let r = row(t);
                        let s = (bh * n + t) * size;
                        let den = cache.den[bh * n + t];
                        let bt = beta[(b * n + t) * heads + h];
                        let (dqb, rest) = cache.g.split_at_mut(p);
                        let dkb = &mut rest[..p];
                        dqb.fill(T::zero());
                        dkb.fill(T::zero());
                        let qb = &cache.qb[r..r + p];
                        let kb = &cache.kb[r..r + p];
                        // The read y = W_t q̄ / den.
                        let dnum = &mut cache.e[..dh];
                        let y = &u[(b * n + t) * d + h * dh..][..dh];
                        let mut dden = T::zero();
                        for i in 0..dh {
                            dnum[i] = dy(t)[i] / den;
                            dden -= dy(t)[i] * y[i] / den;
                        }
                        {
                            let w = &cache.w[s..s + size];
                            for i in 0..dh {
                                let wi = &w[i * p..(i + 1) * p];
                                let dwi = &mut cache.dw[i * p..(i + 1) * p];
                                for j in 0..p {
                                    dwi[j] += dnum[i] * qb[j];
                                    dqb[j] += wi[j] * dnum[i];
                                }
                            }
                        }
                        if attn_norm {
                            let z = &cache.z[r..r + p];
                            for j in 0..p {
                                dqb[j] += dden * z[j];
                                cache.dz[j] += dden * qb[j];
                            }
                            // z_t = z_{t−1} + k̄_t.
                            for j in 0..p {
                                dkb[j] += cache.dz[j];
                            }
                        }
                        // The write W_t = W_{t−1} + β e k̄ᵀ, e = v − W_{t−1} k̄.
                        let v = at(b, t, 2, h);
                        let prev = |i: usize, j: usize| {
                            if t == 0 {
                                T::zero()
                            } else {
                                cache.w[s - size + i * p + j]
                            }
                        };
                        let de = &mut cache.tmp[..dh];
                        let mut dbt = T::zero();
                        for i in 0..dh {
                            let mut vbar = T::zero();
                            let mut dwk = T::zero();
                            for j in 0..p {
                                vbar += prev(i, j) * kb[j];
                                dwk += cache.dw[i * p + j] * kb[j];
                            }
                            let e = qkv[v + i] - vbar;
                            dbt += e * dwk;
                            de[i] = bt * dwk;
                            for j in 0..p {
                                dkb[j] += bt * cache.dw[i * p + j] * e;
                            }
                        }
                        for i in 0..dh {
                            dqkv[v + i] += de[i];
                            for j in 0..p {
                                dkb[j] -= prev(i, j) * de[i];
                                cache.dw[i * p + j] -= de[i] * kb[j];
                            }
                        }
                        dbeta[(b * n + t) * heads + h] = dbt;
                        // Through the sum normalisation and φ.
                        if sum_norm {
                            sum_normalise_back(qb, cache.sq[bh * n + t], dqb);
                            sum_normalise_back(kb, cache.sk[bh * n + t], dkb);
                        }
                        let (qi, ki) = (at(b, t, 0, h), at(b, t, 1, h));
                        let dx = &mut cache.tmp[..dh];
                        phi_back(
                            phi,
                            &qkv[qi..qi + dh],
                            &cache.fq[r..r + p],
                            dqb,
                            dx,
                        );
                        for i in 0..dh {
                            dqkv[qi + i] += cache.tmp[i];
                        }
                        let dx = &mut cache.tmp[..dh];
                        phi_back(
                            phi,
                            &qkv[ki..ki + dh],
                            &cache.fk[r..r + p],
                            dkb,
                            dx,
                        );
                        for i in 0..dh {
                            dqkv[ki + i] += cache.tmp[i];
                        }
                    }
                }
            }
        }
    }
}
