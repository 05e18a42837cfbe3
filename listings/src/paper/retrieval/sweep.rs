//! The sweep behind the chapter's figures: which models are trained, on
//! how many keys, and the record of how each run ended, from which a
//! layer's capacity is read.
//!
//! `cargo xtask retrieval` trains this plan with the fast trainer (the
//! crate's `trainers` module: release mode, every core) and writes
//! `listings/data/retrieval.tsv`; the book reads that committed file
//! while it builds (`study`), so building the book never retrains.

use crate::paper::retrieval::model::{FwmPhi, Layer, Phi, Rule, Shape};
use crate::paper::retrieval::task::Setting;
use crate::paper::retrieval::train::{Budget, Outcome, Run, Stop};

/// Key width, as in the paper.
pub const D: usize = 64;

/// Numbers of keys: n = 20, 40, …, 600 in Setting 1 (as the paper), and
/// 20 … 100 in Setting 2 (the paper goes to 200).
pub const STEP: usize = 20;
pub const SETTING1_MAX: usize = 600;
pub const SETTING2_MAX: usize = 100;
/// A Setting 1 sweep stops after this many unsolved sizes in a row past
/// its last solved one.
pub const GIVE_UP_AFTER: usize = 3;
/// Seeds: the first for every size, the others again at each map's
/// boundary (its largest solved n and the next size).
pub const SEEDS: [u64; 3] = [1, 2, 3];

/// The paper's optimiser and stopping rule, unchanged.
pub fn budget() -> Budget {
    Budget::paper()
}

/// The budget of `layer`'s runs: the paper's, except for the fwm baseline
/// with tanh, which the paper's code trains with batch 128 and lr 1e-4
/// ("necessary for FWM"), and which we stop after `TANH_FWM_STEPS` steps:
/// the paper's runs went on for up to 35,900 steps, and a step at batch
/// 128 costs this machine about half a second at n = 100.
pub fn budget_for(layer: Layer) -> Budget {
    match layer {
        Layer::Fwm(FwmPhi::Tanh) => Budget {
            batch: 128,
            lr: 1e-4,
            max_steps: TANH_FWM_STEPS,
            ..budget()
        },
        _ => budget(),
    }
}

/// The step cap of the tanh fwm runs (ours, not the paper's).
pub const TANH_FWM_STEPS: usize = 1000;

/// The fwm lanes stop at this many keys, as the other Setting 2 lanes do
/// (the paper's go to 200): an fwm step keeps every S_t of an episode, and
/// at n = 100 a step costs this machine about 0.23 s (DPFP-1, batch 32) or
/// 0.5 s (tanh, batch 128).
pub const FWM_MAX: usize = 100;

/// The largest n a lane trains.
pub fn top_for(layer: Layer, setting: Setting) -> usize {
    match (layer, setting) {
        (_, Setting::Distinct) => SETTING1_MAX,
        (Layer::Fwm(_), Setting::Repeated) => FWM_MAX,
        (_, Setting::Repeated) => SETTING2_MAX,
    }
}

/// The layers compared in Setting 1 (capacity) and Setting 2 (updates).
pub fn setting1_layers() -> Vec<Layer> {
    use {Phi::*, Rule::Sum};
    vec![
        Layer::Linear(EluPlusOne, Sum),
        Layer::Linear(Dpfp(1), Sum),
        Layer::Linear(Dpfp(2), Sum),
        Layer::Linear(Dpfp(3), Sum),
        Layer::Linear(Favor(D), Sum),
        Layer::Softmax,
    ]
}

pub fn setting2_layers() -> Vec<Layer> {
    use {Phi::*, Rule::*};
    vec![
        Layer::Linear(EluPlusOne, Sum),
        Layer::Linear(Dpfp(1), Sum),
        Layer::Linear(Dpfp(2), Sum),
        Layer::Linear(EluPlusOne, Delta),
        Layer::Linear(Dpfp(1), Delta),
        Layer::Linear(Dpfp(2), Delta),
        Layer::Linear(Favor(D), Delta),
        Layer::Fwm(FwmPhi::Map(Dpfp(1))),
        Layer::Fwm(FwmPhi::Tanh),
    ]
}

/// Every lane: Setting 1's layers, then Setting 2's.
pub fn lanes() -> Vec<(Layer, Setting)> {
    let one = setting1_layers()
        .into_iter()
        .map(|l| (l, Setting::Distinct));
    let two = setting2_layers()
        .into_iter()
        .map(|l| (l, Setting::Repeated));
    one.chain(two).collect()
}

// ANCHOR: plan
/// One run of `layer` on n keys with `seed`.
pub fn run(layer: Layer, setting: Setting, n: usize, seed: u64) -> Run {
    Run {
        layer,
        setting,
        shape: Shape::paper(n, D),
        seed,
        budget: budget_for(layer),
    }
}

/// What to train next in a lane (one layer in one setting), given the
/// records of the lane so far; `None` when the lane is done. Setting 1:
/// n = 20, 40, … with the first seed until `GIVE_UP_AFTER` unsolved sizes
/// in a row follow the last solved one (or n = 600), then the other seeds
/// at the boundary. Setting 2: every size, the first seed.
pub fn next_run(
    layer: Layer,
    setting: Setting,
    done: &[Record],
) -> Option<Run> {
    let first: Vec<&Record> =
        done.iter().filter(|r| r.seed == SEEDS[0]).collect();
    let top = top_for(layer, setting);
    let last_n = first.last().map_or(0, |r| r.n);
    let unsolved_tail = first.iter().rev().take_while(|r| !r.solved()).count();
    let sweeping = last_n < top
        && (setting == Setting::Repeated || unsolved_tail < GIVE_UP_AFTER);
    if sweeping {
        return Some(run(layer, setting, last_n + STEP, SEEDS[0]));
    }
    if setting == Setting::Repeated {
        return None;
    }
    let boundary = boundary(&first);
    for n in boundary {
        for &seed in &SEEDS[1..] {
            if !done.iter().any(|r| r.n == n && r.seed == seed) {
                return Some(run(layer, setting, n, seed));
            }
        }
    }
    None
}

/// A lane's boundary: its largest solved n (first seed) and the next size
/// swept, whichever exist.
pub fn boundary(first_seed: &[&Record]) -> Vec<usize> {
    let solved = first_seed.iter().filter(|r| r.solved()).map(|r| r.n).max();
    match solved {
        Some(n) if first_seed.iter().any(|r| r.n == n + STEP) => {
            vec![n, n + STEP]
        }
        Some(n) => vec![n],
        None => first_seed.first().map(|r| r.n).into_iter().collect(),
    }
}
// ANCHOR_END: plan

/// The runs `next_run` asks for after `done` if none of them is solved:
/// every Setting 2 size not yet run, or a Setting 1 lane's next sizes and
/// its boundary seeds. Placeholder records stand in for the results.
pub fn planned_runs(
    layer: Layer,
    setting: Setting,
    done: &[Record],
) -> Vec<Run> {
    let mut planned = done.to_vec();
    let mut runs = Vec::new();
    while let Some(run) = next_run(layer, setting, &planned) {
        let outcome = Outcome {
            best_loss: f64::NAN,
            steps: 0,
            stop: Stop::Budget,
        };
        planned.push(Record::new(&run, &outcome));
        runs.push(run);
    }
    runs
}

/// The runs of a lane not yet in `done`, whatever order `done` finished
/// in: a Setting 2 lane's sizes run as separate jobs, so its records can
/// arrive out of order; a Setting 1 lane's first seed runs in order.
pub fn runs_left(layer: Layer, setting: Setting, done: &[Record]) -> Vec<Run> {
    let mut done = done.to_vec();
    done.sort_by_key(|r| (r.seed, r.n));
    match setting {
        Setting::Distinct => planned_runs(layer, setting, &done),
        Setting::Repeated => planned_runs(layer, setting, &[])
            .into_iter()
            .filter(|r| {
                !done.iter().any(|d| d.n == r.shape.n && d.seed == r.seed)
            })
            .collect(),
    }
}

/// One line of the data file.
#[derive(Clone, Debug, PartialEq)]
pub struct Record {
    pub setting: String,
    pub layer: String,
    pub n: usize,
    pub d: usize,
    pub p: usize,
    pub seed: u64,
    pub best_loss: f64,
    pub steps: usize,
    pub stop: String,
}

impl Record {
    /// The record of `run` ending in `outcome`.
    pub fn new(run: &Run, outcome: &Outcome) -> Record {
        Record {
            setting: run.setting.name().to_string(),
            layer: run.layer.name(),
            n: run.shape.n,
            d: run.shape.d,
            p: run.layer.width(run.shape.d),
            seed: run.seed,
            best_loss: outcome.best_loss,
            steps: outcome.steps,
            stop: outcome.stop.to_string(),
        }
    }

    /// Whether the run reached the paper's target loss.
    pub fn solved(&self) -> bool {
        self.stop == Stop::Solved.to_string()
    }
}

/// The first seed's runs of one layer in one setting, in order of n.
pub fn series<'a>(
    records: &'a [Record],
    setting: Setting,
    layer: &str,
) -> Vec<&'a Record> {
    let mut out: Vec<&Record> = records
        .iter()
        .filter(|r| r.setting == setting.name() && r.layer == layer)
        .filter(|r| r.seed == SEEDS[0])
        .collect();
    out.sort_by_key(|r| r.n);
    out
}

// ANCHOR: capacity
/// A layer's capacity: the largest n whose run (first seed) solved the
/// task, 0 if none did.
pub fn capacity(records: &[Record], setting: Setting, layer: &str) -> usize {
    series(records, setting, layer)
        .iter()
        .filter(|r| r.solved())
        .map(|r| r.n)
        .max()
        .unwrap_or(0)
}
// ANCHOR_END: capacity
