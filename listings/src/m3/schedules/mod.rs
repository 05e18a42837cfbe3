//! Chapter "Two faces of one computation": one causal function and three
//! schedules for it. The parallel form builds the masked N × N scores, the
//! recurrent form carries S: (m, p) and z: (p) one token at a time, and the
//! chunkwise form does both: a masked product inside each chunk of C
//! tokens, the carried state between chunks. Then why they agree (the
//! state's Jacobian is the identity), what chunking needs in general (an
//! update affine in the state), and the backward pass with a fixed state.
//! What each form holds and how long each one takes on the machine that
//! builds the book are in [`study`]; the tests are in `tests/`.
//!
//! Shapes: phi_q, phi_k: (N, p), v: (N, m); outputs O: (N, m).

pub mod study;

use crate::causal::causal_scores;
use crate::input::{
    InputError, check_chunk, check_features, finite, nonempty_finite,
    normaliser, normalisers, same_cols, same_rows,
};
use crate::m3::delete_softmax::{Memory, sequence_memory};
use crate::m3::fast_weight_memory::fast_weight_write;
use ndarray::{Array1, Array2, ArrayRef2, Axis, s};

// ANCHOR: chunk_step
/// One chunk of c tokens, given the memory S: (m, p) and z: (p) of every
/// earlier chunk:
/// O = (Φ_Q Sᵀ + tril(Φ_Q Φ_Kᵀ) V) / (Φ_Q z + tril(Φ_Q Φ_Kᵀ) 1),
/// then S ← S + Vᵀ Φ_K and z ← z + Φ_Kᵀ 1.
/// phi_q, phi_k: (c, p), v: (c, m); returns O: (c, m).
pub fn chunk_step(
    memory: &mut Memory,
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<Array2<f64>, InputError> {
    let scores = causal_scores(phi_q, phi_k); // inside the chunk: (c, c)
    let numerator = phi_q.dot(&memory.s.t()) + scores.dot(v); // (c, m)
    let denominator = phi_q.dot(&memory.z) + scores.sum_axis(Axis(1));
    normalisers("z_tᵀφ(q_t)", &denominator)?; // every one > 0
    let written = sequence_memory(phi_k, v); // this chunk's writes
    memory.s += &written.s;
    memory.z += &written.z;
    finite("O", numerator / denominator.insert_axis(Axis(1)))
}
// ANCHOR_END: chunk_step

// ANCHOR: linear_attention_chunkwise
/// Causal linear attention in chunks of `chunk` tokens (the last chunk may
/// be shorter), carrying S and z from chunk to chunk.
/// phi_q, phi_k: (N, p), v: (N, m), chunk ≥ 1; returns O: (N, m).
pub fn linear_attention_chunkwise(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    chunk: usize,
) -> Result<Array2<f64>, InputError> {
    check_features(phi_q, phi_k, v, true)?;
    check_chunk(chunk)?;
    let (n, p, m) = (phi_q.nrows(), phi_q.ncols(), v.ncols());
    let mut memory = Memory {
        s: Array2::zeros((m, p)), // S_0 = 0
        z: Array1::zeros(p),      // z_0 = 0
    };
    let mut o = Array2::zeros((n, m));
    for start in (0..n).step_by(chunk) {
        let rows = s![start..(start + chunk).min(n), ..];
        let (q, k) = (phi_q.slice(rows), phi_k.slice(rows));
        let out = chunk_step(&mut memory, &q, &k, &v.slice(rows))
            .map_err(|e| e.below(start))?;
        o.slice_mut(rows).assign(&out);
    }
    Ok(o)
}
// ANCHOR_END: linear_attention_chunkwise

// ANCHOR: state_jacobian
/// The Jacobian ∂S_t/∂S_{t−1} of a state update S_t = step(S_{t−1}), by
/// central differences: column (a, b) is
/// (step(S + h E_ab) − step(S − h E_ab)) / 2h, for E_ab the matrix with a
/// single 1 at (a, b). s: (m, p); returns J: (mp, mp), indices row-major.
pub fn state_jacobian(
    step: impl Fn(&Array2<f64>) -> Array2<f64>,
    s: &ArrayRef2<f64>,
    h: f64,
) -> Array2<f64> {
    let (m, p) = s.dim();
    let mut jacobian = Array2::zeros((m * p, m * p));
    for (col, mut column) in jacobian.columns_mut().into_iter().enumerate() {
        let (mut up, mut down) = (s.to_owned(), s.to_owned());
        up[[col / p, col % p]] += h;
        down[[col / p, col % p]] -= h;
        let change = (step(&up) - step(&down)) / (2.0 * h);
        column.assign(&Array1::from_iter(change.iter().copied()));
    }
    jacobian
}
// ANCHOR_END: state_jacobian

// ANCHOR: linear_attention_parallel_backward
/// The gradients of a loss through causal linear attention, given the
/// loss's gradient G = ∂L/∂O: (N, m). Masked scores
/// P = tril(Φ_Q Φ_Kᵀ), denominators Z = P 1, O = diag(1/Z) P V.
pub struct Gradients {
    pub phi_q: Array2<f64>,
    pub phi_k: Array2<f64>,
    pub v: Array2<f64>,
}

/// Backward through the parallel form, holding the N × N scores:
/// Ḡ = diag(1/Z) G, c = −rowsum(Ḡ ⊙ O), ∂P = tril(Ḡ Vᵀ + c 1ᵀ),
/// then ∂Φ_Q = ∂P Φ_K, ∂Φ_K = ∂Pᵀ Φ_Q, ∂V = Pᵀ Ḡ.
pub fn linear_attention_parallel_backward(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    grad_o: &ArrayRef2<f64>,
) -> Result<Gradients, InputError> {
    check_features(phi_q, phi_k, v, true)?; // as the forward forms
    check_grad_o(grad_o, v)?;
    let p = causal_scores(phi_q, phi_k); // (N, N)
    let z = p.sum_axis(Axis(1));
    normalisers("z_tᵀφ(q_t)", &z)?; // every one > 0
    let z = z.insert_axis(Axis(1)); // (N, 1)
    let o = p.dot(v) / &z;
    let g_bar = &grad_o.view() / &z; // ∂L/∂(numerator)
    let c = -(&g_bar * &o).sum_axis(Axis(1)); // ∂L/∂Z, per row
    let mut grad_p = g_bar.dot(&v.t()) + c.insert_axis(Axis(1));
    grad_p.indexed_iter_mut().for_each(|((t, j), x)| {
        if j > t {
            *x = 0.0; // the future's scores were never used
        }
    });
    Ok(Gradients {
        phi_q: finite("∂φ(q)", grad_p.dot(phi_k))?,
        phi_k: finite("∂φ(k)", grad_p.t().dot(phi_q))?,
        v: finite("∂v", p.t().dot(&g_bar))?,
    })
}
// ANCHOR_END: linear_attention_parallel_backward

// ANCHOR: linear_attention_backward
/// Backward through the recurrence with a fixed state (Katharopoulos et
/// al. 2020, §3.3.1). Forward over t for the queries:
/// ∂φ(q_t) = S_tᵀ ḡ_t + c_t z_t. Backward over t for keys and values,
/// carrying R = Σ_{τ≥t} ḡ_τ φ(q_τ)ᵀ and r = Σ_{τ≥t} c_τ φ(q_τ):
/// ∂φ(k_t) = Rᵀ v_t + r, ∂v_t = R φ(k_t), undoing each write of S and z
/// on the way back. Here ḡ_t = g_t / Z_t, c_t = −ḡ_t · o_t, with the
/// denominator Z_t = z_tᵀ φ(q_t).
pub fn linear_attention_backward(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    grad_o: &ArrayRef2<f64>,
) -> Result<Gradients, InputError> {
    check_features(phi_q, phi_k, v, true)?; // as the forward forms
    check_grad_o(grad_o, v)?;
    let (n, p, m) = (phi_q.nrows(), phi_q.ncols(), v.ncols());
    let mut grads = Gradients {
        phi_q: Array2::zeros((n, p)),
        phi_k: Array2::zeros((n, p)),
        v: Array2::zeros((n, m)),
    };
    // ḡ_t and c_t from the state S_t, z_t that token t read.
    let pull = |s: &Array2<f64>, z: &Array1<f64>, t: usize| {
        let q = phi_q.row(t);
        let den = normaliser("z_tᵀφ(q_t)", t, z.dot(&q))?; // Z_t > 0
        let g_bar = &grad_o.row(t) / den;
        let c = -g_bar.dot(&s.dot(&q)) / den; // −ḡ_t · o_t
        Ok::<_, InputError>((g_bar, c))
    };
    let (mut s, mut z) = (Array2::zeros((m, p)), Array1::zeros(p));
    for t in 0..n {
        fast_weight_write(&mut s, &v.row(t), &phi_k.row(t))?; // S_t
        z += &phi_k.row(t); // z_t
        let (g_bar, c) = pull(&s, &z, t)?;
        let grad_q = s.t().dot(&g_bar) + &z * c;
        grads.phi_q.row_mut(t).assign(&grad_q);
    }
    let (mut r_mat, mut r) = (Array2::zeros((m, p)), Array1::zeros(p));
    for t in (0..n).rev() {
        let (g_bar, c) = pull(&s, &z, t)?; // S, z are S_t, z_t here
        fast_weight_write(&mut r_mat, &g_bar, &phi_q.row(t))?; // R += ḡ φ(q)ᵀ
        r.scaled_add(c, &phi_q.row(t)); // r += c φ(q)
        let grad_k = r_mat.t().dot(&v.row(t)) + &r;
        grads.phi_k.row_mut(t).assign(&grad_k);
        grads.v.row_mut(t).assign(&r_mat.dot(&phi_k.row(t)));
        fast_weight_write(&mut s, &(-&v.row(t)), &phi_k.row(t))?; // undo
        z -= &phi_k.row(t);
    }
    Ok(Gradients {
        phi_q: finite("∂φ(q)", grads.phi_q)?,
        phi_k: finite("∂φ(k)", grads.phi_k)?,
        v: finite("∂v", grads.v)?,
    })
}
// ANCHOR_END: linear_attention_backward

/// One gradient per output: grad_o has the shape of v, and is finite.
pub(crate) fn check_grad_o(
    grad_o: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<(), InputError> {
    nonempty_finite("grad_o", grad_o)?;
    same_rows(("grad_o", grad_o), ("v", v), "one gradient row per output")?;
    same_cols(("grad_o", grad_o), ("v", v), "one gradient row per output")
}

// ANCHOR: affine_step
/// One step of an affine recurrence, S_t = S_{t−1} H_t + B_t, whose
/// transition H_t and input B_t do not depend on the state.
/// h: (p, p), b: (m, p).
#[derive(Clone, Debug, PartialEq)]
pub struct AffineStep {
    pub h: Array2<f64>,
    pub b: Array2<f64>,
}

impl AffineStep {
    /// S ↦ S H + B. s: (m, p).
    pub fn apply(&self, s: &ArrayRef2<f64>) -> Result<Array2<f64>, InputError> {
        self.fits(s.dim())?; // H: (p, p), B: (m, p), both finite
        nonempty_finite("S", s)?;
        finite("S H + B", s.dot(&self.h) + &self.b)
    }

    /// This step, then `next`: S ↦ (S H₁ + B₁) H₂ + B₂, which is one
    /// step again, with transition H₁ H₂ and input B₁ H₂ + B₂.
    pub fn then(&self, next: &AffineStep) -> Result<AffineStep, InputError> {
        self.fits(self.b.dim())?;
        next.fits(self.b.dim())?; // both steps act on states (m, p)
        Ok(AffineStep {
            h: finite("H₁ H₂", self.h.dot(&next.h))?,
            b: finite("B₁ H₂ + B₂", self.b.dot(&next.h) + &next.b)?,
        })
    }
}
// ANCHOR_END: affine_step

impl AffineStep {
    /// Whether this step acts on states of shape (m, p): H: (p, p) and
    /// B: (m, p), both finite; an error naming the operand if not.
    pub fn fits(&self, (m, p): (usize, usize)) -> Result<(), InputError> {
        nonempty_finite("H", &self.h)?;
        nonempty_finite("B", &self.b)?;
        let rule = "a state S: (m, p) takes a step with H: (p, p), B: (m, p)";
        for (name, a, want) in [("H", &self.h, (p, p)), ("B", &self.b, (m, p))]
        {
            if a.dim() != want {
                return Err(InputError::ShapeMismatch {
                    left: (name, [a.nrows(), a.ncols()]),
                    right: ("S", [m, p]),
                    rule,
                });
            }
        }
        Ok(())
    }
}

// ANCHOR: affine_chunkwise
/// Run an affine recurrence from S_0 in chunks of `chunk` steps: fold each
/// chunk's steps into one, then apply it. Returns the state after each
/// chunk. steps: H_t (p, p), B_t (m, p); s0: (m, p); chunk ≥ 1.
pub fn affine_chunkwise(
    steps: &[AffineStep],
    s0: &ArrayRef2<f64>,
    chunk: usize,
) -> Result<Vec<Array2<f64>>, InputError> {
    check_chunk(chunk)?;
    check_affine(steps, s0)?;
    let mut state = s0.to_owned();
    let mut states = Vec::new();
    for group in steps.chunks(chunk) {
        let folded = group[1..]
            .iter()
            .try_fold(group[0].clone(), |acc, step| acc.then(step))?;
        state = folded.apply(&state)?; // one step per chunk
        states.push(finite("S", state.clone())?);
    }
    Ok(states)
}
// ANCHOR_END: affine_chunkwise

/// The checks of `affine_chunkwise`: a finite S_0: (m, p), and every step
/// finite with H_t: (p, p) and B_t: (m, p).
fn check_affine(
    steps: &[AffineStep],
    s0: &ArrayRef2<f64>,
) -> Result<(), InputError> {
    nonempty_finite("s0", s0)?;
    let (m, p) = s0.dim();
    let want = |name, shape: [usize; 2], a: &Array2<f64>| {
        nonempty_finite(name, a)?;
        if a.dim() == (shape[0], shape[1]) {
            return Ok(());
        }
        Err(InputError::ShapeMismatch {
            left: (name, [a.nrows(), a.ncols()]),
            right: ("s0", [m, p]),
            rule: "S_0: (m, p) takes steps with H_t: (p, p) and B_t: (m, p)",
        })
    };
    steps.iter().try_for_each(|step| {
        want("H_t", [p, p], &step.h)?;
        want("B_t", [m, p], &step.b)
    })
}

// ANCHOR: loglog_slope
/// The slope κ of the least-squares line ln time = κ ln N + c through the
/// points (N, time): a time that grows as N^κ has slope κ on log-log axes.
pub fn loglog_slope(points: &[(f64, f64)]) -> f64 {
    let logs: Vec<(f64, f64)> =
        points.iter().map(|&(n, t)| (n.ln(), t.ln())).collect();
    let count = logs.len() as f64;
    let mean_x = logs.iter().map(|p| p.0).sum::<f64>() / count;
    let mean_y = logs.iter().map(|p| p.1).sum::<f64>() / count;
    let covariance: f64 =
        logs.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let variance: f64 = logs.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    covariance / variance
}
// ANCHOR_END: loglog_slope

#[cfg(test)]
mod tests;
