//! Capacity-free facts: `hitcore` → **facts** → `projector`.
//!
//! A [`RequestFact`] is everything the replay learned about one request: its hit curve as
//! arithmetic-run segments. It holds no capacity and no bytes; those meet it only in
//! `projector`. `file` reads and writes the upstream `litehit_facts.csv` (and, with the
//! `parquet` feature, `litehit_facts.parquet`, in the columns of `arrow`).

#[cfg(feature = "parquet")]
pub mod arrow;
pub mod curve;
pub mod engine_rule;
pub mod file;

pub use engine_rule::EngineRule;

/// One arithmetic run of the hit curve: the `j`-th block of the run (0-based) is a prefix hit
/// at every capacity `>= start_required_blocks + j`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct HitCurveSegment {
    /// The capacity in blocks at which the run's first block starts to hit.
    pub start_required_blocks: u64,
    /// How many blocks the run holds, each one more block of capacity than the one before.
    pub run_length: u64,
}

impl HitCurveSegment {
    /// One past the largest threshold in this run.
    #[inline]
    #[must_use]
    pub fn end_required_blocks(self) -> u64 {
        // Saturating: facts files are read as upstream does, without bounding start + run.
        self.start_required_blocks.saturating_add(self.run_length)
    }
}

/// The capacity-free fact about one request: its prefix-hit step function.
///
/// Invariant (for facts made by `hitcore`): starts strictly increase, every run is
/// non-empty, and adjacent runs are separated by a gap of at least one (never mergeable).
/// An empty curve means the request head was cold: zero hits at every capacity.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RequestFact {
    /// The runs, in increasing start order; a capacity's hits are summed over them.
    pub hit_curve: Vec<HitCurveSegment>,
}

impl RequestFact {
    /// Builds a fact from `[[start, run], ...]` pairs (tests and readers).
    #[must_use]
    pub fn from_pairs(pairs: &[[u64; 2]]) -> Self {
        Self {
            hit_curve: pairs
                .iter()
                .map(|&[start_required_blocks, run_length]| HitCurveSegment {
                    start_required_blocks,
                    run_length,
                })
                .collect(),
        }
    }

    /// The curve as `[[start, run], ...]` pairs.
    #[must_use]
    pub fn to_pairs(&self) -> Vec<[u64; 2]> {
        self.hit_curve
            .iter()
            .map(|s| [s.start_required_blocks, s.run_length])
            .collect()
    }

    /// Keeps the curve's first `blocks` blocks: the request's hits at any capacity are then
    /// at most `blocks`. The curve's thresholds rise along the request, so this is the curve
    /// of its first `blocks` blocks alone (the engine's last-token rule; a prompt followed by
    /// its output's blocks).
    pub fn keep_first_blocks(&mut self, blocks: u64) {
        let mut left = blocks;
        let mut keep = 0;
        for segment in &mut self.hit_curve {
            if left == 0 {
                break;
            }
            segment.run_length = segment.run_length.min(left);
            left -= segment.run_length;
            keep += 1;
        }
        self.hit_curve.truncate(keep);
    }

    /// Whether the curve satisfies the RLE invariant documented on the type.
    #[must_use]
    pub fn is_canonical(&self) -> bool {
        let runs_non_empty = self
            .hit_curve
            .iter()
            .all(|s| s.run_length > 0 && s.start_required_blocks > 0);
        let gaps = self
            .hit_curve
            .windows(2)
            .all(|w| w[1].start_required_blocks > w[0].end_required_blocks());
        runs_non_empty && gaps
    }
}

/// One facts row: a fact plus the request identity and the units needed to project it later.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FactRecord {
    /// The request's id in the trace.
    pub trace_id: String,
    /// The lane (instance) the request was replayed on.
    pub instance_id: String,
    /// The request's time, for windows and timelines.
    pub timestamp_ns: i64,
    /// The hit-rate denominator (original input tokens, incomplete tail included).
    pub input_token_len: u64,
    /// Tokens per analysis block: hit tokens = hit blocks × this.
    pub block_size_tokens: u64,
    /// KV bytes per block: capacity blocks = floor(capacity bytes / this), in `projector` only.
    pub block_bytes: u64,
    /// The capacity-free hit curve.
    pub fact: RequestFact,
}

/// A borrowed facts row, as the engine produces it (no allocation per row).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FactRow<'a> {
    /// The request's id in the trace.
    pub trace_id: &'a str,
    /// The lane (instance) the request was replayed on.
    pub instance_id: &'a str,
    /// The request's time, for windows and timelines.
    pub timestamp_ns: i64,
    /// The hit-rate denominator (original input tokens, incomplete tail included).
    pub input_token_len: u64,
    /// Tokens per analysis block: hit tokens = hit blocks × this.
    pub block_size_tokens: u64,
    /// KV bytes per block: capacity blocks = floor(capacity bytes / this), in `projector` only.
    pub block_bytes: u64,
    /// The capacity-free hit curve.
    pub fact: &'a RequestFact,
    /// The serving engine's own cached prompt tokens for this request, when the trace said
    /// them ([`crate::formats::TraceEvent::cached_tokens`]); not a facts file column.
    pub observed_cached_tokens: Option<u64>,
}

impl FactRecord {
    /// Borrows this record as a row.
    #[must_use]
    pub fn as_row(&self) -> FactRow<'_> {
        FactRow {
            trace_id: &self.trace_id,
            instance_id: &self.instance_id,
            timestamp_ns: self.timestamp_ns,
            input_token_len: self.input_token_len,
            block_size_tokens: self.block_size_tokens,
            block_bytes: self.block_bytes,
            observed_cached_tokens: None,
            fact: &self.fact,
        }
    }
}
