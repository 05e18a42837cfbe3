//! The tracking trainer of "The transition's spectrum": the chapter's
//! one-layer model in f64, batches of fresh bit strings of 1 to
//! `TRAIN_MAX` bits, the mean gradient per bit, Adam; then the share of
//! longer test strings whose last bit is labelled right.

use crate::after::spectrum::tracking::model::{Params, run_sequence};
use crate::after::spectrum::tracking::study::{LENGTHS, Run, TRAIN_MAX};
use crate::after::spectrum::tracking::task::Sequence;
use crate::input::{InputError, at_least_one};
use crate::paper::retrieval::adam::{Adam, Weights};
use crate::random::seeded;
use rand::Rng;

/// The test strings of a run at one length, from a random stream of
/// their own. Past `TRAIN_MAX` bits none can be a training string; at
/// the shortest length many are, as there are few strings that short.
pub fn test_set(run: &Run, bits: usize) -> Vec<Sequence> {
    let mut rng = seeded(run.seed.wrapping_add(1 << 40) + bits as u64);
    (0..run.budget.tests)
        .map(|_| run.model.task.sample(&mut rng, bits))
        .collect()
}

/// The share of `seqs` whose last bit `params` labels right; no
/// sequences is an error (a share of none is 0/0).
pub fn last_bit_accuracy(
    run: &Run,
    params: &Params,
    seqs: &[Sequence],
) -> Result<f64, InputError> {
    at_least_one("seqs", seqs.len(), "a share needs one sequence")?;
    let mut right = 0;
    for s in seqs {
        right +=
            usize::from(run_sequence(run.model, params, s, None)?.last_correct);
    }
    Ok(right as f64 / seqs.len() as f64)
}

// ANCHOR: tracking_train
/// Train `run` and score it at every test length.
pub fn train(run: &Run) -> Result<Vec<f64>, InputError> {
    let params = trained(run)?;
    LENGTHS
        .iter()
        .map(|&n| last_bit_accuracy(run, &params, &test_set(run, n)))
        .collect()
}

/// The weights `run` ends with.
pub fn trained(run: &Run) -> Result<Params, InputError> {
    let mut rng = seeded(run.seed);
    let mut params = Params::init(&mut rng, run.model);
    let mut adam = Adam::new(&params, run.budget.lr);
    for _ in 0..run.budget.steps {
        let batch: Vec<Sequence> = (0..run.budget.batch)
            .map(|_| {
                let bits = rng.random_range(1..=TRAIN_MAX);
                run.model.task.sample(&mut rng, bits)
            })
            .collect();
        let labels: usize = batch.iter().map(|s| s.labels.len()).sum();
        let mut grad = params.zeros_like();
        for s in &batch {
            let g = Some((&mut grad, 1.0 / labels as f64));
            run_sequence(run.model, &params, s, g)?;
        }
        // An L2 penalty on the read-out, so that a margin is won by a
        // larger swing of the memory rather than by a larger read-out.
        let decay = run.budget.decay;
        for (g, &w) in grad.o.iter_mut().zip(&params.o) {
            *g += decay * w;
        }
        adam.update(&mut params, &grad);
    }
    Ok(params)
}
// ANCHOR_END: tracking_train
