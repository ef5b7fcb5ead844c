//! The root package's integration tests, in one test binary (one link instead of one per
//! file). Each module was once its own `tests/*.rs`; `common` holds the helpers they share,
//! among them the naive oracle and `shared_file`, the one way to reach the real traces in
//! `../shared`.
//!
//! Run one module with `cargo test --test it MODULE::` (e.g. `cargo test --test it cli::help::`).

mod common;

mod assets;
mod cli;
mod completions_man;
mod config;
mod core_props;
mod defaults_file;
mod defaults_tiers;
mod demo;
mod digests;
mod error_rule;
mod facts_file;
mod facts_globs;
mod follow;
mod formats;
mod formats_fuzz;
mod fuzz_corpus;
mod grammar_entry_points;
mod headless_output;
mod horizon;
mod horizon_surfaces;
mod http_ingest;
mod key_shapes;
mod memory;
mod metrics;
mod mrc;
mod openai_live;
mod parity;
mod pool;
mod pool_demo;
mod pool_detect;
mod pool_tiers;
mod pool_timeline;
mod pool_tui;
mod pool_windows;
mod publication;
mod query;
mod query_review;
mod query_review2;
mod replay_summary_order;
mod seed_example;
mod shards;
mod sql;
mod sql_spark;
mod tiers;
mod tiers_review;
mod tokenize;
mod tui_block_bytes_notice;
mod tui_cells;
mod tui_charts;
mod tui_interaction;
mod tui_render;
mod tui_targets;
mod watch_bounds;
mod watch_facts_dir;
mod watch_pty;
mod watch_service;
mod watch_spill;
mod watch_stop_state;
mod watch_tail;
mod watch_tiers;
mod watch_ttl;
mod windows;
mod windows_tiers;
