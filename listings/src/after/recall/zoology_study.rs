//! The recall comparison in Zoology's setting: every mixer at two widths,
//! three learning rates and three seeds; what one run is, the plan, the
//! data file `cargo xtask mqar` writes (with the crate's `trainers`), the
//! best learning rate per mixer and width as Zoology keeps it, and the
//! table the chapter prints (output `after-mqar`).

use crate::after::recall::model::Mixer;
use crate::after::recall::mqar::Mqar;
use crate::after::recall::zoology::Net;
use crate::data_file;
use crate::table::Table;

/// Symbols: keys 1..V/2 and values V/2..V.
pub const VOCAB: usize = 128;
/// Pairs per sequence.
pub const PAIRS: usize = 8;
/// Training length; the test lengths are [`LENGTHS`] times it.
pub const LEN: usize = 64;
/// Test sequences 1, 2 and 4 times the training length: the same pairs,
/// more noise, queries spread further.
pub const LENGTHS: [usize; 3] = [1, 2, 4];
/// Model widths d (the memory of a rule is d × d per layer).
pub const WIDTHS: [usize; 2] = [16, 32];
/// Adam's learning rates; the best is kept per mixer and width.
pub const LRS: [f64; 3] = [1e-3, 3e-3, 1e-2];
pub const SEEDS: [u64; 3] = [1, 2, 3];

/// How long a model trains and how it is tested.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    pub batch: usize,
    pub steps: usize,
    /// Test sequences at each length.
    pub tests: usize,
}

/// Every run's budget.
pub const BUDGET: Budget = Budget {
    batch: 16,
    steps: 600,
    tests: 64,
};

/// The task the models train on.
pub const TASK: Mqar = Mqar {
    vocab: VOCAB,
    pairs: PAIRS,
    len: LEN,
};

/// One training run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Run {
    pub net: Net,
    pub lr: f64,
    pub seed: u64,
    pub budget: Budget,
}

/// One run of the plan.
pub fn run(mixer: Mixer, d: usize, lr: f64, seed: u64) -> Run {
    Run {
        net: Net::new(mixer, VOCAB, d),
        lr,
        seed,
        budget: BUDGET,
    }
}

/// Every run, the widest first.
pub fn plan() -> Vec<Run> {
    let mut runs = Vec::new();
    for &d in WIDTHS.iter().rev() {
        for seed in SEEDS {
            for lr in LRS {
                for mixer in Mixer::ALL {
                    runs.push(run(mixer, d, lr, seed));
                }
            }
        }
    }
    runs
}

/// The budget as the data file records it.
pub fn budget_line() -> String {
    let b = BUDGET;
    format!(
        "Budget: {VOCAB} symbols, {PAIRS} pairs, training length {LEN}; batch {}, {} Adam steps; accuracy on {} test sequences at each of {LENGTHS:?} times the training length.",
        b.batch, b.steps, b.tests
    )
}

/// One line of the data file: a run and its accuracy at each length.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub mixer: String,
    pub d: usize,
    pub lr: f64,
    pub seed: u64,
    /// Share of queries answered right at each of [`LENGTHS`].
    pub accuracy: [f64; 3],
    /// Mean cross-entropy per query at the training length.
    pub loss: f64,
    /// CPU seconds the run took.
    pub seconds: f64,
}

const HEADER: &str =
    "mixer\td\tlr\tseed\tacc_1x\tacc_2x\tacc_4x\tloss\tcpu_seconds";

/// The data file: `#` comment lines (how it was made), a header, records.
pub fn to_tsv(comments: &[String], records: &[Record]) -> String {
    let lines = records.iter().map(|r| {
        let [a, b, c] = r.accuracy;
        format!(
            "{}\t{}\t{:e}\t{}\t{a:.6}\t{b:.6}\t{c:.6}\t{:.6e}\t{:.1}",
            r.mixer, r.d, r.lr, r.seed, r.loss, r.seconds
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
                d: f.get(1, "d")?,
                lr: f.get(2, "lr")?,
                seed: f.get(3, "seed")?,
                accuracy: [
                    f.get(4, "acc_1x")?,
                    f.get(5, "acc_2x")?,
                    f.get(6, "acc_4x")?,
                ],
                loss: f.get(7, "loss")?,
                seconds: f.get(8, "cpu_seconds")?,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok((comments, records))
}

/// The committed results of `cargo xtask mqar`.
pub const COMMITTED: &str = include_str!("../../../data/mqar.tsv");

/// The committed results, parsed.
pub fn committed() -> (Vec<String>, Vec<Record>) {
    parse_tsv(COMMITTED).expect("listings/data/mqar.tsv is well formed")
}

/// The runs of one mixer and width at its best learning rate (the
/// highest mean accuracy over seeds at the training length, as Zoology
/// keeps the best rate of each model and width), and that rate.
pub fn best<'a>(
    records: &'a [Record],
    mixer: Mixer,
    d: usize,
) -> (f64, Vec<&'a Record>) {
    let at = |lr: f64| -> Vec<&'a Record> {
        records
            .iter()
            .filter(|r| r.mixer == mixer.name() && r.d == d && r.lr == lr)
            .collect()
    };
    let mean = |rs: &[&Record]| {
        rs.iter().map(|r| r.accuracy[0]).sum::<f64>() / rs.len().max(1) as f64
    };
    let lr = LRS
        .into_iter()
        .max_by(|&a, &b| mean(&at(a)).total_cmp(&mean(&at(b))))
        .expect("three rates");
    (lr, at(lr))
}

/// Mean, lowest and highest accuracy over seeds at length index `i`, at
/// the best learning rate.
pub fn spread(
    records: &[Record],
    mixer: Mixer,
    d: usize,
    i: usize,
) -> [f64; 3] {
    let (_, runs) = best(records, mixer, d);
    let acc: Vec<f64> = runs.iter().map(|r| r.accuracy[i]).collect();
    let mean = acc.iter().sum::<f64>() / acc.len().max(1) as f64;
    let lo = acc.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = acc.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    [mean, lo, hi]
}

/// The committed comparison as the chapter prints it.
pub struct MqarTable {
    pub comments: Vec<String>,
    pub records: Vec<Record>,
}

impl std::fmt::Display for MqarTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "share of test queries answered right, mean over seeds {SEEDS:?} at the best rate of {LRS:?}; \
             {PAIRS} pairs, trained at length {LEN}"
        )?;
        let mut table = Table::new().left("model", 14).gap("  ");
        table = table.right("d", 3).right("lr", 6);
        for k in LENGTHS {
            table = table.right(&format!("{}", k * LEN), 6);
        }
        for d in WIDTHS {
            for mixer in Mixer::ALL {
                let (lr, _) = best(&self.records, mixer, d);
                let mut row = vec![
                    mixer.name().to_string(),
                    d.to_string(),
                    lr.to_string(),
                ];
                for i in 0..LENGTHS.len() {
                    let [mean, _, _] = spread(&self.records, mixer, d, i);
                    row.push(format!("{mean:.3}"));
                }
                table.row(row);
            }
        }
        writeln!(f, "{table}")?;
        for line in self.comments.iter().skip(2) {
            writeln!(f, "{line}")?;
        }
        Ok(())
    }
}

/// Output `after-mqar`: the committed comparison.
pub fn mqar_table() -> String {
    let (comments, records) = committed();
    MqarTable { comments, records }.to_string()
}
