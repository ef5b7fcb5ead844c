//! Outputs: finished reports → files and terminals.
//!
//! Encoders only: every number here is computed by `litehit-report` (query totals, windows,
//! the pool comparison, the mrc curves and knees) or the engine (the replay summary); this
//! module formats them — the upstream-compatible query JSONL (hand-formatted for exact `%g`
//! numbers and speed), the window lines (JSONL, CSV), the mrc table and JSON, and the plots
//! (SVG text, PNG pixels), and `replay --observed-report`'s lines. It calls no projection (`tests/it/module_layout.rs`).

mod line_buffer;
pub mod mrc;
pub mod number_format;
pub mod observed_report;
pub mod plot;
pub mod policy_table;
pub mod query_jsonl;
pub mod query_windows;
pub mod quota;
pub mod summary;
