//! Chapter "After the paper", trained: multi-query associative recall with
//! one layer of each update rule and of softmax attention, at one width,
//! as the number of pairs grows.

pub mod model;
pub mod sweep;
pub mod task;
pub mod train;
