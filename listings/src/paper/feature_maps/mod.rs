//! Chapter "Feature maps: elu+1, FAVOR+, DPFP": what each map costs and
//! gives, measured. The maps themselves live in `phi`, shared by every chapter.

use crate::input::{InputError, at_least_one};
use crate::phi::dpfp;
use crate::phi::{favor_plus, favor_projection};
use crate::random::{randn, seeded};
use ndarray::{Array1, Array2, array};

pub mod study;

/// How far FAVOR+'s estimate of exp(qᵀk) strays, at r random features.
#[derive(Clone, Debug)]
pub struct SpreadRow {
    pub r: usize,
    /// Standard deviation of φ(q)ᵀφ(k) over draws of Ω, divided by
    /// exp(qᵀk): Ω with independent N(0, 1) entries.
    pub iid: f64,
    /// The same with orthogonal random features (`favor_projection`).
    pub orthogonal: f64,
    /// Mean of the estimate over the draws, divided by exp(qᵀk).
    pub mean_iid: f64,
    /// The exact relative spread for independent N(0, 1) entries,
    /// √(2/r) sinh(‖q + k‖²/2).
    pub exact_iid: f64,
}

// ANCHOR: favor_spread
/// The relative spread of FAVOR+'s estimate of exp(qᵀk) for one pair q, k
/// of length ½ in ℝ^d, over `draws` projections Ω: (d, r), for each r.
pub fn favor_spread(
    d: usize,
    rs: &[usize],
    draws: usize,
) -> Result<Vec<SpreadRow>, InputError> {
    check_spread(rs, draws)?;
    let mut rng = seeded(7);
    let short = |x: Array1<f64>| &x * (0.5 / x.dot(&x).sqrt());
    let q = short(randn(&mut rng, 1, d).row(0).to_owned());
    let k = short(randn(&mut rng, 1, d).row(0).to_owned());
    let exact = q.dot(&k).exp();
    let s = &q + &k;
    rs.iter()
        .map(|&r| {
            let mut rng = seeded(r as u64);
            let mut iid = vec![];
            let mut orthogonal = vec![];
            for _ in 0..draws {
                let omega = randn(&mut rng, d, r); // N(0, 1) entries
                iid.push(favor_plus(&q, &omega)?.dot(&favor_plus(&k, &omega)?));
                let omega = favor_projection(&mut rng, d, r);
                let e = favor_plus(&q, &omega)?.dot(&favor_plus(&k, &omega)?);
                orthogonal.push(e);
            }
            Ok(SpreadRow {
                r,
                iid: std_dev(&iid) / exact,
                orthogonal: std_dev(&orthogonal) / exact,
                mean_iid: iid.iter().sum::<f64>() / draws as f64 / exact,
                exact_iid: (2.0 / r as f64).sqrt() * (s.dot(&s) / 2.0).sinh(),
            })
        })
        .collect()
}
// ANCHOR_END: favor_spread

/// A spread needs two draws and every r at least one feature direction.
fn check_spread(rs: &[usize], draws: usize) -> Result<(), InputError> {
    if draws < 2 {
        let rule = "a spread needs at least two draws";
        return Err(InputError::BadParameter {
            name: "draws",
            value: draws,
            rule,
        });
    }
    let r = rs.iter().copied().min().unwrap_or(1);
    at_least_one("r", r, "FAVOR+ needs at least one direction")
}

fn std_dev(xs: &[f64]) -> f64 {
    let n = xs.len() as f64;
    let mean = xs.iter().sum::<f64>() / n;
    (xs.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt()
}

// ANCHOR: dpfp_plane
/// DPFP-1 over the plane, the paper's Figure 1: the four features of
/// φ(x) for x on an n × n grid over [−extent, extent]². Returns one (n, n)
/// grid per feature, row i at x₂ from +extent down, column j at x₁ from
/// −extent up.
pub fn dpfp_plane(
    n: usize,
    extent: f64,
) -> Result<Vec<Array2<f64>>, InputError> {
    let at = |i: usize| extent * (2.0 * i as f64 / (n - 1) as f64 - 1.0);
    let mut grids = vec![Array2::zeros((n, n)); 4];
    for i in 0..n {
        for j in 0..n {
            let phi = dpfp(&array![at(j), at(n - 1 - i)], 1)?;
            for (grid, &f) in grids.iter_mut().zip(&phi) {
                grid[[i, j]] = f;
            }
        }
    }
    Ok(grids)
}
// ANCHOR_END: dpfp_plane

#[cfg(test)]
mod tests;
