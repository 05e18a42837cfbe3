//! How the bench times a form: thread CPU time, a warm-up call, then the
//! median of a few repetitions; and the machine's f32 matmul ceiling that
//! every rate is compared with.

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

/// GFLOP/s of ndarray's `dot` on square f32 matrices of a few sizes. The
/// bench measures it before and after the forms and keeps the best rate
/// of both rounds as the ceiling.
pub fn ceiling() -> Vec<(usize, f64)> {
    [128, 256, 512, 1024]
        .into_iter()
        .map(|size| {
            let a = to_f32(&random_inputs(9, size, size, size)[2]);
            let t = time(|| {
                black_box(a.dot(&a));
            });
            (size, 2.0 * (size as f64).powi(3) / t.median / 1e9)
        })
        .collect()
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
