//! The chapter's tests, one file per part of it.

mod adam;
mod model;
mod sweep;
mod task;
mod train;
