//! The retrieval model, trained fast: f32, the work of a step shaped as
//! matrix products, and no allocation inside the loop over a batch's
//! episodes. It computes what the f64 reference model of
//! [`crate::paper::retrieval::model`] computes (tested below, layer by layer,
//! loss and every gradient); the sweep trains with it.
//!
//! Three ideas make it fast:
//! - the key projection of every symbol, P = E W_k,eᵀ, is one product per
//!   step (not one per pair of every episode), and its gradient two more;
//! - the sum rule and softmax read at the query in attention form, from
//!   scores φ(k_t)ᵀφ(q), never building the (n, p) memory;
//! - the delta rule reads in attention form too: with one read at the end,
//!   W_L q̄ = Σ_t β_t w_t v_t, where w solves a triangular system in the
//!   Gram matrix K̄K̄ᵀ (one product), and its backward pass needs only
//!   that system again and running sums over t.
//!
//! The baseline rule of Schlag et al. (2021b), whose write scales the whole
//! memory, runs as a recurrence on an explicit (n, p) memory instead, every
//! W_t kept in one buffer allocated with the trainer.

use crate::paper::retrieval::adam::Adam;
use crate::paper::retrieval::model::{
    EPS, FwmPhi, LN_EPS, Layer, Params, Phi, Rule, Shape, draw_omega,
};
use crate::paper::retrieval::task::{
    Episode, Setting, episode_into, eval_sequence,
};
use crate::paper::retrieval::train::{Budget, Learner};
use crate::random::BookRng;
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2, ArrayViewMut2, Axis, s};

/// C ← A B, counting its arithmetic (2 m k n) into `flops`.
fn gemm(
    flops: &mut u64,
    a: ArrayView2<f32>,
    b: ArrayView2<f32>,
    c: &mut ArrayViewMut2<f32>,
) {
    *flops += 2 * (a.nrows() * a.ncols() * b.ncols()) as u64;
    general_mat_mul(1.0, &a, &b, 0.0, c);
}

#[inline(always)]
fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight partial sums, so the compiler keeps them in vector lanes.
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

#[inline(always)]
fn axpy(alpha: f32, x: &[f32], y: &mut [f32]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += alpha * x;
    }
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

/// eˣ in f32 without branches, so that loops over it vectorise: write
/// x = k ln 2 + r with |r| ≤ ln 2 / 2, take eʳ from Cephes' polynomial and
/// 2ᵏ from the exponent bits. Relative error below 3e-7 (tested against f64).
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const ROUND: f32 = 12_582_912.0; // 1.5 · 2²³: adding it rounds to an integer
    let x = x.clamp(-87.0, 88.0);
    let rounded = x * std::f32::consts::LOG2_E + ROUND;
    let k = rounded - ROUND;
    let r = x - k * 0.693_359_4 + k * 2.121_944_4e-4;
    let mut p = 1.987_569_1e-4;
    for c in [1.398_2e-3, 8.333_452e-3, 4.166_579_6e-2, 0.166_666_65, 0.5] {
        p = p * r + c;
    }
    let e = p * r * r + r + 1.0;
    // The low bits of `rounded` hold k; 2ᵏ has exponent field k + 127.
    let bits = rounded.to_bits().wrapping_sub(ROUND.to_bits() - 127) << 23;
    e * f32::from_bits(bits)
}

/// x̃ = [relu(x), relu(−x)] into `xt` (2d entries).
#[inline(always)]
fn split_signs(x: &[f32], xt: &mut [f32]) {
    let (up, down) = xt.split_at_mut(x.len());
    for ((u, w), &x) in up.iter_mut().zip(down.iter_mut()).zip(x) {
        *u = x.max(0.0);
        *w = (-x).max(0.0);
    }
}

/// out[i] = a[i] · b[i].
#[inline(always)]
fn mul_into(a: &[f32], b: &[f32], out: &mut [f32]) {
    for ((o, &a), &b) in out.iter_mut().zip(a).zip(b) {
        *o = a * b;
    }
}

/// out[i] += a[i] · b[i].
#[inline(always)]
fn mul_add(a: &[f32], b: &[f32], out: &mut [f32]) {
    for ((o, &a), &b) in out.iter_mut().zip(a).zip(b) {
        *o += a * b;
    }
}

/// φ(x) into `out` (p entries). `xt`: scratch of 2d entries.
#[inline(always)]
fn phi_into(
    phi: Phi,
    x: &[f32],
    omega: &Array2<f32>,
    out: &mut [f32],
    xt: &mut [f32],
) {
    match phi {
        Phi::EluPlusOne => {
            // Both branches computed, then a select: no jumps, so the
            // loop vectorises.
            for (o, &x) in out.iter_mut().zip(x) {
                let below = exp(x.min(0.0));
                *o = if x > 0.0 { x + 1.0 } else { below };
            }
        }
        Phi::Dpfp(nu) => {
            let m = 2 * x.len();
            let xt = &mut xt[..m];
            split_signs(x, xt);
            // φ_j[i] = x̃[i] · x̃[(i − j) mod 2d], in two runs without a mod.
            for j in 1..=nu {
                let block = &mut out[(j - 1) * m..j * m];
                let (head, tail) = block.split_at_mut(j);
                mul_into(&xt[..j], &xt[m - j..], head);
                mul_into(&xt[j..], &xt[..m - j], tail);
            }
        }
        Phi::Favor(r) => {
            let half_sq = dot(x, x) / 2.0;
            let scale = 1.0 / ((2 * r) as f32).sqrt();
            let (pos, neg) = out.split_at_mut(r);
            pos.fill(0.0);
            for (i, &xi) in x.iter().enumerate() {
                axpy(xi, omega.row(i).as_slice().expect("row-major Ω"), pos);
            }
            for (p, n) in pos.iter_mut().zip(neg) {
                let u = *p;
                *p = exp(u - half_sq) * scale;
                *n = exp(-u - half_sq) * scale;
            }
        }
    }
}

/// dL/dx into `dx`, from g = dL/dφ(x) and f = φ(x). `scratch`: 6d or r
/// entries, whichever is larger.
#[inline(always)]
fn phi_back(
    phi: Phi,
    x: &[f32],
    f: &[f32],
    g: &[f32],
    omega: &Array2<f32>,
    dx: &mut [f32],
    scratch: &mut [f32],
) {
    match phi {
        // φ' = 1 above zero (where φ = x + 1 > 1), eˣ = φ ≤ 1 below: min(φ, 1).
        Phi::EluPlusOne => {
            for ((dx, &f), &g) in dx.iter_mut().zip(f).zip(g) {
                *dx = g * f.min(1.0);
            }
        }
        Phi::Dpfp(nu) => {
            let (d, m) = (x.len(), 2 * x.len());
            let (xt, rest) = scratch.split_at_mut(m);
            let (dxt, rest) = rest.split_at_mut(m);
            let gx = &mut rest[..m];
            split_signs(x, xt);
            dxt.fill(0.0);
            for j in 1..=nu {
                let block = &g[(j - 1) * m..j * m];
                // dx̃[i] += g[i] x̃[i − j] ...
                mul_add(&block[..j], &xt[m - j..], &mut dxt[..j]);
                mul_add(&block[j..], &xt[..m - j], &mut dxt[j..]);
                // ... and dx̃[i − j] += g[i] x̃[i].
                mul_into(block, xt, gx);
                axpy(1.0, &gx[j..], &mut dxt[..m - j]);
                axpy(1.0, &gx[..j], &mut dxt[m - j..]);
            }
            let (up, down) = dxt.split_at(d);
            for (((dx, &x), &u), &w) in dx.iter_mut().zip(x).zip(up).zip(down) {
                let u = if x > 0.0 { u } else { 0.0 };
                let w = if x < 0.0 { w } else { 0.0 };
                *dx = u - w;
            }
        }
        Phi::Favor(r) => {
            // f = exp([Ωᵀx, −Ωᵀx] − ‖x‖²/2) / √(2r)
            let diff = &mut scratch[..r];
            let mut total = 0.0;
            let (gp, gn) = g.split_at(r);
            let (fp, fn_) = f.split_at(r);
            for ((((d, &gp), &gn), &fp), &fn_) in
                diff.iter_mut().zip(gp).zip(gn).zip(fp).zip(fn_)
            {
                let (a, b) = (gp * fp, gn * fn_);
                *d = a - b;
                total += a + b;
            }
            for (i, dxi) in dx.iter_mut().enumerate() {
                let row = omega.row(i);
                *dxi = dot(row.as_slice().expect("row-major Ω"), diff)
                    - x[i] * total;
            }
        }
    }
}

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
    /// The fwm baseline: every W_t, (L + 1) (n, p) matrices in a row; the
    /// scale s_t of each write; dL/dW_t: (n, p); per value row: the read
    /// before its layer norm, G f_t, the residual v_t − W_{t−1} f_t.
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
        assert!(b <= self.eq.nrows(), "at most one batch of episodes");
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
    pub fn evaluate_with(&mut self, rng: &mut BookRng) -> f64 {
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
                eval_sequence(rng, n, self.setting, self.budget.max_queries);
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
        total / count as f64
    }

    /// One training step: a fresh batch, its mean gradient, one Adam
    /// update.
    pub fn try_step(&mut self, rng: &mut BookRng) -> Result<f64, TrainError> {
        self.redraw_omega(rng);
        let mut batch = std::mem::take(&mut self.batch);
        for e in batch.iter_mut() {
            episode_into(rng, self.shape.n, self.setting, e);
        }
        let loss = self.gradient(&batch);
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

    fn evaluate(&mut self, rng: &mut BookRng) -> f64 {
        self.evaluate_with(rng)
    }
}

/// ½‖ŷ − one_hot(target)‖², and dL/dŷ · scale into `dy`.
#[inline(always)]
fn loss_and_grad(y: &[f32], target: usize, scale: f32, dy: &mut [f32]) -> f32 {
    let mut loss = 0.0;
    for (u, (&yu, g)) in y.iter().zip(dy.iter_mut()).enumerate() {
        let err = yu - if u == target { 1.0 } else { 0.0 };
        loss += err * err;
        *g = err * scale;
    }
    0.5 * loss
}

/// Softmax attention read at the query: the weights a_t of the pairs into
/// `a`, ŷ (each a_t added at its value) into `y`.
#[inline(always)]
fn softmax_read(
    keys: &Array2<f32>,
    values: &[usize],
    q: &[f32],
    a: &mut [f32],
    y: &mut [f32],
) {
    let a = &mut a[..values.len()];
    let root = 1.0 / (q.len() as f32).sqrt();
    let mut max = f32::NEG_INFINITY;
    for (a, key) in a.iter_mut().zip(keys.rows()) {
        *a = dot(key.as_slice().expect("row-major"), q) * root;
        max = max.max(*a);
    }
    let mut sum = 0.0;
    for a in a.iter_mut() {
        *a = exp(*a - max);
        sum += *a;
    }
    y.fill(0.0);
    for (a, &v) in a.iter_mut().zip(values) {
        *a /= sum;
        y[v] += *a;
    }
}

/// Softmax attention read at the query, forward and backward.
#[inline(always)]
fn softmax_episode(wk: &mut Work, ep: &Episode, q: &[f32], scale: f32) -> f32 {
    let len = ep.keys.len();
    let root = 1.0 / (q.len() as f32).sqrt();
    softmax_read(&wk.keys, &ep.values, q, &mut wk.s, &mut wk.y);
    let loss = loss_and_grad(&wk.y, ep.target, scale, &mut wk.dy);
    let mean: f32 = (0..len).map(|t| wk.s[t] * wk.dy[ep.values[t]]).sum();
    wk.dq.fill(0.0);
    for t in 0..len {
        let ds = wk.s[t] * (wk.dy[ep.values[t]] - mean) * root;
        let key = wk.keys.row(t);
        axpy(ds, key.as_slice().expect("row-major"), &mut wk.dq);
        let mut dk = wk.dk.row_mut(t);
        let dk = dk.as_slice_mut().expect("row-major");
        for (g, &qi) in dk.iter_mut().zip(q) {
            *g = ds * qi;
        }
    }
    loss
}

/// The sum rule read at the query in attention form: with scores
/// s_t = φ(k_t)ᵀφ(q) and Z = Σ s_t + ε, ŷ[v] = Σ_{t: v_t = v} s_t / Z.
#[inline(always)]
fn sum_episode(
    wk: &mut Work,
    phi: Phi,
    ep: &Episode,
    q: &[f32],
    omega: &Array2<f32>,
    scale: f32,
) -> f32 {
    let len = ep.keys.len();
    phi_into(phi, q, omega, &mut wk.fq, &mut wk.scratch);
    let mut z = EPS as f32;
    for t in 0..len {
        let key = wk.keys.row(t);
        let f = wk.fk.row_mut(t).into_slice().expect("row-major");
        phi_into(
            phi,
            key.as_slice().expect("rows"),
            omega,
            f,
            &mut wk.scratch,
        );
        wk.s[t] = dot(f, &wk.fq);
        z += wk.s[t];
    }
    wk.y.fill(0.0);
    for t in 0..len {
        wk.y[ep.values[t]] += wk.s[t] / z;
    }
    let loss = loss_and_grad(&wk.y, ep.target, scale, &mut wk.dy);
    // dL/ds_t = (dŷ[v_t] − dŷ·ŷ) / Z
    let mean = dot(&wk.dy, &wk.y);
    wk.dfq.fill(0.0);
    for t in 0..len {
        let ds = (wk.dy[ep.values[t]] - mean) / z;
        let f = wk.fk.row(t);
        axpy(ds, f.as_slice().expect("row-major"), &mut wk.dfq);
        let mut g = wk.dfk.row_mut(t);
        let g = g.as_slice_mut().expect("row-major");
        for (g, &fq) in g.iter_mut().zip(&wk.fq) {
            *g = ds * fq;
        }
        let key = wk.keys.row(t);
        let mut dk = wk.dk.row_mut(t);
        phi_back(
            phi,
            key.as_slice().expect("row-major"),
            f.as_slice().expect("row-major"),
            g,
            omega,
            dk.as_slice_mut().expect("row-major"),
            &mut wk.scratch,
        );
    }
    let mut dq = std::mem::take(&mut wk.dq);
    phi_back(phi, q, &wk.fq, &wk.dfq, omega, &mut dq, &mut wk.scratch);
    wk.dq = dq;
    loss
}

/// The delta rule read once, at the end, in attention form. Writing
/// W_L = Σ_t u_t k̄_tᵀ, the u_t solve A U = diag(β) V with A unit lower
/// triangular, A_ij = β_i k̄_iᵀk̄_j (i > j). So ŷ = W_L q̄ = Σ_t β_t w_t v_t
/// with Aᵀw = c, c_t = k̄_tᵀq̄: one Gram product and one triangular solve.
/// Backward: λ = A⁻¹ (β ⊙ dŷ[v]), and dk̄_i needs only running sums.
#[inline(always)]
fn delta_episode(
    wk: &mut Work,
    phi: Phi,
    ep: &Episode,
    q: &[f32],
    omega: &Array2<f32>,
    scale: f32,
    flops: &mut u64,
) -> Result<f32, TrainError> {
    let len = ep.keys.len();
    let p = wk.fq.len();
    // k̄_t = φ(k_t) / Σφ(k_t) and q̄ likewise.
    for t in 0..len {
        let key = wk.keys.row(t);
        let f = wk.fk.row_mut(t).into_slice().expect("row-major");
        phi_into(
            phi,
            key.as_slice().expect("rows"),
            omega,
            f,
            &mut wk.scratch,
        );
        let sum: f32 = f.iter().sum();
        if !(sum > 0.0 && sum.is_finite()) {
            return Err(TrainError::NonPositiveNormaliser { what: "key", sum });
        }
        wk.ksum[t] = sum;
        let kb = wk.kb.row_mut(t).into_slice().expect("row-major");
        for (b, &x) in kb.iter_mut().zip(f.iter()) {
            *b = x / sum;
        }
    }
    phi_into(phi, q, omega, &mut wk.fq, &mut wk.scratch);
    let qsum: f32 = wk.fq.iter().sum();
    if !(qsum > 0.0 && qsum.is_finite()) {
        let sum = qsum;
        return Err(TrainError::NonPositiveNormaliser { what: "query", sum });
    }
    for (b, &x) in wk.qb.iter_mut().zip(&wk.fq) {
        *b = x / qsum;
    }
    let kb = wk.kb.slice(s![..len, ..]);
    gemm(flops, kb, kb.t(), &mut wk.gram.slice_mut(s![..len, ..len]));
    // Back substitution, Aᵀw = c: w_i = c_i − Σ_{j>i} G_ij β_j w_j.
    // wk.s holds w, wk.ds holds β ⊙ w.
    for i in (0..len).rev() {
        let c = dot(kb.row(i).as_slice().expect("rows"), &wk.qb);
        let g = wk.gram.row(i);
        let g = &g.as_slice().expect("row-major")[i + 1..len];
        wk.s[i] = c - dot(g, &wk.ds[i + 1..len]);
        wk.ds[i] = wk.beta[i] * wk.s[i];
    }
    wk.y.fill(0.0);
    for t in 0..len {
        wk.y[ep.values[t]] += wk.ds[t];
    }
    let loss = loss_and_grad(&wk.y, ep.target, scale, &mut wk.dy);
    // Forward substitution, Aλ = β ⊙ dŷ[v]: λ_i = g_i − β_i h_i with
    // h_i = Σ_{j<i} G_ij λ_j; and dβ_i = w_i dŷ[v_i] − w_i h_i.
    for i in 0..len {
        let dyv = wk.dy[ep.values[i]];
        let g = wk.gram.row(i);
        let h = dot(&g.as_slice().expect("row-major")[..i], &wk.lam[..i]);
        wk.lam[i] = wk.beta[i] * dyv - wk.beta[i] * h;
        wk.dbeta[i] = wk.s[i] * (dyv - h);
    }
    // dk̄_i = a_i Σ_{j<i} λ_j k̄_j + λ_i (Σ_{j>i} a_j k̄_j + q̄), a = −β ⊙ w.
    wk.acc.fill(0.0);
    for i in 0..len {
        let a = -wk.ds[i];
        let mut g = wk.dfk.row_mut(i);
        let g = g.as_slice_mut().expect("row-major");
        for (g, &acc) in g.iter_mut().zip(&wk.acc) {
            *g = a * acc;
        }
        axpy(wk.lam[i], kb.row(i).as_slice().expect("rows"), &mut wk.acc);
    }
    // The prefix sum over all t is dq̄ = Σ λ_t k̄_t.
    wk.dfq.copy_from_slice(&wk.acc);
    wk.acc.copy_from_slice(&wk.qb);
    for i in (0..len).rev() {
        let mut g = wk.dfk.row_mut(i);
        let g = g.as_slice_mut().expect("row-major");
        axpy(wk.lam[i], &wk.acc, g);
        axpy(-wk.ds[i], kb.row(i).as_slice().expect("rows"), &mut wk.acc);
        // Through k̄ = φ/Σφ: dφ = (dk̄ − dk̄·k̄) / Σφ, then through φ.
        let kbi = kb.row(i);
        let kbi = kbi.as_slice().expect("rows");
        let along = dot(g, kbi);
        g.iter_mut().for_each(|x| *x = (*x - along) / wk.ksum[i]);
        let key = wk.keys.row(i);
        let f = wk.fk.row(i);
        let mut dk = wk.dk.row_mut(i);
        phi_back(
            phi,
            key.as_slice().expect("rows"),
            f.as_slice().expect("rows"),
            g,
            omega,
            dk.as_slice_mut().expect("rows"),
            &mut wk.scratch,
        );
    }
    let along = dot(&wk.dfq, &wk.qb);
    wk.dfq.iter_mut().for_each(|x| *x = (*x - along) / qsum);
    let mut dq = std::mem::take(&mut wk.dq);
    phi_back(phi, q, &wk.fq, &wk.dfq, omega, &mut dq, &mut wk.scratch);
    wk.dq = dq;
    let _ = p;
    Ok(loss)
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

/// The fwm baseline's key features into `out`: φ(x) of a book map, or
/// tanh(x).
#[inline(always)]
fn fwm_features_into(
    map: FwmPhi,
    x: &[f32],
    omega: &Array2<f32>,
    out: &mut [f32],
    scratch: &mut [f32],
) {
    match map {
        FwmPhi::Map(phi) => phi_into(phi, x, omega, out, scratch),
        FwmPhi::Tanh => {
            for (o, &x) in out.iter_mut().zip(x) {
                *o = x.tanh();
            }
        }
    }
}

/// dL/dx into `dx` from g = dL/df, f = the features of x.
#[inline(always)]
fn fwm_features_back(
    map: FwmPhi,
    x: &[f32],
    f: &[f32],
    g: &[f32],
    omega: &Array2<f32>,
    dx: &mut [f32],
    scratch: &mut [f32],
) {
    match map {
        FwmPhi::Map(phi) => phi_back(phi, x, f, g, omega, dx, scratch),
        FwmPhi::Tanh => {
            for ((dx, &f), &g) in dx.iter_mut().zip(f).zip(g) {
                *dx = g * (1.0 - f * f);
            }
        }
    }
}

/// One fwm write into the row-major (n, p) memory `w`, as
/// [`crate::paper::retrieval::model::fwm_write`]: W += β (v − W f) fᵀ,
/// then W /= max(1, ‖W‖_F) unless `first`. Returns the scale.
#[inline(always)]
fn fwm_write(
    w: &mut [f32],
    f: &[f32],
    v: usize,
    beta: f32,
    first: bool,
) -> f32 {
    let p = f.len();
    let mut sq = 0.0;
    for (u, row) in w.chunks_exact_mut(p).enumerate() {
        let target = if u == v { 1.0 } else { 0.0 };
        let c = beta * (target - dot(row, f));
        axpy(c, f, row);
        sq += dot(row, row);
    }
    let s = if first { 1.0 } else { sq.sqrt().max(1.0) };
    if s > 1.0 {
        let inv = 1.0 / s;
        w.iter_mut().for_each(|x| *x *= inv);
    }
    s
}

/// A layer norm without gain or bias, x into y; returns √(var + ε).
#[inline(always)]
fn layer_norm(x: &[f32], y: &mut [f32]) -> f32 {
    let m = x.len() as f32;
    let mean = x.iter().sum::<f32>() / m;
    let var = x.iter().map(|x| (x - mean) * (x - mean)).sum::<f32>() / m;
    let root = (var + LN_EPS as f32).sqrt();
    for (y, &x) in y.iter_mut().zip(x) {
        *y = (x - mean) / root;
    }
    root
}

/// The fwm baseline read at the query, forward and backward, on an
/// explicit memory: the forward pass keeps every W_t in `wk.hist`, the
/// backward pass walks them from the last to the first.
#[inline(always)]
fn fwm_episode(
    wk: &mut Work,
    map: FwmPhi,
    ep: &Episode,
    q: &[f32],
    omega: &Array2<f32>,
    scale: f32,
) -> f32 {
    let len = ep.keys.len();
    let (n, p) = (wk.y.len(), wk.fq.len());
    let np = n * p;
    wk.hist[..np].fill(0.0);
    for t in 0..len {
        let key = wk.keys.row(t);
        let f = wk.fk.row_mut(t).into_slice().expect("row-major");
        fwm_features_into(
            map,
            key.as_slice().expect("rows"),
            omega,
            f,
            &mut wk.scratch,
        );
        let (prev, next) = wk.hist.split_at_mut((t + 1) * np);
        let next = &mut next[..np];
        next.copy_from_slice(&prev[t * np..]);
        wk.scales[t] = fwm_write(next, f, ep.values[t], wk.beta[t], t == 0);
    }
    fwm_features_into(map, q, omega, &mut wk.fq, &mut wk.scratch);
    let last = &wk.hist[len * np..(len + 1) * np];
    for (x, row) in wk.xr.iter_mut().zip(last.chunks_exact(p)) {
        *x = dot(row, &wk.fq);
    }
    let root = layer_norm(&wk.xr, &mut wk.y);
    let loss = loss_and_grad(&wk.y, ep.target, scale, &mut wk.dy);
    // Layer norm: dx = (dŷ − mean dŷ − ŷ mean(dŷ ⊙ ŷ)) / root, in wk.xr.
    let m = n as f32;
    let (mean, along) = (wk.dy.iter().sum::<f32>() / m, dot(&wk.dy, &wk.y) / m);
    for ((x, &g), &y) in wk.xr.iter_mut().zip(&wk.dy).zip(&wk.y) {
        *x = (g - mean - y * along) / root;
    }
    // dφ(q) = W_Lᵀ dx and G = dx φ(q)ᵀ.
    wk.dfq.fill(0.0);
    for (u, row) in last.chunks_exact(p).enumerate() {
        axpy(wk.xr[u], row, &mut wk.dfq);
        let g = &mut wk.big_g[u * p..(u + 1) * p];
        for (g, &f) in g.iter_mut().zip(&wk.fq) {
            *g = wk.xr[u] * f;
        }
    }
    for t in (0..len).rev() {
        let s = wk.scales[t];
        if s > 1.0 {
            // dA = (G − (G·W_t) W_t) / s_t
            let w = &wk.hist[(t + 1) * np..(t + 2) * np];
            let along = dot(&wk.big_g, w);
            let inv = 1.0 / s;
            for (g, &w) in wk.big_g.iter_mut().zip(w) {
                *g = (*g - along * w) * inv;
            }
        }
        let w_prev = &wk.hist[t * np..(t + 1) * np];
        let f = wk.fk.row(t);
        let f = f.as_slice().expect("rows");
        let v = ep.values[t];
        let beta = wk.beta[t];
        let mut dbeta = 0.0;
        for (u, (g, w)) in wk
            .big_g
            .chunks_exact(p)
            .zip(w_prev.chunks_exact(p))
            .enumerate()
        {
            wk.gk[u] = dot(g, f);
            wk.res[u] = if u == v { 1.0 } else { 0.0 } - dot(w, f);
            dbeta += wk.res[u] * wk.gk[u];
        }
        wk.dbeta[t] = dbeta;
        // dL/df = β (Gᵀ r − W_{t−1}ᵀ G f); then G ← G − β (G f) fᵀ.
        let mut df = wk.dfk.row_mut(t);
        let df = df.as_slice_mut().expect("row-major");
        df.fill(0.0);
        for (u, (g, w)) in wk
            .big_g
            .chunks_exact_mut(p)
            .zip(w_prev.chunks_exact(p))
            .enumerate()
        {
            axpy(beta * wk.res[u], g, df);
            axpy(-beta * wk.gk[u], w, df);
            axpy(-beta * wk.gk[u], f, g);
        }
        let key = wk.keys.row(t);
        let mut dk = wk.dk.row_mut(t);
        fwm_features_back(
            map,
            key.as_slice().expect("rows"),
            f,
            df,
            omega,
            dk.as_slice_mut().expect("rows"),
            &mut wk.scratch,
        );
    }
    let mut dq = std::mem::take(&mut wk.dq);
    fwm_features_back(map, q, &wk.fq, &wk.dfq, omega, &mut dq, &mut wk.scratch);
    wk.dq = dq;
    loss
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paper::retrieval::model::episode_loss;
    use crate::paper::retrieval::task::episodes;
    use crate::random::seeded;

    const LAYERS: [Layer; 11] = [
        Layer::Softmax,
        Layer::Linear(Phi::EluPlusOne, Rule::Sum),
        Layer::Linear(Phi::Dpfp(1), Rule::Sum),
        Layer::Linear(Phi::Dpfp(3), Rule::Sum),
        Layer::Linear(Phi::Favor(6), Rule::Sum),
        Layer::Linear(Phi::EluPlusOne, Rule::Delta),
        Layer::Linear(Phi::Dpfp(2), Rule::Delta),
        Layer::Linear(Phi::Favor(6), Rule::Delta),
        Layer::Linear(Phi::Dpfp(1), Rule::Delta),
        Layer::Fwm(FwmPhi::Map(Phi::Dpfp(1))),
        Layer::Fwm(FwmPhi::Tanh),
    ];

    fn budget() -> Budget {
        Budget {
            batch: 8,
            ..Budget::paper()
        }
    }

    fn norm(a: impl Iterator<Item = f64>) -> f64 {
        a.map(|x| x * x).sum::<f64>().sqrt()
    }

    /// ‖a − b‖ for an f32 and an f64 tensor.
    fn distance(a: &[f32], b: &[f64]) -> f64 {
        norm(a.iter().zip(b).map(|(&x, &y)| x as f64 - y))
    }

    #[test]
    fn fast_gradient_equals_the_f64_model_for_every_layer() {
        // f32 rounds each entry to about 6e-8 relative; sums over a few
        // hundred terms and a triangular solve grow that to well under
        // 1e-4 for these shapes, where a wrong term is off by order 1.
        for layer in LAYERS {
            compare_gradients(layer, 1.0);
        }
    }

    #[test]
    fn fast_fwm_gradient_equals_the_f64_model_with_scaled_writes() {
        // Keys scaled up (gain 3), so that writes push ‖W‖_F past 1 and
        // the backward pass goes through the scaling too.
        for map in [FwmPhi::Map(Phi::Dpfp(1)), FwmPhi::Tanh] {
            compare_gradients(Layer::Fwm(map), 3.0);
        }
    }

    /// The fast trainer's loss and gradient against the f64 model's, with
    /// W_k and b_k scaled by `gain`, over settings, seeds and shapes.
    fn compare_gradients(layer: Layer, gain: f64) {
        {
            for setting in [Setting::Distinct, Setting::Repeated] {
                for (seed, n, d) in [(0, 5, 4), (1, 9, 6), (2, 16, 8)] {
                    let shape = Shape::paper(n, d);
                    let mut rng = seeded(seed);
                    let mut params = Params::init(&mut rng, shape, layer);
                    params.w_beta.mapv_inplace(|w| 4.0 * w);
                    params.w_k *= gain;
                    params.b_k *= gain;
                    let omega = draw_omega(&mut rng, layer, d);
                    let eps = episodes(seed + 10, 8, n, setting);
                    let mut fast = Fast::new(layer, setting, &params, budget());
                    fast.omega = omega.mapv(|x| x as f32);
                    let loss = fast.gradient(&eps).unwrap();
                    let mut grad = params.zeros_like();
                    let mut want = 0.0;
                    for e in &eps {
                        want += episode_loss(
                            &params,
                            layer,
                            e,
                            &omega,
                            Some(&mut grad),
                        );
                    }
                    want /= eps.len() as f64;
                    grad.slices_mut()
                        .into_iter()
                        .for_each(|g| g.iter_mut().for_each(|x| *x /= 8.0));
                    let what =
                        format!("{} {setting:?} seed {seed}", layer.name());
                    assert!((loss - want).abs() <= 1e-5 * want, "{what}: loss");
                    // A tensor whose true gradient is zero (b_k under
                    // softmax, which ignores a shift shared by every key)
                    // is compared with the size of the whole gradient.
                    let whole =
                        norm(grad.slices().into_iter().flatten().copied());
                    for (k, (a, b)) in fast
                        .grad
                        .slices()
                        .into_iter()
                        .zip(grad.slices())
                        .enumerate()
                    {
                        let off = distance(a, b);
                        let tol = 1e-4 * norm(b.iter().copied()) + 1e-6 * whole;
                        assert!(
                            off <= tol,
                            "{what}: tensor {k} off by {off:e}"
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn fast_evaluation_equals_the_f64_model_on_the_same_queries() {
        for layer in LAYERS {
            if let Layer::Linear(Phi::Favor(_), _) = layer {
                continue; // Ω is redrawn per sequence; compared above
            }
            for setting in [Setting::Distinct, Setting::Repeated] {
                let shape = Shape::paper(12, 6);
                let params = Params::init(&mut seeded(3), shape, layer);
                let b = Budget {
                    eval_sequences: 3,
                    max_queries: 5,
                    ..budget()
                };
                let mut fast = Fast::new(layer, setting, &params, b);
                let got = fast.evaluate_with(&mut seeded(9));
                let mut rng = seeded(9);
                let omega = Array2::zeros((6, 0));
                let (mut total, mut count) = (0.0, 0);
                for _ in 0..3 {
                    let (mut seq, queries) =
                        eval_sequence(&mut rng, 12, setting, 5);
                    for (q, target) in queries {
                        (seq.query, seq.target) = (q, target);
                        total +=
                            episode_loss(&params, layer, &seq, &omega, None);
                        count += 1;
                    }
                }
                let want = total / count as f64;
                assert!(
                    (got - want).abs() <= 1e-5 * want,
                    "{} {setting:?}: {got} vs {want}",
                    layer.name()
                );
            }
        }
    }

    #[test]
    fn fast_exp_is_within_3e_7_of_the_true_exponential() {
        let mut worst = 0.0f64;
        for i in 0..=200_000 {
            let x = -87.0 + 175.0 * i as f64 / 200_000.0;
            let want = x.exp();
            let got = exp(x as f32) as f64;
            // x itself is rounded to f32 first; compare with e^(f32 x).
            let want = want * ((x as f32) as f64 - x).exp();
            worst = worst.max((got - want).abs() / want);
        }
        assert!(worst < 3e-7, "worst relative error {worst:e}");
    }

    #[test]
    fn the_trainers_tally_of_a_step_is_step_flops_at_every_layer() {
        for layer in LAYERS {
            for setting in [Setting::Distinct, Setting::Repeated] {
                for n in [5, 12] {
                    let shape = Shape::paper(n, 4);
                    let params = Params::init(&mut seeded(1), shape, layer);
                    let mut fast = Fast::new(layer, setting, &params, budget());
                    fast.try_step(&mut seeded(2)).unwrap();
                    let want = step_flops(layer, setting, shape, 8);
                    assert_eq!(
                        fast.flops,
                        want,
                        "{} {setting:?}",
                        layer.name()
                    );
                }
            }
        }
    }

    #[test]
    fn a_key_whose_features_sum_to_zero_is_an_error_not_a_nan() {
        // DPFP of a key with a single non-zero entry is all zeros.
        let layer = Layer::Linear(Phi::Dpfp(1), Rule::Delta);
        let shape = Shape::paper(4, 4);
        let mut params = Params::init(&mut seeded(0), shape, layer);
        params.w_k.fill(0.0);
        params.b_k.fill(0.0);
        params.b_k[0] = 1.0;
        let mut fast = Fast::new(layer, Setting::Distinct, &params, budget());
        let err = fast.gradient(&episodes(0, 2, 4, Setting::Distinct));
        assert!(matches!(
            err,
            Err(TrainError::NonPositiveNormaliser { what: "key", .. })
        ));
    }
}
