//! The studies "Delete the softmax" prints: both groupings at growing N,
//! the softmax at growing temperature, the rank of each kernel's matrix,
//! and Taylor features of exp degree by degree; their parameters, and one
//! function per output.

use super::{
    RANK_TOL, entropy, gram_matrix, linear_attention_memory_first,
    linear_attention_scores_first, numerical_rank, sequence_memory,
    softmax_kernel, taylor_dimension, taylor_features,
};
use crate::linalg::worst_row_relative_difference;
use crate::m3::attention::softmax_rows;
use crate::m3::cost::study::group_digits;
use crate::memo::once;
use crate::phi::elu_plus_one;
use crate::random::{randn, seeded};
use crate::table::Table;
use ndarray::Array2;
use std::fmt;

/// The lengths and seeds of the chapter's groupings study.
pub const GROUPING_LENGTHS: [usize; 4] = [12, 100, 1000, 2000];
pub const GROUPING_SEEDS: u64 = 5;

/// The temperatures of the chapter's table, as multiples of √d, and its
/// N, d and seeds.
pub const TEMPERATURES: [f64; 5] = [0.25, 1.0, 4.0, 16.0, 64.0];
pub const TEMPERATURE_N_D_SEEDS: (usize, usize, u64) = (64, 8, 5);

/// Sequence lengths, width, hot temperature (a multiple of √d) and seed of
/// the rank study.
pub const RANK_LENGTHS: [usize; 7] = [4, 8, 16, 32, 64, 128, 256];
pub const RANK_D: usize = 4;
pub const RANK_HOT_TAU_OVER_SQRT_D: f64 = 16.0;
pub const RANK_SEED: u64 = 0;

/// Degrees, width, a typical head's width, points and seed of the Taylor
/// study.
pub const TAYLOR_DEGREES: std::ops::RangeInclusive<usize> = 0..=12;
pub const TAYLOR_D: usize = 4;
pub const TAYLOR_WIDE_D: usize = 64;
pub const TAYLOR_POINTS: usize = 24;
pub const TAYLOR_SEED: u64 = 0;

/// Output `kernel-groupings`.
pub fn kernel_groupings() -> String {
    let seeds = GROUPING_SEEDS;
    let rows = grouping_study(&GROUPING_LENGTHS, seeds);
    GroupingTable { seeds, rows }.to_string()
}

/// Output `kernel-temperature`.
pub fn kernel_temperature() -> String {
    let (n, d, seeds) = TEMPERATURE_N_D_SEEDS;
    let rows = temperature_study(&TEMPERATURES, n, d, seeds);
    TemperatureTable { n, d, seeds, rows }.to_string()
}

/// One row of the groupings study: at length N, the size of what each
/// grouping builds and how far apart their outputs are.
pub struct GroupingRow {
    pub n: usize,
    pub scores_shape: (usize, usize),
    pub memory_shape: (usize, usize),
    /// Largest row-relative difference over the seeds.
    pub difference: f64,
}

/// Both groupings of non-causal linear attention with φ = elu+1, on random
/// q, k: (N, 8), v: (N, 8), for each length and seeds 0..seeds.
pub fn grouping_study(lengths: &[usize], seeds: u64) -> Vec<GroupingRow> {
    let (d, m) = (8, 8);
    lengths
        .iter()
        .map(|&n| {
            let mut difference = 0.0_f64;
            let (mut scores_shape, mut memory_shape) = ((0, 0), (0, 0));
            for seed in 0..seeds {
                let mut rng = seeded(seed);
                let phi_q = elu_plus_one(&randn(&mut rng, n, d));
                let phi_k = elu_plus_one(&randn(&mut rng, n, d));
                let v = randn(&mut rng, n, m);
                let a = linear_attention_scores_first(&phi_q, &phi_k, &v)
                    .expect("shapes agree");
                let b = linear_attention_memory_first(&phi_q, &phi_k, &v)
                    .expect("shapes agree");
                difference =
                    difference.max(worst_row_relative_difference(&a, &b));
                // The product the scores-first grouping builds, measured.
                scores_shape = phi_q.dot(&phi_k.t()).dim();
                memory_shape = sequence_memory(&phi_k, &v).s.dim();
            }
            GroupingRow {
                n,
                scores_shape,
                memory_shape,
                difference,
            }
        })
        .collect()
}

/// The groupings study as the chapter prints it.
pub struct GroupingTable {
    pub seeds: u64,
    pub rows: Vec<GroupingRow>,
}

impl fmt::Display for GroupingTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(f, "phi = elu+1, d = m = 8, seeds 0..{}", self.seeds)?;
        writeln!(
            f,
            "difference = largest |row of (a) - row of (b)| / |row of (b)|"
        )?;
        let mut table = Table::new()
            .right("N", 6)
            .right("(a) scores first builds", 28)
            .right("(b) memory first", 18)
            .right("difference", 10);
        for r in &self.rows {
            let scores = format!("Phi_Q Phi_K^T {:?}", r.scores_shape);
            let memory = format!("S {:?}", r.memory_shape);
            table.row([
                r.n.to_string(),
                scores,
                memory,
                format!("{:.1e}", r.difference),
            ]);
        }
        write!(f, "{table}")
    }
}

/// One temperature of the temperature study.
pub struct TemperatureRow {
    /// τ as a multiple of √d: 1 is the softmax's own scale.
    pub tau_over_sqrt_d: f64,
    /// Mean over queries and seeds of entropy / ln N: 1 is uniform.
    pub entropy_ratio: f64,
    /// Mean over queries and seeds of the largest weight in a row.
    pub top_weight: f64,
    /// Smallest numerical rank of the N × N matrix exp(q_i·k_j / τ) over
    /// the seeds.
    pub kernel_rank: usize,
}

/// The softmax's weights at temperature τ, softmax(Q Kᵀ / τ), for random
/// q, k: (n, d) with N(0, 1) entries, seeds 0..seeds, and the rank of the
/// kernel matrix they come from.
pub fn temperature_study(
    taus_over_sqrt_d: &[f64],
    n: usize,
    d: usize,
    seeds: u64,
) -> Vec<TemperatureRow> {
    taus_over_sqrt_d
        .iter()
        .map(|&ratio| {
            let tau = ratio * (d as f64).sqrt();
            let (mut entropy_ratio, mut top_weight) = (0.0, 0.0);
            let mut kernel_rank = n;
            for seed in 0..seeds {
                let mut rng = seeded(seed);
                let q = randn(&mut rng, n, d);
                let k = randn(&mut rng, n, d);
                let scores = q.dot(&k.t()) / tau;
                let weights = softmax_rows(&scores);
                for row in weights.rows() {
                    entropy_ratio += entropy(&row) / (n as f64).ln();
                    top_weight += row.fold(0.0, |m: f64, &a| m.max(a));
                }
                let gram = scores.mapv(f64::exp);
                kernel_rank = kernel_rank.min(numerical_rank(&gram, RANK_TOL));
            }
            let count = (n as u64 * seeds) as f64;
            TemperatureRow {
                tau_over_sqrt_d: ratio,
                entropy_ratio: entropy_ratio / count,
                top_weight: top_weight / count,
                kernel_rank,
            }
        })
        .collect()
}

/// The temperature study as the chapter prints it.
pub struct TemperatureTable {
    pub n: usize,
    pub d: usize,
    pub seeds: u64,
    pub rows: Vec<TemperatureRow>,
}

impl fmt::Display for TemperatureTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let (n, d) = (self.n, self.d);
        writeln!(
            f,
            "softmax(Q K^T / tau), N = {n} keys, d = {d}, seeds 0..{}",
            self.seeds
        )?;
        writeln!(
            f,
            "uniform weights: entropy / ln N = 1, top weight = 1/N = {:.3}",
            1.0 / n as f64
        )?;
        let mut table = Table::new()
            .right("tau/sqrt(d)", 10)
            .right("entropy/ln N", 13)
            .right("top weight", 10)
            .right("rank of exp(Q K^T / tau)", 24);
        for r in &self.rows {
            table.row([
                r.tau_over_sqrt_d.to_string(),
                format!("{:.4}", r.entropy_ratio),
                format!("{:.3}", r.top_weight),
                format!("{:>19} of {n}", r.kernel_rank),
            ]);
        }
        write!(f, "{table}")
    }
}

/// Ranks of Gram matrices on N random points in d dimensions.
pub struct RankRow {
    pub n: usize,
    /// exp(x_iᵀx_j / √d): softmax's kernel.
    pub softmax: usize,
    /// exp(x_iᵀx_j / τ) at a τ where the weights are nearly uniform.
    pub softmax_hot: usize,
    /// φ(x_i)ᵀφ(x_j) with φ = elu+1, p = d.
    pub elu: usize,
    /// φ(x_i)ᵀφ(x_j) with the degree-2 Taylor features, p = C(d + 2, 2).
    pub taylor2: usize,
}

/// The rank study: the numerical rank of each kernel's Gram matrix on the
/// first N of a fixed set of random points x: (N, d), N(0, 1) entries.
pub struct RankStudy {
    pub d: usize,
    pub hot_tau_over_sqrt_d: f64,
    pub seed: u64,
    pub rows: Vec<RankRow>,
}

/// Run the rank study for each length in `lengths` (points from `seed`).
pub fn rank_study(
    lengths: &[usize],
    d: usize,
    hot_tau_over_sqrt_d: f64,
    seed: u64,
) -> RankStudy {
    let longest = lengths.iter().copied().max().unwrap_or(0);
    let points = randn(&mut seeded(seed), longest, d);
    let hot_tau = hot_tau_over_sqrt_d * (d as f64).sqrt();
    let rows = lengths
        .iter()
        .map(|&n| {
            let x = points.slice(ndarray::s![..n, ..]);
            let rank = |g: Array2<f64>| numerical_rank(&g, RANK_TOL);
            let elu = elu_plus_one(&x);
            let taylor = taylor_features(&x, 2);
            RankRow {
                n,
                softmax: rank(gram_matrix(&x, softmax_kernel)),
                softmax_hot: rank(gram_matrix(&x, |a, b| {
                    (a.dot(b) / hot_tau).exp()
                })),
                elu: rank(elu.dot(&elu.t())),
                taylor2: rank(taylor.dot(&taylor.t())),
            }
        })
        .collect();
    RankStudy {
        d,
        hot_tau_over_sqrt_d,
        seed,
        rows,
    }
}

impl fmt::Display for RankStudy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.d;
        writeln!(
            f,
            "numerical rank of the N x N Gram matrix (pivots above \
             {RANK_TOL:.0e} x the largest)"
        )?;
        writeln!(
            f,
            "N points with N(0, 1) entries in d = {d}, seed {}",
            self.seed
        )?;
        let mut table = Table::new()
            .right("N", 5)
            .right("exp, tau = √d", 14)
            .right(&format!("exp, tau = {}√d", self.hot_tau_over_sqrt_d), 17)
            .right(&format!("elu+1, p = {d}"), 13)
            .right(&format!("Taylor-2, p = {}", taylor_dimension(d, 2)), 16);
        for r in &self.rows {
            table.row([
                r.n.to_string(),
                r.softmax.to_string(),
                r.softmax_hot.to_string(),
                r.elu.to_string(),
                r.taylor2.to_string(),
            ]);
        }
        write!(f, "{table}")
    }
}

/// How well the degree-ℓ Taylor features reproduce exp(qᵀk).
pub struct TaylorRow {
    pub degree: usize,
    /// p = C(d + ℓ, ℓ) for the study's d.
    pub dimension: u64,
    /// p for a typical attention head's width, `TaylorStudy::wide_d`.
    pub wide_dimension: u64,
    /// Median and largest of |φ(q)ᵀφ(k) − exp(qᵀk)| / exp(qᵀk) over pairs.
    pub median_error: f64,
    pub max_error: f64,
    /// The error of the pair with the highest score qᵀk, and of the pair
    /// with the lowest.
    pub top_score_error: f64,
    pub bottom_score_error: f64,
}

/// The Taylor study: degree by degree, the error of the truncated feature
/// map on random pairs and the dimension it needs.
pub struct TaylorStudy {
    pub d: usize,
    pub wide_d: usize,
    pub n_points: usize,
    pub seed: u64,
    pub rows: Vec<TaylorRow>,
}

/// Queries and keys: (points, d) with N(0, 1) entries divided by d^¼, so
/// that qᵀk is softmax's scaled score q'ᵀk'/√d of unscaled q', k'. Every
/// query is paired with every key.
pub fn taylor_study(
    degrees: std::ops::RangeInclusive<usize>,
    d: usize,
    wide_d: usize,
    n_points: usize,
    seed: u64,
) -> TaylorStudy {
    let mut rng = seeded(seed);
    let scale = (d as f64).powf(-0.25);
    let q = randn(&mut rng, n_points, d) * scale;
    let k = randn(&mut rng, n_points, d) * scale;
    let scores = q.dot(&k.t());
    let exact = scores.mapv(f64::exp);
    // Where the highest and the lowest score sit, in the order of `errors`.
    let by_score = |a: &(usize, &f64), b: &(usize, &f64)| a.1.total_cmp(b.1);
    let top = scores
        .iter()
        .enumerate()
        .max_by(by_score)
        .map_or(0, |p| p.0);
    let bottom = scores
        .iter()
        .enumerate()
        .min_by(by_score)
        .map_or(0, |p| p.0);
    let rows = degrees
        .map(|degree| {
            let approx = taylor_features(&q, degree)
                .dot(&taylor_features(&k, degree).t());
            let errors: Vec<f64> = approx
                .iter()
                .zip(&exact)
                .map(|(a, e)| (a - e).abs() / e)
                .collect();
            let spread = crate::summary::Spread::of(&errors);
            TaylorRow {
                degree,
                dimension: taylor_dimension(d, degree),
                wide_dimension: taylor_dimension(wide_d, degree),
                median_error: spread.median,
                max_error: spread.max,
                top_score_error: errors[top],
                bottom_score_error: errors[bottom],
            }
        })
        .collect();
    TaylorStudy {
        d,
        wide_d,
        n_points,
        seed,
        rows,
    }
}

impl fmt::Display for TaylorStudy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "exp(q.k) against its degree-ℓ Taylor features, {0} x {0} pairs, \
             d = {1}, seed {2}",
            self.n_points, self.d, self.seed
        )?;
        let mut table = Table::new()
            .right("degree", 6)
            .right("median error", 12)
            .right("largest error", 13)
            .right("at top score", 12)
            .right(&format!("p, d = {}", self.d), 9)
            .right(&format!("p, d = {}", self.wide_d), 18);
        for r in &self.rows {
            table.row([
                r.degree.to_string(),
                format!("{:.1e}", r.median_error),
                format!("{:.1e}", r.max_error),
                format!("{:.1e}", r.top_score_error),
                (group_digits(r.dimension)).to_string(),
                (group_digits(r.wide_dimension)).to_string(),
            ]);
        }
        write!(f, "{table}")
    }
}

once! {
    /// "Delete the softmax": the rank of each kernel's matrix.
    chapter_rank_study: RankStudy = rank_study(
        &RANK_LENGTHS,
        RANK_D,
        RANK_HOT_TAU_OVER_SQRT_D,
        RANK_SEED,
    );
}

once! {
    /// "Delete the softmax": Taylor features of exp, degree by degree.
    chapter_taylor_study: TaylorStudy = taylor_study(
        TAYLOR_DEGREES,
        TAYLOR_D,
        TAYLOR_WIDE_D,
        TAYLOR_POINTS,
        TAYLOR_SEED,
    );
}

/// Output `kernel-rank`: the study of [`chapter_rank_study`], run once per process.
pub fn kernel_rank() -> String {
    chapter_rank_study().to_string()
}

/// Output `kernel-taylor`: the study of [`chapter_taylor_study`], run once per process.
pub fn kernel_taylor() -> String {
    chapter_taylor_study().to_string()
}
