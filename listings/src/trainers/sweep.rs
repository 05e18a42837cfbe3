//! The sweep runners: every run of a chapter's plan trained on all the
//! machine's threads. The retrieval sweep takes the job predicted to cost
//! most first, and a Setting 1 lane's next size waits for its last result;
//! the recall comparison's runs are known in advance and taken in order.

use crate::after::recall::study as recall;
use crate::after::spectrum::tracking::study as tracking;
use crate::measure::thread_cpu_seconds;
use crate::paper::language_model::study as lm_study;
use crate::paper::retrieval::model::Layer;
use crate::paper::retrieval::study::sort_records;
use crate::paper::retrieval::sweep::{Record, SEEDS, next_run, planned_runs};
use crate::paper::retrieval::task::Setting;
use crate::paper::retrieval::train::Run;
use crate::trainers::recall::train as train_recall;
use crate::trainers::retrieval::train_fast;
use crate::trainers::tracking::train as train_tracking;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};

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

/// Train every lane on `threads` threads and return every record, in the
/// order of the plan's `lanes` (then seed, then n), whatever order they
/// ran in. Jobs are taken longest first by `cost` (a predicted cost in any
/// unit): Setting 2 lanes become one job per size up front, a Setting 1
/// lane's boundary seeds become jobs when its sweep ends.
/// `progress(record, jobs_open, timing)` is called as each run finishes.
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

/// Train every run of the recall comparison on `threads` threads, calling
/// `done` after each (with the runs finished so far); the records in the
/// plan's order, or the first run that failed and why.
pub fn run_all(
    runs: &[recall::Run],
    threads: usize,
    done: impl Fn(&recall::Record, usize) + Sync,
) -> Result<Vec<recall::Record>, String> {
    run_each(
        runs,
        threads,
        |run| train_recall(run).map_err(|e| e.to_string()),
        |run, outcome, seconds| recall::Record::new(run, &outcome, seconds),
        done,
    )
}

/// Train every run of the tracking study of "The transition's spectrum"
/// on `threads` threads, calling `done` after each (with the runs
/// finished so far); the records in the plan's order, or the first run
/// that failed and why.
pub fn run_tracking(
    runs: &[tracking::Run],
    threads: usize,
    done: impl Fn(&tracking::Record, usize) + Sync,
) -> Result<Vec<tracking::Record>, String> {
    run_each(
        runs,
        threads,
        |run| train_tracking(run).map_err(|e| e.to_string()),
        tracking::Record::new,
        done,
    )
}

/// Train every run of the language-model study on `threads` threads,
/// calling `done` after each (with the runs finished so far); the
/// records in the plan's order, or why the text could not be read.
pub fn run_lm(
    runs: &[lm_study::Run],
    threads: usize,
    done: impl Fn(&lm_study::Record, usize) + Sync,
) -> Result<Vec<lm_study::Record>, String> {
    let corpus = crate::trainers::lm::text::corpus()?;
    run_each(
        runs,
        threads,
        |run| {
            crate::trainers::lm::train(run, &corpus).map_err(|e| e.to_string())
        },
        lm_study::Record::of,
        done,
    )
}

/// Train every run of the recall comparison in Zoology's setting on
/// `threads` threads, calling `done` after each (with the runs finished so
/// far); the records in the plan's order, or the first run that failed.
pub fn run_mqar(
    runs: &[crate::after::recall::zoology_study::Run],
    threads: usize,
    done: impl Fn(&crate::after::recall::zoology_study::Record, usize) + Sync,
) -> Result<Vec<crate::after::recall::zoology_study::Record>, String> {
    use crate::trainers::mqar;
    run_each(
        runs,
        threads,
        |run| mqar::train(run).map_err(|e| e.to_string()),
        mqar::record,
        done,
    )
}

/// Train every run of the rewrite variant's comparison on `threads`
/// threads, calling `done` after each (with the runs finished so far);
/// the records in the plan's order, or the first run that failed.
pub fn run_mqar_rewrite(
    runs: &[crate::after::recall::zoology_study::Run],
    threads: usize,
    done: impl Fn(&crate::after::recall::rewrite_study::Record, usize) + Sync,
) -> Result<Vec<crate::after::recall::rewrite_study::Record>, String> {
    use crate::trainers::mqar_rewrite;
    run_each(
        runs,
        threads,
        |run| mqar_rewrite::train(run).map_err(|e| e.to_string()),
        mqar_rewrite::record,
        done,
    )
}

/// Every run of a plan trained on `threads` threads, each taken by the
/// next free thread: `train` trains one, `record` makes its record from
/// what training returned and the CPU seconds it took (wall seconds
/// where the system has no thread clock), and `done` is called after
/// each with the number finished so far.
fn run_each<R, T, Rec>(
    runs: &[R],
    threads: usize,
    train: impl Fn(&R) -> Result<T, String> + Sync,
    record: impl Fn(&R, T, f64) -> Rec + Sync,
    done: impl Fn(&Rec, usize) + Sync,
) -> Result<Vec<Rec>, String>
where
    R: Sync + std::fmt::Debug,
    Rec: Send,
{
    let next = AtomicUsize::new(0);
    let out: Mutex<Vec<Option<Result<Rec, String>>>> =
        Mutex::new(runs.iter().map(|_| None).collect());
    let finished = AtomicUsize::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads.max(1) {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(run) = runs.get(i) else { break };
                    let start = thread_cpu_seconds();
                    let wall = std::time::Instant::now();
                    let outcome = train(run);
                    let seconds = match (start, thread_cpu_seconds()) {
                        (Some(a), Some(b)) => b - a,
                        _ => wall.elapsed().as_secs_f64(),
                    };
                    let made = outcome
                        .map(|o| record(run, o, seconds))
                        .map_err(|e| format!("{run:?}: {e}"));
                    let count = finished.fetch_add(1, Ordering::Relaxed) + 1;
                    if let Ok(r) = &made {
                        done(r, count);
                    }
                    out.lock().expect("no thread panicked")[i] = Some(made);
                }
            });
        }
    });
    let out = out.into_inner().expect("no thread panicked");
    out.into_iter().map(|r| r.expect("every run ran")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_run_is_trained_once_and_recorded_in_the_plans_order() {
        let runs: Vec<u64> = (0..23).collect();
        for threads in [1, 2, 5] {
            let counts = Mutex::new(Vec::new());
            let records = run_each(
                &runs,
                threads,
                |&r| Ok(r * r),
                |&r, squared, seconds| {
                    assert!(seconds >= 0.0);
                    (r, squared)
                },
                |_, count| counts.lock().unwrap().push(count),
            )
            .unwrap();
            let want: Vec<(u64, u64)> =
                runs.iter().map(|&r| (r, r * r)).collect();
            assert_eq!(records, want, "{threads} threads");
            let mut counts = counts.into_inner().unwrap();
            counts.sort();
            assert_eq!(counts, (1..=runs.len()).collect::<Vec<_>>());
        }
        // A run that fails is named in the error.
        let failed = run_each(
            &runs,
            2,
            |&r| {
                if r == 7 {
                    Err("diverged".to_string())
                } else {
                    Ok(r)
                }
            },
            |_, r, _| r,
            |_, _| {},
        );
        assert_eq!(failed.unwrap_err(), "7: diverged");
    }
    use crate::paper::retrieval::model::{Phi, Rule};
    use crate::paper::retrieval::sweep::run;

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
}
