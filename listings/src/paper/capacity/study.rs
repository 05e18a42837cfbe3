//! The studies of "The capacity limit": where exact recall ends
//! (orthonormal keys up to d, then one random key more per row), and how
//! the crosstalk of random keys grows with n; their parameters, their
//! printed tables, and one function per output the chapter shows.

use super::{
    one_hot_total_error, one_hot_values, orthonormal_then_random,
    sum_rule_recall,
};
use crate::m3::attention::unit_rows;
use crate::random::{randn, seeded};
use crate::table::Table;
use std::fmt;

/// The key width of the printed boundary study.
pub const BOUNDARY_D: usize = 8;

/// The numbers of associations of the printed boundary study: below d, at
/// d and past it.
pub const BOUNDARY_NS: [usize; 8] = [1, 4, 7, 8, 9, 10, 12, 16];

/// The seed of the printed boundary study.
pub const BOUNDARY_SEED: u64 = 0;

/// The key and value width of the printed crosstalk study.
pub const CROSSTALK_D: usize = 16;

/// The numbers of associations of the printed crosstalk study.
pub const CROSSTALK_NS: [usize; 9] = [1, 2, 4, 8, 16, 17, 24, 32, 64];

/// The printed crosstalk study runs seeds 0..CROSSTALK_SEEDS.
pub const CROSSTALK_SEEDS: u64 = 10;

/// Output `capacity-boundary`.
pub fn boundary_table() -> String {
    let rows = boundary_study(BOUNDARY_D, &BOUNDARY_NS, BOUNDARY_SEED);
    BoundaryTable {
        d: BOUNDARY_D,
        seed: BOUNDARY_SEED,
        rows,
    }
    .to_string()
}

/// Output `capacity-crosstalk`.
pub fn crosstalk_table() -> String {
    let rows = crosstalk_study(CROSSTALK_D, &CROSSTALK_NS, CROSSTALK_SEEDS);
    CrosstalkTable {
        d: CROSSTALK_D,
        seeds: CROSSTALK_SEEDS,
        rows,
    }
    .to_string()
}

/// One row of the boundary study: n associations in ℝ^d.
pub struct BoundaryRow {
    pub n: usize,
    /// Largest relative recall error, orthonormal-while-possible keys.
    pub worst_error: f64,
    /// Σ_i ‖S k_i − v_i‖² with one-hot values, the same keys.
    pub total_error: f64,
    /// The floor for any n keys in ℝ^d: max(0, n − d).
    pub floor: usize,
}

/// The boundary of the capacity: orthonormal keys up to d, then one random
/// unit key more per row; one-hot values. Seed `seed`.
pub fn boundary_study(d: usize, ns: &[usize], seed: u64) -> Vec<BoundaryRow> {
    ns.iter()
        .map(|&n| {
            let keys = orthonormal_then_random(&mut seeded(seed), n, d);
            let values = one_hot_values(n);
            let errors = sum_rule_recall(&keys, &values).expect("n keys");
            BoundaryRow {
                n,
                worst_error: errors.fold(0.0, |a: f64, &e| a.max(e)),
                total_error: one_hot_total_error(&keys),
                floor: n.saturating_sub(d),
            }
        })
        .collect()
}

/// The boundary study as the chapter prints it.
pub struct BoundaryTable {
    pub d: usize,
    pub seed: u64,
    pub rows: Vec<BoundaryRow>,
}

impl fmt::Display for BoundaryTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "d = {}, keys orthonormal while they fit, then random unit \
             (seed {}); one-hot values",
            self.d, self.seed
        )?;
        let mut table = Table::new()
            .right("n", 4)
            .right("worst recall error", 18)
            .right("total squared error", 24)
            .right("floor max(0, n-d)", 18);
        for r in &self.rows {
            table.row([
                r.n.to_string(),
                format!("{:.1e}", r.worst_error),
                format!("{:.3}", r.total_error),
                r.floor.to_string(),
            ]);
        }
        write!(f, "{table}")
    }
}

/// One row of the crosstalk study: n associations with random keys.
pub struct CrosstalkRow {
    pub n: usize,
    /// Root mean square of the relative recall error over all reads.
    pub rms_error: f64,
    /// The prediction √((n − 1)/d) for random unit keys and values.
    pub predicted: f64,
    /// The same, orthonormal keys while they fit.
    pub rms_error_orthonormal: f64,
}

/// Random unit keys in ℝ^d and random unit values in ℝ^d, n of each, seeds
/// 0..seeds: how far the sum rule's reads are from the stored values.
pub fn crosstalk_study(
    d: usize,
    ns: &[usize],
    seeds: u64,
) -> Vec<CrosstalkRow> {
    let rms = |e: &[f64]| {
        (e.iter().map(|x| x * x).sum::<f64>() / e.len() as f64).sqrt()
    };
    ns.iter()
        .map(|&n| {
            let (mut random, mut orthonormal) = (vec![], vec![]);
            for seed in 0..seeds {
                let mut rng = seeded(seed);
                let keys = unit_rows(&randn(&mut rng, n, d));
                let values = unit_rows(&randn(&mut rng, n, d));
                let e = sum_rule_recall(&keys, &values).expect("n keys");
                random.extend(e);
                let keys = orthonormal_then_random(&mut rng, n, d);
                let e = sum_rule_recall(&keys, &values).expect("n keys");
                orthonormal.extend(e);
            }
            CrosstalkRow {
                n,
                rms_error: rms(&random),
                predicted: ((n - 1) as f64 / d as f64).sqrt(),
                rms_error_orthonormal: rms(&orthonormal),
            }
        })
        .collect()
}

/// The crosstalk study as the chapter prints it.
pub struct CrosstalkTable {
    pub d: usize,
    pub seeds: u64,
    pub rows: Vec<CrosstalkRow>,
}

impl fmt::Display for CrosstalkTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "d = m = {}, unit keys and values, seeds 0..{}; RMS recall error",
            self.d, self.seeds
        )?;
        let mut table = Table::new()
            .right("n", 5)
            .right("random keys", 12)
            .right("sqrt((n-1)/d)", 16)
            .right("orthonormal while fit", 22);
        for r in &self.rows {
            table.row([
                r.n.to_string(),
                format!("{:.3}", r.rms_error),
                format!("{:.3}", r.predicted),
                format!("{:.3}", r.rms_error_orthonormal),
            ]);
        }
        write!(f, "{table}")
    }
}
