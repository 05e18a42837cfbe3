//! Tests of sliding-window attention and the hybrid in Zoology's setting:
//! the window against full softmax and against tokens outside it, the
//! hand-written gradients against central differences in f64, f32
//! against f64, bad windows, the state each layer keeps, and the
//! committed study of recall against state size (mqar-state.tsv).

use crate::after::recall::model::{
    Mixer, Work as MixerWork, rule_forward, softmax_forward,
};
use crate::after::recall::window::window_forward;
use crate::after::recall::zoology::*;
use crate::after::recall::zoology_state::*;
use crate::input::InputError;
use crate::paper::retrieval::adam::Weights;
use crate::random::{BookRng, seeded, standard_normal};

use super::zoology::{
    SMALL, WIDE, f32_computes_what_f64_computes,
    gradients_match_central_differences, moved,
};

/// The window models and hybrids the gradient tests cover, at width d.
fn nets(d: usize) -> Vec<Net> {
    let two = |a, b| Net {
        mixers: [a, b],
        vocab: SMALL.vocab,
        d,
    };
    let mut nets: Vec<Net> = [1, 3, SMALL.len]
        .map(|w| Net::new(Mixer::Window(w), SMALL.vocab, d))
        .to_vec();
    nets.push(two(Mixer::GatedDelta, Mixer::Window(3)));
    nets.push(two(Mixer::Window(2), Mixer::Delta));
    nets.push(two(Mixer::DiagonalGates, Mixer::Softmax));
    nets
}

#[test]
fn window_and_hybrid_gradients_match_central_differences() {
    for (seed, d) in [(1, 3), (2, 4)] {
        for n in nets(d) {
            gradients_match_central_differences(n, seed);
        }
    }
}

#[test]
fn the_f32_window_and_hybrid_models_compute_what_the_f64_models_compute() {
    let hybrids = [8, 16].map(|d| Net {
        vocab: WIDE.vocab,
        ..hybrid(d)
    });
    let windows = [4, 32].map(|w| Net::new(Mixer::Window(w), WIDE.vocab, 16));
    for n in hybrids.into_iter().chain(windows) {
        for seed in 0..2 {
            f32_computes_what_f64_computes(n, WIDE, seed);
        }
    }
}

/// Mixer scratch with random q, k, v rows for `len` tokens of width d.
fn random_rows(rng: &mut BookRng, len: usize, d: usize) -> MixerWork<f64> {
    let mut m = MixerWork::default();
    for buf in [&mut m.q, &mut m.k, &mut m.v] {
        *buf = (0..len * d).map(|_| standard_normal(rng)).collect();
    }
    m
}

/// The reads of a window (`Some(w)`) or of full softmax at positions
/// `first` on.
fn reads(m: &mut MixerWork<f64>, d: usize, w: Option<usize>, first: usize) {
    let len = m.q.len() / d;
    m.y = vec![0.0; (len - first) * d];
    match w {
        Some(w) => window_forward(d, w, len, first, m),
        None => softmax_forward(d, len, first, m),
    }
}

#[test]
fn a_window_as_long_as_the_sequence_is_full_softmax_attention() {
    // The mixer alone, over shapes and the first position read.
    let mut rng = seeded(3);
    for (len, d, first) in [(1, 2, 0), (7, 3, 0), (12, 4, 5), (30, 8, 0)] {
        for extra in [0, 1, 9] {
            let mut m = random_rows(&mut rng, len, d);
            reads(&mut m, d, None, first);
            let full = m.y.clone();
            reads(&mut m, d, Some(len + extra), first);
            for (a, b) in full.iter().zip(&m.y) {
                assert!((a - b).abs() <= 1e-12 * (1.0 + a.abs()), "{len}");
            }
        }
    }
    // The two-layer model: the same loss and the same gradient.
    for seed in 0..3 {
        let soft = Net::new(Mixer::Softmax, SMALL.vocab, 4);
        for w in [SMALL.len, SMALL.len + 3] {
            let win = Net::new(Mixer::Window(w), SMALL.vocab, 4);
            let p = moved(soft, seed);
            let seq = SMALL.sample(&mut seeded(seed + 20));
            let (mut ga, mut gb) = (p.zeros_like(), p.zeros_like());
            let mut work = Work::default();
            let a = run_mqar(
                soft,
                SMALL,
                &p,
                &seq,
                Some((&mut ga, 1.0)),
                &mut work,
            )
            .unwrap();
            let b =
                run_mqar(win, SMALL, &p, &seq, Some((&mut gb, 1.0)), &mut work)
                    .unwrap();
            assert!((a.loss - b.loss).abs() <= 1e-12 * a.loss);
            for (x, y) in ga.w.iter().zip(&gb.w) {
                assert!((x - y).abs() <= 1e-12 * (1.0 + x.abs()));
            }
        }
    }
}

#[test]
fn a_window_ignores_every_token_before_its_last_w() {
    let mut rng = seeded(4);
    for (len, d, w) in [(9, 3, 1), (16, 4, 3), (20, 2, 8)] {
        let mut m = random_rows(&mut rng, len, d);
        reads(&mut m, d, Some(w), 0);
        let y = m.y.clone();
        for t in w..len {
            // Every key and value older than the window replaced...
            let mut old = random_rows(&mut rng, len, d);
            let keep = (t + 1 - w) * d..len * d;
            old.q.clone_from(&m.q);
            old.k[keep.clone()].copy_from_slice(&m.k[keep.clone()]);
            old.v[keep.clone()].copy_from_slice(&m.v[keep.clone()]);
            reads(&mut old, d, Some(w), 0);
            // ...leaves the read at t exactly as it was,
            assert_eq!(old.y[t * d..(t + 1) * d], y[t * d..(t + 1) * d]);
            // while the oldest token inside the window does change it.
            let mut inside = random_rows(&mut rng, len, d);
            inside.q.clone_from(&m.q);
            inside.k.clone_from(&m.k);
            inside.v.clone_from(&m.v);
            let oldest = (t + 1 - w) * d;
            inside.v[oldest] += 1.0;
            reads(&mut inside, d, Some(w), 0);
            assert_ne!(inside.y[t * d..(t + 1) * d], y[t * d..(t + 1) * d]);
        }
    }
}

#[test]
fn a_windows_reads_are_averages_of_its_values_even_with_scores_in_the_hundreds()
{
    let mut rng = seeded(5);
    let (len, d, w) = (12, 4, 5);
    for grow in [1.0, 20.0, 40.0] {
        let mut m = random_rows(&mut rng, len, d);
        for x in m.q.iter_mut().chain(m.k.iter_mut()) {
            *x *= grow;
        }
        let top = (0..len)
            .flat_map(|t| (t.saturating_sub(w - 1)..=t).map(move |s| (t, s)))
            .map(|(t, s)| {
                let (q, k) = (&m.q[t * d..][..d], &m.k[s * d..][..d]);
                q.iter().zip(k).map(|(a, b)| a * b).sum::<f64>()
                    / (d as f64).sqrt()
            })
            .fold(f64::NEG_INFINITY, f64::max);
        assert!(grow < 40.0 || top > 400.0, "scores reach {top}");
        reads(&mut m, d, Some(w), 0);
        // Each coordinate of a read lies between the smallest and the
        // largest of that coordinate over the window's values.
        for t in 0..len {
            for j in 0..d {
                let seen =
                    (t.saturating_sub(w - 1)..=t).map(|s| m.v[s * d + j]);
                let lo = seen.clone().fold(f64::INFINITY, f64::min);
                let hi = seen.fold(f64::NEG_INFINITY, f64::max);
                let y = m.y[t * d + j];
                assert!(lo - 1e-12 <= y && y <= hi + 1e-12, "{t} {j}: {y}");
            }
        }
    }
}

#[test]
fn a_window_of_no_tokens_is_an_input_error() {
    let seq = SMALL.sample(&mut seeded(1));
    let good = Net::new(Mixer::Window(2), SMALL.vocab, 3);
    let p: Params<f64> = Params::init(&mut seeded(2), good);
    let mut w = Work::default();
    assert!(run_mqar(good, SMALL, &p, &seq, None, &mut w).is_ok());
    let hybrid = Net {
        mixers: [Mixer::GatedDelta, Mixer::Window(0)],
        ..good
    };
    for bad in [Net::new(Mixer::Window(0), SMALL.vocab, 3), hybrid] {
        let p: Params<f64> = Params::init(&mut seeded(2), bad);
        match run_mqar(bad, SMALL, &p, &seq, None, &mut w) {
            Err(InputError::BadParameter { name, value, .. }) => {
                assert_eq!((name, value), ("window", 0));
            }
            other => panic!("{other:?}"),
        }
    }
    // The one-layer model of the variant mixes with no window.
    use crate::after::recall::model as one;
    use crate::after::recall::task::Task;
    let task = Task {
        keys: 8,
        values: 8,
        pairs: 2,
    };
    let shape = one::Shape { task, d: 4 };
    let mixer = Mixer::Window(2);
    let p: one::Params<f64> = one::Params::init(&mut seeded(3), shape, mixer);
    let s = task.sample(&mut seeded(4));
    let mut w = one::Work::default();
    let got = one::run_sequence(mixer, shape, &p, &s, None, &mut w);
    assert!(matches!(got, Err(InputError::BadParameter { .. })));
}

#[test]
fn a_hybrid_lays_out_each_layer_for_its_own_mixer() {
    for d in [3, 8] {
        let h = Net {
            mixers: [Mixer::GatedDelta, Mixer::Window(4)],
            vocab: SMALL.vocab,
            d,
        };
        let gdn = Net::new(Mixer::GatedDelta, SMALL.vocab, d);
        let win = Net::new(Mixer::Window(4), SMALL.vocab, d);
        // Each layer takes the size of its mixer's layer.
        assert_eq!(h.layer(0).wo, gdn.layer(0).wo);
        let second = |n: Net| n.layer(1).wo.end - n.layer(1).wq.start;
        assert_eq!(second(h), second(win));
        assert_eq!(h.layer(1).wq.start, gdn.layer(0).wo.end);
        assert_eq!(
            (h.layer(0).mixer, h.layer(1).mixer),
            (h.mixers[0], h.mixers[1])
        );
        let embed_and_out = win.size() - 2 * second(win);
        assert_eq!(
            h.size(),
            embed_and_out + gdn.layer(0).wo.end - gdn.layer(0).wq.start
                + second(win)
        );
        assert_eq!(h.name(), "gated delta + window 4");
        assert_eq!(win.name(), "window 4");
    }
}

#[test]
fn a_rule_keeps_d_by_d_floats_a_window_2wd_and_softmax_2nd() {
    let mut rng = seeded(5);
    let (len, d) = (12, 4);
    for &mixer in RULES {
        // The recurrence keeps one d × d memory per step, S_0 included.
        let mut m = random_rows(&mut rng, len, d);
        m.gate = vec![0.5; len * mixer.gates(d)];
        m.y = vec![0.0; len * d];
        rule_forward(mixer, d, len, 0, &mut m);
        let per_step = m.memory.len() / (len + 1);
        assert_eq!(per_step, state_floats(mixer, d, len), "{mixer:?}");
    }
    // A window reads w keys and w values of width d (see the test that it
    // ignores the rest); softmax all n of each; short sequences fill less.
    for w in [1, 4, 8] {
        assert_eq!(state_floats(Mixer::Window(w), d, len), 2 * w * d);
        assert_eq!(state_floats(Mixer::Window(w), d, 2), 2 * 2.min(w) * d);
    }
    assert_eq!(state_floats(Mixer::Softmax, d, len), 2 * len * d);
    let h = hybrid(16);
    assert_eq!(net_state(h, 64), 16 * 16 + 2 * HYBRID_WINDOW * 16);
}

// The committed study (listings/data/mqar-state.tsv).

use crate::after::recall::zoology_study::{
    LENGTHS, LRS, Record, budget_line, to_tsv,
};
use crate::data_file;

#[test]
fn the_mqar_state_file_holds_every_planned_run_once_and_its_provenance() {
    let (comments, records) = committed();
    let planned = plan();
    let runs: Vec<&Record> = records.iter().collect();
    super::zoology::holds_the_plan(&comments, &runs, &planned, &budget_line());
    assert!(comments.contains(&rates_line()), "the rates line");
    // Every model of the chapter's table has runs at its best rate.
    let all = crate::after::recall::zoology_state::records();
    for net in models() {
        assert_eq!(best(&all, net).1.len(), 3, "{}", net.name());
    }
}

#[test]
fn the_mqar_state_sweep_took_at_most_twenty_cpu_minutes() {
    let (comments, records) = committed();
    let machine = comments
        .iter()
        .find(|c| c.starts_with("Machine: "))
        .expect("a machine line");
    assert!(data_file::wall_minutes(machine).is_some(), "{machine}");
    let cpu: f64 = records.iter().map(|r| r.seconds).sum::<f64>() / 60.0;
    assert!(cpu <= 20.0, "{cpu} CPU-minutes");
}

#[test]
fn the_smallest_hybrid_run_retrains_to_the_committed_numbers() {
    use crate::trainers::mqar::{record, train};
    let (_, records) = committed();
    let r = plan()
        .into_iter()
        .find(|r| {
            r.net == hybrid(HYBRID_WIDTHS[0]) && r.lr == LRS[0] && r.seed == 1
        })
        .expect("the run is planned");
    let committed = records
        .iter()
        .find(|c| {
            (c.mixer.clone(), c.d, c.lr, c.seed)
                == (r.net.name(), r.net.d, r.lr, 1)
        })
        .expect("the run is committed");
    let again = record(&r, train(&r).unwrap(), 0.0);
    let printed = |r: &Record| to_tsv(&[], std::slice::from_ref(r));
    let strip = |s: String| s.rsplit_once('\t').map(|(a, _)| a.to_string());
    assert_eq!(strip(printed(&again)), strip(printed(committed)));
}

#[test]
fn one_rate_was_the_best_for_every_rule_at_both_widths_of_the_comparison() {
    use crate::after::recall::zoology_study as z;
    let (_, records) = z::committed();
    for &m in RULES {
        for d in z::WIDTHS {
            assert_eq!(z::best(&records, m, d).0, WIDE_LRS[0], "{m:?} {d}");
        }
    }
}

// What the committed study shows (both files, each model at its best
// rate, means over seeds).

/// Mean accuracy at length index `i` of a model on the committed files.
fn acc(net: Net, i: usize) -> f64 {
    mean(&records(), net, i)
}

fn rule(m: Mixer, d: usize) -> Net {
    Net::new(m, crate::after::recall::zoology_study::VOCAB, d)
}

/// The windows whose state equals that of the two-layer rules of some
/// width (2 w d = d_rule²), with that width.
fn equal_state_pairs() -> Vec<(Net, usize)> {
    let mut pairs = Vec::new();
    for w in WINDOWS {
        let state = net_state(window(w), LEN);
        for d in [8, 16, 32, 64] {
            if net_state(rule(Mixer::Sum, d), LEN) == state {
                pairs.push((window(w), d));
            }
        }
    }
    pairs
}

use crate::after::recall::zoology_study::LEN;

#[test]
fn at_equal_state_a_window_answers_fewer_than_the_delta_rules_at_every_length()
{
    let pairs = equal_state_pairs();
    assert_eq!(pairs.len(), 2, "two windows match a rule's state");
    for (win, d) in pairs {
        for i in 0..LENGTHS.len() {
            for m in [Mixer::Delta, Mixer::GatedDelta] {
                assert!(acc(win, i) < acc(rule(m, d), i), "{}", win.name());
            }
        }
    }
}

#[test]
fn at_equal_state_a_window_answers_fewer_than_every_rule_at_longer_lengths() {
    for (win, d) in equal_state_pairs() {
        for i in 1..LENGTHS.len() {
            for &m in RULES {
                assert!(
                    acc(win, i) < acc(rule(m, d), i),
                    "{} {m:?}",
                    win.name()
                );
            }
        }
    }
}

#[test]
fn the_longest_window_loses_more_at_four_times_the_length_than_any_rule_of_its_state()
 {
    let last = LENGTHS.len() - 1;
    let (win, d) = *equal_state_pairs().last().expect("a pair");
    assert_eq!(win, window(*WINDOWS.last().unwrap()));
    let loss = |n: Net| acc(n, 0) - acc(n, last);
    for &m in RULES {
        assert!(loss(win) > loss(rule(m, d)), "{m:?}");
    }
}

#[test]
fn the_hybrid_answers_fewer_than_the_gated_delta_model_and_more_than_the_window_model()
 {
    for d in HYBRID_WIDTHS {
        let h = hybrid(d);
        for i in 0..LENGTHS.len() {
            assert!(acc(h, i) < acc(rule(Mixer::GatedDelta, d), i), "{d} {i}");
        }
    }
    // At the window's width all three keep the same state.
    let (h, w) = (hybrid(WINDOW_WIDTH), window(HYBRID_WINDOW));
    let g = rule(Mixer::GatedDelta, WINDOW_WIDTH);
    assert_eq!(net_state(h, LEN), net_state(w, LEN));
    assert_eq!(net_state(h, LEN), net_state(g, LEN));
    for i in 0..LENGTHS.len() {
        assert!(acc(h, i) > acc(w, i), "{i}");
    }
}

#[test]
fn at_the_narrowest_width_every_rule_misses_nine_queries_in_ten_and_softmax_answers_nine()
 {
    let d = RULE_WIDTHS[0];
    for i in 0..LENGTHS.len() {
        for &m in RULES {
            assert!(acc(rule(m, d), i) < 0.1, "{m:?} {i}");
        }
        assert!(acc(rule(Mixer::Softmax, d), i) > 0.9, "{i}");
    }
}

#[test]
fn at_the_widest_width_four_rules_answer_more_and_two_fewer_than_at_width_32() {
    let (wide, before) = (RULE_WIDTHS[1], 32);
    let more = [
        Mixer::Sum,
        Mixer::FixedDecay,
        Mixer::DiagonalGates,
        Mixer::Delta,
    ];
    for i in 0..LENGTHS.len() {
        for &m in RULES {
            let (a, b) = (acc(rule(m, wide), i), acc(rule(m, before), i));
            match more.contains(&m) {
                true => assert!(a > b, "{m:?} {i}"),
                false => assert!(a < b, "{m:?} {i}"),
            }
        }
    }
}

#[test]
fn at_the_training_length_windows_and_rules_up_to_width_32_recall_more_with_more_state()
 {
    for pair in WINDOWS.windows(2) {
        assert!(
            acc(window(pair[1]), 0) > acc(window(pair[0]), 0),
            "{pair:?}"
        );
    }
    for &m in RULES {
        for pair in [8, 16, 32].windows(2) {
            let (a, b) = (acc(rule(m, pair[1]), 0), acc(rule(m, pair[0]), 0));
            assert!(a > b, "{m:?} {pair:?}");
        }
    }
}
