//! Adam: its first step, and a quadratic it minimises.

use crate::paper::retrieval::adam::*;
use crate::paper::retrieval::model::{Layer, Params, Shape};
use crate::random::seeded;

fn params(seed: u64) -> Params {
    let shape = Shape { n: 3, d: 2, e: 4 };
    Params::init(&mut seeded(seed), shape, Layer::Softmax)
}

#[test]
fn first_step_moves_every_weight_by_lr_against_its_gradient() {
    for seed in 0..5 {
        let mut p = params(seed);
        let before = p.clone();
        let mut g = params(seed + 100);
        g.w_beta.fill(0.5);
        let mut adam = Adam::new(&p, 0.01);
        adam.update(&mut p, &g);
        for t in 0..7 {
            for i in 0..p.slices()[t].len() {
                let moved = before.slices()[t][i] - p.slices()[t][i];
                let sign = g.slices()[t][i].signum();
                assert!((moved - 0.01 * sign).abs() < 1e-6, "{moved}");
            }
        }
    }
}

#[test]
fn adam_minimises_a_quadratic() {
    // L = ½‖θ − θ*‖², gradient θ − θ*.
    let goal = params(7);
    let mut p = params(8);
    let mut adam = Adam::new(&p, 0.05);
    for _ in 0..2000 {
        let mut g = p.clone();
        for (gt, gt_goal) in g.slices_mut().into_iter().zip(goal.slices()) {
            for (x, y) in gt.iter_mut().zip(gt_goal) {
                *x -= y;
            }
        }
        adam.update(&mut p, &g);
    }
    for (a, b) in p.slices().into_iter().zip(goal.slices()) {
        for (x, y) in a.iter().zip(b) {
            assert!((x - y).abs() < 1e-3, "{x} vs {y}");
        }
    }
}

#[test]
fn epsilon_halves_the_first_step_of_a_gradient_as_small_as_epsilon() {
    // Step one: m̂ = g and √v̂ = |g|, so θ moves by lr · g / (|g| + ε);
    // at g = ε that is lr / 2, whatever the sign of g.
    let mut p = params(0);
    let before = p.clone();
    let mut g = params(1);
    for tensor in g.slices_mut() {
        for (i, x) in tensor.iter_mut().enumerate() {
            *x = if i % 2 == 0 { 1e-8 } else { -1e-8 };
        }
    }
    let mut adam = Adam::new(&p, 0.01);
    adam.update(&mut p, &g);
    for t in 0..7 {
        for i in 0..p.slices()[t].len() {
            let moved = before.slices()[t][i] - p.slices()[t][i];
            let want = 0.005 * g.slices()[t][i].signum();
            assert!((moved - want).abs() < 1e-9, "{moved} vs {want}");
        }
    }
}
