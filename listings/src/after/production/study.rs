//! The study of "The rules in production": each new rule's chunkwise form
//! against its recurrence, over seeds, lengths and chunk sizes, with
//! gates drawn log-uniform down to 1e-12.

use super::{
    delta_product_chunkwise, kda_rule, log_uniform_gates, random_delta_product,
    random_rwkv7, rwkv7_chunkwise, rwkv7_recurrent,
};
use crate::after::family::{random_qkv, rule_chunkwise, rule_recurrent};
use crate::after::spectrum::delta_product_recurrent;
use crate::linalg::worst_row_relative_difference as worst;
use crate::random::seeded;
use crate::table::Table;
use ndarray::Array1;
use rand::Rng;

/// The printed study runs seeds 0..PRODUCTION_SEEDS.
pub const PRODUCTION_SEEDS: u64 = 3;

/// The smallest gate of the printed study (gates log-uniform in [lo, 1]).
pub const PRODUCTION_LO: f64 = 1e-12;

/// Lengths and chunk sizes: chunks of one token, chunks that do not
/// divide N, and one chunk longer than the sequence.
pub const PRODUCTION_CASES: [(usize, usize); 4] =
    [(37, 1), (37, 7), (100, 16), (100, 128)];

/// The largest row-relative difference between the chunkwise and the
/// recurrent reads of KDA, RWKV-7 and DeltaProduct (n_h = 1, 2, 3), over
/// the seeds and cases, p = m = 8.
pub fn production_study(seeds: u64) -> Vec<(String, f64)> {
    let (p, m) = (8, 8);
    let mut rows = vec![("KDA".to_string(), 0.0f64), ("RWKV-7".into(), 0.0)];
    for n_h in 1..=3 {
        rows.push((format!("DeltaProduct n_h = {n_h}"), 0.0));
    }
    for seed in 0..seeds {
        for (n, chunk) in PRODUCTION_CASES {
            let [q, k, v] = random_qkv(seed, n, p, m);
            let mut rng = seeded(seed);
            let alpha = log_uniform_gates(&mut rng, n, p, PRODUCTION_LO);
            let beta = Array1::from_shape_simple_fn(n, || rng.random::<f64>());
            let rule = kda_rule(alpha, beta);
            let rec = rule_recurrent(&rule, &q, &k, &v).expect("ok");
            let ch = rule_chunkwise(&rule, &q, &k, &v, chunk).expect("ok");
            rows[0].1 = rows[0].1.max(worst(&ch.output, &rec.output));
            let g = random_rwkv7(seed, n, p, PRODUCTION_LO);
            let rec = rwkv7_recurrent(&q, &v, &g).expect("ok");
            let ch = rwkv7_chunkwise(&q, &v, &g, chunk).expect("ok");
            rows[1].1 = rows[1].1.max(worst(&ch.output, &rec.output));
            for n_h in 1..=3 {
                let (k, v, beta) =
                    random_delta_product(&mut rng, (n, p, m), n_h);
                let rec = delta_product_recurrent(&q, &k, &v, &beta, n_h);
                let ch = delta_product_chunkwise(&q, &k, &v, &beta, n_h, chunk);
                let d = worst(&ch.expect("ok"), &rec.expect("ok"));
                rows[1 + n_h].1 = rows[1 + n_h].1.max(d);
            }
        }
    }
    rows
}

/// Output `production-equivalence`.
pub fn production_table() -> String {
    let cases: Vec<String> = PRODUCTION_CASES
        .iter()
        .map(|(n, c)| format!("{n}/{c}"))
        .collect();
    let mut out = format!(
        "p = m = 8, seeds 0..{PRODUCTION_SEEDS}, N/C in {}; gates \
         log-uniform in [{PRODUCTION_LO:.0e}, 1]; DeltaProduct beta in \
         [0, 2]\n",
        cases.join(", ")
    );
    let mut table = Table::new()
        .left("rule", 22)
        .gap("  ")
        .right("chunkwise vs recurrent", 22);
    for (rule, d) in production_study(PRODUCTION_SEEDS) {
        table.row([rule, format!("{d:.1e}")]);
    }
    out.push_str(&table.to_string());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_printed_chunkwise_forms_equal_their_recurrences() {
        for (rule, d) in production_study(PRODUCTION_SEEDS) {
            assert!(d < 1e-9, "{rule}: {d}");
        }
    }
}
