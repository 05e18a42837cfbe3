//! The one-layer model of the retrieval task and its gradient, by hand.
//!
//! Each pair (k_t, v_t) of an episode becomes the input
//! x_t = [one_hot(v_t); emb(k_t)] ∈ ℝ^{n+e}; the layer's key is
//! k_t = W_k x_t ∈ ℝ^d, its value the fixed one-hot vector one_hot(v_t) ∈ ℝ^n,
//! and the query is q = W_q emb(query). The layer reads out ŷ ∈ ℝ^n, compared
//! with one_hot(target) by the loss ½‖ŷ − y‖².
//!
//! The backward pass is written out for every feature map and both update
//! rules; the tests check each against central finite differences.

use crate::paper::delta_rule::{delta_rule_step, sum_normalise};
use crate::paper::retrieval::task::Episode;
use crate::phi::{dpfp, elu_plus_one, favor_plus, favor_projection};
use crate::random::randn;
use ndarray::{Array1, Array2, Axis, s};
use rand::Rng;

/// The feature map φ of a linear layer: the book's one feature-map type.
/// For FAVOR+, Ω is redrawn at every step.
pub use crate::phi::FeatureMap as Phi;

/// How a linear layer writes its memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Rule {
    /// S_t = S_{t−1} + v_t φ(k_t)ᵀ, read S φ(q) / (zᵀφ(q) + ε).
    Sum,
    /// S_t = S_{t−1} + β_t (v_t − S_{t−1} k̄_t) k̄_tᵀ, read S q̄.
    Delta,
}

/// The key features of the paper's baseline rule: a feature map of the
/// book, or tanh (elementwise, p = d), which only this baseline uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum FwmPhi {
    Map(Phi),
    Tanh,
}

/// The attention layer of the model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Layer {
    /// softmax(q·k_t/√d) over the pairs.
    Softmax,
    /// A fast-weight memory with feature map φ and an update rule.
    Linear(Phi, Rule),
    /// The paper's baseline rule, the fast weight memory of Schlag et al.
    /// (2021b): S ← (S + β (v − S f) fᵀ) / max(1, ‖·‖_F) on key features f,
    /// read through a layer norm.
    Fwm(FwmPhi),
}

impl Layer {
    /// The name used in data files, outputs and figures.
    pub fn name(self) -> String {
        let phi = |phi: Phi| match phi {
            Phi::EluPlusOne => "elu+1".to_string(),
            Phi::Dpfp(nu) => format!("dpfp-{nu}"),
            Phi::Favor(r) => format!("favor-{r}"),
        };
        match self {
            Layer::Softmax => "softmax".to_string(),
            Layer::Linear(p, Rule::Sum) => phi(p),
            Layer::Linear(p, Rule::Delta) => format!("{}/delta", phi(p)),
            Layer::Fwm(FwmPhi::Map(p)) => format!("{}/fwm", phi(p)),
            Layer::Fwm(FwmPhi::Tanh) => "tanh/fwm".to_string(),
        }
    }

    /// The memory's key width p for keys of width d (d for softmax).
    pub fn width(self, d: usize) -> usize {
        match self {
            Layer::Softmax | Layer::Linear(Phi::EluPlusOne, _) => d,
            Layer::Linear(Phi::Dpfp(nu), _) => 2 * nu * d,
            Layer::Linear(Phi::Favor(r), _) => 2 * r,
            Layer::Fwm(FwmPhi::Map(phi)) => {
                Layer::Linear(phi, Rule::Sum).width(d)
            }
            Layer::Fwm(FwmPhi::Tanh) => d,
        }
    }
}

/// Sizes: n keys and n values, keys of width d, embeddings of width e.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    pub n: usize,
    pub d: usize,
    pub e: usize,
}

impl Shape {
    /// The paper's embedding width int(2.2 n) for n keys, keys of width d.
    pub fn paper(n: usize, d: usize) -> Shape {
        Shape {
            n,
            d,
            e: (2.2 * n as f64) as usize,
        }
    }
}

/// The trainable (slow) weights, in f64 (the reference model) or f32 (the
/// fast trainer of the crate's `trainers::retrieval`).
#[derive(Clone, Debug, PartialEq)]
pub struct Params<F = f64> {
    /// Key embeddings, one row per key symbol: (n, e).
    pub emb: Array2<F>,
    /// Key projection: (d, n + e), and its bias: (d).
    pub w_k: Array2<F>,
    pub b_k: Array1<F>,
    /// Query projection: (d, e), and its bias: (d).
    pub w_q: Array2<F>,
    pub b_q: Array1<F>,
    /// Write-strength projection of the delta rule: (n + e), and its
    /// bias: (1).
    pub w_beta: Array1<F>,
    pub b_beta: Array1<F>,
}

/// `count` draws from U(−bound, bound).
fn uniform(rng: &mut impl Rng, count: usize, bound: f64) -> Array1<f64> {
    Array1::from_shape_simple_fn(count, || {
        bound * (2.0 * rng.random::<f64>() - 1.0)
    })
}

impl Params {
    /// The initialisation of the paper's code: embeddings N(0, 1); for a
    /// linear layer, W_k and W_q uniform in ±1/√d, for softmax Xavier
    /// uniform; biases and w_β PyTorch's default, uniform in ±1/√fan-in.
    pub fn init(rng: &mut impl Rng, shape: Shape, layer: Layer) -> Params {
        let Shape { n, d, e } = shape;
        let fan = |x: usize| 1.0 / (x as f64).sqrt();
        let (bound_k, bound_q) = match layer {
            Layer::Softmax => (
                (6.0 / (n + e + d) as f64).sqrt(),
                (6.0 / (e + d) as f64).sqrt(),
            ),
            Layer::Linear(..) | Layer::Fwm(..) => (fan(d), fan(d)),
        };
        let matrix = |rng: &mut _, rows, cols, bound| {
            uniform(rng, rows * cols, bound)
                .into_shape_with_order((rows, cols))
                .expect("rows × cols entries")
        };
        Params {
            emb: randn(rng, n, e),
            w_k: matrix(rng, d, n + e, bound_k),
            b_k: uniform(rng, d, fan(n + e)),
            w_q: matrix(rng, d, e, bound_q),
            b_q: uniform(rng, d, fan(e)),
            w_beta: uniform(rng, n + e, fan(n + e)),
            b_beta: uniform(rng, 1, fan(n + e)),
        }
    }

    /// The same weights in f32, for the fast trainer.
    pub fn to_f32(&self) -> Params<f32> {
        let c1 = |a: &Array1<f64>| a.mapv(|x| x as f32);
        let c2 = |a: &Array2<f64>| a.mapv(|x| x as f32);
        Params {
            emb: c2(&self.emb),
            w_k: c2(&self.w_k),
            b_k: c1(&self.b_k),
            w_q: c2(&self.w_q),
            b_q: c1(&self.b_q),
            w_beta: c1(&self.w_beta),
            b_beta: c1(&self.b_beta),
        }
    }
}

impl<F: Clone + num_traits::Zero> Params<F> {
    /// Zeros of the same shapes, to accumulate a gradient in.
    pub fn zeros_like(&self) -> Params<F> {
        Params {
            emb: Array2::zeros(self.emb.dim()),
            w_k: Array2::zeros(self.w_k.dim()),
            b_k: Array1::zeros(self.b_k.dim()),
            w_q: Array2::zeros(self.w_q.dim()),
            b_q: Array1::zeros(self.b_q.dim()),
            w_beta: Array1::zeros(self.w_beta.dim()),
            b_beta: Array1::zeros(self.b_beta.dim()),
        }
    }

    /// Every weight as one mutable slice per tensor.
    pub fn slices_mut(&mut self) -> [&mut [F]; 7] {
        let msg = "parameters are contiguous";
        [
            self.emb.as_slice_mut().expect(msg),
            self.w_k.as_slice_mut().expect(msg),
            self.b_k.as_slice_mut().expect(msg),
            self.w_q.as_slice_mut().expect(msg),
            self.b_q.as_slice_mut().expect(msg),
            self.w_beta.as_slice_mut().expect(msg),
            self.b_beta.as_slice_mut().expect(msg),
        ]
    }

    /// Every weight as one slice per tensor.
    pub fn slices(&self) -> [&[F]; 7] {
        let msg = "parameters are contiguous";
        [
            self.emb.as_slice().expect(msg),
            self.w_k.as_slice().expect(msg),
            self.b_k.as_slice().expect(msg),
            self.w_q.as_slice().expect(msg),
            self.b_q.as_slice().expect(msg),
            self.w_beta.as_slice().expect(msg),
            self.b_beta.as_slice().expect(msg),
        ]
    }

    /// How many numbers the weights hold.
    pub fn count(&self) -> usize {
        self.slices().iter().map(|s| s.len()).sum()
    }
}

/// FAVOR+'s random projection Ω: (d, r) for a FAVOR+ layer (orthogonal
/// random features, [`favor_projection`]); other layers need none.
pub fn draw_omega(rng: &mut impl Rng, layer: Layer, d: usize) -> Array2<f64> {
    match layer {
        Layer::Linear(Phi::Favor(r), _)
        | Layer::Fwm(FwmPhi::Map(Phi::Favor(r))) => favor_projection(rng, d, r),
        _ => Array2::zeros((d, 0)),
    }
}

pub(super) fn one_hot(n: usize, i: usize) -> Array1<f64> {
    let mut v = Array1::zeros(n);
    v[i] = 1.0;
    v
}

/// σ(x) = 1 / (1 + e⁻ˣ), at any float type (the recall models of "After
/// the paper" use it at f32 and f64 too).
pub fn sigmoid<F: num_traits::Float>(x: F) -> F {
    F::one() / (F::one() + (-x).exp())
}

/// φ(x) for one key or query.
pub(super) fn phi_forward(
    phi: Phi,
    x: &Array1<f64>,
    omega: &Array2<f64>,
) -> Array1<f64> {
    // The model's keys are finite and its ν and Ω fit its width; a map
    // that fails here is a defect of the model, not of a reader's input.
    let why = "the model's keys are finite and its map fits their width";
    match phi {
        Phi::EluPlusOne => elu_plus_one(x),
        Phi::Dpfp(nu) => dpfp(x, nu).expect(why),
        Phi::Favor(_) => favor_plus(x, omega).expect(why),
    }
}

/// dL/dx from dL/dφ(x) = g, where f = φ(x).
fn phi_backward(
    phi: Phi,
    x: &Array1<f64>,
    f: &Array1<f64>,
    g: &Array1<f64>,
    omega: &Array2<f64>,
) -> Array1<f64> {
    match phi {
        // φ' = 1 above zero, eˣ = φ below.
        Phi::EluPlusOne => Array1::from_shape_fn(x.len(), |i| {
            if x[i] > 0.0 { g[i] } else { g[i] * f[i] }
        }),
        Phi::Dpfp(nu) => {
            let d = x.len();
            let m = 2 * d;
            let xt = Array1::from_shape_fn(m, |i| {
                if i < d {
                    x[i].max(0.0)
                } else {
                    (-x[i - d]).max(0.0)
                }
            });
            // φ_j[i] = x̃[i] · x̃[(i − j) mod 2d], j = 1..=ν
            let mut dxt = Array1::<f64>::zeros(m);
            for j in 1..=nu {
                for i in 0..m {
                    let gi = g[(j - 1) * m + i];
                    let back = (i + m - j % m) % m;
                    dxt[i] += gi * xt[back];
                    dxt[back] += gi * xt[i];
                }
            }
            Array1::from_shape_fn(d, |i| {
                let up = if x[i] > 0.0 { dxt[i] } else { 0.0 };
                let down = if x[i] < 0.0 { dxt[d + i] } else { 0.0 };
                up - down
            })
        }
        Phi::Favor(r) => {
            // f = exp([Ωᵀx, −Ωᵀx] − ‖x‖²/2) / √(2r)
            let gf = g * f;
            let diff = &gf.slice(s![..r]) - &gf.slice(s![r..]);
            omega.dot(&diff) - x * gf.sum()
        }
    }
}

/// The loss ½‖ŷ − y‖² of one episode, with its gradient added into
/// `grad` when given. `omega` is FAVOR+'s projection (ignored otherwise).
pub fn episode_loss(
    params: &Params,
    layer: Layer,
    episode: &Episode,
    omega: &Array2<f64>,
    grad: Option<&mut Params>,
) -> f64 {
    let n = params.emb.nrows();
    let w_k_v = params.w_k.slice(s![.., ..n]); // the one-hot part
    let w_k_e = params.w_k.slice(s![.., n..]); // the embedding part
    let keys: Vec<Array1<f64>> = episode
        .keys
        .iter()
        .zip(&episode.values)
        .map(|(&k, &v)| {
            &w_k_v.column(v) + &w_k_e.dot(&params.emb.row(k)) + &params.b_k
        })
        .collect();
    let q = params.w_q.dot(&params.emb.row(episode.query)) + &params.b_q;
    // β_t = σ(w_β · x_t + b_β), the delta rule's write strengths.
    let betas: Vec<f64> = episode
        .keys
        .iter()
        .zip(&episode.values)
        .map(|(&k, &v)| {
            let w = &params.w_beta;
            let pre = w[v] + w.slice(s![n..]).dot(&params.emb.row(k));
            sigmoid(pre + params.b_beta[0])
        })
        .collect();
    let (y_hat, back) = match layer {
        Layer::Softmax => softmax_read(&keys, &episode.values, &q, n),
        Layer::Linear(phi, Rule::Sum) => {
            sum_read(phi, &keys, &episode.values, &q, n, omega)
        }
        Layer::Linear(phi, Rule::Delta) => {
            delta_read(phi, &keys, &episode.values, &betas, &q, n, omega)
        }
        Layer::Fwm(map) => {
            fwm_read(map, &keys, &episode.values, &betas, &q, n, omega)
        }
    };
    let error = &y_hat - &one_hot(n, episode.target);
    let loss = 0.5 * error.dot(&error);
    if let Some(grad) = grad {
        let (d_keys, d_q, d_beta) = back(&error);
        for (t, (&k, &v)) in
            episode.keys.iter().zip(&episode.values).enumerate()
        {
            let dk = &d_keys[t];
            // k_t = W_k[:, v] + W_k[:, n..] emb[k] + b_k
            grad.w_k.column_mut(v).scaled_add(1.0, dk);
            grad.b_k += dk;
            let mut g_w_e = grad.w_k.slice_mut(s![.., n..]);
            let outer = dk
                .view()
                .insert_axis(Axis(1))
                .dot(&params.emb.row(k).insert_axis(Axis(0)));
            g_w_e += &outer;
            let mut d_emb = w_k_e.t().dot(dk);
            if let Some(db) = d_beta.as_ref().map(|d| d[t]) {
                // β_t = σ(w_β · x_t + b_β): dσ = β(1 − β)
                let w = &params.w_beta;
                let dpre = db * betas[t] * (1.0 - betas[t]);
                grad.w_beta[v] += dpre;
                grad.b_beta[0] += dpre;
                grad.w_beta
                    .slice_mut(s![n..])
                    .scaled_add(dpre, &params.emb.row(k));
                d_emb.scaled_add(dpre, &w.slice(s![n..]));
            }
            grad.emb.row_mut(k).scaled_add(1.0, &d_emb);
        }
        // q = W_q emb[query] + b_q
        grad.b_q += &d_q;
        let e_q = params.emb.row(episode.query);
        grad.w_q += &d_q
            .view()
            .insert_axis(Axis(1))
            .dot(&e_q.insert_axis(Axis(0)));
        let d_emb_q = params.w_q.t().dot(&d_q);
        grad.emb.row_mut(episode.query).scaled_add(1.0, &d_emb_q);
    }
    loss
}

/// What a read returns: ŷ, and a function from dL/dŷ to the gradients
/// with respect to the keys, the query and (delta rule) the write strengths.
pub type Read<'a> = (
    Array1<f64>,
    Box<
        dyn Fn(
                &Array1<f64>,
            ) -> (Vec<Array1<f64>>, Array1<f64>, Option<Vec<f64>>)
            + 'a,
    >,
);

fn softmax_read<'a>(
    keys: &'a [Array1<f64>],
    values: &'a [usize],
    q: &'a Array1<f64>,
    n: usize,
) -> Read<'a> {
    let scale = 1.0 / (q.len() as f64).sqrt();
    let scores: Vec<f64> = keys.iter().map(|k| k.dot(q) * scale).collect();
    let max = scores.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
    let exps: Vec<f64> = scores.iter().map(|s| (s - max).exp()).collect();
    let total: f64 = exps.iter().sum();
    let a: Vec<f64> = exps.iter().map(|e| e / total).collect();
    let mut y_hat = Array1::zeros(n);
    for (t, &v) in values.iter().enumerate() {
        y_hat[v] += a[t];
    }
    let back = move |g: &Array1<f64>| {
        let da: Vec<f64> = values.iter().map(|&v| g[v]).collect();
        let mean: f64 = a.iter().zip(&da).map(|(a, d)| a * d).sum();
        let ds: Vec<f64> =
            a.iter().zip(&da).map(|(a, d)| a * (d - mean)).collect();
        let mut dq = Array1::zeros(q.len());
        let d_keys = keys
            .iter()
            .zip(&ds)
            .map(|(k, &s)| {
                dq.scaled_add(s * scale, k);
                q * (s * scale)
            })
            .collect();
        (d_keys, dq, None)
    };
    (y_hat, Box::new(back))
}

/// ε in the sum rule's denominator, as in the paper's reference code.
pub const EPS: f64 = 1e-6;

// ANCHOR: sum_read
/// The sum rule's read at the query, and its backward pass in closed form:
/// with c = zᵀφ(q) + ε, ŷ = S φ(q) / c, so dL/d(S φ(q)) = g / c,
/// dL/dc = −g·ŷ / c, and each φ(k_t) gets φ(q) (g[v_t] / c + dL/dc).
pub fn sum_read<'a>(
    phi: Phi,
    keys: &'a [Array1<f64>],
    values: &'a [usize],
    q: &'a Array1<f64>,
    n: usize,
    omega: &'a Array2<f64>,
) -> Read<'a> {
    let fk: Vec<Array1<f64>> =
        keys.iter().map(|k| phi_forward(phi, k, omega)).collect();
    let fq = phi_forward(phi, q, omega);
    let p = fq.len();
    let mut s = Array2::<f64>::zeros((n, p)); // the memory S
    let mut z = Array1::<f64>::zeros(p);
    for (f, &v) in fk.iter().zip(values) {
        s.row_mut(v).scaled_add(1.0, f); // v_t φ(k_t)ᵀ with one-hot v_t
        z += f;
    }
    let c = z.dot(&fq) + EPS;
    let y_hat = s.dot(&fq) / c;
    let back = move |g: &Array1<f64>| {
        let y_hat = s.dot(&fq) / c;
        let d_read = g / c; // dL/d(S φ(q))
        let dc = -g.dot(&y_hat) / c;
        let dfq = s.t().dot(&d_read) + &z * dc;
        let d_keys = keys
            .iter()
            .zip(&fk)
            .zip(values)
            .map(|((k, f), &v)| {
                let df = &fq * (d_read[v] + dc);
                phi_backward(phi, k, f, &df, omega)
            })
            .collect();
        (d_keys, phi_backward(phi, q, &fq, &dfq, omega), None)
    };
    (y_hat, Box::new(back))
}
// ANCHOR_END: sum_read

/// The backward pass of sum normalisation k̄ = x / Σx:
/// dx = (dk̄ − (dk̄·k̄)) / Σx.
fn sum_normalise_back(
    x: &Array1<f64>,
    x_bar: &Array1<f64>,
    g: &Array1<f64>,
) -> Array1<f64> {
    (g - g.dot(x_bar)) / x.sum()
}

// ANCHOR: delta_read
/// The delta rule's read at the query, and its backward pass: the forward
/// pass keeps every S_t; the backward pass walks t from N down to 1 with
/// D = dL/dS_t, using S_t = S_{t−1} H_t + β_t v_t k̄_tᵀ, H_t = I − β_t k̄_t k̄_tᵀ.
#[allow(clippy::too_many_arguments)]
pub fn delta_read<'a>(
    phi: Phi,
    keys: &'a [Array1<f64>],
    values: &'a [usize],
    betas: &'a [f64],
    q: &'a Array1<f64>,
    n: usize,
    omega: &'a Array2<f64>,
) -> Read<'a> {
    let fk: Vec<Array1<f64>> =
        keys.iter().map(|k| phi_forward(phi, k, omega)).collect();
    // The model's features come from its own maps; a feature vector with
    // no positive sum is a defect of the model, not of a reader's input.
    let normalise = |f: &Array1<f64>| {
        sum_normalise(f).expect("the model's features have a positive sum")
    };
    let kb: Vec<Array1<f64>> = fk.iter().map(normalise).collect();
    let fq = phi_forward(phi, q, omega);
    let qb = normalise(&fq);
    let p = fq.len();
    // S_0 = 0; keep every S_t for the backward pass.
    let mut history = vec![Array2::<f64>::zeros((n, p))];
    for t in 0..keys.len() {
        let mut s = history[t].clone();
        delta_rule_step(&mut s, &kb[t], &one_hot(n, values[t]), betas[t])
            .expect("the model's shapes agree and its numbers are finite");
        history.push(s);
    }
    let y_hat = history[keys.len()].dot(&qb);
    let back = move |g: &Array1<f64>| {
        let last = &history[keys.len()];
        let dqb = last.t().dot(g);
        let dq = phi_backward(
            phi,
            q,
            &fq,
            &sum_normalise_back(&fq, &qb, &dqb),
            omega,
        );
        // D = dL/dS_t, walked from t = N down to 1.
        let mut d = g
            .view()
            .insert_axis(Axis(1))
            .dot(&qb.view().insert_axis(Axis(0)));
        let mut d_keys = vec![Array1::zeros(q.len()); keys.len()];
        let mut d_betas = vec![0.0; keys.len()];
        for t in (0..keys.len()).rev() {
            let s_prev = &history[t];
            let k = &kb[t];
            let r = one_hot(n, values[t]) - s_prev.dot(k); // v_t − v̄_t
            let dk = d.dot(k);
            d_betas[t] = r.dot(&dk);
            let dkb = (d.t().dot(&r) - s_prev.t().dot(&dk)) * betas[t];
            let dfk = sum_normalise_back(&fk[t], k, &dkb);
            d_keys[t] = phi_backward(phi, &keys[t], &fk[t], &dfk, omega);
            // dL/dS_{t−1} = D H_t = D (I − β k̄ k̄ᵀ)
            let outer =
                dk.insert_axis(Axis(1)).dot(&k.view().insert_axis(Axis(0)));
            d.scaled_add(-betas[t], &outer);
        }
        (d_keys, dq, Some(d_betas))
    };
    (y_hat, Box::new(back))
}
// ANCHOR_END: delta_read

/// The baseline's key features: φ(x) of a book map, or tanh(x).
pub(super) fn fwm_features(
    map: FwmPhi,
    x: &Array1<f64>,
    omega: &Array2<f64>,
) -> Array1<f64> {
    match map {
        FwmPhi::Map(phi) => phi_forward(phi, x, omega),
        FwmPhi::Tanh => x.mapv(f64::tanh),
    }
}

/// dL/dx from dL/dfeatures = g, where f = the features of x.
fn fwm_features_back(
    map: FwmPhi,
    x: &Array1<f64>,
    f: &Array1<f64>,
    g: &Array1<f64>,
    omega: &Array2<f64>,
) -> Array1<f64> {
    match map {
        FwmPhi::Map(phi) => phi_backward(phi, x, f, g, omega),
        // tanh' = 1 − tanh²
        FwmPhi::Tanh => g * &f.mapv(|f| 1.0 - f * f),
    }
}

/// ε of the layer norm, PyTorch's default.
pub const LN_EPS: f64 = 1e-5;

// ANCHOR: fwm_write
/// One write of the fast weight memory, S: (n, p), key features f: (p),
/// one-hot value v, strength β: the delta-rule write on raw features,
/// S′ = S + β (v − S f) fᵀ, then S = S′ / ρ with ρ = max(1, ‖S′‖_F), except
/// on a sequence's first write, which the paper's code leaves unscaled.
/// Returns ρ.
pub fn fwm_write(
    s: &mut Array2<f64>,
    f: &Array1<f64>,
    v: usize,
    beta: f64,
    first: bool,
) -> f64 {
    let mut u = -s.dot(f); // −v̄, the value stored at f ...
    u[v] += 1.0; // ... plus v
    u *= beta;
    let outer = u.insert_axis(Axis(1)).dot(&f.view().insert_axis(Axis(0)));
    *s += &outer; // S′
    let rho = if first {
        1.0
    } else {
        s.iter().map(|x| x * x).sum::<f64>().sqrt().max(1.0)
    };
    *s /= rho;
    rho
}
// ANCHOR_END: fwm_write

/// A layer norm without gain or bias: (x − mean) / √(var + ε). Returns
/// the output and √(var + ε).
pub fn layer_norm(x: &Array1<f64>) -> (Array1<f64>, f64) {
    let mean = x.mean().expect("a read has n > 0 entries");
    let centred = x - mean;
    let var = centred.dot(&centred) / x.len() as f64;
    let root = (var + LN_EPS).sqrt();
    (centred / root, root)
}

// ANCHOR: fwm_read
/// The baseline's read at the query and its backward pass. Forward: every
/// S_t kept, and ρ_t; ŷ = layer_norm(S_N f_q). Backward, from
/// D = dL/dS_t: through the scaling, dL/dS′_t = (D − ⟨D, S_t⟩ S_t) / ρ_t
/// when ρ_t > 1; then as the delta rule, with raw features f_t for k̄_t.
#[allow(clippy::too_many_arguments)]
pub fn fwm_read<'a>(
    map: FwmPhi,
    keys: &'a [Array1<f64>],
    values: &'a [usize],
    betas: &'a [f64],
    q: &'a Array1<f64>,
    n: usize,
    omega: &'a Array2<f64>,
) -> Read<'a> {
    let fk: Vec<Array1<f64>> =
        keys.iter().map(|k| fwm_features(map, k, omega)).collect();
    let fq = fwm_features(map, q, omega);
    let len = keys.len();
    let mut history = vec![Array2::<f64>::zeros((n, fq.len()))];
    let mut scales = Vec::with_capacity(len);
    for t in 0..len {
        let mut s = history[t].clone();
        scales.push(fwm_write(&mut s, &fk[t], values[t], betas[t], t == 0));
        history.push(s);
    }
    let (y_hat, root) = layer_norm(&history[len].dot(&fq));
    let back = move |g: &Array1<f64>| {
        // Layer norm: dx = (g − mean g − ŷ mean(g ⊙ ŷ)) / root.
        let (y, _) = layer_norm(&history[len].dot(&fq));
        let m = g.len() as f64;
        let dx = (g - g.sum() / m - &y * (g.dot(&y) / m)) / root;
        let dfq = history[len].t().dot(&dx);
        let dq = fwm_features_back(map, q, &fq, &dfq, omega);
        let mut d = dx // D = dL/dS_t, walked from t = N down to 1
            .view()
            .insert_axis(Axis(1))
            .dot(&fq.view().insert_axis(Axis(0)));
        let mut d_keys = vec![Array1::zeros(q.len()); len];
        let mut d_betas = vec![0.0; len];
        for t in (0..len).rev() {
            if scales[t] > 1.0 {
                let s_t = &history[t + 1];
                let along = (&d * s_t).sum(); // ⟨D, S_t⟩
                d = (&d - &(s_t * along)) / scales[t]; // now dL/dS′_t
            }
            let s_prev = &history[t];
            let f = &fk[t];
            let r = one_hot(n, values[t]) - s_prev.dot(f); // v_t − v̄_t
            let dk = d.dot(f);
            d_betas[t] = r.dot(&dk);
            let df = (d.t().dot(&r) - s_prev.t().dot(&dk)) * betas[t];
            d_keys[t] = fwm_features_back(map, &keys[t], f, &df, omega);
            let outer =
                dk.insert_axis(Axis(1)).dot(&f.view().insert_axis(Axis(0)));
            d.scaled_add(-betas[t], &outer);
        }
        (d_keys, dq, Some(d_betas))
    };
    (y_hat, Box::new(back))
}
// ANCHOR_END: fwm_read
