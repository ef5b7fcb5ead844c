//! Command-line interface (clap derive).
pub mod mrc_args;
pub mod query_args;
