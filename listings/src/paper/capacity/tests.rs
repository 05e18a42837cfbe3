use super::study::*;
use super::*;
use crate::linalg::{norm, orthonormal_keys};
use crate::random::seeded;
use approx::assert_relative_eq;

#[test]
fn orthonormal_keys_have_identity_gram_matrix() {
    for seed in 0..10 {
        for (n, d) in [(1, 1), (3, 5), (8, 8), (30, 64)] {
            let k = orthonormal_keys(&mut seeded(seed), n, d).unwrap();
            let gram = k.dot(&k.t());
            assert_relative_eq!(gram, Array2::eye(n), epsilon = 1e-12);
        }
    }
}

#[test]
fn there_is_no_fifth_orthonormal_key_in_four_dimensions() {
    let err = orthonormal_keys(&mut seeded(0), 5, 4).unwrap_err();
    let text = err.to_string();
    assert!(text.contains("n is 5") && text.contains("only d"), "{text}");
    assert_eq!(orthonormal_keys(&mut seeded(0), 4, 4).unwrap().nrows(), 4);
}

#[test]
fn exact_reads_for_arbitrary_values_need_orthonormal_keys() {
    // One-hot values: the total error is ‖K Kᵀ − I‖², zero only for
    // orthonormal keys. Any other keys miss some value.
    for seed in 0..10 {
        for (n, d) in [(2, 2), (3, 5), (8, 8)] {
            let mut rng = seeded(seed);
            let ortho = orthonormal_keys(&mut rng, n, d).unwrap();
            assert!(one_hot_total_error(&ortho) < 1e-20);
            let values = one_hot_values(n);
            let errors = sum_rule_recall(&ortho, &values).unwrap();
            assert!(errors.iter().all(|&e| e < 1e-12));
            for keys in [unit_rows(&randn(&mut rng, n, d)), &ortho * 1.1] {
                let errors = sum_rule_recall(&keys, &values).unwrap();
                assert!(errors.iter().any(|&e| e > 1e-3), "seed {seed}");
            }
        }
    }
}

#[test]
fn for_particular_values_overlapping_keys_can_read_exactly() {
    // Two keys with overlap c and squared length 1 − c, one value for
    // both: S k_i = v (1 − c + c) = v, exact though not orthonormal.
    for seed in 0..10 {
        let mut rng = seeded(seed);
        let basis = orthonormal_keys(&mut rng, 2, 4).unwrap();
        let (e1, e2) = (basis.row(0), basis.row(1));
        for c in [0.1, 0.3, 0.45] {
            // k = a e1 ± b e2 with a² − b² = c and a² + b² = 1 − c.
            let (a, b) = (0.5_f64.sqrt(), (0.5_f64 - c).sqrt());
            let k1 = &e1 * a + &e2 * b;
            let k2 = &e1 * a - &e2 * b;
            assert_relative_eq!(k1.dot(&k2), c, epsilon = 1e-12);
            let keys = ndarray::stack![ndarray::Axis(0), k1, k2];
            let v = randn(&mut rng, 1, 3).row(0).to_owned();
            let values = ndarray::stack![ndarray::Axis(0), v, v];
            let errors = sum_rule_recall(&keys, &values).unwrap();
            assert!(errors.iter().all(|&e| e < 1e-12), "c {c}");
        }
    }
}

#[test]
fn with_orthonormal_keys_the_sum_rule_recalls_up_to_d_exactly() {
    for seed in 0..10 {
        for d in [1, 2, 8, 33] {
            for n in [1, d / 2 + 1, d] {
                let mut rng = seeded(seed);
                let keys = orthonormal_keys(&mut rng, n, d).unwrap();
                let values = randn(&mut rng, n, 5);
                let errors = sum_rule_recall(&keys, &values).unwrap();
                assert!(errors.iter().all(|&e| e < 1e-12), "d = {d}");
            }
        }
    }
}

#[test]
fn past_d_keys_the_total_error_is_at_least_n_minus_d_whatever_the_keys() {
    // With one-hot values the reads are the columns of G = K Kᵀ, of
    // rank ≤ d: at least n − d of its eigenvalues are 0, each costing
    // (0 − 1)² in ‖G − I‖²_F.
    for seed in 0..10 {
        for d in [1, 2, 8, 16] {
            for n in [d + 1, d + 2, 2 * d + 1, 3 * d] {
                let mut rng = seeded(seed);
                let candidates = [
                    orthonormal_then_random(&mut rng, n, d),
                    unit_rows(&randn(&mut rng, n, d)),
                    randn(&mut rng, n, d) * 3.0,
                    randn(&mut rng, n, d) / (d as f64).sqrt(),
                ];
                for keys in candidates {
                    let total = one_hot_total_error(&keys);
                    let floor = (n - d) as f64;
                    assert!(total >= floor - 1e-9, "d {d} n {n}: {total}");
                    let values = one_hot_values(n);
                    let e = sum_rule_recall(&keys, &values).unwrap();
                    let sum_sq = e.mapv(|x| x * x).sum();
                    assert_relative_eq!(sum_sq, total, max_relative = 1e-9);
                    assert!(e.iter().any(|&x| x > 0.1), "d {d} n {n}");
                }
            }
        }
    }
    // The floor is reached: d orthonormal keys and n − d zero keys,
    // which store nothing and read back nothing.
    let mut keys = Array2::zeros((12, 8));
    keys.slice_mut(s![..8, ..])
        .assign(&orthonormal_keys(&mut seeded(1), 8, 8).unwrap());
    assert_relative_eq!(one_hot_total_error(&keys), 4.0, epsilon = 1e-9);
}

#[test]
fn at_d_plus_one_the_orthonormal_keys_lose_exactness() {
    for seed in 0..10 {
        for d in [2, 8, 16] {
            let rows = boundary_study(d, &[d - 1, d, d + 1], seed);
            assert!(rows[0].worst_error < 1e-12);
            assert!(rows[1].worst_error < 1e-12);
            assert!(rows[2].worst_error > 0.1, "seed {seed}, d {d}");
            assert!(rows[2].total_error >= 1.0 - 1e-9);
        }
    }
}

#[test]
fn recall_error_is_the_crosstalk_of_the_other_keys() {
    for seed in 0..10 {
        for (n, d, m) in [(1, 3, 2), (5, 8, 3), (40, 16, 16)] {
            let mut rng = seeded(seed);
            let keys = randn(&mut rng, n, d);
            let values = randn(&mut rng, n, m);
            let memory = sequence_memory(&keys, &values).s;
            for i in 0..n {
                let leak = memory.dot(&keys.row(i)) - values.row(i);
                let want = crosstalk(&keys, &values, i);
                let scale = norm(&want).max(norm(&values.row(i)));
                assert!(norm(&(&leak - &want)) <= 1e-12 * scale);
            }
        }
    }
}

#[test]
fn random_key_crosstalk_grows_like_the_square_root_of_n_over_d() {
    for d in [16, 64] {
        let ns = [1, 2, d / 2, d, 2 * d, 4 * d];
        let rows = crosstalk_study(d, &ns, 20);
        assert!(rows[0].rms_error < 1e-12); // one unit key: exact
        for pair in rows.windows(2) {
            assert!(pair[1].rms_error > pair[0].rms_error, "d = {d}");
        }
        for r in &rows[2..] {
            let ratio = r.rms_error / r.predicted;
            assert!((0.85..1.15).contains(&ratio), "d {d} n {}", r.n);
        }
    }
}

#[test]
fn orthonormal_keys_are_exact_until_d_and_random_keys_never_are() {
    let d = 16;
    let rows = crosstalk_study(d, &[2, 8, 16, 17, 32], 10);
    for r in &rows {
        if r.n <= d {
            assert!(r.rms_error_orthonormal < 1e-12);
        } else {
            assert!(r.rms_error_orthonormal > 0.1);
        }
        assert!(r.rms_error > 0.1, "n = {}", r.n);
    }
}

#[test]
fn below_d_a_new_key_can_avoid_the_old_ones_past_d_it_cannot() {
    // A new write (v, k) changes the read of old key k_i by v (kᵀk_i).
    for seed in 0..10 {
        for d in [2, 8, 16] {
            let mut rng = seeded(seed);
            // Below d: the next orthonormal key misses every old one.
            let keys = orthonormal_keys(&mut rng, d, d).unwrap();
            let old = keys.slice(s![..d - 1, ..]);
            let fresh = keys.row(d - 1);
            assert!(old.dot(&fresh).iter().all(|c| c.abs() < 1e-12));
            // At d: the old keys span ℝ^d, so any new key k has
            // Σ_i (kᵀk_i)² = ‖k‖² > 0 against the orthonormal ones,
            // and some old read must move.
            let new = randn(&mut rng, 1, d).row(0).to_owned();
            let overlaps = keys.dot(&new);
            let moved = overlaps.mapv(|c| c * c).sum();
            assert_relative_eq!(moved, new.dot(&new), max_relative = 1e-10);
            assert!(overlaps.iter().any(|c| c.abs() > 1e-3));
        }
    }
}

#[test]
fn past_d_keys_gram_schmidt_leaves_nothing_of_a_new_direction() {
    // A direction with its components along d orthonormal keys removed
    // is zero: there is no (d+1)-th. With d − 1 keys something is left.
    for seed in 0..10 {
        for d in [1, 2, 8, 16, 33] {
            let mut rng = seeded(seed);
            let keys = orthonormal_keys(&mut rng, d, d).unwrap();
            let x = randn(&mut rng, 1, d).row(0).to_owned();
            let left = |basis: ndarray::ArrayView2<f64>| {
                let mut r = x.clone();
                for b in basis.rows() {
                    r = &r - &(&b * x.dot(&b));
                }
                norm(&r) / norm(&x)
            };
            assert!(left(keys.view()) < 1e-12, "seed {seed}, d {d}");
            let fewer = left(keys.slice(s![..d - 1, ..]));
            assert!(fewer > 1e-6, "seed {seed}, d {d}: {fewer}");
        }
    }
}

#[test]
fn the_floor_is_reached_by_d_orthonormal_keys_and_zero_keys() {
    // d orthonormal keys and n − d zero keys: total error exactly n − d;
    // the zero keys store nothing (the memory is that of the first d)
    // and read back nothing.
    for seed in 0..10 {
        for (d, n) in [(1, 2), (2, 5), (8, 12), (16, 48)] {
            let mut rng = seeded(seed);
            let mut keys = Array2::zeros((n, d));
            keys.slice_mut(s![..d, ..])
                .assign(&orthonormal_keys(&mut rng, d, d).unwrap());
            let total = one_hot_total_error(&keys);
            assert_relative_eq!(total, (n - d) as f64, epsilon = 1e-9);
            let values = randn(&mut rng, n, 3);
            let all = sequence_memory(&keys, &values).s;
            let first = sequence_memory(
                &keys.slice(s![..d, ..]),
                &values.slice(s![..d, ..]),
            )
            .s;
            assert_eq!(all, first, "seed {seed}: zero keys store nothing");
            let reads = keys.dot(&all.t());
            for i in d..n {
                assert!(reads.row(i).iter().all(|&r| r == 0.0));
            }
        }
    }
}

#[test]
fn random_unit_key_overlaps_have_mean_zero_and_variance_one_over_d() {
    for d in [4, 16, 64] {
        let mut rng = seeded(d as u64);
        let (a, b) = (20_000, 2);
        let keys = unit_rows(&randn(&mut rng, a * b, d));
        let overlaps: Vec<f64> = (0..a)
            .map(|i| keys.row(2 * i).dot(&keys.row(2 * i + 1)))
            .collect();
        let mean = overlaps.iter().sum::<f64>() / a as f64;
        let var = overlaps.iter().map(|c| (c - mean).powi(2)).sum::<f64>()
            / (a - 1) as f64;
        let sd = (1.0 / d as f64).sqrt();
        assert!(mean.abs() < 4.0 * sd / (a as f64).sqrt(), "d {d}: {mean}");
        assert!((var * d as f64 - 1.0).abs() < 0.05, "d {d}: {var}");
    }
}

#[test]
fn a_wider_key_space_lowers_the_curve_and_the_error_follows_n_minus_1_over_d() {
    // At the same n, d = 64 reads better than d = 16; at the same
    // (n − 1)/d the two widths read alike.
    let ns = [2, 5, 9, 17, 33];
    let narrow = crosstalk_study(16, &ns, 10);
    let wide_same_n = crosstalk_study(64, &ns, 10);
    let scaled: Vec<usize> = ns.iter().map(|n| 4 * (n - 1) + 1).collect();
    let wide_same_ratio = crosstalk_study(64, &scaled, 10);
    for i in 0..ns.len() {
        let (a, b, c) = (&narrow[i], &wide_same_n[i], &wide_same_ratio[i]);
        assert!(b.rms_error < a.rms_error, "n {}", a.n);
        let ratio = c.rms_error / a.rms_error;
        assert!((0.9..1.1).contains(&ratio), "n {}: {ratio}", a.n);
    }
}

#[test]
fn orthonormal_then_random_keys_climb_towards_the_random_ones() {
    // The chapter's output, d = 16, 10 seeds: past d the orthonormal-
    // while-they-fit error grows with n, stays below the random keys'
    // and the gap between them shrinks.
    let rows = crosstalk_study(16, &[17, 24, 32, 64], 10);
    for pair in rows.windows(2) {
        let (a, b) = (&pair[0], &pair[1]);
        assert!(b.rms_error_orthonormal > a.rms_error_orthonormal);
        let gap = |r: &CrosstalkRow| r.rms_error - r.rms_error_orthonormal;
        assert!(gap(a) > 0.0 && gap(b) < gap(a), "n {}", b.n);
    }
}

#[test]
fn bad_input_is_an_error_naming_the_problem() {
    let keys = randn(&mut seeded(0), 5, 4);
    let values = randn(&mut seeded(1), 6, 3);
    let msg = sum_rule_recall(&keys, &values).err().unwrap().to_string();
    assert!(msg.contains("k is [5, 4]") && msg.contains("v is [6, 3]"));
    let empty = Array2::<f64>::zeros((0, 4));
    assert!(sum_rule_recall(&empty, &empty).is_err());
}
