//! LiteHit's engine: exact LRU prefix-cache hit rates at any capacity from one pass over a
//! block trace.
//!
//! Owns the whole analysis, in the order data flows (see `docs/ARCHITECTURE.md`):
//! [`formats`] (trace bytes → events) → `preprocess` (the length contract, coarsening, the
//! prefix hash) → `hitcore` (the capacity-free LRU replay, [`LiteHit`]) → [`facts`] (hit curves and
//! their file) → [`projector`] (the one place a capacity meets a fact). [`engine`] runs that
//! chain for the offline replay and the live monitor alike; [`config`] is the one stage where
//! a config file or flags become an engine plan; [`workload`] makes seeded synthetic traffic;
//! [`display`] is the one formatter for what people read.
//!
//! Threads: the offline replay parses on [`threads::available`] workers — the caller's own
//! count if it passes one, else the environment variable `LITEHIT_THREADS` (1 to 256; any other
//! value is an error naming it), else one per core — and the engine replays a batch's lanes on
//! at most as many threads (`Engine::with_threads`, else the same `threads::available`), so an
//! embedding program can cap both.
//!
//! What it must never do: depend on a terminal, a command-line parser, an async runtime or a
//! file watcher (`cargo tree -p litehit-core -e normal` shows none of clap, ratatui,
//! crossterm, tokio, notify, color-eyre, indicatif), print to the terminal, or exit the
//! process. Errors are `thiserror` types that name file, line and field; the caller decides
//! how to report them. So another program — a service, a Python binding — can embed it.
//!
//! The core in five lines — the design document's example (block 4 tokens, 1024 B/block):
//!
//! ```
//! use litehit_core::{LiteHit, project_bytes, project_infinite};
//!
//! let (a, b, c, d, e) = (1, 2, 3, 4, 5);
//! let mut core = LiteHit::new(); // no capacity anywhere in the core
//! let facts: Vec<_> = [[a, b, c].as_slice(), &[a, b, d], &[a, b, c], &[a, e], &[a, e]]
//!     .iter()
//!     .map(|keys| core.process_request(keys, 0))
//!     .collect();
//! assert_eq!(facts[2].to_pairs(), [[1, 2], [4, 1]]); // D jumped the queue before C
//! // Any capacity afterwards, through the one projector:
//! let hits_at = |bytes| facts.iter().map(|f| project_bytes(f, bytes, 1024)).sum::<u64>();
//! assert_eq!((hits_at(2048), hits_at(3072)), (7, 7));
//! assert_eq!(facts.iter().map(project_infinite).sum::<u64>(), 8); // 32 of 54 tokens
//! ```
//!
//! The same from trace lines, through the [`engine`] that `litehit replay` runs (one lane of
//! 4-token, 1024-byte blocks; `replay_stream` parses on as many workers as it is given):
//!
//! ```
//! use litehit_core::engine::pipeline::replay_stream;
//! use litehit_core::engine::{Engine, EngineConfig, LaneSet, LaneSpec, Policy, Routing};
//! use litehit_core::formats::{LineParser, ParseOptions, TraceFormat, DEFAULT_MAX_LINE_BYTES};
//! use litehit_core::projector::project_bytes;
//!
//! let trace = br#"{"type":"get","instance_id":"g","trace_id":"r1","timestamp_ns":1,"keys":[1,2,3],"input_len":12}
//! {"type":"get","instance_id":"g","trace_id":"r2","timestamp_ns":2,"keys":[1,2,4],"input_len":12}
//! {"type":"get","instance_id":"g","trace_id":"r3","timestamp_ns":3,"keys":[1,2,3],"input_len":12}
//! "#;
//! let lane = LaneSpec {
//!     instance_id: "g".into(),
//!     block_size_tokens: 4,
//!     block_bytes: 1024,
//!     ttl_ns: 0,
//!     enable_prefix_hash: false,
//! };
//! let config = EngineConfig {
//!     trace_block_size_tokens: 4,
//!     lanes: LaneSet::OnTheFly(lane),
//!     routing: Routing::ByInstance,
//!     pool: None,
//! };
//! let mut engine = Engine::new(config, Policy::FailFast)?;
//! let parser = LineParser::new(TraceFormat::Standard, ParseOptions::default());
//! let (mut at_2_blocks, mut at_4_blocks) = (Vec::new(), Vec::new()); // hit blocks per request
//! let workers = 2; // what `replay` passes: litehit_core::threads::available(None)?
//! let mut on_fact = |row: litehit_core::facts::FactRow<'_>| {
//!     at_2_blocks.push(project_bytes(row.fact, 2048, row.block_bytes));
//!     at_4_blocks.push(project_bytes(row.fact, 4096, row.block_bytes));
//! };
//! let max_line_bytes = DEFAULT_MAX_LINE_BYTES;
//! let mut on_progress = |_totals| Ok(());
//! replay_stream(
//!     &trace[..], &parser, &mut engine, workers, max_line_bytes, &mut on_fact, &mut on_progress,
//! )?;
//! // r3's block 3 is 4 deep after r2 (behind 4, 2, 1): a hit at 4 blocks, not at 2.
//! assert_eq!((at_2_blocks, at_4_blocks), (vec![0, 2, 2], vec![0, 2, 3]));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
#![warn(missing_docs)]
#![warn(clippy::unwrap_used)]

// The algorithms are private: their types are named at the root, below.
mod hitcore;
mod opt;
mod preprocess;

// Namespaces of the public API, each with its own curated list: trace readers, facts and their
// file, the projector, the engine, configuration, the one grammar, the one formatter, the one
// slot policy, the thread count, and seeded synthetic traffic.
pub mod config;
pub mod display;
pub mod engine;
pub mod engine_pool;
pub mod facts;
pub mod formats;
pub mod grammar;
pub mod projector;
pub mod slots;
pub mod threads;
pub mod workload;

// What most programs need, at the root: the two capacity-free cores, a fact, the projector's
// entry points, and the engine that runs the chain from trace lines.
pub use engine::{CachePolicies, CachePolicy, Engine, EngineConfig, EngineError};
pub use facts::{FactRecord, FactRow, HitCurveSegment, RequestFact};
pub use formats::TraceFormat;
pub use hitcore::{
    COMPACTION_POSITIONS_PER_LIVE_KEY, COMPACTION_SLACK_POSITIONS, GROWTH_HEADROOM_BYTES, LiteHit,
    OutOfMemory, headroom_left,
};
pub use opt::OptCore;
pub use preprocess::{
    NormalizeError, NormalizeParams, NormalizedRequest, apply_prefix_hash,
    apply_prefix_hash_in_place, block_size_hint, normalize_appended_keys, normalize_keys_in_place,
    normalize_request, normalize_request_into, prefix_hash_next,
};
pub use projector::{
    Capacity, CapacityAxisAccumulator, project_blocks, project_bytes, project_infinite,
};
