// Try it: the Appendix A experiment of "The delta rule" on a memory small
// enough to print, with the chapter's claims checked on it. The book shows
// the lines between the anchors; `mdbook test` compiles and runs the whole
// file.
extern crate listings;

use listings::linalg::orthonormal_keys;
use listings::m3::fast_weight_memory::fast_weight_write;
use listings::ndarray::{Array2, ArrayView1, array};
use listings::paper::delta_rule::{delta_rule_step, gated_rule_step};
use listings::random::seeded;

fn main() {
    // ANCHOR: delta_tour
    let keys = orthonormal_keys(&mut seeded(0), 2, 4).unwrap(); // k1, k2 in ℝ⁴
    let (k1, k2) = (keys.row(0), keys.row(1));
    let (v1, v2, v3) = (array![1.0, 0.0], array![0.0, 1.0], array![4.0, 4.0]);
    let mut memory = Array2::zeros((2, 4)); // S: (m, p) = (2, 4)
    fast_weight_write(&mut memory, &v1, &k1).unwrap();
    fast_weight_write(&mut memory, &v2, &k2).unwrap();
    let beta = 0.5; // rewrite k2 with v3 at half strength
    let (mut delta, mut gated, mut sum) =
        (memory.clone(), memory.clone(), memory.clone());
    delta_rule_step(&mut delta, &k2, &v3, beta).unwrap();
    gated_rule_step(&mut gated, &k2, &v3, beta).unwrap();
    fast_weight_write(&mut sum, &v3, &k2).unwrap();
    for (name, s) in [("delta", &delta), ("gated", &gated), ("sum", &sum)] {
        let (at_k2, at_k1) = (s.dot(&k2), s.dot(&k1));
        println!("{name:>5}: k2 reads {at_k2:.3}, k1 reads {at_k1:.3}");
    }
    // ANCHOR_END: delta_tour
    let close = |a: &Array2<f64>, k: &ArrayView1<f64>, want: [f64; 2]| {
        let read = a.dot(k);
        (read[0] - want[0]).abs() < 1e-12 && (read[1] - want[1]).abs() < 1e-12
    };
    // Both rules move k2 to (1 − β) v2 + β v3 = [2, 2.5].
    assert!(close(&delta, &k2, [2.0, 2.5]), "delta rule at k2");
    assert!(close(&gated, &k2, [2.0, 2.5]), "gated rule at k2");
    // Only the delta rule keeps v1 at k1; the gated rule halves it.
    assert!(close(&delta, &k1, [1.0, 0.0]), "delta rule at k1");
    assert!(close(&gated, &k1, [0.5, 0.0]), "gated rule at k1");
    // The sum rule adds: v2 + v3.
    assert!(close(&sum, &k2, [4.0, 5.0]), "sum rule at k2");
}
