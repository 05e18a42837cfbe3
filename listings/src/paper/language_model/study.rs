//! The language-model study: six fast-weight layers, three seeds, one
//! budget; what one run is, the plan, the data file `cargo xtask lm`
//! writes (with the crate's `trainers::lm`), and what the chapter prints
//! from it.

use super::Mixer;
use crate::data_file;
use crate::phi::FeatureMap as Phi;

/// The model's sizes.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Shape {
    /// Tokens: every byte value.
    pub vocab: usize,
    /// Width of the residual stream.
    pub d: usize,
    pub heads: usize,
    /// Width of the feed-forward layer's hidden layer.
    pub ff: usize,
    pub layers: usize,
}

/// Every model's shape: bytes in, two layers of width 64, four heads of
/// width 16.
pub const SHAPE: Shape = Shape {
    vocab: 256,
    d: 64,
    heads: 4,
    ff: 256,
    layers: 2,
};

/// How long and how a model trains and is scored.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Budget {
    /// Sequences per step, each `context` bytes predicted.
    pub batch: usize,
    /// Bytes of context; the state starts empty in every window.
    pub context: usize,
    pub steps: usize,
    pub lr: f64,
    /// The largest norm of the gradient Adam is given.
    pub clip: f64,
    /// Validation after the first this many steps (a point a test can
    /// retrain to), then after every `every` steps.
    pub first: usize,
    pub every: usize,
    /// Windows of the validation text scored each time, and of the test
    /// text at the end (evenly spaced, the same for every run).
    pub valid_windows: usize,
    pub test_windows: usize,
}

/// Every run's budget.
pub fn budget() -> Budget {
    Budget {
        batch: 16,
        context: 64,
        steps: 1000,
        lr: 5e-3,
        clip: 1.0,
        first: 10,
        every: 100,
        valid_windows: 256,
        test_windows: 1024,
    }
}

pub const SEEDS: [u64; 3] = [1, 2, 3];

/// The paper's comparison: softmax; the sum rule with elu+1 and with
/// DPFP-1, both with the attention normaliser; the delta rule with sum
/// normalisation (the paper's layer) and its two ablations.
pub const MIXERS: [(&str, Mixer); 6] = [
    ("softmax", Mixer::Softmax),
    ("sum elu+1", Mixer::Sum(Phi::EluPlusOne)),
    ("sum dpfp-1", Mixer::Sum(Phi::Dpfp(1))),
    (
        "delta",
        Mixer::Delta {
            phi: Phi::Dpfp(1),
            sum_norm: true,
            attn_norm: false,
        },
    ),
    (
        "delta, no sum norm",
        Mixer::Delta {
            phi: Phi::Dpfp(1),
            sum_norm: false,
            attn_norm: false,
        },
    ),
    (
        "delta + attn norm",
        Mixer::Delta {
            phi: Phi::Dpfp(1),
            sum_norm: true,
            attn_norm: true,
        },
    ),
];

/// The name of `mixer` in the plan.
pub fn name(mixer: Mixer) -> &'static str {
    MIXERS
        .iter()
        .find(|(_, m)| *m == mixer)
        .map_or("other", |(n, _)| n)
}

/// One training run.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Run {
    pub mixer: Mixer,
    pub shape: Shape,
    pub seed: u64,
    pub budget: Budget,
}

/// Every run of the study: each layer, each seed.
pub fn plan() -> Vec<Run> {
    MIXERS
        .iter()
        .flat_map(|&(_, mixer)| {
            SEEDS.map(|seed| Run {
                mixer,
                shape: SHAPE,
                seed,
                budget: budget(),
            })
        })
        .collect()
}

/// The budget as the data file records it.
pub fn budget_line() -> String {
    let b = budget();
    let s = SHAPE;
    format!(
        "Scale: bytes with a learned position embedding, {} layers of width {} ({} heads, feed-forward {}), context {} bytes (state not carried between windows); batch {}, {} steps, Adam lr {}, gradient norm clipped at {}, f32; validation bits per byte on {} windows after {} steps and every {} steps, test on {} windows.",
        s.layers,
        s.d,
        s.heads,
        s.ff,
        b.context,
        b.batch,
        b.steps,
        b.lr,
        b.clip,
        b.valid_windows,
        b.first,
        b.every,
        b.test_windows
    )
}

/// What a run ends with.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub name: String,
    pub seed: u64,
    pub parameters: usize,
    /// The step whose loss or gradient was not finite, if one was.
    pub diverged_at: Option<usize>,
    /// (step, validation bits per byte) at every evaluation before any
    /// divergence.
    pub curve: Vec<(usize, f64)>,
    /// Test bits per byte at the end (None if the run diverged).
    pub test: Option<f64>,
    /// CPU seconds the run took.
    pub seconds: f64,
}

pub const HEADER: &str = "model\tseed\tparameters\tdiverged_at\tvalid_curve\ttest_bits_per_byte\tseconds";

/// The data file: comments, header, one line per run.
pub fn to_tsv(comments: &[String], records: &[Record]) -> String {
    let lines = records.iter().map(|r| {
        let curve: Vec<String> =
            r.curve.iter().map(|(s, b)| format!("{s}:{b:.4}")).collect();
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{:.1}",
            r.name,
            r.seed,
            r.parameters,
            r.diverged_at.map_or("-".to_string(), |s| s.to_string()),
            curve.join(","),
            r.test.map_or("diverged".to_string(), |t| format!("{t:.4}")),
            r.seconds
        )
    });
    data_file::write(comments, HEADER, lines)
}

/// The comments and records of a data file.
pub fn parse(text: &str) -> Result<(Vec<String>, Vec<Record>), String> {
    let (comments, rows) = data_file::read(text, HEADER)?;
    let mut records = Vec::new();
    for r in &rows {
        let diverged_at = match r.fields[3] {
            "-" => None,
            _ => Some(r.get(3, "diverged_at")?),
        };
        let mut curve = Vec::new();
        for point in r.fields[4].split(',').filter(|p| !p.is_empty()) {
            let (s, b) = point.split_once(':').ok_or(r.bad("curve"))?;
            let s = s.parse().map_err(|_| r.bad("curve step"))?;
            let b = b.parse().map_err(|_| r.bad("curve value"))?;
            curve.push((s, b));
        }
        let test = match r.fields[5] {
            "diverged" => None,
            _ => Some(r.get(5, "test")?),
        };
        records.push(Record {
            name: r.fields[0].to_string(),
            seed: r.get(1, "seed")?,
            parameters: r.get(2, "parameters")?,
            diverged_at,
            curve,
            test,
            seconds: r.get(6, "seconds")?,
        });
    }
    Ok((comments, records))
}

/// The committed results of `cargo xtask lm`.
pub const COMMITTED: &str = include_str!("../../../data/lm.tsv");

/// The committed results, parsed.
pub fn committed() -> (Vec<String>, Vec<Record>) {
    parse(COMMITTED).expect("listings/data/lm.tsv parses")
}

/// The committed test bits per byte of one layer, one per seed that did
/// not diverge.
pub fn test_scores(name: &str) -> Vec<f64> {
    committed()
        .1
        .iter()
        .filter(|r| r.name == name)
        .filter_map(|r| r.test)
        .collect()
}

/// Output `lm-results`: each layer's parameters, its test bits per byte
/// over the seeds (min, median, max), its last validation point, and
/// where its runs diverged; the provenance lines after.
pub fn results_table() -> String {
    use crate::summary::Spread;
    use crate::table::Table;
    let (comments, records) = committed();
    let mut t = Table::new()
        .left("layer", 20)
        .right("params", 7)
        .right("test bits/byte: min", 20)
        .right("median", 7)
        .right("max", 7)
        .right("diverged at step", 17);
    for (name, _) in MIXERS {
        let runs: Vec<&Record> =
            records.iter().filter(|r| r.name == name).collect();
        let tests = test_scores(name);
        let (lo, mid, hi) = match tests.is_empty() {
            true => ("-".into(), "-".into(), "-".into()),
            false => {
                let s = Spread::of(&tests);
                let f = |x: f64| format!("{x:.3}");
                (f(s.min), f(s.median), f(s.max))
            }
        };
        let diverged: Vec<String> = runs
            .iter()
            .filter_map(|r| r.diverged_at.map(|s| s.to_string()))
            .collect();
        let diverged = match diverged.is_empty() {
            true => "never".to_string(),
            false => diverged.join(", "),
        };
        t.row([
            name.to_string(),
            runs.first().map_or(0, |r| r.parameters).to_string(),
            lo,
            mid,
            hi,
            diverged,
        ]);
    }
    let mut out = t.to_string();
    for c in comments.iter().skip(2) {
        out.push_str(&format!("\n{c}"));
    }
    out
}
