//! The trainer of the rewrite variant: the loop of Zoology's comparison
//! ([`trained_on`]) on [`REWRITE`]'s sequences, then each test length's
//! accuracy over every question, over the questions about keys written
//! twice, and the share of those answered with the old value.

use crate::after::recall::mqar::MqarSequence;
use crate::after::recall::rewrite::RecallTask;
use crate::after::recall::rewrite_study::{REWRITE, Record};
use crate::after::recall::zoology::{Params, Work, run_mqar};
use crate::after::recall::zoology_study::{LENGTHS, Run};
use crate::input::InputError;
use crate::trainers::mqar::{record as base_record, test_set_of, trained_on};

/// What one rewrite run measures.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome {
    /// Every question at each of [`LENGTHS`].
    pub accuracy: [f64; 3],
    /// Mean cross-entropy per question at the training length.
    pub loss: f64,
    /// Questions about keys written twice answered right.
    pub rewritten: [f64; 3],
    /// Questions about keys written twice answered with the old value.
    pub old: [f64; 3],
}

/// Counts over a test set: questions, right answers, questions about
/// rewritten keys, right and old answers among them, and the summed loss.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Tally {
    pub questions: usize,
    pub right: usize,
    pub twice: usize,
    pub twice_right: usize,
    pub twice_old: usize,
    pub loss: f64,
}

/// The tally of `params` on `seqs`, sequences of `REWRITE` at `factor`
/// times its length.
pub fn tally(
    run: &Run,
    factor: usize,
    params: &Params<f32>,
    seqs: &[MqarSequence],
    work: &mut Work<f32>,
) -> Result<Tally, InputError> {
    let task = REWRITE.stretched(factor);
    let mut t = Tally::default();
    for s in seqs {
        let scored = run_mqar(run.net, task.task, params, s, None, work)?;
        t.loss += f64::from(scored.loss);
        t.right += scored.correct;
        t.questions += s.queries.len();
        let first = task.first_values(s);
        for ((&(_, want), &got), &old) in
            s.queries.iter().zip(work.answers()).zip(&first)
        {
            if old != want {
                t.twice += 1;
                t.twice_right += usize::from(got == Some(want));
                t.twice_old += usize::from(got == Some(old));
            }
        }
    }
    Ok(t)
}

/// Train `run` on the rewrite task and test it at every length.
pub fn train(run: &Run) -> Result<Outcome, InputError> {
    let params = trained_on(run, REWRITE)?;
    let mut work = Work::default();
    let mut out = Outcome {
        accuracy: [0.0; 3],
        loss: 0.0,
        rewritten: [0.0; 3],
        old: [0.0; 3],
    };
    for (i, &factor) in LENGTHS.iter().enumerate() {
        let seqs = test_set_of(run, REWRITE, factor);
        let t = tally(run, factor, &params, &seqs, &mut work)?;
        let share = |a: usize, b: usize| a as f64 / b.max(1) as f64;
        out.accuracy[i] = share(t.right, t.questions);
        out.rewritten[i] = share(t.twice_right, t.twice);
        out.old[i] = share(t.twice_old, t.twice);
        if factor == 1 {
            out.loss = t.loss / t.questions.max(1) as f64;
        }
    }
    Ok(out)
}

/// The record of a trained run.
pub fn record(run: &Run, out: Outcome, seconds: f64) -> Record {
    Record {
        run: base_record(run, (out.accuracy, out.loss), seconds),
        rewritten: out.rewritten,
        old: out.old,
    }
}
