//! Chapter "Capacity by feature map and update rule": how many random
//! associations a memory holds, for each feature map and for the sum and
//! delta rules, computed directly, with no training.
//!
//! Keys are drawn in ℝ^d (d = [`D`]), mapped by φ to ℝ^p and scaled to unit
//! length; values are random unit vectors in ℝ^m (m = [`M`]). Shapes:
//! keys: (n, d), mapped keys: (n, p), values: (n, m), memory S: (m, p).

use crate::input::{InputError, check_qkv, finite, nonzero_rows};
use crate::linalg::relative_errors;
use crate::m3::attention::unit_rows;
use crate::m3::delete_softmax::{RANK_TOL, numerical_rank};
use crate::paper::capacity::sum_rule_recall;
use crate::paper::delta_rule::delta_rule_step;
use crate::phi::FeatureMap;
use crate::random::{randn, seeded};
use ndarray::{Array1, Array2, ArrayRef2};
use rand::Rng;

pub mod study;

/// Width of the keys before the feature map.
pub const D: usize = 8;
/// Width of the values.
pub const M: usize = 8;
/// Passes of the replayed delta rule over the same associations.
pub const PASSES: usize = 20;
/// Where the seeds of φ's random projection start: point `seed` draws its
/// projection from seed `PROJECTION_SEEDS + seed`, a stream apart from
/// the keys' and values' (seeds 0, 1, 2, …).
pub const PROJECTION_SEEDS: u64 = 1000;

// ANCHOR: delta_rule_recall
/// Write every association with the delta rule (β = 1), `passes` times
/// over the same sequence, then read each key back: the relative errors
/// ‖S k_i − v_i‖ / ‖v_i‖. keys: (n, p), unit length; values: (n, m).
pub fn delta_rule_recall(
    keys: &ArrayRef2<f64>,
    values: &ArrayRef2<f64>,
    passes: usize,
) -> Result<Array1<f64>, InputError> {
    check_qkv(keys, keys, values, false)?;
    nonzero_rows("the norm of a row of values", values)?;
    let mut memory = Array2::zeros((values.ncols(), keys.ncols()));
    for _ in 0..passes {
        for (k, v) in keys.rows().into_iter().zip(values.rows()) {
            delta_rule_step(&mut memory, &k, &v, 1.0)?;
        }
    }
    finite(
        "the errors",
        relative_errors(&keys.dot(&memory.t()), values),
    )
}
// ANCHOR_END: delta_rule_recall

// ANCHOR: mapped_keys
/// n random keys k_i ~ N(0, I_d) from `rng`, through φ (its projection, if
/// it has one, drawn from seed `PROJECTION_SEEDS + seed`): (n, p).
pub fn mapped_keys(
    map: FeatureMap,
    rng: &mut impl Rng,
    n: usize,
    seed: u64,
) -> Result<Array2<f64>, InputError> {
    let keys = randn(rng, n, D);
    map.apply(
        &keys,
        &map.projection(&mut seeded(PROJECTION_SEEDS + seed), D),
    )
}
// ANCHOR_END: mapped_keys

// ANCHOR: sweep_point
/// One point of the sweep: n random keys through φ, then the rank of the
/// mapped keys and the RMS recall error of the sum rule, of one pass of
/// the delta rule and of `PASSES` passes of it.
pub fn sweep_point(
    map: FeatureMap,
    n: usize,
    seed: u64,
) -> Result<[f64; 4], InputError> {
    at_least_one_association(n)?;
    let mut rng = seeded(seed);
    let mapped = mapped_keys(map, &mut rng, n, seed)?; // φ(k_i): (n, p)
    let values = unit_rows(&randn(&mut rng, n, M));
    let rank = numerical_rank(&mapped, RANK_TOL) as f64;
    let unit = unit_rows(&mapped); // ‖φ(k_i)‖ = 1
    let sum = sum_rule_recall(&unit, &values)?;
    let once = delta_rule_recall(&unit, &values, 1)?;
    let replay = delta_rule_recall(&unit, &values, PASSES)?;
    Ok([rank, rms(&sum), rms(&once), rms(&replay)])
}
// ANCHOR_END: sweep_point

/// A point of either setting needs at least one association.
fn at_least_one_association(n: usize) -> Result<(), InputError> {
    if n == 0 {
        return Err(InputError::BadParameter {
            name: "n",
            value: n,
            rule: "a point holds at least one association",
        });
    }
    Ok(())
}

fn rms(errors: &Array1<f64>) -> f64 {
    (errors.mapv(|e| e * e).sum() / errors.len() as f64).sqrt()
}

// ANCHOR: setting2_point
/// Setting 2 with n keys: 2n writes whose keys are drawn with replacement
/// from n random keys, each with a fresh value; then every key that was
/// written is read, and compared with the value of its last write.
/// Returns the RMS error of the sum rule and of the delta rule (β = 1).
pub fn setting2_point(
    map: FeatureMap,
    n: usize,
    seed: u64,
) -> Result<[f64; 2], InputError> {
    at_least_one_association(n)?;
    let mut rng = seeded(seed);
    let keys = unit_rows(&mapped_keys(map, &mut rng, n, seed)?);
    let mut sum = Array2::zeros((M, keys.ncols()));
    let mut delta = sum.clone();
    let mut last: Vec<Option<Array1<f64>>> = vec![None; n];
    for _ in 0..2 * n {
        let i = rng.random_range(0..n); // keys repeat
        let v = unit_rows(&randn(&mut rng, 1, M)).row(0).to_owned();
        crate::m3::fast_weight_memory::fast_weight_write(
            &mut sum,
            &v,
            &keys.row(i),
        )?;
        delta_rule_step(&mut delta, &keys.row(i), &v, 1.0)?;
        last[i] = Some(v);
    }
    Ok([
        last_value_error(&sum, &keys, &last),
        last_value_error(&delta, &keys, &last),
    ])
}

/// The RMS of ‖S k_i − v_i‖ over the keys that were written (`last[i]`
/// holds the value of key i's last write, `None` if it never was).
/// s: (m, p), keys: (n, p).
fn last_value_error(
    s: &Array2<f64>,
    keys: &Array2<f64>,
    last: &[Option<Array1<f64>>],
) -> f64 {
    let misses: Vec<f64> = (keys.rows().into_iter().zip(last))
        .filter_map(|(k, v)| v.as_ref().map(|v| s.dot(&k) - v))
        .map(|miss| miss.dot(&miss))
        .collect();
    (misses.iter().sum::<f64>() / misses.len() as f64).sqrt()
}
// ANCHOR_END: setting2_point

#[cfg(test)]
mod tests;
