//! How long a retrieval sweep has left, while it runs: the measured rate
//! of each layer's finished runs, in seconds per counted operation of the
//! fast trainer, times the operations of the runs its plan still holds.

use crate::paper::retrieval::model::Layer;
use crate::paper::retrieval::sweep::{Record, run, runs_left};
use crate::paper::retrieval::task::Setting;
use crate::paper::retrieval::train::Run;
use crate::trainers::retrieval::step_flops;
use crate::trainers::sweep::Timing;
use std::fmt::Write as _;

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::paper::retrieval::model::{FwmPhi, Phi, Rule};
    use crate::paper::retrieval::train::{Outcome, Stop};

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
}
