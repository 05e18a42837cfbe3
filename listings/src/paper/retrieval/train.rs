//! Training one model on the retrieval task with the paper's optimiser and
//! stopping rule.

use crate::paper::retrieval::adam::Adam;
use crate::paper::retrieval::model::{
    Layer, Params, Shape, draw_omega, episode_loss,
};
use crate::paper::retrieval::task::{Setting, episode, eval_sequence};
use crate::random::{BookRng, seeded};
use std::fmt;

/// Everything that decides one training run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Run {
    pub layer: Layer,
    pub setting: Setting,
    pub shape: Shape,
    pub seed: u64,
    pub budget: Budget,
}

/// The optimiser's settings and the stopping rule.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    /// Episodes per step.
    pub batch: usize,
    pub lr: f64,
    /// Evaluate every this many steps ...
    pub eval_every: usize,
    /// ... on this many fresh sequences, each read at up to this many keys.
    pub eval_sequences: usize,
    pub max_queries: usize,
    /// Stop when the evaluation loss reaches this ...
    pub target_loss: f64,
    /// ... or has not improved for more than this many evaluations ...
    pub patience: usize,
    /// ... or after this many steps.
    pub max_steps: usize,
}

impl Budget {
    /// The paper's code: batch 32, Adam with lr 1e-3, evaluated every 100
    /// steps on 20 sequences read at up to 200 keys each; stop at loss
    /// 0.001, after more than 10 evaluations without improvement, or after
    /// 100k steps.
    pub fn paper() -> Budget {
        Budget {
            batch: 32,
            lr: 1e-3,
            eval_every: 100,
            eval_sequences: 20,
            max_queries: 200,
            target_loss: 1e-3,
            patience: 10,
            max_steps: 100_000,
        }
    }
}

/// Why training stopped.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Stop {
    Solved,
    NoImprovement,
    Budget,
    /// The model could not go on (a non-positive normaliser, a NaN).
    Failed(String),
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stop::Solved => "solved",
            Stop::NoImprovement => "plateau",
            Stop::Budget => "budget",
            Stop::Failed(_) => "failed",
        })
    }
}

/// How a run ended.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    /// The best evaluation loss seen.
    pub best_loss: f64,
    /// Steps taken.
    pub steps: usize,
    pub stop: Stop,
}

/// A model the stopping rule can train: one optimiser step on a fresh
/// batch, and the mean loss on a fresh evaluation set.
pub trait Learner {
    fn step(&mut self, rng: &mut BookRng) -> Result<(), String>;
    fn evaluate(&mut self, rng: &mut BookRng) -> f64;
}

// ANCHOR: train
/// Train until the paper's stopping rule fires: evaluate every
/// `eval_every` steps; stop at the target loss, after more than `patience`
/// evaluations without a new best, or at `max_steps`. `on_eval(step,
/// loss)` is called after every evaluation.
pub fn train(
    learner: &mut impl Learner,
    budget: &Budget,
    seed: u64,
    mut on_eval: impl FnMut(usize, f64),
) -> Outcome {
    let mut rng = seeded(seed);
    let (mut best, mut strikes) = (f64::INFINITY, 0);
    let end = |stop, steps, best_loss| Outcome {
        best_loss,
        steps,
        stop,
    };
    for step in 1..=budget.max_steps {
        if let Err(why) = learner.step(&mut rng) {
            return end(Stop::Failed(why), step, best);
        }
        if step % budget.eval_every == 0 {
            let loss = learner.evaluate(&mut rng);
            on_eval(step, loss);
            if loss < best {
                (best, strikes) = (loss, 0);
            } else {
                strikes += 1;
            }
            if loss <= budget.target_loss {
                return end(Stop::Solved, step, best);
            }
            if strikes > budget.patience {
                return end(Stop::NoImprovement, step, best);
            }
        }
    }
    end(Stop::Budget, budget.max_steps, best)
}
// ANCHOR_END: train

/// The f64 reference model as a [`Learner`]: one episode at a time, every
/// gradient by [`episode_loss`]. Slow; the tests and gradient checks use
/// it, the sweep trains with [`crate::paper::retrieval::fast::Fast`].
pub struct Reference {
    pub layer: Layer,
    pub setting: Setting,
    pub budget: Budget,
    pub params: Params,
    adam: Adam,
}

impl Reference {
    pub fn new(
        layer: Layer,
        setting: Setting,
        params: Params,
        b: Budget,
    ) -> Self {
        let adam = Adam::new(&params, b.lr);
        Reference {
            layer,
            setting,
            budget: b,
            params,
            adam,
        }
    }

    fn n(&self) -> usize {
        self.params.emb.nrows()
    }

    fn d(&self) -> usize {
        self.params.w_k.nrows()
    }
}

impl Learner for Reference {
    fn step(&mut self, rng: &mut BookRng) -> Result<(), String> {
        let omega = draw_omega(rng, self.layer, self.d());
        let mut grad = self.params.zeros_like();
        for _ in 0..self.budget.batch {
            let e = episode(rng, self.n(), self.setting);
            episode_loss(&self.params, self.layer, &e, &omega, Some(&mut grad));
        }
        for g in grad.slices_mut() {
            g.iter_mut().for_each(|g| *g /= self.budget.batch as f64);
        }
        self.adam.update(&mut self.params, &grad);
        Ok(())
    }

    fn evaluate(&mut self, rng: &mut BookRng) -> f64 {
        let (mut total, mut count) = (0.0, 0);
        for _ in 0..self.budget.eval_sequences {
            let omega = draw_omega(rng, self.layer, self.d());
            let (mut seq, queries) = eval_sequence(
                rng,
                self.n(),
                self.setting,
                self.budget.max_queries,
            );
            for (q, target) in queries {
                (seq.query, seq.target) = (q, target);
                total +=
                    episode_loss(&self.params, self.layer, &seq, &omega, None);
                count += 1;
            }
        }
        total / count as f64
    }
}

/// Train `run` with the fast f32 trainer, from the reference model's
/// initialisation for its seed.
pub fn train_fast(run: &Run, on_eval: impl FnMut(usize, f64)) -> Outcome {
    use crate::paper::retrieval::fast::Fast;
    let params = Params::init(&mut seeded(run.seed), run.shape, run.layer);
    let mut fast = Fast::new(run.layer, run.setting, &params, run.budget);
    train(&mut fast, &run.budget, run.seed ^ 0x5EED, on_eval)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paper::retrieval::fast::Fast;
    use crate::paper::retrieval::model::{Phi, Rule};

    fn tiny(layer: Layer, setting: Setting, n: usize, max_steps: usize) -> Run {
        Run {
            layer,
            setting,
            shape: Shape::paper(n, 4),
            seed: 1,
            budget: Budget {
                eval_sequences: 8,
                max_steps,
                ..Budget::paper()
            },
        }
    }

    #[test]
    fn below_capacity_a_linear_layer_learns_the_task() {
        // n = 3 associations in a memory keyed in p = d = 4 dimensions.
        let elu = Layer::Linear(Phi::EluPlusOne, Rule::Sum);
        let out = train_fast(&tiny(elu, Setting::Distinct, 3, 3000), |_, _| {});
        assert_eq!(out.stop, Stop::Solved, "{out:?}");
    }

    #[test]
    fn above_capacity_it_cannot_but_a_wider_feature_map_can() {
        // n = 12 associations: beyond p = 4 for elu+1, within p = 24 for
        // DPFP-3 on the same keys.
        let elu = Layer::Linear(Phi::EluPlusOne, Rule::Sum);
        let wide = Layer::Linear(Phi::Dpfp(3), Rule::Sum);
        let narrow =
            train_fast(&tiny(elu, Setting::Distinct, 12, 3000), |_, _| {});
        let wider =
            train_fast(&tiny(wide, Setting::Distinct, 12, 3000), |_, _| {});
        assert!(narrow.best_loss > 0.05, "{narrow:?}");
        assert!(wider.best_loss < narrow.best_loss / 10.0, "{wider:?}");
    }

    #[test]
    fn training_is_deterministic() {
        let run = tiny(Layer::Softmax, Setting::Repeated, 3, 300);
        let mut a = Vec::new();
        let mut b = Vec::new();
        train_fast(&run, |s, l| a.push((s, l)));
        train_fast(&run, |s, l| b.push((s, l)));
        assert_eq!(a, b);
        assert!(a.len() >= 2);
    }

    #[test]
    fn fast_and_reference_training_follow_the_same_curve() {
        // Same initialisation, same batches: the f32 trainer's evaluation
        // losses stay within 1% of the f64 model's over 300 steps.
        for layer in [
            Layer::Softmax,
            Layer::Linear(Phi::Dpfp(1), Rule::Sum),
            Layer::Linear(Phi::EluPlusOne, Rule::Delta),
        ] {
            let run = tiny(layer, Setting::Repeated, 5, 300);
            let params = Params::init(&mut seeded(run.seed), run.shape, layer);
            let mut reference =
                Reference::new(layer, run.setting, params.clone(), run.budget);
            let mut fast = Fast::new(layer, run.setting, &params, run.budget);
            let (mut a, mut b) = (Vec::new(), Vec::new());
            train(&mut reference, &run.budget, 4, |_, l| a.push(l));
            train(&mut fast, &run.budget, 4, |_, l| b.push(l));
            assert_eq!(a.len(), b.len());
            for (x, y) in a.iter().zip(&b) {
                assert!(
                    (x - y).abs() <= 0.01 * x,
                    "{}: {a:?} vs {b:?}",
                    layer.name()
                );
            }
        }
    }

    #[test]
    fn training_stops_at_the_target_loss_or_at_the_step_cap() {
        // The chapter's budget: batch 32, lr 10⁻³, an evaluation every 100
        // steps, target 10⁻³, more than 10 evaluations without a new best,
        // 100,000 steps.
        let b = Budget::paper();
        assert_eq!((b.batch, b.lr, b.eval_every), (32, 1e-3, 100));
        assert_eq!(
            (b.target_loss, b.patience, b.max_steps),
            (1e-3, 10, 100_000)
        );
        // A learner whose loss halves at every evaluation: solved at the
        // first evaluation at or below the target.
        struct Halving(f64);
        impl Learner for Halving {
            fn step(&mut self, _: &mut BookRng) -> Result<(), String> {
                Ok(())
            }
            fn evaluate(&mut self, _: &mut BookRng) -> f64 {
                self.0 /= 2.0;
                self.0
            }
        }
        let out = train(&mut Halving(1.0), &b, 0, |_, _| {});
        // 2⁻¹⁰ ≈ 9.8e-4 is the first power of ½ at or below 10⁻³.
        assert_eq!(out.stop, Stop::Solved);
        assert_eq!(out.steps, 10 * b.eval_every);
        // One that improves a little every time, never to the target: it
        // runs to the cap.
        struct Creeping(f64);
        impl Learner for Creeping {
            fn step(&mut self, _: &mut BookRng) -> Result<(), String> {
                Ok(())
            }
            fn evaluate(&mut self, _: &mut BookRng) -> f64 {
                self.0 *= 0.9999;
                self.0
            }
        }
        let short = Budget {
            max_steps: 5_000,
            ..b
        };
        let out = train(&mut Creeping(1.0), &short, 0, |_, _| {});
        assert_eq!((out.stop, out.steps), (Stop::Budget, 5_000));
    }

    #[test]
    fn the_stopping_rule_waits_more_than_patience_evaluations() {
        // A learner that never improves after its first evaluation.
        struct Flat;
        impl Learner for Flat {
            fn step(&mut self, _: &mut BookRng) -> Result<(), String> {
                Ok(())
            }
            fn evaluate(&mut self, _: &mut BookRng) -> f64 {
                0.5
            }
        }
        let b = Budget::paper();
        let out = train(&mut Flat, &b, 0, |_, _| {});
        assert_eq!(out.stop, Stop::NoImprovement);
        assert_eq!(out.steps, (b.patience + 2) * b.eval_every);
    }
}
