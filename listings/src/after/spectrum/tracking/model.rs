//! A one-layer linear RNN for the state-tracking tasks, with its gradient
//! written by hand (backpropagation through time), in f64. With n_h > 1
//! writes per token the delta rule is DeltaProduct: each write has its own
//! rows of K, V and G, and the token reads after its last write.
//!
//! Every token is one of a few (the start token, the bits or the six
//! permutations of S3), so
//! each projection of a token is a row of a table: q̃_t = Q[x_t], k̃_t =
//! K[x_t], v_t = V[x_t] and the gate pre-activations z_t = G[x_t] (a
//! learned bias is the same as a shift of every row, so there is none).
//! The key is made unit, k_t = k̃_t / ‖k̃_t‖. The read y_t = S_t q_t of each
//! bit goes through a linear read-out to scores over the classes; the
//! loss is the cross-entropy of every bit's label, summed.

use crate::after::spectrum::tracking::task::{Sequence, Task};
use crate::input::{InputError, weights_fit};
use crate::linalg::{axpy, dot};
use crate::paper::retrieval::adam::Weights;
use crate::paper::retrieval::model::sigmoid;
use crate::random::{BookRng, standard_normal};

// ANCHOR: tracking_transition
/// How a token's transition is made: a delta-rule write, H_t = I − β_t
/// k_t k_tᵀ and B_t = β_t v_t k_tᵀ, or diagonal gates, H_t = diag(α_t)
/// and B_t = v_t k_tᵀ.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Kind {
    Delta,
    Diagonal,
}

/// The range of the transition's eigenvalues: [0, 1], or [−1, 1].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Range {
    Restricted,
    Extended,
}

/// α_t (p entries) and β_t from the gate pre-activations z_t: β_t =
/// s σ(z) with s = 1 or 2 for the delta rule (α_t = 1); α_t = σ(z) or
/// 2σ(z) − 1 for diagonal gates (β_t = 0, and the write is v_t k_tᵀ).
pub fn coefficients(kind: Kind, range: Range, z: &[f64], alpha: &mut [f64]) {
    let wide = range == Range::Extended;
    match kind {
        Kind::Delta => alpha.fill(1.0),
        Kind::Diagonal => {
            for (a, &z) in alpha.iter_mut().zip(z) {
                *a = if wide {
                    2.0 * sigmoid(z) - 1.0
                } else {
                    sigmoid(z)
                };
            }
        }
    }
}

/// β_t for the delta rule; none for diagonal gates.
pub fn strength(kind: Kind, range: Range, z: &[f64]) -> f64 {
    let s = if range == Range::Extended { 2.0 } else { 1.0 };
    match kind {
        Kind::Delta => s * sigmoid(z[0]),
        Kind::Diagonal => 0.0,
    }
}
// ANCHOR_END: tracking_transition

impl Kind {
    pub const ALL: [Kind; 2] = [Kind::Delta, Kind::Diagonal];

    pub fn name(self) -> &'static str {
        match self {
            Kind::Delta => "delta",
            Kind::Diagonal => "diagonal",
        }
    }

    /// Gate pre-activations per token: β_t, or the p entries of α_t.
    pub fn gates(self, p: usize) -> usize {
        match self {
            Kind::Delta => 1,
            Kind::Diagonal => p,
        }
    }
}

impl Range {
    pub const ALL: [Range; 2] = [Range::Restricted, Range::Extended];

    /// The interval of the eigenvalues, as the data file names it.
    pub fn name(self) -> &'static str {
        match self {
            Range::Restricted => "[0,1]",
            Range::Extended => "[-1,1]",
        }
    }
}

/// A model: its transition, its range, its writes per token n_h (more
/// than one only for the delta rule: DeltaProduct), the task it reads
/// and its width d (keys, queries and values of d entries; the memory is
/// d × d).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Model {
    pub kind: Kind,
    pub range: Range,
    pub writes: usize,
    pub task: Task,
    pub d: usize,
}

/// The weights: token tables Q (tokens × d), K, V (tokens n_h × d) and G
/// (tokens n_h × gates), one row per token and write, the read-out O (classes × d) and
/// its bias o.
#[derive(Clone, Debug, PartialEq)]
pub struct Params {
    pub q: Vec<f64>,
    pub k: Vec<f64>,
    pub v: Vec<f64>,
    pub g: Vec<f64>,
    pub o: Vec<f64>,
    pub o_bias: Vec<f64>,
}

/// The spread of the gates' start around [`start_gate`], so that the
/// tokens differ.
pub const GATE_SPREAD: f64 = 1.0;

/// The gate pre-activation z at which the transition's eigenvalue is ½
/// in either range: 1 − β = ½ or α = ½, so σ(z) = ½ in [0, 1]; in
/// [−1, 1] the delta rule's 2σ(z) = ½ and the gates' 2σ(z) − 1 = ½.
pub fn start_gate(kind: Kind, range: Range) -> f64 {
    match (kind, range) {
        (_, Range::Restricted) => 0.0,
        (Kind::Delta, Range::Extended) => -(3.0f64).ln(),
        (Kind::Diagonal, Range::Extended) => (3.0f64).ln(),
    }
}

impl Params {
    /// Every weight drawn N(0, 1/d) but the gates, drawn N(z₀, 1) around
    /// the z₀ of [`start_gate`], where every variant's eigenvalue is ½.
    pub fn init(rng: &mut BookRng, model: Model) -> Params {
        let (d, tokens) = (model.d, model.task.tokens());
        let scale = 1.0 / (d as f64).sqrt();
        let mut draw = |len: usize, s: f64| -> Vec<f64> {
            (0..len).map(|_| standard_normal(rng) * s).collect()
        };
        Params {
            q: draw(tokens * d, scale),
            k: draw(tokens * model.writes * d, scale),
            v: draw(tokens * model.writes * d, scale),
            g: draw(tokens * model.writes * model.kind.gates(d), GATE_SPREAD)
                .into_iter()
                .map(|z| z + start_gate(model.kind, model.range))
                .collect(),
            o: draw(model.task.modulus() * d, scale),
            o_bias: vec![0.0; model.task.modulus()],
        }
    }

    fn sizes(model: Model) -> [usize; 6] {
        let (d, c) = (model.d, model.task.modulus());
        let t = model.task.tokens();
        let w = t * model.writes;
        [t * d, w * d, w * d, w * model.kind.gates(d), c * d, c]
    }
}

impl Weights<f64> for Params {
    fn slices(&self) -> Vec<&[f64]> {
        let p = self;
        vec![&p.q, &p.k, &p.v, &p.g, &p.o, &p.o_bias]
    }

    fn slices_mut(&mut self) -> Vec<&mut [f64]> {
        let p = self;
        vec![
            &mut p.q,
            &mut p.k,
            &mut p.v,
            &mut p.g,
            &mut p.o,
            &mut p.o_bias,
        ]
    }

    fn zeros_like(&self) -> Self {
        let z = |x: &Vec<f64>| vec![0.0; x.len()];
        Params {
            q: z(&self.q),
            k: z(&self.k),
            v: z(&self.v),
            g: z(&self.g),
            o: z(&self.o),
            o_bias: z(&self.o_bias),
        }
    }
}

/// What one sequence gave: the summed loss over its bits, how many bits
/// the model labelled right, and whether it labelled the last one right.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Scored {
    pub loss: f64,
    pub correct: usize,
    pub last_correct: bool,
}

/// A small constant under the key's norm, so a zero row has a gradient.
const NORM_EPS: f64 = 1e-6;

/// That the model and weights fit, and the weights are finite.
fn check_weights(model: Model, params: &Params) -> Result<(), InputError> {
    if model.d == 0 {
        return Err(InputError::BadParameter {
            name: "d",
            value: 0,
            rule: "a width of at least one",
        });
    }
    if model.writes == 0 || (model.writes > 1 && model.kind != Kind::Delta) {
        return Err(InputError::BadParameter {
            name: "writes per token",
            value: model.writes,
            rule: "at least one, and more only for the delta rule",
        });
    }
    let names = ["Q", "K", "V", "G", "O", "o"];
    weights_fit(
        &params.slices(),
        (&names, &Params::sizes(model)),
        "its size for this model",
        "weights made by Params::init for this model",
    )
}

/// The loss and labels of one sequence; with `grad`, also adds `scale`
/// times the gradient of the summed loss into it. Weights or a sequence
/// that do not fit the model, a non-finite weight, or a loss that
/// overflows is an error naming it.
pub fn run_sequence(
    model: Model,
    params: &Params,
    seq: &Sequence,
    grad: Option<(&mut Params, f64)>,
) -> Result<Scored, InputError> {
    check_weights(model, params)?;
    seq.check(model.task)?;
    let (d, len) = (model.d, seq.tokens.len());
    let (kind, range) = (model.kind, model.range);
    let gates = kind.gates(d);
    let dd = d * d;
    // Unit keys, strengths and gates of every write (n_h per token), the
    // memory after every write, and the read of every token.
    let h = model.writes;
    let steps = len * h;
    let mut norm = vec![0.0; steps];
    let mut k = vec![0.0; steps * d];
    let (mut norm_q, mut q) = (vec![0.0; len], vec![0.0; len * d]);
    let mut alpha = vec![0.0; steps * d];
    let mut beta = vec![0.0; steps];
    let mut memory = vec![0.0; (steps + 1) * dd];
    let mut y = vec![0.0; len * d];
    for (t, &x) in seq.tokens.iter().enumerate() {
        for j in 0..h {
            let (s, r) = (t * h + j, x * h + j); // the write, its table row
            let raw = &params.k[r * d..(r + 1) * d];
            norm[s] = (dot(raw, raw) + NORM_EPS).sqrt();
            let ks = &mut k[s * d..(s + 1) * d];
            for (u, &w) in ks.iter_mut().zip(raw) {
                *u = w / norm[s];
            }
            let z = &params.g[r * gates..(r + 1) * gates];
            coefficients(kind, range, z, &mut alpha[s * d..(s + 1) * d]);
            beta[s] = strength(kind, range, z);
            let omega = if kind == Kind::Delta { beta[s] } else { 1.0 };
            let v = &params.v[r * d..(r + 1) * d];
            let (ks, at) = (&k[s * d..(s + 1) * d], &alpha[s * d..(s + 1) * d]);
            let (before, after) = memory.split_at_mut((s + 1) * dd);
            let (old, new) = (&before[s * dd..], &mut after[..dd]);
            // S_s = U + (ω v − β U k) kᵀ with U = S_{s−1} diag(α).
            for ((row, old_row), &vi) in
                new.chunks_exact_mut(d).zip(old.chunks_exact(d)).zip(v)
            {
                for ((w, &o), &a) in row.iter_mut().zip(old_row).zip(at) {
                    *w = o * a;
                }
                let e = omega * vi - beta[s] * dot(row, ks);
                axpy(e, ks, row);
            }
        }
        let raw_q = &params.q[x * d..(x + 1) * d];
        norm_q[t] = (dot(raw_q, raw_q) + NORM_EPS).sqrt();
        let qt = &mut q[t * d..(t + 1) * d];
        for (u, &w) in qt.iter_mut().zip(raw_q) {
            *u = w / norm_q[t];
        }
        let last = &memory[(t + 1) * h * dd..((t + 1) * h + 1) * dd];
        for (yi, row) in
            y[t * d..(t + 1) * d].iter_mut().zip(last.chunks_exact(d))
        {
            *yi = dot(row, qt);
        }
    }
    // Read-out and loss at every bit.
    let classes = model.task.modulus();
    let mut dy = vec![0.0; len * d];
    let mut out = Scored {
        loss: 0.0,
        correct: 0,
        last_correct: false,
    };
    let mut grad = grad;
    let mut scores = vec![0.0; classes];
    for (i, &label) in seq.labels.iter().enumerate() {
        let t = i + 1;
        let yt = &y[t * d..(t + 1) * d];
        for (j, s) in scores.iter_mut().enumerate() {
            *s = dot(&params.o[j * d..(j + 1) * d], yt) + params.o_bias[j];
        }
        let top = scores.iter().fold(f64::NEG_INFINITY, |m, &s| m.max(s));
        let total: f64 = scores.iter().map(|&s| (s - top).exp()).sum();
        let loss = top + total.ln() - scores[label];
        if !loss.is_finite() {
            return Err(InputError::Overflow {
                name: "loss",
                at: [i, label],
                value: loss,
            });
        }
        out.loss += loss;
        let best = (0..classes).find(|&j| scores[j] == top);
        let right = best == Some(label);
        out.correct += usize::from(right);
        out.last_correct = right;
        if let Some((g, scale)) = grad.as_mut() {
            for (j, &s) in scores.iter().enumerate() {
                let p = (s - top).exp() / total;
                let ds = (p - f64::from(u8::from(j == label))) * *scale;
                g.o_bias[j] += ds;
                axpy(ds, yt, &mut g.o[j * d..(j + 1) * d]);
                let o_row = &params.o[j * d..(j + 1) * d];
                axpy(ds, o_row, &mut dy[t * d..(t + 1) * d]);
            }
        }
    }
    let Some((g, _)) = grad else {
        return Ok(out);
    };
    // Back through time with G = ∂L/∂S_t.
    let mut g_mem = vec![0.0; dd];
    let (mut u, mut de) = (vec![0.0; d], vec![0.0; d]);
    let (mut dk, mut d_alpha) = (vec![0.0; d], vec![0.0; d]);
    let mut dq = vec![0.0; d];
    for s_rev in (0..steps).rev() {
        let (t, j) = (s_rev / h, s_rev % h);
        let (s, x) = (s_rev, seq.tokens[t]);
        let r = x * h + j;
        let new = &memory[(s + 1) * dd..(s + 2) * dd];
        let old = &memory[s * dd..(s + 1) * dd];
        if j + 1 == h {
            // y = S q after the token's last write: G += dy qᵀ, dq = Sᵀ dy.
            let qt = &q[t * d..(t + 1) * d];
            let dyt = &dy[t * d..(t + 1) * d];
            dq.fill(0.0);
            for ((g_row, s_row), &dyi) in
                g_mem.chunks_exact_mut(d).zip(new.chunks_exact(d)).zip(dyt)
            {
                axpy(dyi, qt, g_row);
                axpy(dyi, s_row, &mut dq);
            }
            let along = dot(qt, &dq);
            for i in 0..d {
                g.q[x * d + i] += (dq[i] - qt[i] * along) / norm_q[t];
            }
        }
        let (ks, at) = (&k[s * d..(s + 1) * d], &alpha[s * d..(s + 1) * d]);
        let b = beta[s];
        let omega = if kind == Kind::Delta { b } else { 1.0 };
        let v = &params.v[r * d..(r + 1) * d];
        dk.fill(0.0);
        // S_s = U + e kᵀ with e = ω v − β u, u = U k.
        let (mut d_beta, mut d_omega) = (0.0, 0.0);
        for (i, (old_row, g_row)) in
            old.chunks_exact(d).zip(g_mem.chunks_exact(d)).enumerate()
        {
            u[i] = (0..d).map(|c| old_row[c] * at[c] * ks[c]).sum();
            de[i] = dot(g_row, ks);
            let e = omega * v[i] - b * u[i];
            axpy(e, g_row, &mut dk);
            g.v[r * d + i] += omega * de[i];
            d_omega += v[i] * de[i];
            d_beta -= u[i] * de[i];
        }
        // Through u = U k: dU = G − β de kᵀ; dα_c = Σ_i dU_ic S_{s−1,ic};
        // ∂L/∂S_{s−1} = dU diag(α).
        d_alpha.fill(0.0);
        for ((old_row, g_row), &de) in
            old.chunks_exact(d).zip(g_mem.chunks_exact_mut(d)).zip(&de)
        {
            let du = -b * de;
            for c in 0..d {
                let gu = g_row[c] + du * ks[c];
                dk[c] += old_row[c] * at[c] * du;
                d_alpha[c] += gu * old_row[c];
                g_row[c] = gu * at[c];
            }
        }
        // Back through k = k̃ / ‖k̃‖ and the gates' sigmoids.
        let along = dot(ks, &dk);
        for c in 0..d {
            g.k[r * d + c] += (dk[c] - ks[c] * along) / norm[s];
        }
        let z = &params.g[r * gates..(r + 1) * gates];
        let gz = &mut g.g[r * gates..(r + 1) * gates];
        let scale = if range == Range::Extended { 2.0 } else { 1.0 };
        match kind {
            Kind::Delta => {
                let sg = sigmoid(z[0]);
                gz[0] += (d_beta + d_omega) * scale * sg * (1.0 - sg);
            }
            Kind::Diagonal => {
                for ((gz, &z), &da) in gz.iter_mut().zip(z).zip(&d_alpha) {
                    let sg = sigmoid(z);
                    *gz += da * scale * sg * (1.0 - sg);
                }
            }
        }
    }
    Ok(out)
}
