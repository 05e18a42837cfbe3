//! Appendix "Where speed comes from": what the fast forms of
//! [`crate::fast`] cost and how far they drift, measured. The arithmetic
//! each form does, the f32 error of the recurrent and chunkwise sums at
//! growing N, and the chunk size that runs fastest on this machine.

use crate::fast::{
    linear_attention_chunkwise_f32, linear_attention_recurrent_f32,
    random_inputs, to_f32, to_f64,
};
use crate::linalg::worst_row_relative_difference;
use crate::m3::fast_weight_memory::linear_attention_recurrent;
use crate::measure::{Clock, Machine, time_once};
use crate::summary::Spread;
use crate::table::Table;
use ndarray::Array2;
use std::fmt;

/// A form the benchmark times, each one a function of this module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timed {
    /// `softmax_attention_causal_f32`.
    Softmax,
    /// `softmax_attention_tiled_f32`: counted by its useful work only.
    SoftmaxTiled,
    /// `linear_attention_parallel_f32`.
    Parallel,
    /// `linear_attention_recurrent_f32`.
    Recurrent,
    /// `linear_attention_chunkwise_f32`.
    Chunkwise,
    /// `delta_rule_recurrent_f32` (and the book's f64 listing).
    DeltaRecurrent,
    /// `delta_rule_chunkwise_f32`.
    DeltaChunkwise,
    /// `linear_attention_scores_first_f32` (non-causal).
    ScoresFirst,
    /// `linear_attention_memory_first_f32` (non-causal).
    MemoryFirst,
}

/// Floating-point operations of one call of a form (a multiply-add counts
/// two), counting every product it computes, the masked half of a score
/// block included (the tiled softmax: its useful work only), N tokens, p
/// features, m value entries, chunks of c: what the f32 forms tally under
/// test. Small terms (normalisers, masks, sums of rows, the scaling by β)
/// are left out. A chunkwise form's last chunk may be shorter than c.
pub fn arithmetic(form: Timed, n: usize, p: usize, m: usize, c: usize) -> f64 {
    let c = c.clamp(1, n.max(1));
    let (full, last) = (n / c, n % c);
    // A chunkwise form's work: that of its whole chunks and its last one.
    let chunked = |per_chunk: &dyn Fn(f64) -> f64| {
        full as f64 * per_chunk(c as f64) + per_chunk(last as f64)
    };
    let (n, p, m) = (n as f64, p as f64, m as f64);
    match form {
        // Q Kᵀ: 2 N² p, then the weights times V: 2 N² m.
        Timed::Softmax | Timed::Parallel | Timed::ScoresFirst => {
            2.0 * n * n * (p + m)
        }
        // The useful work only, the half the mask leaves: N(N + 1)/2
        // scores (2p each) and their reads (2m each). The blocks it skips
        // are not counted, nor the masked half of a diagonal block.
        Timed::SoftmaxTiled => n * (n + 1.0) * (p + m),
        // Per token: the write of S (2pm) and the read S φ(q) (2pm).
        Timed::Recurrent => 4.0 * n * p * m,
        // S = Vᵀ Φ_K (2Npm), then Φ_Q Sᵀ (2Npm).
        Timed::MemoryFirst => 4.0 * n * p * m,
        // Per chunk: Φ_Q Sᵀ and S += Vᵀ Φ_K (2cpm each), Φ_Q Φ_Kᵀ (2c²p)
        // and the scores times V (2c²m).
        Timed::Chunkwise => {
            chunked(&|c| 4.0 * c * p * m + 2.0 * c * c * (p + m))
        }
        // Per token: the prediction W k̄ (2pm), the write (2pm) and the
        // read W q̄ (2pm).
        Timed::DeltaRecurrent => 6.0 * n * p * m,
        // Per chunk: [K̄; Q̄] K̄ᵀ (4c²p), forward substitution on [K̄ | V]
        // (c(c − 1)(p + m)), [Q̄; T K̄] W₀ᵀ (4cpm), tril(Q̄ K̄ᵀ) U (2c²m),
        // W += Uᵀ K̄ (2cpm).
        Timed::DeltaChunkwise => chunked(&|c| {
            6.0 * c * p * m
                + 4.0 * c * c * p
                + 2.0 * c * c * m
                + c * (c - 1.0).max(0.0) * (p + m)
        }),
    }
}

/// Arithmetic per token of the delta rule's two schedules, at widths
/// d = p = m and several chunk sizes: what the chunkwise form must make up
/// for in speed.
pub struct DeltaArithmetic {
    pub d: usize,
    /// Operations per token of the recurrence.
    pub recurrent: f64,
    /// (C, operations per token of the chunkwise form).
    pub chunkwise: Vec<(usize, f64)>,
}

/// The appendix's count: d = 64 and chunks from 1 to 256.
pub fn delta_arithmetic() -> DeltaArithmetic {
    let (d, n) = (64, 1 << 14);
    let per_token = |form, c| arithmetic(form, n, d, d, c) / n as f64;
    DeltaArithmetic {
        d,
        recurrent: per_token(Timed::DeltaRecurrent, 1),
        chunkwise: [1, 4, 16, 64, 256]
            .into_iter()
            .map(|c| (c, per_token(Timed::DeltaChunkwise, c)))
            .collect(),
    }
}

impl fmt::Display for DeltaArithmetic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "operations per token, d = m = {}: recurrence {:.0}",
            self.d, self.recurrent
        )?;
        let mut table = Table::new()
            .right("C", 6)
            .right("chunkwise", 10)
            .right("÷ recurrence", 14);
        for &(c, ops) in &self.chunkwise {
            let ratio = ops / self.recurrent;
            table.row([
                c.to_string(),
                format!("{ops:.0}"),
                format!("{ratio:.2}"),
            ]);
        }
        writeln!(f, "{table}")?;
        let least = self.chunkwise.iter().map(|x| x.1).fold(f64::MAX, f64::min);
        write!(
            f,
            "at best the chunkwise form does {:.2}x the recurrence's arithmetic",
            least / self.recurrent
        )
    }
}

/// One length of the accuracy study: the worst row-relative error of each
/// f32 schedule against the f64 recurrence, worst over the seeds.
pub struct AccuracyRow {
    pub n: usize,
    pub recurrent: f64,
    pub chunkwise: f64,
}

/// The f32 schedules against an f64 reference as N grows.
pub struct AccuracyStudy {
    pub d: usize,
    pub chunk: usize,
    pub seeds: u64,
    pub rows: Vec<AccuracyRow>,
}

/// Run the f32 recurrent and chunkwise forms and the book's f64 recurrence
/// on the same inputs (rounded to f32 first, so the f64 run sees exactly
/// what the f32 runs see), at each length, for seeds 0..seeds.
pub fn accuracy_study(
    lengths: &[usize],
    d: usize,
    chunk: usize,
    seeds: u64,
) -> AccuracyStudy {
    let rows = lengths
        .iter()
        .map(|&n| {
            let (mut recurrent, mut chunkwise) = (0.0f64, 0.0f64);
            for seed in 0..seeds {
                let inputs = random_inputs(seed, n, d, d).map(|a| to_f32(&a));
                let [q, k, v] = &inputs;
                let [q64, k64, v64] = [q, k, v].map(|a| to_f64(a));
                let reference = linear_attention_recurrent(&q64, &k64, &v64)
                    .expect("the shapes agree");
                let error = |o: Array2<f32>| {
                    worst_row_relative_difference(&to_f64(&o), &reference)
                };
                let rec = linear_attention_recurrent_f32(q, k, v);
                let chk = linear_attention_chunkwise_f32(q, k, v, chunk);
                recurrent = recurrent.max(error(rec.expect("shapes agree")));
                chunkwise = chunkwise.max(error(chk.expect("shapes agree")));
            }
            AccuracyRow {
                n,
                recurrent,
                chunkwise,
            }
        })
        .collect();
    AccuracyStudy {
        d,
        chunk,
        seeds,
        rows,
    }
}

impl fmt::Display for AccuracyStudy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "worst row-relative error of f32 against the f64 recurrence \
             (d = m = {}, C = {}, worst of {} seeds)",
            self.d, self.chunk, self.seeds
        )?;
        let mut table = Table::new()
            .right("N", 7)
            .right("recurrent", 11)
            .right("chunkwise", 11);
        for r in &self.rows {
            table.row([
                r.n.to_string(),
                format!("{:.2e}", r.recurrent),
                format!("{:.2e}", r.chunkwise),
            ]);
        }
        writeln!(f, "{table}")
    }
}

/// Time per call of the f32 chunkwise form against the chunk size C, at one
/// length, beside the f32 recurrence (one chunk per token, no products).
pub struct ChunkSizeStudy {
    pub n: usize,
    pub d: usize,
    pub reps: usize,
    pub clock: Clock,
    pub machine: Machine,
    /// (C, median seconds per call).
    pub chunks: Vec<(usize, f64)>,
    /// Median seconds per call of `linear_attention_recurrent_f32`.
    pub recurrent: f64,
}

/// Time the chunkwise form at each chunk size and the recurrence, `reps`
/// rounds of every one, and keep the medians (φ = elu+1 of random inputs,
/// d = m, seed 0, made before any clock starts).
pub fn chunk_size_study(
    n: usize,
    d: usize,
    chunks: &[usize],
    reps: usize,
) -> ChunkSizeStudy {
    let clock = Clock::best();
    let [q, k, v] = random_inputs(0, n, d, d).map(|a| to_f32(&a));
    let mut samples = vec![Vec::new(); chunks.len() + 1];
    for _ in 0..reps {
        for (&c, times) in chunks.iter().zip(&mut samples) {
            times.push(time_once(clock, || {
                linear_attention_chunkwise_f32(&q, &k, &v, c)
            }));
        }
        let last = samples.last_mut().expect("one for the recurrence");
        last.push(time_once(clock, || {
            linear_attention_recurrent_f32(&q, &k, &v)
        }));
    }
    let median = |xs: &[f64]| Spread::of(xs).median;
    ChunkSizeStudy {
        n,
        d,
        reps,
        clock,
        machine: Machine::now(),
        chunks: chunks
            .iter()
            .zip(&samples)
            .map(|(&c, s)| (c, median(s)))
            .collect(),
        recurrent: median(samples.last().expect("one for the recurrence")),
    }
}

impl ChunkSizeStudy {
    /// The chunk size with the shortest median time.
    pub fn best(&self) -> usize {
        let fastest = self.chunks.iter().min_by(|a, b| a.1.total_cmp(&b.1));
        fastest.expect("at least one chunk size").0
    }

    /// Where, when and how the study was measured, on two lines.
    pub fn provenance(&self) -> String {
        format!(
            "measured {} on {} ({} cores), one thread, f32, N = {}, d = m = {};\n\
             the build's profile, median of {} runs",
            self.machine.date,
            self.machine.cpu,
            self.machine.cores,
            self.n,
            self.d,
            self.reps
        )
    }
}

impl fmt::Display for ChunkSizeStudy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "{}", self.provenance())?;
        let mut table = Table::new().right("C", 6).right("ms", 8);
        for &(c, s) in &self.chunks {
            table.row([c.to_string(), format!("{:.3}", s * 1e3)]);
        }
        writeln!(f, "{table}")?;
        writeln!(f, "recurrent: {:.3} ms", self.recurrent * 1e3)?;
        write!(
            f,
            "fastest C: {}, {:.1}x faster than C = {} and {:.1}x faster than C = {}",
            self.best(),
            self.chunks[0].1 / self.time_of(self.best()),
            self.chunks[0].0,
            self.chunks.last().expect("chunks").1 / self.time_of(self.best()),
            self.chunks.last().expect("chunks").0,
        )
    }
}

impl ChunkSizeStudy {
    fn time_of(&self, chunk: usize) -> f64 {
        let row = self.chunks.iter().find(|r| r.0 == chunk);
        row.expect("a measured chunk size").1
    }
}

/// Which of the two runs a measurement times.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Phase {
    /// A whole sequence of N tokens at once (training, or reading a prompt).
    Prefill,
    /// One generated token after N earlier ones.
    Decode,
}

/// Which family of attention a form belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Family {
    Softmax,
    Linear,
}

/// One form timed at one width and length, as the bench records it.
#[derive(Clone, Debug, PartialEq)]
pub struct Measured {
    pub phase: Phase,
    pub family: Family,
    pub form: String,
    pub d: usize,
    pub n: usize,
    /// Median thread CPU seconds per call (per step, for decoding).
    pub seconds: f64,
    /// Bytes the decoder keeps (the KV cache or the state); 0 for prefill.
    pub bytes: usize,
}

/// The measurements of `cargo xtask bench crossover`, with where, when and
/// how they were made.
#[derive(Clone, Debug, PartialEq)]
pub struct CrossoverData {
    pub machine: String,
    pub date: String,
    pub command: String,
    pub rows: Vec<Measured>,
}

/// The file the bench writes and the book reads; the build never re-times.
pub const CROSSOVER_TSV: &str = include_str!("../../data/crossover.tsv");

const HEADER: &str = "phase\tfamily\tform\td\tn\tseconds\tbytes";

impl CrossoverData {
    /// The committed measurements of `listings/data/crossover.tsv`.
    pub fn committed() -> CrossoverData {
        CrossoverData::parse(CROSSOVER_TSV)
            .expect("listings/data/crossover.tsv is well formed")
    }

    /// The file's text: three comment lines, a header, a row per form.
    pub fn to_tsv(&self) -> String {
        let mut out = format!(
            "# machine: {}\n# date: {}\n# command: {}\n{HEADER}\n",
            self.machine, self.date, self.command
        );
        for r in &self.rows {
            let phase = match r.phase {
                Phase::Prefill => "prefill",
                Phase::Decode => "decode",
            };
            let family = match r.family {
                Family::Softmax => "softmax",
                Family::Linear => "linear",
            };
            out += &format!(
                "{phase}\t{family}\t{}\t{}\t{}\t{:.6e}\t{}\n",
                r.form, r.d, r.n, r.seconds, r.bytes
            );
        }
        out
    }

    /// Read the text `to_tsv` writes.
    pub fn parse(text: &str) -> Result<CrossoverData, String> {
        let mut lines = text.lines();
        let mut comment = |key: &str| {
            let line = lines.next().unwrap_or_default();
            line.strip_prefix(&format!("# {key}: "))
                .map(str::to_string)
                .ok_or(format!("expected `# {key}: …`, found `{line}`"))
        };
        let (machine, date, command) =
            (comment("machine")?, comment("date")?, comment("command")?);
        if lines.next() != Some(HEADER) {
            return Err(format!("expected the header `{HEADER}`"));
        }
        let rows = lines
            .map(|line| {
                let f: Vec<&str> = line.split('\t').collect();
                let bad = || format!("bad row `{line}`");
                let [phase, family, form, d, n, seconds, bytes] = f[..] else {
                    return Err(bad());
                };
                Ok(Measured {
                    phase: match phase {
                        "prefill" => Phase::Prefill,
                        "decode" => Phase::Decode,
                        _ => return Err(bad()),
                    },
                    family: match family {
                        "softmax" => Family::Softmax,
                        "linear" => Family::Linear,
                        _ => return Err(bad()),
                    },
                    form: form.to_string(),
                    d: d.parse().map_err(|_| bad())?,
                    n: n.parse().map_err(|_| bad())?,
                    seconds: seconds.parse().map_err(|_| bad())?,
                    bytes: bytes.parse().map_err(|_| bad())?,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(CrossoverData {
            machine,
            date,
            command,
            rows,
        })
    }

    /// The widths measured, in the order of the file.
    pub fn widths(&self) -> Vec<usize> {
        let mut ds: Vec<usize> = self.rows.iter().map(|r| r.d).collect();
        ds.dedup();
        ds
    }

    /// For one phase, family and width: (N, the fastest form's name and
    /// seconds) at each length measured, in increasing N.
    pub fn best(
        &self,
        phase: Phase,
        family: Family,
        d: usize,
    ) -> Vec<(usize, &str, f64)> {
        let mut best: Vec<(usize, &str, f64)> = Vec::new();
        for r in self
            .rows
            .iter()
            .filter(|r| r.phase == phase && r.family == family && r.d == d)
        {
            match best.iter_mut().find(|b| b.0 == r.n) {
                Some(b) if r.seconds < b.2 => *b = (r.n, &r.form, r.seconds),
                Some(_) => {}
                None => best.push((r.n, &r.form, r.seconds)),
            }
        }
        best.sort_by_key(|b| b.0);
        best
    }

    /// Where linear attention starts to win, for one phase and width.
    pub fn crossover(&self, phase: Phase, d: usize) -> Crossover {
        let soft = self.best(phase, Family::Softmax, d);
        let linear = self.best(phase, Family::Linear, d);
        let points: Vec<(f64, f64, f64)> = soft
            .iter()
            .filter_map(|s| {
                let l = linear.iter().find(|l| l.0 == s.0)?;
                Some((s.0 as f64, s.2, l.2))
            })
            .collect();
        crossover(&points)
    }

    /// Bytes a decoder of this family keeps after t tokens (recorded).
    pub fn decoder_bytes(&self, family: Family, d: usize, t: usize) -> usize {
        let r = self.rows.iter().find(|r| {
            r.phase == Phase::Decode
                && r.family == family
                && r.d == d
                && r.n == t
        });
        r.map_or(0, |r| r.bytes)
    }
}

/// The length at which linear attention becomes the faster family.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Crossover {
    /// Linear is already faster at the shortest length measured.
    Below(f64),
    /// The lengths where the time ratio crosses 1, interpolated on
    /// log-log axes between the two measured lengths around it.
    At(f64),
    /// Softmax is still faster at the longest length measured.
    Above(f64),
}

// ANCHOR: crossover
/// The first length at which linear attention's time drops below
/// softmax's for good, from (N, softmax seconds, linear seconds) in
/// increasing N: log(linear/softmax) is taken as a straight line in log N
/// between the last length where softmax wins and the next.
pub fn crossover(points: &[(f64, f64, f64)]) -> Crossover {
    let log_ratio = |&(n, s, l): &(f64, f64, f64)| (n.ln(), (l / s).ln());
    let last_soft = points.iter().rposition(|p| p.2 >= p.1);
    match last_soft {
        None => Crossover::Below(points.first().map_or(0.0, |p| p.0)),
        Some(i) if i + 1 == points.len() => Crossover::Above(points[i].0),
        Some(i) => {
            let ((x0, y0), (x1, y1)) =
                (log_ratio(&points[i]), log_ratio(&points[i + 1]));
            Crossover::At((x0 + (0.0 - y0) * (x1 - x0) / (y1 - y0)).exp())
        }
    }
}
// ANCHOR_END: crossover

impl fmt::Display for Crossover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Crossover::Below(n) => write!(f, "below {n:.0}"),
            Crossover::At(n) => write!(f, "≈ {n:.0}"),
            Crossover::Above(n) => write!(f, "above {n:.0}"),
        }
    }
}

impl CrossoverData {
    /// Softmax's time over linear attention's at the longest length
    /// measured, for one phase and width, and that length.
    pub fn margin_at_longest(&self, phase: Phase, d: usize) -> (usize, f64) {
        let soft = self.best(phase, Family::Softmax, d);
        let linear = self.best(phase, Family::Linear, d);
        let (s, l) = (soft[soft.len() - 1], linear[linear.len() - 1]);
        (s.0, s.2 / l.2)
    }
}

impl fmt::Display for CrossoverData {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "measured {} on {}, one thread, f32\n({})\nprefill: a sequence \
             of N tokens; decode: one token with t in the cache",
            self.date, self.machine, self.command
        )?;
        let mut table = Table::new()
            .left("run", 8)
            .right("d", 4)
            .right("linear faster from", 19)
            .right("longest", 10)
            .right("linear faster there by", 23);
        for d in self.widths() {
            for (phase, name, x) in [
                (Phase::Prefill, "prefill", "N"),
                (Phase::Decode, "decode", "t"),
            ] {
                let (n, margin) = self.margin_at_longest(phase, d);
                table.row([
                    name.to_string(),
                    d.to_string(),
                    format!("{x} {}", self.crossover(phase, d)),
                    format!("{x} = {n}"),
                    format!("{margin:.1}×"),
                ]);
            }
        }
        write!(f, "{table}")
    }
}

/// The decode step's time and memory against the cache length, at one
/// width, as the bench recorded them.
pub struct DecodeTable<'a>(pub &'a CrossoverData, pub usize);

impl fmt::Display for DecodeTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (data, d) = (self.0, self.1);
        let soft = data.best(Phase::Decode, Family::Softmax, d);
        let linear = data.best(Phase::Decode, Family::Linear, d);
        let mut table = Table::new()
            .right("t", 6)
            .right("softmax µs", 11)
            .right("KV cache", 10)
            .right("linear µs", 10)
            .right("state", 9);
        for (s, l) in soft.iter().zip(&linear) {
            table.row([
                s.0.to_string(),
                format!("{:.2}", s.2 * 1e6),
                crate::m3::cost::bytes(data.decoder_bytes(
                    Family::Softmax,
                    d,
                    s.0,
                ) as u64),
                format!("{:.2}", l.2 * 1e6),
                crate::m3::cost::bytes(data.decoder_bytes(
                    Family::Linear,
                    d,
                    l.0,
                ) as u64),
            ]);
        }
        write!(
            f,
            "d = m = {d}, f32: one generated token with t tokens in the \
             cache, itself included\n{table}"
        )
    }
}

/// One row of the committed benchmark table: a form at one width and
/// length, with the median, fastest and slowest of its timed calls
/// (seconds of one thread's CPU time), or none where the bench skips it.
#[derive(Clone, Debug, PartialEq)]
pub struct BenchRow {
    pub form: String,
    pub causal: bool,
    pub d: usize,
    pub n: usize,
    /// The chunk size of a chunkwise form, 0 for the others.
    pub chunk: usize,
    /// (median, min, max) seconds; `None` where the form was skipped.
    pub seconds: Option<(f64, f64, f64)>,
}

/// The table `cargo xtask bench` wrote to `listings/data/bench.tsv`: the
/// machine, the date, the command and the matrix-product ceiling of the
/// run, then every row. The book prints it; it does not re-time it.
pub struct BenchTable {
    pub machine: String,
    pub date: String,
    pub command: String,
    /// The best f32 matrix-product rate of the run, GFLOP/s.
    pub ceiling: f64,
    pub rows: Vec<BenchRow>,
}

/// The header line of `listings/data/bench.tsv`.
pub const BENCH_HEADER: &str =
    "form\tcausal\td\tn\tchunk\tmedian_s\tmin_s\tmax_s";

/// The committed benchmark run.
pub const BENCH_TSV: &str = include_str!("../../data/bench.tsv");

impl BenchTable {
    /// The committed run of `listings/data/bench.tsv`.
    pub fn committed() -> BenchTable {
        BenchTable::parse(BENCH_TSV)
            .expect("listings/data/bench.tsv is well formed")
    }

    /// Read the text the bench writes (`crates/bench/src/forms.rs`).
    pub fn parse(text: &str) -> Result<BenchTable, String> {
        let mut lines = text.lines();
        let mut comment = |key: &str| {
            let line = lines.next().unwrap_or_default();
            line.strip_prefix(&format!("# {key}: "))
                .map(str::to_string)
                .ok_or(format!("expected `# {key}: …`, found `{line}`"))
        };
        let (machine, date, command, ceiling) = (
            comment("machine")?,
            comment("date")?,
            comment("command")?,
            comment("ceiling")?,
        );
        let ceiling = ceiling
            .strip_suffix(" GFLOP/s")
            .and_then(|c| c.parse().ok())
            .ok_or(format!("bad ceiling `{ceiling}`"))?;
        if lines.next() != Some(BENCH_HEADER) {
            return Err(format!("expected the header `{BENCH_HEADER}`"));
        }
        let rows = lines
            .map(|line| {
                let bad = || format!("bad row `{line}`");
                let f: Vec<&str> = line.split('\t').collect();
                let [form, causal, d, n, chunk, med, min, max] = f[..] else {
                    return Err(bad());
                };
                let seconds = if [med, min, max] == ["-"; 3] {
                    None
                } else {
                    let t = |x: &str| x.parse::<f64>().map_err(|_| bad());
                    Some((t(med)?, t(min)?, t(max)?))
                };
                Ok(BenchRow {
                    form: form.to_string(),
                    causal: causal.parse().map_err(|_| bad())?,
                    d: d.parse().map_err(|_| bad())?,
                    n: n.parse().map_err(|_| bad())?,
                    chunk: chunk.parse().map_err(|_| bad())?,
                    seconds,
                })
            })
            .collect::<Result<_, _>>()?;
        Ok(BenchTable {
            machine,
            date,
            command,
            ceiling,
            rows,
        })
    }

    /// The rows of one width, and the lengths measured at it, in order.
    fn at(&self, d: usize) -> (Vec<&BenchRow>, Vec<usize>) {
        let rows: Vec<&BenchRow> =
            self.rows.iter().filter(|r| r.d == d).collect();
        let mut lengths: Vec<usize> = rows.iter().map(|r| r.n).collect();
        lengths.sort_unstable();
        lengths.dedup();
        (rows, lengths)
    }

    /// The median seconds of a form at (d, N), if it ran.
    pub fn median(&self, form: &str, d: usize, n: usize) -> Option<f64> {
        self.rows
            .iter()
            .find(|r| r.form == form && r.d == d && r.n == n)
            .and_then(|r| r.seconds.map(|s| s.0))
    }

    /// GFLOP/s of a form at (d, N), counted by [`arithmetic`].
    pub fn gflops(&self, form: &str, d: usize, n: usize) -> Option<f64> {
        let row = self
            .rows
            .iter()
            .find(|r| r.form == form && r.d == d && r.n == n)?;
        let ops = arithmetic(bench_form(form)?, n, d, d, row.chunk);
        Some(ops / row.seconds?.0 / 1e9)
    }
}

/// The form of [`arithmetic`] a row of the bench times, by its name in
/// the bench's table; None for a row the arithmetic does not count.
pub fn bench_form(form: &str) -> Option<Timed> {
    Some(match form {
        "softmax (causal)" => Timed::Softmax,
        "softmax tiled" => Timed::SoftmaxTiled,
        "parallel N×N" => Timed::Parallel,
        "recurrent" => Timed::Recurrent,
        "chunkwise" => Timed::Chunkwise,
        "delta recurrent" | "delta recurrent f64" => Timed::DeltaRecurrent,
        "delta chunkwise" => Timed::DeltaChunkwise,
        "scores first" => Timed::ScoresFirst,
        "memory first" => Timed::MemoryFirst,
        _ => return None,
    })
}

/// The committed table at one width: milliseconds per call at each length,
/// and the share of the ceiling at the longest.
pub struct BenchAt<'a>(pub &'a BenchTable, pub usize);

impl fmt::Display for BenchAt<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (data, d) = (self.0, self.1);
        let (rows, lengths) = data.at(d);
        writeln!(
            f,
            "measured {} on {}\nby {}\nd = m = {d}: ms per call (median); \
             matrix-product ceiling {:.1} GFLOP/s",
            data.date, data.machine, data.command, data.ceiling
        )?;
        let longest = lengths.last().copied().unwrap_or(0);
        let mut table = Table::new().left("form", 20).right("C", 4);
        for n in &lengths {
            table = table.right(&format!("N={n}"), 9);
        }
        table = table.right("% ceil", 7);
        let mut forms: Vec<&str> = Vec::new();
        for r in &rows {
            if !forms.contains(&r.form.as_str()) {
                forms.push(&r.form);
            }
        }
        for form in forms {
            let first = rows.iter().find(|r| r.form == form).expect("a row");
            let name = if first.causal {
                form.to_string()
            } else {
                format!("{form} (nc)")
            };
            let mut cells = vec![name, chunk_cell(first.chunk)];
            for &n in &lengths {
                cells.push(match data.median(form, d, n) {
                    Some(s) => format!("{:.3}", s * 1e3),
                    None => "–".to_string(),
                });
            }
            cells.push(match data.gflops(form, d, longest) {
                Some(g) => format!("{:.0}", 100.0 * g / data.ceiling),
                None => "–".to_string(),
            });
            table.row(cells);
        }
        write!(
            f,
            "{table}\n(nc) non-causal; – skipped; % ceil: GFLOP/s at N = \
             {longest} over the ceiling"
        )
    }
}

fn chunk_cell(chunk: usize) -> String {
    match chunk {
        0 => "–".to_string(),
        c => c.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunkwise_delta_rule_does_more_arithmetic_per_token_than_its_recurrence()
    {
        for (p, m) in [(8, 8), (32, 16), (64, 64), (128, 64)] {
            let n = 4096;
            let rec = arithmetic(Timed::DeltaRecurrent, n, p, m, 1);
            for c in [1, 2, 3, 16, 64, 100, 512, 4096] {
                let chk = arithmetic(Timed::DeltaChunkwise, n, p, m, c);
                assert!(chk > rec, "p {p}, m {m}, C {c}: {chk} vs {rec}");
            }
        }
        let table = delta_arithmetic();
        assert!(table.chunkwise.iter().all(|&(_, x)| x > table.recurrent));
        // Counted as the f32 forms perform it, a short last chunk included.
        use crate::fast::counted::ops;
        use crate::fast::{
            delta_rule_chunkwise_f32, delta_rule_recurrent_f32, random_inputs,
        };
        for (p, m) in [(8, 8), (32, 16)] {
            let n = 200;
            let [q, k, v] = random_inputs(8, n, p, m).map(|a| to_f32(&a));
            let beta = ndarray::Array1::<f32>::from_elem(n, 0.5);
            let (out, rec) =
                ops(|| delta_rule_recurrent_f32(&q, &k, &v, &beta));
            out.expect("valid inputs");
            for c in [1, 2, 3, 16, 64, 100, 200] {
                let chunked = || delta_rule_chunkwise_f32(&q, &k, &v, &beta, c);
                let (out, chk) = ops(chunked);
                out.expect("valid inputs");
                assert!(chk > rec, "p {p}, m {m}, C {c}: {chk} vs {rec}");
            }
        }
    }

    #[test]
    fn the_arithmetic_counts_are_the_operations_each_form_performs() {
        use crate::fast::counted::ops;
        use crate::fast::*;
        use Timed::*;
        // (seed, N, p, m, C): whole chunks, a short last chunk, C = 1,
        // C past N, p ≠ m, m not a multiple of the recurrences' row block.
        let shapes = [
            (1, 64, 8, 8, 16),
            (2, 50, 16, 8, 7),
            (3, 33, 4, 12, 64),
            (4, 40, 12, 20, 1),
            (5, 97, 32, 16, 32),
            (6, 21, 8, 35, 5),
        ];
        for (seed, n, p, m, c) in shapes {
            let [q, k, v] = random_inputs(seed, n, p, m).map(|a| to_f32(&a));
            let beta = ndarray::Array1::<f32>::from_elem(n, 0.5);
            let shape = format!("N {n}, p {p}, m {m}, C {c}");
            let count = |form, (out, ops): (Result<_, _>, usize)| {
                let _: ndarray::Array2<f32> = out.expect("valid inputs");
                let want = arithmetic(form, n, p, m, c);
                assert_eq!(ops as f64, want, "{form:?}, {shape}");
            };
            let (q, k, v) = (&q, &k, &v);
            count(Recurrent, ops(|| linear_attention_recurrent_f32(q, k, v)));
            count(
                Chunkwise,
                ops(|| linear_attention_chunkwise_f32(q, k, v, c)),
            );
            let delta = || delta_rule_recurrent_f32(q, k, v, &beta);
            count(DeltaRecurrent, ops(delta));
            let delta = || delta_rule_chunkwise_f32(q, k, v, &beta, c);
            count(DeltaChunkwise, ops(delta));
            count(Softmax, ops(|| softmax_attention_causal_f32(q, k, v)));
            count(Parallel, ops(|| linear_attention_parallel_f32(q, k, v)));
            let first = || linear_attention_scores_first_f32(q, k, v);
            count(ScoresFirst, ops(first));
            count(
                MemoryFirst,
                ops(|| linear_attention_memory_first_f32(q, k, v)),
            );
            // The tiled form's count is its useful work: what it performs
            // with blocks of one query × one key, which mask nothing.
            let one = || softmax_attention_blocks_f32(q, k, v, 1, 1);
            count(SoftmaxTiled, ops(one));
            // Larger blocks also compute the masked part of the blocks on
            // the diagonal, at most one block of scores per block of
            // queries, and skip every block above it.
            for (b_q, b_k) in [(4, 8), (8, 8), (16, 64)] {
                let tiled = || softmax_attention_blocks_f32(q, k, v, b_q, b_k);
                let (out, done) = ops(tiled);
                out.expect("valid inputs");
                let useful = arithmetic(SoftmaxTiled, n, p, m, c);
                let blocks = n.div_ceil(b_q) as f64;
                let masked = blocks * (b_q * b_k * 2 * (p + m)) as f64;
                let done = done as f64;
                assert!(useful <= done && done <= useful + masked, "{shape}");
            }
        }
    }

    #[test]
    fn a_chunk_costs_c_times_p_plus_m_plus_2mp_multiply_adds_per_token() {
        // Part I's estimate for the chunkwise schedule of linear attention,
        // on the f32 form that performs it (tested equal to the book's),
        // with every product counted as it runs: N a multiple of C.
        use crate::fast::counted::ops;
        for (seed, p, m, c) in [(1, 8, 8, 4), (2, 16, 8, 16), (3, 4, 12, 1)] {
            let mut per_token = Vec::new();
            for chunks in [1, 3, 8] {
                let n = chunks * c;
                let [q, k, v] =
                    random_inputs(seed, n, p, m).map(|a| to_f32(&a));
                let (out, done) =
                    ops(|| linear_attention_chunkwise_f32(&q, &k, &v, c));
                out.expect("valid inputs");
                let multiply_adds = done as f64 / 2.0 / n as f64;
                let want = (c * (p + m) + 2 * m * p) as f64;
                assert_eq!(multiply_adds, want, "N {n}, p {p}, m {m}, C {c}");
                per_token.push(multiply_adds);
            }
            // Fixed for a fixed C: the sequence's work is in proportion
            // to N.
            assert!(per_token.windows(2).all(|w| w[0] == w[1]));
        }
    }

    #[test]
    fn the_two_timings_of_the_build_say_where_and_when_they_were_measured() {
        // Every other output and figure prints the same in a new process
        // (the tests beside `outputs::ALL` and `figures::ALL`); these two
        // are read off the clock, and print this machine and the date.
        let timing = crate::studies::measured_timing();
        let chunks = crate::studies::measured_chunk_sizes();
        let machines = [
            ("schedules-timing", &timing.machine),
            ("speed-chunk-size", &chunks.machine),
        ];
        for (name, machine) in machines {
            assert_eq!(machine.cpu, Machine::now().cpu, "{name}");
            let output = crate::outputs::ALL.iter().find(|o| o.name == name);
            let printed = (output.expect(name).run)();
            assert!(printed.contains(&machine.cpu), "{name}: {printed}");
            assert!(printed.contains(&machine.date), "{name}: {printed}");
        }
    }

    #[test]
    fn the_recurrence_does_less_arithmetic_than_any_chunkwise_form() {
        use Timed::*;
        for (p, m) in [(8, 8), (32, 16), (64, 64), (128, 64)] {
            for n in [100, 4096] {
                let rec = arithmetic(Recurrent, n, p, m, 1);
                for c in [1, 2, 7, 16, 64, 256, 4096] {
                    let chk = arithmetic(Chunkwise, n, p, m, c);
                    assert!(rec < chk, "p {p} m {m} N {n} C {c}");
                }
            }
        }
    }

    #[test]
    fn dependencies_are_optimised_in_every_profile_and_products_use_one_thread()
    {
        let workspace = include_str!("../../../Cargo.toml");
        let listings = include_str!("../../Cargo.toml");
        let xtask = include_str!("../../../crates/xtask/src/main.rs");
        assert!(
            workspace.contains("[profile.dev.package.\"*\"]\nopt-level = 3"),
            "every dependency optimised in the dev profile"
        );
        // The book's own code a little (the dev profile that builds and
        // runs the listings for the book); the bench in release.
        assert!(workspace.contains("[profile.dev]\nopt-level = 1"));
        let book = include_str!("../../../book.toml");
        let run = "command = \"cargo run --quiet --package mdbook-listings --";
        assert!(
            book.contains(run),
            "the preprocessor runs in the dev profile"
        );
        assert!(xtask.contains(
            r#"release_binary("benchmarking every schedule", "bench""#
        ));
        assert!(xtask.contains(r#"vec!["run", "--release","#));
        for toml in [workspace, listings] {
            assert!(!toml.contains("matrixmultiply-threading"));
            assert!(!toml.contains("rayon"));
        }
    }

    /// The N × N forms of the bench: their score matrix is N × N.
    const N_SQUARED: [&str; 3] =
        ["softmax (causal)", "parallel N×N", "scores first"];

    #[test]
    fn the_committed_bench_times_every_form_it_does_not_skip() {
        let data = BenchTable::committed();
        assert!(data.command.starts_with("cargo xtask bench"));
        // Released code, one thread, its CPU clock: as the bench times.
        for said in ["release", "f32", "one thread", "thread CPU time"] {
            assert!(data.command.contains(said), "{}", data.command);
        }
        // Each chunkwise form at one chunk size, the same at every length.
        for form in ["chunkwise", "delta chunkwise"] {
            for d in [64, 32] {
                let chunks: Vec<usize> = data
                    .rows
                    .iter()
                    .filter(|r| r.form == form && r.d == d)
                    .map(|r| r.chunk)
                    .collect();
                assert!(chunks.iter().all(|&c| c == chunks[0]), "{form}");
                assert!([8, 16, 32, 64, 128, 256].contains(&chunks[0]));
            }
        }
        assert!(!data.machine.is_empty() && data.date.len() == 10);
        assert!(data.ceiling > 0.0);
        let forms = [
            "softmax (causal)",
            "softmax tiled",
            "parallel N×N",
            "recurrent",
            "chunkwise",
            "delta recurrent",
            "delta recurrent f64",
            "delta chunkwise",
            "scores first",
            "memory first",
        ];
        assert_eq!(data.rows.len(), forms.len() * 2 * 4, "every row");
        for d in [64, 32] {
            for n in [256, 1024, 4096, 16384] {
                for form in forms {
                    let row = data
                        .rows
                        .iter()
                        .find(|r| r.form == form && r.d == d && r.n == n)
                        .unwrap_or_else(|| panic!("{form} at {d}, {n}"));
                    let skipped =
                        (N_SQUARED.contains(&form) && d == 32 && n > 4096)
                            || (form == "delta recurrent f64" && d == 32);
                    match row.seconds {
                        None => assert!(skipped, "{form} {d} {n} skipped"),
                        Some((med, min, max)) => {
                            assert!(!skipped, "{form} {d} {n} ran");
                            assert!(0.0 < min && min <= med && med <= max);
                        }
                    }
                    let chunked = form.ends_with("chunkwise");
                    assert_eq!(row.chunk > 0, chunked, "{form}");
                }
            }
        }
    }

    #[test]
    fn in_the_committed_bench_the_recurrence_finishes_before_the_chunkwise_form()
     {
        // At both widths and every length; and at the width the book
        // prints, d = 64, it runs at no smaller a share of the ceiling at
        // the longest length.
        let data = BenchTable::committed();
        for d in [64, 32] {
            for n in [256, 1024, 4096, 16384] {
                let time = |form| data.median(form, d, n).expect("timed");
                assert!(time("recurrent") < time("chunkwise"), "d {d}, N {n}");
            }
        }
        let rate = |form| data.gflops(form, 64, 16384).expect("timed");
        assert!(rate("recurrent") >= rate("chunkwise"));
    }

    #[test]
    fn no_form_of_the_committed_bench_runs_above_the_ceiling() {
        // Every timed row's GFLOP/s, counted by `arithmetic`, is below the
        // best matrix-product rate of the same run.
        let data = BenchTable::committed();
        let mut timed = 0;
        for r in &data.rows {
            if let Some(rate) = data.gflops(&r.form, r.d, r.n) {
                assert!(rate > 0.0 && rate <= data.ceiling, "{r:?}: {rate}");
                timed += 1;
            }
        }
        assert!(timed >= 70, "{timed} rows timed");
    }

    #[test]
    fn in_the_committed_bench_tiled_softmax_and_chunkwise_beat_their_n_by_n_forms()
     {
        let data = BenchTable::committed();
        let n = 16384;
        let time = |form| data.median(form, 64, n).expect("timed");
        assert!(time("softmax tiled") < time("softmax (causal)"));
        assert!(time("chunkwise") < time("parallel N×N"));
        // The rendered table prints a share of the ceiling for both.
        let shown = BenchAt(&data, 64).to_string();
        assert!(shown.contains("softmax tiled") && shown.contains(&data.date));
    }

    #[test]
    fn arithmetic_grows_as_each_form_says() {
        use Timed::*;
        for (p, m, c) in [(8, 8, 4), (64, 32, 16), (64, 64, 64)] {
            let ops = |form, n| arithmetic(form, n, p, m, c);
            for form in [Recurrent, Chunkwise, DeltaRecurrent, DeltaChunkwise] {
                // Linear in N once N is a whole number of chunks.
                let (one, two) = (ops(form, 1024), ops(form, 2048));
                assert!((two / one - 2.0).abs() < 1e-12, "{form:?}");
            }
            for form in [Softmax, Parallel, ScoresFirst] {
                let (one, two) = (ops(form, 1024), ops(form, 2048));
                assert!((two / one - 4.0).abs() < 1e-12, "{form:?}");
            }
            // A chunk of one token is the recurrence plus the work of
            // scoring that token against itself.
            let one = arithmetic(Chunkwise, 1024, p, m, 1);
            let rec = ops(Recurrent, 1024);
            let extra = 2.0 * 1024.0 * (p + m) as f64;
            assert!((one - rec - extra).abs() < 1e-6, "{one} {rec}");
        }
    }

    #[test]
    fn a_chunkwise_forms_arithmetic_per_token_grows_with_c() {
        use Timed::*;
        // Counted as the f32 forms perform it, at a length the tests run
        // quickly, a short last chunk included ...
        use crate::fast::counted::ops;
        use crate::fast::{delta_rule_chunkwise_f32, random_inputs, to_f32};
        for (p, m) in [(8, 8), (32, 16)] {
            let n = 200;
            let [q, k, v] = random_inputs(7, n, p, m).map(|a| to_f32(&a));
            let beta = ndarray::Array1::<f32>::from_elem(n, 0.5);
            let chunks = [1, 2, 3, 16, 64, 100, 200];
            for delta in [false, true] {
                let done: Vec<usize> = chunks
                    .iter()
                    .map(|&c| {
                        let (out, done) = ops(|| match delta {
                            false => {
                                linear_attention_chunkwise_f32(&q, &k, &v, c)
                            }
                            true => {
                                delta_rule_chunkwise_f32(&q, &k, &v, &beta, c)
                            }
                        });
                        out.expect("valid inputs");
                        done
                    })
                    .collect();
                assert!(done.windows(2).all(|w| w[0] < w[1]), "{done:?}");
            }
        }
        // ... and by the formula, tested equal to that count, at the
        // bench's widths and length.
        for (p, m) in [(8, 8), (64, 32), (64, 64)] {
            let n = 4096;
            for form in [Chunkwise, DeltaChunkwise] {
                let ops: Vec<f64> = [1, 2, 4, 16, 64, 256, 1024, 4096]
                    .iter()
                    .map(|&c| arithmetic(form, n, p, m, c))
                    .collect();
                assert!(ops.windows(2).all(|w| w[0] < w[1]), "{form:?}");
            }
        }
    }

    #[test]
    fn chunkwise_f32_drifts_less_than_the_recurrent_f32_sum() {
        let study = crate::studies::speed_accuracy();
        for row in &study.rows {
            assert!(row.chunkwise < row.recurrent, "{study}");
        }
        let (first, last) = (&study.rows[0], &study.rows[study.rows.len() - 1]);
        assert!(last.recurrent > first.recurrent, "{study}");
        assert!(last.chunkwise > first.chunkwise, "{study}");
    }

    #[test]
    fn crossover_interpolates_where_the_time_ratio_crosses_one() {
        // Softmax a N², linear b N: they meet at N = b / a exactly, and the
        // log-log interpolation is exact on power laws.
        let (a, b) = (1e-9, 3e-7);
        let points: Vec<(f64, f64, f64)> = (4..12)
            .map(|e| {
                let n = (1u64 << e) as f64;
                (n, a * n * n, b * n)
            })
            .collect();
        let Crossover::At(n) = crossover(&points) else {
            panic!("{:?}", crossover(&points));
        };
        assert!((n / 300.0 - 1.0).abs() < 1e-9, "{n}");
        // Linear faster everywhere, or nowhere.
        assert_eq!(crossover(&points[6..]), Crossover::Below(1024.0));
        assert_eq!(crossover(&points[..3]), Crossover::Above(64.0));
    }

    #[test]
    fn the_committed_crossover_file_records_both_families_at_every_length() {
        let data = CrossoverData::committed();
        assert!(!data.machine.is_empty() && data.date.len() == 10);
        assert_eq!(data.command, "cargo xtask bench crossover");
        // The forms compared: both softmax forms and the recurrent and
        // chunkwise forms (a few chunk sizes) for a sequence; the KV cache
        // and the state for one token.
        let forms = |phase, family| {
            let mut names: Vec<&str> = data
                .rows
                .iter()
                .filter(|r| r.phase == phase && r.family == family)
                .map(|r| r.form.as_str())
                .collect();
            names.sort_unstable();
            names.dedup();
            names
        };
        let prefill = |family| forms(Phase::Prefill, family);
        assert_eq!(prefill(Family::Softmax), ["softmax N×N", "softmax tiled"]);
        let linear = prefill(Family::Linear);
        assert!(linear.contains(&"recurrent"), "{linear:?}");
        let chunked = linear.iter().filter(|f| f.starts_with("chunkwise C="));
        assert!(chunked.count() >= 3, "{linear:?}");
        assert_eq!(forms(Phase::Decode, Family::Softmax), ["KV cache"]);
        assert_eq!(forms(Phase::Decode, Family::Linear), ["state"]);
        assert_eq!(data.widths(), [64, 128]);
        assert_eq!(CrossoverData::parse(&data.to_tsv()), Ok(data.clone()));
        for d in [64, 128] {
            for phase in [Phase::Prefill, Phase::Decode] {
                let soft = data.best(phase, Family::Softmax, d);
                let linear = data.best(phase, Family::Linear, d);
                let ns = |b: &[(usize, &str, f64)]| {
                    b.iter().map(|b| b.0).collect::<Vec<_>>()
                };
                assert_eq!(ns(&soft), ns(&linear));
                assert!(soft.len() >= 8, "{phase:?}, d = {d}");
                assert!(soft.iter().all(|b| b.2 > 0.0 && b.2.is_finite()));
            }
        }
    }

    #[test]
    fn the_kv_cache_grows_with_every_token_and_the_state_does_not() {
        // The bytes the bench recorded: t (d + m) floats of 4 for the
        // cache, (m d + d) floats of 4 for the state, at every t.
        let data = CrossoverData::committed();
        for d in data.widths() {
            for (t, _, _) in data.best(Phase::Decode, Family::Softmax, d) {
                let cache = data.decoder_bytes(Family::Softmax, d, t);
                let state = data.decoder_bytes(Family::Linear, d, t);
                assert_eq!(cache, t * 2 * d * 4);
                assert_eq!(state, (d * d + d) * 4);
            }
        }
    }

    #[test]
    fn linear_attention_wins_from_a_crossover_length_by_a_growing_margin() {
        // In the recorded run, for both widths and both phases, the time
        // ratio crosses 1 inside the lengths measured, and linear attention
        // stays the faster family at every longer length.
        let data = CrossoverData::committed();
        for d in data.widths() {
            for phase in [Phase::Prefill, Phase::Decode] {
                let at = data.crossover(phase, d);
                let Crossover::At(n) = at else {
                    panic!("{phase:?}, d = {d}: {at:?}");
                };
                let soft = data.best(phase, Family::Softmax, d);
                let linear = data.best(phase, Family::Linear, d);
                for (s, l) in soft.iter().zip(&linear) {
                    if s.0 as f64 > n {
                        assert!(l.2 < s.2, "{phase:?}, d = {d}, N = {}", s.0);
                    }
                }
                // And the margin grows with every longer length, so it is
                // largest at the longest.
                let margins: Vec<f64> =
                    soft.iter().zip(&linear).map(|(s, l)| s.2 / l.2).collect();
                assert!(margins.windows(2).all(|w| w[0] < w[1]), "{margins:?}");
            }
        }
    }

    #[test]
    fn the_softmax_decode_step_grows_with_t_and_the_linear_step_does_not() {
        // From the shortest cache to the longest (a factor 4096 in t): the
        // softmax step's time grows by over a thousand times, the linear
        // step's by less than a factor of 2 either way.
        let data = CrossoverData::committed();
        for d in data.widths() {
            let soft = data.best(Phase::Decode, Family::Softmax, d);
            let linear = data.best(Phase::Decode, Family::Linear, d);
            // Longer at every longer cache, not only at the longest.
            assert!(soft.windows(2).all(|w| w[0].2 < w[1].2), "{soft:?}");
            let (first, last) = (soft[0], soft[soft.len() - 1]);
            assert!(last.0 / first.0 >= 4096);
            assert!(last.2 / first.2 > 1000.0, "d = {d}: {soft:?}");
            let (lo, hi) = linear
                .iter()
                .fold((f64::MAX, 0.0f64), |a, b| (a.0.min(b.2), a.1.max(b.2)));
            assert!(hi / lo < 2.0, "d = {d}: {linear:?}");
        }
    }

    #[test]
    fn the_tiled_form_is_the_faster_softmax_from_n_1024_on() {
        let data = CrossoverData::committed();
        for d in data.widths() {
            let best = data.best(Phase::Prefill, Family::Softmax, d);
            for (n, form, seconds) in best {
                // The best is the faster of the softmax forms timed at N.
                let timed = data.rows.iter().filter(|r| {
                    r.phase == Phase::Prefill
                        && r.family == Family::Softmax
                        && r.d == d
                        && r.n == n
                });
                let least = timed.map(|r| r.seconds).fold(f64::MAX, f64::min);
                assert_eq!(seconds, least, "d = {d}, N = {n}");
                if n >= 1024 {
                    assert_eq!(form, "softmax tiled", "d = {d}, N = {n}");
                }
            }
        }
    }
}
