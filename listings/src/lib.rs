//! The listings of *Linear Attention Is Fast Weights*.
//!
//! Every code block the book shows is a `pub fn` in one of these modules,
//! cut out by `// ANCHOR:` comments, with unit tests below it that check what
//! the prose claims. The modules follow the chapters.
//!
//! Code blocks in the book reach ndarray, rand and approx through the
//! re-exports below, so `mdbook test` needs only this one crate on its path.

pub use approx;
pub use ndarray;
pub use rand;
pub use rand_chacha;

pub mod attention;
pub mod capacity;
pub mod capacity_probe;
pub mod capacity_sweep;
pub mod cost;
pub mod delta;
pub mod fast_weights;
pub mod feature_maps;
pub mod feature_study;
pub mod fwp;
pub mod input;
pub mod kernel;
pub mod normaliser;
pub mod outputs;
pub mod primer;
pub mod random;
pub mod retrieval;
pub mod schedules;
pub mod speed;
pub mod summary;
pub mod walkthrough;
