//! How the bench times a form: thread CPU time, a warm-up call, then the
//! median of a few repetitions; and the machine's f32 matmul ceiling that
//! every rate is compared with.

use crate::gemm::{sgemm, vector_sets};
use listings::fast::{random_inputs, to_f32};
use listings::measure::thread_cpu_seconds;
use listings::summary::Spread;
use std::hint::black_box;
use std::time::{Duration, Instant};

/// Median, min and max seconds of a form, after one warm-up call.
#[derive(Clone, Copy)]
pub struct Timing {
    pub median: f64,
    pub min: f64,
    pub max: f64,
    pub reps: usize,
}

/// CPU seconds this thread has run (CLOCK_THREAD_CPUTIME_ID): on a machine
/// shared with other work, the time a form computed, not the time it
/// waited for a core. Every form here runs on this one thread.
pub fn cpu_seconds() -> f64 {
    thread_cpu_seconds().expect("this system has a thread CPU clock")
}

/// Warm up once, then repeat an odd number of times, at least 3 and at
/// most 9, stopping after 3 once a second of samples is in.
pub fn time(mut f: impl FnMut()) -> Timing {
    f();
    let mut samples = Vec::new();
    let started = Instant::now();
    while samples.len() < 9
        && (samples.len() < 3
            || samples.len() % 2 == 0
            || started.elapsed() < Duration::from_secs(1))
    {
        let t = cpu_seconds();
        f();
        samples.push(cpu_seconds() - t);
    }
    summarise(samples)
}

/// The median, fastest and slowest of an odd number of samples.
fn summarise(samples: Vec<f64>) -> Timing {
    assert!(samples.len() % 2 == 1, "an odd number of samples");
    let Spread { min, median, max } = Spread::of(&samples);
    Timing {
        median,
        min,
        max,
        reps: samples.len(),
    }
}

/// One size of the ceiling: GFLOP/s of a square f32 product on one thread
/// through ndarray's `dot` (matrixmultiply) and through `gemm`.
#[derive(Clone, Copy, Debug)]
pub struct CeilingPoint {
    pub size: usize,
    pub ndarray: f64,
    pub gemm: f64,
}

impl CeilingPoint {
    /// The better of the two engines at this size.
    pub fn best(&self) -> f64 {
        self.ndarray.max(self.gemm)
    }
}

/// GFLOP/s of square f32 products of a few sizes through both engines.
/// The bench measures them before and after the forms and keeps the best
/// rate of both rounds and both engines as the ceiling.
pub fn ceiling() -> Vec<CeilingPoint> {
    [128, 256, 512, 1024]
        .into_iter()
        .map(|size| {
            let a = to_f32(&random_inputs(9, size, size, size)[2]);
            let rate = |t: Timing| 2.0 * (size as f64).powi(3) / t.median / 1e9;
            let ndarray = rate(time(|| {
                black_box(a.dot(&a));
            }));
            let gemm = rate(time(|| {
                black_box(sgemm(&a, &a));
            }));
            CeilingPoint {
                size,
                ndarray,
                gemm,
            }
        })
        .collect()
}

/// The best rate over `points`, and in words which engine reached it on
/// which vectors, and the other engine's best:
/// "(gemm 0.19 on AVX-512F; matrixmultiply 83.1 on AVX2+FMA)".
pub fn describe_ceiling(points: &[CeilingPoint]) -> (f64, String) {
    let best =
        |f: fn(&CeilingPoint) -> f64| points.iter().map(f).fold(0.0, f64::max);
    let (nd, gm) = (best(|p| p.ndarray), best(|p| p.gemm));
    let sets = vector_sets();
    let widest = sets.first().copied().unwrap_or("scalar");
    let mm = match sets.contains(&"AVX2+FMA") {
        true => "AVX2+FMA",
        false => "its portable kernel",
    };
    let gemm = format!("gemm 0.19 on {widest}");
    let ndarray = format!("matrixmultiply on {mm}");
    let text = match gm >= nd {
        true => format!("({gemm}; {ndarray}: {nd:.1})"),
        false => format!("({ndarray}; {gemm}: {gm:.1})"),
    };
    (nd.max(gm), text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_timing_warms_up_once_then_takes_the_median_of_at_least_three() {
        for work in [0u64, 10_000, 1_000_000] {
            let mut calls = 0;
            let t = time(|| {
                calls += 1;
                black_box((0..black_box(work)).sum::<u64>());
            });
            assert!(t.reps >= 3, "{work}: {} timed calls", t.reps);
            assert_eq!(t.reps % 2, 1, "an odd number: one middle sample");
            assert_eq!(calls, t.reps + 1, "one warm-up call, then the reps");
            assert!(t.min <= t.median && t.median <= t.max);
        }
        // The median is the middle sample, whatever the order they came in.
        for (samples, median) in [
            (vec![3.0, 1.0, 2.0], 2.0),
            (vec![5.0, 9.0, 1.0, 7.0, 3.0], 5.0),
            (vec![2.0, 2.0, 8.0, 1.0, 9.0, 0.5, 4.0], 2.0),
        ] {
            let (lo, hi) = samples
                .iter()
                .fold((f64::MAX, f64::MIN), |a, &x| (a.0.min(x), a.1.max(x)));
            let t = summarise(samples);
            assert_eq!((t.median, t.min, t.max), (median, lo, hi));
        }
    }

    #[test]
    fn a_timing_reads_the_threads_cpu_clock_not_the_wall_clock() {
        // A call that sleeps 20 ms of wall time takes next to no CPU time:
        // the timing counts the time the thread computed, not the time it
        // waited (here, asleep; on a shared machine, for a core).
        let t = time(|| std::thread::sleep(Duration::from_millis(20)));
        assert!(t.max < 0.005, "{} s of CPU time", t.max);
        // And a call that computes is counted.
        let busy = time(|| {
            black_box((0..black_box(2_000_000u64)).map(|x| x ^ 7).sum::<u64>());
        });
        assert!(busy.median > 0.0);
    }
}
