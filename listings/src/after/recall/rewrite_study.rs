//! The rewrite variant's comparison: every mixer of Zoology's comparison,
//! trained on sequences in which half of the keys are written twice, at
//! the same budget, rates, seeds and test lengths; the data file `cargo
//! xtask mqar --rewrite` writes, and the table the chapter prints (output
//! `after-mqar-rewrite`).

use crate::after::recall::model::Mixer;
use crate::after::recall::rewrite::Rewrite;
use crate::after::recall::zoology_study::{
    self as z, BUDGET, LEN, LENGTHS, LRS, PAIRS, Run, SEEDS, TASK, VOCAB, run,
};
use crate::data_file;
use crate::table::Table;

/// Keys written twice: half of the n pairs, so that every sequence asks
/// for keys written once and keys written twice alike.
pub const REWRITES: usize = PAIRS / 2;

/// The task: Zoology's, with [`REWRITES`] of its keys written again.
pub const REWRITE: Rewrite = Rewrite {
    task: TASK,
    rewrites: REWRITES,
};

/// The mixers compared: the six rules and softmax attention, as in
/// Zoology's comparison (listed here, so that the committed file keeps
/// its plan if mixers are added to [`Mixer::ALL`]).
pub const MIXERS: [Mixer; 7] = [
    Mixer::Sum,
    Mixer::FixedDecay,
    Mixer::ScalarDecay,
    Mixer::DiagonalGates,
    Mixer::Delta,
    Mixer::GatedDelta,
    Mixer::Softmax,
];

/// Model widths d.
pub const WIDTHS: [usize; 2] = [16, 32];

/// Every run, the widest first, in the order of Zoology's plan.
pub fn plan() -> Vec<Run> {
    let mut runs = Vec::new();
    for &d in WIDTHS.iter().rev() {
        for seed in SEEDS {
            for lr in LRS {
                for mixer in MIXERS {
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
        "Budget: {VOCAB} symbols, {PAIRS} pairs of which {REWRITES} are written again, training length {LEN}; batch {}, {} Adam steps; accuracy on {} test sequences at each of {LENGTHS:?} times the training length.",
        b.batch, b.steps, b.tests
    )
}

/// One line of the data file.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    /// The run and its accuracy over every question at each length.
    pub run: z::Record,
    /// Share of questions about rewritten keys answered right.
    pub rewritten: [f64; 3],
    /// Share of questions about rewritten keys answered with the old
    /// (first) value.
    pub old: [f64; 3],
}

const HEADER: &str = "mixer\td\tlr\tseed\tacc_1x\tacc_2x\tacc_4x\ttwice_1x\ttwice_2x\ttwice_4x\told_1x\told_2x\told_4x\tloss\tcpu_seconds";

/// The data file: `#` comment lines (how it was made), a header, records.
pub fn to_tsv(comments: &[String], records: &[Record]) -> String {
    let lines = records.iter().map(|rec| {
        let r = &rec.run;
        let [a, b, c] = r.accuracy;
        let [d, e, f] = rec.rewritten;
        let [g, h, i] = rec.old;
        format!(
            "{}\t{}\t{:e}\t{}\t{a:.6}\t{b:.6}\t{c:.6}\t{d:.6}\t{e:.6}\t{f:.6}\t{g:.6}\t{h:.6}\t{i:.6}\t{:.6e}\t{:.1}",
            r.mixer, r.d, r.lr, r.seed, r.loss, r.seconds
        )
    });
    data_file::write(comments, HEADER, lines)
}

/// Read the data file back: its comment lines and its records.
pub fn parse_tsv(text: &str) -> Result<(Vec<String>, Vec<Record>), String> {
    let (comments, lines) = data_file::read(text, HEADER)?;
    let three = |f: &data_file::Fields, at: usize, what: &str| {
        Ok::<_, String>([
            f.get(at, what)?,
            f.get(at + 1, what)?,
            f.get(at + 2, what)?,
        ])
    };
    let records = lines
        .iter()
        .map(|f| {
            Ok(Record {
                run: z::Record {
                    mixer: f.fields[0].to_string(),
                    d: f.get(1, "d")?,
                    lr: f.get(2, "lr")?,
                    seed: f.get(3, "seed")?,
                    accuracy: three(f, 4, "accuracy")?,
                    loss: f.get(13, "loss")?,
                    seconds: f.get(14, "cpu_seconds")?,
                },
                rewritten: three(f, 7, "twice")?,
                old: three(f, 10, "old")?,
            })
        })
        .collect::<Result<_, String>>()?;
    Ok((comments, records))
}

/// The committed results of `cargo xtask mqar --rewrite`.
pub const COMMITTED: &str = include_str!("../../../data/mqar-rewrite.tsv");

/// The committed results, parsed.
pub fn committed() -> (Vec<String>, Vec<Record>) {
    parse_tsv(COMMITTED).expect("listings/data/mqar-rewrite.tsv is well formed")
}

/// The runs of one mixer and width at its best learning rate (the
/// highest mean accuracy over seeds at the training length, the rule of
/// Zoology's comparison), and that rate.
pub fn best(records: &[Record], mixer: Mixer, d: usize) -> (f64, Vec<&Record>) {
    let runs: Vec<z::Record> = records.iter().map(|r| r.run.clone()).collect();
    let (lr, _) = z::best(&runs, mixer, d);
    let at = records
        .iter()
        .filter(|r| {
            r.run.mixer == mixer.name() && r.run.d == d && r.run.lr == lr
        })
        .collect();
    (lr, at)
}

/// Means over seeds at the best rate, at each of [`LENGTHS`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Means {
    /// Every question.
    pub all: [f64; 3],
    /// Questions about keys written once.
    pub once: [f64; 3],
    /// Questions about keys written twice.
    pub twice: [f64; 3],
    /// Questions about keys written twice answered with the old value.
    pub old: [f64; 3],
}

impl Means {
    /// The share of wrong answers about rewritten keys that are the old
    /// value, at length index `i`; `None` when none is wrong.
    pub fn old_among_wrong(&self, i: usize) -> Option<f64> {
        let wrong = 1.0 - self.twice[i];
        (wrong > 0.0).then(|| self.old[i] / wrong)
    }
}

/// The means of one mixer and width over its seeds at the best rate.
pub fn means(records: &[Record], mixer: Mixer, d: usize) -> Means {
    let (_, runs) = best(records, mixer, d);
    let count = runs.len().max(1) as f64;
    let mean = |f: &dyn Fn(&Record) -> [f64; 3]| {
        let mut m = [0.0; 3];
        for r in &runs {
            for (m, x) in m.iter_mut().zip(f(r)) {
                *m += x / count;
            }
        }
        m
    };
    let all = mean(&|r| r.run.accuracy);
    let twice = mean(&|r| r.rewritten);
    let (n, r) = (PAIRS as f64, REWRITES as f64);
    let once = std::array::from_fn(|i| (n * all[i] - r * twice[i]) / (n - r));
    Means {
        all,
        once,
        twice,
        old: mean(&|r| r.old),
    }
}

/// The committed comparison as the chapter prints it.
pub struct RewriteTable {
    pub comments: Vec<String>,
    pub records: Vec<Record>,
}

impl std::fmt::Display for RewriteTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "share of test questions answered right, mean over seeds {SEEDS:?} at the best rate of {LRS:?}; \
             {PAIRS} pairs, {REWRITES} keys written twice, trained at length {LEN}"
        )?;
        writeln!(
            f,
            "all: every question at each length; once, twice: questions about keys written once, twice; \
             old: the share of wrong answers about keys written twice that are the old value (all at length {LEN})"
        )?;
        let mut table = Table::new().left("model", 14).gap("  ");
        table = table.right("d", 3).right("lr", 6);
        for k in LENGTHS {
            table = table.right(&format!("{}", k * LEN), 6);
        }
        table = table.right("once", 6).right("twice", 6).right("old", 6);
        for d in WIDTHS {
            for mixer in MIXERS {
                let (lr, _) = best(&self.records, mixer, d);
                let m = means(&self.records, mixer, d);
                let mut row = vec![
                    mixer.name().to_string(),
                    d.to_string(),
                    lr.to_string(),
                ];
                row.extend(m.all.iter().map(|a| format!("{a:.3}")));
                row.push(format!("{:.3}", m.once[0]));
                row.push(format!("{:.3}", m.twice[0]));
                row.push(match m.old_among_wrong(0) {
                    Some(s) => format!("{s:.3}"),
                    None => "-".to_string(),
                });
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

/// Output `after-mqar-rewrite`: the committed comparison.
pub fn rewrite_table() -> String {
    let (comments, records) = committed();
    RewriteTable { comments, records }.to_string()
}
