//! Chapter "After the paper": the update rules that followed the paper's
//! delta rule, as one recurrence W_t = W_{t−1} A_t + B_t with different
//! transitions A_t, each computed token by token and in chunks, tested
//! equal; and what each rule does to a memory that is being edited.
//!
//! Shapes: queries and keys q, k: (N, p), values v: (N, m), the memory W:
//! (m, p), values by features, as everywhere in the book. Every rule here
//! reads y_t = W_t q_t, with no denominator, as the published models do.

use crate::input::{InputError, check_chunk, check_qkv, finite};
use crate::m3::fast_weight_memory::fast_weight_write;
use crate::paper::delta_rule::forward_substitution;
use crate::random::{BookRng, randn, seeded};
use crate::table::Table;
use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2, Axis, Zip, s};
use rand::Rng;
use rand::seq::SliceRandom;
use std::fmt;

pub mod recall;

// ANCHOR: rule
/// The update rules of the family W_t = W_{t−1} A_t + B_t, each with the
/// numbers it needs per token. Gates lie in (0, 1], write strengths β in
/// [0, 1]; the delta rules use unit keys and queries.
#[derive(Clone, Debug)]
pub enum Rule {
    /// A_t = I, B_t = v_t k_tᵀ: linear attention without its denominator.
    Sum,
    /// A_t = γ I, B_t = v_t k_tᵀ: one fixed decay (RetNet).
    FixedDecay(f64),
    /// A_t = a_t I, a: (N): a decay set by each token (Mamba-2).
    ScalarDecay(Array1<f64>),
    /// A_t = diag(α_t), alpha: (N, p): a gate per feature (GLA).
    DiagonalGates(Array2<f64>),
    /// A_t = I − β_t k_t k_tᵀ, B_t = β_t v_t k_tᵀ, beta: (N) (DeltaNet).
    Delta(Array1<f64>),
    /// A_t = α_t (I − β_t k_t k_tᵀ), B_t = β_t v_t k_tᵀ (Gated DeltaNet).
    GatedDelta {
        alpha: Array1<f64>,
        beta: Array1<f64>,
    },
}
// ANCHOR_END: rule

// ANCHOR: coefficients
/// Every rule as one transition A_t = diag(α_t) (I − β_t k_t k_tᵀ) and one
/// input B_t = ω_t v_t k_tᵀ: ln α: (N, p), β: (N), ω: (N).
pub struct Coefficients {
    pub log_alpha: Array2<f64>,
    pub beta: Array1<f64>,
    pub omega: Array1<f64>,
}

impl Rule {
    /// The coefficients of this rule over N tokens with p features.
    pub fn coefficients(
        &self,
        n: usize,
        p: usize,
    ) -> Result<Coefficients, InputError> {
        let ones = Array1::ones(n);
        let every_feature = |a: &Array1<f64>| {
            let ln_a = a.mapv(f64::ln).insert_axis(Axis(1)); // (N, 1)
            ln_a.broadcast((n, p))
                .expect("one gate per token")
                .to_owned()
        };
        let no_decay = Array2::zeros((n, p)); // ln 1
        let (log_alpha, beta, omega) = match self {
            Rule::Sum => (no_decay, Array1::zeros(n), ones),
            Rule::FixedDecay(gamma) => {
                gates_in_range("gamma", &Array2::from_elem((1, 1), *gamma))?;
                let ln_gamma = Array2::from_elem((n, p), gamma.ln());
                (ln_gamma, Array1::zeros(n), ones)
            }
            Rule::ScalarDecay(a) => {
                gates_in_range("a", &per_token("a", a, (n, p))?)?;
                (every_feature(a), Array1::zeros(n), ones)
            }
            Rule::DiagonalGates(alpha) => {
                gate_shape(alpha, n, p)?;
                gates_in_range("alpha", alpha)?;
                (alpha.mapv(f64::ln), Array1::zeros(n), ones)
            }
            Rule::Delta(beta) => {
                strengths_in_range(&per_token("beta", beta, (n, p))?)?;
                (no_decay, beta.clone(), beta.clone())
            }
            Rule::GatedDelta { alpha, beta } => {
                gates_in_range("alpha", &per_token("alpha", alpha, (n, p))?)?;
                strengths_in_range(&per_token("beta", beta, (n, p))?)?;
                (every_feature(alpha), beta.clone(), beta.clone())
            }
        };
        Ok(Coefficients {
            log_alpha,
            beta,
            omega,
        })
    }
    // ANCHOR_END: coefficients

    /// Whether the rule uses unit keys and queries (the delta rules do, as
    /// DeltaNet does: then β ∈ [0, 1] keeps A_t from stretching W).
    pub fn unit_keys(&self) -> bool {
        matches!(self, Rule::Delta(_) | Rule::GatedDelta { .. })
    }

    /// The rule's name as the chapter's table writes it.
    pub fn name(&self) -> &'static str {
        match self {
            Rule::Sum => "sum",
            Rule::FixedDecay(_) => "fixed decay",
            Rule::ScalarDecay(_) => "scalar decay",
            Rule::DiagonalGates(_) => "diagonal gates",
            Rule::Delta(_) => "delta",
            Rule::GatedDelta { .. } => "gated delta",
        }
    }
}

/// One number per token: a vector of N entries, as a (N, 1) matrix.
fn per_token(
    name: &'static str,
    x: &Array1<f64>,
    (n, p): (usize, usize),
) -> Result<Array2<f64>, InputError> {
    let column = x.view().insert_axis(Axis(1)).to_owned();
    if x.len() != n {
        return Err(InputError::ShapeMismatch {
            left: ("k", [n, p]),
            right: (name, [x.len(), 1]),
            rule: "one gate or write strength per token",
        });
    }
    Ok(column)
}

fn gate_shape(
    alpha: &Array2<f64>,
    n: usize,
    p: usize,
) -> Result<(), InputError> {
    if alpha.dim() != (n, p) {
        return Err(InputError::ShapeMismatch {
            left: ("k", [n, p]),
            right: ("alpha", [alpha.nrows(), alpha.ncols()]),
            rule: "one gate per token and feature",
        });
    }
    Ok(())
}

/// The first entry of `x` that fails `ok`, as an out-of-range error.
fn first_outside(
    name: &'static str,
    x: &Array2<f64>,
    ok: impl Fn(f64) -> bool,
    allowed: &'static str,
) -> Result<(), InputError> {
    match x.indexed_iter().find(|&(_, &v)| !ok(v)) {
        Some(((i, j), &value)) => Err(InputError::Outside {
            name,
            at: [i, j],
            value,
            allowed,
        }),
        None => Ok(()),
    }
}

/// Gates lie in (0, 1]: a gate of 0 has no logarithm, and one above 1
/// would make the memory grow without bound.
fn gates_in_range(
    name: &'static str,
    x: &Array2<f64>,
) -> Result<(), InputError> {
    first_outside(name, x, |a| a > 0.0 && a <= 1.0, "(0, 1]")
}

/// Write strengths lie in [0, 1], as DeltaNet's sigmoid keeps them.
fn strengths_in_range(x: &Array2<f64>) -> Result<(), InputError> {
    first_outside("beta", x, |b| (0.0..=1.0).contains(&b), "[0, 1]")
}

/// Rows scaled to unit length; a row of length 0 (or one whose square
/// overflows) is an error naming it.
fn unit_rows_checked(
    name: &'static str,
    x: &ArrayRef2<f64>,
) -> Result<Array2<f64>, InputError> {
    let mut out = x.to_owned();
    for (t, mut row) in out.rows_mut().into_iter().enumerate() {
        let len = crate::input::normaliser(name, t, row.dot(&row).sqrt())?;
        row /= len;
    }
    Ok(out)
}

/// The checked inputs of a rule: q and k (unit rows for the delta rules)
/// and the coefficients.
fn prepare(
    rule: &Rule,
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<(Array2<f64>, Array2<f64>, Coefficients), InputError> {
    check_qkv(q, k, v, true)?;
    let c = rule.coefficients(k.nrows(), k.ncols())?;
    if rule.unit_keys() {
        let q = unit_rows_checked("the length of q", q)?;
        let k = unit_rows_checked("the length of k", k)?;
        return Ok((q, k, c));
    }
    Ok((q.to_owned(), k.to_owned(), c))
}

/// What a rule's layer returns: the reads Y: (N, m) and the memory after
/// the last token, W_N: (m, p).
pub struct RuleRead {
    pub output: Array2<f64>,
    pub memory: Array2<f64>,
}

// ANCHOR: rule_step
/// One step of any rule, W ← W diag(α) (I − β k kᵀ) + ω v kᵀ, computed as
/// W' = W diag(α), u = ω v − β W' k, W ← W' + u kᵀ.
/// memory: (m, p), k, alpha: (p), v: (m).
pub fn rule_step(
    memory: &mut Array2<f64>,
    k: &ArrayRef1<f64>,
    v: &ArrayRef1<f64>,
    alpha: &ArrayRef1<f64>,
    beta: f64,
    omega: f64,
) {
    *memory *= &alpha.view().insert_axis(Axis(0)); // column j times α_j
    let u = &v.view() * omega - memory.dot(k) * beta; // what is written
    fast_weight_write(memory, &u, k);
}
// ANCHOR_END: rule_step

// ANCHOR: rule_recurrent
/// Any rule of the family, token by token from W_0 = 0:
/// W_t = W_{t−1} A_t + B_t, y_t = W_t q_t. q, k: (N, p), v: (N, m).
pub fn rule_recurrent(
    rule: &Rule,
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<RuleRead, InputError> {
    let (q, k, c) = prepare(rule, q, k, v)?;
    let (n, p, m) = (k.nrows(), k.ncols(), v.ncols());
    let mut memory = Array2::zeros((m, p));
    let mut output = Array2::zeros((n, m));
    for t in 0..n {
        let alpha = c.log_alpha.row(t).mapv(f64::exp);
        let (beta, omega) = (c.beta[t], c.omega[t]);
        rule_step(&mut memory, &k.row(t), &v.row(t), &alpha, beta, omega);
        output.row_mut(t).assign(&memory.dot(&q.row(t))); // read
    }
    let (output, memory) = (finite("Y", output)?, finite("W", memory)?);
    Ok(RuleRead { output, memory })
}
// ANCHOR_END: rule_recurrent

// ANCHOR: cumulative_log_gates
/// g_i = Σ_{s ≤ i} ln α_s within one chunk: log_alpha: (C, p) → g: (C, p).
/// The decay from token j to token i ≥ j is exp(g_i − g_j) ∈ [0, 1].
pub fn cumulative_log_gates(log_alpha: &ArrayRef2<f64>) -> Array2<f64> {
    let mut g = log_alpha.to_owned();
    g.accumulate_axis_inplace(Axis(0), |&before, now| *now += before);
    g
}
// ANCHOR_END: cumulative_log_gates

// ANCHOR: decayed_scores
/// Scores of a chunk weighted by the decay between the tokens:
/// M_ij = Σ_c a_ic b_jc exp(g_ic − g_jc) for j ≤ i (j < i if `strict`),
/// 0 above. a, b, g: (C, p). Every exponent is ≤ 0, so nothing overflows.
pub fn decayed_scores(
    a: &ArrayRef2<f64>,
    b: &ArrayRef2<f64>,
    g: &ArrayRef2<f64>,
    strict: bool,
) -> Array2<f64> {
    let c = a.nrows();
    Array2::from_shape_fn((c, c), |(i, j)| {
        if j > i || (strict && j == i) {
            return 0.0;
        }
        let (a_i, b_j) = (a.row(i), b.row(j));
        Zip::from(&a_i)
            .and(&b_j)
            .and(&g.row(i))
            .and(&g.row(j))
            .fold(
                0.0,
                |sum, a, b, g_i, g_j| sum + a * b * (g_i - g_j).exp(), // ≤ a b
            )
    })
}
// ANCHOR_END: decayed_scores

// ANCHOR: rule_chunk
/// One chunk of any rule, from the memory W_0 before it. With g the
/// chunk's cumulative log-gates, Γ_i = exp(g_i), S = decayed K Kᵀ (j < i):
/// (I + diag(β) S) U = diag(ω) V − diag(β) (Γ ⊙ K) W_0ᵀ,
/// Y = (Γ ⊙ Q) W_0ᵀ + decayed Q Kᵀ (j ≤ i) U,
/// W ← W_0 diag(Γ_C) + Uᵀ (K ⊙ exp(g_C − g)).
/// q, k, log_alpha: (C, p), v: (C, m), beta, omega: (C).
pub fn rule_chunk(
    memory: &mut Array2<f64>,
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    log_alpha: &ArrayRef2<f64>,
    beta: &ArrayRef1<f64>,
    omega: &ArrayRef1<f64>,
) -> Array2<f64> {
    let g = cumulative_log_gates(log_alpha);
    let gamma = g.mapv(f64::exp); // decay since the chunk began, in [0, 1]
    let (beta, omega) = (beta.view().insert_axis(Axis(1)), omega.view());
    let erase = decayed_scores(k, k, &g, true) * beta; // diag(β) S
    let read_w0 = (&k.view() * &gamma).dot(&memory.t()); // (Γ ⊙ K) W_0ᵀ
    let rhs = &v.view() * &omega.insert_axis(Axis(1)) - read_w0 * beta;
    let u = forward_substitution(&erase, &rhs);
    let y = (&q.view() * &gamma).dot(&memory.t())
        + decayed_scores(q, k, &g, false).dot(&u);
    let last = g.row(g.nrows() - 1);
    let to_end = (&last - &g).mapv(f64::exp); // decay to the chunk's end
    *memory *= &last.mapv(f64::exp).insert_axis(Axis(0));
    *memory += &u.t().dot(&(&k.view() * &to_end));
    y
}
// ANCHOR_END: rule_chunk

// ANCHOR: rule_chunkwise
/// Any rule of the family in chunks of `chunk` tokens, each computed by
/// `rule_chunk`; the memory is carried from one chunk to the next.
/// q, k: (N, p), v: (N, m), chunk ≥ 1.
pub fn rule_chunkwise(
    rule: &Rule,
    q: &ArrayRef2<f64>,
    k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    chunk: usize,
) -> Result<RuleRead, InputError> {
    check_chunk(chunk)?;
    let (q, k, c) = prepare(rule, q, k, v)?;
    let (n, p, m) = (k.nrows(), k.ncols(), v.ncols());
    let mut memory = Array2::zeros((m, p));
    let mut output = Array2::zeros((n, m));
    for start in (0..n).step_by(chunk) {
        let rows = s![start..(start + chunk).min(n), ..];
        let at = s![start..(start + chunk).min(n)];
        let y = rule_chunk(
            &mut memory,
            &q.slice(rows),
            &k.slice(rows),
            &v.slice(rows),
            &c.log_alpha.slice(rows),
            &c.beta.slice(at),
            &c.omega.slice(at),
        );
        output.slice_mut(rows).assign(&y);
    }
    let (output, memory) = (finite("Y", output)?, finite("W", memory)?);
    Ok(RuleRead { output, memory })
}
// ANCHOR_END: rule_chunkwise

/// The six rules with coefficients drawn for N tokens and p features from
/// `rng`: gates uniform in [lo, 1] (lo = 0.98, mean 0.99, unless `gate` is
/// given: every gate equal to it), write strengths 1 unless given.
pub fn six_rules(
    rng: &mut BookRng,
    n: usize,
    p: usize,
    gate: Option<f64>,
    beta: Option<f64>,
) -> Vec<Rule> {
    let mut draw = |rows, cols| {
        Array2::from_shape_simple_fn((rows, cols), || match gate {
            Some(a) => a,
            None => 1.0 - 0.02 * rng.random::<f64>(),
        })
    };
    let scalar = draw(n, 1).column(0).to_owned();
    let diagonal = draw(n, p);
    let gated = draw(n, 1).column(0).to_owned();
    let beta = Array1::from_elem(n, beta.unwrap_or(1.0));
    vec![
        Rule::Sum,
        Rule::FixedDecay(gate.unwrap_or(0.99)),
        Rule::ScalarDecay(scalar),
        Rule::DiagonalGates(diagonal),
        Rule::Delta(beta.clone()),
        Rule::GatedDelta { alpha: gated, beta },
    ]
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

/// Random q, k: (N, p) and v: (N, m) for the rules (keys of any length).
pub fn random_qkv(seed: u64, n: usize, p: usize, m: usize) -> [Array2<f64>; 3] {
    let mut rng = seeded(seed);
    [
        randn(&mut rng, n, p),
        randn(&mut rng, n, p),
        randn(&mut rng, n, m),
    ]
}

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

// ANCHOR: editing_stream
/// A stream that writes n associations, random unit keys in ℝ^d and unit
/// values in ℝ^m, then rewrites every fourth one of them (chosen at
/// random) with a new value. keys: (n + n/4, d), values: (n + n/4, m);
/// `latest`: the value each of the n keys should now return, (n, m).
pub struct EditingStream {
    pub keys: Array2<f64>,
    pub values: Array2<f64>,
    pub latest: Array2<f64>,
}

pub fn editing_stream(
    seed: u64,
    n: usize,
    d: usize,
    m: usize,
) -> EditingStream {
    let mut rng = seeded(seed);
    let unit = |rng: &mut BookRng, rows, cols| {
        crate::m3::attention::unit_rows(&randn(rng, rows, cols))
    };
    let (keys, mut latest) = (unit(&mut rng, n, d), unit(&mut rng, n, m));
    let mut order: Vec<usize> = (0..n).collect();
    order.shuffle(&mut rng);
    let edited = &order[..n / 4]; // the keys written a second time
    let new = unit(&mut rng, edited.len(), m);
    let (mut all_keys, mut all_values) = (keys.clone(), latest.clone());
    for (&i, v) in edited.iter().zip(new.rows()) {
        all_keys.push_row(keys.row(i)).expect("width d");
        all_values.push_row(v).expect("width m");
        latest.row_mut(i).assign(&v);
    }
    EditingStream {
        keys: all_keys,
        values: all_values,
        latest,
    }
}
// ANCHOR_END: editing_stream

// ANCHOR: latest_value_error
/// Run `rule` over the stream, then read every key once: the mean of
/// ‖W_N k_i − v_i(latest)‖ over the n keys (a memory that returns 0 scores
/// 1, as every value has unit length).
pub fn latest_value_error(rule: &Rule, stream: &EditingStream) -> f64 {
    let (k, v) = (&stream.keys, &stream.values);
    let w = rule_recurrent(rule, k, k, v).expect("unit keys").memory;
    let n = stream.latest.nrows();
    let reads = k.slice(s![..n, ..]).dot(&w.t()); // row i: W k_i
    let errors = (&reads - &stream.latest).map_axis(Axis(1), |e| e.dot(&e));
    errors.mapv(f64::sqrt).mean().expect("n ≥ 1")
}
// ANCHOR_END: latest_value_error

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
    /// errors[rule][count][seed]
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

// ANCHOR: fading_signal
/// What is left of one association after later writes: W holds v₁ k₁ᵀ,
/// and each later token applies its transition A_t but not its input
/// (ω = 0), so W is the first association's share of the memory. Entry s
/// is v₁ᵀ W k₁ after s later tokens. `rule` has coefficients for `len`.
pub fn fading_signal(
    rule: &Rule,
    len: usize,
    seed: u64,
    (d, m): (usize, usize),
) -> Vec<f64> {
    let mut rng = seeded(seed);
    let k = crate::m3::attention::unit_rows(&randn(&mut rng, len, d));
    let v = crate::m3::attention::unit_rows(&randn(&mut rng, len, m));
    let c = rule.coefficients(len, d).expect("the study's rules");
    let mut w = Array2::zeros((m, d));
    (0..len)
        .map(|t| {
            let alpha = c.log_alpha.row(t).mapv(f64::exp);
            let omega = if t == 0 { c.omega[0] } else { 0.0 }; // only v₁ k₁ᵀ
            rule_step(&mut w, &k.row(t), &v.row(t), &alpha, c.beta[t], omega);
            v.row(0).dot(&w.dot(&k.row(0))) / c.omega[0] // share of v₁ at k₁
        })
        .collect()
}
// ANCHOR_END: fading_signal

/// The fading study: for each rule, the mean over seeds of what is left
/// of the first association after s later writes, s = 0..4d, at width d.
pub struct FadingStudy {
    pub d: usize,
    pub seeds: u64,
    pub names: Vec<&'static str>,
    /// signal[rule][s]
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
            let s = fading_signal(rule, len, seed, (d, 16));
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
            "d = {}, m = 16, seeds 0..{}: v1' W k1 after s later writes \
             (mean), and the first s where it is below 1/2",
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::worst_row_relative_difference;
    use crate::m3::schedules::AffineStep;
    use crate::studies::{chapter_editing, chapter_fading};

    fn assert_close(a: &Array2<f64>, b: &Array2<f64>, tol: f64, what: &str) {
        let diff = worst_row_relative_difference(a, b);
        assert!(diff < tol, "{what}: relative difference {diff}");
    }

    /// The transition and input of token t of a rule, as matrices.
    fn affine(
        c: &Coefficients,
        k: &Array2<f64>,
        v: &Array2<f64>,
        t: usize,
    ) -> AffineStep {
        let p = k.ncols();
        let alpha = Array2::from_diag(&c.log_alpha.row(t).mapv(f64::exp));
        let kk = k
            .row(t)
            .insert_axis(Axis(1))
            .dot(&k.row(t).insert_axis(Axis(0)));
        let a = alpha.dot(&(Array2::eye(p) - kk * c.beta[t]));
        let vk = v
            .row(t)
            .insert_axis(Axis(1))
            .dot(&k.row(t).insert_axis(Axis(0)));
        AffineStep {
            a,
            b: vk * c.omega[t],
        }
    }

    fn outer(a: &ArrayRef1<f64>, b: &ArrayRef1<f64>) -> Array2<f64> {
        a.view()
            .insert_axis(Axis(1))
            .dot(&b.view().insert_axis(Axis(0)))
    }

    /// Token t's A_t and B_t as the chapter's table writes them, built from
    /// the rule's own numbers (not from `coefficients`). k: unit rows for
    /// the delta rules.
    fn table_step(
        rule: &Rule,
        k: &Array2<f64>,
        v: &Array2<f64>,
        t: usize,
    ) -> AffineStep {
        let p = k.ncols();
        let (kt, eye) = (k.row(t), Array2::<f64>::eye(p));
        let (kk, vk) = (outer(&kt, &kt), outer(&v.row(t), &kt));
        let (a, b) = match rule {
            Rule::Sum => (eye, vk),
            Rule::FixedDecay(g) => (eye * *g, vk),
            Rule::ScalarDecay(a) => (eye * a[t], vk),
            Rule::DiagonalGates(al) => (Array2::from_diag(&al.row(t)), vk),
            Rule::Delta(b) => (eye - kk * b[t], vk * b[t]),
            Rule::GatedDelta { alpha, beta } => {
                ((eye - kk * beta[t]) * alpha[t], vk * beta[t])
            }
        };
        AffineStep { a, b }
    }

    fn unit(x: &Array2<f64>) -> Array2<f64> {
        crate::m3::attention::unit_rows(x)
    }

    #[test]
    fn every_rule_is_one_affine_step_per_token() {
        // W_t = W_{t−1} A_t + B_t with the table's A_t and B_t, multiplied
        // out as p × p matrices: the same read W_t q_t after every token,
        // and the same last memory, as the recurrence.
        for seed in 0..5 {
            for (n, p, m) in [(1, 1, 1), (9, 4, 3), (20, 8, 5)] {
                let [q, k, v] = random_qkv(seed, n, p, m);
                for gate in [None, Some(0.3)] {
                    let rules =
                        six_rules(&mut seeded(seed), n, p, gate, Some(0.7));
                    for rule in rules {
                        let (qu, ku) = match rule.unit_keys() {
                            true => (unit(&q), unit(&k)),
                            false => (q.clone(), k.clone()),
                        };
                        let mut w = Array2::<f64>::zeros((m, p));
                        let mut y = Array2::<f64>::zeros((n, m));
                        for t in 0..n {
                            w = table_step(&rule, &ku, &v, t).apply(&w);
                            y.row_mut(t).assign(&w.dot(&qu.row(t)));
                        }
                        let read = rule_recurrent(&rule, &q, &k, &v).unwrap();
                        assert_close(&read.output, &y, 1e-12, rule.name());
                        assert_close(&read.memory, &w, 1e-12, rule.name());
                    }
                }
            }
        }
    }

    #[test]
    fn every_rule_is_one_gate_per_feature_one_erase_and_one_write() {
        // A_t = diag(α_t)(I − β_t k kᵀ), B_t = ω_t v kᵀ gives the table's
        // A_t and B_t; no erase: β = 0, ω = 1; delta rules: ω = β; scalar
        // gates: every feature the same. And one step of `rule_step` from a
        // memory that is not zero is W A_t + B_t.
        for seed in 0..4 {
            for (n, p, m) in [(1, 1, 2), (6, 4, 2), (12, 7, 3)] {
                let [q, k, v] = random_qkv(seed, n, p, m);
                for rule in six_rules(&mut seeded(seed), n, p, None, Some(0.4))
                {
                    let (_, ku, c) = prepare(&rule, &q, &k, &v).unwrap();
                    let erase = rule.unit_keys();
                    for t in 0..n {
                        let alpha = c.log_alpha.row(t).mapv(f64::exp);
                        if erase {
                            assert_eq!(c.omega[t], c.beta[t]);
                        } else {
                            assert_eq!((c.beta[t], c.omega[t]), (0.0, 1.0));
                        }
                        if !matches!(rule, Rule::DiagonalGates(_)) {
                            assert!(alpha.iter().all(|&a| a == alpha[0]));
                        }
                        let kt = ku.row(t);
                        let pattern = Array2::from_diag(&alpha).dot(
                            &(Array2::eye(p) - outer(&kt, &kt) * c.beta[t]),
                        );
                        let want = table_step(&rule, &ku, &v, t);
                        assert_close(&pattern, &want.a, 1e-13, rule.name());
                        let b = outer(&v.row(t), &kt) * c.omega[t];
                        assert_close(&b, &want.b, 1e-13, rule.name());
                        let mut w = randn(&mut seeded(seed + 50), m, p);
                        let expect = want.apply(&w);
                        let (beta, omega) = (c.beta[t], c.omega[t]);
                        rule_step(&mut w, &kt, &v.row(t), &alpha, beta, omega);
                        assert_close(&w, &expect, 1e-12, rule.name());
                    }
                }
            }
        }
    }

    #[test]
    fn the_gates_between_two_tokens_multiply_to_the_exp_of_a_difference() {
        // Π_{j<s≤i} α_s = exp(g_i − g_j) and Π_{s≤i} α_s = exp(g_i), entry
        // by entry, for gates in (0, 1].
        for seed in 0..5 {
            let mut rng = seeded(seed);
            for (c, p) in [(1, 1), (9, 3), (30, 5)] {
                let alpha = Array2::from_shape_simple_fn((c, p), || {
                    1.0 - rng.random::<f64>()
                });
                let g = cumulative_log_gates(&alpha.mapv(f64::ln));
                for i in 0..c {
                    for j in 0..=i {
                        for f in 0..p {
                            let prod: f64 =
                                (j + 1..=i).map(|s| alpha[[s, f]]).product();
                            let got = (g[[i, f]] - g[[j, f]]).exp();
                            assert!((got / prod - 1.0).abs() < 1e-12);
                        }
                    }
                    for f in 0..p {
                        let prod: f64 =
                            (0..=i).map(|s| alpha[[s, f]]).product();
                        assert!((g[[i, f]].exp() / prod - 1.0).abs() < 1e-12);
                    }
                }
            }
        }
    }

    #[test]
    fn with_every_gate_one_the_chunk_is_the_delta_chapters_chunk() {
        // log α = 0, ω = β, and the delta chapter's sum-normalised keys:
        // the chunks give the delta chapter's chunkwise reads and memory.
        use crate::paper::delta_rule::{delta_rule_chunkwise, sum_normalise};
        for seed in 0..4 {
            for (n, p, m, chunk) in
                [(5, 3, 2, 1), (23, 6, 4, 5), (40, 8, 3, 16)]
            {
                let [q, k, v] = random_qkv(seed, n, p, m);
                let (q, k) = (q.mapv(f64::exp), k.mapv(f64::exp));
                let beta =
                    Array1::from_shape_fn(n, |t| (t as f64 * 0.37).fract());
                let want =
                    delta_rule_chunkwise(&q, &k, &v, &beta, chunk).unwrap();
                let norm = |x: &Array2<f64>| {
                    let mut out = x.clone();
                    for mut r in out.rows_mut() {
                        let s = sum_normalise(&r.view());
                        r.assign(&s);
                    }
                    out
                };
                let (qb, kb) = (norm(&q), norm(&k));
                let zeros = Array2::<f64>::zeros((n, p));
                let mut w = Array2::<f64>::zeros((m, p));
                let mut y = Array2::<f64>::zeros((n, m));
                for start in (0..n).step_by(chunk) {
                    let r = s![start..(start + chunk).min(n), ..];
                    let at = s![start..(start + chunk).min(n)];
                    let yc = rule_chunk(
                        &mut w,
                        &qb.slice(r),
                        &kb.slice(r),
                        &v.slice(r),
                        &zeros.slice(r),
                        &beta.slice(at),
                        &beta.slice(at),
                    );
                    y.slice_mut(r).assign(&yc);
                }
                assert_close(&y, &want.output, 1e-10, "reads");
                assert_close(&w, &want.memory, 1e-10, "memory");
            }
        }
    }

    #[test]
    fn with_no_erase_the_chunk_is_the_decayed_masked_product() {
        // β = 0, ω = 1, from W_0 = 0: Y = (Q Kᵀ ⊙ L) V with L_ij the
        // product of the gates a_{j+1} … a_i for j ≤ i, 0 above.
        for seed in 0..4 {
            for (c, p, m) in [(1, 2, 2), (8, 3, 2), (25, 5, 4)] {
                let [q, k, v] = random_qkv(seed, c, p, m);
                let mut rng = seeded(seed + 9);
                let a: Vec<f64> =
                    (0..c).map(|_| 1.0 - 0.9 * rng.random::<f64>()).collect();
                let log_alpha =
                    Array2::from_shape_fn((c, p), |(t, _)| a[t].ln());
                let mut w = Array2::<f64>::zeros((m, p));
                let (beta, omega) = (Array1::zeros(c), Array1::ones(c));
                let y =
                    rule_chunk(&mut w, &q, &k, &v, &log_alpha, &beta, &omega);
                let mut scores = q.dot(&k.t());
                for ((i, j), x) in scores.indexed_iter_mut() {
                    *x *= match j <= i {
                        true => (j + 1..=i).map(|s| a[s]).product::<f64>(),
                        false => 0.0,
                    };
                }
                assert_close(&y, &scores.dot(&v), 1e-11, "masked product");
            }
        }
    }

    #[test]
    fn the_table_names_each_rules_transition() {
        // Sum: A = I; fixed decay: γ I; the delta rule: I − β k kᵀ with a
        // unit k; the gated delta rule: α (I − β k kᵀ).
        let [q, k, v] = random_qkv(3, 6, 4, 2);
        let mut rng = seeded(3);
        let rules = six_rules(&mut rng, 6, 4, None, Some(0.4));
        let step = |r: &Rule, t| {
            let (_, kp, c) = prepare(r, &q, &k, &v).unwrap();
            (affine(&c, &kp, &v, t), kp)
        };
        let (sum, _) = step(&rules[0], 2);
        assert_eq!(sum.a, Array2::eye(4));
        let (fixed, _) = step(&rules[1], 2);
        assert_close(&fixed.a, &(Array2::eye(4) * 0.99), 1e-14, "γ I");
        let (delta, kp) = step(&rules[4], 2);
        let kt = kp.row(2);
        assert!((kt.dot(&kt) - 1.0).abs() < 1e-14, "unit key");
        let house = crate::paper::delta_rule::delta_transition(&kt, 0.4);
        assert_close(&delta.a, &house, 1e-14, "I − β k kᵀ");
        let (gated, _) = step(&rules[5], 2);
        let Rule::GatedDelta { alpha, .. } = &rules[5] else {
            unreachable!()
        };
        assert_close(&gated.a, &(house * alpha[2]), 1e-13, "α (I − β k kᵀ)");
    }

    #[test]
    fn chunkwise_rule_equals_the_recurrence() {
        // Every rule, chunks of one token, chunks that do not divide N,
        // one chunk for the whole sequence; gates near 1 and far from it.
        for seed in 0..6 {
            for (n, p, m) in [(1, 3, 2), (37, 8, 8), (100, 5, 3)] {
                let [q, k, v] = random_qkv(seed, n, p, m);
                for gate in [None, Some(0.5), Some(1.0 - 1e-9), Some(1e-3)] {
                    let rules =
                        six_rules(&mut seeded(seed), n, p, gate, Some(0.6));
                    for rule in rules {
                        let rec = rule_recurrent(&rule, &q, &k, &v).unwrap();
                        for chunk in [1, 3, 8, 16, 64, n, n + 5] {
                            let ch = rule_chunkwise(&rule, &q, &k, &v, chunk)
                                .unwrap();
                            let what = format!(
                                "{} n {n} C {chunk} gate {gate:?}",
                                rule.name()
                            );
                            assert_close(&ch.output, &rec.output, 1e-9, &what);
                            assert_close(&ch.memory, &rec.memory, 1e-9, &what);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn with_tiny_gates_a_cumulative_product_underflows_but_the_chunks_do_not() {
        // Every gate 10⁻³ over N = 4096 tokens: the product of the gates
        // since the start is 0 after a few hundred tokens, and the ratio of
        // two such products, the decay between two tokens, is 0/0 = NaN.
        let (n, p, m) = (4096, 8, 4);
        let gates = Array1::from_elem(n, 1e-3);
        let cumulative: Vec<f64> = gates
            .iter()
            .scan(1.0, |prod, &a| {
                *prod *= a;
                Some(*prod)
            })
            .collect();
        assert_eq!(cumulative[n - 1], 0.0);
        assert!((cumulative[n - 1] / cumulative[n - 2]).is_nan());
        // Any gate of 0.1 or less: zero within four hundred tokens.
        for a in [0.1, 0.05, 1e-2, 1e-3] {
            let prod = (0..400).fold(1.0f64, |p, _| p * a);
            assert_eq!(prod, 0.0, "gate {a}");
            assert!((prod / prod).is_nan());
        }
        for seed in 0..3 {
            let [q, k, v] = random_qkv(seed, n, p, m);
            for rule in six_rules(&mut seeded(seed), n, p, Some(1e-3), None) {
                if matches!(rule, Rule::Sum | Rule::Delta(_)) {
                    continue; // no gates
                }
                let rec = rule_recurrent(&rule, &q, &k, &v).unwrap();
                for chunk in [64, 500] {
                    let ch = rule_chunkwise(&rule, &q, &k, &v, chunk).unwrap();
                    assert!(ch.output.iter().all(|x| x.is_finite()));
                    let what = format!("{} C {chunk}", rule.name());
                    assert_close(&ch.output, &rec.output, 1e-9, &what);
                }
            }
        }
    }

    #[test]
    fn every_exponent_the_chunks_take_is_at_most_zero() {
        // The chunk exponentiates only g_i − g_j for j ≤ i (and g_i itself,
        // g_0 = 0): sums of logarithms of gates in (0, 1]. First with the
        // six rules' own log-gates (gates of 1 included), every factor in
        // [0, 1]; then with log-gates down to −150 or so.
        for seed in 0..4 {
            for gate in [None, Some(1.0), Some(0.5), Some(1e-3)] {
                let mut rng = seeded(seed);
                for rule in six_rules(&mut rng, 40, 5, gate, None) {
                    let c = rule.coefficients(40, 5).unwrap();
                    for chunk in [1, 7, 40] {
                        for start in (0..40).step_by(chunk) {
                            let end = (start + chunk).min(40);
                            let g = cumulative_log_gates(
                                &c.log_alpha.slice(s![start..end, ..]),
                            );
                            for i in 0..end - start {
                                for j in 0..=i {
                                    for f in 0..5 {
                                        let x = g[[i, f]] - g[[j, f]];
                                        assert!(x <= 0.0 && g[[i, f]] <= 0.0);
                                        assert!((0.0..=1.0).contains(&x.exp()));
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
        for seed in 0..5 {
            let mut rng = seeded(seed);
            let log_alpha = randn(&mut rng, 20, 4).mapv(|x| -(x.abs() * 50.0));
            let g = cumulative_log_gates(&log_alpha);
            for i in 0..20 {
                assert!(g.row(i).iter().all(|&x| x <= 0.0));
                for j in 0..=i {
                    assert!((&g.row(i) - &g.row(j)).iter().all(|&x| x <= 0.0));
                }
            }
        }
    }

    #[test]
    fn bad_gates_and_strengths_are_refused_with_their_position() {
        let [q, k, v] = random_qkv(0, 5, 3, 2);
        let mut a = Array1::from_elem(5, 0.9);
        for bad in [0.0, 1.5, -0.2, f64::NAN, f64::INFINITY] {
            a[3] = bad;
            for rule in [
                Rule::ScalarDecay(a.clone()),
                Rule::GatedDelta {
                    alpha: a.clone(),
                    beta: Array1::from_elem(5, 0.5),
                },
            ] {
                let name = match rule {
                    Rule::ScalarDecay(_) => "a is",
                    _ => "alpha is",
                };
                let err = rule_recurrent(&rule, &q, &k, &v).err().unwrap();
                let msg = err.to_string();
                assert!(msg.contains("at [3, 0]"), "{msg}");
                assert!(msg.contains("(0, 1]"), "{msg}");
                assert!(msg.contains(name), "{msg}");
                let err = rule_chunkwise(&rule, &q, &k, &v, 2).err().unwrap();
                assert_eq!(err.to_string(), msg);
            }
            let mut gates = Array2::from_elem((5, 3), 0.9);
            gates[[2, 1]] = bad;
            let err =
                rule_chunkwise(&Rule::DiagonalGates(gates), &q, &k, &v, 2)
                    .err()
                    .unwrap()
                    .to_string();
            assert!(err.contains("alpha is") && err.contains("at [2, 1]"));
        }
        for bad in [1.5, f64::NAN] {
            let mut beta = Array1::from_elem(5, 0.5);
            beta[4] = bad;
            let rule = Rule::GatedDelta {
                alpha: Array1::from_elem(5, 0.9),
                beta,
            };
            let err = rule_recurrent(&rule, &q, &k, &v).err().unwrap();
            let msg = err.to_string();
            assert!(msg.contains("beta is") && msg.contains("at [4, 0]"));
            assert!(msg.contains("[0, 1]"), "{msg}");
        }
        let beta = Array1::from_vec(vec![0.5, 0.5, -0.1, 0.5, 0.5]);
        let err = rule_chunkwise(&Rule::Delta(beta), &q, &k, &v, 2).err();
        assert!(err.unwrap().to_string().contains("beta is -0.1 at [2, 0]"));
        let err = rule_recurrent(&Rule::FixedDecay(1.01), &q, &k, &v).err();
        assert!(err.unwrap().to_string().contains("gamma is 1.01"));
        let short = Rule::Delta(Array1::from_elem(4, 0.5));
        let err = rule_recurrent(&short, &q, &k, &v).err().unwrap();
        assert!(err.to_string().contains("beta is [4, 1]"), "{err}");
        let wide = Rule::DiagonalGates(Array2::from_elem((5, 4), 0.5));
        let err = rule_recurrent(&wide, &q, &k, &v).err().unwrap();
        assert!(err.to_string().contains("alpha is [5, 4]"), "{err}");
        let err = rule_chunkwise(&Rule::Sum, &q, &k, &v, 0).err().unwrap();
        assert!(err.to_string().contains("chunk"), "{err}");
        let mut zero_k = k.clone();
        zero_k.row_mut(1).fill(0.0);
        let err =
            rule_recurrent(&Rule::Delta(Array1::ones(5)), &q, &zero_k, &v)
                .err()
                .unwrap();
        assert!(err.to_string().contains("length of k"), "{err}");
        assert!(err.to_string().contains("at row 1"), "{err}");
    }

    /// Index of each rule in `six_rules`.
    const SUM: usize = 0;
    const FIXED: usize = 1;
    const SCALAR: usize = 2;
    const DIAGONAL: usize = 3;
    const DELTA: usize = 4;
    const GATED: usize = 5;

    /// The chapter's study, and one at half the width with its own seeds.
    fn editing_studies() -> [&'static EditingStudy; 2] {
        static CELL: std::sync::OnceLock<EditingStudy> =
            std::sync::OnceLock::new();
        let half: Vec<usize> = EDITING_COUNTS.iter().map(|n| n / 2).collect();
        let narrow = CELL.get_or_init(|| editing_study(&half, 32, 16, 10));
        [chapter_editing(), narrow]
    }

    #[test]
    fn the_latest_value_error_of_every_rule_grows_with_n() {
        for study in editing_studies() {
            for r in 0..6 {
                for i in 1..study.counts.len() {
                    let (before, now) =
                        (study.mean(r, i - 1), study.mean(r, i));
                    assert!(now > before, "{} at n {}", study.names[r], i);
                }
            }
        }
    }

    #[test]
    fn up_to_d_keys_the_delta_rules_read_the_latest_values_best() {
        for study in editing_studies() {
            for (i, &n) in study.counts.iter().enumerate() {
                if n > study.d {
                    continue;
                }
                let worst_delta =
                    study.mean(DELTA, i).max(study.mean(GATED, i));
                for r in SUM..DELTA {
                    assert!(worst_delta < study.mean(r, i), "n {n}, rule {r}");
                }
            }
        }
    }

    #[test]
    fn past_d_keys_the_sum_rule_reads_worse_than_an_empty_memory() {
        // An empty memory reads 0: an error of exactly 1 for unit values.
        for study in editing_studies() {
            for (i, &n) in study.counts.iter().enumerate() {
                if n < study.d {
                    continue;
                }
                let sum = study.mean(SUM, i);
                assert!(sum > 1.0, "n {n}: {sum}");
                for r in FIXED..=GATED {
                    assert!(sum > study.mean(r, i), "n {n}, rule {r}");
                }
            }
        }
    }

    #[test]
    fn from_one_and_a_half_d_keys_the_gated_delta_rule_reads_best() {
        for study in editing_studies() {
            for (i, &n) in study.counts.iter().enumerate() {
                if 2 * n < 3 * study.d {
                    continue;
                }
                for r in SUM..GATED {
                    assert!(study.mean(GATED, i) < study.mean(r, i), "n {n}");
                }
            }
        }
    }

    #[test]
    fn the_sum_rule_keeps_every_association_whole() {
        for seed in 0..5 {
            for d in [8, 32] {
                let signal = fading_signal(&Rule::Sum, 4 * d, seed, (d, 4));
                for x in signal {
                    assert!((x - 1.0).abs() < 1e-12, "{x}");
                }
            }
        }
    }

    #[test]
    fn a_fixed_decay_halves_an_association_after_ln2_over_ln_1_over_gamma_writes()
     {
        for seed in 0..5 {
            for (gamma, d) in [(0.9, 4), (0.99, 16), (0.95, 64), (0.99, 128)] {
                let rule = Rule::FixedDecay(gamma);
                for (s, x) in
                    fading_signal(&rule, 300, seed, (d, 4)).iter().enumerate()
                {
                    let want = gamma.powi(s as i32);
                    assert!((x / want - 1.0).abs() < 1e-10, "{x} vs {want}");
                }
                // The first s with γ^s < 1/2 is the ceiling of ln 2/ln(1/γ).
                let life = (2f64.ln() / (1.0 / gamma).ln()).ceil() as usize;
                let signal = fading_signal(&rule, 300, seed, (d, 4));
                assert_eq!(signal.iter().position(|&x| x < 0.5), Some(life));
            }
        }
        // In the chapter's studies, at both widths: ln 2 / ln(1/0.99) ≈ 69.
        let want = (2f64.ln() / (1.0 / 0.99f64).ln()).ceil() as usize;
        for study in chapter_fading() {
            assert_eq!(study.half_life(FIXED), Some(want));
            // Random gates with the same mean: nearly the same rate.
            for r in [SCALAR, DIAGONAL] {
                let life = study.half_life(r).unwrap();
                assert!(life.abs_diff(want) <= 3, "rule {r}: {life}");
            }
        }
    }

    #[test]
    fn the_delta_rules_half_life_grows_in_proportion_to_d() {
        // About d ln 2 later writes: each removes on average 1/d of what is
        // left along k₁. Checked at d = 32 and 64, twenty seeds each.
        let [narrow, wide] = chapter_fading();
        let lives = [narrow, wide].map(|s| s.half_life(DELTA).unwrap());
        for (life, study) in lives.iter().zip([narrow, wide]) {
            let per_d = *life as f64 / study.d as f64;
            assert!((0.6..0.85).contains(&per_d), "{life} at d {}", study.d);
        }
        let ratio = lives[1] as f64 / lives[0] as f64;
        assert!((1.7..2.3).contains(&ratio), "{lives:?}");
    }

    #[test]
    fn the_gated_delta_rule_forgets_faster_than_its_gate_or_the_delta_rule_alone()
     {
        for study in chapter_fading() {
            let gated = study.half_life(GATED).unwrap();
            for r in FIXED..GATED {
                assert!(gated < study.half_life(r).unwrap(), "rule {r}");
            }
        }
    }

    #[test]
    fn the_editing_stream_rewrites_a_quarter_of_its_keys_with_new_values() {
        for seed in 0..5 {
            for (n, d, m) in [(1, 4, 2), (8, 16, 4), (37, 8, 3), (64, 64, 16)] {
                let s = editing_stream(seed, n, d, m);
                let again = n / 4;
                assert_eq!(s.keys.dim(), (n + again, d));
                assert_eq!(s.values.dim(), (n + again, m));
                let norms = |x: &Array2<f64>| {
                    x.rows()
                        .into_iter()
                        .all(|r| (r.dot(&r) - 1.0).abs() < 1e-12)
                };
                assert!(norms(&s.keys) && norms(&s.values));
                let mut seen = std::collections::HashSet::new();
                let mut latest = s.values.slice(s![..n, ..]).to_owned();
                for t in n..n + again {
                    let i = (0..n)
                        .find(|&i| s.keys.row(i) == s.keys.row(t))
                        .expect("a key written before");
                    assert!(seen.insert(i), "each key rewritten once");
                    assert_ne!(s.values.row(t), s.values.row(i), "a new value");
                    latest.row_mut(i).assign(&s.values.row(t));
                }
                assert_eq!(latest, s.latest);
            }
        }
    }

    #[test]
    fn the_error_is_the_distance_from_the_latest_value() {
        // Orthonormal keys e_1 … e_n, the first n/4 written again: the sum
        // rule returns old + new there (an error of exactly 1 at those keys,
        // 0 elsewhere), the delta rule with β = 1 the latest (error 0), and a
        // memory that stays zero (β = 0) scores exactly 1.
        for (n, m) in [(4, 3), (8, 5), (16, 16)] {
            let mut rng = seeded(n as u64);
            let keys0 = Array2::<f64>::eye(n);
            let values0 = unit(&randn(&mut rng, n, m));
            let new = unit(&randn(&mut rng, n / 4, m));
            let mut keys = keys0.clone();
            let mut values = values0.clone();
            let mut latest = values0.clone();
            for i in 0..n / 4 {
                keys.push_row(keys0.row(i)).unwrap();
                values.push_row(new.row(i)).unwrap();
                latest.row_mut(i).assign(&new.row(i));
            }
            let len = keys.nrows();
            let stream = EditingStream {
                keys,
                values,
                latest,
            };
            let sum = latest_value_error(&Rule::Sum, &stream);
            let want = (n / 4) as f64 / n as f64;
            assert!((sum - want).abs() < 1e-12, "{sum} vs {want}");
            let delta =
                latest_value_error(&Rule::Delta(Array1::ones(len)), &stream);
            assert!(delta < 1e-12, "{delta}");
            let empty =
                latest_value_error(&Rule::Delta(Array1::zeros(len)), &stream);
            assert!((empty - 1.0).abs() < 1e-12, "{empty}");
        }
        for seed in 0..3 {
            let stream = editing_stream(seed, 40, 16, 8);
            let len = stream.keys.nrows();
            let empty =
                latest_value_error(&Rule::Delta(Array1::zeros(len)), &stream);
            assert!((empty - 1.0).abs() < 1e-12, "{empty}");
        }
    }

    #[test]
    fn the_studys_gates_have_the_fixed_decays_mean_and_every_strength_is_one() {
        for seed in 0..5 {
            let rules = editing_rules(seed, 320, 64);
            let mut gates: Vec<f64> = vec![];
            for rule in &rules {
                match rule {
                    Rule::FixedDecay(g) => assert_eq!(*g, 0.99),
                    Rule::ScalarDecay(a) => gates.extend(a.iter()),
                    Rule::DiagonalGates(a) => gates.extend(a.iter()),
                    Rule::Delta(b) => assert!(b.iter().all(|&b| b == 1.0)),
                    Rule::GatedDelta { alpha, beta } => {
                        assert!(beta.iter().all(|&b| b == 1.0));
                        gates.extend(alpha.iter());
                    }
                    Rule::Sum => {}
                }
            }
            assert!(gates.iter().all(|&a| (0.98..=1.0).contains(&a)));
            let mean = gates.iter().sum::<f64>() / gates.len() as f64;
            assert!((mean - 0.99).abs() < 2e-4, "{mean}");
        }
    }

    #[test]
    fn the_fading_signal_is_the_first_associations_share_of_the_memory() {
        // The whole recurrence, with and without the first token's value:
        // the difference of the two memories, read at k₁ and against v₁, is
        // the fading signal, after every later token (each rule's A_t does
        // not depend on the memory).
        for seed in 0..4 {
            for (d, m, len) in [(4, 3, 12), (16, 4, 40)] {
                let mut rng = seeded(seed);
                let k = unit(&randn(&mut rng, len, d));
                let v = unit(&randn(&mut rng, len, m));
                let q = Array2::from_shape_fn((len, d), |(_, j)| k[[0, j]]);
                let mut v0 = v.clone();
                v0.row_mut(0).fill(0.0);
                for rule in editing_rules(seed, len, d) {
                    let signal = fading_signal(&rule, len, seed, (d, m));
                    let all = rule_recurrent(&rule, &q, &k, &v).unwrap();
                    let rest = rule_recurrent(&rule, &q, &k, &v0).unwrap();
                    let share = (&all.output - &rest.output).dot(&v.row(0));
                    for (s, (&x, &want)) in
                        signal.iter().zip(&share).enumerate()
                    {
                        assert!(
                            (x - want).abs() < 1e-12,
                            "{} s {s}",
                            rule.name()
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_sum_rule_returns_old_plus_new_and_every_key_adds_crosstalk() {
        // Read at key i, the sum rule's memory is Σ_j (k_j · k_i) v_j over
        // every write j: both values of a rewritten key with weight 1, and
        // every other key with its overlap.
        for seed in 0..4 {
            for (n, d, m) in [(8, 16, 4), (40, 16, 8), (20, 64, 3)] {
                let s = editing_stream(seed, n, d, m);
                let w = rule_recurrent(&Rule::Sum, &s.keys, &s.keys, &s.values)
                    .unwrap()
                    .memory;
                for i in 0..n {
                    let ki = s.keys.row(i);
                    let mut want = Array1::<f64>::zeros(m);
                    for (kj, vj) in
                        s.keys.rows().into_iter().zip(s.values.rows())
                    {
                        want.scaled_add(kj.dot(&ki), &vj);
                    }
                    let got = w.dot(&ki);
                    assert!((&got - &want).iter().all(|x| x.abs() < 1e-12));
                }
            }
        }
    }

    #[test]
    fn a_delta_rule_with_beta_one_replaces_the_value_of_the_key_it_writes() {
        // From any memory, one step with a unit key and β = 1 leaves W k = v:
        // the old value at k is gone, for the delta and gated delta rules.
        for seed in 0..5 {
            for (p, m) in [(1, 1), (4, 3), (16, 8)] {
                let mut rng = seeded(seed);
                let k = unit(&randn(&mut rng, 1, p));
                let v = randn(&mut rng, 1, m);
                for gate in [1.0, 0.9, 0.2] {
                    let mut w = randn(&mut rng, m, p);
                    let alpha = Array1::from_elem(p, gate);
                    rule_step(&mut w, &k.row(0), &v.row(0), &alpha, 1.0, 1.0);
                    let got = w.dot(&k.row(0));
                    let diff = &got - &v.row(0);
                    assert!(diff.iter().all(|x| x.abs() < 1e-12), "{diff}");
                }
            }
        }
    }

    #[test]
    fn each_later_unit_key_removes_on_average_a_one_over_d_part() {
        // E[(I − k kᵀ)] = (1 − 1/d) I for random unit k: after one later
        // write, what is left of v₁ at k₁ is 1 − (k · k₁)², on average
        // 1 − 1/d. Mean over 400 seeds, within a tenth of 1/d.
        for d in [8, 32, 64] {
            // Seed by seed, exactly the overlap goes: 1 − (k₂ · k₁)².
            for seed in 0..20 {
                let k = unit(&randn(&mut seeded(seed), 2, d));
                let left = fading_signal(
                    &Rule::Delta(Array1::ones(2)),
                    2,
                    seed,
                    (d, 4),
                );
                let overlap = k.row(0).dot(&k.row(1));
                assert!((left[1] - (1.0 - overlap * overlap)).abs() < 1e-12);
            }
            let seeds = 400;
            let removed: f64 = (0..seeds)
                .map(|seed| {
                    let rule = Rule::Delta(Array1::ones(2));
                    1.0 - fading_signal(&rule, 2, seed, (d, 4))[1]
                })
                .sum::<f64>()
                / seeds as f64;
            let ratio = removed * d as f64;
            assert!((ratio - 1.0).abs() < 0.1, "d {d}: {ratio}");
        }
    }

    #[test]
    fn the_figures_lines_are_as_its_text_says() {
        // Top: the two delta rules start lowest; the three decaying rules
        // lie together between the sum rule and the delta rules.
        let study = chapter_editing();
        let decaying = [FIXED, SCALAR, DIAGONAL];
        for r in SUM..DELTA {
            assert!(
                study.mean(DELTA, 0).max(study.mean(GATED, 0))
                    < study.mean(r, 0)
            );
        }
        for (i, _) in study.counts.iter().enumerate() {
            let means = decaying.map(|r| study.mean(r, i));
            let top = means.iter().fold(f64::MIN, |a, &x| a.max(x));
            let bottom = means.iter().fold(f64::MAX, |a, &x| a.min(x));
            assert!(top < study.mean(SUM, i), "n index {i}");
            let lower = study.mean(DELTA, i).min(study.mean(GATED, i));
            assert!(bottom > lower, "n index {i}");
        }
        // The caption: the three decaying rules lie on top of each other,
        // within 5% of each other at every n and after every s writes.
        for (i, _) in study.counts.iter().enumerate() {
            let fixed = study.mean(FIXED, i);
            for r in [SCALAR, DIAGONAL] {
                let ratio = study.mean(r, i) / fixed;
                assert!((ratio - 1.0).abs() < 0.05, "rule {r}: {ratio}");
            }
        }
        for fading in chapter_fading() {
            for s in 0..fading.signal[FIXED].len() {
                let fixed = fading.signal[FIXED][s];
                for r in [SCALAR, DIAGONAL] {
                    let ratio = fading.signal[r][s] / fixed;
                    assert!((ratio - 1.0).abs() < 0.05, "rule {r} s {s}");
                }
            }
        }
        // Bottom (d = 64): the delta rule falls faster than the decaying
        // rules, the gated delta rule fastest.
        let [_, wide] = chapter_fading();
        let delta = wide.half_life(DELTA).unwrap();
        for r in decaying {
            assert!(delta < wide.half_life(r).unwrap(), "rule {r}");
        }
    }

    #[test]
    fn no_write_strength_in_range_stretches_the_memory() {
        // With a unit key, ‖W (I − β k kᵀ)‖ ≤ ‖W‖ for every β in [0, 1]
        // (the eigenvalues are 1 and 1 − β); β = 3 would stretch it.
        for seed in 0..5 {
            for (p, m) in [(1, 1), (4, 3), (16, 8)] {
                let mut rng = seeded(seed);
                let k = unit(&randn(&mut rng, 1, p));
                let w = randn(&mut rng, m, p);
                let frob =
                    |x: &Array2<f64>| x.iter().map(|a| a * a).sum::<f64>();
                let along = |x: &Array2<f64>| {
                    let r = x.dot(&k.row(0));
                    r.dot(&r)
                };
                for beta in [0.0, 0.25, 0.5, 0.9, 1.0, 3.0] {
                    let house = crate::paper::delta_rule::delta_transition(
                        &k.row(0),
                        beta,
                    );
                    let after = w.dot(&house);
                    let ok = frob(&after) <= frob(&w) * (1.0 + 1e-12);
                    assert_eq!(ok, beta <= 1.0 || along(&w) == 0.0, "β {beta}");
                }
            }
        }
    }
}
