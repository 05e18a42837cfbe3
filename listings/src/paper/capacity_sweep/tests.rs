use super::study::*;
use super::*;
use crate::linalg::orthonormal_keys;

#[test]
fn mapped_keys_reach_full_rank_p_and_never_more() {
    for c in crate::paper::capacity_sweep::study::chapter_curves() {
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
    let curves = crate::paper::capacity_sweep::study::chapter_curves();
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
    let curves = crate::paper::capacity_sweep::study::chapter_curves();
    let by = |map| curves.iter().find(|c| c.map == map).unwrap();
    let (favor, dpfp) = (by(FeatureMap::Favor(16)), by(FeatureMap::Dpfp(2)));
    assert_eq!(favor.p, dpfp.p);
    // Far fewer: at most a quarter as many.
    let (f, d) = (held(&favor.delta_replayed), held(&dpfp.delta_replayed));
    assert!(4 * f <= d, "FAVOR+ {f}, DPFP {d}");
    let (favor, elu) = (by(FeatureMap::Favor(4)), by(FeatureMap::EluPlusOne));
    assert_eq!(favor.p, elu.p);
    assert!(held(&favor.delta_replayed) <= held(&elu.delta_replayed));
}

#[test]
fn one_pass_of_either_rule_does_not_hold_two_random_associations() {
    for c in crate::paper::capacity_sweep::study::chapter_curves() {
        assert_eq!(held(&c.sum), 1, "{}", c.map.name());
        assert_eq!(held(&c.delta_once), 1, "{}", c.map.name());
    }
}

#[test]
fn replaying_the_delta_rule_lowers_its_error_up_to_p() {
    // Lowers, not merely keeps: wherever one pass leaves an error (every
    // n from 2 up to p), the replayed rule's error is lower by a tenth of
    // it at least, so a replay that did nothing would fail here. At n = 1 one pass
    // is already exact, and replaying keeps it so.
    for c in crate::paper::capacity_sweep::study::chapter_curves() {
        let mut lowered = 0;
        for (i, &n) in NS.iter().enumerate() {
            let (once, replayed) = (c.delta_once[i], c.delta_replayed[i]);
            let name = c.map.name();
            if n > c.p {
                continue;
            }
            if once < 1e-9 {
                assert!(replayed < 1e-9, "{name} n {n}: {replayed}");
                continue;
            }
            assert!(replayed < 0.9 * once, "{name} n {n}: {replayed} {once}");
            lowered += 1;
        }
        assert!(lowered >= 2, "{}: {lowered} lengths", c.map.name());
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
        let unit = unit_rows(&mapped_keys(map, &mut rng, n, seed).unwrap());
        let values = unit_rows(&randn(&mut rng, n, M));
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
            let keys = orthonormal_keys(&mut rng, n, p).unwrap();
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
        let keys = orthonormal_keys(&mut seeded(seed), 4, 8).unwrap();
        let mut rng = seeded(seed + 100);
        let mut w = Array2::zeros((3, 8));
        let mut last = vec![];
        for t in 0..8 {
            let v = randn(&mut rng, 1, 3).row(0).to_owned();
            delta_rule_step(&mut w, &keys.row(t % 4), &v, 1.0).unwrap();
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
    let printed = CapacityTable(
        crate::paper::capacity_sweep::study::chapter_curves().clone(),
    )
    .to_string();
    assert_eq!(fresh, printed);
}

#[test]
fn one_association_alone_comes_back_exactly_under_either_rule() {
    assert_eq!(NS[0], 1);
    for c in crate::paper::capacity_sweep::study::chapter_curves() {
        for errors in [&c.sum, &c.delta_once, &c.delta_replayed] {
            assert!(errors[0] < 1e-12, "{}: {}", c.map.name(), errors[0]);
        }
    }
}

#[test]
fn dpfp_one_needs_more_keys_than_p_to_reach_rank_p() {
    // As the table shows: at n = p DPFP-1's keys fall short of rank p,
    // so its exact capacity is below p.
    let curves = crate::paper::capacity_sweep::study::chapter_curves();
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
            let keys =
                Array2::from_shape_fn(
                    (d, d),
                    |(i, j)| {
                        if i == j { 1.0 } else { -big }
                    },
                );
            let unit = unit_rows(
                &FeatureMap::EluPlusOne
                    .apply(&keys, &Array2::zeros((0, 0)))
                    .unwrap(),
            );
            let values = unit_rows(&randn(&mut seeded(d as u64), d, M));
            let errors = sum_rule_recall(&unit, &values).unwrap();
            let worst = errors.fold(0.0, |a: f64, &e| a.max(e));
            assert!(worst < 1e-2, "d {d}, L {big}: {worst}");
            // Random keys through elu+1 are far from it.
            let random = unit_rows(
                &FeatureMap::EluPlusOne
                    .apply(&randn(&mut seeded(1), d, d), &Array2::zeros((0, 0)))
                    .unwrap(),
            );
            let e = sum_rule_recall(&random, &values).unwrap();
            if d > 2 {
                assert!(rms(&e) > 0.3, "d {d}");
            }
        }
    }
}

#[test]
fn each_point_draws_its_projection_from_its_own_seed_apart_from_the_keys() {
    // Point `seed` maps keys drawn from `seeded(seed)` through a projection
    // drawn from `seeded(PROJECTION_SEEDS + seed)`, as the doc says; the
    // FAVOR+ projections of the sweep's seeds differ from one another.
    for map in MAPS {
        let mut favor = vec![];
        for seed in 0..SEEDS {
            let got = mapped_keys(map, &mut seeded(seed), 5, seed).unwrap();
            let keys = randn(&mut seeded(seed), 5, D);
            let omega = map.projection(&mut seeded(PROJECTION_SEEDS + seed), D);
            assert_eq!(
                got,
                map.apply(&keys, &omega).unwrap(),
                "{}",
                map.name()
            );
            favor.push(got);
        }
        if matches!(map, FeatureMap::Favor(_)) {
            assert!(favor[0] != favor[1] && favor[1] != favor[2]);
        }
    }
}

#[test]
fn setting_2_with_one_key_writes_it_twice_and_reads_its_last_value() {
    // n = 1: two writes of the same unit key with unit values v₁, v₂. The
    // sum rule reads v₁ + v₂, off the last value by ‖v₁‖ = 1; the delta rule
    // overwrote v₁ and reads v₂ exactly.
    for map in MAPS {
        for seed in 0..SEEDS {
            let [sum, delta] = setting2_point(map, 1, seed).unwrap();
            assert!((sum - 1.0).abs() < 1e-12, "{}: {sum}", map.name());
            assert!(delta < 1e-12, "{}: {delta}", map.name());
        }
    }
}

#[test]
fn the_setting_2_error_is_the_rms_over_the_keys_written() {
    // S = I, keys e₀, e₁, e₂: key 0 written with e₀ (miss 0), key 1 with
    // 3e₁ (miss 2), key 2 never written (not counted): √((0 + 4) / 2).
    let s = Array2::eye(3);
    let keys = Array2::eye(3);
    let mut three_e1 = Array1::zeros(3);
    three_e1[1] = 3.0;
    let last = [Some(keys.row(0).to_owned()), Some(three_e1), None];
    let error = last_value_error(&s, &keys, &last);
    assert!((error - 2f64.sqrt()).abs() < 1e-15, "{error}");
    // The zero memory misses every unit value by 1.
    let zero = Array2::zeros((3, 3));
    let units = [0, 1, 2].map(|i| Some(keys.row(i).to_owned()));
    assert_eq!(last_value_error(&zero, &keys, &units), 1.0);
}
