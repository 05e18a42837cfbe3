//! The runs `cargo xtask bench` committed, which the book reads and never
//! re-times: the crossover of softmax and linear attention
//! (`listings/data/crossover.tsv`) and the benchmark table
//! (`listings/data/bench.tsv`), parsed, queried and printed.

use super::{Crossover, Timed, arithmetic, crossover};
use crate::m3::cost::study::bytes;
use crate::table::Table;
use std::fmt;

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
pub const CROSSOVER_TSV: &str = include_str!("../../../data/crossover.tsv");

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
                bytes(data.decoder_bytes(Family::Softmax, d, s.0) as u64),
                format!("{:.2}", l.2 * 1e6),
                bytes(data.decoder_bytes(Family::Linear, d, l.0) as u64),
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
    /// Which engine reached it, on which vectors, and the other's best, as
    /// the bench wrote it (empty in a file from before it timed both).
    pub ceiling_engines: String,
    pub rows: Vec<BenchRow>,
}

/// The header line of `listings/data/bench.tsv`.
pub const BENCH_HEADER: &str =
    "form\tcausal\td\tn\tchunk\tmedian_s\tmin_s\tmax_s";

/// The committed benchmark run.
pub const BENCH_TSV: &str = include_str!("../../../data/bench.tsv");

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
        let (rate, engines) = ceiling
            .split_once(" GFLOP/s")
            .ok_or(format!("bad ceiling `{ceiling}`"))?;
        let ceiling_engines = engines.trim().to_string();
        let ceiling = rate
            .parse()
            .map_err(|_| format!("bad ceiling `{ceiling}`"))?;
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
            ceiling_engines,
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
             matrix-product ceiling {:.1} GFLOP/s {}",
            data.date,
            data.machine,
            data.command,
            data.ceiling,
            data.ceiling_engines
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
