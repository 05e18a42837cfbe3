//! Chapter "The transition's spectrum", trained: one linear-RNN layer with
//! a delta-rule, a diagonal or a DeltaProduct (two writes per token)
//! transition, each with eigenvalues in [0, 1]
//! or in [−1, 1], trained on parity and on counting modulo 3 over short
//! strings and tested on longer ones. The tasks, the model with its
//! hand-made gradient, and what the chapter prints from the committed
//! study; the loop that trained it lives in the crate's `trainers`.

pub mod model;
pub mod study;
pub mod task;

#[cfg(test)]
mod tests;
