//! One write: sum normalisation, the write strength, rewriting a key, the
//! write as a regression step and as a transition, and the rules it is
//! compared with.

use super::*;

#[test]
fn a_delta_rewrite_replaces_the_value_at_its_key_a_sum_write_adds_to_it() {
    for (m, p, key, seed) in [(6, 6, 2, 7), (3, 5, 0, 1), (4, 2, 1, 9)] {
        let r = rewrite_one_key(m, p, key, seed);
        let same = |a: ndarray::ArrayView1<f64>, b: &Array1<f64>| {
            a.iter().zip(b).all(|(x, y)| (x - y).abs() < 1e-12)
        };
        for j in 0..p {
            let (old, sum, delta) = (
                r.before.column(j),
                r.after_sum.column(j),
                r.after_delta.column(j),
            );
            if j == key {
                // Replaced: the new value; added: old plus new.
                assert!(same(delta, &r.new_value), "seed {seed}");
                assert!(same(sum, &(&old + &r.new_value)), "seed {seed}");
                assert!(!same(delta, &old.to_owned()), "seed {seed}");
            } else {
                // Every other association stays as it was.
                assert!(same(delta, &old.to_owned()), "seed {seed}");
                assert!(same(sum, &old.to_owned()), "seed {seed}");
            }
        }
    }
}

#[test]
fn sum_normalised_features_are_weights_that_sum_to_one() {
    for seed in 0..10 {
        let x = randn(&mut seeded(seed), 1, 8).row(0).to_owned();
        for phi in [elu_plus_one(&x), dpfp(&x, 2).unwrap()] {
            let k_bar = sum_normalise(&phi).unwrap();
            assert_relative_eq!(k_bar.sum(), 1.0, epsilon = 1e-12);
            assert!(k_bar.iter().all(|&w| w >= 0.0));
            // Weights that sum to one: ‖k̄‖² ≤ 1, below 1 unless one-hot.
            assert!(k_bar.dot(&k_bar) < 1.0, "seed {seed}");
            // Scaling φ(k) changes nothing: only its direction counts.
            assert_relative_eq!(
                sum_normalise(&(&phi * 7.5)).unwrap(),
                k_bar,
                max_relative = 1e-12
            );
        }
    }
}

#[test]
fn a_sum_normalised_key_has_unit_length_only_when_one_hot() {
    // ‖k̄‖² = Σ w_i² ≤ (Σ w_i)² = 1 for weights w_i ≥ 0, with equality
    // only when one weight is 1: over random supports of 1 to p entries.
    for seed in 0..10 {
        let mut rng = seeded(seed);
        for p in [1, 2, 8, 64] {
            let x = randn(&mut rng, 1, p).row(0).mapv(f64::abs);
            for support in 1..=p.min(5) {
                let mut phi = Array1::zeros(p);
                for i in 0..support {
                    phi[(i * 7 + seed as usize) % p] = x[i] + 0.1;
                }
                let k_bar = sum_normalise(&phi).unwrap();
                let n2 = k_bar.dot(&k_bar);
                if support == 1 {
                    assert_eq!(n2, 1.0, "one-hot, p {p}");
                } else {
                    assert!(n2 < 1.0 - 1e-6, "p {p}, support {support}");
                }
            }
        }
    }
}

#[test]
fn sum_normalising_all_zero_features_is_refused() {
    // DPFP of the zero vector is all zeros: 0/0 would be NaN.
    let err = sum_normalise(&dpfp(&array![0.0, 0.0], 1).unwrap()).unwrap_err();
    assert!(matches!(err, InputError::NonPositive { .. }), "{err}");
}

#[test]
fn write_strength_is_a_logistic_of_the_input_between_0_and_1() {
    for seed in 0..10 {
        let mut rng = seeded(seed);
        let x = randn(&mut rng, 20, 6) * 3.0;
        let w = randn(&mut rng, 1, 6).row(0).to_owned();
        let beta = write_strength(&x, &w).unwrap();
        for t in 0..20 {
            let a: f64 = x.row(t).dot(&w);
            assert_relative_eq!(beta[t], 1.0 / (1.0 + (-a).exp()));
            assert!(beta[t] > 0.0 && beta[t] < 1.0);
        }
    }
    let zero = Array1::zeros(6);
    let x = randn(&mut seeded(0), 3, 6);
    assert_eq!(write_strength(&x, &zero).unwrap(), array![0.5, 0.5, 0.5]);
    let msg = write_strength(&x, &Array1::zeros(5)).err().unwrap();
    assert!(msg.to_string().contains("w_beta is [1, 5]"), "{msg}");
}

#[test]
fn with_beta_one_a_rewritten_key_returns_the_new_value() {
    for seed in 0..10 {
        for (d, m) in [(2, 1), (8, 8), (32, 5)] {
            let [keys, values, memory] = appendix_a(seed, d, m);
            let (k2, v2, v3) = (keys.row(1), values.row(1), values.row(2));
            // The delta rule replaces v2 by v3 ...
            let mut delta = memory.clone();
            let v_bar = delta_rule_step(&mut delta, &k2, &v3, 1.0).unwrap();
            assert_relative_eq!(v_bar, v2, max_relative = 1e-12);
            assert_relative_eq!(delta.dot(&k2), v3, max_relative = 1e-10);
            // ... the sum rule returns the sum of old and new.
            let mut sum = memory.clone();
            fast_weight_write(&mut sum, &v3, &k2).unwrap();
            assert_relative_eq!(sum.dot(&k2), &v2 + &v3, max_relative = 1e-10);
        }
    }
}

#[test]
fn beta_interpolates_between_the_old_and_the_new_value() {
    for seed in 0..10 {
        let [keys, values, memory] = appendix_a(seed, 8, 4);
        let (k2, v2, v3) = (keys.row(1), values.row(1), values.row(2));
        for beta in BETAS {
            let mut w = memory.clone();
            delta_rule_step(&mut w, &k2, &v3, beta).unwrap();
            let want = &v2 * (1.0 - beta) + &v3 * beta;
            assert_relative_eq!(
                w.dot(&k2),
                want,
                max_relative = 1e-10,
                epsilon = 1e-12
            );
        }
    }
}

#[test]
fn the_delta_rule_keeps_unrelated_associations_the_gated_rule_fades_them() {
    // Appendix A: rewrite k2 with v3. Both rules move the read of k2 to
    // (1 − β) v2 + β v3; only the gated rule also scales v1 at k1.
    for seed in 0..10 {
        for (d, m) in [(2, 3), (8, 8), (32, 5)] {
            let [keys, values, memory] = appendix_a(seed, d, m);
            let (k1, k2) = (keys.row(0), keys.row(1));
            let (v1, v2, v3) = (values.row(0), values.row(1), values.row(2));
            for beta in BETAS {
                let mut delta = memory.clone();
                delta_rule_step(&mut delta, &k2, &v3, beta).unwrap();
                let mut gated = memory.clone();
                gated_rule_step(&mut gated, &k2, &v3, beta).unwrap();
                let new = &v2 * (1.0 - beta) + &v3 * beta;
                for w in [&delta, &gated] {
                    assert_relative_eq!(
                        w.dot(&k2),
                        new,
                        max_relative = 1e-10,
                        epsilon = 1e-12
                    );
                }
                assert_relative_eq!(delta.dot(&k1), v1, max_relative = 1e-10);
                assert_relative_eq!(
                    gated.dot(&k1),
                    &v1 * (1.0 - beta),
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
                if beta > 0.0 {
                    let lost = crate::linalg::norm(&(&gated.dot(&k1) - &v1));
                    assert!(lost > 0.05 * crate::linalg::norm(&v1));
                }
            }
        }
    }
}

/// A random memory, key, value: the key sum-normalised (`normalised`)
/// or raw Gaussian, so the claims are checked for any key.
fn association(
    seed: u64,
    m: usize,
    p: usize,
    normalised: bool,
) -> (Array2<f64>, Array1<f64>, Array1<f64>) {
    let mut rng = seeded(seed);
    let w = randn(&mut rng, m, p);
    let raw = randn(&mut rng, 1, p).row(0).to_owned();
    let k = if normalised {
        sum_normalise(&elu_plus_one(&raw)).unwrap()
    } else {
        raw
    };
    let v = randn(&mut rng, 1, m).row(0).to_owned();
    (w, k, v)
}

#[test]
fn at_beta_norm_squared_one_the_write_projects_onto_the_matrices_that_map_the_key_to_the_value()
 {
    // S' k̄ = v exactly, and the change S' − S is orthogonal (in the
    // Frobenius inner product) to every X with X k̄ = 0: it is the
    // orthogonal projection of S onto {S : S k̄ = v}.
    for seed in 0..10 {
        for (m, p, normalised) in [(1, 1, true), (4, 8, false), (6, 5, true)] {
            let (w, k, v) = association(seed, m, p, normalised);
            let mut written = w.clone();
            delta_rule_step(&mut written, &k, &v, 1.0 / k.dot(&k)).unwrap();
            assert_relative_eq!(
                written.dot(&k),
                v,
                max_relative = 1e-10,
                epsilon = 1e-12
            );
            let change = &written - &w;
            for s in 0..3 {
                // X = a uᵀ with u ⊥ k̄ maps k̄ to 0.
                let a =
                    randn(&mut seeded(seed + 50 + s), 1, m).row(0).to_owned();
                let u = orthogonal_to(&k, seed + s);
                let inner = a.dot(&change.dot(&u));
                let scale = crate::linalg::norm(&a)
                    * change.mapv(|x| x * x).sum().sqrt()
                    * crate::linalg::norm(&u);
                assert!(inner.abs() <= 1e-10 * scale.max(1e-300), "{inner}");
            }
        }
    }
}

#[test]
fn the_regression_gradient_matches_central_differences() {
    let h = 1e-6;
    for seed in 0..5 {
        for (m, p, normalised) in [(1, 1, true), (3, 8, false), (5, 6, true)] {
            let (w, k, v) = association(seed, m, p, normalised);
            let gradient = regression_gradient(&w, &k, &v).unwrap();
            for ((a, b), &g) in gradient.indexed_iter() {
                let (mut up, mut down) = (w.clone(), w.clone());
                up[[a, b]] += h;
                down[[a, b]] -= h;
                let numeric = (regression_loss(&up, &k, &v).unwrap()
                    - regression_loss(&down, &k, &v).unwrap())
                    / (2.0 * h);
                assert_relative_eq!(
                    g,
                    numeric,
                    max_relative = 1e-6,
                    epsilon = 1e-8
                );
            }
        }
    }
}

#[test]
fn the_delta_write_is_one_gradient_step_on_the_regression_loss() {
    // S − β (S k̄ − v) k̄ᵀ = S + β (v − S k̄) k̄ᵀ: the same matrix, for
    // any memory, any key (normalised or not), any value and any β.
    for seed in 0..10 {
        for (m, p, normalised) in [(1, 1, true), (4, 8, false), (6, 5, true)] {
            let (w, k, v) = association(seed, m, p, normalised);
            for beta in [0.0, 0.3, 1.0, 1.7] {
                let descended =
                    &w - &(regression_gradient(&w, &k, &v).unwrap() * beta);
                let mut written = w.clone();
                delta_rule_step(&mut written, &k, &v, beta).unwrap();
                assert_relative_eq!(
                    written,
                    descended,
                    max_relative = 1e-12,
                    epsilon = 1e-12
                );
            }
        }
    }
}

#[test]
fn one_step_multiplies_the_loss_by_one_minus_beta_norm_squared_squared() {
    for seed in 0..10 {
        for (m, p, normalised) in [(1, 1, true), (4, 8, false), (6, 5, true)] {
            let (mut w, k, v) = association(seed, m, p, normalised);
            let before = regression_loss(&w, &k, &v).unwrap();
            for beta in [0.0, 0.25, 0.5, 1.0] {
                let kept = w.clone();
                delta_rule_step(&mut w, &k, &v, beta).unwrap();
                let factor = (1.0 - beta * k.dot(&k)).powi(2);
                assert_relative_eq!(
                    regression_loss(&w, &k, &v).unwrap(),
                    factor * before,
                    max_relative = 1e-9,
                    epsilon = 1e-12
                );
                w = kept;
            }
        }
    }
}

#[test]
fn the_write_is_the_memory_times_the_transition_plus_the_new_association() {
    // W_t = W_{t−1} (I − β k̄ k̄ᵀ) + β v k̄ᵀ.
    for seed in 0..10 {
        for (m, p, normalised) in [(1, 1, true), (4, 8, false), (6, 5, true)] {
            let (w, k, v) = association(seed, m, p, normalised);
            for beta in [0.0, 0.4, 1.0] {
                let mut want = w.dot(&delta_transition(&k, beta).unwrap());
                fast_weight_write(&mut want, &v.mapv(|x| beta * x), &k)
                    .unwrap();
                let mut written = w.clone();
                delta_rule_step(&mut written, &k, &v, beta).unwrap();
                assert_relative_eq!(
                    written,
                    want,
                    max_relative = 1e-12,
                    epsilon = 1e-12
                );
            }
        }
    }
}

/// A vector orthogonal to k: a random one with its k part removed.
fn orthogonal_to(k: &Array1<f64>, seed: u64) -> Array1<f64> {
    let x = randn(&mut seeded(seed + 100), 1, k.len()).row(0).to_owned();
    &x - &(k * (x.dot(k) / k.dot(k)))
}

#[test]
fn the_transition_scales_the_key_by_one_minus_beta_norm_squared_and_keeps_the_rest()
 {
    // Eigenvalues: 1 − β‖k̄‖² along k̄, 1 on the p − 1 directions
    // orthogonal to it.
    for seed in 0..10 {
        for (p, normalised) in [(2, true), (8, false), (16, true)] {
            let (_, k, _) = association(seed, 1, p, normalised);
            let u = orthogonal_to(&k, seed);
            for beta in [0.0, 0.5, 1.0, 2.0] {
                let a = delta_transition(&k, beta).unwrap();
                let lambda = 1.0 - beta * k.dot(&k);
                assert_relative_eq!(
                    a.dot(&k),
                    &k * lambda,
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
                assert_relative_eq!(
                    a.dot(&u),
                    u,
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
                assert_eq!(a, a.t()); // symmetric: real eigenvalues
            }
        }
    }
}

#[test]
fn the_transition_never_lengthens_a_memory_row_exactly_when_beta_norm_squared_is_in_0_2()
 {
    for seed in 0..10 {
        for (p, normalised) in [(2, true), (8, false), (16, true)] {
            let (w, k, _) = association(seed, 6, p, normalised);
            let n2 = k.dot(&k);
            for step in [0.0, 0.5, 1.0, 1.5, 2.0, 2.5, 3.0] {
                let a = delta_transition(&k, step / n2).unwrap();
                // Inside [0, 2] no row of any memory grows ...
                for row in w.rows() {
                    let after = crate::linalg::norm(&row.dot(&a));
                    let grows =
                        after > crate::linalg::norm(&row) * (1.0 + 1e-12);
                    assert!(!grows || step > 2.0, "seed {seed}: {step}");
                }
                // ... outside it the key's own direction does.
                let along = crate::linalg::norm(&k.dot(&a));
                let grows = along > crate::linalg::norm(&k) * (1.0 + 1e-12);
                assert_eq!(grows, step > 2.0, "seed {seed}: {step}");
            }
        }
    }
}

#[test]
fn with_beta_norm_squared_two_the_transition_is_a_householder_reflection() {
    for seed in 0..10 {
        for (p, normalised) in [(2, true), (8, false), (16, true)] {
            let (_, k, _) = association(seed, 1, p, normalised);
            let a = delta_transition(&k, 2.0 / k.dot(&k)).unwrap();
            let eye = Array2::<f64>::eye(p);
            assert_relative_eq!(a.dot(&a), eye, epsilon = 1e-12);
            assert_relative_eq!(a.dot(&k), -&k, epsilon = 1e-12);
            // At β‖k̄‖² = 1 it is a projection instead: k̄ is sent to 0.
            let proj = delta_transition(&k, 1.0 / k.dot(&k)).unwrap();
            assert_relative_eq!(proj.dot(&proj), proj, epsilon = 1e-12);
            assert!(crate::linalg::norm(&proj.dot(&k)) < 1e-12);
        }
    }
}

#[test]
fn a_delta_write_moves_the_read_beta_times_norm_squared_of_the_way() {
    // S' k̄ − v = (1 − β‖k̄‖²)(v̄ − v), for any memory and any key:
    // sum-normalised, raw Gaussian, and long (‖k‖² up to about 50).
    for seed in 0..10 {
        for (p, m, key) in
            [(1, 1, 0), (8, 3, 0), (48, 16, 0), (8, 3, 1), (48, 16, 2)]
        {
            let mut rng = seeded(seed);
            let mut w = randn(&mut rng, m, p);
            let raw = randn(&mut rng, 1, p).row(0).to_owned();
            let k = match key {
                0 => sum_normalise(&elu_plus_one(&raw)).unwrap(),
                1 => raw,
                _ => elu_plus_one(&raw),
            };
            let v = randn(&mut rng, 1, m).row(0).to_owned();
            for beta in BETAS {
                let before = w.clone();
                let v_bar = delta_rule_step(&mut w, &k, &v, beta).unwrap();
                assert_eq!(v_bar, before.dot(&k));
                let step = beta * k.dot(&k);
                let want = (&v_bar - &v) * (1.0 - step);
                assert_relative_eq!(
                    &w.dot(&k) - &v,
                    want,
                    max_relative = 1e-9,
                    epsilon = 1e-12
                );
                w = before;
            }
        }
    }
}

#[test]
fn without_sum_normalisation_repeated_writes_of_one_key_can_diverge() {
    // The error of the read after each write is multiplied by
    // 1 − β‖k‖². A sum-normalised key has ‖k̄‖² ≤ 1, so for β ∈ [0, 1]
    // the factor lies in [0, 1]; a raw φ(k) can make it exceed 1 in size.
    for seed in 0..10 {
        let mut rng = seeded(seed);
        let phi = elu_plus_one(&randn(&mut rng, 1, 16)).row(0).to_owned();
        let v = randn(&mut rng, 1, 4).row(0).to_owned();
        for (key, should_grow) in
            [(phi.clone(), true), (sum_normalise(&phi).unwrap(), false)]
        {
            let mut w = Array2::zeros((4, 16));
            let mut last = crate::linalg::norm(&v);
            for _ in 0..20 {
                delta_rule_step(&mut w, &key, &v, 0.5).unwrap();
                let err = crate::linalg::norm(&(&w.dot(&key) - &v));
                assert_eq!(err > last, should_grow, "seed {seed}");
                last = err;
            }
            if should_grow {
                assert!(last > 1e6, "seed {seed}: {last}");
            }
        }
    }
}

#[test]
fn sum_normalised_reads_are_convex_combinations_of_memory_columns() {
    for seed in 0..10 {
        let mut rng = seeded(seed);
        let w = randn(&mut rng, 5, 24);
        let q = sum_normalise(&dpfp(&randn(&mut rng, 1, 4).row(0), 3).unwrap())
            .unwrap();
        let y = w.dot(&q);
        for (i, row) in w.rows().into_iter().enumerate() {
            let lo = row.fold(f64::INFINITY, |a, &b| a.min(b));
            let hi = row.fold(f64::NEG_INFINITY, |a, &b| a.max(b));
            assert!(y[i] >= lo - 1e-12 && y[i] <= hi + 1e-12);
        }
    }
}

#[test]
fn every_rule_is_an_affine_step_with_its_own_transition() {
    // sum: A = I; decayed: A = a I; gated: A = (1 − β) I with input
    // β v kᵀ; delta: A = I − β k̄ k̄ᵀ with input β v k̄ᵀ.
    for seed in 0..5 {
        let (w, k, v) = association(seed, 3, 6, true);
        let (p, m) = (k.len(), v.len());
        let input = |scale: f64| {
            let mut b = Array2::zeros((m, p));
            fast_weight_write(&mut b, &v.mapv(|x| scale * x), &k).unwrap();
            b
        };
        let eye = Array2::<f64>::eye(p);
        for x in [0.0, 0.3, 0.9, 1.0] {
            let rules: [(Array2<f64>, AffineStep); 4] = [
                {
                    let mut s = w.clone();
                    fast_weight_write(&mut s, &v, &k).unwrap();
                    (
                        s,
                        AffineStep {
                            h: eye.clone(),
                            b: input(1.0),
                        },
                    )
                },
                {
                    let mut s = w.clone();
                    decayed_write_step(&mut s, &k, &v, x).unwrap();
                    (
                        s,
                        AffineStep {
                            h: &eye * x,
                            b: input(1.0),
                        },
                    )
                },
                {
                    let mut s = w.clone();
                    gated_rule_step(&mut s, &k, &v, x).unwrap();
                    (
                        s,
                        AffineStep {
                            h: &eye * (1.0 - x),
                            b: input(x),
                        },
                    )
                },
                {
                    let mut s = w.clone();
                    delta_rule_step(&mut s, &k, &v, x).unwrap();
                    let a = delta_transition(&k, x).unwrap();
                    (s, AffineStep { h: a, b: input(x) })
                },
            ];
            for (stepped, affine) in rules {
                assert_relative_eq!(
                    affine.apply(&w).unwrap(),
                    stepped,
                    max_relative = 1e-12,
                    epsilon = 1e-12
                );
            }
        }
    }
}

#[test]
fn the_decayed_write_fades_every_association_by_a() {
    // Orthonormal keys: after a write at k2, the read at k1 is a v1.
    for seed in 0..5 {
        let [keys, values, memory] = appendix_a(seed, 8, 4);
        let (k1, k2) = (keys.row(0), keys.row(1));
        for a in [0.0, 0.5, 0.9, 1.0] {
            let mut w = memory.clone();
            decayed_write_step(&mut w, &k2, &values.row(2), a).unwrap();
            assert_relative_eq!(
                w.dot(&k1),
                &values.row(0) * a,
                max_relative = 1e-10,
                epsilon = 1e-12
            );
            let want = &values.row(1) * a + values.row(2);
            assert_relative_eq!(
                w.dot(&k2),
                want,
                max_relative = 1e-10,
                epsilon = 1e-12
            );
        }
    }
}

#[test]
fn a_z_normalised_read_divides_an_overwritten_value_by_the_number_of_writes() {
    // One key written n times with β = 1: S k̄ = v_n, but z = n k̄, so
    // the read S q̄ / zᵀ q̄ at q̄ = k̄ is v_n / n. Sum normalisation alone
    // reads v_n.
    for seed in 0..5 {
        for (p, m) in [(2, 1), (8, 4), (16, 3)] {
            let mut rng = seeded(seed);
            let key = Array1::from_shape_fn(p, |i| f64::from(i == 1));
            let values = randn(&mut rng, 6, m);
            let mut w = Array2::zeros((m, p));
            let mut z = Array1::<f64>::zeros(p);
            for (n, v) in values.rows().into_iter().enumerate() {
                delta_rule_step(&mut w, &key, &v, 1.0).unwrap();
                z += &key;
                let writes = (n + 1) as f64;
                let with_z = w.dot(&key) / z.dot(&key);
                assert_relative_eq!(with_z, &v / writes, max_relative = 1e-12);
                assert_relative_eq!(w.dot(&key), v, max_relative = 1e-12);
            }
        }
    }
}
