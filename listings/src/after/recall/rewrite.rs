//! The rewrite variant of Zoology's recall task: some keys are written a
//! second time, with a new value, later in the pair region, and every
//! question asks for its key's latest value. A rule that adds each write
//! to its memory then holds two values along a rewritten key; one that
//! replaces the value along the key (the delta rule) holds one.
//!
//! [`RecallTask`] is what the two-layer models' trainer needs of a task,
//! so one trainer serves Zoology's task and this one.

use crate::after::recall::mqar::{Mqar, MqarSequence};
use crate::input::InputError;
use crate::random::BookRng;
use rand::Rng;

// ANCHOR: rewrite_task
/// Zoology's task with `rewrites` (r) of its n keys written again, each
/// with a value not yet in the sequence, in a block right after the n
/// pairs; the questions come after, and each asks for the latest value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rewrite {
    pub task: Mqar,
    pub rewrites: usize,
}

impl Rewrite {
    /// Draw Zoology's sequence 2r tokens shorter; write r distinct keys of
    /// its pairs again after the pairs (the questions move 2r later) and
    /// make those keys' answers their new values.
    pub fn sample_into(&self, rng: &mut BookRng, seq: &mut MqarSequence) {
        let (n, r, half) =
            (self.task.pairs, self.rewrites, self.task.vocab / 2);
        let shorter = Mqar {
            len: self.task.len - 2 * r,
            ..self.task
        };
        shorter.sample_into(rng, seq);
        let end = seq.tokens.len();
        for _ in 0..r {
            // A key not yet rewritten: its answer is still its first value.
            let i = loop {
                let i = rng.random_range(0..n);
                if seq.queries[i].1 == seq.tokens[2 * i + 1] - half {
                    break i;
                }
            };
            let value = loop {
                let v = rng.random_range(half..self.task.vocab);
                let writes =
                    seq.tokens[..2 * n].iter().chain(&seq.tokens[end..]);
                if !writes.skip(1).step_by(2).any(|&t| t == v) {
                    break v;
                }
            };
            let key = seq.tokens[2 * i];
            seq.tokens.extend([key, value]);
            seq.queries[i].1 = value - half;
        }
        seq.tokens[2 * n..].rotate_right(2 * r);
        for (at, _) in &mut seq.queries {
            *at += 2 * r;
        }
    }
}
// ANCHOR_END: rewrite_task

impl Rewrite {
    /// Zoology's checks, and: at most one rewrite per key, a new value
    /// symbol for every write (n + r ≤ V − V/2), and room for the writes
    /// and the questions (4n + 2r ≤ len).
    pub fn check(&self) -> Result<(), InputError> {
        self.task.check()?;
        let Rewrite { task, rewrites: r } = *self;
        let bad = |name, value, rule| {
            Err(InputError::BadParameter { name, value, rule })
        };
        if r > task.pairs {
            return bad("rewrites", r, "at most one rewrite per key: r ≤ n");
        }
        if task.pairs + r > task.values() {
            return bad(
                "rewrites",
                r,
                "a new value per write: n + r ≤ V − V/2",
            );
        }
        if 4 * task.pairs + 2 * r > task.len {
            return bad("len", task.len, "room for every write: 4n + 2r ≤ len");
        }
        Ok(())
    }

    /// A fresh sequence (for a task that passes [`Rewrite::check`]).
    pub fn sample(&self, rng: &mut BookRng) -> MqarSequence {
        let mut seq = MqarSequence::default();
        self.sample_into(rng, &mut seq);
        seq
    }

    /// For each question of `seq` (one of this task's sequences), the
    /// index of the value its key was first written with: the old value
    /// if the key was rewritten, the answer if not.
    pub fn first_values(&self, seq: &MqarSequence) -> Vec<usize> {
        let half = self.task.vocab / 2;
        (0..self.task.pairs)
            .map(|i| seq.tokens[2 * i + 1] - half)
            .collect()
    }
}

/// What the two-layer models' trainer needs of a task: the shape the
/// model checks (vocabulary, questions, length), its own checks, fresh
/// sequences, and the same task at `factor` times the length.
pub trait RecallTask: Copy + Sync {
    fn shape(&self) -> Mqar;
    fn check_task(&self) -> Result<(), InputError>;
    fn draw(&self, rng: &mut BookRng, seq: &mut MqarSequence);
    fn stretched(&self, factor: usize) -> Self;
}

impl RecallTask for Mqar {
    fn shape(&self) -> Mqar {
        *self
    }
    fn check_task(&self) -> Result<(), InputError> {
        self.check()
    }
    fn draw(&self, rng: &mut BookRng, seq: &mut MqarSequence) {
        self.sample_into(rng, seq);
    }
    fn stretched(&self, factor: usize) -> Self {
        self.longer(factor)
    }
}

impl RecallTask for Rewrite {
    fn shape(&self) -> Mqar {
        self.task
    }
    fn check_task(&self) -> Result<(), InputError> {
        self.check()
    }
    fn draw(&self, rng: &mut BookRng, seq: &mut MqarSequence) {
        self.sample_into(rng, seq);
    }
    fn stretched(&self, factor: usize) -> Self {
        Rewrite {
            task: self.task.longer(factor),
            ..*self
        }
    }
}
