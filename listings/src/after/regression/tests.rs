//! Tests of "The rules as regression": each rule of the family is one
//! gradient step (or an implicit step) on its per-token loss, over random
//! memories, keys and values of several shapes and seeds.

use super::study::*;
use super::*;
use crate::after::family::rule_step;
use crate::paper::delta_rule::{decayed_write_step, regression_loss};
use crate::random::{BookRng, randn, seeded};
use ndarray::{Array1, Array2};
use rand::Rng;

/// The shapes (m, p) every identity is checked on.
const SHAPES: [(usize, usize); 4] = [(1, 1), (3, 5), (8, 4), (16, 32)];

/// A random memory, key and value of shape (m, p), the key's length
/// between one half and two.
fn draw(
    rng: &mut BookRng,
    m: usize,
    p: usize,
) -> (Array2<f64>, Array1<f64>, Array1<f64>) {
    let memory = randn(rng, m, p);
    let k = randn(rng, 1, p).row(0).to_owned();
    let length = rng.random_range(0.5..2.0) / k.dot(&k).sqrt();
    let v = randn(rng, 1, m).row(0).to_owned();
    (memory, k * length, v)
}

/// Every (seed, memory, key, value) the identities are checked on.
fn cases() -> Vec<(Array2<f64>, Array1<f64>, Array1<f64>)> {
    let mut out = Vec::new();
    for seed in 0..5 {
        let mut rng = seeded(seed);
        for (m, p) in SHAPES {
            out.push(draw(&mut rng, m, p));
        }
    }
    out
}

/// The gradient of `loss` at `memory` by central differences, entry by
/// entry.
fn central_differences(
    memory: &Array2<f64>,
    loss: impl Fn(&Array2<f64>) -> f64,
) -> Array2<f64> {
    let h = 1e-5;
    let mut gradient = Array2::zeros(memory.raw_dim());
    for ((i, j), g) in gradient.indexed_iter_mut() {
        let (mut up, mut down) = (memory.clone(), memory.clone());
        up[[i, j]] += h;
        down[[i, j]] -= h;
        *g = (loss(&up) - loss(&down)) / (2.0 * h);
    }
    gradient
}

fn assert_close(a: &Array2<f64>, b: &Array2<f64>, tol: f64, what: &str) {
    let scale = 1.0 + b.iter().fold(0.0f64, |x, y| x.max(y.abs()));
    let worst = (a - b).iter().fold(0.0f64, |x, y| x.max(y.abs()));
    assert!(worst <= tol * scale, "{what}: off by {worst:e}");
}

#[test]
fn every_loss_gradient_matches_central_differences() {
    for (memory, k, v) in cases() {
        let linear =
            central_differences(&memory, |s| linear_loss(s, &k, &v).unwrap());
        let closed = linear_loss_gradient(&memory, &k, &v).unwrap();
        assert_close(&closed, &linear, 1e-8, "linear loss");
        let regression = central_differences(&memory, |s| {
            regression_loss(s, &k, &v).unwrap()
        });
        let closed = regression_gradient(&memory, &k, &v).unwrap();
        assert_close(&closed, &regression, 1e-8, "regression loss");
        for a in [0.1, 0.9, 1.0] {
            let forget =
                central_differences(&memory, |s| forgetting_loss(s, a));
            let closed = forgetting_gradient(&memory, a);
            assert_close(&closed, &forget, 1e-8, "forgetting term");
        }
    }
}

/// The family's step (After the paper) with a gate a on every feature.
fn family_step(
    memory: &Array2<f64>,
    k: &Array1<f64>,
    v: &Array1<f64>,
    (a, beta, omega): (f64, f64, f64),
) -> Array2<f64> {
    let mut out = memory.clone();
    let alpha = Array1::from_elem(k.len(), a);
    rule_step(&mut out, k, v, &alpha, beta, omega).unwrap();
    out
}

#[test]
fn the_sum_rule_is_one_gradient_step_on_the_linear_loss() {
    for (memory, k, v) in cases() {
        let mut stepped = memory.clone();
        let gradient = linear_loss_gradient(&memory, &k, &v).unwrap();
        gradient_step(&mut stepped, &gradient, 1.0).unwrap();
        let rule = family_step(&memory, &k, &v, (1.0, 0.0, 1.0));
        assert_close(&stepped, &rule, 1e-12, "sum rule");
    }
}

#[test]
fn the_delta_rule_is_one_gradient_step_on_the_regression_loss() {
    for (memory, k, v) in cases() {
        for beta in [0.0, 0.3, 1.0, 1.7] {
            let mut stepped = memory.clone();
            let gradient = regression_gradient(&memory, &k, &v).unwrap();
            gradient_step(&mut stepped, &gradient, beta).unwrap();
            let rule = family_step(&memory, &k, &v, (1.0, beta, beta));
            assert_close(&stepped, &rule, 1e-12, "delta rule");
        }
    }
}

#[test]
fn a_decay_is_one_step_on_the_linear_loss_plus_the_forgetting_term() {
    for (memory, k, v) in cases() {
        for a in [0.05, 0.5, 0.99, 1.0] {
            let mut stepped = memory.clone();
            let gradient = linear_loss_gradient(&memory, &k, &v).unwrap()
                + forgetting_gradient(&memory, a);
            gradient_step(&mut stepped, &gradient, 1.0).unwrap();
            let rule = family_step(&memory, &k, &v, (a, 0.0, 1.0));
            assert_close(&stepped, &rule, 1e-12, "decay");
            let mut decayed = memory.clone();
            decayed_write_step(&mut decayed, &k, &v, a).unwrap();
            assert_close(&stepped, &decayed, 1e-12, "decayed write");
        }
    }
}

#[test]
fn diagonal_gates_are_a_forgetting_term_with_a_weight_per_feature() {
    for (seed, (memory, k, v)) in cases().into_iter().enumerate() {
        let mut rng = seeded(seed as u64 + 200);
        let gates =
            Array1::from_shape_fn(k.len(), |_| rng.random_range(0.05..1.0));
        // L(S) = Σ_c ½ (1 − α_c) ‖S e_c‖²: a weight per column of S.
        let forget = |s: &Array2<f64>| {
            let mut total = 0.0;
            for (c, column) in s.columns().into_iter().enumerate() {
                total += 0.5 * (1.0 - gates[c]) * column.dot(&column);
            }
            total
        };
        let loss =
            |s: &Array2<f64>| linear_loss(s, &k, &v).unwrap() + forget(s);
        let mut stepped = memory.clone();
        gradient_step(&mut stepped, &central_differences(&memory, loss), 1.0)
            .unwrap();
        let mut rule = memory.clone();
        rule_step(&mut rule, &k, &v, &gates, 0.0, 1.0).unwrap();
        assert_close(&stepped, &rule, 1e-7, "diagonal gates");
    }
}

#[test]
fn the_gated_delta_rule_is_a_forgetting_step_then_a_regression_step() {
    for (memory, k, v) in cases() {
        for (alpha, beta) in [(0.5, 0.5), (0.9, 1.0), (1.0, 0.2), (0.1, 1.0)] {
            let mut stepped = memory.clone();
            gated_delta_as_two_steps(&mut stepped, &k, &v, alpha, beta)
                .unwrap();
            let rule = family_step(&memory, &k, &v, (alpha, beta, beta));
            assert_close(&stepped, &rule, 1e-12, "gated delta rule");
            // One step on the sum of both losses erases with β, not αβ:
            // it is a different rule whenever α < 1 and β > 0.
            let mut joint = memory.clone();
            let gradient = regression_gradient(&memory, &k, &v).unwrap()
                + forgetting_gradient(&memory, alpha) / beta;
            gradient_step(&mut joint, &gradient, beta).unwrap();
            if alpha < 1.0 {
                let gap = (&joint - &rule)
                    .iter()
                    .fold(0.0, |x: f64, y| x.max(y.abs()));
                assert!(gap > 1e-6, "one joint step equals the rule: {gap}");
            }
        }
    }
}

const IMPLICIT_BETAS: [f64; 6] = [0.0, 0.1, 1.0, 3.0, 100.0, 1e6];

#[test]
fn the_implicit_step_is_the_gradient_step_taken_at_the_new_memory() {
    for (memory, k, v) in cases() {
        for beta in IMPLICIT_BETAS {
            let mut new = memory.clone();
            implicit_step(&mut new, &k, &v, beta).unwrap();
            // S_t = S_{t−1} − β ∇L(S_t): the gradient at the new memory.
            let mut back = memory.clone();
            gradient_step(
                &mut back,
                &regression_gradient(&new, &k, &v).unwrap(),
                beta,
            )
            .unwrap();
            assert_close(&back, &new, 1e-9, "fixed point");
            // And S_t minimises ½‖S − S_{t−1}‖² + β L(S): moving it any
            // way raises the objective.
            let objective = |s: &Array2<f64>| {
                0.5 * (s - &memory).iter().map(|x| x * x).sum::<f64>()
                    + beta * regression_loss(s, &k, &v).unwrap()
            };
            let mut rng = seeded(7);
            for _ in 0..4 {
                let nudge = randn(&mut rng, memory.nrows(), memory.ncols());
                let moved = &new + &(nudge * 1e-3);
                assert!(objective(&moved) >= objective(&new));
            }
        }
    }
}

#[test]
fn the_implicit_steps_factor_along_the_key_lies_in_zero_one_for_every_beta() {
    for (memory, k, v) in cases() {
        let kk = k.dot(&k);
        for beta in IMPLICIT_BETAS {
            let zero = Array1::zeros(v.len());
            let mut new = memory.clone();
            implicit_step(&mut new, &k, &zero, beta).unwrap(); // the transition only
            let factor = 1.0 / (1.0 + beta * kk);
            let expected = memory.dot(&k) * factor;
            let got = new.dot(&k);
            let worst = (&got - &expected)
                .iter()
                .fold(0.0f64, |x, y| x.max(y.abs()));
            let scale = 1.0
                + memory.dot(&k).iter().fold(0.0, |x: f64, y| x.max(y.abs()));
            assert!(worst <= 1e-12 * scale, "S k scaled by {factor}");
            assert!(factor > 0.0 && factor <= 1.0);
            // With a huge β the step stores the value: Kaczmarz's step.
            if beta >= 1e6 {
                let mut stored = memory.clone();
                implicit_step(&mut stored, &k, &v, beta).unwrap();
                let miss = (&stored.dot(&k) - &v)
                    .iter()
                    .fold(0.0f64, |x, y| x.max(y.abs()));
                assert!(miss <= 1e-5 * scale, "read misses v by {miss:e}");
            }
            // Explicitly, the factor is 1 − β ‖k‖², below −1 once
            // β ‖k‖² > 2.
            if beta * kk > 2.0 {
                assert!(1.0 - beta * kk < -1.0);
            }
        }
    }
}

/// A stream of N unit keys in p dimensions and values of unit length.
fn unit_stream(seed: u64, n: usize, p: usize, m: usize) -> [Array2<f64>; 2] {
    let mut rng = seeded(seed);
    let unit = |mut x: Array2<f64>| {
        for mut row in x.rows_mut() {
            let len = row.dot(&row).sqrt();
            row /= len;
        }
        x
    };
    [unit(randn(&mut rng, n, p)), unit(randn(&mut rng, n, m))]
}

#[test]
fn the_implicit_step_stays_bounded_where_the_explicit_step_diverges() {
    let frobenius = |s: &Array2<f64>| s.iter().map(|x| x * x).sum::<f64>();
    for seed in 0..4 {
        for (p, m) in [(4, 2), (16, 8), (32, 4)] {
            let n = 600;
            let [k, v] = unit_stream(seed, n, p, m);
            for beta in [0.1, 1.0, 3.0, 10.0, 1000.0] {
                let (mut explicit, mut implicit) =
                    (Array2::zeros((m, p)), Array2::zeros((m, p)));
                let mut written = 0.0;
                for t in 0..n {
                    let (k, v) = (k.row(t), v.row(t));
                    // Once the explicit memory overflows, its gradient is
                    // refused; the memory stays at its last finite value,
                    // past 1e20 when it diverged.
                    if let Ok(g) = regression_gradient(&explicit, &k, &v) {
                        gradient_step(&mut explicit, &g, beta).unwrap();
                    }
                    implicit_step(&mut implicit, &k, &v, beta).unwrap();
                    written += v.dot(&v);
                    // ‖S_t‖² never exceeds the sum of the ‖v_j‖² written.
                    assert!(frobenius(&implicit) <= written * (1.0 + 1e-12));
                }
                assert!(
                    beta < 3.0
                        || frobenius(&explicit) >= 1e20
                        || frobenius(&explicit).is_nan(),
                    "explicit β = {beta}, p = {p}: {:e}",
                    frobenius(&explicit)
                );
            }
        }
    }
}

#[test]
fn the_least_squares_memory_has_the_lowest_loss_of_any_memory() {
    for seed in 0..5 {
        for (n, p, m) in [(8, 8, 2), (64, 16, 8), (40, 5, 3)] {
            let (k, v) = regression_stream(seed, n, p, m, 0.1);
            let best = least_squares_memory(&k, &v).unwrap();
            let low = stream_loss(&best, &k, &v).unwrap();
            let mut rng = seeded(seed + 100);
            for _ in 0..8 {
                let moved = &best + &(randn(&mut rng, m, p) * 1e-3);
                assert!(stream_loss(&moved, &k, &v).unwrap() >= low);
            }
            for (_, rule) in STREAM_RULES {
                let s = one_step_memory(rule, &k, &v).unwrap();
                assert!(stream_loss(&s, &k, &v).unwrap() >= low);
            }
        }
    }
}

#[test]
fn on_the_printed_stream_the_correcting_rules_come_closest_to_least_squares() {
    let rows = printed_stream();
    let ratio = |name: &str| {
        rows.iter()
            .find(|r| r.name == name)
            .expect(name)
            .ratio
            .median
    };
    let sum = ratio("sum");
    for name in ["delta, β = 1", "implicit, β = 1", "implicit, β = 1000"] {
        assert!(ratio(name) < sum / 10.0, "{name} against the sum rule");
        assert!(ratio(name) < 3.0, "{name}: {}", ratio(name));
    }
    assert!(ratio("delta, β = 3") > sum, "the explicit β = 3 diverges");
    assert!(ratio("delta, β = 0.1") > ratio("delta, β = 1"));
    // The gate forgets a map that never changes, and no rule reaches the
    // ceiling.
    assert!(ratio("gated delta, α = 0.9, β = 1") > ratio("delta, β = 1"));
    for (name, _) in STREAM_RULES {
        assert!(ratio(name) > 1.0, "{name} reaches least squares");
    }
}

#[test]
fn bad_streams_and_strengths_are_refused_with_a_clear_error() {
    let (k, v) = regression_stream(0, 8, 4, 2, 0.1);
    let mut nan = k.clone();
    nan[[3, 1]] = f64::NAN;
    assert!(matches!(
        one_step_memory(OneStep::Sum, &nan, &v),
        Err(InputError::NonFinite {
            name: "k",
            at: [3, 1],
            ..
        })
    ));
    assert!(matches!(
        least_squares_memory(&k, &v.slice(ndarray::s![..5, ..])),
        Err(InputError::ShapeMismatch { .. })
    ));
    assert!(matches!(
        least_squares_memory(&Array2::zeros((8, 4)), &v),
        Err(InputError::NonPositive { .. })
    ));
    assert!(matches!(
        stream_loss(&Array2::zeros((2, 4)), &(&k * 1e160), &(&v * 1e160)),
        Err(InputError::Overflow { .. })
    ));
    assert!(matches!(
        stream_loss(&Array2::zeros((2, 4)), &Array2::zeros((0, 4)), &v),
        Err(InputError::Empty { name: "k", .. })
    ));
    for rule in [
        OneStep::Delta(-0.5),
        OneStep::Implicit(f64::INFINITY),
        OneStep::GatedDelta {
            alpha: 0.0,
            beta: 1.0,
        },
        OneStep::GatedDelta {
            alpha: 1.5,
            beta: 1.0,
        },
    ] {
        assert!(matches!(
            one_step_memory(rule, &k, &v),
            Err(InputError::Outside { .. })
        ));
    }
    // An explicit step that overflows is reported, never returned.
    let [k, v] = unit_stream(1, 2000, 2, 2);
    assert!(matches!(
        one_step_memory(OneStep::Delta(3.0), &k, &v),
        Err(InputError::Overflow { .. })
    ));
}

#[test]
fn the_stream_loss_is_half_the_mean_squared_miss() {
    // S = 0 reads 0 for every key: misses 2 and 0 (m = p = 1, N = 2), so
    // (1/N) Σ ½ miss² = (½ · 4 + 0) / 2 = 1; and 0 for the S that fits.
    let zero = Array2::zeros((1, 1));
    let k = ndarray::array![[1.0], [1.0]];
    let v = ndarray::array![[2.0], [0.0]];
    assert_eq!(stream_loss(&zero, &k, &v).unwrap(), 1.0);
    let fits = ndarray::array![[1.0]];
    let k = ndarray::array![[3.0], [-1.0]];
    assert_eq!(stream_loss(&fits, &k, &k).unwrap(), 0.0);
}
