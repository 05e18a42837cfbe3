//! Train every model of the language-model study ("The language-modelling
//! result, small") and write the results to target/lm.tsv, or with
//! `--commit` to listings/data/lm.tsv, the file the book reads. Run it
//! with `cargo xtask lm`, which builds it in release mode; it uses every
//! core and prints each run as it finishes. `--steps N` trains every run
//! for N steps instead (a timing; never with `--commit`).

use listings::data_file::{destination, provenance};
use listings::measure::Machine;
use listings::paper::language_model::study::{budget_line, plan, to_tsv};
use listings::trainers::lm::text::{SPLIT, cuts, kjv};
use listings::trainers::sweep::run_lm;
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let commit = args.iter().any(|a| a == "--commit");
    let steps: Option<usize> = args
        .iter()
        .position(|a| a == "--steps")
        .and_then(|i| args.get(i + 1)?.parse().ok());
    if commit && (steps.is_some() || args.iter().any(|a| a == "--only")) {
        eprintln!("lm_sweep: --steps and --only cannot be committed");
        std::process::exit(2);
    }
    let text = kjv().unwrap_or_else(|e| {
        eprintln!("lm_sweep: {e}");
        std::process::exit(1);
    });
    let out = destination("lm.tsv", commit);
    let machine = Machine::now();
    let mut runs = plan();
    let lr: Option<f64> = args
        .iter()
        .position(|a| a == "--lr")
        .and_then(|i| args.get(i + 1)?.parse().ok());
    if let Some(lr) = lr {
        runs.iter_mut().for_each(|r| r.budget.lr = lr);
    }
    if let Some(steps) = steps {
        for r in &mut runs {
            r.budget.steps = steps;
            r.budget.every = steps;
            r.budget.first = steps;
        }
    }
    // `--only NAME`: the runs of one layer (a timing or a look).
    if let Some(i) = args.iter().position(|a| a == "--only") {
        let only = args.get(i + 1).cloned().unwrap_or_default();
        runs.retain(|r| {
            listings::paper::language_model::study::name(r.mixer) == only
        });
    }
    let total = runs.len();
    let start = Instant::now();
    println!("{total} runs on {} threads", machine.cores);
    let records = run_lm(&runs, machine.cores, |r, done| {
        let last = r.curve.last().map_or(f64::NAN, |c| c.1);
        println!(
            "[{done:>2}/{total}] {:>20} seed {}: {} params, valid {last:.3} bits/byte, test {}, diverged at {:?} ({:.0} s CPU; {:.1} min so far)",
            r.name,
            r.seed,
            r.parameters,
            r.test.map_or("-".to_string(), |t| format!("{t:.3}")),
            r.diverged_at,
            r.seconds,
            start.elapsed().as_secs_f64() / 60.0
        );
    })
    .unwrap_or_else(|e| {
        eprintln!("lm_sweep: {e}");
        std::process::exit(1);
    });
    let wall = start.elapsed().as_secs_f64() / 60.0;
    let cpu: f64 = records.iter().map(|r| r.seconds).sum::<f64>() / 60.0;
    let [a, b] = cuts(&text);
    let mut comments = vec![
        "Results of the language-model study of \"The language-modelling result, small\": six fast-weight layers, three seeds each, one budget.".to_string(),
        "Made by `cargo xtask lm --commit` (listings/examples/lm_sweep.rs); do not edit by hand.".to_string(),
    ];
    comments.extend(provenance(&machine, wall, Some(cpu)));
    comments.push(format!(
        "Text: the King James Bible as Debian's bible-kjv 4.38 prints it ({} bytes); split by position at the first newline after {:.0} % and {:.0} %: train bytes 0..{a}, validation {a}..{b}, test {b}..{}.",
        text.len(),
        SPLIT[0] * 100.0,
        SPLIT[1] * 100.0,
        text.len()
    ));
    comments.push(budget_line());
    std::fs::write(&out, to_tsv(&comments, &records))
        .expect("write the data file");
    println!(
        "wrote {} ({wall:.1} min wall, {cpu:.1} min CPU)",
        out.display()
    );
}
