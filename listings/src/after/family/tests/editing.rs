//! What each rule reads back from a memory that is being edited, and how
//! fast it forgets an association.

use super::*;

/// Index of each rule in `six_rules`.
const SUM: usize = 0;
const FIXED: usize = 1;
const SCALAR: usize = 2;
const DIAGONAL: usize = 3;
const DELTA: usize = 4;
const GATED: usize = 5;

/// The chapter's study, and one at half the width with its own seeds.
fn editing_studies() -> [&'static EditingStudy; 2] {
    static CELL: std::sync::OnceLock<EditingStudy> = std::sync::OnceLock::new();
    let half: Vec<usize> = EDITING_COUNTS.iter().map(|n| n / 2).collect();
    let narrow = CELL.get_or_init(|| editing_study(&half, 32, 16, 10));
    [chapter_editing(), narrow]
}

#[test]
fn the_latest_value_error_of_every_rule_grows_with_n() {
    for study in editing_studies() {
        for r in 0..6 {
            for i in 1..study.counts.len() {
                let (before, now) = (study.mean(r, i - 1), study.mean(r, i));
                assert!(now > before, "{} at n {}", study.names[r], i);
            }
        }
    }
}

#[test]
fn up_to_d_keys_the_delta_rules_read_the_latest_values_best() {
    for study in editing_studies() {
        for (i, &n) in study.counts.iter().enumerate() {
            if n > study.d {
                continue;
            }
            let worst_delta = study.mean(DELTA, i).max(study.mean(GATED, i));
            for r in SUM..DELTA {
                assert!(worst_delta < study.mean(r, i), "n {n}, rule {r}");
            }
        }
    }
}

#[test]
fn past_d_keys_the_sum_rule_reads_worse_than_an_empty_memory() {
    // An empty memory reads 0: an error of exactly 1 for unit values.
    for study in editing_studies() {
        for (i, &n) in study.counts.iter().enumerate() {
            if n < study.d {
                continue;
            }
            let sum = study.mean(SUM, i);
            assert!(sum > 1.0, "n {n}: {sum}");
            for r in FIXED..=GATED {
                assert!(sum > study.mean(r, i), "n {n}, rule {r}");
            }
        }
    }
}

#[test]
fn from_one_and_a_half_d_keys_the_gated_delta_rule_reads_best() {
    for study in editing_studies() {
        for (i, &n) in study.counts.iter().enumerate() {
            if 2 * n < 3 * study.d {
                continue;
            }
            for r in SUM..GATED {
                assert!(study.mean(GATED, i) < study.mean(r, i), "n {n}");
            }
        }
    }
}

#[test]
fn the_sum_rule_keeps_every_association_whole() {
    for seed in 0..5 {
        for d in [8, 32] {
            let signal = fading_signal(&Rule::Sum, 4 * d, seed, (d, 4));
            for x in signal {
                assert!((x - 1.0).abs() < 1e-12, "{x}");
            }
        }
    }
}

#[test]
fn a_fixed_decay_halves_an_association_after_ln2_over_ln_1_over_gamma_writes() {
    for seed in 0..5 {
        for (gamma, d) in [(0.9, 4), (0.99, 16), (0.95, 64), (0.99, 128)] {
            let rule = Rule::FixedDecay(gamma);
            for (s, x) in
                fading_signal(&rule, 300, seed, (d, 4)).iter().enumerate()
            {
                let want = gamma.powi(s as i32);
                assert!((x / want - 1.0).abs() < 1e-10, "{x} vs {want}");
            }
            // The first s with γ^s < 1/2 is the ceiling of ln 2/ln(1/γ).
            let life = (2f64.ln() / (1.0 / gamma).ln()).ceil() as usize;
            let signal = fading_signal(&rule, 300, seed, (d, 4));
            assert_eq!(signal.iter().position(|&x| x < 0.5), Some(life));
        }
    }
    // In the chapter's studies, at both widths: ln 2 / ln(1/0.99) ≈ 69.
    let want = (2f64.ln() / (1.0 / 0.99f64).ln()).ceil() as usize;
    for study in chapter_fading() {
        assert_eq!(study.half_life(FIXED), Some(want));
        // Random gates with the same mean: nearly the same rate.
        for r in [SCALAR, DIAGONAL] {
            let life = study.half_life(r).unwrap();
            assert!(life.abs_diff(want) <= 3, "rule {r}: {life}");
        }
    }
}

#[test]
fn the_delta_rules_half_life_grows_in_proportion_to_d() {
    // About d ln 2 later writes: each removes on average 1/d of what is
    // left along k₁. Checked at d = 32 and 64, twenty seeds each.
    let [narrow, wide] = chapter_fading();
    let lives = [narrow, wide].map(|s| s.half_life(DELTA).unwrap());
    for (life, study) in lives.iter().zip([narrow, wide]) {
        let per_d = *life as f64 / study.d as f64;
        assert!((0.6..0.85).contains(&per_d), "{life} at d {}", study.d);
    }
    let ratio = lives[1] as f64 / lives[0] as f64;
    assert!((1.7..2.3).contains(&ratio), "{lives:?}");
}

#[test]
fn the_gated_delta_rule_forgets_faster_than_its_gate_or_the_delta_rule_alone() {
    for study in chapter_fading() {
        let gated = study.half_life(GATED).unwrap();
        for r in FIXED..GATED {
            assert!(gated < study.half_life(r).unwrap(), "rule {r}");
        }
    }
}

#[test]
fn the_editing_stream_rewrites_a_quarter_of_its_keys_with_new_values() {
    for seed in 0..5 {
        for (n, d, m) in [(1, 4, 2), (8, 16, 4), (37, 8, 3), (64, 64, 16)] {
            let s = editing_stream(seed, n, d, m);
            let again = n / 4;
            assert_eq!(s.keys.dim(), (n + again, d));
            assert_eq!(s.values.dim(), (n + again, m));
            let norms = |x: &Array2<f64>| {
                x.rows()
                    .into_iter()
                    .all(|r| (r.dot(&r) - 1.0).abs() < 1e-12)
            };
            assert!(norms(&s.keys) && norms(&s.values));
            let mut seen = std::collections::HashSet::new();
            let mut latest = s.values.slice(s![..n, ..]).to_owned();
            for t in n..n + again {
                let i = (0..n)
                    .find(|&i| s.keys.row(i) == s.keys.row(t))
                    .expect("a key written before");
                assert!(seen.insert(i), "each key rewritten once");
                assert_ne!(s.values.row(t), s.values.row(i), "a new value");
                latest.row_mut(i).assign(&s.values.row(t));
            }
            assert_eq!(latest, s.latest);
        }
    }
}

#[test]
fn the_error_is_the_distance_from_the_latest_value() {
    // Orthonormal keys e_1 … e_n, the first n/4 written again: the sum
    // rule returns old + new there (an error of exactly 1 at those keys,
    // 0 elsewhere), the delta rule with β = 1 the latest (error 0), and a
    // memory that stays zero (β = 0) scores exactly 1.
    for (n, m) in [(4, 3), (8, 5), (16, 16)] {
        let mut rng = seeded(n as u64);
        let keys0 = Array2::<f64>::eye(n);
        let values0 = unit(&randn(&mut rng, n, m));
        let new = unit(&randn(&mut rng, n / 4, m));
        let mut keys = keys0.clone();
        let mut values = values0.clone();
        let mut latest = values0.clone();
        for i in 0..n / 4 {
            keys.push_row(keys0.row(i)).unwrap();
            values.push_row(new.row(i)).unwrap();
            latest.row_mut(i).assign(&new.row(i));
        }
        let len = keys.nrows();
        let stream = EditingStream {
            keys,
            values,
            latest,
        };
        let sum = latest_value_error(&Rule::Sum, &stream);
        let want = (n / 4) as f64 / n as f64;
        assert!((sum - want).abs() < 1e-12, "{sum} vs {want}");
        let delta =
            latest_value_error(&Rule::Delta(Array1::ones(len)), &stream);
        assert!(delta < 1e-12, "{delta}");
        let empty =
            latest_value_error(&Rule::Delta(Array1::zeros(len)), &stream);
        assert!((empty - 1.0).abs() < 1e-12, "{empty}");
    }
    for seed in 0..3 {
        let stream = editing_stream(seed, 40, 16, 8);
        let len = stream.keys.nrows();
        let empty =
            latest_value_error(&Rule::Delta(Array1::zeros(len)), &stream);
        assert!((empty - 1.0).abs() < 1e-12, "{empty}");
    }
}

#[test]
fn the_studys_gates_have_the_fixed_decays_mean_and_every_strength_is_one() {
    for seed in 0..5 {
        let rules = editing_rules(seed, 320, 64);
        let mut gates: Vec<f64> = vec![];
        for rule in &rules {
            match rule {
                Rule::FixedDecay(g) => assert_eq!(*g, 0.99),
                Rule::ScalarDecay(a) => gates.extend(a.iter()),
                Rule::DiagonalGates(a) => gates.extend(a.iter()),
                Rule::Delta(b) => assert!(b.iter().all(|&b| b == 1.0)),
                Rule::GatedDelta { alpha, beta } => {
                    assert!(beta.iter().all(|&b| b == 1.0));
                    gates.extend(alpha.iter());
                }
                Rule::Sum => {}
                Rule::Kda { .. } => unreachable!("not among the six"),
            }
        }
        assert!(gates.iter().all(|&a| (0.98..=1.0).contains(&a)));
        let mean = gates.iter().sum::<f64>() / gates.len() as f64;
        assert!((mean - 0.99).abs() < 2e-4, "{mean}");
    }
}

#[test]
fn the_fading_signal_is_the_first_associations_share_of_the_memory() {
    // The whole recurrence, with and without the first token's value:
    // the difference of the two memories, read at k₁ and against v₁, is
    // the fading signal, after every later token (each rule's A_t does
    // not depend on the memory), as a share of the first write ω₁ v₁ k₁ᵀ:
    // the rules write with strength 1 and, a second time, 0.4.
    for seed in 0..4 {
        for (d, m, len) in [(4, 3, 12), (16, 4, 40)] {
            let mut rng = seeded(seed);
            let k = unit(&randn(&mut rng, len, d));
            let v = unit(&randn(&mut rng, len, m));
            let q = Array2::from_shape_fn((len, d), |(_, j)| k[[0, j]]);
            let mut v0 = v.clone();
            v0.row_mut(0).fill(0.0);
            let weak = six_rules(&mut seeded(seed), len, d, None, Some(0.4));
            for rule in editing_rules(seed, len, d).into_iter().chain(weak) {
                let signal = fading_signal(&rule, len, seed, (d, m));
                let all = rule_recurrent(&rule, &q, &k, &v).unwrap();
                let rest = rule_recurrent(&rule, &q, &k, &v0).unwrap();
                let omega = rule.coefficients(len, d).unwrap().omega[0];
                let share = (&all.output - &rest.output).dot(&v.row(0)) / omega;
                for (s, (&x, &want)) in signal.iter().zip(&share).enumerate() {
                    assert!((x - want).abs() < 1e-12, "{} s {s}", rule.name());
                }
            }
        }
    }
}

#[test]
fn the_sum_rule_returns_old_plus_new_and_every_key_adds_crosstalk() {
    // Read at key i, the sum rule's memory is Σ_j (k_j · k_i) v_j over
    // every write j: both values of a rewritten key with weight 1, and
    // every other key with its overlap.
    for seed in 0..4 {
        for (n, d, m) in [(8, 16, 4), (40, 16, 8), (20, 64, 3)] {
            let s = editing_stream(seed, n, d, m);
            let w = rule_recurrent(&Rule::Sum, &s.keys, &s.keys, &s.values)
                .unwrap()
                .memory;
            for i in 0..n {
                let ki = s.keys.row(i);
                let mut want = Array1::<f64>::zeros(m);
                for (kj, vj) in s.keys.rows().into_iter().zip(s.values.rows()) {
                    want.scaled_add(kj.dot(&ki), &vj);
                }
                let got = w.dot(&ki);
                assert!((&got - &want).iter().all(|x| x.abs() < 1e-12));
            }
        }
    }
}

#[test]
fn a_delta_rule_with_beta_one_replaces_the_value_of_the_key_it_writes() {
    // From any memory, one step with a unit key and β = 1 leaves W k = v:
    // the old value at k is gone, for the delta and gated delta rules.
    for seed in 0..5 {
        for (p, m) in [(1, 1), (4, 3), (16, 8)] {
            let mut rng = seeded(seed);
            let k = unit(&randn(&mut rng, 1, p));
            let v = randn(&mut rng, 1, m);
            for gate in [1.0, 0.9, 0.2] {
                let mut w = randn(&mut rng, m, p);
                let alpha = Array1::from_elem(p, gate);
                rule_step(&mut w, &k.row(0), &v.row(0), &alpha, 1.0, 1.0)
                    .unwrap();
                let got = w.dot(&k.row(0));
                let diff = &got - &v.row(0);
                assert!(diff.iter().all(|x| x.abs() < 1e-12), "{diff}");
            }
        }
    }
}

#[test]
fn each_later_unit_key_removes_on_average_a_one_over_d_part() {
    // E[(I − k kᵀ)] = (1 − 1/d) I for random unit k: after one later
    // write, what is left of v₁ at k₁ is 1 − (k · k₁)², on average
    // 1 − 1/d. Mean over 400 seeds, within a tenth of 1/d.
    for d in [8, 32, 64] {
        // Seed by seed, exactly the overlap goes: 1 − (k₂ · k₁)².
        for seed in 0..20 {
            let k = unit(&randn(&mut seeded(seed), 2, d));
            let left =
                fading_signal(&Rule::Delta(Array1::ones(2)), 2, seed, (d, 4));
            let overlap = k.row(0).dot(&k.row(1));
            assert!((left[1] - (1.0 - overlap * overlap)).abs() < 1e-12);
        }
        let seeds = 400;
        let removed: f64 = (0..seeds)
            .map(|seed| {
                let rule = Rule::Delta(Array1::ones(2));
                1.0 - fading_signal(&rule, 2, seed, (d, 4))[1]
            })
            .sum::<f64>()
            / seeds as f64;
        let ratio = removed * d as f64;
        assert!((ratio - 1.0).abs() < 0.1, "d {d}: {ratio}");
    }
}

#[test]
fn the_figures_lines_are_as_its_text_says() {
    // Top: the two delta rules start lowest; the three decaying rules
    // lie together between the sum rule and the delta rules.
    let study = chapter_editing();
    let decaying = [FIXED, SCALAR, DIAGONAL];
    for r in SUM..DELTA {
        assert!(
            study.mean(DELTA, 0).max(study.mean(GATED, 0)) < study.mean(r, 0)
        );
    }
    for (i, _) in study.counts.iter().enumerate() {
        let means = decaying.map(|r| study.mean(r, i));
        let top = means.iter().fold(f64::MIN, |a, &x| a.max(x));
        let bottom = means.iter().fold(f64::MAX, |a, &x| a.min(x));
        assert!(top < study.mean(SUM, i), "n index {i}");
        let lower = study.mean(DELTA, i).min(study.mean(GATED, i));
        assert!(bottom > lower, "n index {i}");
    }
    // The caption: the three decaying rules lie on top of each other,
    // within 5% of each other at every n and after every s writes.
    for (i, _) in study.counts.iter().enumerate() {
        let fixed = study.mean(FIXED, i);
        for r in [SCALAR, DIAGONAL] {
            let ratio = study.mean(r, i) / fixed;
            assert!((ratio - 1.0).abs() < 0.05, "rule {r}: {ratio}");
        }
    }
    for fading in chapter_fading() {
        for s in 0..fading.signal[FIXED].len() {
            let fixed = fading.signal[FIXED][s];
            for r in [SCALAR, DIAGONAL] {
                let ratio = fading.signal[r][s] / fixed;
                assert!((ratio - 1.0).abs() < 0.05, "rule {r} s {s}");
            }
        }
    }
    // Bottom (d = 64): the delta rule falls faster than the decaying
    // rules, the gated delta rule fastest.
    let [_, wide] = chapter_fading();
    let delta = wide.half_life(DELTA).unwrap();
    for r in decaying {
        assert!(delta < wide.half_life(r).unwrap(), "rule {r}");
    }
}

#[test]
fn no_write_strength_in_range_stretches_the_memory() {
    // With a unit key, ‖W (I − β k kᵀ)‖ ≤ ‖W‖ for every β in [0, 1]
    // (the eigenvalues are 1 and 1 − β); β = 3 would stretch it.
    for seed in 0..5 {
        for (p, m) in [(1, 1), (4, 3), (16, 8)] {
            let mut rng = seeded(seed);
            let k = unit(&randn(&mut rng, 1, p));
            let w = randn(&mut rng, m, p);
            let frob = |x: &Array2<f64>| x.iter().map(|a| a * a).sum::<f64>();
            let along = |x: &Array2<f64>| {
                let r = x.dot(&k.row(0));
                r.dot(&r)
            };
            for beta in [0.0, 0.25, 0.5, 0.9, 1.0, 3.0] {
                let house =
                    crate::paper::delta_rule::delta_transition(&k.row(0), beta)
                        .unwrap();
                let after = w.dot(&house);
                let ok = frob(&after) <= frob(&w) * (1.0 + 1e-12);
                assert_eq!(ok, beta <= 1.0 || along(&w) == 0.0, "β {beta}");
            }
        }
    }
}
