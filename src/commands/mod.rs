//! (in progress)
pub mod query;
