//! (in progress)
pub mod demo;
pub mod query;
pub mod watch;
