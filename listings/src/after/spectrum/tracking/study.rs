//! The tracking study: both tasks, the delta rule, diagonal gates and
//! DeltaProduct with two writes, both ranges, five seeds, one width; what one run is, the plan, the data file `cargo
//! xtask tracking` writes (with the crate's `trainers`), and the table the
//! chapter prints from it (output `spectrum-tracking`).

use crate::after::spectrum::tracking::model::{Kind, Model, Range};
use crate::after::spectrum::tracking::task::Task;
use crate::data_file;
use crate::table::Table;

/// The width d of every model: a d × d memory.
pub const WIDTH: usize = 4;
/// Training strings have 1 to this many bits.
pub const TRAIN_MAX: usize = 40;
/// The test lengths, in bits: one inside the training lengths, the
/// longest training length, then longer.
pub const LENGTHS: [usize; 5] = [10, 40, 64, 128, 256];
pub const SEEDS: [u64; 5] = [1, 2, 3, 4, 5];

/// How long and how a model trains.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    pub batch: usize,
    pub steps: usize,
    pub lr: f64,
    /// The L2 penalty on the read-out's weights.
    pub decay: f64,
    /// Test strings per length.
    pub tests: usize,
}

/// Every run's budget.
pub fn budget() -> Budget {
    Budget {
        batch: 16,
        steps: 6000,
        lr: 3e-2,
        decay: 1e-2,
        tests: 256,
    }
}

/// The budget as the data file records it.
pub fn budget_line() -> String {
    let b = budget();
    format!(
        "Budget: batch {}, Adam lr {}, {} steps, L2 {} on the read-out, f64; training strings of 1 to {TRAIN_MAX} bits; accuracy on the last bit of {} test strings per length.",
        b.batch, b.lr, b.steps, b.decay, b.tests
    )
}

/// One training run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Run {
    pub model: Model,
    pub seed: u64,
    pub budget: Budget,
}

/// The transitions of the study with their writes per token n_h: the
/// delta rule, diagonal gates, and DeltaProduct with two writes.
pub const RULES: [(Kind, usize); 3] =
    [(Kind::Delta, 1), (Kind::Diagonal, 1), (Kind::Delta, 2)];

/// The name of a transition with n_h writes per token.
pub fn rule_name(kind: Kind, writes: usize) -> String {
    match writes {
        1 => kind.name().to_string(),
        n => format!("{} x{n}", kind.name()),
    }
}

/// One run of the plan.
pub fn run(
    task: Task,
    (kind, writes): (Kind, usize),
    range: Range,
    seed: u64,
) -> Run {
    Run {
        model: Model {
            kind,
            range,
            writes,
            task,
            d: WIDTH,
        },
        seed,
        budget: budget(),
    }
}

/// The word problem of S3 is run with DeltaProduct at one, two and three
/// writes per token, with eigenvalues in [−1, 1].
pub const S3_WRITES: [usize; 3] = [1, 2, 3];

/// Every variant of the study: task, transition with its writes per
/// token, range.
pub fn variants() -> Vec<(Task, (Kind, usize), Range)> {
    let mut all = Vec::new();
    for task in [Task::Parity, Task::ModThree] {
        for rule in RULES {
            for range in Range::ALL {
                all.push((task, rule, range));
            }
        }
    }
    for writes in S3_WRITES {
        all.push((Task::S3, (Kind::Delta, writes), Range::Extended));
    }
    all
}

/// Every run: each variant of [`variants`] with every seed.
pub fn plan() -> Vec<Run> {
    let mut runs = Vec::new();
    for (task, rule, range) in variants() {
        for seed in SEEDS {
            runs.push(run(task, rule, range, seed));
        }
    }
    runs
}

/// One line of the data file.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub task: String,
    pub kind: String,
    pub range: String,
    pub d: usize,
    pub seed: u64,
    /// The share of test strings whose last bit is labelled right, at
    /// each of [`LENGTHS`].
    pub accuracy: Vec<f64>,
    /// CPU seconds the run took.
    pub seconds: f64,
}

impl Record {
    pub fn new(run: &Run, accuracy: Vec<f64>, seconds: f64) -> Record {
        let m = run.model;
        Record {
            task: m.task.name().to_string(),
            kind: rule_name(m.kind, m.writes),
            range: m.range.name().to_string(),
            d: m.d,
            seed: run.seed,
            accuracy,
            seconds,
        }
    }

    /// Whether this is a run of `task`, `rule` and `range`.
    pub fn is(&self, task: Task, rule: (Kind, usize), range: Range) -> bool {
        self.task == task.name()
            && self.kind == rule_name(rule.0, rule.1)
            && self.range == range.name()
    }

    /// The accuracy at `bits`, one of [`LENGTHS`].
    pub fn at(&self, bits: usize) -> f64 {
        let i = LENGTHS.iter().position(|&n| n == bits);
        self.accuracy[i.expect("one of the test lengths")]
    }
}

fn header() -> String {
    let lengths: Vec<String> =
        LENGTHS.iter().map(|n| format!("acc_{n}")).collect();
    format!(
        "task\tkind\trange\td\tseed\t{}\tcpu_seconds",
        lengths.join("\t")
    )
}

/// The data file: `#` comment lines (how it was made), a header, records.
pub fn to_tsv(comments: &[String], records: &[Record]) -> String {
    let lines = records.iter().map(|r| {
        let acc: Vec<String> =
            r.accuracy.iter().map(|a| format!("{a:.6}")).collect();
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{:.1}",
            r.task,
            r.kind,
            r.range,
            r.d,
            r.seed,
            acc.join("\t"),
            r.seconds
        )
    });
    data_file::write(comments, &header(), lines)
}

/// Read the data file back: its comment lines and its records.
pub fn parse_tsv(text: &str) -> Result<(Vec<String>, Vec<Record>), String> {
    let (comments, lines) = data_file::read(text, &header())?;
    let n = LENGTHS.len();
    let records = lines
        .iter()
        .map(|f| {
            Ok(Record {
                task: f.fields[0].to_string(),
                kind: f.fields[1].to_string(),
                range: f.fields[2].to_string(),
                d: f.get(3, "d")?,
                seed: f.get(4, "seed")?,
                accuracy: (0..n)
                    .map(|i| f.get(5 + i, "accuracy"))
                    .collect::<Result<_, String>>()?,
                seconds: f.get(5 + n, "cpu_seconds")?,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok((comments, records))
}

/// The committed results of `cargo xtask tracking`.
pub const COMMITTED: &str = include_str!("../../../../data/tracking.tsv");

/// The committed results, parsed.
pub fn committed() -> (Vec<String>, Vec<Record>) {
    parse_tsv(COMMITTED).expect("listings/data/tracking.tsv is well formed")
}

/// The committed runs of one task, transition and range, one per seed.
pub fn runs_of(task: Task, rule: (Kind, usize), range: Range) -> Vec<Record> {
    let (_, records) = committed();
    records
        .into_iter()
        .filter(|r| r.is(task, rule, range))
        .collect()
}

/// Output `spectrum-tracking`: for each task, transition and range, the
/// accuracy on the last bit at each test length, every seed's, then how
/// and where the runs were made.
pub fn tracking_table() -> String {
    let (comments, _) = committed();
    let mut out = format!(
        "share of test strings whose last label is right, lowest-highest\n\
         over seeds {SEEDS:?}; trained on 1 to {TRAIN_MAX} bits (for S3,\n\
         permutations), d = {WIDTH}\n"
    );
    let mut table = Table::new()
        .left("task", 6)
        .left("rule", 8)
        .left("range", 6)
        .gap("  ");
    for n in LENGTHS {
        table = table.right(&format!("{n} bits"), 9);
    }
    for (task, rule, range) in variants() {
        let runs = runs_of(task, rule, range);
        let mut row = vec![
            task.name().to_string(),
            rule_name(rule.0, rule.1),
            range.name().to_string(),
        ];
        for n in LENGTHS {
            let a: Vec<f64> = runs.iter().map(|r| r.at(n)).collect();
            let lo = a.iter().fold(f64::INFINITY, |m, &x| m.min(x));
            let hi = a.iter().fold(f64::NEG_INFINITY, |m, &x| m.max(x));
            row.push(format!("{lo:.2}-{hi:.2}"));
        }
        table.row(row);
    }
    out.push_str(&table.to_string());
    out.push('\n');
    for line in comments.iter().skip(2) {
        out.push_str(line);
        out.push('\n');
    }
    out
}
