use super::study::*;
use super::*;
use crate::phi::FeatureMap;

#[test]
fn dpfp_plane_lights_each_feature_in_its_own_quadrant() {
    // Feature 0 lights quadrant IV (x₁ > 0, x₂ < 0), 1 quadrant I,
    // 2 quadrant II, 3 quadrant III; zero elsewhere, and on the axes.
    let n = 21;
    let grids = dpfp_plane(n, 1.0).unwrap();
    assert_eq!(grids.len(), 4, "DPFP-1 of a point in the plane: 4 features");
    let quadrant = |i: usize, j: usize| {
        let (right, up) = (j > n / 2, i < n / 2);
        match (right, up) {
            (true, false) => 0,
            (true, true) => 1,
            (false, true) => 2,
            (false, false) => 3,
        }
    };
    for (f, grid) in grids.iter().enumerate() {
        for ((i, j), &value) in grid.indexed_iter() {
            let on_axis = i == n / 2 || j == n / 2;
            let lit = !on_axis && quadrant(i, j) == f;
            assert_eq!(value > 0.0, lit, "feature {f} at ({i}, {j})");
        }
        // At a corner the feature is |x₁| |x₂| = 1.
        let corner = [(n - 1, n - 1), (0, n - 1), (0, 0), (n - 1, 0)][f];
        assert_eq!(grid[corner], 1.0);
    }
}

#[test]
fn favor_plus_spread_matches_its_exact_value_and_falls_like_root_r() {
    // For Ω with N(0, 1) entries the relative spread of the estimate is
    // √(2/r) sinh(‖q + k‖²/2): it halves when r grows fourfold.
    let rows = favor_spread(SPREAD_D, &SPREAD_RS, SPREAD_DRAWS).unwrap();
    for row in &rows {
        let ratio = row.iid / row.exact_iid;
        assert!((0.8..1.2).contains(&ratio), "r {}: {ratio}", row.r);
        // The mean within four standard errors of exp(qᵀk).
        let se = row.exact_iid / (SPREAD_DRAWS as f64).sqrt();
        assert!((row.mean_iid - 1.0).abs() < 4.0 * se, "r {}", row.r);
    }
    for pair in rows.windows(2) {
        assert!(pair[1].exact_iid < pair[0].exact_iid);
        assert!(pair[1].iid < pair[0].iid, "r = {}", pair[1].r);
    }
}

#[test]
fn the_spread_is_relative_to_exp_qk_for_a_pair_far_from_orthogonal() {
    // The chapter's pair (d = 8) is nearly orthogonal, exp(qᵀk) close to
    // 1, so a spread divided by it and one multiplied by it look alike.
    // In the plane the drawn pair is far from orthogonal, and both
    // spreads, independent and orthogonal, are still relative to
    // exp(qᵀk): at r = 1, where the two projections are one distribution,
    // each lies within 20% of the exact relative spread.
    let rows = favor_spread(2, &[1, 4], SPREAD_DRAWS).unwrap();
    let mut rng = crate::random::seeded(7);
    let q = crate::random::randn(&mut rng, 1, 2);
    let k = crate::random::randn(&mut rng, 1, 2);
    let cos = q.row(0).dot(&k.row(0))
        / (q.row(0).dot(&q.row(0)) * k.row(0).dot(&k.row(0))).sqrt();
    assert!(cos.abs() > 0.5, "the pair is far from orthogonal: {cos}");
    for row in &rows {
        let ratio = row.iid / row.exact_iid;
        assert!((0.8..1.2).contains(&ratio), "r {}: {ratio}", row.r);
    }
    let ratio = rows[0].orthogonal / rows[0].exact_iid;
    assert!((0.8..1.2).contains(&ratio), "orthogonal, r = 1: {ratio}");
}

#[test]
fn orthogonal_features_spread_less_than_independent_ones_from_two_on() {
    // The chapter's study as printed (the memoised one): from r = 2 on
    // the orthogonal projection's spread lies below the independent
    // one's; at r = 1 the two are the same distribution.
    let rows = crate::paper::feature_maps::study::chapter_favor_spread();
    assert_eq!(rows.len(), SPREAD_RS.len());
    for row in rows.iter().filter(|r| r.r >= 2) {
        assert!(row.orthogonal < row.iid, "r = {}", row.r);
    }
}

#[test]
fn every_column_of_the_orthogonal_projection_is_standard_gaussian() {
    // Over many draws each column of Ω, alone, has N(0, 1) entries:
    // mean 0 and variance 1, and squared length of mean d, variance 2d
    // (a χ² with d degrees of freedom), in the first block and after.
    let draws = 4000;
    for (d, r) in [(4, 4), (8, 20)] {
        let mut rng = seeded(d as u64);
        let omegas: Vec<_> = (0..draws)
            .map(|_| crate::phi::favor_projection(&mut rng, d, r))
            .collect();
        for col in [0, r - 1] {
            let entries: Vec<f64> =
                omegas.iter().map(|o| o[[d - 1, col]]).collect();
            let mean = entries.iter().sum::<f64>() / draws as f64;
            assert!(mean.abs() < 4.0 / (draws as f64).sqrt(), "{mean}");
            let var = std_dev(&entries).powi(2);
            assert!((var - 1.0).abs() < 0.1, "d {d} col {col}: {var}");
            let sq: Vec<f64> = omegas
                .iter()
                .map(|o| o.column(col).dot(&o.column(col)))
                .collect();
            let mean = sq.iter().sum::<f64>() / draws as f64;
            let se = (2.0 * d as f64 / draws as f64).sqrt();
            assert!((mean - d as f64).abs() < 4.0 * se, "d {d}: {mean}");
            let var = std_dev(&sq).powi(2) / (2.0 * d as f64);
            assert!((var - 1.0).abs() < 0.15, "d {d} col {col}: {var}");
        }
    }
}

#[test]
fn dpfp_support_is_set_by_the_signs_and_opposite_signs_are_orthogonal() {
    // Two keys with the same signs light the same features; two with
    // opposite signs in every entry light disjoint ones, so their
    // features are orthogonal.
    let lit = |x: &Array1<f64>, nu| {
        crate::phi::dpfp(x, nu).unwrap().mapv(|f| f > 0.0)
    };
    for seed in 0..10 {
        let mut rng = seeded(seed);
        for (d, nu) in [(2, 1), (4, 1), (8, 2), (16, 3), (64, 1)] {
            let x = randn(&mut rng, 1, d).row(0).to_owned();
            let size = randn(&mut rng, 1, d).row(0).mapv(f64::abs);
            let same = &size * &x.mapv(f64::signum);
            assert_eq!(lit(&x, nu), lit(&same, nu), "d {d} ν {nu}");
            let opposite = -&same;
            let overlap = crate::phi::dpfp(&x, nu)
                .unwrap()
                .dot(&crate::phi::dpfp(&opposite, nu).unwrap());
            assert_eq!(overlap, 0.0, "d {d} ν {nu}");
            assert!(lit(&x, nu).iter().any(|&b| b), "d {d} ν {nu}");
        }
    }
}

#[test]
fn dpfp_one_lights_nothing_for_alternating_signs_of_odd_width() {
    // Signs +, −, +, … around an odd cycle: no two neighbours of x̃ are
    // both non-zero, so ν = 1 lights nothing; ν = 2 and 3 light some.
    for seed in 0..10 {
        for d in [3, 5, 7, 9, 33] {
            let size = randn(&mut seeded(seed), 1, d).row(0).mapv(f64::abs);
            let x = Array1::from_shape_fn(d, |i| {
                (size[i] + 0.1) * if i % 2 == 0 { 1.0 } else { -1.0 }
            });
            assert!(crate::phi::dpfp(&x, 1).unwrap().iter().all(|&f| f == 0.0));
            for nu in [2, 3] {
                let phi = crate::phi::dpfp(&x, nu).unwrap();
                assert!(phi.iter().any(|&f| f > 0.0), "d {d} ν {nu}");
            }
        }
    }
}

#[test]
fn favor_features_range_over_many_orders_of_magnitude() {
    // The table's inputs and projections: within each mapped vector,
    // FAVOR+'s largest feature is over a million times its smallest,
    // for both widths.
    let x = randn(&mut seeded(0), 50, 64);
    for r in [64, 128] {
        let map = FeatureMap::Favor(r);
        let phi = map.apply(&x, &map.projection(&mut seeded(1), 64)).unwrap();
        for (t, row) in phi.rows().into_iter().enumerate() {
            let lo = row.fold(f64::INFINITY, |a, &b| a.min(b));
            let hi = row.fold(0.0, |a: f64, &b| a.max(b));
            assert!(lo > 0.0 && hi / lo > 1e6, "r {r} row {t}: {lo:e}");
        }
    }
}

#[test]
fn the_table_shows_p_positivity_sparsity_and_randomness() {
    let rows = feature_map_table(&TABLE_MAPS, TABLE_D, TABLE_INPUTS).unwrap();
    let p: Vec<usize> = rows.iter().map(|r| r.p).collect();
    assert_eq!(p, vec![64, 128, 256, 384, 128, 256]);
    for r in &rows {
        match r.map {
            FeatureMap::EluPlusOne | FeatureMap::Favor(_) => {
                assert!(r.smallest > 0.0 && r.zeros == 0.0);
            }
            FeatureMap::Dpfp(_) => {
                assert!(r.smallest == 0.0);
                assert!(r.zeros >= 0.5, "{}: {}", r.map.name(), r.zeros);
            }
        }
        let random = matches!(r.map, FeatureMap::Favor(_));
        assert_eq!(r.deterministic, !random);
    }
}
