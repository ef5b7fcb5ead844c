//! Guessing a trace's format from its first non-empty line.
//!
//! Owns the detection rules, which look only at the top-level field names (and the `type`
//! value and `timestamp` shape) of one line, never at later lines:
//! 1. `chunk_hashes` → `LMCache`;
//! 2. `trigger_time_us`, or `type` ∈ {`GetCacheLocation`, `StartWriteCache`,
//!    `FinishWriteCache`} → KVCM event log;
//! 3. `timestamp_ns`, or `type` ∈ {`get`, `request`, `write`}, or both `keys` and
//!    `instance_id` (a legacy dialog row, so the standard reader can reject it with upstream's
//!    message) → standard;
//! 4. `hash_ids`: Bailian if it has `chat_id`, `parent_chat_id`, `turn` or `type`, or a
//!    non-integer `timestamp` (seconds); otherwise Mooncake (integer milliseconds);
//! 5. anything else, or a line that is not a JSON object → `None`.

use super::TraceFormat;
use super::json::{self, Cursor, field_set};

field_set! {
    enum Key {
        Type => b"type",
        TimestampNs => b"timestamp_ns",
        Keys => b"keys",
        InstanceId => b"instance_id",
        TriggerTimeUs => b"trigger_time_us",
        ChunkHashes => b"chunk_hashes",
        HashIds => b"hash_ids",
        Timestamp => b"timestamp",
        ChatId => b"chat_id",
        ParentChatId => b"parent_chat_id",
        Turn => b"turn",
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TypeValue {
    Absent,
    Standard,
    Kvcm,
    Other,
}

/// The format of a trace whose first non-empty line is `first_non_empty_line`, if recognised.
pub fn detect_format(first_non_empty_line: &[u8]) -> Option<TraceFormat> {
    let mut seen = [false; Key::COUNT];
    let mut type_value = TypeValue::Absent;
    let mut float_timestamp = false;
    let mut cur = Cursor::new(super::strip_bom(first_non_empty_line));
    json::walk_object::<Key>(&mut cur, |cur, key| {
        seen[key as usize] = true;
        match key {
            Key::Type if cur.peek() == Some(b'"') => {
                let raw = cur.raw_string()?;
                type_value = match raw.bytes {
                    b"get" | b"request" | b"write" => TypeValue::Standard,
                    b"GetCacheLocation" | b"StartWriteCache" | b"FinishWriteCache" => {
                        TypeValue::Kvcm
                    }
                    _ => TypeValue::Other,
                };
            }
            Key::Timestamp if matches!(cur.peek(), Some(b'-' | b'0'..=b'9')) => {
                float_timestamp = matches!(cur.number()?, json::JsonNumber::Float(_));
            }
            _ => cur.skip_value()?,
        }
        Ok(())
    })
    .ok()?;
    let has = |key: Key| seen[key as usize];
    if has(Key::ChunkHashes) {
        Some(TraceFormat::Lmcache)
    } else if has(Key::TriggerTimeUs) || type_value == TypeValue::Kvcm {
        Some(TraceFormat::Kvcm)
    } else if has(Key::TimestampNs)
        || type_value == TypeValue::Standard
        || (has(Key::Keys) && has(Key::InstanceId))
    {
        Some(TraceFormat::Standard)
    } else if has(Key::HashIds) {
        let bailian = float_timestamp
            || has(Key::ChatId)
            || has(Key::ParentChatId)
            || has(Key::Turn)
            || has(Key::Type);
        Some(if bailian {
            TraceFormat::Bailian
        } else {
            TraceFormat::Mooncake
        })
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_format_is_recognised_from_one_line() {
        let cases = [
            (
                r#"{"type":"get","instance_id":"a","timestamp_ns":1,"keys":[],"input_len":1}"#,
                Some(TraceFormat::Standard),
            ),
            (
                r#"{"instance_id":"a","timestamp_us":1,"keys":[1],"total_keys":[1]}"#,
                Some(TraceFormat::Standard),
            ),
            (
                r#"{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0]}"#,
                Some(TraceFormat::Mooncake),
            ),
            (
                r#"{"chat_id": 159, "timestamp": 61, "input_length": 521, "hash_ids": [1089]}"#,
                Some(TraceFormat::Bailian),
            ),
            (
                r#"{"timestamp": 61.114, "input_length": 521, "hash_ids": [1089]}"#,
                Some(TraceFormat::Bailian),
            ),
            (
                r#"{"id":"x","source":"s","type":"FinishWriteCache","trigger_time_us":1}"#,
                Some(TraceFormat::Kvcm),
            ),
            (
                r#"{"timestamp":1.5,"request_id":"r","chunk_size":256,"seq_len":600,"chunk_hashes":["ab"]}"#,
                Some(TraceFormat::Lmcache),
            ),
            (r#"{"something":"else"}"#, None),
            ("[1,2]", None),
            ("not json", None),
        ];
        for (line, expected) in cases {
            assert_eq!(detect_format(line.as_bytes()), expected, "{line}");
        }
    }
}
