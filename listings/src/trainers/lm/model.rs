//! The byte-level language model: a token embedding plus a learned
//! position embedding, L layers of
//! (layer norm → fast-weight layer → residual; layer norm → feed-forward
//! → residual), a final layer norm and a read-out, with cross-entropy at
//! every position. Its weights live in one flat vector; its forward and
//! backward passes run on buffers made once ([`Work`]), generic over the
//! float type (f32 to train, f64 for the gradient checks).

// The loops index several slices at once by the same position.
#![allow(clippy::needless_range_loop)]

use super::mixer::{self, Cache, Dims, Mixer};
pub use crate::paper::language_model::study::Shape;
use ndarray::linalg::general_mat_mul;
use ndarray::{ArrayView2, ArrayViewMut2, NdFloat};
use rand::Rng;

/// A model: its sizes and its fast-weight layer's rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Model {
    pub shape: Shape,
    pub mixer: Mixer,
    /// The longest window: one learned position vector per place.
    pub context: usize,
}

/// Where one tensor sits in the flat weight vector.
#[derive(Clone, Copy, Debug, PartialEq)]
struct At(usize, usize);

/// Where every tensor sits.
#[derive(Clone, Debug, PartialEq)]
struct Layout {
    emb: At,
    pos: At,
    layers: Vec<LayerAt>,
    lnf_g: At,
    lnf_b: At,
    out: At,
    out_b: At,
    total: usize,
}

#[derive(Clone, Copy, Debug, PartialEq)]
struct LayerAt {
    ln1_g: At,
    ln1_b: At,
    qkv: At,
    beta: At,
    wo: At,
    ln2_g: At,
    ln2_b: At,
    w1: At,
    b1: At,
    w2: At,
    b2: At,
}

impl Model {
    fn layout(&self) -> Layout {
        let Shape {
            vocab,
            d,
            heads,
            ff,
            layers,
        } = self.shape;
        let mut next = 0;
        let mut take = |n: usize| {
            let at = At(next, n);
            next += n;
            at
        };
        let emb = take(vocab * d);
        let pos = take(self.context * d);
        let beta = if self.mixer.has_beta() { d * heads } else { 0 };
        let layers = (0..layers)
            .map(|_| LayerAt {
                ln1_g: take(d),
                ln1_b: take(d),
                qkv: take(d * 3 * d),
                beta: take(beta),
                wo: take(d * d),
                ln2_g: take(d),
                ln2_b: take(d),
                w1: take(d * ff),
                b1: take(ff),
                w2: take(ff * d),
                b2: take(d),
            })
            .collect();
        let (lnf_g, lnf_b) = (take(d), take(d));
        let (out, out_b) = (take(d * vocab), take(vocab));
        Layout {
            emb,
            pos,
            layers,
            lnf_g,
            lnf_b,
            out,
            out_b,
            total: next,
        }
    }

    /// The number of trained weights.
    pub fn parameters(&self) -> usize {
        self.layout().total
    }

    /// Weights drawn from `rng`: matrices uniform with variance 1/fan-in
    /// (the layers writing into the residual stream scaled by 1/√(2L)),
    /// the embedding with variance 1, gains 1, biases 0.
    pub fn init<T: NdFloat>(&self, rng: &mut impl Rng) -> Vec<T> {
        let lay = self.layout();
        let mut w = vec![T::zero(); lay.total];
        let Shape { d, ff, layers, .. } = self.shape;
        let mut fill = |at: At, fan_in: usize, gain: f64| {
            let a = gain * (3.0 / fan_in as f64).sqrt();
            for x in &mut w[at.0..at.0 + at.1] {
                let u: f64 = rng.random();
                *x = T::from(a * (2.0 * u - 1.0)).expect("a float");
            }
        };
        let deep = 1.0 / (2.0 * layers as f64).sqrt();
        fill(lay.emb, 1, 1.0);
        fill(lay.pos, 1, 1.0);
        for l in &lay.layers {
            fill(l.qkv, d, 1.0);
            fill(l.beta, d, 1.0);
            fill(l.wo, d, deep);
            fill(l.w1, d, 1.0);
            fill(l.w2, ff, deep);
        }
        fill(lay.out, d, 1.0);
        let mut ones = |at: At| w[at.0..at.0 + at.1].fill(T::one());
        for l in &lay.layers {
            ones(l.ln1_g);
            ones(l.ln2_g);
        }
        ones(lay.lnf_g);
        w
    }
}

fn part<T>(w: &[T], at: At) -> &[T] {
    &w[at.0..at.0 + at.1]
}

fn part_mut<T>(w: &mut [T], at: At) -> &mut [T] {
    &mut w[at.0..at.0 + at.1]
}

fn view<T>(x: &[T], rows: usize, cols: usize) -> ArrayView2<'_, T> {
    ArrayView2::from_shape((rows, cols), &x[..rows * cols]).expect("a shape")
}

fn view_mut<T>(x: &mut [T], rows: usize, cols: usize) -> ArrayViewMut2<'_, T> {
    ArrayViewMut2::from_shape((rows, cols), &mut x[..rows * cols])
        .expect("a shape")
}

/// c = a b (+ c if `add`): a (m, k), b (k, n).
fn mm<T: NdFloat>(
    a: &[T],
    b: &[T],
    c: &mut [T],
    m: usize,
    k: usize,
    n: usize,
    add: bool,
) {
    let beta = if add { T::one() } else { T::zero() };
    general_mat_mul(
        T::one(),
        &view(a, m, k),
        &view(b, k, n),
        beta,
        &mut view_mut(c, m, n),
    );
}

/// c += aᵀ b: a (m, k), b (m, n), c (k, n).
fn mm_tn<T: NdFloat>(
    a: &[T],
    b: &[T],
    c: &mut [T],
    m: usize,
    k: usize,
    n: usize,
) {
    general_mat_mul(
        T::one(),
        &view(a, m, k).t(),
        &view(b, m, n),
        T::one(),
        &mut view_mut(c, k, n),
    );
}

/// c = a bᵀ: a (m, n), b (k, n), c (m, k).
fn mm_nt<T: NdFloat>(
    a: &[T],
    b: &[T],
    c: &mut [T],
    m: usize,
    n: usize,
    k: usize,
) {
    general_mat_mul(
        T::one(),
        &view(a, m, n),
        &view(b, k, n).t(),
        T::zero(),
        &mut view_mut(c, m, k),
    );
}

const LN_EPS: f64 = 1e-5;

/// Layer norm of each row of x (width d): x̂ and 1/σ kept, h = x̂ g + b.
fn ln_forward<T: NdFloat>(
    x: &[T],
    g: &[T],
    b: &[T],
    xhat: &mut [T],
    rstd: &mut [T],
    h: &mut [T],
    d: usize,
) {
    let inv = T::one() / T::from(d).expect("d");
    for (r, row) in x.chunks_exact(d).enumerate() {
        let mean = row.iter().fold(T::zero(), |s, &v| s + v) * inv;
        let var = row
            .iter()
            .fold(T::zero(), |s, &v| s + (v - mean) * (v - mean))
            * inv;
        let rs = T::one() / (var + T::from(LN_EPS).expect("eps")).sqrt();
        rstd[r] = rs;
        for i in 0..d {
            let xh = (row[i] - mean) * rs;
            xhat[r * d + i] = xh;
            h[r * d + i] = xh * g[i] + b[i];
        }
    }
}

/// Backward of [`ln_forward`]: dg, db accumulated, dx added to `dx`.
#[allow(clippy::too_many_arguments)]
fn ln_backward<T: NdFloat>(
    dh: &[T],
    xhat: &[T],
    rstd: &[T],
    g: &[T],
    dg: &mut [T],
    db: &mut [T],
    dx: &mut [T],
    d: usize,
) {
    let inv = T::one() / T::from(d).expect("d");
    for (r, dhr) in dh.chunks_exact(d).enumerate() {
        let xh = &xhat[r * d..(r + 1) * d];
        let (mut m1, mut m2) = (T::zero(), T::zero());
        for i in 0..d {
            dg[i] += dhr[i] * xh[i];
            db[i] += dhr[i];
            let dxh = dhr[i] * g[i];
            m1 += dxh;
            m2 += dxh * xh[i];
        }
        let (m1, m2) = (m1 * inv, m2 * inv);
        for i in 0..d {
            let dxh = dhr[i] * g[i];
            dx[r * d + i] += rstd[r] * (dxh - m1 - xh[i] * m2);
        }
    }
}

/// What a layer keeps for the backward pass.
struct LayerWork<T> {
    xhat1: Vec<T>,
    rstd1: Vec<T>,
    h1: Vec<T>,
    qkv: Vec<T>,
    beta_pre: Vec<T>,
    beta: Vec<T>,
    u: Vec<T>,
    xhat2: Vec<T>,
    rstd2: Vec<T>,
    h2: Vec<T>,
    a: Vec<T>,
    cache: Cache<T>,
}

/// Every buffer of a forward and backward pass over `seqs` sequences of
/// `t` tokens, made once.
pub struct Work<T> {
    pub seqs: usize,
    pub t: usize,
    layers: Vec<LayerWork<T>>,
    x: Vec<T>,
    xhatf: Vec<T>,
    rstdf: Vec<T>,
    hf: Vec<T>,
    logits: Vec<T>,
    dx: Vec<T>,
    dh: Vec<T>,
    dqkv: Vec<T>,
    dbeta: Vec<T>,
    du: Vec<T>,
    da: Vec<T>,
}

impl<T: NdFloat> Work<T> {
    pub fn new(model: &Model, seqs: usize, t: usize) -> Work<T> {
        let Shape {
            vocab,
            d,
            heads,
            ff,
            layers,
        } = model.shape;
        let rows = seqs * t;
        let z = |n: usize| vec![T::zero(); n];
        let dims = model.dims(seqs, t);
        Work {
            seqs,
            t,
            layers: (0..layers)
                .map(|_| LayerWork {
                    xhat1: z(rows * d),
                    rstd1: z(rows),
                    h1: z(rows * d),
                    qkv: z(rows * 3 * d),
                    beta_pre: z(rows * heads),
                    beta: z(rows * heads),
                    u: z(rows * d),
                    xhat2: z(rows * d),
                    rstd2: z(rows),
                    h2: z(rows * d),
                    a: z(rows * ff),
                    cache: Cache::new(model.mixer, dims),
                })
                .collect(),
            x: z(rows * d),
            xhatf: z(rows * d),
            rstdf: z(rows),
            hf: z(rows * d),
            logits: z(rows * vocab),
            dx: z(rows * d),
            dh: z(rows * d),
            dqkv: z(rows * 3 * d),
            dbeta: z(rows * heads),
            du: z(rows * d),
            da: z(rows * ff),
        }
    }
}

impl Model {
    fn dims(&self, seqs: usize, t: usize) -> Dims {
        let dh = self.shape.d / self.shape.heads;
        Dims {
            seqs,
            t,
            heads: self.shape.heads,
            dh,
            p: self.mixer.features(dh),
        }
    }

    /// The mean cross-entropy (nats) of predicting `tokens[s][i + 1]` from
    /// `tokens[s][..=i]` for every sequence s of `work.seqs` (each
    /// `work.t + 1` tokens long, one after another in `tokens`) and every
    /// position i; with `grad`, dL/dw is written into it.
    pub fn loss<T: NdFloat>(
        &self,
        w: &[T],
        tokens: &[u8],
        work: &mut Work<T>,
        grad: Option<&mut [T]>,
    ) -> T {
        let lay = self.layout();
        let Shape {
            vocab,
            d,
            heads,
            ff,
            ..
        } = self.shape;
        let (seqs, n) = (work.seqs, work.t);
        let rows = seqs * n;
        let dims = self.dims(seqs, n);
        let input = |r: usize| tokens[(r / n) * (n + 1) + r % n] as usize;
        let target = |r: usize| tokens[(r / n) * (n + 1) + r % n + 1] as usize;
        assert!(n <= self.context, "windows of at most the context");
        let (emb, pos) = (part(w, lay.emb), part(w, lay.pos));
        for r in 0..rows {
            let (e, p) = (input(r) * d, (r % n) * d);
            for i in 0..d {
                work.x[r * d + i] = emb[e + i] + pos[p + i];
            }
        }
        for (at, lw) in lay.layers.iter().zip(work.layers.iter_mut()) {
            ln_forward(
                &work.x,
                part(w, at.ln1_g),
                part(w, at.ln1_b),
                &mut lw.xhat1,
                &mut lw.rstd1,
                &mut lw.h1,
                d,
            );
            mm(&lw.h1, part(w, at.qkv), &mut lw.qkv, rows, d, 3 * d, false);
            if self.mixer.has_beta() {
                mm(
                    &lw.h1,
                    part(w, at.beta),
                    &mut lw.beta_pre,
                    rows,
                    d,
                    heads,
                    false,
                );
                for (b, &x) in lw.beta.iter_mut().zip(&lw.beta_pre) {
                    *b = T::one() / (T::one() + (-x).exp());
                }
            }
            mixer::forward(
                self.mixer,
                dims,
                &lw.qkv,
                &lw.beta,
                &mut lw.u,
                &mut lw.cache,
            );
            mm(&lw.u, part(w, at.wo), &mut work.x, rows, d, d, true);
            ln_forward(
                &work.x,
                part(w, at.ln2_g),
                part(w, at.ln2_b),
                &mut lw.xhat2,
                &mut lw.rstd2,
                &mut lw.h2,
                d,
            );
            mm(&lw.h2, part(w, at.w1), &mut lw.a, rows, d, ff, false);
            let b1 = part(w, at.b1);
            for row in lw.a.chunks_exact_mut(ff) {
                for (a, &b) in row.iter_mut().zip(b1) {
                    *a = (*a + b).max(T::zero());
                }
            }
            mm(&lw.a, part(w, at.w2), &mut work.x, rows, ff, d, true);
            let b2 = part(w, at.b2);
            for row in work.x.chunks_exact_mut(d) {
                for (x, &b) in row.iter_mut().zip(b2) {
                    *x += b;
                }
            }
        }
        ln_forward(
            &work.x,
            part(w, lay.lnf_g),
            part(w, lay.lnf_b),
            &mut work.xhatf,
            &mut work.rstdf,
            &mut work.hf,
            d,
        );
        mm(
            &work.hf,
            part(w, lay.out),
            &mut work.logits,
            rows,
            d,
            vocab,
            false,
        );
        // Softmax in place; the loss; dL/dlogits = (p − onehot) / rows.
        let ob = part(w, lay.out_b);
        let inv = T::one() / T::from(rows).expect("rows");
        let mut loss = T::zero();
        for (r, row) in work.logits.chunks_exact_mut(vocab).enumerate() {
            let mut top = T::neg_infinity();
            for (x, &b) in row.iter_mut().zip(ob) {
                *x += b;
                top = top.max(*x);
            }
            let mut total = T::zero();
            for x in row.iter_mut() {
                *x = (*x - top).exp();
                total += *x;
            }
            for x in row.iter_mut() {
                *x /= total;
            }
            loss -= row[target(r)].ln();
            row[target(r)] -= T::one();
            for x in row.iter_mut() {
                *x *= inv;
            }
        }
        let loss = loss * inv;
        let Some(g) = grad else { return loss };
        g.fill(T::zero());
        // Read-out and final layer norm.
        let dlogits = &work.logits;
        for row in dlogits.chunks_exact(vocab) {
            for (gb, &x) in part_mut(g, lay.out_b).iter_mut().zip(row) {
                *gb += x;
            }
        }
        mm_tn(&work.hf, dlogits, part_mut(g, lay.out), rows, d, vocab);
        mm_nt(dlogits, part(w, lay.out), &mut work.dh, rows, vocab, d);
        work.dx.fill(T::zero());
        {
            let (gg, gb) = two(g, lay.lnf_g, lay.lnf_b);
            ln_backward(
                &work.dh,
                &work.xhatf,
                &work.rstdf,
                part(w, lay.lnf_g),
                gg,
                gb,
                &mut work.dx,
                d,
            );
        }
        for (at, lw) in lay.layers.iter().zip(work.layers.iter_mut()).rev() {
            // x_out = x_mid + relu(h2 W1 + b1) W2 + b2.
            for row in work.dx.chunks_exact(d) {
                for (gb, &x) in part_mut(g, at.b2).iter_mut().zip(row) {
                    *gb += x;
                }
            }
            mm_tn(&lw.a, &work.dx, part_mut(g, at.w2), rows, ff, d);
            mm_nt(&work.dx, part(w, at.w2), &mut work.da, rows, d, ff);
            for (da, &a) in work.da.iter_mut().zip(&lw.a) {
                if a <= T::zero() {
                    *da = T::zero();
                }
            }
            for row in work.da.chunks_exact(ff) {
                for (gb, &x) in part_mut(g, at.b1).iter_mut().zip(row) {
                    *gb += x;
                }
            }
            mm_tn(&lw.h2, &work.da, part_mut(g, at.w1), rows, d, ff);
            mm_nt(&work.da, part(w, at.w1), &mut work.dh, rows, ff, d);
            {
                let (gg, gb) = two(g, at.ln2_g, at.ln2_b);
                ln_backward(
                    &work.dh,
                    &lw.xhat2,
                    &lw.rstd2,
                    part(w, at.ln2_g),
                    gg,
                    gb,
                    &mut work.dx,
                    d,
                );
            }
            // x_mid = x_in + u Wo.
            mm_tn(&lw.u, &work.dx, part_mut(g, at.wo), rows, d, d);
            mm_nt(&work.dx, part(w, at.wo), &mut work.du, rows, d, d);
            mixer::backward(
                self.mixer,
                dims,
                &lw.qkv,
                &lw.beta,
                &lw.u,
                &work.du,
                &mut work.dqkv,
                &mut work.dbeta,
                &mut lw.cache,
            );
            mm_tn(&lw.h1, &work.dqkv, part_mut(g, at.qkv), rows, d, 3 * d);
            mm_nt(&work.dqkv, part(w, at.qkv), &mut work.dh, rows, 3 * d, d);
            if self.mixer.has_beta() {
                for (db, &b) in work.dbeta.iter_mut().zip(&lw.beta) {
                    *db = *db * b * (T::one() - b);
                }
                mm_tn(
                    &lw.h1,
                    &work.dbeta,
                    part_mut(g, at.beta),
                    rows,
                    d,
                    heads,
                );
                // dh += dβ_pre W_βᵀ: through `da` as scratch.
                mm_nt(
                    &work.dbeta,
                    part(w, at.beta),
                    &mut work.da[..rows * d],
                    rows,
                    heads,
                    d,
                );
                for (x, &y) in work.dh.iter_mut().zip(&work.da[..rows * d]) {
                    *x += y;
                }
            }
            {
                let (gg, gb) = two(g, at.ln1_g, at.ln1_b);
                ln_backward(
                    &work.dh,
                    &lw.xhat1,
                    &lw.rstd1,
                    part(w, at.ln1_g),
                    gg,
                    gb,
                    &mut work.dx,
                    d,
                );
            }
        }
        for r in 0..rows {
            let (e, p) = (lay.emb.0 + input(r) * d, lay.pos.0 + (r % n) * d);
            for i in 0..d {
                g[e + i] += work.dx[r * d + i];
                g[p + i] += work.dx[r * d + i];
            }
        }
        loss
    }
}

/// Two disjoint tensors of `g`, mutable at once (`a` before `b`).
fn two<T>(g: &mut [T], a: At, b: At) -> (&mut [T], &mut [T]) {
    assert!(a.0 + a.1 <= b.0, "tensors in order");
    let (head, tail) = g.split_at_mut(b.0);
    (&mut head[a.0..a.0 + a.1], &mut tail[..b.1])
}
