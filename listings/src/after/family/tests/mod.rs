//! Tests of "After the paper": every rule as one affine step per token and
//! its chunkwise form (`forms`), and what the rules do to a memory that is
//! being edited (`editing`).

use super::study::*;
use super::*;
use crate::after::family::study::{chapter_editing, chapter_fading};
use crate::linalg::worst_row_relative_difference;
use crate::m3::schedules::AffineStep;

mod editing;
mod forms;

fn assert_close(a: &Array2<f64>, b: &Array2<f64>, tol: f64, what: &str) {
    let diff = worst_row_relative_difference(a, b);
    assert!(diff < tol, "{what}: relative difference {diff}");
}

fn unit(x: &Array2<f64>) -> Array2<f64> {
    crate::m3::attention::unit_rows(x)
}
