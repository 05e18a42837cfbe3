//! The tracking section's tests: the tasks, the model's gradient and
//! reads, and the committed study against the plan and the chapter's
//! claims.

use crate::after::spectrum::tracking::model::*;
use crate::after::spectrum::tracking::study::*;
use crate::after::spectrum::tracking::task::{BOS, Sequence, Task};
use crate::data_file;
use crate::input::InputError;
use crate::paper::retrieval::adam::Weights;
use crate::random::{seeded, standard_normal};
use crate::trainers::tracking::train;

// The tasks.

#[test]
fn every_label_is_the_ones_so_far_modulo_the_tasks_modulus() {
    for task in [Task::Parity, Task::ModThree] {
        for seed in 0..5 {
            let s = task.sample(&mut seeded(seed), 50);
            assert_eq!(s.tokens.len(), 51);
            assert_eq!(s.tokens[0], BOS);
            s.check(task).unwrap();
            let mut ones = 0;
            for (t, &label) in s.labels.iter().enumerate() {
                ones += usize::from(s.tokens[t + 1] == 2);
                assert_eq!(label, ones % task.modulus());
            }
        }
    }
}

#[test]
fn every_label_of_an_s3_word_is_the_product_of_its_permutations_so_far() {
    use crate::after::spectrum::tracking::task::PERMUTATIONS;
    for seed in 0..5 {
        let s = Task::S3.sample(&mut seeded(seed), 40);
        s.check(Task::S3).unwrap();
        // Apply the permutations one after another to the three things.
        let mut at = [0, 1, 2];
        for (t, &label) in s.labels.iter().enumerate() {
            let g = PERMUTATIONS[s.tokens[t + 1] - 1];
            at = [g[at[0]], g[at[1]], g[at[2]]];
            assert_eq!(PERMUTATIONS[label], at);
        }
    }
}

// The model.

fn model(kind: Kind, range: Range, task: Task, d: usize) -> Model {
    Model {
        kind,
        range,
        writes: 1,
        task,
        d,
    }
}

/// Every task, transition and range, with one to three writes per token
/// for the delta rule.
fn every_model(d: usize) -> Vec<Model> {
    let mut all = Vec::new();
    for task in Task::ALL {
        for (kind, writes) in [
            (Kind::Delta, 1),
            (Kind::Diagonal, 1),
            (Kind::Delta, 2),
            (Kind::Delta, 3),
        ] {
            for range in Range::ALL {
                all.push(Model {
                    writes,
                    ..model(kind, range, task, d)
                });
            }
        }
    }
    all
}

fn loss(m: Model, p: &Params, seqs: &[Sequence]) -> f64 {
    seqs.iter()
        .map(|s| run_sequence(m, p, s, None).unwrap().loss)
        .sum()
}

#[test]
fn the_hand_written_gradient_matches_central_differences() {
    for (i, m) in every_model(3).into_iter().enumerate() {
        let mut rng = seeded(i as u64);
        let mut p = Params::init(&mut rng, m);
        // Gates moved away from their start, so each term matters.
        for z in &mut p.g {
            *z += standard_normal(&mut rng);
        }
        let seqs: Vec<Sequence> =
            [5, 9].iter().map(|&n| m.task.sample(&mut rng, n)).collect();
        let mut g = p.zeros_like();
        for s in &seqs {
            run_sequence(m, &p, s, Some((&mut g, 1.0))).unwrap();
        }
        let h = 1e-6;
        let analytic: Vec<Vec<f64>> =
            g.slices().into_iter().map(<[f64]>::to_vec).collect();
        for (tensor, want) in analytic.iter().enumerate() {
            for (j, &want) in want.iter().enumerate() {
                let mut plus = p.clone();
                plus.slices_mut()[tensor][j] += h;
                let mut minus = p.clone();
                minus.slices_mut()[tensor][j] -= h;
                let got = (loss(m, &plus, &seqs) - loss(m, &minus, &seqs))
                    / (2.0 * h);
                assert!(
                    (got - want).abs() <= 1e-6 * (1.0 + want.abs()),
                    "{m:?} tensor {tensor}[{j}]: {want} vs {got}"
                );
            }
        }
    }
}

#[test]
fn the_transitions_eigenvalues_lie_in_their_range() {
    // β_t in [0, s] with s = 1 or 2, so 1 − β_t in [0, 1] or [−1, 1];
    // α_t in [0, 1] or [−1, 1]; and the ends are reached.
    let mut alpha = [0.0; 1];
    for range in Range::ALL {
        let low = if range == Range::Extended { -1.0 } else { 0.0 };
        let (mut seen_low, mut seen_high) = (f64::INFINITY, f64::NEG_INFINITY);
        for z in [-40.0, -3.0, 0.0, 2.5, 40.0] {
            let along_k = 1.0 - strength(Kind::Delta, range, &[z]);
            coefficients(Kind::Diagonal, range, &[z], &mut alpha);
            for e in [along_k, alpha[0]] {
                assert!((low..=1.0).contains(&e), "{range:?} {z}: {e}");
                seen_low = seen_low.min(e);
                seen_high = seen_high.max(e);
            }
        }
        assert!((seen_low - low).abs() < 1e-12 && (seen_high - 1.0) < 1e-12);
    }
}

#[test]
fn every_variant_starts_with_its_gates_spread_around_eigenvalue_one_half() {
    let mut alpha = [0.0; 1];
    for kind in Kind::ALL {
        for range in Range::ALL {
            let z = start_gate(kind, range);
            let e = match kind {
                Kind::Delta => 1.0 - strength(kind, range, &[z]),
                Kind::Diagonal => {
                    coefficients(kind, range, &[z], &mut alpha);
                    alpha[0]
                }
            };
            assert!((e - 0.5).abs() < 1e-12, "{kind:?} {range:?}: {e}");
            // The drawn gates: centred on z, spread GATE_SPREAD.
            let m = model(kind, range, Task::Parity, 64);
            let g: Vec<f64> = (0..100)
                .flat_map(|seed| Params::init(&mut seeded(seed), m).g)
                .collect();
            let n = g.len() as f64;
            let mean = g.iter().sum::<f64>() / n;
            let sd =
                (g.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n).sqrt();
            assert!((mean - z).abs() < 0.2 && (sd - GATE_SPREAD).abs() < 0.2);
        }
    }
}

#[test]
fn bad_weights_and_sequences_are_errors_never_a_panic_or_a_nan() {
    for m in every_model(4) {
        let mut rng = seeded(3);
        let p = Params::init(&mut rng, m);
        let seq = m.task.sample(&mut rng, 12);
        let run = |p: &Params, s: &Sequence| {
            let mut g = p.zeros_like();
            run_sequence(m, p, s, Some((&mut g, 1.0)))
        };
        let said = |r: Result<Scored, InputError>| {
            r.expect_err("an error").to_string()
        };
        for bad in [f64::NAN, f64::INFINITY] {
            let mut q = p.clone();
            q.v[2] = bad;
            assert!(said(run(&q, &seq)).contains("V"), "{m:?}");
        }
        let zero = p.zeros_like();
        assert!(run(&zero, &seq).unwrap().loss.is_finite());
        let mut huge = p.clone();
        huge.o.iter_mut().for_each(|x| *x *= 1e300);
        huge.v.iter_mut().for_each(|x| *x *= 1e300);
        match run(&huge, &seq) {
            Ok(s) => assert!(s.loss.is_finite()),
            Err(e) => assert!(e.to_string().contains("loss"), "{e}"),
        }
        let mut s = seq.clone();
        s.labels.pop();
        assert!(said(run(&p, &s)).contains("labels"));
        let mut s = seq.clone();
        s.tokens[0] = 1;
        assert!(said(run(&p, &s)).contains("first token"));
        let mut s = seq.clone();
        s.tokens[3] = m.task.tokens();
        assert!(said(run(&p, &s)).contains("token"));
        let mut s = seq.clone();
        s.labels[2] = m.task.modulus();
        assert!(said(run(&p, &s)).contains("label"));
        let mut fewer = p.clone();
        fewer.o.pop();
        assert!(said(run(&fewer, &seq)).contains("O"));
        let wide = Model { d: 5, ..m };
        assert!(said(run_sequence(wide, &p, &seq, None)).contains("mismatch"));
        for writes in [0, m.writes + 1] {
            let bad = Model { writes, ..m };
            let r = run_sequence(bad, &p, &seq, None);
            let e = said(r);
            assert!(e.contains("writes") || e.contains("mismatch"), "{e}");
        }
        if m.kind == Kind::Diagonal {
            let two = Model { writes: 2, ..m };
            let r = run_sequence(two, &p, &seq, None);
            assert!(said(r).contains("writes per token"));
        }
    }
}

#[test]
fn the_models_reads_are_the_delta_rule_and_the_gated_sum_of_the_book() {
    // The memory the model builds is S_t = S_{t−1} H_t + B_t with the
    // chapter's transitions: checked against a plain d × d recurrence.
    for m in every_model(3) {
        let mut rng = seeded(11);
        let mut p = Params::init(&mut rng, m);
        for z in &mut p.g {
            *z += standard_normal(&mut rng);
        }
        let seq = m.task.sample(&mut rng, 8);
        let (d, h) = (m.d, m.writes);
        let mut s = vec![vec![0.0; d]; d];
        let mut scores_loss = 0.0;
        let unit = |v: Vec<f64>| {
            let n = (v.iter().map(|a| a * a).sum::<f64>() + 1e-6).sqrt();
            v.into_iter().map(|a| a / n).collect::<Vec<f64>>()
        };
        for (t, &x) in seq.tokens.iter().enumerate() {
            for j in 0..h {
                let r = x * h + j;
                let row = |table: &[f64], w: usize| {
                    table[r * w..(r + 1) * w].to_vec()
                };
                let (k, v) = (unit(row(&p.k, d)), row(&p.v, d));
                let z = row(&p.g, m.kind.gates(d));
                let mut alpha = vec![0.0; d];
                coefficients(m.kind, m.range, &z, &mut alpha);
                let beta = strength(m.kind, m.range, &z);
                let omega = if m.kind == Kind::Delta { beta } else { 1.0 };
                // H = diag(α)(I − β k kᵀ), B = ω v kᵀ.
                let hm = |i: usize, c: usize| {
                    alpha[i]
                        * (f64::from(u8::from(i == c)) - beta * k[i] * k[c])
                };
                let old = s.clone();
                for a in 0..d {
                    for c in 0..d {
                        s[a][c] =
                            (0..d).map(|i| old[a][i] * hm(i, c)).sum::<f64>()
                                + omega * v[a] * k[c];
                    }
                }
            }
            let q = unit(p.q[x * d..(x + 1) * d].to_vec());
            if t > 0 {
                let y: Vec<f64> = (0..d)
                    .map(|a| (0..d).map(|c| s[a][c] * q[c]).sum())
                    .collect();
                let classes = m.task.modulus();
                let sc: Vec<f64> = (0..classes)
                    .map(|c| {
                        (0..d).map(|i| p.o[c * d + i] * y[i]).sum::<f64>()
                            + p.o_bias[c]
                    })
                    .collect();
                let lse = sc.iter().map(|x| x.exp()).sum::<f64>().ln();
                scores_loss += lse - sc[seq.labels[t - 1]];
            }
        }
        let got = run_sequence(m, &p, &seq, None).unwrap().loss;
        assert!(
            (got - scores_loss).abs() < 1e-9 * (1.0 + got.abs()),
            "{m:?}: {got} vs {scores_loss}"
        );
    }
}

// The committed study.

#[test]
fn the_committed_file_holds_every_planned_run_once_and_its_provenance() {
    let (comments, records) = committed();
    let planned = plan();
    assert_eq!(records.len(), planned.len());
    for (r, run) in records.iter().zip(&planned) {
        let m = run.model;
        assert_eq!(
            (
                r.task.as_str(),
                r.kind.clone(),
                r.range.as_str(),
                r.d,
                r.seed
            ),
            (
                m.task.name(),
                rule_name(m.kind, m.writes),
                m.range.name(),
                m.d,
                run.seed
            )
        );
        assert_eq!(r.accuracy.len(), LENGTHS.len());
        assert!(r.accuracy.iter().all(|a| (0.0..=1.0).contains(a)));
        assert!(r.seconds > 0.0);
    }
    let has = |prefix: &str| comments.iter().any(|c| c.starts_with(prefix));
    assert!(has("Machine: ") && has("Date: 20"));
    let machine = comments.iter().find(|c| c.starts_with("Machine: "));
    let minutes = machine.and_then(|m| data_file::wall_minutes(m));
    assert!(minutes.is_some_and(|m| m <= 15.0), "{machine:?}");
    assert!(comments.contains(&budget_line()), "the budget line");
}

#[test]
fn the_smallest_run_retrains_to_the_committed_numbers() {
    // Every run costs the same; the first of the plan.
    let first = plan()[0];
    let m = first.model;
    let committed = &runs_of(m.task, (m.kind, m.writes), m.range)[0];
    let again = Record::new(&first, train(&first).unwrap(), 0.0);
    let printed = |r: &Record| to_tsv(&[], std::slice::from_ref(r));
    let strip = |s: String| s.rsplit_once('\t').map(|(a, _)| a.to_string());
    assert_eq!(strip(printed(&again)), strip(printed(committed)));
}

/// Every committed accuracy of a task, transition and range at the test
/// lengths from `from` bits on, every seed's.
fn accuracies(
    task: Task,
    rule: (Kind, usize),
    range: Range,
    from: usize,
) -> Vec<f64> {
    let runs = runs_of(task, rule, range);
    assert_eq!(runs.len(), SEEDS.len());
    runs.iter()
        .flat_map(|r| {
            LENGTHS
                .iter()
                .filter(move |&&n| n >= from)
                .map(move |&n| r.at(n))
        })
        .collect()
}

#[test]
fn with_eigenvalues_in_0_1_parity_stays_at_chance_from_40_bits_on_every_seed() {
    for rule in RULES {
        for a in accuracies(Task::Parity, rule, Range::Restricted, TRAIN_MAX) {
            assert!((0.4..=0.6).contains(&a), "{rule:?}: {a}");
        }
    }
}

#[test]
fn with_eigenvalues_in_minus1_1_parity_is_right_at_every_length_and_seed() {
    for rule in RULES {
        for a in accuracies(Task::Parity, rule, Range::Extended, 0) {
            assert_eq!(a, 1.0, "{rule:?}");
        }
    }
}

#[test]
fn counting_modulo_3_stays_near_chance_from_40_bits_for_every_variant() {
    for rule in [(Kind::Delta, 1), (Kind::Diagonal, 1)] {
        for range in Range::ALL {
            for a in accuracies(Task::ModThree, rule, range, TRAIN_MAX) {
                assert!((0.25..=0.45).contains(&a), "{rule:?} {range:?}: {a}");
            }
        }
    }
}

#[test]
fn two_writes_per_token_count_modulo_3_with_minus1_1_and_not_with_0_1() {
    let product = (Kind::Delta, 2);
    for a in accuracies(Task::ModThree, product, Range::Extended, 0) {
        assert_eq!(a, 1.0);
    }
    let restricted = Range::Restricted;
    for a in accuracies(Task::ModThree, product, restricted, TRAIN_MAX) {
        assert!((0.25..=0.45).contains(&a), "{a}");
    }
}

/// How many seeds of `writes` writes per token label every S3 test word
/// right at every length.
fn s3_seeds_right_everywhere(writes: usize) -> usize {
    runs_of(Task::S3, (Kind::Delta, writes), Range::Extended)
        .iter()
        .filter(|r| r.accuracy.iter().all(|&a| a == 1.0))
        .count()
}

#[test]
fn on_s3_one_write_per_token_stays_at_most_40_percent_from_40_bits_on() {
    let one = (Kind::Delta, 1);
    for a in accuracies(Task::S3, one, Range::Extended, TRAIN_MAX) {
        assert!(a <= 0.4, "{a}");
    }
}

#[test]
fn on_s3_two_writes_get_every_word_right_with_four_seeds_of_five() {
    assert_eq!(SEEDS.len(), 5);
    assert_eq!(s3_seeds_right_everywhere(2), 4);
    // The fifth is right on every word up to 64 permutations.
    for r in runs_of(Task::S3, (Kind::Delta, 2), Range::Extended) {
        assert!(
            LENGTHS
                .iter()
                .filter(|&&n| n <= 64)
                .all(|&n| r.at(n) == 1.0)
        );
    }
}

#[test]
fn on_s3_three_writes_get_every_word_right_with_fewer_seeds_than_two() {
    let (two, three) =
        (s3_seeds_right_everywhere(2), s3_seeds_right_everywhere(3));
    assert_eq!(three, 2);
    assert!(three < two);
}
