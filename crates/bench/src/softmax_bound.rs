//! Why the tiled softmax stops where it does: its two matrix products
//! timed alone, in its own blocks, beside the whole call. What is left of
//! the call's time is the online softmax between the products (the row
//! maxima, the exponentials, the rescaling) and the overflow check; the
//! bound says how short that part would have to be for the target.

use crate::forms::{Row, flops};
use crate::targets::{AT, TARGETS, Target};
use crate::timing::{Timing, time};
use listings::fast::simd::product;
use listings::fast::{KEY_BLOCK, QUERY_BLOCK, random_inputs, to_f32};
use listings::ndarray::{Array2, ArrayRef2, s};
use std::hint::black_box;

/// The products of `softmax_attention_tiled_f32`, in its blocks, and
/// nothing else: S = Q K_bᵀ into one (`queries`, `keys`) buffer, then
/// O += S V_b, for every block of keys at or below the diagonal. Without
/// the softmax between them the result is Σ_b (Q K_bᵀ) V_b over those
/// blocks, which only the test reads.
pub fn products_alone(
    q: &ArrayRef2<f32>,
    k: &ArrayRef2<f32>,
    v: &ArrayRef2<f32>,
    queries: usize,
    keys: usize,
) -> Array2<f32> {
    let (n, m) = (q.nrows(), v.ncols());
    let mut scores = Array2::<f32>::zeros((queries, keys));
    let mut o = Array2::<f32>::zeros((n, m));
    for start in (0..n).step_by(queries) {
        let rows = start..(start + queries).min(n);
        let q_b = q.slice(s![rows.clone(), ..]);
        for first in (0..rows.end).step_by(keys) {
            let cols = first..(first + keys).min(rows.end);
            let mut p = scores.slice_mut(s![..rows.len(), ..cols.len()]);
            let k_b = k.slice(s![cols.clone(), ..]);
            product(1.0, &q_b, &k_b.t(), 0.0, &mut p);
            let mut out = o.slice_mut(s![rows.clone(), ..]);
            product(1.0, &p, &v.slice(s![cols, ..]), 1.0, &mut out);
        }
    }
    o
}

/// Time [`products_alone`] in the tiled form's blocks at (d, N).
pub fn time_products(d: usize, n: usize) -> Timing {
    let [q, k, v] = random_inputs(2, n, d, d).map(|a| to_f32(&a));
    time(|| {
        black_box(products_alone(&q, &k, &v, QUERY_BLOCK, KEY_BLOCK));
    })
}

/// The bound at the targets' size, from this run's row of the tiled form,
/// the products' timing and the ceiling; `None` if the form did not run.
pub fn bound(
    rows: &[Row],
    products: &Timing,
    ceiling: f64,
) -> Option<SoftmaxBound> {
    let (d, n) = AT;
    let form = "softmax tiled";
    let row = rows
        .iter()
        .find(|r| r.form == form && r.d == d && r.n == n)?;
    let at_least = TARGETS.iter().find_map(|t| match *t {
        Target::CeilingPercent { form: f, at_least } if f == form => {
            Some(at_least)
        }
        _ => None,
    })?;
    let work = flops(form, n, d, 0);
    let median = row.timing?.median;
    Some(SoftmaxBound::new(
        median,
        products.median,
        work,
        ceiling,
        n,
        at_least,
    ))
}

/// The split of one tiled call at the targets' size, and what the target
/// leaves for the softmax.
pub struct SoftmaxBound {
    /// The whole call's median seconds and percent of the ceiling.
    pub call_seconds: f64,
    pub call_percent: f64,
    /// The two products alone: median seconds and percent of the ceiling
    /// (the same useful work divided by their time).
    pub products_seconds: f64,
    pub products_percent: f64,
    /// The scores the softmax passes over: the blocks' entries.
    pub scores: f64,
    /// The target, percent of the ceiling, and the seconds the whole call
    /// may take to meet it.
    pub target_percent: f64,
    pub target_seconds: f64,
}

impl SoftmaxBound {
    /// From the call's and the products' medians, the useful work (flop)
    /// and the ceiling (GFLOP/s), at N and the tiled form's blocks.
    pub fn new(
        call: f64,
        products: f64,
        work: f64,
        ceiling: f64,
        n: usize,
        target_percent: f64,
    ) -> SoftmaxBound {
        let percent = |seconds: f64| 100.0 * work / seconds / 1e9 / ceiling;
        SoftmaxBound {
            call_seconds: call,
            call_percent: percent(call),
            products_seconds: products,
            products_percent: percent(products),
            scores: block_entries(n, QUERY_BLOCK) as f64,
            target_percent,
            target_seconds: work / (target_percent / 100.0 * ceiling * 1e9),
        }
    }

    /// The seconds the call spends beyond its products.
    pub fn rest(&self) -> f64 {
        self.call_seconds - self.products_seconds
    }

    /// The seconds the target leaves for everything beyond the products
    /// (negative when the products alone are too slow for it).
    pub fn allowed(&self) -> f64 {
        self.target_seconds - self.products_seconds
    }
}

/// The entries of the blocks of scores the tiled form computes at N:
/// for each block of queries, its rows times the keys up to its last row
/// (the blocks of keys cover those keys once, the last one cut there).
pub fn block_entries(n: usize, queries: usize) -> usize {
    (0..n)
        .step_by(queries)
        .map(|start| {
            let end = (start + queries).min(n);
            (end - start) * end // keys 0..end, the blocks cover them once
        })
        .sum()
}

impl std::fmt::Display for SoftmaxBound {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ms = 1e3;
        write!(
            f,
            "bound: softmax tiled takes {:.1} ms ({:.1}% of the ceiling); its \
             two matrix products alone, in its blocks of {QUERY_BLOCK} × \
             {KEY_BLOCK}, take {:.1} ms ({:.1}%), and the online softmax \
             between them the other {:.1} ms ({:.2} ns per score). ",
            self.call_seconds * ms,
            self.call_percent,
            self.products_seconds * ms,
            self.products_percent,
            self.rest() * ms,
            self.rest() / self.scores * 1e9,
        )?;
        match self.allowed() > 0.0 {
            true => writeln!(
                f,
                "At {:.0}% the call may take {:.1} ms, which leaves the \
                 softmax {:.1} ms ({:.2} ns per score), {:.0}% of its time \
                 in this run.",
                self.target_percent,
                self.target_seconds * ms,
                self.allowed() * ms,
                self.allowed() / self.scores * 1e9,
                100.0 * self.allowed() / self.rest(),
            ),
            false => writeln!(
                f,
                "The products alone are below {:.0}%: the target is out of \
                 reach at their rate.",
                self.target_percent
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use listings::fast::softmax_attention_blocks_f32;

    #[test]
    fn the_products_alone_visit_the_blocks_the_tiled_form_visits() {
        // Σ over the blocks of keys at or below the diagonal of
        // (Q K_bᵀ) V_b is, row by row, Σ_j (q_i · k_j) v_j over the keys
        // up to the last row of i's block of queries: compared with that
        // sum written out, for blocks that cut N unevenly.
        let n = 37;
        let [q, k, v] = random_inputs(5, n, 4, 3).map(|a| to_f32(&a));
        for (queries, keys) in [(4, 8), (5, 5), (6, 18), (64, 64)] {
            let got = products_alone(&q, &k, &v, queries, keys);
            for i in 0..n {
                let end = ((i / queries + 1) * queries).min(n);
                for c in 0..3 {
                    let want: f32 = (0..end)
                        .map(|j| q.row(i).dot(&k.row(j)) * v[[j, c]])
                        .sum();
                    let err = (got[[i, c]] - want).abs();
                    assert!(err < 1e-4 * (1.0 + want.abs()), "{i} {c}");
                }
            }
            // And the tiled form accepts the same blocks.
            assert!(
                softmax_attention_blocks_f32(&q, &k, &v, queries, keys).is_ok()
            );
        }
    }

    #[test]
    fn the_blocks_hold_the_lower_triangle_and_a_square_per_block() {
        // N = 2B: two blocks of B queries, B² and 2B² entries, N²/2 + N B/2.
        assert_eq!(block_entries(512, 256), 256 * 256 + 256 * 512);
        assert_eq!(block_entries(5, 2), 2 * 2 + 2 * 4 + 5);
    }

    #[test]
    fn the_bound_splits_the_call_into_products_and_the_rest() {
        // Work 70 Gflop at a 100 GFLOP/s ceiling: 0.7 s at 100%, 1 s at
        // 70%. A 1.4 s call whose products take 0.9 s: 50% and 77.8%, the
        // rest 0.5 s, of which the target leaves 0.1 s (20%).
        let b = SoftmaxBound::new(1.4, 0.9, 70e9, 100.0, 512, 70.0);
        assert!((b.call_percent - 50.0).abs() < 1e-9);
        assert!((b.products_percent - 700.0 / 9.0).abs() < 1e-9);
        assert!((b.target_seconds - 1.0).abs() < 1e-12);
        assert!((b.rest() - 0.5).abs() < 1e-12);
        assert!((b.allowed() - 0.1).abs() < 1e-12);
        let said = b.to_string();
        assert!(said.contains("leaves the softmax 100.0 ms"), "{said}");
        assert!(said.contains("20% of its time"), "{said}");
        // Products slower than the target allows: out of reach.
        let slow = SoftmaxBound::new(1.4, 1.2, 70e9, 100.0, 512, 70.0);
        assert!(slow.allowed() < 0.0);
        assert!(slow.to_string().contains("out of reach"), "{slow}");
    }
}
