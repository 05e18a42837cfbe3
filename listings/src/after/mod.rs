//! Part III — After the paper: what the paper's delta rule became, one
//! module per chapter, in the order of `src/SUMMARY.md`.

pub mod regression;
pub mod spectrum;
pub mod family;
pub mod production;
pub mod recall;
