//! Train every model of the recall comparison in Zoology's setting ("After
//! the paper") and write the results to target/mqar.tsv, or with
//! `--commit` to listings/data/mqar.tsv, the file the book reads. With
//! `--rewrite`, train the rewrite variant instead (half of the keys
//! written twice) into target/mqar-rewrite.tsv; with `--state`, the study
//! of recall against state size into target/mqar-state.tsv (`--commit`:
//! the file of the same name in listings/data/). Run it with `cargo xtask
//! mqar [--rewrite | --state] [--commit]`, which builds it in release
//! mode; it uses every core and prints each run as it finishes.

use listings::after::recall::zoology_study::{
    self, Record, budget_line, plan, to_tsv,
};
use listings::after::recall::{rewrite_study, zoology_state};
use listings::data_file::{destination, provenance};
use listings::measure::Machine;
use listings::trainers::sweep::{run_mqar, run_mqar_rewrite};
use std::time::Instant;

/// Which study to train.
#[derive(Clone, Copy, PartialEq)]
enum Study {
    Zoology,
    Rewrite,
    State,
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    let known = ["--commit", "--rewrite", "--state"];
    if args.iter().any(|a| !known.contains(&a.as_str()))
        || (has("--rewrite") && has("--state"))
    {
        eprintln!("usage: mqar_sweep [--rewrite | --state] [--commit]");
        std::process::exit(2);
    }
    let commit = has("--commit");
    let study = match (has("--rewrite"), has("--state")) {
        (true, _) => Study::Rewrite,
        (_, true) => Study::State,
        _ => Study::Zoology,
    };
    let name = match study {
        Study::Zoology => "mqar.tsv",
        Study::Rewrite => "mqar-rewrite.tsv",
        Study::State => "mqar-state.tsv",
    };
    let out = destination(name, commit);
    let machine = Machine::now();
    let runs: Vec<zoology_study::Run> = match study {
        Study::Zoology => plan(),
        Study::Rewrite => rewrite_study::plan(),
        Study::State => zoology_state::plan(),
    };
    let total = runs.len();
    let start = Instant::now();
    println!("{total} runs on {} threads", machine.cores);
    let show = |r: &Record, extra: String, done: usize| {
        println!(
            "[{done:>3}/{total}] {:>22} d = {:>2}, lr {:e}, seed {}: accuracy {:.3?}{extra} ({:.0} s CPU; {:.1} min so far)",
            r.mixer,
            r.d,
            r.lr,
            r.seed,
            r.accuracy,
            r.seconds,
            start.elapsed().as_secs_f64() / 60.0
        );
    };
    let fail = |e: String| -> ! {
        eprintln!("mqar_sweep: {e}");
        std::process::exit(1);
    };
    let (text, cpu) = if study == Study::Rewrite {
        let records = run_mqar_rewrite(&runs, machine.cores, |r, done| {
            let extra = format!(
                ", written twice {:.3?}, old {:.3?}",
                r.rewritten, r.old
            );
            show(&r.run, extra, done);
        })
        .unwrap_or_else(|e| fail(e));
        let cpu: f64 = records.iter().map(|r| r.run.seconds).sum::<f64>();
        let mut comments = vec![
            "Results of the rewrite variant of the recall comparison in Zoology's setting of \"After the paper\" (half of the keys written twice, the latest value asked; two layers with short convolutions).".to_string(),
            "Made by `cargo xtask mqar --rewrite --commit` (listings/examples/mqar_sweep.rs); do not edit by hand.".to_string(),
        ];
        let wall = start.elapsed().as_secs_f64() / 60.0;
        comments.extend(provenance(&machine, wall, Some(cpu / 60.0)));
        comments.push(rewrite_study::budget_line());
        (rewrite_study::to_tsv(&comments, &records), cpu)
    } else {
        let records = run_mqar(&runs, machine.cores, |r, done| {
            show(r, String::new(), done);
        })
        .unwrap_or_else(|e| fail(e));
        let cpu: f64 = records.iter().map(|r| r.seconds).sum::<f64>();
        let mut comments = match study {
            Study::State => vec![
                "Results of recall against state size in Zoology's setting of \"After the paper\" (the rules at two more widths, sliding-window attention, a hybrid; mqar.tsv holds widths 16 and 32).".to_string(),
                "Made by `cargo xtask mqar --state --commit` (listings/examples/mqar_sweep.rs); do not edit by hand.".to_string(),
            ],
            _ => vec![
                "Results of the recall comparison in Zoology's setting of \"After the paper\" (multi-query associative recall, two layers with short convolutions).".to_string(),
                "Made by `cargo xtask mqar --commit` (listings/examples/mqar_sweep.rs); do not edit by hand.".to_string(),
            ],
        };
        let wall = start.elapsed().as_secs_f64() / 60.0;
        comments.extend(provenance(&machine, wall, Some(cpu / 60.0)));
        comments.push(budget_line());
        if study == Study::State {
            comments.push(zoology_state::rates_line());
        }
        (to_tsv(&comments, &records), cpu)
    };
    let wall = start.elapsed().as_secs_f64() / 60.0;
    std::fs::write(&out, text).expect("write the data file");
    println!(
        "wrote {} ({wall:.1} min wall, {:.1} min CPU)",
        out.display(),
        cpu / 60.0
    );
}
