//! Chapter "Fast weight programmers": a slow net that programs a fast net
//! with outer products (Schmidhuber 1992), self-attention without its
//! softmax as exactly such a programmer, and linear attention as the same
//! programmer with a normaliser (Schlag et al. 2021, §2–§3).
//!
//! Shapes: x: (N, d_model); q, k: (N, d); v: (N, m); the fast weights
//! W: (m, d), written with v kᵀ and run on a query as W q.

use crate::causal::causal_scores;
use crate::input::{InputError, check_qkv, finite};
use crate::linalg::worst_row_relative_difference;
use crate::m3::attention::{Mask, Projections, Qkv};
use crate::m3::delete_softmax::kernel_attention;
use crate::m3::fast_weight_memory::{
    fast_weight_loop, fast_weight_write, linear_attention_recurrent,
};
use crate::phi::elu_plus_one;
use crate::random::{randn, seeded};
use crate::table::Table;
use ndarray::{Array2, ArrayRef1, ArrayRef2};
use std::fmt;

// ANCHOR: fast_weight_programmer_with
/// A fast-weight programmer with an activation σ on the fast weights: the
/// slow weights make q_t, k_t, v_t from x_t; the fast weights are
/// programmed by W_t = σ(W_{t−1} + v_t k_tᵀ) and run as y_t = W_t q_t.
/// x: (N, d_model); returns Y: (N, m).
pub fn fast_weight_programmer_with(
    x: &ArrayRef2<f64>,
    slow: &Projections,
    sigma: impl Fn(f64) -> f64,
) -> Result<Array2<f64>, InputError> {
    let Qkv { q, k, v } = slow.project(x)?; // the slow net
    let mut w = Array2::zeros((v.ncols(), k.ncols())); // W_0 = 0: (m, d)
    let mut y = Array2::zeros((x.nrows(), v.ncols()));
    for t in 0..x.nrows() {
        fast_weight_write(&mut w, &v.row(t), &k.row(t)); // + v_t k_tᵀ
        w.mapv_inplace(&sigma); // σ, entry by entry
        y.row_mut(t).assign(&w.dot(&q.row(t))); // run the fast net
    }
    finite("Y", y)
}
// ANCHOR_END: fast_weight_programmer_with

// ANCHOR: attention_without_softmax
/// Causal self-attention with the softmax deleted and no normaliser:
/// y_t = Σ_{j≤t} (k_jᵀ q_t) v_j, that is Y = tril(Q Kᵀ) V.
/// q, k: (N, d), v: (N, m); returns Y: (N, m).
pub fn attention_without_softmax(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<Array2<f64>, InputError> {
    check_qkv(q, k, v, true)?;
    let scores = causal_scores(q, k); // (N, N): k_jᵀ q_t, none on the future
    finite("Y", scores.dot(v))
}
// ANCHOR_END: attention_without_softmax

/// Linearised softmax attention in the form of the template of "Delete the
/// softmax": the kernel sim(q, k) = φ(q)ᵀφ(k) in place of exp, causal, with
/// φ = elu+1. q, k: (N, d), v: (N, m); returns O: (N, m).
pub fn linearised_softmax(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<Array2<f64>, InputError> {
    let sim = |a: &ArrayRef1<f64>, b: &ArrayRef1<f64>| {
        elu_plus_one(a).dot(&elu_plus_one(b))
    };
    Ok(kernel_attention(q, k, v, Mask::Causal, sim)?.output)
}

/// One row of the equivalence study at length N.
pub struct EquivalenceRow {
    pub n: usize,
    /// Attention without softmax against the fast-weight loop.
    pub unnormalised: f64,
    /// Linearised softmax against the normalised programmer.
    pub normalised: f64,
    /// The programmer with σ = tanh against attention without softmax.
    pub with_tanh: f64,
}

/// Both equivalences on random slow weights and inputs (d_model = 16,
/// d = m = 8), seeds 0..seeds: the largest row-relative difference.
pub fn equivalence_study(lengths: &[usize], seeds: u64) -> Vec<EquivalenceRow> {
    lengths
        .iter()
        .map(|&n| {
            let mut row = EquivalenceRow {
                n,
                unnormalised: 0.0,
                normalised: 0.0,
                with_tanh: f64::INFINITY,
            };
            for seed in 0..seeds {
                let (x, slow) = random_programmer(seed, n);
                let Qkv { q, k, v } = slow.project(&x).expect("x: (N, 16)");
                let attn = attention_without_softmax(&q, &k, &v).expect("ok");
                let loop_ = fast_weight_loop(&q, &k, &v).expect("ok");
                let gap = worst_row_relative_difference(&loop_, &attn);
                row.unnormalised = row.unnormalised.max(gap);
                let lin = linearised_softmax(&q, &k, &v).expect("ok");
                let (fq, fk) = (elu_plus_one(&q), elu_plus_one(&k));
                let fwp = linear_attention_recurrent(&fq, &fk, &v).expect("ok");
                let gap = worst_row_relative_difference(&fwp, &lin);
                row.normalised = row.normalised.max(gap);
                let tanh = fast_weight_programmer_with(&x, &slow, f64::tanh)
                    .expect("x: (N, 16)");
                let gap = worst_row_relative_difference(&tanh, &attn);
                row.with_tanh = row.with_tanh.min(gap);
            }
            row
        })
        .collect()
}

/// Random slow weights (d_model = 16, d = m = 8) and a random input of N
/// tokens, from one seed.
pub fn random_programmer(seed: u64, n: usize) -> (Array2<f64>, Projections) {
    let mut rng = seeded(seed);
    let slow = crate::m3::attention::random_projections(&mut rng, 16, 8, 8);
    (randn(&mut rng, n, 16), slow)
}

/// Step t (from 0) of the programmer of [`random_programmer`] with σ the
/// identity, with everything it computes: x_t, the slow net's q_t, k_t,
/// v_t, the fast weights before (W_{t−1}), the write v_t k_tᵀ, the fast
/// weights after (W_t) and the output y_t = W_t q_t. W: (m, d).
pub fn programmer_step(
    seed: u64,
    t: usize,
) -> Result<ProgrammerStep, InputError> {
    let (x, slow) = random_programmer(seed, t + 1);
    let Qkv { q, k, v } = slow.project(&x)?; // the slow net
    let mut before = Array2::zeros((v.ncols(), k.ncols())); // W_0 = 0
    for j in 0..t {
        fast_weight_write(&mut before, &v.row(j), &k.row(j));
    }
    let mut write = Array2::zeros(before.raw_dim());
    fast_weight_write(&mut write, &v.row(t), &k.row(t)); // v_t k_tᵀ
    let after = &before + &write;
    let y = after.dot(&q.row(t)); // the fast net, run on the query
    Ok(ProgrammerStep {
        x: x.row(t).to_owned(),
        q: q.row(t).to_owned(),
        k: k.row(t).to_owned(),
        v: v.row(t).to_owned(),
        before,
        write,
        after,
        y,
    })
}

/// What [`programmer_step`] computes, for the chapter's picture.
pub struct ProgrammerStep {
    pub x: ndarray::Array1<f64>,
    pub q: ndarray::Array1<f64>,
    pub k: ndarray::Array1<f64>,
    pub v: ndarray::Array1<f64>,
    pub before: Array2<f64>,
    pub write: Array2<f64>,
    pub after: Array2<f64>,
    pub y: ndarray::Array1<f64>,
}

/// The seed and step of the programmer picture.
pub const PICTURE: (u64, usize) = (3, 4);

/// The equivalence study as the chapter prints it.
pub struct EquivalenceTable {
    pub seeds: u64,
    pub rows: Vec<EquivalenceRow>,
}

impl fmt::Display for EquivalenceTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "random slow weights, d_model = 16, d = m = 8, seeds 0..{}",
            self.seeds
        )?;
        writeln!(f, "largest |row difference| / |row| over the seeds")?;
        let mut table = Table::new()
            .right("N", 6)
            .right("no softmax vs FWP loop", 24)
            .right("linearised vs normalised", 26)
            .right("sigma = tanh (smallest)", 22);
        for r in &self.rows {
            table.row([
                r.n.to_string(),
                format!("{:.1e}", r.unnormalised),
                format!("{:.1e}", r.normalised),
                format!("{:.2}", r.with_tanh),
            ]);
        }
        write!(f, "{table}")
    }
}

#[cfg(test)]
mod tests {
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
            // The write is v_t k_tᵀ, and W_t = W_{t−1} + v_t k_tᵀ.
            for ((i, j), &w) in step.write.indexed_iter() {
                assert!((w - step.v[i] * step.k[j]).abs() < 1e-12);
            }
            let sum = &step.before + &step.write;
            assert!(sum.iter().zip(&step.after).all(|(a, b)| a == b));
        }
    }

    use super::*;
    use crate::m3::fast_weight_memory::linear_attention_parallel;
    use approx::assert_relative_eq;

    const LENGTHS: [usize; 6] = [1, 2, 12, 63, 64, 300];

    #[test]
    fn attention_without_softmax_is_a_fast_weight_programmer() {
        // Σ_{j≤t} (k_jᵀ q_t) v_j = (Σ_{j≤t} v_j k_jᵀ) q_t = W_t q_t.
        for seed in 0..5 {
            for n in LENGTHS {
                let (x, slow) = random_programmer(seed, n);
                let Qkv { q, k, v } = slow.project(&x).unwrap();
                let attn = attention_without_softmax(&q, &k, &v).unwrap();
                let loop_ = fast_weight_loop(&q, &k, &v).unwrap();
                let gap = worst_row_relative_difference(&loop_, &attn);
                assert!(gap < 1e-10, "N {n} seed {seed}: {gap:e}");
                let fwp =
                    fast_weight_programmer_with(&x, &slow, |w| w).unwrap();
                assert_eq!(fwp, loop_, "σ = identity is the plain loop");
            }
        }
    }

    #[test]
    fn a_nonlinear_activation_breaks_the_equivalence() {
        // With σ = tanh the fast weights saturate: the programmer is still
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
        // Σ_j φ(q)ᵀφ(k_j) v_j / Σ_j φ(q)ᵀφ(k_j) = W_t φ(q_t) / z_tᵀ φ(q_t).
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
        let (lengths, seeds) = ([1, 12, 100, 300], 3);
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
}
