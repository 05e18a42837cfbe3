//! Chapter "The feature map φ": the two jobs of φ. [`normaliser`]: the
//! denominator of every causal read stays positive; [`recall`]: how much a
//! memory of width p holds, for each map. The chapter's studies and their
//! printed tables are in [`study`], the tests in `tests/`.

pub mod normaliser;
pub mod recall;
pub mod study;

#[cfg(test)]
mod tests;
