// Try it: the running example of "That matrix is the fast-weight memory",
// read by causal linear attention both ways, with two of the chapter's
// claims checked on it. The book shows the lines between the anchors;
// `mdbook test` compiles and runs the whole file.
extern crate listings;

use listings::linalg::worst_row_relative_difference;
use listings::m3::attention::walkthrough;
use listings::m3::fast_weight_memory::{
    causal_linear_attention, linear_attention_parallel,
};
use listings::ndarray::{ArrayRef2, s};
use listings::phi::elu_plus_one;

fn main() {
    // ANCHOR: fast_weights_tour
    let (qkv, _) = walkthrough(0);
    let phi = |x: &ArrayRef2<f64>| elu_plus_one(x);
    let recurrent = causal_linear_attention(&qkv.q, &qkv.k, &qkv.v, phi)
        .expect("shapes agree and every denominator is above zero");
    let parallel =
        linear_attention_parallel(&phi(&qkv.q), &phi(&qkv.k), &qkv.v)
            .expect("shapes agree and every denominator is above zero");
    let gap = worst_row_relative_difference(&recurrent, &parallel);
    println!("recurrent vs parallel: {gap:.1e}");
    println!("last output: {:.3}", recurrent.row(11));
    // ANCHOR_END: fast_weights_tour
    assert!(gap < 1e-12, "the two forms disagree");
    // Each output is a weighted average of the values seen so far, so it
    // lies between their smallest and largest entry, column by column.
    for t in 0..recurrent.nrows() {
        for c in 0..recurrent.ncols() {
            let past = qkv.v.slice(s![..=t, c]);
            let lo = past.fold(f64::INFINITY, |a, &b| a.min(b)) - 1e-12;
            let hi = past.fold(f64::NEG_INFINITY, |a, &b| a.max(b)) + 1e-12;
            let o = recurrent[[t, c]];
            assert!(lo <= o && o <= hi, "o[{t}, {c}] is not an average");
        }
    }
}
