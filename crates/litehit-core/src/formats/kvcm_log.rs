//! The KVCM event-publisher log: one JSON event per line from the cache manager.
//!
//! Owns the mapping of cache events to trace events: `GetCacheLocation` is a read,
//! `StartWriteCache` and `FinishWriteCache` are writes (a finish usually has no `keys`: a write
//! with no keys, which still takes part in the timestamp-order check). Any other event `type`
//! is not a cache access and gives [`LineOutcome::Ignored`] with the event untouched, as the
//! upstream converter skips it. `source` is the instance id (`None` when absent),
//! `trigger_time_us × 1000` the timestamp, `id` the trace id. A read's input length is, as in
//! upstream's `publisher_log.py`, the first of `input_len`, `input_length`, `input_tokens`, else
//! the length of a non-empty `tokens`, else `0` (derived later as keys × block size).
//!
//! The line is parsed into the reader's own scratch event and swapped into the caller's only
//! when it is an event, so a skipped or failed line leaves the caller's event as it was.

use super::json::{self, Cursor, Fault, field_set};
use super::{EventKind, InstanceSlot, LineOutcome, TraceEvent, instance_buffer, reset_event};

const NS_PER_US: i64 = 1_000;

field_set! {
    enum Field {
        Type => b"type",
        Source => b"source",
        Id => b"id",
        TriggerTimeUs => b"trigger_time_us",
        Keys => b"keys",
        InputLen => b"input_len",
        InputLength => b"input_length",
        InputTokens => b"input_tokens",
        Tokens => b"tokens",
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum EventType {
    Missing,
    GetCacheLocation,
    StartWriteCache,
    FinishWriteCache,
    Other,
}

/// Reads KVCM event lines; owns the scratch event lines are parsed into.
#[derive(Debug, Clone, Default)]
pub(crate) struct KvcmReader {
    scratch: TraceEvent,
}

impl KvcmReader {
    pub(crate) fn parse(
        &mut self,
        line: &[u8],
        event: &mut TraceEvent,
    ) -> Result<LineOutcome, Fault> {
        let scratch = &mut self.scratch;
        reset_event(scratch, InstanceSlot::Keep);
        let mut event_type = EventType::Missing;
        let mut has_source = false;
        let mut trigger_time_us = None;
        // input_len, input_length, input_tokens: the first present wins, in this order.
        let mut explicit_len = [None; 3];
        let mut token_count = 0_usize;
        let mut cur = Cursor::new(line);
        json::walk_object::<Field>(&mut cur, |cur, field| {
            match field {
                Field::Type => {
                    let raw = cur.string_raw_value()?;
                    event_type = match (raw.escaped, raw.bytes) {
                        (false, b"GetCacheLocation") => EventType::GetCacheLocation,
                        (false, b"StartWriteCache") => EventType::StartWriteCache,
                        (false, b"FinishWriteCache") => EventType::FinishWriteCache,
                        _ => EventType::Other,
                    };
                }
                Field::Source => {
                    cur.string_into(instance_buffer(scratch))?;
                    if scratch.instance_id.as_deref().is_some_and(str::is_empty) {
                        return Err(cur.fault("expected a non-empty string, found \"\""));
                    }
                    has_source = true;
                }
                Field::Id => cur.string_into(&mut scratch.trace_id)?,
                Field::TriggerTimeUs => trigger_time_us = Some(cur.non_negative_i64()?),
                Field::Keys => cur.key_array_into(&mut scratch.keys)?,
                Field::InputLen => explicit_len[0] = Some(cur.positive_i64()?),
                Field::InputLength => explicit_len[1] = Some(cur.positive_i64()?),
                Field::InputTokens => explicit_len[2] = Some(cur.positive_i64()?),
                Field::Tokens => {
                    token_count = 0;
                    cur.array("an array", |cur| {
                        token_count += 1;
                        cur.skip_value()
                    })?;
                }
            }
            Ok(())
        })?;
        scratch.kind = match event_type {
            EventType::Missing => return Err(Fault::field("type", "missing string field: type")),
            EventType::Other => return Ok(LineOutcome::Ignored),
            EventType::GetCacheLocation => EventKind::Read,
            EventType::StartWriteCache | EventType::FinishWriteCache => EventKind::Write,
        };
        let trigger_time_us = trigger_time_us.ok_or_else(|| {
            Fault::field("trigger_time_us", "missing integer field: trigger_time_us")
        })?;
        scratch.timestamp_ns = trigger_time_us.checked_mul(NS_PER_US).ok_or_else(|| {
            Fault::field(
                "trigger_time_us",
                format!("expected microseconds whose nanoseconds fit i64, found {trigger_time_us}"),
            )
        })?;
        if !has_source {
            scratch.instance_id = None;
        }
        if scratch.kind == EventKind::Read {
            scratch.input_token_len = explicit_len
                .into_iter()
                .flatten()
                .next()
                .unwrap_or_else(|| i64::try_from(token_count).unwrap_or(i64::MAX));
        }
        std::mem::swap(event, scratch);
        Ok(LineOutcome::Event)
    }
}
