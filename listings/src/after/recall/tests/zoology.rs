//! Tests of Zoology's task and the two-layer models: the task's shape,
//! the hand-written gradients against central differences in f64, the f32
//! model against the f64 one, and bad input.

use crate::after::recall::model::Mixer;
use crate::after::recall::mqar::{Mqar, MqarSequence};
use crate::after::recall::zoology::*;
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

pub(super) const SMALL: Mqar = Mqar {
    vocab: 12,
    pairs: 2,
    len: 10,
};

fn net(mixer: Mixer, d: usize) -> Net {
    Net::new(mixer, SMALL.vocab, d)
}

pub(super) fn loss(n: Net, p: &Params<f64>, seqs: &[MqarSequence]) -> f64 {
    let mut w = Work::default();
    seqs.iter()
        .map(|s| run_mqar(n, SMALL, p, s, None, &mut w).unwrap().loss)
        .sum()
}

/// Fresh weights moved away from their start, so that every gate, tap
/// and bias matters.
pub(super) fn moved(n: Net, seed: u64) -> Params<f64> {
    let mut rng = seeded(seed);
    let mut p = Params::init(&mut rng, n);
    for x in &mut p.w {
        *x += 0.3 * standard_normal(&mut rng);
    }
    p
}

/// Every weight's hand-written gradient of `n` (f64) against central
/// differences, on two small sequences, from weights moved by `seed`.
pub(super) fn gradients_match_central_differences(n: Net, seed: u64) {
    let p = moved(n, seed);
    let mut rng = seeded(seed + 10);
    let seqs: Vec<MqarSequence> =
        (0..2).map(|_| SMALL.sample(&mut rng)).collect();
    let mut g = p.zeros_like();
    let mut w = Work::default();
    for s in &seqs {
        run_mqar(n, SMALL, &p, s, Some((&mut g, 1.0)), &mut w).unwrap();
    }
    let h = 1e-6;
    for (i, &want) in g.w.iter().enumerate() {
        let (mut plus, mut minus) = (p.clone(), p.clone());
        plus.w[i] += h;
        minus.w[i] -= h;
        let got = (loss(n, &plus, &seqs) - loss(n, &minus, &seqs)) / (2.0 * h);
        assert!(
            (got - want).abs() <= 1e-6 * (1.0 + want.abs()),
            "{} d={} weight {i}: {want} vs {got}",
            n.name(),
            n.d
        );
    }
}

#[test]
fn zoology_gradients_match_central_differences() {
    for mixer in Mixer::ALL {
        for (seed, d) in [(1, 3), (2, 4)] {
            gradients_match_central_differences(net(mixer, d), seed);
        }
    }
}

/// The f32 model `n` against the f64 one on a sequence of `task` drawn
/// by `seed`: the loss to 1e-4 of itself, every gradient entry to 1e-3 of
/// the largest.
pub(super) fn f32_computes_what_f64_computes(n: Net, task: Mqar, seed: u64) {
    let mut rng = seeded(seed);
    let p: Params<f64> = Params::init(&mut rng, n);
    let p32 = Params {
        w: p.w.iter().map(|&x| x as f32).collect(),
    };
    let seq = task.sample(&mut rng);
    let (mut g64, mut g32) = (p.zeros_like(), p32.zeros_like());
    let (mut w64, mut w32) = (Work::default(), Work::default());
    let a =
        run_mqar(n, task, &p, &seq, Some((&mut g64, 1.0)), &mut w64).unwrap();
    let b =
        run_mqar(n, task, &p32, &seq, Some((&mut g32, 1.0)), &mut w32).unwrap();
    let name = n.name();
    assert!((a.loss - f64::from(b.loss)).abs() < 1e-4 * a.loss, "{name}");
    let top = g64.w.iter().fold(0.0f64, |m, v| m.max(v.abs()));
    for (x, &y) in g64.w.iter().zip(&g32.w) {
        assert!((x - f64::from(y)).abs() <= 1e-3 * top, "{name}");
    }
}

/// The task of the f32 comparisons: the committed runs' length.
pub(super) const WIDE: Mqar = Mqar {
    vocab: 64,
    pairs: 8,
    len: 64,
};

#[test]
fn the_f32_zoology_model_computes_what_the_f64_model_computes() {
    for mixer in Mixer::ALL {
        for seed in 0..2 {
            f32_computes_what_f64_computes(Net::new(mixer, 64, 16), WIDE, seed);
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

// The committed sweep (listings/data/mqar.tsv).

use crate::after::recall::zoology_study::{
    LENGTHS, LRS, Record, Run, WIDTHS, budget_line, committed, plan, spread,
    to_tsv,
};
use crate::data_file;

/// That a committed two-layer sweep holds the runs of `planned`, once
/// each and in order, with shares in [0, 1], finite losses and measured
/// times, and that its comments name the machine, the date and `budget`.
pub(super) fn holds_the_plan(
    comments: &[String],
    records: &[&Record],
    planned: &[Run],
    budget: &str,
) {
    assert_eq!(records.len(), planned.len());
    for (r, run) in records.iter().zip(planned) {
        assert_eq!(
            (r.mixer.as_str(), r.d, r.lr, r.seed),
            (run.net.name().as_str(), run.net.d, run.lr, run.seed)
        );
        assert!(r.accuracy.iter().all(|a| (0.0..=1.0).contains(a)));
        assert!(r.loss.is_finite() && r.seconds > 0.0);
    }
    let has = |prefix: &str| comments.iter().any(|c| c.starts_with(prefix));
    assert!(has("Machine: ") && has("Date: 20"));
    assert!(comments.iter().any(|c| c == budget), "the budget line");
}

#[test]
fn the_mqar_file_holds_every_planned_run_once_and_its_provenance() {
    let (comments, records) = committed();
    let records: Vec<&Record> = records.iter().collect();
    holds_the_plan(&comments, &records, &plan(), &budget_line());
}

#[test]
fn the_mqar_sweep_took_at_most_an_hour_on_its_machine() {
    let (comments, _) = committed();
    let machine = comments
        .iter()
        .find(|c| c.starts_with("Machine: "))
        .expect("a machine line");
    let minutes = data_file::wall_minutes(machine).expect("wall minutes");
    assert!(minutes <= 60.0, "{machine}");
    assert!(machine.contains("(2 threads)"), "{machine}");
}

#[test]
fn the_smallest_mqar_run_retrains_to_the_committed_numbers() {
    use crate::after::recall::zoology_study::run;
    use crate::trainers::mqar::{record, train};
    let (_, records) = committed();
    let r = run(Mixer::FixedDecay, WIDTHS[0], LRS[0], 1);
    let committed = records
        .iter()
        .find(|c| {
            (c.mixer.as_str(), c.d, c.lr, c.seed)
                == ("fixed decay", r.net.d, r.lr, 1)
        })
        .expect("the run is committed");
    let again = record(&r, train(&r).unwrap(), 0.0);
    let printed = |r: &Record| to_tsv(&[], std::slice::from_ref(r));
    let strip = |s: String| s.rsplit_once('\t').map(|(a, _)| a.to_string());
    assert_eq!(strip(printed(&again)), strip(printed(committed)));
}

/// The six rules: every mixer but softmax, the last.
const RULES: &[Mixer] = Mixer::ALL.split_last().expect("mixers").1;

/// Mean accuracy over seeds at the best rate.
fn mean(mixer: Mixer, d: usize, length: usize) -> f64 {
    spread(&committed().1, mixer, d, length)[0]
}

#[test]
fn in_zoologys_setting_softmax_answers_most_at_every_width_and_length() {
    for d in WIDTHS {
        for i in 0..LENGTHS.len() {
            let soft = mean(Mixer::Softmax, d, i);
            for &m in RULES {
                assert!(soft > mean(m, d, i), "{m:?} d = {d}, length {i}");
            }
        }
    }
}

#[test]
fn in_zoologys_setting_the_delta_rules_beat_every_other_rule() {
    let delta = [Mixer::Delta, Mixer::GatedDelta];
    for d in WIDTHS {
        for i in 0..LENGTHS.len() {
            let worst_delta = delta
                .iter()
                .map(|&m| mean(m, d, i))
                .fold(f64::INFINITY, f64::min);
            for &m in RULES.iter().filter(|m| !delta.contains(m)) {
                assert!(worst_delta > mean(m, d, i), "{m:?} d = {d}, {i}");
            }
        }
    }
}

#[test]
fn in_zoologys_setting_every_rule_answers_more_at_the_wider_width() {
    for &m in RULES {
        for i in 0..LENGTHS.len() {
            assert!(mean(m, WIDTHS[1], i) > mean(m, WIDTHS[0], i), "{m:?}");
        }
    }
}

#[test]
fn in_zoologys_setting_every_rule_answers_less_at_four_times_the_length() {
    let last = LENGTHS.len() - 1;
    for &m in RULES {
        for d in WIDTHS {
            assert!(mean(m, d, last) < mean(m, d, 0), "{m:?} d = {d}");
        }
    }
}
