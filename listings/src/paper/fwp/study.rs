//! The studies of "Fast weight programmers": both equivalences measured
//! on random slow weights, and the data of the programmer figure; their
//! parameters, their printed table, and one function per output the
//! chapter shows.

use super::{
    attention_without_softmax, fast_weight_programmer_with, linearised_softmax,
};
use crate::input::InputError;
use crate::linalg::worst_row_relative_difference;
use crate::m3::attention::{Projections, Qkv};
use crate::m3::fast_weight_memory::{
    fast_weight_loop, fast_weight_write, linear_attention_recurrent,
};
use crate::phi::elu_plus_one;
use crate::random::{randn, seeded};
use crate::table::Table;
use ndarray::Array2;
use std::fmt;

/// The sequence lengths of the printed equivalence study.
pub const EQUIVALENCE_LENGTHS: [usize; 4] = [1, 12, 100, 300];

/// The printed equivalence study runs seeds 0..EQUIVALENCE_SEEDS.
pub const EQUIVALENCE_SEEDS: u64 = 3;

/// Output `fwp-equivalence`.
pub fn equivalence_table() -> String {
    let rows = equivalence_study(&EQUIVALENCE_LENGTHS, EQUIVALENCE_SEEDS);
    EquivalenceTable {
        seeds: EQUIVALENCE_SEEDS,
        rows,
    }
    .to_string()
}

/// One row of the equivalence study at length N.
pub struct EquivalenceRow {
    pub n: usize,
    /// Attention without softmax against the fast-weight loop.
    pub unnormalised: f64,
    /// Linearised softmax against the normalised programmer.
    pub normalised: f64,
    /// The programmer with ψ = tanh against attention without softmax.
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

/// Step t (from 0) of the programmer of [`random_programmer`] with ψ the
/// identity, with everything it computes: x_t, the slow net's q_t, k_t,
/// v_t, the fast weights before (S_{t−1}), the write v_t k_tᵀ, the fast
/// weights after (S_t) and the output y_t = S_t q_t. S: (m, d).
pub fn programmer_step(
    seed: u64,
    t: usize,
) -> Result<ProgrammerStep, InputError> {
    let (x, slow) = random_programmer(seed, t + 1);
    let Qkv { q, k, v } = slow.project(&x)?; // the slow net
    let mut before = Array2::zeros((v.ncols(), k.ncols())); // S_0 = 0
    for j in 0..t {
        fast_weight_write(&mut before, &v.row(j), &k.row(j))?;
    }
    let mut write = Array2::zeros(before.raw_dim());
    fast_weight_write(&mut write, &v.row(t), &k.row(t))?; // v_t k_tᵀ
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
            .right("psi = tanh (smallest)", 22);
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
