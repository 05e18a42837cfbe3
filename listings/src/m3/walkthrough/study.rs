//! The agreement table "Code walkthrough" prints: each production form
//! against the form of an earlier chapter; its parameters, and the output.

use super::{
    FastWeightLayer, causal_linear_attention_product, linear_attention_one_shot,
};
use crate::input::InputError;
use crate::table::Table;
use ndarray::{Array2, ArrayRef2};
use std::fmt;

/// The lengths and seeds of the chapter's agreement table.
pub const AGREEMENT_LENGTHS: [usize; 4] = [1, 12, 100, 1000];
pub const AGREEMENT_SEEDS: u64 = 3;

/// Output `walkthrough-agreement`.
pub fn walkthrough_agreement() -> String {
    walkthrough_study(&AGREEMENT_LENGTHS, AGREEMENT_SEEDS).to_string()
}

/// One length of the walkthrough's agreement table.
pub struct WalkthroughRow {
    pub n: usize,
    /// Largest row-relative difference over the seeds, for each check of
    /// [`CHECKS`].
    pub differences: [f64; 4],
}

/// What each column of the agreement table compares: its heading, and
/// the production form against the earlier chapter's form.
pub const CHECKS: [(&str, &str); 4] = [
    ("one shot", "linear_attention_one_shot vs memory first"),
    (
        "causal product",
        "causal_linear_attention_product vs parallel",
    ),
    (
        "segments",
        "FastWeightLayer, segments 1, 2, 3, ... vs recurrent",
    ),
    (
        "token by token",
        "FastWeightLayer, one token a call vs recurrent",
    ),
];

/// Every production form against the form of an earlier chapter, φ =
/// elu+1, ε = 0, random q, k, v: (N, 8), seeds 0..seeds. Segments have
/// lengths 1, 2, 3, … in turn.
pub fn walkthrough_study(lengths: &[usize], seeds: u64) -> WalkthroughTable {
    use crate::linalg::worst_row_relative_difference;
    use crate::m3::delete_softmax::linear_attention_memory_first;
    use crate::m3::fast_weight_memory::{
        linear_attention_parallel, linear_attention_recurrent,
    };
    use crate::phi::elu_plus_one;
    use crate::random::{randn, seeded};
    let phi = |x: &ArrayRef2<f64>| elu_plus_one(x);
    let rows = lengths
        .iter()
        .map(|&n| {
            let mut differences = [0.0_f64; 4];
            for seed in 0..seeds {
                let mut rng = seeded(seed);
                let (q, k) = (randn(&mut rng, n, 8), randn(&mut rng, n, 8));
                let v = randn(&mut rng, n, 8);
                let (phi_q, phi_k) = (phi(&q), phi(&k));
                let recurrent =
                    linear_attention_recurrent(&phi_q, &phi_k, &v).unwrap();
                let pairs = [
                    (
                        linear_attention_one_shot(&q, &k, &v, phi, 0.0),
                        linear_attention_memory_first(&phi_q, &phi_k, &v),
                    ),
                    (
                        causal_linear_attention_product(&q, &k, &v, phi, 0.0),
                        linear_attention_parallel(&phi_q, &phi_k, &v),
                    ),
                    (
                        in_segments(&phi_q, &phi_k, &v, &growing(n)),
                        Ok(recurrent.clone()),
                    ),
                    (
                        in_segments(&phi_q, &phi_k, &v, &vec![1; n]),
                        Ok(recurrent.clone()),
                    ),
                ];
                for (d, (a, b)) in differences.iter_mut().zip(pairs) {
                    let (a, b) = (a.expect("shapes"), b.expect("shapes"));
                    *d = d.max(worst_row_relative_difference(&a, &b));
                }
            }
            WalkthroughRow { n, differences }
        })
        .collect();
    WalkthroughTable { seeds, rows }
}

/// Segment lengths 1, 2, 3, … that add up to n (the last one cut short).
pub fn growing(n: usize) -> Vec<usize> {
    let mut lengths = Vec::new();
    let mut covered = 0;
    while covered < n {
        let next = (lengths.len() + 1).min(n - covered);
        lengths.push(next);
        covered += next;
    }
    lengths
}

/// Run a fresh [`FastWeightLayer`] over the sequence cut into segments of
/// the given lengths, and stack what each segment returns.
pub fn in_segments(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
    v: &ArrayRef2<f64>,
    lengths: &[usize],
) -> Result<Array2<f64>, InputError> {
    let mut layer = FastWeightLayer::new(phi_k.ncols(), v.ncols());
    let mut o = Array2::zeros((phi_q.nrows(), v.ncols()));
    let mut start = 0;
    for &len in lengths {
        let rows = ndarray::s![start..start + len, ..];
        let out = layer.segment(
            &phi_q.slice(rows),
            &phi_k.slice(rows),
            &v.slice(rows),
        )?;
        o.slice_mut(rows).assign(&out);
        start += len;
    }
    Ok(o)
}

/// The walkthrough's agreement table as the chapter prints it.
pub struct WalkthroughTable {
    pub seeds: u64,
    pub rows: Vec<WalkthroughRow>,
}

impl fmt::Display for WalkthroughTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "phi = elu+1, eps = 0, d = m = 8, seeds 0..{}; largest |row \
             difference| / |row|",
            self.seeds
        )?;
        for (heading, what) in CHECKS {
            writeln!(f, "  {heading:<15} {what}")?;
        }
        let mut table = Table::new().right("N", 6);
        for (heading, _) in CHECKS {
            table = table.right(heading, 14);
        }
        for r in &self.rows {
            let cells = r.differences.iter().map(|d| format!("{d:.1e}"));
            table.row(std::iter::once(r.n.to_string()).chain(cells));
        }
        write!(f, "{table}")
    }
}
