//! Formatting one facts row, byte-compatible with the upstream writer (REFERENCE §7).

use crate::facts::{FactRow, HitCurveSegment};

/// Appends one facts row, `\n` included, to `out`:
/// `Q(trace_id),Q(instance_id),<i64>,<u64>,<u64>,<u64>,"<curve>"`.
///
/// `Q` quotes a string only if it contains `,` `"` `\n` or `\r`, doubling inner quotes. The
/// curve is always quoted, `[[start,run],...]` without spaces and `[]` when empty. Allocates
/// nothing beyond growing `out`.
pub fn append_fact_row(out: &mut Vec<u8>, row: &FactRow<'_>) {
    let mut itoa = itoa::Buffer::new();
    append_csv_string(out, row.trace_id);
    out.push(b',');
    append_csv_string(out, row.instance_id);
    out.push(b',');
    out.extend_from_slice(itoa.format(row.timestamp_ns).as_bytes());
    out.push(b',');
    out.extend_from_slice(itoa.format(row.input_token_len).as_bytes());
    out.push(b',');
    out.extend_from_slice(itoa.format(row.block_size_tokens).as_bytes());
    out.push(b',');
    out.extend_from_slice(itoa.format(row.block_bytes).as_bytes());
    out.extend_from_slice(b",\"");
    append_hit_curve(out, &row.fact.hit_curve);
    out.extend_from_slice(b"\"\n");
}

/// Appends a hit curve as `[[start,run],...]` (unquoted, no spaces, `[]` when empty).
pub fn append_hit_curve(out: &mut Vec<u8>, hit_curve: &[HitCurveSegment]) {
    let mut itoa = itoa::Buffer::new();
    out.push(b'[');
    for (index, segment) in hit_curve.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.push(b'[');
        out.extend_from_slice(itoa.format(segment.start_required_blocks).as_bytes());
        out.push(b',');
        out.extend_from_slice(itoa.format(segment.run_length).as_bytes());
        out.push(b']');
    }
    out.push(b']');
}

/// Appends `value`, quoted (inner quotes doubled) only if it contains `,` `"` `\n` or `\r`.
fn append_csv_string(out: &mut Vec<u8>, value: &str) {
    let bytes = value.as_bytes();
    let needs_quotes = memchr::memchr3(b',', b'"', b'\n', bytes).is_some()
        || memchr::memchr(b'\r', bytes).is_some();
    if !needs_quotes {
        out.extend_from_slice(bytes);
        return;
    }
    out.push(b'"');
    let mut rest = bytes;
    while let Some(quote) = memchr::memchr(b'"', rest) {
        out.extend_from_slice(&rest[..=quote]);
        out.push(b'"');
        rest = &rest[quote + 1..];
    }
    out.extend_from_slice(rest);
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::RequestFact;

    fn row_bytes(trace_id: &str, instance_id: &str, pairs: &[[u64; 2]]) -> String {
        let fact = RequestFact::from_pairs(pairs);
        let row = FactRow {
            trace_id,
            instance_id,
            timestamp_ns: 1_720_000_000_000,
            input_token_len: 900,
            block_size_tokens: 256,
            block_bytes: 4_194_304,
            observed_cached_tokens: None,
            fact: &fact,
        };
        let mut out = Vec::new();
        append_fact_row(&mut out, &row);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn upstream_round_trip_example() {
        assert_eq!(
            row_bytes("id,with\"quote", "engine-0", &[[1, 2], [4, 1]]),
            "\"id,with\"\"quote\",engine-0,1720000000000,900,256,4194304,\"[[1,2],[4,1]]\"\n"
        );
    }

    #[test]
    fn quotes_only_when_needed() {
        let cases = [
            ("plain", "plain"),
            ("a,b", "\"a,b\""),
            ("a\"b", "\"a\"\"b\""),
            ("a\nb", "\"a\nb\""),
            ("a\rb", "\"a\rb\""),
            ("tab\tand space ok", "tab\tand space ok"),
            ("", ""),
            ("\"\"", "\"\"\"\"\"\""),
        ];
        for (input, expected) in cases {
            let mut out = Vec::new();
            append_csv_string(&mut out, input);
            assert_eq!(String::from_utf8(out).unwrap(), expected, "input {input:?}");
        }
    }

    #[test]
    fn empty_curve_is_quoted_brackets() {
        assert_eq!(
            row_bytes("t", "i", &[]),
            "t,i,1720000000000,900,256,4194304,\"[]\"\n"
        );
    }
}
