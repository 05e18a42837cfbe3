//! One-layer models for multi-query associative recall, one per update
//! rule of "After the paper" and one with softmax attention, with their
//! gradients written by hand. Written once over the float type: f64 for
//! the gradient check, f32 for training.
//!
//! Every token t is a key symbol a and, at the first n tokens, a value
//! symbol b. Its query, key and value are rows of three tables,
//! q̃_t = Q[a] + Q[b] (Q[b] left out at a query), and so on; so are its
//! gate pre-activations z_t = G[a] + G[b] + g. The rules read and write
//! with unit q and k, as DeltaNet does, so that only the transition differs;
//! softmax attention scores q̃·k̃/√d. The read y_t at each query goes through
//! a linear read-out to scores over the value symbols; the loss is the
//! cross-entropy of the right value, summed over the queries.

use crate::after::recall::task::{Sequence, Task, Token};
use crate::input::{InputError, at_least_one, weights_fit};
use crate::linalg::{axpy, dot};
use crate::paper::retrieval::adam::Weights;
use crate::paper::retrieval::model::sigmoid;
use crate::random::{BookRng, standard_normal};
use num_traits::Float;

/// The fixed decay of the fixed-decay rule, the one the chapter's studies
/// use; every learned decay starts there too.
pub const GAMMA: f64 = 0.99;

// ANCHOR: recall_mixer
/// The layer that mixes tokens: one of the six rules S_t = S_{t−1} H_t +
/// B_t, or softmax attention. Gates and write strengths are sigmoids of
/// per-token pre-activations.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Mixer {
    /// H_t = I, B_t = v_t k_tᵀ.
    Sum,
    /// H_t = γ I with γ = [`GAMMA`].
    FixedDecay,
    /// H_t = a_t I, a_t = σ(z_t).
    ScalarDecay,
    /// H_t = diag(α_t), α_t = σ(z_t) ∈ (0, 1)ᵈ.
    DiagonalGates,
    /// H_t = I − β_t k_t k_tᵀ, B_t = β_t v_t k_tᵀ, β_t = σ(z_t).
    Delta,
    /// H_t = a_t (I − β_t k_t k_tᵀ), B_t = β_t v_t k_tᵀ.
    GatedDelta,
    /// y_t = Σ_{s ≤ t} softmax_s(q̃_t·k̃_s/√d) ṽ_s.
    Softmax,
    /// Softmax attention over the last w tokens only, itself included:
    /// y_t = Σ_{t−w < s ≤ t} softmax_s(q̃_t·k̃_s/√d) ṽ_s.
    Window(usize),
}
// ANCHOR_END: recall_mixer

impl Mixer {
    pub const ALL: [Mixer; 7] = [
        Mixer::Sum,
        Mixer::FixedDecay,
        Mixer::ScalarDecay,
        Mixer::DiagonalGates,
        Mixer::Delta,
        Mixer::GatedDelta,
        Mixer::Softmax,
    ];

    /// The name "After the paper" gives the rule (and "softmax").
    pub fn name(self) -> &'static str {
        match self {
            Mixer::Sum => "sum",
            Mixer::FixedDecay => "fixed decay",
            Mixer::ScalarDecay => "scalar decay",
            Mixer::DiagonalGates => "diagonal gates",
            Mixer::Delta => "delta",
            Mixer::GatedDelta => "gated delta",
            Mixer::Softmax => "softmax",
            Mixer::Window(_) => "window",
        }
    }

    /// The mixer with this name.
    pub fn named(name: &str) -> Option<Mixer> {
        Mixer::ALL.into_iter().find(|m| m.name() == name)
    }

    /// The name with a window's length, "window 8"; the name otherwise.
    pub fn label(self) -> String {
        match self {
            Mixer::Window(w) => format!("window {w}"),
            m => m.name().to_string(),
        }
    }

    /// Gate pre-activations per token: a decay, d gates, a write strength,
    /// or a decay and a write strength.
    pub fn gates(self, d: usize) -> usize {
        match self {
            Mixer::ScalarDecay | Mixer::Delta => 1,
            Mixer::DiagonalGates => d,
            Mixer::GatedDelta => 2,
            Mixer::Sum
            | Mixer::FixedDecay
            | Mixer::Softmax
            | Mixer::Window(_) => 0,
        }
    }

    /// Whether gate `i` is a decay (it starts at γ; a write strength
    /// starts at ½).
    pub(super) fn is_decay(self, i: usize) -> bool {
        match self {
            Mixer::ScalarDecay | Mixer::DiagonalGates => true,
            Mixer::GatedDelta => i == 0,
            _ => false,
        }
    }
}

/// A model's size: the task it reads and the width d of its queries,
/// keys and values (the memory is d × d).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Shape {
    pub task: Task,
    pub d: usize,
}

impl Shape {
    /// Rows of the token tables: one per key symbol, then one per value.
    pub fn symbols(&self) -> usize {
        self.task.keys + self.task.values
    }
}

/// The weights: the token tables Q, K, V (symbols × d) and G (symbols ×
/// gates), the gate bias g, and the read-out O (values × d) with bias o.
#[derive(Clone, Debug, PartialEq)]
pub struct Params<F> {
    pub q: Vec<F>,
    pub k: Vec<F>,
    pub v: Vec<F>,
    pub g: Vec<F>,
    pub g_bias: Vec<F>,
    pub o: Vec<F>,
    pub o_bias: Vec<F>,
}

pub(super) fn c<F: Float>(x: f64) -> F {
    F::from(x).expect("a representable constant")
}

impl<F: Float> Params<F> {
    /// Tables and read-out drawn N(0, 1/d); gate weights 0, decays'
    /// biases at γ, write strengths' at ½.
    pub fn init(rng: &mut BookRng, shape: Shape, mixer: Mixer) -> Params<F> {
        let (s, d, g) = (shape.symbols(), shape.d, mixer.gates(shape.d));
        let scale = 1.0 / (d as f64).sqrt();
        let mut draw = |len: usize| -> Vec<F> {
            (0..len).map(|_| c(standard_normal(rng) * scale)).collect()
        };
        let (q, k, v) = (draw(s * d), draw(s * d), draw(s * d));
        let o = draw(shape.task.values * d);
        let logit_gamma = (GAMMA / (1.0 - GAMMA)).ln();
        Params {
            q,
            k,
            v,
            g: vec![F::zero(); s * g],
            g_bias: (0..g)
                .map(|i| c(if mixer.is_decay(i) { logit_gamma } else { 0.0 }))
                .collect(),
            o,
            o_bias: vec![F::zero(); shape.task.values],
        }
    }
}

impl<F: Float> Params<F> {
    /// Every weight passed through `f`.
    pub fn map<G>(&self, f: impl Fn(F) -> G) -> Params<G> {
        let m = |x: &Vec<F>| x.iter().map(|&x| f(x)).collect();
        Params {
            q: m(&self.q),
            k: m(&self.k),
            v: m(&self.v),
            g: m(&self.g),
            g_bias: m(&self.g_bias),
            o: m(&self.o),
            o_bias: m(&self.o_bias),
        }
    }

    /// The length of each tensor, in the order of `slices`, for this
    /// shape and mixer.
    fn sizes(&self, shape: Shape, mixer: Mixer) -> [usize; 7] {
        let (s, d, g) = (shape.symbols(), shape.d, mixer.gates(shape.d));
        let v = shape.task.values;
        [s * d, s * d, s * d, s * g, g, v * d, v]
    }
}

impl<F: Float> Weights<F> for Params<F> {
    fn slices(&self) -> Vec<&[F]> {
        let p = self;
        vec![&p.q, &p.k, &p.v, &p.g, &p.g_bias, &p.o, &p.o_bias]
    }

    fn slices_mut(&mut self) -> Vec<&mut [F]> {
        let p = self;
        vec![
            &mut p.q,
            &mut p.k,
            &mut p.v,
            &mut p.g,
            &mut p.g_bias,
            &mut p.o,
            &mut p.o_bias,
        ]
    }

    fn zeros_like(&self) -> Self {
        self.map(|_| F::zero())
    }
}

/// A token's gates, σ(G[a] + G[b] + g): for the delta rule its write
/// strength β_t, for the gated delta rule its decay then β_t.
pub fn gates_of<F: Float>(
    mixer: Mixer,
    shape: Shape,
    params: &Params<F>,
    token: &Token,
) -> Vec<F> {
    let gates = mixer.gates(shape.d);
    let mut z = vec![F::zero(); gates];
    if gates > 0 {
        gather(&params.g, gates, rows(&shape.task, token), &mut z);
    }
    z.iter()
        .zip(&params.g_bias)
        .map(|(&z, &b)| sigmoid(z + b))
        .collect()
}

/// The table rows a token reads: its key symbol, and its value symbol
/// (offset past the keys) when it shows one.
fn rows(task: &Task, t: &Token) -> (usize, Option<usize>) {
    (t.key, t.value.map(|v| task.keys + v))
}

/// Σ of a table's rows for one token, into `out` (width w).
fn gather<F: Float>(
    table: &[F],
    w: usize,
    (a, b): (usize, Option<usize>),
    out: &mut [F],
) {
    out.copy_from_slice(&table[a * w..(a + 1) * w]);
    if let Some(b) = b {
        for (o, &x) in out.iter_mut().zip(&table[b * w..(b + 1) * w]) {
            *o = *o + x;
        }
    }
}

/// The gradient of a gathered row, added into both rows it came from.
fn scatter<F: Float>(
    table: &mut [F],
    w: usize,
    (a, b): (usize, Option<usize>),
    grad: &[F],
) {
    for r in std::iter::once(a).chain(b) {
        for (t, &g) in table[r * w..(r + 1) * w].iter_mut().zip(grad) {
            *t = *t + g;
        }
    }
}

/// A small constant under the square root of a norm, so that a zero row
/// has a gradient (as F.normalize's ε does in DeltaNet's code).
pub(super) const NORM_EPS: f64 = 1e-6;

/// Scratch for one sequence, reused across sequences.
#[derive(Default)]
pub struct Work<F> {
    raw_q: Vec<F>,
    raw_k: Vec<F>,
    pub(super) q: Vec<F>,
    pub(super) k: Vec<F>,
    pub(super) v: Vec<F>,
    norm_q: Vec<F>,
    norm_k: Vec<F>,
    pub(super) gate: Vec<F>,
    pub(super) memory: Vec<F>,
    pub(super) attention: Vec<F>,
    pub(super) y: Vec<F>,
    pub(super) dq: Vec<F>,
    pub(super) dk: Vec<F>,
    pub(super) dv: Vec<F>,
    pub(super) dgate: Vec<F>,
    pub(super) dp: Vec<F>,
    alpha: Vec<F>,
    d_alpha: Vec<F>,
    u: Vec<F>,
    de: Vec<F>,
    g_mem: Vec<F>,
}

pub(super) fn zeroed<F: Float>(buf: &mut Vec<F>, len: usize) {
    buf.clear();
    buf.resize(len, F::zero());
}

/// What one sequence gave: its summed loss and how many queries the
/// model answered right (the highest score on the right value).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scored<F> {
    pub loss: F,
    pub correct: usize,
}

/// The read-out's verdict on one question: the cross-entropy of the
/// right answer under the softmax of `scores`, the largest score and the
/// softmax's normaliser Σ exp(s − top) (for the gradient), and the first
/// symbol with the largest score.
pub struct Answer<F> {
    pub loss: F,
    pub top: F,
    pub total: F,
    pub best: Option<usize>,
}

/// [`Answer`] for the question at position `at` whose answer is `answer`;
/// a loss that overflows is an error naming it.
pub fn answer_of<F: Float>(
    scores: &[F],
    answer: usize,
    at: usize,
) -> Result<Answer<F>, InputError> {
    let top = scores.iter().fold(F::neg_infinity(), |m, &s| m.max(s));
    let total = scores.iter().fold(F::zero(), |a, &s| a + (s - top).exp());
    let loss = top + total.ln() - scores[answer];
    if !loss.is_finite() {
        return Err(InputError::Overflow {
            name: "loss",
            at: [at, answer],
            value: loss.to_f64().unwrap_or(f64::NAN),
        });
    }
    let best = scores.iter().position(|&s| s == top);
    Ok(Answer {
        loss,
        top,
        total,
        best,
    })
}

// ANCHOR: recall_coefficients
/// The rule's α_t (d entries), β_t and ω_t from its gates at token t.
fn coefficients<F: Float>(mixer: Mixer, gate: &[F], alpha: &mut [F]) -> (F, F) {
    let (one, zero) = (F::one(), F::zero());
    let fill = |alpha: &mut [F], a: F| alpha.iter_mut().for_each(|x| *x = a);
    match mixer {
        Mixer::Sum => {
            fill(alpha, one);
            (zero, one)
        }
        Mixer::FixedDecay => {
            fill(alpha, c(GAMMA));
            (zero, one)
        }
        Mixer::ScalarDecay => {
            fill(alpha, gate[0]);
            (zero, one)
        }
        Mixer::DiagonalGates => {
            alpha.copy_from_slice(gate);
            (zero, one)
        }
        Mixer::Delta => {
            fill(alpha, one);
            (gate[0], gate[0])
        }
        Mixer::GatedDelta => {
            fill(alpha, gate[0]);
            (gate[1], gate[1])
        }
        Mixer::Softmax | Mixer::Window(_) => {
            unreachable!("attention has no transition")
        }
    }
}
// ANCHOR_END: recall_coefficients

/// The gates' gradient from that of α_t, β_t and ω_t.
fn coefficients_back<F: Float>(
    mixer: Mixer,
    d_alpha: &[F],
    d_beta: F,
    d_omega: F,
    dgate: &mut [F],
) {
    let total = || d_alpha.iter().fold(F::zero(), |s, &x| s + x);
    match mixer {
        Mixer::Sum | Mixer::FixedDecay | Mixer::Softmax | Mixer::Window(_) => {}
        Mixer::ScalarDecay => dgate[0] = total(),
        Mixer::DiagonalGates => dgate.copy_from_slice(d_alpha),
        Mixer::Delta => dgate[0] = d_beta + d_omega,
        Mixer::GatedDelta => {
            dgate[0] = total();
            dgate[1] = d_beta + d_omega;
        }
    }
}

/// That the weights fit the shape and are finite.
fn check_weights<F: Float>(
    mixer: Mixer,
    shape: Shape,
    params: &Params<F>,
) -> Result<(), InputError> {
    let (task, d) = (shape.task, shape.d);
    task.check()?;
    if let Mixer::Window(w) = mixer {
        return Err(InputError::BadParameter {
            name: "window",
            value: w,
            rule: "the one-layer model mixes with a rule or full softmax",
        });
    }
    at_least_one("d", d, "a width of at least one")?;
    let names = ["Q", "K", "V", "G", "g", "O", "o"];
    weights_fit(
        &params.slices(),
        (&names, &params.sizes(shape, mixer)),
        "its size for this shape",
        "weights made by Params::init for this shape and mixer",
    )
}

/// That the sequence is one of the task's: 2n tokens whose symbols exist,
/// a value at each of the first n only, n answers.
fn check_sequence(task: Task, seq: &Sequence) -> Result<(), InputError> {
    let (len, n) = (seq.tokens.len(), seq.answers.len());
    if len != 2 * task.pairs || n != task.pairs {
        return Err(InputError::ShapeMismatch {
            left: ("tokens", [len, 1]),
            right: ("answers", [n, 1]),
            rule: "2n tokens and n answers for n pairs",
        });
    }
    let symbol = |name, index, len| match index < len {
        true => Ok(()),
        false => Err(InputError::OutOfRange { name, index, len }),
    };
    for (t, token) in seq.tokens.iter().enumerate() {
        symbol("key symbol", token.key, task.keys)?;
        match (token.value, t < task.pairs) {
            (Some(v), true) => symbol("value symbol", v, task.values)?,
            (None, false) => {}
            _ => {
                return Err(InputError::BadParameter {
                    name: "token",
                    value: t,
                    rule: "a value at each of the first n tokens only",
                });
            }
        }
    }
    for &a in &seq.answers {
        symbol("answer", a, task.values)?;
    }
    Ok(())
}

/// The loss and answers of one sequence; with `grad`, also adds `scale`
/// times the gradient of the summed loss into it. A sequence or weights
/// that do not fit the shape, a non-finite weight, or a loss that
/// overflows is an error naming it.
pub fn run_sequence<F: Float>(
    mixer: Mixer,
    shape: Shape,
    params: &Params<F>,
    seq: &Sequence,
    grad: Option<(&mut Params<F>, F)>,
    w: &mut Work<F>,
) -> Result<Scored<F>, InputError> {
    run_batch(mixer, shape, params, std::slice::from_ref(seq), grad, w)
}

/// [`run_sequence`] over several sequences, losses and answers summed:
/// the weights are checked once for the batch, each sequence on its own.
pub fn run_batch<F: Float>(
    mixer: Mixer,
    shape: Shape,
    params: &Params<F>,
    seqs: &[Sequence],
    mut grad: Option<(&mut Params<F>, F)>,
    w: &mut Work<F>,
) -> Result<Scored<F>, InputError> {
    check_weights(mixer, shape, params)?;
    let mut total = Scored {
        loss: F::zero(),
        correct: 0,
    };
    for seq in seqs {
        check_sequence(shape.task, seq)?;
        let g = grad.as_mut().map(|(g, scale)| (&mut **g, *scale));
        let one = score(mixer, shape, params, seq, g, w)?;
        total.loss = total.loss + one.loss;
        total.correct += one.correct;
    }
    Ok(total)
}

/// [`run_sequence`] on checked weights and a checked sequence.
fn score<F: Float>(
    mixer: Mixer,
    shape: Shape,
    params: &Params<F>,
    seq: &Sequence,
    grad: Option<(&mut Params<F>, F)>,
    w: &mut Work<F>,
) -> Result<Scored<F>, InputError> {
    let (task, d) = (shape.task, shape.d);
    let (len, n, gates) = (seq.tokens.len(), task.pairs, mixer.gates(d));
    let unit = mixer != Mixer::Softmax;
    for buf in [&mut w.raw_q, &mut w.raw_k, &mut w.q, &mut w.k, &mut w.v] {
        zeroed(buf, len * d);
    }
    zeroed(&mut w.norm_q, len);
    zeroed(&mut w.norm_k, len);
    zeroed(&mut w.gate, len * gates);
    // Queries, keys, values and gates of every token.
    for (t, token) in seq.tokens.iter().enumerate() {
        let r = rows(&task, token);
        let at = t * d..(t + 1) * d;
        gather(&params.q, d, r, &mut w.raw_q[at.clone()]);
        gather(&params.k, d, r, &mut w.raw_k[at.clone()]);
        gather(&params.v, d, r, &mut w.v[at.clone()]);
        let eps = c::<F>(NORM_EPS);
        for (raw, unit_row, norm) in [
            (&w.raw_q, &mut w.q, &mut w.norm_q[t]),
            (&w.raw_k, &mut w.k, &mut w.norm_k[t]),
        ] {
            let x = &raw[at.clone()];
            *norm = if unit {
                (dot(x, x) + eps).sqrt()
            } else {
                F::one()
            };
            for (u, &x) in unit_row[at.clone()].iter_mut().zip(x) {
                *u = x / *norm;
            }
        }
        if gates > 0 {
            let z = &mut w.gate[t * gates..(t + 1) * gates];
            gather(&params.g, gates, r, z);
            for (z, &b) in z.iter_mut().zip(&params.g_bias) {
                *z = sigmoid(*z + b);
            }
        }
    }
    // The mixer's read at each query.
    zeroed(&mut w.y, n * d);
    if unit {
        rule_forward(mixer, d, len, n, w);
    } else {
        softmax_forward(d, len, n, w);
    }
    // Read-out and loss.
    let values = task.values;
    let mut scores = vec![F::zero(); values];
    let mut dy = vec![F::zero(); n * d];
    let mut out = Scored {
        loss: F::zero(),
        correct: 0,
    };
    let mut grad = grad;
    for (i, &answer) in seq.answers.iter().enumerate() {
        let y = &w.y[i * d..(i + 1) * d];
        for (j, s) in scores.iter_mut().enumerate() {
            *s = dot(&params.o[j * d..(j + 1) * d], y) + params.o_bias[j];
        }
        let Answer {
            loss,
            top,
            total,
            best,
        } = answer_of(&scores, answer, i)?;
        out.loss = out.loss + loss;
        out.correct += usize::from(best == Some(answer));
        if let Some((g, scale)) = grad.as_mut() {
            for (j, &s) in scores.iter().enumerate() {
                let p = (s - top).exp() / total;
                let ds = (p - if j == answer { F::one() } else { F::zero() })
                    * *scale;
                g.o_bias[j] = g.o_bias[j] + ds;
                let o_row = &params.o[j * d..(j + 1) * d];
                let g_row = &mut g.o[j * d..(j + 1) * d];
                for ((go, &yk), (dyk, &ok)) in g_row
                    .iter_mut()
                    .zip(y)
                    .zip(dy[i * d..(i + 1) * d].iter_mut().zip(o_row))
                {
                    *go = *go + ds * yk;
                    *dyk = *dyk + ds * ok;
                }
            }
        }
    }
    let Some((g, _)) = grad else {
        return Ok(out);
    };
    for buf in [&mut w.dq, &mut w.dk, &mut w.dv] {
        zeroed(buf, len * d);
    }
    zeroed(&mut w.dgate, len * gates);
    if unit {
        rule_backward(mixer, d, len, n, &dy, w);
    } else {
        softmax_backward(d, len, n, &dy, w);
    }
    // Back through the unit rows, the sigmoids and the tables.
    for (t, token) in seq.tokens.iter().enumerate() {
        let r = rows(&task, token);
        let at = t * d..(t + 1) * d;
        for (unit_row, d_unit, norm) in [
            (&w.q, &mut w.dq, w.norm_q[t]),
            (&w.k, &mut w.dk, w.norm_k[t]),
        ] {
            // x = x̃ / r: dx̃ = (dx − x (x·dx)) / r.
            let (x, dx) = (&unit_row[at.clone()], &mut d_unit[at.clone()]);
            let along = if unit { dot(x, dx) } else { F::zero() };
            for (dx, &x) in dx.iter_mut().zip(x) {
                *dx = (*dx - x * along) / norm;
            }
        }
        scatter(&mut g.q, d, r, &w.dq[at.clone()]);
        scatter(&mut g.k, d, r, &w.dk[at.clone()]);
        scatter(&mut g.v, d, r, &w.dv[at.clone()]);
        if gates > 0 {
            let span = t * gates..(t + 1) * gates;
            let dz = &mut w.dgate[span.clone()];
            for (dz, &s) in dz.iter_mut().zip(&w.gate[span]) {
                *dz = *dz * s * (F::one() - s);
            }
            scatter(&mut g.g, gates, r, dz);
            for (gb, &dz) in g.g_bias.iter_mut().zip(dz.iter()) {
                *gb = *gb + dz;
            }
        }
    }
    Ok(out)
}

// ANCHOR: recall_forward
/// S_t = S_{t−1} diag(α_t) (I − β_t k_t k_tᵀ) + ω_t v_t k_tᵀ, written as
/// U = S_{t−1} diag(α_t), then S_t = U + (ω_t v_t − β_t U k_t) k_tᵀ; the
/// read y_t = S_t q_t at each query. Every S_t is kept for the backward
/// pass (S_0 = 0 first).
pub(super) fn rule_forward<F: Float>(
    mixer: Mixer,
    d: usize,
    len: usize,
    n: usize,
    w: &mut Work<F>,
) {
    let dd = d * d;
    zeroed(&mut w.memory, (len + 1) * dd);
    let gates = mixer.gates(d);
    zeroed(&mut w.alpha, d);
    let mut alpha = std::mem::take(&mut w.alpha);
    for t in 0..len {
        let gate = &w.gate[t * gates..(t + 1) * gates];
        let (beta, omega) = coefficients(mixer, gate, &mut alpha);
        let (k, v) = (&w.k[t * d..(t + 1) * d], &w.v[t * d..(t + 1) * d]);
        let (before, after) = w.memory.split_at_mut((t + 1) * dd);
        let (old, new) = (&before[t * dd..], &mut after[..dd]);
        for ((row, old_row), &v) in
            new.chunks_exact_mut(d).zip(old.chunks_exact(d)).zip(v)
        {
            for ((x, &o), &a) in row.iter_mut().zip(old_row).zip(&alpha) {
                *x = o * a; // U
            }
            let e = omega * v - beta * dot(row, k);
            axpy(e, k, row);
        }
        if t >= n {
            let q = &w.q[t * d..(t + 1) * d];
            let y = &mut w.y[(t - n) * d..(t - n + 1) * d];
            for (y, row) in y.iter_mut().zip(new.chunks_exact(d)) {
                *y = dot(row, q);
            }
        }
    }
    w.alpha = alpha;
}
// ANCHOR_END: recall_forward

// ANCHOR: recall_backward
/// The gradients of every q_t, k_t, v_t and gate, from those of the
/// reads, by running the recurrence backwards with G = ∂L/∂S_t.
pub(super) fn rule_backward<F: Float>(
    mixer: Mixer,
    d: usize,
    len: usize,
    n: usize,
    dy: &[F],
    w: &mut Work<F>,
) {
    let dd = d * d;
    let gates = mixer.gates(d);
    for buf in [&mut w.alpha, &mut w.d_alpha, &mut w.u, &mut w.de] {
        zeroed(buf, d);
    }
    zeroed(&mut w.g_mem, dd);
    let mut g_mem = std::mem::take(&mut w.g_mem);
    let (mut alpha, mut d_alpha) =
        (std::mem::take(&mut w.alpha), std::mem::take(&mut w.d_alpha));
    let (mut u, mut de) = (std::mem::take(&mut w.u), std::mem::take(&mut w.de));
    for t in (0..len).rev() {
        let at = t * d..(t + 1) * d;
        let new = &w.memory[(t + 1) * dd..(t + 2) * dd];
        let old = &w.memory[t * dd..(t + 1) * dd];
        let (dq, dk) = (&mut w.dq[at.clone()], &mut w.dk[at.clone()]);
        if t >= n {
            // y = W_t q: G += dy qᵀ, dq = W_tᵀ dy.
            let dy = &dy[(t - n) * d..(t - n + 1) * d];
            let q = &w.q[at.clone()];
            for ((g_row, w_row), &dy) in
                g_mem.chunks_exact_mut(d).zip(new.chunks_exact(d)).zip(dy)
            {
                axpy(dy, q, g_row);
                axpy(dy, w_row, dq);
            }
        }
        let gate = &w.gate[t * gates..(t + 1) * gates];
        let (beta, omega) = coefficients(mixer, gate, &mut alpha);
        let (k, v) = (&w.k[at.clone()], &w.v[at.clone()]);
        // W_t = U + e kᵀ with e = ω v − β u, u = U k, U = W_{t−1} diag(α).
        let (mut d_beta, mut d_omega) = (F::zero(), F::zero());
        for (i, (old_row, g_row)) in
            old.chunks_exact(d).zip(g_mem.chunks_exact(d)).enumerate()
        {
            u[i] = old_row
                .iter()
                .zip(&alpha)
                .zip(k)
                .fold(F::zero(), |s, ((&w, &a), &k)| s + w * a * k);
            de[i] = dot(g_row, k); // G k
            let e = omega * v[i] - beta * u[i];
            axpy(e, g_row, dk); // Gᵀ e
            w.dv[t * d + i] = omega * de[i];
            d_omega = d_omega + v[i] * de[i];
            d_beta = d_beta - u[i] * de[i];
        }
        // Through u = U k: dU = G − β de kᵀ, dk += Uᵀ (−β de); then
        // dα_j = Σ_i dU_ij W_{t−1,ij} and ∂L/∂W_{t−1} = dU diag(α).
        d_alpha.iter_mut().for_each(|x| *x = F::zero());
        for ((old_row, g_row), &de) in
            old.chunks_exact(d).zip(g_mem.chunks_exact_mut(d)).zip(&de)
        {
            let du = -beta * de;
            for j in 0..d {
                let gu = g_row[j] + du * k[j];
                dk[j] = dk[j] + old_row[j] * alpha[j] * du;
                d_alpha[j] = d_alpha[j] + gu * old_row[j];
                g_row[j] = gu * alpha[j];
            }
        }
        let dgate = &mut w.dgate[t * gates..(t + 1) * gates];
        coefficients_back(mixer, &d_alpha, d_beta, d_omega, dgate);
    }
    (w.g_mem, w.alpha, w.d_alpha, w.u, w.de) = (g_mem, alpha, d_alpha, u, de);
}
// ANCHOR_END: recall_backward

/// y_t = Σ_{s ≤ t} p_s v_s with p = softmax(q_t·k_s/√d), at each position
/// t from `first` on (the queries here, every position in two layers).
pub(super) fn softmax_forward<F: Float>(
    d: usize,
    len: usize,
    first: usize,
    w: &mut Work<F>,
) {
    zeroed(&mut w.attention, (len - first) * len);
    let scale = F::one() / c::<F>(d as f64).sqrt();
    for t in first..len {
        let i = t - first;
        let q = &w.q[t * d..(t + 1) * d];
        let p = &mut w.attention[i * len..i * len + t + 1];
        for (s, p) in p.iter_mut().enumerate() {
            *p = dot(q, &w.k[s * d..(s + 1) * d]) * scale;
        }
        let top = p.iter().fold(F::neg_infinity(), |m, &x| m.max(x));
        p.iter_mut().for_each(|x| *x = (*x - top).exp());
        let total = p.iter().fold(F::zero(), |a, &x| a + x);
        p.iter_mut().for_each(|x| *x = *x / total);
        let y = &mut w.y[i * d..(i + 1) * d];
        for (s, &p) in p.iter().enumerate() {
            for (y, &v) in y.iter_mut().zip(&w.v[s * d..(s + 1) * d]) {
                *y = *y + p * v;
            }
        }
    }
}

/// The gradients of every q_t, k_t and v_t from those of the reads at
/// positions `first` on.
pub(super) fn softmax_backward<F: Float>(
    d: usize,
    len: usize,
    first: usize,
    dy: &[F],
    w: &mut Work<F>,
) {
    let scale = F::one() / c::<F>(d as f64).sqrt();
    zeroed(&mut w.dp, len);
    for t in first..len {
        let i = t - first;
        let dp = &mut w.dp;
        let dy = &dy[i * d..(i + 1) * d];
        let p = &w.attention[i * len..i * len + t + 1];
        for (s, &ps) in p.iter().enumerate() {
            dp[s] = dot(dy, &w.v[s * d..(s + 1) * d]);
            for (dv, &g) in w.dv[s * d..(s + 1) * d].iter_mut().zip(dy) {
                *dv = *dv + ps * g;
            }
        }
        let mean = p
            .iter()
            .zip(dp.iter())
            .fold(F::zero(), |a, (&p, &g)| a + p * g);
        for (s, &ps) in p.iter().enumerate() {
            let ds = ps * (dp[s] - mean) * scale;
            for j in 0..d {
                w.dq[t * d + j] = w.dq[t * d + j] + ds * w.k[s * d + j];
                w.dk[s * d + j] = w.dk[s * d + j] + ds * w.q[t * d + j];
            }
        }
    }
}
