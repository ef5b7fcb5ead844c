//! Trace formats: bytes → **formats** → `preprocess`.
//!
//! Owns reading every trace format users have (upstream standard JSONL, Mooncake,
//! Qwen-Bailian, KVCM event-publisher logs, LMCache lookup logs) into one reusable
//! [`TraceEvent`], straight from byte buffers. It validates each line and reports
//! [`ParseError`]s naming the line and field; it never decides policy (skip vs fail) — that is
//! `engine::policy`'s job — and never looks at LRU state.

/// Which trace dialect a file is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, clap::ValueEnum)]
pub enum TraceFormat {
    /// Upstream standard trace JSONL (`type` get/request/write, `timestamp_ns`, `keys`, `input_len`).
    Standard,
    /// Mooncake FAST'25 (`timestamp` ms, `input_length`, `hash_ids`, prefix-chained dense ids).
    Mooncake,
    /// Qwen-Bailian (`timestamp` s, `input_length`, per-block `hash_ids`; chained on read).
    Bailian,
    /// KVCM event-publisher log (`GetCacheLocation` reads, `*WriteCache` writes).
    Kvcm,
    /// LMCache lookup-hash log (hex `chunk_hashes`, already chained).
    Lmcache,
}

/// Whether an event reads the cache (produces a fact) or only writes it (ignored for facts,
/// but still subject to the timestamp-order check).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EventKind {
    #[default]
    Read,
    Write,
}

/// One parsed trace line. Parsers overwrite it in place so its buffers are reused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceEvent {
    pub kind: EventKind,
    /// The instance (lane) the event belongs to; `None` for formats without one.
    pub instance_id: Option<String>,
    /// The trace's own request id; empty when the format has none (the engine derives one).
    pub trace_id: String,
    pub timestamp_ns: i64,
    /// Block keys at trace granularity (already prefix-chained unless the lane chains them).
    pub keys: Vec<i64>,
    /// Input tokens including the incomplete tail; `0` = unknown (derived from the keys).
    pub input_token_len: i64,
}
