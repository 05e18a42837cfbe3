//! The studies the primer prints: how far random unit keys are from
//! orthogonal at growing width, and the ranks of key sets from orthonormal
//! to one key with the sum rule's recall error; their parameters, and one
//! function per output.

use super::{correlated_keys, effective_rank, pairwise_overlaps, rms};
use crate::input::InputError;
use crate::linalg::orthonormal_keys;
use crate::m3::attention::unit_rows;
use crate::m3::delete_softmax::{RANK_TOL, numerical_rank};
use crate::paper::capacity::sum_rule_recall;
use crate::random::{randn, seeded};
use crate::summary::Spread;
use crate::table::Table;
use ndarray::Array2;
use rand::Rng;
use std::fmt;
use std::ops::Range;

/// Widths, keys per draw and seeds of the overlap study.
pub const OVERLAP_WIDTHS: [usize; 5] = [4, 16, 64, 256, 1024];
pub const OVERLAP_N: usize = 32;
pub const OVERLAP_SEEDS: u64 = 10;

/// Keys n, their width d, the values' width m and the seeds of the
/// effective-rank study.
pub const RANK_N: usize = 16;
pub const RANK_D: usize = 32;
pub const RANK_M: usize = 16;
pub const RANK_SEEDS: Range<u64> = 0..10;

/// The key sets of the appendix's table, from orthonormal to one key.
pub const PRIMER_SETS: [KeySet; 6] = [
    KeySet::Orthonormal,
    KeySet::Correlated(0.0),
    KeySet::Correlated(0.25),
    KeySet::Correlated(0.5),
    KeySet::Correlated(0.9),
    KeySet::Correlated(1.0),
];

/// Output `primer-overlaps`.
pub fn primer_overlaps() -> String {
    let rows = overlap_study(&OVERLAP_WIDTHS, OVERLAP_N, OVERLAP_SEEDS);
    OverlapTable {
        n: OVERLAP_N,
        seeds: OVERLAP_SEEDS,
        rows,
    }
    .to_string()
}

/// Output `primer-effective-rank`.
pub fn primer_effective_rank() -> String {
    let (n, d, m) = (RANK_N, RANK_D, RANK_M);
    let rows = effective_rank_study(&PRIMER_SETS, n, d, m, RANK_SEEDS);
    RankTable {
        n,
        d,
        m,
        seeds: RANK_SEEDS,
        rows,
    }
    .to_string()
}

/// Overlaps of random unit keys in one width d.
pub struct OverlapRow {
    pub d: usize,
    /// Root mean square of k_iᵀk_j over all pairs and seeds.
    pub rms: f64,
    /// The same times √d: near 1 if the RMS overlap is 1/√d.
    pub rms_times_sqrt_d: f64,
    /// Mean of |k_iᵀk_j|, which for large d tends to √(2/(π d)).
    pub mean_abs: f64,
    /// Largest |k_iᵀk_j| over all pairs and seeds.
    pub largest: f64,
}

/// n random unit keys in ℝ^d (Gaussian directions), seeds 0..seeds: how
/// far from orthogonal their pairs are, for each d in `ds`.
pub fn overlap_study(ds: &[usize], n: usize, seeds: u64) -> Vec<OverlapRow> {
    ds.iter()
        .map(|&d| {
            let mut all = vec![];
            for seed in 0..seeds {
                let keys = randn(&mut seeded(seed), n, d);
                all.extend(pairwise_overlaps(&keys).expect("n ≥ 2 keys"));
            }
            let abs: Vec<f64> = all.iter().map(|x| x.abs()).collect();
            let rms = rms(&all);
            OverlapRow {
                d,
                rms,
                rms_times_sqrt_d: rms * (d as f64).sqrt(),
                mean_abs: abs.iter().sum::<f64>() / abs.len() as f64,
                largest: abs.iter().fold(0.0, |a: f64, &x| a.max(x)),
            }
        })
        .collect()
}

/// The overlap study as the appendix prints it.
pub struct OverlapTable {
    pub n: usize,
    pub seeds: u64,
    pub rows: Vec<OverlapRow>,
}

impl fmt::Display for OverlapTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "{} random unit keys, all {} pairs, seeds 0..{}",
            self.n,
            self.n * (self.n - 1) / 2,
            self.seeds
        )?;
        let mut table = Table::new()
            .right("d", 5)
            .right("1/sqrt(d)", 9)
            .right("RMS overlap", 11)
            .right("RMS x sqrt(d)", 13)
            .right("mean |.|", 10)
            .right("largest |.|", 14);
        for r in &self.rows {
            table.row([
                r.d.to_string(),
                format!("{:.4}", 1.0 / (r.d as f64).sqrt()),
                format!("{:.4}", r.rms),
                format!("{:.3}", r.rms_times_sqrt_d),
                format!("{:.4}", r.mean_abs),
                format!("{:.4}", r.largest),
            ]);
        }
        write!(f, "{table}")
    }
}

/// One kind of key set in the effective-rank study.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum KeySet {
    /// n orthonormal keys (n ≤ d).
    Orthonormal,
    /// Unit keys sharing a direction with weight ρ (see `correlated_keys`).
    Correlated(f64),
}

impl KeySet {
    /// n keys of this kind in ℝ^d; an error for n > d orthonormal keys or
    /// ρ outside [0, 1].
    pub fn draw(
        self,
        rng: &mut impl Rng,
        n: usize,
        d: usize,
    ) -> Result<Array2<f64>, InputError> {
        match self {
            KeySet::Orthonormal => orthonormal_keys(rng, n, d),
            KeySet::Correlated(rho) => correlated_keys(rng, n, d, rho),
        }
    }

    fn label(self) -> String {
        match self {
            KeySet::Orthonormal => "orthonormal".to_string(),
            KeySet::Correlated(1.0) => "one key, n copies".to_string(),
            KeySet::Correlated(rho) => format!("shared, rho = {rho}"),
        }
    }
}

/// One row of the effective-rank study.
pub struct RankRow {
    pub keys: KeySet,
    /// Numerical rank (with the book's RANK_TOL), over the seeds.
    pub numerical_rank: Spread,
    /// Effective rank, over the seeds.
    pub effective_rank: Spread,
    /// Root mean square relative sum-rule recall error over all reads.
    pub rms_error: f64,
}

/// n unit keys in ℝ^d of each kind, with n random unit values in ℝ^m,
/// one draw per seed: their ranks and how well the sum rule recalls.
pub fn effective_rank_study(
    sets: &[KeySet],
    n: usize,
    d: usize,
    m: usize,
    seeds: Range<u64>,
) -> Vec<RankRow> {
    sets.iter()
        .map(|&set| {
            let (mut ranks, mut eranks, mut errors) = (vec![], vec![], vec![]);
            for seed in seeds.clone() {
                let mut rng = seeded(seed);
                let keys =
                    set.draw(&mut rng, n, d).expect("n ≤ d, ρ in [0, 1]");
                let values = unit_rows(&randn(&mut rng, n, m));
                ranks.push(numerical_rank(&keys, RANK_TOL) as f64);
                eranks.push(effective_rank(&keys).expect("unit keys"));
                let e = sum_rule_recall(&keys, &values).expect("n keys");
                errors.extend(e);
            }
            RankRow {
                keys: set,
                numerical_rank: Spread::of(&ranks),
                effective_rank: Spread::of(&eranks),
                rms_error: rms(&errors),
            }
        })
        .collect()
}

/// The effective-rank study as the appendix prints it.
pub struct RankTable {
    pub n: usize,
    pub d: usize,
    pub m: usize,
    pub seeds: Range<u64>,
    pub rows: Vec<RankRow>,
}

impl fmt::Display for RankTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "n = {} unit keys in d = {}, unit values in m = {}, seeds {:?}",
            self.n, self.d, self.m, self.seeds
        )?;
        writeln!(f, "ranks: median (min-max) over the seeds")?;
        let mut table = Table::new()
            .left("keys", 18)
            .right("numerical rank", 14)
            .right("effective rank", 22)
            .right("RMS recall error", 16);
        for r in &self.rows {
            let (nr, er) = (r.numerical_rank, r.effective_rank);
            let rank = if nr.min == nr.max {
                format!("{}", nr.median)
            } else {
                format!("{} ({}-{})", nr.median, nr.min, nr.max)
            };
            let erank =
                format!("{:.2} ({:.2}-{:.2})", er.median, er.min, er.max);
            table.row([
                (r.keys.label()).to_string(),
                rank.to_string(),
                erank.to_string(),
                format!("{:.3}", r.rms_error),
            ]);
        }
        write!(f, "{table}")
    }
}
