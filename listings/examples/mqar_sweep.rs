//! Train every model of the recall comparison in Zoology's setting ("After
//! the paper") and write the results to target/mqar.tsv, or with
//! `--commit` to listings/data/mqar.tsv, the file the book reads. With
//! `--rewrite`, train the rewrite variant instead (half of the keys
//! written twice) into target/mqar-rewrite.tsv, or with `--commit` into
//! listings/data/mqar-rewrite.tsv. Run it with `cargo xtask mqar
//! [--rewrite] [--commit]`, which builds it in release mode; it uses
//! every core and prints each run as it finishes.

use listings::after::family::recall::rewrite_study;
use listings::after::family::recall::zoology_study::{
    self, Record, budget_line, plan, to_tsv,
};
use listings::data_file::{destination, provenance};
use listings::measure::Machine;
use listings::trainers::sweep::{run_mqar, run_mqar_rewrite};
use std::time::Instant;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let has = |flag: &str| args.iter().any(|a| a == flag);
    if args.iter().any(|a| a != "--commit" && a != "--rewrite") {
        eprintln!("usage: mqar_sweep [--rewrite] [--commit]");
        std::process::exit(2);
    }
    let (commit, rewrite) = (has("--commit"), has("--rewrite"));
    let name = if rewrite {
        "mqar-rewrite.tsv"
    } else {
        "mqar.tsv"
    };
    let out = destination(name, commit);
    let machine = Machine::now();
    let runs: Vec<zoology_study::Run> = match rewrite {
        true => rewrite_study::plan(),
        false => plan(),
    };
    let total = runs.len();
    let start = Instant::now();
    println!("{total} runs on {} threads", machine.cores);
    let show = |r: &Record, extra: String, done: usize| {
        println!(
            "[{done:>3}/{total}] {:>14} d = {:>2}, lr {:e}, seed {}: accuracy {:.3?}{extra} ({:.0} s CPU; {:.1} min so far)",
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
    let (text, cpu) = if rewrite {
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
        let mut comments = vec![
            "Results of the recall comparison in Zoology's setting of \"After the paper\" (multi-query associative recall, two layers with short convolutions).".to_string(),
            "Made by `cargo xtask mqar --commit` (listings/examples/mqar_sweep.rs); do not edit by hand.".to_string(),
        ];
        let wall = start.elapsed().as_secs_f64() / 60.0;
        comments.extend(provenance(&machine, wall, Some(cpu / 60.0)));
        comments.push(budget_line());
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
