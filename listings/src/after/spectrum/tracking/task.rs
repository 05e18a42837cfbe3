//! The two state-tracking tasks: a string of uniform random bits after a
//! start token, and at every bit the number of ones so far modulo 2
//! (parity) or modulo 3.

use crate::input::InputError;
use crate::random::BookRng;
use rand::Rng;

/// The start token's id; a bit b is the token 1 + b.
pub const BOS: usize = 0;
/// Token ids: the start token and the two bits.
pub const TOKENS: usize = 3;

// ANCHOR: tracking_task
/// What is counted: the ones so far, modulo 2 or modulo 3.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Task {
    Parity,
    ModThree,
}

impl Task {
    /// The classes of a label.
    pub fn modulus(self) -> usize {
        match self {
            Task::Parity => 2,
            Task::ModThree => 3,
        }
    }

    /// `bits` random bits after the start token, and the label of every
    /// bit: the ones up to and including it, modulo the task's modulus.
    pub fn sample(self, rng: &mut BookRng, bits: usize) -> Sequence {
        let mut tokens = vec![BOS];
        let (mut labels, mut ones) = (Vec::with_capacity(bits), 0);
        for _ in 0..bits {
            let bit = usize::from(rng.random_bool(0.5));
            ones += bit;
            tokens.push(1 + bit);
            labels.push(ones % self.modulus());
        }
        Sequence { tokens, labels }
    }
}
// ANCHOR_END: tracking_task

impl Task {
    pub const ALL: [Task; 2] = [Task::Parity, Task::ModThree];

    pub fn name(self) -> &'static str {
        match self {
            Task::Parity => "parity",
            Task::ModThree => "mod 3",
        }
    }
}

/// One sequence: the start token then the bits' tokens, and one label per
/// bit (so one fewer than tokens).
#[derive(Clone, Debug, PartialEq)]
pub struct Sequence {
    pub tokens: Vec<usize>,
    pub labels: Vec<usize>,
}

impl Sequence {
    /// A start token first, then bits, one label per bit, each a class
    /// of the task.
    pub fn check(&self, task: Task) -> Result<(), InputError> {
        let (len, n) = (self.tokens.len(), self.labels.len());
        if len != n + 1 || n == 0 {
            return Err(InputError::ShapeMismatch {
                left: ("tokens", [len, 1]),
                right: ("labels", [n, 1]),
                rule: "a start token, at least one bit, one label per bit",
            });
        }
        if self.tokens[0] != BOS {
            return Err(InputError::BadParameter {
                name: "first token",
                value: self.tokens[0],
                rule: "the start token, 0",
            });
        }
        if let Some(t) = self.tokens[1..].iter().position(|&x| x == BOS) {
            return Err(InputError::BadParameter {
                name: "token",
                value: t + 1,
                rule: "a bit, 1 or 2, after the start",
            });
        }
        if let Some(t) = self.tokens.iter().position(|&x| x >= TOKENS) {
            return Err(InputError::OutOfRange {
                name: "token",
                index: self.tokens[t],
                len: TOKENS,
            });
        }
        if let Some(t) = self.labels.iter().position(|&x| x >= task.modulus()) {
            return Err(InputError::OutOfRange {
                name: "label",
                index: self.labels[t],
                len: task.modulus(),
            });
        }
        Ok(())
    }
}
