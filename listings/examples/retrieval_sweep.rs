//! Train every model of the retrieval chapter and write the results to
//! listings/data/retrieval.tsv. Run it with `cargo xtask retrieval`, which
//! builds it in release mode; it uses every core and shows its progress.

use listings::measure::Machine;
use listings::paper::retrieval::model::{Layer, Phi, Rule};
use listings::paper::retrieval::sweep::{
    Record, STEP, budget_line, lanes, paper_capacity, run_lanes, to_tsv,
};
use listings::paper::retrieval::task::Setting;
use std::io::Write;
use std::path::Path;
use std::sync::Mutex;
use std::time::Instant;

/// A rough cost of a lane, to order lanes and estimate the time left: the
/// sizes the paper's logs say it will sweep, each weighted by n² · p.
fn expected_cost(layer: Layer, setting: Setting) -> f64 {
    let p = layer.width(64) as f64;
    let top = match setting {
        Setting::Distinct => {
            let cap = paper_capacity(setting, &layer.name()).unwrap_or(60);
            (cap + 3 * STEP).min(600)
        }
        Setting::Repeated => 100,
    };
    let len = setting.len(1) as f64;
    let extra = match layer {
        Layer::Linear(_, Rule::Delta) => len * len * p / 64.0,
        Layer::Linear(Phi::Favor(_), _) => 8.0,
        _ => 1.0,
    };
    (1..=top / STEP)
        .map(|i| ((i * STEP) as f64).powi(2) * (p + 64.0) * extra)
        .sum::<f64>()
        + 4.0 * (top as f64).powi(2) * (p + 64.0) * extra
}

fn main() {
    let out = Path::new(env!("CARGO_MANIFEST_DIR")).join("data/retrieval.tsv");
    let mut lanes = lanes();
    lanes.sort_by(|a, b| {
        expected_cost(b.0, b.1).total_cmp(&expected_cost(a.0, a.1))
    });
    let total_cost: f64 = lanes.iter().map(|l| expected_cost(l.0, l.1)).sum();
    let threads = std::thread::available_parallelism().map_or(1, |n| n.get());
    eprintln!("training {} lanes on {threads} threads", lanes.len());
    let start = Instant::now();
    let done_cost = Mutex::new(0.0f64);
    let runs = Mutex::new(0usize);
    let records = run_lanes(&lanes, threads, |r: &Record, left| {
        let p = r.p as f64;
        let mut cost = done_cost.lock().unwrap();
        *cost += (r.n as f64).powi(2) * (p + 64.0) * r.steps as f64 / 2400.0;
        let mut count = runs.lock().unwrap();
        *count += 1;
        let fraction = (*cost / total_cost).min(0.99);
        let elapsed = start.elapsed().as_secs();
        let eta = (elapsed as f64 * (1.0 / fraction - 1.0)) as u64;
        let width = 30;
        let filled = (fraction * width as f64) as usize;
        eprintln!(
            "[{}{}] {:>3} runs, {left} jobs open, {}m{:02}s elapsed, ~{}m left  \
             {} {} n={} seed {}: {} at step {}, best {:.4}",
            "#".repeat(filled),
            "-".repeat(width - filled),
            *count,
            elapsed / 60,
            elapsed % 60,
            eta / 60,
            r.setting,
            r.layer,
            r.n,
            r.seed,
            r.stop,
            r.steps,
            r.best_loss,
        );
        let _ = std::io::stderr().flush();
    });
    let minutes = start.elapsed().as_secs_f64() / 60.0;
    let cpu = cpu_minutes();
    let machine = Machine::now();
    let comments = vec![
        "Results of the synthetic retrieval experiments (Schlag et al. 2021, §6.1) at the paper's scale, d = 64.".to_string(),
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
