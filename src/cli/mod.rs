//! Command-line interface (clap derive).
pub mod query_args;
