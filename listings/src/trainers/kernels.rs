//! The f32 kernels of the trainers: products that count their arithmetic,
//! dot products and updates on plain slices the compiler vectorises, a
//! branch-free exponential, and the book's feature maps with their
//! backward passes, one row at a time, allocating nothing.

use crate::phi::FeatureMap as Phi;
use ndarray::linalg::general_mat_mul;
use ndarray::{Array2, ArrayView2, ArrayViewMut2};

/// C ← A B, counting its arithmetic (2 m k n) into `flops`.
pub(crate) fn gemm(
    flops: &mut u64,
    a: ArrayView2<f32>,
    b: ArrayView2<f32>,
    c: &mut ArrayViewMut2<f32>,
) {
    *flops += 2 * (a.nrows() * a.ncols() * b.ncols()) as u64;
    general_mat_mul(1.0, &a, &b, 0.0, c);
}

/// aᵀb, in eight running sums.
#[inline(always)]
pub(crate) fn dot(a: &[f32], b: &[f32]) -> f32 {
    // Eight partial sums, so the compiler keeps them in vector lanes.
    let mut acc = [0.0f32; 8];
    let (ca, cb) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f32 = ca
        .remainder()
        .iter()
        .zip(cb.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in ca.zip(cb) {
        for i in 0..8 {
            acc[i] += x[i] * y[i];
        }
    }
    acc.iter().sum::<f32>() + tail
}

/// y += α x.
#[inline(always)]
pub(crate) fn axpy(alpha: f32, x: &[f32], y: &mut [f32]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += alpha * x;
    }
}

/// σ(x) = 1 / (1 + e⁻ˣ), with [`exp`].
pub(crate) fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + exp(-x))
}

/// eˣ in f32 without branches, so that loops over it vectorise: write
/// x = k ln 2 + r with |r| ≤ ln 2 / 2, take eʳ from Cephes' polynomial and
/// 2ᵏ from the exponent bits. Relative error below 3e-7 (tested against f64).
#[inline(always)]
pub fn exp(x: f32) -> f32 {
    const ROUND: f32 = 12_582_912.0; // 1.5 · 2²³: adding it rounds to an integer
    let x = x.clamp(-87.0, 88.0);
    let rounded = x * std::f32::consts::LOG2_E + ROUND;
    let k = rounded - ROUND;
    let r = x - k * 0.693_359_4 + k * 2.121_944_4e-4;
    let mut p = 1.987_569_1e-4;
    for c in [1.398_2e-3, 8.333_452e-3, 4.166_579_6e-2, 0.166_666_65, 0.5] {
        p = p * r + c;
    }
    let e = p * r * r + r + 1.0;
    // The low bits of `rounded` hold k; 2ᵏ has exponent field k + 127.
    let bits = rounded.to_bits().wrapping_sub(ROUND.to_bits() - 127) << 23;
    e * f32::from_bits(bits)
}

/// x̃ = [relu(x), relu(−x)] into `xt` (2d entries).
#[inline(always)]
fn split_signs(x: &[f32], xt: &mut [f32]) {
    let (up, down) = xt.split_at_mut(x.len());
    for ((u, w), &x) in up.iter_mut().zip(down.iter_mut()).zip(x) {
        *u = x.max(0.0);
        *w = (-x).max(0.0);
    }
}

/// out[i] = a[i] · b[i].
#[inline(always)]
fn mul_into(a: &[f32], b: &[f32], out: &mut [f32]) {
    for ((o, &a), &b) in out.iter_mut().zip(a).zip(b) {
        *o = a * b;
    }
}

/// out[i] += a[i] · b[i].
#[inline(always)]
fn mul_add(a: &[f32], b: &[f32], out: &mut [f32]) {
    for ((o, &a), &b) in out.iter_mut().zip(a).zip(b) {
        *o += a * b;
    }
}

/// φ(x) into `out` (p entries). `xt`: scratch of 2d entries.
#[inline(always)]
pub(crate) fn phi_into(
    phi: Phi,
    x: &[f32],
    omega: &Array2<f32>,
    out: &mut [f32],
    xt: &mut [f32],
) {
    match phi {
        Phi::EluPlusOne => {
            // Both branches computed, then a select: no jumps, so the
            // loop vectorises.
            for (o, &x) in out.iter_mut().zip(x) {
                let below = exp(x.min(0.0));
                *o = if x > 0.0 { x + 1.0 } else { below };
            }
        }
        Phi::Dpfp(nu) => {
            let m = 2 * x.len();
            let xt = &mut xt[..m];
            split_signs(x, xt);
            // φ_j[i] = x̃[i] · x̃[(i − j) mod 2d], in two runs without a mod.
            for j in 1..=nu {
                let block = &mut out[(j - 1) * m..j * m];
                let (head, tail) = block.split_at_mut(j);
                mul_into(&xt[..j], &xt[m - j..], head);
                mul_into(&xt[j..], &xt[..m - j], tail);
            }
        }
        Phi::Favor(r) => {
            let half_sq = dot(x, x) / 2.0;
            let scale = 1.0 / ((2 * r) as f32).sqrt();
            let (pos, neg) = out.split_at_mut(r);
            pos.fill(0.0);
            for (i, &xi) in x.iter().enumerate() {
                axpy(xi, omega.row(i).as_slice().expect("row-major Ω"), pos);
            }
            for (p, n) in pos.iter_mut().zip(neg) {
                let u = *p;
                *p = exp(u - half_sq) * scale;
                *n = exp(-u - half_sq) * scale;
            }
        }
    }
}

/// dL/dx into `dx`, from g = dL/dφ(x) and f = φ(x). `scratch`: 6d or r
/// entries, whichever is larger.
#[inline(always)]
pub(crate) fn phi_back(
    phi: Phi,
    x: &[f32],
    f: &[f32],
    g: &[f32],
    omega: &Array2<f32>,
    dx: &mut [f32],
    scratch: &mut [f32],
) {
    match phi {
        // φ' = 1 above zero (where φ = x + 1 > 1), eˣ = φ ≤ 1 below: min(φ, 1).
        Phi::EluPlusOne => {
            for ((dx, &f), &g) in dx.iter_mut().zip(f).zip(g) {
                *dx = g * f.min(1.0);
            }
        }
        Phi::Dpfp(nu) => {
            let (d, m) = (x.len(), 2 * x.len());
            let (xt, rest) = scratch.split_at_mut(m);
            let (dxt, rest) = rest.split_at_mut(m);
            let gx = &mut rest[..m];
            split_signs(x, xt);
            dxt.fill(0.0);
            for j in 1..=nu {
                let block = &g[(j - 1) * m..j * m];
                // dx̃[i] += g[i] x̃[i − j] ...
                mul_add(&block[..j], &xt[m - j..], &mut dxt[..j]);
                mul_add(&block[j..], &xt[..m - j], &mut dxt[j..]);
                // ... and dx̃[i − j] += g[i] x̃[i].
                mul_into(block, xt, gx);
                axpy(1.0, &gx[j..], &mut dxt[..m - j]);
                axpy(1.0, &gx[..j], &mut dxt[m - j..]);
            }
            let (up, down) = dxt.split_at(d);
            for (((dx, &x), &u), &w) in dx.iter_mut().zip(x).zip(up).zip(down) {
                let u = if x > 0.0 { u } else { 0.0 };
                let w = if x < 0.0 { w } else { 0.0 };
                *dx = u - w;
            }
        }
        Phi::Favor(r) => {
            // f = exp([Ωᵀx, −Ωᵀx] − ‖x‖²/2) / √(2r)
            let diff = &mut scratch[..r];
            let mut total = 0.0;
            let (gp, gn) = g.split_at(r);
            let (fp, fn_) = f.split_at(r);
            for ((((d, &gp), &gn), &fp), &fn_) in
                diff.iter_mut().zip(gp).zip(gn).zip(fp).zip(fn_)
            {
                let (a, b) = (gp * fp, gn * fn_);
                *d = a - b;
                total += a + b;
            }
            for (i, dxi) in dx.iter_mut().enumerate() {
                let row = omega.row(i);
                *dxi = dot(row.as_slice().expect("row-major Ω"), diff)
                    - x[i] * total;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fast_exp_is_within_3e_7_of_the_true_exponential() {
        let mut worst = 0.0f64;
        for i in 0..=200_000 {
            let x = -87.0 + 175.0 * i as f64 / 200_000.0;
            let want = x.exp();
            let got = exp(x as f32) as f64;
            // x itself is rounded to f32 first; compare with e^(f32 x).
            let want = want * ((x as f32) as f64 - x).exp();
            worst = worst.max((got - want).abs() / want);
        }
        assert!(worst < 3e-7, "worst relative error {worst:e}");
    }
}
