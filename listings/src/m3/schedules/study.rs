//! The studies "Two faces of one computation" prints: the chunkwise form
//! against the other two, what each form holds as N grows, and each form
//! timed on the machine that builds the book; their parameters, and one
//! function per output.

use super::{linear_attention_chunkwise, loglog_slope};
use crate::input::InputError;
use crate::m3::cost::study::{bytes, group_digits};
use crate::m3::cost::{fixed_state_floats, score_matrix_floats};
use crate::m3::delete_softmax::{
    linear_attention_memory_first, linear_attention_scores_first,
};
use crate::m3::fast_weight_memory::{
    linear_attention_parallel, linear_attention_recurrent,
};
use crate::measure::{Clock, Machine, time_once};
use crate::memo::once;
use crate::phi::elu_plus_one;
use crate::random::{randn, seeded};
use crate::table::Table;
use ndarray::{Array2, ArrayRef2};
use std::fmt;

/// Lengths, chunk sizes and seeds of the chapter's chunkwise table.
pub const CHUNKWISE_LENGTHS: [usize; 4] = [1, 12, 100, 1000];
pub const CHUNKWISE_CHUNKS: [usize; 4] = [1, 7, 64, 4096];
pub const CHUNKWISE_SEEDS: u64 = 3;

/// Lengths (2⁸ to 2¹⁶, four times longer from row to row), widths p and
/// m, chunk size and bytes per float of the memory table.
pub const MEMORY_LENGTHS: [u64; 5] =
    [1 << 8, 1 << 10, 1 << 12, 1 << 14, 1 << 16];
pub const MEMORY_P: u64 = 32;
pub const MEMORY_M: u64 = 32;
pub const MEMORY_CHUNK: u64 = 64;
pub const MEMORY_BYTES_PER_FLOAT: u64 = 8;

/// Output `schedules-chunkwise`.
pub fn schedules_chunkwise() -> String {
    chapter_chunkwise_table().to_string()
}

/// Output `schedules-memory`.
pub fn schedules_memory() -> String {
    chapter_memory_table().to_string()
}

/// The chapter's chunkwise table.
pub fn chapter_chunkwise_table() -> ChunkwiseTable {
    chunkwise_study(&CHUNKWISE_LENGTHS, &CHUNKWISE_CHUNKS, CHUNKWISE_SEEDS)
}

/// The chapter's memory table.
pub fn chapter_memory_table() -> MemoryTable {
    memory_table(
        &MEMORY_LENGTHS,
        MEMORY_P,
        MEMORY_M,
        MEMORY_CHUNK,
        MEMORY_BYTES_PER_FLOAT,
    )
}

/// The chunkwise form against the other two: for each length and each
/// chunk size, the largest row-relative difference over the seeds from
/// the recurrent form and from the parallel form (φ = elu+1, random
/// q, k: (N, 8), v: (N, 8)).
pub struct ChunkwiseTable {
    pub seeds: u64,
    pub chunks: Vec<usize>,
    /// (N, differences for each chunk size).
    pub rows: Vec<(usize, Vec<f64>)>,
}

/// Run the chunkwise form at every length and chunk size, seeds 0..seeds.
pub fn chunkwise_study(
    lengths: &[usize],
    chunks: &[usize],
    seeds: u64,
) -> ChunkwiseTable {
    use crate::linalg::worst_row_relative_difference as gap;
    let rows = lengths
        .iter()
        .map(|&n| {
            let mut worst = vec![0.0_f64; chunks.len()];
            for seed in 0..seeds {
                let mut rng = seeded(seed);
                let phi_q = elu_plus_one(&randn(&mut rng, n, 8));
                let phi_k = elu_plus_one(&randn(&mut rng, n, 8));
                let v = randn(&mut rng, n, 8);
                let rec = linear_attention_recurrent(&phi_q, &phi_k, &v)
                    .expect("shapes agree");
                let par = linear_attention_parallel(&phi_q, &phi_k, &v)
                    .expect("shapes agree");
                for (w, &c) in worst.iter_mut().zip(chunks) {
                    let o = linear_attention_chunkwise(&phi_q, &phi_k, &v, c)
                        .expect("shapes agree, c ≥ 1");
                    *w = w.max(gap(&o, &rec)).max(gap(&o, &par));
                }
            }
            (n, worst)
        })
        .collect();
    ChunkwiseTable {
        seeds,
        chunks: chunks.to_vec(),
        rows,
    }
}

impl fmt::Display for ChunkwiseTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "phi = elu+1, d = m = 8, seeds 0..{}; largest |row difference| / \
             |row|\nof the chunkwise form from the recurrent and the \
             parallel forms",
            self.seeds
        )?;
        let mut table = Table::new().right("N", 6);
        for c in &self.chunks {
            table = table.right(&format!("C = {c}"), 9);
        }
        for (n, worst) in &self.rows {
            let cells = worst.iter().map(|w| format!("{w:.1e}"));
            table.row(std::iter::once(n.to_string()).chain(cells));
        }
        write!(f, "{table}")
    }
}

/// The two header lines of a table with one column per form: the
/// non-causal and causal groups, then N (in a column `first` wide) and the
/// forms' names.
fn form_table(
    f: &mut fmt::Formatter<'_>,
    first: usize,
) -> Result<Table, fmt::Error> {
    let titles =
        format!("{:>first$}  {:^26}  {:^40}", "", "non-causal", "causal");
    writeln!(f, "{}", titles.trim_end())?;
    let mut table = Table::new().right("N", first);
    for form in FORMS {
        table = table.right(form.name(), 12);
    }
    Ok(table)
}

/// A schedule of linear attention that the timing study measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Non-causal, (Φ_Q Φ_Kᵀ) V: builds N × N scores.
    ScoresFirst,
    /// Non-causal, Φ_Q (Φ_Kᵀ V): builds S once.
    MemoryFirst,
    /// Causal, tril(Φ_Q Φ_Kᵀ) V: builds N × N scores.
    Parallel,
    /// Causal, one token at a time, carrying S and z.
    Recurrent,
    /// Causal, chunks of C tokens, carrying S and z between chunks.
    Chunkwise,
}

/// Every form, in the order the tables and the figure show them.
pub const FORMS: [Form; 5] = [
    Form::ScoresFirst,
    Form::MemoryFirst,
    Form::Parallel,
    Form::Recurrent,
    Form::Chunkwise,
];

impl Form {
    /// A short name for tables and legends.
    pub fn name(self) -> &'static str {
        match self {
            Form::ScoresFirst => "scores first",
            Form::MemoryFirst => "memory first",
            Form::Parallel => "parallel N×N",
            Form::Recurrent => "recurrent",
            Form::Chunkwise => "chunkwise",
        }
    }

    /// Whether query t sees only keys j ≤ t.
    pub fn causal(self) -> bool {
        !matches!(self, Form::ScoresFirst | Form::MemoryFirst)
    }

    /// Run this form on φ(Q), φ(K), V (chunk size `chunk` if chunkwise).
    pub fn run(
        self,
        phi_q: &ArrayRef2<f64>,
        phi_k: &ArrayRef2<f64>,
        v: &ArrayRef2<f64>,
        chunk: usize,
    ) -> Result<Array2<f64>, InputError> {
        match self {
            Form::ScoresFirst => linear_attention_scores_first(phi_q, phi_k, v),
            Form::MemoryFirst => linear_attention_memory_first(phi_q, phi_k, v),
            Form::Parallel => linear_attention_parallel(phi_q, phi_k, v),
            Form::Recurrent => linear_attention_recurrent(phi_q, phi_k, v),
            Form::Chunkwise => {
                linear_attention_chunkwise(phi_q, phi_k, v, chunk)
            }
        }
    }

    /// Floats the form holds besides its inputs and its outputs: the
    /// N × N scores, or the state S: (m, p) and z: (p), plus the c × c
    /// scores of one chunk for the chunkwise form.
    pub fn working_floats(self, n: u64, p: u64, m: u64, chunk: u64) -> u64 {
        match self {
            Form::ScoresFirst | Form::Parallel => score_matrix_floats(n),
            Form::MemoryFirst | Form::Recurrent => fixed_state_floats(p, m),
            Form::Chunkwise => {
                score_matrix_floats(chunk.min(n)) + fixed_state_floats(p, m)
            }
        }
    }
}

/// One length of the memory table.
pub struct MemoryRow {
    pub n: u64,
    /// Floats held by each form of [`FORMS`], in order.
    pub floats: [u64; 5],
}

/// What each form holds as N grows: widths p and m, chunks of `chunk`.
pub struct MemoryTable {
    pub p: u64,
    pub m: u64,
    pub chunk: u64,
    pub bytes_per_float: u64,
    pub rows: Vec<MemoryRow>,
}

/// The memory table at each length, for floats of `bytes_per_float`.
pub fn memory_table(
    lengths: &[u64],
    p: u64,
    m: u64,
    chunk: u64,
    bytes_per_float: u64,
) -> MemoryTable {
    let rows = lengths
        .iter()
        .map(|&n| MemoryRow {
            n,
            floats: FORMS.map(|f| f.working_floats(n, p, m, chunk)),
        })
        .collect();
    MemoryTable {
        p,
        m,
        chunk,
        bytes_per_float,
        rows,
    }
}

impl fmt::Display for MemoryTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "bytes held besides inputs and outputs; p = {}, m = {}, C = {}, \
             {} bytes per float",
            self.p, self.m, self.chunk, self.bytes_per_float
        )?;
        let mut table = form_table(f, 9)?;
        for r in &self.rows {
            let cells =
                r.floats.iter().map(|&x| bytes(x * self.bytes_per_float));
            table.row(std::iter::once(group_digits(r.n)).chain(cells));
        }
        write!(f, "{table}")
    }
}

/// What the timing study runs: lengths, widths, chunk size, repetitions.
pub struct TimingConfig {
    pub lengths: &'static [usize],
    /// Width d of queries and keys (p = d with elu+1) and m of values.
    pub d: usize,
    pub m: usize,
    pub chunk: usize,
    /// Each form runs this many times at each length; the study keeps the
    /// median.
    pub reps: usize,
    pub seed: u64,
}

/// The timing study of the chapter: small enough to run in about a second
/// while the book builds.
pub const TIMING: TimingConfig = TimingConfig {
    lengths: &[256, 512, 1024, 2048],
    d: 32,
    m: 32,
    chunk: 64,
    reps: 3,
    seed: 0,
};

/// One length of the timing study.
pub struct TimingRow {
    pub n: usize,
    /// Median seconds of each form of [`FORMS`], in order.
    pub seconds: [f64; 5],
}

/// Every form timed at every length, side by side in one run.
pub struct TimingStudy {
    pub d: usize,
    pub m: usize,
    pub chunk: usize,
    pub reps: usize,
    pub seed: u64,
    pub clock: Clock,
    pub machine: Machine,
    pub rows: Vec<TimingRow>,
}

impl TimingStudy {
    /// The points (N, seconds) of one form.
    pub fn curve(&self, form: Form) -> Vec<(f64, f64)> {
        let i = FORMS.iter().position(|&f| f == form).expect("in FORMS");
        self.rows
            .iter()
            .map(|r| (r.n as f64, r.seconds[i]))
            .collect()
    }

    /// The fitted log-log slope of one form's curve.
    pub fn slope(&self, form: Form) -> f64 {
        loglog_slope(&self.curve(form))
    }

    /// Time of `slow` over time of `fast` at the largest length.
    pub fn ratio_at_largest_n(&self, slow: Form, fast: Form) -> f64 {
        let last = |f| self.curve(f).last().map_or(f64::NAN, |p| p.1);
        last(slow) / last(fast)
    }
}

/// Time every form at every length of `config` on the same random inputs
/// (φ = elu+1, computed before any clock starts) on this thread, and keep
/// the median of each (see [`timing_rows`]).
pub fn timing_study(config: &TimingConfig) -> TimingStudy {
    let clock = Clock::best();
    let rows = timing_rows(config, |form, [phi_q, phi_k, v]| {
        time_once(clock, || {
            form.run(phi_q, phi_k, v, config.chunk)
                .expect("the shapes agree")
        })
    });
    TimingStudy {
        d: config.d,
        m: config.m,
        chunk: config.chunk,
        reps: config.reps,
        seed: config.seed,
        clock,
        machine: Machine::now(),
        rows,
    }
}

/// The rows of the timing study, with `time` timing one call of a form on
/// the inputs of one length. The study runs `reps` rounds, and each round
/// times every form at every length once, in turn, so that a slow moment
/// of the machine touches one sample of many cells rather than every
/// sample of one; each cell keeps the median of its `reps` samples.
pub fn timing_rows(
    config: &TimingConfig,
    mut time: impl FnMut(Form, &[Array2<f64>; 3]) -> f64,
) -> Vec<TimingRow> {
    let inputs: Vec<[Array2<f64>; 3]> = config
        .lengths
        .iter()
        .map(|&n| {
            let mut rng = seeded(config.seed);
            let phi_q = elu_plus_one(&randn(&mut rng, n, config.d));
            let phi_k = elu_plus_one(&randn(&mut rng, n, config.d));
            [phi_q, phi_k, randn(&mut rng, n, config.m)]
        })
        .collect();
    let mut samples = vec![[(); 5].map(|_| Vec::new()); inputs.len()];
    for _ in 0..config.reps {
        for (qkv, cells) in inputs.iter().zip(&mut samples) {
            for (&form, times) in FORMS.iter().zip(cells) {
                times.push(time(form, qkv));
            }
        }
    }
    config
        .lengths
        .iter()
        .zip(&samples)
        .map(|(&n, cells)| TimingRow {
            n,
            seconds: [0, 1, 2, 3, 4].map(|i| median(&cells[i])),
        })
        .collect()
}

fn median(xs: &[f64]) -> f64 {
    crate::summary::Spread::of(xs).median
}

impl TimingStudy {
    /// Where, when and how the study was measured, on two lines.
    pub fn provenance(&self) -> String {
        format!(
            "measured {} on {} ({} cores), one thread;\n{}, median of {} runs",
            self.machine.date,
            self.machine.cpu,
            self.machine.cores,
            self.clock.describe(),
            self.reps
        )
    }
}

impl fmt::Display for TimingStudy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "phi = elu+1, d = p = {}, m = {}, C = {}, seed {}",
            self.d, self.m, self.chunk, self.seed
        )?;
        writeln!(f, "{}", self.provenance())?;
        writeln!(f, "milliseconds per call")?;
        let mut table = form_table(f, 7)?;
        for r in &self.rows {
            let cells = r.seconds.iter().map(|s| format!("{:.3}", s * 1e3));
            table.row(std::iter::once(r.n.to_string()).chain(cells));
        }
        write!(f, "{table}")?;
        let (first, last) = (
            self.rows.first().map_or(0, |r| r.n),
            self.rows.last().map_or(0, |r| r.n),
        );
        write!(f, "\nslope of log time against log N, N = {first}..{last}:")?;
        write!(f, "\n{:>7}", "")?;
        for form in FORMS {
            write!(f, "  {:>12.2}", self.slope(form))?;
        }
        let ratio = |slow, fast| self.ratio_at_largest_n(slow, fast);
        write!(
            f,
            "\nat N = {last}: scores first takes {:.0}x the time of memory \
             first;\nparallel N×N takes {:.0}x the time of recurrent, {:.0}x \
             the time of chunkwise",
            ratio(Form::ScoresFirst, Form::MemoryFirst),
            ratio(Form::Parallel, Form::Recurrent),
            ratio(Form::Parallel, Form::Chunkwise)
        )
    }
}

once! {
    /// "Two faces of one computation": every form timed at every length.
    measured_timing: TimingStudy = timing_study(&TIMING);
}

/// Output `schedules-timing`: the study of [`measured_timing`], run once per process.
pub fn schedules_timing() -> String {
    measured_timing().to_string()
}
