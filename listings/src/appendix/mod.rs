//! The appendices that compute: the linear-algebra primer (B) and where
//! speed comes from (E), in the order of `src/SUMMARY.md`.

pub mod primer;
pub mod speed;
