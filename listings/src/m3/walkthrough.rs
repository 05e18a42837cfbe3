//! Chapter "Code walkthrough": linear attention the way production code
//! computes it, for one head of one sequence. Non-causal: the memory S and
//! the normaliser at once, then one read per query. Causal: the causal
//! product, which is M2's fast-weight loop on φ(q) and φ(k), divided by a
//! running sum of φ(k). And a layer that keeps its fast weights from one
//! segment of a sequence to the next, as a decoder does between tokens.
//!
//! Shapes: q: (N, d), k: (N_k, d), v: (N_k, m); φ(q), φ(k): (N, p); the
//! memory S: (m, p).

use crate::input::{
    InputError, check_features, check_qkv, finite, normalisers, same_cols,
};
use crate::m3::delete_softmax::{Memory, sequence_memory};
use crate::m3::fast_weight_memory::fast_weight_loop;
use crate::m3::schedules::chunk_step;
use crate::table::Table;
use ndarray::{Array1, Array2, ArrayRef2, Axis};
use std::fmt;

// ANCHOR: linear_attention_one_shot
/// Non-causal linear attention as one shot: φ of queries and keys, the
/// memory S = Vᵀ Φ_K and the key sum Φ_Kᵀ 1 in one pass over the keys,
/// the normaliser 1 / (φ(q_t)ᵀ Φ_Kᵀ 1 + ε), and O = Φ_Q Sᵀ scaled by it.
/// q: (N, d), k: (N_k, d), v: (N_k, m); returns O: (N, m).
pub fn linear_attention_one_shot(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    phi: impl Fn(&ArrayRef2<f64>) -> Array2<f64>,
    eps: f64,
) -> Result<Array2<f64>, InputError> {
    check_qkv(q, k, v, false)?;
    let (phi_q, phi_k) = (phi(q), phi(k));
    let Memory { s, z } = sequence_memory(&phi_k, v); // S: (m, p), z: (p)
    let den = phi_q.dot(&z) + eps; // (N)
    normalisers("φ(q_t)ᵀ Φ_Kᵀ 1 + ε", &den)?; // every one > 0
    let inverse = den.mapv(|den| 1.0 / den).insert_axis(Axis(1));
    finite("O", phi_q.dot(&s.t()) * &inverse)
}
// ANCHOR_END: linear_attention_one_shot

// ANCHOR: causal_linear_attention_product
/// Causal linear attention as the causal product: the numerators
/// S_t φ(q_t) from M2's fast-weight loop on φ(q), φ(k); the denominators
/// from the running sums z_t = Σ_{j≤t} φ(k_j), all at once.
/// q, k: (N, d), v: (N, m); returns O: (N, m).
pub fn causal_linear_attention_product(
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    phi: impl Fn(&ArrayRef2<f64>) -> Array2<f64>,
    eps: f64,
) -> Result<Array2<f64>, InputError> {
    check_qkv(q, k, v, true)?;
    let (phi_q, phi_k) = (phi(q), phi(k));
    let mut z = phi_k.clone(); // row t becomes z_t, a cumulative sum
    z.accumulate_axis_inplace(Axis(0), |&before, now| *now += before);
    let den = (&phi_q * &z).sum_axis(Axis(1)) + eps; // z_tᵀφ(q_t) + ε
    normalisers("z_tᵀφ(q_t) + ε", &den)?; // every one > 0
    let inverse = den.mapv(|den| 1.0 / den).insert_axis(Axis(1));
    let numerator = fast_weight_loop(&phi_q, &phi_k, v)?; // S_t φ(q_t)
    finite("O", numerator * &inverse)
}
// ANCHOR_END: causal_linear_attention_product

// ANCHOR: FastWeightLayer
/// A causal linear-attention layer that keeps its fast weights between
/// calls: S: (m, p) and z: (p), zero for a new sequence.
pub struct FastWeightLayer {
    pub memory: Memory,
}

impl FastWeightLayer {
    /// A layer for features of width p and values of width m.
    pub fn new(p: usize, m: usize) -> FastWeightLayer {
        let (s, z) = (Array2::zeros((m, p)), Array1::zeros(p));
        FastWeightLayer {
            memory: Memory { s, z },
        }
    }

    /// Read and write the next segment of the sequence, from one token
    /// (decoding) to many (a chunk of text), continuing from the state the
    /// earlier segments left. phi_q, phi_k: (c, p), v: (c, m); returns
    /// O: (c, m), the segment's rows of the causal outputs.
    pub fn segment(
        &mut self,
        phi_q: &ArrayRef2<f64>,
        phi_k: &ArrayRef2<f64>,
        v: &ArrayRef2<f64>,
    ) -> Result<Array2<f64>, InputError> {
        check_features(phi_q, phi_k, v, true)?;
        let s = &self.memory.s;
        same_cols(("phi_k", phi_k), ("S", s), "S is (m, p)")?;
        same_cols(("v", v), ("S transposed", &s.t()), "S is (m, p)")?;
        chunk_step(&mut self.memory, phi_q, phi_k, v)
    }
}
// ANCHOR_END: FastWeightLayer

/// One length of the walkthrough's agreement table.
pub struct WalkthroughRow {
    pub n: usize,
    /// Largest row-relative difference over the seeds, for each check of
    /// [`CHECKS`].
    pub differences: [f64; 4],
}

/// What each column of the agreement table compares: its heading, and
/// the production form against the earlier chapter's form.
pub const CHECKS: [(&str, &str); 4] = [
    ("one shot", "linear_attention_one_shot vs memory first"),
    (
        "causal product",
        "causal_linear_attention_product vs parallel",
    ),
    (
        "segments",
        "FastWeightLayer, segments 1, 2, 3, ... vs recurrent",
    ),
    (
        "token by token",
        "FastWeightLayer, one token a call vs recurrent",
    ),
];

/// The lengths and seeds of the chapter's agreement table.
pub const AGREEMENT_LENGTHS: [usize; 4] = [1, 12, 100, 1000];
pub const AGREEMENT_SEEDS: u64 = 3;

/// Every production form against the form of an earlier chapter, φ =
/// elu+1, ε = 0, random q, k, v: (N, 8), seeds 0..seeds. Segments have
/// lengths 1, 2, 3, … in turn.
pub fn walkthrough_study(lengths: &[usize], seeds: u64) -> WalkthroughTable {
    use crate::linalg::worst_row_relative_difference;
    use crate::m3::delete_softmax::linear_attention_memory_first;
    use crate::m3::fast_weight_memory::{
        linear_attention_parallel, linear_attention_recurrent,
    };
    use crate::phi::elu_plus_one;
    use crate::random::{randn, seeded};
    let phi = |x: &ArrayRef2<f64>| elu_plus_one(x);
    let rows = lengths
        .iter()
        .map(|&n| {
            let mut differences = [0.0_f64; 4];
            for seed in 0..seeds {
                let mut rng = seeded(seed);
                let (q, k) = (randn(&mut rng, n, 8), randn(&mut rng, n, 8));
                let v = randn(&mut rng, n, 8);
                let (phi_q, phi_k) = (phi(&q), phi(&k));
                let recurrent =
                    linear_attention_recurrent(&phi_q, &phi_k, &v).unwrap();
                let pairs = [
                    (
                        linear_attention_one_shot(&q, &k, &v, phi, 0.0),
                        linear_attention_memory_first(&phi_q, &phi_k, &v),
                    ),
                    (
                        causal_linear_attention_product(&q, &k, &v, phi, 0.0),
                        linear_attention_parallel(&phi_q, &phi_k, &v),
                    ),
                    (
                        in_segments(&phi_q, &phi_k, &v, &growing(n)),
                        Ok(recurrent.clone()),
                    ),
                    (
                        in_segments(&phi_q, &phi_k, &v, &vec![1; n]),
                        Ok(recurrent.clone()),
                    ),
                ];
                for (d, (a, b)) in differences.iter_mut().zip(pairs) {
                    let (a, b) = (a.expect("shapes"), b.expect("shapes"));
                    *d = d.max(worst_row_relative_difference(&a, &b));
                }
            }
            WalkthroughRow { n, differences }
        })
        .collect();
    WalkthroughTable { seeds, rows }
}

/// Segment lengths 1, 2, 3, … that add up to n (the last one cut short).
pub fn growing(n: usize) -> Vec<usize> {
    let mut lengths = Vec::new();
    let mut covered = 0;
    while covered < n {
        let next = (lengths.len() + 1).min(n - covered);
        lengths.push(next);
        covered += next;
    }
    lengths
}

/// Run a fresh [`FastWeightLayer`] over the sequence cut into segments of
/// the given lengths, and stack what each segment returns.
pub fn in_segments(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    lengths: &[usize],
) -> Result<Array2<f64>, InputError> {
    let mut layer = FastWeightLayer::new(phi_k.ncols(), v.ncols());
    let mut o = Array2::zeros((phi_q.nrows(), v.ncols()));
    let mut start = 0;
    for &len in lengths {
        let rows = ndarray::s![start..start + len, ..];
        let out = layer.segment(
            &phi_q.slice(rows),
            &phi_k.slice(rows),
            &v.slice(rows),
        )?;
        o.slice_mut(rows).assign(&out);
        start += len;
    }
    Ok(o)
}

/// The walkthrough's agreement table as the chapter prints it.
pub struct WalkthroughTable {
    pub seeds: u64,
    pub rows: Vec<WalkthroughRow>,
}

impl fmt::Display for WalkthroughTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "phi = elu+1, eps = 0, d = m = 8, seeds 0..{}; largest |row \
             difference| / |row|",
            self.seeds
        )?;
        for (heading, what) in CHECKS {
            writeln!(f, "  {heading:<15} {what}")?;
        }
        let mut table = Table::new().right("N", 6);
        for (heading, _) in CHECKS {
            table = table.right(heading, 14);
        }
        for r in &self.rows {
            let cells = r.differences.iter().map(|d| format!("{d:.1e}"));
            table.row(std::iter::once(r.n.to_string()).chain(cells));
        }
        write!(f, "{table}")
    }
}

#[cfg(test)]
mod tests {
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
        map_rows(x, |r| dpfp(r, 2))
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
                    let o = linear_attention_one_shot(&q, &k, &v, phi, 0.0)
                        .unwrap();
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
                    let o = linear_attention_one_shot(&q, &k, &v, phi, 0.0)
                        .unwrap();
                    assert_eq!(o.dim(), (n_q, 3));
                    let (phi_q, phi_k) = (phi(&q), phi(&k));
                    for want in [
                        linear_attention_memory_first(&phi_q, &phi_k, &v),
                        linear_attention_scores_first(&phi_q, &phi_k, &v),
                    ] {
                        let want = want.unwrap();
                        assert!(
                            worst_row_relative_difference(&o, &want) < 1e-12
                        );
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
                let o = causal_linear_attention_product(&q, &k, &v, elu, 0.0)
                    .unwrap();
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
            let o =
                causal_linear_attention_product(&q, &k, &v, elu, 0.0).unwrap();
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
    fn a_small_epsilon_barely_moves_the_outputs() {
        // ε = 1e-6, as in the libraries, against denominators of order 1
        // and more: a relative change of the order of ε, never above 10ε.
        for (seed, (n, d, m)) in (0..5).flat_map(|s| {
            [(1, 4, 3), (50, 8, 8), (200, 8, 8), (500, 16, 4)].map(|x| (s, x))
        }) {
            let [q, k, v] = random(seed, n, d, m);
            // Every denominator, causal or not, is far larger than ε.
            let (phi_q, phi_k) = (elu(&q), elu(&k));
            let causal =
                crate::m3::feature_map::normaliser::causal_denominators(
                    &phi_q, &phi_k,
                )
                .unwrap();
            let full = phi_q.dot(&phi_k.sum_axis(Axis(0)));
            for den in causal.iter().chain(&full) {
                assert!(*den > 1e3 * 1e-6, "seed {seed}: {den:e}");
            }
            let exact =
                linear_attention_one_shot(&q, &k, &v, elu, 0.0).unwrap();
            let guarded =
                linear_attention_one_shot(&q, &k, &v, elu, 1e-6).unwrap();
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
                let whole =
                    linear_attention_recurrent(&phi_q, &phi_k, &v).unwrap();
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
                let whole =
                    linear_attention_recurrent(&phi_q, &phi_k, &v).unwrap();
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
                        let want = sequence_memory(
                            &phi_k.slice(prefix),
                            &v.slice(prefix),
                        );
                        let got = &layer.memory;
                        assert_relative_eq!(
                            got.s,
                            want.s,
                            max_relative = 1e-12,
                            epsilon = 1e-12
                        );
                        assert_relative_eq!(
                            got.z,
                            want.z,
                            max_relative = 1e-12
                        );
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
            msg.contains("v is [12, 6]")
                && msg.contains("S transposed is [8, 4]"),
            "{msg}"
        );
        let wide = randn(&mut seeded(3), 12, 9);
        let wide = elu(&wide);
        let msg = layer.segment(&wide, &wide, &v).unwrap_err().to_string();
        assert!(
            msg.contains("phi_k is [12, 9]") && msg.contains("S is [4, 8]")
        );
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
        let source = include_str!("fast_weight_memory.rs");
        let listing = |name: &str| {
            let start = format!("// ANCHOR: {name}\n");
            let end = format!("// ANCHOR_END: {name}\n");
            let from = source.find(&start).expect("anchor") + start.len();
            let to = from + source[from..].find(&end).expect("anchor end");
            source[from..to].to_owned()
        };
        assert!(
            listing("fast_weight_write").contains("pub fn fast_weight_write(")
        );
        for name in ["linear_attention_recurrent", "fast_weight_loop"] {
            let body = listing(name);
            assert_eq!(
                body.matches("fast_weight_write(&mut").count(),
                1,
                "{name}"
            );
            // ... and neither writes the memory any other way.
            assert!(
                !body.contains("+= &v") && !body.contains("s +="),
                "{name}"
            );
        }
    }
}
