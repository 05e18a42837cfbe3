//! Studies the book shows more than once (a printed table and a figure, or
//! a chapter's tests and its output) run once per process: each chapter's
//! `study.rs` declares such a study with [`once!`], and one build computes
//! it once, so its table and its figure show the same run.

/// `pub fn name() -> &'static T`, computing `init` on the first call only.
macro_rules! once {
    ($(#[$doc:meta])* $name:ident: $ty:ty = $init:expr;) => {
        $(#[$doc])*
        pub fn $name() -> &'static $ty {
            static CELL: std::sync::OnceLock<$ty> =
                std::sync::OnceLock::new();
            CELL.get_or_init(|| $init)
        }
    };
}
pub(crate) use once;
