//! The state-tracking tasks: a string of uniform random bits after a
//! start token, and at every bit the number of ones so far modulo 2
//! (parity) or modulo 3; and the word problem of S3, a string of random
//! permutations of three things, labelled with their running product.

use crate::input::InputError;
use crate::random::BookRng;
use rand::Rng;

/// The start token's id; a bit b is the token 1 + b, permutation i of
/// [`PERMUTATIONS`] the token 1 + i.
pub const BOS: usize = 0;

/// The six permutations of {0, 1, 2}, the identity first: p[x] is where
/// p sends x.
pub const PERMUTATIONS: [[usize; 3]; 6] = [
    [0, 1, 2],
    [1, 0, 2],
    [0, 2, 1],
    [2, 1, 0],
    [1, 2, 0],
    [2, 0, 1],
];

/// The index in [`PERMUTATIONS`] of a, then b (first a, then b).
pub fn then(a: usize, b: usize) -> usize {
    let (a, b) = (PERMUTATIONS[a], PERMUTATIONS[b]);
    let c = [b[a[0]], b[a[1]], b[a[2]]];
    PERMUTATIONS
        .iter()
        .position(|&p| p == c)
        .expect("S3 is closed")
}

// ANCHOR: tracking_task
/// What is tracked: the ones so far, modulo 2 or modulo 3, or the
/// running product of permutations of three things (S3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Task {
    Parity,
    ModThree,
    S3,
}

impl Task {
    /// The classes of a label: the modulus, or the six permutations.
    pub fn modulus(self) -> usize {
        match self {
            Task::Parity => 2,
            Task::ModThree => 3,
            Task::S3 => 6,
        }
    }

    /// `bits` random bits after the start token, and the label of every
    /// bit: the ones up to and including it, modulo the task's modulus
    /// (for S3, `bits` random permutations and their running products).
    pub fn sample(self, rng: &mut BookRng, bits: usize) -> Sequence {
        if self == Task::S3 {
            return words_of_s3(rng, bits);
        }
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

/// `n` uniform random permutations after the start token, each labelled
/// with the product of those up to it, in order.
fn words_of_s3(rng: &mut BookRng, n: usize) -> Sequence {
    let (mut tokens, mut labels, mut product) = (vec![BOS], Vec::new(), 0);
    for _ in 0..n {
        let g = rng.random_range(0..PERMUTATIONS.len());
        product = then(product, g);
        tokens.push(1 + g);
        labels.push(product);
    }
    Sequence { tokens, labels }
}

impl Task {
    pub const ALL: [Task; 3] = [Task::Parity, Task::ModThree, Task::S3];

    pub fn name(self) -> &'static str {
        match self {
            Task::Parity => "parity",
            Task::ModThree => "mod 3",
            Task::S3 => "S3",
        }
    }

    /// Token ids: the start token, then the bits or the permutations.
    pub fn tokens(self) -> usize {
        match self {
            Task::S3 => 1 + PERMUTATIONS.len(),
            _ => 3,
        }
    }
}

/// One sequence: the start token then the bits' (or permutations')
/// tokens, and one label per bit (so one fewer than tokens).
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
                rule: "a bit or a permutation after the start",
            });
        }
        let tokens = task.tokens();
        if let Some(t) = self.tokens.iter().position(|&x| x >= tokens) {
            return Err(InputError::OutOfRange {
                name: "token",
                index: self.tokens[t],
                len: tokens,
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
