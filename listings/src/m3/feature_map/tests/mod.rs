//! The tests of "The feature map φ": the normaliser, then recall.

mod normaliser;
mod recall;
