//! The studies of "Capacity by feature map and update rule": the sweep
//! over every map, n and seed (Setting 1) and the sweep with repeated keys
//! (Setting 2); their parameters, their printed tables, and one function
//! per output the chapter shows.

use super::{D, M, PASSES, setting2_point, sweep_point};
use crate::memo::once;
use crate::phi::FeatureMap;
use crate::table::Table;
use std::fmt;

/// Numbers of associations n in the sweep.
pub const NS: [usize; 15] =
    [1, 2, 4, 6, 8, 12, 16, 20, 24, 32, 40, 48, 56, 64, 80];
/// Why a point of the studies cannot fail: each n is at least 1.
const AT_LEAST_ONE: &str = "every n of the studies is at least 1";
/// Seeds per point.
pub const SEEDS: u64 = 3;
/// An association is held when the RMS recall error is at most this.
pub const THRESHOLD: f64 = 0.1;

/// The maps of the sweep, in the order of the paper's Setting 1.
pub const MAPS: [FeatureMap; 6] = [
    FeatureMap::EluPlusOne,
    FeatureMap::Dpfp(1),
    FeatureMap::Dpfp(2),
    FeatureMap::Dpfp(3),
    FeatureMap::Favor(4),
    FeatureMap::Favor(16),
];

/// The sweep's curves for one feature map: one entry per n in [`NS`],
/// averaged over seeds 0..[`SEEDS`].
#[derive(Clone)]
pub struct MapCurves {
    pub map: FeatureMap,
    pub p: usize,
    pub rank: Vec<f64>,
    pub sum: Vec<f64>,
    pub delta_once: Vec<f64>,
    pub delta_replayed: Vec<f64>,
}

/// Run the whole sweep: every map, every n, every seed. The book runs it
/// once per build, through [`chapter_curves`].
pub fn capacity_sweep() -> Vec<MapCurves> {
    MAPS.iter()
        .map(|&map| {
            let mut c = MapCurves {
                map,
                p: map.width(D),
                rank: vec![],
                sum: vec![],
                delta_once: vec![],
                delta_replayed: vec![],
            };
            for &n in &NS {
                let mut total = [0.0; 4];
                for seed in 0..SEEDS {
                    let point = sweep_point(map, n, seed).expect(AT_LEAST_ONE);
                    total.iter_mut().zip(point).for_each(|(t, x)| *t += x);
                }
                let mean = total.map(|t| t / SEEDS as f64);
                c.rank.push(mean[0]);
                c.sum.push(mean[1]);
                c.delta_once.push(mean[2]);
                c.delta_replayed.push(mean[3]);
            }
            c
        })
        .collect()
}

/// The largest n of [`NS`] up to which every error is at most
/// [`THRESHOLD`] (0 if even one association is not held).
pub fn held(errors: &[f64]) -> usize {
    NS.iter()
        .zip(errors)
        .take_while(|&(_, &e)| e <= THRESHOLD)
        .last()
        .map_or(0, |(&n, _)| n)
}

/// The largest n of [`NS`] up to which the mapped keys have full rank n.
pub fn rank_capacity(rank: &[f64]) -> usize {
    NS.iter()
        .zip(rank)
        .take_while(|&(&n, &r)| r == n as f64)
        .last()
        .map_or(0, |(&n, _)| n)
}

/// The sweep as the chapter prints it: per map, the exact capacity and the
/// associations each rule holds below the threshold.
pub struct CapacityTable(pub Vec<MapCurves>);

impl fmt::Display for CapacityTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "keys N(0, I) in d = {D}, unit values in m = {M}, \
             seeds 0..{SEEDS}; \
             n in {:?}",
            NS
        )?;
        writeln!(
            f,
            "held = largest n with RMS recall error <= {THRESHOLD} up to it"
        )?;
        let mut table = Table::new()
            .left("feature map", 13)
            .gap(" ")
            .right("p", 4)
            .right("full rank to", 12)
            .right("sum held", 9)
            .right("delta held", 11)
            .right(&format!("delta x{PASSES} held"), 16);
        for c in &self.0 {
            table.row([
                (c.map.name()).to_string(),
                c.p.to_string(),
                (rank_capacity(&c.rank)).to_string(),
                (held(&c.sum)).to_string(),
                (held(&c.delta_once)).to_string(),
                (held(&c.delta_replayed)).to_string(),
            ]);
        }
        write!(f, "{table}")
    }
}

/// Setting 2 for every map at each n in `ns`: (map, n, sum, delta), each
/// error averaged over seeds 0..[`SEEDS`].
pub fn setting2_study(ns: &[usize]) -> Vec<(FeatureMap, usize, f64, f64)> {
    let mut rows = vec![];
    for map in MAPS {
        for &n in ns {
            let mut total = [0.0; 2];
            for seed in 0..SEEDS {
                let [s, d] = setting2_point(map, n, seed).expect(AT_LEAST_ONE);
                total[0] += s;
                total[1] += d;
            }
            let k = SEEDS as f64;
            rows.push((map, n, total[0] / k, total[1] / k));
        }
    }
    rows
}

/// Setting 2 as the chapter prints it.
pub struct Setting2Table(pub Vec<(FeatureMap, usize, f64, f64)>);

impl fmt::Display for Setting2Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "2n writes, keys drawn with replacement from n; read every key \
             written; RMS error against its last value, seeds 0..{SEEDS}"
        )?;
        let mut table = Table::new()
            .left("feature map", 13)
            .gap(" ")
            .right("p", 4)
            .right("n", 4)
            .right("sum rule", 10)
            .right("delta rule", 12);
        for (map, n, sum, delta) in &self.0 {
            table.row([
                map.name().to_string(),
                map.width(D).to_string(),
                n.to_string(),
                format!("{:.3}", sum),
                format!("{:.3}", delta),
            ]);
        }
        write!(f, "{table}")
    }
}

/// The n of the Setting 2 table.
pub const SETTING2_NS: [usize; 3] = [4, 8, 16];

/// Output `capacity-sweep`: the sweep of [`chapter_curves`], which the figure shows
/// too.
pub fn capacity_table() -> String {
    CapacityTable(crate::paper::capacity_sweep::study::chapter_curves().clone())
        .to_string()
}

/// Output `capacity-setting2`.
pub fn setting2_table() -> String {
    Setting2Table(setting2_study(&SETTING2_NS)).to_string()
}

once! {
    /// "Capacity by feature map and update rule": every map, n and seed.
    chapter_curves: Vec<MapCurves> = capacity_sweep();
}
