//! Every fast form equals the form the book shows, to f32 precision.

use super::*;
use crate::input::InputError;
use crate::linalg::worst_row_relative_difference;
use crate::m3::fast_weight_memory::linear_attention_recurrent;
use crate::m3::schedules::linear_attention_chunkwise;
use crate::paper::delta_rule::{delta_rule_chunkwise, delta_rule_recurrent};
use crate::random::{randn, seeded};
use ndarray::ShapeBuilder;
use ndarray::{Array1, Array2, ArrayRef2, s};

/// f32 forms against their f64 forms: the worst row-relative error.
fn gap(fast: &Array2<f32>, book: &Array2<f64>) -> f64 {
    worst_row_relative_difference(&to_f64(fast), book)
}

const CASES: [(usize, usize, usize); 5] = [
    (1, 1, 4),
    (7, 3, 5),
    (64, 16, 8),
    (100, 16, 8),
    (257, 64, 16),
];

#[test]
fn recurrent_f32_equals_the_book_recurrence() {
    for seed in 0..3 {
        for (n, _, d) in CASES {
            let [q, k, v] = random_inputs(seed, n, d, d + 1);
            let book = linear_attention_recurrent(&q, &k, &v).unwrap();
            let [q, k, v] = [&q, &k, &v].map(|a| to_f32(a));
            let fast = linear_attention_recurrent_f32(&q, &k, &v);
            let e = gap(&fast.unwrap(), &book);
            assert!(e < 1e-4, "seed {seed}, N {n}: {e}");
            // The same inputs in column-major layout: copied, not misread.
            let mut q_cols = Array2::zeros(q.dim().f());
            q_cols.assign(&q);
            let fast = linear_attention_recurrent_f32(&q_cols, &k, &v);
            let e = gap(&fast.unwrap(), &book);
            assert!(e < 1e-4, "column-major, seed {seed}, N {n}: {e}");
        }
    }
}

#[test]
fn chunkwise_f32_equals_the_book_chunkwise_form() {
    for seed in 0..3 {
        for (n, chunk, d) in CASES {
            let [q, k, v] = random_inputs(seed, n, d, d + 1);
            let book = linear_attention_chunkwise(&q, &k, &v, chunk);
            let [q, k, v] = [&q, &k, &v].map(|a| to_f32(a));
            let fast = linear_attention_chunkwise_f32(&q, &k, &v, chunk);
            let e = gap(&fast.unwrap(), &book.unwrap());
            assert!(e < 1e-4, "seed {seed}, N {n}, C {chunk}: {e}");
        }
    }
}

fn betas(seed: u64, n: usize) -> Array1<f64> {
    randn(&mut seeded(seed + 50), n, 1)
        .column(0)
        .mapv(|x| 1.0 / (1.0 + (-x).exp()))
}

#[test]
fn delta_rule_f32_forms_equal_the_book_delta_rule() {
    for seed in 0..3 {
        for (n, chunk, d) in CASES {
            let [q, k, v] = random_inputs(seed, n, d, d + 1);
            let beta = betas(seed, n);
            let rec = delta_rule_recurrent(&q, &k, &v, &beta).unwrap();
            let chk = delta_rule_chunkwise(&q, &k, &v, &beta, chunk).unwrap();
            let [q, k, v] = [&q, &k, &v].map(|a| to_f32(a));
            let beta = beta.mapv(|x| x as f32);
            let fast_rec = delta_rule_recurrent_f32(&q, &k, &v, &beta);
            let fast_chk = delta_rule_chunkwise_f32(&q, &k, &v, &beta, chunk);
            let e_rec = gap(&fast_rec.unwrap(), &rec.output);
            let e_chk = gap(&fast_chk.unwrap(), &chk.output);
            assert!(e_rec < 1e-4, "seed {seed}, N {n}: {e_rec}");
            assert!(e_chk < 1e-4, "seed {seed}, N {n}, C {chunk}: {e_chk}");
        }
    }
}

#[test]
fn chunk_size_does_not_change_the_f32_output_beyond_rounding() {
    let [q, k, v] = random_inputs(4, 300, 8, 8).map(|a| to_f32(&a));
    let one = linear_attention_chunkwise_f32(&q, &k, &v, 1).unwrap();
    for chunk in [2, 7, 64, 300, 1000] {
        let o = linear_attention_chunkwise_f32(&q, &k, &v, chunk).unwrap();
        let e = worst_row_relative_difference(&to_f64(&o), &to_f64(&one));
        assert!(e < 1e-4, "C {chunk}: {e}");
    }
}

#[test]
fn f32_baselines_equal_their_book_forms() {
    use crate::m3::attention::{Mask, softmax_attention};
    use crate::m3::delete_softmax::{
        linear_attention_memory_first, linear_attention_scores_first,
    };
    use crate::m3::fast_weight_memory::linear_attention_parallel;
    for seed in 0..3 {
        for (n, _, d) in CASES {
            let [q, k, v] = random_inputs(seed, n, d, d + 1);
            let [q32, k32, v32] = [&q, &k, &v].map(|a| to_f32(a));
            let soft = softmax_attention(&q, &k, &v, Mask::Causal);
            let fast = softmax_attention_causal_f32(&q32, &k32, &v32);
            let e = gap(&fast.unwrap(), &soft.unwrap().output);
            assert!(e < 1e-4, "softmax, seed {seed}, N {n}: {e}");
            let book = linear_attention_parallel(&q, &k, &v).unwrap();
            let fast = linear_attention_parallel_f32(&q32, &k32, &v32);
            let e = gap(&fast.unwrap(), &book);
            assert!(e < 1e-4, "parallel, seed {seed}, N {n}: {e}");
            // Non-causal: fewer queries than keys, as a read allows.
            let few = q.slice(s![..n.div_ceil(2), ..]);
            let few32 = q32.slice(s![..n.div_ceil(2), ..]);
            for (name, book, fast) in [
                (
                    "scores first",
                    linear_attention_scores_first(&few, &k, &v),
                    linear_attention_scores_first_f32(&few32, &k32, &v32),
                ),
                (
                    "memory first",
                    linear_attention_memory_first(&few, &k, &v),
                    linear_attention_memory_first_f32(&few32, &k32, &v32),
                ),
            ] {
                let e = gap(&fast.unwrap(), &book.unwrap());
                assert!(e < 1e-4, "{name}, seed {seed}, N {n}: {e}");
            }
        }
    }
}

#[test]
fn each_value_row_of_the_delta_rule_evolves_on_its_own() {
    // Row i of W sees only column i of V: the value entries can be
    // split between threads with no exchange, in either schedule.
    for seed in 0..3 {
        for (n, chunk, d) in [(9, 4, 3), (100, 16, 8), (64, 8, 16)] {
            let [q, k, v] = random_inputs(seed, n, d, 6);
            let beta = betas(seed, n);
            let whole = delta_rule_recurrent(&q, &k, &v, &beta).unwrap();
            for (a, b) in [(0, 1), (1, 4), (4, 6)] {
                let part = v.slice(s![.., a..b]);
                let rec = delta_rule_recurrent(&q, &k, &part, &beta);
                let chk = delta_rule_chunkwise(&q, &k, &part, &beta, chunk);
                let expected = whole.output.slice(s![.., a..b]);
                for read in [rec.unwrap(), chk.unwrap()] {
                    let gap = (&read.output - &expected)
                        .fold(0.0f64, |g, x| g.max(x.abs()));
                    assert!(gap < 1e-12, "seed {seed}, rows {a}..{b}");
                }
            }
        }
    }
}

#[test]
fn every_form_gives_the_same_output_across_threads() {
    // Every form of Appendix E: the four causal forms of linear attention
    // and the delta rule, both softmax forms, the parallel form and the
    // two non-causal groupings (fewer queries than keys).
    for seed in 0..2 {
        for (n, chunk, d) in [(9, 4, 3), (100, 16, 8), (130, 32, 16)] {
            for m in [1, 5, 17, 40] {
                let [q, k, v] = random_inputs(seed, n, d, m);
                let [q, k, v] = [&q, &k, &v].map(|a| to_f32(a));
                let beta = betas(seed, n).mapv(|x| x as f32);
                let half = q.slice(s![..n.div_ceil(2), ..]);
                let forms: [(&str, &ValueForm); 9] = [
                    ("recurrent", &|v| {
                        linear_attention_recurrent_f32(&q, &k, v)
                    }),
                    ("softmax", &|v| softmax_attention_causal_f32(&q, &k, v)),
                    ("tiled", &|v| softmax_attention_tiled_f32(&q, &k, v)),
                    ("parallel", &|v| linear_attention_parallel_f32(&q, &k, v)),
                    ("scores first", &|v| {
                        linear_attention_scores_first_f32(&half, &k, v)
                    }),
                    ("memory first", &|v| {
                        linear_attention_memory_first_f32(&half, &k, v)
                    }),
                    ("chunkwise", &|v| {
                        linear_attention_chunkwise_f32(&q, &k, v, chunk)
                    }),
                    ("delta recurrent", &|v| {
                        delta_rule_recurrent_f32(&q, &k, v, &beta)
                    }),
                    ("delta chunkwise", &|v| {
                        delta_rule_chunkwise_f32(&q, &k, v, &beta, chunk)
                    }),
                ];
                for (name, form) in forms {
                    let one = form(&v).unwrap();
                    for threads in [1, 2, 3, 64] {
                        let split = across_value_columns(&v, threads, form);
                        let e = worst_row_relative_difference(
                            &to_f64(&split.unwrap()),
                            &to_f64(&one),
                        );
                        assert!(e < 1e-5, "{name}, m {m}, {threads}: {e}");
                    }
                }
            }
        }
    }
    // An error inside a thread comes back as the error.
    let [q, k, v] = random_inputs(0, 6, 3, 4).map(|a| to_f32(&a));
    let short = q.slice(s![..5, ..]).to_owned();
    let err = across_value_columns(&v, 2, |v| {
        linear_attention_recurrent_f32(&short, &k, v)
    });
    assert!(err.unwrap_err().to_string().contains("one key per query"));
}

#[test]
fn a_chunk_is_four_matrix_products_and_a_block_of_scores_two() {
    // Calls of the matrix-product kernel, counted as they are made: four
    // per chunk for both chunkwise forms (so four per token at C = 1), none
    // in the recurrences, and two per block of the tiled softmax (scores,
    // then their read) for the blocks it does not skip.
    use super::counted::products;
    for (seed, n, p, m, c) in [
        (1, 64, 8, 8, 16),
        (2, 50, 16, 8, 7),
        (3, 33, 4, 12, 64),
        (4, 40, 12, 20, 1),
    ] {
        let [q, k, v] = random_inputs(seed, n, p, m).map(|a| to_f32(&a));
        let beta = Array1::<f32>::from_elem(n, 0.5);
        let chunks = n.div_ceil(c);
        let calls = |(out, calls): (Result<Array2<f32>, _>, usize)| {
            out.expect("valid inputs");
            calls
        };
        let (q, k, v, beta) = (&q, &k, &v, &beta);
        let linear = products(|| linear_attention_chunkwise_f32(q, k, v, c));
        let delta = products(|| delta_rule_chunkwise_f32(q, k, v, beta, c));
        assert_eq!(calls(linear), 4 * chunks, "N {n}, C {c}");
        assert_eq!(calls(delta), 4 * chunks, "delta, N {n}, C {c}");
        let linear = products(|| linear_attention_recurrent_f32(q, k, v));
        let delta = products(|| delta_rule_recurrent_f32(q, k, v, beta));
        assert_eq!((calls(linear), calls(delta)), (0, 0), "N {n}");
        for (b_q, b_k) in [(1, 1), (1, 3), (4, 8), (8, 8), (16, 64)] {
            let tiled =
                products(|| softmax_attention_blocks_f32(q, k, v, b_q, b_k));
            // Query block [i, i + b_q) meets the key blocks that start
            // at or before its last query: the rest lie above the diagonal.
            let blocks: usize = (0..n)
                .step_by(b_q)
                .map(|i| ((i + b_q).min(n) - 1) / b_k + 1)
                .sum();
            assert_eq!(calls(tiled), 2 * blocks, "N {n}, {b_q} × {b_k}");
        }
    }
}

#[test]
fn a_split_copies_its_columns_and_repeats_the_work_that_does_not_depend_on_v() {
    // A thread's value columns are not rows of their own: a form that reads
    // rows as slices copies them (whole rows it borrows). And each group
    // repeats the work that does not depend on the values: the chunkwise
    // forms' scores (and the delta rule's substitution on K̄), counted as
    // performed: the groups' sum is the whole plus (groups − 1) times that
    // work, which `arithmetic` gives at m = 0. The recurrences repeat none.
    use super::counted::ops;
    use crate::appendix::speed::{Timed, arithmetic};
    for (seed, n, p, m, c) in [(1, 64, 8, 8, 16), (2, 50, 16, 9, 7)] {
        let [q, k, v] = random_inputs(seed, n, p, m).map(|a| to_f32(&a));
        let beta = Array1::<f32>::from_elem(n, 0.5);
        let groups = [s![.., ..2], s![.., 2..5], s![.., 5..]];
        let [_, _, whole] = row_major(&q, &k, &v);
        assert!(whole.is_view(), "standard rows are borrowed");
        for g in groups {
            let columns = v.slice(g);
            let [_, _, part] = row_major(&q, &k, &columns);
            assert!(!part.is_view(), "a group of columns is copied");
        }
        let forms: [(Timed, &ValueForm); 4] = [
            (Timed::Recurrent, &|v| {
                linear_attention_recurrent_f32(&q, &k, v)
            }),
            (Timed::Chunkwise, &|v| {
                linear_attention_chunkwise_f32(&q, &k, v, c)
            }),
            (Timed::DeltaRecurrent, &|v| {
                delta_rule_recurrent_f32(&q, &k, v, &beta)
            }),
            (Timed::DeltaChunkwise, &|v| {
                delta_rule_chunkwise_f32(&q, &k, v, &beta, c)
            }),
        ];
        for (form, run) in forms {
            let count = |v: &ArrayRef2<f32>| {
                let (out, done) = ops(|| run(v));
                out.expect("valid inputs");
                done as f64
            };
            let split: f64 = groups.iter().map(|&g| count(&v.slice(g))).sum();
            let repeated = arithmetic(form, n, p, 0, c);
            let want = count(&v) + (groups.len() - 1) as f64 * repeated;
            assert_eq!(split, want, "{form:?}, N {n}, C {c}");
            let chunked =
                matches!(form, Timed::Chunkwise | Timed::DeltaChunkwise);
            assert_eq!(repeated > 0.0, chunked, "{form:?}");
        }
    }
}

#[test]
fn bad_f32_input_is_an_input_error() {
    let [q, k, v] = random_inputs(0, 5, 3, 2).map(|a| to_f32(&a));
    let beta = Array1::<f32>::ones(5);
    let err = linear_attention_chunkwise_f32(&q, &k, &v, 0).unwrap_err();
    assert!(matches!(err, InputError::BadParameter { .. }), "{err}");
    let err = delta_rule_chunkwise_f32(&q, &k, &v, &beta, 0).unwrap_err();
    assert!(matches!(err, InputError::BadParameter { .. }), "{err}");
    let short = q.slice(s![..4, ..]).to_owned();
    let err = linear_attention_recurrent_f32(&short, &k, &v).unwrap_err();
    assert!(err.to_string().contains("one key per query"), "{err}");
    let mut bad = k.clone();
    bad[[2, 1]] = f32::NAN;
    let err = linear_attention_recurrent_f32(&q, &bad, &v).unwrap_err();
    assert!(matches!(err, InputError::NonFinite { name: "k", .. }));
    let err =
        delta_rule_recurrent_f32(&q, &k, &v, &beta.slice(s![..4])).unwrap_err();
    assert!(err.to_string().contains("one write strength"), "{err}");
    let err = softmax_attention_causal_f32(&short, &k, &v).unwrap_err();
    let odd = softmax_attention_blocks_f32(&k, &k, &v, 3, 7).unwrap_err();
    assert!(odd.to_string().contains("keys"), "{odd}");
    assert!(err.to_string().contains("one key per query"), "{err}");
    let err = linear_attention_parallel_f32(&q, &k, &short).unwrap_err();
    assert!(err.to_string().contains("one value"), "{err}");
    let narrow = q.slice(s![.., ..2]).to_owned();
    let err = linear_attention_scores_first_f32(&narrow, &k, &v);
    assert!(err.unwrap_err().to_string().contains("width d"));
    let err = linear_attention_memory_first_f32(&q, &bad, &v);
    assert!(matches!(err, Err(InputError::NonFinite { name: "k", .. })));
    let empty = Array2::<f32>::zeros((0, 3));
    let err = linear_attention_recurrent_f32(&empty, &empty, &empty);
    assert!(matches!(err, Err(InputError::Empty { name: "q", .. })));
}

#[test]
fn tiled_softmax_f32_equals_the_tiled_f64_form() {
    use crate::m3::cost::softmax_attention_tiled;
    // Lengths on both sides of the query block (256) and the key block
    // (512), so that partial blocks and partial diagonals are met.
    for seed in 0..3 {
        for (n, d, m) in [
            (1, 4, 3),
            (7, 3, 5),
            (255, 16, 8),
            (257, 16, 8),
            (512, 64, 16),
            (513, 32, 64),
            (1100, 64, 64),
        ] {
            let mut rng = seeded(seed * 1000 + n as u64);
            let [q, k, v] = [d, d, m].map(|w| randn(&mut rng, n, w));
            let [q32, k32, v32] = [&q, &k, &v].map(|a| to_f32(a));
            let book = softmax_attention_tiled(&q, &k, &v, 16).unwrap();
            let fast = softmax_attention_tiled_f32(&q32, &k32, &v32).unwrap();
            let e = gap(&fast, &book);
            assert!(e < 1e-4, "seed {seed}, N {n}, d {d}: {e}");
            // Other block sizes: one query, blocks that do not divide N,
            // blocks longer than N.
            for (queries, keys) in [(1, 1), (1, 3), (3, 6), (8, 32), (64, 64)] {
                let fast = softmax_attention_blocks_f32(
                    &q32, &k32, &v32, queries, keys,
                );
                let e = gap(&fast.unwrap(), &book);
                assert!(e < 1e-4, "{queries} × {keys}, N {n}: {e}");
            }
        }
    }
}

#[test]
fn tiled_softmax_f32_survives_huge_scores() {
    use crate::m3::cost::softmax_attention_tiled;
    // Scores near ±10⁴: e^score overflows f32 (and f64) long before.
    for seed in 0..3 {
        let mut rng = seeded(seed);
        let [q, k, v] = [16, 16, 8].map(|w| randn(&mut rng, 300, w));
        let q = q * 1000.0;
        let [q32, k32, v32] = [&q, &k, &v].map(|a| to_f32(a));
        let book = softmax_attention_tiled(&q, &k, &v, 7).unwrap();
        let fast = softmax_attention_tiled_f32(&q32, &k32, &v32).unwrap();
        assert!(fast.iter().all(|x| x.is_finite()), "seed {seed}");
        // One dominant key per query: the output is that key's value, and
        // an f32 score may round to pick its neighbour only in a near-tie.
        let e = gap(&fast, &book);
        assert!(e < 1e-3, "seed {seed}: {e}");
    }
}

#[test]
fn decode_steps_equal_the_full_sequence_forms_at_every_position() {
    use crate::m3::attention::{Mask, softmax_attention};
    for seed in 0..3 {
        for (n, d, m) in [(1, 4, 3), (9, 3, 5), (70, 16, 8), (300, 64, 64)] {
            let [q, k, v] = random_inputs(seed, n, d, m);
            let [q32, k32, v32] = [&q, &k, &v].map(|a| to_f32(a));
            let soft = softmax_attention(&q, &k, &v, Mask::Causal).unwrap();
            let linear = linear_attention_recurrent(&q, &k, &v).unwrap();
            let mut cache = KvCacheF32::new(d, m, n);
            let mut state = LinearStateF32::new(d, m);
            let (mut o_soft, mut o_linear) =
                (Array2::zeros((n, m)), Array2::zeros((n, m)));
            for t in 0..n {
                let (q_t, k_t, v_t) = (q32.row(t), k32.row(t), v32.row(t));
                let [q_t, k_t, v_t] = [q_t, k_t, v_t].map(|r| r.to_vec());
                let out = o_soft.row_mut(t).into_slice().unwrap();
                cache.step(&q_t, &k_t, &v_t, out).unwrap();
                let out = o_linear.row_mut(t).into_slice().unwrap();
                state.step(&q_t, &k_t, &v_t, out).unwrap();
            }
            let e = gap(&o_soft, &soft.output);
            assert!(e < 1e-4, "softmax, seed {seed}, N {n}: {e}");
            let e = gap(&o_linear, &linear);
            assert!(e < 1e-4, "linear, seed {seed}, N {n}: {e}");
        }
    }
}

#[test]
fn recurrent_token_stores_s_by_columns() {
    // S: (m, p) kept column after column: after one write of k = e_j
    // into S = 0, column s_j = s[j m..(j + 1) m] holds v and nothing else
    // does; the read with q = e_j is that column, at several widths (m
    // below, at and past a block of ROWS rows).
    for (p, m) in [(3, 2), (5, ROWS), (4, ROWS + 3), (2, 2 * ROWS + 1)] {
        for j in 0..p {
            let v: Vec<f32> = (0..m).map(|i| 1.0 + i as f32).collect();
            let mut e = vec![0.0f32; p];
            e[j] = 1.0;
            let (mut s, mut z) = (vec![0.0f32; p * m], vec![0.0f32; p]);
            let mut read = vec![0.0f32; m];
            let norm =
                recurrent_token_f32(&mut s, &mut z, &e, &e, &v, &mut read);
            for (c, column) in s.chunks_exact(m).enumerate() {
                let want = if c == j { v.clone() } else { vec![0.0; m] };
                assert_eq!(column, want, "p {p}, m {m}, j {j}, column {c}");
            }
            assert_eq!(read, v, "p {p}, m {m}, j {j}");
            assert_eq!(norm, 1.0);
        }
    }
}

#[test]
fn the_cache_grows_by_one_token_per_step_while_the_state_stays_fixed() {
    for (d, m) in [(8, 5), (3, 7), (16, 16)] {
        cache_and_state_bytes(d, m);
    }
}

fn cache_and_state_bytes(d: usize, m: usize) {
    let [q, k, v] = random_inputs(4, 40, d, m).map(|a| to_f32(&a));
    let mut cache = KvCacheF32::new(d, m, 4); // it may grow past this
    let mut state = LinearStateF32::new(d, m);
    let mut out = vec![0.0; m];
    for t in 0..40 {
        let [q_t, k_t, v_t] = [&q, &k, &v].map(|a| a.row(t).to_vec());
        cache.step(&q_t, &k_t, &v_t, &mut out).unwrap();
        state.step(&q_t, &k_t, &v_t, &mut out).unwrap();
        assert_eq!(cache.len(), t + 1);
        assert_eq!(cache.bytes(), (t + 1) * (d + m) * 4);
        assert_eq!(state.bytes(), (m * d + d) * 4);
    }
    // Rolled back to t tokens, the cache reads as it did at step t.
    let mut again = KvCacheF32::new(d, m, 40);
    let (mut first, mut second) = (vec![0.0; m], vec![0.0; m]);
    for t in 0..10 {
        let [q_t, k_t, v_t] = [&q, &k, &v].map(|a| a.row(t).to_vec());
        again.step(&q_t, &k_t, &v_t, &mut first).unwrap();
    }
    again.truncate(9);
    let [q_t, k_t, v_t] = [&q, &k, &v].map(|a| a.row(9).to_vec());
    again.step(&q_t, &k_t, &v_t, &mut second).unwrap();
    assert_eq!(first, second);
    // A prompt pushed without reads leaves the cache the steps leave.
    let mut pushed = KvCacheF32::new(d, m, 0);
    for t in 0..9 {
        pushed.push(&k.row(t).to_vec(), &v.row(t).to_vec()).unwrap();
    }
    pushed.step(&q_t, &k_t, &v_t, &mut second).unwrap();
    assert_eq!(first, second);
}

#[test]
fn a_bad_decode_step_is_an_error_naming_the_problem() {
    for (d, m) in [(4, 2), (3, 7), (16, 16)] {
        let (q, k, v) = (vec![0.5f32; d], vec![0.25f32; d], vec![1.0f32; m]);
        let mut out = vec![0.0f32; m];
        let mut cache = KvCacheF32::new(d, m, 4);
        let mut state = LinearStateF32::new(d, m);
        let wide = vec![0.5f32; d + 1];
        let mut nan = k.clone();
        nan[d - 1] = f32::NAN;
        type Token<'a> = (&'a [f32], &'a [f32], &'a [f32], String);
        let cases: [Token; 3] = [
            (&wide, &k, &v, format!("q is [1, {}]", d + 1)),
            (&q, &nan, &v, format!("k at [0, {}]", d - 1)),
            (&q, &k, &wide[..d + 1], format!("v is [1, {}]", d + 1)),
        ];
        for (q_t, k_t, v_t, names) in &cases {
            let e = cache.step(q_t, k_t, v_t, &mut out).unwrap_err();
            assert!(e.to_string().contains(names.as_str()), "{e}");
            let e = state.step(q_t, k_t, v_t, &mut out).unwrap_err();
            assert!(e.to_string().contains(names.as_str()), "{e}");
        }
        assert!(cache.step(&q, &k, &v, &mut [0.0; 1]).is_err() || m == 1);
        assert_eq!(cache.len(), 0, "a bad token is not cached");
        // Huge but finite: the scores overflow, and the cache is unchanged.
        let huge = vec![1e30f32; d];
        let e = cache.step(&huge, &huge, &v, &mut out).unwrap_err();
        assert!(e.to_string().contains("overflow"), "{e}");
        assert_eq!(cache.len(), 0);
        // A negative feature, then features whose normaliser is zero.
        let mut negative = k.clone();
        negative[d - 1] = -1.0;
        let e = state.step(&q, &negative, &v, &mut out).unwrap_err();
        assert!(e.to_string().contains("phi_k"), "{e}");
        let zero = vec![0.0f32; d];
        let e = state.step(&q, &zero, &v, &mut out).unwrap_err();
        assert!(e.to_string().contains("zᵀφ(q_t)"), "{e}");
        assert!(out.iter().all(|x| x.is_finite()));
    }
}

#[test]
fn the_vectorised_exp2_is_accurate_to_f32() {
    for i in 0..=200_000 {
        let x = -126.0 * i as f32 / 200_000.0;
        let want = 2f64.powf(x as f64);
        for got in [exp2::<false>(x), exp2::<true>(x)] {
            let e = (got as f64 - want).abs() / want;
            assert!(e < 2e-7, "2^{x}: {got} vs {want} ({e})");
        }
    }
    assert!(exp2::<false>(-1e30) <= 1.2e-38);
}

#[test]
fn the_largest_score_pass_finds_every_score_that_is_not_finite() {
    use super::softmax::largest_and_finite;
    // NaN, +∞ and −∞ at every position of 37 entries (two full vectors of
    // 16 and a remainder of 5): flagged; the largest and smallest finite
    // f32, subnormals and −0 are not.
    let base: Vec<f32> = (0..37).map(|j| (j as f32 - 18.0) * 1e30).collect();
    let (largest, finite) = largest_and_finite(&base);
    assert!(finite && largest == 18.0 * 1e30);
    let edges = [f32::MAX, f32::MIN, f32::MIN_POSITIVE / 2.0, -0.0];
    for j in 0..base.len() {
        for bad in [f32::NAN, f32::INFINITY, f32::NEG_INFINITY] {
            let mut x = base.clone();
            x[j] = bad;
            assert!(!largest_and_finite(&x).1, "{bad} at {j}");
        }
        for edge in edges {
            let mut x = base.clone();
            x[j] = edge;
            let (largest, finite) = largest_and_finite(&x);
            assert!(finite, "{edge} at {j}");
            assert_eq!(largest, x.iter().copied().fold(f32::MIN, f32::max));
        }
    }
}

#[test]
fn the_tiled_f32_form_names_the_score_that_overflows_and_ignores_the_future() {
    // Query 9 and key 4 scaled by 1e20: their score overflows f32 and
    // query 9 sees key 4, so every block size names (9, 4). Key 30 in
    // its place is in query 9's future: the overflowing score is masked,
    // and the answer is the f64 one.
    use crate::m3::attention::{Mask, softmax_attention};
    let mut rng = seeded(11);
    let [q, k, v] = [8, 8, 4].map(|w| randn(&mut rng, 40, w));
    for (key, sees) in [(4, true), (30, false)] {
        let (mut q, mut k) = (q.clone(), k.clone());
        q.row_mut(9).mapv_inplace(|x| x.signum() * 1e20);
        k.row_mut(key).assign(&q.row(9));
        let [q32, k32, v32] = [&q, &k, &v].map(|a| to_f32(a));
        let want = softmax_attention(&q, &k, &v, Mask::Causal).unwrap().output;
        for (queries, keys) in [(1, 1), (4, 8), (8, 8), (16, 32), (256, 512)] {
            let got =
                softmax_attention_blocks_f32(&q32, &k32, &v32, queries, keys);
            match (sees, got) {
                (true, Err(InputError::Overflow { at, .. })) => {
                    assert_eq!(at, [9, key], "{queries} × {keys}");
                }
                (false, Ok(o)) => {
                    let e = gap(&o, &want);
                    assert!(e < 1e-4, "{queries} × {keys}: {e}");
                }
                (_, other) => panic!("{queries} × {keys}: {other:?}"),
            }
        }
    }
}
