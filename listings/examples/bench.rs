//! `cargo xtask bench`: time every schedule of the book at f32 on one
//! thread, beside this machine's f32 matrix-multiply throughput (the
//! ceiling), print a table and the target ratios, and write the
//! table as JSON to target/bench/. Built in release mode by xtask.
//!
//! Every form timed is a tested function of `listings::appendix::speed`: the fast
//! forms, and f32 copies of the forms the book shows only in f64 (softmax
//! attention, the parallel N × N form, the two non-causal groupings), so
//! that every form is timed at one precision.

use listings::appendix::speed::{
    Timed, ValueForm, across_value_columns, arithmetic,
    delta_rule_chunkwise_f32, delta_rule_recurrent_f32,
    linear_attention_chunkwise_f32, linear_attention_memory_first_f32,
    linear_attention_parallel_f32, linear_attention_recurrent_f32,
    linear_attention_scores_first_f32, random_inputs,
    softmax_attention_causal_f32, to_f32,
};
use listings::m3::schedules::Machine;
use listings::ndarray::Array1;
use listings::paper::delta_rule::delta_rule_recurrent;
use std::alloc::{GlobalAlloc, Layout, System};
use std::fmt::Write as _;
use std::hint::black_box;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::{Duration, Instant};

/// The system allocator, counting calls: the bench reports how many
/// allocations the recurrent form makes at each N.
struct Counting;
static CALLS: AtomicUsize = AtomicUsize::new(0);

// SAFETY: every call goes to `System` unchanged.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        CALLS.fetch_add(1, Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

const LENGTHS: [usize; 4] = [256, 1024, 4096, 16384];
const WIDTHS: [usize; 2] = [64, 32];
/// The largest N at which the N × N forms run, for each width: their
/// scores take N² · 4 bytes (1 GiB at N = 16384) and seconds per call;
/// the targets need them at N = 16384 for d = 64 only.
fn max_n_squared(d: usize) -> usize {
    if d == 64 { 16384 } else { 4096 }
}
const CHUNKS: [usize; 6] = [8, 16, 32, 64, 128, 256];

/// Median, min and max seconds of a form, after one warm-up call.
#[derive(Clone, Copy)]
struct Timing {
    median: f64,
    min: f64,
    max: f64,
    reps: usize,
}

/// CPU seconds this thread has run (CLOCK_THREAD_CPUTIME_ID): on a machine
/// shared with other work, the time a form computed, not the time it
/// waited for a core. Every form here runs on this one thread.
fn cpu_seconds() -> f64 {
    let mut now = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: clock_gettime writes one timespec through a valid pointer.
    let status =
        unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut now) };
    assert_eq!(status, 0, "this system has a thread CPU clock");
    now.tv_sec as f64 + now.tv_nsec as f64 * 1e-9
}

/// Warm up once, then repeat at least 3 and at most 9 times, stopping
/// after 3 once a second of samples is in.
fn time(mut f: impl FnMut()) -> Timing {
    f();
    let mut samples = Vec::new();
    let started = Instant::now();
    while samples.len() < 9
        && (samples.len() < 3 || started.elapsed() < Duration::from_secs(1))
    {
        let t = cpu_seconds();
        f();
        samples.push(cpu_seconds() - t);
    }
    samples.sort_by(f64::total_cmp);
    Timing {
        median: samples[samples.len() / 2],
        min: samples[0],
        max: samples[samples.len() - 1],
        reps: samples.len(),
    }
}

/// The arithmetic of a form by its name in the table (`speed::arithmetic`).
fn flops(form: &str, n: usize, d: usize, chunk: usize) -> f64 {
    let timed = match form {
        "softmax (causal)" => Timed::Softmax,
        "parallel N×N" => Timed::Parallel,
        "recurrent" => Timed::Recurrent,
        "chunkwise" => Timed::Chunkwise,
        "delta recurrent" | "delta recurrent f64" => Timed::DeltaRecurrent,
        "delta chunkwise" => Timed::DeltaChunkwise,
        "scores first" => Timed::ScoresFirst,
        "memory first" => Timed::MemoryFirst,
        _ => unreachable!("{form}"),
    };
    arithmetic(timed, n, d, d, chunk)
}

/// A chunkwise form, a width, and median seconds at each chunk size.
type ChunkTimes = (&'static str, usize, Vec<(usize, f64)>);

struct Row {
    form: &'static str,
    causal: bool,
    d: usize,
    n: usize,
    chunk: usize,
    timing: Option<Timing>,
    gflops: f64,
}

/// GFLOP/s of ndarray's `dot` on square f32 matrices of a few sizes. The
/// bench measures it before and after the forms and keeps the best rate
/// of both rounds as the ceiling.
fn ceiling() -> Vec<(usize, f64)> {
    [128, 256, 512, 1024]
        .into_iter()
        .map(|size| {
            let a = to_f32(&random_inputs(9, size, size, size)[2]);
            let t = time(|| {
                black_box(a.dot(&a));
            });
            (size, 2.0 * (size as f64).powi(3) / t.median / 1e9)
        })
        .collect()
}

fn main() {
    let started = Instant::now();
    let machine = Machine::now();
    eprintln!(
        "bench: f32, one thread, thread CPU time, {} ({})",
        machine.cpu, machine.date
    );
    let ceiling_points = ceiling();
    let first = ceiling_points.iter().map(|p| p.1).fold(0.0, f64::max);
    eprintln!("matmul ceiling: {first:.1} GFLOP/s ({ceiling_points:?})");

    // The chunk sizes: for each chunkwise form and width, the fastest of a
    // few at N = 4096.
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

    let (d64, [chunk64, delta_chunk64]) = chunk_for[0];
    assert_eq!(d64, 64, "the first width is the targets'");
    let scaling = thread_scaling(chunk64, delta_chunk64, machine.cores);

    // The ceiling again, after the run: a shared machine may have been
    // busy the first time, and the ceiling is the best the machine did.
    let mut ceiling_points = ceiling_points;
    ceiling_points.extend(self::ceiling());
    let ceiling = ceiling_points.iter().map(|p| p.1).fold(0.0, f64::max);
    eprintln!("matmul ceiling, best of both rounds: {ceiling:.1} GFLOP/s");
    let table = render_table(&rows, ceiling);
    println!("{table}");
    let targets = targets(&rows, ceiling, &allocations);
    println!("{targets}");
    println!("{}", render_scaling(&scaling));
    let json = to_json(
        &machine,
        ceiling,
        &ceiling_points,
        &chunk_times,
        &rows,
        &allocations,
        &scaling,
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../target/bench");
    std::fs::create_dir_all(&dir).expect("target/bench can be made");
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    for name in ["latest.json".to_string(), format!("bench-{seconds}.json")] {
        std::fs::write(dir.join(&name), &json).expect("JSON written");
    }
    println!(
        "wrote target/bench/latest.json and target/bench/bench-{seconds}.json \
         in {:.0} s",
        started.elapsed().as_secs_f64()
    );
}

fn render_table(rows: &[Row], ceiling: f64) -> String {
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
         masked half of a score matrix included. C: the chunk size measured \
         fastest at N = 4096. Skipped: the N×N forms above N = 4096 at \
         d = 32 (seconds per call, 1 GiB of scores), and the f64 listing of \
         the delta rule (the book's form, for reference) at d = 32."
    );
    out
}

fn find<'a>(rows: &'a [Row], form: &str, d: usize, n: usize) -> &'a Row {
    rows.iter()
        .find(|r| r.form == form && r.d == d && r.n == n)
        .expect("every form runs at every size")
}

fn targets(
    rows: &[Row],
    ceiling: f64,
    allocations: &[(usize, usize, usize)],
) -> String {
    let (d, n) = (64, 16384);
    let median =
        |form| find(rows, form, d, n).timing.map_or(f64::NAN, |t| t.median);
    let percent = |form| 100.0 * find(rows, form, d, n).gflops / ceiling;
    let calls: Vec<usize> = allocations
        .iter()
        .filter(|a| a.0 == d)
        .map(|a| a.2)
        .collect();
    let flat = calls.iter().all(|&c| c == calls[0]);
    let checks = [
        (
            "chunkwise reaches ≥ 25% of the matmul ceiling",
            format!("{:.1}%", percent("chunkwise")),
            percent("chunkwise") >= 25.0,
        ),
        (
            "chunkwise is ≥ 10× faster than parallel N×N",
            format!("{:.1}×", median("parallel N×N") / median("chunkwise")),
            median("parallel N×N") / median("chunkwise") >= 10.0,
        ),
        (
            "recurrent reaches ≥ 10% of the matmul ceiling",
            format!("{:.1}%", percent("recurrent")),
            percent("recurrent") >= 10.0,
        ),
        (
            "recurrent allocates nothing per token",
            format!("{calls:?} allocations at N = {LENGTHS:?}"),
            flat,
        ),
        (
            "delta chunkwise is ≥ 5× faster than delta recurrent",
            format!(
                "{:.1}×",
                median("delta recurrent") / median("delta chunkwise")
            ),
            median("delta recurrent") / median("delta chunkwise") >= 5.0,
        ),
    ];
    let mut out =
        format!("targets at N = {n}, d = {d} (ratios of this run):\n");
    for (what, value, met) in checks {
        let verdict = if met { "met" } else { "NOT met" };
        let _ = writeln!(out, "  {verdict:<8} {what}: {value}");
    }
    let _ = writeln!(
        out,
        "for reference: delta chunkwise against the book's f64 listing of \
         the recurrence (allocating every token): {:.1}× faster",
        median("delta recurrent f64") / median("delta chunkwise")
    );
    if let Some(bound) = delta_bound(rows, ceiling) {
        let _ = write!(out, "{bound}");
    }
    out
}

/// How much faster the chunkwise delta rule could be than the recurrence
/// timed in this run, were it to run at the full ceiling, at the fastest
/// of all chunk sizes: the recurrence's time over the least arithmetic of
/// the chunkwise form divided by the ceiling. Threads do not raise it:
/// each row of W evolves on its own, so the recurrence splits over cores
/// as the chunkwise form does.
fn delta_bound(rows: &[Row], ceiling: f64) -> Option<Bound> {
    let (d, n) = (64, 16384);
    let recurrence = find(rows, "delta recurrent", d, n);
    let least = (1..=256)
        .map(|c| arithmetic(Timed::DeltaChunkwise, n, d, d, c))
        .fold(f64::INFINITY, f64::min);
    recurrence.timing.map(|t| Bound {
        recurrence_percent: 100.0 * recurrence.gflops / ceiling,
        extra_arithmetic: least / arithmetic(Timed::DeltaRecurrent, n, d, d, 1),
        speedup: t.median / (least / (ceiling * 1e9)),
    })
}

/// The bound of `delta_bound`, in its three numbers.
struct Bound {
    /// The delta recurrence's rate as a percentage of the ceiling.
    recurrence_percent: f64,
    /// The least arithmetic of the chunkwise form over the recurrence's.
    extra_arithmetic: f64,
    /// The recurrence's time over the chunkwise form's at the ceiling.
    speedup: f64,
}

impl std::fmt::Display for Bound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "bound: the delta recurrence runs at {:.1}% of the ceiling; the \
             chunkwise delta rule does at least {:.2}x its arithmetic, so even \
             at 100% of the ceiling it would be at most {:.1}x faster than \
             the recurrence of this run.",
            self.recurrence_percent, self.extra_arithmetic, self.speedup
        )
    }
}

fn to_json(
    machine: &Machine,
    ceiling: f64,
    ceiling_points: &[(usize, f64)],
    chunk_times: &[ChunkTimes],
    rows: &[Row],
    allocations: &[(usize, usize, usize)],
    scaling: &[Scaling],
) -> String {
    let num = |x: f64| {
        if x.is_finite() {
            format!("{x:e}")
        } else {
            "null".to_string()
        }
    };
    let mut out = String::from("{\n");
    let _ = writeln!(out, "  \"cpu\": {:?},", machine.cpu);
    let _ = writeln!(out, "  \"cores\": {},", machine.cores);
    let _ = writeln!(out, "  \"date\": {:?},", machine.date);
    let _ = writeln!(out, "  \"precision\": \"f32\",\n  \"threads\": 1,");
    let _ = writeln!(out, "  \"ceiling_gflops\": {},", num(ceiling));
    if let Some(b) = delta_bound(rows, ceiling) {
        let _ = writeln!(
            out,
            "  \"delta_bound\": {{\"recurrence_percent\": {}, \
             \"extra_arithmetic\": {}, \"speedup\": {}}},",
            num(b.recurrence_percent),
            num(b.extra_arithmetic),
            num(b.speedup)
        );
    }
    let points: Vec<String> = ceiling_points
        .iter()
        .map(|(s, g)| format!("{{\"size\": {s}, \"gflops\": {}}}", num(*g)))
        .collect();
    let _ = writeln!(out, "  \"matmul\": [{}],", points.join(", "));
    let chunks: Vec<String> = chunk_times
        .iter()
        .flat_map(|(form, d, times)| {
            times.iter().map(move |(c, s)| {
                format!("{{\"form\": {form:?}, \"d\": {d}, \"n\": 4096, \"chunk\": {c}, \"seconds\": {}}}", num(*s))
            })
        })
        .collect();
    let _ = writeln!(
        out,
        "  \"chunk_sizes\": [\n    {}\n  ],",
        chunks.join(",\n    ")
    );
    let allocs: Vec<String> = allocations
        .iter()
        .map(|(d, n, c)| format!("{{\"d\": {d}, \"n\": {n}, \"calls\": {c}}}"))
        .collect();
    let _ =
        writeln!(out, "  \"recurrent_allocations\": [{}],", allocs.join(", "));
    let scaled: Vec<String> = scaling
        .iter()
        .map(|s| {
            format!(
                "{{\"form\": {:?}, \"threads\": {}, \"one_thread_s\": {}, \
                 \"all_threads_s\": {}}}",
                s.form,
                s.threads,
                num(s.one),
                num(s.all)
            )
        })
        .collect();
    let _ = writeln!(out, "  \"thread_scaling\": [{}],", scaled.join(", "));
    let entries: Vec<String> = rows
        .iter()
        .map(|r| {
            let (median, min, max, reps) = r.timing.map_or(
                ("null".into(), "null".into(), "null".into(), 0),
                |t| (num(t.median), num(t.min), num(t.max), t.reps),
            );
            format!(
                "{{\"form\": {:?}, \"causal\": {}, \"d\": {}, \"n\": {}, \
                 \"chunk\": {}, \"median_s\": {median}, \"min_s\": {min}, \
                 \"max_s\": {max}, \"reps\": {reps}, \"gflops\": {}, \
                 \"skipped\": {}}}",
                r.form,
                r.causal,
                r.d,
                r.n,
                r.chunk,
                num(r.gflops),
                r.timing.is_none()
            )
        })
        .collect();
    let _ =
        writeln!(out, "  \"rows\": [\n    {}\n  ]", entries.join(",\n    "));
    out.push('}');
    out.push('\n');
    out
}

/// One form timed by the wall clock on one thread and on every core, with
/// its value columns split by `speed::across_value_columns`.
struct Scaling {
    form: &'static str,
    threads: usize,
    one: f64,
    all: f64,
}

/// At N = 16384, d = 64: each causal linear form on one thread and on
/// `cores` threads, in alternating rounds, median wall-clock seconds of 5.
/// The wall clock, because the point is the time to the answer; on a
/// shared machine it is noisier than the table's CPU time.
fn thread_scaling(
    chunk: usize,
    delta_chunk: usize,
    cores: usize,
) -> Vec<Scaling> {
    let n = 16384;
    let [q, k, v] = random_inputs(3, n, 64, 64).map(|a| to_f32(&a));
    let beta = Array1::<f32>::from_elem(n, 0.5);
    let (q, k, beta) = (&q, &k, &beta);
    let forms: [(&'static str, &ValueForm); 4] = [
        ("recurrent", &|v| linear_attention_recurrent_f32(q, k, v)),
        ("chunkwise", &|v| {
            linear_attention_chunkwise_f32(q, k, v, chunk)
        }),
        ("delta recurrent", &|v| {
            delta_rule_recurrent_f32(q, k, v, beta)
        }),
        ("delta chunkwise", &|v| {
            delta_rule_chunkwise_f32(q, k, v, beta, delta_chunk)
        }),
    ];
    let threads = cores.max(1);
    forms
        .into_iter()
        .map(|(form, f)| {
            let run = |t: usize| {
                let start = Instant::now();
                black_box(
                    across_value_columns(&v, t, f).expect("shapes agree"),
                );
                start.elapsed().as_secs_f64()
            };
            run(1);
            run(threads); // warm-up
            let (mut one, mut all) = (Vec::new(), Vec::new());
            for _ in 0..5 {
                one.push(run(1));
                all.push(run(threads));
            }
            let median = |mut x: Vec<f64>| {
                x.sort_by(f64::total_cmp);
                x[x.len() / 2]
            };
            Scaling {
                form,
                threads,
                one: median(one),
                all: median(all),
            }
        })
        .collect()
}

fn render_scaling(scaling: &[Scaling]) -> String {
    let mut out = String::from(
        "threads at N = 16384, d = 64 (wall clock, value columns split \
         across threads, median of 5):\n",
    );
    for s in scaling {
        let _ = writeln!(
            out,
            "  {:<16} 1 thread {:>8.3} ms   {} threads {:>8.3} ms   speed-up {:.2}×",
            s.form,
            s.one * 1e3,
            s.threads,
            s.all * 1e3,
            s.one / s.all
        );
    }
    out
}
