//! Train every model of the recall comparison in "After the paper" and
//! write the results to target/recall.tsv, or with `-- --commit` to the
//! committed listings/data/recall.tsv. Run it with `cargo xtask recall`,
//! which builds it in release mode; it uses every core and prints each run
//! as it finishes.

use listings::after::recall::study::{budget_line, plan, to_tsv};
use listings::data_file::{destination, provenance};
use listings::measure::Machine;
use listings::trainers::sweep::run_all;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let commit = match args.as_slice() {
        [] => false,
        [flag] if flag == "--commit" => true,
        _ => {
            eprintln!("usage: recall_sweep [--commit]");
            std::process::exit(2);
        }
    };
    let out = destination("recall.tsv", commit);
    let machine = Machine::now();
    let runs = plan();
    let total = runs.len();
    let start = Instant::now();
    println!("{total} runs on {} threads", machine.cores);
    let records = run_all(&runs, machine.cores, |r, done| {
        println!(
            "[{done:>3}/{total}] {:>14} n = {:>2}, seed {}: accuracy {:.3} ({:.0} s CPU; {:.1} min so far)",
            r.mixer,
            r.pairs,
            r.seed,
            r.accuracy,
            r.seconds,
            start.elapsed().as_secs_f64() / 60.0
        );
    })
    .unwrap_or_else(|e| {
        eprintln!("recall_sweep: {e}");
        std::process::exit(1);
    });
    let wall = start.elapsed().as_secs_f64() / 60.0;
    let cpu: f64 = records.iter().map(|r| r.seconds).sum::<f64>() / 60.0;
    let mut comments = vec![
        "Results of the trained recall comparison of \"After the paper\" (multi-query associative recall, one layer).".to_string(),
        "Made by `cargo xtask recall` (listings/examples/recall_sweep.rs); do not edit by hand.".to_string(),
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
