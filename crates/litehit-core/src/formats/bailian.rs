//! The Qwen-Bailian trace format: `timestamp` (seconds), `input_length`, per-block `hash_ids`.
//!
//! Owns reproducing upstream's converter (`trace_converter/converters/qwen_bailian.py`) so that
//! reading a Bailian file directly yields the same facts as converting it and replaying the
//! standard trace:
//! * keys = `apply_prefix_hash(hash_ids[: input_length // block])` (the ids are per-block
//!   hashes, not chained; the partial tail id is dropped). A `hash_ids` count other than
//!   `ceil` or `floor` of `input_length / block` is rejected (the converter would pass a short
//!   list on and the replay would then fail its length check).
//! * `timestamp_ns = int(timestamp * 1e9)`: exact for an integer `timestamp`, one IEEE-754
//!   product truncated toward zero for a float (bit-identical with Python).
//! * Collision bumping: the converter gives every line a get at the first free nanosecond
//!   `>= base` and a write at the first free one `>= base + 1`, per instance (there is one).
//!   For time-sorted input the used nanoseconds at or above the current base always form one
//!   run, so the get lands at `max(base, last_write + 1)` and its write at `get + 1`; this
//!   reader keeps `last_write` and emits the get at exactly that nanosecond. The write row
//!   itself is not emitted: it does not touch the LRU, and its timestamp is above the get's, so
//!   leaving it out changes no fact and no order check. A line whose base is below the
//!   previous line's keeps its unbumped base, which the engine's order check then reports (the
//!   converter would have sorted such input instead).
//! * Missing `timestamp` means 0 and missing `hash_ids` means `[]`, as in the converter; a
//!   negative `timestamp` is rejected (as Mooncake's);
//!   `input_length` is required and must be `> 0`. The instance is `None`. The trace id is
//!   `chat_id` (an integer or a string) when the line has one, else empty (the engine derives
//!   upstream's default id, `trace_default_<ts>`). Other fields (`parent_chat_id`, `type`,
//!   ...) are ignored. Lines that fail do not advance the bumping state (the converter skips
//!   them).

use super::json::{self, Cursor, Fault, JsonInt, JsonNumber, field_set};
use super::{InstanceSlot, LineOutcome, TraceEvent, keep_full_blocks, reset_event, seconds_to_ns};
use crate::preprocess::apply_prefix_hash_in_place;

field_set! {
    enum Field {
        Timestamp => b"timestamp",
        InputLength => b"input_length",
        HashIds => b"hash_ids",
        ChatId => b"chat_id",
    }
}

/// The converter's timestamp allocation state after the last accepted line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Allocated {
    base_ns: i64,
    write_ns: i64,
}

/// Reads Bailian lines; remembers the last allocated timestamps.
#[derive(Debug, Clone, Default)]
pub(crate) struct BailianReader {
    last: Option<Allocated>,
}

impl BailianReader {
    pub(crate) fn parse(
        &mut self,
        line: &[u8],
        block_size_tokens: u64,
        event: &mut TraceEvent,
    ) -> Result<LineOutcome, Fault> {
        reset_event(event, InstanceSlot::None);
        let mut timestamp = JsonNumber::Int(JsonInt {
            negative: false,
            magnitude: 0,
        });
        let mut input_length = None;
        let mut cur = Cursor::new(line);
        json::walk_object::<Field>(&mut cur, |cur, field| {
            match field {
                Field::Timestamp => timestamp = cur.number()?,
                Field::InputLength => input_length = Some(cur.positive_i64()?),
                Field::HashIds => cur.key_array_into(&mut event.keys)?,
                Field::ChatId => chat_id_into(cur, &mut event.trace_id)?,
            }
            Ok(())
        })?;
        let base_ns = seconds_to_ns(timestamp).ok_or_else(|| {
            Fault::field(
                "timestamp",
                format!("expected seconds whose nanoseconds fit i64, found {timestamp}"),
            )
        })?;
        if base_ns < 0 {
            // As Mooncake's: time since the trace's start (the standard format wants > 0).
            return Err(Fault::field(
                "timestamp",
                format!("expected seconds >= 0, found {timestamp}"),
            ));
        }
        let input_length = input_length
            .ok_or_else(|| Fault::field("input_length", "missing integer field: input_length"))?;
        keep_full_blocks(
            &mut event.keys,
            input_length.unsigned_abs(),
            block_size_tokens,
            "hash_ids",
            "input_length",
        )?;
        apply_prefix_hash_in_place(&mut event.keys);
        let get_ns = match self.last {
            Some(last) if base_ns >= last.base_ns => base_ns.max(last.write_ns.saturating_add(1)),
            _ => base_ns,
        };
        let write_ns = get_ns.checked_add(1).ok_or_else(|| {
            Fault::field(
                "timestamp",
                format!("expected a timestamp below i64::MAX ns, found {get_ns}"),
            )
        })?;
        self.last = Some(Allocated { base_ns, write_ns });
        event.timestamp_ns = get_ns;
        event.input_token_len = input_length;
        Ok(LineOutcome::Event)
    }
}

/// `chat_id` as the trace id: a string as it is, an integer in decimal; `null` is none.
fn chat_id_into(cur: &mut Cursor<'_>, out: &mut String) -> Result<(), Fault> {
    out.clear();
    match cur.peek() {
        Some(b'"') => cur.string_into(out),
        Some(b'n') => cur.skip_value(),
        _ => {
            let id = cur
                .integer()
                .map_err(|_| Fault::field("chat_id", "expected an integer or a string"))?;
            if id.negative {
                out.push('-');
            }
            json::write_decimal(out, id.magnitude);
            Ok(())
        }
    }
}
