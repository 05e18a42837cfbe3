//! What "That matrix is the fast-weight memory" prints and draws: the
//! running example read both ways, the memory after each token, and the
//! agreement of the forms at growing N; their parameters, and one function
//! per output.

use super::{
    fast_weight_loop, fast_weight_write, fast_weights_walkthrough,
    linear_attention_parallel, linear_attention_recurrent,
};
use crate::input::{InputError, nonempty_finite, same_rows};
use crate::linalg::worst_row_relative_difference;
use crate::m3::attention::study::WALKTHROUGH_SEED;
use crate::m3::attention::{Qkv, walkthrough};
use crate::phi::elu_plus_one;
use crate::random::{randn, seeded};
use crate::table::Table;
use ndarray::{Array2, ArrayRef2};
use std::fmt;

/// Lengths and seeds of the agreement study.
pub const AGREEMENT_LENGTHS: [usize; 7] = [1, 2, 3, 12, 100, 1000, 2000];
pub const AGREEMENT_SEEDS: u64 = 5;

/// Output `fast-weights-walkthrough`: the running example of "Attention,
/// from scratch" (its seed), read both ways.
pub fn fast_weights_running_example() -> String {
    walkthrough_report(WALKTHROUGH_SEED).to_string()
}

/// Output `fast-weights-agreement`.
pub fn fast_weights_agreement() -> String {
    let rows = agreement_study(&AGREEMENT_LENGTHS, AGREEMENT_SEEDS);
    AgreementTable {
        seeds: AGREEMENT_SEEDS,
        rows,
    }
    .to_string()
}

/// The memory after each token, S_1, …, S_N, written one outer product at
/// a time. phi_k: (N, p), v: (N, m); each S_t: (m, p).
pub fn memory_trace(
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<Vec<Array2<f64>>, InputError> {
    nonempty_finite("phi_k", phi_k)?;
    nonempty_finite("v", v)?;
    same_rows(("phi_k", phi_k), ("v", v), "each key has one value")?;
    let mut s = Array2::zeros((v.ncols(), phi_k.ncols()));
    let trace = phi_k.rows().into_iter().zip(v.rows()).map(|(k, v)| {
        fast_weight_write(&mut s, &v, &k)?;
        Ok(s.clone())
    });
    trace.collect()
}

/// What the chapter prints about the running example.
pub struct WalkthroughReport {
    pub seed: u64,
    pub n: usize,
    pub p: usize,
    pub m: usize,
    pub output_shape: (usize, usize),
    pub difference: f64,
}

/// Run the running example and measure it.
pub fn walkthrough_report(seed: u64) -> WalkthroughReport {
    let [recurrent, parallel] = fast_weights_walkthrough(seed);
    let (Qkv { k, v, .. }, _) = walkthrough(seed);
    WalkthroughReport {
        seed,
        n: k.nrows(),
        p: k.ncols(),
        m: v.ncols(),
        output_shape: recurrent.dim(),
        difference: worst_row_relative_difference(&recurrent, &parallel),
    }
}

impl fmt::Display for WalkthroughReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (n, p, m) = (self.n, self.p, self.m);
        writeln!(f, "fast_weights_walkthrough(seed = {})", self.seed)?;
        writeln!(f, "phi = elu+1, N = {n}, p = {p}, m = {m}")?;
        writeln!(
            f,
            "recurrent form holds S: ({m}, {p}) and z: ({p}) = {} floats \
             at every step",
            m * p + p
        )?;
        writeln!(
            f,
            "parallel form builds tril(Phi_Q Phi_K^T): ({n}, {n}) = {} floats",
            n * n
        )?;
        writeln!(f, "both return O: {:?}", self.output_shape)?;
        write!(
            f,
            "largest |row of recurrent - row of parallel| / |row|: {:.1e}",
            self.difference
        )
    }
}

/// One length of the agreement study.
pub struct AgreementRow {
    pub n: usize,
    /// Largest row-relative difference, recurrent vs parallel, over seeds.
    pub recurrent_vs_parallel: f64,
    /// The same for the recurrence vs the fast-weight loop on φ(k), φ(q),
    /// divided by the loop's read of a memory that stores the value 1.
    pub recurrent_vs_loop: f64,
}

/// Random q, k: (N, 8), v: (N, 8) from seeds 0..seeds, φ = elu+1.
pub fn agreement_study(lengths: &[usize], seeds: u64) -> Vec<AgreementRow> {
    lengths
        .iter()
        .map(|&n| {
            let (mut vs_parallel, mut vs_loop) = (0.0_f64, 0.0_f64);
            for seed in 0..seeds {
                let mut rng = seeded(seed);
                let phi_q = elu_plus_one(&randn(&mut rng, n, 8));
                let phi_k = elu_plus_one(&randn(&mut rng, n, 8));
                let v = randn(&mut rng, n, 8);
                let rec = linear_attention_recurrent(&phi_q, &phi_k, &v)
                    .expect("shapes agree");
                let par = linear_attention_parallel(&phi_q, &phi_k, &v)
                    .expect("shapes agree");
                let via_loop = loop_with_normaliser(&phi_q, &phi_k, &v);
                vs_parallel =
                    vs_parallel.max(worst_row_relative_difference(&rec, &par));
                vs_loop =
                    vs_loop.max(worst_row_relative_difference(&rec, &via_loop));
            }
            AgreementRow {
                n,
                recurrent_vs_parallel: vs_parallel,
                recurrent_vs_loop: vs_loop,
            }
        })
        .collect()
}

/// The fast-weight loop on φ(q), φ(k), divided by its own read of a memory
/// whose every value is 1: that read is Σ_{j≤t} φ(k_j)ᵀφ(q_t) = z_tᵀφ(q_t).
pub fn loop_with_normaliser(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Array2<f64> {
    let ones = Array2::ones((v.nrows(), 1));
    let numerator = fast_weight_loop(phi_q, phi_k, v).expect("shapes agree");
    let denominator = fast_weight_loop(phi_q, phi_k, &ones).expect("same");
    numerator / denominator
}

/// The agreement study as the chapter prints it.
pub struct AgreementTable {
    pub seeds: u64,
    pub rows: Vec<AgreementRow>,
}

impl fmt::Display for AgreementTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "phi = elu+1, d = m = 8, seeds 0..{}; largest |row difference| \
             / |row|",
            self.seeds
        )?;
        let mut table = Table::new()
            .right("N", 6)
            .right("recurrent vs parallel", 22)
            .right("recurrent vs fast-weight loop / z", 32);
        for r in &self.rows {
            let exact = |x: f64| match x {
                0.0 => "0 (bit for bit)".to_string(),
                x => format!("{x:.1e}"),
            };
            table.row([
                r.n.to_string(),
                format!("{:.1e}", r.recurrent_vs_parallel),
                (exact(r.recurrent_vs_loop)).to_string(),
            ]);
        }
        write!(f, "{table}")
    }
}
