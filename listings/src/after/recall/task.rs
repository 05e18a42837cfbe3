//! Multi-query associative recall (MQAR; Arora et al. 2023), shaped for
//! one layer: each of the first n tokens shows a key and its value
//! together, as the retrieval task of Part II does; each of the next n
//! shows a key alone and asks for its value. Every pair is asked for once,
//! in a random order.

use crate::input::InputError;
use crate::random::BookRng;
use rand::Rng;
use rand::seq::{IndexedRandom, SliceRandom};

// ANCHOR: recall_task
/// The task's vocabulary and length: `keys` key symbols, `values` value
/// symbols, `pairs` pairs shown (then as many queries).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Task {
    pub keys: usize,
    pub values: usize,
    pub pairs: usize,
}

/// One token: a key, and the value shown with it (none at a query).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Token {
    pub key: usize,
    pub value: Option<usize>,
}

/// One sequence: `tokens` (2n of them) and, for each of the last n, the
/// value it asks for.
#[derive(Clone, Debug)]
pub struct Sequence {
    pub tokens: Vec<Token>,
    pub answers: Vec<usize>,
}

impl Task {
    /// At least one pair, at most one per key symbol, and at least one
    /// value symbol.
    pub fn check(&self) -> Result<(), InputError> {
        let (name, value, rule) = match *self {
            Task { pairs: 0, .. } => ("pairs", 0, "at least one pair"),
            Task { values: 0, .. } => {
                ("values", 0, "at least one value symbol")
            }
            Task { keys, pairs, .. } if pairs > keys => {
                ("pairs", pairs, "at most one pair per key symbol")
            }
            _ => return Ok(()),
        };
        Err(InputError::BadParameter { name, value, rule })
    }

    /// A random sequence: n distinct keys, each with a value drawn with
    /// replacement, then the n keys again in a fresh order (for a task
    /// that passes [`Task::check`]).
    pub fn sample(&self, rng: &mut BookRng) -> Sequence {
        let all: Vec<usize> = (0..self.keys).collect();
        let keys: Vec<usize> =
            all.choose_multiple(rng, self.pairs).copied().collect();
        let values: Vec<usize> = keys
            .iter()
            .map(|_| rng.random_range(0..self.values))
            .collect();
        let mut order: Vec<usize> = (0..self.pairs).collect();
        order.shuffle(rng);
        let shown = keys.iter().zip(&values).map(|(&key, &value)| Token {
            key,
            value: Some(value),
        });
        let asked = order.iter().map(|&i| Token {
            key: keys[i],
            value: None,
        });
        Sequence {
            tokens: shown.chain(asked).collect(),
            answers: order.iter().map(|&i| values[i]).collect(),
        }
    }
}
// ANCHOR_END: recall_task
