//! Part III — After the paper: what the paper's delta rule became, one
//! module per chapter, in the order of `src/SUMMARY.md`. The part's last
//! chapter, "After the paper", keeps its module at `paper::after` for now.

pub mod regression;
pub mod spectrum;
