//! Chapter "Trained recall": multi-query associative recall in
//! Zoology's setting (`mqar`, `zoology`, `zoology_study`: two layers with
//! short convolutions, every rule and softmax attention, several widths),
//! its rewrite variant (`rewrite`, `rewrite_study`: half of the keys
//! written twice, the latest value asked), recall against state size
//! (`window`, `zoology_state`: sliding-window attention and a hybrid),
//! and the one-layer variant of Appendix G (`task`, `model`, `study`). The tasks, the
//! models with their hand-made gradients, and what the chapter prints
//! from the committed comparisons; the loops that trained them live in
//! the crate's `trainers` module, which builds on these modules.

pub mod model;
pub mod mqar;
pub mod rewrite;
pub mod rewrite_study;
pub mod study;
pub mod task;
pub mod window;
pub mod zoology;
pub mod zoology_state;
pub mod zoology_study;

#[cfg(test)]
mod tests;
