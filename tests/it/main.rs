//! The root package's integration tests, in one test binary (one link instead of one per
//! file). Each module was once its own `tests/*.rs`; `common` holds the helpers they share,
//! among them the naive oracle and `shared_file`, the one way to reach the real traces in
//! `../shared`.
//!
//! Run one module with `cargo test --test it MODULE::` (e.g. `cargo test --test it cli::help::`).

mod common;

mod architecture_doc;
mod assets;
mod cli;
mod completions_man;
mod config;
mod docs_commands;
mod docs_links;
mod engine;
mod error_rule;
mod formats;
mod http;
mod metrics;
mod module_layout;
mod mrc;
mod pool;
mod python;
mod query;
mod replay;
mod shared_data_guard;
mod snapshot_readers;
mod tokenize;
mod tui;
mod watch;
