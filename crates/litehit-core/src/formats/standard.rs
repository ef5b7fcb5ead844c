//! The upstream standard trace format (REFERENCE §5): JSON lines typed `get`/`request`/`write`.
//!
//! Owns every loader rule of §5: required `type`, `instance_id`, `timestamp_ns`, `keys`, and
//! `input_len` for reads; the types of the optional fields (`trace_id`, `query_type`,
//! `sw_size`, `location_spec_names`, `block_mask`, `ttl_us`); rejection of legacy typeless
//! dialog rows with upstream's messages. It does not check the key count against `input_len`
//! (that is `preprocess`'s length contract, which knows the lane's trace block size).
//!
//! Field order is free, so a field whose value is wrong is remembered and the line is still
//! scanned to its end; the faults are then reported in upstream's order (type first, then
//! instance, trace id, timestamp, keys, `input_len`, the optional fields), whatever the order of
//! the fields in the line. Fields that upstream reads only for some row types are checked only
//! for those: `input_len`, `query_type`, `sw_size`, `location_spec_names` and `block_mask` for
//! `get`/`request` (a write's `input_len` may even be a string), `ttl_us` for
//! `write`/`request`. The optional `tenant` (a non-empty string, LiteHit's own: upstream
//! ignores unknown fields) is what `--lane-by tenant` lanes by. The optional `output_keys` (LiteHit's own too, an array
//! of integers as `keys`, read on reads only) are the blocks the engine filled during decode. A field that appears twice is read from its first occurrence, as upstream's
//! reader takes it; a later one is only checked as JSON.

use super::json::{self, Cursor, Fault, FieldSet, field_set};
use super::{EventKind, InstanceSlot, LineOutcome, TraceEvent, instance_buffer, reset_event};

/// The upstream message for typeless rows that look like the legacy dialog schema.
const LEGACY_DIALOG_MESSAGE: &str = "legacy dialog-style trace without type is not supported; \
    convert it to optimizer schema with explicit get/write rows";

field_set! {
    enum Field {
        Type => b"type",
        InstanceId => b"instance_id",
        TraceId => b"trace_id",
        TimestampNs => b"timestamp_ns",
        Keys => b"keys",
        InputLen => b"input_len",
        QueryType => b"query_type",
        SwSize => b"sw_size",
        LocationSpecNames => b"location_spec_names",
        BlockMask => b"block_mask",
        TtlUs => b"ttl_us",
        TotalKeys => b"total_keys",
        OutputLen => b"output_len",
        OutputLength => b"output_length",
        Tenant => b"tenant",
        CachedTokens => b"cached_tokens",
        OutputKeys => b"output_keys",
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum RowType {
    Get,
    Request,
    Write,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TypeState {
    /// No `type`, or a `type` that is not a string (upstream treats both as missing).
    Missing,
    Known(RowType),
    /// A string other than get/request/write; its text is in `StandardReader::unknown_type`.
    Unknown,
}

/// What one line said, beyond what went straight into the event.
struct LineState {
    row_type: TypeState,
    seen: [bool; Field::COUNT],
    faults: [Option<Fault>; Field::COUNT],
    input_len: i64,
}

/// Reads standard-format lines; keeps only a scratch string between lines.
#[derive(Debug, Clone, Default)]
pub(crate) struct StandardReader {
    unknown_type: String,
}

impl StandardReader {
    pub(crate) fn parse(
        &mut self,
        line: &[u8],
        event: &mut TraceEvent,
    ) -> Result<LineOutcome, Fault> {
        reset_event(event, InstanceSlot::Keep);
        let mut state = LineState {
            row_type: TypeState::Missing,
            seen: [false; Field::COUNT],
            faults: std::array::from_fn(|_| None),
            input_len: 0,
        };
        let mut cur = Cursor::new(line);
        json::walk_object::<Field>(&mut cur, |cur, field| {
            let start = cur.pos();
            state.seen[field as usize] = true;
            if let Err(fault) = self.read_field(cur, field, &mut state, event) {
                if fault.syntax {
                    return Err(fault);
                }
                // Valid JSON, wrong value: remember it, then check the rest of the line.
                cur.set_pos(start);
                cur.skip_value()?;
                state.faults[field as usize].get_or_insert(fault);
            }
            Ok(())
        })?;
        let row_type = self.check(&mut state, event)?;
        event.kind = if row_type == RowType::Write {
            EventKind::Write
        } else {
            EventKind::Read
        };
        event.input_token_len = if row_type == RowType::Write {
            0
        } else {
            state.input_len
        };
        if row_type == RowType::Write {
            // A store has no prompt, so nothing the engine could have found cached, and no
            // output.
            event.cached_tokens = None;
            event.output_keys.clear();
        }
        if let Some(cached) = event.cached_tokens
            && i64::try_from(cached).map_or(true, |cached| cached > event.input_token_len)
        {
            // The observed hits are a part of the prompt: more would be an observed hit
            // rate over 100 %, which nothing can be compared with.
            return Err(Fault::field(
                "cached_tokens",
                format!(
                    "cached_tokens {cached} exceeds input_len {}: an engine caches at most the prompt",
                    event.input_token_len
                ),
            ));
        }
        Ok(LineOutcome::Event)
    }

    /// The row's `type`: a known one, or the unknown text kept for the message.
    fn read_type(&mut self, cur: &mut Cursor<'_>, state: &mut LineState) -> Result<(), Fault> {
        if cur.peek() != Some(b'"') {
            state.row_type = TypeState::Missing;
            return cur.skip_value();
        }
        let raw = cur.raw_string()?;
        self.unknown_type.clear();
        let text: &[u8] = if raw.escaped {
            json::decode_into(raw, &mut self.unknown_type).map_err(|reason| cur.fault(reason))?;
            self.unknown_type.as_bytes()
        } else {
            raw.bytes
        };
        state.row_type = match text {
            b"get" => TypeState::Known(RowType::Get),
            b"request" => TypeState::Known(RowType::Request),
            b"write" => TypeState::Known(RowType::Write),
            _ => {
                if !raw.escaped {
                    self.unknown_type
                        .push_str(&String::from_utf8_lossy(raw.bytes));
                }
                TypeState::Unknown
            }
        };
        Ok(())
    }

    fn read_field(
        &mut self,
        cur: &mut Cursor<'_>,
        field: Field,
        state: &mut LineState,
        event: &mut TraceEvent,
    ) -> Result<(), Fault> {
        match field {
            Field::Type => self.read_type(cur, state)?,
            Field::InstanceId => {
                cur.string_into(instance_buffer(event))?;
                if event.instance_id.as_deref().is_some_and(str::is_empty) {
                    return Err(cur.fault("missing non-empty string field: instance_id"));
                }
            }
            Field::TraceId => cur.string_into(&mut event.trace_id)?,
            Field::TimestampNs => {
                let int = cur.integer()?;
                event.timestamp_ns = int.exact_i64().filter(|ns| *ns > 0).ok_or_else(|| {
                    cur.fault(format!(
                        "expected an integer timestamp_ns > 0 that fits i64, found {}",
                        int.value()
                    ))
                })?;
            }
            Field::Keys => cur.key_array_into(&mut event.keys)?,
            Field::InputLen => {
                let int = cur.integer()?;
                state.input_len = int.exact_i64().filter(|len| *len > 0).ok_or_else(|| {
                    cur.fault(format!(
                        "expected an integer input_len > 0, found {}",
                        int.value()
                    ))
                })?;
            }
            Field::QueryType => {
                cur.string_raw_value()?;
            }
            Field::SwSize => {
                let int = cur.integer()?;
                int.exact_i64()
                    .and_then(|size| i32::try_from(size).ok())
                    .ok_or_else(|| {
                        cur.fault(format!("expected a 32-bit integer, found {}", int.value()))
                    })?;
            }
            Field::LocationSpecNames => {
                cur.array("an array of strings", |cur| {
                    cur.string_raw_value().map(drop)
                })?;
            }
            Field::BlockMask => match cur.peek() {
                Some(b'[') => cur.array("an array of bools", |cur| cur.bool().map(drop))?,
                Some(b'-' | b'0'..=b'9') => {
                    cur.non_negative_i64()?;
                }
                _ => return Err(cur.mismatch("an array of bools or a non-negative integer")),
            },
            Field::TtlUs => {
                cur.exact_i64()?;
            }
            Field::CachedTokens => {
                let int = cur.integer()?;
                let tokens = int
                    .exact_i64()
                    .and_then(|tokens| u64::try_from(tokens).ok())
                    .ok_or_else(|| {
                        cur.fault(format!(
                            "expected an integer cached_tokens >= 0, found {}",
                            int.value()
                        ))
                    })?;
                event.cached_tokens.get_or_insert(tokens);
            }
            // Optional and LiteHit's own (upstream ignores it), as `keys`.
            Field::OutputKeys => cur.key_array_into(&mut event.output_keys)?,
            Field::TotalKeys | Field::OutputLen | Field::OutputLength => cur.skip_value()?,
            Field::Tenant => {
                // Optional and LiteHit's own (upstream ignores it): a non-empty string.
                let tenant = event.tenant.get_or_insert_with(String::new);
                cur.string_into(tenant)?;
                if tenant.is_empty() {
                    return Err(cur.fault("expected a non-empty string tenant"));
                }
            }
        }
        Ok(())
    }

    /// Applies the line-level rules in upstream's order and returns the row type.
    fn check(&self, state: &mut LineState, event: &TraceEvent) -> Result<RowType, Fault> {
        let seen_fields = state.seen;
        let seen = |field: Field| seen_fields[field as usize];
        let row_type = match state.row_type {
            TypeState::Known(row_type) => row_type,
            TypeState::Missing => {
                let legacy = (seen(Field::QueryType) || seen(Field::BlockMask))
                    && (seen(Field::TotalKeys)
                        || seen(Field::OutputLen)
                        || seen(Field::OutputLength));
                let message = if legacy {
                    LEGACY_DIALOG_MESSAGE
                } else {
                    "missing string field: type"
                };
                return Err(Fault::field("type", message));
            }
            TypeState::Unknown => {
                return Err(Fault::field(
                    "type",
                    format!("unknown trace type: {}", self.unknown_type),
                ));
            }
        };
        for field in checks_for(row_type) {
            if let Some(fault) = state.faults[field as usize].take() {
                return Err(fault);
            }
            if seen(field) {
                continue;
            }
            let missing = match field {
                Field::InstanceId => "missing non-empty string field: instance_id",
                Field::TimestampNs => "missing integer field: timestamp_ns",
                Field::Keys => "missing array field: keys",
                Field::InputLen => "missing integer field: input_len",
                _ => continue,
            };
            return Err(Fault::field(field.name(), missing));
        }
        debug_assert!(
            event
                .instance_id
                .as_deref()
                .is_some_and(|id| !id.is_empty())
        );
        Ok(row_type)
    }
}

/// The fields checked for a row type, in upstream's order.
fn checks_for(row_type: RowType) -> impl Iterator<Item = Field> {
    const COMMON: [Field; 5] = [
        Field::InstanceId,
        Field::TraceId,
        Field::TimestampNs,
        Field::Keys,
        Field::Tenant,
    ];
    const READ: [Field; 7] = [
        Field::InputLen,
        Field::QueryType,
        Field::SwSize,
        Field::LocationSpecNames,
        Field::BlockMask,
        Field::CachedTokens,
        Field::OutputKeys,
    ];
    let reads = row_type != RowType::Write;
    let ttl = row_type != RowType::Get;
    COMMON
        .into_iter()
        .chain(READ.into_iter().filter(move |_| reads))
        .chain(std::iter::once(Field::TtlUs).filter(move |_| ttl))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(line: &str) -> Result<TraceEvent, Fault> {
        let mut event = TraceEvent::default();
        StandardReader::default().parse(line.as_bytes(), &mut event)?;
        Ok(event)
    }

    /// Issue 31 §3: the engine's own cached tokens, optional, on reads only.
    #[test]
    fn cached_tokens_are_read_when_present() {
        let line = |extra: &str| {
            format!(
                r#"{{"type":"get","instance_id":"a","timestamp_ns":1,"keys":[1],"input_len":16{extra}}}"#
            )
        };
        assert_eq!(parse(&line("")).unwrap().cached_tokens, None);
        assert_eq!(
            parse(&line(r#","cached_tokens":0"#)).unwrap().cached_tokens,
            Some(0)
        );
        assert_eq!(
            parse(&line(r#","cached_tokens":12,"cached_tokens":3"#))
                .unwrap()
                .cached_tokens,
            Some(12)
        );
        // The whole prompt cached is the most there can be.
        assert_eq!(
            parse(&line(r#","cached_tokens":16"#))
                .unwrap()
                .cached_tokens,
            Some(16)
        );
        for bad in [
            r#","cached_tokens":-1"#,
            r#","cached_tokens":"8""#,
            r#","cached_tokens":17"#,
            r#","cached_tokens":18446744073709551615"#,
        ] {
            let fault = parse(&line(bad)).unwrap_err();
            assert_eq!(fault.field, Some("cached_tokens"), "{bad}");
        }
    }

    #[test]
    fn upstream_loader_examples_parse() {
        let event = parse(
            r#"{"type":"get","instance_id":"instance-a","trace_id":"short-read","timestamp_ns":1000,"keys":[],"input_len":128,"query_type":"prefix_match","block_mask":[]}"#,
        )
        .unwrap();
        assert_eq!(event.kind, EventKind::Read);
        assert_eq!(event.instance_id.as_deref(), Some("instance-a"));
        assert_eq!(event.trace_id, "short-read");
        assert_eq!((event.timestamp_ns, event.input_token_len), (1000, 128));
        let write = parse(
            r#"{"type":"write","instance_id":"instance-a","trace_id":"short-write","timestamp_ns":1001,"keys":[1,2],"input_len":"ignored"}"#,
        )
        .unwrap();
        assert_eq!(write.kind, EventKind::Write);
        assert_eq!(
            (write.timestamp_ns, write.keys.as_slice()),
            (1001, &[1, 2][..])
        );
    }

    #[test]
    fn type_errors_come_first_whatever_the_field_order() {
        let fault = parse(r#"{"keys":["x"],"instance_id":"","type":"read"}"#).unwrap_err();
        assert_eq!(fault.message, "unknown trace type: read");
        let fault = parse(r#"{"keys":["x"],"type":"get","instance_id":""}"#).unwrap_err();
        assert_eq!(fault.field, Some("instance_id"));
    }
}
