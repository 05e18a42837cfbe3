//! Train every model of the retrieval chapter and write the results to
//! target/retrieval.tsv, or with `--commit` to the committed
//! listings/data/retrieval.tsv. Run it with `cargo xtask retrieval`, which
//! builds it in release mode; it uses every core and shows its progress.
//!
//! `-- --only LAYER/SETTING,...` (e.g. `--only tanh/fwm/setting2`) trains
//! only those lanes and keeps the committed records of every other lane:
//! the file is the one a full run would write, but for the time lines.

use listings::data_file::{destination, provenance, took};
use listings::measure::Machine;
use listings::paper::retrieval::model::Layer;
use listings::paper::retrieval::study::{
    budget_line, committed, paper_capacity, paper_runs, sort_records, to_tsv,
};
use listings::paper::retrieval::sweep::{Record, STEP, budget_for, lanes, run};
use listings::paper::retrieval::task::Setting;
use listings::trainers::estimate::Estimate;
use listings::trainers::retrieval::step_flops;
use listings::trainers::sweep::{Job, Timing, run_lanes};
use std::io::Write;
use std::sync::Mutex;
use std::time::Instant;

/// Steps a run is expected to take: what it took in the committed file
/// (a run's outcome depends only on its seed), else the paper's logged run
/// at the same size, else 3,000; at most the run's budget.
fn expected_steps(layer: Layer, setting: Setting, n: usize) -> f64 {
    let ours = committed().1.into_iter().find(|r| {
        r.setting == setting.name()
            && r.layer == layer.name()
            && r.n == n
            && r.seed == 1
    });
    let paper = || {
        paper_runs()
            .into_iter()
            .find(|r| {
                r.setting == setting && r.layer == layer.name() && r.n == n
            })
            .map_or(3000, |r| r.steps)
    };
    let steps = ours.map_or_else(paper, |r| r.steps);
    steps.min(budget_for(layer).max_steps) as f64
}

/// The predicted arithmetic of a run: expected steps × flops per step.
fn run_cost(layer: Layer, setting: Setting, n: usize) -> f64 {
    let r = run(layer, setting, n, 1);
    let flops = step_flops(layer, setting, r.shape, r.budget.batch);
    expected_steps(layer, setting, n) * flops as f64
}

/// A job's predicted cost: a run's, or a Setting 1 lane's sizes up to
/// three steps past the paper's capacity.
fn job_cost(job: &Job) -> f64 {
    match *job {
        Job::Run(r) => run_cost(r.layer, r.setting, r.shape.n),
        Job::Lane(layer, setting) => {
            let cap = paper_capacity(setting, &layer.name()).unwrap_or(60);
            let top = (cap + 3 * STEP).min(600);
            (1..=top / STEP)
                .map(|i| run_cost(layer, setting, i * STEP))
                .sum()
        }
    }
}

fn main() {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let commit = args.iter().any(|a| a == "--commit");
    args.retain(|a| a != "--commit");
    let out = destination("retrieval.tsv", commit);
    let only: Option<Vec<String>> = match args.as_slice() {
        [] => None,
        [flag, list] if flag == "--only" => {
            Some(list.split(',').map(str::to_string).collect())
        }
        _ => {
            eprintln!(
                "usage: retrieval_sweep [--commit] [--only LAYER/SETTING,...]"
            );
            std::process::exit(2);
        }
    };
    let key = |(l, s): &(Layer, Setting)| format!("{}/{}", l.name(), s.name());
    let mut chosen = lanes();
    if let Some(only) = &only {
        for name in only {
            if !chosen.iter().any(|l| key(l) == *name) {
                let known: Vec<String> = chosen.iter().map(key).collect();
                eprintln!("unknown lane {name}; lanes: {}", known.join(", "));
                std::process::exit(2);
            }
        }
        chosen.retain(|l| only.contains(&key(l)));
    }
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    eprintln!("training {} lanes on {threads} threads", chosen.len());
    let start = Instant::now();
    let estimate = Mutex::new(
        Estimate::new(&chosen, threads).with_previous(&committed().1),
    );
    let records =
        run_lanes(&chosen, threads, job_cost, |r: &Record, open, t: Timing| {
            let mut est = estimate.lock().unwrap();
            est.finished(r, t);
            let elapsed = start.elapsed().as_secs_f64();
            let done = est.runs();
            eprintln!(
                "{:>3} runs, {open} jobs open, {}m{:02}s elapsed, {} left | \
             {} {} n={} seed {}: {} at step {}, best {:.4}, \
             {:.0} s wall, {:.0} s CPU",
                done,
                elapsed as u64 / 60,
                elapsed as u64 % 60,
                est.describe_all(),
                r.setting,
                r.layer,
                r.n,
                r.seed,
                r.stop,
                r.steps,
                r.best_loss,
                t.wall,
                t.cpu,
            );
            let _ = std::io::stderr().flush();
        });
    let minutes = start.elapsed().as_secs_f64() / 60.0;
    let cpu = cpu_minutes();
    let machine = Machine::now();
    let time = took(minutes, cpu);
    let est = estimate.into_inner().unwrap();
    eprintln!(
        "\nCPU time per lane (sum over its runs):\n{}",
        est.per_lane()
    );
    let (comments, records) = match &only {
        None => (
            vec![
                "Results of the synthetic retrieval experiments (Schlag et al. 2021, §6.1) at the paper's scale, d = 64.".to_string(),
                "Made by `cargo xtask retrieval` (listings/examples/retrieval_sweep.rs); do not edit by hand.".to_string(),
            ]
            .into_iter()
            .chain(provenance(&machine, minutes, cpu))
            .chain([budget_line()])
            .collect(),
            records,
        ),
        Some(names) => {
            // Keep every other lane's committed records and provenance.
            let (old, mut kept) = committed();
            kept.retain(|r| {
                !names.contains(&format!("{}/{}", r.layer, r.setting))
            });
            kept.extend(records);
            sort_records(&mut kept);
            let mut comments: Vec<String> = old
                .into_iter()
                .filter(|c| !c.starts_with("Budget:"))
                .collect();
            comments.push(format!(
                "Lanes {} trained alone with `-- --only` on {} ({} threads): {time}.",
                names.join(", "),
                machine.date,
                threads
            ));
            comments.push(budget_line());
            (comments, kept)
        }
    };
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
