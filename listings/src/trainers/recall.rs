//! The recall trainer of "After the paper": the chapter's models in f32,
//! batches of fresh sequences, the mean gradient, Adam; then the share of
//! queries a fixed test set answers right.

use crate::after::recall::model::{
    Mixer, Params, Work, gates_of, run_batch, run_sequence,
};
use crate::after::recall::study::{Outcome, Run};
use crate::after::recall::task::Sequence;
use crate::input::InputError;
use crate::paper::retrieval::adam::{Adam, Weights};
use crate::random::seeded;

/// The test sequences of a run: their own seed, never trained on.
pub fn test_set(run: &Run) -> Vec<Sequence> {
    let mut rng = seeded(run.seed.wrapping_add(1 << 40));
    (0..run.budget.tests)
        .map(|_| run.shape.task.sample(&mut rng))
        .collect()
}

/// Accuracy and mean loss of `params` on `seqs`.
pub fn evaluate(
    run: &Run,
    params: &Params<f32>,
    seqs: &[Sequence],
) -> Result<Outcome, InputError> {
    let mut w = Work::default();
    let (mut loss, mut correct) = (0.0f64, 0usize);
    for s in seqs {
        let scored =
            run_sequence(run.mixer, run.shape, params, s, None, &mut w)?;
        loss += f64::from(scored.loss);
        correct += scored.correct;
    }
    let queries = (seqs.len() * run.shape.task.pairs) as f64;
    Ok(Outcome {
        accuracy: correct as f64 / queries,
        loss: loss / queries,
        beta: mean_beta(run, params, seqs),
    })
}

/// For the delta rules, the mean write strength β_t over the questions
/// (a key alone) and over the pairs (a key with its value) of `seqs`.
pub fn mean_beta(
    run: &Run,
    params: &Params<f32>,
    seqs: &[Sequence],
) -> Option<[f64; 2]> {
    let at = match run.mixer {
        Mixer::Delta => 0,
        Mixer::GatedDelta => 1,
        _ => return None,
    };
    let (mut sum, mut count) = ([0.0f64; 2], [0usize; 2]);
    for t in seqs.iter().flat_map(|s| &s.tokens) {
        let kind = usize::from(t.value.is_some());
        let beta = gates_of(run.mixer, run.shape, params, t)[at];
        sum[kind] += f64::from(beta);
        count[kind] += 1;
    }
    Some([0, 1].map(|k| sum[k] / count[k].max(1) as f64))
}

// ANCHOR: recall_train
/// Train `run` in f32 and score it on its test set.
pub fn train(run: &Run) -> Result<Outcome, InputError> {
    let params = trained(run)?;
    evaluate(run, &params, &test_set(run))
}

/// The weights `run` ends with.
pub fn trained(run: &Run) -> Result<Params<f32>, InputError> {
    run.shape.task.check()?;
    let mut rng = seeded(run.seed);
    let mut params: Params<f32> = Params::init(&mut rng, run.shape, run.mixer);
    let mut adam = Adam::new(&params, run.budget.lr as f32);
    let mut work = Work::default();
    let scale = 1.0 / (run.budget.batch * run.shape.task.pairs) as f32;
    for _ in 0..run.budget.steps {
        let mut grad = params.zeros_like();
        let batch: Vec<Sequence> = (0..run.budget.batch)
            .map(|_| run.shape.task.sample(&mut rng))
            .collect();
        let g = Some((&mut grad, scale));
        run_batch(run.mixer, run.shape, &params, &batch, g, &mut work)?;
        adam.update(&mut params, &grad);
    }
    Ok(params)
}
// ANCHOR_END: recall_train

#[cfg(test)]
mod tests {
    use super::*;
    use crate::after::recall::model::Mixer;
    use crate::after::recall::study::{PAIRS, SEEDS, run};
    use crate::after::recall::task::Token;
    use std::collections::HashSet;

    #[test]
    fn no_test_sequence_is_among_the_sequences_a_model_trains_on() {
        // The smallest runs, where a repeat is least unlikely: draw every
        // training sequence as `trained` does (the weights first, then
        // batch × steps sequences) and look for each test sequence there.
        let key = |t: &[Token]| -> Vec<(usize, Option<usize>)> {
            t.iter().map(|t| (t.key, t.value)).collect()
        };
        for mixer in Mixer::ALL {
            for seed in SEEDS {
                let r = run(mixer, PAIRS[0], seed);
                let mut rng = seeded(r.seed);
                let _: Params<f32> = Params::init(&mut rng, r.shape, r.mixer);
                let seen: HashSet<_> = (0..r.budget.steps * r.budget.batch)
                    .map(|_| key(&r.shape.task.sample(&mut rng).tokens))
                    .collect();
                let tests = test_set(&r);
                assert_eq!(tests.len(), r.budget.tests);
                for t in &tests {
                    assert!(!seen.contains(&key(&t.tokens)), "{mixer:?}");
                }
            }
        }
    }
}
