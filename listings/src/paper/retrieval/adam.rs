//! Adam (Kingma & Ba 2015), the optimiser the paper trains with.

use crate::paper::retrieval::model::Params;
use num_traits::Float;

/// A model's weights as Adam sees them: one flat slice per tensor, in a
/// fixed order, and a zeroed copy to hold the moment estimates.
pub trait Weights<F> {
    fn slices(&self) -> Vec<&[F]>;
    fn slices_mut(&mut self) -> Vec<&mut [F]>;
    fn zeros_like(&self) -> Self;
}

impl<F: Float> Weights<F> for Params<F> {
    fn slices(&self) -> Vec<&[F]> {
        Params::slices(self).to_vec()
    }
    fn slices_mut(&mut self) -> Vec<&mut [F]> {
        Params::slices_mut(self).into()
    }
    fn zeros_like(&self) -> Self {
        Params::zeros_like(self)
    }
}

// ANCHOR: Adam
/// Adam with bias-corrected first and second moment estimates, for the
/// f64 reference model and the f32 fast trainer alike.
pub struct Adam<F = f64, P = Params<F>> {
    pub lr: F,
    pub beta1: F,
    pub beta2: F,
    pub eps: F,
    step: i32,
    m: P,
    v: P,
}

impl<F: Float, P: Weights<F>> Adam<F, P> {
    /// The usual defaults: β₁ = 0.9, β₂ = 0.999, ε = 1e-8.
    pub fn new(params: &P, lr: F) -> Adam<F, P> {
        let f = |x: f64| F::from(x).expect("a representable constant");
        Adam {
            lr,
            beta1: f(0.9),
            beta2: f(0.999),
            eps: f(1e-8),
            step: 0,
            m: params.zeros_like(),
            v: params.zeros_like(),
        }
    }

    /// θ ← θ − lr · m̂ / (√v̂ + ε), with m, v running means of g and g².
    pub fn update(&mut self, params: &mut P, grad: &P) {
        self.step += 1;
        let one = F::one();
        let c1 = one - self.beta1.powi(self.step);
        let c2 = one - self.beta2.powi(self.step);
        let (b1, b2, lr, eps) = (self.beta1, self.beta2, self.lr, self.eps);
        let tensors = params
            .slices_mut()
            .into_iter()
            .zip(grad.slices())
            .zip(self.m.slices_mut())
            .zip(self.v.slices_mut());
        for (((theta, g), m), v) in tensors {
            for i in 0..theta.len() {
                m[i] = b1 * m[i] + (one - b1) * g[i];
                v[i] = b2 * v[i] + (one - b2) * g[i] * g[i];
                let step = (m[i] / c1) / ((v[i] / c2).sqrt() + eps);
                theta[i] = theta[i] - lr * step;
            }
        }
    }
}
// ANCHOR_END: Adam
