use super::*;
use crate::measure::{Clock, Machine, time_once};

#[test]
fn loglog_slope_recovers_the_exponent_of_a_power_law() {
    for exponent in [0.0, 1.0, 2.0, 2.5] {
        for scale in [1e-9, 1.0, 3e4] {
            let points: Vec<(f64, f64)> = [64.0, 256.0, 1000.0, 4096.0]
                .iter()
                .map(|&n: &f64| (n, scale * n.powf(exponent)))
                .collect();
            let a = loglog_slope(&points);
            assert!((a - exponent).abs() < 1e-12, "{a} vs {exponent}");
        }
    }
    // Noise of up to a tenth on each time, at the study's lengths,
    // moves the slope of a quadratic (or a line) by less than an
    // eighth. The slope is linear in the logarithms of the noise, so
    // its largest change is at a corner: each time 0.9 or 1.1 times
    // its value. A tenth would not bound it.
    let lengths = TIMING.lengths;
    for exponent in [1.0, 2.0] {
        let mut worst = 0.0_f64;
        for corner in 0..1 << lengths.len() {
            let noisy: Vec<(f64, f64)> = lengths
                .iter()
                .enumerate()
                .map(|(i, &n)| {
                    let wobble = [0.9, 1.1][(corner >> i) & 1];
                    let n = n as f64;
                    (n, 1e-9 * n.powf(exponent) * wobble)
                })
                .collect();
            let moved = (loglog_slope(&noisy) - exponent).abs();
            worst = worst.max(moved);
        }
        assert!(worst < 0.125, "{worst}");
        assert!(worst > 0.1, "{worst}");
    }
}

#[test]
fn parallel_forms_hold_n_squared_and_the_others_a_fixed_state() {
    // The chapter's table, and one that doubles N from row to row.
    let doubling = memory_table(&[1 << 8, 1 << 9, 1 << 10], 16, 8, 32, 4);
    for table in [chapter_memory_table(), doubling] {
        for pair in table.rows.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            let factor = b.n / a.n;
            assert!(factor > 1 && b.n == factor * a.n);
            for (i, form) in FORMS.iter().enumerate() {
                match form {
                    Form::ScoresFirst | Form::Parallel => {
                        let grown = factor * factor * a.floats[i];
                        assert_eq!(b.floats[i], grown);
                    }
                    _ => assert_eq!(b.floats[i], a.floats[i], "{form:?}"),
                }
            }
        }
    }
}

#[test]
fn working_floats_count_what_the_forms_build() {
    // The scores each form builds and the state it carries, as arrays.
    for (n, p, m, chunk) in [(10, 4, 3, 4), (64, 8, 8, 16), (5, 2, 6, 8)] {
        let [phi_q, phi_k, v] = random(0, n, p, m);
        let (n64, p64, m64, c64) = (n as u64, p as u64, m as u64, chunk as u64);
        let held = |form: Form| form.working_floats(n64, p64, m64, c64);
        let full = causal_scores(&phi_q, &phi_k).len() as u64;
        assert_eq!(held(Form::Parallel), full);
        let unmasked = phi_q.dot(&phi_k.t()).len() as u64;
        assert_eq!(held(Form::ScoresFirst), unmasked);
        let memory = sequence_memory(&phi_k, &v);
        let state = (memory.s.len() + memory.z.len()) as u64;
        assert_eq!(held(Form::Recurrent), state);
        assert_eq!(held(Form::MemoryFirst), state);
        let c = chunk.min(n);
        let rows = s![..c, ..];
        let one_chunk =
            causal_scores(&phi_q.slice(rows), &phi_k.slice(rows)).len();
        let chunked = Form::Chunkwise.working_floats(n64, p64, m64, c64);
        assert_eq!(chunked, one_chunk as u64 + state);
    }
}

#[test]
fn every_form_runs_and_the_causal_ones_agree() {
    let [phi_q, phi_k, v] = random(3, 200, 8, 8);
    let rec = Form::Recurrent.run(&phi_q, &phi_k, &v, 16).unwrap();
    for form in FORMS {
        let o = form.run(&phi_q, &phi_k, &v, 16).unwrap();
        assert_eq!(o.dim(), (200, 8));
        if form.causal() {
            assert!(worst_row_relative_difference(&o, &rec) < 1e-12);
        } else {
            // Non-causal: every query reads all keys, so only the last
            // row can match the causal forms.
            assert!(worst_row_relative_difference(&o, &rec) > 1e-3);
            assert_relative_eq!(o.row(199), rec.row(199), max_relative = 1e-10);
        }
    }
}

/// A timing config small enough for the fake clocks below.
fn tiny_config(reps: usize) -> TimingConfig {
    TimingConfig {
        lengths: &[3, 8, 20],
        d: 4,
        m: 2,
        chunk: 4,
        reps,
        seed: 1,
    }
}

#[test]
fn the_timing_study_times_every_form_at_every_length_in_rounds_on_one_thread() {
    // A fake clock records each call: the order, the inputs, the thread.
    for reps in [1, 3, 5] {
        let config = tiny_config(reps);
        let here = std::thread::current().id();
        let mut calls = Vec::new();
        timing_rows(&config, |form, qkv| {
            assert_eq!(std::thread::current().id(), here);
            let n = qkv[0].nrows();
            calls.push((form, n, qkv[0].as_ptr() as usize));
            1.0
        });
        // Round after round, each round every length, every form.
        let mut want = Vec::new();
        for _ in 0..reps {
            for &n in config.lengths {
                for form in FORMS {
                    want.push((form, n));
                }
            }
        }
        let order: Vec<(Form, usize)> =
            calls.iter().map(|&(f, n, _)| (f, n)).collect();
        assert_eq!(order, want);
        // The same inputs for every form and round at a length.
        for &n in config.lengths {
            let mut inputs = calls.iter().filter(|c| c.1 == n).map(|c| c.2);
            let first = inputs.next().unwrap();
            assert!(inputs.all(|p| p == first), "N {n}");
        }
    }
}

#[test]
fn the_timing_study_keeps_the_median_so_a_busy_moment_spoils_one_sample_of_a_cell()
 {
    let config = tiny_config(3);
    let cells = config.lengths.len() * FORMS.len();
    // A clean time for each cell, a little noise from round to round.
    let clean = |form: Form, n: usize, round: usize| {
        let i = FORMS.iter().position(|&f| f == form).unwrap();
        (n * 10 + i) as f64 * (1.0 + 0.01 * round as f64)
    };
    let run = |busy: std::ops::Range<usize>| {
        let mut call = 0;
        timing_rows(&config, |form, qkv| {
            let t = clean(form, qkv[0].nrows(), call / cells);
            let slow = if busy.contains(&call) { 1e6 } else { 1.0 };
            call += 1;
            t * slow
        })
    };
    let quiet = run(0..0);
    // The median of the three rounds is the middle round's time.
    for row in &quiet {
        for (i, &form) in FORMS.iter().enumerate() {
            assert_eq!(row.seconds[i], clean(form, row.n, 1));
        }
    }
    // A busy moment as long as a round, wherever it falls, spoils at
    // most one sample of each cell: every median is still one of the
    // clean samples' times.
    let in_clean_range = |rows: &[TimingRow]| {
        rows.iter().all(|row| {
            FORMS.iter().zip(&row.seconds).all(|(&form, &x)| {
                clean(form, row.n, 0) <= x && x <= clean(form, row.n, 2)
            })
        })
    };
    assert!(in_clean_range(&quiet));
    for start in 0..2 * cells {
        let busy = run(start..start + cells);
        assert!(in_clean_range(&busy), "busy from call {start}");
    }
    // One twice as long spoils two samples of some cell, whose median
    // is then a spoiled time.
    let busy = run(cells / 2..cells / 2 + 2 * cells);
    assert!(!in_clean_range(&busy));
}

#[test]
fn the_printed_slopes_are_the_fits_of_the_printed_times() {
    // Exact power laws from a fake clock: N² for the forms that build
    // the scores, N for the others; the slope line prints each fit.
    let config = TimingConfig {
        lengths: &[16, 32, 64, 128],
        ..tiny_config(3)
    };
    for (quadratic, linear) in [(2.0, 1.0), (1.7, 1.2)] {
        let rows = timing_rows(&config, |form, qkv| {
            let n = qkv[0].nrows() as f64;
            match form {
                Form::ScoresFirst | Form::Parallel => 1e-9 * n.powf(quadratic),
                _ => 1e-7 * n.powf(linear),
            }
        });
        let study = TimingStudy {
            d: config.d,
            m: config.m,
            chunk: config.chunk,
            reps: config.reps,
            seed: config.seed,
            clock: Clock::best(),
            machine: Machine::now(),
            rows,
        };
        let printed = study.to_string();
        let lines: Vec<&str> = printed.lines().collect();
        let at = lines
            .iter()
            .position(|l| l.starts_with("slope of log time"))
            .expect("a slope line");
        let slopes: Vec<f64> = lines[at + 1]
            .split_whitespace()
            .map(|x| x.parse().unwrap())
            .collect();
        assert_eq!(slopes.len(), FORMS.len());
        for (&form, &printed) in FORMS.iter().zip(&slopes) {
            let want = match form {
                Form::ScoresFirst | Form::Parallel => quadratic,
                _ => linear,
            };
            assert!((printed - want).abs() < 0.006, "{form:?}: {printed}");
            assert_eq!(
                format!("{printed:.2}"),
                format!("{:.2}", study.slope(form))
            );
        }
        // And it says which clock it read, how many rounds, one thread.
        assert!(printed.contains(study.clock.describe()), "{printed}");
        assert!(printed.contains("median of 3 runs"), "{printed}");
        assert!(printed.contains("one thread"), "{printed}");
    }
}

#[test]
fn the_study_reads_the_thread_clock_which_does_not_count_time_not_running() {
    // Where the system has a CPU clock per thread the study reads it,
    // and a thread that sleeps is not running: the clock barely moves.
    let clock = Clock::best();
    assert_eq!(crate::m3::schedules::study::measured_timing().clock, clock);
    if cfg!(unix) {
        assert_eq!(clock, Clock::ThreadCpu);
    }
    if clock == Clock::ThreadCpu {
        let nap = std::time::Duration::from_millis(50);
        let asleep = time_once(clock, || std::thread::sleep(nap));
        assert!(asleep < 0.01, "{asleep}");
        let awake = time_once(Clock::Wall, || std::thread::sleep(nap));
        assert!(awake >= 0.05, "{awake}");
        let busy =
            time_once(clock, || (0..200_000u64).map(|x| x ^ 7).sum::<u64>());
        assert!(busy > 0.0);
    }
}

#[test]
fn linear_work_beats_quadratic_work_by_any_constant_factor_at_long_enough_lengths()
 {
    // The counted work of the parallel form over that of the recurrent
    // form grows in proportion to N: whatever the factor, some length
    // passes it, and every longer length stays past it.
    use crate::appendix::speed::{Timed, arithmetic};
    for (p, m) in [(8, 8), (32, 32), (64, 16)] {
        let ratio = |n: usize| {
            arithmetic(Timed::Parallel, n, p, m, 1)
                / arithmetic(Timed::Recurrent, n, p, m, 1)
        };
        for factor in [1.0, 10.0, 1000.0] {
            let from = (1..1 << 20)
                .find(|&n| ratio(n) > factor)
                .expect("a length past the factor");
            for n in [from, from + 1, 2 * from, 1000 * from] {
                assert!(ratio(n) > factor, "p {p} m {m} N {n}");
            }
            let doubled = ratio(2 * from) / ratio(from);
            assert!((doubled - 2.0).abs() < 1e-12, "{doubled}");
        }
    }
}

#[test]
fn counted_work_grows_as_n_squared_for_the_score_forms_and_as_n_for_the_others()
{
    // The operations each of the five timed forms performs (counted on
    // its f32 twin by Appendix E's tests), at the timing study's
    // lengths, widths and chunk size.
    use crate::appendix::speed::{Timed, arithmetic};
    let timed = |form: Form| match form {
        Form::ScoresFirst => Timed::ScoresFirst,
        Form::MemoryFirst => Timed::MemoryFirst,
        Form::Parallel => Timed::Parallel,
        Form::Recurrent => Timed::Recurrent,
        Form::Chunkwise => Timed::Chunkwise,
    };
    let (p, m, c) = (TIMING.d, TIMING.m, TIMING.chunk);
    for pair in TIMING.lengths.windows(2) {
        let (a, b) = (pair[0], pair[1]);
        let x = b as f64 / a as f64;
        for form in FORMS {
            let ops = |n| arithmetic(timed(form), n, p, m, c);
            let grown = ops(b) / ops(a);
            let want = match form {
                Form::ScoresFirst | Form::Parallel => x * x,
                _ => x,
            };
            assert!((grown - want).abs() < 1e-12, "{form:?}: {grown}");
        }
    }
}
