//! The trainers that made the book's committed data: the retrieval
//! chapter's fast f32 trainer, the recall trainer of "After the paper",
//! the tracking trainer of "The transition's spectrum",
//! the f32 kernels they run on, and the sweep runners that train every
//! run of a chapter's plan on all the machine's threads.
//!
//! They are engines, not lessons. The chapters show the ideas (the model,
//! its reads, one backward pass, the stopping rule, the plan) and read the
//! committed data; these modules build on the chapters' definitions
//! (`paper::retrieval`, `after::recall`,
//! `after::spectrum::tracking`) to train them fast. Imports
//! run one way: a trainer uses the chapters, and no chapter uses a trainer
//! (only tests reach across, to retrain a committed run).
//! `cargo xtask retrieval`, `cargo xtask recall` and `cargo xtask
//! tracking` run them, and the
//! benchmark times the retrieval trainer.

pub mod estimate;
pub mod kernels;
pub mod lm;
pub mod mqar;
pub mod mqar_rewrite;
pub mod recall;
pub mod retrieval;
pub mod sweep;
pub mod tracking;
