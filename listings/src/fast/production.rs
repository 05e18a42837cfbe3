//! The rules of "The rules in production" at f32, for the benchmark:
//! RWKV-7 and DeltaProduct, token by token and in chunks. Each computes
//! what its f64 form in `after::production` computes, to f32 precision;
//! KDA needs nothing here, as it is a rule of `fast::rules`.

use super::rules::{SPAN, chunk_f32, solve_lower};
use super::simd::{axpy_body, dot_lanes, exps, lns};
use super::{general_mat_mul, row_major, slice};
use crate::after::family::unit_rows_checked;
use crate::after::production::{Rwkv7, check_rwkv7, prepare_rwkv7};
use crate::after::spectrum::check_delta_product;
use crate::input::{InputError, check_chunk, finite};
use ndarray::{Array2, ArrayRef1, ArrayRef2, Axis, s};

/// DeltaProduct at f32, token by token: n_h delta-rule writes, then the
/// read y_t = W q_t. q: (N, p), k: (N n_h, p), v: (N n_h, m), beta:
/// (N n_h) in [0, 2].
pub fn delta_product_recurrent_f32(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    beta: &ArrayRef1<f32>,
    n_h: usize,
) -> Result<Array2<f32>, InputError> {
    check_delta_product(q, k, v, beta, n_h)?;
    let (n, p, m) = (q.nrows(), q.ncols(), v.ncols());
    let [q_all, k_all, v_all] = row_major(q, k, v);
    let (q_all, k_all, v_all) = (slice(&q_all), slice(&k_all), slice(&v_all));
    let beta = beta.as_standard_layout();
    let beta = beta.as_slice().expect("standard layout");
    let mut w = vec![0.0f32; m * p]; // W_0 = 0, row i is w[i p..(i + 1) p]
    let mut y = Array2::<f32>::zeros((n, m));
    let y_all = y.as_slice_mut().expect("a new array");
    for t in 0..n {
        let writes = t * n_h..(t + 1) * n_h;
        let k_t = &k_all[writes.start * p..writes.end * p];
        let v_t = &v_all[writes.start * m..writes.end * m];
        let (q_t, y_t) = (&q_all[t * p..][..p], &mut y_all[t * m..][..m]);
        delta_product_token(&mut w, [q_t, k_t, v_t], &beta[writes], y_t);
    }
    finite("Y", y)
}

dispatched! {
    /// `delta_product_token_body` on the current dispatch path.
    fn delta_product_token(
        w: &mut [f32],
        qkv: [&[f32]; 3],
        beta: &[f32],
        y: &mut [f32],
    ) = delta_product_token_body::<true>,
        else delta_product_token_body::<false>;
}

/// One token of DeltaProduct, W: (m, p) by rows w_i, in place: for each
/// write r, u_i = β_r (v_ri − w_iᵀk_r) and w_i += u_i k_r (each row on its
/// own); then y_i = w_iᵀq. q: (p), k: (n_h, p), v: (n_h, m), y: (m).
#[inline(always)]
fn delta_product_token_body<const FMA: bool>(
    w: &mut [f32],
    [q, k, v]: [&[f32]; 3],
    beta: &[f32],
    y: &mut [f32],
) {
    let (p, m) = (q.len(), y.len());
    for (i, (w_i, y_i)) in w.chunks_exact_mut(p).zip(y.iter_mut()).enumerate() {
        for (r, (k_r, &b)) in k.chunks_exact(p).zip(beta).enumerate() {
            let u = b * (v[r * m + i] - dot_lanes::<FMA>(w_i, k_r));
            axpy_body(u, k_r, w_i);
        }
        *y_i = dot_lanes::<FMA>(w_i, q);
    }
}

/// DeltaProduct at f32 in chunks of `chunk` tokens: n_h C pseudo-tokens
/// per chunk, computed by the family's f32 chunk with no gates and
/// ω = β; only the last pseudo-token of each token reads.
pub fn delta_product_chunkwise_f32(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    beta: &ArrayRef1<f32>,
    n_h: usize,
    chunk: usize,
) -> Result<Array2<f32>, InputError> {
    check_delta_product(q, k, v, beta, n_h)?;
    check_chunk(chunk)?;
    let (n, p, m) = (q.nrows(), q.ncols(), v.ncols());
    // One chunk's pseudo-tokens at a time: their reads (q at the last of
    // each token's, zero rows before it), no decay, and their outputs.
    let pseudo = chunk.min(n) * n_h;
    let mut reads = Array2::<f32>::zeros((pseudo, p));
    let no_decay = Array2::<f32>::zeros((pseudo, 1));
    let mut out = Array2::<f32>::zeros((pseudo, m));
    let mut w = Array2::<f32>::zeros((m, p));
    let mut y = Array2::<f32>::zeros((n, m));
    for start in (0..n).step_by(chunk) {
        let end = (start + chunk).min(n);
        let len = (end - start) * n_h;
        let (rows, at) =
            (s![start * n_h..end * n_h, ..], s![start * n_h..end * n_h]);
        for t in start..end {
            reads.row_mut((t - start) * n_h + n_h - 1).assign(&q.row(t));
        }
        chunk_f32(
            &mut w,
            [reads.slice(s![..len, ..]), k.slice(rows), v.slice(rows)],
            no_decay.slice(s![..len, ..]),
            [beta.slice(at), beta.slice(at)],
            out.slice_mut(s![..len, ..]),
        );
        y.slice_mut(s![start..end, ..])
            .assign(&out.slice(s![n_h - 1..len;n_h, ..]));
    }
    finite("Y", y)
}

/// RWKV-7's inputs at f32: the checked unit removal keys, ζ, k̆.
fn rwkv7_f32(
    q: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    g: &Rwkv7,
) -> Result<[Array2<f32>; 3], InputError> {
    let removal = prepare_rwkv7(q, v, g)?;
    let f = |a: &Array2<f64>| a.mapv(|x| x as f32);
    Ok([f(&removal), f(&g.zeta), f(&g.replacement)])
}

/// RWKV-7 at f32, token by token: v̌ = W ǩ, W ← W diag(α) − v̌ (ζ ⊙ ǩ)ᵀ
/// + v k̆ᵀ, y_t = W q_t. q: (N, p), v: (N, m); `g` as for the f64 form.
pub fn rwkv7_recurrent_f32(
    q: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    g: &Rwkv7,
) -> Result<Array2<f32>, InputError> {
    let [removal, zeta, replacement] = rwkv7_f32(q, v, g)?;
    let alpha = g.alpha.mapv(|a| a as f32);
    let (n, p, m) = (q.nrows(), q.ncols(), v.ncols());
    let erase = &zeta * &removal; // ζ ⊙ ǩ, every token
    let [q_all, r_all, v_all] = row_major(q, &removal, v);
    let (q_all, r_all, v_all) = (slice(&q_all), slice(&r_all), slice(&v_all));
    let [e_all, k_all, a_all] = row_major(&erase, &replacement, &alpha);
    let (e_all, k_all, a_all) = (slice(&e_all), slice(&k_all), slice(&a_all));
    let mut w = vec![0.0f32; m * p]; // W_0 = 0, row i is w[i p..(i + 1) p]
    let mut y = Array2::<f32>::zeros((n, m));
    let y_all = y.as_slice_mut().expect("a new array");
    for t in 0..n {
        let at = t * p..(t + 1) * p;
        let rows = [&q_all[at.clone()], &r_all[at.clone()], &e_all[at.clone()]];
        let gates = [&k_all[at.clone()], &a_all[at]];
        let (v_t, y_t) = (&v_all[t * m..][..m], &mut y_all[t * m..][..m]);
        rwkv7_token(&mut w, rows, gates, v_t, y_t);
    }
    finite("Y", y)
}

dispatched! {
    /// `rwkv7_token_body` on the current dispatch path.
    fn rwkv7_token(
        w: &mut [f32],
        qre: [&[f32]; 3],
        ka: [&[f32]; 2],
        v: &[f32],
        y: &mut [f32],
    ) = rwkv7_token_body::<true>, else rwkv7_token_body::<false>;
}

/// One token of RWKV-7, W: (m, p) by rows w_i, in place: v̌_i = w_iᵀǩ,
/// w_i ← w_i ⊙ α − v̌_i (ζ ⊙ ǩ) + v_i k̆, y_i = w_iᵀq. q, ǩ, ζ ⊙ ǩ, k̆, α:
/// (p), v, y: (m).
#[inline(always)]
fn rwkv7_token_body<const FMA: bool>(
    w: &mut [f32],
    [q, r, erase]: [&[f32]; 3],
    [k, alpha]: [&[f32]; 2],
    v: &[f32],
    y: &mut [f32],
) {
    let rows = w.chunks_exact_mut(q.len()).zip(y.iter_mut().zip(v));
    for (w_i, (y_i, &v_i)) in rows {
        let held = dot_lanes::<FMA>(w_i, r);
        w_i.iter_mut().zip(alpha).for_each(|(w, &a)| *w *= a);
        axpy_body(-held, erase, w_i);
        axpy_body(v_i, k, w_i);
        *y_i = dot_lanes::<FMA>(w_i, q);
    }
}

/// RWKV-7 at f32 in chunks of `chunk` tokens, as `rwkv7_chunk` computes
/// each chunk; the log-gate sums in f64. With Γ = e^λ and Γ̄ = e^λ̄ the
/// chunk's decays to each token and to just before it, the four decayed
/// score matrices are one product [R ⊙ Γ̄; Q ⊙ Γ] [Ě ⊙ Γ⁻¹; K̆ ⊙ Γ⁻¹]ᵀ
/// (when the chunk's gates span at most `SPAN`, as in `rules::chunk_f32`;
/// else a sum of exponentials per entry), and the two reads of the memory
/// before the chunk one product [R ⊙ Γ̄; Q ⊙ Γ] W₀ᵀ.
pub fn rwkv7_chunkwise_f32(
    q: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    g: &Rwkv7,
    chunk: usize,
) -> Result<Array2<f32>, InputError> {
    check_chunk(chunk)?;
    check_rwkv7(q, v, g)?;
    let (n, p, m) = (q.nrows(), q.ncols(), v.ncols());
    let mut w = Array2::<f32>::zeros((m, p));
    let mut y = Array2::<f32>::zeros((n, m));
    let f = |x: f64| x as f32;
    for start in (0..n).step_by(chunk) {
        let end = (start + chunk).min(n);
        let c = end - start;
        let rows = s![start..end, ..];
        let (qc, vc) = (q.slice(rows), v.slice(rows));
        // The chunk's operands at f32, as the recurrence rounds them: the
        // unit removal keys Ř, Ě = ζ ⊙ ǩ, K̆; ln α from the gates rounded
        // to f32.
        let removal = g.removal.slice(rows);
        let rc = unit_rows_checked("the length of removal", &removal)
            .map_err(|e| e.rows_from(start))?
            .mapv(f);
        let ec = &g.zeta.slice(rows).mapv(f) * &rc;
        let kc = g.replacement.slice(rows).mapv(f);
        let log_alpha = lns(&g.alpha.slice(rows)).mapv(f64::from);
        let mut lam = log_alpha.clone();
        lam.accumulate_axis_inplace(Axis(0), |&before, now| *now += before);
        let before = &lam - &log_alpha; // λ̄
        // [R ⊙ Γ̄; Q ⊙ Γ]: (2C, p).
        let mut left = Array2::<f32>::zeros((2 * c, p));
        left.slice_mut(s![..c, ..])
            .assign(&(&rc * &exps(&before, 1.0)));
        left.slice_mut(s![c.., ..])
            .assign(&(&qc * &exps(&lam, 1.0)));
        // [P_e P_w; M_e M_w]: (2C, 2C), P strictly below the diagonal,
        // M on and below it.
        let mut scores = Array2::<f32>::zeros((2 * c, 2 * c));
        let span = -lam.row(c - 1).fold(0.0f64, |lo, &x| lo.min(x));
        if span <= SPAN {
            let back = exps(&lam, -1.0); // Γ⁻¹, every factor ≤ e^SPAN
            let mut right = Array2::<f32>::zeros((2 * c, p));
            right.slice_mut(s![..c, ..]).assign(&(&ec * &back));
            right.slice_mut(s![c.., ..]).assign(&(&kc * &back));
            general_mat_mul(1.0, &left, &right.t(), 0.0, &mut scores);
            for i in 0..c {
                for col in [0, c] {
                    scores.slice_mut(s![i, col + i..col + c]).fill(0.0);
                    let below = s![c + i, col + i + 1..col + c];
                    scores.slice_mut(below).fill(0.0);
                }
            }
        } else {
            let ex = |x: f64| x.exp() as f32;
            for i in 0..c {
                for j in 0..=i {
                    let (mut pe, mut pw, mut me, mut mw) =
                        (0f32, 0f32, 0f32, 0f32);
                    for f in 0..p {
                        let e = ex(lam[[i, f]] - lam[[j, f]]);
                        me += qc[[i, f]] * ec[[j, f]] * e;
                        mw += qc[[i, f]] * kc[[j, f]] * e;
                        if j < i {
                            let e = ex(before[[i, f]] - lam[[j, f]]);
                            pe += rc[[i, f]] * ec[[j, f]] * e;
                            pw += rc[[i, f]] * kc[[j, f]] * e;
                        }
                    }
                    (scores[[i, j]], scores[[i, c + j]]) = (pe, pw);
                    (scores[[c + i, j]], scores[[c + i, c + j]]) = (me, mw);
                }
            }
        }
        let mut reads = Array2::<f32>::zeros((2 * c, m));
        general_mat_mul(1.0, &left, &w.t(), 0.0, &mut reads);
        // V̌ = (I + P_e)⁻¹ ((R ⊙ Γ̄) W₀ᵀ + P_w V).
        let mut held = reads.slice(s![..c, ..]).to_owned();
        let p_write = scores.slice(s![..c, c..]);
        general_mat_mul(1.0, &p_write, &vc, 1.0, &mut held);
        solve_lower(scores.slice(s![..c, ..c]), &mut held);
        // Y = (Q ⊙ Γ) W₀ᵀ − M_e V̌ + M_w V.
        let mut yc = y.slice_mut(rows);
        yc.assign(&reads.slice(s![c.., ..]));
        let (m_erase, m_write) =
            (scores.slice(s![c.., ..c]), scores.slice(s![c.., c..]));
        general_mat_mul(-1.0, &m_erase, &held, 1.0, &mut yc);
        general_mat_mul(1.0, &m_write, &vc, 1.0, &mut yc);
        let last = lam.row(c - 1).to_owned();
        let to_end = exps(&(&last.view().insert_axis(Axis(0)) - &lam), 1.0);
        w *= &exps(&last.insert_axis(Axis(0)), 1.0);
        general_mat_mul(1.0, &vc.t(), &(&kc * &to_end), 1.0, &mut w);
        general_mat_mul(-1.0, &held.t(), &(&ec * &to_end), 1.0, &mut w);
    }
    finite("Y", y)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::after::family::random_qkv;
    use crate::after::production::{
        random_delta_product, random_rwkv7, rwkv7_recurrent,
    };
    use crate::after::spectrum::delta_product_recurrent;
    use crate::fast::{to_f32, to_f64};
    use crate::linalg::worst_row_relative_difference;
    use crate::random::{randn, seeded};

    #[test]
    fn f32_rwkv7_equals_the_f64_recurrence_to_f32_precision() {
        for seed in 0..3 {
            for (n, p, m) in [(1, 4, 3), (70, 8, 8), (200, 16, 4)] {
                let [q, _, v] = random_qkv(seed, n, p, m);
                let (q32, v32) = (to_f32(&q), to_f32(&v));
                for lo in [0.9, 1e-3, 1e-12] {
                    let g = random_rwkv7(seed, n, p, lo);
                    let want = rwkv7_recurrent(&q, &v, &g).unwrap().output;
                    let rec = rwkv7_recurrent_f32(&q32, &v32, &g).unwrap();
                    let diff =
                        worst_row_relative_difference(&to_f64(&rec), &want);
                    assert!(diff < 1e-3, "recurrent lo {lo}: {diff}");
                    for chunk in [1, 7, 64, 512] {
                        let ch = rwkv7_chunkwise_f32(&q32, &v32, &g, chunk);
                        let got = to_f64(&ch.unwrap());
                        let diff = worst_row_relative_difference(&got, &want);
                        assert!(diff < 1e-3, "C {chunk} lo {lo}: {diff}");
                    }
                }
            }
        }
    }

    #[test]
    fn a_removal_key_of_length_zero_is_named_at_its_row_in_every_chunk() {
        // The chunkwise form scales the removal keys a chunk at a time: a
        // zero row past the first chunk is still an error at its row, as
        // in the recurrence.
        let (n, p, m) = (12, 4, 3);
        let [q, _, v] = random_qkv(7, n, p, m);
        let (q, v) = (to_f32(&q), to_f32(&v));
        let mut g = random_rwkv7(7, n, p, 0.5);
        g.removal.row_mut(9).fill(0.0);
        let want = InputError::NonPositive {
            name: "the length of removal",
            at: 9,
            value: 0.0,
        };
        assert_eq!(rwkv7_recurrent_f32(&q, &v, &g).unwrap_err(), want);
        for chunk in [1, 4, 5, 64] {
            let got = rwkv7_chunkwise_f32(&q, &v, &g, chunk).unwrap_err();
            assert_eq!(got, want, "C {chunk}");
        }
    }

    #[test]
    fn f32_delta_product_equals_the_f64_recurrence_to_f32_precision() {
        for seed in 0..3 {
            for (n, p, m) in [(1, 4, 3), (70, 8, 8), (150, 16, 4)] {
                for n_h in [1, 2, 3] {
                    let mut rng = seeded(seed + 100);
                    let q = randn(&mut rng, n, p);
                    let (k, v, beta) =
                        random_delta_product(&mut rng, (n, p, m), n_h);
                    let want = delta_product_recurrent(&q, &k, &v, &beta, n_h)
                        .unwrap();
                    let (q32, k32, v32) = (to_f32(&q), to_f32(&k), to_f32(&v));
                    let b32 = beta.mapv(|b| b as f32);
                    let rec = delta_product_recurrent_f32(
                        &q32, &k32, &v32, &b32, n_h,
                    );
                    let diff = worst_row_relative_difference(
                        &to_f64(&rec.unwrap()),
                        &want,
                    );
                    assert!(diff < 1e-3, "recurrent n_h {n_h}: {diff}");
                    for chunk in [1, 5, 64] {
                        let ch = delta_product_chunkwise_f32(
                            &q32, &k32, &v32, &b32, n_h, chunk,
                        );
                        let got = to_f64(&ch.unwrap());
                        let diff = worst_row_relative_difference(&got, &want);
                        assert!(diff < 1e-3, "n_h {n_h} C {chunk}: {diff}");
                    }
                }
            }
        }
    }
}
