//! Chapter "Synthetic retrieval experiments": the paper's retrieval task,
//! a one-layer model with every feature map and both update rules, its
//! gradient by hand, Adam, and the training sweep.

pub mod adam;
pub mod fast;
pub mod model;
pub mod sweep;
pub mod task;
pub mod train;
