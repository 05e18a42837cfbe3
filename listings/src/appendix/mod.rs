//! The appendices that compute: the linear-algebra primer (B) and where
//! speed comes from (E).

pub mod primer;
pub mod speed;
