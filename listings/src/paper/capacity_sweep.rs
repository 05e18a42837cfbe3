//! Chapter "Capacity by feature map and update rule": how many random
//! associations a memory holds, for each feature map and for the sum and
//! delta rules, computed directly, with no training.
//!
//! Keys are drawn in ℝ^d (d = [`D`]), mapped by φ to ℝ^p and scaled to unit
//! length; values are random unit vectors in ℝ^m (m = [`M`]). Shapes:
//! keys: (n, d), mapped keys: (n, p), values: (n, m), memory W: (m, p).

use crate::input::{InputError, check_qkv, finite, nonzero_rows};
use crate::linalg::relative_errors;
use crate::m3::attention::unit_rows;
use crate::m3::delete_softmax::{RANK_TOL, numerical_rank};
use crate::paper::capacity::sum_rule_recall;
use crate::paper::delta_rule::delta_rule_step;
use crate::phi::FeatureMap;
use crate::random::{randn, seeded};
use crate::table::Table;
use ndarray::{Array1, Array2, ArrayRef2};
use rand::Rng;
use std::fmt;

/// Width of the keys before the feature map.
pub const D: usize = 8;
/// Width of the values.
pub const M: usize = 8;
/// Numbers of associations n in the sweep.
pub const NS: [usize; 15] =
    [1, 2, 4, 6, 8, 12, 16, 20, 24, 32, 40, 48, 56, 64, 80];
/// Passes of the replayed delta rule over the same associations.
pub const PASSES: usize = 20;
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

// ANCHOR: delta_rule_recall
/// Write every association with the delta rule (β = 1), `passes` times
/// over the same sequence, then read each key back: the relative errors
/// ‖W k_i − v_i‖ / ‖v_i‖. keys: (n, p), unit length; values: (n, m).
pub fn delta_rule_recall(
    keys: &ArrayRef2<f64>,
    values: &ArrayRef2<f64>,
    passes: usize,
) -> Result<Array1<f64>, InputError> {
    check_qkv(keys, keys, values, false)?;
    nonzero_rows("the norm of a row of values", values)?;
    let mut memory = Array2::zeros((values.ncols(), keys.ncols()));
    for _ in 0..passes {
        for (k, v) in keys.rows().into_iter().zip(values.rows()) {
            delta_rule_step(&mut memory, &k, &v, 1.0);
        }
    }
    finite(
        "the errors",
        relative_errors(&keys.dot(&memory.t()), values),
    )
}
// ANCHOR_END: delta_rule_recall

// ANCHOR: sweep_point
/// One point of the sweep: n random keys through φ, then the rank of the
/// mapped keys and the RMS recall error of the sum rule, of one pass of
/// the delta rule and of `PASSES` passes of it.
pub fn sweep_point(map: FeatureMap, n: usize, seed: u64) -> [f64; 4] {
    let mut rng = seeded(seed);
    let keys = randn(&mut rng, n, D); // k_i ~ N(0, I_d)
    let values = unit_rows(&randn(&mut rng, n, M));
    let omega = map.projection(&mut seeded(1000 + seed), D);
    let mapped = map.apply(&keys, &omega); // φ(k_i): (n, p)
    let rank = numerical_rank(&mapped, RANK_TOL) as f64;
    let unit = unit_rows(&mapped); // ‖φ(k_i)‖ = 1
    let sum = sum_rule_recall(&unit, &values).expect("n keys, n values");
    let once = delta_rule_recall(&unit, &values, 1).expect("same shapes");
    let replay = delta_rule_recall(&unit, &values, PASSES).expect("same");
    [rank, rms(&sum), rms(&once), rms(&replay)]
}
// ANCHOR_END: sweep_point

fn rms(errors: &Array1<f64>) -> f64 {
    (errors.mapv(|e| e * e).sum() / errors.len() as f64).sqrt()
}

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
/// once per build, through `studies::capacity_sweep`.
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
                    let point = sweep_point(map, n, seed);
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

// ANCHOR: setting2_point
/// Setting 2 with n keys: 2n writes whose keys are drawn with replacement
/// from n random keys, each with a fresh value; then every key that was
/// written is read, and compared with the value of its last write.
/// Returns the RMS error of the sum rule and of the delta rule (β = 1).
pub fn setting2_point(map: FeatureMap, n: usize, seed: u64) -> [f64; 2] {
    let mut rng = seeded(seed);
    let keys = unit_rows(&map.apply(
        &randn(&mut rng, n, D),
        &map.projection(&mut seeded(1000 + seed), D),
    ));
    let mut sum = Array2::zeros((M, keys.ncols()));
    let mut delta = sum.clone();
    let mut last: Vec<Option<Array1<f64>>> = vec![None; n];
    for _ in 0..2 * n {
        let i = rng.random_range(0..n); // keys repeat
        let v = unit_rows(&randn(&mut rng, 1, M)).row(0).to_owned();
        crate::m3::fast_weight_memory::fast_weight_write(
            &mut sum,
            &v,
            &keys.row(i),
        );
        delta_rule_step(&mut delta, &keys.row(i), &v, 1.0);
        last[i] = Some(v);
    }
    let written: Vec<usize> = (0..n).filter(|&i| last[i].is_some()).collect();
    let error = |w: &Array2<f64>| {
        let sq: f64 = written
            .iter()
            .map(|&i| {
                let target = last[i].as_ref().expect("written");
                let miss = w.dot(&keys.row(i)) - target;
                miss.dot(&miss)
            })
            .sum();
        (sq / written.len() as f64).sqrt()
    };
    [error(&sum), error(&delta)]
}
// ANCHOR_END: setting2_point

/// Setting 2 for every map at each n in `ns`: (map, n, sum, delta), each
/// error averaged over seeds 0..[`SEEDS`].
pub fn setting2_study(ns: &[usize]) -> Vec<(FeatureMap, usize, f64, f64)> {
    let mut rows = vec![];
    for map in MAPS {
        for &n in ns {
            let mut total = [0.0; 2];
            for seed in 0..SEEDS {
                let [s, d] = setting2_point(map, n, seed);
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::orthonormal_keys;

    #[test]
    fn mapped_keys_reach_full_rank_p_and_never_more() {
        for c in crate::studies::capacity_sweep() {
            for (&n, &rank) in NS.iter().zip(&c.rank) {
                assert!(rank <= n.min(c.p) as f64, "{}", c.map.name());
            }
            // With more keys than features, the rank stops at p exactly.
            for (&n, &rank) in NS.iter().zip(&c.rank) {
                if n > c.p {
                    assert_eq!(rank, c.p as f64, "{} n {n}", c.map.name());
                }
            }
            assert!(NS.iter().any(|&n| n > c.p), "{}", c.map.name());
            // Dense maps have full rank min(n, p) at every n.
            if !matches!(c.map, FeatureMap::Dpfp(_)) {
                let full = NS.iter().map(|&n| n.min(c.p) as f64);
                assert!(c.rank.iter().copied().eq(full), "{}", c.map.name());
            }
        }
    }

    #[test]
    fn the_replayed_delta_rule_holds_more_associations_with_wider_dpfp() {
        let curves = crate::studies::capacity_sweep();
        let by = |map| curves.iter().find(|c| c.map == map).unwrap();
        let held_by = |map| held(&by(map).delta_replayed);
        let [elu, d1, d2, d3] = [
            FeatureMap::EluPlusOne,
            FeatureMap::Dpfp(1),
            FeatureMap::Dpfp(2),
            FeatureMap::Dpfp(3),
        ]
        .map(held_by);
        assert!(d1 < d2 && d2 < d3, "{d1} {d2} {d3}");
        assert!(elu < d3, "{elu} {d3}");
        // No rule holds more than the rank allows.
        for c in curves {
            let cap = rank_capacity(&c.rank);
            for errors in [&c.sum, &c.delta_once, &c.delta_replayed] {
                assert!(held(errors) <= cap, "{}", c.map.name());
            }
        }
    }

    #[test]
    fn favor_plus_holds_fewer_associations_than_dpfp_of_the_same_p() {
        let curves = crate::studies::capacity_sweep();
        let by = |map| curves.iter().find(|c| c.map == map).unwrap();
        let (favor, dpfp) =
            (by(FeatureMap::Favor(16)), by(FeatureMap::Dpfp(2)));
        assert_eq!(favor.p, dpfp.p);
        // Far fewer: at most a quarter as many.
        let (f, d) = (held(&favor.delta_replayed), held(&dpfp.delta_replayed));
        assert!(4 * f <= d, "FAVOR+ {f}, DPFP {d}");
        let (favor, elu) =
            (by(FeatureMap::Favor(4)), by(FeatureMap::EluPlusOne));
        assert_eq!(favor.p, elu.p);
        assert!(held(&favor.delta_replayed) <= held(&elu.delta_replayed));
    }

    #[test]
    fn one_pass_of_either_rule_does_not_hold_two_random_associations() {
        for c in crate::studies::capacity_sweep() {
            assert_eq!(held(&c.sum), 1, "{}", c.map.name());
            assert_eq!(held(&c.delta_once), 1, "{}", c.map.name());
        }
    }

    #[test]
    fn replaying_the_delta_rule_lowers_its_error_up_to_p() {
        for c in crate::studies::capacity_sweep() {
            for (i, &n) in NS.iter().enumerate() {
                if n <= c.p {
                    assert!(
                        c.delta_replayed[i] <= c.delta_once[i] + 1e-12,
                        "{} n {n}",
                        c.map.name()
                    );
                }
            }
        }
    }

    #[test]
    fn more_passes_of_the_delta_rule_bring_it_closer_below_p() {
        // Every map, at n = 3p/4 (below p, full rank: an exact memory
        // exists), each further pass corrects more of what the others
        // disturb.
        for (map, seed) in
            MAPS.iter().flat_map(|&m| (0..SEEDS).map(move |s| (m, s)))
        {
            let n = 3 * map.width(D) / 4;
            let mut rng = seeded(seed);
            let keys = randn(&mut rng, n, D);
            let values = unit_rows(&randn(&mut rng, n, M));
            let omega = map.projection(&mut seeded(1000 + seed), D);
            let unit = unit_rows(&map.apply(&keys, &omega));
            let errors: Vec<f64> = [1, PASSES, 3 * PASSES]
                .iter()
                .map(|&passes| {
                    rms(&delta_rule_recall(&unit, &values, passes).unwrap())
                })
                .collect();
            assert!(
                errors[0] > errors[1] && errors[1] > errors[2],
                "{} n {n} seed {seed}: {errors:?}",
                map.name()
            );
        }
    }

    #[test]
    fn with_orthonormal_keys_one_pass_of_the_delta_rule_recalls_exactly() {
        for seed in 0..5 {
            for (n, p) in [(1, 1), (5, 8), (16, 16)] {
                let mut rng = seeded(seed);
                let keys = orthonormal_keys(&mut rng, n, p);
                let values = randn(&mut rng, n, 3);
                let errors = delta_rule_recall(&keys, &values, 1).unwrap();
                assert!(errors.iter().all(|&e| e < 1e-12));
            }
        }
    }

    #[test]
    fn when_keys_repeat_the_delta_rule_beats_the_sum_rule() {
        for (map, n, sum, delta) in setting2_study(&SETTING2_NS) {
            assert!(delta < sum, "{} n {n}: {delta} vs {sum}", map.name());
        }
        // With orthonormal keys the delta rule is exact: it overwrites.
        for seed in 0..5 {
            let keys = orthonormal_keys(&mut seeded(seed), 4, 8);
            let mut rng = seeded(seed + 100);
            let mut w = Array2::zeros((3, 8));
            let mut last = vec![];
            for t in 0..8 {
                let v = randn(&mut rng, 1, 3).row(0).to_owned();
                delta_rule_step(&mut w, &keys.row(t % 4), &v, 1.0);
                if t >= 4 {
                    last.push(v);
                }
            }
            for (i, v) in last.iter().enumerate() {
                let miss = w.dot(&keys.row(i)) - v;
                assert!(miss.dot(&miss).sqrt() < 1e-12);
            }
        }
    }

    #[test]
    fn in_setting_2_wider_dpfp_lowers_the_delta_rule_error() {
        let rows = setting2_study(&SETTING2_NS);
        for &n in &SETTING2_NS {
            let delta = |nu| {
                let map = FeatureMap::Dpfp(nu);
                rows.iter().find(|r| r.0 == map && r.1 == n).unwrap().3
            };
            assert!(delta(1) > delta(2) && delta(2) > delta(3), "n {n}");
        }
    }

    #[test]
    fn the_sweep_is_the_same_every_time() {
        // Computed afresh, not the memoised copy the book prints: the same
        // table to the last digit.
        let fresh = CapacityTable(capacity_sweep()).to_string();
        let printed =
            CapacityTable(crate::studies::capacity_sweep().clone()).to_string();
        assert_eq!(fresh, printed);
    }

    #[test]
    fn one_association_alone_comes_back_exactly_under_either_rule() {
        assert_eq!(NS[0], 1);
        for c in crate::studies::capacity_sweep() {
            for errors in [&c.sum, &c.delta_once, &c.delta_replayed] {
                assert!(errors[0] < 1e-12, "{}: {}", c.map.name(), errors[0]);
            }
        }
    }

    #[test]
    fn dpfp_one_needs_more_keys_than_p_to_reach_rank_p() {
        // As the table shows: at n = p DPFP-1's keys fall short of rank p,
        // so its exact capacity is below p.
        let curves = crate::studies::capacity_sweep();
        let c = curves
            .iter()
            .find(|c| c.map == FeatureMap::Dpfp(1))
            .unwrap();
        let at_p = NS.iter().position(|&n| n == c.p).unwrap();
        assert!(c.rank[at_p] < c.p as f64, "rank {}", c.rank[at_p]);
        assert!(rank_capacity(&c.rank) < c.p);
    }

    #[test]
    fn elu_plus_one_keys_with_large_negative_entries_are_nearly_orthogonal() {
        // Key i: +1 at entry i, −L elsewhere. elu+1 maps −L to e^(−L), so
        // the features are nearly one-hot and d such associations read
        // back nearly exactly under the sum rule.
        for d in [2, 8, 64] {
            for big in [8.0, 12.0] {
                let keys = Array2::from_shape_fn((d, d), |(i, j)| {
                    if i == j { 1.0 } else { -big }
                });
                let unit = unit_rows(
                    &FeatureMap::EluPlusOne
                        .apply(&keys, &Array2::zeros((0, 0))),
                );
                let values = unit_rows(&randn(&mut seeded(d as u64), d, M));
                let errors = sum_rule_recall(&unit, &values).unwrap();
                let worst = errors.fold(0.0, |a: f64, &e| a.max(e));
                assert!(worst < 1e-2, "d {d}, L {big}: {worst}");
                // Random keys through elu+1 are far from it.
                let random = unit_rows(&FeatureMap::EluPlusOne.apply(
                    &randn(&mut seeded(1), d, d),
                    &Array2::zeros((0, 0)),
                ));
                let e = sum_rule_recall(&random, &values).unwrap();
                if d > 2 {
                    assert!(rms(&e) > 0.3, "d {d}");
                }
            }
        }
    }
}
