//! The causal mask, written once: query t may see keys j ≤ t, never a key
//! from its future. Every causal form of the book (softmax attention, the
//! parallel and chunkwise forms of linear attention, the chunkwise delta
//! rule, and their fast f32 copies) masks its scores with [`mask_future`].

use ndarray::{Array2, ArrayRef2, s};

// ANCHOR: mask_future
/// Set every score of a query for a later key, entry (t, j) with j > t of
/// scores: (N, N_k), to `fill`: 0 for a sum, −∞ before a softmax.
pub fn mask_future<A: Clone>(scores: &mut ArrayRef2<A>, fill: A) {
    for (t, mut row) in scores.rows_mut().into_iter().enumerate() {
        let future = (t + 1).min(row.len()); // keys j > t
        row.slice_mut(s![future..]).fill(fill.clone());
    }
}
// ANCHOR_END: mask_future

// ANCHOR: causal_scores
/// tril(Φ_Q Φ_Kᵀ): the scores of query t against keys j ≤ t, and zero
/// above the diagonal. phi_q: (c, p), phi_k: (c_k, p); returns (c, c_k).
pub fn causal_scores(
    phi_q: &ArrayRef2<f64>,
    phi_k: &ArrayRef2<f64>,
) -> Array2<f64> {
    let mut scores = phi_q.dot(&phi_k.t());
    mask_future(&mut scores, 0.0); // a key later than the query
    scores
}
// ANCHOR_END: causal_scores

#[cfg(test)]
mod tests {
    use super::*;
    use crate::random::{randn, seeded};

    #[test]
    fn mask_future_sets_exactly_the_entries_above_the_diagonal() {
        for (n, n_k) in [(1, 1), (3, 3), (4, 7), (7, 4)] {
            let mut scores = Array2::from_elem((n, n_k), 1.0);
            mask_future(&mut scores, -1.0);
            for ((t, j), &x) in scores.indexed_iter() {
                assert_eq!(x, if j > t { -1.0 } else { 1.0 }, "({t}, {j})");
            }
        }
    }

    #[test]
    fn causal_scores_are_the_products_on_and_below_the_diagonal() {
        for seed in 0..3 {
            let mut rng = seeded(seed);
            let (q, k) = (randn(&mut rng, 9, 4), randn(&mut rng, 9, 4));
            let scores = causal_scores(&q, &k);
            for ((t, j), &x) in scores.indexed_iter() {
                if j > t {
                    assert_eq!(x, 0.0, "({t}, {j})");
                } else {
                    let full = q.row(t).dot(&k.row(j));
                    assert!((x - full).abs() <= 1e-12 * (1.0 + full.abs()));
                }
            }
        }
    }
}
