//! Train every model of the tracking study in "The transition's spectrum"
//! and write the results to target/tracking.tsv, or with `--commit` to
//! listings/data/tracking.tsv, the file the book reads. Run it with
//! `cargo xtask tracking`, which builds it in release mode; it uses every
//! core and prints each run as it finishes.

use listings::after::spectrum::tracking::study::{
    LENGTHS, budget_line, plan, to_tsv,
};
use listings::data_file::{destination, provenance};
use listings::measure::Machine;
use listings::trainers::sweep::run_tracking;
use std::time::Instant;

fn main() {
    let commit = std::env::args().skip(1).any(|a| a == "--commit");
    let out = destination("tracking.tsv", commit);
    let machine = Machine::now();
    let runs = plan();
    let total = runs.len();
    let start = Instant::now();
    println!("{total} runs on {} threads", machine.cores);
    let records = run_tracking(&runs, machine.cores, |r, done| {
        let acc: Vec<String> =
            r.accuracy.iter().map(|a| format!("{a:.3}")).collect();
        println!(
            "[{done:>3}/{total}] {:>6} {:>8} {:>6} seed {}: accuracy at {LENGTHS:?} bits {} ({:.0} s CPU; {:.1} min so far)",
            r.task,
            r.kind,
            r.range,
            r.seed,
            acc.join(" "),
            r.seconds,
            start.elapsed().as_secs_f64() / 60.0
        );
    })
    .unwrap_or_else(|e| {
        eprintln!("tracking_sweep: {e}");
        std::process::exit(1);
    });
    let wall = start.elapsed().as_secs_f64() / 60.0;
    let cpu: f64 = records.iter().map(|r| r.seconds).sum::<f64>() / 60.0;
    let mut comments = vec![
        "Results of the trained tracking study of \"The transition's spectrum\" (parity, counting modulo 3 and the word problem of S3; one layer, DeltaProduct with up to three writes per token).".to_string(),
        "Made by `cargo xtask tracking --commit` (listings/examples/tracking_sweep.rs); do not edit by hand.".to_string(),
    ];
    comments.extend(provenance(&machine, wall, Some(cpu)));
    comments.push(budget_line());
    std::fs::write(&out, to_tsv(&comments, &records))
        .expect("write the data file");
    println!(
        "wrote {} ({wall:.1} min wall, {cpu:.1} min CPU)",
        out.display()
    );
}
