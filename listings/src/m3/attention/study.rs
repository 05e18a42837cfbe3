//! The studies "Attention, from scratch" prints: the running example, the
//! aimed query over many seeds, and the 1/√d scale at growing widths; their
//! parameters, and one function per output.

use super::{
    Attention, Qkv, aligned_probe, largest_future_weight, softmax_rows,
    unit_rows, walkthrough, worst_row_sum_error,
};
use crate::random::{randn, seeded};
use crate::summary::Spread;
use crate::table::Table;
use ndarray::Array2;
use std::fmt;

/// The seed of the chapter's running example.
pub const WALKTHROUGH_SEED: u64 = 0;

/// Seeds of the aimed-query study.
pub const PROBE_SEEDS: u64 = 100;

/// Widths of keys and the number of draws of the √d study.
pub const SCALE_WIDTHS: [usize; 4] = [4, 16, 64, 256];
pub const SCALE_SEEDS: u64 = 50;

/// Output `attention-walkthrough`.
pub fn attention_walkthrough() -> String {
    walkthrough_report().to_string()
}

/// Output `attention-probe-study`.
pub fn attention_probe_study() -> String {
    probe_study(PROBE_SEEDS).to_string()
}

/// Output `attention-scale-study`.
pub fn attention_scale_study() -> String {
    ScaleTable(scale_study(&SCALE_WIDTHS, SCALE_SEEDS)).to_string()
}

/// What the running example prints: shapes, and the two properties of the
/// weights that the chapter states.
pub struct WalkthroughReport {
    pub seed: u64,
    pub qkv: Qkv,
    pub read: Attention,
}

/// Run the running example.
pub fn walkthrough_report() -> WalkthroughReport {
    let (qkv, read) = walkthrough(WALKTHROUGH_SEED);
    WalkthroughReport {
        seed: WALKTHROUGH_SEED,
        qkv,
        read,
    }
}

impl fmt::Display for WalkthroughReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let shape = |a: &Array2<f64>| format!("({}, {})", a.nrows(), a.ncols());
        let Qkv { q, k, v } = &self.qkv;
        let Attention { weights, output } = &self.read;
        writeln!(f, "walkthrough(seed = {})", self.seed)?;
        writeln!(f, "Q: {}   K: {}   V: {}", shape(q), shape(k), shape(v))?;
        writeln!(f, "attention weights A: {}", shape(weights))?;
        writeln!(
            f,
            "largest |row sum - 1|:        {:.1e}",
            worst_row_sum_error(weights)
        )?;
        writeln!(
            f,
            "largest weight above diagonal: {}",
            largest_future_weight(weights)
        )?;
        write!(f, "output O = A V: {}", shape(output))
    }
}

/// The aligned probe repeated over many seeds: how much weight lands on the
/// targeted key, and how close the read-out comes to its value.
pub struct ProbeStudy {
    pub seeds: u64,
    pub n: usize,
    pub target: usize,
    pub gain: f64,
    pub weight_on_target: Spread,
    pub retrieval_error: Spread,
    pub beats_uniform: usize,
    /// The same count with every key scaled to unit length first.
    pub beats_uniform_unit_keys: usize,
}

/// Run [`aligned_probe`] on the keys and values of `walkthrough(seed)` for
/// seeds 0..seeds, aiming at key 5 with gain 6.
pub fn probe_study(seeds: u64) -> ProbeStudy {
    let (target, gain) = (5, 6.0);
    let mut weights = Vec::new();
    let mut errors = Vec::new();
    let mut unit_wins = 0;
    let mut n = 0;
    for seed in 0..seeds {
        let (qkv, _) = walkthrough(seed);
        n = qkv.k.nrows();
        let probe = aligned_probe(&qkv.k, &qkv.v, target, gain)
            .expect("target 5 is inside a sequence of 12");
        weights.push(probe.weight_on_target);
        errors.push(probe.retrieval_error);
        let unit = aligned_probe(&unit_rows(&qkv.k), &qkv.v, target, gain)
            .expect("target 5 is inside a sequence of 12");
        if unit.weight_on_target > 1.0 / n as f64 {
            unit_wins += 1;
        }
    }
    let uniform = 1.0 / n as f64;
    ProbeStudy {
        beats_uniform_unit_keys: unit_wins,
        seeds,
        n,
        target,
        gain,
        beats_uniform: weights.iter().filter(|&&w| w > uniform).count(),
        weight_on_target: Spread::of(&weights),
        retrieval_error: Spread::of(&errors),
    }
}

impl fmt::Display for ProbeStudy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "query = {} * k_{}, read over all N = {} keys, seeds 0..{}",
            self.gain, self.target, self.n, self.seeds
        )?;
        writeln!(
            f,
            "weight on key {}:  {:.2}",
            self.target, self.weight_on_target
        )?;
        writeln!(f, "uniform weight:   {:.2}", 1.0 / self.n as f64)?;
        writeln!(f, "retrieval error:  {:.2}", self.retrieval_error)?;
        write!(
            f,
            "seeds where the target beats uniform: {} of {}",
            self.beats_uniform, self.seeds
        )?;
        write!(
            f,
            "\n... with unit-length keys:           {} of {}",
            self.beats_uniform_unit_keys, self.seeds
        )
    }
}

/// One row of the √d study: score variance and the softmax's largest
/// weight, with and without the 1/√d scale, for keys of width d.
pub struct ScaleRow {
    pub d: usize,
    pub variance_raw: f64,
    pub variance_scaled: f64,
    pub top_weight_raw: f64,
    pub top_weight_scaled: f64,
}

/// For each width d: draw q, k with N(0, 1) entries (12 queries, 12 keys,
/// `seeds` draws) and measure qᵀk and qᵀk/√d.
pub fn scale_study(widths: &[usize], seeds: u64) -> Vec<ScaleRow> {
    widths
        .iter()
        .map(|&d| {
            let (mut raw, mut top_raw, mut top_scaled) =
                (vec![], vec![], vec![]);
            for seed in 0..seeds {
                let mut rng = seeded(seed);
                let q = randn(&mut rng, 12, d);
                let k = randn(&mut rng, 12, d);
                let scores = q.dot(&k.t());
                raw.extend(scores.iter().copied());
                let scaled = &scores / (d as f64).sqrt();
                top_raw.push(mean_row_max(&softmax_rows(&scores)));
                top_scaled.push(mean_row_max(&softmax_rows(&scaled)));
            }
            let variance_raw = variance(&raw);
            ScaleRow {
                d,
                variance_raw,
                variance_scaled: variance_raw / d as f64,
                top_weight_raw: mean(&top_raw),
                top_weight_scaled: mean(&top_scaled),
            }
        })
        .collect()
}

fn mean(xs: &[f64]) -> f64 {
    xs.iter().sum::<f64>() / xs.len() as f64
}

fn variance(xs: &[f64]) -> f64 {
    let m = mean(xs);
    xs.iter().map(|x| (x - m).powi(2)).sum::<f64>() / xs.len() as f64
}

fn mean_row_max(weights: &Array2<f64>) -> f64 {
    let maxes: Vec<f64> = weights
        .rows()
        .into_iter()
        .map(|r| r.fold(0.0, |m: f64, &w| m.max(w)))
        .collect();
    mean(&maxes)
}

/// The √d study as the chapter prints it.
pub struct ScaleTable(pub Vec<ScaleRow>);

impl fmt::Display for ScaleTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut table = Table::new()
            .gap(" ")
            .right("d", 5)
            .right("var(q.k)", 12)
            .right("var(q.k/√d)", 14)
            .right("top weight q.k", 16)
            .right("top weight q.k/√d", 18);
        for r in &self.0 {
            table.row([
                r.d.to_string(),
                format!("{:.1}", r.variance_raw),
                format!("{:.2}", r.variance_scaled),
                format!("{:.2}", r.top_weight_raw),
                format!("{:.2}", r.top_weight_scaled),
            ]);
        }
        write!(f, "{table}")
    }
}
