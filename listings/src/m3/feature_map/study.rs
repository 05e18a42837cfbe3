//! The studies "The feature map φ" prints and draws: what each candidate
//! map does to the normaliser, the aimed query read by softmax and by
//! linear attention over many seeds, and the capacity sweep of every map;
//! their parameters, and one function per output.

use super::normaliser::{CANDIDATES, causal_denominators};
use super::recall::{Map, best_memory, read_back, recall_probe};
use crate::linalg::relative_errors;
use crate::m3::fast_weight_memory::fast_weight_loop;
use crate::memo::once;
use crate::phi::{FeatureMap, elu_plus_one};
use crate::random::{randn, seeded};
use crate::summary::Spread;
use crate::table::Table;
use ndarray::{Array2, Axis};
use std::fmt;

/// The chapter's normaliser table: N, d = p = m, and seeds.
pub const NORMALISER_N_D_SEEDS: (usize, usize, u64) = (200, 8, 10);

/// Key widths, tokens, the aimed key, the query's gain and the seeds of
/// the recall study.
pub const RECALL_WIDTHS: [usize; 2] = [16, 64];
pub const RECALL_N: usize = 40;
pub const RECALL_TARGET: usize = 5;
pub const RECALL_GAIN: f64 = 4.0;
pub const RECALL_SEEDS: u64 = 100;

/// The numbers of associations of the chapter's sweep: powers of two and
/// the points between them, so that every p of the swept maps is one.
pub const SWEEP_COUNTS: [usize; 14] =
    [2, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256];

/// Widths of keys and values, the sum rule's query gain and the seeds of
/// the capacity sweep.
pub const SWEEP_D: usize = 8;
pub const SWEEP_M: usize = 8;
pub const SWEEP_GAIN: f64 = 4.0;
pub const SWEEP_SEEDS: u64 = 10;

/// Output `feature-map-normaliser`.
pub fn feature_map_normaliser() -> String {
    let (n, d, seeds) = NORMALISER_N_D_SEEDS;
    normaliser_study(n, d, seeds).to_string()
}

/// Output `feature-map-recall`.
pub fn feature_map_recall() -> String {
    recall_study(
        &RECALL_WIDTHS,
        RECALL_N,
        RECALL_TARGET,
        RECALL_GAIN,
        RECALL_SEEDS,
    )
    .to_string()
}

/// What one feature map does to the normaliser over many random sequences.
pub struct NormaliserRow {
    pub name: &'static str,
    /// Denominators below zero, exactly zero, and in all.
    pub negative: usize,
    pub zero: usize,
    pub reads: usize,
    /// Outputs (rows) with an entry that is NaN or infinite.
    pub non_finite: usize,
    /// Finite outputs with an entry outside the range of that entry over
    /// the values seen so far: not a weighted average.
    pub outside: usize,
    /// Largest |entry| of a finite output over the largest |entry| of v.
    pub largest_ratio: f64,
}

/// Run every candidate map over random q, k: (n, d) and v: (n, d), seeds
/// 0..seeds, and read causally without a guard: S_t φ(q_t) from the
/// fast-weight loop over z_tᵀφ(q_t), the division the recurrent form makes
/// (bit for bit) but refuses when the denominator is not above zero.
pub fn normaliser_study(n: usize, d: usize, seeds: u64) -> NormaliserStudy {
    let rows = CANDIDATES
        .iter()
        .map(|c| {
            let mut row = NormaliserRow {
                name: c.name,
                negative: 0,
                zero: 0,
                reads: 0,
                non_finite: 0,
                outside: 0,
                largest_ratio: 0.0,
            };
            for seed in 0..seeds {
                let mut rng = seeded(seed);
                let q = randn(&mut rng, n, d);
                let k = randn(&mut rng, n, d);
                let v = randn(&mut rng, n, d);
                let (phi_q, phi_k) = ((c.phi)(&q), (c.phi)(&k));
                let den = causal_denominators(&phi_q, &phi_k)
                    .expect("q and k have one shape");
                row.negative += den.iter().filter(|&&x| x < 0.0).count();
                row.zero += den.iter().filter(|&&x| x == 0.0).count();
                row.reads += den.len();
                let numerator = fast_weight_loop(&phi_q, &phi_k, &v)
                    .expect("q, k and v have one shape");
                let o = numerator / den.insert_axis(Axis(1));
                tally_outputs(&o, &v, &mut row);
            }
            row
        })
        .collect();
    NormaliserStudy { n, d, seeds, rows }
}

fn tally_outputs(o: &Array2<f64>, v: &Array2<f64>, row: &mut NormaliserRow) {
    let v_max = v.fold(0.0_f64, |a, &x| a.max(x.abs()));
    for t in 0..o.nrows() {
        let out = o.row(t);
        if out.iter().any(|x| !x.is_finite()) {
            row.non_finite += 1;
            continue;
        }
        let past = v.slice(ndarray::s![..=t, ..]);
        let outside = (0..o.ncols()).any(|c| {
            let column = past.column(c);
            let lo = column.fold(f64::INFINITY, |a, &b| a.min(b));
            let hi = column.fold(f64::NEG_INFINITY, |a, &b| a.max(b));
            let slack = 1e-12 * (hi - lo).max(1.0);
            out[c] < lo - slack || out[c] > hi + slack
        });
        row.outside += usize::from(outside);
        let o_max = out.fold(0.0_f64, |a, &x| a.max(x.abs()));
        row.largest_ratio = row.largest_ratio.max(o_max / v_max);
    }
}

/// The normaliser study as the chapter prints it.
pub struct NormaliserStudy {
    pub n: usize,
    pub d: usize,
    pub seeds: u64,
    pub rows: Vec<NormaliserRow>,
}

impl fmt::Display for NormaliserStudy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "random q, k, v with N = {} tokens, d = p = m = {}, seeds 0..{}",
            self.n, self.d, self.seeds
        )?;
        let reads = self.rows.first().map_or(0, |r| r.reads);
        writeln!(f, "{reads} causal reads per map")?;
        let mut table = Table::new()
            .right("phi", 9)
            .right("denom. < 0", 11)
            .right("denom. 0", 9)
            .right("non-finite reads", 16)
            .right("reads not averages", 18)
            .right("max |o| / max |v|", 17);
        for r in &self.rows {
            table.row([
                r.name.to_string(),
                r.negative.to_string(),
                r.zero.to_string(),
                r.non_finite.to_string(),
                r.outside.to_string(),
                format!("{:.1}", r.largest_ratio),
            ]);
        }
        write!(f, "{table}")
    }
}

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
                    let phi_k = map.features(&k).expect("finite keys");
                    if let Some(phi_k) = phi_k {
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

once! {
    /// "The feature map φ": the capacity sweep of every map.
    chapter_sweep: CapacitySweep = capacity_sweep(
        &SWEEP_COUNTS,
        SWEEP_D,
        SWEEP_M,
        SWEEP_GAIN,
        SWEEP_SEEDS,
    );
}

/// Output `feature-map-capacity`: the study of [`chapter_sweep`], run once per process.
pub fn feature_map_capacity() -> String {
    chapter_sweep().to_string()
}
