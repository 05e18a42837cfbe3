//! The retrieval model, trained fast: f32, the work of a step shaped as
//! matrix products, and no allocation inside the loop over a batch's
//! episodes. It computes what the f64 reference model of the retrieval
//! chapter (`paper::retrieval::model`) computes, tested layer by layer,
//! loss and every gradient; the sweep trains with it.
//!
//! Three ideas make it fast:
//! - the key projection of every symbol, P = E W_k,eᵀ, is one product per
//!   step (not one per pair of every episode), and its gradient two more;
//! - the sum rule and softmax read at the query in attention form, from
//!   scores φ(k_t)ᵀφ(q), never building the (n, p) memory;
//! - the delta rule reads in attention form too: with one read at the end,
//!   S_N q̄ = Σ_t β_t η_t v_t, where η solves the triangular system
//!   (I + Λ)ᵀη = c in the Gram matrix K̄K̄ᵀ (one product), and its backward
//!   pass needs only that system again and running sums over t.
//!
//! The baseline rule of Schlag et al. (2021b), whose write scales the whole
//! memory, runs as a recurrence on an explicit (n, p) memory instead, every
//! S_t kept in one buffer allocated with the trainer. The reads, forward
//! and backward, are in `reads.rs`; the step, the evaluation and the
//! bookkeeping of the batch here.

use crate::input::InputError;
use crate::paper::retrieval::adam::Adam;
use crate::paper::retrieval::model::{
    EPS, FwmPhi, Layer, Params, Phi, Rule, Shape, draw_omega,
};
use crate::paper::retrieval::task::{
    Episode, Setting, episode_into, eval_sequence,
};
use crate::paper::retrieval::train::{Budget, Learner, Outcome, Run, train};
use crate::random::{BookRng, seeded};
use crate::trainers::kernels::{axpy, dot, gemm, phi_into, sigmoid};
use ndarray::{Array2, Axis, s};
use reads::{
    delta_episode, fwm_episode, fwm_features_into, fwm_write, layer_norm,
    softmax_episode, softmax_read, sum_episode,
};

mod reads;

/// k_t = P[k_t] + W_k,vᵀ[v_t] for every pair of `ep`, into `keys`' rows.
#[inline(always)]
fn gather_keys(
    keys: &mut Array2<f32>,
    proj: &Array2<f32>,
    kv: &Array2<f32>,
    ep: &Episode,
) {
    let d = proj.ncols();
    let (out, p, v) = (
        keys.as_slice_mut().expect("row-major"),
        proj.as_slice().expect("row-major"),
        kv.as_slice().expect("row-major"),
    );
    for (t, (&k, &val)) in ep.keys.iter().zip(&ep.values).enumerate() {
        let row = &mut out[t * d..(t + 1) * d];
        let (pk, vv) = (&p[k * d..(k + 1) * d], &v[val * d..(val + 1) * d]);
        for ((o, &a), &b) in row.iter_mut().zip(pk).zip(vv) {
            *o = a + b;
        }
    }
}

/// Buffers for one episode, sized for the longest sequence.
struct Work {
    /// k_t: (L, d); dL/dk_t: (L, d).
    keys: Array2<f32>,
    dk: Array2<f32>,
    /// φ(k_t): (L, p); k̄_t (delta rule): (L, p); dL/dφ or dL/dk̄: (L, p).
    fk: Array2<f32>,
    kb: Array2<f32>,
    dfk: Array2<f32>,
    /// The delta rule's Gram matrix K̄K̄ᵀ: (L, L).
    gram: Array2<f32>,
    /// Per token: scores, their gradients, sums of φ, write strengths.
    s: Vec<f32>,
    ds: Vec<f32>,
    ksum: Vec<f32>,
    beta: Vec<f32>,
    dbeta: Vec<f32>,
    lam: Vec<f32>,
    /// Per feature: φ(q), q̄, their gradients, a running sum.
    fq: Vec<f32>,
    qb: Vec<f32>,
    dfq: Vec<f32>,
    acc: Vec<f32>,
    /// dL/dq: (d); ŷ and dL/dŷ: (n).
    dq: Vec<f32>,
    y: Vec<f32>,
    dy: Vec<f32>,
    scratch: Vec<f32>,
    /// The fwm baseline: every S_t, (N + 1) (n, p) matrices in a row; the
    /// scale ρ_t of each write; D = dL/dS_t: (n, p); per value row: the
    /// read before its layer norm, D f_t, the residual v_t − S_{t−1} f_t.
    hist: Vec<f32>,
    scales: Vec<f32>,
    big_g: Vec<f32>,
    xr: Vec<f32>,
    gk: Vec<f32>,
    res: Vec<f32>,
}

impl Work {
    fn new(len: usize, shape: Shape, layer: Layer) -> Work {
        let Shape { n, d, .. } = shape;
        let p = layer.width(d);
        let fwm = matches!(layer, Layer::Fwm(_));
        let (steps, memory) = if fwm { (len, n * p) } else { (0, 0) };
        Work {
            hist: vec![0.0; (steps + 1) * memory],
            scales: vec![0.0; steps],
            big_g: vec![0.0; memory],
            xr: vec![0.0; n],
            gk: vec![0.0; n],
            res: vec![0.0; n],
            keys: Array2::zeros((len, d)),
            dk: Array2::zeros((len, d)),
            fk: Array2::zeros((len, p)),
            kb: Array2::zeros((len, p)),
            dfk: Array2::zeros((len, p)),
            gram: Array2::zeros((len, len)),
            s: vec![0.0; len],
            ds: vec![0.0; len],
            ksum: vec![0.0; len],
            beta: vec![0.0; len],
            dbeta: vec![0.0; len],
            lam: vec![0.0; len],
            fq: vec![0.0; p],
            qb: vec![0.0; p],
            dfq: vec![0.0; p],
            acc: vec![0.0; p],
            dq: vec![0.0; d],
            y: vec![0.0; n],
            dy: vec![0.0; n],
            scratch: vec![0.0; (6 * d).max(p)],
        }
    }
}

/// Why the fast trainer refused to go on.
#[derive(Clone, Debug, PartialEq)]
pub enum TrainError {
    /// A key's or the query's features sum to zero (or are not finite), so
    /// sum normalisation has nothing to divide by.
    NonPositiveNormaliser { what: &'static str, sum: f32 },
    /// The loss is not finite.
    NonFiniteLoss,
    /// The loss is finite but a gradient entry is not (a weight at ±∞
    /// times a zero derivative): tensor index as in [`Params::slices`].
    NonFiniteGradient { tensor: usize },
    /// A count of the task or the budget is zero (see [`Budget::check`]).
    Input(InputError),
}

impl From<InputError> for TrainError {
    fn from(e: InputError) -> Self {
        TrainError::Input(e)
    }
}

impl std::fmt::Display for TrainError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrainError::NonPositiveNormaliser { what, sum } => write!(
                f,
                "sum normalisation of a {what} needs a positive sum, got {sum}"
            ),
            TrainError::NonFiniteLoss => f.write_str("the loss is not finite"),
            TrainError::NonFiniteGradient { tensor } => write!(
                f,
                "the gradient of weight tensor {tensor} is not finite"
            ),
            TrainError::Input(e) => write!(f, "{e}"),
        }
    }
}

/// The fast trainer of one model.
pub struct Fast {
    pub layer: Layer,
    pub setting: Setting,
    pub shape: Shape,
    pub budget: Budget,
    pub params: Params<f32>,
    /// The mean gradient of the last batch.
    pub grad: Params<f32>,
    adam: Adam<f32>,
    /// FAVOR+'s projection: (d, r).
    pub omega: Array2<f32>,
    /// Per symbol: its key projection E W_k,eᵀ + b_k and one-hot part
    /// W_k,vᵀ, both (n, d), and their gradients.
    proj: Array2<f32>,
    kv: Array2<f32>,
    d_proj: Array2<f32>,
    d_kv: Array2<f32>,
    /// Per symbol: the embedding's part of β's logit, and its gradient.
    beta_e: Vec<f32>,
    d_beta_e: Vec<f32>,
    /// The batch's query embeddings (B, e), queries (B, d), dL/dq (B, d),
    /// dL/d(query embedding) (B, e).
    eq: Array2<f32>,
    qs: Array2<f32>,
    dqs: Array2<f32>,
    deq: Array2<f32>,
    /// All queries (n, d), for evaluation.
    q_all: Array2<f32>,
    batch: Vec<Episode>,
    work: Work,
    /// Floating-point operations done so far (see [`step_flops`]).
    pub flops: u64,
}

impl Fast {
    /// A trainer starting from `params` (the reference model's, in f32).
    pub fn new(
        layer: Layer,
        setting: Setting,
        params: &Params,
        budget: Budget,
    ) -> Fast {
        let (n, e) = params.emb.dim();
        let d = params.w_k.nrows();
        let shape = Shape { n, d, e };
        let params = params.to_f32();
        let b = budget.batch;
        let empty = Episode {
            keys: Vec::with_capacity(setting.len(n)),
            values: Vec::with_capacity(setting.len(n)),
            query: 0,
            target: 0,
        };
        Fast {
            layer,
            setting,
            shape,
            budget,
            grad: params.zeros_like(),
            adam: Adam::new(&params, budget.lr as f32),
            params,
            omega: Array2::zeros((d, 0)),
            proj: Array2::zeros((n, d)),
            kv: Array2::zeros((n, d)),
            d_proj: Array2::zeros((n, d)),
            d_kv: Array2::zeros((n, d)),
            beta_e: vec![0.0; n],
            d_beta_e: vec![0.0; n],
            eq: Array2::zeros((b, e)),
            qs: Array2::zeros((b, d)),
            dqs: Array2::zeros((b, d)),
            deq: Array2::zeros((b, e)),
            q_all: Array2::zeros((n, d)),
            batch: vec![empty; b],
            work: Work::new(setting.len(n).max(n), shape, layer),
            flops: 0,
        }
    }

    fn redraw_omega(&mut self, rng: &mut BookRng) {
        if let Layer::Linear(Phi::Favor(_), _)
        | Layer::Fwm(FwmPhi::Map(Phi::Favor(_))) = self.layer
        {
            let omega = draw_omega(rng, self.layer, self.shape.d);
            self.omega = omega.mapv(|x| x as f32);
        }
    }

    /// The per-symbol products of a step: P = E W_k,eᵀ + b_k, W_k,vᵀ, and
    /// (delta rule) E w_β,e.
    fn prepare(&mut self) {
        let n = self.shape.n;
        let w = &self.params;
        let w_k_e = w.w_k.slice(s![.., n..]);
        gemm(
            &mut self.flops,
            w.emb.view(),
            w_k_e.t(),
            &mut self.proj.view_mut(),
        );
        self.proj += &w.b_k;
        self.kv.assign(&w.w_k.slice(s![.., ..n]).t());
        if has_beta(self.layer) {
            let w_b_e = w.w_beta.slice(s![n..]);
            for (k, row) in w.emb.rows().into_iter().enumerate() {
                self.beta_e[k] = row.dot(&w_b_e);
            }
            self.flops += (2 * n * self.shape.e) as u64;
        }
    }

    /// The mean loss of `episodes` (at most one batch), with its mean
    /// gradient left in `self.grad`. FAVOR+ uses `self.omega`.
    pub fn gradient(
        &mut self,
        episodes: &[Episode],
    ) -> Result<f64, TrainError> {
        let Shape { n, d, e } = self.shape;
        let b = episodes.len();
        if b > self.eq.nrows() {
            return Err(TrainError::Input(InputError::BadParameter {
                name: "episodes",
                value: b,
                rule: "a gradient takes at most one batch of episodes",
            }));
        }
        self.prepare();
        for (i, ep) in episodes.iter().enumerate() {
            self.eq.row_mut(i).assign(&self.params.emb.row(ep.query));
        }
        self.eq.slice_mut(s![b.., ..]).fill(0.0);
        gemm(
            &mut self.flops,
            self.eq.view(),
            self.params.w_q.t(),
            &mut self.qs.view_mut(),
        );
        self.qs += &self.params.b_q;
        self.d_proj.fill(0.0);
        self.d_kv.fill(0.0);
        self.d_beta_e.fill(0.0);
        self.dqs.fill(0.0);
        self.grad.w_beta.fill(0.0);
        self.grad.b_beta.fill(0.0);
        let scale = 1.0 / b as f32;
        let mut total = 0.0;
        for (i, ep) in episodes.iter().enumerate() {
            total += self.episode(ep, i, scale)? as f64;
        }
        // The products that carry the per-symbol gradients to the weights.
        let w = &self.params;
        let g = &mut self.grad;
        let f = &mut self.flops;
        gemm(
            f,
            self.d_proj.t(),
            w.emb.view(),
            &mut g.w_k.slice_mut(s![.., n..]),
        );
        g.w_k.slice_mut(s![.., ..n]).assign(&self.d_kv.t());
        g.b_k.assign(&self.d_proj.sum_axis(Axis(0)));
        gemm(
            f,
            self.d_proj.view(),
            w.w_k.slice(s![.., n..]),
            &mut g.emb.view_mut(),
        );
        gemm(f, self.dqs.t(), self.eq.view(), &mut g.w_q.view_mut());
        g.b_q.assign(&self.dqs.sum_axis(Axis(0)));
        gemm(f, self.dqs.view(), w.w_q.view(), &mut self.deq.view_mut());
        for (i, ep) in episodes.iter().enumerate() {
            let mut row = g.emb.row_mut(ep.query);
            row += &self.deq.row(i);
        }
        if has_beta(self.layer) {
            let w_b_e = w.w_beta.slice(s![n..]);
            let mut g_b_e = g.w_beta.slice_mut(s![n..]);
            for (k, row) in w.emb.rows().into_iter().enumerate() {
                let db = self.d_beta_e[k];
                g_b_e.scaled_add(db, &row);
                g.emb.row_mut(k).scaled_add(db, &w_b_e);
            }
            *f += (4 * n * e) as u64;
        }
        let _ = d;
        let grads = self.grad.slices();
        if let Some(tensor) =
            grads.iter().position(|g| g.iter().any(|x| !x.is_finite()))
        {
            return Err(TrainError::NonFiniteGradient { tensor });
        }
        Ok(total / b as f64)
    }

    /// One episode's forward and backward pass, compiled for AVX2 where
    /// this CPU has it (asked at run time), so that its loops run on eight
    /// floats at a time; else as baseline x86-64 code.
    fn episode(
        &mut self,
        ep: &Episode,
        i: usize,
        scale: f32,
    ) -> Result<f32, TrainError> {
        #[cfg(target_arch = "x86_64")]
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: this CPU has AVX2, the one feature `episode_avx2`
            // assumes.
            return unsafe { self.episode_avx2(ep, i, scale) };
        }
        self.episode_any(ep, i, scale)
    }

    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2")]
    unsafe fn episode_avx2(
        &mut self,
        ep: &Episode,
        i: usize,
        scale: f32,
    ) -> Result<f32, TrainError> {
        self.episode_any(ep, i, scale)
    }

    /// One episode's forward and backward pass; gradients are added into
    /// the per-symbol accumulators, scaled by `scale`.
    #[inline(always)]
    fn episode_any(
        &mut self,
        ep: &Episode,
        i: usize,
        scale: f32,
    ) -> Result<f32, TrainError> {
        let extra = self.episode_flops(ep.keys.len());
        let wk = &mut self.work;
        gather_keys(&mut wk.keys, &self.proj, &self.kv, ep);
        let q = self.qs.row(i);
        let q = q.as_slice().expect("row-major queries");
        let loss = match self.layer {
            Layer::Softmax => softmax_episode(wk, ep, q, scale),
            Layer::Linear(phi, Rule::Sum) => {
                sum_episode(wk, phi, ep, q, &self.omega, scale)
            }
            Layer::Linear(_, Rule::Delta) | Layer::Fwm(_) => {
                let w_b = &self.params.w_beta;
                let b_b = self.params.b_beta[0];
                for (t, (&k, &v)) in ep.keys.iter().zip(&ep.values).enumerate()
                {
                    wk.beta[t] = sigmoid(self.beta_e[k] + w_b[v] + b_b);
                }
                let loss = match self.layer {
                    Layer::Fwm(map) => {
                        fwm_episode(wk, map, ep, q, &self.omega, scale)
                    }
                    Layer::Linear(phi, _) => delta_episode(
                        wk,
                        phi,
                        ep,
                        q,
                        &self.omega,
                        scale,
                        &mut self.flops,
                    )?,
                    Layer::Softmax => unreachable!("softmax has no β"),
                };
                for (t, (&k, &v)) in ep.keys.iter().zip(&ep.values).enumerate()
                {
                    let beta = wk.beta[t];
                    let dpre = wk.dbeta[t] * beta * (1.0 - beta);
                    self.d_beta_e[k] += dpre;
                    self.grad.w_beta[v] += dpre;
                    self.grad.b_beta[0] += dpre;
                }
                loss
            }
        };
        if !loss.is_finite() {
            return Err(TrainError::NonFiniteLoss);
        }
        self.flops += extra;
        // Each pair's key gradient goes to its key symbol's row of P and
        // its value symbol's column of W_k,v.
        let d = self.shape.d;
        let (dk, dp, dv) = (
            wk.dk.as_slice().expect("row-major"),
            self.d_proj.as_slice_mut().expect("row-major"),
            self.d_kv.as_slice_mut().expect("row-major"),
        );
        for (t, (&k, &v)) in ep.keys.iter().zip(&ep.values).enumerate() {
            let g = &dk[t * d..(t + 1) * d];
            axpy(1.0, g, &mut dp[k * d..(k + 1) * d]);
            axpy(1.0, g, &mut dv[v * d..(v + 1) * d]);
        }
        self.dqs
            .row_mut(i)
            .as_slice_mut()
            .expect("row-major")
            .copy_from_slice(&wk.dq);
        Ok(loss)
    }

    /// The arithmetic of one episode of length `len` outside the Gram
    /// product (which `gemm` counts): reads, scores, their gradients.
    fn episode_flops(&self, len: usize) -> u64 {
        let d = self.shape.d;
        let p = self.layer.width(d);
        let len = len as u64;
        match self.layer {
            // scores, dq, dk: 2 len d each
            Layer::Softmax => 6 * len * d as u64,
            // scores, dφ(q), dφ(k): 2 len p each
            Layer::Linear(_, Rule::Sum) => 6 * len * p as u64,
            // c, two triangular solves, running sums, normalisation
            Layer::Linear(_, Rule::Delta) => {
                2 * len * (len - 1) + 12 * len * p as u64
            }
            Layer::Fwm(_) => {
                fwm_episode_flops(len, self.shape.n as u64, p as u64)
            }
        }
    }

    /// The mean loss over the paper's evaluation: `eval_sequences` fresh
    /// sequences of n pairs, each read at every distinct key (at most
    /// `max_queries`), each sequence's memory built once.
    pub fn evaluate_with(
        &mut self,
        rng: &mut BookRng,
    ) -> Result<f64, TrainError> {
        self.budget.check()?;
        let Shape { n, d, .. } = self.shape;
        self.prepare();
        gemm(
            &mut self.flops,
            self.params.emb.view(),
            self.params.w_q.t(),
            &mut self.q_all.view_mut(),
        );
        self.q_all += &self.params.b_q;
        let p = self.layer.width(d);
        let mut memory = Array2::<f32>::zeros((n, p));
        let mut z = vec![0.0f32; p];
        let (mut total, mut count) = (0.0f64, 0usize);
        for _ in 0..self.budget.eval_sequences {
            self.redraw_omega(rng);
            let (seq, queries) =
                eval_sequence(rng, n, self.setting, self.budget.max_queries)?;
            let wk = &mut self.work;
            gather_keys(&mut wk.keys, &self.proj, &self.kv, &seq);
            let len = seq.keys.len();
            if let Layer::Fwm(map) = self.layer {
                let memory = memory.as_slice_mut().expect("row-major");
                memory.fill(0.0);
                for t in 0..len {
                    let key = wk.keys.row(t);
                    let f = wk.fk.row_mut(t).into_slice().expect("row-major");
                    fwm_features_into(
                        map,
                        key.as_slice().expect("row-major"),
                        &self.omega,
                        f,
                        &mut wk.scratch,
                    );
                    let (k, v) = (seq.keys[t], seq.values[t]);
                    let beta = sigmoid(
                        self.beta_e[k]
                            + self.params.w_beta[v]
                            + self.params.b_beta[0],
                    );
                    fwm_write(memory, f, v, beta, t == 0);
                }
            }
            if let Layer::Linear(phi, rule) = self.layer {
                memory.fill(0.0);
                z.fill(0.0);
                for t in 0..len {
                    let key = wk.keys.row(t);
                    let f = wk.fk.row_mut(t).into_slice().expect("row-major");
                    phi_into(
                        phi,
                        key.as_slice().expect("row-major"),
                        &self.omega,
                        f,
                        &mut wk.scratch,
                    );
                    let v = seq.values[t];
                    let row = memory.row_mut(v).into_slice().expect("rows");
                    match rule {
                        Rule::Sum => {
                            axpy(1.0, f, row);
                            axpy(1.0, f, &mut z);
                        }
                        Rule::Delta => {
                            let sum: f32 = f.iter().sum();
                            f.iter_mut().for_each(|x| *x /= sum);
                            let k = seq.keys[t];
                            let beta = sigmoid(
                                self.beta_e[k]
                                    + self.params.w_beta[v]
                                    + self.params.b_beta[0],
                            );
                            // W += β (v − W k̄) k̄ᵀ, v one-hot
                            for (u, mut row) in
                                memory.rows_mut().into_iter().enumerate()
                            {
                                let row = row.as_slice_mut().expect("rows");
                                let old = dot(row, f);
                                let target = if u == v { 1.0 } else { 0.0 };
                                axpy(beta * (target - old), f, row);
                            }
                        }
                    }
                }
            }
            for &(query, target) in &queries {
                let q = self.q_all.row(query);
                let q = q.as_slice().expect("row-major");
                let y = &mut wk.y;
                match self.layer {
                    Layer::Softmax => {
                        softmax_read(&wk.keys, &seq.values, q, &mut wk.s, y);
                    }
                    Layer::Linear(phi, rule) => {
                        phi_into(
                            phi,
                            q,
                            &self.omega,
                            &mut wk.fq,
                            &mut wk.scratch,
                        );
                        let norm = match rule {
                            Rule::Sum => dot(&z, &wk.fq) + EPS as f32,
                            Rule::Delta => wk.fq.iter().sum(),
                        };
                        for (u, row) in memory.rows().into_iter().enumerate() {
                            let row = row.to_slice().expect("rows");
                            y[u] = dot(row, &wk.fq) / norm;
                        }
                    }
                    Layer::Fwm(map) => {
                        fwm_features_into(
                            map,
                            q,
                            &self.omega,
                            &mut wk.fq,
                            &mut wk.scratch,
                        );
                        for (u, row) in memory.rows().into_iter().enumerate() {
                            let row = row.to_slice().expect("rows");
                            wk.xr[u] = dot(row, &wk.fq);
                        }
                        layer_norm(&wk.xr, y);
                    }
                }
                let mut loss = 0.0;
                for (u, &yu) in y.iter().enumerate() {
                    let err = yu - if u == target { 1.0 } else { 0.0 };
                    loss += err * err;
                }
                total += 0.5 * loss as f64;
                count += 1;
            }
        }
        Ok(total / count as f64)
    }

    /// One training step: a fresh batch, its mean gradient, one Adam
    /// update.
    pub fn try_step(&mut self, rng: &mut BookRng) -> Result<f64, TrainError> {
        self.budget.check()?;
        self.redraw_omega(rng);
        let mut batch = std::mem::take(&mut self.batch);
        let (n, setting) = (self.shape.n, self.setting);
        let drawn = batch
            .iter_mut()
            .try_for_each(|e| episode_into(rng, n, setting, e));
        let loss = match drawn {
            Ok(()) => self.gradient(&batch),
            Err(e) => Err(e.into()),
        };
        self.batch = batch;
        let loss = loss?;
        self.adam.update(&mut self.params, &self.grad);
        Ok(loss)
    }
}

impl Learner for Fast {
    fn step(&mut self, rng: &mut BookRng) -> Result<(), String> {
        self.try_step(rng).map(|_| ()).map_err(|e| e.to_string())
    }

    fn evaluate(&mut self, rng: &mut BookRng) -> Result<f64, String> {
        self.evaluate_with(rng).map_err(|e| e.to_string())
    }
}

/// Whether `layer` has write strengths β (the delta rule and the fwm
/// baseline).
fn has_beta(layer: Layer) -> bool {
    matches!(layer, Layer::Linear(_, Rule::Delta) | Layer::Fwm(_))
}

/// The counted arithmetic of one fwm episode of `len` writes into an
/// (n, p) memory: per write 6np forward (read, write, norm) and 14np
/// backward (the scaling's dot and update, G f, the residual, dL/df, G's
/// update), plus the read, its gradient and G's first value, 5np.
fn fwm_episode_flops(len: u64, n: u64, p: u64) -> u64 {
    20 * len * n * p + 5 * n * p
}

/// Floating-point operations of one training step of `layer` at `shape`
/// with batch `b` in `setting`: the step's matrix products (key projection
/// of every symbol and its two gradient products, the batch's queries and
/// their two), plus each episode's reads and their gradients. Adam and the
/// feature maps are not counted. It is a nominal count by formula, the
/// unit in which the sweep's time estimates and the trainer's GFLOP/s are
/// expressed; it is not a tally of the operations a step performs (the fwm
/// layer's rescaling, for one, is counted at every write though it runs
/// only when ‖W‖_F > 1).
pub fn step_flops(
    layer: Layer,
    setting: Setting,
    shape: Shape,
    b: usize,
) -> u64 {
    let Shape { n, d, e } = shape;
    let (n, d, e, b) = (n as u64, d as u64, e as u64, b as u64);
    let p = layer.width(shape.d) as u64;
    let len = setting.len(shape.n) as u64;
    let products = 3 * 2 * n * d * e + 3 * 2 * b * d * e;
    let episode = match layer {
        Layer::Softmax => 6 * len * d,
        Layer::Linear(_, Rule::Sum) => 6 * len * p,
        Layer::Linear(_, Rule::Delta) => {
            2 * len * len * p + 2 * len * (len - 1) + 12 * len * p
        }
        Layer::Fwm(_) => fwm_episode_flops(len, n, p),
    };
    let beta = if has_beta(layer) { 6 * n * e } else { 0 };
    products + b * episode + beta
}

/// Train `run` with the fast f32 trainer, from the reference model's
/// initialisation for its seed.
pub fn train_fast(run: &Run, on_eval: impl FnMut(usize, f64)) -> Outcome {
    let params = Params::init(&mut seeded(run.seed), run.shape, run.layer);
    let mut fast = Fast::new(run.layer, run.setting, &params, run.budget);
    train(&mut fast, &run.budget, run.seed ^ 0x5EED, on_eval)
}

#[cfg(test)]
mod tests;
