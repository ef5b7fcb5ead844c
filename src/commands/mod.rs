//! (in progress)
pub mod mrc;
pub mod query;
