//! The root package's integration tests, in one test binary (one link instead of one per
//! file). Each module was once its own `tests/*.rs`; `common` holds the helpers they share,
//! among them the naive oracle and `shared_file`, the one way to reach the real traces in
//! `../shared`.
//!
//! Run one module with `cargo test --test it MODULE::` (e.g. `cargo test --test it cli::help::`).

mod common;

mod assets;
mod cli;
mod config;
mod core_props;
mod digests;
mod error_rule;
mod facts_file;
mod follow;
mod formats;
mod formats_fuzz;
mod fuzz_corpus;
mod grammar_entry_points;
mod horizon;
mod http_ingest;
mod key_shapes;
mod memory;
mod metrics;
mod mrc;
mod openai_live;
mod parity;
mod publication;
mod query;
mod seed_example;
mod shards;
mod sql;
mod tiers;
mod tokenize;
mod tui_render;
mod watch_pty;
mod watch_tail;
mod windows;
