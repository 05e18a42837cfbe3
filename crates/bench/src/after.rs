//! The rows of "After the paper": every update rule of the family at f32,
//! token by token and in chunks, at the targets' size (N = 16384, d = 64),
//! beside the forms of the main table. No verdicts: the rows show what
//! each transition costs, measured in one run.

use crate::timing::{Timing, time};
use listings::after::family::six_rules;
use listings::fast::rules::{rule_chunkwise_f32, rule_recurrent_f32};
use listings::fast::{random_inputs, to_f32};
use listings::random::seeded;
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

/// Time every rule at N = 16384, d = m = 64 (gates uniform in [0.98, 1],
/// β = 0.5), each form on the same inputs.
pub fn time_rules() -> Vec<RuleRow> {
    let (d, n) = crate::targets::AT;
    let [q, k, v] = random_inputs(2, n, d, d).map(|a| to_f32(&a));
    six_rules(&mut seeded(2), n, d, None, Some(0.5))
        .into_iter()
        .map(|rule| {
            eprintln!("after the paper: {}", rule.name());
            let recurrent = time(|| {
                black_box(rule_recurrent_f32(&rule, &q, &k, &v).expect("ok"));
            });
            let chunkwise = time(|| {
                let out = rule_chunkwise_f32(&rule, &q, &k, &v, CHUNK);
                black_box(out.expect("ok"));
            });
            RuleRow {
                rule: rule.name(),
                recurrent,
                chunkwise,
            }
        })
        .collect()
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
        "{:<16}{:>12}{:>12}{:>20}",
        "rule", "recurrent", "chunkwise", "recurrent/chunkwise"
    );
    for r in rows {
        let (rec, ch) = (r.recurrent.median * 1e3, r.chunkwise.median * 1e3);
        let _ = writeln!(
            out,
            "{:<16}{rec:>12.1}{ch:>12.1}{:>20.1}",
            r.rule,
            rec / ch
        );
    }
    out
}
