//! Two-layer models for Zoology's recall task, one per rule of the family
//! and one with softmax attention, with gradients written by hand; written
//! once over the float type (f64 for the gradient check, f32 to train).
//!
//! A token embedding x⁰_t = E[s_t] (width d) goes through two layers, then
//! a read-out to scores over the value symbols at each query. A layer
//! projects its input to q̂, k̂, v̂ (d × d each), runs a short causal
//! convolution of [`KERNEL`] taps over each (one weight per tap and
//! channel, no activation), mixes tokens with the rule's recurrence (unit
//! q and k, gates σ(x W_G + b)) or with softmax attention, and adds the
//! mixed rows back through W_O: x^l = x^{l−1} + y W_O. Each layer has a
//! mixer of its own (a hybrid mixes differently in its two). There is no
//! feed-forward block and no normalisation layer: Zoology's MQAR
//! configurations set the state mixer to the identity.

use crate::after::recall::model::{
    Answer, GAMMA, Mixer, NORM_EPS, Scored, Work as MixerWork, answer_of, c,
    rule_backward, rule_forward, softmax_backward, softmax_forward, zeroed,
};
use crate::after::recall::mqar::{Mqar, MqarSequence};
use crate::after::recall::window::{window_backward, window_forward};
use crate::input::{InputError, weights_fit};
use crate::linalg::{axpy, dot};
use crate::paper::retrieval::adam::Weights;
use crate::paper::retrieval::model::sigmoid;
use crate::random::{BookRng, standard_normal};
use num_traits::Float;
use std::ops::Range;

/// Taps of the short convolution on q, k and v (DeltaNet's code uses 4,
/// Zoology's own convolution 3).
pub const KERNEL: usize = 3;

/// Layers of every model, as in Zoology's MQAR configurations.
pub const LAYERS: usize = 2;

/// A model: the mixer of each layer, the vocabulary it reads and its
/// width d.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Net {
    pub mixers: [Mixer; LAYERS],
    pub vocab: usize,
    pub d: usize,
}

/// Where one layer's weights sit in the flat vector.
#[derive(Clone, Debug)]
pub struct LayerAt {
    pub wq: Range<usize>,
    pub wk: Range<usize>,
    pub wv: Range<usize>,
    pub cq: Range<usize>,
    pub ck: Range<usize>,
    pub cv: Range<usize>,
    pub wg: Range<usize>,
    pub bg: Range<usize>,
    pub wo: Range<usize>,
    /// The layer's mixer.
    pub mixer: Mixer,
}

impl Net {
    /// A model whose every layer mixes with `mixer`.
    pub fn new(mixer: Mixer, vocab: usize, d: usize) -> Net {
        Net {
            mixers: [mixer; LAYERS],
            vocab,
            d,
        }
    }

    /// Its name in the data files: the mixer's ("window 8" for a window)
    /// if every layer has the same, else the layers' joined by " + ".
    pub fn name(&self) -> String {
        let [first, rest @ ..] = &self.mixers;
        match rest.iter().all(|m| m == first) {
            true => first.label(),
            false => {
                let names: Vec<String> =
                    self.mixers.iter().map(|m| m.label()).collect();
                names.join(" + ")
            }
        }
    }

    /// Value symbols, the read-out's classes.
    pub fn values(&self) -> usize {
        self.vocab - self.vocab / 2
    }

    fn layer_size(&self, l: usize) -> usize {
        let (d, g) = (self.d, self.mixers[l].gates(self.d));
        4 * d * d + 3 * KERNEL * d + d * g + g
    }

    /// The embedding E (V × d).
    pub fn embed(&self) -> Range<usize> {
        0..self.vocab * self.d
    }

    /// Layer `l`'s weights.
    pub fn layer(&self, l: usize) -> LayerAt {
        let (d, mixer) = (self.d, self.mixers[l]);
        let g = mixer.gates(d);
        let before: usize = (0..l).map(|j| self.layer_size(j)).sum();
        let mut at = self.embed().end + before;
        let mut next = |len: usize| {
            at += len;
            at - len..at
        };
        LayerAt {
            wq: next(d * d),
            wk: next(d * d),
            wv: next(d * d),
            cq: next(KERNEL * d),
            ck: next(KERNEL * d),
            cv: next(KERNEL * d),
            wg: next(d * g),
            bg: next(g),
            wo: next(d * d),
            mixer,
        }
    }

    /// The read-out R (values × d), then its bias.
    pub fn readout(&self) -> (Range<usize>, Range<usize>) {
        let layers: usize = (0..LAYERS).map(|l| self.layer_size(l)).sum();
        let at = self.embed().end + layers;
        let r = at..at + self.values() * self.d;
        (r.clone(), r.end..r.end + self.values())
    }

    /// Every weight.
    pub fn size(&self) -> usize {
        self.readout().1.end
    }

    fn check(&self) -> Result<(), InputError> {
        let bad =
            |name, value, rule| InputError::BadParameter { name, value, rule };
        if self.mixers.contains(&Mixer::Window(0)) {
            return Err(bad("window", 0, "a window of at least one token"));
        }
        match (self.d, self.vocab) {
            (0, _) => Err(bad("d", 0, "a width of at least one")),
            (_, v) if v < 4 => Err(bad("vocab", v, "at least four symbols")),
            _ => Ok(()),
        }
    }
}

/// A model's weights, one flat vector laid out by [`Net`].
#[derive(Clone, Debug, PartialEq)]
pub struct Params<F> {
    pub w: Vec<F>,
}

impl<F: Float> Weights<F> for Params<F> {
    fn slices(&self) -> Vec<&[F]> {
        vec![&self.w]
    }
    fn slices_mut(&mut self) -> Vec<&mut [F]> {
        vec![&mut self.w]
    }
    fn zeros_like(&self) -> Self {
        Params {
            w: vec![F::zero(); self.w.len()],
        }
    }
}

impl<F: Float> Params<F> {
    /// E drawn N(0, 1), projections and read-out N(0, 1/d); each
    /// convolution passes its input through (first tap 1, the others
    /// N(0, 1/100)); gate weights 0, decays' biases at γ, write strengths'
    /// at ½.
    pub fn init(rng: &mut BookRng, net: Net) -> Params<F> {
        let d = net.d;
        let mut w = vec![F::zero(); net.size()];
        let mut fill = |r: Range<usize>, s: f64, w: &mut [F]| {
            for x in &mut w[r] {
                *x = c(standard_normal(rng) * s);
            }
        };
        let s = 1.0 / (d as f64).sqrt();
        fill(net.embed(), 1.0, &mut w);
        for l in 0..LAYERS {
            let at = net.layer(l);
            for r in [at.wq, at.wk, at.wv, at.wo] {
                fill(r, s, &mut w);
            }
            for r in [at.cq, at.ck, at.cv] {
                fill(r.clone(), 0.1, &mut w);
                w[r.start..r.start + d].fill(F::one());
            }
            let logit_gamma = (GAMMA / (1.0 - GAMMA)).ln();
            for (i, b) in w[at.bg].iter_mut().enumerate() {
                *b = c(if at.mixer.is_decay(i) {
                    logit_gamma
                } else {
                    0.0
                });
            }
        }
        fill(net.readout().0, s, &mut w);
        Params { w }
    }
}

/// One layer's buffers for a sequence, kept for the backward pass.
#[derive(Default)]
struct LayerWork<F> {
    x: Vec<F>,
    qh: Vec<F>,
    kh: Vec<F>,
    vh: Vec<F>,
    qc: Vec<F>,
    kc: Vec<F>,
    norm_q: Vec<F>,
    norm_k: Vec<F>,
    mix: MixerWork<F>,
    dy: Vec<F>,
    dqh: Vec<F>,
    dkh: Vec<F>,
    dvh: Vec<F>,
}

/// Scratch for one sequence, reused across sequences: nothing is
/// allocated once the buffers have grown to the longest sequence.
#[derive(Default)]
pub struct Work<F> {
    layers: [LayerWork<F>; LAYERS],
    out: Vec<F>,
    dx: Vec<F>,
    dprev: Vec<F>,
    scores: Vec<F>,
    answers: Vec<Option<usize>>,
}

impl<F> Work<F> {
    /// The value index each query of the last sequence run was answered
    /// with (the highest score), in the order of its queries.
    pub fn answers(&self) -> &[Option<usize>] {
        &self.answers
    }
}

/// out_t = x_t W for every row t; x: (len, din), W: (din, dout).
fn times<F: Float>(x: &[F], w: &[F], din: usize, dout: usize, out: &mut [F]) {
    for (x, out) in x.chunks_exact(din).zip(out.chunks_exact_mut(dout)) {
        out.fill(F::zero());
        for (&xi, row) in x.iter().zip(w.chunks_exact(dout)) {
            axpy(xi, row, out);
        }
    }
}

/// dW += xᵀ dy and dx += dy Wᵀ, the gradients of [`times`].
fn times_back<F: Float>(
    x: &[F],
    w: &[F],
    dy: &[F],
    (din, dout): (usize, usize),
    dw: &mut [F],
    dx: &mut [F],
) {
    let rows = x.chunks_exact(din).zip(dx.chunks_exact_mut(din));
    for ((x, dx), dy) in rows.zip(dy.chunks_exact(dout)) {
        for ((&xi, dxi), (row, drow)) in x
            .iter()
            .zip(dx.iter_mut())
            .zip(w.chunks_exact(dout).zip(dw.chunks_exact_mut(dout)))
        {
            axpy(xi, dy, drow);
            *dxi = *dxi + dot(dy, row);
        }
    }
}

/// out_t = Σ_{j < K, j ≤ t} c_j ⊙ x_{t−j}: a causal depthwise convolution.
fn conv<F: Float>(x: &[F], taps: &[F], d: usize, out: &mut [F]) {
    for (t, out) in out.chunks_exact_mut(d).enumerate() {
        out.fill(F::zero());
        for (j, tap) in taps.chunks_exact(d).enumerate().take(t + 1) {
            let x = &x[(t - j) * d..(t - j + 1) * d];
            for ((o, &c), &x) in out.iter_mut().zip(tap).zip(x) {
                *o = *o + c * x;
            }
        }
    }
}

/// dtaps += Σ_t x_{t−j} ⊙ dout_t and dx_{t−j} += c_j ⊙ dout_t.
fn conv_back<F: Float>(
    x: &[F],
    taps: &[F],
    dout: &[F],
    d: usize,
    dtaps: &mut [F],
    dx: &mut [F],
) {
    for (t, g) in dout.chunks_exact(d).enumerate() {
        for (j, (tap, dtap)) in taps
            .chunks_exact(d)
            .zip(dtaps.chunks_exact_mut(d))
            .enumerate()
            .take(t + 1)
        {
            let at = (t - j) * d..(t - j + 1) * d;
            for i in 0..d {
                dtap[i] = dtap[i] + x[at.start + i] * g[i];
                dx[at.start + i] = dx[at.start + i] + tap[i] * g[i];
            }
        }
    }
}

// ANCHOR: zoology_layer
/// One layer: q̂, k̂, v̂ = x W_Q, x W_K, x W_V; a short causal convolution
/// on each; the layer's mixer (a rule of the family with unit q_t, k_t
/// and gates σ(x_t W_G + b), or softmax attention, full or over a
/// window) gives y; out = x + y W_O.
fn layer_forward<F: Float>(
    net: Net,
    w: &[F],
    at: &LayerAt,
    lw: &mut LayerWork<F>,
    out: &mut [F],
) {
    let (d, len) = (net.d, lw.x.len() / net.d);
    let g = at.mixer.gates(d);
    let rule = !matches!(at.mixer, Mixer::Softmax | Mixer::Window(_));
    let m = &mut lw.mix;
    for buf in [&mut lw.qh, &mut lw.kh, &mut lw.vh, &mut lw.qc, &mut lw.kc] {
        zeroed(buf, len * d);
    }
    for buf in [&mut m.q, &mut m.k, &mut m.v] {
        zeroed(buf, len * d);
    }
    zeroed(&mut m.gate, len * g);
    times(&lw.x, &w[at.wq.clone()], d, d, &mut lw.qh);
    times(&lw.x, &w[at.wk.clone()], d, d, &mut lw.kh);
    times(&lw.x, &w[at.wv.clone()], d, d, &mut lw.vh);
    conv(&lw.qh, &w[at.cq.clone()], d, &mut lw.qc);
    conv(&lw.kh, &w[at.ck.clone()], d, &mut lw.kc);
    conv(&lw.vh, &w[at.cv.clone()], d, &mut m.v);
    zeroed(&mut lw.norm_q, len);
    zeroed(&mut lw.norm_k, len);
    for (raw, unit, norm) in [
        (&lw.qc, &mut m.q, &mut lw.norm_q),
        (&lw.kc, &mut m.k, &mut lw.norm_k),
    ] {
        for ((x, u), r) in raw
            .chunks_exact(d)
            .zip(unit.chunks_exact_mut(d))
            .zip(norm.iter_mut())
        {
            *r = match rule {
                true => (dot(x, x) + c::<F>(NORM_EPS)).sqrt(),
                false => F::one(),
            };
            for (u, &x) in u.iter_mut().zip(x) {
                *u = x / *r;
            }
        }
    }
    if g > 0 {
        times(&lw.x, &w[at.wg.clone()], d, g, &mut m.gate);
        for z in m.gate.chunks_exact_mut(g) {
            for (z, &b) in z.iter_mut().zip(&w[at.bg.clone()]) {
                *z = sigmoid(*z + b);
            }
        }
    }
    zeroed(&mut m.y, len * d);
    match at.mixer {
        Mixer::Softmax => softmax_forward(d, len, 0, m),
        Mixer::Window(w) => window_forward(d, w, len, 0, m),
        rule => rule_forward(rule, d, len, 0, m),
    }
    times(&m.y, &w[at.wo.clone()], d, d, out);
    for (o, &x) in out.iter_mut().zip(&lw.x) {
        *o = *o + x;
    }
}
// ANCHOR_END: zoology_layer

/// dx from dout (the residual, then back through W_O, the mixer, the
/// gates, the unit rows, the convolutions and the projections), adding
/// every weight's gradient, times `scale`, into `grad`.
fn layer_backward<F: Float>(
    net: Net,
    w: &[F],
    at: &LayerAt,
    lw: &mut LayerWork<F>,
    dout: &[F],
    grad: &mut [F],
    dx: &mut [F],
) {
    let (d, len) = (net.d, lw.x.len() / net.d);
    let g = at.mixer.gates(d);
    let rule = !matches!(at.mixer, Mixer::Softmax | Mixer::Window(_));
    dx.copy_from_slice(dout);
    zeroed(&mut lw.dy, len * d);
    let (wo, dwo) = (&w[at.wo.clone()], &mut grad[at.wo.clone()]);
    times_back(&lw.mix.y, wo, dout, (d, d), dwo, &mut lw.dy);
    let m = &mut lw.mix;
    for buf in [&mut m.dq, &mut m.dk, &mut m.dv] {
        zeroed(buf, len * d);
    }
    zeroed(&mut m.dgate, len * g);
    match at.mixer {
        Mixer::Softmax => softmax_backward(d, len, 0, &lw.dy, m),
        Mixer::Window(w) => window_backward(d, w, len, 0, &lw.dy, m),
        rule => rule_backward(rule, d, len, 0, &lw.dy, m),
    }
    if g > 0 {
        for (dz, &s) in m.dgate.iter_mut().zip(&m.gate) {
            *dz = *dz * s * (F::one() - s);
        }
        for dz in m.dgate.chunks_exact(g) {
            for (b, &dz) in grad[at.bg.clone()].iter_mut().zip(dz) {
                *b = *b + dz;
            }
        }
        let (wg, dwg) = (&w[at.wg.clone()], &mut grad[at.wg.clone()]);
        times_back(&lw.x, wg, &m.dgate, (d, g), dwg, dx);
    }
    // x = x̃ / r: dx̃ = (dx − x (x·dx)) / r, for the rules' unit rows.
    for (unit, du, norm) in
        [(&m.q, &mut m.dq, &lw.norm_q), (&m.k, &mut m.dk, &lw.norm_k)]
    {
        for ((u, du), &r) in unit
            .chunks_exact(d)
            .zip(du.chunks_exact_mut(d))
            .zip(norm.iter())
        {
            let along = if rule { dot(u, du) } else { F::zero() };
            for (du, &u) in du.iter_mut().zip(u) {
                *du = (*du - u * along) / r;
            }
        }
    }
    for buf in [&mut lw.dqh, &mut lw.dkh, &mut lw.dvh] {
        zeroed(buf, len * d);
    }
    for (h, taps, dc, dh, proj) in [
        (&lw.qh, &at.cq, &m.dq, &mut lw.dqh, &at.wq),
        (&lw.kh, &at.ck, &m.dk, &mut lw.dkh, &at.wk),
        (&lw.vh, &at.cv, &m.dv, &mut lw.dvh, &at.wv),
    ] {
        let dtaps = &mut grad[taps.clone()];
        conv_back(h, &w[taps.clone()], dc, d, dtaps, dh);
        let (wp, dwp) = (&w[proj.clone()], &mut grad[proj.clone()]);
        times_back(&lw.x, wp, dh, (d, d), dwp, dx);
    }
}

/// The loss and answers of one sequence of `task`; with `grad`, also adds
/// `scale` times the gradient of the summed loss into it. A sequence or
/// weights that do not fit, a non-finite weight or a loss that overflows
/// is an error naming it.
pub fn run_mqar<F: Float>(
    net: Net,
    task: Mqar,
    params: &Params<F>,
    seq: &MqarSequence,
    grad: Option<(&mut Params<F>, F)>,
    work: &mut Work<F>,
) -> Result<Scored<F>, InputError> {
    net.check()?;
    task.check()?;
    if task.vocab != net.vocab {
        return Err(InputError::BadParameter {
            name: "vocab",
            value: task.vocab,
            rule: "the task's vocabulary is the model's",
        });
    }
    weights_fit(
        &params.slices(),
        (&["weights"], &[net.size()]),
        "its size for this model",
        "weights made by Params::init for this model",
    )?;
    task.check_sequence(seq)?;
    let (d, len, w) = (net.d, task.len, &params.w);
    let lw = &mut work.layers[0];
    zeroed(&mut lw.x, len * d);
    for (row, &s) in lw.x.chunks_exact_mut(d).zip(&seq.tokens) {
        row.copy_from_slice(&w[s * d..(s + 1) * d]);
    }
    for l in 0..LAYERS {
        zeroed(&mut work.out, len * d);
        layer_forward(
            net,
            w,
            &net.layer(l),
            &mut work.layers[l],
            &mut work.out,
        );
        match work.layers.get_mut(l + 1) {
            Some(next) => {
                zeroed(&mut next.x, len * d);
                next.x.copy_from_slice(&work.out);
            }
            None => break,
        }
    }
    let (r, rb) = net.readout();
    let values = net.values();
    zeroed(&mut work.scores, values);
    zeroed(&mut work.dx, len * d);
    let mut out = Scored {
        loss: F::zero(),
        correct: 0,
    };
    let mut grad = grad;
    work.answers.clear();
    for &(at, answer) in &seq.queries {
        let x = &work.out[at * d..(at + 1) * d];
        for (j, s) in work.scores.iter_mut().enumerate() {
            *s = dot(&w[r.start + j * d..r.start + (j + 1) * d], x)
                + w[rb.start + j];
        }
        let scores = &work.scores;
        let Answer {
            loss,
            top,
            total,
            best,
        } = answer_of(scores, answer, at)?;
        out.loss = out.loss + loss;
        out.correct += usize::from(best == Some(answer));
        work.answers.push(best);
        if let Some((g, scale)) = grad.as_mut() {
            let dx = &mut work.dx[at * d..(at + 1) * d];
            for (j, &s) in scores.iter().enumerate() {
                let p = (s - top).exp() / total;
                let hit = if j == answer { F::one() } else { F::zero() };
                let ds = (p - hit) * *scale;
                g.w[rb.start + j] = g.w[rb.start + j] + ds;
                let row = r.start + j * d..r.start + (j + 1) * d;
                axpy(ds, x, &mut g.w[row.clone()]);
                axpy(ds, &w[row], dx);
            }
        }
    }
    let Some((g, _)) = grad else {
        return Ok(out);
    };
    for l in (0..LAYERS).rev() {
        zeroed(&mut work.dprev, len * d);
        let lw = &mut work.layers[l];
        let at = net.layer(l);
        layer_backward(net, w, &at, lw, &work.dx, &mut g.w, &mut work.dprev);
        std::mem::swap(&mut work.dx, &mut work.dprev);
    }
    for (dx, &s) in work.dx.chunks_exact(d).zip(&seq.tokens) {
        axpy(F::one(), dx, &mut g.w[s * d..(s + 1) * d]);
    }
    Ok(out)
}
