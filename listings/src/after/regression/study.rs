//! The study of "The rules as regression": a stream of keys whose values
//! follow a fixed linear map plus noise, written by every one-step rule,
//! each memory's loss over the whole stream beside the least-squares
//! memory's, the lowest any m × p memory reaches.

use super::{OneStep, least_squares_memory, one_step_memory, stream_loss};
use crate::memo::once;
use crate::random::{randn, seeded};
use crate::summary::Spread;
use crate::table::Table;
use ndarray::Array2;

/// The key width of the printed study.
pub const STREAM_P: usize = 16;

/// The value width of the printed study.
pub const STREAM_M: usize = 8;

/// Tokens in the stream: four times the key width.
pub const STREAM_N: usize = 64;

/// The noise added to each value of the stream.
pub const STREAM_NOISE: f64 = 0.1;

/// The printed study runs seeds 0..STREAM_SEEDS.
pub const STREAM_SEEDS: u64 = 20;

/// A stream of N keys with entries of variance 1/p (so ‖k‖ ≈ 1, not
/// exactly) and values v = A k + noise for one random map A: (m, p).
/// Returns (K: (N, p), V: (N, m)).
pub fn regression_stream(
    seed: u64,
    n: usize,
    p: usize,
    m: usize,
    noise: f64,
) -> (Array2<f64>, Array2<f64>) {
    let mut rng = seeded(seed);
    let map = randn(&mut rng, m, p) / (p as f64).sqrt();
    let k = randn(&mut rng, n, p) / (p as f64).sqrt();
    let v = k.dot(&map.t()) + randn(&mut rng, n, m) * noise;
    (k, v)
}

/// The rules of the printed study, each with its name in the table.
pub const STREAM_RULES: [(&str, OneStep); 7] = [
    ("sum", OneStep::Sum),
    ("delta, β = 0.1", OneStep::Delta(0.1)),
    ("delta, β = 1", OneStep::Delta(1.0)),
    ("delta, β = 3", OneStep::Delta(3.0)),
    (
        "gated delta, α = 0.9, β = 1",
        OneStep::GatedDelta {
            alpha: 0.9,
            beta: 1.0,
        },
    ),
    ("implicit, β = 1", OneStep::Implicit(1.0)),
    ("implicit, β = 1000", OneStep::Implicit(1000.0)),
];

/// One row of the study: a rule's loss over the stream, and that loss
/// divided by the least-squares memory's, over the seeds.
pub struct StreamRow {
    pub name: &'static str,
    pub loss: Spread,
    pub ratio: Spread,
}

/// The stream study over seeds 0..seeds: every rule of [`STREAM_RULES`],
/// then the least-squares memory (ratio 1).
pub fn stream_study(seeds: u64) -> Vec<StreamRow> {
    let (p, m, n) = (STREAM_P, STREAM_M, STREAM_N);
    let streams: Vec<_> = (0..seeds)
        .map(|seed| regression_stream(seed, n, p, m, STREAM_NOISE))
        .collect();
    let best: Vec<f64> = streams
        .iter()
        .map(|(k, v)| {
            let s = least_squares_memory(k, v).expect("a full-rank stream");
            stream_loss(&s, k, v).expect("a checked stream")
        })
        .collect();
    let mut rows: Vec<StreamRow> = STREAM_RULES
        .iter()
        .map(|&(name, rule)| {
            let losses: Vec<f64> = streams
                .iter()
                .map(|(k, v)| {
                    let s = one_step_memory(rule, k, v).expect("finite");
                    stream_loss(&s, k, v).expect("a checked stream")
                })
                .collect();
            let ratios: Vec<f64> =
                losses.iter().zip(&best).map(|(l, b)| l / b).collect();
            StreamRow {
                name,
                loss: Spread::of(&losses),
                ratio: Spread::of(&ratios),
            }
        })
        .collect();
    rows.push(StreamRow {
        name: "least squares",
        loss: Spread::of(&best),
        ratio: Spread::of(&vec![1.0; best.len()]),
    });
    rows
}

once! {
    /// The printed stream study, run once per process.
    printed_stream: Vec<StreamRow> = stream_study(STREAM_SEEDS);
}

/// Output `regression-stream`.
pub fn stream_table() -> String {
    let mut t = Table::new()
        .left("memory", 28)
        .right("loss, median", 12)
        .right("× least squares", 16);
    for row in printed_stream() {
        t.row([
            row.name.to_string(),
            format!("{:.3e}", row.loss.median),
            match row.ratio.median {
                r if r < 1e3 => format!("{r:.2}"),
                r => format!("{r:.1e}"),
            },
        ]);
    }
    format!(
        "{t}\n\nN = {STREAM_N} tokens, p = {STREAM_P}, m = {STREAM_M}, \
         noise {STREAM_NOISE}, medians over {STREAM_SEEDS} seeds"
    )
}
