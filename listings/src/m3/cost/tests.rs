use super::study::*;
use super::*;
use crate::m3::attention::{Mask, softmax_attention};
use crate::m3::fast_weight_memory::linear_attention_recurrent;
use crate::phi::elu_plus_one;
use crate::random::{randn, seeded};
use approx::assert_relative_eq;
use ndarray::s;

fn random(seed: u64, n: usize, d: usize, m: usize) -> [Array2<f64>; 3] {
    let mut rng = seeded(seed);
    [
        randn(&mut rng, n, d),
        randn(&mut rng, n, d),
        randn(&mut rng, n, m),
    ]
}

#[test]
fn tiled_attention_equals_softmax_attention() {
    // Seeds, shapes, and blocks of one token, of sizes that do not
    // divide N, of N itself and larger than N.
    for seed in 0..4 {
        for (n, d, m) in [(1, 3, 2), (7, 4, 3), (33, 8, 5), (64, 16, 16)] {
            let [q, k, v] = random(seed * 100 + n as u64, n, d, m);
            let want =
                softmax_attention(&q, &k, &v, Mask::Causal).unwrap().output;
            for block in [1, 2, 5, 16, n, n + 3, 4 * n] {
                let got = softmax_attention_tiled(&q, &k, &v, block).unwrap();
                assert_eq!(got.dim(), want.dim());
                for (g, w) in got.iter().zip(&want) {
                    assert!(
                        (g - w).abs() <= 1e-12 * (1.0 + w.abs()),
                        "n {n} block {block}: {g} vs {w}"
                    );
                }
            }
        }
    }
}

#[test]
fn tiled_attention_survives_huge_scores() {
    // Scores in the tens of thousands: e^score overflows f64, the
    // running maximum keeps every exponent at or below 0.
    for (seed, (n, d, m)) in (0..3)
        .flat_map(|s| [(40, 8, 4), (17, 3, 5), (100, 16, 8)].map(|x| (s, x)))
    {
        let [q, k, v] = random(seed, n, d, m);
        let q = q * 3000.0;
        let sqrt_d = (d as f64).sqrt();
        assert!(
            q.dot(&k.t())
                .iter()
                .any(|s| (s / sqrt_d).exp() == f64::INFINITY)
        );
        let want = softmax_attention(&q, &k, &v, Mask::Causal).unwrap().output;
        for block in [1, 3, 16, 64] {
            let got = softmax_attention_tiled(&q, &k, &v, block).unwrap();
            assert!(got.iter().all(|x| x.is_finite()));
            for (g, w) in got.iter().zip(&want) {
                assert!((g - w).abs() <= 1e-12 * (1.0 + w.abs()));
            }
        }
    }
}

#[test]
fn tiled_attention_rejects_an_empty_block() {
    let [q, k, v] = random(1, 5, 3, 2);
    let err = softmax_attention_tiled(&q, &k, &v, 0).unwrap_err();
    assert!(err.to_string().contains("block"), "{err}");
}

#[test]
fn score_matrix_has_n_squared_entries() {
    for n in [1, 2, 7, 100, 300] {
        let [q, k, v] = random(n as u64, n, 4, 3);
        let a = softmax_attention(&q, &k, &v, Mask::Causal).unwrap();
        let n = n as u64;
        assert_eq!(a.weights.len() as u64, score_matrix_floats(n));
    }
}

#[test]
fn causal_mask_keeps_n_n_plus_1_over_2_scores() {
    for n in [1, 2, 7, 100, 300] {
        let [q, k, v] = random(n as u64, n, 4, 3);
        let a = softmax_attention(&q, &k, &v, Mask::Causal).unwrap();
        let visible = a.weights.iter().filter(|&&w| w > 0.0).count();
        assert_eq!(visible as u64, causal_visible_scores(n as u64));
    }
    // Doubling n still multiplies the count by nearly four.
    let ratio = causal_visible_scores(2 << 20) as f64
        / causal_visible_scores(1 << 20) as f64;
    assert!((ratio - 4.0).abs() < 1e-5, "{ratio}");
}

#[test]
fn a_past_query_is_never_read_again() {
    // Rewrite every query but query t: output t does not move, bit for
    // bit, so query t is read at its own step only, and a decoder need
    // not keep past queries. With t the last, as the chapter says.
    for seed in 0..5 {
        for t in [0, 7, 19] {
            let [q, k, v] = random(seed, 20, 6, 4);
            let [other, _, _] = random(seed + 50, 20, 6, 4);
            let mut q2 = other.clone();
            q2.row_mut(t).assign(&q.row(t));
            let a = softmax_attention(&q, &k, &v, Mask::Causal).unwrap();
            let b = softmax_attention(&q2, &k, &v, Mask::Causal).unwrap();
            // (Row 0 reads one key only, so it is v_1 whatever query 0
            // is; every other row moves with its query.)
            for j in 0..20 {
                let same = a.output.row(j) == b.output.row(j);
                let want = j == t || j == 0;
                assert_eq!(same, want, "seed {seed}, t {t}, row {j}");
            }
        }
    }
}

#[test]
fn a_key_and_value_are_read_by_every_later_query() {
    // Rewrite key j and value j: every output from j on moves, none
    // before it.
    for seed in 0..5 {
        for j in [0, 7, 19] {
            let [q, k, v] = random(seed, 20, 6, 4);
            let [_, other_k, other_v] = random(seed + 50, 20, 6, 4);
            let (mut k2, mut v2) = (k.clone(), v.clone());
            k2.row_mut(j).assign(&other_k.row(j));
            v2.row_mut(j).assign(&other_v.row(j));
            let a = softmax_attention(&q, &k, &v, Mask::Causal).unwrap();
            let b = softmax_attention(&q, &k2, &v2, Mask::Causal).unwrap();
            for t in 0..20 {
                let same = a.output.row(t) == b.output.row(t);
                assert_eq!(same, t < j, "seed {seed}, j {j}, row {t}");
            }
        }
    }
}

#[test]
fn the_score_matrix_outgrows_the_cache_by_n_over_d_plus_m() {
    // The factor the memory table's last line prints: N²/(N(d + m)),
    // growing down the table, and larger than one long before its end.
    let table = cost_table(&COST_LENGTHS, COST_D, COST_BYTES_PER_FLOAT);
    let factors: Vec<u64> = table
        .rows
        .iter()
        .map(|r| {
            assert_eq!(r.score_floats % r.cache_floats, 0);
            assert_eq!(r.score_floats / r.cache_floats, r.n / (2 * COST_D));
            r.score_floats / r.cache_floats
        })
        .collect();
    assert!(factors.windows(2).all(|w| w[1] > w[0]), "{factors:?}");
    assert!(factors[0] > 1, "{factors:?}");
    let printed = MemoryTable(&table).to_string();
    let lines: Vec<&str> = printed.lines().collect();
    let last = lines[lines.len() - 2..].join("\n");
    let (n, factor) = (table.rows[4].n, factors[4]);
    let want = format!(
        "at N = {}, the score matrix holds {} times\nthe floats of the KV \
         cache",
        group_digits(n),
        group_digits(factor)
    );
    assert_eq!(last, want);
    // No wider than the table above it.
    let widest = lines[..lines.len() - 2].iter().map(|l| l.chars().count());
    let widest = widest.max().unwrap();
    assert!(lines.iter().all(|l| l.chars().count() <= widest));
}

#[test]
fn kv_cache_holds_every_past_key_and_value() {
    for (n, d, m) in [(1, 1, 1), (12, 8, 8), (100, 16, 5)] {
        let [q, k, v] = random(0, n, d, m);
        let mut cache = KvCache::new(d, m);
        for t in 0..n {
            cache.decode(&q.row(t), &k.row(t), &v.row(t)).unwrap();
            let held = kv_cache_floats(t as u64 + 1, d as u64, m as u64);
            assert_eq!(cache.floats() as u64, held);
            assert_eq!(cache.keys.row(t), k.row(t));
        }
    }
}

// "A model that generates text must keep every past key and value to
// score the next token": the cache holds every one, its output is
// causal softmax attention's, and every past key and every past value
// moves the next output, so none could be dropped.
#[test]
fn softmax_decoding_keeps_and_needs_every_past_key_and_value() {
    for seed in 0..5 {
        for (n, d, m) in [(1, 1, 1), (12, 8, 8), (40, 16, 5)] {
            let mut rng = seeded(seed);
            let (q, k, v) = (
                randn(&mut rng, n, d),
                randn(&mut rng, n, d),
                randn(&mut rng, n, m),
            );
            let full = softmax_attention(&q, &k, &v, Mask::Causal).unwrap();
            let mut cache = KvCache::new(d, m);
            for t in 0..n {
                let o = cache.decode(&q.row(t), &k.row(t), &v.row(t)).unwrap();
                // Every past key and value, in order, and nothing else.
                assert_eq!(cache.keys, k.slice(s![..=t, ..]), "seed {seed}");
                assert_eq!(cache.values, v.slice(s![..=t, ..]), "seed {seed}");
                for (a, b) in o.iter().zip(full.output.row(t)) {
                    assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()));
                }
                // Each of them counts: nudge one past key, or one past
                // value, and this token's output moves.
                for j in 0..=t {
                    for nudge_key in [true, false] {
                        let mut other = KvCache::new(d, m);
                        for i in 0..=t {
                            let (mut key, mut value) =
                                (k.row(i).to_owned(), v.row(i).to_owned());
                            if i == j && nudge_key {
                                key[0] += 0.5;
                            } else if i == j {
                                value[0] += 0.5;
                            }
                            let moved =
                                other.decode(&q.row(i), &key, &value).unwrap();
                            if i == t && (t > 0 || !nudge_key) {
                                assert_ne!(
                                    moved, o,
                                    "seed {seed}, t {t}, j {j}"
                                );
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn cached_decoding_equals_causal_softmax_attention() {
    for seed in 0..10 {
        for (n, d, m) in [(1, 1, 1), (2, 3, 4), (12, 8, 8), (150, 16, 5)] {
            let [q, k, v] = random(seed, n, d, m);
            let full = softmax_attention(&q, &k, &v, Mask::Causal).unwrap();
            let mut cache = KvCache::new(d, m);
            for t in 0..n {
                let o = cache.decode(&q.row(t), &k.row(t), &v.row(t));
                assert_relative_eq!(
                    o.unwrap(),
                    full.output.row(t),
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
            }
        }
    }
}

#[test]
fn decode_flops_counts_the_multiply_adds_of_a_decoding_step() {
    // A decoding step written as loops, counting each multiply–add.
    for (t, d, m) in [(1, 1, 1), (5, 3, 2), (40, 8, 8), (33, 16, 4)] {
        let [q, k, v] = random(t as u64, t, d, m);
        let mut multiply_adds = 0;
        let mut scores = vec![0.0; t];
        for j in 0..t {
            for i in 0..d {
                scores[j] += k[[j, i]] * q[[t - 1, i]];
                multiply_adds += 1;
            }
        }
        let scores = Array1::from(scores) / (d as f64).sqrt();
        let a = softmax_rows(&scores.insert_axis(Axis(0)));
        let mut o = vec![0.0; m];
        for j in 0..t {
            for (c, o_c) in o.iter_mut().enumerate() {
                *o_c += a[[0, j]] * v[[j, c]];
                multiply_adds += 1;
            }
        }
        let (t, d, m) = (t as u64, d as u64, m as u64);
        assert_eq!(2 * multiply_adds, decode_flops(t, d, m));
        // ... and the loops compute the step the cache computes.
        let full = softmax_attention(&q, &k, &v, Mask::Causal).unwrap();
        let last = full.output.row(t as usize - 1);
        assert_relative_eq!(Array1::from(o), last, max_relative = 1e-10);
    }
}

#[test]
fn fixed_state_step_flops_counts_the_multiply_adds_of_a_step() {
    for (n, p, m) in [(1, 1, 1), (6, 4, 3), (30, 8, 8)] {
        let [q, k, v] = random(n as u64, n, p, m);
        let (phi_q, phi_k) = (elu_plus_one(&q), elu_plus_one(&k));
        let (mut s, mut z) = (Array2::<f64>::zeros((m, p)), vec![0.0; p]);
        let mut multiply_adds = 0;
        let mut o = Array2::<f64>::zeros((n, m));
        for t in 0..n {
            let (mut num, mut den) = (vec![0.0; m], 0.0);
            for b in 0..p {
                for a in 0..m {
                    s[[a, b]] += v[[t, a]] * phi_k[[t, b]]; // write S
                    num[a] += s[[a, b]] * phi_q[[t, b]]; // read S
                    multiply_adds += 2;
                }
                z[b] += phi_k[[t, b]]; // write z (an add, counted)
                den += z[b] * phi_q[[t, b]]; // read z
                multiply_adds += 2;
            }
            for a in 0..m {
                o[[t, a]] = num[a] / den;
            }
        }
        let step = fixed_state_step_flops(p as u64, m as u64);
        assert_eq!(2 * multiply_adds, n as u64 * step);
        let held = (s.len() + z.len()) as u64; // all the state the loops kept
        assert_eq!(fixed_state_floats(p as u64, m as u64), held);
        let rec = linear_attention_recurrent(&phi_q, &phi_k, &v).unwrap();
        assert_relative_eq!(o, rec, max_relative = 1e-10, epsilon = 1e-12);
    }
}

#[test]
fn doubling_n_quadruples_the_scores_and_doubles_the_cache() {
    // A table that doubles N, and the chapter's, whose N grows by four
    // from row to row: the scores grow by the factor squared, the cache
    // and the step for token N by the factor, the fixed state not.
    let doubling = [1 << 10, 1 << 11, 1 << 12, 1 << 13];
    for lengths in [&doubling[..], &COST_LENGTHS[..]] {
        let table = cost_table(lengths, 64, 2);
        for pair in table.rows.windows(2) {
            let (a, b) = (&pair[0], &pair[1]);
            let x = b.n / a.n;
            assert!(x > 1 && b.n == x * a.n);
            assert_eq!(b.score_floats, x * x * a.score_floats);
            assert_eq!(b.cache_floats, x * a.cache_floats);
            assert_eq!(b.decode_flops, x * a.decode_flops);
            // Total decoding work is quadratic: n(n + 1)(d + m).
            assert_eq!(b.decode_flops_total, b.n * (b.n + 1) * 128);
            // The fixed state: same size, same work per token.
            assert_eq!(b.state_floats, a.state_floats);
            assert_eq!(b.state_step_flops, a.state_step_flops);
            assert_eq!(b.state_flops_total, x * a.state_flops_total);
        }
    }
}

#[test]
fn softmax_step_costs_more_than_the_fixed_step_once_t_passes_p_plus_one() {
    // With d = m = p: 2t(2p) against 4(p² + p), equal at t = p + 1.
    for p in [1, 8, 64, 128] {
        let fixed = fixed_state_step_flops(p, p);
        for t in 1..4 * p + 4 {
            let softmax = decode_flops(t, p, p);
            assert_eq!(softmax > fixed, t > p + 1, "p = {p}, t = {t}");
        }
        // ... and the two cost the same at t = p + 1.
        assert_eq!(decode_flops(p + 1, p, p), fixed, "p = {p}");
    }
}

#[test]
fn decode_rejects_a_token_of_the_wrong_width() {
    let mut cache = KvCache::new(4, 3);
    let (q, k, v) = (Array1::zeros(4), Array1::zeros(4), Array1::zeros(3));
    cache.decode(&q, &k, &v).unwrap();
    let msg = cache
        .decode(&Array1::zeros(5), &Array1::zeros(5), &v)
        .unwrap_err()
        .to_string();
    assert!(
        msg.contains("k is [1, 5]") && msg.contains("[1, 4]"),
        "{msg}"
    );
    let msg = cache.decode(&q, &k, &Array1::zeros(2)).unwrap_err();
    assert!(msg.to_string().contains("cached values is [1, 3]"), "{msg}");
    let mut nan = Array1::zeros(4);
    nan[1] = f64::NAN;
    assert!(cache.decode(&nan, &k, &v).is_err());
    assert_eq!(cache.floats(), 7, "a rejected token is not cached");
}

#[test]
fn numbers_print_in_groups_and_binary_units() {
    assert_eq!(group_digits(0), "0");
    assert_eq!(group_digits(999), "999");
    assert_eq!(group_digits(1000), "1,000");
    assert_eq!(group_digits(1234567), "1,234,567");
    assert_eq!(bytes(512), "512 B");
    assert_eq!(bytes(2048), "2.00 KiB");
    assert_eq!(bytes(3 << 30), "3.00 GiB");
    assert_eq!(bytes(100 << 20), "100 MiB");
    assert_eq!(bytes(1536 << 10), "1.50 MiB");
}

#[test]
fn a_refused_decode_step_leaves_the_cache_as_it_was() {
    // Three good steps, one whose scores overflow, then a good one: the
    // refused token is not kept, so the last read is the read of a cache
    // that never saw it.
    let [q, k, v] = random(7, 4, 5, 3);
    let (mut cache, mut clean) = (KvCache::new(5, 3), KvCache::new(5, 3));
    for t in 0..3 {
        cache.decode(&q.row(t), &k.row(t), &v.row(t)).unwrap();
        clean.decode(&q.row(t), &k.row(t), &v.row(t)).unwrap();
    }
    let [q_huge, k_huge] = [&q, &k].map(|a| a.row(3).mapv(|x| x * 1e160));
    let refused = cache.decode(&q_huge, &k_huge, &v.row(3)).unwrap_err();
    assert!(refused.to_string().starts_with("overflow"), "{refused}");
    assert_eq!(cache.floats(), clean.floats(), "the refused token is gone");
    let got = cache.decode(&q.row(3), &k.row(3), &v.row(3)).unwrap();
    let want = clean.decode(&q.row(3), &k.row(3), &v.row(3)).unwrap();
    assert_eq!(got, want);
}
