//! The appendices that compute: the linear-algebra primer (B), how the
//! book is verified (D: the mutation score) and where speed comes from
//! (E), in the order of `src/SUMMARY.md`.

pub mod primer;
pub mod how_built;
pub mod speed;
