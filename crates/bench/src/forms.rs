//! The rows of the table: every schedule of the book at f32 (and the
//! book's f64 delta-rule listing, for reference) at every length and width,
//! each chunkwise form at the chunk size measured fastest.

use crate::CALLS;
use crate::timing::{Timing, cpu_seconds, time};
use listings::appendix::speed::arithmetic;
use listings::appendix::speed::committed::bench_form;
use listings::fast::{
    delta_rule_chunkwise_f32, delta_rule_recurrent_f32,
    linear_attention_chunkwise_f32, linear_attention_memory_first_f32,
    linear_attention_parallel_f32, linear_attention_recurrent_f32,
    linear_attention_scores_first_f32, random_inputs,
    softmax_attention_causal_f32, softmax_attention_tiled_f32, to_f32,
};
use listings::measure::Machine;
use listings::ndarray::Array1;
use listings::paper::delta_rule::delta_rule_recurrent;
use std::fmt::Write as _;
use std::hint::black_box;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Instant;

pub const LENGTHS: [usize; 4] = [256, 1024, 4096, 16384];
pub const WIDTHS: [usize; 2] = [64, 32];
/// The largest N at which the N × N forms run, for each width: their
/// scores take N² · 4 bytes (1 GiB at N = 16384) and seconds per call;
/// the targets need them at N = 16384 for d = 64 only.
pub fn max_n_squared(d: usize) -> usize {
    if d == 64 { 16384 } else { 4096 }
}
pub const CHUNKS: [usize; 6] = [8, 16, 32, 64, 128, 256];

/// The arithmetic of a form by its name in the table (`appendix::speed::arithmetic`).
pub fn flops(form: &str, n: usize, d: usize, chunk: usize) -> f64 {
    let timed = bench_form(form).unwrap_or_else(|| unreachable!("{form}"));
    arithmetic(timed, n, d, d, chunk)
}

/// A chunkwise form, a width, and median seconds at each chunk size.
pub type ChunkTimes = (&'static str, usize, Vec<(usize, f64)>);

/// One form timed at one width and length.
pub struct Row {
    pub form: &'static str,
    pub causal: bool,
    pub d: usize,
    pub n: usize,
    pub chunk: usize,
    pub timing: Option<Timing>,
    pub gflops: f64,
}

/// A width and the chunk sizes of its two chunkwise forms (linear
/// attention, delta rule).
pub type Chunks = (usize, [usize; 2]);

/// For each chunkwise form and width, the fastest of a few chunk sizes at
/// N = 4096, and every size's median time.
pub fn choose_chunks() -> (Vec<Chunks>, Vec<ChunkTimes>) {
    let mut chunk_for = Vec::new();
    let mut chunk_times = Vec::new();
    for d in WIDTHS {
        let [q, k, v] = random_inputs(1, 4096, d, d).map(|a| to_f32(&a));
        let beta = Array1::<f32>::from_elem(4096, 0.5);
        let mut best = [0; 2];
        for (form, best) in
            ["chunkwise", "delta chunkwise"].iter().zip(&mut best)
        {
            // Rounds of every chunk size in turn, so that a busy moment of
            // a shared machine lands on one sample of each, not on all
            // samples of one; then the median of each.
            let run = |c: usize| {
                let start = cpu_seconds();
                if *form == "chunkwise" {
                    let o = linear_attention_chunkwise_f32(&q, &k, &v, c);
                    black_box(o.expect("shapes agree"));
                } else {
                    let o = delta_rule_chunkwise_f32(&q, &k, &v, &beta, c);
                    black_box(o.expect("shapes agree"));
                }
                cpu_seconds() - start
            };
            CHUNKS.iter().for_each(|&c| {
                run(c); // warm-up
            });
            let mut samples = vec![Vec::new(); CHUNKS.len()];
            for _ in 0..7 {
                for (&c, s) in CHUNKS.iter().zip(&mut samples) {
                    s.push(run(c));
                }
            }
            let times: Vec<(usize, f64)> = CHUNKS
                .iter()
                .zip(&mut samples)
                .map(|(&c, s)| {
                    s.sort_by(f64::total_cmp);
                    (c, s[s.len() / 2])
                })
                .collect();
            *best = times
                .iter()
                .min_by(|a, b| a.1.total_cmp(&b.1))
                .expect("chunks")
                .0;
            eprintln!("d = {d}, {form}: chunk {best} (of {times:?})");
            chunk_times.push((*form, d, times));
        }
        chunk_for.push((d, best));
    }

    (chunk_for, chunk_times)
}

/// Every form at every width and length: the rows, and the allocation
/// calls of the recurrent form at each (d, N).
pub fn time_forms(
    chunk_for: &[Chunks],
    started: Instant,
) -> (Vec<Row>, Vec<(usize, usize, usize)>) {
    let mut rows = Vec::new();
    let mut allocations = Vec::new();
    for (d, [chunk, delta_chunk]) in chunk_for.iter().copied() {
        for n in LENGTHS {
            let [q64, k64, v64] = random_inputs(2, n, d, d);
            let [q, k, v] = [&q64, &k64, &v64].map(|a| to_f32(a));
            let beta64: Array1<f64> = Array1::from_shape_fn(n, |t| {
                1.0 / (1.0 + (-((t % 7) as f64 - 3.0)).exp())
            });
            let beta = beta64.mapv(|b| b as f32);
            let before = CALLS.load(Relaxed);
            black_box(linear_attention_recurrent_f32(&q, &k, &v).unwrap());
            allocations.push((d, n, CALLS.load(Relaxed) - before));
            let small = n <= max_n_squared(d);
            let mut add = |form, causal, runs: bool, f: &mut dyn FnMut()| {
                let timing = runs.then(|| time(f));
                let chunk = match form {
                    "chunkwise" => chunk,
                    "delta chunkwise" => delta_chunk,
                    _ => 0,
                };
                let gflops = timing.map_or(f64::NAN, |t| {
                    flops(form, n, d, chunk) / t.median / 1e9
                });
                rows.push(Row {
                    form,
                    causal,
                    d,
                    n,
                    chunk,
                    timing,
                    gflops,
                });
            };
            let (q, k, v) = (&q, &k, &v);
            let beta = &beta;
            add("softmax (causal)", true, small, &mut || {
                black_box(softmax_attention_causal_f32(q, k, v).unwrap());
            });
            add("softmax tiled", true, true, &mut || {
                black_box(softmax_attention_tiled_f32(q, k, v).unwrap());
            });
            add("parallel N×N", true, small, &mut || {
                black_box(linear_attention_parallel_f32(q, k, v).unwrap());
            });
            add("recurrent", true, true, &mut || {
                black_box(linear_attention_recurrent_f32(q, k, v).unwrap());
            });
            add("chunkwise", true, true, &mut || {
                black_box(
                    linear_attention_chunkwise_f32(q, k, v, chunk).unwrap(),
                );
            });
            add("delta recurrent", true, true, &mut || {
                black_box(delta_rule_recurrent_f32(q, k, v, beta).unwrap());
            });
            let book = (q64.clone(), k64.clone(), v64.clone());
            add("delta recurrent f64", true, d == 64, &mut || {
                let (q, k, v) = (&book.0, &book.1, &book.2);
                let read = delta_rule_recurrent(q, k, v, &beta64).unwrap();
                black_box(read.output);
            });
            add("delta chunkwise", true, true, &mut || {
                black_box(
                    delta_rule_chunkwise_f32(q, k, v, beta, delta_chunk)
                        .unwrap(),
                );
            });
            add("scores first", false, small, &mut || {
                black_box(linear_attention_scores_first_f32(q, k, v).unwrap());
            });
            add("memory first", false, true, &mut || {
                black_box(linear_attention_memory_first_f32(q, k, v).unwrap());
            });
            eprintln!("d = {d}, N = {n}: done at {:?}", started.elapsed());
        }
    }

    (rows, allocations)
}

pub fn render_table(rows: &[Row], ceiling: f64) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:<21} {:>3} {:>6} {:>4} {:>10} {:>19} {:>11} {:>7} {:>6}",
        "form",
        "d",
        "N",
        "C",
        "median ms",
        "min–max ms",
        "tokens/s",
        "GFLOP/s",
        "% ceil"
    );
    for r in rows {
        let chunk = match r.chunk {
            0 => "–".to_string(),
            c => c.to_string(),
        };
        let name = if r.causal {
            r.form.to_string()
        } else {
            format!("{} (nc)", r.form)
        };
        let _ = match r.timing {
            Some(t) => writeln!(
                out,
                "{:<21} {:>3} {:>6} {:>4} {:>10.3} {:>19} {:>11.3e} {:>7.2} {:>6.1}",
                name,
                r.d,
                r.n,
                chunk,
                t.median * 1e3,
                format!("{:.3}–{:.3}", t.min * 1e3, t.max * 1e3),
                r.n as f64 / t.median,
                r.gflops,
                100.0 * r.gflops / ceiling
            ),
            None => writeln!(
                out,
                "{:<21} {:>3} {:>6} {:>4} skipped (see below)",
                name, r.d, r.n, chunk
            ),
        };
    }
    let _ = write!(
        out,
        "(nc) non-causal. GFLOP/s counts every product a form computes, the \
         masked half of a score matrix included, except for softmax \
         tiled, which counts its useful work (the unmasked half) only. C: the chunk size measured \
         fastest at N = 4096. Skipped: the N×N forms above N = 4096 at \
         d = 32 (seconds per call, 1 GiB of scores), and the f64 listing of \
         the delta rule (the book's form, for reference) at d = 32."
    );
    out
}

/// The table as `listings/data/bench.tsv`, which Appendix E prints
/// (`listings::appendix::speed::committed::BenchTable`): four comment
/// lines of provenance, a header, a row per form, width and length; a
/// skipped form has `-` for its times. `command`: the command that ran.
pub fn to_tsv(
    rows: &[Row],
    (ceiling, engines): (f64, &str),
    machine: &Machine,
    command: &str,
) -> String {
    let mut out = format!(
        "# machine: {} ({} cores)\n# date: {}\n# command: {command} \
         (release, f32, one thread, thread CPU time)\n# ceiling: {ceiling:.1} \
         GFLOP/s {engines}\n{}\n",
        machine.cpu,
        machine.cores,
        machine.date,
        listings::appendix::speed::committed::BENCH_HEADER
    );
    for r in rows {
        let times = match r.timing {
            Some(t) => {
                format!("{:.6e}\t{:.6e}\t{:.6e}", t.median, t.min, t.max)
            }
            None => "-\t-\t-".to_string(),
        };
        let _ = writeln!(
            out,
            "{}\t{}\t{}\t{}\t{}\t{times}",
            r.form, r.causal, r.d, r.n, r.chunk
        );
    }
    out
}

pub fn find<'a>(rows: &'a [Row], form: &str, d: usize, n: usize) -> &'a Row {
    rows.iter()
        .find(|r| r.form == form && r.d == d && r.n == n)
        .expect("every form runs at every size")
}

/// The two softmax forms of the targets, alone, at (d, N): the rows of a
/// run of the softmax baseline only.
pub fn time_softmax(d: usize, n: usize) -> Vec<Row> {
    let [q, k, v] = random_inputs(2, n, d, d).map(|a| to_f32(&a));
    let (q, k, v) = (&q, &k, &v);
    let mut rows = Vec::new();
    let mut add = |form, f: &mut dyn FnMut()| {
        let timing = time(f);
        let gflops = flops(form, n, d, 0) / timing.median / 1e9;
        rows.push(Row {
            form,
            causal: true,
            d,
            n,
            chunk: 0,
            timing: Some(timing),
            gflops,
        });
    };
    add("softmax tiled", &mut || {
        black_box(softmax_attention_tiled_f32(q, k, v).unwrap());
    });
    add("softmax (causal)", &mut || {
        black_box(softmax_attention_causal_f32(q, k, v).unwrap());
    });
    rows
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::timing::{CeilingPoint, describe_ceiling};
    use listings::appendix::speed::committed::BenchTable;

    #[test]
    fn the_committed_table_names_the_ceilings_engine_and_the_better_rate() {
        let machine = Machine {
            cpu: "a CPU".to_string(),
            cores: 2,
            date: "2026-12-02".to_string(),
        };
        let rows = [Row {
            form: "softmax tiled",
            causal: true,
            d: 64,
            n: 256,
            chunk: 0,
            timing: Some(Timing {
                median: 2e-3,
                min: 1e-3,
                max: 3e-3,
                reps: 3,
            }),
            gflops: 10.0,
        }];
        // Whichever engine is faster at whichever size, the ceiling is the
        // best rate of all, and the words name the engine that reached it.
        for (points, best, first) in [
            (
                [(128, 50.0, 70.0), (1024, 80.0, 140.0)],
                140.0,
                "(gemm 0.19 on",
            ),
            (
                [(128, 90.0, 70.0), (1024, 80.0, 60.0)],
                90.0,
                "(matrixmultiply on",
            ),
        ] {
            let points = points.map(|(size, ndarray, gemm)| CeilingPoint {
                size,
                ndarray,
                gemm,
            });
            let (ceiling, engines) = describe_ceiling(&points);
            assert_eq!(ceiling, best);
            assert!(engines.starts_with(first), "{engines}");
            let tsv = to_tsv(&rows, (ceiling, &engines), &machine, "bench");
            let table = BenchTable::parse(&tsv).unwrap();
            assert_eq!(table.ceiling, best);
            assert_eq!(table.ceiling_engines, engines);
        }
    }
}
