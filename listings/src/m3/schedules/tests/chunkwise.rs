use super::*;
use crate::m3::fast_weight_memory::{
    linear_attention_parallel, linear_attention_recurrent,
};

/// Lengths from one token to a couple of thousand, most of them not a
/// multiple of the chunk sizes below.
const LENGTHS: [usize; 10] = [1, 2, 3, 7, 16, 33, 64, 100, 513, 2000];

/// Chunk sizes from one token to more than the longest sequence.
const CHUNKS: [usize; 7] = [1, 2, 3, 8, 64, 100, 4096];

#[test]
fn chunkwise_form_equals_recurrent_and_parallel_forms() {
    for (i, &n) in LENGTHS.iter().enumerate() {
        let seeds = if n > 500 { 2 } else { 5 };
        let (p, m) = ([8, 4, 16][i % 3], [8, 1, 5][i % 3]);
        for seed in 0..seeds {
            let [phi_q, phi_k, v] = random(seed, n, p, m);
            let rec = linear_attention_recurrent(&phi_q, &phi_k, &v).unwrap();
            let par = linear_attention_parallel(&phi_q, &phi_k, &v).unwrap();
            for chunk in CHUNKS {
                let chunked =
                    linear_attention_chunkwise(&phi_q, &phi_k, &v, chunk)
                        .unwrap();
                assert_eq!(chunked.dim(), (n, m));
                for other in [&rec, &par] {
                    assert_relative_eq!(
                        chunked,
                        *other,
                        max_relative = 1e-10,
                        epsilon = 1e-12
                    );
                    let gap = worst_row_relative_difference(&chunked, other);
                    assert!(gap < 1e-12, "N {n}, C {chunk}: {gap:e}");
                }
            }
        }
    }
}

#[test]
fn one_chunk_of_the_whole_sequence_is_the_parallel_form() {
    // With C ≥ N there is one chunk and S = 0 when it is read: the same
    // operations as the parallel form, bit for bit.
    for seed in 0..5 {
        for n in [1, 5, 64, 300] {
            let [phi_q, phi_k, v] = random(seed, n, 6, 3);
            let par = linear_attention_parallel(&phi_q, &phi_k, &v).unwrap();
            for chunk in [n, n + 1, 10 * n] {
                let one = linear_attention_chunkwise(&phi_q, &phi_k, &v, chunk)
                    .unwrap();
                assert_eq!(one, par, "N = {n}, C = {chunk}");
            }
        }
    }
}

#[test]
fn state_after_each_chunk_is_the_memory_of_the_prefix() {
    // Associativity: whatever the chunk boundaries, the carried S and z
    // are the sums of the writes of every token so far.
    for (seed, (n, p, m)) in
        (0..5).flat_map(|s| [(50, 5, 4), (23, 8, 1)].map(|x| (s, x)))
    {
        for chunk in [1, 3, 7, 16, 64] {
            let [phi_q, phi_k, v] = random(seed, n, p, m);
            let mut memory = Memory {
                s: Array2::zeros((m, p)),
                z: Array1::zeros(p),
            };
            for start in (0..n).step_by(chunk) {
                let end = (start + chunk).min(n);
                let rows = s![start..end, ..];
                chunk_step(
                    &mut memory,
                    &phi_q.slice(rows),
                    &phi_k.slice(rows),
                    &v.slice(rows),
                )
                .unwrap();
                let prefix = s![..end, ..];
                let want =
                    sequence_memory(&phi_k.slice(prefix), &v.slice(prefix));
                assert_relative_eq!(memory.s, want.s, max_relative = 1e-12);
                assert_relative_eq!(memory.z, want.z, max_relative = 1e-12);
            }
        }
    }
}

#[test]
fn chunkwise_form_is_causal() {
    for (seed, t) in (0..5).flat_map(|s| [0, 7, 21, 38].map(|t| (s, t))) {
        let [phi_q, phi_k, v] = random(seed, 40, 6, 3);
        let [_, other_k, other_v] = random(seed + 100, 40, 6, 3);
        // replace every key and value after position t
        let (mut k2, mut v2) = (phi_k.clone(), v.clone());
        k2.slice_mut(s![t + 1.., ..])
            .assign(&other_k.slice(s![t + 1.., ..]));
        v2.slice_mut(s![t + 1.., ..])
            .assign(&other_v.slice(s![t + 1.., ..]));
        for chunk in [1, 4, 8, 40] {
            let before =
                linear_attention_chunkwise(&phi_q, &phi_k, &v, chunk).unwrap();
            let after =
                linear_attention_chunkwise(&phi_q, &k2, &v2, chunk).unwrap();
            assert_eq!(before.slice(s![..=t, ..]), after.slice(s![..=t, ..]));
            assert_ne!(before.row(t + 1), after.row(t + 1));
        }
    }
}

#[test]
fn chunk_of_zero_tokens_is_an_error() {
    let [phi_q, phi_k, v] = random(0, 10, 4, 2);
    let err = linear_attention_chunkwise(&phi_q, &phi_k, &v, 0).unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("chunk is 0"), "{msg}");
    assert!(msg.contains("at least one token"), "{msg}");
    // ... and bad shapes are reported as by the other forms.
    let short = randn(&mut seeded(1), 9, 2);
    let msg = linear_attention_chunkwise(&phi_q, &phi_k, &short, 4)
        .unwrap_err()
        .to_string();
    assert!(msg.contains("k is [10, 4]") && msg.contains("v is [9, 2]"));
    let e = Array2::<f64>::zeros((0, 4));
    assert!(matches!(
        linear_attention_chunkwise(&e, &e, &e, 4),
        Err(InputError::Empty { .. })
    ));
}

#[test]
fn causal_scores_are_zero_above_the_diagonal_and_phi_q_phi_k_below() {
    for seed in 0..5 {
        let [phi_q, phi_k, _] = random(seed, 9, 4, 1);
        let scores = causal_scores(&phi_q, &phi_k);
        for ((t, j), &s) in scores.indexed_iter() {
            if j > t {
                assert_eq!(s, 0.0);
            } else {
                let want = phi_q.row(t).dot(&phi_k.row(j));
                assert_relative_eq!(s, want, max_relative = 1e-14);
            }
        }
    }
}

#[test]
fn both_forms_compute_the_formula_at_every_position() {
    // o_t = Σ_{j≤t} (φ(q_t)ᵀφ(k_j)) v_j / Σ_{j≤t} φ(q_t)ᵀφ(k_j), summed
    // term by term.
    for seed in 0..5 {
        for (n, p, m) in [(1, 1, 1), (9, 4, 3), (40, 8, 5)] {
            let [phi_q, phi_k, v] = random(seed, n, p, m);
            let mut want = Array2::<f64>::zeros((n, m));
            for t in 0..n {
                let (mut num, mut den) = (Array1::<f64>::zeros(m), 0.0);
                for j in 0..=t {
                    let score = phi_q.row(t).dot(&phi_k.row(j));
                    num.scaled_add(score, &v.row(j));
                    den += score;
                }
                want.row_mut(t).assign(&(num / den));
            }
            let rec = linear_attention_recurrent(&phi_q, &phi_k, &v).unwrap();
            let par = linear_attention_parallel(&phi_q, &phi_k, &v).unwrap();
            for o in [rec, par] {
                let gap = worst_row_relative_difference(&o, &want);
                assert!(gap < 1e-12, "N {n} seed {seed}: {gap:e}");
            }
        }
    }
}

#[test]
fn a_score_times_a_value_is_the_outer_product_times_the_query() {
    // (φ(q_t)ᵀφ(k_j)) v_j = v_j φ(k_j)ᵀ φ(q_t), and summed over j ≤ t
    // the query can be applied last, to S_t.
    for seed in 0..5 {
        for (n, p, m) in [(1, 1, 1), (12, 4, 3), (30, 8, 8)] {
            let [phi_q, phi_k, v] = random(seed, n, p, m);
            let mut s_t = Array2::<f64>::zeros((m, p));
            for t in 0..n {
                fast_weight_write(&mut s_t, &v.row(t), &phi_k.row(t)).unwrap();
                let mut by_scores = Array1::<f64>::zeros(m);
                for j in 0..=t {
                    let score = phi_q.row(t).dot(&phi_k.row(j));
                    let scalar_first = &v.row(j) * score;
                    let mut outer = Array2::<f64>::zeros((m, p));
                    fast_weight_write(&mut outer, &v.row(j), &phi_k.row(j))
                        .unwrap();
                    let outer_first = outer.dot(&phi_q.row(t));
                    assert_relative_eq!(
                        scalar_first,
                        outer_first,
                        max_relative = 1e-12,
                        epsilon = 1e-14
                    );
                    by_scores += &scalar_first;
                }
                assert_relative_eq!(
                    by_scores,
                    s_t.dot(&phi_q.row(t)),
                    max_relative = 1e-10,
                    epsilon = 1e-12
                );
            }
        }
    }
}

#[test]
fn the_chunkwise_table_shows_only_rounding() {
    // The printed study itself, every cell: the first column is C = 1,
    // and no cell is more than rounding.
    let table = chapter_chunkwise_table();
    assert_eq!(table.chunks[0], 1);
    assert_eq!(table.rows.len(), CHUNKWISE_LENGTHS.len());
    for (n, worst) in &table.rows {
        assert_eq!(worst.len(), CHUNKWISE_CHUNKS.len());
        for (w, c) in worst.iter().zip(&table.chunks) {
            assert!(*w < 1e-12, "N {n}, C {c}: {w:e}");
        }
    }
}
