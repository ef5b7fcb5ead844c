//! `replay --observed-report FILE`: one JSON line per request the engine hit less than LRU
//! at its own pool (∞ without `--gpu-blocks`/`--gpu-memory`), largest gap first — what a
//! person debugging a deployment reads. The gaps are `litehit_report::EngineComparison`'s.

use std::io::{self, Write};

use litehit_report::RequestGap;

/// One line, its fields in this order.
#[derive(serde::Serialize)]
struct Line<'a> {
    request_id: &'a str,
    instance_id: &'a str,
    timestamp_ns: i64,
    input_tokens: u64,
    observed_hit_tokens: u64,
    /// `null` without an `engine` slot.
    lru_engine_hit_tokens: Option<u64>,
    lru_infinite_hit_tokens: u64,
    gap_tokens: u64,
}

/// Writes the lines of `gaps` (already in order) with a gap above 0.
///
/// # Errors
/// A write error of `out`.
pub fn write_observed_report(gaps: &[RequestGap], out: &mut impl Write) -> io::Result<()> {
    for gap in gaps.iter().filter(|gap| gap.gap_tokens() > 0) {
        let line = Line {
            request_id: &gap.trace_id,
            instance_id: &gap.instance_id,
            timestamp_ns: gap.timestamp_ns,
            input_tokens: gap.input_tokens,
            observed_hit_tokens: gap.observed_hit_tokens,
            lru_engine_hit_tokens: gap.engine_hit_tokens,
            lru_infinite_hit_tokens: gap.infinite_hit_tokens,
            gap_tokens: gap.gap_tokens(),
        };
        serde_json::to_writer(&mut *out, &line)?;
        out.write_all(b"\n")?;
    }
    out.flush()
}
