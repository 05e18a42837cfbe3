//! `cargo xtask bench`: time every schedule of the book at f32 on one
//! thread, beside this machine's f32 matrix-multiply throughput (the
//! ceiling), print a table and the targets' verdicts, and write the table
//! as TSV and JSON to target/bench/. Built in release mode by xtask. The
//! committed files under listings/data/ are rewritten only with
//! `--commit`, so a reader's run never turns the test command red.
//!
//! Every form timed is a tested function of `listings::fast`: the fast
//! forms, and f32 copies of the forms the book shows only in f64 (softmax
//! attention, the parallel N × N form, the two non-causal groupings), so
//! that every form is timed at one precision.
//!
//! One module per group of rows: `forms` (the schedules), `threads` (thread
//! scaling); `targets` holds what the numbers must reach, one table.

mod after;
mod crossover;
mod forms;
mod gemm;
mod json;
mod paths;
mod softmax_bound;
mod targets;
mod threads;
mod timing;
mod trainer;

use forms::{choose_chunks, render_table, time_forms};
use json::to_json;
use listings::measure::Machine;
use std::alloc::{GlobalAlloc, Layout, System};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering::Relaxed};
use std::time::Instant;
use targets::targets;
use threads::{render_scaling, thread_scaling};
use timing::{ceiling, describe_ceiling};
use trainer::{render_trainer, time_trainer};

/// The system allocator, counting calls: the bench reports how many
/// allocations the recurrent form makes at each N.
struct Counting;
pub(crate) static CALLS: AtomicUsize = AtomicUsize::new(0);

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

fn main() {
    let started = Instant::now();
    let machine = Machine::now();
    eprintln!(
        "bench: f32, one thread, thread CPU time, {} ({})",
        machine.cpu, machine.date
    );
    eprintln!(
        "vector sets of this CPU: {}",
        gemm::vector_sets().join(", ")
    );
    eprintln!("{}", paths::describe());
    if std::env::args().any(|a| a == "paths") {
        println!("{}", paths::render_paths(&paths::time_paths()));
        return println!("in {:.0} s", started.elapsed().as_secs_f64());
    }
    let ceiling_points = ceiling();
    let (first, engines) = describe_ceiling(&ceiling_points);
    eprintln!("matmul ceiling: {first:.1} GFLOP/s {engines}");
    eprintln!("{ceiling_points:?}");
    let commit = std::env::args().any(|a| a == "--commit");
    if std::env::args().any(|a| a == "crossover") {
        return softmax_baseline(ceiling_points, started, commit);
    }
    if std::env::args().any(|a| a == "rules") {
        return rules_only(started);
    }

    let (chunk_for, chunk_times) = choose_chunks();
    let (rows, allocations) = time_forms(&chunk_for, started);

    let (d64, [chunk64, delta_chunk64]) = chunk_for[0];
    assert_eq!(d64, 64, "the first width is the targets'");
    let scaling = thread_scaling(chunk64, delta_chunk64, machine.cores);
    eprintln!("timing the retrieval trainer (about half a minute)");
    let trainer = time_trainer();

    // The ceiling again, after the run: a shared machine may have been
    // busy the first time, and the ceiling is the best the machine did.
    let mut ceiling_points = ceiling_points;
    ceiling_points.extend(timing::ceiling());
    let (ceiling, engines) = describe_ceiling(&ceiling_points);
    eprintln!(
        "matmul ceiling, best of both rounds: {ceiling:.1} GFLOP/s {engines}"
    );
    let table = render_table(&rows, ceiling);
    println!("{}\n{table}", paths::describe());
    let command = match commit {
        true => "cargo xtask bench --commit",
        false => "cargo xtask bench",
    };
    let tsv = forms::to_tsv(&rows, (ceiling, &engines), &machine, command);
    println!("wrote {}", write_data("bench.tsv", &tsv, commit));
    let rules = after::time_rules(delta_chunk64);
    println!("{}", after::render_rules(&rules));
    println!("{}", after::render_rule_targets(&rules));
    let targets = targets(&rows, ceiling, &allocations);
    println!("{targets}");
    print_softmax_bound(&rows, ceiling);
    println!("{}", render_scaling(&scaling));
    println!("{}", render_trainer(&trainer, ceiling));
    println!(
        "trainer targets (ratios of this run):\n{}",
        targets::trainer_targets(&trainer, ceiling)
    );
    let crossover = crossover::measure("cargo xtask bench");
    println!("{}", crossover::render(&crossover));
    // The crossover's committed file is `bench crossover --commit`'s.
    let written = write_data("crossover.tsv", &crossover.to_tsv(), false);
    println!("wrote {written}");
    let best: Vec<(usize, f64)> =
        ceiling_points.iter().map(|p| (p.size, p.best())).collect();
    let json = to_json(
        &machine,
        ceiling,
        &best,
        &chunk_times,
        &rows,
        &allocations,
        &scaling,
        &trainer,
    );
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target/bench");
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

/// The tiled softmax's two products timed alone at the targets' size, and
/// the bound they set (`softmax_bound`).
fn print_softmax_bound(rows: &[forms::Row], ceiling: f64) {
    let (d, n) = targets::AT;
    let products = softmax_bound::time_products(d, n);
    if let Some(bound) = softmax_bound::bound(rows, &products, ceiling) {
        println!("{bound}");
    }
}

/// `cargo xtask bench crossover`: the softmax targets, the decode table and
/// the crossover lengths only; the committed file rewritten if `commit`.
fn softmax_baseline(
    mut ceiling_points: Vec<timing::CeilingPoint>,
    started: Instant,
    commit: bool,
) {
    let (d, n) = targets::AT;
    let rows = forms::time_softmax(d, n);
    let (first, _) = describe_ceiling(&ceiling_points);
    eprintln!("{}", render_table(&rows, first));
    let data = crossover::measure(match commit {
        true => "cargo xtask bench crossover --commit",
        false => "cargo xtask bench crossover",
    });
    ceiling_points.extend(timing::ceiling());
    let (ceiling, engines) = describe_ceiling(&ceiling_points);
    eprintln!(
        "matmul ceiling, best of both rounds: {ceiling:.1} GFLOP/s {engines}"
    );
    println!("{}", render_table(&rows, ceiling));
    println!("{}", targets(&rows, ceiling, &[]));
    print_softmax_bound(&rows, ceiling);
    println!("{}", crossover::render(&data));
    println!(
        "wrote {}",
        write_data("crossover.tsv", &data.to_tsv(), commit)
    );
    println!("in {:.0} s", started.elapsed().as_secs_f64());
}

/// `cargo xtask bench rules`: the update rules' table and their targets
/// only, the tuned delta rule beside them in chunks of the size the main
/// table would choose; nothing written.
fn rules_only(started: Instant) {
    let (chunk_for, _) = choose_chunks();
    let (d64, [_, delta_chunk64]) = chunk_for[0];
    assert_eq!(d64, 64, "the first width is the targets'");
    let rules = after::time_rules(delta_chunk64);
    println!("{}", after::render_rules(&rules));
    println!("{}", after::render_rule_targets(&rules));
    println!("in {:.0} s", started.elapsed().as_secs_f64());
}

/// Write `tsv` to target/bench/`name`, and over listings/data/`name` too
/// if `commit` (`cargo xtask bench --commit`); returns what was written.
fn write_data(name: &str, tsv: &str, commit: bool) -> String {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let dir = root.join("target/bench");
    std::fs::create_dir_all(&dir).expect("target/bench can be made");
    std::fs::write(dir.join(name), tsv).expect("TSV written");
    if commit {
        let committed = root.join("listings/data").join(name);
        std::fs::write(committed, tsv).expect("TSV written");
        format!("target/bench/{name} and listings/data/{name}")
    } else {
        format!("target/bench/{name} (listings/data/ only with --commit)")
    }
}
