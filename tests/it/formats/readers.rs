//! Trace readers against REFERENCE §5 rules, hand-written lines and the real traces in
//! `../shared` (tests that need them are ignored when it is absent, and fail if `CI` is set: see
//! `common::shared_file`).

use crate::common::shared_file;
use std::io::{Read, Write};
use std::path::Path;

use litehit_core::apply_prefix_hash;
use litehit_core::formats::{
    Compression, EventKind, LineOutcome, LineParser, ParseError, ParseOptions, TraceEvent,
    TraceFormat, TraceLines, chunk_hash_key, detect_format, for_each_line, open_trace,
};

// ---------------------------------------------------------------------------------------------
// Helpers

fn parser(format: TraceFormat, block: u64) -> LineParser {
    LineParser::new(
        format,
        ParseOptions {
            trace_block_size_tokens: block,
            ..ParseOptions::default()
        },
    )
}

fn parse_with(parser: &mut LineParser, line: &str) -> Result<TraceEvent, ParseError> {
    let mut event = TraceEvent::default();
    let outcome = parser.parse_line(line.as_bytes(), 7, &mut event)?;
    assert_eq!(outcome, LineOutcome::Event, "{line}");
    Ok(event)
}

fn parse(format: TraceFormat, block: u64, line: &str) -> Result<TraceEvent, ParseError> {
    parse_with(&mut parser(format, block), line)
}

fn standard(line: &str) -> Result<TraceEvent, ParseError> {
    parse(TraceFormat::Standard, 0, line)
}

/// Asserts that `line` fails on line 7, in `field`, with a message containing `fragment`.
#[track_caller]
fn assert_rejects(
    format: TraceFormat,
    block: u64,
    line: &str,
    field: Option<&str>,
    fragment: &str,
) {
    let err = match parse(format, block, line) {
        Ok(event) => panic!("{line}: expected an error, parsed {event:?}"),
        Err(err) => err,
    };
    assert_eq!(err.line_number, 7, "{line}: {err}");
    assert_eq!(err.field, field, "{line}: {err}");
    assert!(
        err.message.contains(fragment),
        "{line}: {err} lacks {fragment:?}"
    );
}

/// A valid standard line with `extra` fields appended.
fn standard_line(row_type: &str, extra: &str) -> String {
    format!(
        r#"{{"type":"{row_type}","instance_id":"i","timestamp_ns":5,"keys":[1,2],"input_len":40{extra}}}"#
    )
}

// ---------------------------------------------------------------------------------------------
// Standard format (REFERENCE §5)

#[test]
fn standard_upstream_loader_examples_parse() {
    let read = standard(
        r#"{"type":"get","instance_id":"instance-a","trace_id":"short-read","timestamp_ns":1000,"keys":[],"input_len":128,"query_type":"prefix_match","block_mask":[]}"#,
    )
    .unwrap();
    assert_eq!(
        read,
        TraceEvent {
            kind: EventKind::Read,
            instance_id: Some("instance-a".into()),
            trace_id: "short-read".into(),
            timestamp_ns: 1000,
            keys: vec![],
            input_token_len: 128,
            tenant: None,
            cached_tokens: None,
            output_keys: Vec::new(),
        }
    );

    let write = standard(
        r#"{"type":"write","instance_id":"instance-a","trace_id":"short-write","timestamp_ns":1001,"keys":[1,2],"input_len":"ignored"}"#,
    )
    .unwrap();
    assert_eq!(write.kind, EventKind::Write);
    assert_eq!(write.timestamp_ns, 1001);
    assert_eq!(write.keys, [1, 2]);
    assert_eq!(write.input_token_len, 0);

    let request = standard(
        r#"{"type":"request","instance_id":"instance-a","trace_id":"request","timestamp_ns":1000,"keys":[1,2],"input_len":128,"query_type":"prefix_match","block_mask":[],"ttl_us":100}"#,
    )
    .unwrap();
    assert_eq!(request.kind, EventKind::Read);
    assert_eq!(
        (request.keys.as_slice(), request.input_token_len),
        (&[1, 2][..], 128)
    );

    let wrapped = standard(
        r#"{"type":"get","instance_id":"instance-a","trace_id":"uint64-read","timestamp_ns":1000,"keys":[9223372036854775808,18446744073709551615],"input_len":32,"query_type":"prefix_match","block_mask":[]}"#,
    )
    .unwrap();
    assert_eq!(wrapped.keys, [i64::MIN, -1]);

    let ttl_write =
        standard(r#"{"type":"write","instance_id":"i1","trace_id":"w1","timestamp_ns":1500,"keys":[9],"ttl_us":0}"#)
            .unwrap();
    assert_eq!(
        (ttl_write.kind, ttl_write.timestamp_ns),
        (EventKind::Write, 1500)
    );

    let rendered = standard(
        r#"{"type":"request","instance_id":"i1","trace_id":"r1","timestamp_ns":1000,"keys":[1,2,3],"input_len":13,"query_type":"prefix_match","block_mask":[]}"#,
    )
    .unwrap();
    assert_eq!((rendered.keys.len(), rendered.input_token_len), (3, 13));
}

#[test]
fn standard_type_rules_use_upstream_messages() {
    let no_type = r#"{"instance_id":"i","timestamp_ns":5,"keys":[1],"input_len":40}"#;
    assert_rejects(
        TraceFormat::Standard,
        0,
        no_type,
        Some("type"),
        "missing string field: type",
    );
    let numeric_type = r#"{"type":3,"instance_id":"i","timestamp_ns":5,"keys":[1],"input_len":40}"#;
    assert_rejects(
        TraceFormat::Standard,
        0,
        numeric_type,
        Some("type"),
        "missing string field: type",
    );
    let unknown = r#"{"type":"read","instance_id":"i","timestamp_ns":5,"keys":[1],"input_len":40}"#;
    let err = standard(unknown).unwrap_err();
    assert_eq!(err.message, "unknown trace type: read");
    assert_eq!(
        err.to_string(),
        r#"line 7: field "type": unknown trace type: read"#
    );

    // The verbatim legacy dialog line quoted in REFERENCE §5.1.
    let legacy = r#"{"instance_id": "example_instance", "trace_id": "trace_example_instance_1704081600000000", "timestamp_us": 1704081600000000, "tokens": [], "keys": [1], "query_type": "prefix_match", "block_mask": [], "sw_size": 0, "location_spec_names": [], "input_len": 16, "output_len": 0, "total_keys": [1]}"#;
    let err = standard(legacy).unwrap_err();
    assert_eq!(
        err.message,
        "legacy dialog-style trace without type is not supported; convert it to optimizer schema with \
         explicit get/write rows"
    );
    // Legacy needs query_type/block_mask AND total_keys/output_len/output_length.
    let only_mask = r#"{"instance_id":"i","block_mask":[],"keys":[1]}"#;
    assert_rejects(
        TraceFormat::Standard,
        0,
        only_mask,
        Some("type"),
        "missing string field: type",
    );
    let mask_and_output_length = r#"{"block_mask":3,"output_length":9}"#;
    assert_rejects(
        TraceFormat::Standard,
        0,
        mask_and_output_length,
        Some("type"),
        "legacy dialog-style",
    );
}

/// (line, field, message fragment) for every required-field rule of REFERENCE §5.
const STANDARD_REQUIRED_CASES: &[(&str, &str, &str)] = &[
    (
        r#"{"type":"get","timestamp_ns":5,"keys":[1],"input_len":40}"#,
        "instance_id",
        "missing non-empty string field: instance_id",
    ),
    (
        r#"{"type":"get","instance_id":"","timestamp_ns":5,"keys":[1],"input_len":40}"#,
        "instance_id",
        "missing non-empty string field",
    ),
    (
        r#"{"type":"get","instance_id":7,"timestamp_ns":5,"keys":[1],"input_len":40}"#,
        "instance_id",
        "expected a string, found 7",
    ),
    (
        r#"{"type":"get","instance_id":"i","keys":[1],"input_len":40}"#,
        "timestamp_ns",
        "missing integer field: timestamp_ns",
    ),
    (
        r#"{"type":"get","instance_id":"i","timestamp_ns":0,"keys":[1],"input_len":40}"#,
        "timestamp_ns",
        "found 0",
    ),
    (
        r#"{"type":"get","instance_id":"i","timestamp_ns":-3,"keys":[1],"input_len":40}"#,
        "timestamp_ns",
        "found -3",
    ),
    (
        r#"{"type":"get","instance_id":"i","timestamp_ns":9223372036854775808,"keys":[1],"input_len":40}"#,
        "timestamp_ns",
        "found 9223372036854775808",
    ),
    (
        r#"{"type":"get","instance_id":"i","timestamp_ns":1.5,"keys":[1],"input_len":40}"#,
        "timestamp_ns",
        "expected an integer, found 1.5",
    ),
    (
        r#"{"type":"get","instance_id":"i","timestamp_ns":"5","keys":[1],"input_len":40}"#,
        "timestamp_ns",
        "expected an integer, found \"5\"",
    ),
    (
        r#"{"type":"get","instance_id":"i","timestamp_ns":5,"input_len":40}"#,
        "keys",
        "missing array field: keys",
    ),
    (
        r#"{"type":"get","instance_id":"i","timestamp_ns":5,"keys":"1","input_len":40}"#,
        "keys",
        "expected an array of integers",
    ),
    (
        r#"{"type":"get","instance_id":"i","timestamp_ns":5,"keys":[1.5],"input_len":40}"#,
        "keys",
        "found 1.5",
    ),
    (
        r#"{"type":"get","instance_id":"i","timestamp_ns":5,"keys":[1,"2"],"input_len":40}"#,
        "keys",
        "found \"2\"",
    ),
    (
        r#"{"type":"get","instance_id":"i","timestamp_ns":5,"keys":[18446744073709551616],"input_len":40}"#,
        "keys",
        "64-bit",
    ),
    (
        r#"{"type":"get","instance_id":"i","timestamp_ns":5,"keys":[-9223372036854775809],"input_len":40}"#,
        "keys",
        "64-bit",
    ),
    (
        r#"{"type":"get","instance_id":"i","timestamp_ns":5,"keys":[1]}"#,
        "input_len",
        "missing integer field: input_len",
    ),
    (
        r#"{"type":"request","instance_id":"i","timestamp_ns":5,"keys":[1],"input_len":0}"#,
        "input_len",
        "found 0",
    ),
    (
        r#"{"type":"get","instance_id":"i","timestamp_ns":5,"keys":[1],"input_len":-1}"#,
        "input_len",
        "found -1",
    ),
    (
        r#"{"type":"get","instance_id":"i","timestamp_ns":5,"keys":[1],"input_len":"40"}"#,
        "input_len",
        "expected an integer",
    ),
    (
        r#"{"type":"get","instance_id":"i","timestamp_ns":5,"keys":[1],"input_len":40.0}"#,
        "input_len",
        "expected an integer",
    ),
    (
        r#"{"type":"get","instance_id":"i","timestamp_ns":5,"keys":[1],"input_len":9223372036854775808}"#,
        "input_len",
        "found 9223372036854775808",
    ),
    (
        r#"{"type":"get","instance_id":"i","trace_id":5,"timestamp_ns":5,"keys":[1],"input_len":40}"#,
        "trace_id",
        "expected a string",
    ),
];

#[test]
fn standard_required_fields_are_checked() {
    let cases = STANDARD_REQUIRED_CASES;
    for (line, field, fragment) in cases {
        assert_rejects(TraceFormat::Standard, 0, line, Some(field), fragment);
    }
}

#[test]
fn standard_write_rows_ignore_input_len_entirely() {
    for input_len in [
        r#""input_len":"ignored""#,
        r#""input_len":-1"#,
        r#""input_len":{"a":[1]}"#,
        r#""x":0"#,
    ] {
        let line = format!(
            r#"{{"type":"write","instance_id":"i","timestamp_ns":9,"keys":[3],{input_len}}}"#
        );
        let event = standard(&line).unwrap();
        assert_eq!(
            (event.kind, event.timestamp_ns, event.input_token_len),
            (EventKind::Write, 9, 0)
        );
    }
}

#[test]
fn standard_optional_fields_are_type_checked_per_row_type() {
    let valid = [
        r#","trace_id":"t""#,
        r#","query_type":"prefix_match""#,
        r#","sw_size":-2147483648"#,
        r#","sw_size":2147483647"#,
        r#","location_spec_names":["a","b\"c"]"#,
        r#","location_spec_names":[]"#,
        r#","block_mask":[true,false]"#,
        r#","block_mask":[]"#,
        r#","block_mask":0"#,
        r#","block_mask":74"#,
        r#","ttl_us":-1"#,
        r#","ttl_us":9223372036854775807"#,
    ];
    for extra in valid {
        for row_type in ["get", "request", "write"] {
            standard(&standard_line(row_type, extra))
                .unwrap_or_else(|err| panic!("{row_type}{extra}: {err}"));
        }
    }
    // (extra, field, rejected for get, request, write)
    let invalid: &[(&str, &str, [bool; 3])] = &[
        (r#","query_type":5"#, "query_type", [true, true, false]),
        (r#","sw_size":2147483648"#, "sw_size", [true, true, false]),
        (r#","sw_size":"0""#, "sw_size", [true, true, false]),
        (
            r#","location_spec_names":"a""#,
            "location_spec_names",
            [true, true, false],
        ),
        (
            r#","location_spec_names":["a",1]"#,
            "location_spec_names",
            [true, true, false],
        ),
        (
            r#","block_mask":[true,1]"#,
            "block_mask",
            [true, true, false],
        ),
        (r#","block_mask":-1"#, "block_mask", [true, true, false]),
        (r#","block_mask":1.5"#, "block_mask", [true, true, false]),
        (r#","block_mask":"x""#, "block_mask", [true, true, false]),
        (r#","ttl_us":"x""#, "ttl_us", [false, true, true]),
        (
            r#","ttl_us":9223372036854775808"#,
            "ttl_us",
            [false, true, true],
        ),
    ];
    for (extra, field, rejected) in invalid {
        for (row_type, rejected) in ["get", "request", "write"].into_iter().zip(rejected) {
            let line = standard_line(row_type, extra);
            if *rejected {
                assert_rejects(TraceFormat::Standard, 0, &line, Some(field), "expected");
            } else {
                standard(&line).unwrap_or_else(|err| panic!("{line}: {err}"));
            }
        }
    }
}

#[test]
fn standard_ignores_unknown_fields_of_every_shape() {
    let line = r#"{"output_len":32,"type":"get","nested":{"a":[1,{"b":"x\"y\\z\u00e9\n"}],"c":null},"instance_id":"inst\u0041","tokens":[1,2,3],"bundle_keys":[-5,18446744073709551615],"timestamp_ns":7,"source_x":"\ud83d\ude00","keys":[4,5],"input_len":300,"f":-1.5e-7,"t":true,"n":null}"#;
    let event = standard(line).unwrap();
    assert_eq!(event.instance_id.as_deref(), Some("instA"));
    assert_eq!(
        (
            event.keys.as_slice(),
            event.input_token_len,
            event.timestamp_ns
        ),
        (&[4, 5][..], 300, 7)
    );
    assert_eq!(event.trace_id, "", "trace_id defaults to empty");
}

#[test]
fn standard_field_order_does_not_matter() {
    let a = standard(r#"{"type":"get","instance_id":"i","trace_id":"t","timestamp_ns":5,"keys":[1,2],"input_len":40}"#).unwrap();
    let b = standard(r#"{ "input_len" : 40 , "keys" : [ 1 , 2 ] , "timestamp_ns" : 5 , "trace_id" : "t" , "instance_id" : "i" , "type" : "get" } "#).unwrap();
    assert_eq!(a, b);
    // Upstream's check order holds whatever the field order: type, then instance, ...
    let err = standard(r#"{"keys":["bad"],"instance_id":"","type":"nope"}"#).unwrap_err();
    assert_eq!(err.field, Some("type"));
    let err =
        standard(r#"{"keys":["bad"],"timestamp_ns":0,"instance_id":"","type":"get"}"#).unwrap_err();
    assert_eq!(err.field, Some("instance_id"));
    let err = standard(r#"{"keys":["bad"],"timestamp_ns":0,"instance_id":"i","type":"get"}"#)
        .unwrap_err();
    assert_eq!(err.field, Some("timestamp_ns"));
}

#[test]
fn invalid_json_is_rejected_with_its_line_number() {
    for (line, field) in [
        (r#"{"type":"get","#, None),
        (r#"{"type":"get","keys":[1,2}"#, Some("keys")),
        (r#"{"type":"get"} trailing"#, None),
        (r#"{"type":"get","x":[01]}"#, None),
        (r#"{"type":"get","x":"\q"}"#, None),
        ("[1,2]", None),
        ("not json", None),
    ] {
        let err = standard(line).unwrap_err();
        assert_eq!(err.line_number, 7, "{line}");
        assert_eq!(err.field, field, "{line}: {err}");
        assert!(err.to_string().starts_with("line 7: "), "{err}");
    }
}

#[test]
fn blank_lines_are_skipped_and_leave_the_event_untouched() {
    for format in [
        TraceFormat::Standard,
        TraceFormat::Mooncake,
        TraceFormat::Bailian,
        TraceFormat::Kvcm,
        TraceFormat::Lmcache,
    ] {
        let mut parser = parser(format, 0);
        let mut event = TraceEvent {
            trace_id: "keep".into(),
            keys: vec![1, 2],
            ..TraceEvent::default()
        };
        let before = event.clone();
        for line in ["", " ", "\t \r", "\r\n"] {
            let outcome = parser.parse_line(line.as_bytes(), 3, &mut event).unwrap();
            assert_eq!(outcome, LineOutcome::Blank, "{format:?} {line:?}");
            assert_eq!(event, before);
        }
    }
}

#[test]
fn parse_line_overwrites_every_field_of_a_reused_event() {
    let mut parser = parser(TraceFormat::Standard, 0);
    let mut event = TraceEvent::default();
    parser
        .parse_line(
            standard_line("get", r#","trace_id":"long-trace-id""#).as_bytes(),
            1,
            &mut event,
        )
        .unwrap();
    parser
        .parse_line(
            br#"{"type":"write","instance_id":"j","timestamp_ns":9,"keys":[]}"#,
            2,
            &mut event,
        )
        .unwrap();
    assert_eq!(
        event,
        TraceEvent {
            kind: EventKind::Write,
            instance_id: Some("j".into()),
            trace_id: String::new(),
            timestamp_ns: 9,
            keys: vec![],
            input_token_len: 0,
            tenant: None,
            cached_tokens: None,
            output_keys: Vec::new(),
        }
    );
}

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn hisim_smoke_trace_parses_16_rows() {
    let path = shared_file("reference/zishano_hisim_smoke_trace.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    assert_eq!(
        detect_format(text.lines().next().unwrap().as_bytes()),
        Some(TraceFormat::Standard)
    );
    let mut parser = parser(TraceFormat::Standard, 0);
    let mut rows = Vec::new();
    for (index, line) in text.lines().enumerate() {
        let mut event = TraceEvent::default();
        let number = index as u64 + 1;
        assert_eq!(
            parser
                .parse_line(line.as_bytes(), number, &mut event)
                .unwrap(),
            LineOutcome::Event
        );
        // Independent check with serde_json.
        let value: serde_json::Value = serde_json::from_str(line).unwrap();
        let keys: Vec<i64> = value["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_i64().unwrap())
            .collect();
        assert_eq!(event.keys, keys);
        assert_eq!(event.input_token_len, value["input_len"].as_i64().unwrap());
        assert_eq!(
            event.keys.len(),
            usize::try_from(event.input_token_len / 256).unwrap(),
            "row {index}"
        );
        // bundle_keys == ApplyPrefixHash(keys)[3::4] (REFERENCE §2.1 real-data check).
        let bundle: Vec<i64> = value["bundle_keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_i64().unwrap())
            .collect();
        let chained = apply_prefix_hash(&event.keys);
        let every_fourth: Vec<i64> = chained.iter().skip(3).step_by(4).copied().collect();
        assert_eq!(bundle, every_fourth, "row {index}");
        rows.push(event);
    }
    assert_eq!(rows.len(), 16);
    let first = &rows[0];
    assert_eq!(first.keys.len(), 96);
    assert_eq!(first.keys[..3], [1, 2, 3]);
    assert_eq!(first.input_token_len, 24608);
    assert_eq!(first.kind, EventKind::Read);
    assert_eq!(first.trace_id, "request-00000");
    assert_eq!(
        first.instance_id.as_deref(),
        Some("kimi-k3.tp8.checkpoint1024")
    );
    assert_eq!(first.timestamp_ns, 1_000_000_000);
}

// ---------------------------------------------------------------------------------------------
// Mooncake

const MOONCAKE_LINE_1: &str = r#"{"timestamp": 0, "input_length": 6758, "output_length": 500, "hash_ids": [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13]}"#;

#[test]
fn mooncake_keeps_only_complete_blocks() {
    let event = parse(TraceFormat::Mooncake, 512, MOONCAKE_LINE_1).unwrap();
    assert_eq!(
        event.keys,
        (0..13).collect::<Vec<i64>>(),
        "13 = floor(6758 / 512)"
    );
    assert_eq!(event.input_token_len, 6758);
    assert_eq!(event.instance_id, None);
    assert_eq!(event.trace_id, "7", "the 1-based line number");
    assert_eq!((event.kind, event.timestamp_ns), (EventKind::Read, 0));

    let exact = r#"{"timestamp": 3, "input_length": 1024, "hash_ids": [5, 6]}"#;
    let event = parse(TraceFormat::Mooncake, 512, exact).unwrap();
    assert_eq!(
        (event.keys.as_slice(), event.timestamp_ns),
        (&[5, 6][..], 3_000_000)
    );
    // Already floor-length lists are accepted too.
    let floor_only = r#"{"timestamp": 0, "input_length": 1100, "hash_ids": [5, 6]}"#;
    assert_eq!(
        parse(TraceFormat::Mooncake, 512, floor_only).unwrap().keys,
        [5, 6]
    );
    // The default block size of a Mooncake parser is 512.
    assert_eq!(
        parse(TraceFormat::Mooncake, 0, MOONCAKE_LINE_1)
            .unwrap()
            .keys
            .len(),
        13
    );
}

#[test]
fn mooncake_errors_name_line_and_field() {
    let too_many = r#"{"timestamp": 0, "input_length": 6758, "hash_ids": [0,1,2,3,4,5,6,7,8,9,10,11,12,13,14]}"#;
    let err = parse(TraceFormat::Mooncake, 512, too_many).unwrap_err();
    assert_eq!(
        err.to_string(),
        r#"line 7: field "hash_ids": expected 14 keys (or 13 without the partial tail) (input_length 6758, block 512), found 15"#
    );
    let exact_wrong = r#"{"timestamp": 0, "input_length": 1024, "hash_ids": [1,2,3]}"#;
    assert_rejects(
        TraceFormat::Mooncake,
        512,
        exact_wrong,
        Some("hash_ids"),
        "expected 2 keys (input_length 1024, block 512), found 3",
    );
    let cases: &[(&str, &str, &str)] = &[
        (
            r#"{"input_length": 10, "hash_ids": []}"#,
            "timestamp",
            "missing integer field: timestamp",
        ),
        (
            r#"{"timestamp": -1, "input_length": 10, "hash_ids": []}"#,
            "timestamp",
            "found -1",
        ),
        (
            r#"{"timestamp": 1.5, "input_length": 10, "hash_ids": []}"#,
            "timestamp",
            "expected an integer, found 1.5",
        ),
        (
            r#"{"timestamp": 9223372036855, "input_length": 10, "hash_ids": []}"#,
            "timestamp",
            "fit i64",
        ),
        (
            r#"{"timestamp": 0, "hash_ids": []}"#,
            "input_length",
            "missing integer field: input_length",
        ),
        (
            r#"{"timestamp": 0, "input_length": 0, "hash_ids": []}"#,
            "input_length",
            "expected a positive integer, found 0",
        ),
        (
            r#"{"timestamp": 0, "input_length": 10}"#,
            "hash_ids",
            "missing array field: hash_ids",
        ),
        (
            r#"{"timestamp": 0, "input_length": 10, "hash_ids": ["a"]}"#,
            "hash_ids",
            "expected an integer",
        ),
    ];
    for (line, field, fragment) in cases {
        assert_rejects(TraceFormat::Mooncake, 512, line, Some(field), fragment);
    }
}

#[test]
fn mooncake_line_equals_the_equivalent_standard_line() {
    let mooncake = parse(TraceFormat::Mooncake, 512, MOONCAKE_LINE_1).unwrap();
    let standard = standard(
        r#"{"type":"get","instance_id":"instance","timestamp_ns":1,"keys":[0,1,2,3,4,5,6,7,8,9,10,11,12],"input_len":6758}"#,
    )
    .unwrap();
    assert_eq!(mooncake.keys, standard.keys);
    assert_eq!(mooncake.input_token_len, standard.input_token_len);
    assert_eq!(mooncake.kind, standard.kind);
}

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn mooncake_conversation_trace_keeps_floor_blocks_on_every_line() {
    let path = shared_file("traces/conversation_trace.jsonl");
    check_mooncake_file(&path, 12_031);
}

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn mooncake_synthetic_trace_keeps_floor_blocks_on_every_line() {
    let path = shared_file("traces/synthetic_trace.jsonl");
    check_mooncake_file(&path, 3_993);
}

fn check_mooncake_file(path: &Path, expected_lines: u64) {
    let mut first = Vec::new();
    open_trace(path)
        .unwrap()
        .take(4096)
        .read_to_end(&mut first)
        .unwrap();
    let first_line = first.split(|&b| b == b'\n').next().unwrap();
    assert_eq!(detect_format(first_line), Some(TraceFormat::Mooncake));

    let mut parser = parser(TraceFormat::Mooncake, 512);
    let mut event = TraceEvent::default();
    let mut previous_ns = 0;
    let lines = for_each_line(open_trace(path).unwrap(), |number, line| {
        assert_eq!(
            parser.parse_line(line, number, &mut event).unwrap(),
            LineOutcome::Event
        );
        let value: serde_json::Value = serde_json::from_slice(line).unwrap();
        let input_length = value["input_length"].as_i64().unwrap();
        let hash_ids: Vec<i64> = value["hash_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_i64().unwrap())
            .collect();
        let full = usize::try_from(input_length / 512).unwrap();
        assert_eq!(event.keys, hash_ids[..full], "line {number}");
        assert_eq!(event.input_token_len, input_length);
        assert_eq!(
            event.timestamp_ns,
            value["timestamp"].as_i64().unwrap() * 1_000_000
        );
        assert_eq!(event.trace_id, number.to_string());
        assert!(event.timestamp_ns >= previous_ns);
        previous_ns = event.timestamp_ns;
        Ok::<(), std::io::Error>(())
    })
    .unwrap();
    assert_eq!(lines, expected_lines);
}

// ---------------------------------------------------------------------------------------------
// Qwen-Bailian

fn bailian_line(timestamp: &str, input_length: u64, hash_ids: &[i64]) -> String {
    let ids: Vec<String> = hash_ids.iter().map(ToString::to_string).collect();
    format!(
        r#"{{"chat_id": 159, "parent_chat_id": 55, "timestamp": {timestamp}, "input_length": {input_length}, "output_length": 132, "type": "text", "turn": 2, "hash_ids": [{}]}}"#,
        ids.join(", ")
    )
}

#[test]
fn bailian_chains_complete_blocks_like_the_converter() {
    let ids: Vec<i64> = (1000..1033).collect(); // ceil(521 / 16) = 33 ids
    let event = parse(TraceFormat::Bailian, 16, &bailian_line("61.114", 521, &ids)).unwrap();
    assert_eq!(event.keys, apply_prefix_hash(&ids[..32]));
    assert_eq!(event.input_token_len, 521);
    assert_eq!(event.timestamp_ns, 61_114_000_000);
    assert_eq!(
        (event.instance_id.as_deref(), event.trace_id.as_str()),
        (None, "159")
    );
    // The default block size of a Bailian parser is 16.
    assert_eq!(
        parse(TraceFormat::Bailian, 0, &bailian_line("1", 521, &ids))
            .unwrap()
            .keys
            .len(),
        32
    );
}

#[test]
fn bailian_timestamps_match_python_int_of_the_float_product() {
    // Python: int(1.001 * 1_000_000_000) == 1000999999; an integer timestamp is exact.
    for (timestamp, expected_ns) in [
        ("1.001", 1_000_999_999),
        ("0.1", 100_000_000),
        ("1704110400.123456", 1_704_110_400_123_456_000),
        ("2", 2_000_000_000),
        ("2e0", 2_000_000_000),
    ] {
        let event = parse(TraceFormat::Bailian, 16, &bailian_line(timestamp, 16, &[9])).unwrap();
        assert_eq!(event.timestamp_ns, expected_ns, "{timestamp}");
    }
    let missing = r#"{"input_length": 16, "hash_ids": [9]}"#;
    assert_eq!(
        parse(TraceFormat::Bailian, 16, missing)
            .unwrap()
            .timestamp_ns,
        0,
        "converter default 0.0"
    );
}

#[test]
fn bailian_bumps_colliding_timestamps_like_the_converter() {
    let mut parser = parser(TraceFormat::Bailian, 16);
    let bases = [
        "1.0",
        "1.0",
        "1.0",
        "1.000000001",
        "1.000000009",
        "2",
        "2.000000001",
    ];
    let got: Vec<i64> = bases
        .iter()
        .map(|t| {
            parse_with(&mut parser, &bailian_line(t, 16, &[1]))
                .unwrap()
                .timestamp_ns
        })
        .collect();
    // Converter: get at the first free ns >= base, write at the first free ns >= base + 1.
    assert_eq!(
        got,
        [
            1_000_000_000,
            1_000_000_002,
            1_000_000_004,
            1_000_000_006,
            1_000_000_009,
            2_000_000_000,
            2_000_000_002
        ]
    );
    // A failing line does not advance the state.
    assert!(parse_with(&mut parser, &bailian_line("2.5", 0, &[])).is_err());
    assert_eq!(
        parse_with(&mut parser, &bailian_line("2.000000001", 16, &[1]))
            .unwrap()
            .timestamp_ns,
        2_000_000_004
    );
}

/// <https://github.com/litehit/litehit/issues/26>: `--format standard` on a Mooncake line
/// names the format the line looks like; a bad line of the right format gets no hint.
#[test]
fn a_line_of_another_format_says_which_it_looks_like() {
    let mooncake =
        r#"{"timestamp": 27482, "input_length": 6955, "output_length": 52, "hash_ids": [46, 47]}"#;
    let error = standard(mooncake).unwrap_err().to_string();
    assert!(
        error.contains(
            "(this line looks like mooncake: --format mooncake, or no --format to detect it)"
        ),
        "{error}"
    );
    let bad_standard =
        r#"{"type":"get","instance_id":"a","timestamp_ns":-1,"keys":[],"input_len":1}"#;
    let error = standard(bad_standard).unwrap_err().to_string();
    assert!(!error.contains("looks like"), "{error}");
}

/// <https://github.com/litehit/litehit/issues/26>: a Bailian row's `chat_id` is its trace id
/// (rows got upstream's `trace_default_<ts>` instead); without one, the engine derives that.
#[test]
fn bailian_chat_id_is_the_trace_id() {
    let numbered = r#"{"chat_id": 159, "parent_chat_id": -1, "timestamp": 61, "input_length": 16, "hash_ids": [9]}"#;
    assert_eq!(
        parse(TraceFormat::Bailian, 16, numbered).unwrap().trace_id,
        "159"
    );
    let named = r#"{"timestamp": 61, "chat_id": "c\u00e9-7", "input_length": 16, "hash_ids": [9]}"#;
    assert_eq!(
        parse(TraceFormat::Bailian, 16, named).unwrap().trace_id,
        "cé-7"
    );
    let without = r#"{"timestamp": 61, "input_length": 16, "hash_ids": [9]}"#;
    assert_eq!(
        parse(TraceFormat::Bailian, 16, without).unwrap().trace_id,
        ""
    );
    let null = r#"{"chat_id": null, "timestamp": 61, "input_length": 16, "hash_ids": [9]}"#;
    assert_eq!(parse(TraceFormat::Bailian, 16, null).unwrap().trace_id, "");
    let bad = r#"{"chat_id": [1], "timestamp": 61, "input_length": 16, "hash_ids": [9]}"#;
    let error = parse(TraceFormat::Bailian, 16, bad)
        .unwrap_err()
        .to_string();
    assert!(error.contains("chat_id"), "{error}");
}

#[test]
fn bailian_line_equals_the_standard_line_with_chained_keys() {
    let ids = [11, -12, 13, 14];
    let bailian = parse(TraceFormat::Bailian, 16, &bailian_line("3.5", 60, &ids)).unwrap();
    let chained: Vec<String> = apply_prefix_hash(&ids[..3])
        .iter()
        .map(ToString::to_string)
        .collect();
    let standard = standard(&format!(
        r#"{{"type":"get","instance_id":"instance","trace_id":"","timestamp_ns":3500000000,"keys":[{}],"input_len":60}}"#,
        chained.join(",")
    ))
    .unwrap();
    assert_eq!(bailian.keys, standard.keys);
    assert_eq!(bailian.input_token_len, standard.input_token_len);
    assert_eq!(bailian.timestamp_ns, standard.timestamp_ns);
}

#[test]
fn bailian_errors_name_line_and_field() {
    let cases: &[(&str, &str, &str)] = &[
        (
            r#"{"timestamp": 1, "hash_ids": [1]}"#,
            "input_length",
            "missing integer field: input_length",
        ),
        (
            r#"{"timestamp": 1, "input_length": 0, "hash_ids": []}"#,
            "input_length",
            "found 0",
        ),
        (
            r#"{"timestamp": 1, "input_length": 40, "hash_ids": [1]}"#,
            "hash_ids",
            "expected 3 keys (or 2 without the partial tail) (input_length 40, block 16), found 1",
        ),
        (
            r#"{"timestamp": "1", "input_length": 16, "hash_ids": [1]}"#,
            "timestamp",
            "expected a number",
        ),
        (
            r#"{"timestamp": 1e300, "input_length": 16, "hash_ids": [1]}"#,
            "timestamp",
            "fit i64",
        ),
        (
            r#"{"timestamp": -1.0, "input_length": 16, "hash_ids": [1]}"#,
            "timestamp",
            "expected seconds >= 0, found -1",
        ),
    ];
    for (line, field, fragment) in cases {
        assert_rejects(TraceFormat::Bailian, 16, line, Some(field), fragment);
    }
}

// ---------------------------------------------------------------------------------------------
// KVCM event-publisher log

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn kvcm_log_parses_all_300_records_including_the_unterminated_last_line() {
    let path = shared_file("traces/event_publisher.log");
    let bytes = std::fs::read(&path).unwrap();
    assert_ne!(
        bytes.last(),
        Some(&b'\n'),
        "the fixture ends without a newline"
    );
    let first_line = bytes.split(|&b| b == b'\n').next().unwrap();
    assert_eq!(detect_format(first_line), Some(TraceFormat::Kvcm));

    let mut parser = parser(TraceFormat::Kvcm, 0);
    let mut event = TraceEvent::default();
    let (mut reads, mut writes, mut empty_writes) = (0, 0, 0);
    let mut last = None;
    let mut lines = TraceLines::new(open_trace(&path).unwrap());
    while let Some(line) = lines.next_line().unwrap() {
        assert_eq!(
            parser
                .parse_line(line.bytes, line.line_number, &mut event)
                .unwrap(),
            LineOutcome::Event
        );
        let value: serde_json::Value = serde_json::from_slice(line.bytes).unwrap();
        assert_eq!(event.trace_id, value["id"].as_str().unwrap());
        assert_eq!(event.instance_id.as_deref(), Some("3780643326877293460"));
        assert_eq!(
            event.timestamp_ns,
            value["trigger_time_us"].as_i64().unwrap() * 1000
        );
        let keys: Vec<i64> = value["keys"]
            .as_array()
            .map(|keys| keys.iter().map(|k| k.as_i64().unwrap()).collect())
            .unwrap_or_default();
        assert_eq!(event.keys, keys);
        assert_eq!(event.input_token_len, 0, "no input length in this log");
        match value["type"].as_str().unwrap() {
            "GetCacheLocation" => {
                assert_eq!(event.kind, EventKind::Read);
                reads += 1;
            }
            "StartWriteCache" => {
                assert_eq!(event.kind, EventKind::Write);
                writes += 1;
            }
            "FinishWriteCache" => {
                assert_eq!((event.kind, event.keys.len()), (EventKind::Write, 0));
                empty_writes += 1;
            }
            other => panic!("unexpected type {other}"),
        }
        last = Some((line.line_number, event.trace_id.clone()));
    }
    assert_eq!((reads, writes, empty_writes), (102, 102, 96));
    let last_record: serde_json::Value =
        serde_json::from_slice(bytes.rsplit(|&b| b == b'\n').next().unwrap()).unwrap();
    assert_eq!(
        last,
        Some((300, last_record["id"].as_str().unwrap().to_owned()))
    );
}

#[test]
fn kvcm_hand_written_events() {
    let get = r#"{"id":"g1","source":"s","type":"GetCacheLocation","trigger_time_us":5,"keys":[-1,2],"tokens":[7,8,9],"block_mask":1}"#;
    let event = parse(TraceFormat::Kvcm, 0, get).unwrap();
    assert_eq!(
        event,
        TraceEvent {
            kind: EventKind::Read,
            instance_id: Some("s".into()),
            trace_id: "g1".into(),
            timestamp_ns: 5000,
            keys: vec![-1, 2],
            input_token_len: 3,
            tenant: None,
            cached_tokens: None,
            output_keys: Vec::new(),
        }
    );
    // input_len, input_length, input_tokens win over tokens, in that order.
    let explicit = r#"{"type":"GetCacheLocation","trigger_time_us":5,"input_tokens":30,"input_length":20,"tokens":[1]}"#;
    let event = parse(TraceFormat::Kvcm, 0, explicit).unwrap();
    assert_eq!((event.input_token_len, event.instance_id), (20, None));
    let finish = r#"{"id":"f","source":"s","type":"FinishWriteCache","trigger_time_us":6,"write_session_id":"w","success_block":12}"#;
    let event = parse(TraceFormat::Kvcm, 0, finish).unwrap();
    assert_eq!(
        (event.kind, event.keys.len(), event.timestamp_ns),
        (EventKind::Write, 0, 6000)
    );

    let cases: &[(&str, &str, &str)] = &[
        (
            r#"{"id":"x","trigger_time_us":1}"#,
            "type",
            "missing string field: type",
        ),
        (
            r#"{"type":"GetCacheLocation","keys":[]}"#,
            "trigger_time_us",
            "missing integer field: trigger_time_us",
        ),
        (
            r#"{"type":"GetCacheLocation","trigger_time_us":-1}"#,
            "trigger_time_us",
            "found -1",
        ),
        (
            r#"{"type":"GetCacheLocation","trigger_time_us":9223372036854776}"#,
            "trigger_time_us",
            "fit i64",
        ),
        (
            r#"{"type":"GetCacheLocation","trigger_time_us":1,"source":""}"#,
            "source",
            "non-empty",
        ),
        (
            r#"{"type":"GetCacheLocation","trigger_time_us":1,"keys":[1.5]}"#,
            "keys",
            "expected an integer",
        ),
        (
            r#"{"type":"GetCacheLocation","trigger_time_us":1,"input_len":0}"#,
            "input_len",
            "found 0",
        ),
    ];
    for (line, field, fragment) in cases {
        assert_rejects(TraceFormat::Kvcm, 0, line, Some(field), fragment);
    }
}

#[test]
fn kvcm_other_event_types_are_skipped_without_touching_the_event() {
    let mut parser = parser(TraceFormat::Kvcm, 0);
    let mut event = TraceEvent::default();
    parser
        .parse_line(
            br#"{"id":"a","source":"s","type":"GetCacheLocation","trigger_time_us":1,"keys":[1]}"#,
            1,
            &mut event,
        )
        .unwrap();
    let before = event.clone();
    let outcome = parser
        .parse_line(
            br#"{"id":"b","source":"t","type":"RemoveCache","trigger_time_us":2,"keys":[5,6]}"#,
            2,
            &mut event,
        )
        .unwrap();
    assert_eq!(outcome, LineOutcome::Ignored);
    assert_eq!(event, before);
    // A failing line leaves it untouched too.
    assert!(
        parser
            .parse_line(br#"{"id":"c","keys":[7]}"#, 3, &mut event)
            .is_err()
    );
    assert_eq!(event, before);
}

// ---------------------------------------------------------------------------------------------
// LMCache

#[test]
fn lmcache_maps_hex_hashes_and_keeps_full_chunks() {
    let line = r#"{"timestamp": 1.001, "request_id": "cmpl-1", "chunk_size": 256, "seq_len": 600, "chunk_hashes": ["1f", "ffffffffffffffff", "0xabc"]}"#;
    let event = parse(TraceFormat::Lmcache, 256, line).unwrap();
    assert_eq!(
        event.keys,
        [31, -1],
        "two full chunks of 600 tokens; the partial third dropped"
    );
    assert_eq!(event.trace_id, "cmpl-1");
    assert_eq!(
        (event.timestamp_ns, event.input_token_len),
        (1_000_999_999, 600)
    );
    assert_eq!(event.instance_id, None);
    // Block size 0 accepts the line's own chunk size.
    assert_eq!(parse(TraceFormat::Lmcache, 0, line).unwrap().keys.len(), 2);
    // Long digests fold deterministically and keep distinct hashes distinct.
    let digest_a = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
    let digest_b = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a09";
    assert_eq!(
        chunk_hash_key(digest_a.as_bytes()),
        chunk_hash_key(digest_a.as_bytes())
    );
    assert_ne!(
        chunk_hash_key(digest_a.as_bytes()),
        chunk_hash_key(digest_b.as_bytes())
    );
}

#[test]
fn lmcache_errors_name_line_and_field() {
    let cases: &[(&str, &str, &str)] = &[
        (
            r#"{"timestamp": 1, "chunk_size": 512, "seq_len": 600, "chunk_hashes": ["1"]}"#,
            "chunk_size",
            "expected 256 (the trace block size), found 512",
        ),
        (
            r#"{"timestamp": 1, "chunk_size": 256, "seq_len": 600, "chunk_hashes": ["1"]}"#,
            "chunk_hashes",
            "expected 3 keys (or 2 without the partial tail) (seq_len 600, block 256), found 1",
        ),
        (
            r#"{"timestamp": 1, "chunk_size": 256, "seq_len": 600, "chunk_hashes": ["1", "xyz"]}"#,
            "chunk_hashes",
            "expected a hex string, found \"xyz\"",
        ),
        (
            r#"{"timestamp": 1, "chunk_size": 256, "seq_len": 600, "chunk_hashes": [1, 2]}"#,
            "chunk_hashes",
            "expected a string",
        ),
        (
            r#"{"chunk_size": 256, "seq_len": 600, "chunk_hashes": []}"#,
            "timestamp",
            "missing number field: timestamp",
        ),
        (
            r#"{"timestamp": 1, "seq_len": 600, "chunk_hashes": []}"#,
            "chunk_size",
            "missing integer field: chunk_size",
        ),
        (
            r#"{"timestamp": 1, "chunk_size": 256, "chunk_hashes": []}"#,
            "seq_len",
            "missing integer field: seq_len",
        ),
        (
            r#"{"timestamp": 1, "chunk_size": 256, "seq_len": 600}"#,
            "chunk_hashes",
            "missing array field: chunk_hashes",
        ),
    ];
    for (line, field, fragment) in cases {
        assert_rejects(TraceFormat::Lmcache, 256, line, Some(field), fragment);
    }
}

// ---------------------------------------------------------------------------------------------
// Detection and opening

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn detection_recognises_the_first_line_of_each_real_file() {
    for (relative, expected) in [
        ("traces/conversation_trace.jsonl", TraceFormat::Mooncake),
        ("traces/synthetic_trace.jsonl", TraceFormat::Mooncake),
        ("traces/event_publisher.log", TraceFormat::Kvcm),
        (
            "reference/zishano_hisim_smoke_trace.jsonl",
            TraceFormat::Standard,
        ),
    ] {
        let path = shared_file(relative);
        let mut lines = TraceLines::new(open_trace(&path).unwrap());
        let first = lines.next_line().unwrap().unwrap();
        assert_eq!(detect_format(first.bytes), Some(expected), "{relative}");
    }
    let bailian = bailian_line("61.114", 16, &[1]);
    assert_eq!(
        detect_format(bailian.as_bytes()),
        Some(TraceFormat::Bailian)
    );
    assert_eq!(
        detect_format(MOONCAKE_LINE_1.as_bytes()),
        Some(TraceFormat::Mooncake)
    );
}

/// A small trace with CRLF, a blank line and no final newline.
const SAMPLE: &[u8] = b"{\"timestamp\": 0, \"input_length\": 600, \"hash_ids\": [1, 2]}\r\n\n{\"timestamp\": 1, \"input_length\": 512, \"hash_ids\": [1]}";

fn lines_of(path: &Path) -> Vec<(u64, Vec<u8>)> {
    let mut out = Vec::new();
    for_each_line(open_trace(path).unwrap(), |number, line| {
        out.push((number, line.to_vec()));
        Ok::<(), std::io::Error>(())
    })
    .unwrap();
    out
}

fn expected_sample_lines() -> Vec<(u64, Vec<u8>)> {
    vec![
        (
            1,
            br#"{"timestamp": 0, "input_length": 600, "hash_ids": [1, 2]}"#.to_vec(),
        ),
        (2, Vec::new()),
        (
            3,
            br#"{"timestamp": 1, "input_length": 512, "hash_ids": [1]}"#.to_vec(),
        ),
    ]
}

fn gzip(data: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    encoder.write_all(data).unwrap();
    encoder.finish().unwrap()
}

fn zstd(data: &[u8]) -> Vec<u8> {
    ruzstd::encoding::compress_to_vec(data, ruzstd::encoding::CompressionLevel::Fastest)
}

#[test]
fn plain_gzip_and_zstd_traces_read_the_same_lines() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("trace.jsonl");
    std::fs::write(&plain, SAMPLE).unwrap();
    let gz = dir.path().join("trace.jsonl.gz");
    std::fs::write(&gz, gzip(SAMPLE)).unwrap();
    let zst = dir.path().join("trace.jsonl.zst");
    std::fs::write(&zst, zstd(SAMPLE)).unwrap();
    for path in [&plain, &gz, &zst] {
        assert_eq!(
            lines_of(path),
            expected_sample_lines(),
            "{}",
            path.display()
        );
    }
    // Magic bytes decide: a compressed file without the extension is still decoded.
    let unnamed = dir.path().join("trace-without-extension");
    std::fs::write(&unnamed, zstd(SAMPLE)).unwrap();
    assert_eq!(lines_of(&unnamed), expected_sample_lines());
    assert_eq!(Compression::from_magic(&gzip(b"x")), Compression::Gzip);
    assert_eq!(Compression::from_magic(&zstd(b"x")), Compression::Zstd);
    assert_eq!(Compression::from_magic(b"{\"a\":1}"), Compression::None);
}

#[test]
fn multi_member_gzip_and_multi_frame_zstd_decode_completely() {
    let (head, tail) = SAMPLE.split_at(30);
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("two-members.gz");
    std::fs::write(&gz, [gzip(head), gzip(tail)].concat()).unwrap();
    assert_eq!(lines_of(&gz), expected_sample_lines());

    // Frame, skippable frame (magic 0x184D2A50, 3-byte payload), frame.
    let skippable = [0x50, 0x2a, 0x4d, 0x18, 3, 0, 0, 0, 0xde, 0xad, 0xbe];
    let zst = dir.path().join("frames.zst");
    std::fs::write(&zst, [zstd(head), skippable.to_vec(), zstd(tail)].concat()).unwrap();
    assert_eq!(lines_of(&zst), expected_sample_lines());
}

#[test]
fn zstd_cli_output_decodes_when_the_cli_is_installed() {
    let dir = tempfile::tempdir().unwrap();
    let plain = dir.path().join("trace.jsonl");
    std::fs::write(&plain, SAMPLE.repeat(2000)).unwrap();
    let status = std::process::Command::new("zstd")
        .args(["-q", "-19", "-k"])
        .arg(&plain)
        .status();
    match status {
        Ok(status) if status.success() => {
            let decoded = lines_of(&dir.path().join("trace.jsonl.zst"));
            assert_eq!(decoded, lines_of(&plain));
            assert_eq!(
                decoded.len(),
                2 * 2000 + 1,
                "the copies join at the unterminated line"
            );
        }
        _ => println!("skipping: the zstd CLI is not installed"),
    }
}

#[test]
fn a_compression_extension_without_its_magic_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("trace.jsonl.gz");
    std::fs::write(&fake, SAMPLE).unwrap();
    let err = open_trace(&fake)
        .err()
        .expect("plain bytes named .gz are rejected");
    assert_eq!(err.kind(), std::io::ErrorKind::InvalidData);
    assert!(err.to_string().contains("expected Gzip"), "{err}");
    assert!(open_trace(&dir.path().join("missing.jsonl")).is_err());
}

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn real_mooncake_trace_round_trips_through_gzip_and_zstd() {
    let path = shared_file("traces/conversation_trace.jsonl");
    let original = std::fs::read(&path).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let gz = dir.path().join("c.jsonl.gz");
    std::fs::write(&gz, gzip(&original)).unwrap();
    let zst = dir.path().join("c.jsonl.zst");
    std::fs::write(&zst, zstd(&original)).unwrap();
    for compressed in [&gz, &zst] {
        let mut decoded = Vec::new();
        open_trace(compressed)
            .unwrap()
            .read_to_end(&mut decoded)
            .unwrap();
        assert!(decoded == original, "{} differs", compressed.display());
    }
}

#[test]
fn a_rejected_line_is_named_by_its_trace_id_when_it_has_one() {
    // The fault comes before or after the trace id; the JSON may even be cut off.
    let err = standard(r#"{"type":"get","trace_id":"req-7","instance_id":"i","timestamp_ns":5,"keys":[1],"input_len":-5}"#).unwrap_err();
    assert_eq!(err.trace_id.as_deref(), Some("req-7"));
    assert!(
        err.to_string()
            .starts_with("line 7: trace_id[req-7]: field \"input_len\": "),
        "{err}"
    );
    let err = standard(r#"{"type":"put", "trace_id" : "early","keys":[1]}"#).unwrap_err();
    assert_eq!(err.trace_id.as_deref(), Some("early"));
    let err = standard(r#"{"type":"get","trace_id":"cut"#).unwrap_err();
    assert_eq!(err.trace_id, None, "no closing quote: {err}");
    let err = standard(r#"{"type":"get","trace_id":"cut-later","keys":[1"#).unwrap_err();
    assert_eq!(err.trace_id.as_deref(), Some("cut-later"), "{err}");
    // No trace id (or an empty one): the message is as before.
    let err =
        standard(r#"{"type":"get","instance_id":"i","timestamp_ns":5,"keys":[1],"input_len":-5}"#)
            .unwrap_err();
    assert_eq!(err.trace_id, None);
    assert!(
        err.to_string().starts_with("line 7: field \"input_len\": "),
        "{err}"
    );
    let err = standard(r#"{"type":"get","trace_id":"","keys":"x"}"#).unwrap_err();
    assert_eq!(err.trace_id, None);
}

/// Editors on Windows start a file with a UTF-8 byte-order mark: the first line is read (and
/// its format detected) as if it were not there.
#[test]
fn a_byte_order_mark_before_the_first_line_is_skipped() {
    let line = r#"{"type":"get","instance_id":"a","timestamp_ns":5,"keys":[1,2],"input_len":8}"#;
    let with_bom = format!("\u{feff}{line}");
    assert_eq!(
        detect_format(with_bom.as_bytes()),
        Some(TraceFormat::Standard)
    );
    let plain = parse(TraceFormat::Standard, 4, line).unwrap();
    let marked = parse(TraceFormat::Standard, 4, &with_bom).unwrap();
    assert_eq!(marked.keys, plain.keys);
    assert_eq!(marked.timestamp_ns, plain.timestamp_ns);
    assert_eq!(marked.input_token_len, plain.input_token_len);
}

#[test]
fn ids_with_line_breaks_are_rejected_naming_their_field() {
    // A facts row holds the ids; a line break would split it and the file could not be read
    // back.
    let cases: &[(TraceFormat, u64, &str, &str)] = &[
        (
            TraceFormat::Standard,
            16,
            r#"{"type":"get","instance_id":"i","trace_id":"nl\nx","timestamp_ns":1,"keys":[1],"input_len":16}"#,
            "trace_id",
        ),
        (
            TraceFormat::Standard,
            16,
            r#"{"type":"get","instance_id":"i\r","trace_id":"t","timestamp_ns":1,"keys":[1],"input_len":16}"#,
            "instance_id",
        ),
        (
            TraceFormat::Kvcm,
            16,
            r#"{"id":"a\nb","source":"i","type":"GetCacheLocation","trigger_time_us":1,"keys":[1],"input_len":16}"#,
            "id",
        ),
    ];
    for (format, block, line, field) in cases {
        assert_rejects(*format, *block, line, Some(field), "line break");
    }
}
