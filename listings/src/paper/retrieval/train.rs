//! Training one model on the retrieval task, and the sweep over models and
//! numbers of keys that the chapter's figures are drawn from.

use crate::paper::retrieval::adam::Adam;
use crate::paper::retrieval::model::{
    Layer, Params, Shape, draw_omega, episode_loss,
};
use crate::paper::retrieval::task::{Episode, Setting, episode, episodes};
use crate::random::seeded;
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
    /// Evaluate every this many steps.
    pub eval_every: usize,
    /// Size of the fixed evaluation set.
    pub eval_episodes: usize,
    /// Stop when the evaluation loss reaches this ...
    pub target_loss: f64,
    /// ... or has not improved for this many evaluations ...
    pub patience: usize,
    /// ... or after this many steps.
    pub max_steps: usize,
}

impl Budget {
    /// The paper's settings (batch 32, lr 1e-3, stop at 0.001 or after 10
    /// evaluations without improvement) with a step budget of our choice.
    pub fn paper(max_steps: usize) -> Budget {
        Budget {
            batch: 32,
            lr: 1e-3,
            eval_every: 100,
            eval_episodes: 256,
            target_loss: 1e-3,
            patience: 10,
            max_steps,
        }
    }
}

/// Why training stopped.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stop {
    Solved,
    NoImprovement,
    Budget,
}

impl fmt::Display for Stop {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Stop::Solved => "solved",
            Stop::NoImprovement => "plateau",
            Stop::Budget => "budget",
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

/// The mean loss of `params` over `set`, with one Ω for the whole set.
pub fn mean_loss(
    params: &Params,
    run: &Run,
    set: &[Episode],
    omega_seed: u64,
) -> f64 {
    let omega = draw_omega(&mut seeded(omega_seed), run.layer, run.shape.d);
    let total: f64 = set
        .iter()
        .map(|e| episode_loss(params, run.layer, e, &omega, None))
        .sum();
    total / set.len() as f64
}

// ANCHOR: train
/// Train one model with Adam on fresh episodes until the stopping rule
/// fires. `on_eval(step, loss)` is called after every evaluation.
pub fn train(run: &Run, mut on_eval: impl FnMut(usize, f64)) -> Outcome {
    let Run {
        layer,
        setting,
        shape,
        seed,
        budget,
    } = *run;
    let mut rng = seeded(seed);
    let mut params = Params::init(&mut rng, shape);
    let mut adam = Adam::new(&params, budget.lr);
    let eval_set =
        episodes(seed ^ 0xE7A1, budget.eval_episodes, shape.n, setting);
    let (mut best, mut since_best) = (f64::INFINITY, 0);
    let mut step = 0;
    let stop = loop {
        if step % budget.eval_every == 0 {
            let loss = mean_loss(&params, run, &eval_set, seed + step as u64);
            on_eval(step, loss);
            if loss < best {
                (best, since_best) = (loss, 0);
            } else {
                since_best += 1;
            }
            if best <= budget.target_loss {
                break Stop::Solved;
            }
            if since_best >= budget.patience {
                break Stop::NoImprovement;
            }
            if step >= budget.max_steps {
                break Stop::Budget;
            }
        }
        // One step: a fresh batch, its mean gradient, one Adam update.
        let omega = draw_omega(&mut rng, layer, shape.d);
        let mut grad = params.zeros_like();
        for _ in 0..budget.batch {
            let e = episode(&mut rng, shape.n, setting);
            episode_loss(&params, layer, &e, &omega, Some(&mut grad));
        }
        for g in grad.slices_mut() {
            g.iter_mut().for_each(|g| *g /= budget.batch as f64);
        }
        adam.update(&mut params, &grad);
        step += 1;
    };
    Outcome {
        best_loss: best,
        steps: step,
        stop,
    }
}
// ANCHOR_END: train

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paper::retrieval::model::{Phi, Rule};

    fn tiny(layer: Layer, setting: Setting, n: usize, max_steps: usize) -> Run {
        Run {
            layer,
            setting,
            shape: Shape::paper(n, 4),
            seed: 1,
            budget: Budget {
                eval_every: 100,
                eval_episodes: 64,
                ..Budget::paper(max_steps)
            },
        }
    }

    #[test]
    fn below_capacity_a_linear_layer_learns_the_task() {
        // n = 3 associations in a memory keyed in p = d = 4 dimensions.
        let elu = Layer::Linear(Phi::EluPlusOne, Rule::Sum);
        let out = train(&tiny(elu, Setting::Distinct, 3, 3000), |_, _| {});
        assert_eq!(out.stop, Stop::Solved, "{out:?}");
    }

    #[test]
    fn above_capacity_it_cannot_but_a_wider_feature_map_can() {
        // n = 12 associations: beyond p = 4 for elu+1, within p = 24 for
        // DPFP-3 on the same keys.
        let elu = Layer::Linear(Phi::EluPlusOne, Rule::Sum);
        let wide = Layer::Linear(Phi::Dpfp(3), Rule::Sum);
        let narrow = train(&tiny(elu, Setting::Distinct, 12, 1500), |_, _| {});
        let wider = train(&tiny(wide, Setting::Distinct, 12, 1500), |_, _| {});
        assert!(narrow.best_loss > 0.1, "{narrow:?}");
        assert!(wider.best_loss < narrow.best_loss / 10.0, "{wider:?}");
    }

    #[test]
    fn training_is_deterministic() {
        let run = tiny(Layer::Softmax, Setting::Repeated, 3, 200);
        let mut a = Vec::new();
        let mut b = Vec::new();
        train(&run, |s, l| a.push((s, l)));
        train(&run, |s, l| b.push((s, l)));
        assert_eq!(a, b);
        assert!(a.len() >= 2);
    }
}
