//! Command-line interface (clap derive).
pub mod query_args;
pub mod watch_args;
