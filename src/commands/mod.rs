//! (in progress)
pub mod query;
pub mod demo;
pub mod watch;
