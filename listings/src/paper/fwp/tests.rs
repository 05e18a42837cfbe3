use super::study::*;
use super::*;
use crate::linalg::worst_row_relative_difference;
use crate::m3::fast_weight_memory::{
    fast_weight_loop, linear_attention_parallel, linear_attention_recurrent,
};
use crate::random::{randn, seeded};
use approx::assert_relative_eq;

#[test]
fn the_pictured_step_is_the_programmer_run_and_attention_without_softmax() {
    for (seed, t) in [(3, 4), (0, 0), (5, 9)] {
        let step = programmer_step(seed, t).unwrap();
        let (x, slow) = random_programmer(seed, t + 1);
        let run = fast_weight_programmer_with(&x, &slow, |w| w).unwrap();
        let Qkv { q, k, v } = slow.project(&x).unwrap();
        let attention = attention_without_softmax(&q, &k, &v).unwrap();
        for (a, b) in step.y.iter().zip(run.row(t)) {
            assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "seed {seed}");
        }
        for (a, b) in step.y.iter().zip(attention.row(t)) {
            assert!((a - b).abs() <= 1e-9 * (1.0 + b.abs()), "seed {seed}");
        }
        // The write is v_t k_tᵀ, and S_t = S_{t−1} + v_t k_tᵀ.
        for ((i, j), &w) in step.write.indexed_iter() {
            assert!((w - step.v[i] * step.k[j]).abs() < 1e-12);
        }
        let sum = &step.before + &step.write;
        assert!(sum.iter().zip(&step.after).all(|(a, b)| a == b));
    }
}

const LENGTHS: [usize; 6] = [1, 2, 12, 63, 64, 300];

#[test]
fn attention_without_softmax_is_a_fast_weight_programmer() {
    // Σ_{j≤t} (k_jᵀ q_t) v_j = (Σ_{j≤t} v_j k_jᵀ) q_t = S_t q_t.
    for seed in 0..5 {
        for n in LENGTHS {
            let (x, slow) = random_programmer(seed, n);
            let Qkv { q, k, v } = slow.project(&x).unwrap();
            let attn = attention_without_softmax(&q, &k, &v).unwrap();
            let loop_ = fast_weight_loop(&q, &k, &v).unwrap();
            let gap = worst_row_relative_difference(&loop_, &attn);
            assert!(gap < 1e-10, "N {n} seed {seed}: {gap:e}");
            let fwp = fast_weight_programmer_with(&x, &slow, |w| w).unwrap();
            assert_eq!(fwp, loop_, "ψ = identity is the plain loop");
        }
    }
}

#[test]
fn a_nonlinear_activation_breaks_the_equivalence() {
    // With ψ = tanh the fast weights saturate: the programmer is still
    // a programmer, but no longer attention.
    let rows = equivalence_study(&[12, 200], 5);
    for r in rows {
        assert!(r.with_tanh > 0.05, "N {}: {}", r.n, r.with_tanh);
    }
    // One token and a tiny write: tanh is nearly the identity there.
    let (x, slow) = random_programmer(0, 1);
    let x = x * 1e-3;
    let tanh = fast_weight_programmer_with(&x, &slow, f64::tanh).unwrap();
    let Qkv { q, k, v } = slow.project(&x).unwrap();
    let attn = attention_without_softmax(&q, &k, &v).unwrap();
    assert_relative_eq!(tanh, attn, max_relative = 1e-5);
}

#[test]
fn linearised_softmax_is_a_normalised_fast_weight_programmer() {
    // Σ_j φ(q)ᵀφ(k_j) v_j / Σ_j φ(q)ᵀφ(k_j) = S_t φ(q_t) / z_tᵀ φ(q_t).
    for seed in 0..5 {
        for n in LENGTHS {
            let (x, slow) = random_programmer(seed, n);
            let Qkv { q, k, v } = slow.project(&x).unwrap();
            let lin = linearised_softmax(&q, &k, &v).unwrap();
            let (fq, fk) = (elu_plus_one(&q), elu_plus_one(&k));
            let fwp = linear_attention_recurrent(&fq, &fk, &v).unwrap();
            let gap = worst_row_relative_difference(&fwp, &lin);
            assert!(gap < 1e-10, "N {n} seed {seed}: {gap:e}");
            let par = linear_attention_parallel(&fq, &fk, &v).unwrap();
            assert!(worst_row_relative_difference(&par, &lin) < 1e-10);
        }
    }
}

#[test]
fn the_printed_study_is_rounding_then_far_from_zero_at_every_length() {
    // The chapter's output, as printed: its first two columns are
    // rounding and its last is far from zero, at every length it shows.
    let (lengths, seeds) = (EQUIVALENCE_LENGTHS, EQUIVALENCE_SEEDS);
    let rows = equivalence_study(&lengths, seeds);
    let printed = (crate::outputs::find("fwp-equivalence").unwrap().run)();
    let table = EquivalenceTable { seeds, rows };
    assert_eq!(printed, table.to_string(), "the output runs this study");
    for r in &table.rows {
        assert!(r.unnormalised < 1e-12, "N {}: {:e}", r.n, r.unnormalised);
        assert!(r.normalised < 1e-12, "N {}: {:e}", r.n, r.normalised);
        assert!(r.with_tanh > 0.05, "N {}: {}", r.n, r.with_tanh);
    }
}

#[test]
fn bad_input_is_an_error_naming_the_problem() {
    let (x, slow) = random_programmer(0, 5);
    let Qkv { q, k, v } = slow.project(&x).unwrap();
    let short = v.slice(ndarray::s![..4, ..]).to_owned();
    let msg = attention_without_softmax(&q, &k, &short)
        .err()
        .unwrap()
        .to_string();
    assert!(msg.contains("k is [5, 8]") && msg.contains("v is [4, 8]"));
    let wide = randn(&mut seeded(1), 5, 17);
    let msg = fast_weight_programmer_with(&wide, &slow, |w| w)
        .err()
        .unwrap()
        .to_string();
    assert!(msg.contains("x is [5, 17]"), "{msg}");
}
