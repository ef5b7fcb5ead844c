//! LiteHit: exact LRU prefix-cache hit rates at any capacity from one pass over a block trace.
//!
//! Data flows one way (see `docs/ARCHITECTURE.md`):
//! `formats` → `preprocess` → `hitcore` → `facts` → `projector` → `output`.
//! `engine` runs that chain for the offline replay and the live monitor alike; `commands`,
//! `live` and `tui` are shells over it.
#![warn(clippy::unwrap_used)]

pub mod cli;
pub mod commands;
pub mod config;
pub mod engine;
pub mod facts;
pub mod formats;
pub mod hitcore;
pub mod live;
pub mod output;
pub mod preprocess;
pub mod projector;
pub mod tui;
pub mod workload;
