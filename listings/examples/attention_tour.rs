// Try it: the running example of "Attention, from scratch", with two of the
// chapter's claims checked on it. The book shows the lines between the
// anchors; `mdbook test` compiles and runs the whole file.
extern crate listings;

use listings::m3::attention::{
    Mask, largest_future_weight, softmax_attention, walkthrough,
    worst_row_sum_error,
};

fn main() {
    // ANCHOR: tour
    let (qkv, _) = walkthrough(0);
    let read = softmax_attention(&qkv.q, &qkv.k, &qkv.v, Mask::Causal)
        .expect("q, k and v agree in shape");
    let row_sum_error = worst_row_sum_error(&read.weights);
    let future = largest_future_weight(&read.weights);
    println!("rows sum to 1 within {row_sum_error:.1e}");
    println!("largest weight on a future key: {future}");
    // ANCHOR_END: tour
    assert!(row_sum_error < 1e-12, "a row of A does not sum to 1");
    assert_eq!(future, 0.0, "a query looked at the future");
}
