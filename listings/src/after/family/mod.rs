//! Chapter "After the paper": the update rules that followed the paper's
//! delta rule, as one recurrence S_t = S_{t−1} H_t + B_t with different
//! transitions H_t, each computed token by token and in chunks, tested
//! equal; and what each rule does to a memory that is being edited.
//!
//! Shapes: queries and keys q, k: (N, p), values v: (N, m), the memory W:
//! (m, p), values by features, as everywhere in the book. Every rule here
//! reads y_t = S_t q_t, with no denominator, as the published models do.

use crate::input::{
    InputError, check_chunk, check_qkv, check_write, finite, finite_number,
    first_outside,
};
use crate::m3::fast_weight_memory::fast_weight_write;
use crate::paper::delta_rule::forward_substitution;
use crate::random::{BookRng, randn, seeded};
use ndarray::{Array1, Array2, ArrayRef1, ArrayRef2, Axis, Zip, s};
use rand::Rng;
use rand::seq::SliceRandom;

pub mod study;

// ANCHOR: rule
/// The update rules of the family S_t = S_{t−1} H_t + B_t, each with the
/// numbers it needs per token. Gates lie in (0, 1], write strengths β in
/// [0, 1]; the delta rules use unit keys and queries.
#[derive(Clone, Debug)]
pub enum Rule {
    /// H_t = I, B_t = v_t k_tᵀ: linear attention without its denominator.
    Sum,
    /// H_t = γ I, B_t = v_t k_tᵀ: one fixed decay (RetNet).
    FixedDecay(f64),
    /// H_t = a_t I, a: (N): a decay set by each token (Mamba-2).
    ScalarDecay(Array1<f64>),
    /// H_t = diag(α_t), alpha: (N, p): a gate per feature (GLA).
    DiagonalGates(Array2<f64>),
    /// H_t = I − β_t k_t k_tᵀ, B_t = β_t v_t k_tᵀ, beta: (N) (DeltaNet).
    Delta(Array1<f64>),
    /// H_t = α_t (I − β_t k_t k_tᵀ), B_t = β_t v_t k_tᵀ (Gated DeltaNet).
    GatedDelta {
        alpha: Array1<f64>,
        beta: Array1<f64>,
    },
    /// H_t = diag(α_t) (I − β_t k_t k_tᵀ), B_t = β_t v_t k_tᵀ, alpha:
    /// (N, p): the delta rule with a gate per feature (KDA, next chapter).
    Kda {
        alpha: Array2<f64>,
        beta: Array1<f64>,
    },
}
// ANCHOR_END: rule

// ANCHOR: coefficients
/// Every rule as one transition H_t = diag(α_t) (I − β_t k_t k_tᵀ) and one
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
        self.check(n, p)?;
        let (ones, zeros) = (Array1::ones(n), Array1::zeros(n));
        let every_feature = |a: &Array1<f64>| {
            let ln_a = a.mapv(f64::ln).insert_axis(Axis(1)); // (N, 1)
            ln_a.broadcast((n, p))
                .expect("one gate per token")
                .to_owned()
        };
        let no_decay = Array2::zeros((n, p)); // ln 1
        let (log_alpha, beta, omega) = match self {
            Rule::Sum => (no_decay, zeros, ones),
            Rule::FixedDecay(gamma) => {
                (Array2::from_elem((n, p), gamma.ln()), zeros, ones)
            }
            Rule::ScalarDecay(a) => (every_feature(a), zeros, ones),
            Rule::DiagonalGates(alpha) => (alpha.mapv(f64::ln), zeros, ones),
            Rule::Delta(beta) => (no_decay, beta.clone(), beta.clone()),
            Rule::GatedDelta { alpha, beta } => {
                (every_feature(alpha), beta.clone(), beta.clone())
            }
            Rule::Kda { alpha, beta } => {
                (alpha.mapv(f64::ln), beta.clone(), beta.clone())
            }
        };
        Ok(Coefficients {
            log_alpha,
            beta,
            omega,
        })
    }

    // ANCHOR_END: coefficients

    /// Checks that every gate lies in (0, 1] and every write strength in
    /// [0, 1], one per token (and per feature, for the gates of
    /// `DiagonalGates` and `Kda`), over N tokens with p features; an error
    /// names the first number out of range and where it is.
    pub fn check(&self, n: usize, p: usize) -> Result<(), InputError> {
        match self {
            Rule::Sum => Ok(()),
            Rule::FixedDecay(gamma) => {
                gates_in_range("gamma", &Array2::from_elem((1, 1), *gamma))
            }
            Rule::ScalarDecay(a) => {
                gates_in_range("a", &per_token("a", a, (n, p))?)
            }
            Rule::DiagonalGates(alpha) => {
                gate_shape(alpha, n, p)?;
                gates_in_range("alpha", alpha)
            }
            Rule::Delta(beta) => {
                strengths_in_range(&per_token("beta", beta, (n, p))?)
            }
            Rule::GatedDelta { alpha, beta } => {
                gates_in_range("alpha", &per_token("alpha", alpha, (n, p))?)?;
                strengths_in_range(&per_token("beta", beta, (n, p))?)
            }
            Rule::Kda { alpha, beta } => {
                gate_shape(alpha, n, p)?;
                gates_in_range("alpha", alpha)?;
                strengths_in_range(&per_token("beta", beta, (n, p))?)
            }
        }
    }

    /// Whether the rule uses unit keys and queries (the delta rules do, as
    /// DeltaNet does: then β ∈ [0, 1] keeps H_t from stretching S).
    pub fn unit_keys(&self) -> bool {
        matches!(
            self,
            Rule::Delta(_) | Rule::GatedDelta { .. } | Rule::Kda { .. }
        )
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
            Rule::Kda { .. } => "KDA",
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

/// Rows scaled to unit length; a row of length 0 is an error naming it.
/// Each row is first divided by its largest magnitude, so no square
/// underflows (entries near 1e-160) or overflows (near 1e160).
pub fn unit_rows_checked(
    name: &'static str,
    x: &ArrayRef2<f64>,
) -> Result<Array2<f64>, InputError> {
    let mut out = x.to_owned();
    for (t, mut row) in out.rows_mut().into_iter().enumerate() {
        let largest = row.fold(0.0, |a: f64, &b| a.max(b.abs()));
        crate::input::normaliser(name, t, largest)?;
        row /= largest; // entries in [−1, 1], one of them ±1
        row /= row.dot(&row).sqrt(); // a length in [1, √p]
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
/// the last token, S_N: (m, p).
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
) -> Result<(), InputError> {
    check_write(memory, v, k)?;
    check_write(memory, v, alpha)?; // one gate per feature
    finite_number("beta", beta)?;
    finite_number("omega", omega)?;
    *memory *= &alpha.view().insert_axis(Axis(0)); // column j times α_j
    let u = &v.view() * omega - memory.dot(k) * beta; // what is written
    fast_weight_write(memory, &u, k)
}
// ANCHOR_END: rule_step

// ANCHOR: rule_recurrent
/// Any rule of the family, token by token from S_0 = 0:
/// S_t = S_{t−1} H_t + B_t, y_t = S_t q_t. q, k: (N, p), v: (N, m).
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
        rule_step(&mut memory, &k.row(t), &v.row(t), &alpha, beta, omega)?;
        output.row_mut(t).assign(&memory.dot(&q.row(t))); // read
    }
    let (output, memory) = (finite("Y", output)?, finite("W", memory)?);
    Ok(RuleRead { output, memory })
}
// ANCHOR_END: rule_recurrent

// ANCHOR: cumulative_log_gates
/// λ_i = Σ_{j ≤ i} ln α_j within one chunk: log_alpha: (C, p) → λ: (C, p).
/// The decay from token j to token i ≥ j is exp(λ_i − λ_j) ∈ [0, 1].
pub fn cumulative_log_gates(log_alpha: &ArrayRef2<f64>) -> Array2<f64> {
    let mut g = log_alpha.to_owned();
    g.accumulate_axis_inplace(Axis(0), |&before, now| *now += before);
    g
}
// ANCHOR_END: cumulative_log_gates

// ANCHOR: decayed_scores
/// Scores of a chunk weighted by the decay between the tokens:
/// M_ij = Σ_c a_ic b_jc exp(λ_ic − λ_jc) for j ≤ i (j < i if `strict`),
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
/// One chunk of any rule, from the memory S_0 before it. With λ the
/// chunk's cumulative log-gates, Γ_i = exp(λ_i), P = decayed K Kᵀ (j < i):
/// (I + diag(β) P) U = diag(ω) V − diag(β) (Γ ⊙ K) S_0ᵀ,
/// Y = (Γ ⊙ Q) S_0ᵀ + decayed Q Kᵀ (j ≤ i) U,
/// S ← S_0 diag(Γ_C) + Uᵀ (K ⊙ exp(λ_C − λ)).
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

/// Random q, k: (N, p) and v: (N, m) for the rules (keys of any length).
pub fn random_qkv(seed: u64, n: usize, p: usize, m: usize) -> [Array2<f64>; 3] {
    let mut rng = seeded(seed);
    [
        randn(&mut rng, n, p),
        randn(&mut rng, n, p),
        randn(&mut rng, n, m),
    ]
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
/// ‖S_N k_i − v_i(latest)‖ over the n keys (a memory that returns 0 scores
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

// ANCHOR: fading_signal
/// What is left of one association after later writes: W holds v₁ k₁ᵀ,
/// and each later token applies its transition H_t but not its input
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
            rule_step(&mut w, &k.row(t), &v.row(t), &alpha, c.beta[t], omega)
                .expect("the study's own shapes agree");
            v.row(0).dot(&w.dot(&k.row(0))) / c.omega[0] // share of v₁ at k₁
        })
        .collect()
}
// ANCHOR_END: fading_signal

#[cfg(test)]
mod tests;
