//! The tests of "Two faces of one computation", one file per part of the
//! chapter: the chunkwise form, why the forms agree and what chunking needs
//! (the state's Jacobian, affine updates), the backward pass, and what the
//! forms hold and take.

mod backward;
mod chunkwise;
mod state;
mod timing;

use super::study::*;
use super::*;
use crate::linalg::worst_row_relative_difference;
use crate::phi::elu_plus_one;
use crate::random::{randn, seeded};
use approx::assert_relative_eq;

fn random(seed: u64, n: usize, p: usize, m: usize) -> [Array2<f64>; 3] {
    let mut rng = seeded(seed);
    let phi_q = elu_plus_one(&randn(&mut rng, n, p));
    let phi_k = elu_plus_one(&randn(&mut rng, n, p));
    [phi_q, phi_k, randn(&mut rng, n, m)]
}
