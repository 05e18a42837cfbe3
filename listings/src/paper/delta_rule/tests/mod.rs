//! Tests of "The delta rule": one write and what it does to a memory
//! (`write`), and the layer over a sequence, its chunkwise form and its
//! backward pass (`layer`).

use super::study::*;
use super::*;
use crate::linalg::orthonormal_keys;
use crate::linalg::worst_row_relative_difference;
use crate::phi::{dpfp, elu_plus_one};
use crate::random::{randn, seeded};
use approx::assert_relative_eq;
use ndarray::array;

mod layer;
mod write;

/// Two orthonormal keys k1, k2 in ℝ^d and three values: a memory that
/// holds v1 at k1 and v2 at k2, as the paper's Appendix A sets it up.
fn appendix_a(seed: u64, d: usize, m: usize) -> [Array2<f64>; 3] {
    let mut rng = seeded(seed);
    let keys = orthonormal_keys(&mut rng, 2, d).unwrap();
    let values = randn(&mut rng, 3, m);
    let mut memory = Array2::zeros((m, d));
    fast_weight_write(&mut memory, &values.row(0), &keys.row(0)).unwrap();
    fast_weight_write(&mut memory, &values.row(1), &keys.row(1)).unwrap();
    [keys, values, memory]
}

const BETAS: [f64; 5] = [0.0, 0.1, 0.5, 0.9, 1.0];
