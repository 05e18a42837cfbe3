//! The studies of "The delta rule": the Appendix A comparison of the delta,
//! gated and sum rules, the chunkwise form against the recurrence, and the
//! data of the rewrite figure; their parameters, their printed tables, and
//! one function per output the chapter shows.

use super::{
    delta_rule_chunkwise, delta_rule_recurrent, delta_rule_step,
    gated_rule_step, write_strength,
};
use crate::m3::fast_weight_memory::fast_weight_write;
use crate::table::Table;
use ndarray::{Array1, Array2};

/// Why a write of this module cannot fail: it makes its own operands,
/// with shapes that agree and finite entries.
const SHAPES: &str = "the operands are made here, with shapes that agree";

/// The write strengths of the printed Appendix A study.
pub const APPENDIX_A_BETAS: [f64; 4] = [0.0, 0.3, 0.7, 1.0];

/// The seed of the printed Appendix A study.
pub const APPENDIX_A_SEED: u64 = 0;

/// The lengths N and chunk sizes C of the printed chunkwise study: one
/// token, a chunk that does not divide N, and lengths past one chunk.
pub const CHUNKWISE_CASES: [(usize, usize); 5] =
    [(1, 1), (7, 3), (64, 16), (100, 16), (257, 64)];

/// The printed chunkwise study runs seeds 0..CHUNKWISE_SEEDS.
pub const CHUNKWISE_SEEDS: u64 = 3;

/// The seed and shape of the rewrite figure: (m, p, key, seed).
pub const REWRITE: (usize, usize, usize, u64) = (6, 6, 2, 7);

/// Output `delta-appendix-a`.
pub fn appendix_a_table() -> String {
    let rows = appendix_a_study(&APPENDIX_A_BETAS, APPENDIX_A_SEED);
    AppendixATable(rows).to_string()
}

/// Output `delta-chunkwise`.
pub fn chunkwise_table() -> String {
    let rows = chunkwise_study(&CHUNKWISE_CASES, CHUNKWISE_SEEDS);
    ChunkTable {
        seeds: CHUNKWISE_SEEDS,
        rows,
    }
    .to_string()
}

/// One row of the Appendix A comparison at write strength β.
pub struct AppendixARow {
    pub beta: f64,
    /// ‖S' k₂ − ((1 − β) v₂ + β v₃)‖ for the delta rule and the gated rule.
    pub delta_rewritten: f64,
    pub gated_rewritten: f64,
    /// ‖S' k₁ − v₁‖, the unrelated association, for both rules.
    pub delta_unrelated: f64,
    pub gated_unrelated: f64,
    /// ‖S' k₂ − (v₂ + v₃)‖ for the sum rule: it adds, whatever β.
    pub sum_rewritten: f64,
}

/// Appendix A: a memory holds v₁ at k₁ and v₂ at k₂ (orthonormal keys in
/// ℝ^8, unit values in ℝ^4, seed `seed`); then k₂ is written again with v₃.
pub fn appendix_a_study(betas: &[f64], seed: u64) -> Vec<AppendixARow> {
    let mut rng = crate::random::seeded(seed);
    let keys = crate::linalg::gram_schmidt(&mut rng, 2, 8);
    let values =
        crate::m3::attention::unit_rows(&crate::random::randn(&mut rng, 3, 4));
    let (k1, k2) = (keys.row(0), keys.row(1));
    let (v1, v2, v3) = (values.row(0), values.row(1), values.row(2));
    let mut memory = Array2::zeros((4, 8));
    fast_weight_write(&mut memory, &v1, &k1).expect(SHAPES);
    fast_weight_write(&mut memory, &v2, &k2).expect(SHAPES);
    let gap = |w: &Array2<f64>, k, v: &Array1<f64>| {
        crate::linalg::norm(&(&w.dot(k) - v))
    };
    let mut sum = memory.clone();
    fast_weight_write(&mut sum, &v3, &k2).expect(SHAPES);
    betas
        .iter()
        .map(|&beta| {
            let target = &v2 * (1.0 - beta) + &v3 * beta;
            let mut delta = memory.clone();
            delta_rule_step(&mut delta, &k2, &v3, beta).expect(SHAPES);
            let mut gated = memory.clone();
            gated_rule_step(&mut gated, &k2, &v3, beta).expect(SHAPES);
            AppendixARow {
                beta,
                delta_rewritten: gap(&delta, &k2, &target),
                gated_rewritten: gap(&gated, &k2, &target),
                delta_unrelated: gap(&delta, &k1, &v1.to_owned()),
                gated_unrelated: gap(&gated, &k1, &v1.to_owned()),
                sum_rewritten: gap(&sum, &k2, &(&v2 + &v3)),
            }
        })
        .collect()
}

/// The Appendix A comparison as the chapter prints it.
pub struct AppendixATable(pub Vec<AppendixARow>);

impl std::fmt::Display for AppendixATable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "orthonormal k1, k2 in R^8; unit v1, v2, v3 in R^4; S holds \
             v1 at k1, v2 at k2, then k2 is written with v3"
        )?;
        writeln!(
            f,
            "target at k2: (1 - beta) v2 + beta v3; distances |read - want|"
        )?;
        let mut table = Table::new()
            .right("beta", 5)
            .right("delta: k2", 14)
            .gap(" ")
            .right("delta: k1", 14)
            .gap("  ")
            .right("gated: k2", 14)
            .gap(" ")
            .right("gated: k1", 14)
            .gap("  ")
            .right("sum: k2 vs v2+v3", 16);
        for r in &self.0 {
            table.row([
                format!("{:.2}", r.beta),
                format!("{:.1e}", r.delta_rewritten),
                format!("{:.1e}", r.delta_unrelated),
                format!("{:.1e}", r.gated_rewritten),
                format!("{:.3}", r.gated_unrelated),
                format!("{:.1e}", r.sum_rewritten),
            ]);
        }
        write!(f, "{table}")
    }
}

/// One row of the chunkwise study: length N, chunk size C, and the largest
/// row-relative difference between the chunkwise and recurrent outputs.
pub struct ChunkRow {
    pub n: usize,
    pub chunk: usize,
    pub difference: f64,
}

/// The chunkwise form against the recurrence on random inputs (d = 8,
/// m = 8, φ = elu+1, β = σ of a random projection), seeds 0..seeds.
pub fn chunkwise_study(cases: &[(usize, usize)], seeds: u64) -> Vec<ChunkRow> {
    cases
        .iter()
        .map(|&(n, chunk)| {
            let mut difference = 0.0_f64;
            for seed in 0..seeds {
                let mut rng = crate::random::seeded(seed);
                let mut draw = |c| crate::random::randn(&mut rng, n, c);
                let (q, k, v, x) = (draw(8), draw(8), draw(8), draw(8));
                let w_beta =
                    crate::random::randn(&mut rng, 1, 8).row(0).to_owned();
                let beta = write_strength(&x, &w_beta).expect("x: (N, 8)");
                let (q, k) = (
                    crate::phi::elu_plus_one(&q),
                    crate::phi::elu_plus_one(&k),
                );
                let rec = delta_rule_recurrent(&q, &k, &v, &beta).expect("ok");
                let chunked =
                    delta_rule_chunkwise(&q, &k, &v, &beta, chunk).expect("ok");
                difference = difference.max(
                    crate::linalg::worst_row_relative_difference(
                        &chunked.output,
                        &rec.output,
                    ),
                );
            }
            ChunkRow {
                n,
                chunk,
                difference,
            }
        })
        .collect()
}

/// The chunkwise study as the chapter prints it.
pub struct ChunkTable {
    pub seeds: u64,
    pub rows: Vec<ChunkRow>,
}

impl std::fmt::Display for ChunkTable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(
            f,
            "phi = elu+1, d = m = 8, beta = sigma(w_beta . x), seeds 0..{}",
            self.seeds
        )?;
        let mut table = Table::new()
            .right("N", 6)
            .gap(" ")
            .right("C", 6)
            .right("chunks", 8)
            .gap("  ")
            .right("chunkwise vs recurrent (rel.)", 30);
        for r in &self.rows {
            table.row([
                r.n.to_string(),
                r.chunk.to_string(),
                r.n.div_ceil(r.chunk).to_string(),
                format!("{:.1e}", r.difference),
            ]);
        }
        write!(f, "{table}")
    }
}

/// The picture of one rewrite: a memory holding p associations on one-hot
/// keys e_j (column j holds v_j), then key e_key written again with a new
/// value, once by the sum rule and once by the delta rule with β = 1.
/// Values are standard normal draws of `seed`; memories are (m, p).
pub fn rewrite_one_key(m: usize, p: usize, key: usize, seed: u64) -> Rewrite {
    assert!(key < p, "key {key} is not one of the {p} one-hot keys");
    let mut rng = crate::random::seeded(seed);
    let values = crate::random::randn(&mut rng, p, m); // row j: v_j
    let new_value = crate::random::randn(&mut rng, 1, m).row(0).to_owned();
    let e =
        |j: usize| Array1::from_shape_fn(p, |i| f64::from(u8::from(i == j)));
    let mut before = Array2::zeros((m, p));
    for (j, v) in values.rows().into_iter().enumerate() {
        fast_weight_write(&mut before, &v, &e(j)).expect(SHAPES); // S += v_j e_jᵀ
    }
    let mut after_sum = before.clone();
    fast_weight_write(&mut after_sum, &new_value, &e(key)).expect(SHAPES); // adds
    let mut after_delta = before.clone();
    delta_rule_step(&mut after_delta, &e(key), &new_value, 1.0).expect(SHAPES); // replaces
    Rewrite {
        key,
        before,
        new_value,
        after_sum,
        after_delta,
    }
}

/// What [`rewrite_one_key`] draws: the memory before, the value written,
/// and the memory after each rule.
pub struct Rewrite {
    pub key: usize,
    pub before: Array2<f64>,
    pub new_value: Array1<f64>,
    pub after_sum: Array2<f64>,
    pub after_delta: Array2<f64>,
}
