//! Outputs: `projector` → **output** → files and terminals.
//!
//! Owns every byte `litehit` prints about projected facts: the upstream-compatible query JSONL
//! (hand-formatted for exact `%g` numbers and speed), the miss-ratio-curve report (serde DTOs,
//! table) and its plots (SVG text, PNG pixels). It computes hits only through `projector`
//! and never parses traces or runs the core.

mod line_buffer;
pub mod mrc;
pub mod mrc_planner;
pub mod number_format;
pub mod plot;
pub mod pool_detect;
pub mod query_jsonl;
pub mod query_span;
pub mod query_windows;
pub mod summary;
