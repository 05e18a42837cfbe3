//! Multi-query associative recall as Zoology defines it (Arora et al.
//! 2023, `zoology/data/multiquery_ar.py` in HazyResearch/zoology): key
//! and value symbols from two disjoint halves of the vocabulary, n pairs
//! written key, value, key, value at the start, then each key asked once
//! at a random later position, with noise tokens everywhere else. The
//! answer is the value that followed the asked key; only those positions
//! are scored.

use crate::input::InputError;
use crate::random::BookRng;
use rand::Rng;

/// Zoology's power law for where the queries fall: the i-th free slot
/// after the pairs is taken with weight (i + 1)^(a − 1), a = 0.01.
pub const POWER_A: f64 = 0.01;

// ANCHOR: mqar_task
/// The task: `vocab` symbols (keys 1..V/2, values V/2..V), `pairs` pairs
/// and sequences of `len` tokens.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mqar {
    pub vocab: usize,
    pub pairs: usize,
    pub len: usize,
}

/// One sequence: its tokens and, for each query, its position and the
/// index (0..V − V/2) of the value it asks for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct MqarSequence {
    pub tokens: Vec<usize>,
    pub queries: Vec<(usize, usize)>,
}

impl Mqar {
    /// Draw a sequence into `seq`, reusing its buffers: n distinct keys
    /// and n distinct values written in turn, each key asked once at
    /// 2n + 2g for distinct gaps g drawn by the power law, and every other
    /// token noise drawn from the symbols that are not this sequence's keys.
    pub fn sample_into(&self, rng: &mut BookRng, seq: &mut MqarSequence) {
        let (half, n) = (self.vocab / 2, self.pairs);
        seq.tokens.clear();
        seq.queries.clear();
        for _ in 0..n {
            let key = distinct(rng, 1..half, &seq.tokens, 2);
            seq.tokens.push(key);
            let value = distinct(rng, half..self.vocab, &seq.tokens[1..], 2);
            seq.tokens.push(value);
        }
        let slots = (self.len - 2 * n) / 2;
        for i in 0..n {
            let gap = loop {
                let g = power_law(rng, slots);
                if seq.queries.iter().all(|&(p, _)| p != 2 * n + 2 * g) {
                    break g;
                }
            };
            seq.queries
                .push((2 * n + 2 * gap, seq.tokens[2 * i + 1] - half));
        }
        while seq.tokens.len() < self.len {
            let noise = loop {
                let s = rng.random_range(0..self.vocab);
                if !seq.tokens[..2 * n].iter().step_by(2).any(|&k| k == s) {
                    break s;
                }
            };
            seq.tokens.push(noise);
        }
        for (i, &(at, _)) in seq.queries.iter().enumerate() {
            seq.tokens[at] = seq.tokens[2 * i];
        }
    }
}
// ANCHOR_END: mqar_task

impl Mqar {
    /// Key symbols (1..V/2: Zoology keeps symbol 0 out of the keys).
    pub fn keys(&self) -> usize {
        (self.vocab / 2).saturating_sub(1)
    }

    /// Value symbols (V/2..V).
    pub fn values(&self) -> usize {
        self.vocab - self.vocab / 2
    }

    /// The same pairs in sequences `factor` times as long (more noise).
    pub fn longer(&self, factor: usize) -> Mqar {
        Mqar {
            len: self.len * factor,
            ..*self
        }
    }

    /// At least one pair, no more pairs than key symbols, and room for
    /// the pairs and their queries: 4n ≤ len, as Zoology asserts.
    pub fn check(&self) -> Result<(), InputError> {
        let (name, value, rule) = match *self {
            Mqar { pairs: 0, .. } => ("pairs", 0, "at least one pair"),
            Mqar { pairs, .. } if pairs > self.keys() => {
                ("pairs", pairs, "at most V/2 − 1 pairs (distinct keys)")
            }
            Mqar { pairs, len, .. } if 4 * pairs > len => {
                ("len", len, "room for the pairs and queries: 4n ≤ len")
            }
            _ => return Ok(()),
        };
        Err(InputError::BadParameter { name, value, rule })
    }

    /// A fresh sequence (for a task that passes [`Mqar::check`]).
    pub fn sample(&self, rng: &mut BookRng) -> MqarSequence {
        let mut seq = MqarSequence::default();
        self.sample_into(rng, &mut seq);
        seq
    }

    /// That `seq` could be one of this task's sequences: `len` tokens of
    /// the vocabulary, n queries inside it asking for value indices.
    pub fn check_sequence(&self, seq: &MqarSequence) -> Result<(), InputError> {
        if seq.tokens.len() != self.len || seq.queries.len() != self.pairs {
            return Err(InputError::ShapeMismatch {
                left: ("tokens", [seq.tokens.len(), 1]),
                right: ("queries", [seq.queries.len(), 1]),
                rule: "len tokens and n queries",
            });
        }
        let inside = |name, index, len| match index < len {
            true => Ok(()),
            false => Err(InputError::OutOfRange { name, index, len }),
        };
        for &s in &seq.tokens {
            inside("token", s, self.vocab)?;
        }
        for &(at, value) in &seq.queries {
            inside("query position", at, self.len)?;
            inside("answer", value, self.values())?;
        }
        Ok(())
    }
}

/// A symbol of `range` that is not among every `step`-th of `taken`.
fn distinct(
    rng: &mut BookRng,
    range: std::ops::Range<usize>,
    taken: &[usize],
    step: usize,
) -> usize {
    loop {
        let s = rng.random_range(range.clone());
        if !taken.iter().step_by(step).any(|&t| t == s) {
            return s;
        }
    }
}

/// A slot in 0..slots drawn with weight (i + 1)^(a − 1).
fn power_law(rng: &mut BookRng, slots: usize) -> usize {
    let weight = |i: usize| ((i + 1) as f64).powf(POWER_A - 1.0);
    let total: f64 = (0..slots).map(weight).sum();
    let mut u = rng.random::<f64>() * total;
    for i in 0..slots {
        u -= weight(i);
        if u < 0.0 {
            return i;
        }
    }
    slots - 1
}
