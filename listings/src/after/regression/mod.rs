//! Chapter "The rules as regression": every update rule of the family as
//! one step on a loss of the memory for the current token (test-time
//! regression): the sum rule on the linear loss −vᵀ S k, the delta rule on
//! ½‖S k − v‖², a decay as a forgetting term ½ (1 − a) ‖S‖², the gated
//! delta rule as both; Longhorn's implicit step, stable for every write
//! strength; and the exact least-squares memory (MesaNet's solve) that the
//! one-step rules approach.
//!
//! Shapes: keys k: (p), values v: (m), the memory S: (m, p), values by
//! features, as everywhere in the book; a stream of keys K: (N, p) and
//! values V: (N, m).

use crate::input::{
    InputError, check_write, finite, finite_number, nonempty_finite,
    normaliser, same_cols, same_rows,
};
use crate::m3::fast_weight_memory::fast_weight_write;
use crate::m3::feature_map::recall::best_memory;
use crate::paper::delta_rule::{delta_rule_step, regression_gradient};
use ndarray::{Array2, ArrayRef1, ArrayRef2};

pub mod study;

/// The linear loss of one association, L(S) = −vᵀ S k.
pub fn linear_loss(
    memory: &ArrayRef2<f64>,
    k: &ArrayRef1<f64>,
    v: &ArrayRef1<f64>,
) -> Result<f64, InputError> {
    check_write(memory, v, k)?;
    Ok(-v.dot(&memory.dot(k)))
}

// ANCHOR: linear_loss_gradient
/// The gradient of the linear loss L(S) = −vᵀ S k: ∇L = −v kᵀ, the same
/// for every memory. memory: (m, p), k: (p), v: (m).
pub fn linear_loss_gradient(
    memory: &ArrayRef2<f64>,
    k: &ArrayRef1<f64>,
    v: &ArrayRef1<f64>,
) -> Result<Array2<f64>, InputError> {
    let mut gradient = Array2::zeros(memory.raw_dim());
    fast_weight_write(&mut gradient, &v.mapv(|x| -x), k)?; // −v kᵀ
    Ok(gradient)
}
// ANCHOR_END: linear_loss_gradient

/// The forgetting term of a decay a, L(S) = ½ (1 − a) ‖S‖²_F.
pub fn forgetting_loss(memory: &ArrayRef2<f64>, a: f64) -> f64 {
    0.5 * (1.0 - a) * memory.iter().map(|x| x * x).sum::<f64>()
}

// ANCHOR: forgetting_gradient
/// The gradient of the forgetting term L(S) = ½ (1 − a) ‖S‖²_F, an L2
/// penalty on the memory: ∇L = (1 − a) S. memory: (m, p), a in (0, 1].
pub fn forgetting_gradient(memory: &ArrayRef2<f64>, a: f64) -> Array2<f64> {
    memory * (1.0 - a)
}
// ANCHOR_END: forgetting_gradient

// ANCHOR: gradient_step
/// One step of gradient descent of size β: S ← S − β ∇L(S).
/// memory, gradient: (m, p).
pub fn gradient_step(
    memory: &mut Array2<f64>,
    gradient: &ArrayRef2<f64>,
    beta: f64,
) -> Result<(), InputError> {
    let rule = "a gradient has the memory's shape";
    same_rows(("memory", memory), ("gradient", gradient), rule)?;
    same_cols(("memory", memory), ("gradient", gradient), rule)?;
    finite_number("beta", beta)?;
    memory.scaled_add(-beta, gradient);
    Ok(())
}
// ANCHOR_END: gradient_step

// ANCHOR: gated_delta_as_two_steps
/// The gated delta rule as two gradient steps: one of size 1 on the
/// forgetting term of α, then one of size β on ½‖S k − v‖².
/// memory: (m, p), k: (p), v: (m).
pub fn gated_delta_as_two_steps(
    memory: &mut Array2<f64>,
    k: &ArrayRef1<f64>,
    v: &ArrayRef1<f64>,
    alpha: f64,
    beta: f64,
) -> Result<(), InputError> {
    let forget = forgetting_gradient(memory, alpha);
    gradient_step(memory, &forget, 1.0)?; // S' = α S
    let regress = regression_gradient(memory, k, v)?;
    gradient_step(memory, &regress, beta) // S' − β (S' k − v) kᵀ
}
// ANCHOR_END: gated_delta_as_two_steps

// ANCHOR: implicit_step
/// Longhorn's implicit step on ½‖S k − v‖²: the S nearest the old memory
/// with the loss weighed by β, argmin ½‖S − S_{t−1}‖² + β ½‖S k − v‖²,
/// which is the delta rule's write with strength β / (1 + β ‖k‖²).
/// memory: (m, p), k: (p), v: (m), beta ≥ 0.
pub fn implicit_step(
    memory: &mut Array2<f64>,
    k: &ArrayRef1<f64>,
    v: &ArrayRef1<f64>,
    beta: f64,
) -> Result<(), InputError> {
    let strength = beta / (1.0 + beta * k.dot(k));
    delta_rule_step(memory, k, v, strength)?;
    Ok(())
}
// ANCHOR_END: implicit_step

// ANCHOR: stream_loss
/// The regression loss of a memory over a whole stream,
/// (1/N) Σ_j ½‖S k_j − v_j‖². memory: (m, p), k: (N, p), v: (N, m).
pub fn stream_loss(
    memory: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<f64, InputError> {
    check_stream(k, v)?;
    let errors = k.dot(&memory.t()) - v; // row j: S k_j − v_j
    let total = errors.iter().map(|e| e * e).sum::<f64>();
    let loss = ndarray::arr0(0.5 * total / k.nrows() as f64);
    Ok(finite("the stream loss", loss)?.into_scalar())
}
// ANCHOR_END: stream_loss

/// Keys and values of a stream: non-empty, finite, one value per key.
pub fn check_stream(
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<(), InputError> {
    nonempty_finite("k", k)?;
    nonempty_finite("v", v)?;
    same_rows(("k", k), ("v", v), "one value per key")
}

/// How a one-step rule writes each token of a stream.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OneStep {
    /// S ← S + v kᵀ: a step of size 1 on the linear loss.
    Sum,
    /// S ← S + β (v − S k) kᵀ: a step of size β on the regression loss.
    Delta(f64),
    /// The forgetting step of α, then the delta rule's step of size β.
    GatedDelta { alpha: f64, beta: f64 },
    /// Longhorn's implicit step with weight β.
    Implicit(f64),
}

impl OneStep {
    /// Every strength finite and at least zero, every gate in (0, 1].
    pub fn check(&self) -> Result<(), InputError> {
        let outside = |name, value: f64, allowed| InputError::Outside {
            name,
            at: [0, 0],
            value,
            allowed,
        };
        let strength = |beta: f64| match beta.is_finite() && beta >= 0.0 {
            true => Ok(()),
            false => Err(outside("beta", beta, "a finite β ≥ 0")),
        };
        match *self {
            OneStep::Sum => Ok(()),
            OneStep::Delta(beta) | OneStep::Implicit(beta) => strength(beta),
            OneStep::GatedDelta { alpha, beta } => {
                if !(alpha > 0.0 && alpha <= 1.0) {
                    return Err(outside("alpha", alpha, "a gate in (0, 1]"));
                }
                strength(beta)
            }
        }
    }
}

// ANCHOR: one_step_memory
/// The memory a one-step rule leaves after a stream, from S_0 = 0,
/// each token one step on its own loss. k: (N, p), v: (N, m).
pub fn one_step_memory(
    rule: OneStep,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<Array2<f64>, InputError> {
    check_stream(k, v)?;
    rule.check()?;
    let mut memory = Array2::zeros((v.ncols(), k.ncols()));
    for (k, v) in k.rows().into_iter().zip(v.rows()) {
        match rule {
            OneStep::Sum => {
                let gradient = linear_loss_gradient(&memory, &k, &v)?;
                gradient_step(&mut memory, &gradient, 1.0)?;
            }
            OneStep::Delta(beta) => {
                let gradient = regression_gradient(&memory, &k, &v)?;
                gradient_step(&mut memory, &gradient, beta)?;
            }
            OneStep::GatedDelta { alpha, beta } => {
                gated_delta_as_two_steps(&mut memory, &k, &v, alpha, beta)?;
            }
            OneStep::Implicit(beta) => {
                implicit_step(&mut memory, &k, &v, beta)?
            }
        }
    }
    finite("S", memory)
}
// ANCHOR_END: one_step_memory

// ANCHOR: least_squares_memory
/// The exact least-squares memory of a stream, the S that minimises
/// Σ_j ½‖S k_j − v_j‖²: S = Vᵀ K (Kᵀ K)⁻¹ once N ≥ p keys span the
/// features (the feature-map chapter's best memory). k: (N, p), v: (N, m).
pub fn least_squares_memory(
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<Array2<f64>, InputError> {
    check_stream(k, v)?;
    let energy = k.iter().map(|x| x * x).sum::<f64>(); // trace of Kᵀ K
    normaliser("the trace of Kᵀ K", 0, energy)?; // no keys, or overflow
    finite("S", best_memory(k, v))
}
// ANCHOR_END: least_squares_memory

#[cfg(test)]
mod tests;
