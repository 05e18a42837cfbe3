//! Chapter "The feature map φ": what a fixed-size memory can hold. A query
//! aimed at one stored key, read by softmax attention and by linear
//! attention; then many associations stored at once, read back by the sum
//! rule of linear attention and by the best memory of the same size.
//!
//! Shapes: keys k: (n, d), values v: (n, m); feature-mapped keys
//! φ(K): (n, p); the memory S: (m, p).

use crate::input::{InputError, check_qkv, normaliser};
use crate::linalg::norm;
use crate::linalg::relative_errors;
use crate::m3::attention::{Mask, softmax_attention};
use crate::m3::delete_softmax::linear_attention_memory_first;
use crate::m3::fast_weight_memory::causal_linear_attention;
use crate::phi::{FeatureMap, elu_plus_one};
use crate::random::{randn, seeded};
use crate::summary::Spread;
use crate::table::Table;
use ndarray::{Array2, ArrayRef2};
use std::fmt;

// ANCHOR: recall_probe
/// How far each layer reads from v_target. Relative error of the read.
pub struct Recall {
    pub softmax: f64,
    pub linear: f64,
}

/// Aim the last query of a causal sequence at one earlier key,
/// q_N = gain · k_target, and compare what causal softmax attention and
/// causal linear attention with the feature map `phi` read there with
/// v_target. k: (N, d), v: (N, m). Only the last query is read.
pub fn recall_probe(
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    target: usize,
    gain: f64,
    phi: impl Fn(&ArrayRef2<f64>) -> Array2<f64>,
) -> Result<Recall, InputError> {
    check_qkv(k, k, v, true)?;
    let n = k.nrows();
    if target >= n {
        let (name, index, len) = ("target", target, n);
        return Err(InputError::OutOfRange { name, index, len });
    }
    let mut q = Array2::zeros(k.raw_dim()); // earlier queries: not read
    q.row_mut(n - 1).assign(&(&k.row(target) * gain));
    let softmax = softmax_attention(&q, k, v, Mask::Causal)?.output;
    let linear = causal_linear_attention(&q, k, v, phi)?;
    let size = normaliser("‖v_target‖", target, norm(&v.row(target)))?;
    let error =
        |o: &Array2<f64>| norm(&(&o.row(n - 1) - &v.row(target))) / size;
    Ok(Recall {
        softmax: error(&softmax),
        linear: error(&linear),
    })
}
// ANCHOR_END: recall_probe

/// One key width of the recall study.
pub struct RecallRow {
    pub d: usize,
    pub softmax: Spread,
    pub linear: Spread,
    /// Seeds on which softmax lands closer to v_target than linear does.
    pub softmax_closer: usize,
}

/// The recall probe over many seeds: N tokens with random keys and values
/// of width d (values as wide as keys), the last query aimed at key
/// `target` with `gain`, φ = elu+1.
pub struct RecallStudy {
    pub n: usize,
    pub target: usize,
    pub gain: f64,
    pub seeds: u64,
    pub rows: Vec<RecallRow>,
}

/// Run the recall probe for each key width in `widths`, seeds 0..seeds.
pub fn recall_study(
    widths: &[usize],
    n: usize,
    target: usize,
    gain: f64,
    seeds: u64,
) -> RecallStudy {
    let rows = widths
        .iter()
        .map(|&d| {
            let (mut soft, mut lin) = (Vec::new(), Vec::new());
            for seed in 0..seeds {
                let mut rng = seeded(seed);
                let k = randn(&mut rng, n, d);
                let v = randn(&mut rng, n, d);
                let r = recall_probe(&k, &v, target, gain, elu_plus_one)
                    .expect("target lies inside the sequence");
                soft.push(r.softmax);
                lin.push(r.linear);
            }
            let closer = soft.iter().zip(&lin).filter(|(s, l)| s < l).count();
            RecallRow {
                d,
                softmax: Spread::of(&soft),
                linear: Spread::of(&lin),
                softmax_closer: closer,
            }
        })
        .collect();
    RecallStudy {
        n,
        target,
        gain,
        seeds,
        rows,
    }
}

impl fmt::Display for RecallStudy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "N = {} tokens, last query = {} * k_{}, phi = elu+1, seeds 0..{}",
            self.n, self.gain, self.target, self.seeds
        )?;
        write!(f, "relative error |o_N - v_{0}| / |v_{0}|", self.target)?;
        for r in &self.rows {
            write!(f, "\nd = m = {}", r.d)?;
            write!(f, "\n  softmax attention:  {:.3}", r.softmax)?;
            write!(f, "\n  linear attention:   {:.3}", r.linear)?;
            write!(
                f,
                "\n  softmax closer on {} of {} seeds",
                r.softmax_closer, self.seeds
            )?;
        }
        Ok(())
    }
}

// ANCHOR: Map
/// How a layer compares a query with the stored keys.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Map {
    /// exp(qᵀk / √d): softmax attention, which keeps every key.
    Softmax,
    /// φ(q)ᵀφ(k) with a deterministic feature map: elu+1 (p = d) or
    /// DPFP-ν (p = 2νd).
    Phi(FeatureMap),
}

impl Map {
    /// φ of every row of x: (n, d) → (n, p). None for softmax, which has
    /// no finite feature map.
    pub fn features(self, x: &ArrayRef2<f64>) -> Option<Array2<f64>> {
        let no_omega = Array2::zeros((x.ncols(), 0)); // only FAVOR+ draws Ω
        match self {
            Map::Softmax => None,
            Map::Phi(phi) => Some(phi.apply(x, &no_omega)),
        }
    }
}
// ANCHOR_END: Map

impl Map {
    /// The width p of φ(x) for keys of width d; None for softmax.
    pub fn p(self, d: usize) -> Option<usize> {
        match self {
            Map::Softmax => None,
            Map::Phi(phi) => Some(phi.width(d)),
        }
    }

    /// A short name for tables and legends.
    pub fn name(self) -> String {
        match self {
            Map::Softmax => "softmax".to_string(),
            Map::Phi(phi) => phi.name(),
        }
    }
}

// ANCHOR: read_back
/// Store n associations k_j → v_j, then query every stored key,
/// q_j = gain · k_j; every query sees all n keys. Softmax reads with its
/// weights; a feature map reads the memory S = Vᵀ Φ_K, z = Φ_Kᵀ 1 that the
/// sum rule writes. k: (n, d), v: (n, m); returns the reads O: (n, m).
pub fn read_back(
    map: Map,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    gain: f64,
) -> Result<Array2<f64>, InputError> {
    check_qkv(k, k, v, false)?;
    let q = k * gain;
    match (map.features(&q), map.features(k)) {
        (Some(phi_q), Some(phi_k)) => {
            linear_attention_memory_first(&phi_q, &phi_k, v)
        }
        _ => Ok(softmax_attention(&q, k, v, Mask::None)?.output),
    }
}
// ANCHOR_END: read_back

// ANCHOR: best_memory
/// The best memory of size m × p for these associations: the S that
/// minimises Σ_j ‖S φ(k_j) − v_j‖², whatever rule wrote it. With n ≤ p
/// and independent φ(k_j), S = Vᵀ (Φ_K Φ_Kᵀ)⁻¹ Φ_K reads every value back
/// exactly; with n > p, S = Vᵀ Φ_K (Φ_Kᵀ Φ_K)⁻¹ is the least-squares fit.
/// phi_k: (n, p), v: (n, m); returns S: (m, p).
pub fn best_memory(phi_k: &ArrayRef2<f64>, v: &ArrayRef2<f64>) -> Array2<f64> {
    let (n, p) = phi_k.dim();
    if n <= p {
        let gram = phi_k.dot(&phi_k.t()); // (n, n)
        let coefficients = solve_spd(&gram, &v.to_owned()); // (n, m)
        coefficients.t().dot(phi_k)
    } else {
        let gram = phi_k.t().dot(phi_k); // (p, p)
        let right = phi_k.t().dot(v); // (p, m)
        solve_spd(&gram, &right).t().to_owned()
    }
}
// ANCHOR_END: best_memory

/// Solve A X = B for a symmetric positive definite A: (r, r), B: (r, c),
/// by the Cholesky factorisation A = L Lᵀ. If A is singular to working
/// precision (a pivot below 1e-12 of the mean diagonal), solve
/// (A + λI) X = B with λ that size instead: a least-squares fit whose
/// features are dependent is then settled with the smallest coefficients.
pub fn solve_spd(a: &ArrayRef2<f64>, b: &ArrayRef2<f64>) -> Array2<f64> {
    let floor = 1e-12 * a.diag().sum() / a.nrows() as f64;
    let l = cholesky(a, 0.0, floor)
        .or_else(|| cholesky(a, floor, 0.0))
        .expect("A + λI is positive definite");
    let r = a.nrows();
    let mut x = b.to_owned();
    for mut column in x.columns_mut() {
        for i in 0..r {
            // forward: L y = b
            let dot: f64 = (0..i).map(|t| l[[i, t]] * column[t]).sum();
            column[i] = (column[i] - dot) / l[[i, i]];
        }
        for i in (0..r).rev() {
            // back: Lᵀ x = y
            let dot: f64 = (i + 1..r).map(|t| l[[t, i]] * column[t]).sum();
            column[i] = (column[i] - dot) / l[[i, i]];
        }
    }
    x
}

/// L with A + ridge·I = L Lᵀ, or None if a pivot falls to `floor` or
/// below.
fn cholesky(a: &ArrayRef2<f64>, ridge: f64, floor: f64) -> Option<Array2<f64>> {
    let r = a.nrows();
    let mut l = Array2::<f64>::zeros((r, r));
    for i in 0..r {
        for j in 0..=i {
            let mut sum = a[[i, j]] + if i == j { ridge } else { 0.0 };
            for t in 0..j {
                sum -= l[[i, t]] * l[[j, t]];
            }
            if i == j {
                if sum <= floor {
                    return None;
                }
                l[[i, i]] = sum.sqrt();
            } else {
                l[[i, j]] = sum / l[[j, j]];
            }
        }
    }
    Some(l)
}

/// One number of stored associations in the capacity sweep.
pub struct CapacityRow {
    pub n: usize,
    /// Median error of the sum rule's read (softmax: of its read), for
    /// each map of the sweep.
    pub sum_rule: Vec<f64>,
    /// Median error of the best memory of the same size, for each map
    /// (None for softmax).
    pub best: Vec<Option<f64>>,
}

/// The capacity sweep: n random keys of width d and values of width m,
/// every key queried, errors pooled over keys and seeds.
pub struct CapacitySweep {
    pub d: usize,
    pub m: usize,
    pub gain: f64,
    pub seeds: u64,
    pub maps: Vec<Map>,
    pub rows: Vec<CapacityRow>,
}

/// The maps of the chapter's sweep.
pub const SWEEP_MAPS: [Map; 5] = [
    Map::Softmax,
    Map::Phi(FeatureMap::EluPlusOne),
    Map::Phi(FeatureMap::Dpfp(1)),
    Map::Phi(FeatureMap::Dpfp(2)),
    Map::Phi(FeatureMap::Dpfp(3)),
];

/// Run the capacity sweep over numbers of associations `counts`.
pub fn capacity_sweep(
    counts: &[usize],
    d: usize,
    m: usize,
    gain: f64,
    seeds: u64,
) -> CapacitySweep {
    let maps = SWEEP_MAPS.to_vec();
    let rows = counts
        .iter()
        .map(|&n| {
            let mut sum_rule = vec![Vec::new(); maps.len()];
            let mut best = vec![Vec::new(); maps.len()];
            for seed in 0..seeds {
                let mut rng = seeded(seed);
                let k = randn(&mut rng, n, d);
                let v = randn(&mut rng, n, m);
                for (i, &map) in maps.iter().enumerate() {
                    let o = read_back(map, &k, &v, gain).expect("shapes agree");
                    sum_rule[i].extend(relative_errors(&o, &v));
                    if let Some(phi_k) = map.features(&k) {
                        let s = best_memory(&phi_k, &v);
                        best[i].extend(relative_errors(&phi_k.dot(&s.t()), &v));
                    }
                }
            }
            CapacityRow {
                n,
                sum_rule: sum_rule
                    .iter()
                    .map(|e| Spread::of(e).median)
                    .collect(),
                best: best
                    .iter()
                    .map(|e| (!e.is_empty()).then(|| Spread::of(e).median))
                    .collect(),
            }
        })
        .collect();
    CapacitySweep {
        d,
        m,
        gain,
        seeds,
        maps,
        rows,
    }
}

impl CapacitySweep {
    /// The points (n, median error) of one map: of the sum rule's read, or
    /// of the best memory's.
    pub fn curve(&self, map: Map, best: bool) -> Vec<(f64, f64)> {
        let i = self.maps.iter().position(|&m| m == map).expect("swept");
        self.rows
            .iter()
            .filter_map(|r| {
                let e = if best { r.best[i] } else { Some(r.sum_rule[i]) };
                e.map(|e| (r.n as f64, e))
            })
            .collect()
    }
}

impl CapacitySweep {
    /// The largest swept n at which the best memory of this map still
    /// reads every association back exactly (median error below 1e-6).
    pub fn exact_up_to(&self, map: Map) -> Option<usize> {
        self.curve(map, true)
            .iter()
            .take_while(|&&(_, e)| e < EXACT)
            .last()
            .map(|&(n, _)| n as usize)
    }

    /// The median error of the sum rule's read (softmax: its read) at n.
    pub fn sum_rule_at(&self, map: Map, n: usize) -> Option<f64> {
        let curve = self.curve(map, false);
        curve.iter().find(|p| p.0 as usize == n).map(|p| p.1)
    }
}

/// An error this small is rounding: the read is exact.
pub const EXACT: f64 = 1e-6;

/// The numbers of associations of the chapter's sweep: powers of two and
/// the points between them, so that every p of the swept maps is one.
pub const SWEEP_COUNTS: [usize; 14] =
    [2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256];

impl fmt::Display for CapacitySweep {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "n random keys of width d = {}, values of width m = {}; every key \
             read back,\nthe sum rule with q = {} * key, the best memory with \
             q = key; seeds 0..{}",
            self.d, self.m, self.gain, self.seeds
        )?;
        let last = self.rows.last().map_or(0, |r| r.n);
        writeln!(
            f,
            "{:>8}  {:>4}  {:>20}  {:>26}",
            "", "", "best m x p memory", "median error of the read"
        )?;
        let mut table = Table::new()
            .right("map", 8)
            .right("p", 4)
            .right("exact up to n =", 20)
            .right("n = 4", 8)
            .right("n = p", 8)
            .right(&format!("n = {last}"), 8);
        let cell =
            |e: Option<f64>| e.map_or("-".to_string(), |e| format!("{e:.3}"));
        for &map in &self.maps {
            let p = map.p(self.d);
            table.row([
                map.name(),
                p.map_or("-".to_string(), |p| p.to_string()),
                self.exact_up_to(map)
                    .map_or("-".to_string(), |n| n.to_string()),
                cell(self.sum_rule_at(map, 4)),
                cell(p.and_then(|p| self.sum_rule_at(map, p))),
                cell(self.sum_rule_at(map, last)),
            ]);
        }
        write!(f, "{table}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::m3::delete_softmax::{RANK_TOL, numerical_rank};
    use approx::assert_relative_eq;
    use ndarray::Axis;

    const LINEAR_MAPS: [Map; 4] = [
        Map::Phi(FeatureMap::EluPlusOne),
        Map::Phi(FeatureMap::Dpfp(1)),
        Map::Phi(FeatureMap::Dpfp(2)),
        Map::Phi(FeatureMap::Dpfp(3)),
    ];

    #[test]
    fn softmax_recalls_an_aimed_key_far_better_than_linear_attention() {
        let study = recall_study(&[16, 64], 40, 5, 4.0, 100);
        for r in &study.rows {
            assert!(r.softmax_closer >= 95, "{study}");
            assert!(r.softmax.median < 0.05, "{study}");
            // About as far from it as the value's own length.
            assert!(r.linear.median > 0.9, "{study}");
            assert!(r.linear.median < 1.1, "{study}");
            assert!(r.linear.min > 0.5, "{study}");
        }
    }

    #[test]
    fn wider_keys_sharpen_softmax_but_not_linear_attention() {
        let study = recall_study(&[16, 64], 40, 5, 4.0, 100);
        let (narrow, wide) = (&study.rows[0], &study.rows[1]);
        assert!(wide.softmax.max < 1e-3, "{study}");
        assert!(wide.softmax.max < narrow.softmax.max, "{study}");
        assert!(wide.linear.median > 0.9, "{study}");
        // Wider keys do not help linear attention.
        assert!(wide.linear.median > 0.95 * narrow.linear.median, "{study}");
        assert!(wide.softmax_closer >= narrow.softmax_closer, "{study}");
    }

    #[test]
    fn recall_probe_reads_only_the_last_query() {
        // The probe is the last row of the causal layers of the earlier
        // chapters, with the last query aimed at the target.
        for seed in 0..5 {
            let mut rng = seeded(seed);
            let (k, v) = (randn(&mut rng, 20, 8), randn(&mut rng, 20, 8));
            let r = recall_probe(&k, &v, 3, 4.0, elu_plus_one).unwrap();
            let q = &k.row(3) * 4.0;
            let one = q.insert_axis(Axis(0));
            let soft = softmax_attention(&one, &k, &v, Mask::None).unwrap();
            let lin = linear_attention_memory_first(
                &elu_plus_one(&one),
                &elu_plus_one(&k),
                &v,
            )
            .unwrap();
            let err = |o: &ndarray::ArrayView1<f64>| {
                norm(&(o - &v.row(3))) / norm(&v.row(3))
            };
            assert_relative_eq!(
                r.softmax,
                err(&soft.output.row(0)),
                max_relative = 1e-10
            );
            assert_relative_eq!(
                r.linear,
                err(&lin.row(0)),
                max_relative = 1e-10
            );
        }
        let (k, v) = (randn(&mut seeded(0), 5, 3), randn(&mut seeded(1), 5, 3));
        let msg = recall_probe(&k, &v, 5, 4.0, elu_plus_one)
            .err()
            .unwrap()
            .to_string();
        assert!(msg.contains("target is 5"), "{msg}");
    }

    /// The worst error of the best memory on the first n pairs, and the
    /// numerical rank of their features.
    fn best_fit(
        map: Map,
        k: &Array2<f64>,
        v: &Array2<f64>,
        n: usize,
    ) -> (f64, usize) {
        let rows = ndarray::s![..n, ..];
        let phi_k = map.features(&k.slice(rows)).unwrap();
        let v = v.slice(rows);
        let s = best_memory(&phi_k, &v);
        assert_eq!(s.dim(), (v.ncols(), phi_k.ncols()));
        let worst = relative_errors(&phi_k.dot(&s.t()), &v)
            .into_iter()
            .fold(0.0, f64::max);
        (worst, numerical_rank(&phi_k, RANK_TOL))
    }

    #[test]
    fn best_memory_is_exact_exactly_when_the_features_are_independent() {
        let d = 8;
        for map in LINEAR_MAPS {
            let p = map.p(d).unwrap();
            // Cases met of each kind, n ≤ p: independent features (exact)
            // and dependent ones (not exact).
            let (mut independent, mut dependent) = (0, 0);
            let mut check = |k: &Array2<f64>, v: &Array2<f64>, n: usize| {
                let (worst, rank) = best_fit(map, k, v, n);
                if rank == n {
                    assert!(worst < EXACT, "{map:?}, n = {n}: {worst:e}");
                    independent += 1;
                } else {
                    assert!(worst > 1e-3, "{map:?}, n = {n}: {worst:e}");
                    dependent += 1;
                }
            };
            for seed in 0..10 {
                let mut rng = seeded(seed);
                let mut k = randn(&mut rng, p + 1, d);
                let v = randn(&mut rng, p + 1, 8);
                for n in [1, 2, p / 2, p - 1, p] {
                    check(&k, &v, n); // random keys
                }
                // A repeated key with another value: its features repeat,
                // so those of the first n keys are dependent.
                for n in [2, p / 2, p] {
                    let first = k.row(0).to_owned();
                    k.row_mut(n - 1).assign(&first);
                    check(&k, &v, n);
                }
                // One more pair than p: the rank cannot reach n, and no
                // m × p matrix reads every pair back.
                let k = randn(&mut rng, p + 1, d);
                let (worst, rank) = best_fit(map, &k, &v, p + 1);
                assert!(rank <= p);
                assert!(worst > 0.01, "{map:?}, seed {seed}: {worst}");
            }
            // Both directions ran, for every map.
            assert!(independent >= 10 && dependent >= 30, "{map:?}");
        }
    }

    #[test]
    fn sparse_features_can_leave_the_rank_below_p() {
        // DPFP-1's features are products of neighbouring entries' positive
        // or negative parts; each is zero for most keys, and among p random
        // keys sometimes no key lights one of them up. Then fewer than p
        // associations fit. elu+1, never zero, does not do this.
        let d = 8;
        let deficient = |map: Map| {
            let p = map.p(d).unwrap();
            (0..40)
                .filter(|&seed| {
                    let k = randn(&mut seeded(seed), p, d);
                    let phi = map.features(&k).unwrap();
                    numerical_rank(&phi, RANK_TOL) < p
                })
                .count()
        };
        assert!(deficient(Map::Phi(FeatureMap::Dpfp(1))) > 0);
        assert_eq!(deficient(Map::Phi(FeatureMap::EluPlusOne)), 0);
    }

    #[test]
    fn chapter_sweep_finds_the_edge_of_each_map_at_p() {
        let sweep = crate::studies::chapter_sweep();
        for map in LINEAR_MAPS {
            assert_eq!(sweep.exact_up_to(map), map.p(8), "{map:?}");
        }
        assert_eq!(sweep.exact_up_to(Map::Softmax), None);
    }

    #[test]
    fn solve_spd_solves_a_known_system_and_a_singular_one() {
        let a = ndarray::array![[4.0, 2.0], [2.0, 3.0]];
        let x = ndarray::array![[1.0, -2.0], [0.5, 3.0]];
        let b = a.dot(&x);
        assert_relative_eq!(solve_spd(&a, &b), x, max_relative = 1e-12);
        // A singular A: the ridge picks a finite solution that still fits.
        let a = ndarray::array![[1.0, 1.0], [1.0, 1.0]];
        let b = ndarray::array![[2.0], [2.0]];
        let x = solve_spd(&a, &b);
        assert!(x.iter().all(|x| x.is_finite()));
        assert_relative_eq!(a.dot(&x), b, max_relative = 1e-9);
    }

    #[test]
    fn best_memory_is_the_least_squares_fit() {
        // Beyond p, the residual is orthogonal to every feature column:
        // (Φ_K Sᵀ − V)ᵀ Φ_K = 0, the normal equations.
        for seed in 0..5 {
            let mut rng = seeded(seed);
            let phi_k = elu_plus_one(&randn(&mut rng, 40, 6));
            let v = randn(&mut rng, 40, 3);
            let s = best_memory(&phi_k, &v);
            let residual = phi_k.dot(&s.t()) - &v;
            let normal = residual.t().dot(&phi_k);
            let scale = v.t().dot(&phi_k).fold(0.0_f64, |a, &x| a.max(x.abs()));
            assert!(normal.iter().all(|x| x.abs() < 1e-10 * scale));
        }
    }

    #[test]
    fn the_sum_rule_blurs_its_reads_long_before_p_associations() {
        // Crosstalk: the best memory is exact at n = 4 for every map, and
        // the sum rule's reads are already far from the stored values.
        let sweep = crate::studies::chapter_sweep();
        for map in LINEAR_MAPS {
            let best = sweep.curve(map, true)[1]; // n = 4
            assert_eq!(best.0, 4.0);
            assert!(best.1 < EXACT, "{map:?}");
            let blurred = sweep.sum_rule_at(map, 4).unwrap();
            assert!(blurred > 0.3, "{map:?}: {blurred}");
        }
    }

    #[test]
    fn sum_rule_errors_grow_with_the_number_of_associations() {
        let sweep = crate::studies::chapter_sweep();
        for map in SWEEP_MAPS {
            let curve = sweep.curve(map, false);
            for pair in curve.windows(2) {
                assert!(pair[1].1 > pair[0].1, "{map:?} at n = {}", pair[1].0);
            }
        }
    }

    #[test]
    fn softmax_reads_beat_every_sum_rule_read_and_dpfp_beats_elu_plus_one() {
        let sweep = crate::studies::chapter_sweep();
        for row in &sweep.rows {
            let [soft, elu, dpfp1, dpfp2, dpfp3] = row.sum_rule[..] else {
                panic!("five maps");
            };
            for linear in [elu, dpfp1, dpfp2, dpfp3] {
                assert!(soft < linear, "n = {}", row.n);
            }
            for dpfp in [dpfp1, dpfp2, dpfp3] {
                assert!(dpfp < elu, "n = {}", row.n);
            }
        }
    }

    #[test]
    fn elu_plus_one_features_of_unrelated_keys_point_the_same_way() {
        // Why its sum rule reads back nearly the mean of the values: every
        // feature is positive, so the features of two random keys have a
        // large cosine; DPFP's sparse features overlap far less.
        let cosine = |map: Map, seed: u64| {
            let x = randn(&mut seeded(seed), 2, 8);
            let phi = map.features(&x).unwrap();
            let (a, b) = (phi.row(0), phi.row(1));
            a.dot(&b) / (norm(&a) * norm(&b))
        };
        let median = |map| {
            let c: Vec<f64> = (0..200).map(|s| cosine(map, s)).collect();
            Spread::of(&c).median
        };
        assert!(median(Map::Phi(FeatureMap::EluPlusOne)) > 0.6);
        for nu in 1..=3 {
            assert!(median(Map::Phi(FeatureMap::Dpfp(nu))) < 0.4, "nu = {nu}");
        }
    }

    #[test]
    fn elu_plus_one_reads_are_close_to_the_mean_of_the_values() {
        // The recall study's probe, φ = elu+1: every stored value gets a
        // sizeable weight, at least a tenth of an even share, and the read
        // lands at least four times closer to the mean of all the values
        // than to the aimed one, on every seed.
        for d in [16, 64] {
            let (n, target) = (40, 5);
            let mut worst_ratio = 0.0_f64;
            let mut min_share = f64::INFINITY;
            for seed in 0..100 {
                let mut rng = seeded(seed);
                let k = randn(&mut rng, n, d);
                let v = randn(&mut rng, n, d);
                let q = (&k.row(target) * 4.0).insert_axis(Axis(0));
                let (phi_q, phi_k) = (elu_plus_one(&q), elu_plus_one(&k));
                let sims = phi_k.dot(&phi_q.row(0));
                let w = &sims / sims.sum();
                min_share = min_share
                    .min(w.fold(f64::INFINITY, |a, &b| a.min(b)) * n as f64);
                let o =
                    linear_attention_memory_first(&phi_q, &phi_k, &v).unwrap();
                let mean = v.mean_axis(Axis(0)).unwrap();
                let to_mean = norm(&(&o.row(0) - &mean));
                let to_target = norm(&(&o.row(0) - &v.row(target)));
                worst_ratio = worst_ratio.max(to_mean / to_target);
            }
            assert!(min_share > 0.1, "d = {d}: {min_share}");
            assert!(worst_ratio < 0.25, "d = {d}: {worst_ratio}");
        }
    }
}
