//! (in progress)
pub mod query;
pub mod mrc;
