//! Chapter "After the paper", trained: multi-query associative recall with
//! one layer of each update rule and of softmax attention, at one width,
//! as the number of pairs grows. The task, the models with their hand-made
//! gradients, and what the chapter prints from the committed comparison;
//! the loop that trained it lives in the crate's `trainers` module, which
//! builds on these modules.

pub mod model;
pub mod mqar;
pub mod study;
pub mod task;
pub mod zoology;
pub mod zoology_study;

#[cfg(test)]
mod tests;
#[cfg(test)]
mod zoology_tests;
