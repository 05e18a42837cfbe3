//! The studies of "After the paper": every rule's chunkwise form against
//! its recurrence, what each rule reads back from a memory that is being
//! edited, and how fast each forgets; their parameters, their printed
//! tables, and one function per output the chapter shows.

use super::{
    Rule, editing_stream, fading_signal, latest_value_error, random_qkv,
    rule_chunkwise, rule_recurrent, six_rules,
};
use crate::memo::once;
use crate::random::seeded;
use crate::table::Table;
use ndarray::Array2;
use std::fmt;

/// The printed equivalence study runs seeds 0..EQUIVALENCE_SEEDS.
pub const EQUIVALENCE_SEEDS: u64 = 3;

/// The key width of the printed editing study.
pub const EDITING_D: usize = 64;

/// The value width of the printed editing study.
pub const EDITING_M: usize = 16;

/// The printed editing study runs seeds 0..EDITING_SEEDS.
pub const EDITING_SEEDS: u64 = 10;

/// The key widths of the two printed fading studies.
pub const FADING_DS: [usize; 2] = [32, 64];

/// The value width of the fading studies.
pub const FADING_M: usize = 16;

/// Each printed fading study runs seeds 0..FADING_SEEDS.
pub const FADING_SEEDS: u64 = 20;

/// Output `after-equivalence`.
pub fn equivalence_table() -> String {
    let rows = equivalence_study(EQUIVALENCE_SEEDS);
    EquivalenceTable {
        seeds: EQUIVALENCE_SEEDS,
        rows,
    }
    .to_string()
}

/// Output `after-editing`: the editing study of `studies`, which the
/// figure shows too.
pub fn editing_table() -> String {
    chapter_editing().to_string()
}

/// Output `after-fading`: both fading studies of `studies`, the wider of
/// which the figure shows too.
pub fn fading_tables() -> String {
    let [narrow, wide] = chapter_fading();
    format!("{narrow}\n\n{wide}")
}

/// One row of the equivalence study: a rule, and the largest row-relative
/// difference between its chunkwise and recurrent reads over the cases.
pub struct EquivalenceRow {
    pub rule: &'static str,
    pub difference: f64,
    /// With every gate 10⁻³ at N = 4096: the chunkwise reads are finite,
    /// and this is their largest relative difference from the recurrence.
    pub tiny_gates: f64,
}

/// Lengths and chunk sizes of the equivalence study: chunks of one token,
/// chunks that do not divide N, and one chunk longer than the sequence.
pub const EQUIVALENCE_CASES: [(usize, usize); 6] =
    [(1, 1), (37, 1), (37, 8), (100, 16), (64, 64), (100, 128)];

/// The chunkwise form of every rule against its recurrence, over seeds
/// 0..seeds (p = m = 8), and at every gate 10⁻³ over N = 4096 (C = 64).
pub fn equivalence_study(seeds: u64) -> Vec<EquivalenceRow> {
    let worst = |a: &Array2<f64>, b: &Array2<f64>| {
        crate::linalg::worst_row_relative_difference(a, b)
    };
    (0..6)
        .map(|r| {
            let mut difference = 0.0_f64;
            for seed in 0..seeds {
                for (n, chunk) in EQUIVALENCE_CASES {
                    let [q, k, v] = random_qkv(seed, n, 8, 8);
                    let rule = six_rules(&mut seeded(seed), n, 8, None, None)
                        .swap_remove(r);
                    let rec = rule_recurrent(&rule, &q, &k, &v).expect("ok");
                    let chunked =
                        rule_chunkwise(&rule, &q, &k, &v, chunk).expect("ok");
                    difference =
                        difference.max(worst(&chunked.output, &rec.output));
                }
            }
            let [q, k, v] = random_qkv(0, 4096, 8, 8);
            let rule = six_rules(&mut seeded(0), 4096, 8, Some(1e-3), None)
                .swap_remove(r);
            let rec = rule_recurrent(&rule, &q, &k, &v).expect("ok");
            let chunked = rule_chunkwise(&rule, &q, &k, &v, 64).expect("ok");
            EquivalenceRow {
                rule: rule.name(),
                difference,
                tiny_gates: worst(&chunked.output, &rec.output),
            }
        })
        .collect()
}

/// The equivalence study as the chapter prints it.
pub struct EquivalenceTable {
    pub seeds: u64,
    pub rows: Vec<EquivalenceRow>,
}

impl fmt::Display for EquivalenceTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cases: Vec<String> = EQUIVALENCE_CASES
            .iter()
            .map(|(n, c)| format!("{n}/{c}"))
            .collect();
        writeln!(
            f,
            "p = m = 8, seeds 0..{}, N/C in {}; gates U[0.98, 1], beta = 1",
            self.seeds,
            cases.join(", ")
        )?;
        writeln!(f, "last column: every gate 1e-3, N = 4096, C = 64")?;
        let mut table = Table::new()
            .left("rule", 15)
            .gap("  ")
            .right("chunkwise vs recurrent", 22)
            .gap("  ")
            .right("gates 1e-3", 10);
        for r in &self.rows {
            table.row([
                r.rule.to_string(),
                format!("{:.1e}", r.difference),
                format!("{:.1e}", r.tiny_gates),
            ]);
        }
        write!(f, "{table}")
    }
}

/// The rules of the editing studies for a stream of `len` tokens in ℝ^d:
/// the six, gates uniform in [0.98, 1] (fixed decay 0.99), β = 1.
pub fn editing_rules(seed: u64, len: usize, d: usize) -> Vec<Rule> {
    six_rules(&mut seeded(seed + 1000), len, d, None, None)
}

/// Number of associations of the editing study, at key width d = 64.
pub const EDITING_COUNTS: [usize; 9] = [8, 16, 32, 48, 64, 96, 128, 192, 256];

/// The recall study: for each rule (in the order of `six_rules`) and each
/// n, the latest-value error of every seed.
pub struct EditingStudy {
    pub d: usize,
    pub m: usize,
    pub seeds: u64,
    pub counts: Vec<usize>,
    pub names: Vec<&'static str>,
    /// `errors[rule][count][seed]`
    pub errors: Vec<Vec<Vec<f64>>>,
}

impl EditingStudy {
    /// The mean error of rule `r` at count index `i`, over the seeds.
    pub fn mean(&self, r: usize, i: usize) -> f64 {
        let e = &self.errors[r][i];
        e.iter().sum::<f64>() / e.len() as f64
    }
}

pub fn editing_study(
    counts: &[usize],
    d: usize,
    m: usize,
    seeds: u64,
) -> EditingStudy {
    let mut errors = vec![vec![vec![]; counts.len()]; 6];
    let mut names = vec![];
    for (i, &n) in counts.iter().enumerate() {
        for seed in 0..seeds {
            let stream = editing_stream(seed, n, d, m);
            let rules = editing_rules(seed, stream.keys.nrows(), d);
            names = rules.iter().map(Rule::name).collect();
            for (r, rule) in rules.iter().enumerate() {
                errors[r][i].push(latest_value_error(rule, &stream));
            }
        }
    }
    EditingStudy {
        d,
        m,
        seeds,
        counts: counts.to_vec(),
        names,
        errors,
    }
}

impl fmt::Display for EditingStudy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "unit keys in R^{}, unit values in R^{}; n written, then n/4 \
             rewritten; mean |W k - v(latest)| over the keys and seeds 0..{}",
            self.d, self.m, self.seeds
        )?;
        writeln!(f, "gates U[0.98, 1] (fixed decay 0.99), beta = 1")?;
        let mut table = Table::new().right("n", 5).right("n/d", 6).gap("  ");
        for name in &self.names {
            table = table.right(name, 14);
        }
        for (i, &n) in self.counts.iter().enumerate() {
            let mut row =
                vec![n.to_string(), format!("{:.2}", n as f64 / self.d as f64)];
            row.extend(
                (0..self.names.len())
                    .map(|r| format!("{:.3}", self.mean(r, i))),
            );
            table.row(row);
        }
        write!(f, "{table}")
    }
}

/// The fading study: for each rule, the mean over seeds of what is left
/// of the first association after s later writes, s = 0..4d, at width d.
pub struct FadingStudy {
    pub d: usize,
    pub seeds: u64,
    pub names: Vec<&'static str>,
    /// `signal[rule][s]`
    pub signal: Vec<Vec<f64>>,
}

impl FadingStudy {
    /// The first number of later writes after which the mean signal of rule
    /// `r` is below one half, if it falls that far within 4d writes.
    pub fn half_life(&self, r: usize) -> Option<usize> {
        self.signal[r].iter().position(|&x| x < 0.5)
    }
}

pub fn fading_study(d: usize, seeds: u64) -> FadingStudy {
    let len = 4 * d + 1;
    let mut signal = vec![vec![0.0; len]; 6];
    let mut names = vec![];
    for seed in 0..seeds {
        let rules = editing_rules(seed, len, d);
        names = rules.iter().map(Rule::name).collect();
        for (r, rule) in rules.iter().enumerate() {
            let s = fading_signal(rule, len, seed, (d, FADING_M));
            signal[r].iter_mut().zip(s).for_each(|(a, x)| *a += x);
        }
    }
    signal.iter_mut().flatten().for_each(|x| *x /= seeds as f64);
    FadingStudy {
        d,
        seeds,
        names,
        signal,
    }
}

impl fmt::Display for FadingStudy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "d = {}, m = {FADING_M}, seeds 0..{}: v1' W k1 after s later \
             writes (mean), and the first s where it is below 1/2",
            self.d, self.seeds
        )?;
        let marks = [0, self.d / 4, self.d / 2, self.d, 2 * self.d, 4 * self.d];
        let mut table = Table::new().left("rule", 15);
        for s in marks {
            table = table.right(&format!("s = {s}"), 9);
        }
        table = table.gap("  ").right("half-life", 10);
        for (r, name) in self.names.iter().enumerate() {
            let mut row = vec![name.to_string()];
            row.extend(
                marks.iter().map(|&s| format!("{:.3}", self.signal[r][s])),
            );
            row.push(match self.half_life(r) {
                Some(s) => s.to_string(),
                None => format!("> {}", 4 * self.d),
            });
            table.row(row);
        }
        write!(f, "{table}")
    }
}

once! {
    /// "After the paper": the editing study.
    chapter_editing: EditingStudy = editing_study(
        &EDITING_COUNTS,
        EDITING_D,
        EDITING_M,
        EDITING_SEEDS,
    );
}

once! {
    /// "After the paper": the fading studies, one per width of
    /// `FADING_DS`.
    chapter_fading: [FadingStudy; 2] =
        FADING_DS.map(|d| fading_study(d, FADING_SEEDS));
}
