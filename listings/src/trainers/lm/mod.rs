//! The language-model trainer of "The language-modelling result, small":
//! the byte-level model in f32 (its f64 twin for the gradient checks is the
//! same generic code), random windows of the training text, Adam with the
//! gradient's norm clipped, validation at regular steps, a test score at
//! the end, and divergence recorded rather than trained through.

pub mod mixer;
pub mod model;
pub mod text;
#[cfg(test)]
mod tests;

use crate::input::{InputError, at_least_one};
use crate::paper::language_model::study::{Record, Run, name};
use crate::paper::retrieval::adam::{Adam, Weights};
use crate::random::seeded;
use model::{Model, Work};
use rand::Rng;
use text::Corpus;

/// The weights as one flat tensor, for Adam.
pub struct Flat(pub Vec<f32>);

impl Weights<f32> for Flat {
    fn slices(&self) -> Vec<&[f32]> {
        vec![&self.0]
    }
    fn slices_mut(&mut self) -> Vec<&mut [f32]> {
        vec![&mut self.0]
    }
    fn zeros_like(&self) -> Self {
        Flat(vec![0.0; self.0.len()])
    }
}

/// What training a run gives.
#[derive(Clone, Debug, PartialEq)]
pub struct Outcome {
    pub parameters: usize,
    pub diverged_at: Option<usize>,
    pub curve: Vec<(usize, f64)>,
    pub test: Option<f64>,
}

impl Record {
    /// The record of `run`, trained to `outcome` in `seconds`.
    pub fn of(run: &Run, outcome: Outcome, seconds: f64) -> Record {
        Record {
            name: name(run.mixer).to_string(),
            seed: run.seed,
            parameters: outcome.parameters,
            diverged_at: outcome.diverged_at,
            curve: outcome.curve,
            test: outcome.test,
            seconds,
        }
    }
}

/// The model a run trains.
pub fn model(run: &Run) -> Model {
    Model {
        shape: run.shape,
        mixer: run.mixer,
        context: run.budget.context,
    }
}

/// Mean bits per byte of `w` over `windows` windows of `text`, evenly
/// spaced, scored in batches of `work.seqs`; `tokens`: scratch.
fn score(
    model: &Model,
    w: &[f32],
    text: &[u8],
    windows: usize,
    work: &mut Work<f32>,
    tokens: &mut [u8],
) -> f64 {
    let span = work.t + 1;
    let last = text.len() - span;
    let mut total = 0.0;
    let batches = windows / work.seqs;
    for b in 0..batches {
        for s in 0..work.seqs {
            let i = b * work.seqs + s;
            let at = i * last / (windows - 1).max(1);
            tokens[s * span..(s + 1) * span]
                .copy_from_slice(&text[at..at + span]);
        }
        total += model.loss(w, tokens, work, None) as f64;
    }
    total / batches as f64 / std::f64::consts::LN_2
}

// ANCHOR: lm_train
/// Train `run` on `corpus`: random training windows, the mean
/// cross-entropy of every position, Adam on the clipped gradient;
/// validation after `first` steps and every `every`; stop at the first loss or gradient
/// that is not finite and record the step. A budget or text the run cannot
/// use is an error naming it (see [`check`]).
pub fn train(run: &Run, corpus: &Corpus) -> Result<Outcome, InputError> {
    check(run, corpus)?;
    let b = run.budget;
    let model = model(run);
    let mut rng = seeded(run.seed);
    let mut w = Flat(model.init::<f32>(&mut rng));
    let mut grad = Flat(vec![0.0; w.0.len()]);
    let mut adam = Adam::new(&w, b.lr as f32);
    let mut work = Work::new(&model, b.batch, b.context);
    let span = b.context + 1;
    let mut tokens = vec![0u8; b.batch * span];
    let mut outcome = Outcome {
        parameters: w.0.len(),
        diverged_at: None,
        curve: Vec::new(),
        test: None,
    };
    for step in 1..=b.steps {
        for s in 0..b.batch {
            let at = rng.random_range(0..corpus.train.len() - span);
            tokens[s * span..(s + 1) * span]
                .copy_from_slice(&corpus.train[at..at + span]);
        }
        let loss = model.loss(&w.0, &tokens, &mut work, Some(&mut grad.0));
        let norm = grad.0.iter().map(|g| g * g).sum::<f32>().sqrt();
        if !loss.is_finite() || !norm.is_finite() {
            outcome.diverged_at = Some(step);
            return Ok(outcome);
        }
        if norm > b.clip as f32 {
            let shrink = b.clip as f32 / norm;
            grad.0.iter_mut().for_each(|g| *g *= shrink);
        }
        adam.update(&mut w, &grad);
        if step == b.first || step % b.every == 0 {
            let v = score(
                &model,
                &w.0,
                &corpus.valid,
                b.valid_windows,
                &mut work,
                &mut tokens,
            );
            if !v.is_finite() {
                outcome.diverged_at = Some(step);
                return Ok(outcome);
            }
            outcome.curve.push((step, v));
        }
    }
    let t = score(
        &model,
        &w.0,
        &corpus.test,
        b.test_windows,
        &mut work,
        &mut tokens,
    );
    outcome.test = t.is_finite().then_some(t);
    if outcome.test.is_none() {
        outcome.diverged_at = Some(b.steps);
    }
    Ok(outcome)
}
// ANCHOR_END: lm_train

/// What `train` needs of a run and its text, each refused with an error
/// naming it: heads that split the width evenly, a token for every byte
/// value, at least one sequence, byte of context and step between
/// validations, at least one batch of windows to score, and each part of
/// the text longer than a window (context + 1 bytes).
pub fn check(run: &Run, corpus: &Corpus) -> Result<(), InputError> {
    let (s, b) = (run.shape, run.budget);
    let bad =
        |name, value, rule| InputError::BadParameter { name, value, rule };
    at_least_one("heads", s.heads, "the width splits into heads")?;
    if s.d % s.heads != 0 {
        return Err(bad("d", s.d, "the width must split evenly into heads"));
    }
    if s.vocab < 256 {
        return Err(bad("vocab", s.vocab, "every byte value is a token"));
    }
    let rule = "a step, a window and a validation interval need at least one";
    at_least_one("batch", b.batch, rule)?;
    at_least_one("context", b.context, rule)?;
    at_least_one("every", b.every, rule)?;
    let whole = "a score averages at least one whole batch of windows";
    for (name, windows) in [
        ("valid_windows", b.valid_windows),
        ("test_windows", b.test_windows),
    ] {
        if windows < b.batch {
            return Err(bad(name, windows, whole));
        }
    }
    let span = b.context + 1;
    let longer = "each part of the text is longer than one window";
    for (name, part) in [
        ("train text bytes", &corpus.train),
        ("valid text bytes", &corpus.valid),
        ("test text bytes", &corpus.test),
    ] {
        if part.len() <= span {
            return Err(bad(name, part.len(), longer));
        }
    }
    Ok(())
}
