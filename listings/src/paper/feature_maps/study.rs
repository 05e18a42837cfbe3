//! The studies of "Feature maps: elu+1, FAVOR+, DPFP": the spread of
//! FAVOR+'s estimate over draws of Ω, and what each map costs and gives;
//! their parameters, their printed tables, and one function per output
//! the chapter shows.

use super::{SpreadRow, favor_spread};
use crate::input::{InputError, at_least_one};
use crate::memo::once;
use crate::phi::FeatureMap;
use crate::random::{randn, seeded};
use crate::table::Table;
use std::fmt;

/// Width of the keys of the chapter's spread study.
pub const SPREAD_D: usize = 8;
/// Numbers of random features r of the spread study.
pub const SPREAD_RS: [usize; 7] = [1, 2, 4, 8, 16, 32, 64];
/// Draws of Ω per r in the spread study.
pub const SPREAD_DRAWS: usize = 1000;

/// The spread study as the chapter prints it.
pub struct SpreadTable(pub Vec<SpreadRow>);

impl fmt::Display for SpreadTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "FAVOR+ estimate of exp(q.k), |q| = |k| = 1/2, d = {SPREAD_D}, \
             {SPREAD_DRAWS} draws of Omega per r"
        )?;
        writeln!(f, "spreads are standard deviations divided by exp(q.k)")?;
        let mut table = Table::new()
            .right("r", 5)
            .gap(" ")
            .right("p", 5)
            .right("mean / exact", 13)
            .right("spread iid", 12)
            .right("exact iid", 12)
            .right("orthogonal", 12);
        for row in &self.0 {
            table.row([
                row.r.to_string(),
                (2 * row.r).to_string(),
                format!("{:.3}", row.mean_iid),
                format!("{:.3}", row.iid),
                format!("{:.3}", row.exact_iid),
                format!("{:.3}", row.orthogonal),
            ]);
        }
        write!(f, "{table}")
    }
}

/// What one feature map gives, for keys of width d.
#[derive(Debug)]
pub struct MapRow {
    pub map: FeatureMap,
    pub p: usize,
    /// Multiplications (and exponentials) to map one vector.
    pub work: usize,
    /// Smallest feature seen over random inputs.
    pub smallest: f64,
    /// Fraction of features that are exactly zero, over random inputs.
    pub zeros: f64,
    pub deterministic: bool,
}

/// Each map of `maps` on `inputs` random vectors of width d (seed 0); an
/// error if a map does not fit d (DPFP-ν needs ν < 2d), or if d or
/// `inputs` is 0 (no feature to count).
pub fn feature_map_table(
    maps: &[FeatureMap],
    d: usize,
    inputs: usize,
) -> Result<Vec<MapRow>, InputError> {
    let rule = "the table counts the features of at least one input";
    at_least_one("d", d, rule)?;
    at_least_one("inputs", inputs, rule)?;
    let x = randn(&mut seeded(0), inputs, d);
    maps.iter()
        .map(|&map| {
            let omega = map.projection(&mut seeded(1), d);
            let phi = map.apply(&x, &omega)?;
            let work = match map {
                FeatureMap::EluPlusOne => d,
                FeatureMap::Dpfp(nu) => 2 * nu * d,
                FeatureMap::Favor(r) => r * d + 2 * r,
            };
            let again = map.apply(&x, &map.projection(&mut seeded(2), d))?;
            Ok(MapRow {
                map,
                p: phi.ncols(),
                work,
                smallest: phi.fold(f64::INFINITY, |a, &b| a.min(b)),
                zeros: phi.iter().filter(|&&f| f == 0.0).count() as f64
                    / phi.len() as f64,
                deterministic: again == phi,
            })
        })
        .collect()
}

/// The maps of the chapter's table, for keys of width 64 as in the paper.
pub const TABLE_MAPS: [FeatureMap; 6] = [
    FeatureMap::EluPlusOne,
    FeatureMap::Dpfp(1),
    FeatureMap::Dpfp(2),
    FeatureMap::Dpfp(3),
    FeatureMap::Favor(64),
    FeatureMap::Favor(128),
];

/// The feature-map table as the chapter prints it.
pub struct MapTable {
    pub d: usize,
    pub inputs: usize,
    pub rows: Vec<MapRow>,
}

impl fmt::Display for MapTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "keys of width d = {}, {} random N(0, I) inputs",
            self.d, self.inputs
        )?;
        let mut table = Table::new()
            .left("feature map", 13)
            .gap(" ")
            .right("p", 5)
            .right("work per vector", 16)
            .right("smallest feature", 17)
            .right("zero share", 12)
            .right("deterministic", 14);
        for r in &self.rows {
            table.row([
                r.map.name().to_string(),
                r.p.to_string(),
                r.work.to_string(),
                format!("{:.1e}", r.smallest),
                format!("{:.2}", r.zeros),
                if r.deterministic { "yes" } else { "no" }.to_string(),
            ]);
        }
        write!(f, "{table}")
    }
}

/// The key width of the printed feature-map table, as in the paper.
pub const TABLE_D: usize = 64;

/// The number of random inputs of the printed feature-map table.
pub const TABLE_INPUTS: usize = 50;

/// Output `feature-map-table`.
pub fn map_table() -> String {
    let rows = feature_map_table(&TABLE_MAPS, TABLE_D, TABLE_INPUTS)
        .expect("every map of the table fits d = 64");
    MapTable {
        d: TABLE_D,
        inputs: TABLE_INPUTS,
        rows,
    }
    .to_string()
}

/// Output `favor-spread`: the spread study of [`chapter_favor_spread`], which the figure
/// shows too.
pub fn spread_table() -> String {
    SpreadTable(
        crate::paper::feature_maps::study::chapter_favor_spread().clone(),
    )
    .to_string()
}

once! {
    /// "Feature maps: elu+1, FAVOR+, DPFP": the spread of FAVOR+.
    chapter_favor_spread: Vec<SpreadRow> =
        favor_spread(SPREAD_D, &SPREAD_RS, SPREAD_DRAWS)
            .expect("unit-length queries and keys, Ω of width d");
}
