//! Sliding-window softmax attention, the mixer whose state is the last w
//! keys and values: forward and backward, written once over the float
//! type on the mixers' shared scratch ([`Work`]), beside full softmax
//! attention's.

use crate::after::recall::model::{Work, c, zeroed};
use crate::linalg::dot;
use num_traits::Float;

/// The first position the query at `t` sees through a window of `w`.
fn window_start(t: usize, w: usize) -> usize {
    (t + 1).saturating_sub(w)
}

// ANCHOR: window_forward
/// y_t = Σ_{t−w < s ≤ t} p_s v_s with p = softmax(q_t·k_s/√d) over those
/// s: softmax attention that sees the last w tokens, itself included, at
/// each position t from `first` on. Row t − first of `attention` keeps p.
pub fn window_forward<F: Float>(
    d: usize,
    w: usize,
    len: usize,
    first: usize,
    m: &mut Work<F>,
) {
    zeroed(&mut m.attention, (len - first) * w);
    let scale = F::one() / c::<F>(d as f64).sqrt();
    for t in first..len {
        let (i, start) = (t - first, window_start(t, w));
        let q = &m.q[t * d..(t + 1) * d];
        let p = &mut m.attention[i * w..i * w + t + 1 - start];
        for (p, s) in p.iter_mut().zip(start..=t) {
            *p = dot(q, &m.k[s * d..(s + 1) * d]) * scale;
        }
        let top = p.iter().fold(F::neg_infinity(), |a, &x| a.max(x));
        p.iter_mut().for_each(|x| *x = (*x - top).exp());
        let total = p.iter().fold(F::zero(), |a, &x| a + x);
        p.iter_mut().for_each(|x| *x = *x / total);
        let y = &mut m.y[i * d..(i + 1) * d];
        for (&p, s) in p.iter().zip(start..=t) {
            for (y, &v) in y.iter_mut().zip(&m.v[s * d..(s + 1) * d]) {
                *y = *y + p * v;
            }
        }
    }
}
// ANCHOR_END: window_forward

/// The gradients of every q_t, k_t and v_t from those of the reads at
/// positions `first` on, through the weights [`window_forward`] kept.
pub fn window_backward<F: Float>(
    d: usize,
    w: usize,
    len: usize,
    first: usize,
    dy: &[F],
    m: &mut Work<F>,
) {
    let scale = F::one() / c::<F>(d as f64).sqrt();
    zeroed(&mut m.dp, w);
    for t in first..len {
        let (i, start) = (t - first, window_start(t, w));
        let dy = &dy[i * d..(i + 1) * d];
        let p = &m.attention[i * w..i * w + t + 1 - start];
        for ((&ps, s), dp) in p.iter().zip(start..=t).zip(m.dp.iter_mut()) {
            *dp = dot(dy, &m.v[s * d..(s + 1) * d]);
            for (dv, &g) in m.dv[s * d..(s + 1) * d].iter_mut().zip(dy) {
                *dv = *dv + ps * g;
            }
        }
        let mean = p
            .iter()
            .zip(m.dp.iter())
            .fold(F::zero(), |a, (&p, &g)| a + p * g);
        for ((&ps, s), &dp) in p.iter().zip(start..=t).zip(m.dp.iter()) {
            let ds = ps * (dp - mean) * scale;
            for j in 0..d {
                m.dq[t * d + j] = m.dq[t * d + j] + ds * m.k[s * d + j];
                m.dk[s * d + j] = m.dk[s * d + j] + ds * m.q[t * d + j];
            }
        }
    }
}
