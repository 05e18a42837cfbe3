//! Chapter "The feature map φ": the two jobs of φ. [`normaliser`]: the
//! denominator of every causal read stays positive; [`recall`]: how much a
//! memory of width p holds, for each map.

pub mod normaliser;
pub mod recall;
