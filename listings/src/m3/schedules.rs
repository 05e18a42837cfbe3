//! Chapter "Two faces of one computation": one causal function and three
//! schedules for it. The parallel form builds the masked N × N scores, the
//! recurrent form carries S: (m, p) and z: (p) one token at a time, and the
//! chunkwise form does both: a masked product inside each chunk of C
//! tokens, the carried state between chunks. Then why they agree (the
//! state's Jacobian is the identity), what chunking needs in general (an
//! update affine in the state), what each one holds, how long each one
//! takes on the machine that builds the book, and the backward pass with a
//! fixed state.
//!
//! Shapes: phi_q, phi_k: (N, p), v: (N, m); outputs O: (N, m).

use crate::causal::causal_scores;
use crate::input::{
    InputError, check_chunk, check_features, check_qkv, finite,
    nonempty_finite, normalisers, same_cols, same_rows,
};
use crate::m3::cost::{
    bytes, fixed_state_floats, group_digits, score_matrix_floats,
};
use crate::m3::delete_softmax::{
    Memory, linear_attention_memory_first, linear_attention_scores_first,
    sequence_memory,
};
use crate::m3::fast_weight_memory::{
    fast_weight_write, linear_attention_parallel, linear_attention_recurrent,
};
use crate::measure::{Clock, Machine, time_once};
use crate::phi::elu_plus_one;
use crate::random::{randn, seeded};
use crate::table::Table;
use ndarray::{Array1, Array2, ArrayRef2, Axis, s};
use std::fmt;

// ANCHOR: chunk_step
/// One chunk of c tokens, given the memory S: (m, p) and z: (p) of every
/// earlier chunk:
/// O = (Φ_Q Sᵀ + tril(Φ_Q Φ_Kᵀ) V) / (Φ_Q z + tril(Φ_Q Φ_Kᵀ) 1),
/// then S ← S + Vᵀ Φ_K and z ← z + Φ_Kᵀ 1.
/// phi_q, phi_k: (c, p), v: (c, m); returns O: (c, m).
pub fn chunk_step(
    memory: &mut Memory,
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<Array2<f64>, InputError> {
    let scores = causal_scores(phi_q, phi_k); // inside the chunk: (c, c)
    let numerator = phi_q.dot(&memory.s.t()) + scores.dot(v); // (c, m)
    let denominator = phi_q.dot(&memory.z) + scores.sum_axis(Axis(1));
    normalisers("z_tᵀφ(q_t)", &denominator)?; // every one > 0
    let written = sequence_memory(phi_k, v); // this chunk's writes
    memory.s += &written.s;
    memory.z += &written.z;
    finite("O", numerator / denominator.insert_axis(Axis(1)))
}
// ANCHOR_END: chunk_step

// ANCHOR: linear_attention_chunkwise
/// Causal linear attention in chunks of `chunk` tokens (the last chunk may
/// be shorter), carrying S and z from chunk to chunk.
/// phi_q, phi_k: (N, p), v: (N, m), chunk ≥ 1; returns O: (N, m).
pub fn linear_attention_chunkwise(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    chunk: usize,
) -> Result<Array2<f64>, InputError> {
    check_features(phi_q, phi_k, v, true)?;
    check_chunk(chunk)?;
    let (n, p, m) = (phi_q.nrows(), phi_q.ncols(), v.ncols());
    let mut memory = Memory {
        s: Array2::zeros((m, p)), // S_0 = 0
        z: Array1::zeros(p),      // z_0 = 0
    };
    let mut o = Array2::zeros((n, m));
    for start in (0..n).step_by(chunk) {
        let rows = s![start..(start + chunk).min(n), ..];
        let (q, k) = (phi_q.slice(rows), phi_k.slice(rows));
        let out = chunk_step(&mut memory, &q, &k, &v.slice(rows))
            .map_err(|e| e.below(start))?;
        o.slice_mut(rows).assign(&out);
    }
    Ok(o)
}
// ANCHOR_END: linear_attention_chunkwise

/// Lengths, chunk sizes and seeds of the chapter's chunkwise table.
pub const CHUNKWISE_LENGTHS: [usize; 4] = [1, 12, 100, 1000];
pub const CHUNKWISE_CHUNKS: [usize; 4] = [1, 7, 64, 4096];
pub const CHUNKWISE_SEEDS: u64 = 3;

/// The chapter's chunkwise table.
pub fn chapter_chunkwise_table() -> ChunkwiseTable {
    chunkwise_study(&CHUNKWISE_LENGTHS, &CHUNKWISE_CHUNKS, CHUNKWISE_SEEDS)
}

/// The chapter's memory table: N from 2⁸ to 2¹⁶, four times longer from
/// row to row; p = m = 32, chunks of 64, floats of 8 bytes.
pub fn chapter_memory_table() -> MemoryTable {
    let lengths = [1 << 8, 1 << 10, 1 << 12, 1 << 14, 1 << 16];
    memory_table(&lengths, 32, 32, 64, 8)
}

/// The chunkwise form against the other two: for each length and each
/// chunk size, the largest row-relative difference over the seeds from
/// the recurrent form and from the parallel form (φ = elu+1, random
/// q, k: (N, 8), v: (N, 8)).
pub struct ChunkwiseTable {
    pub seeds: u64,
    pub chunks: Vec<usize>,
    /// (N, differences for each chunk size).
    pub rows: Vec<(usize, Vec<f64>)>,
}

/// Run the chunkwise form at every length and chunk size, seeds 0..seeds.
pub fn chunkwise_study(
    lengths: &[usize],
    chunks: &[usize],
    seeds: u64,
) -> ChunkwiseTable {
    use crate::linalg::worst_row_relative_difference as gap;
    let rows = lengths
        .iter()
        .map(|&n| {
            let mut worst = vec![0.0_f64; chunks.len()];
            for seed in 0..seeds {
                let mut rng = seeded(seed);
                let phi_q = elu_plus_one(&randn(&mut rng, n, 8));
                let phi_k = elu_plus_one(&randn(&mut rng, n, 8));
                let v = randn(&mut rng, n, 8);
                let rec = linear_attention_recurrent(&phi_q, &phi_k, &v)
                    .expect("shapes agree");
                let par = linear_attention_parallel(&phi_q, &phi_k, &v)
                    .expect("shapes agree");
                for (w, &c) in worst.iter_mut().zip(chunks) {
                    let o = linear_attention_chunkwise(&phi_q, &phi_k, &v, c)
                        .expect("shapes agree, c ≥ 1");
                    *w = w.max(gap(&o, &rec)).max(gap(&o, &par));
                }
            }
            (n, worst)
        })
        .collect();
    ChunkwiseTable {
        seeds,
        chunks: chunks.to_vec(),
        rows,
    }
}

impl fmt::Display for ChunkwiseTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "phi = elu+1, d = m = 8, seeds 0..{}; largest |row difference| / \
             |row|\nof the chunkwise form from the recurrent and the \
             parallel forms",
            self.seeds
        )?;
        let mut table = Table::new().right("N", 6);
        for c in &self.chunks {
            table = table.right(&format!("C = {c}"), 9);
        }
        for (n, worst) in &self.rows {
            let cells = worst.iter().map(|w| format!("{w:.1e}"));
            table.row(std::iter::once(n.to_string()).chain(cells));
        }
        write!(f, "{table}")
    }
}

// ANCHOR: state_jacobian
/// The Jacobian ∂S_t/∂S_{t−1} of a state update S_t = step(S_{t−1}), by
/// central differences: column (a, b) is
/// (step(S + h E_ab) − step(S − h E_ab)) / 2h, for E_ab the matrix with a
/// single 1 at (a, b). s: (m, p); returns J: (mp, mp), indices row-major.
pub fn state_jacobian(
    step: impl Fn(&Array2<f64>) -> Array2<f64>,
    s: &ArrayRef2<f64>,
    h: f64,
) -> Array2<f64> {
    let (m, p) = s.dim();
    let mut jacobian = Array2::zeros((m * p, m * p));
    for (col, mut column) in jacobian.columns_mut().into_iter().enumerate() {
        let (mut up, mut down) = (s.to_owned(), s.to_owned());
        up[[col / p, col % p]] += h;
        down[[col / p, col % p]] -= h;
        let change = (step(&up) - step(&down)) / (2.0 * h);
        column.assign(&Array1::from_iter(change.iter().copied()));
    }
    jacobian
}
// ANCHOR_END: state_jacobian

// ANCHOR: linear_attention_parallel_backward
/// The gradients of a loss through causal linear attention, given the
/// loss's gradient G = ∂L/∂O: (N, m). Scores A = tril(Φ_Q Φ_Kᵀ),
/// denominators d = A 1, O = diag(1/d) A V.
pub struct Gradients {
    pub phi_q: Array2<f64>,
    pub phi_k: Array2<f64>,
    pub v: Array2<f64>,
}

/// Backward through the parallel form, holding the N × N scores:
/// Ḡ = diag(1/d) G, c = −rowsum(Ḡ ⊙ O), ∂A = tril(Ḡ Vᵀ + c 1ᵀ),
/// then ∂Φ_Q = ∂A Φ_K, ∂Φ_K = ∂Aᵀ Φ_Q, ∂V = Aᵀ Ḡ.
pub fn linear_attention_parallel_backward(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    grad_o: &ArrayRef2<f64>,
) -> Result<Gradients, InputError> {
    check_qkv(phi_q, phi_k, v, true)?;
    check_grad_o(grad_o, v)?;
    let a = causal_scores(phi_q, phi_k); // (N, N)
    let d = a.sum_axis(Axis(1)).insert_axis(Axis(1)); // (N, 1)
    let o = a.dot(v) / &d;
    let g_bar = &grad_o.view() / &d; // ∂L/∂(numerator)
    let c = -(&g_bar * &o).sum_axis(Axis(1)); // ∂L/∂d, per row
    let mut grad_a = g_bar.dot(&v.t()) + c.insert_axis(Axis(1));
    grad_a.indexed_iter_mut().for_each(|((t, j), x)| {
        if j > t {
            *x = 0.0; // the future's scores were never used
        }
    });
    Ok(Gradients {
        phi_q: grad_a.dot(phi_k),
        phi_k: grad_a.t().dot(phi_q),
        v: a.t().dot(&g_bar),
    })
}
// ANCHOR_END: linear_attention_parallel_backward

// ANCHOR: linear_attention_backward
/// Backward through the recurrence with a fixed state (Katharopoulos et
/// al. 2020, §3.3.1). Forward over t for the queries:
/// ∂φ(q_t) = S_tᵀ ḡ_t + c_t z_t. Backward over t for keys and values,
/// carrying R = Σ_{τ≥t} ḡ_τ φ(q_τ)ᵀ and r = Σ_{τ≥t} c_τ φ(q_τ):
/// ∂φ(k_t) = Rᵀ v_t + r, ∂v_t = R φ(k_t), undoing each write of S and z
/// on the way back. Here ḡ_t = g_t / d_t, c_t = −ḡ_t · o_t.
pub fn linear_attention_backward(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    grad_o: &ArrayRef2<f64>,
) -> Result<Gradients, InputError> {
    check_qkv(phi_q, phi_k, v, true)?;
    check_grad_o(grad_o, v)?;
    let (n, p, m) = (phi_q.nrows(), phi_q.ncols(), v.ncols());
    let mut grads = Gradients {
        phi_q: Array2::zeros((n, p)),
        phi_k: Array2::zeros((n, p)),
        v: Array2::zeros((n, m)),
    };
    // ḡ_t and c_t from the state S_t, z_t that token t read.
    let pull = |s: &Array2<f64>, z: &Array1<f64>, t: usize| {
        let (q, d) = (phi_q.row(t), z.dot(&phi_q.row(t)));
        let g_bar = &grad_o.row(t) / d;
        let c = -g_bar.dot(&s.dot(&q)) / d; // −ḡ_t · o_t
        (g_bar, c)
    };
    let (mut s, mut z) = (Array2::zeros((m, p)), Array1::zeros(p));
    for t in 0..n {
        fast_weight_write(&mut s, &v.row(t), &phi_k.row(t)); // S_t
        z += &phi_k.row(t); // z_t
        let (g_bar, c) = pull(&s, &z, t);
        let grad_q = s.t().dot(&g_bar) + &z * c;
        grads.phi_q.row_mut(t).assign(&grad_q);
    }
    let (mut r_mat, mut r) = (Array2::zeros((m, p)), Array1::zeros(p));
    for t in (0..n).rev() {
        let (g_bar, c) = pull(&s, &z, t); // S, z are S_t, z_t here
        fast_weight_write(&mut r_mat, &g_bar, &phi_q.row(t)); // R += ḡ φ(q)ᵀ
        r.scaled_add(c, &phi_q.row(t)); // r += c φ(q)
        let grad_k = r_mat.t().dot(&v.row(t)) + &r;
        grads.phi_k.row_mut(t).assign(&grad_k);
        grads.v.row_mut(t).assign(&r_mat.dot(&phi_k.row(t)));
        fast_weight_write(&mut s, &(-&v.row(t)), &phi_k.row(t)); // undo
        z -= &phi_k.row(t);
    }
    Ok(grads)
}
// ANCHOR_END: linear_attention_backward

/// One gradient per output: grad_o has the shape of v, and is finite.
pub(crate) fn check_grad_o(
    grad_o: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
) -> Result<(), InputError> {
    nonempty_finite("grad_o", grad_o)?;
    same_rows(("grad_o", grad_o), ("v", v), "one gradient row per output")?;
    same_cols(("grad_o", grad_o), ("v", v), "one gradient row per output")
}

// ANCHOR: affine_step
/// One step of an affine recurrence, S_t = S_{t−1} A_t + B_t, whose
/// transition A_t and input B_t do not depend on the state.
/// a: (p, p), b: (m, p).
#[derive(Clone, Debug, PartialEq)]
pub struct AffineStep {
    pub a: Array2<f64>,
    pub b: Array2<f64>,
}

impl AffineStep {
    /// S ↦ S A + B. s: (m, p).
    pub fn apply(&self, s: &ArrayRef2<f64>) -> Array2<f64> {
        s.dot(&self.a) + &self.b
    }

    /// This step, then `next`: S ↦ (S A₁ + B₁) A₂ + B₂, which is one
    /// step again, with transition A₁ A₂ and input B₁ A₂ + B₂.
    pub fn then(&self, next: &AffineStep) -> AffineStep {
        AffineStep {
            a: self.a.dot(&next.a),
            b: self.b.dot(&next.a) + &next.b,
        }
    }
}
// ANCHOR_END: affine_step

// ANCHOR: affine_chunkwise
/// Run an affine recurrence from S_0 in chunks of `chunk` steps: fold each
/// chunk's steps into one, then apply it. Returns the state after each
/// chunk. steps: A_t (p, p), B_t (m, p); s0: (m, p); chunk ≥ 1.
pub fn affine_chunkwise(
    steps: &[AffineStep],
    s0: &ArrayRef2<f64>,
    chunk: usize,
) -> Vec<Array2<f64>> {
    assert!(chunk > 0, "a chunk holds at least one step");
    let mut state = s0.to_owned();
    let mut states = Vec::new();
    for group in steps.chunks(chunk) {
        let folded = group[1..]
            .iter()
            .fold(group[0].clone(), |acc, step| acc.then(step));
        state = folded.apply(&state); // one step per chunk
        states.push(state.clone());
    }
    states
}
// ANCHOR_END: affine_chunkwise

/// The two header lines of a table with one column per form: the
/// non-causal and causal groups, then N (in a column `first` wide) and the
/// forms' names.
fn form_table(
    f: &mut fmt::Formatter<'_>,
    first: usize,
) -> Result<Table, fmt::Error> {
    let titles =
        format!("{:>first$}  {:^26}  {:^40}", "", "non-causal", "causal");
    writeln!(f, "{}", titles.trim_end())?;
    let mut table = Table::new().right("N", first);
    for form in FORMS {
        table = table.right(form.name(), 12);
    }
    Ok(table)
}

/// A schedule of linear attention that the timing study measures.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Form {
    /// Non-causal, (Φ_Q Φ_Kᵀ) V: builds N × N scores.
    ScoresFirst,
    /// Non-causal, Φ_Q (Φ_Kᵀ V): builds S once.
    MemoryFirst,
    /// Causal, tril(Φ_Q Φ_Kᵀ) V: builds N × N scores.
    Parallel,
    /// Causal, one token at a time, carrying S and z.
    Recurrent,
    /// Causal, chunks of C tokens, carrying S and z between chunks.
    Chunkwise,
}

/// Every form, in the order the tables and the figure show them.
pub const FORMS: [Form; 5] = [
    Form::ScoresFirst,
    Form::MemoryFirst,
    Form::Parallel,
    Form::Recurrent,
    Form::Chunkwise,
];

impl Form {
    /// A short name for tables and legends.
    pub fn name(self) -> &'static str {
        match self {
            Form::ScoresFirst => "scores first",
            Form::MemoryFirst => "memory first",
            Form::Parallel => "parallel N×N",
            Form::Recurrent => "recurrent",
            Form::Chunkwise => "chunkwise",
        }
    }

    /// Whether query t sees only keys j ≤ t.
    pub fn causal(self) -> bool {
        !matches!(self, Form::ScoresFirst | Form::MemoryFirst)
    }

    /// Run this form on φ(Q), φ(K), V (chunk size `chunk` if chunkwise).
    pub fn run(
        self,
        phi_q: &ArrayRef2<f64>,
        phi_k: &ArrayRef2<f64>,
        v: &ArrayRef2<f64>,
        chunk: usize,
    ) -> Result<Array2<f64>, InputError> {
        match self {
            Form::ScoresFirst => linear_attention_scores_first(phi_q, phi_k, v),
            Form::MemoryFirst => linear_attention_memory_first(phi_q, phi_k, v),
            Form::Parallel => linear_attention_parallel(phi_q, phi_k, v),
            Form::Recurrent => linear_attention_recurrent(phi_q, phi_k, v),
            Form::Chunkwise => {
                linear_attention_chunkwise(phi_q, phi_k, v, chunk)
            }
        }
    }

    /// Floats the form holds besides its inputs and its outputs: the
    /// N × N scores, or the state S: (m, p) and z: (p), plus the c × c
    /// scores of one chunk for the chunkwise form.
    pub fn working_floats(self, n: u64, p: u64, m: u64, chunk: u64) -> u64 {
        match self {
            Form::ScoresFirst | Form::Parallel => score_matrix_floats(n),
            Form::MemoryFirst | Form::Recurrent => fixed_state_floats(p, m),
            Form::Chunkwise => {
                score_matrix_floats(chunk.min(n)) + fixed_state_floats(p, m)
            }
        }
    }
}

/// One length of the memory table.
pub struct MemoryRow {
    pub n: u64,
    /// Floats held by each form of [`FORMS`], in order.
    pub floats: [u64; 5],
}

/// What each form holds as N grows: widths p and m, chunks of `chunk`.
pub struct MemoryTable {
    pub p: u64,
    pub m: u64,
    pub chunk: u64,
    pub bytes_per_float: u64,
    pub rows: Vec<MemoryRow>,
}

/// The memory table at each length, for floats of `bytes_per_float`.
pub fn memory_table(
    lengths: &[u64],
    p: u64,
    m: u64,
    chunk: u64,
    bytes_per_float: u64,
) -> MemoryTable {
    let rows = lengths
        .iter()
        .map(|&n| MemoryRow {
            n,
            floats: FORMS.map(|f| f.working_floats(n, p, m, chunk)),
        })
        .collect();
    MemoryTable {
        p,
        m,
        chunk,
        bytes_per_float,
        rows,
    }
}

impl fmt::Display for MemoryTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "bytes held besides inputs and outputs; p = {}, m = {}, C = {}, \
             {} bytes per float",
            self.p, self.m, self.chunk, self.bytes_per_float
        )?;
        let mut table = form_table(f, 9)?;
        for r in &self.rows {
            let cells =
                r.floats.iter().map(|&x| bytes(x * self.bytes_per_float));
            table.row(std::iter::once(group_digits(r.n)).chain(cells));
        }
        write!(f, "{table}")
    }
}

// ANCHOR: loglog_slope
/// The slope a of the least-squares line ln t = a ln N + b through the
/// points (N, t): a curve t ∝ N^a has slope a on log-log axes.
pub fn loglog_slope(points: &[(f64, f64)]) -> f64 {
    let logs: Vec<(f64, f64)> =
        points.iter().map(|&(n, t)| (n.ln(), t.ln())).collect();
    let count = logs.len() as f64;
    let mean_x = logs.iter().map(|p| p.0).sum::<f64>() / count;
    let mean_y = logs.iter().map(|p| p.1).sum::<f64>() / count;
    let covariance: f64 =
        logs.iter().map(|p| (p.0 - mean_x) * (p.1 - mean_y)).sum();
    let variance: f64 = logs.iter().map(|p| (p.0 - mean_x).powi(2)).sum();
    covariance / variance
}
// ANCHOR_END: loglog_slope

/// What the timing study runs: lengths, widths, chunk size, repetitions.
pub struct TimingConfig {
    pub lengths: &'static [usize],
    /// Width d of queries and keys (p = d with elu+1) and m of values.
    pub d: usize,
    pub m: usize,
    pub chunk: usize,
    /// Each form runs this many times at each length; the study keeps the
    /// median.
    pub reps: usize,
    pub seed: u64,
}

/// The timing study of the chapter: small enough to run in about a second
/// while the book builds.
pub const TIMING: TimingConfig = TimingConfig {
    lengths: &[256, 512, 1024, 2048],
    d: 32,
    m: 32,
    chunk: 64,
    reps: 3,
    seed: 0,
};

/// One length of the timing study.
pub struct TimingRow {
    pub n: usize,
    /// Median seconds of each form of [`FORMS`], in order.
    pub seconds: [f64; 5],
}

/// Every form timed at every length, side by side in one run.
pub struct TimingStudy {
    pub d: usize,
    pub m: usize,
    pub chunk: usize,
    pub reps: usize,
    pub seed: u64,
    pub clock: Clock,
    pub machine: Machine,
    pub rows: Vec<TimingRow>,
}

impl TimingStudy {
    /// The points (N, seconds) of one form.
    pub fn curve(&self, form: Form) -> Vec<(f64, f64)> {
        let i = FORMS.iter().position(|&f| f == form).expect("in FORMS");
        self.rows
            .iter()
            .map(|r| (r.n as f64, r.seconds[i]))
            .collect()
    }

    /// The fitted log-log slope of one form's curve.
    pub fn slope(&self, form: Form) -> f64 {
        loglog_slope(&self.curve(form))
    }

    /// Time of `slow` over time of `fast` at the largest length.
    pub fn ratio_at_largest_n(&self, slow: Form, fast: Form) -> f64 {
        let last = |f| self.curve(f).last().map_or(f64::NAN, |p| p.1);
        last(slow) / last(fast)
    }
}

/// Time every form at every length of `config` on the same random inputs
/// (φ = elu+1, computed before any clock starts) on this thread, and keep
/// the median of each (see [`timing_rows`]).
pub fn timing_study(config: &TimingConfig) -> TimingStudy {
    let clock = Clock::best();
    let rows = timing_rows(config, |form, [phi_q, phi_k, v]| {
        time_once(clock, || {
            form.run(phi_q, phi_k, v, config.chunk)
                .expect("the shapes agree")
        })
    });
    TimingStudy {
        d: config.d,
        m: config.m,
        chunk: config.chunk,
        reps: config.reps,
        seed: config.seed,
        clock,
        machine: Machine::now(),
        rows,
    }
}

/// The rows of the timing study, with `time` timing one call of a form on
/// the inputs of one length. The study runs `reps` rounds, and each round
/// times every form at every length once, in turn, so that a slow moment
/// of the machine touches one sample of many cells rather than every
/// sample of one; each cell keeps the median of its `reps` samples.
pub fn timing_rows(
    config: &TimingConfig,
    mut time: impl FnMut(Form, &[Array2<f64>; 3]) -> f64,
) -> Vec<TimingRow> {
    let inputs: Vec<[Array2<f64>; 3]> = config
        .lengths
        .iter()
        .map(|&n| {
            let mut rng = seeded(config.seed);
            let phi_q = elu_plus_one(&randn(&mut rng, n, config.d));
            let phi_k = elu_plus_one(&randn(&mut rng, n, config.d));
            [phi_q, phi_k, randn(&mut rng, n, config.m)]
        })
        .collect();
    let mut samples = vec![[(); 5].map(|_| Vec::new()); inputs.len()];
    for _ in 0..config.reps {
        for (qkv, cells) in inputs.iter().zip(&mut samples) {
            for (&form, times) in FORMS.iter().zip(cells) {
                times.push(time(form, qkv));
            }
        }
    }
    config
        .lengths
        .iter()
        .zip(&samples)
        .map(|(&n, cells)| TimingRow {
            n,
            seconds: [0, 1, 2, 3, 4].map(|i| median(&cells[i])),
        })
        .collect()
}

fn median(xs: &[f64]) -> f64 {
    crate::summary::Spread::of(xs).median
}

impl TimingStudy {
    /// Where, when and how the study was measured, on two lines.
    pub fn provenance(&self) -> String {
        format!(
            "measured {} on {} ({} cores), one thread;\n{}, median of {} runs",
            self.machine.date,
            self.machine.cpu,
            self.machine.cores,
            self.clock.describe(),
            self.reps
        )
    }
}

impl fmt::Display for TimingStudy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "phi = elu+1, d = p = {}, m = {}, C = {}, seed {}",
            self.d, self.m, self.chunk, self.seed
        )?;
        writeln!(f, "{}", self.provenance())?;
        writeln!(f, "milliseconds per call")?;
        let mut table = form_table(f, 7)?;
        for r in &self.rows {
            let cells = r.seconds.iter().map(|s| format!("{:.3}", s * 1e3));
            table.row(std::iter::once(r.n.to_string()).chain(cells));
        }
        write!(f, "{table}")?;
        let (first, last) = (
            self.rows.first().map_or(0, |r| r.n),
            self.rows.last().map_or(0, |r| r.n),
        );
        write!(f, "\nslope of log time against log N, N = {first}..{last}:")?;
        write!(f, "\n{:>7}", "")?;
        for form in FORMS {
            write!(f, "  {:>12.2}", self.slope(form))?;
        }
        let ratio = |slow, fast| self.ratio_at_largest_n(slow, fast);
        write!(
            f,
            "\nat N = {last}: scores first takes {:.0}x the time of memory \
             first;\nparallel N×N takes {:.0}x the time of recurrent, {:.0}x \
             the time of chunkwise",
            ratio(Form::ScoresFirst, Form::MemoryFirst),
            ratio(Form::Parallel, Form::Recurrent),
            ratio(Form::Parallel, Form::Chunkwise)
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::linalg::worst_row_relative_difference;
    use crate::m3::fast_weight_memory::fast_weight_write;
    use approx::assert_relative_eq;

    fn random(seed: u64, n: usize, p: usize, m: usize) -> [Array2<f64>; 3] {
        let mut rng = seeded(seed);
        let phi_q = elu_plus_one(&randn(&mut rng, n, p));
        let phi_k = elu_plus_one(&randn(&mut rng, n, p));
        [phi_q, phi_k, randn(&mut rng, n, m)]
    }

    /// Lengths from one token to a couple of thousand, most of them not a
    /// multiple of the chunk sizes below.
    const LENGTHS: [usize; 10] = [1, 2, 3, 7, 16, 33, 64, 100, 513, 2000];

    /// Chunk sizes from one token to more than the longest sequence.
    const CHUNKS: [usize; 7] = [1, 2, 3, 8, 64, 100, 4096];

    #[test]
    fn chunkwise_form_equals_recurrent_and_parallel_forms() {
        for (i, &n) in LENGTHS.iter().enumerate() {
            let seeds = if n > 500 { 2 } else { 5 };
            let (p, m) = ([8, 4, 16][i % 3], [8, 1, 5][i % 3]);
            for seed in 0..seeds {
                let [phi_q, phi_k, v] = random(seed, n, p, m);
                let rec =
                    linear_attention_recurrent(&phi_q, &phi_k, &v).unwrap();
                let par =
                    linear_attention_parallel(&phi_q, &phi_k, &v).unwrap();
                for chunk in CHUNKS {
                    let chunked =
                        linear_attention_chunkwise(&phi_q, &phi_k, &v, chunk)
                            .unwrap();
                    assert_eq!(chunked.dim(), (n, m));
                    for other in [&rec, &par] {
                        assert_relative_eq!(
                            chunked,
                            *other,
                            max_relative = 1e-10,
                            epsilon = 1e-12
                        );
                        let gap =
                            worst_row_relative_difference(&chunked, other);
                        assert!(gap < 1e-12, "N {n}, C {chunk}: {gap:e}");
                    }
                }
            }
        }
    }

    #[test]
    fn one_chunk_of_the_whole_sequence_is_the_parallel_form() {
        // With C ≥ N there is one chunk and S = 0 when it is read: the same
        // operations as the parallel form, bit for bit.
        for seed in 0..5 {
            for n in [1, 5, 64, 300] {
                let [phi_q, phi_k, v] = random(seed, n, 6, 3);
                let par =
                    linear_attention_parallel(&phi_q, &phi_k, &v).unwrap();
                for chunk in [n, n + 1, 10 * n] {
                    let one =
                        linear_attention_chunkwise(&phi_q, &phi_k, &v, chunk)
                            .unwrap();
                    assert_eq!(one, par, "N = {n}, C = {chunk}");
                }
            }
        }
    }

    #[test]
    fn state_after_each_chunk_is_the_memory_of_the_prefix() {
        // Associativity: whatever the chunk boundaries, the carried S and z
        // are the sums of the writes of every token so far.
        for (seed, (n, p, m)) in
            (0..5).flat_map(|s| [(50, 5, 4), (23, 8, 1)].map(|x| (s, x)))
        {
            for chunk in [1, 3, 7, 16, 64] {
                let [phi_q, phi_k, v] = random(seed, n, p, m);
                let mut memory = Memory {
                    s: Array2::zeros((m, p)),
                    z: Array1::zeros(p),
                };
                for start in (0..n).step_by(chunk) {
                    let end = (start + chunk).min(n);
                    let rows = s![start..end, ..];
                    chunk_step(
                        &mut memory,
                        &phi_q.slice(rows),
                        &phi_k.slice(rows),
                        &v.slice(rows),
                    )
                    .unwrap();
                    let prefix = s![..end, ..];
                    let want =
                        sequence_memory(&phi_k.slice(prefix), &v.slice(prefix));
                    assert_relative_eq!(memory.s, want.s, max_relative = 1e-12);
                    assert_relative_eq!(memory.z, want.z, max_relative = 1e-12);
                }
            }
        }
    }

    #[test]
    fn chunkwise_form_is_causal() {
        for (seed, t) in (0..5).flat_map(|s| [0, 7, 21, 38].map(|t| (s, t))) {
            let [phi_q, phi_k, v] = random(seed, 40, 6, 3);
            let [_, other_k, other_v] = random(seed + 100, 40, 6, 3);
            // replace every key and value after position t
            let (mut k2, mut v2) = (phi_k.clone(), v.clone());
            k2.slice_mut(s![t + 1.., ..])
                .assign(&other_k.slice(s![t + 1.., ..]));
            v2.slice_mut(s![t + 1.., ..])
                .assign(&other_v.slice(s![t + 1.., ..]));
            for chunk in [1, 4, 8, 40] {
                let before =
                    linear_attention_chunkwise(&phi_q, &phi_k, &v, chunk)
                        .unwrap();
                let after = linear_attention_chunkwise(&phi_q, &k2, &v2, chunk)
                    .unwrap();
                assert_eq!(
                    before.slice(s![..=t, ..]),
                    after.slice(s![..=t, ..])
                );
                assert_ne!(before.row(t + 1), after.row(t + 1));
            }
        }
    }

    #[test]
    fn chunk_of_zero_tokens_is_an_error() {
        let [phi_q, phi_k, v] = random(0, 10, 4, 2);
        let err =
            linear_attention_chunkwise(&phi_q, &phi_k, &v, 0).unwrap_err();
        let msg = err.to_string();
        assert!(msg.contains("chunk is 0"), "{msg}");
        assert!(msg.contains("at least one token"), "{msg}");
        // ... and bad shapes are reported as by the other forms.
        let short = randn(&mut seeded(1), 9, 2);
        let msg = linear_attention_chunkwise(&phi_q, &phi_k, &short, 4)
            .unwrap_err()
            .to_string();
        assert!(msg.contains("k is [10, 4]") && msg.contains("v is [9, 2]"));
        let e = Array2::<f64>::zeros((0, 4));
        assert!(matches!(
            linear_attention_chunkwise(&e, &e, &e, 4),
            Err(InputError::Empty { .. })
        ));
    }

    #[test]
    fn causal_scores_are_zero_above_the_diagonal_and_phi_q_phi_k_below() {
        for seed in 0..5 {
            let [phi_q, phi_k, _] = random(seed, 9, 4, 1);
            let scores = causal_scores(&phi_q, &phi_k);
            for ((t, j), &s) in scores.indexed_iter() {
                if j > t {
                    assert_eq!(s, 0.0);
                } else {
                    let want = phi_q.row(t).dot(&phi_k.row(j));
                    assert_relative_eq!(s, want, max_relative = 1e-14);
                }
            }
        }
    }

    /// S_t = S_{t−1} + v_t φ(k_t)ᵀ as a function of S_{t−1}.
    fn write_step(
        v: &ArrayRef2<f64>,
        phi_k: &ArrayRef2<f64>,
        t: usize,
    ) -> impl Fn(&Array2<f64>) -> Array2<f64> {
        let (v, k) = (v.row(t).to_owned(), phi_k.row(t).to_owned());
        move |s| {
            let mut s = s.clone();
            fast_weight_write(&mut s, &v, &k);
            s
        }
    }

    #[test]
    fn state_jacobian_of_the_write_is_the_identity() {
        for seed in 0..5 {
            for (p, m) in [(1, 1), (4, 3), (8, 8)] {
                let [_, phi_k, v] = random(seed, 20, p, m);
                let mut rng = seeded(seed + 10);
                for t in [0, 7, 19] {
                    // at any state, not just the one the sequence reaches
                    let s = randn(&mut rng, m, p) * 10.0;
                    let j = state_jacobian(write_step(&v, &phi_k, t), &s, 1e-3);
                    let eye = Array2::<f64>::eye(m * p);
                    assert_relative_eq!(j, eye, epsilon = 1e-9);
                }
            }
        }
    }

    #[test]
    fn state_jacobian_over_many_steps_is_still_the_identity() {
        // ∂S_t/∂S_0 is a product of identities: a change to the state moves
        // every later state by exactly that change, however long ago. So
        // S_t is S_0 plus the sum of the writes.
        for seed in 0..5 {
            for n in [1, 37, 200] {
                let [_, phi_k, v] = random(seed, n, 4, 3);
                let steps = |s: &Array2<f64>| {
                    (0..n).fold(s.clone(), |s, t| write_step(&v, &phi_k, t)(&s))
                };
                let s0 = randn(&mut seeded(seed + 20), 3, 4) * 5.0;
                let j = state_jacobian(steps, &s0, 1e-3);
                let eye = Array2::<f64>::eye(12);
                assert_relative_eq!(j, eye, epsilon = 1e-8);
                let writes = sequence_memory(&phi_k, &v).s;
                assert_relative_eq!(
                    steps(&s0),
                    &s0 + &writes,
                    max_relative = 1e-12,
                    epsilon = 1e-12
                );
            }
        }
    }

    /// L = Σ G ⊙ O for the recurrent form: a loss whose gradient with
    /// respect to O is G.
    fn weighted_output(
        phi_q: &Array2<f64>,
        phi_k: &Array2<f64>,
        v: &Array2<f64>,
        g: &Array2<f64>,
    ) -> f64 {
        (linear_attention_recurrent(phi_q, phi_k, v).unwrap() * g).sum()
    }

    #[test]
    fn the_backward_pass_matches_central_differences() {
        let h = 1e-6;
        for seed in 0..4 {
            for (n, p, m) in [(1, 1, 1), (5, 3, 2), (9, 4, 3)] {
                let [q, k, v] = random(seed, n, p, m);
                let g = randn(&mut seeded(seed + 7), n, m);
                let grads = linear_attention_backward(&q, &k, &v, &g).unwrap();
                let inputs = [&q, &k, &v];
                let analytic = [&grads.phi_q, &grads.phi_k, &grads.v];
                for (which, want) in analytic.iter().enumerate() {
                    for ((i, j), &dx) in want.indexed_iter() {
                        let nudged = |delta: f64| {
                            let mut x = inputs.map(|a| a.clone());
                            x[which][[i, j]] += delta;
                            weighted_output(&x[0], &x[1], &x[2], &g)
                        };
                        let numeric = (nudged(h) - nudged(-h)) / (2.0 * h);
                        assert_relative_eq!(
                            dx,
                            numeric,
                            max_relative = 1e-5,
                            epsilon = 1e-7
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_fixed_state_backward_equals_the_parallel_forms_gradient() {
        for seed in 0..4 {
            for (n, p, m) in [(1, 2, 1), (7, 4, 3), (100, 8, 5), (513, 6, 4)] {
                let [q, k, v] = random(seed, n, p, m);
                let g = randn(&mut seeded(seed + 7), n, m);
                let fixed = linear_attention_backward(&q, &k, &v, &g).unwrap();
                let parallel =
                    linear_attention_parallel_backward(&q, &k, &v, &g).unwrap();
                for (a, b) in [
                    (&fixed.phi_q, &parallel.phi_q),
                    (&fixed.phi_k, &parallel.phi_k),
                    (&fixed.v, &parallel.v),
                ] {
                    // Relative to the largest gradient entry: the first
                    // query's gradient is zero (o_1 = v_1 whatever q_1).
                    let scale = [&parallel.phi_q, &parallel.phi_k, &parallel.v]
                        .iter()
                        .map(|m| m.fold(0.0_f64, |x, y| x.max(y.abs())))
                        .fold(0.0, f64::max);
                    let gap = (a - b).fold(0.0_f64, |x, y| x.max(y.abs()));
                    assert!(gap <= 1e-10 * scale, "N {n} seed {seed}: {gap:e}");
                }
            }
        }
    }

    #[test]
    fn a_gradient_of_the_wrong_shape_is_an_error() {
        let [q, k, v] = random(0, 6, 3, 2);
        let g = randn(&mut seeded(1), 6, 3);
        for run in [
            linear_attention_backward,
            linear_attention_parallel_backward,
        ] {
            let msg = run(&q, &k, &v, &g).err().unwrap().to_string();
            assert!(msg.contains("grad_o is [6, 3]"), "{msg}");
        }
    }

    /// Random affine steps, far from the identity: A_t = −I/2 plus a
    /// random matrix of entries N(0, 0.36/p) (not diagonal, some of its
    /// eigenvalues negative), B_t random. p: state width, m: state height.
    fn affine_steps(
        seed: u64,
        n: usize,
        m: usize,
        p: usize,
    ) -> Vec<AffineStep> {
        let mut rng = seeded(seed);
        let spread = 0.6 / (p as f64).sqrt();
        (0..n)
            .map(|_| AffineStep {
                a: Array2::eye(p) * -0.5 + randn(&mut rng, p, p) * spread,
                b: randn(&mut rng, m, p),
            })
            .collect()
    }

    /// ‖A − I‖ / ‖I‖ in the Frobenius norm.
    fn distance_from_identity(a: &Array2<f64>) -> f64 {
        let eye = Array2::<f64>::eye(a.nrows());
        let norm =
            |x: &Array2<f64>| x.iter().map(|y| y * y).sum::<f64>().sqrt();
        norm(&(a - &eye)) / norm(&eye)
    }

    #[test]
    fn two_affine_steps_are_one_affine_step() {
        for seed in 0..10 {
            for (m, p) in [(1, 1), (3, 4), (5, 8)] {
                let steps = affine_steps(seed, 2, m, p);
                let s = randn(&mut seeded(seed + 50), m, p);
                let in_turn = steps[1].apply(&steps[0].apply(&s));
                let folded = steps[0].then(&steps[1]).apply(&s);
                assert_relative_eq!(
                    folded,
                    in_turn,
                    max_relative = 1e-12,
                    epsilon = 1e-12
                );
            }
        }
    }

    #[test]
    fn any_affine_recurrence_gives_the_same_states_in_any_chunks() {
        // Chunks of 1 are the recurrence; every chunk size lands on the same
        // state at each chunk boundary, whatever the transitions are, and
        // so do groups of uneven sizes; folding is associative.
        for seed in 0..5 {
            for (n, m, p) in [(1, 2, 3), (17, 3, 4), (40, 2, 6)] {
                let steps = affine_steps(seed, n, m, p);
                for step in &steps {
                    let far = distance_from_identity(&step.a);
                    assert!(far > 1.0, "seed {seed}: {far}");
                }
                let s0 = randn(&mut seeded(seed + 50), m, p);
                let each = affine_chunkwise(&steps, &s0, 1);
                let close = |a: &Array2<f64>, b: &Array2<f64>| {
                    assert_relative_eq!(
                        *a,
                        *b,
                        max_relative = 1e-10,
                        epsilon = 1e-10
                    );
                };
                // Uneven groups: cut after random steps, fold each group.
                let mut rng = seeded(seed + 70);
                let mut state = s0.clone();
                let mut start = 0;
                while start < n {
                    let len = 1
                        + (randn(&mut rng, 1, 1)[[0, 0]].abs() * 4.0) as usize;
                    let end = (start + len).min(n);
                    let group = &steps[start..end];
                    let folded = group[1..]
                        .iter()
                        .fold(group[0].clone(), |acc, step| acc.then(step));
                    state = folded.apply(&state);
                    close(&state, &each[end - 1]);
                    start = end;
                }
                // (A then B) then C is A then (B then C).
                if n >= 3 {
                    let left = steps[0].then(&steps[1]).then(&steps[2]);
                    let right = steps[0].then(&steps[1].then(&steps[2]));
                    close(&left.a, &right.a);
                    close(&left.b, &right.b);
                }
                for c in [1, 2, 3, 8, 64] {
                    let chunked = affine_chunkwise(&steps, &s0, c);
                    assert_eq!(chunked.len(), n.div_ceil(c));
                    for (i, state) in chunked.iter().enumerate() {
                        let t = ((i + 1) * c).min(n) - 1; // last step of chunk i
                        assert_relative_eq!(
                            *state,
                            each[t],
                            max_relative = 1e-10,
                            epsilon = 1e-10
                        );
                    }
                }
            }
        }
    }

    #[test]
    fn the_sum_rule_is_the_affine_step_with_the_identity_transition() {
        for seed in 0..5 {
            let [_, phi_k, v] = random(seed, 6, 4, 3);
            let mut s = randn(&mut seeded(seed), 3, 4);
            for t in 0..6 {
                let mut b = Array2::zeros((3, 4));
                fast_weight_write(&mut b, &v.row(t), &phi_k.row(t));
                let step = AffineStep {
                    a: Array2::eye(4),
                    b,
                };
                let want = step.apply(&s);
                fast_weight_write(&mut s, &v.row(t), &phi_k.row(t));
                assert_eq!(s, want);
            }
        }
    }

    #[test]
    fn an_affine_steps_jacobian_is_the_same_at_every_state_but_need_not_be_the_identity()
     {
        // What chunking needs: the update is affine in the state, so its
        // Jacobian does not depend on the state. The tanh step's does.
        for seed in 0..5 {
            let step = affine_steps(seed, 1, 3, 4).remove(0);
            let (s1, s2) = (
                randn(&mut seeded(seed + 1), 3, 4) * 3.0,
                randn(&mut seeded(seed + 2), 3, 4) * 3.0,
            );
            let j1 = state_jacobian(|s| step.apply(s), &s1, 1e-5);
            let j2 = state_jacobian(|s| step.apply(s), &s2, 1e-5);
            assert_relative_eq!(j1, j2, epsilon = 1e-8);
            // Fixed by A alone: ∂S_t[a, b] / ∂S_{t−1}[a', b'] = δ_aa' A[b', b],
            // whatever B is.
            let mut want = Array2::<f64>::zeros((12, 12));
            for ((row, col), x) in want.indexed_iter_mut() {
                let ((a, b), (a2, b2)) =
                    ((row / 4, row % 4), (col / 4, col % 4));
                if a == a2 {
                    *x = step.a[[b2, b]];
                }
            }
            assert_relative_eq!(j1, want, epsilon = 1e-8);
            assert!(
                (&j1 - &Array2::<f64>::eye(12))
                    .iter()
                    .any(|x| x.abs() > 1e-3)
            );
            let squashed = |s: &Array2<f64>| step.apply(s).mapv(f64::tanh);
            let t1 = state_jacobian(squashed, &s1, 1e-5);
            let t2 = state_jacobian(squashed, &s2, 1e-5);
            assert!((&t1 - &t2).iter().any(|x| x.abs() > 1e-3));
        }
    }

    #[test]
    fn a_tanh_recurrence_has_a_jacobian_that_shrinks_step_by_step() {
        // S_t = tanh(S_{t−1} + v_t φ(k_t)ᵀ): the Jacobian is diagonal with
        // entries 1 − tanh² < 1, and over many steps their product fades.
        for seed in 0..5 {
            let [_, phi_k, v] = random(seed, 50, 4, 3);
            let steps = |t_end: usize| {
                let (v, phi_k) = (v.clone(), phi_k.clone());
                move |s: &Array2<f64>| {
                    (0..t_end).fold(s.clone(), |s, t| {
                        write_step(&v, &phi_k, t)(&s).mapv(f64::tanh)
                    })
                }
            };
            let start = randn(&mut seeded(seed + 30), 3, 4);
            for s0 in [Array2::zeros((3, 4)), start] {
                let one = state_jacobian(steps(1), &s0, 1e-6);
                let many = state_jacobian(steps(50), &s0, 1e-6);
                let largest =
                    |j: &Array2<f64>| j.fold(0.0_f64, |a, &b| a.max(b.abs()));
                assert!(largest(&one) < 1.0, "seed {seed}");
                let faded = largest(&many);
                assert!(faded < 1e-3, "seed {seed}: {faded}");
                // A diagonal: a step moves each entry of S only through
                // itself, by a factor 1 − tanh² in (0, 1).
                for j in [&one, &many] {
                    for ((r, c), &x) in j.indexed_iter() {
                        assert!(r == c || x.abs() < 1e-8, "seed {seed}: {x:e}");
                    }
                }
                assert!(one.diag().iter().all(|&x| x > 0.0 && x < 1.0));
            }
        }
    }

    #[test]
    fn a_decayed_write_has_jacobian_a_times_the_identity() {
        // S_t = a S_{t−1} + v_t φ(k_t)ᵀ: still linear, Jacobian a I.
        for seed in 0..5 {
            let [_, phi_k, v] = random(seed, 10, 4, 3);
            for a in [0.5, 0.9, 1.0] {
                let step =
                    |s: &Array2<f64>| write_step(&v, &phi_k, 3)(&(s * a));
                let s = randn(&mut seeded(seed), 3, 4);
                let j = state_jacobian(step, &s, 1e-3);
                let want = Array2::<f64>::eye(12) * a;
                assert_relative_eq!(j, want, epsilon = 1e-9);
            }
        }
    }

    #[test]
    fn a_decayed_recurrence_is_a_masked_product_with_decay_factors() {
        // Unrolled, token j reaches S_t scaled by a^{t−j}: the same outputs
        // come from the parallel form with mask entries a^{t−j} for j ≤ t,
        // the structured mask of state space duality (Dao & Gu 2024).
        // With a factor a_t per step, the entry is a_{j+1} ⋯ a_t; with
        // every a_t = 1, the mask of ones of linear attention.
        for seed in 0..5 {
            for n in [1, 7, 60] {
                let [phi_q, phi_k, v] = random(seed, n, 5, 3);
                let noise = randn(&mut seeded(seed + 40), n, 1);
                let varying: Vec<f64> = noise
                    .iter()
                    .map(|x| 0.5 + 0.5 / (1.0 + (-x).exp()))
                    .collect();
                let cases = [
                    ("a", vec![0.8; n]),
                    ("a_t", varying),
                    ("1", vec![1.0; n]),
                ];
                for (kind, factors) in cases {
                    let mut s_t = Array2::<f64>::zeros((3, 5));
                    let mut recurrent = Array2::<f64>::zeros((n, 3));
                    for (t, &a_t) in factors.iter().enumerate() {
                        s_t *= a_t;
                        fast_weight_write(&mut s_t, &v.row(t), &phi_k.row(t));
                        recurrent.row_mut(t).assign(&s_t.dot(&phi_q.row(t)));
                    }
                    let mut scores = phi_q.dot(&phi_k.t());
                    for ((t, j), x) in scores.indexed_iter_mut() {
                        let l: f64 =
                            factors[(j + 1).min(t + 1)..=t].iter().product();
                        *x *= if j <= t { l } else { 0.0 };
                    }
                    if kind == "a" {
                        // constant a: entries a^{t−j}
                        for ((t, j), x) in scores.indexed_iter() {
                            if j <= t {
                                let want = phi_q.row(t).dot(&phi_k.row(j))
                                    * 0.8_f64.powi((t - j) as i32);
                                assert_relative_eq!(
                                    *x,
                                    want,
                                    max_relative = 1e-12
                                );
                            }
                        }
                    }
                    if kind == "1" {
                        assert_eq!(scores, causal_scores(&phi_q, &phi_k));
                    }
                    assert_relative_eq!(
                        recurrent,
                        scores.dot(&v),
                        max_relative = 1e-10,
                        epsilon = 1e-12
                    );
                }
            }
        }
    }

    #[test]
    fn a_decayed_recurrence_can_be_computed_in_chunks() {
        // Chunk of c tokens, memory S of the earlier chunks: query i reads
        // a^{i+1} S φ(q_i) + Σ_{j≤i} a^{i−j} (φ(q_i)ᵀφ(k_j)) v_j, and the
        // chunk passes on a^c S + Σ_j a^{c−1−j} v_j φ(k_j)ᵀ.
        let cases = [0.5, 0.9].into_iter().flat_map(|a: f64| {
            (0..5).flat_map(move |seed| [1, 3, 8, 64].map(|c| (a, seed, c)))
        });
        for (a, seed, chunk) in cases {
            let n = 50;
            let [phi_q, phi_k, v] = random(seed, n, 5, 3);
            let mut s_t = Array2::<f64>::zeros((3, 5));
            let mut recurrent = Array2::<f64>::zeros((n, 3));
            for t in 0..n {
                s_t *= a;
                fast_weight_write(&mut s_t, &v.row(t), &phi_k.row(t));
                recurrent.row_mut(t).assign(&s_t.dot(&phi_q.row(t)));
            }
            let mut memory = Array2::<f64>::zeros((3, 5));
            let mut chunked = Array2::<f64>::zeros((n, 3));
            for start in (0..n).step_by(chunk) {
                let c = chunk.min(n - start);
                let rows = s![start..start + c, ..];
                let (q, k, vc) =
                    (phi_q.slice(rows), phi_k.slice(rows), v.slice(rows));
                let mut scores = causal_scores(&q, &k);
                for ((i, j), x) in scores.indexed_iter_mut() {
                    *x *= a.powi(i as i32 - j as i32);
                }
                let mut out = scores.dot(&vc);
                for i in 0..c {
                    let carried = memory.dot(&q.row(i)) * a.powi(i as i32 + 1);
                    out.row_mut(i).scaled_add(1.0, &carried);
                }
                chunked.slice_mut(rows).assign(&out);
                memory *= a.powi(c as i32);
                for j in 0..c {
                    let weight = a.powi((c - 1 - j) as i32);
                    fast_weight_write(
                        &mut memory,
                        &(&vc.row(j) * weight),
                        &k.row(j),
                    );
                }
            }
            assert_relative_eq!(
                chunked,
                recurrent,
                max_relative = 1e-10,
                epsilon = 1e-12
            );
        }
    }

    #[test]
    fn loglog_slope_recovers_the_exponent_of_a_power_law() {
        for exponent in [0.0, 1.0, 2.0, 2.5] {
            for scale in [1e-9, 1.0, 3e4] {
                let points: Vec<(f64, f64)> = [64.0, 256.0, 1000.0, 4096.0]
                    .iter()
                    .map(|&n: &f64| (n, scale * n.powf(exponent)))
                    .collect();
                let a = loglog_slope(&points);
                assert!((a - exponent).abs() < 1e-12, "{a} vs {exponent}");
            }
        }
        // Noise of up to a tenth on each time, at the study's lengths,
        // moves the slope of a quadratic (or a line) by less than an
        // eighth. The slope is linear in the logarithms of the noise, so
        // its largest change is at a corner: each time 0.9 or 1.1 times
        // its value. A tenth would not bound it.
        let lengths = TIMING.lengths;
        for exponent in [1.0, 2.0] {
            let mut worst = 0.0_f64;
            for corner in 0..1 << lengths.len() {
                let noisy: Vec<(f64, f64)> = lengths
                    .iter()
                    .enumerate()
                    .map(|(i, &n)| {
                        let wobble = [0.9, 1.1][(corner >> i) & 1];
                        let n = n as f64;
                        (n, 1e-9 * n.powf(exponent) * wobble)
                    })
                    .collect();
                let moved = (loglog_slope(&noisy) - exponent).abs();
                worst = worst.max(moved);
            }
            assert!(worst < 0.125, "{worst}");
            assert!(worst > 0.1, "{worst}");
        }
    }

    #[test]
    fn parallel_forms_hold_n_squared_and_the_others_a_fixed_state() {
        // The chapter's table, and one that doubles N from row to row.
        let doubling = memory_table(&[1 << 8, 1 << 9, 1 << 10], 16, 8, 32, 4);
        for table in [chapter_memory_table(), doubling] {
            for pair in table.rows.windows(2) {
                let (a, b) = (&pair[0], &pair[1]);
                let factor = b.n / a.n;
                assert!(factor > 1 && b.n == factor * a.n);
                for (i, form) in FORMS.iter().enumerate() {
                    match form {
                        Form::ScoresFirst | Form::Parallel => {
                            let grown = factor * factor * a.floats[i];
                            assert_eq!(b.floats[i], grown);
                        }
                        _ => assert_eq!(b.floats[i], a.floats[i], "{form:?}"),
                    }
                }
            }
        }
    }

    #[test]
    fn working_floats_count_what_the_forms_build() {
        // The scores each form builds and the state it carries, as arrays.
        for (n, p, m, chunk) in [(10, 4, 3, 4), (64, 8, 8, 16), (5, 2, 6, 8)] {
            let [phi_q, phi_k, v] = random(0, n, p, m);
            let (n64, p64, m64, c64) =
                (n as u64, p as u64, m as u64, chunk as u64);
            let held = |form: Form| form.working_floats(n64, p64, m64, c64);
            let full = causal_scores(&phi_q, &phi_k).len() as u64;
            assert_eq!(held(Form::Parallel), full);
            let unmasked = phi_q.dot(&phi_k.t()).len() as u64;
            assert_eq!(held(Form::ScoresFirst), unmasked);
            let memory = sequence_memory(&phi_k, &v);
            let state = (memory.s.len() + memory.z.len()) as u64;
            assert_eq!(held(Form::Recurrent), state);
            assert_eq!(held(Form::MemoryFirst), state);
            let c = chunk.min(n);
            let rows = s![..c, ..];
            let one_chunk =
                causal_scores(&phi_q.slice(rows), &phi_k.slice(rows)).len();
            let chunked = Form::Chunkwise.working_floats(n64, p64, m64, c64);
            assert_eq!(chunked, one_chunk as u64 + state);
        }
    }

    #[test]
    fn every_form_runs_and_the_causal_ones_agree() {
        let [phi_q, phi_k, v] = random(3, 200, 8, 8);
        let rec = Form::Recurrent.run(&phi_q, &phi_k, &v, 16).unwrap();
        for form in FORMS {
            let o = form.run(&phi_q, &phi_k, &v, 16).unwrap();
            assert_eq!(o.dim(), (200, 8));
            if form.causal() {
                assert!(worst_row_relative_difference(&o, &rec) < 1e-12);
            } else {
                // Non-causal: every query reads all keys, so only the last
                // row can match the causal forms.
                assert!(worst_row_relative_difference(&o, &rec) > 1e-3);
                assert_relative_eq!(
                    o.row(199),
                    rec.row(199),
                    max_relative = 1e-10
                );
            }
        }
    }

    #[test]
    fn both_forms_compute_the_formula_at_every_position() {
        // o_t = Σ_{j≤t} (φ(q_t)ᵀφ(k_j)) v_j / Σ_{j≤t} φ(q_t)ᵀφ(k_j), summed
        // term by term.
        for seed in 0..5 {
            for (n, p, m) in [(1, 1, 1), (9, 4, 3), (40, 8, 5)] {
                let [phi_q, phi_k, v] = random(seed, n, p, m);
                let mut want = Array2::<f64>::zeros((n, m));
                for t in 0..n {
                    let (mut num, mut den) = (Array1::<f64>::zeros(m), 0.0);
                    for j in 0..=t {
                        let score = phi_q.row(t).dot(&phi_k.row(j));
                        num.scaled_add(score, &v.row(j));
                        den += score;
                    }
                    want.row_mut(t).assign(&(num / den));
                }
                let rec =
                    linear_attention_recurrent(&phi_q, &phi_k, &v).unwrap();
                let par =
                    linear_attention_parallel(&phi_q, &phi_k, &v).unwrap();
                for o in [rec, par] {
                    let gap = worst_row_relative_difference(&o, &want);
                    assert!(gap < 1e-12, "N {n} seed {seed}: {gap:e}");
                }
            }
        }
    }

    #[test]
    fn a_score_times_a_value_is_the_outer_product_times_the_query() {
        // (φ(q_t)ᵀφ(k_j)) v_j = v_j φ(k_j)ᵀ φ(q_t), and summed over j ≤ t
        // the query can be applied last, to S_t.
        for seed in 0..5 {
            for (n, p, m) in [(1, 1, 1), (12, 4, 3), (30, 8, 8)] {
                let [phi_q, phi_k, v] = random(seed, n, p, m);
                let mut s_t = Array2::<f64>::zeros((m, p));
                for t in 0..n {
                    fast_weight_write(&mut s_t, &v.row(t), &phi_k.row(t));
                    let mut by_scores = Array1::<f64>::zeros(m);
                    for j in 0..=t {
                        let score = phi_q.row(t).dot(&phi_k.row(j));
                        let scalar_first = &v.row(j) * score;
                        let mut outer = Array2::<f64>::zeros((m, p));
                        fast_weight_write(&mut outer, &v.row(j), &phi_k.row(j));
                        let outer_first = outer.dot(&phi_q.row(t));
                        assert_relative_eq!(
                            scalar_first,
                            outer_first,
                            max_relative = 1e-12,
                            epsilon = 1e-14
                        );
                        by_scores += &scalar_first;
                    }
                    assert_relative_eq!(
                        by_scores,
                        s_t.dot(&phi_q.row(t)),
                        max_relative = 1e-10,
                        epsilon = 1e-12
                    );
                }
            }
        }
    }

    #[test]
    fn undoing_the_writes_recovers_every_earlier_state() {
        // What the backward sweep does: subtract v_t φ(k_t)ᵀ and φ(k_t) from
        // the final S and z, and S_{t−1}, z_{t−1} are there again, to
        // rounding.
        for seed in 0..4 {
            for (n, p, m) in [(1, 2, 1), (30, 5, 4), (300, 8, 8)] {
                let [_, phi_k, v] = random(seed, n, p, m);
                let (mut s, mut z) = (Array2::zeros((m, p)), Array1::zeros(p));
                let mut states = vec![(s.clone(), z.clone())];
                for t in 0..n {
                    fast_weight_write(&mut s, &v.row(t), &phi_k.row(t));
                    z += &phi_k.row(t);
                    states.push((s.clone(), z.clone()));
                }
                let scale = 1.0 + s.fold(0.0_f64, |a, &b| a.max(b.abs()));
                for t in (0..n).rev() {
                    fast_weight_write(&mut s, &(-&v.row(t)), &phi_k.row(t));
                    z -= &phi_k.row(t);
                    let (s_before, z_before) = &states[t];
                    assert_relative_eq!(s, *s_before, epsilon = 1e-13 * scale);
                    assert_relative_eq!(z, *z_before, epsilon = 1e-13 * scale);
                }
            }
        }
    }

    #[test]
    fn folding_writes_gives_the_identity_and_a_plain_sum() {
        // With A_t = I the folded transition is I again, exactly, and the
        // folded input is the sum of the writes.
        for seed in 0..5 {
            for (n, p, m) in [(1, 3, 2), (5, 4, 3), (40, 8, 5)] {
                let [_, phi_k, v] = random(seed, n, p, m);
                let steps: Vec<AffineStep> = (0..n)
                    .map(|t| {
                        let mut b = Array2::zeros((m, p));
                        fast_weight_write(&mut b, &v.row(t), &phi_k.row(t));
                        AffineStep {
                            a: Array2::eye(p),
                            b,
                        }
                    })
                    .collect();
                let folded = steps[1..]
                    .iter()
                    .fold(steps[0].clone(), |acc, step| acc.then(step));
                assert_eq!(folded.a, Array2::<f64>::eye(p));
                assert_relative_eq!(
                    folded.b,
                    sequence_memory(&phi_k, &v).s,
                    max_relative = 1e-12,
                    epsilon = 1e-12
                );
            }
        }
    }

    #[test]
    fn the_chunkwise_table_shows_only_rounding() {
        // The printed study itself, every cell: the first column is C = 1,
        // and no cell is more than rounding.
        let table = chapter_chunkwise_table();
        assert_eq!(table.chunks[0], 1);
        assert_eq!(table.rows.len(), CHUNKWISE_LENGTHS.len());
        for (n, worst) in &table.rows {
            assert_eq!(worst.len(), CHUNKWISE_CHUNKS.len());
            for (w, c) in worst.iter().zip(&table.chunks) {
                assert!(*w < 1e-12, "N {n}, C {c}: {w:e}");
            }
        }
    }

    /// A timing config small enough for the fake clocks below.
    fn tiny_config(reps: usize) -> TimingConfig {
        TimingConfig {
            lengths: &[3, 8, 20],
            d: 4,
            m: 2,
            chunk: 4,
            reps,
            seed: 1,
        }
    }

    #[test]
    fn the_timing_study_times_every_form_at_every_length_in_rounds_on_one_thread()
     {
        // A fake clock records each call: the order, the inputs, the thread.
        for reps in [1, 3, 5] {
            let config = tiny_config(reps);
            let here = std::thread::current().id();
            let mut calls = Vec::new();
            timing_rows(&config, |form, qkv| {
                assert_eq!(std::thread::current().id(), here);
                let n = qkv[0].nrows();
                calls.push((form, n, qkv[0].as_ptr() as usize));
                1.0
            });
            // Round after round, each round every length, every form.
            let mut want = Vec::new();
            for _ in 0..reps {
                for &n in config.lengths {
                    for form in FORMS {
                        want.push((form, n));
                    }
                }
            }
            let order: Vec<(Form, usize)> =
                calls.iter().map(|&(f, n, _)| (f, n)).collect();
            assert_eq!(order, want);
            // The same inputs for every form and round at a length.
            for &n in config.lengths {
                let mut inputs = calls.iter().filter(|c| c.1 == n).map(|c| c.2);
                let first = inputs.next().unwrap();
                assert!(inputs.all(|p| p == first), "N {n}");
            }
        }
    }

    #[test]
    fn the_timing_study_keeps_the_median_so_a_busy_moment_spoils_one_sample_of_a_cell()
     {
        let config = tiny_config(3);
        let cells = config.lengths.len() * FORMS.len();
        // A clean time for each cell, a little noise from round to round.
        let clean = |form: Form, n: usize, round: usize| {
            let i = FORMS.iter().position(|&f| f == form).unwrap();
            (n * 10 + i) as f64 * (1.0 + 0.01 * round as f64)
        };
        let run = |busy: std::ops::Range<usize>| {
            let mut call = 0;
            timing_rows(&config, |form, qkv| {
                let t = clean(form, qkv[0].nrows(), call / cells);
                let slow = if busy.contains(&call) { 1e6 } else { 1.0 };
                call += 1;
                t * slow
            })
        };
        let quiet = run(0..0);
        // The median of the three rounds is the middle round's time.
        for row in &quiet {
            for (i, &form) in FORMS.iter().enumerate() {
                assert_eq!(row.seconds[i], clean(form, row.n, 1));
            }
        }
        // A busy moment as long as a round, wherever it falls, spoils at
        // most one sample of each cell: every median is still one of the
        // clean samples' times.
        let in_clean_range = |rows: &[TimingRow]| {
            rows.iter().all(|row| {
                FORMS.iter().zip(&row.seconds).all(|(&form, &x)| {
                    clean(form, row.n, 0) <= x && x <= clean(form, row.n, 2)
                })
            })
        };
        assert!(in_clean_range(&quiet));
        for start in 0..2 * cells {
            let busy = run(start..start + cells);
            assert!(in_clean_range(&busy), "busy from call {start}");
        }
        // One twice as long spoils two samples of some cell, whose median
        // is then a spoiled time.
        let busy = run(cells / 2..cells / 2 + 2 * cells);
        assert!(!in_clean_range(&busy));
    }

    #[test]
    fn the_printed_slopes_are_the_fits_of_the_printed_times() {
        // Exact power laws from a fake clock: N² for the forms that build
        // the scores, N for the others; the slope line prints each fit.
        let config = TimingConfig {
            lengths: &[16, 32, 64, 128],
            ..tiny_config(3)
        };
        for (quadratic, linear) in [(2.0, 1.0), (1.7, 1.2)] {
            let rows = timing_rows(&config, |form, qkv| {
                let n = qkv[0].nrows() as f64;
                match form {
                    Form::ScoresFirst | Form::Parallel => {
                        1e-9 * n.powf(quadratic)
                    }
                    _ => 1e-7 * n.powf(linear),
                }
            });
            let study = TimingStudy {
                d: config.d,
                m: config.m,
                chunk: config.chunk,
                reps: config.reps,
                seed: config.seed,
                clock: Clock::best(),
                machine: Machine::now(),
                rows,
            };
            let printed = study.to_string();
            let lines: Vec<&str> = printed.lines().collect();
            let at = lines
                .iter()
                .position(|l| l.starts_with("slope of log time"))
                .expect("a slope line");
            let slopes: Vec<f64> = lines[at + 1]
                .split_whitespace()
                .map(|x| x.parse().unwrap())
                .collect();
            assert_eq!(slopes.len(), FORMS.len());
            for (&form, &printed) in FORMS.iter().zip(&slopes) {
                let want = match form {
                    Form::ScoresFirst | Form::Parallel => quadratic,
                    _ => linear,
                };
                assert!((printed - want).abs() < 0.006, "{form:?}: {printed}");
                assert_eq!(
                    format!("{printed:.2}"),
                    format!("{:.2}", study.slope(form))
                );
            }
            // And it says which clock it read, how many rounds, one thread.
            assert!(printed.contains(study.clock.describe()), "{printed}");
            assert!(printed.contains("median of 3 runs"), "{printed}");
            assert!(printed.contains("one thread"), "{printed}");
        }
    }

    #[test]
    fn the_study_reads_the_thread_clock_which_does_not_count_time_not_running()
    {
        // Where the system has a CPU clock per thread the study reads it,
        // and a thread that sleeps is not running: the clock barely moves.
        let clock = Clock::best();
        assert_eq!(crate::studies::measured_timing().clock, clock);
        if cfg!(unix) {
            assert_eq!(clock, Clock::ThreadCpu);
        }
        if clock == Clock::ThreadCpu {
            let nap = std::time::Duration::from_millis(50);
            let asleep = time_once(clock, || std::thread::sleep(nap));
            assert!(asleep < 0.01, "{asleep}");
            let awake = time_once(Clock::Wall, || std::thread::sleep(nap));
            assert!(awake >= 0.05, "{awake}");
            let busy = time_once(clock, || {
                (0..200_000u64).map(|x| x ^ 7).sum::<u64>()
            });
            assert!(busy > 0.0);
        }
    }

    #[test]
    fn linear_work_beats_quadratic_work_by_any_constant_factor_at_long_enough_lengths()
     {
        // The counted work of the parallel form over that of the recurrent
        // form grows in proportion to N: whatever the factor, some length
        // passes it, and every longer length stays past it.
        use crate::appendix::speed::{Timed, arithmetic};
        for (p, m) in [(8, 8), (32, 32), (64, 16)] {
            let ratio = |n: usize| {
                arithmetic(Timed::Parallel, n, p, m, 1)
                    / arithmetic(Timed::Recurrent, n, p, m, 1)
            };
            for factor in [1.0, 10.0, 1000.0] {
                let from = (1..1 << 20)
                    .find(|&n| ratio(n) > factor)
                    .expect("a length past the factor");
                for n in [from, from + 1, 2 * from, 1000 * from] {
                    assert!(ratio(n) > factor, "p {p} m {m} N {n}");
                }
                let doubled = ratio(2 * from) / ratio(from);
                assert!((doubled - 2.0).abs() < 1e-12, "{doubled}");
            }
        }
    }

    #[test]
    fn counted_work_grows_as_n_squared_for_the_score_forms_and_as_n_for_the_others()
     {
        // The operations each of the five timed forms performs (counted on
        // its f32 twin by Appendix E's tests), at the timing study's
        // lengths, widths and chunk size.
        use crate::appendix::speed::{Timed, arithmetic};
        let timed = |form: Form| match form {
            Form::ScoresFirst => Timed::ScoresFirst,
            Form::MemoryFirst => Timed::MemoryFirst,
            Form::Parallel => Timed::Parallel,
            Form::Recurrent => Timed::Recurrent,
            Form::Chunkwise => Timed::Chunkwise,
        };
        let (p, m, c) = (TIMING.d, TIMING.m, TIMING.chunk);
        for pair in TIMING.lengths.windows(2) {
            let (a, b) = (pair[0], pair[1]);
            let x = b as f64 / a as f64;
            for form in FORMS {
                let ops = |n| arithmetic(timed(form), n, p, m, c);
                let grown = ops(b) / ops(a);
                let want = match form {
                    Form::ScoresFirst | Form::Parallel => x * x,
                    _ => x,
                };
                assert!((grown - want).abs() < 1e-12, "{form:?}: {grown}");
            }
        }
    }
}
