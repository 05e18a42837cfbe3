// Try it: the normaliser of "The feature map φ" on a two-token sequence
// built so that the second query is orthogonal to z_2 = φ(k_1) + φ(k_2)
// when φ is the identity. The book shows the lines between the anchors;
// `mdbook test` compiles and runs the whole file.
extern crate listings;

use listings::m3::fast_weight_memory::linear_attention_recurrent;
use listings::m3::feature_map::normaliser::causal_denominators;
use listings::ndarray::{Array2, ArrayRef2, array};
use listings::phi::elu_plus_one;

fn main() {
    // ANCHOR: feature_map_tour
    let k = array![[1.0, 0.0], [0.0, 1.0]];
    let q = array![[1.0, 0.0], [1.0, -1.0]]; // q_2 ⊥ k_1 + k_2
    let v = array![[1.0, 2.0], [3.0, 5.0]];
    let phi = |x: &ArrayRef2<f64>| -> Array2<f64> { elu_plus_one(x) };
    let (phi_q, phi_k) = (phi(&q), phi(&k));
    let den = causal_denominators(&phi_q, &phi_k).expect("shapes agree");
    println!("denominators z_t·φ(q_t): {den:.3}");
    let o = linear_attention_recurrent(&phi_q, &phi_k, &v)
        .expect("shapes agree and every denominator is above zero");
    println!("outputs:\n{o:.3}");
    // ANCHOR_END: feature_map_tour
    assert!(
        den.iter().all(|&d| d > 0.0),
        "a denominator is not positive"
    );
    // Each output is an average of the values so far: between their
    // smallest and largest entry, column by column.
    for t in 0..2 {
        for c in 0..2 {
            let past = v.column(c);
            let past = past.iter().take(t + 1);
            let lo = past.clone().fold(f64::INFINITY, |a, &b| a.min(b));
            let hi = past.fold(f64::NEG_INFINITY, |a, &b| a.max(b));
            let x = o[[t, c]];
            assert!(lo - 1e-12 <= x && x <= hi + 1e-12, "o[{t}, {c}] = {x}");
        }
    }
}
