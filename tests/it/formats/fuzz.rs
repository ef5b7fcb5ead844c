//! Property tests: the readers never panic on arbitrary or mutated bytes, every error carries
//! the line number it was given, keys survive a render/parse round trip, and splitting a
//! stream at arbitrary chunk boundaries (as the live tailer does) yields the offline lines.

use crate::common::shared_file;
use std::sync::OnceLock;

use litehit_core::formats::{
    LineOutcome, LineParser, LineSplitter, ParseOptions, TraceEvent, TraceFormat, TraceLines,
    detect_format,
};
use proptest::prelude::*;

const FORMATS: [TraceFormat; 5] = [
    TraceFormat::Standard,
    TraceFormat::Mooncake,
    TraceFormat::Bailian,
    TraceFormat::Kvcm,
    TraceFormat::Lmcache,
];

/// Valid lines of every format, to mutate.
const SEED_LINES: &[&str] = &[
    r#"{"type":"get","instance_id":"instance-a","trace_id":"short-read","timestamp_ns":1000,"keys":[9223372036854775808,-1,3],"input_len":128,"query_type":"prefix_match","block_mask":[true],"sw_size":0,"location_spec_names":["a"]}"#,
    r#"{"type":"write","instance_id":"i1","trace_id":"w1","timestamp_ns":1500,"keys":[9],"ttl_us":0,"input_len":"ignored"}"#,
    r#"{"instance_id": "example_instance", "timestamp_us": 1704081600000000, "keys": [1], "query_type": "prefix_match", "block_mask": [], "output_len": 0, "total_keys": [1]}"#,
    r#"{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]}"#,
    r#"{"chat_id": 159, "parent_chat_id": 55, "timestamp": 61.114, "input_length": 40, "output_length": 132, "type": "text", "turn": 2, "hash_ids": [1089, 1090, 1091]}"#,
    r#"{"id":"ai9ux07q","source":"3780643326877293460","component":"cache_manager","type":"GetCacheLocation","trigger_time_us":1763975741548745,"query_type":"prefix_match","keys":[7467810767593291063,-7262535415567954716],"tokens":[],"block_mask":1,"sw_size":-1,"location_spec_names":[]}"#,
    r#"{"id":"auj4dywx","source":"3780643326877293460","type":"FinishWriteCache","trigger_time_us":1763975745710698,"write_session_id":"lrwpb3uk","success_block":12}"#,
    r#"{"timestamp": 1.5, "request_id": "r\u00e9", "chunk_size": 256, "seq_len": 600, "chunk_hashes": ["1f", "0xffffffffffffffff", "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"]}"#,
];

/// Real lines from `../shared` (a handful per file), or none where the build script found it
/// absent without `CI` (see `common::shared_file`): the properties then run on `SEED_LINES`
/// alone, which is all they need; with `CI` set, a missing file fails them.
fn real_lines() -> Vec<Vec<u8>> {
    if cfg!(litehit_shared_absent) {
        return Vec::new();
    }
    let files = [
        "traces/conversation_trace.jsonl",
        "traces/event_publisher.log",
        "reference/zishano_hisim_smoke_trace.jsonl",
    ];
    let mut lines = Vec::new();
    for relative in files {
        let bytes = std::fs::read(shared_file(relative)).unwrap();
        lines.extend(
            bytes
                .split(|&b| b == b'\n')
                .step_by(37)
                .take(8)
                .map(<[u8]>::to_vec),
        );
    }
    lines
}

fn all_seed_lines() -> &'static [Vec<u8>] {
    static LINES: OnceLock<Vec<Vec<u8>>> = OnceLock::new();
    LINES.get_or_init(|| {
        let mut lines: Vec<Vec<u8>> = SEED_LINES
            .iter()
            .map(|line| line.as_bytes().to_vec())
            .collect();
        lines.extend(real_lines());
        lines
    })
}

/// Parses `line` with every format; asserts no panic (by returning) and that errors carry the
/// line number. The event must be reusable across formats and calls.
fn check_every_format(line: &[u8], line_number: u64) -> Result<(), TestCaseError> {
    let mut event = TraceEvent::default();
    for format in FORMATS {
        for block in [0, 1, 16, 512] {
            let mut parser = LineParser::new(
                format,
                ParseOptions {
                    trace_block_size_tokens: block,
                    ..ParseOptions::default()
                },
            );
            match parser.parse_line(line, line_number, &mut event) {
                Ok(LineOutcome::Event | LineOutcome::Blank | LineOutcome::Ignored) => {}
                Err(err) => {
                    prop_assert_eq!(err.line_number, line_number);
                    prop_assert!(!err.message.is_empty());
                    let shown = err.to_string();
                    let prefix = format!("line {line_number}: ");
                    prop_assert!(shown.starts_with(&prefix), "{}", shown);
                }
            }
        }
    }
    let _ = detect_format(line);
    Ok(())
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip { at: usize, byte: u8 },
    Insert { at: usize, text: &'static str },
    Delete { at: usize, len: usize },
    Truncate { at: usize },
    Duplicate { at: usize, len: usize },
}

/// Fragments that steer mutations into interesting parser states.
const FRAGMENTS: &[&str] = &[
    "\"",
    "\\",
    "\\u",
    "\\ud800",
    ",",
    ":",
    "[",
    "]",
    "{",
    "}",
    "-",
    ".",
    "e",
    "0",
    "9",
    " ",
    "18446744073709551616",
    "-9223372036854775809",
    "1e400",
    "null",
    "true",
    "\"type\":\"write\",",
    "\"input_len\":-1,",
    "\"keys\":[],",
    "\u{e9}",
    "\u{0}",
    "\r",
];

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Mutation::Flip { at, byte }),
        (any::<usize>(), prop::sample::select(FRAGMENTS))
            .prop_map(|(at, text)| Mutation::Insert { at, text }),
        (any::<usize>(), 1..8_usize).prop_map(|(at, len)| Mutation::Delete { at, len }),
        any::<usize>().prop_map(|at| Mutation::Truncate { at }),
        (any::<usize>(), 1..40_usize).prop_map(|(at, len)| Mutation::Duplicate { at, len }),
    ]
}

fn apply(line: &mut Vec<u8>, mutation: &Mutation) {
    let len = line.len();
    let pos = |at: usize| if len == 0 { 0 } else { at % (len + 1) };
    match *mutation {
        Mutation::Flip { at, byte } => {
            if len > 0 {
                line[at % len] = byte;
            }
        }
        Mutation::Insert { at, text } => {
            let at = pos(at);
            line.splice(at..at, text.bytes());
        }
        Mutation::Delete { at, len: count } => {
            let at = pos(at);
            let end = (at + count).min(len);
            line.drain(at..end);
        }
        Mutation::Truncate { at } => line.truncate(pos(at)),
        Mutation::Duplicate { at, len: count } => {
            let at = pos(at);
            let end = (at + count).min(len);
            let copy = line[at..end].to_vec();
            line.splice(end..end, copy);
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn arbitrary_bytes_never_panic(line in prop::collection::vec(any::<u8>(), 0..300), number in 1..u64::MAX) {
        check_every_format(&line, number)?;
    }

    #[test]
    fn json_shaped_noise_never_panics(
        parts in prop::collection::vec(prop::sample::select(FRAGMENTS), 0..60),
        number in 1..1_000_000_u64,
    ) {
        let line = format!("{{{}", parts.concat());
        check_every_format(line.as_bytes(), number)?;
    }

    #[test]
    fn mutated_lines_never_panic(
        seed in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..6),
        number in 1..1_000_000_u64,
    ) {
        let seeds = all_seed_lines();
        let mut line = seeds[seed.index(seeds.len())].clone();
        for mutation in &mutations {
            apply(&mut line, mutation);
        }
        check_every_format(&line, number)?;
    }

    #[test]
    fn standard_keys_round_trip(keys in prop::collection::vec(any::<i64>(), 0..40), unsigned in any::<bool>()) {
        // Negative keys may be written as their u64 two's-complement value (the upstream rule).
        let rendered: Vec<String> = keys
            .iter()
            .map(|&key| if unsigned { u64::from_ne_bytes(key.to_ne_bytes()).to_string() } else { key.to_string() })
            .collect();
        let line = format!(
            r#"{{"type":"get","instance_id":"i","timestamp_ns":1,"keys":[{}],"input_len":1}}"#,
            rendered.join(", ")
        );
        let mut event = TraceEvent::default();
        LineParser::new(TraceFormat::Standard, ParseOptions::default())
            .parse_line(line.as_bytes(), 1, &mut event)
            .map_err(|err| TestCaseError::fail(err.to_string()))?;
        prop_assert_eq!(event.keys, keys);
    }

    #[test]
    fn chunked_splitting_equals_the_offline_reader(
        data in prop::collection::vec(prop::sample::select(&b"ab\r\n\n {"[..]), 0..400),
        chunk_sizes in prop::collection::vec(1..50_usize, 1..40),
    ) {
        let mut offline = Vec::new();
        let mut reader = TraceLines::new(data.as_slice());
        while let Some(line) = reader.next_line().map_err(|err| TestCaseError::fail(err.to_string()))? {
            offline.push((line.line_number, line.bytes.to_vec()));
        }

        // A tailer: append each chunk, take complete lines, keep the remainder.
        let mut tailed = Vec::new();
        let mut splitter = LineSplitter::default();
        let mut pending: Vec<u8> = Vec::new();
        let mut rest = data.as_slice();
        let mut sizes = chunk_sizes.iter().cycle();
        while !rest.is_empty() {
            let take = (*sizes.next().unwrap_or(&1)).min(rest.len());
            pending.extend_from_slice(&rest[..take]);
            rest = &rest[take..];
            let mut lines = splitter.complete_lines(&pending);
            for line in lines.by_ref() {
                tailed.push((line.line_number, line.bytes.to_vec()));
            }
            let consumed = lines.consumed_bytes();
            pending.drain(..consumed);
        }
        if let Some(line) = splitter.final_line(&pending) {
            tailed.push((line.line_number, line.bytes.to_vec()));
        }
        prop_assert_eq!(tailed, offline);
    }
}
