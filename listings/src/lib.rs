//! The listings of *Linear Attention Is Fast Weights*.
//!
//! Every code block the book shows is a `pub fn` in one of these modules,
//! cut out by `// ANCHOR:` comments, with unit tests below it that check what
//! the prose claims. The tree follows `src/SUMMARY.md`: [`m3`] holds Part I
//! (one module per chapter, named like the chapter's file), [`paper`] Part
//! II, [`after`] Part III (whose last chapter, "After the paper", keeps
//! its module in [`paper`] for now), [`appendix`] the appendices that
//! compute, and [`fast`] the f32 forms Appendix E times. A chapter's
//! module uses earlier chapters and the shared modules below, never a
//! later chapter (`tests/chapter_order.rs`).
//!
//! Code blocks in the book reach ndarray, rand and approx through the
//! re-exports below, so `mdbook test` needs only this one crate on its path.

pub use approx;
pub use ndarray;
pub use rand;
pub use rand_chacha;

// The `mod` lines follow the book (rustfmt keeps them as written, and
// tests/chapter_order.rs checks the chapters' order against SUMMARY.md):
// the shared modules first, then the parts in the order of the book, then
// what is not a chapter of its own.

// Shared by every chapter.
pub mod causal;
pub mod data_file;
pub mod input;
pub mod linalg;
pub mod measure;
pub mod memo;
pub mod phi;
pub mod random;
pub mod summary;
pub mod table;

// The chapters, part by part, in the order of src/SUMMARY.md: Part I (the
// module M3), Part II (the paper), Part III (after the paper), the
// appendices that compute.
pub mod m3;
pub mod paper;
pub mod after;
pub mod appendix;

// The fast f32 forms that Appendix E shows and times.
pub mod fast;

// The trainers that made the committed data; they use the chapters.
pub mod trainers;

// What the build runs: every printed result, by name.
pub mod outputs;
