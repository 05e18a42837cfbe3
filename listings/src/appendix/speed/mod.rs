//! Appendix "Where speed comes from": what the fast forms of
//! [`crate::fast`] cost and how far they drift, measured. Here: the
//! arithmetic each form does, counted, and the length from which linear
//! attention wins, read off two timed curves. The f32 error of the
//! recurrent and chunkwise sums at growing N and the chunk size that runs
//! fastest on this machine are in [`study`]; the runs `cargo xtask bench`
//! committed, read and printed, in [`committed`]; the tests in `tests.rs`.

pub mod committed;
pub mod study;

use std::fmt;

/// A form the benchmark times, each one a function of this module.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Timed {
    /// `softmax_attention_causal_f32`.
    Softmax,
    /// `softmax_attention_tiled_f32`: counted by its useful work only.
    SoftmaxTiled,
    /// `linear_attention_parallel_f32`.
    Parallel,
    /// `linear_attention_recurrent_f32`.
    Recurrent,
    /// `linear_attention_chunkwise_f32`.
    Chunkwise,
    /// `delta_rule_recurrent_f32` (and the book's f64 listing).
    DeltaRecurrent,
    /// `delta_rule_chunkwise_f32`.
    DeltaChunkwise,
    /// `linear_attention_scores_first_f32` (non-causal).
    ScoresFirst,
    /// `linear_attention_memory_first_f32` (non-causal).
    MemoryFirst,
}

/// Floating-point operations of one call of a form (a multiply-add counts
/// two), counting every product it computes, the masked half of a score
/// block included (the tiled softmax: its useful work only), N tokens, p
/// features, m value entries, chunks of c: what the f32 forms tally under
/// test. Small terms (normalisers, masks, sums of rows, the scaling by β)
/// are left out. A chunkwise form's last chunk may be shorter than c.
pub fn arithmetic(form: Timed, n: usize, p: usize, m: usize, c: usize) -> f64 {
    let c = c.clamp(1, n.max(1));
    let (full, last) = (n / c, n % c);
    // A chunkwise form's work: that of its whole chunks and its last one.
    let chunked = |per_chunk: &dyn Fn(f64) -> f64| {
        full as f64 * per_chunk(c as f64) + per_chunk(last as f64)
    };
    let (n, p, m) = (n as f64, p as f64, m as f64);
    match form {
        // Q Kᵀ: 2 N² p, then the weights times V: 2 N² m.
        Timed::Softmax | Timed::Parallel | Timed::ScoresFirst => {
            2.0 * n * n * (p + m)
        }
        // The useful work only, the half the mask leaves: N(N + 1)/2
        // scores (2p each) and their reads (2m each). The blocks it skips
        // are not counted, nor the masked half of a diagonal block.
        Timed::SoftmaxTiled => n * (n + 1.0) * (p + m),
        // Per token: the write of S (2pm) and the read S φ(q) (2pm).
        Timed::Recurrent => 4.0 * n * p * m,
        // S = Vᵀ Φ_K (2Npm), then Φ_Q Sᵀ (2Npm).
        Timed::MemoryFirst => 4.0 * n * p * m,
        // Per chunk: Φ_Q Sᵀ and S += Vᵀ Φ_K (2cpm each), Φ_Q Φ_Kᵀ (2c²p)
        // and the scores times V (2c²m).
        Timed::Chunkwise => {
            chunked(&|c| 4.0 * c * p * m + 2.0 * c * c * (p + m))
        }
        // Per token: the prediction W k̄ (2pm), the write (2pm) and the
        // read W q̄ (2pm).
        Timed::DeltaRecurrent => 6.0 * n * p * m,
        // Per chunk: [K̄; Q̄] K̄ᵀ (4c²p), forward substitution on [K̄ | V]
        // (c(c − 1)(p + m)), [Q̄; T K̄] W₀ᵀ (4cpm), tril(Q̄ K̄ᵀ) U (2c²m),
        // W += Uᵀ K̄ (2cpm).
        Timed::DeltaChunkwise => chunked(&|c| {
            6.0 * c * p * m
                + 4.0 * c * c * p
                + 2.0 * c * c * m
                + c * (c - 1.0).max(0.0) * (p + m)
        }),
    }
}

/// The length at which linear attention becomes the faster family.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Crossover {
    /// Linear is already faster at the shortest length measured.
    Below(f64),
    /// The lengths where the time ratio crosses 1, interpolated on
    /// log-log axes between the two measured lengths around it.
    At(f64),
    /// Softmax is still faster at the longest length measured.
    Above(f64),
}

// ANCHOR: crossover
/// The first length at which linear attention's time drops below
/// softmax's for good, from (N, softmax seconds, linear seconds) in
/// increasing N: log(linear/softmax) is taken as a straight line in log N
/// between the last length where softmax wins and the next.
pub fn crossover(points: &[(f64, f64, f64)]) -> Crossover {
    let log_ratio = |&(n, s, l): &(f64, f64, f64)| (n.ln(), (l / s).ln());
    let last_soft = points.iter().rposition(|p| p.2 >= p.1);
    match last_soft {
        None => Crossover::Below(points.first().map_or(0.0, |p| p.0)),
        Some(i) if i + 1 == points.len() => Crossover::Above(points[i].0),
        Some(i) => {
            let ((x0, y0), (x1, y1)) =
                (log_ratio(&points[i]), log_ratio(&points[i + 1]));
            Crossover::At((x0 + (0.0 - y0) * (x1 - x0) / (y1 - y0)).exp())
        }
    }
}
// ANCHOR_END: crossover

impl fmt::Display for Crossover {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Crossover::Below(n) => write!(f, "below {n:.0}"),
            Crossover::At(n) => write!(f, "≈ {n:.0}"),
            Crossover::Above(n) => write!(f, "above {n:.0}"),
        }
    }
}

#[cfg(test)]
mod tests;
