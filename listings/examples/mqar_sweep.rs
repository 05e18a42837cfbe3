//! Train every model of the recall comparison in Zoology's setting ("After
//! the paper") and write the results to target/mqar.tsv, or with
//! `--commit` to listings/data/mqar.tsv, the file the book reads. With
//! `--state`, train the study of recall against state size instead
//! (target/mqar-state.tsv, or listings/data/mqar-state.tsv). Run it with
//! `cargo xtask mqar`, which builds it in release mode; it uses every core
//! and prints each run as it finishes.

use listings::after::family::recall::zoology_state;
use listings::after::family::recall::zoology_study::{
    budget_line, plan, to_tsv,
};
use listings::data_file::{destination, provenance};
use listings::measure::Machine;
use listings::trainers::sweep::run_mqar;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let flags: Vec<&str> = args.iter().map(String::as_str).collect();
    let (state, commit) = match flags.as_slice() {
        [] => (false, false),
        ["--commit"] => (false, true),
        ["--state"] => (true, false),
        ["--state", "--commit"] | ["--commit", "--state"] => (true, true),
        _ => {
            eprintln!("usage: mqar_sweep [--state] [--commit]");
            std::process::exit(2);
        }
    };
    let name = if state { "mqar-state.tsv" } else { "mqar.tsv" };
    let out = destination(name, commit);
    let machine = Machine::now();
    let runs = if state { zoology_state::plan() } else { plan() };
    let total = runs.len();
    let start = Instant::now();
    println!("{total} runs on {} threads", machine.cores);
    let records = run_mqar(&runs, machine.cores, |r, done| {
        println!(
            "[{done:>3}/{total}] {:>22} d = {:>2}, lr {:e}, seed {}: accuracy {:.3?} ({:.0} s CPU; {:.1} min so far)",
            r.mixer,
            r.d,
            r.lr,
            r.seed,
            r.accuracy,
            r.seconds,
            start.elapsed().as_secs_f64() / 60.0
        );
    })
    .unwrap_or_else(|e| {
        eprintln!("mqar_sweep: {e}");
        std::process::exit(1);
    });
    let wall = start.elapsed().as_secs_f64() / 60.0;
    let cpu: f64 = records.iter().map(|r| r.seconds).sum::<f64>() / 60.0;
    let mut comments = match state {
        false => vec![
            "Results of the recall comparison in Zoology's setting of \"After the paper\" (multi-query associative recall, two layers with short convolutions).".to_string(),
            "Made by `cargo xtask mqar --commit` (listings/examples/mqar_sweep.rs); do not edit by hand.".to_string(),
        ],
        true => vec![
            "Results of recall against state size in Zoology's setting of \"After the paper\" (the rules at two more widths, sliding-window attention, a hybrid; mqar.tsv holds widths 16 and 32).".to_string(),
            "Made by `cargo xtask mqar --state --commit` (listings/examples/mqar_sweep.rs); do not edit by hand.".to_string(),
        ],
    };
    comments.extend(provenance(&machine, wall, Some(cpu)));
    comments.push(budget_line());
    if state {
        comments.push(zoology_state::rates_line());
    }
    std::fs::write(&out, to_tsv(&comments, &records))
        .expect("write the data file");
    println!(
        "wrote {} ({wall:.1} min wall, {cpu:.1} min CPU)",
        out.display()
    );
}
