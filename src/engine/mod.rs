//! The engine: runs `formats` → `preprocess` → `hitcore` → `projector` for offline replay and
//! the live monitor alike.
//!
//! Owns lanes (one core per instance), routing (by instance id, override, fanout), per-lane
//! normalization and the per-lane capacity-axis accumulators. [`policy`] decides what a bad
//! line does: offline fails fast, live skips and counts. Commands and the TUI are shells over
//! this module and hold no analysis logic.

/// One lane's analysis parameters (one `LiteHit` core per lane).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneSpec {
    pub instance_id: String,
    /// Analysis tokens per block (a multiple of the trace block size).
    pub block_size_tokens: u64,
    /// KV bytes per block (`size_full_only`), recorded in facts for projection.
    pub block_bytes: u64,
    /// Fixed TTL in nanoseconds, `0` = none.
    pub ttl_ns: u64,
    /// Chain raw per-block hashes with the prefix hash before re-blocking.
    pub enable_prefix_hash: bool,
}

/// Which lanes a row goes to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Routing {
    /// The row's own instance id (rows without one go to the only lane, or to `default`).
    #[default]
    ByInstance,
    /// Every row goes to this lane, whatever its instance id.
    Override(String),
    /// Every row goes to every lane (several block sizes / TTLs in one pass).
    Fanout,
}

/// The lanes an engine runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaneSet {
    /// Lanes fixed by a config file, in config order; an unknown instance is an error.
    Configured(Vec<LaneSpec>),
    /// No config file: a lane is created for each instance id seen, all with these
    /// parameters (`instance_id` of the template is the name used for rows without one).
    OnTheFly(LaneSpec),
}

/// Everything the engine needs to turn trace events into facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineConfig {
    /// The trace's native block size in tokens (upstream config `block_size`).
    pub trace_block_size_tokens: u64,
    pub lanes: LaneSet,
    pub routing: Routing,
}
