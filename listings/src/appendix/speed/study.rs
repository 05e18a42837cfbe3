//! The studies the appendix prints: the delta rule's arithmetic per token,
//! the f32 drift of the recurrent and chunkwise sums, and the chunk size
//! that runs fastest on the machine that builds the book; their parameters,
//! and one function per output (the committed runs' included).

use super::committed::{BenchAt, BenchTable, CrossoverData, DecodeTable};
use super::{Timed, arithmetic};
use crate::fast::{
    linear_attention_chunkwise_f32, linear_attention_recurrent_f32,
    random_inputs, to_f32, to_f64,
};
use crate::linalg::worst_row_relative_difference;
use crate::m3::fast_weight_memory::linear_attention_recurrent;
use crate::measure::{Clock, Machine, time_once};
use crate::memo::once;
use crate::summary::Spread;
use crate::table::Table;
use ndarray::Array2;
use std::fmt;

/// Lengths, width d = m, chunk size and seeds of the accuracy study.
pub const ACCURACY_LENGTHS: [usize; 4] = [256, 1024, 4096, 16384];
pub const ACCURACY_D: usize = 32;
pub const ACCURACY_CHUNK: usize = 64;
pub const ACCURACY_SEEDS: u64 = 2;

/// Length, width d = m, chunk sizes and rounds of the chunk-size study.
pub const CHUNK_SIZE_N: usize = 4096;
pub const CHUNK_SIZE_D: usize = 32;
pub const CHUNK_SIZES: [usize; 10] = [2, 4, 8, 16, 32, 64, 128, 256, 512, 1024];
pub const CHUNK_SIZE_REPS: usize = 3;

/// The width d = m at which the appendix prints the committed runs.
pub const SHOWN_D: usize = 64;

/// Output `speed-delta-arithmetic`.
pub fn speed_delta_arithmetic() -> String {
    delta_arithmetic().to_string()
}

/// Output `speed-crossover`.
pub fn speed_crossover() -> String {
    CrossoverData::committed().to_string()
}

/// Output `speed-decode`.
pub fn speed_decode() -> String {
    DecodeTable(&CrossoverData::committed(), SHOWN_D).to_string()
}

/// Output `speed-bench`.
pub fn speed_bench() -> String {
    BenchAt(&BenchTable::committed(), SHOWN_D).to_string()
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

once! {
    /// Appendix E: f32 drift of the recurrent and chunkwise sums.
    chapter_accuracy: AccuracyStudy = accuracy_study(
        &ACCURACY_LENGTHS,
        ACCURACY_D,
        ACCURACY_CHUNK,
        ACCURACY_SEEDS,
    );
}

once! {
    /// Appendix E: the chunk size that runs fastest on this machine.
    measured_chunk_sizes: ChunkSizeStudy = chunk_size_study(
        CHUNK_SIZE_N,
        CHUNK_SIZE_D,
        &CHUNK_SIZES,
        CHUNK_SIZE_REPS,
    );
}

/// Output `speed-accuracy`: the study of [`chapter_accuracy`], run once per
/// process.
pub fn speed_accuracy() -> String {
    chapter_accuracy().to_string()
}

/// Output `speed-chunk-size`: the study of [`measured_chunk_sizes`], run once per process.
pub fn speed_chunk_size() -> String {
    measured_chunk_sizes().to_string()
}
