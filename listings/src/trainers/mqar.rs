//! The trainer of the recall comparison in Zoology's setting: the
//! chapter's two-layer models in f32, batches of fresh sequences, the
//! mean gradient, Adam; then the share of queries a fixed test set
//! answers right at each test length. The forward and backward passes
//! reuse their buffers; nothing grows once the first batch has run. The
//! same loops train on the rewrite variant (any [`RecallTask`]).

use crate::after::recall::mqar::{Mqar, MqarSequence};
use crate::after::recall::rewrite::RecallTask;
use crate::after::recall::zoology::{Params, Work, run_mqar};
use crate::after::recall::zoology_study::{LENGTHS, Record, Run, TASK};
use crate::input::InputError;
use crate::paper::retrieval::adam::Adam;
use crate::random::seeded;

/// The test sequences of a run at `factor` times the training length:
/// their own seed, never trained on.
pub fn test_set(run: &Run, factor: usize) -> Vec<MqarSequence> {
    test_set_of(run, TASK, factor)
}

/// The test sequences of a run of `task` at `factor` times its length.
pub fn test_set_of<T: RecallTask>(
    run: &Run,
    task: T,
    factor: usize,
) -> Vec<MqarSequence> {
    let mut rng = seeded(run.seed.wrapping_add((factor as u64) << 40));
    let task = task.stretched(factor);
    (0..run.budget.tests)
        .map(|_| {
            let mut seq = MqarSequence::default();
            task.draw(&mut rng, &mut seq);
            seq
        })
        .collect()
}

/// Accuracy and mean loss per query of `params` on `seqs` of `task`.
pub fn evaluate(
    run: &Run,
    task: Mqar,
    params: &Params<f32>,
    seqs: &[MqarSequence],
    work: &mut Work<f32>,
) -> Result<(f64, f64), InputError> {
    let (mut loss, mut correct) = (0.0f64, 0usize);
    for s in seqs {
        let scored = run_mqar(run.net, task, params, s, None, work)?;
        loss += f64::from(scored.loss);
        correct += scored.correct;
    }
    let queries = (seqs.len() * task.pairs) as f64;
    Ok((correct as f64 / queries, loss / queries))
}

/// The weights `run` ends with on Zoology's task.
pub fn trained(run: &Run) -> Result<Params<f32>, InputError> {
    trained_on(run, TASK)
}

// ANCHOR: mqar_train
/// The weights `run` ends with on `task`: fresh sequences every step,
/// the mean gradient over the batch's queries, Adam.
pub fn trained_on<T: RecallTask>(
    run: &Run,
    task: T,
) -> Result<Params<f32>, InputError> {
    task.check_task()?;
    let shape = task.shape();
    let mut rng = seeded(run.seed);
    let mut params: Params<f32> = Params::init(&mut rng, run.net);
    let mut adam = Adam::new(&params, run.lr as f32);
    let mut work = Work::default();
    let mut grad = Params {
        w: vec![0.0; params.w.len()],
    };
    let mut seq = MqarSequence::default();
    let scale = 1.0 / (run.budget.batch * shape.pairs) as f32;
    for _ in 0..run.budget.steps {
        grad.w.fill(0.0);
        for _ in 0..run.budget.batch {
            task.draw(&mut rng, &mut seq);
            let g = Some((&mut grad, scale));
            run_mqar(run.net, shape, &params, &seq, g, &mut work)?;
        }
        adam.update(&mut params, &grad);
    }
    Ok(params)
}
// ANCHOR_END: mqar_train

/// Train `run` and test it at every length of [`LENGTHS`].
pub fn train(run: &Run) -> Result<([f64; 3], f64), InputError> {
    let params = trained(run)?;
    let mut work = Work::default();
    let mut accuracy = [0.0; 3];
    let mut loss = 0.0;
    for (i, &factor) in LENGTHS.iter().enumerate() {
        let seqs = test_set(run, factor);
        let task = TASK.longer(factor);
        let (acc, l) = evaluate(run, task, &params, &seqs, &mut work)?;
        accuracy[i] = acc;
        if factor == 1 {
            loss = l;
        }
    }
    Ok((accuracy, loss))
}

/// The record of a trained run.
pub fn record(
    run: &Run,
    (accuracy, loss): ([f64; 3], f64),
    seconds: f64,
) -> Record {
    Record {
        mixer: run.net.name(),
        d: run.net.d,
        lr: run.lr,
        seed: run.seed,
        accuracy,
        loss,
        seconds,
    }
}
