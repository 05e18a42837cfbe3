//! Chapter "Why attention is expensive": what softmax attention stores and
//! computes as the sequence grows, counted by code rather than measured by
//! a clock. One head of one layer throughout; a model multiplies every
//! count by its number of heads and layers.
//!
//! Shapes: q_t, k_t: (d), v_t: (m); the cache after t tokens holds
//! keys: (t, d) and values: (t, m).

use crate::causal::mask_future;
use crate::input::{InputError, check_qkv, same_cols};
use crate::m3::attention::softmax_rows;
use crate::table::Table;
use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2, ArrayView2, Axis, s};
use std::fmt;

// ANCHOR: KvCache
/// What a decoder keeps so that the next token can attend to the past:
/// every key and value so far. keys: (t, d), values: (t, m).
pub struct KvCache {
    pub keys: Array2<f64>,
    pub values: Array2<f64>,
}

impl KvCache {
    /// An empty cache for keys of width d and values of width m.
    pub fn new(d: usize, m: usize) -> KvCache {
        KvCache {
            keys: Array2::zeros((0, d)),
            values: Array2::zeros((0, m)),
        }
    }

    /// One decoding step: append k_t and v_t, then read the whole cache
    /// with q_t, o_t = Σ_{j≤t} softmax_j(k_jᵀq_t / √d) v_j. Returns o_t: (m).
    pub fn decode(
        &mut self,
        q: &ArrayRef1<f64>,
        k: &ArrayRef1<f64>,
        v: &ArrayRef1<f64>,
    ) -> Result<Array1<f64>, InputError> {
        let (q, k, v) = (as_row(q), as_row(k), as_row(v)); // (1, width)
        check_qkv(&q, &k, &v, true)?;
        same_cols(("k", &k), ("cached keys", &self.keys), "one width d")?;
        same_cols(("v", &v), ("cached values", &self.values), "one m")?;
        self.keys.append(Axis(0), k).expect("widths checked");
        self.values.append(Axis(0), v).expect("widths checked");
        let d = self.keys.ncols() as f64;
        let scores = q.dot(&self.keys.t()) / d.sqrt(); // (1, t)
        Ok(softmax_rows(&scores).row(0).dot(&self.values)) // (m)
    }

    /// Floats held: t·d for the keys plus t·m for the values.
    pub fn floats(&self) -> usize {
        self.keys.len() + self.values.len()
    }
}
// ANCHOR_END: KvCache

// ANCHOR: softmax_attention_tiled
/// Causal softmax(Q Kᵀ / √d) V without the N × N matrix: blocks of `block`
/// queries meet blocks of keys at or below the diagonal; each query keeps
/// a running maximum, denominator and unnormalised output, rescaled by
/// e^(old max − new max) when a block raises the maximum.
/// q, k: (N, d), v: (N, m), block ≥ 1; returns O: (N, m).
pub fn softmax_attention_tiled(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    block: usize,
) -> Result<Array2<f64>, InputError> {
    check_qkv(q, k, v, true)?;
    check_block(block)?;
    let (n, scale) = (q.nrows(), 1.0 / (q.ncols() as f64).sqrt());
    let mut o = Array2::zeros((n, v.ncols()));
    for start in (0..n).step_by(block) {
        let rows = start..(start + block).min(n);
        let q_b = q.slice(s![rows.clone(), ..]);
        let mut max = Array1::from_elem(rows.len(), f64::NEG_INFINITY);
        let mut denominator = Array1::<f64>::zeros(rows.len());
        let mut out = o.slice_mut(s![rows.clone(), ..]); // unnormalised
        for keys in (0..=start).step_by(block) {
            let cols = keys..(keys + block).min(n);
            let mut p = q_b.dot(&k.slice(s![cols.clone(), ..]).t()) * scale;
            if keys == start {
                mask_future(&mut p, f64::NEG_INFINITY); // the diagonal block
            }
            for (i, mut p_i) in p.rows_mut().into_iter().enumerate() {
                let new_max = p_i.fold(max[i], |a, &b| a.max(b));
                let rescale = (max[i] - new_max).exp(); // 0 at first
                p_i.mapv_inplace(|x| (x - new_max).exp());
                denominator[i] = denominator[i] * rescale + p_i.sum();
                out.row_mut(i).mapv_inplace(|x| x * rescale);
                max[i] = new_max;
            }
            out += &p.dot(&v.slice(s![cols, ..])); // add this block's reads
        }
        out /= &denominator.insert_axis(Axis(1));
    }
    Ok(o)
}
// ANCHOR_END: softmax_attention_tiled

/// A tile's size: at least one query and one key.
pub fn check_block(block: usize) -> Result<(), InputError> {
    if block == 0 {
        let rule = "a block holds at least one token";
        return Err(InputError::BadParameter {
            name: "block",
            value: block,
            rule,
        });
    }
    Ok(())
}

/// A vector (w) seen as a matrix with one row, (1, w).
fn as_row(x: &ArrayRef1<f64>) -> ArrayView2<'_, f64> {
    x.view().insert_axis(Axis(0))
}

// ANCHOR: attention_counts
/// Floats in the score matrix Q Kᵀ of a sequence of n tokens: n².
pub fn score_matrix_floats(n: u64) -> u64 {
    n * n
}

/// Scores a causal mask leaves visible: query t sees t keys, so
/// 1 + 2 + … + n = n(n + 1)/2, still growing as n².
pub fn causal_visible_scores(n: u64) -> u64 {
    n * (n + 1) / 2
}

/// Floats in the KV cache after n tokens: n keys of width d and n values
/// of width m.
pub fn kv_cache_floats(n: u64, d: u64, m: u64) -> u64 {
    n * (d + m)
}

/// FLOPs of the decoding step for token t, which reads t cached tokens:
/// t·d multiply–adds for the scores K q_t and t·m for the read Aᵀ V, two
/// FLOPs each. The softmax's few operations per score are left out.
pub fn decode_flops(t: u64, d: u64, m: u64) -> u64 {
    2 * t * (d + m)
}
// ANCHOR_END: attention_counts

// ANCHOR: fixed_state_counts
/// Floats in the fixed-size state of the chapters to come: a memory
/// S: (m, p) and a normaliser z: (p), whatever the length.
pub fn fixed_state_floats(p: u64, m: u64) -> u64 {
    m * p + p
}

/// FLOPs of one step of that state: write v φ(k)ᵀ into S and φ(k) into
/// z, read S φ(q) and zᵀφ(q); m·p + p multiply–adds each way.
pub fn fixed_state_step_flops(p: u64, m: u64) -> u64 {
    2 * 2 * (m * p + p)
}
// ANCHOR_END: fixed_state_counts

/// One length of the cost table.
pub struct CostRow {
    pub n: u64,
    pub score_floats: u64,
    pub cache_floats: u64,
    pub state_floats: u64,
    /// FLOPs to decode token n, and all tokens 1..=n.
    pub decode_flops: u64,
    pub decode_flops_total: u64,
    pub state_step_flops: u64,
    pub state_flops_total: u64,
}

/// The counts for one head with keys, queries and values of width d (so
/// p = d for the fixed state), at each length.
pub fn cost_table(lengths: &[u64], d: u64, bytes_per_float: u64) -> CostTable {
    let m = d;
    let rows = lengths
        .iter()
        .map(|&n| CostRow {
            n,
            score_floats: score_matrix_floats(n),
            cache_floats: kv_cache_floats(n, d, m),
            state_floats: fixed_state_floats(d, m),
            decode_flops: decode_flops(n, d, m),
            decode_flops_total: (1..=n).map(|t| decode_flops(t, d, m)).sum(),
            state_step_flops: fixed_state_step_flops(d, m),
            state_flops_total: n * fixed_state_step_flops(d, m),
        })
        .collect();
    CostTable {
        d,
        bytes_per_float,
        rows,
    }
}

/// The cost table; it prints as two tables, memory and decoding.
pub struct CostTable {
    pub d: u64,
    pub bytes_per_float: u64,
    pub rows: Vec<CostRow>,
}

/// The memory half of the cost table.
pub struct MemoryTable<'a>(pub &'a CostTable);

/// The decoding half of the cost table.
pub struct DecodingTable<'a>(pub &'a CostTable);

impl fmt::Display for MemoryTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let CostTable {
            d,
            bytes_per_float: b,
            rows,
        } = self.0;
        writeln!(f, "one head, d = m = {d}, {b} bytes per float")?;
        let titles = format!(
            "{:>7}  {:^24}  {:^20}  {:^16}",
            "", "score matrix N x N", "KV cache N(d + m)", "fixed S and z"
        );
        writeln!(f, "{}", titles.trim_end())?;
        let mut table = Table::new()
            .right("N", 7)
            .right("floats", 14)
            .gap(" ")
            .right("bytes", 9)
            .gap("  ")
            .right("floats", 10)
            .gap(" ")
            .right("bytes", 9)
            .gap("  ")
            .right("floats", 6)
            .gap(" ")
            .right("bytes", 9);
        for r in rows {
            table.row([
                group_digits(r.n).to_string(),
                group_digits(r.score_floats).to_string(),
                bytes(r.score_floats * b).to_string(),
                group_digits(r.cache_floats).to_string(),
                bytes(r.cache_floats * b).to_string(),
                group_digits(r.state_floats).to_string(),
                bytes(r.state_floats * b).to_string(),
            ]);
        }
        write!(f, "{table}")?;
        if let Some(last) = rows.last() {
            write!(
                f,
                "\nat N = {}, the score matrix holds {} times\nthe floats of \
                 the KV cache",
                group_digits(last.n),
                group_digits(last.score_floats / last.cache_floats)
            )?;
        }
        Ok(())
    }
}

impl fmt::Display for DecodingTable<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let d = self.0.d;
        writeln!(
            f,
            "one head, d = m = {d}; FLOPs of attention while decoding"
        )?;
        let titles = format!(
            "{:>7}  {:^30}  {:^24}",
            "", "softmax with a KV cache", "fixed S and z"
        );
        writeln!(f, "{}", titles.trim_end())?;
        let mut table = Table::new()
            .right("N", 7)
            .right("token N", 10)
            .right("tokens 1..N", 18)
            .right("token N", 7)
            .right("tokens 1..N", 15);
        for r in &self.0.rows {
            table.row([
                group_digits(r.n).to_string(),
                group_digits(r.decode_flops).to_string(),
                group_digits(r.decode_flops_total).to_string(),
                group_digits(r.state_step_flops).to_string(),
                group_digits(r.state_flops_total).to_string(),
            ]);
        }
        write!(f, "{table}")
    }
}

/// 1234567 → "1,234,567".
pub fn group_digits(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A byte count in binary units with three significant figures:
/// 512 → "512 B", 2048 → "2.00 KiB", 3 · 2³⁰ → "3.00 GiB".
pub fn bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut size = n as f64;
    let mut unit = 0;
    while size >= 1024.0 && unit < UNITS.len() - 1 {
        size /= 1024.0;
        unit += 1;
    }
    match unit {
        0 => format!("{n} B"),
        _ if size >= 100.0 => format!("{size:.0} {}", UNITS[unit]),
        _ if size >= 10.0 => format!("{size:.1} {}", UNITS[unit]),
        _ => format!("{size:.2} {}", UNITS[unit]),
    }
}

#[cfg(test)]
mod tests {
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
                    let got =
                        softmax_attention_tiled(&q, &k, &v, block).unwrap();
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
        for (seed, (n, d, m)) in (0..3).flat_map(|s| {
            [(40, 8, 4), (17, 3, 5), (100, 16, 8)].map(|x| (s, x))
        }) {
            let [q, k, v] = random(seed, n, d, m);
            let q = q * 3000.0;
            let sqrt_d = (d as f64).sqrt();
            assert!(
                q.dot(&k.t())
                    .iter()
                    .any(|s| (s / sqrt_d).exp() == f64::INFINITY)
            );
            let want =
                softmax_attention(&q, &k, &v, Mask::Causal).unwrap().output;
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
        let table = cost_table(&crate::outputs::COST_LENGTHS, 64, 2);
        let factors: Vec<u64> = table
            .rows
            .iter()
            .map(|r| {
                assert_eq!(r.score_floats % r.cache_floats, 0);
                assert_eq!(r.score_floats / r.cache_floats, r.n / 128);
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
                    let o =
                        cache.decode(&q.row(t), &k.row(t), &v.row(t)).unwrap();
                    // Every past key and value, in order, and nothing else.
                    assert_eq!(
                        cache.keys,
                        k.slice(s![..=t, ..]),
                        "seed {seed}"
                    );
                    assert_eq!(
                        cache.values,
                        v.slice(s![..=t, ..]),
                        "seed {seed}"
                    );
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
                                let moved = other
                                    .decode(&q.row(i), &key, &value)
                                    .unwrap();
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
        for lengths in [&doubling[..], &crate::outputs::COST_LENGTHS[..]] {
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
}
