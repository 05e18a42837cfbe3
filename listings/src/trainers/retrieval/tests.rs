//! The fast trainer against the f64 reference model, and trained: the
//! same losses and gradients, the same curves, the task learnt below
//! capacity.

use super::*;
use crate::paper::retrieval::model::episode_loss;
use crate::paper::retrieval::study::{committed, to_tsv};
use crate::paper::retrieval::sweep::{Record, lanes, run, series};
use crate::paper::retrieval::task::episodes;
use crate::paper::retrieval::train::{Reference, Stop};
use crate::random::seeded;

const LAYERS: [Layer; 11] = [
    Layer::Softmax,
    Layer::Linear(Phi::EluPlusOne, Rule::Sum),
    Layer::Linear(Phi::Dpfp(1), Rule::Sum),
    Layer::Linear(Phi::Dpfp(3), Rule::Sum),
    Layer::Linear(Phi::Favor(6), Rule::Sum),
    Layer::Linear(Phi::EluPlusOne, Rule::Delta),
    Layer::Linear(Phi::Dpfp(2), Rule::Delta),
    Layer::Linear(Phi::Favor(6), Rule::Delta),
    Layer::Linear(Phi::Dpfp(1), Rule::Delta),
    Layer::Fwm(FwmPhi::Map(Phi::Dpfp(1))),
    Layer::Fwm(FwmPhi::Tanh),
];

fn budget() -> Budget {
    Budget {
        batch: 8,
        ..Budget::paper()
    }
}

fn norm(a: impl Iterator<Item = f64>) -> f64 {
    a.map(|x| x * x).sum::<f64>().sqrt()
}

/// ‖a − b‖ for an f32 and an f64 tensor.
fn distance(a: &[f32], b: &[f64]) -> f64 {
    norm(a.iter().zip(b).map(|(&x, &y)| x as f64 - y))
}

#[test]
fn fast_gradient_equals_the_f64_model_for_every_layer() {
    // f32 rounds each entry to about 6e-8 relative; sums over a few
    // hundred terms and a triangular solve grow that to well under
    // 1e-4 for these shapes, where a wrong term is off by order 1.
    for layer in LAYERS {
        compare_gradients(layer, 1.0);
    }
}

#[test]
fn fast_fwm_gradient_equals_the_f64_model_with_scaled_writes() {
    // Keys scaled up (gain 3), so that writes push ‖W‖_F past 1 and
    // the backward pass goes through the scaling too.
    for map in [FwmPhi::Map(Phi::Dpfp(1)), FwmPhi::Tanh] {
        compare_gradients(Layer::Fwm(map), 3.0);
    }
}

/// The fast trainer's loss and gradient against the f64 model's, with
/// W_k and b_k scaled by `gain`, over settings, seeds and shapes.
fn compare_gradients(layer: Layer, gain: f64) {
    {
        for setting in [Setting::Distinct, Setting::Repeated] {
            for (seed, n, d) in [(0, 5, 4), (1, 9, 6), (2, 16, 8)] {
                let shape = Shape::paper(n, d);
                let mut rng = seeded(seed);
                let mut params = Params::init(&mut rng, shape, layer);
                params.w_beta.mapv_inplace(|w| 4.0 * w);
                params.w_k *= gain;
                params.b_k *= gain;
                let omega = draw_omega(&mut rng, layer, d);
                let eps = episodes(seed + 10, 8, n, setting)
                    .expect("n is at least one");
                let mut fast = Fast::new(layer, setting, &params, budget());
                fast.omega = omega.mapv(|x| x as f32);
                let loss = fast.gradient(&eps).unwrap();
                let mut grad = params.zeros_like();
                let mut want = 0.0;
                for e in &eps {
                    want += episode_loss(
                        &params,
                        layer,
                        e,
                        &omega,
                        Some(&mut grad),
                    );
                }
                want /= eps.len() as f64;
                grad.slices_mut()
                    .into_iter()
                    .for_each(|g| g.iter_mut().for_each(|x| *x /= 8.0));
                let what = format!("{} {setting:?} seed {seed}", layer.name());
                assert!((loss - want).abs() <= 1e-5 * want, "{what}: loss");
                // A tensor whose true gradient is zero (b_k under
                // softmax, which ignores a shift shared by every key)
                // is compared with the size of the whole gradient.
                let whole = norm(grad.slices().into_iter().flatten().copied());
                for (k, (a, b)) in fast
                    .grad
                    .slices()
                    .into_iter()
                    .zip(grad.slices())
                    .enumerate()
                {
                    let off = distance(a, b);
                    let tol = 1e-4 * norm(b.iter().copied()) + 1e-6 * whole;
                    assert!(off <= tol, "{what}: tensor {k} off by {off:e}");
                }
            }
        }
    }
}

#[test]
fn fast_evaluation_equals_the_f64_model_on_the_same_queries() {
    for layer in LAYERS {
        if let Layer::Linear(Phi::Favor(_), _) = layer {
            continue; // Ω is redrawn per sequence; compared above
        }
        for setting in [Setting::Distinct, Setting::Repeated] {
            let shape = Shape::paper(12, 6);
            let params = Params::init(&mut seeded(3), shape, layer);
            let b = Budget {
                eval_sequences: 3,
                max_queries: 5,
                ..budget()
            };
            let mut fast = Fast::new(layer, setting, &params, b);
            let got =
                fast.evaluate_with(&mut seeded(9)).expect("a valid budget");
            let mut rng = seeded(9);
            let omega = Array2::zeros((6, 0));
            let (mut total, mut count) = (0.0, 0);
            for _ in 0..3 {
                let (mut seq, queries) =
                    eval_sequence(&mut rng, 12, setting, 5)
                        .expect("n and max_queries are at least one");
                for (q, target) in queries {
                    (seq.query, seq.target) = (q, target);
                    total += episode_loss(&params, layer, &seq, &omega, None);
                    count += 1;
                }
            }
            let want = total / count as f64;
            assert!(
                (got - want).abs() <= 1e-5 * want,
                "{} {setting:?}: {got} vs {want}",
                layer.name()
            );
        }
    }
}

#[test]
fn the_trainers_tally_of_a_step_is_step_flops_at_every_layer() {
    for layer in LAYERS {
        for setting in [Setting::Distinct, Setting::Repeated] {
            for n in [5, 12] {
                let shape = Shape::paper(n, 4);
                let params = Params::init(&mut seeded(1), shape, layer);
                let mut fast = Fast::new(layer, setting, &params, budget());
                fast.try_step(&mut seeded(2)).unwrap();
                let want = step_flops(layer, setting, shape, 8);
                assert_eq!(fast.flops, want, "{} {setting:?}", layer.name());
            }
        }
    }
}

#[test]
fn a_key_whose_features_sum_to_zero_is_an_error_not_a_nan() {
    // DPFP of a key with a single non-zero entry is all zeros.
    let layer = Layer::Linear(Phi::Dpfp(1), Rule::Delta);
    let shape = Shape::paper(4, 4);
    let mut params = Params::init(&mut seeded(0), shape, layer);
    params.w_k.fill(0.0);
    params.b_k.fill(0.0);
    params.b_k[0] = 1.0;
    let mut fast = Fast::new(layer, Setting::Distinct, &params, budget());
    let err = fast.gradient(
        &episodes(0, 2, 4, Setting::Distinct).expect("n is at least one"),
    );
    assert!(matches!(
        err,
        Err(TrainError::NonPositiveNormaliser { what: "key", .. })
    ));
}

fn tiny(layer: Layer, setting: Setting, n: usize, max_steps: usize) -> Run {
    Run {
        layer,
        setting,
        shape: Shape::paper(n, 4),
        seed: 1,
        budget: Budget {
            eval_sequences: 8,
            max_steps,
            ..Budget::paper()
        },
    }
}

#[test]
fn below_capacity_a_linear_layer_learns_the_task() {
    // n = 3 associations in a memory keyed in p = d = 4 dimensions.
    let elu = Layer::Linear(Phi::EluPlusOne, Rule::Sum);
    let out = train_fast(&tiny(elu, Setting::Distinct, 3, 3000), |_, _| {});
    assert_eq!(out.stop, Stop::Solved, "{out:?}");
}

#[test]
fn above_capacity_it_cannot_but_a_wider_feature_map_can() {
    // n = 12 associations: beyond p = 4 for elu+1, within p = 24 for
    // DPFP-3 on the same keys.
    let elu = Layer::Linear(Phi::EluPlusOne, Rule::Sum);
    let wide = Layer::Linear(Phi::Dpfp(3), Rule::Sum);
    let narrow = train_fast(&tiny(elu, Setting::Distinct, 12, 3000), |_, _| {});
    let wider = train_fast(&tiny(wide, Setting::Distinct, 12, 3000), |_, _| {});
    assert!(narrow.best_loss > 0.05, "{narrow:?}");
    assert!(wider.best_loss < narrow.best_loss / 10.0, "{wider:?}");
}

#[test]
fn training_is_deterministic() {
    let run = tiny(Layer::Softmax, Setting::Repeated, 3, 300);
    let mut a = Vec::new();
    let mut b = Vec::new();
    train_fast(&run, |s, l| a.push((s, l)));
    train_fast(&run, |s, l| b.push((s, l)));
    assert_eq!(a, b);
    assert!(a.len() >= 2);
}

#[test]
fn fast_and_reference_training_follow_the_same_curve() {
    // Same initialisation, same batches: the f32 trainer's evaluation
    // losses stay within 1% of the f64 model's over 300 steps.
    for layer in [
        Layer::Softmax,
        Layer::Linear(Phi::Dpfp(1), Rule::Sum),
        Layer::Linear(Phi::EluPlusOne, Rule::Delta),
    ] {
        let run = tiny(layer, Setting::Repeated, 5, 300);
        let params = Params::init(&mut seeded(run.seed), run.shape, layer);
        let mut reference =
            Reference::new(layer, run.setting, params.clone(), run.budget);
        let mut fast = Fast::new(layer, run.setting, &params, run.budget);
        let (mut a, mut b) = (Vec::new(), Vec::new());
        train(&mut reference, &run.budget, 4, |_, l| a.push(l));
        train(&mut fast, &run.budget, 4, |_, l| b.push(l));
        assert_eq!(a.len(), b.len());
        for (x, y) in a.iter().zip(&b) {
            assert!(
                (x - y).abs() <= 0.01 * x,
                "{}: {a:?} vs {b:?}",
                layer.name()
            );
        }
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
    let runs = committed().1;
    let mut retrained = Vec::new();
    for (layer, setting) in lanes() {
        let name = layer.name();
        let first = &series(&runs, setting, &name)[0];
        // Runs that stop within a thousand steps: a few seconds each.
        if first.steps > 1000 {
            continue;
        }
        retrained.push(setting);
        let outcome = train_fast(&run(layer, setting, first.n, 1), |_, _| {});
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
