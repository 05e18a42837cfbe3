//! The update rules of "After the paper" at f32, for the benchmark: the
//! recurrence, one token at a time in place with nothing allocated in the
//! loop, and the chunkwise form, whose products go to sgemm. Each computes
//! what `after::family::rule_recurrent` computes, to f32 precision.

use super::simd::{axpy_body, dot_lanes, exps, lns};
use super::{general_mat_mul, row_major, slice};
use crate::after::family::Rule;
use crate::input::{InputError, check_chunk, finite};
use ndarray::{
    Array1, Array2, ArrayRef2, ArrayView1, ArrayView2, ArrayViewMut2, Axis,
    CowArray, Ix2, Zip, s,
};

/// A rule's gates as the f32 forms take them.
enum Gates<'a> {
    /// One gate per token: ln α at f32, (N, 1).
    PerToken(Array2<f32>),
    /// A gate per token and feature: α itself, (N, p), whose logarithms
    /// each form takes where it needs them (the chunkwise form a chunk at
    /// a time, so that no (N, p) copy is made).
    PerFeature(&'a Array2<f64>),
}

impl Gates<'_> {
    /// ln α at f32 for the rows `at`: (rows, p) or (rows, 1).
    fn logs(&self, at: std::ops::Range<usize>) -> CowArray<'_, f32, Ix2> {
        match self {
            Gates::PerToken(l) => CowArray::from(l.slice(s![at, ..])),
            Gates::PerFeature(a) => CowArray::from(lns(&a.slice(s![at, ..]))),
        }
    }
}

/// The checked coefficients at f32: the gates, β and ω, (N), rounded.
type Coefficients<'a> = (Gates<'a>, Array1<f32>, Array1<f32>);

/// Check q, k, v and the rule's coefficients, and round them to f32.
fn prepare_f32<'a>(
    rule: &'a Rule,
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Coefficients<'a>, InputError> {
    crate::input::check_qkv(q, k, v, true)?;
    let (n, p) = k.dim();
    let f = |a: f64| a as f32;
    if let Rule::DiagonalGates(alpha) | Rule::Kda { alpha, .. } = rule {
        rule.check(n, p)?;
        let (beta, omega) = match rule {
            Rule::Kda { beta, .. } => (beta.mapv(f), beta.mapv(f)),
            _ => (Array1::zeros(n), Array1::ones(n)),
        };
        return Ok((Gates::PerFeature(alpha), beta, omega));
    }
    // One gate per token: one column of ln α, not p equal ones; the
    // coefficients are asked for at width 1, and a shape error names k's
    // true width.
    let c = rule.coefficients(n, 1).map_err(|e| match e {
        InputError::ShapeMismatch { left, right, rule } if left.0 == "k" => {
            let left = ("k", [n, p]);
            InputError::ShapeMismatch { left, right, rule }
        }
        other => other,
    })?;
    let log_alpha = Gates::PerToken(c.log_alpha.mapv(f));
    Ok((log_alpha, c.beta.mapv(f), c.omega.mapv(f)))
}

/// The rows of `x` scaled to unit length, written into `out` (same
/// shape); `first` is the row of `x` in the whole input, for the error a
/// row of length 0 gets. Squares in f64, so that no f32 square overflows,
/// in four running sums, which vectorise.
fn unit_rows_into(
    name: &'static str,
    x: ArrayView2<f32>,
    first: usize,
    mut out: ArrayViewMut2<f32>,
) -> Result<(), InputError> {
    for (t, (x, mut o)) in x.rows().into_iter().zip(out.rows_mut()).enumerate()
    {
        let x = x.to_slice().expect("a row of a standard-layout array");
        let o = o.as_slice_mut().expect("a row of a standard-layout array");
        let mut sums = [0.0f64; 4];
        let mut quads = x.chunks_exact(4);
        for x in &mut quads {
            for l in 0..4 {
                sums[l] += f64::from(x[l]) * f64::from(x[l]);
            }
        }
        let rest = quads.remainder().iter().map(|&a| f64::from(a));
        let len = sums.iter().sum::<f64>() + rest.map(|a| a * a).sum::<f64>();
        let len = crate::input::normaliser(name, first + t, len.sqrt())?;
        let inverse = 1.0 / len; // a product per entry, not a division
        o.iter_mut()
            .zip(x)
            .for_each(|(o, &a)| *o = (f64::from(a) * inverse) as f32);
    }
    Ok(())
}

/// q and k as the rule uses them: unit rows for the delta rules (a new
/// array), else borrowed, in standard layout.
fn keys_f32<'a>(
    rule: &Rule,
    x: &'a ArrayRef2<f32>,
    name: &'static str,
) -> Result<CowArray<'a, f32, Ix2>, InputError> {
    let x = x.as_standard_layout();
    if !rule.unit_keys() {
        return Ok(x);
    }
    let mut out = Array2::zeros(x.raw_dim());
    unit_rows_into(name, x.view(), 0, out.view_mut())?;
    Ok(CowArray::from(out))
}

/// Any rule of the family at f32, token by token: W: (m, p) row by row,
/// W ← W diag(α) + u kᵀ with u = ω v − β W diag(α) k; y_t = W q_t, each
/// token one call of [`rule_token`] on the current dispatch path.
/// q, k: (N, p), v: (N, m).
pub fn rule_recurrent_f32(
    rule: &Rule,
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
) -> Result<Array2<f32>, InputError> {
    let (gates, beta, omega) = prepare_f32(rule, q, k, v)?;
    let q = keys_f32(rule, q, "the length of q")?;
    let k = keys_f32(rule, k, "the length of k")?;
    let (n, p, m) = (k.nrows(), k.ncols(), v.ncols());
    // α at f32, from its logarithm as the chunkwise form takes it:
    // (N, p) for a gate per feature, else (N, 1).
    let alpha = gates.logs(0..n).mapv(f32::exp);
    let width = alpha.ncols(); // p, or 1: one gate for every feature
    let [q_all, k_all, v_all] = row_major(&q, &k, v);
    let (q_all, k_all, v_all) = (slice(&q_all), slice(&k_all), slice(&v_all));
    let alpha = alpha.as_slice().expect("a new array");
    let mut a_t = vec![0.0f32; p];
    let mut w = vec![0.0f32; m * p]; // W_0 = 0, row i is w[i p..(i + 1) p]
    let mut y = Array2::<f32>::zeros((n, m));
    let y_all = y.as_slice_mut().expect("a new array");
    for t in 0..n {
        let (q_t, k_t) = (&q_all[t * p..][..p], &k_all[t * p..][..p]);
        match width {
            1 => a_t.fill(alpha[t]),
            _ => a_t.copy_from_slice(&alpha[t * p..][..p]),
        }
        let (v_t, y_t) = (&v_all[t * m..][..m], &mut y_all[t * m..][..m]);
        rule_token(&mut w, &a_t, [q_t, k_t, v_t], [beta[t], omega[t]], y_t);
    }
    finite("Y", y)
}

dispatched! {
    /// `rule_token_body` on the current dispatch path.
    fn rule_token(
        w: &mut [f32],
        a: &[f32],
        qkv: [&[f32]; 3],
        beta_omega: [f32; 2],
        y: &mut [f32],
    ) = rule_token_body::<true>, else rule_token_body::<false>;
}

/// One token of any rule, W: (m, p) by rows w_i, in place: w_i ← w_i ⊙ α,
/// u_i = ω v_i − β w_iᵀk, w_i += u_i k, y_i = w_iᵀq. a, q, k: (p),
/// v, y: (m).
#[inline(always)]
fn rule_token_body<const FMA: bool>(
    w: &mut [f32],
    a: &[f32],
    [q, k, v]: [&[f32]; 3],
    [beta, omega]: [f32; 2],
    y: &mut [f32],
) {
    let p = k.len();
    for (w_i, (y_i, &v_i)) in w.chunks_exact_mut(p).zip(y.iter_mut().zip(v)) {
        w_i.iter_mut().zip(a).for_each(|(w, &a)| *w *= a);
        let u = omega * v_i - beta * dot_lanes::<FMA>(w_i, k);
        axpy_body(u, k, w_i);
        *y_i = dot_lanes::<FMA>(w_i, q);
    }
}

/// Any rule of the family at f32 in chunks of `chunk` tokens, as
/// `after::family::rule_chunk` computes each chunk (see `chunk_f32`).
pub fn rule_chunkwise_f32(
    rule: &Rule,
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    chunk: usize,
) -> Result<Array2<f32>, InputError> {
    check_chunk(chunk)?;
    let (gates, beta, omega) = prepare_f32(rule, q, k, v)?;
    let (n, p, m) = (k.nrows(), k.ncols(), v.ncols());
    let (q, k) = (q.as_standard_layout(), k.as_standard_layout());
    // The delta rules' unit rows, a chunk at a time into these buffers.
    let unit = rule.unit_keys();
    let mut unit_q = Array2::<f32>::zeros((chunk.min(n), p));
    let mut unit_k = unit_q.clone();
    let mut w = Array2::<f32>::zeros((m, p));
    let mut y = Array2::<f32>::zeros((n, m));
    for start in (0..n).step_by(chunk) {
        let end = (start + chunk).min(n);
        let (rows, at) = (s![start..end, ..], s![start..end]);
        let (mut qc, mut kc) = (q.slice(rows), k.slice(rows));
        if unit {
            let mut uq = unit_q.slice_mut(s![..end - start, ..]);
            unit_rows_into("the length of q", qc, start, uq.view_mut())?;
            let mut uk = unit_k.slice_mut(s![..end - start, ..]);
            unit_rows_into("the length of k", kc, start, uk.view_mut())?;
            qc = unit_q.slice(s![..end - start, ..]);
            kc = unit_k.slice(s![..end - start, ..]);
        }
        chunk_f32(
            &mut w,
            [qc, kc, v.slice(rows)],
            gates.logs(start..end).view(),
            [beta.slice(at), omega.slice(at)],
            y.slice_mut(rows),
        );
    }
    finite("Y", y)
}

/// The widest span of log-gates, in nats, that goes into a product of
/// exponentials: e^(g_i − g_j) = e^(g_i − g_r) e^(g_r − g_j) with both
/// factors in [e^−SPAN, e^SPAN], far inside f32's normal range, so the
/// product is the exponential of the difference to f32 precision.
pub(super) const SPAN: f64 = 30.0;

/// The sub-chunk of secondary chunking, in tokens, when a chunk's
/// log-gates span more than `SPAN`; also the block of the triangular
/// solve.
const SUB: usize = 16;

/// e^x at f32, for x ≤ SPAN; 0 below f32's normal range, which a
/// subnormal would only slow down and never change by a relative f32 step
/// in any sum it joins beside a decay of 1 (the diagonal's).
fn exp_f32(x: f64) -> f32 {
    let e = x.exp() as f32;
    if e < f32::MIN_POSITIVE { 0.0 } else { e }
}

/// One chunk of any rule of the family at f32, from the memory W before
/// it, as `after::family::rule_chunk` computes it: writes the chunk's
/// reads into `yc` and carries W to the chunk's end. [q, k, v] and
/// log_alpha: (C, p), or (C, 1) when a token's gates are all one (v:
/// (C, m)), [β, ω]: (C).
///
/// The decayed scores e^(g_i − g_j) (q_i or k_i) · k_j are matrix
/// products: with g_r the running log-gate sum at a reference token r
/// (i ≥ r ≥ j), of (Q ⊙ e^(G − g_r)) and (K ⊙ e^(g_r − G)). When the
/// chunk's gates span at most `SPAN`, the chunk's start is the reference
/// of every pair (one product); otherwise secondary chunking: sub-chunks
/// of `SUB` tokens, each pair of sub-chunks one product with the
/// reference at the later one's start (every exponent ≤ 0), and within a
/// sub-chunk one product again, or, past `SPAN`, a sum of exponentials.
pub(super) fn chunk_f32(
    w: &mut Array2<f32>,
    [qc, kc, vc]: [ArrayView2<f32>; 3],
    log_alpha: ArrayView2<f32>,
    [b, om]: [ArrayView1<f32>; 2],
    mut yc: ArrayViewMut2<f32>,
) {
    let (c, p, m) = (kc.nrows(), kc.ncols(), vc.ncols());
    // The running sums of log-gates stay in f64: at f32 a sum near
    // −10⁴ keeps only three decimals, and exp of a difference of two
    // such sums would lose what the gates between them say.
    let mut g = log_alpha.mapv(f64::from); // (C, p) or (C, 1)
    g.accumulate_axis_inplace(Axis(0), |&before, now| *now += before);
    let gamma = exps(&g, 1.0); // Γ = e^G, as wide as G, 0 past f32's range
    let mut kq = Array2::<f32>::zeros((2 * c, p)); // [Γ ⊙ K; Γ ⊙ Q]
    scale_rows(kq.slice_mut(s![..c, ..]), kc, &gamma);
    scale_rows(kq.slice_mut(s![c.., ..]), qc, &gamma);
    let last = g.row(c - 1).to_owned();
    let span = -last.fold(0.0f64, |lo, &x| lo.min(x));
    // The decayed scores [S; M]: S (j < i), M (j ≤ i); and K ⊙ e^(g_C − G).
    let mut sm = Array2::<f32>::zeros((2 * c, c));
    let mut k_to_end = Array2::<f32>::zeros((c, p));
    if span <= SPAN {
        // K ⊙ e^−G, every factor ≤ e^SPAN; then times e^(g_C).
        let back = exps(&g, -1.0);
        scale_rows(k_to_end.view_mut(), kc, &back);
        general_mat_mul(1.0, &kq, &k_to_end.t(), 0.0, &mut sm);
        k_to_end *= &last.mapv(exp_f32).insert_axis(Axis(0));
    } else {
        let (s_kk, m_qk) = sm.view_mut().split_at(Axis(0), c);
        sub_chunk_scores(&g, [qc, kc], [s_kk, m_qk]);
        let to_end = (&last.view().insert_axis(Axis(0)) - &g).mapv(exp_f32);
        scale_rows(k_to_end.view_mut(), kc, &to_end);
    }
    for i in 0..c {
        sm.slice_mut(s![i, i..]).fill(0.0);
        sm.slice_mut(s![c + i, i + 1..]).fill(0.0);
    }
    // [(Γ ⊙ K) W_0ᵀ; (Γ ⊙ Q) W_0ᵀ] in one product.
    let mut read = Array2::<f32>::zeros((2 * c, m));
    general_mat_mul(1.0, &kq, &w.t(), 0.0, &mut read);
    // U = (I + diag(β) S)⁻¹ (diag(ω) V − diag(β) (Γ ⊙ K) W_0ᵀ).
    let mut u = Array2::<f32>::zeros((c, m));
    for i in 0..c {
        let (mut u_i, r_i, v_i) = (u.row_mut(i), read.row(i), vc.row(i));
        let (o, be) = (om[i], b[i]);
        Zip::from(&mut u_i)
            .and(&v_i)
            .and(&r_i)
            .for_each(|u, &v, &r| *u = o * v - be * r);
        sm.row_mut(i).mapv_inplace(|x| x * be); // diag(β) S
    }
    let (s_kk, m_qk) = sm.view().split_at(Axis(0), c);
    solve_lower(s_kk, &mut u);
    yc.assign(&read.slice(s![c.., ..]));
    general_mat_mul(1.0, &m_qk, &u, 1.0, &mut yc);
    *w *= &last.mapv(exp_f32).insert_axis(Axis(0));
    general_mat_mul(1.0, &u.t(), &k_to_end, 1.0, w);
}

/// out = x ⊙ f, f: (C, p) or (C, 1) (one factor for a whole row).
fn scale_rows(
    mut out: ArrayViewMut2<f32>,
    x: ArrayView2<f32>,
    f: &Array2<f32>,
) {
    for ((mut o, x), f) in
        out.rows_mut().into_iter().zip(x.rows()).zip(f.rows())
    {
        if f.len() == 1 {
            let a = f[0];
            Zip::from(&mut o).and(&x).for_each(|o, &x| *o = x * a);
        } else {
            Zip::from(&mut o)
                .and(&x)
                .and(&f)
                .for_each(|o, &x, &a| *o = x * a);
        }
    }
}

/// The decayed scores of one chunk by secondary chunking (see
/// `chunk_f32`): S_ij = Σ_f e^(g_if − g_jf) k_if k_jf and M_ij the same
/// with q_i, for j ≤ i (the entries above the diagonal are left as they
/// are). g: (C, width) running log-gate sums, a column per feature or one
/// for every feature.
fn sub_chunk_scores(
    g: &Array2<f64>,
    [qc, kc]: [ArrayView2<f32>; 2],
    [mut s_kk, mut m_qk]: [ArrayViewMut2<f32>; 2],
) {
    let (c, p) = (kc.nrows(), kc.ncols());
    let width = g.ncols();
    for i0 in (0..c).step_by(SUB) {
        let i1 = (i0 + SUB).min(c);
        let g_r = match i0 {
            0 => Array1::zeros(width),
            _ => g.row(i0 - 1).to_owned(),
        };
        let g_r = g_r.insert_axis(Axis(0));
        let rows = s![i0..i1, ..];
        let down = (&g.slice(rows) - &g_r).mapv(exp_f32); // ≤ 1
        let (k_i, q_i) = (&kc.slice(rows) * &down, &qc.slice(rows) * &down);
        if i0 > 0 {
            // Every earlier token, against the reference g_r.
            let back = (&g_r - &g.slice(s![..i0, ..])).mapv(exp_f32); // ≤ 1
            let k_j = &kc.slice(s![..i0, ..]) * &back;
            let mut s_ij = s_kk.slice_mut(s![i0..i1, ..i0]);
            general_mat_mul(1.0, &k_i, &k_j.t(), 0.0, &mut s_ij);
            let mut m_ij = m_qk.slice_mut(s![i0..i1, ..i0]);
            general_mat_mul(1.0, &q_i, &k_j.t(), 0.0, &mut m_ij);
        }
        let inner = g_r.iter().zip(g.row(i1 - 1)).map(|(r, x)| r - x);
        if inner.fold(0.0f64, f64::max) <= SPAN {
            let k_j =
                &kc.slice(rows) / &down.mapv(|x| x.max(f32::MIN_POSITIVE));
            let mut s_ij = s_kk.slice_mut(s![i0..i1, i0..i1]);
            general_mat_mul(1.0, &k_i, &k_j.t(), 0.0, &mut s_ij);
            let mut m_ij = m_qk.slice_mut(s![i0..i1, i0..i1]);
            general_mat_mul(1.0, &q_i, &k_j.t(), 0.0, &mut m_ij);
            continue;
        }
        for i in i0..i1 {
            for j in i0..=i {
                let (mut ss, mut mm) = (0.0f32, 0.0f32);
                for f in 0..p {
                    let x = if width == 1 { 0 } else { f };
                    let e = exp_f32(g[[i, x]] - g[[j, x]]);
                    ss += kc[[i, f]] * kc[[j, f]] * e;
                    mm += qc[[i, f]] * kc[[j, f]] * e;
                }
                (s_kk[[i, j]], m_qk[[i, j]]) = (ss, mm);
            }
        }
    }
}

/// Solves (I + L) U = R in place of R, L strictly lower triangular
/// (entries on and above the diagonal are read as 0): forward
/// substitution within blocks of `SUB` rows, and one product for each
/// block's effect on the rows below it.
pub(super) fn solve_lower(l: ArrayView2<f32>, r: &mut Array2<f32>) {
    let c = l.nrows();
    for i0 in (0..c).step_by(SUB) {
        let i1 = (i0 + SUB).min(c);
        for i in i0 + 1..i1 {
            let (done, mut rest) = r.view_mut().split_at(Axis(0), i);
            let mut r_i = rest.row_mut(0);
            for j in i0..i {
                r_i.scaled_add(-l[[i, j]], &done.row(j));
            }
        }
        if i1 < c {
            let (top, mut below) = r.view_mut().split_at(Axis(0), i1);
            let l_block = l.slice(s![i1.., i0..i1]);
            let r_block = top.slice(s![i0.., ..]);
            general_mat_mul(-1.0, &l_block, &r_block, 1.0, &mut below);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::after::family::{random_qkv, rule_recurrent, six_rules};
    use crate::fast::{to_f32, to_f64};
    use crate::linalg::worst_row_relative_difference;
    use crate::random::seeded;

    #[test]
    fn f32_rules_equal_the_f64_recurrence_to_f32_precision() {
        for seed in 0..4 {
            for (n, p, m, gate) in [
                (1, 4, 3, None),
                (50, 8, 8, None),
                (130, 16, 8, Some(0.5)),
                (200, 8, 4, Some(1e-3)),
            ] {
                let [q, k, v] = random_qkv(seed, n, p, m);
                let (q32, k32, v32) = (to_f32(&q), to_f32(&k), to_f32(&v));
                for rule in six_rules(&mut seeded(seed), n, p, gate, Some(0.8))
                {
                    let want =
                        rule_recurrent(&rule, &q, &k, &v).unwrap().output;
                    let rec = rule_recurrent_f32(&rule, &q32, &k32, &v32);
                    let got = to_f64(&rec.unwrap());
                    let diff = worst_row_relative_difference(&got, &want);
                    assert!(diff < 1e-3, "{} recurrent: {diff}", rule.name());
                    for chunk in [1, 7, 16, 64] {
                        let ch =
                            rule_chunkwise_f32(&rule, &q32, &k32, &v32, chunk);
                        let got = to_f64(&ch.unwrap());
                        let diff = worst_row_relative_difference(&got, &want);
                        let name = rule.name();
                        assert!(diff < 1e-3, "{name} C {chunk}: {diff}");
                    }
                }
            }
        }
    }

    /// Every gated rule with gates log-uniform in [1e-12, 1] (per token,
    /// or per token and feature), write strengths uniform in [0, 1].
    #[test]
    fn a_key_or_query_of_length_zero_is_named_at_its_row_in_every_chunk() {
        // The chunkwise form scales rows to unit length a chunk at a time:
        // a zero row past the first chunk is still an error at its row.
        let (n, p, m) = (12, 4, 3);
        let [q, k, v] = random_qkv(5, n, p, m);
        let (q, k, v) = (to_f32(&q), to_f32(&k), to_f32(&v));
        let rules = six_rules(&mut seeded(5), n, p, Some(0.5), Some(0.8));
        for rule in rules.iter().filter(|r| r.unit_keys()) {
            for (name, row) in [("the length of q", 9), ("the length of k", 6)]
            {
                let (mut q0, mut k0) = (q.clone(), k.clone());
                let zeroed = if name.ends_with('q') {
                    &mut q0
                } else {
                    &mut k0
                };
                zeroed.row_mut(row).fill(0.0);
                let want = InputError::NonPositive {
                    name,
                    at: row,
                    value: 0.0,
                };
                let rec = rule_recurrent_f32(rule, &q0, &k0, &v).unwrap_err();
                assert_eq!(rec, want, "{}", rule.name());
                for chunk in [1, 4, 5, 64] {
                    let got = rule_chunkwise_f32(rule, &q0, &k0, &v, chunk);
                    assert_eq!(
                        got.unwrap_err(),
                        want,
                        "{} C {chunk}",
                        rule.name()
                    );
                }
            }
        }
    }

    #[test]
    fn f32_rules_read_transposed_inputs_as_their_standard_copies() {
        let (n, p, m) = (20, 4, 3);
        let [q, k, v] = random_qkv(6, n, p, m);
        let (q, k, v) = (to_f32(&q), to_f32(&k), to_f32(&v));
        let column_major =
            |x: &Array2<f32>| x.t().as_standard_layout().t().to_owned();
        let (qt, kt) = (column_major(&q), column_major(&k));
        assert!(qt.as_slice().is_none(), "not in standard layout");
        for rule in six_rules(&mut seeded(6), n, p, Some(0.5), Some(0.8)) {
            let want = rule_chunkwise_f32(&rule, &q, &k, &v, 6).unwrap();
            let got = rule_chunkwise_f32(&rule, &qt, &kt, &v, 6).unwrap();
            assert_eq!(got, want, "{}", rule.name());
            let want = rule_recurrent_f32(&rule, &q, &k, &v).unwrap();
            let got = rule_recurrent_f32(&rule, &qt, &kt, &v).unwrap();
            assert_eq!(got, want, "{}", rule.name());
        }
    }

    fn extreme_rules(seed: u64, n: usize, p: usize) -> Vec<Rule> {
        use crate::after::production::{kda_rule, log_uniform_gates};
        use rand::Rng;
        let mut rng = seeded(seed);
        let lo = 1e-12;
        let per_token =
            |rng: &mut _| log_uniform_gates(rng, n, 1, lo).column(0).to_owned();
        let scalar = per_token(&mut rng);
        let gated = per_token(&mut rng);
        let diagonal = log_uniform_gates(&mut rng, n, p, lo);
        let kda = log_uniform_gates(&mut rng, n, p, lo);
        let beta = Array1::from_shape_simple_fn(n, || rng.random::<f64>());
        let gamma = log_uniform_gates(&mut rng, 1, 1, lo)[[0, 0]];
        vec![
            Rule::FixedDecay(gamma),
            Rule::ScalarDecay(scalar),
            Rule::DiagonalGates(diagonal),
            Rule::GatedDelta {
                alpha: gated,
                beta: beta.clone(),
            },
            kda_rule(kda, beta),
        ]
    }

    #[test]
    fn f32_chunks_are_as_accurate_as_the_f32_recurrence_under_extreme_gates() {
        // Gates log-uniform in [1e-12, 1], chunks of up to 512 tokens:
        // for every gated rule, the f32 chunkwise reads are at most twice
        // as far from the f64 recurrence (relative, row by row) as the f32
        // recurrence's own reads are. With the running log-gate sums kept
        // in f32 (before the fix) this failed: 2.2e-3 against 3.4e-5 for
        // the diagonal gates in chunks of 512.
        for seed in 0..3 {
            let (n, p, m) = (1100, 16, 8);
            let [q, k, v] = random_qkv(seed, n, p, m);
            let (q32, k32, v32) = (to_f32(&q), to_f32(&k), to_f32(&v));
            for rule in extreme_rules(seed, n, p) {
                let want = rule_recurrent(&rule, &q, &k, &v).unwrap().output;
                let rec = rule_recurrent_f32(&rule, &q32, &k32, &v32);
                let rec = to_f64(&rec.unwrap());
                let rec = worst_row_relative_difference(&rec, &want);
                assert!(rec < 1e-3, "{} recurrent: {rec}", rule.name());
                for chunk in [64, 262, 512] {
                    let ch = rule_chunkwise_f32(&rule, &q32, &k32, &v32, chunk);
                    let got = to_f64(&ch.unwrap());
                    let diff = worst_row_relative_difference(&got, &want);
                    let name = rule.name();
                    assert!(
                        diff <= 2.0 * rec,
                        "{name} C {chunk}: {diff} {rec}"
                    );
                }
            }
        }
    }

    #[test]
    fn f32_chunks_split_into_sub_chunks_keep_f32_precision() {
        // Gates log-uniform in [e^−1.2, 1]: a chunk of 64 tokens spans
        // more than SPAN nats (so secondary chunking), a sub-chunk of 16
        // far less (so its own product too); a chunk of 16, one product.
        // Every gated rule's chunkwise reads are within 1e-5 of the f64
        // recurrence's (relative, row by row), as the f32 recurrence's are.
        use crate::after::production::{kda_rule, log_uniform_gates};
        let (n, p, m) = (700, 16, 8);
        let lo = (-1.2f64).exp();
        for seed in 0..3 {
            let mut rng = seeded(seed);
            let [q, k, v] = random_qkv(seed, n, p, m);
            let (q32, k32, v32) = (to_f32(&q), to_f32(&k), to_f32(&v));
            let token =
                log_uniform_gates(&mut rng, n, 1, lo).column(0).to_owned();
            let beta = Array1::from_elem(n, 0.5);
            let rules = [
                Rule::ScalarDecay(token.clone()),
                Rule::DiagonalGates(log_uniform_gates(&mut rng, n, p, lo)),
                Rule::GatedDelta {
                    alpha: token,
                    beta: beta.clone(),
                },
                kda_rule(log_uniform_gates(&mut rng, n, p, lo), beta),
            ];
            for rule in rules {
                let want = rule_recurrent(&rule, &q, &k, &v).unwrap().output;
                let rec = rule_recurrent_f32(&rule, &q32, &k32, &v32);
                let rec = to_f64(&rec.unwrap());
                let rec = worst_row_relative_difference(&rec, &want);
                assert!(rec < 1e-5, "{} recurrent: {rec}", rule.name());
                for chunk in [16, 64, 200] {
                    let ch = rule_chunkwise_f32(&rule, &q32, &k32, &v32, chunk);
                    let got = to_f64(&ch.unwrap());
                    let diff = worst_row_relative_difference(&got, &want);
                    let name = rule.name();
                    assert!(diff < 1e-5, "{name} C {chunk}: {diff} {rec}");
                }
            }
        }
    }
}
