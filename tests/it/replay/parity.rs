//! Upstream parity and the messages of issue 16 ("Nothing overwritten, nothing hung, nothing
//! quadratic"), points 6 and 7, each test built from the
//! issue's reproducer: repeated JSON member names (first wins, as upstream's reader), a skipped
//! number out of the double range (the line is refused, as upstream), `query … -inf` echoed as
//! upstream echoes it, group rules only for groups an instance uses, a first line past the
//! detection limit, a trace without reads saying what it held, and `watch --facts-out`
//! publishing nothing when `replay` would publish nothing.

use std::fs;
use std::path::Path;

use crate::common::cli_bin::{
    InstanceSpec, assert_mentions, config_json, failed, get_row, ok, read_facts, replay_to, run_in,
    write_file, write_row,
};
use litehit_core::config::parse_config_str;
use litehit_core::engine::LaneSet;
use litehit_core::formats::{
    EventKind, LineOutcome, LineParser, ParseOptions, TraceEvent, TraceFormat,
};

/// Parses one line of `format` at its native block size.
fn parse(format: TraceFormat, line: &str) -> Result<TraceEvent, String> {
    let mut parser = LineParser::new(format, ParseOptions::default());
    let mut event = TraceEvent::default();
    match parser.parse_line(line.as_bytes(), 1, &mut event) {
        Ok(LineOutcome::Event) => Ok(event),
        Ok(other) => Err(format!("not an event: {other:?}")),
        Err(error) => Err(error.to_string()),
    }
}

// --- Repeated member names: the first occurrence wins ------------------------------------

#[test]
fn repeated_keys_in_a_standard_row_read_the_first() {
    let event = parse(
        TraceFormat::Standard,
        r#"{"type":"get","instance_id":"i","trace_id":"r","timestamp_ns":5,"keys":[1,2,3],"keys":[7,8,9],"input_len":48}"#,
    )
    .unwrap();
    assert_eq!(event.keys, [1, 2, 3]);
}

#[test]
fn a_repeated_type_reads_the_first() {
    let base = r#""instance_id":"i","trace_id":"r","timestamp_ns":5,"keys":[1],"input_len":16"#;
    let write_first = parse(
        TraceFormat::Standard,
        &format!(r#"{{"type":"write","type":"get",{base}}}"#),
    )
    .unwrap();
    assert_eq!(write_first.kind, EventKind::Write);
    let get_first = parse(
        TraceFormat::Standard,
        &format!(r#"{{"type":"get",{base},"type":"write"}}"#),
    )
    .unwrap();
    assert_eq!(get_first.kind, EventKind::Read);
    // An escaped spelling of the name is the same member.
    let escaped = parse(
        TraceFormat::Standard,
        &format!(r#"{{"type":"get",{base},"\u0074ype":"write"}}"#),
    )
    .unwrap();
    assert_eq!(escaped.kind, EventKind::Read);
}

#[test]
fn a_repeated_timestamp_reads_the_first_and_the_later_one_is_not_validated() {
    let event = parse(
        TraceFormat::Standard,
        r#"{"type":"get","instance_id":"i","trace_id":"r","timestamp_ns":5,"keys":[1],"input_len":16,"timestamp_ns":-1}"#,
    )
    .unwrap();
    assert_eq!(event.timestamp_ns, 5);
    // The other way round the first is the bad one, and the line is refused.
    let error = parse(
        TraceFormat::Standard,
        r#"{"type":"get","instance_id":"i","trace_id":"r","timestamp_ns":-1,"keys":[1],"input_len":16,"timestamp_ns":5}"#,
    )
    .unwrap_err();
    assert!(error.contains("timestamp_ns"), "{error}");
}

#[test]
fn every_format_reads_a_repeated_field_from_its_first_occurrence() {
    let mooncake = parse(
        TraceFormat::Mooncake,
        r#"{"timestamp":1,"input_length":1024,"hash_ids":[1,2],"hash_ids":[7,8]}"#,
    )
    .unwrap();
    assert_eq!(mooncake.keys, [1, 2]);
    let bailian = parse(
        TraceFormat::Bailian,
        r#"{"timestamp":1,"timestamp":9,"input_length":16,"hash_ids":[5]}"#,
    )
    .unwrap();
    assert_eq!(bailian.timestamp_ns, 1_000_000_000);
    let kvcm = parse(
        TraceFormat::Kvcm,
        r#"{"id":"g","source":"s","type":"GetCacheLocation","trigger_time_us":2,"keys":[3,4],"keys":[9],"source":"t"}"#,
    )
    .unwrap();
    assert_eq!(
        (kvcm.keys.as_slice(), kvcm.instance_id.as_deref()),
        (&[3, 4][..], Some("s"))
    );
    let lmcache = parse(
        TraceFormat::Lmcache,
        r#"{"timestamp":1,"request_id":"a","request_id":"b","chunk_size":256,"seq_len":256,"chunk_hashes":["1f"]}"#,
    )
    .unwrap();
    assert_eq!(lmcache.trace_id, "a");
}

#[test]
fn replay_of_repeated_keys_gives_the_facts_of_the_first() {
    let dir = tempfile::tempdir().unwrap();
    // Request 2 repeats request 1's first keys: with [1,2,3] read, all 3 blocks hit.
    let trace = format!(
        "{}{}",
        r#"{"type":"get","instance_id":"i","trace_id":"r1","timestamp_ns":1,"keys":[1,2,3],"input_len":48,"keys":[7,8,9]}"#,
        "\n"
    ) + &get_row("i", "r2", 2, &[1, 2, 3], 48);
    let trace = write_file(dir.path(), "t.jsonl", &trace);
    let out = dir.path().join("out");
    ok(replay_to(&trace, &out, &["--block-size", "16"]));
    let rows = read_facts(&out.join("litehit_facts.csv"));
    assert_eq!(rows.len(), 2);
    assert_eq!(rows[1].hit_curve, "[[1,3]]", "{rows:?}");
}

#[test]
fn a_config_member_repeated_keeps_its_first_value() {
    let config = config_json(
        "t.jsonl",
        "out",
        4,
        &[InstanceSpec {
            instance_id: "i1",
            block_size: 8,
            block_bytes: 4096,
        }],
        "",
    )
    .replace(r#""block_size":4,"#, r#""block_size":4,"block_size":0,"#)
    .replace(
        r#""ttl_seconds":0,"#,
        r#""ttl_seconds":7,"ttl_seconds":-5,"#,
    )
    .replace(
        r#""instance_id":"i1","#,
        r#""instance_id":"i1","instance_id":"","#,
    );
    let resolved = parse_config_str(&config).unwrap();
    assert_eq!(resolved.engine.trace_block_size_tokens, 4);
    let LaneSet::Configured(lanes) = &resolved.engine.lanes else {
        panic!("configured lanes")
    };
    assert_eq!(lanes.len(), 1);
    assert_eq!(lanes[0].instance_id, "i1");
    assert_eq!(lanes[0].ttl_ns, 7_000_000_000);
}

// --- Numbers out of the double range, even in skipped fields ------------------------------

#[test]
fn a_skipped_field_holding_1e999_refuses_the_line_in_every_format() {
    let lines = [
        (
            TraceFormat::Standard,
            r#"{"type":"get","instance_id":"i","trace_id":"r","timestamp_ns":5,"keys":[1],"input_len":16,"output_len":1e999}"#,
        ),
        (
            TraceFormat::Standard,
            r#"{"type":"write","instance_id":"i","trace_id":"w","timestamp_ns":5,"keys":[1],"input_len":-1e999}"#,
        ),
        (
            TraceFormat::Standard,
            r#"{"type":"get","instance_id":"i","trace_id":"r","timestamp_ns":5,"keys":[1],"input_len":16,"x":{"y":[0e999]}}"#,
        ),
        (
            TraceFormat::Mooncake,
            r#"{"timestamp":1,"input_length":512,"hash_ids":[1],"output_length":1e999}"#,
        ),
        (
            TraceFormat::Bailian,
            r#"{"timestamp":1,"input_length":16,"hash_ids":[1],"turn":1e999}"#,
        ),
        (
            TraceFormat::Kvcm,
            r#"{"id":"g","source":"s","type":"GetCacheLocation","trigger_time_us":2,"keys":[3],"success_block":1e999}"#,
        ),
        (
            TraceFormat::Lmcache,
            r#"{"timestamp":1,"request_id":"a","chunk_size":256,"seq_len":256,"chunk_hashes":["1f"],"x":1e999}"#,
        ),
    ];
    for (format, line) in lines {
        let error = parse(format, line).unwrap_err();
        assert!(
            error.contains("line 1") && error.contains("double range"),
            "{format:?} {line}: {error}"
        );
        // Within the range the same line is fine.
        let within = line.replace("1e999", "1e300").replace("0e999", "0e300");
        assert!(parse(format, &within).is_ok(), "{format:?} {within}");
    }
}

#[test]
fn a_config_number_out_of_the_double_range_is_refused() {
    let config = config_json(
        "t.jsonl",
        "out",
        4,
        &[InstanceSpec {
            instance_id: "i1",
            block_size: 8,
            block_bytes: 4096,
        }],
        r#""unknown_key":1e999,"#,
    );
    assert!(parse_config_str(&config).is_err());
    assert!(parse_config_str(&config.replace("1e999", "1e300")).is_ok());
}

// --- query echoes capacities as upstream ---------------------------------------------------

#[test]
fn query_echoes_minus_inf_as_upstream_does() {
    let dir = tempfile::tempdir().unwrap();
    let facts = write_file(
        dir.path(),
        "f.csv",
        &format!(
            "{}\nr1,i1,1000,13,4,16384,\"[[1,2]]\"\n",
            litehit_core::facts::file::FACTS_HEADER
        ),
    );
    for (arguments, echoed) in [
        (&["-inf"][..], "[-inf]"),
        (&["-Infinity"][..], "[-inf]"),
        (&["-1"][..], "[-1]"),
        (&["-0.5", "1"][..], "[-0.5,1]"),
        // +inf is undefined behaviour upstream; LiteHit's words echo upstream's unlimited -1.
        (&["inf"][..], "[-1]"),
        (&["infinite"][..], "[-1]"),
    ] {
        let mut command_line = vec!["query", facts.to_str().unwrap(), "-"];
        command_line.extend(arguments);
        command_line.push("--summary-only");
        let run = ok(run_in(None, &command_line));
        let overall = run.stdout.lines().last().unwrap();
        assert!(
            overall.contains(&format!(r#""capacity_gb":{echoed},"#)),
            "{arguments:?}: {overall}"
        );
        // Every unlimited spelling projects the whole curve.
        let hit_blocks = if arguments.len() == 2 { "[2,2]" } else { "[2]" };
        assert!(
            overall.contains(&format!(r#""total_hit_blocks":{hit_blocks}"#)),
            "{arguments:?}: {overall}"
        );
    }
}

// --- Group rules apply to groups in use -----------------------------------------------------

/// A config whose instance uses group `g1`; `unused` is spliced in as a second group.
fn config_with_group(group: &str, used: bool) -> String {
    let base = config_json(
        "t.jsonl",
        "out",
        4,
        &[InstanceSpec {
            instance_id: "i1",
            block_size: 8,
            block_bytes: 4096,
        }],
        "",
    );
    let group = group.replace("NAME", if used { "g1" } else { "unused" });
    if used {
        // Replace the used group itself.
        let start = base.find(r#"{"name":"g1""#).unwrap();
        let end = start + base[start..].find('}').unwrap() + 1;
        format!("{}{group}{}", &base[..start], &base[end..])
    } else {
        base.replace(
            r#""instance_groups":["#,
            &format!(r#""instance_groups":[{group},"#),
        )
    }
}

#[test]
fn group_rules_check_only_the_groups_instances_use() {
    for (group, field) in [
        (r#"{"name":"NAME","ttl_seconds":-1}"#, "ttl_seconds"),
        (
            r#"{"name":"NAME","eviction_policy":"lfu"}"#,
            "eviction_policy",
        ),
        (
            r#"{"name":"NAME","shared_group_quota":true}"#,
            "shared_group_quota",
        ),
        (r#"{"name":"NAME","capacity_gb":[1,-2]}"#, "capacity_gb"),
        (
            r#"{"name":"NAME","ttl_seconds":9223372036854775807}"#,
            "ttl_seconds",
        ),
    ] {
        let unused = parse_config_str(&config_with_group(group, false))
            .unwrap_or_else(|error| panic!("unused {group}: {error}"));
        // The unused group's capacities are not among the config's.
        assert_eq!(unused.capacity_gb, [1.0], "{group}");
        let error = parse_config_str(&config_with_group(group, true))
            .expect_err(group)
            .to_string();
        assert!(
            error.contains(&format!("instance_groups[0].{field}")),
            "{group}: {error}"
        );
    }
    // A duplicate group name is a registry error, used or not.
    let twice = config_with_group(r#"{"name":"g1"}"#, false).replacen("unused", "g1", 1);
    let error = parse_config_str(&twice).unwrap_err().to_string();
    assert!(error.contains("duplicate group name"), "{error}");
}

// --- Messages (point 6) ----------------------------------------------------------------------

#[test]
fn a_first_line_past_the_detection_limit_says_so_with_its_line_number() {
    let dir = tempfile::tempdir().unwrap();
    // Two blank lines, then a line that ends with 64 MiB of spaces: valid JSON, too long to
    // detect (cut short it ends inside the array, which once read "EOF ... column 49").
    let mut text = b"\n \n{\"timestamp\":1,\"input_length\":512,\"hash_ids\":[".to_vec();
    text.resize(text.len() + litehit_core::formats::MAX_PEEK_BYTES, b' ');
    text.extend_from_slice(b"1]}\n");
    let trace = dir.path().join("long.jsonl");
    fs::write(&trace, &text).unwrap();
    let out = dir.path().join("out");
    let run = replay_to(&trace, &out, &[]);
    assert_mentions(
        failed(&run),
        &["long.jsonl: line 3 is longer than 64 MiB", "--format"],
    );
    assert!(!run.stderr.contains("EOF"), "{}", run.stderr);
    // With the format given (and a line cap above its length), the line is read whole.
    let run = replay_to(&trace, &out, &["--format", "mooncake"]);
    assert_mentions(
        failed(&run),
        &["line 3: longer than --max-line-bytes (16 MiB)"],
    );
    ok(replay_to(
        &trace,
        &out,
        &["--format", "mooncake", "--max-line-bytes", "128MiB"],
    ));
    assert_eq!(read_facts(&out.join("litehit_facts.csv")).len(), 1);
}

#[test]
fn a_trace_without_reads_says_what_its_lines_were() {
    let dir = tempfile::tempdir().unwrap();
    let writes: String = (1..=300)
        .map(|i| write_row("a", &format!("w{i}"), i, &[1, 2]))
        .collect();
    let cases = [
        (writes.clone(), "(300 lines, all write events)"),
        (
            format!("{writes}\n\n"),
            "(302 lines: 300 write events, 2 blank lines)",
        ),
    ];
    for (text, said) in cases {
        let trace = write_file(dir.path(), "writes.jsonl", &text);
        let out = dir.path().join("out");
        let run = replay_to(&trace, &out, &[]);
        assert_mentions(
            failed(&run),
            &[
                "trace contains no valid Request/Get events",
                said,
                "no facts written",
            ],
        );
        assert!(!out.join("litehit_facts.csv").exists());
    }
}

#[test]
fn watch_headless_facts_out_publishes_nothing_without_a_fact() {
    let dir = tempfile::tempdir().unwrap();
    let writes: String = (1..=3)
        .map(|i| write_row("a", &format!("w{i}"), i, &[1, 2]))
        .collect();
    let trace = write_file(dir.path(), "writes.jsonl", &writes);
    let facts = dir.path().join("facts.csv");
    let run = run_in(
        None,
        [
            "watch",
            trace.to_str().unwrap(),
            "--headless",
            "--exit-at-eof",
            "--facts-out",
            facts.to_str().unwrap(),
        ],
    );
    assert_mentions(
        failed(&run),
        &[
            "trace contains no valid Request/Get events",
            "3 write events",
            "no facts written to",
        ],
    );
    assert_nothing_beside(dir.path(), &["writes.jsonl"]);
    // A trace with a read still publishes its facts.
    let trace = write_file(
        dir.path(),
        "reads.jsonl",
        &(writes + &get_row("a", "r1", 9, &[1, 2], 32)),
    );
    let run = ok(run_in(
        None,
        [
            "watch",
            trace.to_str().unwrap(),
            "--headless",
            "--exit-at-eof",
            "--facts-out",
            facts.to_str().unwrap(),
            "--block-size",
            "16",
        ],
    ));
    assert_mentions(&run.stderr, &["(1 rows)"]);
    assert_eq!(read_facts(&facts).len(), 1);
}

/// `dir` holds exactly `names` (no facts file, no temp file).
fn assert_nothing_beside(dir: &Path, names: &[&str]) {
    let mut found: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    found.sort();
    assert_eq!(found, names, "{}", dir.display());
}
