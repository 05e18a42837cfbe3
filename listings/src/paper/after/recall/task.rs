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
        let rule = match *self {
            Task { pairs: 0, .. } => "at least one pair",
            Task { values: 0, .. } => "at least one value symbol",
            Task { keys, pairs, .. } if pairs > keys => {
                "at most one pair per key symbol"
            }
            _ => return Ok(()),
        };
        let value = if self.values == 0 { 0 } else { self.pairs };
        let name = if self.values == 0 { "values" } else { "pairs" };
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::seeded;
    use std::collections::{HashMap, HashSet};

    #[test]
    fn a_task_without_pairs_or_values_or_with_too_few_keys_is_refused() {
        let ok = Task {
            keys: 4,
            values: 3,
            pairs: 4,
        };
        assert!(ok.check().is_ok());
        for (bad, says) in [
            (Task { pairs: 0, ..ok }, "at least one pair"),
            (Task { values: 0, ..ok }, "at least one value"),
            (Task { pairs: 5, ..ok }, "one pair per key"),
        ] {
            let err = bad.check().expect_err("a bad task").to_string();
            assert!(err.contains(says), "{err}");
        }
    }

    #[test]
    fn every_pair_is_shown_once_and_asked_for_once() {
        for seed in 0..6 {
            for (keys, values, pairs) in [(64, 64, 4), (64, 8, 64), (20, 30, 7)]
            {
                let task = Task {
                    keys,
                    values,
                    pairs,
                };
                let s = task.sample(&mut seeded(seed));
                assert_eq!(s.tokens.len(), 2 * pairs);
                assert_eq!(s.answers.len(), pairs);
                let (shown, asked) = s.tokens.split_at(pairs);
                let memory: HashMap<usize, usize> = shown
                    .iter()
                    .map(|t| (t.key, t.value.expect("a shown pair")))
                    .collect();
                assert_eq!(memory.len(), pairs, "keys are distinct");
                let asked_keys: HashSet<usize> =
                    asked.iter().map(|t| t.key).collect();
                assert_eq!(asked_keys.len(), pairs, "each key asked once");
                for (t, &answer) in asked.iter().zip(&s.answers) {
                    assert_eq!(t.value, None);
                    assert_eq!(memory[&t.key], answer);
                    assert!(t.key < task.keys && answer < task.values);
                }
            }
        }
    }
}
