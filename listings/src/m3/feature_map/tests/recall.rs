use crate::linalg::{norm, relative_errors};
use crate::m3::attention::{Mask, softmax_attention};
use crate::m3::delete_softmax::{
    RANK_TOL, linear_attention_memory_first, numerical_rank,
};
use crate::m3::feature_map::recall::*;
use crate::m3::feature_map::study::*;
use crate::phi::{FeatureMap, elu_plus_one};
use crate::random::{randn, seeded};
use crate::summary::Spread;
use approx::assert_relative_eq;
use ndarray::{Array2, Axis};

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
        assert_relative_eq!(r.linear, err(&lin.row(0)), max_relative = 1e-10);
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
    let phi_k = map.features(&k.slice(rows)).unwrap().unwrap();
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
                let phi = map.features(&k).unwrap().unwrap();
                numerical_rank(&phi, RANK_TOL) < p
            })
            .count()
    };
    assert!(deficient(Map::Phi(FeatureMap::Dpfp(1))) > 0);
    assert_eq!(deficient(Map::Phi(FeatureMap::EluPlusOne)), 0);
}

#[test]
fn chapter_sweep_finds_the_edge_of_each_map_at_p() {
    let sweep = crate::m3::feature_map::study::chapter_sweep();
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
    let sweep = crate::m3::feature_map::study::chapter_sweep();
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
    let sweep = crate::m3::feature_map::study::chapter_sweep();
    for map in SWEEP_MAPS {
        let curve = sweep.curve(map, false);
        for pair in curve.windows(2) {
            assert!(pair[1].1 > pair[0].1, "{map:?} at n = {}", pair[1].0);
        }
    }
}

#[test]
fn softmax_reads_beat_every_sum_rule_read_and_dpfp_beats_elu_plus_one() {
    let sweep = crate::m3::feature_map::study::chapter_sweep();
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
        let phi = map.features(&x).unwrap().unwrap();
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
            let o = linear_attention_memory_first(&phi_q, &phi_k, &v).unwrap();
            let mean = v.mean_axis(Axis(0)).unwrap();
            let to_mean = norm(&(&o.row(0) - &mean));
            let to_target = norm(&(&o.row(0) - &v.row(target)));
            worst_ratio = worst_ratio.max(to_mean / to_target);
        }
        assert!(min_share > 0.1, "d = {d}: {min_share}");
        assert!(worst_ratio < 0.25, "d = {d}: {worst_ratio}");
    }
}
