//! Part II — The paper: linear transformers are secretly fast weight
//! programmers, one module per chapter, in the order of `src/SUMMARY.md`.

pub mod fwp;
pub mod capacity;
pub mod delta_rule;
pub mod feature_maps;
pub mod capacity_sweep;
pub mod retrieval;
pub mod language_model;
