//! The sweep behind the chapter's figures: which models are trained, on how
//! many keys, and the data file that records how each run ended.
//!
//! `cargo xtask retrieval` runs [`plan`] (in release mode, on every core)
//! and writes `listings/data/retrieval.tsv`; the book reads that committed
//! file while it builds, so building the book never retrains.

use crate::data_file;
use crate::measure::thread_cpu_seconds;
use crate::paper::retrieval::fast::step_flops;
use crate::paper::retrieval::model::{FwmPhi, Layer, Phi, Rule, Shape};
use crate::paper::retrieval::task::Setting;
use crate::paper::retrieval::train::{Budget, Outcome, Run, Stop, train_fast};
use crate::table::Table;
use std::fmt::Write as _;
use std::sync::Mutex;

/// Key width, as in the paper.
pub const D: usize = 64;

// ANCHOR: plan
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
/// (the paper's go to 200): an fwm step keeps every W_t of an episode, and
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

/// The data file's line that records the budget its runs were made with.
pub fn budget_line() -> String {
    let b = budget();
    let mut exceptions = String::new();
    for (layer, _) in lanes() {
        let x = budget_for(layer);
        if x != b && !exceptions.contains(&layer.name()) {
            exceptions += &format!(
                " {}: batch {}, lr {}, at most {} steps.",
                layer.name(),
                x.batch,
                x.lr,
                x.max_steps
            );
        }
    }
    format!(
        "Budget: batch {}, lr {}, evaluated every {} steps on {} sequences \
         of up to {} queries, stop at loss {} or after more than {} \
         evaluations without improvement or {} steps.",
        b.batch,
        b.lr,
        b.eval_every,
        b.eval_sequences,
        b.max_queries,
        b.target_loss,
        b.patience,
        b.max_steps
    ) + &exceptions
}

/// A unit of work for one thread: a Setting 1 lane's first-seed sweep,
/// whose next size depends on the last result, or one run known in
/// advance (a Setting 2 size, a boundary seed).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Job {
    Lane(Layer, Setting),
    Run(Run),
}

/// The time one run took: wall clock and CPU time of its thread, seconds.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Timing {
    pub wall: f64,
    pub cpu: f64,
}

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

/// Train every lane on `threads` threads and return every record, in the
/// order of [`lanes`] (then seed, then n), whatever order they ran in.
/// Jobs are taken longest first by `cost` (a predicted cost in any unit):
/// Setting 2 lanes become one job per size up front, a Setting 1 lane's
/// boundary seeds become jobs when its sweep ends. `progress(record,
/// jobs_open, timing)` is called as each run finishes.
/// The job of the queue predicted to cost most, taken out of it: each
/// thread of [`run_lanes`] takes that one next.
pub fn take_costliest(
    queue: &mut Vec<Job>,
    cost: impl Fn(&Job) -> f64,
) -> Option<Job> {
    let at = (0..queue.len())
        .max_by(|&a, &b| cost(&queue[a]).total_cmp(&cost(&queue[b])))?;
    Some(queue.swap_remove(at))
}

pub fn run_lanes(
    lanes: &[(Layer, Setting)],
    threads: usize,
    cost: impl Fn(&Job) -> f64 + Sync,
    progress: impl Fn(&Record, usize, Timing) + Sync,
) -> Vec<Record> {
    struct State {
        queue: Vec<Job>,
        sweeping: usize,
        records: Vec<Record>,
    }
    let mut queue = Vec::new();
    for &(layer, setting) in lanes {
        match setting {
            Setting::Distinct => queue.push(Job::Lane(layer, setting)),
            Setting::Repeated => queue.extend(
                planned_runs(layer, setting, &[]).into_iter().map(Job::Run),
            ),
        }
    }
    let state = Mutex::new(State {
        queue,
        sweeping: 0,
        records: Vec::new(),
    });
    let lock = || state.lock().expect("no thread panicked");
    let finish = |run: &Run| {
        let (wall, cpu) = (std::time::Instant::now(), thread_cpu_seconds());
        let record = Record::new(run, &train_fast(run, |_, _| {}));
        let timing = Timing {
            wall: wall.elapsed().as_secs_f64(),
            cpu: match (cpu, thread_cpu_seconds()) {
                (Some(a), Some(b)) => b - a,
                _ => f64::NAN,
            },
        };
        let mut st = lock();
        let open = st.queue.len() + st.sweeping;
        progress(&record, open, timing);
        st.records.push(record.clone());
        record
    };
    let take = |st: &mut State| take_costliest(&mut st.queue, &cost);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                loop {
                    let job = {
                        let mut st = lock();
                        match take(&mut st) {
                            Some(job) => {
                                if let Job::Lane(..) = job {
                                    st.sweeping += 1;
                                }
                                Some(job)
                            }
                            // A sweeping lane may still queue its seeds.
                            None if st.sweeping > 0 => None,
                            None => break,
                        }
                    };
                    match job {
                        None => std::thread::sleep(
                            std::time::Duration::from_millis(200),
                        ),
                        Some(Job::Run(run)) => {
                            finish(&run);
                        }
                        Some(Job::Lane(layer, setting)) => {
                            let mut done = Vec::new();
                            while let Some(run) =
                                next_run(layer, setting, &done)
                            {
                                if run.seed != SEEDS[0] {
                                    break;
                                }
                                done.push(finish(&run));
                            }
                            let extra = planned_runs(layer, setting, &done);
                            let mut st = lock();
                            st.queue.extend(extra.into_iter().map(Job::Run));
                            st.sweeping -= 1;
                        }
                    }
                }
            });
        }
    });
    let mut records = state.into_inner().expect("no thread panicked").records;
    sort_records(&mut records);
    records
}

/// Records in the data file's order: by lane as [`lanes`] lists them, then
/// seed, then n.
pub fn sort_records(records: &mut [Record]) {
    let all = lanes();
    records.sort_by_key(|r| {
        let lane = all
            .iter()
            .position(|(l, s)| l.name() == r.layer && s.name() == r.setting);
        (lane, r.seed, r.n)
    });
}

/// An estimate of the time a sweep has left, from the runs finished so
/// far: each layer's measured seconds per counted flop ([`step_flops`]),
/// times the flops of every run still planned, at the fewest and the most
/// steps a run of its lane (or, before its first, of any lane) has taken.
///
/// With the records of an earlier run of the same plan
/// ([`Estimate::with_previous`]), it also gives a single expectation: a
/// run's outcome depends only on its seed, so a repeated sweep takes the
/// steps the earlier one took.
pub struct Estimate {
    lanes: Vec<(Layer, Setting)>,
    threads: usize,
    done: Vec<(Record, Timing)>,
    previous: Vec<Record>,
}

impl Estimate {
    pub fn new(lanes: &[(Layer, Setting)], threads: usize) -> Estimate {
        Estimate {
            lanes: lanes.to_vec(),
            threads: threads.max(1),
            done: Vec::new(),
            previous: Vec::new(),
        }
    }

    /// The same estimate, told the records an earlier run of the plan wrote.
    pub fn with_previous(mut self, previous: &[Record]) -> Estimate {
        self.previous = previous.to_vec();
        self
    }

    /// Seconds of wall clock left if the sweep repeats the earlier run: each
    /// of its runs not yet done, at the steps it took then and the measured
    /// rate of its layer, shared by the threads, but no less than what a
    /// Setting 1 lane, whose sizes run one after another, still has to do.
    /// None without earlier records or before any run ends.
    pub fn expected_left(&self) -> Option<f64> {
        if self.previous.is_empty() || self.done.is_empty() {
            return None;
        }
        let same = |a: &Record, b: &Record| {
            (&a.setting, &a.layer, a.n, a.seed)
                == (&b.setting, &b.layer, b.n, b.seed)
        };
        let (mut total, mut chains) = (0.0, Vec::<(String, f64)>::new());
        for r in &self.previous {
            if self.done.iter().any(|(d, _)| same(d, r)) {
                continue;
            }
            let Some(&(layer, setting)) = self
                .lanes
                .iter()
                .find(|(l, s)| l.name() == r.layer && s.name() == r.setting)
            else {
                continue; // a lane this sweep does not train
            };
            let secs =
                Self::flops(&run(layer, setting, r.n, r.seed), r.steps as f64)
                    * self.rate(&r.layer)?;
            total += secs;
            // A Setting 1 lane's first seed is one job; other runs are jobs
            // of their own.
            let chain = if setting == Setting::Distinct && r.seed == 1 {
                format!("{}/{}", r.layer, r.setting)
            } else {
                format!("{}/{}/{}/{}", r.layer, r.setting, r.n, r.seed)
            };
            match chains.iter_mut().find(|(c, _)| *c == chain) {
                Some((_, t)) => *t += secs,
                None => chains.push((chain, secs)),
            }
        }
        let longest = chains.iter().map(|c| c.1).fold(0.0, f64::max);
        Some((total / self.threads as f64).max(longest))
    }

    /// Record a finished run and the time it took.
    pub fn finished(&mut self, record: &Record, timing: Timing) {
        self.done.push((record.clone(), timing));
    }

    /// Runs finished so far.
    pub fn runs(&self) -> usize {
        self.done.len()
    }

    fn flops(run: &Run, steps: f64) -> f64 {
        let b = run.budget.batch;
        steps * step_flops(run.layer, run.setting, run.shape, b) as f64
    }

    /// Wall-clock seconds per counted flop of `layer`'s finished runs, or
    /// of all finished runs if it has none.
    fn rate(&self, layer: &str) -> Option<f64> {
        let of = |mine: bool| {
            let (mut secs, mut flops) = (0.0, 0.0);
            for (r, t) in &self.done {
                if mine && r.layer != layer {
                    continue;
                }
                let lane = self.lanes.iter().find(|(l, s)| {
                    l.name() == r.layer && s.name() == r.setting
                })?;
                let run = run(lane.0, lane.1, r.n, r.seed);
                secs += t.wall;
                flops += Self::flops(&run, r.steps as f64);
            }
            (flops > 0.0).then_some(secs / flops)
        };
        of(true).or_else(|| of(false))
    }

    /// Seconds of wall clock left, (low, high); NaN before any run ends.
    pub fn seconds_left(&self) -> (f64, f64) {
        let steps = |rs: &mut dyn Iterator<Item = usize>| {
            let v: Vec<usize> = rs.collect();
            let lo = v.iter().min().map(|&x| x as f64);
            let hi = v.iter().max().map(|&x| x as f64);
            lo.zip(hi)
        };
        let Some(all) = steps(&mut self.done.iter().map(|(r, _)| r.steps))
        else {
            return (f64::NAN, f64::NAN);
        };
        let (mut low, mut high, mut longest) = (0.0, 0.0, 0.0f64);
        for &(layer, setting) in &self.lanes {
            let name = layer.name();
            let mine: Vec<Record> = self
                .done
                .iter()
                .filter(|(r, _)| r.layer == name && r.setting == setting.name())
                .map(|(r, _)| r.clone())
                .collect();
            let (lo, hi) =
                steps(&mut mine.iter().map(|r| r.steps)).unwrap_or(all);
            let rate = self.rate(&name).expect("some run has ended");
            for r in runs_left(layer, setting, &mine) {
                low += Self::flops(&r, lo) * rate;
                let h = Self::flops(&r, hi) * rate;
                high += h;
                longest = longest.max(h);
            }
        }
        let t = self.threads as f64;
        (low / t, (high / t).max(longest))
    }

    /// "12–30 min", or "unknown" before any run ends.
    pub fn describe(low: f64, high: f64) -> String {
        if !(low.is_finite() && high.is_finite()) {
            return "unknown".to_string();
        }
        let m = |s: f64| (s / 60.0).ceil() as u64;
        format!("{}–{} min", m(low), m(high))
    }

    /// The expectation if there is one, with the range after it:
    /// "~14 min (3–52 min)".
    pub fn describe_all(&self) -> String {
        let (low, high) = self.seconds_left();
        let range = Self::describe(low, high);
        match self.expected_left() {
            Some(e) if e.is_finite() && range != "unknown" => {
                format!("~{} min ({range})", (e / 60.0).ceil() as u64)
            }
            _ => range,
        }
    }

    /// CPU and wall seconds of every lane's finished runs, one line each.
    pub fn per_lane(&self) -> String {
        let mut out = String::new();
        for &(layer, setting) in &self.lanes {
            let mine: Vec<&(Record, Timing)> = self
                .done
                .iter()
                .filter(|(r, _)| {
                    r.layer == layer.name() && r.setting == setting.name()
                })
                .collect();
            let cpu: f64 = mine.iter().map(|(_, t)| t.cpu).sum();
            let wall: f64 = mine.iter().map(|(_, t)| t.wall).sum();
            let _ = writeln!(
                out,
                "{:>16} {}: {} runs, {:.1} CPU-min, {:.1} min wall",
                layer.name(),
                setting.name(),
                mine.len(),
                cpu / 60.0,
                wall / 60.0
            );
        }
        out
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

const HEADER: &str = "setting\tlayer\tn\td\tp\tseed\tbest_loss\tsteps\tstop";

/// The data file: `#` comment lines (how it was made), a header, records.
pub fn to_tsv(comments: &[String], records: &[Record]) -> String {
    let lines = records.iter().map(|r| {
        format!(
            "{}\t{}\t{}\t{}\t{}\t{}\t{:.6e}\t{}\t{}",
            r.setting,
            r.layer,
            r.n,
            r.d,
            r.p,
            r.seed,
            r.best_loss,
            r.steps,
            r.stop
        )
    });
    data_file::write(comments, HEADER, lines)
}

/// Read the data file back: its comment lines and its records.
pub fn parse_tsv(text: &str) -> Result<(Vec<String>, Vec<Record>), String> {
    let (comments, lines) = data_file::read(text, HEADER)?;
    let records = lines
        .iter()
        .map(|f| {
            Ok(Record {
                setting: f.fields[0].to_string(),
                layer: f.fields[1].to_string(),
                n: f.get(2, "n")?,
                d: f.get(3, "d")?,
                p: f.get(4, "p")?,
                seed: f.get(5, "seed")?,
                best_loss: f.get(6, "loss")?,
                steps: f.get(7, "steps")?,
                stop: f.fields[8].to_string(),
            })
        })
        .collect::<Result<_, String>>()?;
    Ok((comments, records))
}

/// The committed results of `cargo xtask retrieval`.
pub const COMMITTED: &str = include_str!("../../../data/retrieval.tsv");

/// The committed results, parsed.
pub fn committed() -> (Vec<String>, Vec<Record>) {
    parse_tsv(COMMITTED).expect("listings/data/retrieval.tsv is well formed")
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

/// One run of the paper's own logs (`listings/data/paper-retrieval.tsv`).
#[derive(Clone, Debug, PartialEq)]
pub struct PaperRun {
    pub setting: Setting,
    /// Our name for the paper's layer (`linear` → `elu+1`, `ours` → delta).
    pub layer: String,
    pub n: usize,
    pub steps: usize,
    pub best_loss: f64,
    pub solved: bool,
}

/// The paper's logged runs, as committed.
pub const PAPER: &str = include_str!("../../../data/paper-retrieval.tsv");

/// The paper's logged runs at d = 64, with our layer names.
pub fn paper_runs() -> Vec<PaperRun> {
    let mut runs = Vec::new();
    for line in PAPER.lines().filter(|l| !l.starts_with('#')).skip(1) {
        let f: Vec<&str> = line.split('\t').collect();
        if f.len() != 11 || f[3] != "64" {
            continue;
        }
        let phi = match f[1] {
            "linear" => "elu+1".to_string(),
            "softmax" => "softmax".to_string(),
            "tanh" => "tanh".to_string(),
            other => {
                match (other.strip_prefix("dpfp"), other.strip_prefix("favor"))
                {
                    (Some(nu), _) => format!("dpfp-{nu}"),
                    (_, Some(r)) => format!("favor-{r}"),
                    _ => other.to_string(),
                }
            }
        };
        let layer = match f[2] {
            "ours" => format!("{phi}/delta"),
            "fwm" => format!("{phi}/fwm"),
            _ => phi,
        };
        runs.push(PaperRun {
            setting: if f[0] == "1" {
                Setting::Distinct
            } else {
                Setting::Repeated
            },
            layer,
            n: f[4].parse().expect("S is a number"),
            steps: f[6].parse().expect("last_step is a number"),
            best_loss: f[8].parse().expect("best_loss is a number"),
            solved: f[10] != "-",
        });
    }
    runs
}

/// The paper's capacity for a layer: the largest n it solved (0 if none)
/// among the sizes we also train (up to 600 in Setting 1, 100 in Setting
/// 2), or `None` if the paper did not run it.
pub fn paper_capacity(setting: Setting, layer: &str) -> Option<usize> {
    let top = match setting {
        Setting::Distinct => SETTING1_MAX,
        Setting::Repeated => SETTING2_MAX,
    };
    let runs: Vec<PaperRun> = paper_runs()
        .into_iter()
        .filter(|r| r.setting == setting && r.layer == layer && r.n <= top)
        .collect();
    if runs.is_empty() {
        return None;
    }
    Some(
        runs.iter()
            .filter(|r| r.solved)
            .map(|r| r.n)
            .max()
            .unwrap_or(0),
    )
}

/// What the chapter prints about the sweep: how it was made, and the
/// capacity of every layer in each setting, ours beside the paper's.
pub struct Summary {
    pub comments: Vec<String>,
    pub records: Vec<Record>,
}

impl Summary {
    /// The summary of the committed data file.
    pub fn committed() -> Summary {
        let (comments, records) = committed();
        Summary { comments, records }
    }
}

impl std::fmt::Display for Summary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for c in &self.comments {
            writeln!(f, "{c}")?;
        }
        let settings = [
            (Setting::Distinct, setting1_layers()),
            (Setting::Repeated, setting2_layers()),
        ];
        for (setting, layers) in settings {
            let title = match setting {
                Setting::Distinct => "Setting 1, every key once",
                Setting::Repeated => "Setting 2, keys repeat",
            };
            let top = match setting {
                Setting::Distinct => SETTING1_MAX,
                Setting::Repeated => SETTING2_MAX,
            };
            writeln!(f, "\n{title} (d = {D}, n up to {top}):")?;
            let mut table = Table::new()
                .right("layer", 14)
                .right("p", 4)
                .right("capacity", 8)
                .right("paper's", 7)
                .right("capacity/p", 10)
                .right("runs", 4);
            for layer in layers {
                let name = layer.name();
                let p = layer.width(D);
                let ours = capacity(&self.records, setting, &name);
                let paper = paper_capacity(setting, &name)
                    .map_or("-".to_string(), |c| c.to_string());
                let runs = self
                    .records
                    .iter()
                    .filter(|r| r.setting == setting.name() && r.layer == name)
                    .count();
                table.row([
                    name,
                    p.to_string(),
                    ours.to_string(),
                    paper,
                    // Softmax keeps every pair: no memory width to divide by.
                    match layer {
                        Layer::Softmax => "-".to_string(),
                        _ => format!("{:.2}", ours as f64 / p as f64),
                    },
                    runs.to_string(),
                ]);
            }
            writeln!(f, "{table}")?;
        }
        Ok(())
    }
}

/// The runs at a Setting 1 lane's boundary, every seed: (n, seed, solved).
pub fn boundary_runs(
    records: &[Record],
    layer: &str,
) -> Vec<(usize, u64, bool)> {
    let first = series(records, Setting::Distinct, layer);
    let at = boundary(&first);
    let mut runs: Vec<(usize, u64, bool)> = records
        .iter()
        .filter(|r| r.setting == Setting::Distinct.name() && r.layer == layer)
        .filter(|r| at.contains(&r.n))
        .map(|r| (r.n, r.seed, r.solved()))
        .collect();
    runs.sort();
    runs
}

/// Every Setting 1 lane's boundary runs, as the chapter prints them.
pub struct Boundaries(pub Vec<Record>);

impl Boundaries {
    pub fn committed() -> Boundaries {
        Boundaries(committed().1)
    }
}

impl std::fmt::Display for Boundaries {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut table = Table::new()
            .right("layer", 10)
            .right("n", 4)
            .right("seed", 4)
            .right("steps", 6)
            .right("best loss", 10)
            .right("stop", 8);
        for layer in setting1_layers() {
            let name = layer.name();
            for (n, seed, _) in boundary_runs(&self.0, &name) {
                let r = self
                    .0
                    .iter()
                    .find(|r| {
                        r.setting == Setting::Distinct.name()
                            && r.layer == name
                            && r.n == n
                            && r.seed == seed
                    })
                    .expect("a boundary run is a record");
                table.row([
                    name.clone(),
                    n.to_string(),
                    seed.to_string(),
                    r.steps.to_string(),
                    format!("{:.2e}", r.best_loss),
                    r.stop.clone(),
                ]);
            }
        }
        write!(f, "{table}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paper::retrieval::train::Outcome;

    fn record(n: usize, seed: u64, solved: bool) -> Record {
        let layer = Layer::Linear(Phi::EluPlusOne, Rule::Sum);
        let outcome = Outcome {
            best_loss: if solved { 1e-4 } else { 0.2 },
            steps: 100,
            stop: if solved {
                Stop::Solved
            } else {
                Stop::NoImprovement
            },
        };
        Record::new(&run(layer, Setting::Distinct, n, seed), &outcome)
    }

    #[test]
    fn each_thread_takes_the_job_predicted_to_cost_most_first() {
        let layer = Layer::Linear(Phi::EluPlusOne, Rule::Sum);
        let jobs: Vec<Job> = [40, 100, 20, 80, 60]
            .map(|n| Job::Run(run(layer, Setting::Repeated, n, 1)))
            .into();
        let size = |j: &Job| match j {
            Job::Run(r) => r.shape.n as f64,
            Job::Lane(..) => 1e9,
        };
        // Cost by size, then by the opposite: the order follows the cost.
        for (cost, want) in
            [(1.0, [100, 80, 60, 40, 20]), (-1.0, [20, 40, 60, 80, 100])]
        {
            let mut queue = jobs.clone();
            let mut order = Vec::new();
            while let Some(j) = take_costliest(&mut queue, |j| cost * size(j)) {
                order.push(size(&j) as usize);
            }
            assert_eq!(order, want);
        }
        let mut queue = jobs.clone();
        queue.push(Job::Lane(layer, Setting::Distinct));
        let first = take_costliest(&mut queue, size);
        assert!(matches!(first, Some(Job::Lane(..))));
    }

    #[test]
    fn a_lane_stops_three_unsolved_sizes_past_its_last_solved_one() {
        let layer = Layer::Linear(Phi::EluPlusOne, Rule::Sum);
        let mut done = Vec::new();
        // Solved at 20, 40, 80; not at 60, 100, 120, 140.
        for (n, ok) in [(20, true), (40, true), (60, false), (80, true)] {
            done.push(record(n, 1, ok));
            let next = next_run(layer, Setting::Distinct, &done).unwrap();
            assert_eq!((next.shape.n, next.seed), (n + 20, 1));
        }
        for n in [100, 120, 140] {
            done.push(record(n, 1, false));
        }
        // Then the boundary, 80 and 100, with seeds 2 and 3.
        let mut extra = Vec::new();
        while let Some(r) = next_run(layer, Setting::Distinct, &done) {
            extra.push((r.shape.n, r.seed));
            done.push(record(r.shape.n, r.seed, false));
        }
        assert_eq!(extra, vec![(80, 2), (80, 3), (100, 2), (100, 3)]);
        // A lane that solves every size stops at n = 600, then trains the
        // other seeds at 600 alone.
        let mut done = Vec::new();
        while let Some(r) = next_run(layer, Setting::Distinct, &done) {
            done.push(record(r.shape.n, r.seed, true));
        }
        let first: Vec<usize> =
            done.iter().filter(|r| r.seed == 1).map(|r| r.n).collect();
        assert_eq!(first, (1..=30).map(|i| 20 * i).collect::<Vec<_>>());
        let rest: Vec<(usize, u64)> = done
            .iter()
            .filter(|r| r.seed != 1)
            .map(|r| (r.n, r.seed))
            .collect();
        assert_eq!(rest, vec![(600, 2), (600, 3)]);
    }

    #[test]
    fn setting_2_lanes_run_every_size_once() {
        let layer = Layer::Linear(Phi::EluPlusOne, Rule::Delta);
        let mut done = Vec::new();
        while let Some(r) = next_run(layer, Setting::Repeated, &done) {
            done.push(Record::new(
                &r,
                &Outcome {
                    best_loss: 0.3,
                    steps: 100,
                    stop: Stop::NoImprovement,
                },
            ));
        }
        let ns: Vec<usize> = done.iter().map(|r| r.n).collect();
        assert_eq!(ns, vec![20, 40, 60, 80, 100]);
        for map in [FwmPhi::Map(Phi::Dpfp(1)), FwmPhi::Tanh] {
            let ns: Vec<usize> =
                planned_runs(Layer::Fwm(map), Setting::Repeated, &[])
                    .iter()
                    .map(|r| r.shape.n)
                    .collect();
            assert_eq!(ns, vec![20, 40, 60, 80, 100], "{map:?}");
        }
    }

    fn fwm_lanes() -> [Layer; 2] {
        [
            Layer::Fwm(FwmPhi::Map(Phi::Dpfp(1))),
            Layer::Fwm(FwmPhi::Tanh),
        ]
    }

    #[test]
    fn fwm_solves_no_size_and_stays_above_its_floor() {
        let runs = data();
        for layer in fwm_lanes() {
            let ours = series(&runs, Setting::Repeated, &layer.name());
            assert_eq!(ours.len(), FWM_MAX / STEP, "{}", layer.name());
            for r in ours {
                assert!(!r.solved(), "{} n = {}", r.layer, r.n);
                assert!(r.best_loss >= 0.5 / r.n as f64, "{r:?}");
            }
            let paper: Vec<PaperRun> = paper_runs()
                .into_iter()
                .filter(|r| r.setting == Setting::Repeated)
                .filter(|r| r.layer == layer.name() && r.n <= SETTING2_MAX)
                .collect();
            assert_eq!(paper.len(), SETTING2_MAX / STEP, "{}", layer.name());
            for r in paper {
                assert!(!r.solved && r.best_loss >= 0.5 / r.n as f64);
            }
        }
    }

    /// Our best loss and the paper's at each size of an fwm lane.
    fn fwm_pairs(layer: Layer) -> Vec<(usize, f64, f64)> {
        let runs = data();
        let paper = paper_runs();
        series(&runs, Setting::Repeated, &layer.name())
            .iter()
            .map(|r| {
                let p = paper
                    .iter()
                    .find(|p| {
                        p.setting == Setting::Repeated
                            && p.layer == r.layer
                            && p.n == r.n
                    })
                    .expect("the paper logged every size we ran");
                (r.n, r.best_loss, p.best_loss)
            })
            .collect()
    }

    #[test]
    fn dpfp1_fwm_lands_within_ten_percent_of_the_papers_loss_at_every_size() {
        let pairs = fwm_pairs(Layer::Fwm(FwmPhi::Map(Phi::Dpfp(1))));
        assert_eq!(pairs.len(), FWM_MAX / STEP);
        for (n, ours, paper) in pairs {
            assert!((ours - paper).abs() <= 0.1 * paper, "n = {n}");
        }
    }

    #[test]
    fn tanh_fwm_stopped_early_stays_above_the_papers_longer_runs() {
        let pairs = fwm_pairs(Layer::Fwm(FwmPhi::Tanh));
        assert_eq!(pairs.len(), FWM_MAX / STEP);
        for (n, ours, paper) in pairs {
            assert!(ours > paper, "n = {n}");
        }
        let steps = paper_runs()
            .iter()
            .filter(|r| r.layer == "tanh/fwm" && r.n <= FWM_MAX)
            .map(|r| r.steps)
            .min();
        assert!(steps.unwrap() > 10 * TANH_FWM_STEPS);
    }

    #[test]
    fn the_delta_rule_beats_the_fwm_baseline_at_every_size() {
        let runs = data();
        let fwm = Layer::Fwm(FwmPhi::Map(Phi::Dpfp(1))).name();
        let delta = Layer::Linear(Phi::Dpfp(1), Rule::Delta).name();
        let ours = series(&runs, Setting::Repeated, &fwm);
        assert!(!ours.is_empty());
        for f in ours {
            let d = series(&runs, Setting::Repeated, &delta)
                .into_iter()
                .find(|d| d.n == f.n)
                .expect("the delta lane runs every fwm size");
            assert!(d.best_loss < f.best_loss, "n = {}", f.n);
        }
        let paper = paper_runs();
        let at = |layer: &str, n| {
            paper
                .iter()
                .find(|r| {
                    r.setting == Setting::Repeated
                        && r.layer == layer
                        && r.n == n
                })
                .map(|r| r.best_loss)
        };
        for n in (STEP..=FWM_MAX).step_by(STEP) {
            let (f, d) = (at(&fwm, n).unwrap(), at(&delta, n).unwrap());
            assert!(d < f, "paper's n = {n}: {d} vs {f}");
        }
    }

    #[test]
    fn the_papers_logs_name_every_layer_we_compare_with() {
        for (layer, setting) in lanes() {
            if layer.name() == "favor-64/delta" || layer.name().ends_with("sum")
            {
                continue;
            }
            let cap = paper_capacity(setting, &layer.name());
            if setting == Setting::Distinct {
                assert!(cap.is_some(), "{}", layer.name());
            }
        }
        assert_eq!(paper_capacity(Setting::Distinct, "elu+1"), Some(40));
    }

    fn data() -> Vec<Record> {
        committed().1
    }

    #[test]
    fn committed_results_follow_the_plan_run_by_run() {
        // Rerun `cargo xtask retrieval` after changing the plan.
        let records = data();
        let mut seen = 0;
        for (layer, setting) in lanes() {
            let lane: Vec<&Record> = records
                .iter()
                .filter(|r| {
                    r.setting == setting.name() && r.layer == layer.name()
                })
                .collect();
            let mut done: Vec<Record> = Vec::new();
            while let Some(run) = next_run(layer, setting, &done) {
                let r = lane
                    .iter()
                    .find(|r| r.n == run.shape.n && r.seed == run.seed)
                    .unwrap_or_else(|| {
                        panic!(
                            "{} n = {} seed {} missing",
                            layer.name(),
                            run.shape.n,
                            run.seed
                        )
                    });
                assert_eq!((r.d, r.p), (D, layer.width(D)));
                assert!(
                    r.best_loss.is_finite()
                        && r.steps <= budget_for(layer).max_steps
                );
                done.push((*r).clone());
            }
            assert_eq!(done.len(), lane.len(), "{}: extra runs", layer.name());
            seen += lane.len();
        }
        assert_eq!(seen, records.len());
    }

    fn cap(layer: Layer) -> usize {
        capacity(&data(), Setting::Distinct, &layer.name())
    }

    #[test]
    fn capacities_follow_the_papers_order() {
        use {Phi::*, Rule::Sum};
        let order = [
            Layer::Linear(EluPlusOne, Sum),
            Layer::Linear(Dpfp(1), Sum),
            Layer::Linear(Dpfp(2), Sum),
            Layer::Linear(Dpfp(3), Sum),
            Layer::Softmax,
        ];
        let caps: Vec<usize> = order.iter().map(|&l| cap(l)).collect();
        assert!(caps.windows(2).all(|w| w[0] < w[1]), "{caps:?}");
        // The paper's logs, read the same way, in the same order.
        let paper: Vec<usize> = order
            .iter()
            .map(|l| paper_capacity(Setting::Distinct, &l.name()).unwrap())
            .collect();
        assert!(paper.windows(2).all(|w| w[0] < w[1]), "{paper:?}");
    }

    #[test]
    fn no_map_holds_more_keys_than_its_width_and_elu_falls_furthest_short() {
        let ratio = |l: Layer| cap(l) as f64 / l.width(D) as f64;
        let maps: Vec<Layer> = setting1_layers()
            .into_iter()
            .filter(|l| matches!(l, Layer::Linear(..)))
            .collect();
        for &l in &maps {
            assert!(ratio(l) <= 1.0, "{}", l.name());
        }
        let elu = Layer::Linear(Phi::EluPlusOne, Rule::Sum);
        for &l in &maps {
            if l != elu && cap(l) > 0 {
                assert!(ratio(elu) < ratio(l), "{}", l.name());
            }
        }
    }

    #[test]
    fn favor_plus_solves_no_size_as_in_the_paper() {
        let favor = Layer::Linear(Phi::Favor(D), Rule::Sum);
        // As wide as DPFP-1.
        let dpfp1 = Layer::Linear(Phi::Dpfp(1), Rule::Sum);
        assert_eq!(favor.width(D), dpfp1.width(D));
        let runs = data();
        let ours = series(&runs, Setting::Distinct, &favor.name());
        assert!(!ours.is_empty() && ours.iter().all(|r| !r.solved()));
        assert_eq!(paper_capacity(Setting::Distinct, &favor.name()), Some(0));
    }

    #[test]
    fn each_capacity_is_within_one_step_of_the_paper_or_its_seeds_disagree() {
        let runs = data();
        for layer in setting1_layers() {
            let name = layer.name();
            let Some(paper) = paper_capacity(Setting::Distinct, &name) else {
                continue;
            };
            let ours = cap(layer);
            if ours.abs_diff(paper) <= STEP {
                continue;
            }
            // Outside one step: some size at our boundary must be solved
            // by one seed and not by another.
            let at = boundary_runs(&runs, &name);
            let split = at.iter().any(|&(n, _, solved)| {
                at.iter().any(|&(m, _, other)| m == n && other != solved)
            });
            assert!(split, "{name}: ours {ours}, paper's {paper}, {at:?}");
        }
    }

    #[test]
    fn softmax_holds_the_most_keys_but_plateaus_among_the_largest() {
        let runs = data();
        let softmax = series(&runs, Setting::Distinct, "softmax");
        let best = cap(Layer::Softmax);
        for layer in setting1_layers() {
            assert!(cap(layer) <= best, "{}", layer.name());
        }
        // Some run below its capacity did not converge, in ours and in the
        // paper's logs alike, and only among the largest sizes: every such
        // run lies in the upper half of the sizes it solves.
        let plateaued: Vec<usize> = softmax
            .iter()
            .filter(|r| r.n < best && !r.solved())
            .map(|r| r.n)
            .collect();
        assert!(!plateaued.is_empty());
        assert!(plateaued.iter().all(|&n| 2 * n > best), "{plateaued:?}");
        let paper_best = paper_capacity(Setting::Distinct, "softmax").unwrap();
        let paper: Vec<usize> = paper_runs()
            .iter()
            .filter(|r| {
                r.setting == Setting::Distinct
                    && r.layer == "softmax"
                    && r.n < paper_best
                    && !r.solved
            })
            .map(|r| r.n)
            .collect();
        assert!(!paper.is_empty());
        assert!(paper.iter().all(|&n| 2 * n > paper_best), "{paper:?}");
    }

    #[test]
    fn delta_rule_beats_the_sum_rule_when_keys_repeat() {
        let runs = data();
        for phi in [Phi::EluPlusOne, Phi::Dpfp(1), Phi::Dpfp(2)] {
            let named = |rule| Layer::Linear(phi, rule).name();
            let sum = series(&runs, Setting::Repeated, &named(Rule::Sum));
            let delta = series(&runs, Setting::Repeated, &named(Rule::Delta));
            assert_eq!(sum.len(), delta.len());
            assert!(!sum.is_empty());
            for (s, d) in sum.iter().zip(&delta) {
                assert!(d.best_loss < s.best_loss, "{phi:?} n = {}", s.n);
            }
            // The sum rule solves no size; the delta rule the smallest.
            assert!(sum.iter().all(|r| !r.solved()), "{phi:?}");
            assert!(delta[0].solved(), "{phi:?}");
        }
    }

    #[test]
    fn the_smallest_run_of_every_lane_retrains_to_the_committed_numbers() {
        // Training is deterministic: the same code on this kind of machine
        // gives the same steps and losses. (Matrix products take FMA and
        // AVX2 kernels where the processor has them; elsewhere rounding
        // differs, and so, after some steps, does the run.)
        #[cfg(target_arch = "x86_64")]
        if !(std::arch::is_x86_feature_detected!("avx2")
            && std::arch::is_x86_feature_detected!("fma"))
        {
            eprintln!("skipped: the data was made with AVX2 and FMA");
            return;
        }
        let runs = data();
        let mut retrained = Vec::new();
        for (layer, setting) in lanes() {
            let name = layer.name();
            let first = &series(&runs, setting, &name)[0];
            // Runs that stop within a thousand steps: a few seconds each.
            if first.steps > 1000 {
                continue;
            }
            retrained.push(setting);
            let outcome =
                train_fast(&run(layer, setting, first.n, 1), |_, _| {});
            let again = Record::new(&run(layer, setting, first.n, 1), &outcome);
            // As the data file writes it: the loss to seven digits.
            assert_eq!(to_tsv(&[], &[again]), to_tsv(&[], &[(*first).clone()]));
        }
        // Not an empty check: most lanes, and some of each setting.
        assert!(2 * retrained.len() > lanes().len(), "{retrained:?}");
        for setting in [Setting::Distinct, Setting::Repeated] {
            assert!(retrained.contains(&setting), "{setting:?}");
        }
    }

    #[test]
    fn committed_results_record_how_they_were_made() {
        let (comments, _) = committed();
        // Where, and in how long: "Machine: … ; M minutes wall clock, …".
        let machine = comments.iter().find(|c| c.starts_with("Machine:"));
        let minutes = machine.and_then(|c| data_file::wall_minutes(c));
        assert!(minutes.is_some_and(|m| m > 0.0), "{machine:?}");
        assert!(comments.iter().any(|c| c.starts_with("Date:")));
        // Rerun it after changing the budget, too.
        assert!(comments.contains(&budget_line()), "{comments:?}");
    }

    fn timed(layer: Layer, setting: Setting, n: usize, steps: usize) -> Record {
        let outcome = Outcome {
            best_loss: 0.2,
            steps,
            stop: Stop::NoImprovement,
        };
        Record::new(&run(layer, setting, n, 1), &outcome)
    }

    #[test]
    fn the_estimate_scales_measured_seconds_per_flop_to_the_runs_left() {
        // One Setting 2 lane, two of its five sizes done in 100 steps each
        // at a known rate: the three sizes left take 100 steps each at that
        // rate, on one thread, and exactly half that on two.
        let layer = Layer::Linear(Phi::EluPlusOne, Rule::Delta);
        let lane = [(layer, Setting::Repeated)];
        let flops = |n| {
            let r = run(layer, Setting::Repeated, n, 1);
            step_flops(layer, r.setting, r.shape, r.budget.batch) as f64
        };
        let rate = 3e-9;
        for threads in [1, 2] {
            let mut est = Estimate::new(&lane, threads);
            assert!(est.seconds_left().0.is_nan());
            assert_eq!(Estimate::describe(f64::NAN, 1.0), "unknown");
            for n in [20, 40] {
                let wall = 100.0 * flops(n) * rate;
                let t = Timing { wall, cpu: wall };
                est.finished(&timed(layer, Setting::Repeated, n, 100), t);
            }
            let want: f64 =
                [60, 80, 100].iter().map(|&n| 100.0 * flops(n) * rate).sum();
            let (low, high) = est.seconds_left();
            let one = 100.0 * flops(100) * rate;
            assert!((low - want / threads as f64).abs() < 1e-9 * want);
            assert!((high - (want / threads as f64).max(one)).abs() < 1e-9);
        }
    }

    #[test]
    fn the_expectation_repeats_the_earlier_runs_steps_at_the_measured_rate() {
        // An earlier run of one Setting 2 lane took 100, 300, 500, 700 and
        // 900 steps; two sizes are done again at a known rate, so the three
        // left are expected to take their earlier steps at that rate.
        let layer = Layer::Linear(Phi::EluPlusOne, Rule::Delta);
        let lane = [(layer, Setting::Repeated)];
        let flops = |n| {
            let r = run(layer, Setting::Repeated, n, 1);
            step_flops(layer, r.setting, r.shape, r.budget.batch) as f64
        };
        let steps = |n: usize| 100 + 10 * (n - 20);
        let earlier: Vec<Record> = [20, 40, 60, 80, 100]
            .iter()
            .map(|&n| timed(layer, Setting::Repeated, n, steps(n)))
            .collect();
        let rate = 2e-9;
        for threads in [1, 2] {
            let mut est = Estimate::new(&lane, threads).with_previous(&earlier);
            assert_eq!(est.expected_left(), None);
            for n in [20, 40] {
                let wall = steps(n) as f64 * flops(n) * rate;
                let t = Timing { wall, cpu: wall };
                est.finished(&timed(layer, Setting::Repeated, n, steps(n)), t);
            }
            let left: Vec<f64> = [60, 80, 100]
                .iter()
                .map(|&n| steps(n) as f64 * flops(n) * rate)
                .collect();
            let total: f64 = left.iter().sum();
            let want = (total / threads as f64).max(left[2]);
            let got = est.expected_left().unwrap();
            assert!((got - want).abs() < 1e-9 * want, "{got} {want}");
            assert!(est.describe_all().starts_with('~'));
            // Without the earlier records there is only the range.
            let mut bare = Estimate::new(&lane, threads);
            bare.finished(
                &earlier[0],
                Timing {
                    wall: 1.0,
                    cpu: 1.0,
                },
            );
            assert_eq!(bare.expected_left(), None);
            assert!(bare.describe_all().ends_with(" min"));
            assert!(!bare.describe_all().starts_with('~'));
        }
    }

    #[test]
    fn the_estimate_is_a_range_from_the_fewest_to_the_most_steps_seen() {
        let layer = Layer::Linear(Phi::EluPlusOne, Rule::Delta);
        let lane = [(layer, Setting::Repeated)];
        let mut est = Estimate::new(&lane, 1);
        for (n, steps) in [(20, 100), (40, 400)] {
            let t = Timing {
                wall: 1.0,
                cpu: 1.0,
            };
            est.finished(&timed(layer, Setting::Repeated, n, steps), t);
        }
        let (low, high) = est.seconds_left();
        assert!((high / low - 4.0).abs() < 1e-9, "{low} {high}");
        // Every run done: nothing left.
        for n in [60, 80, 100] {
            let t = Timing {
                wall: 1.0,
                cpu: 1.0,
            };
            est.finished(&timed(layer, Setting::Repeated, n, 100), t);
        }
        assert_eq!(est.seconds_left(), (0.0, 0.0));
    }

    #[test]
    fn the_estimate_counts_setting_2_sizes_left_in_any_order() {
        let layer = Layer::Fwm(FwmPhi::Tanh);
        let done = [
            timed(layer, Setting::Repeated, 40, 100),
            timed(layer, Setting::Repeated, 60, 100),
        ];
        let left: Vec<usize> = runs_left(layer, Setting::Repeated, &done)
            .iter()
            .map(|r| r.shape.n)
            .collect();
        assert_eq!(left, vec![20, 80, 100]);
    }

    #[test]
    fn the_estimate_counts_a_setting_1_lanes_next_sizes_and_seeds() {
        // elu+1 solved 20 and failed 40: still to come are 60 and 80 with
        // the first seed, then the boundary (20, 40) with two more seeds.
        let layer = Layer::Linear(Phi::EluPlusOne, Rule::Sum);
        let done = [record(20, 1, true), record(40, 1, false)];
        let left: Vec<(usize, u64)> =
            planned_runs(layer, Setting::Distinct, &done)
                .iter()
                .map(|r| (r.shape.n, r.seed))
                .collect();
        assert_eq!(
            left,
            vec![(60, 1), (80, 1), (20, 2), (20, 3), (40, 2), (40, 3)]
        );
    }

    #[test]
    fn the_data_file_round_trips() {
        let records = vec![record(40, 2, false)];
        let text = to_tsv(&["made by a test".to_string()], &records);
        let (comments, back) = parse_tsv(&text).unwrap();
        assert_eq!(comments, vec!["made by a test".to_string()]);
        assert_eq!(back, records);
        assert!(parse_tsv("no header\n").is_err());
    }
}
