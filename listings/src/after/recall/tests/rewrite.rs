//! Tests of the rewrite variant: the task's shape, its checks, the
//! answers the model reports, and the committed sweep against its plan
//! and the chapter's claims.

use crate::after::recall::model::Mixer;
use crate::after::recall::mqar::{Mqar, MqarSequence};
use crate::after::recall::rewrite::{RecallTask, Rewrite};
use crate::after::recall::rewrite_study::*;
use crate::after::recall::zoology::{Net, Params, Work, run_mqar};
use crate::data_file;
use crate::random::seeded;
use std::collections::HashMap;

const SHAPES: [(usize, usize, usize, usize); 4] = [
    (64, 8, 4, 64),
    (20, 4, 2, 20),
    (128, 8, 8, 256),
    (128, 8, 4, 64),
];

fn tasks() -> impl Iterator<Item = Rewrite> {
    SHAPES
        .into_iter()
        .map(|(vocab, pairs, rewrites, len)| Rewrite {
            task: Mqar { vocab, pairs, len },
            rewrites,
        })
}

/// Every write of the pair region (the first 2(n + r) tokens): for each
/// key, its values in order.
fn writes(task: &Rewrite, s: &MqarSequence) -> HashMap<usize, Vec<usize>> {
    let region = 2 * (task.task.pairs + task.rewrites);
    let mut seen: HashMap<usize, Vec<usize>> = HashMap::new();
    for pair in s.tokens[..region].chunks_exact(2) {
        seen.entry(pair[0]).or_default().push(pair[1]);
    }
    seen
}

#[test]
fn the_rewrite_task_writes_r_keys_twice_each_time_with_a_new_value() {
    for seed in 0..8 {
        for task in tasks() {
            task.check().unwrap();
            let s = task.sample(&mut seeded(seed));
            assert!(task.task.check_sequence(&s).is_ok());
            let w = writes(&task, &s);
            let half = task.task.vocab / 2;
            assert_eq!(w.len(), task.task.pairs, "n distinct keys");
            let twice = w.values().filter(|v| v.len() == 2).count();
            assert_eq!(twice, task.rewrites, "r keys written twice");
            assert!(w.values().all(|v| v.len() <= 2));
            let mut values: Vec<usize> =
                w.values().flatten().copied().collect();
            let count = values.len();
            values.sort();
            values.dedup();
            assert_eq!(values.len(), count, "every write a new value");
            for (&k, v) in &w {
                assert!((1..half).contains(&k));
                assert!(v.iter().all(|x| (half..task.task.vocab).contains(x)));
            }
            // The n pairs come first, then the rewrites.
            let first: Vec<usize> = s.tokens[..2 * task.task.pairs]
                .iter()
                .step_by(2)
                .copied()
                .collect();
            let mut distinct = first.clone();
            distinct.sort();
            distinct.dedup();
            assert_eq!(distinct.len(), task.task.pairs);
        }
    }
}

#[test]
fn every_rewrite_question_asks_for_its_keys_latest_value_after_its_last_write()
{
    for seed in 0..8 {
        for task in tasks() {
            let s = task.sample(&mut seeded(seed));
            let half = task.task.vocab / 2;
            let region = 2 * (task.task.pairs + task.rewrites);
            let w = writes(&task, &s);
            let mut asked = Vec::new();
            for &(at, answer) in &s.queries {
                let key = s.tokens[at];
                let latest = *w[&key].last().unwrap();
                assert_eq!(answer + half, latest, "the latest value");
                let last_write = (0..region)
                    .step_by(2)
                    .filter(|&p| s.tokens[p] == key)
                    .max()
                    .unwrap();
                assert!(at > last_write && at >= region, "{at} {last_write}");
                asked.push(key);
            }
            asked.sort();
            asked.dedup();
            assert_eq!(asked.len(), task.task.pairs, "each key asked once");
            // Noise never repeats a key, so no token reads as a write or
            // a question it is not.
            let queried: Vec<usize> = s.queries.iter().map(|q| q.0).collect();
            for (t, &tok) in s.tokens.iter().enumerate().skip(region) {
                if !queried.contains(&t) {
                    assert!(!w.contains_key(&tok), "noise at {t}");
                }
            }
            // first_values names each key's first value.
            for (i, &first) in task.first_values(&s).iter().enumerate() {
                assert_eq!(first + half, w[&s.tokens[s.queries[i].0]][0]);
            }
        }
    }
}

#[test]
fn a_rewrite_task_without_rewrites_is_zoologys_task() {
    for seed in 0..4 {
        let task = Mqar {
            vocab: 64,
            pairs: 8,
            len: 64,
        };
        let none = Rewrite { task, rewrites: 0 };
        assert_eq!(
            none.sample(&mut seeded(seed)),
            task.sample(&mut seeded(seed))
        );
    }
}

#[test]
fn a_rewrite_task_with_too_many_writes_for_its_length_or_values_is_refused() {
    let ok = Rewrite {
        task: Mqar {
            vocab: 20,
            pairs: 4,
            len: 20,
        },
        rewrites: 2,
    };
    assert!(ok.check().is_ok());
    let with = |pairs, rewrites, len, vocab| Rewrite {
        task: Mqar { vocab, pairs, len },
        rewrites,
    };
    for (bad, says) in [
        (with(4, 5, 40, 40), "at most one rewrite per key"),
        (with(4, 3, 20, 20), "room for every write"),
        (with(4, 4, 40, 14), "a new value per write"),
        (with(0, 0, 20, 20), "at least one pair"),
        (with(4, 2, 19, 20), "room for every write"),
    ] {
        let err = bad.check().expect_err("a bad task").to_string();
        assert!(err.contains(says), "{bad:?}: {err}");
        assert!(bad.check_task().is_err());
    }
}

#[test]
fn the_answers_the_model_reports_are_the_answers_it_scores() {
    let task = Rewrite {
        task: Mqar {
            vocab: 20,
            pairs: 4,
            len: 20,
        },
        rewrites: 2,
    };
    for mixer in Mixer::ALL {
        let net = Net::new(mixer, 20, 6);
        let mut rng = seeded(3);
        let p: Params<f64> = Params::init(&mut rng, net);
        let mut work = Work::default();
        for _ in 0..4 {
            let s = task.sample(&mut rng);
            let scored =
                run_mqar(net, task.task, &p, &s, None, &mut work).unwrap();
            assert_eq!(work.answers().len(), s.queries.len());
            let right = s
                .queries
                .iter()
                .zip(work.answers())
                .filter(|((_, want), got)| **got == Some(*want))
                .count();
            assert_eq!(right, scored.correct, "{mixer:?}");
        }
    }
}

// The committed sweep (listings/data/mqar-rewrite.tsv).

#[test]
fn the_rewrite_file_holds_every_planned_run_once_and_its_provenance() {
    let (comments, records) = committed();
    let runs: Vec<_> = records.iter().map(|r| &r.run).collect();
    super::zoology::holds_the_plan(&comments, &runs, &plan(), &budget_line());
    for r in &records {
        for x in r.rewritten.iter().chain(&r.old) {
            assert!((0.0..=1.0).contains(x));
        }
        for i in 0..3 {
            assert!(r.rewritten[i] + r.old[i] <= 1.0 + 1e-9);
        }
    }
}

#[test]
fn the_rewrite_sweep_took_at_most_twenty_cpu_minutes_on_its_machine() {
    let (comments, records) = committed();
    let machine = comments
        .iter()
        .find(|c| c.starts_with("Machine: "))
        .expect("a machine line");
    assert!(data_file::wall_minutes(machine).is_some(), "{machine}");
    let cpu: f64 = records.iter().map(|r| r.run.seconds).sum::<f64>() / 60.0;
    assert!(cpu > 0.0 && cpu <= 20.0, "{cpu} CPU minutes");
}

#[test]
fn the_smallest_rewrite_run_retrains_to_the_committed_numbers() {
    use crate::after::recall::zoology_study::{LRS, run};
    use crate::trainers::mqar_rewrite::{record, train};
    let (_, records) = committed();
    let r = run(Mixer::FixedDecay, WIDTHS[0], LRS[0], 1);
    let committed = records
        .iter()
        .find(|c| {
            let c = &c.run;
            (c.mixer.as_str(), c.d, c.lr, c.seed)
                == ("fixed decay", r.net.d, r.lr, 1)
        })
        .expect("the run is committed");
    let again = record(&r, train(&r).unwrap(), 0.0);
    let printed = |r: &Record| to_tsv(&[], std::slice::from_ref(r));
    let strip = |s: String| s.rsplit_once('\t').map(|(a, _)| a.to_string());
    assert_eq!(strip(printed(&again)), strip(printed(committed)));
}

// What the chapter says of the committed comparison.

/// The four rules without an erase, and the two delta rules.
const NO_ERASE: [Mixer; 4] = [
    Mixer::Sum,
    Mixer::FixedDecay,
    Mixer::ScalarDecay,
    Mixer::DiagonalGates,
];
const DELTA: [Mixer; 2] = [Mixer::Delta, Mixer::GatedDelta];
const LENGTHS: usize = 3;
/// The wider width.
const WIDE: usize = WIDTHS[1];

fn of(mixer: Mixer, d: usize) -> Means {
    means(&committed().1, mixer, d)
}

/// Zoology's task (no key written twice): mean accuracy at the best rate.
fn zoology(mixer: Mixer, d: usize, i: usize) -> f64 {
    use crate::after::recall::zoology_study as z;
    z::spread(&z::committed().1, mixer, d, i)[0]
}

#[test]
fn with_keys_written_twice_softmax_answers_most_at_every_width_and_length() {
    for d in WIDTHS {
        for i in 0..LENGTHS {
            let soft = of(Mixer::Softmax, d).all[i];
            for m in MIXERS.into_iter().filter(|&m| m != Mixer::Softmax) {
                assert!(soft > of(m, d).all[i], "{m:?} d = {d}, length {i}");
            }
        }
    }
}

#[test]
fn with_keys_written_twice_the_delta_rules_beat_every_other_rule() {
    for d in WIDTHS {
        for i in 0..LENGTHS {
            let worst_delta = DELTA
                .iter()
                .map(|&m| of(m, d).all[i])
                .fold(f64::INFINITY, f64::min);
            for m in NO_ERASE {
                assert!(worst_delta > of(m, d).all[i], "{m:?} d = {d}, {i}");
            }
        }
    }
}

#[test]
fn at_the_narrow_width_the_rules_without_an_erase_store_almost_nothing() {
    // Below one question in twenty at every length, and fewer than on
    // Zoology's task at the same width.
    let d = WIDTHS[0];
    for m in NO_ERASE {
        for i in 0..LENGTHS {
            let a = of(m, d).all[i];
            assert!(a < 0.05 && a < zoology(m, d, i), "{m:?} {i}: {a}");
        }
    }
}

#[test]
fn at_the_wide_width_the_rules_without_an_erase_miss_more_keys_written_twice() {
    for m in NO_ERASE {
        let x = of(m, WIDE);
        for i in 0..LENGTHS {
            assert!(x.twice[i] < x.once[i], "{m:?} {i}: {x:?}");
        }
    }
}

#[test]
fn at_the_wide_width_the_delta_rules_answer_keys_written_twice_as_well_as_once()
{
    // Within two hundredths, at every length.
    for m in DELTA {
        let x = of(m, WIDE);
        for i in 0..LENGTHS {
            assert!((x.twice[i] - x.once[i]).abs() <= 0.02, "{m:?} {i}: {x:?}");
        }
    }
}

#[test]
fn at_the_wide_width_most_wrong_answers_without_an_erase_are_the_old_value() {
    // At the training length: more than half of the wrong answers about
    // keys written twice are the old value for each rule without an
    // erase, fewer than one in five for each delta rule.
    for m in NO_ERASE {
        let share = of(m, WIDE).old_among_wrong(0).expect("wrong answers");
        assert!(share > 0.5, "{m:?}: {share}");
    }
    for m in DELTA {
        let share = of(m, WIDE).old_among_wrong(0).expect("wrong answers");
        assert!(share < 0.2, "{m:?}: {share}");
    }
}

#[test]
fn at_the_wide_width_the_delta_rules_lead_is_larger_on_keys_written_twice() {
    for m in DELTA {
        let (x, sum) = (of(m, WIDE), of(Mixer::Sum, WIDE));
        for i in 0..LENGTHS {
            let twice = x.twice[i] - sum.twice[i];
            let once = x.once[i] - sum.once[i];
            assert!(twice > once, "{m:?} {i}: {twice} vs {once}");
        }
    }
}

#[test]
fn over_every_question_the_delta_rules_lead_grows_only_on_longer_sequences() {
    // The lead over the sum rule, with keys written twice against
    // Zoology's task: smaller at the training length at both widths;
    // larger at two and four times it at the wide width.
    let lead = |m: Mixer, d: usize, i: usize| {
        let rewrite = of(m, d).all[i] - of(Mixer::Sum, d).all[i];
        let zoo = zoology(m, d, i) - zoology(Mixer::Sum, d, i);
        (rewrite, zoo)
    };
    for m in DELTA {
        for d in WIDTHS {
            let (rewrite, zoo) = lead(m, d, 0);
            assert!(rewrite < zoo, "{m:?} d = {d}: {rewrite} vs {zoo}");
        }
        for i in 1..LENGTHS {
            let (rewrite, zoo) = lead(m, WIDE, i);
            assert!(rewrite > zoo, "{m:?} {i}: {rewrite} vs {zoo}");
        }
    }
}

#[test]
fn with_keys_written_twice_the_gated_delta_rule_does_not_beat_the_delta_rule() {
    // Never by more than one question in a thousand.
    for d in WIDTHS {
        for i in 0..LENGTHS {
            let gated = of(Mixer::GatedDelta, d).all[i];
            let delta = of(Mixer::Delta, d).all[i];
            assert!(gated <= delta + 1e-3, "d = {d}, {i}: {gated} {delta}");
        }
    }
}
