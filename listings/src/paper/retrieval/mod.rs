//! Chapter "Synthetic retrieval experiments": the paper's retrieval task,
//! a one-layer model with every feature map and both update rules, its
//! gradient by hand, Adam, the training loop with the paper's stopping
//! rule, the sweep's plan, and what the chapter prints from the committed
//! sweep. The fast f32 trainer that made that data lives in the crate's
//! `trainers` module, which builds on these modules; none of them uses it.

pub mod adam;
pub mod model;
pub mod study;
pub mod sweep;
pub mod task;
pub mod train;

#[cfg(test)]
mod tests;
