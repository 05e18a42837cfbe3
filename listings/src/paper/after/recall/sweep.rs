//! The recall comparison: every mixer at every number of pairs, two seeds,
//! one width; the plan, the data file `cargo xtask recall` writes, and
//! reading it back.

use crate::data_file;
use crate::measure::thread_cpu_seconds;
use crate::paper::after::recall::model::{Mixer, Shape};
use crate::paper::after::recall::task::Task;
use crate::paper::after::recall::train::{Budget, Outcome, Run, train};
use crate::table::Table;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The width d of every model: queries, keys and values of d entries, a
/// d × d memory.
pub const WIDTH: usize = 16;
/// Key and value symbols.
pub const SYMBOLS: usize = 64;
/// Pairs per sequence, from well below d to 4 d.
pub const PAIRS: [usize; 5] = [4, 8, 16, 32, 64];
pub const SEEDS: [u64; 2] = [1, 2];

/// Every run's budget.
pub fn budget() -> Budget {
    Budget {
        batch: 32,
        steps: 3000,
        lr: 3e-3,
        tests: 64,
    }
}

/// The budget as the data file records it.
pub fn budget_line() -> String {
    let b = budget();
    format!(
        "Budget: batch {}, Adam lr {}, {} steps; accuracy on {} test sequences per run.",
        b.batch, b.lr, b.steps, b.tests
    )
}

/// One run of the plan.
pub fn run(mixer: Mixer, pairs: usize, seed: u64) -> Run {
    let task = Task {
        keys: SYMBOLS,
        values: SYMBOLS,
        pairs,
    };
    Run {
        mixer,
        shape: Shape { task, d: WIDTH },
        seed,
        budget: budget(),
    }
}

/// Every run, the longest (most pairs) first.
pub fn plan() -> Vec<Run> {
    let mut runs = Vec::new();
    for &pairs in PAIRS.iter().rev() {
        for seed in SEEDS {
            for mixer in Mixer::ALL {
                runs.push(run(mixer, pairs, seed));
            }
        }
    }
    runs
}

/// One line of the data file.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub mixer: String,
    pub pairs: usize,
    pub d: usize,
    pub seed: u64,
    pub accuracy: f64,
    pub loss: f64,
    /// CPU seconds the run took.
    pub seconds: f64,
}

impl Record {
    pub fn new(run: &Run, outcome: &Outcome, seconds: f64) -> Record {
        Record {
            mixer: run.mixer.name().to_string(),
            pairs: run.shape.task.pairs,
            d: run.shape.d,
            seed: run.seed,
            accuracy: outcome.accuracy,
            loss: outcome.loss,
            seconds,
        }
    }
}

/// Train every run on `threads` threads, calling `done` after each (with
/// the runs finished so far); the records in the plan's order, or the
/// first run that failed and why.
pub fn run_all(
    runs: &[Run],
    threads: usize,
    done: impl Fn(&Record, usize) + Sync,
) -> Result<Vec<Record>, String> {
    let next = AtomicUsize::new(0);
    type Slot = Option<Result<Record, String>>;
    let out: Mutex<Vec<Slot>> = Mutex::new(vec![None; runs.len()]);
    let finished = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(run) = runs.get(i) else { break };
                    let start = thread_cpu_seconds();
                    let wall = std::time::Instant::now();
                    let outcome = train(run);
                    let seconds = match (start, thread_cpu_seconds()) {
                        (Some(a), Some(b)) => b - a,
                        _ => wall.elapsed().as_secs_f64(),
                    };
                    let record = outcome
                        .map(|o| Record::new(run, &o, seconds))
                        .map_err(|e| format!("{run:?}: {e}"));
                    let count = finished.fetch_add(1, Ordering::Relaxed) + 1;
                    if let Ok(r) = &record {
                        done(r, count);
                    }
                    out.lock().expect("no thread panicked")[i] = Some(record);
                }
            });
        }
    });
    let out = out.into_inner().expect("no thread panicked");
    out.into_iter().map(|r| r.expect("every run ran")).collect()
}

const HEADER: &str = "mixer\tpairs\td\tseed\taccuracy\tloss\tcpu_seconds";

/// The data file: `#` comment lines (how it was made), a header, records.
pub fn to_tsv(comments: &[String], records: &[Record]) -> String {
    let lines = records.iter().map(|r| {
        format!(
            "{}\t{}\t{}\t{}\t{:.6}\t{:.6e}\t{:.1}",
            r.mixer, r.pairs, r.d, r.seed, r.accuracy, r.loss, r.seconds
        )
    });
    data_file::write(comments, HEADER, lines)
}

/// Read the data file back: its comment lines and its records.
pub fn parse_tsv(text: &str) -> Result<(Vec<String>, Vec<Record>), String> {
    let (comments, lines) = data_file::read(text, HEADER)?;
    let records = lines
        .iter()
        .map(|f| {
            Ok(Record {
                mixer: f.fields[0].to_string(),
                pairs: f.get(1, "pairs")?,
                d: f.get(2, "d")?,
                seed: f.get(3, "seed")?,
                accuracy: f.get(4, "accuracy")?,
                loss: f.get(5, "loss")?,
                seconds: f.get(6, "cpu_seconds")?,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok((comments, records))
}

/// The committed results of `cargo xtask recall`.
pub const COMMITTED: &str = include_str!("../../../../data/recall.tsv");

/// The committed results, parsed.
pub fn committed() -> (Vec<String>, Vec<Record>) {
    parse_tsv(COMMITTED).expect("listings/data/recall.tsv is well formed")
}

/// The mean accuracy over seeds of one mixer at each number of pairs, in
/// the order of [`PAIRS`].
pub fn mean_accuracy(records: &[Record], mixer: Mixer) -> Vec<f64> {
    PAIRS
        .iter()
        .map(|&n| {
            let runs: Vec<f64> = records
                .iter()
                .filter(|r| r.mixer == mixer.name() && r.pairs == n)
                .map(|r| r.accuracy)
                .collect();
            runs.iter().sum::<f64>() / runs.len() as f64
        })
        .collect()
}

/// The committed comparison as the chapter prints it: each model's share
/// of test questions answered right at each number of pairs, the mean over the
/// seeds, then how and where the runs were made.
pub struct RecallTable {
    pub comments: Vec<String>,
    pub records: Vec<Record>,
}

impl RecallTable {
    pub fn committed() -> RecallTable {
        let (comments, records) = committed();
        RecallTable { comments, records }
    }
}

impl std::fmt::Display for RecallTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "share of test questions answered right, mean over seeds {SEEDS:?}; d = {WIDTH}, \
             {SYMBOLS} key and {SYMBOLS} value symbols"
        )?;
        let mut table = Table::new().left("model", 14).gap("  ");
        for n in PAIRS {
            table = table.right(&format!("n = {n}"), 7);
        }
        for mixer in Mixer::ALL {
            let mut row = vec![mixer.name().to_string()];
            row.extend(
                mean_accuracy(&self.records, mixer)
                    .iter()
                    .map(|a| format!("{a:.3}")),
            );
            table.row(row);
        }
        writeln!(f, "{table}")?;
        for line in self.comments.iter().skip(2) {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every committed run of one mixer at one size, one per seed.
    fn runs(mixer: Mixer, pairs: usize) -> Vec<Record> {
        let (_, records) = committed();
        records
            .into_iter()
            .filter(|r| r.mixer == mixer.name() && r.pairs == pairs)
            .collect()
    }

    #[test]
    fn the_committed_file_holds_every_planned_run_once_and_its_provenance() {
        let (comments, records) = committed();
        let planned = plan();
        assert_eq!(records.len(), planned.len());
        for (r, run) in records.iter().zip(&planned) {
            assert_eq!(
                (r.mixer.as_str(), r.pairs, r.d, r.seed),
                (
                    run.mixer.name(),
                    run.shape.task.pairs,
                    run.shape.d,
                    run.seed
                )
            );
            assert!((0.0..=1.0).contains(&r.accuracy) && r.loss.is_finite());
        }
        let has = |prefix: &str| comments.iter().any(|c| c.starts_with(prefix));
        assert!(has("Machine: ") && has("Date: 20"));
        // The time the runs took: the wall clock of the sweep, and each
        // run's CPU seconds.
        let machine = comments.iter().find(|c| c.starts_with("Machine: "));
        assert!(machine.and_then(|m| data_file::wall_minutes(m)).is_some());
        assert!(records.iter().all(|r| r.seconds > 0.0));
        assert!(comments.contains(&budget_line()), "the budget line");
    }

    #[test]
    fn the_recall_sweep_took_at_most_fifteen_minutes_on_its_machine() {
        let (comments, _) = committed();
        let machine = comments
            .iter()
            .find(|c| c.starts_with("Machine: "))
            .expect("a machine line");
        let minutes =
            data_file::wall_minutes(machine).expect("the wall-clock minutes");
        assert!(minutes <= 15.0, "{machine}");
        assert!(machine.contains("(2 threads)"), "{machine}");
    }

    #[test]
    fn the_smallest_run_retrains_to_the_committed_numbers() {
        let mixer = Mixer::Delta;
        let committed = &runs(mixer, PAIRS[0])[0];
        let outcome = train(&run(mixer, PAIRS[0], committed.seed)).unwrap();
        let again =
            Record::new(&run(mixer, PAIRS[0], committed.seed), &outcome, 0.0);
        let printed = |r: &Record| to_tsv(&[], std::slice::from_ref(r));
        let strip = |s: String| s.rsplit_once('\t').map(|(a, _)| a.to_string());
        assert_eq!(strip(printed(&again)), strip(printed(committed)));
    }

    /// The committed accuracy of each seed's run of `mixer` at `pairs`.
    fn per_seed(mixer: Mixer, pairs: usize) -> Vec<f64> {
        let a: Vec<f64> =
            runs(mixer, pairs).iter().map(|r| r.accuracy).collect();
        assert_eq!(a.len(), SEEDS.len());
        a
    }

    /// The six rules: every mixer but softmax, the last.
    const RULES: &[Mixer] = Mixer::ALL.split_last().expect("mixers").1;

    #[test]
    fn softmax_answers_every_test_question_at_every_n_with_both_seeds() {
        for n in PAIRS {
            for a in per_seed(Mixer::Softmax, n) {
                assert_eq!(a, 1.0, "n = {n}");
            }
        }
    }

    #[test]
    fn from_d_pairs_on_every_rule_loses_accuracy_with_each_doubling() {
        let from_d: Vec<usize> =
            PAIRS.into_iter().filter(|&n| n >= WIDTH).collect();
        assert!(from_d.len() >= 3);
        for &mixer in RULES {
            for s in 0..SEEDS.len() {
                let a: Vec<f64> =
                    from_d.iter().map(|&n| per_seed(mixer, n)[s]).collect();
                assert!(a.windows(2).all(|w| w[1] < w[0]), "{mixer:?}: {a:?}");
            }
        }
    }

    #[test]
    fn at_four_d_pairs_every_rule_answers_fewer_than_half() {
        assert!(PAIRS.contains(&(4 * WIDTH)));
        for &mixer in RULES {
            for a in per_seed(mixer, 4 * WIDTH) {
                assert!(a < 0.5, "{mixer:?}: {a}");
            }
        }
    }

    #[test]
    fn from_d_pairs_on_the_six_rules_lie_within_five_hundredths() {
        for n in PAIRS.into_iter().filter(|&n| n >= WIDTH) {
            for s in 0..SEEDS.len() {
                let a: Vec<f64> =
                    RULES.iter().map(|&m| per_seed(m, n)[s]).collect();
                let top = a.iter().fold(f64::MIN, |m, &x| m.max(x));
                let bottom = a.iter().fold(f64::MAX, |m, &x| m.min(x));
                assert!(top - bottom <= 0.05, "n = {n}: {a:?}");
            }
        }
    }

    #[test]
    fn below_d_pairs_only_the_delta_rules_miss_questions_and_with_one_seed() {
        let below: Vec<usize> =
            PAIRS.into_iter().filter(|&n| n < WIDTH).collect();
        assert!(!below.is_empty());
        for n in below {
            for mixer in Mixer::ALL {
                let a = per_seed(mixer, n);
                let best = a.iter().fold(0.0f64, |m, &x| m.max(x));
                let worst = a.iter().fold(1.0f64, |m, &x| m.min(x));
                // Every model answers at least 99% with its better seed.
                assert!(best >= 0.99, "{mixer:?} n = {n}: {a:?}");
                match mixer {
                    // The delta rules miss more than one question in ten
                    // with their other seed.
                    Mixer::Delta | Mixer::GatedDelta => {
                        assert!(worst < 0.9, "{mixer:?} n = {n}: {a:?}")
                    }
                    _ => assert!(worst >= 0.99, "{mixer:?} n = {n}: {a:?}"),
                }
            }
        }
    }
}
