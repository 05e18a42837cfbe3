//! Train every model of the retrieval chapter and write the results to
//! listings/data/retrieval.tsv. Run it with `cargo xtask retrieval`, which
//! builds it in release mode; it uses every core and shows its progress.

use listings::measure::Machine;
use listings::paper::retrieval::sweep::{
    Record, budget_line, plan, run_all, to_tsv,
};
use std::io::Write;
use std::path::Path;
use std::time::Instant;

fn main() {
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/retrieval.tsv");
    let runs = plan();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    eprintln!("training {} models on {threads} threads", runs.len());
    let start = Instant::now();
    let outcomes = run_all(&runs, threads, |done, total, run, outcome| {
        let width = 30;
        let filled = done * width / total;
        let elapsed = start.elapsed().as_secs();
        let eta = elapsed * (total - done) as u64 / done as u64;
        eprint!(
            "\r[{}{}] {done:>3}/{total} runs  {}m{:02}s elapsed, ~{}m{:02}s left  \
             last: {} n={} {} {:.4}    ",
            "#".repeat(filled),
            "-".repeat(width - filled),
            elapsed / 60,
            elapsed % 60,
            eta / 60,
            eta % 60,
            run.layer.name(),
            run.shape.n,
            outcome.stop,
            outcome.best_loss,
        );
        let _ = std::io::stderr().flush();
    });
    eprintln!();
    let minutes = start.elapsed().as_secs_f64() / 60.0;
    let cpu = cpu_minutes();
    let machine = Machine::now();
    let records: Vec<Record> = runs
        .iter()
        .zip(&outcomes)
        .map(|(r, o)| Record::new(r, o))
        .collect();
    let comments = vec![
        "Results of the synthetic retrieval sweep (Schlag et al. 2021, §6.1), scaled down.".to_string(),
        "Made by `cargo xtask retrieval` (listings/examples/retrieval_sweep.rs); do not edit by hand.".to_string(),
        format!(
            "Machine: {} ({threads} threads); {minutes:.1} minutes wall clock, {}.",
            machine.cpu,
            cpu.map_or("CPU time unknown".to_string(), |c| format!("{c:.1} minutes of CPU time")),
        ),
        format!("Date: {}", machine.date),
        budget_line(),
    ];
    std::fs::write(&out, to_tsv(&comments, &records))
        .expect("write the data file");
    eprintln!(
        "wrote {} ({} runs, {minutes:.1} min)",
        out.display(),
        records.len()
    );
}

/// CPU time used by this process so far, in minutes (Linux: /proc/self/stat,
/// user + system time in clock ticks of 1/100 s).
fn cpu_minutes() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name, which is in parentheses.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let user: f64 = fields.get(11)?.parse().ok()?;
    let system: f64 = fields.get(12)?.parse().ok()?;
    Some((user + system) / 100.0 / 60.0)
}
