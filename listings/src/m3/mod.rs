//! Part I — Linear attention is fast weights (module M3), one module per
//! chapter, in the order of `src/SUMMARY.md`.

pub mod attention;
pub mod cost;
pub mod delete_softmax;
pub mod fast_weight_memory;
pub mod schedules;
pub mod feature_map;
pub mod walkthrough;
