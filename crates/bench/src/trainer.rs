//! The retrieval trainer's rows: one Setting 1 training step at the
//! paper's scale (d = 64, n = 300, batch 32), fast f32 trainer beside the
//! f64 reference model, both timed in this run on this thread.

use crate::timing::{cpu_seconds, time};
use listings::paper::retrieval::model::{Layer, Params, Phi, Rule, Shape};
use listings::paper::retrieval::task::Setting;
use listings::paper::retrieval::train::{Budget, Learner, Reference};
use listings::random::seeded;
use listings::trainers::retrieval::{Fast, step_flops};
use std::fmt::Write as _;

/// Where the trainer is timed: the shape, Setting 1 at n = 300.
pub const KEYS: usize = 300;
pub const WIDTH: usize = 64;

/// The layers timed.
pub fn layers() -> [Layer; 3] {
    [
        Layer::Linear(Phi::EluPlusOne, Rule::Sum),
        Layer::Linear(Phi::Dpfp(2), Rule::Sum),
        Layer::Softmax,
    ]
}

/// One layer's measurement.
pub struct TrainerRow {
    pub layer: String,
    /// Median CPU seconds per step, fast trainer and reference.
    pub fast: f64,
    pub reference: f64,
    /// Floating-point operations of one step ([`step_flops`]).
    pub flops: f64,
}

impl TrainerRow {
    pub fn gflops(&self) -> f64 {
        self.flops / self.fast / 1e9
    }

    pub fn speedup(&self) -> f64 {
        self.reference / self.fast
    }
}

/// Time a step of each layer: the fast trainer over blocks of ten steps
/// (median of the blocks), the reference over single steps.
pub fn time_trainer() -> Vec<TrainerRow> {
    let shape = Shape::paper(KEYS, WIDTH);
    let setting = Setting::Distinct;
    let budget = Budget::paper();
    layers()
        .into_iter()
        .map(|layer| {
            let params = Params::init(&mut seeded(1), shape, layer);
            let mut fast = Fast::new(layer, setting, &params, budget);
            let mut rng = seeded(2);
            let block = 10;
            let t = time(|| {
                for _ in 0..block {
                    fast.step(&mut rng).expect("a finite step");
                }
            });
            let mut reference = Reference::new(layer, setting, params, budget);
            let mut rng = seeded(2);
            // The reference takes about a second a step: three steps.
            let mut samples: Vec<f64> = (0..3)
                .map(|_| {
                    let start = cpu_seconds();
                    reference.step(&mut rng).expect("a finite step");
                    cpu_seconds() - start
                })
                .collect();
            samples.sort_by(f64::total_cmp);
            TrainerRow {
                layer: layer.name(),
                fast: t.median / block as f64,
                reference: samples[1],
                flops: step_flops(layer, setting, shape, budget.batch) as f64,
            }
        })
        .collect()
}

/// The trainer's table.
pub fn render_trainer(rows: &[TrainerRow], ceiling: f64) -> String {
    let mut out = format!(
        "retrieval trainer: one Setting 1 step, d = {WIDTH}, n = {KEYS}, \
         batch 32, f32 (fast) and f64 (reference), one thread\n"
    );
    let _ = writeln!(
        out,
        "{:>8} {:>10} {:>8} {:>9} {:>9} {:>12} {:>9}",
        "layer",
        "ms/step",
        "steps/s",
        "GFLOP/s",
        "% ceil",
        "f64 ms/step",
        "speed-up"
    );
    for r in rows {
        let _ = writeln!(
            out,
            "{:>8} {:>10.2} {:>8.1} {:>9.1} {:>8.1}% {:>12.0} {:>8.0}×",
            r.layer,
            1e3 * r.fast,
            1.0 / r.fast,
            r.gflops(),
            100.0 * r.gflops() / ceiling,
            1e3 * r.reference,
            r.speedup()
        );
    }
    out
}
