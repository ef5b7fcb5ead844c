//! The Mooncake FAST'25 trace format: `timestamp` (integer ms), `input_length`, `hash_ids`.
//!
//! Owns Mooncake's length rule: `hash_ids` has `ceil(input_length / block)` prefix-chained ids
//! (the partial tail block has its own id); only the `floor(input_length / block)` complete
//! blocks are kept, since the LRU contract is complete blocks only. A count that is neither is
//! rejected. There is no instance id (`None`); the trace id is the 1-based line number.
//! `output_length` and unknown fields are ignored.

use super::hash_ids_row::Field;
use super::json::{self, Cursor, Fault};
use super::{InstanceSlot, LineOutcome, TraceEvent, keep_full_blocks, reset_event};

const NS_PER_MS: i64 = 1_000_000;

/// Reads Mooncake lines; stateless.
#[derive(Debug, Clone, Copy)]
pub(crate) struct MooncakeReader;

impl MooncakeReader {
    pub(crate) fn parse(
        line: &[u8],
        line_number: u64,
        block_size_tokens: u64,
        event: &mut TraceEvent,
    ) -> Result<LineOutcome, Fault> {
        reset_event(event, InstanceSlot::None);
        let mut timestamp_ms = None;
        let mut input_length = None;
        let mut has_hash_ids = false;
        let mut cur = Cursor::new(line);
        json::walk_object::<Field>(&mut cur, |cur, field| {
            match field {
                Field::Timestamp => timestamp_ms = Some(cur.non_negative_i64()?),
                Field::InputLength => input_length = Some(cur.positive_i64()?),
                Field::HashIds => {
                    cur.key_array_into(&mut event.keys)?;
                    has_hash_ids = true;
                }
            }
            Ok(())
        })?;
        let timestamp_ms = timestamp_ms
            .ok_or_else(|| Fault::field("timestamp", "missing integer field: timestamp"))?;
        event.timestamp_ns = timestamp_ms.checked_mul(NS_PER_MS).ok_or_else(|| {
            Fault::field(
                "timestamp",
                format!("expected milliseconds whose nanoseconds fit i64, found {timestamp_ms}"),
            )
        })?;
        let input_length = input_length
            .ok_or_else(|| Fault::field("input_length", "missing integer field: input_length"))?;
        if !has_hash_ids {
            return Err(Fault::field("hash_ids", "missing array field: hash_ids"));
        }
        keep_full_blocks(
            &mut event.keys,
            input_length.unsigned_abs(),
            block_size_tokens,
            "hash_ids",
            "input_length",
        )?;
        event.input_token_len = input_length;
        json::write_decimal(&mut event.trace_id, line_number);
        Ok(LineOutcome::Event)
    }
}
