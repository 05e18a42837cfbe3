//! The retrieval trainer's reads at the query, each forward and backward
//! in one pass over an episode's buffers: softmax, the sum rule and the
//! delta rule in attention form, the fwm baseline on an explicit memory.

use super::{TrainError, Work};
use crate::paper::retrieval::model::{EPS, FwmPhi, LN_EPS, Phi};
use crate::paper::retrieval::task::Episode;
use crate::trainers::kernels::{axpy, dot, exp, gemm, phi_back, phi_into};
use ndarray::{Array2, s};

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
pub(super) fn softmax_read(
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
pub(super) fn softmax_episode(
    wk: &mut Work,
    ep: &Episode,
    q: &[f32],
    scale: f32,
) -> f32 {
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
/// c_t = φ(k_t)ᵀφ(q) and Z = Σ c_t + ε, ŷ[v] = Σ_{t: v_t = v} c_t / Z.
#[inline(always)]
pub(super) fn sum_episode(
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
    // dL/dc_t = (dŷ[v_t] − dŷ·ŷ) / Z
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
/// S_N = Σ_t u_t k̄_tᵀ, the u_t solve (I + Λ) U = diag(β) V with Λ strictly
/// lower triangular, Λ_ij = β_i k̄_iᵀk̄_j (i > j). So ŷ = S_N q̄ =
/// Σ_t β_t η_t v_t with (I + Λ)ᵀη = c, c_t = k̄_tᵀq̄: one Gram product and
/// one triangular solve. Backward: μ = (I + Λ)⁻¹ (β ⊙ dŷ[v]), and dk̄_i
/// needs only running sums.
#[inline(always)]
pub(super) fn delta_episode(
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
    // Back substitution, (I + Λ)ᵀη = c: η_i = c_i − Σ_{j>i} G_ij β_j η_j,
    // G the Gram matrix. wk.s holds η, wk.ds holds β ⊙ η.
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
    // Forward substitution, (I + Λ)μ = β ⊙ dŷ[v]: μ_i = g_i − β_i h_i with
    // h_i = Σ_{j<i} G_ij μ_j; and dβ_i = η_i dŷ[v_i] − η_i h_i. wk.lam
    // holds μ.
    for i in 0..len {
        let dyv = wk.dy[ep.values[i]];
        let g = wk.gram.row(i);
        let h = dot(&g.as_slice().expect("row-major")[..i], &wk.lam[..i]);
        wk.lam[i] = wk.beta[i] * dyv - wk.beta[i] * h;
        wk.dbeta[i] = wk.s[i] * (dyv - h);
    }
    // dk̄_i = a_i Σ_{j<i} μ_j k̄_j + μ_i (Σ_{j>i} a_j k̄_j + q̄), a = −β ⊙ η.
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
    // The prefix sum over all t is dq̄ = Σ μ_t k̄_t.
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

/// The fwm baseline's key features into `out`: φ(x) of a book map, or
/// tanh(x).
#[inline(always)]
pub(super) fn fwm_features_into(
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

/// One fwm write into the row-major (n, p) memory `s`, as
/// [`crate::paper::retrieval::model::fwm_write`]: S += β (v − S f) fᵀ,
/// then S /= ρ = max(1, ‖S‖_F) unless `first`. Returns ρ.
#[inline(always)]
pub(super) fn fwm_write(
    s: &mut [f32],
    f: &[f32],
    v: usize,
    beta: f32,
    first: bool,
) -> f32 {
    let p = f.len();
    let mut sq = 0.0;
    for (u, row) in s.chunks_exact_mut(p).enumerate() {
        let target = if u == v { 1.0 } else { 0.0 };
        let c = beta * (target - dot(row, f));
        axpy(c, f, row);
        sq += dot(row, row);
    }
    let rho = if first { 1.0 } else { sq.sqrt().max(1.0) };
    if rho > 1.0 {
        let inv = 1.0 / rho;
        s.iter_mut().for_each(|x| *x *= inv);
    }
    rho
}

/// A layer norm without gain or bias, x into y; returns √(var + ε).
#[inline(always)]
pub(super) fn layer_norm(x: &[f32], y: &mut [f32]) -> f32 {
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
/// explicit memory: the forward pass keeps every S_t in `wk.hist`, the
/// backward pass walks them from the last to the first.
#[inline(always)]
pub(super) fn fwm_episode(
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
    // dφ(q) = S_Nᵀ dx and D = dx φ(q)ᵀ (in wk.big_g).
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
            // dL/dS′_t = (D − ⟨D, S_t⟩ S_t) / ρ_t
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
        // dL/df = β (Dᵀ r − S_{t−1}ᵀ D f); then D ← D − β (D f) fᵀ.
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
