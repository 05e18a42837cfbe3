//! The sweep behind the chapter's figures: which models are trained, on how
//! many keys, and the data file that records how each run ended.
//!
//! `cargo xtask retrieval` runs [`plan`] (in release mode, on every core)
//! and writes `listings/data/retrieval.tsv`; the book reads that committed
//! file while it builds, so building the book never retrains.

use crate::paper::retrieval::model::{Layer, Phi, Rule, Shape};
use crate::paper::retrieval::task::Setting;
use crate::paper::retrieval::train::{Budget, Outcome, Run, Stop, train};
use std::fmt::Write as _;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Key width of the scaled-down reproduction (the paper uses 64).
pub const D: usize = 8;

// ANCHOR: plan
/// Steps per run at most (the paper allows 100k).
pub const MAX_STEPS: usize = 30_000;

/// The optimiser and stopping rule of every run: the paper's, evaluated
/// every 1000 steps, so that ten evaluations without improvement span
/// 10,000 steps, and at most `MAX_STEPS` steps.
pub fn budget() -> Budget {
    Budget {
        eval_every: 1000,
        ..Budget::paper(MAX_STEPS)
    }
}

/// The layers compared in Setting 1 (capacity) and Setting 2 (updates).
pub fn setting1_layers() -> Vec<Layer> {
    use {Phi::*, Rule::Sum};
    vec![
        Layer::Linear(EluPlusOne, Sum),
        Layer::Linear(Dpfp(1), Sum),
        Layer::Linear(Dpfp(2), Sum),
        Layer::Linear(Dpfp(3), Sum),
        Layer::Linear(Favor(2 * D), Sum),
        Layer::Softmax,
    ]
}

pub fn setting2_layers() -> Vec<Layer> {
    use {Phi::*, Rule::*};
    vec![
        Layer::Linear(EluPlusOne, Sum),
        Layer::Linear(EluPlusOne, Delta),
        Layer::Linear(Dpfp(1), Sum),
        Layer::Linear(Dpfp(1), Delta),
        Layer::Softmax,
    ]
}

/// Numbers of keys n for each setting.
pub const SETTING1_KEYS: [usize; 8] = [4, 8, 12, 16, 24, 32, 48, 64];
pub const SETTING2_KEYS: [usize; 6] = [4, 8, 12, 16, 20, 24];

/// Every run of the sweep, one seed each.
pub fn plan() -> Vec<Run> {
    let mut runs = Vec::new();
    let settings = [
        (Setting::Distinct, setting1_layers(), &SETTING1_KEYS[..]),
        (Setting::Repeated, setting2_layers(), &SETTING2_KEYS[..]),
    ];
    for (setting, layers, keys) in settings {
        for layer in layers {
            for &n in keys {
                runs.push(Run {
                    layer,
                    setting,
                    shape: Shape::paper(n, D),
                    seed: 1,
                    budget: budget(),
                });
            }
        }
    }
    runs
}
// ANCHOR_END: plan

/// The data file's line that records the budget its runs were made with.
pub fn budget_line() -> String {
    let b = budget();
    format!(
        "Budget: batch {}, lr {}, evaluated every {} steps on {} episodes, \
         stop at loss {} or after {} evaluations without improvement or {} steps.",
        b.batch,
        b.lr,
        b.eval_every,
        b.eval_episodes,
        b.target_loss,
        b.patience,
        b.max_steps
    )
}

/// Run `runs` on `threads` threads, biggest first, calling `progress(done,
/// total, run, outcome)` as each finishes. Results come back in plan order.
pub fn run_all(
    runs: &[Run],
    threads: usize,
    progress: impl Fn(usize, usize, &Run, &Outcome) + Sync,
) -> Vec<Outcome> {
    // Long runs first, so that no thread is left with one at the end.
    let mut order: Vec<usize> = (0..runs.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(cost(&runs[i])));
    let next = AtomicUsize::new(0);
    let done = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> =
        Mutex::new(vec![None; runs.len()]);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                loop {
                    let k = next.fetch_add(1, Ordering::SeqCst);
                    let Some(&i) = order.get(k) else { break };
                    let outcome = train(&runs[i], |_, _| {});
                    let finished = done.fetch_add(1, Ordering::SeqCst) + 1;
                    progress(finished, runs.len(), &runs[i], &outcome);
                    results.lock().expect("no thread panicked")[i] =
                        Some(outcome);
                }
            });
        }
    });
    results
        .into_inner()
        .expect("no thread panicked")
        .into_iter()
        .map(|o| o.expect("every run finished"))
        .collect()
}

/// A rough relative cost of a run: sequence length times memory size.
fn cost(run: &Run) -> usize {
    let len = match run.setting {
        Setting::Distinct => run.shape.n,
        Setting::Repeated => 2 * run.shape.n,
    };
    len * run.shape.n * run.layer.width(run.shape.d)
}

/// One line of the data file.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub setting: String,
    pub layer: String,
    pub n: usize,
    pub d: usize,
    pub p: usize,
    pub best_loss: f64,
    pub steps: usize,
    pub stop: String,
}

impl Record {
    /// The record of `run` ending in `outcome`.
    pub fn new(run: &Run, outcome: &Outcome) -> Record {
        Record {
            setting: run.setting.name().to_string(),
            layer: run.layer.name(),
            n: run.shape.n,
            d: run.shape.d,
            p: run.layer.width(run.shape.d),
            best_loss: outcome.best_loss,
            steps: outcome.steps,
            stop: outcome.stop.to_string(),
        }
    }

    /// Whether the run reached the paper's target loss.
    pub fn solved(&self) -> bool {
        self.stop == Stop::Solved.to_string()
    }
}

const HEADER: &str = "setting\tlayer\tn\td\tp\tbest_loss\tsteps\tstop";

/// The data file: `#` comment lines (how it was made), a header, records.
pub fn to_tsv(comments: &[String], records: &[Record]) -> String {
    let mut out = String::new();
    for c in comments {
        let _ = writeln!(out, "# {c}");
    }
    let _ = writeln!(out, "{HEADER}");
    for r in records {
        let _ = writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}\t{:.6e}\t{}\t{}",
            r.setting, r.layer, r.n, r.d, r.p, r.best_loss, r.steps, r.stop
        );
    }
    out
}

/// Read the data file back: its comment lines and its records.
pub fn parse_tsv(text: &str) -> Result<(Vec<String>, Vec<Record>), String> {
    let mut comments = Vec::new();
    let mut records = Vec::new();
    let mut header = false;
    for (i, line) in text.lines().enumerate() {
        if let Some(c) = line.strip_prefix('#') {
            comments.push(c.trim().to_string());
        } else if !header {
            if line != HEADER {
                return Err(format!(
                    "line {}: expected the header `{HEADER}`",
                    i + 1
                ));
            }
            header = true;
        } else if !line.trim().is_empty() {
            let f: Vec<&str> = line.split('\t').collect();
            let bad =
                |what: &str| format!("line {}: bad {what} in `{line}`", i + 1);
            if f.len() != 8 {
                return Err(bad("number of fields"));
            }
            records.push(Record {
                setting: f[0].to_string(),
                layer: f[1].to_string(),
                n: f[2].parse().map_err(|_| bad("n"))?,
                d: f[3].parse().map_err(|_| bad("d"))?,
                p: f[4].parse().map_err(|_| bad("p"))?,
                best_loss: f[5].parse().map_err(|_| bad("loss"))?,
                steps: f[6].parse().map_err(|_| bad("steps"))?,
                stop: f[7].to_string(),
            });
        }
    }
    if header {
        Ok((comments, records))
    } else {
        Err("no header line".to_string())
    }
}

/// The committed results of `cargo xtask retrieval`.
pub const COMMITTED: &str = include_str!("../../../data/retrieval.tsv");

/// The committed results, parsed.
pub fn committed() -> (Vec<String>, Vec<Record>) {
    parse_tsv(COMMITTED).expect("listings/data/retrieval.tsv is well formed")
}

/// The runs of one layer in one setting, in order of n.
pub fn series<'a>(
    records: &'a [Record],
    setting: Setting,
    layer: &str,
) -> Vec<&'a Record> {
    let mut out: Vec<&Record> = records
        .iter()
        .filter(|r| r.setting == setting.name() && r.layer == layer)
        .collect();
    out.sort_by_key(|r| r.n);
    out
}

// ANCHOR: capacity
/// The largest n up to which every run of `layer` solved the task
/// (0 if the smallest n already failed).
pub fn capacity(records: &[Record], setting: Setting, layer: &str) -> usize {
    series(records, setting, layer)
        .iter()
        .take_while(|r| r.solved())
        .last()
        .map_or(0, |r| r.n)
}
// ANCHOR_END: capacity

/// What the chapter prints about the sweep: how it was made, and the
/// capacity of every layer in each setting.
pub struct Summary {
    pub comments: Vec<String>,
    pub records: Vec<Record>,
}

impl Summary {
    /// The summary of the committed data file.
    pub fn committed() -> Summary {
        let (comments, records) = committed();
        Summary { comments, records }
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for c in &self.comments {
            writeln!(f, "{c}")?;
        }
        let settings = [
            (Setting::Distinct, setting1_layers(), &SETTING1_KEYS[..]),
            (Setting::Repeated, setting2_layers(), &SETTING2_KEYS[..]),
        ];
        for (setting, layers, keys) in settings {
            writeln!(
                f,
                "\n{} (n = {:?}, d = {D}, at most {MAX_STEPS} steps):",
                setting.name(),
                keys
            )?;
            writeln!(
                f,
                "{:>14} {:>4} {:>14} {:>18}",
                "layer", "p", "solves n up to", "best loss at n max"
            )?;
            for layer in layers {
                let name = layer.name();
                let runs = series(&self.records, setting, &name);
                let last = runs.last().map_or(f64::NAN, |r| r.best_loss);
                writeln!(
                    f,
                    "{:>14} {:>4} {:>14} {:>18.4}",
                    name,
                    layer.width(D),
                    capacity(&self.records, setting, &name),
                    last
                )?;
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paper::retrieval::train::Outcome;

    fn data() -> Vec<Record> {
        committed().1
    }

    fn cap(setting: Setting, layer: Layer) -> usize {
        capacity(&data(), setting, &layer.name())
    }

    #[test]
    fn committed_results_cover_the_plan() {
        // Rerun `cargo xtask retrieval` after changing the plan.
        let records = data();
        let plan = plan();
        assert_eq!(records.len(), plan.len());
        for (r, run) in records.iter().zip(&plan) {
            assert_eq!(
                (&r.setting[..], &r.layer, r.n, r.d),
                (
                    run.setting.name(),
                    &run.layer.name(),
                    run.shape.n,
                    run.shape.d
                )
            );
            assert!(r.best_loss.is_finite() && r.steps <= MAX_STEPS);
        }
        let (comments, _) = committed();
        assert!(comments.iter().any(|c| c.starts_with("Machine:")));
        // Rerun it after changing the budget, too.
        assert!(comments.contains(&budget_line()), "{comments:?}");
    }

    #[test]
    fn capacity_grows_with_the_feature_dimension() {
        use {Phi::*, Rule::Sum};
        let caps: Vec<usize> = [EluPlusOne, Dpfp(1), Dpfp(2), Dpfp(3)]
            .into_iter()
            .map(|phi| cap(Setting::Distinct, Layer::Linear(phi, Sum)))
            .collect();
        // p = d, 2d, 4d, 6d: never fewer keys for a wider memory ...
        assert!(caps.windows(2).all(|w| w[0] <= w[1]), "{caps:?}");
        // ... and many more at the widest than at the narrowest.
        assert!(caps[3] >= 2 * caps[0].max(1), "{caps:?}");
    }

    #[test]
    fn no_sum_rule_layer_holds_many_more_keys_than_its_width() {
        for layer in setting1_layers() {
            if let Layer::Linear(_, _) = layer {
                let c = cap(Setting::Distinct, layer);
                assert!(c <= layer.width(D), "{}: {c}", layer.name());
            }
        }
    }

    #[test]
    fn each_deterministic_map_holds_between_half_and_all_of_its_width() {
        use {Phi::*, Rule::Sum};
        for phi in [EluPlusOne, Dpfp(1), Dpfp(2), Dpfp(3)] {
            let layer = Layer::Linear(phi, Sum);
            let (c, p) = (cap(Setting::Distinct, layer), layer.width(D));
            assert!(2 * c >= p && c <= p, "{}: {c} of {p}", layer.name());
        }
        // elu+1, the narrowest, holds all of it.
        let elu = Layer::Linear(EluPlusOne, Sum);
        assert_eq!(cap(Setting::Distinct, elu), elu.width(D));
    }

    #[test]
    fn dpfp_1_holds_no_more_keys_than_elu_plus_one_and_favor_fewer() {
        use {Phi::*, Rule::Sum};
        let cap1 = |phi| cap(Setting::Distinct, Layer::Linear(phi, Sum));
        assert_eq!(cap1(Dpfp(1)), cap1(EluPlusOne));
        // FAVOR+, as wide as DPFP-2, solves only the smallest size.
        assert!(cap1(Favor(2 * D)) < cap1(EluPlusOne));
        let runs = data();
        let name = Layer::Linear(Favor(2 * D), Sum).name();
        let favor = series(&runs, Setting::Distinct, &name);
        assert!(favor[0].solved() && favor[1..].iter().all(|r| !r.solved()));
    }

    #[test]
    fn softmax_solves_every_size_in_setting_1() {
        let runs = data();
        for r in series(&runs, Setting::Distinct, &Layer::Softmax.name()) {
            assert!(r.solved(), "n = {}", r.n);
        }
    }

    #[test]
    fn delta_rule_beats_the_sum_rule_when_keys_repeat() {
        let runs = data();
        for phi in [Phi::EluPlusOne, Phi::Dpfp(1)] {
            let sum = series(
                &runs,
                Setting::Repeated,
                &Layer::Linear(phi, Rule::Sum).name(),
            );
            let delta = series(
                &runs,
                Setting::Repeated,
                &Layer::Linear(phi, Rule::Delta).name(),
            );
            assert_eq!(sum.len(), delta.len());
            for (s, d) in sum.iter().zip(&delta) {
                assert!(d.best_loss < s.best_loss, "{:?} n = {}", phi, s.n);
            }
            // The sum rule solves no size; the delta rule solves the smallest.
            assert!(sum.iter().all(|r| !r.solved()));
            assert!(delta[0].solved());
        }
    }

    #[test]
    fn softmax_cannot_pick_the_latest_value_when_keys_repeat() {
        let runs = data();
        let softmax = series(&runs, Setting::Repeated, &Layer::Softmax.name());
        assert!(!softmax.is_empty());
        assert!(softmax.iter().all(|r| !r.solved()));
    }

    #[test]
    fn the_data_file_round_trips() {
        let run = plan()[0];
        let outcome = Outcome {
            best_loss: 0.012_345,
            steps: 1200,
            stop: Stop::NoImprovement,
        };
        let records = vec![Record::new(&run, &outcome)];
        let text = to_tsv(&["made by a test".to_string()], &records);
        let (comments, back) = parse_tsv(&text).unwrap();
        assert_eq!(comments, vec!["made by a test".to_string()]);
        assert_eq!(back[0].layer, records[0].layer);
        assert!((back[0].best_loss - 0.012_345).abs() < 1e-9);
        assert!(parse_tsv("no header\n").is_err());
    }
}
