use super::study::*;
use super::*;
use approx::assert_relative_eq;

/// Shapes (N, d, m) from a single token to a few hundred.
const SHAPES: [(usize, usize, usize); 5] =
    [(1, 1, 1), (2, 3, 4), (12, 8, 8), (50, 16, 5), (200, 64, 32)];

fn random_qkv(seed: u64, n: usize, d: usize, m: usize) -> Qkv {
    let mut rng = seeded(seed);
    Qkv {
        q: randn(&mut rng, n, d),
        k: randn(&mut rng, n, d),
        v: randn(&mut rng, n, m),
    }
}

#[test]
fn attention_weights_rows_sum_to_one() {
    for seed in 0..10 {
        for (n, d, m) in SHAPES {
            let Qkv { q, k, v } = random_qkv(seed, n, d, m);
            for mask in [Mask::None, Mask::Causal] {
                let a = softmax_attention(&q, &k, &v, mask).unwrap();
                assert!(worst_row_sum_error(&a.weights) < 1e-12);
                assert!(a.weights.iter().all(|&w| w >= 0.0));
            }
        }
    }
}

#[test]
fn causal_weights_are_zero_above_the_diagonal() {
    for seed in 0..10 {
        for (n, d, m) in SHAPES {
            let Qkv { q, k, v } = random_qkv(seed, n, d, m);
            let a = softmax_attention(&q, &k, &v, Mask::Causal).unwrap();
            assert_eq!(largest_future_weight(&a.weights), 0.0);
            // ... and the diagonal, always visible, gets weight.
            assert!(a.weights.diag().iter().all(|&w| w > 0.0));
        }
    }
}

#[test]
fn causal_output_does_not_change_when_the_future_does() {
    for seed in 0..10 {
        for (n, d, m) in [(2, 3, 4), (12, 8, 8), (30, 8, 4), (50, 16, 5)] {
            let Qkv { q, k, v } = random_qkv(seed, n, d, m);
            let before = softmax_attention(&q, &k, &v, Mask::Causal).unwrap();
            // Rewrite every key and value after position t.
            for t in [0, (n - 1) / 2, n - 2] {
                let mut rng = seeded(seed + 1000);
                let (mut k2, mut v2) = (k.clone(), v.clone());
                for j in t + 1..n {
                    k2.row_mut(j).assign(&randn(&mut rng, 1, d).row(0));
                    v2.row_mut(j).assign(&randn(&mut rng, 1, m).row(0));
                }
                let after =
                    softmax_attention(&q, &k2, &v2, Mask::Causal).unwrap();
                for row in 0..=t {
                    assert_eq!(before.output.row(row), after.output.row(row));
                }
                assert_ne!(before.output.row(t + 1), after.output.row(t + 1));
            }
        }
    }
}

#[test]
fn matrix_form_equals_the_per_query_sum() {
    // o_t = Σ_{j≤t} exp(q_t·k_j/√d) v_j / Σ_{j≤t} exp(q_t·k_j/√d)
    for seed in 0..10 {
        for (n, d, m) in SHAPES {
            let Qkv { q, k, v } = random_qkv(seed, n, d, m);
            let a = softmax_attention(&q, &k, &v, Mask::Causal).unwrap();
            for t in 0..n {
                let mut num = Array1::<f64>::zeros(m);
                let mut z = 0.0;
                for j in 0..=t {
                    let e = (q.row(t).dot(&k.row(j)) / (d as f64).sqrt()).exp();
                    num.scaled_add(e, &v.row(j));
                    z += e;
                }
                let o = num / z;
                assert_relative_eq!(
                    a.output.row(t),
                    o.view(),
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
            }
        }
    }
}

#[test]
fn softmax_rows_ignores_a_constant_added_to_a_row() {
    for seed in 0..10 {
        let s = randn(&mut seeded(seed), 6, 9);
        let shifted = &s + 123.0;
        assert_relative_eq!(
            softmax_rows(&s),
            softmax_rows(&shifted),
            max_relative = 1e-12
        );
    }
}

#[test]
fn attention_stays_finite_at_huge_scores() {
    // Scores of ±1e4: a naive exp would overflow to inf and give NaN.
    for seed in 0..10 {
        for (n, d, m) in SHAPES {
            let Qkv { q, k, v } = random_qkv(seed, n, d, m);
            let big = 1e4 * (d as f64).sqrt();
            let (q, k) =
                (unit_rows(&q) * big.sqrt(), unit_rows(&k) * big.sqrt());
            for mask in [Mask::None, Mask::Causal] {
                let a = softmax_attention(&q, &k, &v, mask).unwrap();
                assert!(a.weights.iter().all(|w| w.is_finite()));
                assert!(a.output.iter().all(|o| o.is_finite()));
                assert!(worst_row_sum_error(&a.weights) < 1e-12);
            }
        }
    }
    // At such scores the softmax is a hard max: all weight on the winner.
    let q = ndarray::array![[1e4], [-1e4]];
    let k = ndarray::array![[1.0], [-1.0]];
    let v = ndarray::array![[10.0], [20.0]];
    let a = softmax_attention(&q, &k, &v, Mask::None).unwrap();
    assert_eq!(a.weights, ndarray::array![[1.0, 0.0], [0.0, 1.0]]);
}

#[test]
fn shape_mismatch_is_an_error_naming_both_shapes() {
    let err = |q: &Array2<f64>, k: &Array2<f64>, v: &Array2<f64>, mask| {
        softmax_attention(q, k, v, mask)
            .err()
            .expect("a shape error")
            .to_string()
    };
    for seed in 0..3 {
        for (n, d, m) in [(2, 3, 4), (12, 8, 8), (40, 16, 5)] {
            let Qkv { q, k, v } = random_qkv(seed, n, d, m);
            let mut rng = seeded(seed + 10);
            for mask in [Mask::None, Mask::Causal] {
                // Keys narrower than the queries.
                let narrow = randn(&mut rng, n, d + 1);
                let msg = err(&q, &narrow, &v, mask);
                assert!(msg.contains(&format!("q is [{n}, {d}]")), "{msg}");
                let k_is = format!("k is [{n}, {}]", d + 1);
                assert!(msg.contains(&k_is), "{msg}");
                // One value fewer than keys.
                let short = randn(&mut rng, n - 1, m);
                let msg = err(&q, &k, &short, mask);
                assert!(msg.contains(&format!("k is [{n}, {d}]")), "{msg}");
                let v_is = format!("v is [{}, {m}]", n - 1);
                assert!(msg.contains(&v_is), "{msg}");
            }
            // A causal read has one key per query.
            let more = randn(&mut rng, n + 1, d);
            let msg = err(&more, &k, &v, Mask::Causal);
            let q_is = format!("q is [{}, {d}]", n + 1);
            assert!(msg.contains(&q_is), "{msg}");
            assert!(msg.contains(&format!("k is [{n}, {d}]")), "{msg}");
        }
    }
}

#[test]
fn empty_or_non_finite_input_is_an_error() {
    // Each operand in turn: empty (no token, or no column), or holding
    // a NaN or an infinity somewhere; the message names it.
    for seed in 0..5 {
        for (n, d, m) in [(3, 2, 2), (12, 8, 8), (40, 16, 5)] {
            for (i, name) in ["q", "k", "v"].into_iter().enumerate() {
                for mask in [Mask::None, Mask::Causal] {
                    let Qkv { q, k, v } = random_qkv(seed, n, d, m);
                    let mut qkv = [q, k, v];
                    let cols = qkv[i].ncols();
                    qkv[i] = Array2::zeros((0, cols));
                    let [q, k, v] = &qkv;
                    let msg = softmax_attention(q, k, v, mask)
                        .err()
                        .expect("an error")
                        .to_string();
                    let want = format!("empty input: {name} has shape");
                    assert!(msg.contains(&want), "{msg}");

                    let Qkv { q, k, v } = random_qkv(seed, n, d, m);
                    let mut qkv = [q, k, v];
                    let at = (seed as usize % n, (i + 1) % qkv[i].ncols());
                    let bad = [f64::NAN, f64::INFINITY][seed as usize % 2];
                    qkv[i][[at.0, at.1]] = bad;
                    let [q, k, v] = &qkv;
                    let msg = softmax_attention(q, k, v, mask)
                        .err()
                        .expect("an error")
                        .to_string();
                    let want = format!(
                        "non-finite value {bad} in {name} at [{}, {}]",
                        at.0, at.1
                    );
                    assert!(msg.contains(&want), "{msg}");
                }
            }
        }
    }
}

#[test]
fn projection_rejects_a_token_of_the_wrong_width() {
    let slow = random_projections(&mut seeded(0), 16, 8, 8);
    let x = randn(&mut seeded(1), 12, 15);
    let msg = slow.project(&x).err().unwrap().to_string();
    assert!(msg.contains("x is [12, 15]") && msg.contains("w_q is [8, 16]"));
}

#[test]
fn projection_gives_q_k_v_of_the_stated_shapes() {
    for (n, d_model, d, m) in [(1, 1, 1, 1), (12, 16, 8, 8), (40, 32, 16, 5)] {
        let slow = random_projections(&mut seeded(n as u64), d_model, d, m);
        let x = randn(&mut seeded(7), n, d_model);
        let Qkv { q, k, v } = slow.project(&x).unwrap();
        assert_eq!((q.dim(), k.dim(), v.dim()), ((n, d), (n, d), (n, m)));
        // q_t = W_Q x_t, row by row
        for t in 0..n {
            let q_t = slow.w_q.dot(&x.row(t));
            assert_relative_eq!(q.row(t), q_t.view(), max_relative = 1e-12);
        }
    }
}

#[test]
fn aligned_probe_beats_uniform_on_most_seeds() {
    // The study the chapter prints, and a larger one.
    let output = crate::outputs::ALL
        .iter()
        .find(|o| o.name == "attention-probe-study")
        .expect("the chapter's output");
    assert_eq!((output.run)(), probe_study(PROBE_SEEDS).to_string());
    for seeds in [100, 500] {
        let study = probe_study(seeds);
        assert!(study.beats_uniform * 100 >= 85 * seeds as usize);
        assert!(study.beats_uniform < seeds as usize, "no miss: {study}");
        assert!(study.weight_on_target.median > 0.9, "{study}");
        assert!(study.retrieval_error.median < 0.2, "{study}");
    }
}

#[test]
fn random_projections_give_entries_of_about_unit_size() {
    // Tokens with unit-variance entries: the mean square of the
    // entries of Q, K and V lies within a third of one.
    for (seed, d_model, d, m) in [(0, 16, 8, 8), (1, 32, 16, 4), (2, 64, 8, 32)]
    {
        let mut rng = seeded(seed);
        let slow = random_projections(&mut rng, d_model, d, m);
        let x = randn(&mut rng, 2000, d_model);
        let Qkv { q, k, v } = slow.project(&x).unwrap();
        for (name, a) in [("q", q), ("k", k), ("v", v)] {
            let square = a.mapv(|x| x * x).mean().unwrap();
            assert!((square - 1.0).abs() < 1.0 / 3.0, "{name}: {square}");
        }
    }
}

#[test]
fn an_overflowing_score_is_an_error_naming_the_scores_and_its_position() {
    for (i, j) in [(2, 1), (5, 0), (7, 7), (3, 6)] {
        let Qkv { mut q, mut k, v } = random_qkv(i as u64, 8, 4, 4);
        q.row_mut(i).fill(1e160);
        k.row_mut(j).fill(1e160);
        let mask = if j <= i { Mask::Causal } else { Mask::None };
        let msg = softmax_attention(&q, &k, &v, mask)
            .err()
            .expect("an overflow")
            .to_string();
        let at = format!("at [{i}, {j}]");
        assert!(msg.contains("overflow: Q Kᵀ / √d"), "{msg}");
        assert!(msg.contains(&at), "{msg}");
    }
}

#[test]
fn the_best_scoring_key_gets_the_largest_weight_and_a_growing_lead_takes_all() {
    for seed in 0..10 {
        let s = randn(&mut seeded(seed), 4, 12);
        let a = softmax_rows(&s);
        for (s_t, a_t) in s.rows().into_iter().zip(a.rows()) {
            // The weights are in the order of the scores.
            for i in 0..12 {
                for j in 0..12 {
                    if s_t[i] > s_t[j] {
                        assert!(a_t[i] > a_t[j], "seed {seed}");
                    }
                }
            }
        }
        // Raise the best key's lead: its weight climbs towards one.
        let mut top = Vec::new();
        for lead in [0.0, 2.0, 5.0, 10.0, 40.0] {
            let mut row = s.row(0).to_owned();
            let best = row.iter().copied().fold(f64::MIN, f64::max);
            let i = row.iter().position(|&x| x == best).unwrap();
            row[i] += lead;
            let a = softmax_rows(&row.insert_axis(ndarray::Axis(0)));
            top.push(a[[0, i]]);
        }
        assert!(top.windows(2).all(|w| w[0] < w[1]), "{top:?}");
        assert!(top[top.len() - 1] > 1.0 - 1e-12, "{top:?}");
    }
}

#[test]
fn a_weights_derivative_in_a_keys_score_is_at_most_that_keys_weight() {
    // ∂a_j/∂s_i = a_j (δ_ij − a_i): at most a_i in size, by central
    // differences, on spread and on saturated rows.
    let h = 1e-6;
    for seed in 0..5 {
        for spread in [1.0, 10.0] {
            let s = randn(&mut seeded(seed), 1, 12) * spread;
            let a = softmax_rows(&s);
            for i in 0..12 {
                let (mut up, mut down) = (s.clone(), s.clone());
                up[[0, i]] += h;
                down[[0, i]] -= h;
                let da = (softmax_rows(&up) - softmax_rows(&down)) / (2.0 * h);
                for j in 0..12 {
                    let bound = a[[0, i]] + 1e-8;
                    assert!(da[[0, j]].abs() <= bound, "seed {seed}");
                }
            }
        }
    }
}

#[test]
fn without_the_mask_queries_put_weight_on_the_future() {
    for seed in 0..10 {
        let (Qkv { q, k, v }, _) = walkthrough(seed);
        let a = softmax_attention(&q, &k, &v, Mask::None).unwrap();
        assert!(largest_future_weight(&a.weights) > 0.0, "seed {seed}");
    }
}

#[test]
fn aligned_probe_misses_only_when_another_key_scores_higher() {
    let mut misses = 0;
    for seed in 0..500 {
        let (Qkv { k, v, .. }, _) = walkthrough(seed);
        let probe = aligned_probe(&k, &v, 5, 6.0).unwrap();
        if probe.weight_on_target <= 1.0 / 12.0 {
            misses += 1;
            let own = k.row(5).dot(&k.row(5));
            let rival = (0..12)
                .filter(|&i| i != 5)
                .map(|i| k.row(i).dot(&k.row(5)))
                .fold(f64::NEG_INFINITY, f64::max);
            assert!(rival > own, "seed {seed}");
        }
    }
    // The check above must have run: some seeds do miss.
    assert!(misses > 0, "no seed missed, nothing was checked");
}

#[test]
fn with_unit_length_keys_the_aimed_key_always_wins() {
    for seed in 0..500 {
        let (Qkv { k, v, .. }, _) = walkthrough(seed);
        let k = unit_rows(&k);
        for target in [0, 5, 11] {
            let p = aligned_probe(&k, &v, target, 6.0).unwrap();
            let best = p.weights.fold(0.0, |m: f64, &w| m.max(w));
            assert_eq!(p.weight_on_target, best, "seed {seed}");
            assert!(p.weight_on_target > 1.0 / 12.0, "seed {seed}");
        }
    }
    let study = probe_study(PROBE_SEEDS);
    assert_eq!(study.beats_uniform_unit_keys, PROBE_SEEDS as usize);
}

#[test]
fn aligned_probe_rejects_a_target_outside_the_sequence() {
    let (Qkv { k, v, .. }, _) = walkthrough(0);
    let msg = aligned_probe(&k, &v, 12, 6.0).err().unwrap().to_string();
    assert!(msg.contains("target is 12") && msg.contains("12 positions"));
}

#[test]
fn scaling_by_sqrt_d_keeps_score_variance_near_one() {
    for row in scale_study(&SCALE_WIDTHS, SCALE_SEEDS) {
        let d = row.d as f64;
        assert!((row.variance_scaled - 1.0).abs() < 0.1, "d = {d}");
        assert!((row.variance_raw / d - 1.0).abs() < 0.1, "d = {d}");
    }
}

#[test]
fn without_the_scale_the_softmax_saturates_as_d_grows() {
    let rows = scale_study(&SCALE_WIDTHS, SCALE_SEEDS);
    for pair in rows.windows(2) {
        assert!(pair[1].top_weight_raw > pair[0].top_weight_raw);
    }
    assert!(rows.last().unwrap().top_weight_raw > 0.85);
    for row in &rows {
        // 12 keys: 1/12 would be uniform, 1 a hard max.
        assert!((0.2..0.4).contains(&row.top_weight_scaled), "d = {}", row.d);
    }
    // "Stays put": across the widths it moves by less than a
    // twentieth, while the raw largest weight moves by far more.
    let scaled = rows.iter().map(|r| r.top_weight_scaled);
    let (lo, hi) =
        scaled.fold((1.0_f64, 0.0_f64), |(lo, hi), w| (lo.min(w), hi.max(w)));
    assert!(hi - lo < 0.05, "scaled largest weight moves: {lo}..{hi}");
    let raw = rows.last().unwrap().top_weight_raw - rows[0].top_weight_raw;
    assert!(raw > 5.0 * (hi - lo), "{raw}");
}

#[test]
fn walkthrough_has_the_chapter_shapes() {
    let (Qkv { q, k, v }, a) = walkthrough(WALKTHROUGH_SEED);
    assert_eq!((q.dim(), k.dim(), v.dim()), ((12, 8), (12, 8), (12, 8)));
    assert_eq!((a.weights.dim(), a.output.dim()), ((12, 12), (12, 8)));
}

#[test]
fn the_retrieval_error_is_relative_to_the_targets_value() {
    // Two equal keys share the weight: the read is (v₀ + v₁) / 2. With
    // v₀ = (2, 0) and v₁ = 0 it misses v₀ by (1, 0): an error of 1 / ‖v₀‖.
    let k = ndarray::array![[1.0, 0.5], [1.0, 0.5]];
    let v = ndarray::array![[2.0, 0.0], [0.0, 0.0]];
    let probe = aligned_probe(&k, &v, 0, 3.0).unwrap();
    assert_relative_eq!(probe.weight_on_target, 0.5, epsilon = 1e-15);
    assert_relative_eq!(probe.retrieval_error, 0.5, epsilon = 1e-15);
}

#[test]
fn unit_rows_scales_each_row_to_length_one_and_leaves_zero_rows_zero() {
    let a = ndarray::array![[3.0, 4.0], [0.0, 0.0], [0.0, -2.0]];
    let want = ndarray::array![[0.6, 0.8], [0.0, 0.0], [0.0, -1.0]];
    assert_eq!(unit_rows(&a), want);
}
