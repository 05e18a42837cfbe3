//! The recall comparison: every mixer at every number of pairs, two seeds,
//! one width; what one run is, the plan, the data file `cargo xtask
//! recall` writes (with the crate's `trainers`), and the table the chapter
//! prints from it (output `after-recall`, [`recall_table`]).

use crate::after::recall::model::{Mixer, Shape};
use crate::after::recall::task::Task;
use crate::data_file;
use crate::table::Table;

/// The width d of every model: queries, keys and values of d entries, a
/// d × d memory.
pub const WIDTH: usize = 16;
/// Key and value symbols.
pub const SYMBOLS: usize = 64;
/// Pairs per sequence, from well below d to 4 d.
pub const PAIRS: [usize; 5] = [4, 8, 16, 32, 64];
pub const SEEDS: [u64; 2] = [1, 2];

/// How long and how a model trains.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    pub batch: usize,
    pub steps: usize,
    pub lr: f64,
    /// Sequences in the test set the accuracy is measured on.
    pub tests: usize,
}

/// One training run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Run {
    pub mixer: Mixer,
    pub shape: Shape,
    pub seed: u64,
    pub budget: Budget,
}

/// What a run ends with, on its test set.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Outcome {
    /// Share of the test set's queries answered right.
    pub accuracy: f64,
    /// Mean cross-entropy per query.
    pub loss: f64,
    /// For the delta rules, the mean write strength β_t over the test
    /// set's questions and over its pairs; none for the other mixers.
    pub beta: Option<[f64; 2]>,
}

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
    /// The delta rules' mean β_t at questions and at pairs.
    pub beta: Option<[f64; 2]>,
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
            beta: outcome.beta,
            seconds,
        }
    }
}

const HEADER: &str = "mixer\tpairs\td\tseed\taccuracy\tloss\tbeta_question\tbeta_pair\tcpu_seconds";

/// The data file: `#` comment lines (how it was made), a header, records.
pub fn to_tsv(comments: &[String], records: &[Record]) -> String {
    let lines = records.iter().map(|r| {
        let [q, p] = r.beta.map_or(["-".to_string(), "-".to_string()], |b| {
            b.map(|x| format!("{x:.6}"))
        });
        format!(
            "{}\t{}\t{}\t{}\t{:.6}\t{:.6e}\t{q}\t{p}\t{:.1}",
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
                beta: match (f.fields[6], f.fields[7]) {
                    ("-", "-") => None,
                    _ => Some([
                        f.get(6, "beta_question")?,
                        f.get(7, "beta_pair")?,
                    ]),
                },
                seconds: f.get(8, "cpu_seconds")?,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok((comments, records))
}

/// The committed results of `cargo xtask recall`.
pub const COMMITTED: &str = include_str!("../../../data/recall.tsv");

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

/// The mean over seeds of a delta rule's β_t at questions and at pairs,
/// at each number of pairs of [`PAIRS`] (none for a mixer without β_t).
pub fn mean_beta(records: &[Record], mixer: Mixer) -> Vec<Option<[f64; 2]>> {
    PAIRS
        .iter()
        .map(|&n| {
            let runs: Vec<[f64; 2]> = records
                .iter()
                .filter(|r| r.mixer == mixer.name() && r.pairs == n)
                .map(|r| r.beta)
                .collect::<Option<_>>()?;
            let count = runs.len().max(1) as f64;
            Some([0, 1].map(|i| runs.iter().map(|b| b[i]).sum::<f64>() / count))
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
        writeln!(
            f,
            "the delta rules' mean write strength β_t on the test set, at questions / at pairs"
        )?;
        let mut betas = Table::new().left("model", 14).gap("  ");
        for n in PAIRS {
            betas = betas.right(&format!("n = {n}"), 11);
        }
        for mixer in [Mixer::Delta, Mixer::GatedDelta] {
            let mut row = vec![mixer.name().to_string()];
            row.extend(mean_beta(&self.records, mixer).iter().map(|b| {
                b.map_or("-".to_string(), |[q, p]| format!("{q:.2} / {p:.2}"))
            }));
            betas.row(row);
        }
        writeln!(f, "{betas}")?;
        for line in self.comments.iter().skip(2) {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}

/// Output `after-recall`: the committed comparison.
pub fn recall_table() -> String {
    RecallTable::committed().to_string()
}
