use super::study::*;
use super::*;
use crate::linalg::worst_row_relative_difference;
use crate::m3::delete_softmax::{
    linear_attention_memory_first, linear_attention_scores_first,
};
use crate::m3::fast_weight_memory::{
    linear_attention_parallel, linear_attention_recurrent,
};
use crate::phi::{dpfp, elu_plus_one, map_rows};
use crate::random::{randn, seeded};
use approx::assert_relative_eq;

fn random(seed: u64, n: usize, d: usize, m: usize) -> [Array2<f64>; 3] {
    let mut rng = seeded(seed);
    [
        randn(&mut rng, n, d),
        randn(&mut rng, n, d),
        randn(&mut rng, n, m),
    ]
}

fn elu(x: &ArrayRef2<f64>) -> Array2<f64> {
    elu_plus_one(x)
}

fn dpfp2(x: &ArrayRef2<f64>) -> Array2<f64> {
    map_rows(x, |r| dpfp(r, 2)).unwrap()
}

const SHAPES: [(usize, usize, usize); 5] =
    [(1, 1, 1), (2, 3, 4), (12, 8, 8), (100, 16, 5), (1500, 8, 8)];

#[test]
fn one_shot_form_equals_both_groupings() {
    for seed in 0..5 {
        for (n, d, m) in SHAPES {
            let [q, k, v] = random(seed, n, d, m);
            type Phi = fn(&ArrayRef2<f64>) -> Array2<f64>;
            // DPFP's features are sparse: on a very short sequence a
            // query can share no feature with any key, and 0 / 0 is
            // no average. Try it where every query has keys to match.
            for (min_n, phi) in [(1, elu as Phi), (12, dpfp2 as Phi)] {
                if n < min_n {
                    continue;
                }
                let o =
                    linear_attention_one_shot(&q, &k, &v, phi, 0.0).unwrap();
                let (phi_q, phi_k) = (phi(&q), phi(&k));
                for other in [
                    linear_attention_memory_first(&phi_q, &phi_k, &v),
                    linear_attention_scores_first(&phi_q, &phi_k, &v),
                ] {
                    let other = other.unwrap();
                    assert_relative_eq!(
                        o,
                        other,
                        max_relative = 1e-10,
                        epsilon = 1e-12
                    );
                }
            }
        }
    }
    // ... with more queries than keys, as in cross-attention, and
    // fewer, for both maps and both groupings.
    type Phi = fn(&ArrayRef2<f64>) -> Array2<f64>;
    for seed in 0..5 {
        for (n_q, n_k) in [(40, 15), (15, 40)] {
            let [q, _, _] = random(seed, n_q, 6, 3);
            let [_, k, v] = random(seed + 100, n_k, 6, 3);
            for phi in [elu as Phi, dpfp2 as Phi] {
                let o =
                    linear_attention_one_shot(&q, &k, &v, phi, 0.0).unwrap();
                assert_eq!(o.dim(), (n_q, 3));
                let (phi_q, phi_k) = (phi(&q), phi(&k));
                for want in [
                    linear_attention_memory_first(&phi_q, &phi_k, &v),
                    linear_attention_scores_first(&phi_q, &phi_k, &v),
                ] {
                    let want = want.unwrap();
                    assert!(worst_row_relative_difference(&o, &want) < 1e-12);
                }
            }
        }
    }
}

#[test]
fn causal_product_form_equals_recurrent_and_parallel_forms() {
    for seed in 0..5 {
        for (n, d, m) in SHAPES {
            let [q, k, v] = random(seed, n, d, m);
            let o =
                causal_linear_attention_product(&q, &k, &v, elu, 0.0).unwrap();
            let (phi_q, phi_k) = (elu(&q), elu(&k));
            for other in [
                linear_attention_recurrent(&phi_q, &phi_k, &v),
                linear_attention_parallel(&phi_q, &phi_k, &v),
            ] {
                assert_relative_eq!(
                    o,
                    other.unwrap(),
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
            }
        }
    }
}

#[test]
fn causal_product_numerator_is_the_fast_weight_loop() {
    // Multiply back by the denominator: what is left is M2's loop.
    for (seed, (n, d, m)) in (0..5).flat_map(|s| SHAPES.map(|x| (s, x))) {
        let [q, k, v] = random(seed, n, d, m);
        let o = causal_linear_attention_product(&q, &k, &v, elu, 0.0).unwrap();
        let den = crate::m3::feature_map::normaliser::causal_denominators(
            &elu(&q),
            &elu(&k),
        )
        .unwrap();
        let numerator = fast_weight_loop(&elu(&q), &elu(&k), &v).unwrap();
        let back = o * &den.insert_axis(Axis(1));
        assert_relative_eq!(
            back,
            numerator,
            max_relative = 1e-12,
            epsilon = 1e-12
        );
    }
}

#[test]
fn epsilon_is_added_to_every_denominator() {
    // With ε = 0.5, row t of either form is its row at ε = 0 times
    // den_t / (den_t + ε), den_t the row's denominator (all keys, or the
    // keys up to t): ε adds to each denominator, never subtracts.
    let eps = 0.5;
    for seed in 0..3 {
        let [q, k, v] = random(seed, 40, 8, 5);
        let (phi_q, phi_k) = (elu(&q), elu(&k));
        let full = phi_q.dot(&phi_k.sum_axis(Axis(0)));
        let causal = crate::m3::feature_map::normaliser::causal_denominators(
            &phi_q, &phi_k,
        )
        .unwrap();
        type Form = fn(
            &ArrayRef2<f64>,
            &ArrayRef2<f64>,
            &ArrayRef2<f64>,
            fn(&ArrayRef2<f64>) -> Array2<f64>,
            f64,
        ) -> Result<Array2<f64>, InputError>;
        let forms: [(Form, &Array1<f64>); 2] = [
            (
                |q, k, v, phi, eps| {
                    linear_attention_one_shot(q, k, v, phi, eps)
                },
                &full,
            ),
            (
                |q, k, v, phi, eps| {
                    causal_linear_attention_product(q, k, v, phi, eps)
                },
                &causal,
            ),
        ];
        for (form, den) in forms {
            let exact = form(&q, &k, &v, elu, 0.0).unwrap();
            let guarded = form(&q, &k, &v, elu, eps).unwrap();
            let shrink = den.mapv(|d| d / (d + eps)).insert_axis(Axis(1));
            let want = &exact * &shrink;
            assert_relative_eq!(guarded, want, max_relative = 1e-12);
        }
    }
}

#[test]
fn a_small_epsilon_barely_moves_the_outputs() {
    // ε = 1e-6, as in the libraries, against denominators of order 1
    // and more: a relative change of the order of ε, never above 10ε.
    for (seed, (n, d, m)) in (0..5).flat_map(|s| {
        [(1, 4, 3), (50, 8, 8), (200, 8, 8), (500, 16, 4)].map(|x| (s, x))
    }) {
        let [q, k, v] = random(seed, n, d, m);
        // Every denominator, causal or not, is far larger than ε.
        let (phi_q, phi_k) = (elu(&q), elu(&k));
        let causal = crate::m3::feature_map::normaliser::causal_denominators(
            &phi_q, &phi_k,
        )
        .unwrap();
        let full = phi_q.dot(&phi_k.sum_axis(Axis(0)));
        for den in causal.iter().chain(&full) {
            assert!(*den > 1e3 * 1e-6, "seed {seed}: {den:e}");
        }
        let exact = linear_attention_one_shot(&q, &k, &v, elu, 0.0).unwrap();
        let guarded = linear_attention_one_shot(&q, &k, &v, elu, 1e-6).unwrap();
        let gap = worst_row_relative_difference(&guarded, &exact);
        assert!(gap > 0.0 && gap < 1e-6, "seed {seed}: {gap:e}");
        let exact =
            causal_linear_attention_product(&q, &k, &v, elu, 0.0).unwrap();
        let guarded =
            causal_linear_attention_product(&q, &k, &v, elu, 1e-6).unwrap();
        let gap = worst_row_relative_difference(&guarded, &exact);
        assert!(gap > 0.0 && gap < 1e-5, "seed {seed}: {gap:e}");
    }
}

#[test]
fn any_segmentation_gives_the_outputs_of_the_whole_sequence() {
    for seed in 0..5 {
        for (n, d, m) in SHAPES {
            let [q, k, v] = random(seed, n, d, m);
            let (phi_q, phi_k) = (elu(&q), elu(&k));
            let whole = linear_attention_recurrent(&phi_q, &phi_k, &v).unwrap();
            let cuts = [vec![n], vec![1; n], growing(n)];
            for lengths in cuts {
                let o = in_segments(&phi_q, &phi_k, &v, &lengths).unwrap();
                assert_relative_eq!(
                    o,
                    whole,
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
            }
        }
    }
}

#[test]
fn a_prompt_in_one_call_then_one_token_a_call_equals_the_whole_sequence() {
    // A decoder reads its prompt as one segment, then generates one
    // token per call, from the state the prompt left.
    for seed in 0..5 {
        for (n, prompt) in [(2, 1), (30, 12), (200, 150)] {
            let [q, k, v] = random(seed, n, 6, 4);
            let (phi_q, phi_k) = (elu(&q), elu(&k));
            let whole = linear_attention_recurrent(&phi_q, &phi_k, &v).unwrap();
            let mut lengths = vec![prompt];
            lengths.extend(vec![1; n - prompt]);
            let o = in_segments(&phi_q, &phi_k, &v, &lengths).unwrap();
            assert_relative_eq!(
                o,
                whole,
                max_relative = 1e-10,
                epsilon = 1e-12
            );
        }
    }
}

#[test]
fn layer_state_after_a_segment_is_the_memory_of_the_tokens_so_far() {
    for seed in 0..5 {
        for (n, d, m) in [(1, 1, 1), (30, 5, 4), (120, 8, 3)] {
            let [q, k, v] = random(seed, n, d, m);
            let (phi_q, phi_k) = (elu(&q), elu(&k));
            let prompt = [vec![n / 2 + 1], vec![1; n - n / 2 - 1]].concat();
            for cuts in [vec![n], vec![1; n], growing(n), prompt] {
                let mut layer = FastWeightLayer::new(d, m);
                let mut start = 0;
                for len in cuts {
                    let rows = ndarray::s![start..start + len, ..];
                    let (a, b) = (phi_q.slice(rows), phi_k.slice(rows));
                    layer.segment(&a, &b, &v.slice(rows)).unwrap();
                    start += len;
                    let prefix = ndarray::s![..start, ..];
                    let want =
                        sequence_memory(&phi_k.slice(prefix), &v.slice(prefix));
                    let got = &layer.memory;
                    assert_relative_eq!(
                        got.s,
                        want.s,
                        max_relative = 1e-12,
                        epsilon = 1e-12
                    );
                    assert_relative_eq!(got.z, want.z, max_relative = 1e-12);
                }
                assert_eq!(start, n);
            }
        }
    }
}

#[test]
fn growing_segments_cover_the_sequence_once() {
    assert_eq!(growing(1), vec![1]);
    assert_eq!(growing(6), vec![1, 2, 3]);
    assert_eq!(growing(8), vec![1, 2, 3, 2]);
    for n in 1..200 {
        assert_eq!(growing(n).iter().sum::<usize>(), n);
    }
}

#[test]
fn walkthrough_forms_reject_bad_input() {
    let [q, k, v] = random(0, 12, 8, 4);
    let narrow = randn(&mut seeded(1), 12, 6);
    let msg = linear_attention_one_shot(&q, &narrow, &v, elu, 0.0)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("q is [12, 8]") && msg.contains("k is [12, 6]"));
    let short = randn(&mut seeded(2), 11, 8);
    let msg = causal_linear_attention_product(&q, &short, &v, elu, 0.0)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("k is [11, 8]"), "{msg}");
    // A segment of the wrong width for the layer's state.
    let mut layer = FastWeightLayer::new(8, 4);
    let (phi_q, phi_k) = (elu(&q), elu(&k));
    let msg = layer
        .segment(&phi_q, &phi_k, &narrow)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("v is [12, 6]") && msg.contains("S transposed is [8, 4]"),
        "{msg}"
    );
    let wide = randn(&mut seeded(3), 12, 9);
    let wide = elu(&wide);
    let msg = layer.segment(&wide, &wide, &v).unwrap_err().to_string();
    assert!(msg.contains("phi_k is [12, 9]") && msg.contains("S is [4, 8]"));
    let e = Array2::<f64>::zeros((0, 8));
    assert!(layer.segment(&e, &e, &e).is_err());
}

#[test]
fn walkthrough_study_finds_only_rounding() {
    // The chapter's table itself.
    let table = walkthrough_study(&AGREEMENT_LENGTHS, AGREEMENT_SEEDS);
    assert_eq!(table.rows.len(), AGREEMENT_LENGTHS.len());
    for r in &table.rows {
        for d in r.differences {
            assert!(d < 1e-12, "N = {}: {d:e}", r.n);
        }
    }
}

#[test]
fn recurrent_form_and_fast_weight_loop_both_call_fast_weight_write() {
    // The exit check's "both layers call the same fast_weight_write",
    // read from the listings' source.
    let source = include_str!("../fast_weight_memory/mod.rs");
    let listing = |name: &str| {
        let start = format!("// ANCHOR: {name}\n");
        let end = format!("// ANCHOR_END: {name}\n");
        let from = source.find(&start).expect("anchor") + start.len();
        let to = from + source[from..].find(&end).expect("anchor end");
        source[from..to].to_owned()
    };
    assert!(listing("fast_weight_write").contains("pub fn fast_weight_write("));
    for name in ["linear_attention_recurrent", "fast_weight_loop"] {
        let body = listing(name);
        assert_eq!(body.matches("fast_weight_write(&mut").count(), 1, "{name}");
        // ... and neither writes the memory any other way.
        assert!(!body.contains("+= &v") && !body.contains("s +="), "{name}");
    }
}
