//! The rows of "After the paper": every update rule of the family at f32,
//! token by token and in chunks, at the targets' size (N = 16384, d = 64),
//! beside the forms of the main table; then the rules of "The rules in
//! production": KDA, RWKV-7 and DeltaProduct with two writes per token.
//! No verdicts: the rows show what each transition costs, measured in one
//! run.

use crate::timing::{Timing, time};
use listings::after::family::{Rule, six_rules};
use listings::after::production::{Rwkv7, kda_rule, random_rwkv7};
use listings::fast::production::{
    delta_product_chunkwise_f32, delta_product_recurrent_f32,
    rwkv7_chunkwise_f32, rwkv7_recurrent_f32,
};
use listings::fast::rules::{rule_chunkwise_f32, rule_recurrent_f32};
use listings::fast::{random_inputs, to_f32};
use listings::m3::attention::unit_rows;
use listings::ndarray::{Array1, Array2};
use listings::rand::Rng;
use listings::random::{randn, seeded};
use std::fmt::Write as _;
use std::hint::black_box;

/// The chunk size of every rule's chunkwise row.
pub const CHUNK: usize = 64;

/// One rule timed both ways.
pub struct RuleRow {
    pub rule: &'static str,
    pub recurrent: Timing,
    pub chunkwise: Timing,
}

/// The rows after the six rules of the family, from "The rules in
/// production": KDA, RWKV-7 and DeltaProduct with two writes per token.
pub const PRODUCTION_ROWS: [&str; 3] = ["KDA", "RWKV-7", "DeltaProduct n_h=2"];

/// The writes per token of DeltaProduct's row.
pub const N_H: usize = 2;

/// One row: both forms timed on the same inputs.
fn timed(
    rule: &'static str,
    recurrent: impl Fn(),
    chunkwise: impl Fn(),
) -> RuleRow {
    eprintln!("after the paper: {rule}");
    RuleRow {
        rule,
        recurrent: time(&recurrent),
        chunkwise: time(&chunkwise),
    }
}

/// Time every rule at N = 16384, d = m = 64 (gates uniform in [0.98, 1],
/// β = 0.5), each form on the same inputs; then KDA (a gate per feature,
/// uniform in [0.98, 1]), RWKV-7 (decays log-uniform in [0.98, 1]) and
/// DeltaProduct (n_h = 2 unit keys per token, β = 0.5).
pub fn time_rules() -> Vec<RuleRow> {
    let (d, n) = crate::targets::AT;
    let [q, k, v] = random_inputs(2, n, d, d).map(|a| to_f32(&a));
    let mut rng = seeded(2);
    let mut rules = six_rules(&mut rng, n, d, None, Some(0.5));
    let gates = Array2::from_shape_simple_fn((n, d), || {
        1.0 - 0.02 * rng.random::<f64>()
    });
    rules.push(kda_rule(gates, Array1::from_elem(n, 0.5)));
    let mut rows: Vec<RuleRow> = rules
        .iter()
        .map(|rule: &Rule| {
            timed(
                rule.name(),
                || {
                    let out = rule_recurrent_f32(rule, &q, &k, &v);
                    black_box(out.expect("ok"));
                },
                || {
                    let out = rule_chunkwise_f32(rule, &q, &k, &v, CHUNK);
                    black_box(out.expect("ok"));
                },
            )
        })
        .collect();
    let g: Rwkv7 = random_rwkv7(2, n, d, 0.98);
    rows.push(timed(
        PRODUCTION_ROWS[1],
        || {
            black_box(rwkv7_recurrent_f32(&q, &v, &g).expect("ok"));
        },
        || {
            let out = rwkv7_chunkwise_f32(&q, &v, &g, CHUNK);
            black_box(out.expect("ok"));
        },
    ));
    let keys = to_f32(&unit_rows(&randn(&mut rng, n * N_H, d)));
    let values = to_f32(&randn(&mut rng, n * N_H, d));
    let beta = Array1::from_elem(n * N_H, 0.5f32);
    rows.push(timed(
        PRODUCTION_ROWS[2],
        || {
            let out =
                delta_product_recurrent_f32(&q, &keys, &values, &beta, N_H);
            black_box(out.expect("ok"));
        },
        || {
            let out = delta_product_chunkwise_f32(
                &q, &keys, &values, &beta, N_H, CHUNK,
            );
            black_box(out.expect("ok"));
        },
    ));
    rows
}

/// The rows as a table: median milliseconds per call and their ratio.
pub fn render_rules(rows: &[RuleRow]) -> String {
    let (d, n) = crate::targets::AT;
    let mut out = format!(
        "update rules (After the paper), f32, one thread, N = {n}, \
         d = m = {d}, chunks of {CHUNK}: median ms per call\n"
    );
    let _ = writeln!(
        out,
        "{:<20}{:>12}{:>12}{:>20}",
        "rule", "recurrent", "chunkwise", "recurrent/chunkwise"
    );
    for r in rows {
        let (rec, ch) = (r.recurrent.median * 1e3, r.chunkwise.median * 1e3);
        let _ = writeln!(
            out,
            "{:<20}{rec:>12.1}{ch:>12.1}{:>20.1}",
            r.rule,
            rec / ch
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_production_rules_are_rows_of_the_rendered_table() {
        let t = |median| Timing {
            median,
            min: median,
            max: median,
            reps: 1,
        };
        let names = ["KDA", "RWKV-7", "DeltaProduct n_h=2"];
        assert_eq!(names, PRODUCTION_ROWS);
        assert_eq!(rule_name_of_kda(), PRODUCTION_ROWS[0]);
        let rows: Vec<RuleRow> = names
            .iter()
            .map(|&rule| RuleRow {
                rule,
                recurrent: t(0.2),
                chunkwise: t(0.05),
            })
            .collect();
        let table = render_rules(&rows);
        for name in names {
            let line = table
                .lines()
                .find(|l| l.starts_with(name))
                .unwrap_or_else(|| panic!("no row {name} in\n{table}"));
            assert!(line.contains("200.0") && line.contains("50.0"), "{line}");
            assert!(line.trim_end().ends_with("4.0"), "{line}");
        }
    }

    /// The name the family gives KDA, which its row carries.
    fn rule_name_of_kda() -> &'static str {
        kda_rule(Array2::ones((1, 1)), Array1::ones(1)).name()
    }
}
