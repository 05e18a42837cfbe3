//! The dispatch paths of `listings::fast::simd`: which one the forms take
//! on this machine, which the machine lacks, and (`cargo xtask bench
//! paths`) the main f32 forms timed on every path the CPU runs, side by
//! side in one run, so that what each path buys is a ratio of one run.

use crate::after::RULE_CHUNKS;
use crate::timing::{Timing, time};
use listings::after::family::six_rules;
use listings::fast::rules::rule_chunkwise_f32;
use listings::fast::{
    Path, delta_rule_chunkwise_f32, delta_rule_recurrent_f32,
    linear_attention_chunkwise_f32, linear_attention_recurrent_f32,
    random_inputs, softmax_attention_tiled_f32, to_f32,
};
use listings::ndarray::Array1;
use listings::random::seeded;
use std::fmt::Write as _;
use std::hint::black_box;

/// One line: the path the f32 forms take here, and the paths this CPU
/// runs and lacks.
pub fn describe() -> String {
    let names = |p: Vec<Path>| match p.is_empty() {
        true => "none".to_string(),
        false => p.iter().map(|p| p.name()).collect::<Vec<_>>().join(", "),
    };
    format!(
        "dispatch path of the f32 forms: {} (this CPU runs: {}; lacks: {})",
        Path::detect().name(),
        names(Path::available()),
        names(Path::absent())
    )
}

/// The forms timed on each path, at the targets' size.
const FORMS: [&str; 7] = [
    "softmax tiled",
    "recurrent",
    "chunkwise (C = 64)",
    "delta recurrent",
    "delta chunkwise (C = 16)",
    "gated delta chunkwise",
    "diagonal gates chunkwise",
];

/// Each form of [`FORMS`] on each path this CPU runs: (path, timings in
/// the order of `FORMS`), at N = 16384, d = m = 64; the rules' chunkwise
/// forms in chunks of the last of `RULE_CHUNKS`.
pub fn time_paths() -> Vec<(Path, Vec<Timing>)> {
    let (d, n) = crate::targets::AT;
    let [q, k, v] = random_inputs(3, n, d, d).map(|a| to_f32(&a));
    let beta = Array1::from_elem(n, 0.5f32);
    let rules = six_rules(&mut seeded(3), n, d, None, Some(0.5));
    let rule = |name: &str| {
        let found = rules.iter().find(|r| r.name().contains(name));
        found.expect("a rule of the family").clone()
    };
    let (gated, diagonal) = (rule("gated delta"), rule("diagonal"));
    let c = RULE_CHUNKS[RULE_CHUNKS.len() - 1];
    let run = |form: usize| match form {
        0 => drop(black_box(softmax_attention_tiled_f32(&q, &k, &v))),
        1 => drop(black_box(linear_attention_recurrent_f32(&q, &k, &v))),
        2 => drop(black_box(linear_attention_chunkwise_f32(&q, &k, &v, 64))),
        3 => drop(black_box(delta_rule_recurrent_f32(&q, &k, &v, &beta))),
        4 => {
            let out = delta_rule_chunkwise_f32(&q, &k, &v, &beta, 16);
            drop(black_box(out))
        }
        5 => drop(black_box(rule_chunkwise_f32(&gated, &q, &k, &v, c))),
        _ => drop(black_box(rule_chunkwise_f32(&diagonal, &q, &k, &v, c))),
    };
    Path::available()
        .into_iter()
        .map(|path| {
            eprintln!("timing the f32 forms on the {} path", path.name());
            let times = (0..FORMS.len()).map(|f| time(|| run(f)));
            (
                path,
                path.forced(|| times.collect()).expect("a path it runs"),
            )
        })
        .collect()
}

/// The timings as a table: median ms per call on each path, and the
/// scalar path's time over each path's.
pub fn render_paths(rows: &[(Path, Vec<Timing>)]) -> String {
    let (d, n) = crate::targets::AT;
    let mut out = format!(
        "the f32 forms on each dispatch path, one thread, N = {n}, \
         d = m = {d}: median ms (scalar time / this path's)\n{}\n",
        describe()
    );
    let _ = write!(out, "{:<26}", "form");
    for (path, _) in rows {
        let _ = write!(out, "{:>22}", path.name());
    }
    let _ = writeln!(out);
    let scalar = rows.iter().find(|(p, _)| *p == Path::Scalar);
    for (f, form) in FORMS.iter().enumerate() {
        let _ = write!(out, "{form:<26}");
        for (_, times) in rows {
            let ms = times[f].median * 1e3;
            let gain =
                scalar.map_or(1.0, |(_, s)| s[f].median / times[f].median);
            let _ = write!(out, "{:>22}", format!("{ms:.1} ({gain:.2}×)"));
        }
        let _ = writeln!(out);
    }
    out
}
