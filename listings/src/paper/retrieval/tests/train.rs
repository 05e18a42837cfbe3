//! The stopping rule, on learners whose losses are known.

use crate::paper::retrieval::train::*;
use crate::random::BookRng;

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
        fn evaluate(&mut self, _: &mut BookRng) -> Result<f64, String> {
            self.0 /= 2.0;
            Ok(self.0)
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
        fn evaluate(&mut self, _: &mut BookRng) -> Result<f64, String> {
            self.0 *= 0.9999;
            Ok(self.0)
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
        fn evaluate(&mut self, _: &mut BookRng) -> Result<f64, String> {
            Ok(0.5)
        }
    }
    let b = Budget::paper();
    let out = train(&mut Flat, &b, 0, |_, _| {});
    assert_eq!(out.stop, Stop::NoImprovement);
    assert_eq!(out.steps, (b.patience + 2) * b.eval_every);
}
