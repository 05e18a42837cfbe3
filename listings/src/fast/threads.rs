//! Threads: every fast form split across value columns.

use crate::input::InputError;
use ndarray::{Array2, ArrayRef2, Axis, s};

// ANCHOR: across_value_columns
/// Run `form` on `threads` groups of value columns at once, one scoped
/// thread per group, and set the outputs side by side. Right for every
/// form of this module: output column i depends on value column i (and on
/// the queries and keys) only, since no weight depends on the values and
/// row i of S or W meets only entry i of each value. Each thread repeats
/// the work that does not depend on the values (normalisers, scores), one
/// reason the speed-up falls short of the number of threads.
/// v: (N, m); `form` maps (N, m') values to (N, m') outputs.
pub fn across_value_columns<F>(
    v: &ArrayRef2<f32>,
    threads: usize,
    form: F,
) -> Result<Array2<f32>, InputError>
where
    F: Fn(&ArrayRef2<f32>) -> Result<Array2<f32>, InputError> + Sync,
{
    let m = v.ncols();
    let threads = threads.clamp(1, m.max(1)); // no group without a column
    if threads == 1 {
        return form(v); // nothing to split
    }
    let group =
        |i: usize| v.slice(s![.., i * m / threads..(i + 1) * m / threads]);
    let form = &form;
    let parts = std::thread::scope(|scope| {
        let workers: Vec<_> = (1..threads)
            .map(|i| {
                let columns = group(i);
                scope.spawn(move || form(&columns))
            })
            .collect();
        let mut parts = vec![form(&group(0))]; // the first group, right here
        for worker in workers {
            parts.push(worker.join().expect("a worker thread does not panic"));
        }
        parts
    });
    let parts = parts.into_iter().collect::<Result<Vec<_>, _>>()?;
    let views: Vec<_> = parts.iter().map(|part| part.view()).collect();
    Ok(ndarray::concatenate(Axis(1), &views).expect("parts of one length"))
}
// ANCHOR_END: across_value_columns

/// A form as `across_value_columns` takes it: values in, outputs out, the
/// queries, keys and settings captured.
pub type ValueForm<'a> =
    dyn Fn(&ArrayRef2<f32>) -> Result<Array2<f32>, InputError> + Sync + 'a;
