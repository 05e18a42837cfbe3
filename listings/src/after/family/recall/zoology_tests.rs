//! Tests of Zoology's task and the two-layer models: the task's shape,
//! the hand-written gradients against central differences in f64, the f32
//! model against the f64 one, and bad input.

use crate::after::family::recall::model::Mixer;
use crate::after::family::recall::mqar::{Mqar, MqarSequence};
use crate::after::family::recall::zoology::*;
use crate::paper::retrieval::adam::Weights;
use crate::random::{seeded, standard_normal};
use std::collections::HashMap;

#[test]
fn zoology_task_writes_each_pair_once_and_asks_each_key_once_later() {
    for seed in 0..8 {
        for (vocab, pairs, len) in [(64, 8, 64), (20, 4, 16), (128, 8, 256)] {
            let task = Mqar { vocab, pairs, len };
            task.check().unwrap();
            let s = task.sample(&mut seeded(seed));
            assert!(task.check_sequence(&s).is_ok());
            let half = vocab / 2;
            let pairs_seen: HashMap<usize, usize> = (0..pairs)
                .map(|i| (s.tokens[2 * i], s.tokens[2 * i + 1]))
                .collect();
            assert_eq!(pairs_seen.len(), pairs, "distinct keys");
            for (&k, &v) in &pairs_seen {
                assert!((1..half).contains(&k) && (half..vocab).contains(&v));
            }
            let mut asked = Vec::new();
            for &(at, value) in &s.queries {
                assert!(at >= 2 * pairs && (at - 2 * pairs) % 2 == 0);
                let key = s.tokens[at];
                assert_eq!(pairs_seen[&key], value + half);
                asked.push(key);
            }
            asked.sort();
            asked.dedup();
            assert_eq!(asked.len(), pairs, "each key asked once");
            // Noise never repeats one of the sequence's keys.
            let queried: Vec<usize> = s.queries.iter().map(|q| q.0).collect();
            for (t, &tok) in s.tokens.iter().enumerate().skip(2 * pairs) {
                if !queried.contains(&t) {
                    assert!(!pairs_seen.contains_key(&tok), "noise at {t}");
                }
            }
        }
    }
}

#[test]
fn zoology_queries_fall_early_more_often_than_late() {
    // The power law puts more queries in the first half of the free
    // slots than in the second, at every length tested.
    for len in [64, 128, 256] {
        let task = Mqar {
            vocab: 64,
            pairs: 4,
            len,
        };
        let mut rng = seeded(len as u64);
        let (mut early, mut late) = (0, 0);
        for _ in 0..500 {
            for (at, _) in task.sample(&mut rng).queries {
                match at < 2 * 4 + (len - 8) / 2 {
                    true => early += 1,
                    false => late += 1,
                }
            }
        }
        assert!(early > 2 * late, "{len}: {early} vs {late}");
    }
}

#[test]
fn a_zoology_task_without_room_or_pairs_is_refused() {
    let ok = Mqar {
        vocab: 16,
        pairs: 4,
        len: 16,
    };
    assert!(ok.check().is_ok());
    for bad in [
        Mqar { pairs: 0, ..ok },
        Mqar { pairs: 8, ..ok },
        Mqar { len: 15, ..ok },
    ] {
        assert!(bad.check().is_err(), "{bad:?}");
    }
}

const SMALL: Mqar = Mqar {
    vocab: 12,
    pairs: 2,
    len: 10,
};

fn net(mixer: Mixer, d: usize) -> Net {
    Net {
        mixer,
        vocab: SMALL.vocab,
        d,
    }
}

fn loss(n: Net, p: &Params<f64>, seqs: &[MqarSequence]) -> f64 {
    let mut w = Work::default();
    seqs.iter()
        .map(|s| run_mqar(n, SMALL, p, s, None, &mut w).unwrap().loss)
        .sum()
}

/// Fresh weights moved away from their start, so that every gate, tap
/// and bias matters.
fn moved(n: Net, seed: u64) -> Params<f64> {
    let mut rng = seeded(seed);
    let mut p = Params::init(&mut rng, n);
    for x in &mut p.w {
        *x += 0.3 * standard_normal(&mut rng);
    }
    p
}

#[test]
fn zoology_gradients_match_central_differences() {
    for mixer in Mixer::ALL {
        for (seed, d) in [(1, 3), (2, 4)] {
            let n = net(mixer, d);
            let p = moved(n, seed);
            let mut rng = seeded(seed + 10);
            let seqs: Vec<MqarSequence> =
                (0..2).map(|_| SMALL.sample(&mut rng)).collect();
            let mut g = p.zeros_like();
            let mut w = Work::default();
            for s in &seqs {
                run_mqar(n, SMALL, &p, s, Some((&mut g, 1.0)), &mut w)
                    .unwrap();
            }
            let h = 1e-6;
            for (i, &want) in g.w.iter().enumerate() {
                let (mut plus, mut minus) = (p.clone(), p.clone());
                plus.w[i] += h;
                minus.w[i] -= h;
                let got =
                    (loss(n, &plus, &seqs) - loss(n, &minus, &seqs)) / (2.0 * h);
                assert!(
                    (got - want).abs() <= 1e-6 * (1.0 + want.abs()),
                    "{mixer:?} d={d} weight {i}: {want} vs {got}"
                );
            }
        }
    }
}

#[test]
fn the_f32_zoology_model_computes_what_the_f64_model_computes() {
    let task = Mqar {
        vocab: 64,
        pairs: 8,
        len: 64,
    };
    for mixer in Mixer::ALL {
        for seed in 0..2 {
            let n = Net {
                mixer,
                vocab: 64,
                d: 16,
            };
            let mut rng = seeded(seed);
            let p: Params<f64> = Params::init(&mut rng, n);
            let p32 = Params {
                w: p.w.iter().map(|&x| x as f32).collect(),
            };
            let seq = task.sample(&mut rng);
            let (mut g64, mut g32) = (p.zeros_like(), p32.zeros_like());
            let mut w64 = Work::default();
            let mut w32 = Work::default();
            let a = run_mqar(n, task, &p, &seq, Some((&mut g64, 1.0)), &mut w64)
                .unwrap();
            let b =
                run_mqar(n, task, &p32, &seq, Some((&mut g32, 1.0)), &mut w32)
                    .unwrap();
            assert!(
                (a.loss - f64::from(b.loss)).abs() < 1e-4 * a.loss,
                "{mixer:?}"
            );
            let top = g64.w.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            for (x, &y) in g64.w.iter().zip(&g32.w) {
                assert!((x - f64::from(y)).abs() <= 1e-3 * top, "{mixer:?}");
            }
        }
    }
}

#[test]
fn bad_zoology_weights_and_sequences_are_errors_never_a_panic_or_a_nan() {
    for mixer in Mixer::ALL {
        let n = net(mixer, 3);
        let p = moved(n, 1);
        let seq = SMALL.sample(&mut seeded(2));
        let mut w = Work::default();
        let mut short = p.clone();
        short.w.pop();
        let mut nan = p.clone();
        nan.w[5] = f64::NAN;
        let mut huge = p.clone();
        huge.w.iter_mut().for_each(|x| *x *= 1e300);
        for bad in [&short, &nan, &huge] {
            match run_mqar(n, SMALL, bad, &seq, None, &mut w) {
                Ok(s) => assert!(s.loss.is_finite()),
                Err(e) => assert!(!e.to_string().is_empty()),
            }
        }
        let mut wrong = seq.clone();
        wrong.tokens[3] = SMALL.vocab;
        assert!(run_mqar(n, SMALL, &p, &wrong, None, &mut w).is_err());
        let mut wrong = seq.clone();
        wrong.queries[0].1 = 6;
        assert!(run_mqar(n, SMALL, &p, &wrong, None, &mut w).is_err());
        let mut wrong = seq.clone();
        wrong.tokens.pop();
        assert!(run_mqar(n, SMALL, &p, &wrong, None, &mut w).is_err());
        let other = Mqar { vocab: 14, ..SMALL };
        assert!(run_mqar(n, other, &p, &seq, None, &mut w).is_err());
        let zero = Net { d: 0, ..n };
        assert!(run_mqar(zero, SMALL, &p, &seq, None, &mut w).is_err());
    }
}
