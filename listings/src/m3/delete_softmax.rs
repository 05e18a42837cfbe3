//! Chapter "Delete the softmax": attention with a general similarity kernel,
//! softmax as the exponential kernel, and linear attention's two groupings
//! of the same product. Then the chapter's question, made executable: is it
//! the softmax's sharpness that forbids the collapse, or its kernel?
//!
//! Shapes: q: (N, d), k: (N_k, d), v: (N_k, m); feature-mapped queries and
//! keys φ(Q), φ(K): (N, p). The memory S is (m, p), values by features.

use crate::input::{
    InputError, check_features, check_qkv, finite, normaliser, normalisers,
};
use crate::linalg::worst_row_relative_difference;
use crate::m3::attention::{Attention, Mask, softmax_rows};
use crate::m3::cost::group_digits;
use crate::phi::elu_plus_one;
use crate::random::{randn, seeded};
use crate::table::Table;
use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2, Axis};
use std::fmt;

// ANCHOR: kernel_attention
/// Attention with a similarity kernel (Tsai et al. 2019):
/// o_t = Σ_j sim(q_t, k_j) v_j / Σ_j sim(q_t, k_j), over j ≤ t if causal.
/// q: (N, d), k: (N_k, d), v: (N_k, m). The kernel must be positive.
pub fn kernel_attention(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    mask: Mask,
    sim: impl Fn(&ArrayRef1<f64>, &ArrayRef1<f64>) -> f64,
) -> Result<Attention, InputError> {
    check_qkv(q, k, v, mask == Mask::Causal)?;
    let visible = |t: usize, j: usize| mask == Mask::None || j <= t;
    let mut weights =
        Array2::from_shape_fn((q.nrows(), k.nrows()), |(t, j)| {
            if visible(t, j) {
                sim(&q.row(t), &k.row(j))
            } else {
                0.0
            }
        });
    for (t, mut row) in weights.rows_mut().into_iter().enumerate() {
        row /= normaliser("Σ_j sim(q_t, k_j)", t, row.sum())?; // > 0
    }
    let output = finite("O", weights.dot(v))?;
    Ok(Attention { weights, output })
}
// ANCHOR_END: kernel_attention

// ANCHOR: softmax_kernel
/// The kernel of softmax attention: sim(q, k) = exp(qᵀk / √d).
pub fn softmax_kernel(q: &ArrayRef1<f64>, k: &ArrayRef1<f64>) -> f64 {
    let d = q.len() as f64;
    (q.dot(k) / d.sqrt()).exp()
}
// ANCHOR_END: softmax_kernel

// ANCHOR: linear_attention_scores_first
/// Non-causal linear attention, scores first: (Φ_Q Φ_Kᵀ) V, each row
/// divided by its row sum of Φ_Q Φ_Kᵀ. Builds an (N, N_k) matrix.
/// phi_q: (N, p), phi_k: (N_k, p), v: (N_k, m); returns O: (N, m).
pub fn linear_attention_scores_first(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<Array2<f64>, InputError> {
    check_features(phi_q, phi_k, v, false)?;
    let scores = phi_q.dot(&phi_k.t()); // (N, N_k): grows with N
    let numerator = scores.dot(v); // (N, m)
    let denominator = scores.sum_axis(Axis(1));
    normalisers("zᵀφ(q_t)", &denominator)?; // every one > 0
    finite("O", numerator / denominator.insert_axis(Axis(1)))
}
// ANCHOR_END: linear_attention_scores_first

// ANCHOR: sequence_memory
/// What the memory-first grouping keeps of a whole sequence.
pub struct Memory {
    /// S = Vᵀ Φ_K = Σ_j v_j φ(k_j)ᵀ: (m, p), values by features.
    pub s: Array2<f64>,
    /// z = Φ_Kᵀ 1 = Σ_j φ(k_j): (p), the normaliser.
    pub z: Array1<f64>,
}

/// The memory of a sequence. phi_k: (N_k, p), v: (N_k, m).
pub fn sequence_memory(phi_k: &ArrayRef2<f64>, v: &ArrayRef2<f64>) -> Memory {
    Memory {
        s: v.t().dot(phi_k),
        z: phi_k.sum_axis(Axis(0)),
    }
}
// ANCHOR_END: sequence_memory

// ANCHOR: linear_attention_memory_first
/// Non-causal linear attention, memory first: o_t = S φ(q_t) / zᵀφ(q_t),
/// all rows at once O = Φ_Q Sᵀ / Φ_Q z. Builds no N × N matrix.
/// phi_q: (N, p), phi_k: (N_k, p), v: (N_k, m); returns O: (N, m).
pub fn linear_attention_memory_first(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<Array2<f64>, InputError> {
    check_features(phi_q, phi_k, v, false)?;
    let Memory { s, z } = sequence_memory(phi_k, v); // (m, p) and (p)
    let numerator = phi_q.dot(&s.t()); // (N, m)
    let denominator = phi_q.dot(&z); // (N)
    normalisers("zᵀφ(q_t)", &denominator)?; // every one > 0
    finite("O", numerator / denominator.insert_axis(Axis(1)))
}
// ANCHOR_END: linear_attention_memory_first

/// One row of the groupings study: at length N, the size of what each
/// grouping builds and how far apart their outputs are.
pub struct GroupingRow {
    pub n: usize,
    pub scores_shape: (usize, usize),
    pub memory_shape: (usize, usize),
    /// Largest row-relative difference over the seeds.
    pub difference: f64,
}

/// The lengths and seeds of the chapter's groupings study.
pub const GROUPING_LENGTHS: [usize; 4] = [12, 100, 1000, 2000];
pub const GROUPING_SEEDS: u64 = 5;

/// The temperatures of the chapter's table, as multiples of √d, and its
/// N, d and seeds.
pub const TEMPERATURES: [f64; 5] = [0.25, 1.0, 4.0, 16.0, 64.0];
pub const TEMPERATURE_N_D_SEEDS: (usize, usize, u64) = (64, 8, 5);

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

// ANCHOR: entropy
/// Entropy of a row of weights, −Σ_j a_j ln a_j, in nats. A uniform row
/// over N keys has the largest, ln N; a one-hot row has 0.
pub fn entropy(weights: &ArrayRef1<f64>) -> f64 {
    -weights
        .iter()
        .filter(|&&a| a > 0.0)
        .map(|&a| a * a.ln())
        .sum::<f64>()
}
// ANCHOR_END: entropy

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

/// Relative tolerance of the book's numerical ranks: a pivot counts if it
/// is larger than this times the largest one.
pub const RANK_TOL: f64 = 1e-10;

// ANCHOR: numerical_rank
/// The number of pivots of Gaussian elimination with complete pivoting
/// that exceed rel_tol × the first (largest) pivot. a: (rows, cols).
pub fn numerical_rank(a: &ArrayRef2<f64>, rel_tol: f64) -> usize {
    let mut a = a.to_owned();
    let (rows, cols) = a.dim();
    let mut largest = 0.0;
    for r in 0..rows.min(cols) {
        // The largest entry of the part not yet eliminated is the pivot.
        let (mut pr, mut pc, mut pivot) = (r, r, 0.0);
        for i in r..rows {
            for j in r..cols {
                if a[[i, j]].abs() > pivot {
                    (pr, pc, pivot) = (i, j, a[[i, j]].abs());
                }
            }
        }
        if r == 0 {
            largest = pivot;
        }
        if pivot == 0.0 || pivot <= rel_tol * largest {
            return r;
        }
        swap_rows(&mut a, r, pr);
        swap_cols(&mut a, r, pc);
        for i in r + 1..rows {
            let factor = a[[i, r]] / a[[r, r]];
            for j in r..cols {
                a[[i, j]] -= factor * a[[r, j]];
            }
        }
    }
    rows.min(cols)
}
// ANCHOR_END: numerical_rank

fn swap_rows(a: &mut Array2<f64>, i: usize, j: usize) {
    if i != j {
        for c in 0..a.ncols() {
            a.swap([i, c], [j, c]);
        }
    }
}

fn swap_cols(a: &mut Array2<f64>, i: usize, j: usize) {
    if i != j {
        for r in 0..a.nrows() {
            a.swap([r, i], [r, j]);
        }
    }
}

// ANCHOR: gram_matrix
/// The Gram matrix of a kernel on N points: G_ij = sim(x_i, x_j).
/// x: (N, d); returns G: (N, N).
pub fn gram_matrix(
    x: &ArrayRef2<f64>,
    sim: impl Fn(&ArrayRef1<f64>, &ArrayRef1<f64>) -> f64,
) -> Array2<f64> {
    let n = x.nrows();
    Array2::from_shape_fn((n, n), |(i, j)| sim(&x.row(i), &x.row(j)))
}
// ANCHOR_END: gram_matrix

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

// ANCHOR: taylor_features
/// Taylor features of exp(qᵀk) up to degree ℓ: one feature x^α / √α! per
/// multi-index α with |α| ≤ ℓ, so φ(q)ᵀφ(k) = Σ_{i≤ℓ} (qᵀk)^i / i!.
/// x: (N, d); returns (N, p) with p = C(d + ℓ, ℓ).
pub fn taylor_features(x: &ArrayRef2<f64>, degree: usize) -> Array2<f64> {
    let alphas: Vec<Vec<u32>> = (0..=degree)
        .flat_map(|i| multi_indices(x.ncols(), i))
        .collect();
    Array2::from_shape_fn((x.nrows(), alphas.len()), |(t, f)| {
        let x_t = x.row(t);
        let monomial = |(&x, &a): (&f64, &u32)| x.powi(a as i32);
        let scale: f64 = alphas[f].iter().map(|&a| factorial(a)).product();
        x_t.iter().zip(&alphas[f]).map(monomial).product::<f64>() / scale.sqrt()
    })
}
// ANCHOR_END: taylor_features

/// Every α ∈ ℕ^d with α_1 + … + α_d = degree, largest α_1 first.
pub fn multi_indices(d: usize, degree: usize) -> Vec<Vec<u32>> {
    if d == 0 {
        return if degree == 0 { vec![vec![]] } else { vec![] };
    }
    let mut out = Vec::new();
    for first in (0..=degree).rev() {
        for rest in multi_indices(d - 1, degree - first) {
            let mut alpha = vec![first as u32];
            alpha.extend(rest);
            out.push(alpha);
        }
    }
    out
}

fn factorial(a: u32) -> f64 {
    (1..=a).map(f64::from).product()
}

// ANCHOR: taylor_dimension
/// Number of Taylor features up to degree ℓ in d dimensions: the number of
/// monomials of degree ≤ ℓ in d variables, C(d + ℓ, ℓ).
pub fn taylor_dimension(d: usize, degree: usize) -> u64 {
    // C(d + i, i) = C(d + i − 1, i − 1) · (d + i) / i, exact at each step.
    (1..=degree as u64).fold(1, |c, i| c * (d as u64 + i) / i)
}
// ANCHOR_END: taylor_dimension

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::m3::attention::softmax_attention;
    use approx::assert_relative_eq;
    use ndarray::array;

    /// "The last bits of a double": 64 units in the last place of 1.
    const LAST_BITS: f64 = 64.0 * f64::EPSILON;

    /// Shapes (N, d, m) from a single token to a few hundred.
    const SHAPES: [(usize, usize, usize); 5] =
        [(1, 1, 1), (2, 3, 4), (12, 8, 8), (50, 16, 5), (200, 64, 32)];

    fn random(seed: u64, n: usize, d: usize, m: usize) -> [Array2<f64>; 3] {
        let mut rng = seeded(seed);
        [
            randn(&mut rng, n, d),
            randn(&mut rng, n, d),
            randn(&mut rng, n, m),
        ]
    }

    #[test]
    fn softmax_is_kernel_attention_with_the_exp_kernel() {
        for seed in 0..10 {
            for (n, d, m) in SHAPES {
                let [q, k, v] = random(seed, n, d, m);
                for mask in [Mask::None, Mask::Causal] {
                    let a = softmax_attention(&q, &k, &v, mask).unwrap();
                    let b = kernel_attention(&q, &k, &v, mask, softmax_kernel)
                        .unwrap();
                    assert_relative_eq!(
                        a.weights,
                        b.weights,
                        max_relative = 1e-10,
                        epsilon = 1e-14
                    );
                    assert_relative_eq!(
                        a.output,
                        b.output,
                        max_relative = 1e-10,
                        epsilon = 1e-12
                    );
                }
            }
        }
    }

    #[test]
    fn kernel_attention_with_any_positive_kernel_averages_the_values() {
        // Four positive kernels: every weight a visible key gets lies in
        // (0, 1], a key the mask hides gets 0, each row sums to one, and
        // each output lies inside the range of the values its query sees.
        type Kernel = fn(&ArrayRef1<f64>, &ArrayRef1<f64>) -> f64;
        let kernels: [Kernel; 4] = [
            softmax_kernel,
            |q, k| (-(q - k).mapv(|x| x * x).sum() / 2.0).exp(),
            |q, k| elu_plus_one(q).dot(&elu_plus_one(k)),
            |_, _| 0.5,
        ];
        for seed in 0..5 {
            for (n, d, m) in SHAPES {
                let [q, k, v] = random(seed, n, d, m);
                for mask in [Mask::None, Mask::Causal] {
                    for sim in kernels {
                        let a =
                            kernel_attention(&q, &k, &v, mask, sim).unwrap();
                        for t in 0..n {
                            let seen =
                                if mask == Mask::Causal { t + 1 } else { n };
                            let row = a.weights.row(t);
                            assert_relative_eq!(
                                row.sum(),
                                1.0,
                                epsilon = 1e-12
                            );
                            for (j, &w) in row.iter().enumerate() {
                                if j < seen {
                                    assert!(w > 0.0 && w <= 1.0, "{w}");
                                } else {
                                    assert_eq!(w, 0.0);
                                }
                            }
                            for c in 0..m {
                                let past = v.slice(ndarray::s![..seen, c]);
                                let lo =
                                    past.fold(f64::INFINITY, |a, &b| a.min(b));
                                let hi = past
                                    .fold(f64::NEG_INFINITY, |a, &b| a.max(b));
                                let o = a.output[[t, c]];
                                assert!(o >= lo - 1e-12 && o <= hi + 1e-12);
                            }
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn kernel_attention_with_a_feature_kernel_is_linear_attention() {
        let phi_kernel = |q: &ArrayRef1<f64>, k: &ArrayRef1<f64>| {
            elu_plus_one(q).dot(&elu_plus_one(k))
        };
        for seed in 0..10 {
            for (n, d, m) in SHAPES {
                let [q, k, v] = random(seed, n, d, m);
                let a = kernel_attention(&q, &k, &v, Mask::None, phi_kernel)
                    .unwrap();
                let (phi_q, phi_k) = (elu_plus_one(&q), elu_plus_one(&k));
                for b in [
                    linear_attention_memory_first(&phi_q, &phi_k, &v),
                    linear_attention_scores_first(&phi_q, &phi_k, &v),
                ] {
                    let b = b.unwrap();
                    assert!(
                        worst_row_relative_difference(&a.output, &b) < 1e-12
                    );
                }
            }
        }
    }

    #[test]
    fn both_groupings_give_the_same_outputs() {
        let lengths = [1, 2, 7, 64, 500, 2000];
        for seed in 0..5 {
            for (i, &n) in lengths.iter().enumerate() {
                let (d, m) = ([4, 8, 16][i % 3], [1, 8, 5][i % 3]);
                let [q, k, v] = random(seed, n, d, m);
                let (phi_q, phi_k) = (elu_plus_one(&q), elu_plus_one(&k));
                let a =
                    linear_attention_scores_first(&phi_q, &phi_k, &v).unwrap();
                let b =
                    linear_attention_memory_first(&phi_q, &phi_k, &v).unwrap();
                assert_relative_eq!(
                    a,
                    b,
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
                assert!(worst_row_relative_difference(&a, &b) < 1e-12);
            }
        }
        // ... and with a query count different from the key count.
        let [q, _, _] = random(9, 30, 8, 8);
        let [_, k, v] = random(10, 70, 8, 3);
        let (phi_q, phi_k) = (elu_plus_one(&q), elu_plus_one(&k));
        let a = linear_attention_scores_first(&phi_q, &phi_k, &v).unwrap();
        let b = linear_attention_memory_first(&phi_q, &phi_k, &v).unwrap();
        assert_eq!(a.dim(), (30, 3));
        assert!(worst_row_relative_difference(&a, &b) < 1e-12);
    }

    #[test]
    fn memory_shape_does_not_depend_on_the_sequence_length() {
        for (p, m) in [(1, 1), (8, 8), (16, 5)] {
            for n in [1, 10, 100, 1000, 4000] {
                let mut rng = seeded(n as u64);
                let phi_k = elu_plus_one(&randn(&mut rng, n, p));
                let v = randn(&mut rng, n, m);
                let Memory { s, z } = sequence_memory(&phi_k, &v);
                assert_eq!(s.dim(), (m, p));
                assert_eq!(z.dim(), p);
            }
        }
    }

    #[test]
    fn memory_is_a_sum_of_outer_products_v_phi_k() {
        // S = Σ_j v_j φ(k_j)ᵀ, entry by entry: S_ab = Σ_j v_ja φ(k_j)_b.
        for seed in 0..5 {
            let mut rng = seeded(seed);
            let phi_k = elu_plus_one(&randn(&mut rng, 9, 4));
            let v = randn(&mut rng, 9, 3);
            let Memory { s, z } = sequence_memory(&phi_k, &v);
            let mut sum = Array2::<f64>::zeros((3, 4));
            for j in 0..9 {
                for a in 0..3 {
                    for b in 0..4 {
                        sum[[a, b]] += v[[j, a]] * phi_k[[j, b]];
                    }
                }
            }
            assert_relative_eq!(s, sum, max_relative = 1e-12);
            assert_relative_eq!(z, phi_k.sum_axis(Axis(0)), max_relative = 0.0);
        }
    }

    #[test]
    fn memory_grows_by_one_outer_product_per_token() {
        // S_t = S_{t−1} + v_t φ(k_t)ᵀ and z_t = z_{t−1} + φ(k_t), from the
        // memory of the empty prefix, S_0 = 0 and z_0 = 0.
        for seed in 0..5 {
            for (n, p, m) in [(1, 1, 1), (9, 4, 3), (40, 8, 5)] {
                let mut rng = seeded(seed);
                let phi_k = elu_plus_one(&randn(&mut rng, n, p));
                let v = randn(&mut rng, n, m);
                let prefix = |t: usize| {
                    let rows = ndarray::s![..t, ..];
                    sequence_memory(&phi_k.slice(rows), &v.slice(rows))
                };
                let empty = prefix(0);
                assert!(empty.s.iter().chain(&empty.z).all(|&x| x == 0.0));
                for t in 0..n {
                    let (before, after) = (prefix(t), prefix(t + 1));
                    let (v_t, k_t) = (v.row(t), phi_k.row(t));
                    let term =
                        Array2::from_shape_fn((m, p), |(a, b)| v_t[a] * k_t[b]);
                    assert_relative_eq!(
                        after.s,
                        before.s + term,
                        max_relative = 1e-12,
                        epsilon = 1e-14
                    );
                    assert_relative_eq!(
                        after.z,
                        before.z + k_t,
                        max_relative = 1e-12
                    );
                }
            }
        }
    }

    #[test]
    fn grouping_study_builds_n_by_n_scores_and_a_fixed_memory() {
        // The chapter's table: the scores-first product grows with N in
        // both directions, S is (m, p) = (8, 8) at every N, and the outputs
        // differ by rounding only.
        let rows = grouping_study(&GROUPING_LENGTHS, GROUPING_SEEDS);
        for r in &rows {
            assert_eq!(r.scores_shape, (r.n, r.n));
            assert_eq!(r.memory_shape, (8, 8));
            assert!(
                r.difference < LAST_BITS,
                "N = {}: {:e}",
                r.n,
                r.difference
            );
        }
        assert_eq!(rows.last().unwrap().n, 2000);
    }

    #[test]
    fn groupings_reject_mismatched_or_empty_input() {
        let [q, k, v] = random(0, 12, 8, 8);
        let narrow = randn(&mut seeded(1), 12, 6);
        for f in [linear_attention_scores_first, linear_attention_memory_first]
        {
            let msg = f(&q, &narrow, &v).err().unwrap().to_string();
            assert!(
                msg.contains("q is [12, 8]") && msg.contains("k is [12, 6]")
            );
            let short = randn(&mut seeded(2), 11, 8);
            let msg = f(&q, &k, &short).err().unwrap().to_string();
            assert!(
                msg.contains("k is [12, 8]") && msg.contains("v is [11, 8]")
            );
            let e = Array2::<f64>::zeros((0, 8));
            assert!(matches!(f(&e, &e, &e), Err(InputError::Empty { .. })));
            for (i, bad) in [f64::NAN, f64::INFINITY, f64::NEG_INFINITY]
                .into_iter()
                .enumerate()
            {
                let mut operands = [q.clone(), k.clone(), v.clone()];
                operands[i][[4, 1]] = bad;
                let [a, b, c] = &operands;
                let err = f(a, b, c);
                assert!(matches!(err, Err(InputError::NonFinite { .. })));
            }
        }
        let mut bad = q.clone();
        bad[[4, 1]] = f64::NAN;
        let err = kernel_attention(&bad, &k, &v, Mask::None, softmax_kernel);
        assert!(matches!(err, Err(InputError::NonFinite { .. })));
    }

    #[test]
    fn entropy_is_ln_n_for_uniform_and_zero_for_one_hot() {
        for n in [1, 2, 12, 1000] {
            let uniform = Array1::from_elem(n, 1.0 / n as f64);
            assert_relative_eq!(
                entropy(&uniform),
                (n as f64).ln(),
                epsilon = 1e-12
            );
            let mut one_hot = Array1::zeros(n);
            one_hot[n - 1] = 1.0;
            assert_eq!(entropy(&one_hot), 0.0);
            // Any other row of weights has less than ln N.
            for seed in 0..10 {
                let raw = randn(&mut seeded(seed), 1, n).mapv(f64::exp);
                let row = raw.row(0).to_owned() / raw.sum();
                let h = entropy(&row);
                assert!(h >= 0.0 && h <= (n as f64).ln() + 1e-12);
                if n > 1 {
                    assert!(h < (n as f64).ln(), "n = {n}, seed {seed}");
                }
            }
        }
    }

    #[test]
    fn hot_softmax_has_nearly_uniform_weights() {
        // The chapter's table: as τ grows, entropy / ln N climbs towards 1
        // and the top weight falls towards 1/N.
        let (n, d, seeds) = TEMPERATURE_N_D_SEEDS;
        let rows = temperature_study(&TEMPERATURES, n, d, seeds);
        for pair in rows.windows(2) {
            assert!(pair[1].tau_over_sqrt_d > pair[0].tau_over_sqrt_d);
            assert!(pair[1].entropy_ratio > pair[0].entropy_ratio);
            assert!(pair[1].top_weight < pair[0].top_weight);
        }
        let hot = rows.last().unwrap();
        assert!(hot.entropy_ratio > 0.999, "{}", hot.entropy_ratio);
        assert!(hot.top_weight < 1.2 / n as f64, "{}", hot.top_weight);
        // At τ = √d itself, the weights are far from uniform.
        let own = rows.iter().find(|r| r.tau_over_sqrt_d == 1.0).unwrap();
        assert!(own.entropy_ratio < 0.9);
    }

    #[test]
    fn hot_softmax_kernel_matrix_keeps_full_rank() {
        // Nearly uniform weights, yet no fixed-size state reproduces them:
        // the N × N kernel matrix has rank N, far above d + 1, the rank of
        // its large-τ limit 1 + qᵀk/τ.
        // The temperatures of the chapter's table, from sharp to flat.
        let (n, d, seeds) = TEMPERATURE_N_D_SEEDS;
        let rows = temperature_study(&TEMPERATURES, n, d, seeds);
        for r in &rows {
            assert_eq!(r.kernel_rank, n, "tau = {}√d", r.tau_over_sqrt_d);
        }
        assert!(rows.last().unwrap().entropy_ratio > 0.999);
    }

    #[test]
    fn numerical_rank_finds_the_rank_of_known_matrices() {
        assert_eq!(numerical_rank(&Array2::<f64>::eye(7), RANK_TOL), 7);
        assert_eq!(numerical_rank(&Array2::<f64>::zeros((5, 3)), RANK_TOL), 0);
        for seed in 0..10 {
            for (rows, cols, r) in [(6, 6, 1), (20, 30, 7), (50, 40, 25)] {
                // A product of (rows, r) and (r, cols) has rank r.
                let mut rng = seeded(seed);
                let a = randn(&mut rng, rows, r).dot(&randn(&mut rng, r, cols));
                assert_eq!(numerical_rank(&a, RANK_TOL), r, "seed {seed}");
                assert_eq!(numerical_rank(&a.t(), RANK_TOL), r);
            }
        }
        // A repeated row adds nothing; scale does not matter.
        let a = array![[1.0, 2.0, 3.0], [2.0, 4.0, 6.0], [0.0, 1.0, 1.0]];
        assert_eq!(numerical_rank(&a, RANK_TOL), 2);
        assert_eq!(numerical_rank(&(&a * 1e-200), RANK_TOL), 2);
        assert_eq!(numerical_rank(&(&a * 1e200), RANK_TOL), 2);
        // A tiny but genuine direction counts only above the tolerance.
        let b = array![[1.0, 0.0], [0.0, 1e-12]];
        assert_eq!(numerical_rank(&b, 1e-10), 1);
        assert_eq!(numerical_rank(&b, 1e-14), 2);
    }

    #[test]
    fn exp_kernel_rank_grows_with_n_while_feature_kernels_stop_at_p() {
        let lengths = [4, 8, 16, 32, 64, 128, 256];
        let d = 4;
        for seed in 0..3 {
            let study = rank_study(&lengths, d, 16.0, seed);
            for pair in study.rows.windows(2) {
                assert!(pair[1].softmax > pair[0].softmax, "seed {seed}");
                assert!(pair[1].softmax_hot > pair[0].softmax_hot);
            }
            let p2 = taylor_dimension(d, 2) as usize;
            for r in &study.rows {
                assert_eq!(r.elu, r.n.min(d), "seed {seed}, N = {}", r.n);
                assert_eq!(r.taylor2, r.n.min(p2), "seed {seed}, N = {}", r.n);
                if r.n > p2 {
                    assert!(r.softmax_hot > p2, "seed {seed}, N = {}", r.n);
                }
            }
        }
    }

    #[test]
    fn hot_exp_kernel_loses_rank_to_the_tolerance_only_at_the_largest_n() {
        // The chapter's figure: the exp kernel at τ = √d stays within 5% of
        // rank N at every N; the hot one has rank N at small N, falls more
        // than 5% below N at the largest, and stays far above the degree-2
        // Taylor map's p.
        let d = 4;
        let p2 = taylor_dimension(d, 2) as usize;
        for seed in 0..3 {
            let study =
                rank_study(&crate::studies::RANK_LENGTHS, d, 16.0, seed);
            for r in &study.rows {
                // Within 5% of the diagonal at every N.
                assert!(20 * r.softmax >= 19 * r.n, "seed {seed}, N = {}", r.n);
            }
            let (first, last) = (&study.rows[0], study.rows.last().unwrap());
            assert_eq!(first.softmax_hot, first.n, "seed {seed}");
            assert!(20 * last.softmax_hot < 19 * last.n, "seed {seed}");
            assert!(last.softmax_hot > 4 * p2, "seed {seed}");
        }
    }

    #[test]
    fn hot_exp_kernel_tends_to_a_kernel_of_d_plus_one_features() {
        // exp(s/τ) ≈ 1 + s/τ for large τ, and 1 + xᵀy/τ is the kernel of
        // the d + 1 features (1, x/√τ): its Gram matrix has rank d + 1.
        // The exp kernel's own matrix keeps rank N at every τ here, but its
        // smallest directions shrink as τ grows: counted above a tolerance
        // looser than the book's, its rank falls.
        let d = 4;
        for seed in 0..3 {
            let x = randn(&mut seeded(seed), 40, d);
            let at = |tau_over_sqrt_d: f64, tol: f64| {
                let tau = tau_over_sqrt_d * (d as f64).sqrt();
                let g = gram_matrix(&x, |a, b| (a.dot(b) / tau).exp());
                numerical_rank(&g, tol)
            };
            let mut loose = usize::MAX;
            for ratio in [1.0, 4.0, 16.0, 64.0] {
                let tau = ratio * (d as f64).sqrt();
                let limit = gram_matrix(&x, |a, b| 1.0 + a.dot(b) / tau);
                assert_eq!(numerical_rank(&limit, RANK_TOL), d + 1);
                assert_eq!(at(ratio, 1e-13), 40, "seed {seed}, τ = {ratio}√d");
                let now = at(ratio, 1e-6);
                assert!(now <= loose, "seed {seed}, τ = {ratio}√d");
                loose = now;
            }
            assert!(loose < at(1.0, 1e-6), "seed {seed}");
        }
    }

    #[test]
    fn any_feature_kernel_has_gram_rank_at_most_p() {
        for seed in 0..5 {
            for (n, p) in [(10, 3), (40, 12), (100, 20)] {
                // Any φ at all: here, random positive features.
                let phi = randn(&mut seeded(seed), n, p).mapv(f64::exp);
                let rank = numerical_rank(&phi.dot(&phi.t()), RANK_TOL);
                assert!(rank <= p, "seed {seed}");
                assert_eq!(rank, p.min(n), "seed {seed}");
            }
        }
    }

    #[test]
    fn taylor_features_reproduce_the_truncated_series() {
        for seed in 0..5 {
            // Every degree from 0 to the largest, so that the features of
            // each degree alone give that power: (qᵀk)^i / i!.
            for (d, n) in (0..=6)
                .map(|n| (1, n))
                .chain((0..=4).map(|n| (2, n)))
                .chain((0..=3).map(|n| (3, n)))
                .chain((0..=2).map(|n| (5, n)))
                .chain([(8, 0), (8, 1)])
            {
                let mut rng = seeded(seed);
                let q = randn(&mut rng, 6, d) * 0.7;
                let k = randn(&mut rng, 6, d) * 0.7;
                let approx =
                    taylor_features(&q, n).dot(&taylor_features(&k, n).t());
                let series = q.dot(&k.t()).mapv(|s| {
                    (0..=n as i32)
                        .map(|i| s.powi(i) / factorial(i as u32))
                        .sum::<f64>()
                });
                assert_relative_eq!(
                    approx,
                    series,
                    max_relative = 1e-12,
                    epsilon = 1e-12
                );
            }
        }
    }

    #[test]
    fn taylor_dimension_is_d_plus_degree_choose_degree() {
        for d in 1..6 {
            for l in 0..5 {
                let x = Array2::<f64>::ones((1, d));
                let p = taylor_features(&x, l).ncols() as u64;
                assert_eq!(taylor_dimension(d, l), p, "d = {d}, degree {l}");
            }
        }
        assert_eq!(taylor_dimension(64, 0), 1);
        assert_eq!(taylor_dimension(64, 1), 65);
        assert_eq!(taylor_dimension(64, 2), 65 * 66 / 2);
        assert_eq!(taylor_dimension(4, 4), 70);
    }

    #[test]
    fn taylor_error_falls_with_degree_while_dimension_grows() {
        for seed in 0..3 {
            let study = taylor_study(0..=12, 4, 64, 24, seed);
            for pair in study.rows.windows(2) {
                let (lo, hi) = (&pair[0], &pair[1]);
                assert!(hi.median_error < lo.median_error, "seed {seed}");
                assert!(hi.dimension > lo.dimension);
                assert!(hi.wide_dimension > lo.wide_dimension);
            }
            let (first, last) = (&study.rows[0], study.rows.last().unwrap());
            assert!(last.median_error < 1e-10 * first.median_error);
            assert!(last.max_error < first.max_error, "seed {seed}");
            // For keys of width 64, p is in the millions by degree five,
            // and passes a trillion by the last degree.
            assert_eq!(study.rows[5].degree, 5);
            assert!(study.rows[5].wide_dimension > 1_000_000);
            assert!(last.wide_dimension > 1_000_000_000_000);
        }
    }

    #[test]
    fn taylor_worst_pair_lags_far_behind_the_median() {
        // Past the constant term: the worst pair lags the median by orders
        // of magnitude, and it is the pair with the lowest score. The pair
        // with the highest score falls further behind the median with every
        // degree, by many orders of magnitude at the last.
        for seed in 0..3 {
            let study = taylor_study(1..=12, 4, 64, 24, seed);
            let lag = |r: &TaylorRow| r.top_score_error / r.median_error;
            for r in &study.rows {
                assert!(r.max_error > 100.0 * r.median_error, "seed {seed}");
                assert_eq!(r.max_error, r.bottom_score_error, "seed {seed}");
                assert!(r.max_error > r.top_score_error, "seed {seed}");
                assert!(lag(r) > 1.0, "seed {seed}");
            }
            for pair in study.rows.windows(2) {
                assert!(lag(&pair[1]) > lag(&pair[0]), "seed {seed}");
            }
            assert!(lag(study.rows.last().unwrap()) > 1e6, "seed {seed}");
        }
    }

    #[test]
    fn taylor_error_grows_with_the_size_of_the_score() {
        // q = s e_1 and k = e_1 give qᵀk = s; for a fixed degree, the
        // relative error grows with |s| on either side of zero.
        let e1 = array![[1.0, 0.0, 0.0]];
        for n in 0..=12 {
            for sign in [1.0, -1.0] {
                let errors: Vec<f64> = (1..=30)
                    .map(|i| {
                        let s = sign * 0.2 * i as f64;
                        let q = &e1 * s;
                        let approx = taylor_features(&q, n)
                            .dot(&taylor_features(&e1, n).t())[[0, 0]];
                        (approx - s.exp()).abs() / s.exp()
                    })
                    .collect();
                for pair in errors.windows(2) {
                    assert!(pair[1] > pair[0], "degree {n}, sign {sign}");
                }
            }
        }
    }
}
