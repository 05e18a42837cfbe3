use super::study::*;
use super::*;
use crate::linalg::orthonormal_keys;
use crate::m3::delete_softmax::{RANK_TOL, numerical_rank};
use crate::paper::capacity::{crosstalk, one_hot_total_error, sum_rule_recall};
use crate::random::seeded;
use approx::assert_relative_eq;
use ndarray::{Array, array};

fn random_symmetric(seed: u64, n: usize) -> Array2<f64> {
    let b = randn(&mut seeded(seed), n, n);
    &b + &b.t()
}

#[test]
fn orthonormal_keys_make_every_cross_term_vanish() {
    for seed in 0..10 {
        for (n, d, m) in [(1, 1, 1), (3, 5, 2), (8, 8, 4), (20, 32, 7)] {
            let mut rng = seeded(seed);
            let keys = orthonormal_keys(&mut rng, n, d).unwrap();
            let values = randn(&mut rng, n, m);
            for i in 0..n {
                let leak = crosstalk(&keys, &values, i);
                assert!(leak.iter().all(|x| x.abs() < 1e-12));
            }
            let errors = sum_rule_recall(&keys, &values).unwrap();
            assert!(errors.iter().all(|&e| e < 1e-12), "seed {seed}");
            let overlaps = pairwise_overlaps(&keys);
            if n >= 2 {
                assert!(overlaps.unwrap().iter().all(|c| c.abs() < 1e-12));
            }
        }
    }
}

#[test]
fn no_d_plus_one_vectors_in_d_dimensions_are_orthonormal() {
    // d + 1 vectors in ℝ^d have rank ≤ d, so K Kᵀ ≠ I: at least one
    // unit of ‖K Kᵀ − I‖²_F is missing, whatever the vectors.
    for seed in 0..10 {
        for d in [1, 2, 5, 16] {
            let mut rng = seeded(seed);
            let mut keys = randn(&mut rng, d + 1, d);
            assert_eq!(numerical_rank(&keys, RANK_TOL), d);
            assert!(one_hot_total_error(&unit_rows(&keys)) >= 1.0 - 1e-9);
            // The best try: d orthonormal keys and one more unit key.
            keys.slice_mut(s![..d, ..])
                .assign(&orthonormal_keys(&mut rng, d, d).unwrap());
            let keys = unit_rows(&keys);
            assert_eq!(numerical_rank(&keys, RANK_TOL), d);
            assert!(one_hot_total_error(&keys) >= 1.0 - 1e-9);
        }
    }
}

#[test]
fn random_unit_keys_overlap_by_about_one_over_sqrt_d() {
    let rows = overlap_study(&OVERLAP_WIDTHS, OVERLAP_N, OVERLAP_SEEDS);
    for r in &rows {
        let ratio = r.rms_times_sqrt_d;
        assert!((0.9..1.1).contains(&ratio), "d {}: {ratio}", r.d);
    }
    for pair in rows.windows(2) {
        assert!(pair[1].rms < pair[0].rms);
        assert!(pair[1].largest < pair[0].largest);
    }
    // The worst of many pairs sits well above the typical one: at every
    // width, and by more than two and a half times past the smallest.
    for r in &rows {
        assert!(r.largest > 1.5 * r.rms, "d {}", r.d);
    }
    for r in &rows[1..] {
        assert!(r.largest > 2.5 * r.rms, "d {}", r.d);
    }
    // Seed by seed too, at several numbers of keys.
    for seed in 0..10 {
        for (n, d) in [(24, 8), (32, 100), (20, 500)] {
            let keys = randn(&mut seeded(seed), n, d);
            let o = pairwise_overlaps(&keys).unwrap().to_vec();
            let ratio = rms(&o) * (d as f64).sqrt();
            assert!((0.8..1.2).contains(&ratio), "seed {seed} d {d}");
        }
    }
}

#[test]
fn tiny_overlaps_still_add_up_to_crosstalk_past_d_keys() {
    // Each overlap is about 1/√d, but the read sums n − 1 of them: with
    // 4d keys the typical overlap stays near 1/√d and the typical
    // error exceeds the length of a value (one).
    for d in [16, 32, 64] {
        for seed in 0..5 {
            let mut rng = seeded(seed);
            let keys = unit_rows(&randn(&mut rng, 4 * d, d));
            let values = unit_rows(&randn(&mut rng, 4 * d, 8));
            let o = pairwise_overlaps(&keys).unwrap().to_vec();
            let ratio = rms(&o) * (d as f64).sqrt();
            assert!((0.8..1.2).contains(&ratio), "d {d}: {ratio}");
            let e = sum_rule_recall(&keys, &values).unwrap().to_vec();
            assert!(rms(&e) > 1.0, "d {d}, seed {seed}: {}", rms(&e));
        }
    }
}

#[test]
fn jacobi_returns_the_diagonal_of_a_diagonal_matrix() {
    for diag in [
        vec![3.0],
        vec![1.0, 2.0, 3.0],
        vec![-4.0, 0.0, 7.5, 1e-9, 2.0],
        vec![5.0, 5.0, 5.0],
        vec![-2.0, -2.0, -1.0],
    ] {
        let a = Array2::from_diag(&Array1::from(diag.clone()));
        let eig = jacobi_eigen(&a).unwrap();
        let mut want = diag.clone();
        want.sort_by(|x, y| y.total_cmp(x));
        assert_eq!(eig.values.to_vec(), want);
        // The eigenvectors are unit vectors along the axes.
        let abs = eig.vectors.mapv(f64::abs);
        assert_relative_eq!(abs.sum_axis(Axis(0)), Array::ones(diag.len()));
        assert!(abs.iter().all(|&x| x == 0.0 || x == 1.0));
    }
}

#[test]
fn jacobi_matches_the_closed_form_for_two_by_two() {
    let h = 0.5f64.sqrt();
    let eig = jacobi_eigen(&array![[2.0, 1.0], [1.0, 2.0]]).unwrap();
    assert_relative_eq!(eig.values, array![3.0, 1.0], epsilon = 1e-14);
    let v0 = eig.vectors.column(0).mapv(f64::abs);
    assert_relative_eq!(v0, array![h, h], epsilon = 1e-14);
    let eig = jacobi_eigen(&array![[0.0, 1.0], [1.0, 0.0]]).unwrap();
    assert_relative_eq!(eig.values, array![1.0, -1.0], epsilon = 1e-14);
    // [[a, b], [b, c]]: λ = (a + c)/2 ± √(((a − c)/2)² + b²).
    for seed in 0..20 {
        let x = randn(&mut seeded(seed), 1, 3) * 10.0;
        let (a, b, c) = (x[[0, 0]], x[[0, 1]], x[[0, 2]]);
        let eig = jacobi_eigen(&array![[a, b], [b, c]]).unwrap();
        let r = (((a - c) / 2.0).powi(2) + b * b).sqrt();
        let want = array![(a + c) / 2.0 + r, (a + c) / 2.0 - r];
        assert_relative_eq!(eig.values, want, epsilon = 1e-12 * r);
    }
}

#[test]
fn jacobi_reconstructs_the_matrix_from_orthonormal_eigenvectors() {
    for seed in 0..10 {
        for (n, size) in [1, 2, 3, 8, 24]
            .into_iter()
            .zip([1.0, 1e-8, 1e8, 1.0, 1e-8])
        {
            let a = random_symmetric(seed, n) * size;
            let eig = jacobi_eigen(&a).unwrap();
            let v = &eig.vectors;
            let back = v.dot(&Array2::from_diag(&eig.values)).dot(&v.t());
            let scale = a.iter().fold(0.0, |m: f64, x| m.max(x.abs()));
            assert_relative_eq!(back, a, epsilon = 1e-12 * scale);
            assert_relative_eq!(v.t().dot(v), Array2::eye(n), epsilon = 1e-12);
            let trace = a.diag().sum();
            assert_relative_eq!(
                eig.values.sum(),
                trace,
                epsilon = 1e-11 * scale
            );
            assert!(eig.values.windows(2).into_iter().all(|w| w[0] >= w[1]));
        }
    }
}

#[test]
fn singular_values_recover_a_known_spectrum() {
    // K = A diag(s) B with orthonormal columns in A and rows in B has
    // singular values s, whatever A and B.
    for seed in 0..10 {
        for (n, d, s) in [
            (5, 7, vec![4.0, 2.0, 1.0, 0.5, 0.25]),
            (9, 4, vec![3.0, 3.0, 1e-3, 1e-3]),
            (6, 6, vec![10.0, 0.0, 0.0, 0.0, 0.0, 0.0]),
        ] {
            let mut rng = seeded(seed);
            let r = s.len();
            let a = orthonormal_keys(&mut rng, r, n).unwrap().reversed_axes();
            let b = orthonormal_keys(&mut rng, r, d).unwrap();
            let s = Array1::from(s);
            let k = a.dot(&Array2::from_diag(&s)).dot(&b);
            let sigma = singular_values(&k).unwrap();
            assert_relative_eq!(sigma, s, epsilon = 1e-9);
        }
    }
}

#[test]
fn effective_rank_of_n_orthonormal_keys_is_n() {
    for seed in 0..10 {
        for (n, d) in [(1, 1), (1, 5), (3, 3), (7, 16), (16, 16)] {
            let keys = orthonormal_keys(&mut seeded(seed), n, d).unwrap();
            let erank = effective_rank(&keys).unwrap();
            assert_relative_eq!(erank, n as f64, max_relative = 1e-9);
            // Scaled all alike, still n.
            let erank = effective_rank(&(&keys * 7.5)).unwrap();
            assert_relative_eq!(erank, n as f64, max_relative = 1e-9);
        }
    }
}

#[test]
fn effective_rank_of_n_copies_of_one_key_is_one() {
    for seed in 0..10 {
        for (n, d) in [(1, 3), (4, 4), (16, 8), (40, 32)] {
            let mut rng = seeded(seed);
            let key = randn(&mut rng, 1, d);
            let copies = Array2::from_shape_fn((n, d), |(_, j)| key[[0, j]]);
            let erank = effective_rank(&copies).unwrap();
            assert_relative_eq!(erank, 1.0, max_relative = 1e-9);
            assert_eq!(numerical_rank(&copies, RANK_TOL), 1);
            // Copies of different lengths are still one direction.
            let lengths = randn(&mut rng, n, 1);
            let erank = effective_rank(&(&copies * &lengths)).unwrap();
            assert_relative_eq!(erank, 1.0, max_relative = 1e-9);
            let rho_one = correlated_keys(&mut rng, n, d, 1.0).unwrap();
            let erank = effective_rank(&rho_one).unwrap();
            assert_relative_eq!(erank, 1.0, max_relative = 1e-9);
        }
    }
}

#[test]
fn effective_rank_lies_between_one_and_the_numerical_rank() {
    for seed in 0..10 {
        for (n, d, r) in [(6, 6, 6), (12, 5, 5), (20, 30, 4), (8, 40, 8)] {
            let mut rng = seeded(seed);
            let keys = randn(&mut rng, n, r).dot(&randn(&mut rng, r, d));
            let rank = numerical_rank(&keys, RANK_TOL);
            assert_eq!(rank, r.min(n).min(d));
            let erank = effective_rank(&keys).unwrap();
            assert!(erank >= 1.0 && erank <= rank as f64 + 1e-9);
            assert!(erank < rank as f64 || rank == 1, "seed {seed}");
        }
    }
}

#[test]
fn correlated_keys_have_full_rank_but_effective_rank_well_below_count() {
    for seed in 0..10 {
        for (n, d) in [(16, 32), (24, 24), (32, 64)] {
            let mut rng = seeded(seed);
            let random = correlated_keys(&mut rng, n, d, 0.0).unwrap();
            let shared = correlated_keys(&mut rng, n, d, 0.9).unwrap();
            // Neither loses a direction: the numerical rank is n, and
            // so for every correlated set of the chapter's table below
            // rho = 1.
            for keys in [&random, &shared] {
                assert_eq!(numerical_rank(keys, RANK_TOL), n);
            }
            for set in PRIMER_SETS {
                if let KeySet::Correlated(rho) = set
                    && rho < 1.0
                {
                    let keys = correlated_keys(&mut rng, n, d, rho).unwrap();
                    let rank = numerical_rank(&keys, RANK_TOL);
                    assert_eq!(rank, n, "seed {seed}, rho {rho}");
                }
            }
            let (e_random, e_shared) = (
                effective_rank(&random).unwrap(),
                effective_rank(&shared).unwrap(),
            );
            // But the shared direction dominates the spectrum.
            assert!(e_shared < 0.6 * n as f64, "seed {seed}: {e_shared}");
            assert!(e_shared < 0.65 * e_random, "seed {seed} n {n}");
        }
    }
}

#[test]
fn lower_effective_rank_gives_larger_sum_rule_recall_error_at_equal_n() {
    // Key sets of equal n, ordered from the highest effective rank to
    // the lowest: the recall error must grow in that order, seed by
    // seed, whether n is below d or past it.
    let sets = PRIMER_SETS;
    for seed in 0..5 {
        for (n, d) in [(8, 16), (16, 32), (24, 16)] {
            let sets: Vec<KeySet> = sets
                .iter()
                .copied()
                .filter(|s| n <= d || *s != KeySet::Orthonormal)
                .collect();
            let rows = effective_rank_study(&sets, n, d, 8, seed..seed + 1);
            for pair in rows.windows(2) {
                let (a, b) = (&pair[0], &pair[1]);
                assert!(
                    b.effective_rank.median < a.effective_rank.median,
                    "seed {seed}, n {n}: {:?} vs {:?}",
                    a.keys,
                    b.keys
                );
                assert!(b.rms_error > a.rms_error, "seed {seed} n {n}");
            }
        }
    }
}

#[test]
fn the_overlaps_are_the_cosines_of_every_pair_in_order() {
    // Two keys: one pair; their lengths do not matter.
    let o = pairwise_overlaps(&array![[1.0, 0.0], [3.0, 3.0]]).unwrap();
    assert_relative_eq!(o, array![0.5f64.sqrt()], epsilon = 1e-15);
    // Three keys: (0, 1), (0, 2), (1, 2), worked by hand.
    let keys = array![[1.0, 0.0], [0.0, 2.0], [3.0, 4.0]];
    let o = pairwise_overlaps(&keys).unwrap();
    assert_relative_eq!(o, array![0.0, 0.6, 0.8], epsilon = 1e-15);
}

#[test]
fn bad_input_is_an_error_naming_the_problem() {
    let msg = |e: InputError| e.to_string();
    let rect = Array2::<f64>::zeros((2, 3));
    let e = msg(jacobi_eigen(&rect).err().unwrap());
    assert!(e.contains("a is [2, 3]") && e.contains("square"), "{e}");
    let e = msg(jacobi_eigen(&array![[1.0, 2.0], [0.0, 1.0]]).err().unwrap());
    assert!(e.contains("symmetric"), "{e}");
    let e = msg(jacobi_eigen(&array![[f64::NAN]]).err().unwrap());
    assert!(e.contains("non-finite"), "{e}");
    let empty = Array2::<f64>::zeros((0, 4));
    assert!(msg(singular_values(&empty).err().unwrap()).contains("empty"));
    let zero = Array2::<f64>::zeros((3, 4));
    let e = msg(effective_rank(&zero).err().unwrap());
    assert!(e.contains("zero keys"), "{e}");
    let e = msg(pairwise_overlaps(&randn(&mut seeded(0), 1, 4))
        .err()
        .unwrap());
    assert!(e.contains("two keys"), "{e}");
    let mut keys = randn(&mut seeded(0), 3, 4);
    keys.row_mut(1).fill(0.0);
    let e = msg(pairwise_overlaps(&keys).err().unwrap());
    assert!(e.contains("zero key is 1"), "{e}");
}

#[test]
fn one_rotation_zeroes_its_entry_and_moves_its_weight_to_the_diagonal() {
    let off = |a: &Array2<f64>| -> f64 {
        let mut sum = 0.0;
        for ((i, j), x) in a.indexed_iter() {
            if i != j {
                sum += x * x;
            }
        }
        sum
    };
    let diag = |a: &Array2<f64>| a.diag().iter().map(|x| x * x).sum::<f64>();
    for seed in 0..10 {
        for n in [2, 3, 6, 11] {
            let g = randn(&mut seeded(seed), n, n);
            let a = &g + &g.t();
            for (p, q) in [(0, 1), (0, n - 1), (n / 2, n - 1)] {
                if p == q {
                    continue;
                }
                let (c, s) = zeroing_rotation(a[[p, p]], a[[q, q]], a[[p, q]]);
                let mut turned = a.clone();
                let mut v = Array2::<f64>::eye(n);
                rotate(&mut turned, &mut v, p, q, c, s);
                let scale = diag(&a) + off(&a);
                assert!(turned[[p, q]].abs() < 1e-12 * scale.sqrt());
                assert!(turned[[q, p]].abs() < 1e-12 * scale.sqrt());
                let moved = 2.0 * a[[p, q]] * a[[p, q]];
                assert_relative_eq!(
                    off(&a) - off(&turned),
                    moved,
                    epsilon = 1e-10 * scale
                );
                assert_relative_eq!(
                    diag(&turned) - diag(&a),
                    moved,
                    epsilon = 1e-10 * scale
                );
            }
        }
    }
}

#[test]
fn numerical_rank_counts_the_nonzero_singular_values() {
    for seed in 0..10 {
        for (n, d, r) in
            [(6, 6, 6), (12, 5, 3), (20, 30, 4), (8, 40, 8), (9, 9, 1)]
        {
            let mut rng = seeded(seed);
            let keys = randn(&mut rng, n, r).dot(&randn(&mut rng, r, d));
            let sigma = singular_values(&keys).unwrap();
            let nonzero = sigma.iter().filter(|&&x| x > 0.0).count();
            assert_eq!(numerical_rank(&keys, RANK_TOL), nonzero);
            assert_eq!(nonzero, r, "seed {seed}");
        }
    }
}

#[test]
fn a_shared_direction_makes_the_overlaps_near_rho_on_average() {
    for seed in 0..5 {
        for d in [64, 256] {
            for rho in [0.0, 0.3, 0.6, 0.9] {
                let keys =
                    correlated_keys(&mut seeded(seed), 32, d, rho).unwrap();
                let o = pairwise_overlaps(&keys).unwrap();
                let mean = o.mean().unwrap();
                assert!((mean - rho).abs() < 0.1, "d {d} rho {rho}: {mean}");
                if rho == 0.0 {
                    let ratio = rms(&o.to_vec()) * (d as f64).sqrt();
                    assert!((0.8..1.2).contains(&ratio), "d {d}: {ratio}");
                }
            }
        }
    }
}

#[test]
fn correlation_outside_zero_one_is_refused() {
    for rho in [1.5, -0.1, f64::NAN] {
        let err = correlated_keys(&mut seeded(0), 3, 4, rho).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("ρ") && text.contains("[0, 1]"), "{text}");
    }
    for rho in [0.0, 1.0] {
        assert!(correlated_keys(&mut seeded(0), 3, 4, rho).is_ok());
    }
}
