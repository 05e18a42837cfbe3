//! Training one model on the retrieval task with the paper's optimiser and
//! stopping rule.

use crate::input::{InputError, at_least_one};
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

    /// Every count that divides or is divided by must be at least one: the
    /// batch, the evaluation interval, the evaluation's sequences and its
    /// queries. A zero is an error naming it.
    pub fn check(&self) -> Result<(), InputError> {
        let rule = "a step, an evaluation and its interval need at least one";
        at_least_one("batch", self.batch, rule)?;
        at_least_one("eval_every", self.eval_every, rule)?;
        at_least_one("eval_sequences", self.eval_sequences, rule)?;
        at_least_one("max_queries", self.max_queries, rule)
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
    fn evaluate(&mut self, rng: &mut BookRng) -> Result<f64, String>;
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
    if let Err(why) = budget.check() {
        return end(Stop::Failed(why.to_string()), 0, best);
    }
    for step in 1..=budget.max_steps {
        if let Err(why) = learner.step(&mut rng) {
            return end(Stop::Failed(why), step, best);
        }
        if step % budget.eval_every == 0 {
            let loss = match learner.evaluate(&mut rng) {
                Ok(loss) => loss,
                Err(why) => return end(Stop::Failed(why), step, best),
            };
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
/// it, the sweep trains with the fast f32 trainer (`trainers::retrieval`).
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
        self.budget.check().map_err(|e| e.to_string())?;
        let omega = draw_omega(rng, self.layer, self.d());
        let mut grad = self.params.zeros_like();
        for _ in 0..self.budget.batch {
            let e = episode(rng, self.n(), self.setting)
                .map_err(|e| e.to_string())?;
            episode_loss(&self.params, self.layer, &e, &omega, Some(&mut grad));
        }
        for g in grad.slices_mut() {
            g.iter_mut().for_each(|g| *g /= self.budget.batch as f64);
        }
        self.adam.update(&mut self.params, &grad);
        Ok(())
    }

    fn evaluate(&mut self, rng: &mut BookRng) -> Result<f64, String> {
        self.budget.check().map_err(|e| e.to_string())?;
        let (mut total, mut count) = (0.0, 0);
        for _ in 0..self.budget.eval_sequences {
            let omega = draw_omega(rng, self.layer, self.d());
            let (mut seq, queries) = eval_sequence(
                rng,
                self.n(),
                self.setting,
                self.budget.max_queries,
            )
            .map_err(|e| e.to_string())?;
            for (q, target) in queries {
                (seq.query, seq.target) = (q, target);
                total +=
                    episode_loss(&self.params, self.layer, &seq, &omega, None);
                count += 1;
            }
        }
        Ok(total / count as f64)
    }
}
