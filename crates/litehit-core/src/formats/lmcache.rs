//! `LMCache` lookup-hash logs: `timestamp` (seconds), `request_id`, `chunk_size`, `seq_len`,
//! `chunk_hashes` (hex strings, already prefix-chained).
//!
//! Owns the mapping of `LMCache`'s hex chunk hashes to `i64` block keys ([`chunk_hash_key`]) and
//! the chunk-count rule: `chunk_hashes` holds the `floor(seq_len / chunk_size)` full chunks (a
//! trailing partial-chunk hash, as `LMCache`'s `save_unfull_chunk` mode logs it, is accepted and
//! dropped). `chunk_size` must equal the trace block size when one is configured.
//! `timestamp_ns = int(timestamp * 1e9)` as in the Bailian reader; the trace id is `request_id`
//! (empty when absent); there is no instance id (`None`). The tenant (`--lane-by tenant`) is
//! the optional `cache_salt`, else the optional `model` (strings).

use super::json::{self, Cursor, Fault, field_set};
use super::{InstanceSlot, LineOutcome, TraceEvent, keep_full_blocks, reset_event, seconds_to_ns};
use crate::preprocess::prefix_hash_next;

/// Hex digits in one 64-bit limb.
const LIMB_HEX_DIGITS: usize = 16;

/// Maps one `LMCache` chunk hash, written as hex text, to a block key.
///
/// The text is an optional `-`, an optional `0x`/`0X`, then at least one hex digit (either
/// case); leading zeros do not count. With at most 16 significant digits the key is the value
/// as `u64` reinterpreted as `i64` (two's complement: `"ffffffffffffffff"` → `-1`), so any
/// 64-bit hash keeps its identity. Longer hashes (e.g. 256-bit digests) fold deterministically:
/// the digits are cut into 16-digit limbs aligned at the least significant end, and the limbs
/// are chained from the most significant one with the prefix hash
/// (`key = prefix_hash_next(key, limb)`, from 0). A leading `-` (Python's `hex()` of a negative
/// hash) negates the result, wrapping. Returns `None` for anything else.
pub fn chunk_hash_key(text: &[u8]) -> Option<i64> {
    let (negative, text) = match text.strip_prefix(b"-") {
        Some(rest) => (true, rest),
        None => (false, text),
    };
    let digits = text
        .strip_prefix(b"0x")
        .or_else(|| text.strip_prefix(b"0X"))
        .unwrap_or(text);
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_hexdigit) {
        return None;
    }
    let first_significant = digits
        .iter()
        .position(|&d| d != b'0')
        .unwrap_or(digits.len());
    let significant = &digits[first_significant..];
    let key = if significant.len() <= LIMB_HEX_DIGITS {
        reinterpret(hex_limb(significant))
    } else {
        let head = match significant.len() % LIMB_HEX_DIGITS {
            0 => LIMB_HEX_DIGITS,
            partial => partial,
        };
        let (first, rest) = significant.split_at(head);
        rest.chunks(LIMB_HEX_DIGITS).fold(
            prefix_hash_next(0, reinterpret(hex_limb(first))),
            |key, limb| prefix_hash_next(key, reinterpret(hex_limb(limb))),
        )
    };
    Some(if negative { key.wrapping_neg() } else { key })
}

/// Parses at most 16 checked hex digits.
fn hex_limb(digits: &[u8]) -> u64 {
    digits.iter().fold(0, |acc, &digit| {
        let value = match digit {
            b'0'..=b'9' => digit - b'0',
            b'a'..=b'f' => digit - b'a' + 10,
            _ => digit - b'A' + 10,
        };
        (acc << 4) | u64::from(value)
    })
}

fn reinterpret(value: u64) -> i64 {
    i64::from_ne_bytes(value.to_ne_bytes())
}

field_set! {
    enum Field {
        Timestamp => b"timestamp",
        RequestId => b"request_id",
        ChunkSize => b"chunk_size",
        SeqLen => b"seq_len",
        ChunkHashes => b"chunk_hashes",
        CacheSalt => b"cache_salt",
        Model => b"model",
    }
}

/// Reads `LMCache` lines; stateless.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LmcacheReader;

impl LmcacheReader {
    /// `block_size_tokens == 0` accepts each line's own `chunk_size`.
    pub(crate) fn parse(
        line: &[u8],
        block_size_tokens: u64,
        event: &mut TraceEvent,
    ) -> Result<LineOutcome, Fault> {
        reset_event(event, InstanceSlot::None);
        let mut timestamp = None;
        let mut chunk_size = None;
        let mut seq_len = None;
        let mut has_hashes = false;
        let mut model: Option<String> = None;
        let mut cur = Cursor::new(line);
        json::walk_object::<Field>(&mut cur, |cur, field| {
            match field {
                Field::Timestamp => timestamp = Some(cur.number()?),
                Field::RequestId => cur.string_into(&mut event.trace_id)?,
                Field::ChunkSize => chunk_size = Some(cur.positive_i64()?),
                Field::SeqLen => seq_len = Some(cur.positive_i64()?),
                Field::ChunkHashes => {
                    event.keys.clear();
                    cur.array("an array of hex strings", |cur| {
                        let raw = cur.string_raw_value()?;
                        let key = chunk_hash_key(raw.bytes)
                            .filter(|_| !raw.escaped)
                            .ok_or_else(|| {
                                cur.fault(format!(
                                    "expected a hex string, found \"{}\"",
                                    String::from_utf8_lossy(raw.bytes)
                                ))
                            })?;
                        event.keys.push(key);
                        Ok(())
                    })?;
                    has_hashes = true;
                }
                Field::CacheSalt => {
                    cur.string_into(event.tenant.get_or_insert_with(String::new))?;
                }
                Field::Model => cur.string_into(model.get_or_insert_with(String::new))?,
            }
            Ok(())
        })?;
        // An empty salt or model is none (`LMCache` leaves the salt empty when unset).
        if event.tenant.as_deref().is_none_or(str::is_empty) {
            event.tenant = model.filter(|model| !model.is_empty());
        }
        let timestamp = timestamp
            .ok_or_else(|| Fault::field("timestamp", "missing number field: timestamp"))?;
        event.timestamp_ns = seconds_to_ns(timestamp).ok_or_else(|| {
            Fault::field(
                "timestamp",
                format!("expected seconds whose nanoseconds fit i64, found {timestamp}"),
            )
        })?;
        let chunk_size = chunk_size
            .ok_or_else(|| Fault::field("chunk_size", "missing integer field: chunk_size"))?
            .unsigned_abs();
        if block_size_tokens != 0 && chunk_size != block_size_tokens {
            return Err(Fault::field(
                "chunk_size",
                format!(
                    "expected {block_size_tokens} (the trace block size), found {chunk_size} \
                     (--trace-block-size {chunk_size} reads these chunks; --block-size can \
                     only be a multiple of it)"
                ),
            ));
        }
        let seq_len =
            seq_len.ok_or_else(|| Fault::field("seq_len", "missing integer field: seq_len"))?;
        if !has_hashes {
            return Err(Fault::field(
                "chunk_hashes",
                "missing array field: chunk_hashes",
            ));
        }
        keep_full_blocks(
            &mut event.keys,
            seq_len.unsigned_abs(),
            chunk_size,
            "chunk_hashes",
            "seq_len",
        )?;
        event.input_token_len = seq_len;
        Ok(LineOutcome::Event)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_hashes_keep_their_64_bit_value() {
        assert_eq!(chunk_hash_key(b"0"), Some(0));
        assert_eq!(chunk_hash_key(b"1f"), Some(31));
        assert_eq!(chunk_hash_key(b"0x00000000000000001F"), Some(31));
        assert_eq!(chunk_hash_key(b"ffffffffffffffff"), Some(-1));
        assert_eq!(chunk_hash_key(b"8000000000000000"), Some(i64::MIN));
        assert_eq!(chunk_hash_key(b"-0x5"), Some(-5));
    }

    #[test]
    fn long_hashes_fold_through_the_prefix_hash() {
        let digest = b"0123456789abcdef0123456789ABCDEF01";
        let expected = prefix_hash_next(
            prefix_hash_next(prefix_hash_next(0, 0x01), 0x2345_6789_abcd_ef01),
            0x2345_6789_abcd_ef01,
        );
        assert_eq!(chunk_hash_key(digest), Some(expected));
        assert_ne!(chunk_hash_key(b"10000000000000000"), chunk_hash_key(b"1"));
    }

    #[test]
    fn non_hex_text_is_rejected() {
        for bad in [&b""[..], b"0x", b"-", b"12g4", b" 12"] {
            assert_eq!(chunk_hash_key(bad), None, "{bad:?}");
        }
    }
}
