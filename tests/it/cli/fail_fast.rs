//! Fail fast: exit 1, a message naming file, line and trace id, nothing published.

use std::fs;
use std::io::Write as _;
use std::path::Path;

use crate::common::cli_bin::{
    FACTS, InstanceSpec, Run, assert_mentions, assert_nothing_published, config_json, facts_temps,
    failed, generate, get_row, ok, read_facts, run_in, run_ok, run_with_stdin, standard_trace,
    write_file, write_row,
};

use super::{
    BLOCK_TOKENS, block_flags, multi_instance_workload, path_str, replay_flags,
    short_request_workload, tempdir,
};

/// Replays `trace_text` with `extra` flags; asserts the failure and that nothing was published.
fn failing_replay(trace_text: &str, extra: &[&str], fragments: &[&str]) -> String {
    let dir = tempdir();
    let trace = write_file(dir.path(), "trace.jsonl", trace_text);
    let out = dir.path().join("out");
    let run = replay_flags(&trace, &out, extra);
    let message = failed(&run).to_owned();
    assert_mentions(&message, &[path_str(&trace)]);
    assert_mentions(&message, fragments);
    assert_nothing_published(&out);
    message
}

#[test]
fn out_of_order_timestamp_fails_naming_line_and_trace_id() {
    let trace = get_row("a", "r1", 2_000, &[1], 16)
        + &get_row("a", "r2", 3_000, &[1, 2], 40)
        + &get_row("a", "r3", 2_500, &[1], 16);
    failing_replay(
        &trace,
        &["--block-size", "16"],
        &[
            "line 3",
            "trace_id[r3]",
            "not sorted by timestamp_ns",
            "2500",
        ],
    );
    // Mooncake times are milliseconds: the message also says them as the trace has them.
    let mooncake = "{\"timestamp\": 33000, \"input_length\": 1024, \"hash_ids\": [1, 2]}\n\
                    {\"timestamp\": 5, \"input_length\": 1024, \"hash_ids\": [1, 2]}\n";
    failing_replay(
        mooncake,
        &[],
        &["line 2", "(`timestamp` 5 ms after 33000 ms)"],
    );
}

#[test]
fn out_of_order_write_row_fails_and_write_rows_raise_the_watermark() {
    // The write row itself is out of order.
    let trace = get_row("a", "r1", 2_000, &[1], 16) + &write_row("a", "w2", 1_999, &[1]);
    failing_replay(
        &trace,
        &["--block-size", "16"],
        &["line 2", "trace_id[w2]", "not sorted by timestamp_ns"],
    );
    // A write row in order raises the watermark for the next read.
    let trace = get_row("a", "r1", 2_000, &[1], 16)
        + &write_row("a", "w2", 3_000, &[1, 2])
        + &get_row("a", "r3", 2_500, &[1], 16);
    failing_replay(
        &trace,
        &["--block-size", "16"],
        &[
            "line 3",
            "trace_id[r3]",
            "not sorted by timestamp_ns",
            "2500",
            "3000",
        ],
    );
}

#[test]
fn length_violation_fails_naming_line_and_trace_id() {
    let trace = get_row("a", "r1", 1_000, &[1, 2], 40)
        + &get_row("b", "r2", 2_000, &[1], 31)
        + &get_row("a", "r3", 3_000, &[1, 2], 16);
    failing_replay(
        &trace,
        &["--block-size", "16"],
        &[
            "line 3",
            "trace_id[r3]",
            "invalid request",
            "expected 1",
            "found 2",
        ],
    );
}

#[test]
fn empty_all_blank_and_write_only_traces_fail() {
    for text in ["", "\n", "  \n\t\n\r\n   "] {
        failing_replay(text, &[], &["no valid Request/Get events"]);
        failing_replay(
            text,
            &["--format", "standard"],
            &["no valid Request/Get events"],
        );
    }
    let writes = write_row("a", "w1", 1_000, &[1]) + &write_row("a", "w2", 2_000, &[1, 2]);
    failing_replay(&writes, &[], &["no valid Request/Get events"]);
}

#[test]
fn a_trace_that_is_not_json_fails() {
    // Not JSON: said as such, whatever format it meant.
    failing_replay(
        "hello world\n",
        &[],
        &["line 1: invalid JSON", "JSON lines"],
    );
    failing_replay(
        "{\"timestamp\": 1, \"input_length\": 512, \"hash_ids\": [1]} xyz\n",
        &[],
        &["line 1: invalid JSON: trailing characters"],
    );
    // JSON, but no format's fields: detection cannot tell.
    failing_replay("{\"hello\": 1}\n", &[], &["--format"]);
    // A given format parses line 1 and fails there.
    failing_replay(
        "hello world\n",
        &["--format", "standard"],
        &["line 1", "JSON"],
    );
    // A bad line after good ones (the format is detected from line 1).
    let trace = get_row("a", "r1", 1_000, &[1], 16)
        + &get_row("a", "r2", 2_000, &[1, 2], 32)
        + "{\"type\":\"get\", oops\n"
        + &get_row("a", "r4", 3_000, &[1], 16);
    failing_replay(&trace, &["--block-size", "16"], &["line 3", "JSON"]);
}

#[test]
fn the_first_error_in_file_order_is_reported_for_any_worker_count() {
    let requests = generate(short_request_workload(13), 30_000);
    let lines: Vec<String> = standard_trace(&requests)
        .lines()
        .map(|line| format!("{line}\n"))
        .collect();
    assert!(lines.concat().len() > 4 << 20, "several pipeline chunks");
    let early = 10; // 0-based line indexes
    let late = 25_000;
    let out_of_order = |index: usize| {
        let request = &requests[index];
        get_row(
            &request.instance_id,
            "early-ts",
            requests[index - 1].timestamp_ns - 1,
            &[1],
            16,
        )
    };
    let not_json = "{\"type\": \"get\", oops\n".to_owned();
    let cases = [
        (out_of_order(early), not_json.clone(), "not sorted", "JSON"),
        (not_json, out_of_order(late), "JSON", "not sorted"),
    ];
    for (early_line, late_line, reported, not_reported) in cases {
        let mut trace = lines.clone();
        trace[early] = early_line;
        trace[late] = late_line;
        let trace = trace.concat();
        for workers in ["1", "2", "4"] {
            let message = failing_replay(
                &trace,
                &["--block-size", "16", "--workers", workers],
                &[&format!("line {}:", early + 1), reported],
            );
            assert!(
                !message.contains(not_reported),
                "{workers} workers: {message}"
            );
        }
    }
}

#[test]
fn compressed_traces_replay_like_the_plain_trace_and_a_truncated_one_fails() {
    let requests = generate(multi_instance_workload(37), 2_000);
    let text = standard_trace(&requests);
    let dir = tempdir();
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(text.as_bytes()).unwrap();
    let gzip = gzip.finish().unwrap();
    let zstd = ruzstd::encoding::compress_to_vec(
        text.as_bytes(),
        ruzstd::encoding::CompressionLevel::Fastest,
    );
    let mut published = Vec::new();
    for (name, bytes) in [
        ("trace.jsonl", text.as_bytes()),
        ("trace.jsonl.gz", &gzip),
        ("trace.jsonl.zst", &zstd),
    ] {
        let trace = dir.path().join(name);
        fs::write(&trace, bytes).unwrap();
        let out = dir.path().join(format!("out-{name}"));
        let extra = block_flags();
        ok(replay_flags(
            &trace,
            &out,
            &extra.iter().map(String::as_str).collect::<Vec<_>>(),
        ));
        published.push(fs::read(out.join(FACTS)).unwrap());
    }
    assert_eq!(published[0], published[1], "gzip");
    assert_eq!(published[0], published[2], "zstd");

    // A truncated gzip stream fails (no silent short replay) and publishes nothing.
    let truncated = dir.path().join("truncated.jsonl.gz");
    fs::write(&truncated, &gzip[..gzip.len() / 2]).unwrap();
    let out = dir.path().join("out-truncated");
    let run = replay_flags(&truncated, &out, &["--block-size", "16"]);
    assert_mentions(failed(&run), &["truncated.jsonl.gz"]);
    assert_nothing_published(&out);
    // A truncated zstd stream says so before the decoder's own words.
    let truncated = dir.path().join("truncated.jsonl.zst");
    fs::write(&truncated, &zstd[..zstd.len() / 2]).unwrap();
    let run = replay_flags(&truncated, &out, &["--block-size", "16"]);
    assert_mentions(
        failed(&run),
        &["truncated.jsonl.zst", "zstd data is truncated or corrupt"],
    );
    assert_nothing_published(&out);
}

#[test]
fn a_config_given_as_a_trace_is_named_as_such() {
    let dir = tempdir();
    for (name, text) in [
        ("pretty.json", "{\n  \"trace_file_path\": \"t.jsonl\"\n}\n"),
        (
            "compact.json",
            "{\"trace_file_path\":\"t.jsonl\",\"instances\":[]}\n",
        ),
    ] {
        let config = write_file(dir.path(), name, text);
        let run = replay_flags(&config, &dir.path().join("out"), &[]);
        assert_mentions(failed(&run), &["looks like a config file", "without --out"]);
    }
    // And a facts file given as a trace (it replays nothing, whatever --format says).
    let facts = write_file(
        dir.path(),
        "litehit_facts.csv",
        &format!("{}\n", litehit_core::facts::file::FACTS_HEADER),
    );
    let run = replay_flags(&facts, &dir.path().join("out2"), &[]);
    assert_mentions(failed(&run), &["this is a facts file", "litehit query"]);
    // A trace without --out is read as a config; the message leads with the way out.
    let trace = write_file(
        dir.path(),
        "t.jsonl",
        &standard_trace(&generate(short_request_workload(1), 3)),
    );
    let run = run_in(None, ["replay", path_str(&trace)]);
    assert!(
        failed(&run).starts_with("to replay a trace without a config file, add --out DIR"),
        "{}",
        run.stderr
    );
}

/// A config with `instances` in `dir/cfg/config.json`, trace at `dir/trace.jsonl`, output
/// `dir/out` (paths relative to `dir`, the child's working directory).
fn config_run(
    dir: &Path,
    trace_text: &str,
    trace_block_size: u64,
    instances: &[InstanceSpec<'_>],
    extra: &str,
) -> Run {
    write_file(dir, "trace.jsonl", trace_text);
    write_file(
        dir,
        "cfg/config.json",
        &config_json("trace.jsonl", "out", trace_block_size, instances, extra),
    );
    run_in(Some(dir), ["replay", "cfg/config.json", "--quiet"])
}

#[test]
fn unknown_instance_fails_naming_line_and_trace_id() {
    let dir = tempdir();
    let trace =
        get_row("i1", "r1", 1_000, &[1, 2, 3], 13) + &get_row("zzz", "r2", 2_000, &[1, 2, 4], 12);
    let instances = [InstanceSpec {
        instance_id: "i1",
        block_size: 4,
        block_bytes: 16_384,
    }];
    let run = config_run(dir.path(), &trace, 4, &instances, "");
    assert_mentions(
        failed(&run),
        &[
            "trace.jsonl",
            "line 2",
            "trace_id[r2]",
            "unknown instance[zzz]",
        ],
    );
    assert_nothing_published(&dir.path().join("out"));
}

#[test]
fn ambiguous_instance_fails_and_points_to_override_instance_id() {
    let dir = tempdir();
    // Mooncake rows carry no instance id; two instances are configured, no override/fanout.
    let trace = "{\"timestamp\": 0, \"input_length\": 1100, \"hash_ids\": [0, 1, 2]}\n\
                 {\"timestamp\": 5, \"input_length\": 600, \"hash_ids\": [0, 3]}\n";
    let instances = [
        InstanceSpec {
            instance_id: "a",
            block_size: 512,
            block_bytes: 8_192,
        },
        InstanceSpec {
            instance_id: "b",
            block_size: 1024,
            block_bytes: 16_384,
        },
    ];
    let run = config_run(dir.path(), trace, 512, &instances, "");
    assert_mentions(
        failed(&run),
        &[
            "trace.jsonl",
            "line 1",
            "trace_id[1]",
            "override_instance_id",
        ],
    );
    assert_nothing_published(&dir.path().join("out"));

    // With an override the same trace replays.
    let run = config_run(
        dir.path(),
        trace,
        512,
        &instances,
        r#""override_instance_id":"b","#,
    );
    ok(run);
    let rows = read_facts(&dir.path().join("out").join(FACTS));
    assert_eq!(rows.len(), 2);
    assert!(
        rows.iter()
            .all(|r| r.instance_id == "b" && r.block_size_tokens == 1024)
    );
}

#[test]
fn rows_without_instance_id_go_to_the_override_lane_and_are_named_after_it() {
    let dir = tempdir();
    // Qwen-Bailian rows: no instance id, no trace id (no `chat_id`: the default id names an
    // instance).
    let trace = "{\"turn\": 1, \"timestamp\": 1.5, \"input_length\": 40, \"output_length\": 3, \"hash_ids\": [1, 2, 3]}\n\
                 {\"turn\": 1, \"timestamp\": 2.0, \"input_length\": 70, \"output_length\": 3, \"hash_ids\": [1, 2, 4, 5, 6]}\n";
    let instances = [
        InstanceSpec {
            instance_id: "a",
            block_size: 16,
            block_bytes: 8_192,
        },
        InstanceSpec {
            instance_id: "b",
            block_size: 32,
            block_bytes: 16_384,
        },
    ];
    let run = config_run(
        dir.path(),
        trace,
        16,
        &instances,
        r#""override_instance_id":"b","trace_format":"bailian","#,
    );
    ok(run);
    let rows = read_facts(&dir.path().join("out").join(FACTS));
    let ids: Vec<(&str, &str, u64)> = rows
        .iter()
        .map(|r| {
            (
                r.trace_id.as_str(),
                r.instance_id.as_str(),
                r.block_size_tokens,
            )
        })
        .collect();
    assert_eq!(
        ids,
        [
            ("trace_b_1500000000", "b", 32),
            ("trace_b_2000000000", "b", 32)
        ]
    );
    // Chained hashes, 32-token blocks: [h(1,2)] then [h(1,2), h(1,2,4,5)]; one hit.
    assert_eq!(rows[1].hit_curve, "[[1,1]]");
}

#[test]
fn bad_config_fails_naming_the_file_and_field() {
    let dir = tempdir();
    let trace = get_row("i1", "r1", 1_000, &[1], 256);
    let instances = [InstanceSpec {
        instance_id: "i1",
        block_size: 1000,
        block_bytes: 16_384,
    }];
    let run = config_run(dir.path(), &trace, 256, &instances, "");
    assert_mentions(
        failed(&run),
        &[
            "cfg/config.json",
            "instances[0].block_size",
            "not a multiple",
            "256",
        ],
    );
    assert_nothing_published(&dir.path().join("out"));

    // Not JSON at all.
    write_file(dir.path(), "cfg/broken.json", "{\"trace_file_path\": ");
    let run = run_in(Some(dir.path()), ["replay", "cfg/broken.json"]);
    assert_mentions(failed(&run), &["cfg/broken.json", "JSON"]);
    assert_nothing_published(&dir.path().join("out"));

    // Lane flags belong to `--out` runs, not to config runs.
    let run = run_in(
        Some(dir.path()),
        ["replay", "cfg/config.json", "--block-size", "16"],
    );
    assert_mentions(failed(&run), &["--out"]);

    // A trace given without `--out` is read as a config, and the message says what to do.
    let run = run_in(Some(dir.path()), ["replay", "trace.jsonl"]);
    assert_mentions(failed(&run), &["trace.jsonl", "add --out DIR"]);
    assert_nothing_published(&dir.path().join("out"));

    let valid = config_json(
        "trace.jsonl",
        "out",
        256,
        &[InstanceSpec {
            instance_id: "i1",
            block_size: 256,
            block_bytes: 16_384,
        }],
        "",
    );
    // A config's trace that is not there: the config and its field are named.
    write_file(
        dir.path(),
        "cfg/elsewhere.json",
        &valid.replace("\"trace.jsonl\"", "\"nope.jsonl\""),
    );
    let run = run_in(Some(dir.path()), ["replay", "cfg/elsewhere.json"]);
    assert_mentions(
        failed(&run),
        &[
            "cfg/elsewhere.json: trace_file_path nope.jsonl: no such file",
            "working directory",
        ],
    );
    // A byte-order mark before the JSON (Windows editors) is not an error.
    write_file(dir.path(), "cfg/bom.json", &format!("\u{feff}{valid}"));
    ok(run_in(
        Some(dir.path()),
        ["replay", "cfg/bom.json", "--quiet"],
    ));
}

#[test]
fn a_failed_run_leaves_the_previous_facts_intact() {
    let dir = tempdir();
    let out = dir.path().join("out");
    let requests = generate(short_request_workload(3), 40_000);
    let good = standard_trace(&requests);
    let good_trace = write_file(dir.path(), "good.jsonl", &good);
    let extra = block_flags();
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    ok(replay_flags(&good_trace, &out, &extra));
    let published = fs::read(out.join(FACTS)).unwrap();
    assert!(
        published.len() > 2 << 20,
        "the failing run below writes rows before failing"
    );

    // Fails at the very end, after megabytes of rows went to the temp file.
    let last = requests.last().unwrap();
    let late_failure = good.clone() + &get_row("pod-a", "late", last.timestamp_ns - 1, &[7], 16);
    let late_trace = write_file(dir.path(), "late.jsonl", &late_failure);
    let run = replay_flags(&late_trace, &out, &extra);
    assert_mentions(
        failed(&run),
        &[&format!("line {}", requests.len() + 1), "trace_id[late]"],
    );
    // Fails on line 1.
    let early_trace = write_file(dir.path(), "early.jsonl", "[1, 2]\n");
    let run = replay_flags(&early_trace, &out, &["--format", "standard"]);
    assert_mentions(failed(&run), &["early.jsonl", "line 1"]);

    assert_eq!(
        fs::read(out.join(FACTS)).unwrap(),
        published,
        "byte-identical"
    );
    assert!(facts_temps(&out).is_empty());
}

#[test]
fn out_naming_a_csv_file_is_that_file_and_query_and_mrc_take_a_directory() {
    let dir = tempdir();
    let requests = generate(short_request_workload(5), 300);
    let trace = write_file(dir.path(), "trace.jsonl", &standard_trace(&requests));
    let extra = block_flags();
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();

    // `--out facts.csv` (missing, or an existing file) is the facts file itself.
    let named = dir.path().join("nested").join("facts.csv");
    ok(replay_flags(&trace, &named, &extra));
    assert!(named.is_file(), "{} is not a file", named.display());
    // A directory named like a file, and a plain name, keep upstream's output directory.
    let csv_directory = dir.path().join("results.csv");
    fs::create_dir(&csv_directory).unwrap();
    ok(replay_flags(&trace, &csv_directory, &extra));
    let plain = dir.path().join("out");
    ok(replay_flags(&trace, &plain, &extra));
    let published = fs::read(&named).unwrap();
    assert_eq!(fs::read(csv_directory.join(FACTS)).unwrap(), published);
    assert_eq!(fs::read(plain.join(FACTS)).unwrap(), published);
    // The summary names the file it wrote.
    let run = run_ok([
        "replay",
        path_str(&trace),
        "--out",
        path_str(&named),
        "--block-size",
        &BLOCK_TOKENS.to_string(),
    ]);
    assert!(
        run.stderr.contains(&format!("facts: {}", named.display())),
        "{}",
        run.stderr
    );

    // query and mrc read `litehit_facts.csv` inside a directory they are given.
    let from_directory = run_ok(["query", path_str(&plain), "-", "1", "-1"]);
    let from_file = run_ok(["query", path_str(&named), "-", "1", "-1"]);
    assert!(from_file.stdout.lines().count() > requests.len());
    assert_eq!(from_directory.stdout, from_file.stdout);
    let mrc_directory = run_ok(["mrc", path_str(&plain), "--json"]);
    let mrc_file = run_ok(["mrc", path_str(&plain.join(FACTS)), "--json"]);
    assert_eq!(mrc_directory.stdout, mrc_file.stdout);
    // Capacities as `watch` spells them; a capacity where OUT goes is refused, not written.
    let spelled = run_ok(["query", path_str(&named), "-", "1GB", "inf"]);
    assert_eq!(spelled.stdout, from_file.stdout);
    let run = run_in(Some(dir.path()), ["query", path_str(&named), "10", "40"]);
    assert_mentions(failed(&run), &["OUT 10 looks like a capacity", "./10"]);
    assert!(!dir.path().join("10").exists());
    let run = run_in(None, ["query", path_str(&named), "-", "1000b"]);
    assert_mentions(
        failed(&run),
        &["invalid capacity_gb: 1000b", "--capacity-blocks"],
    );
    let run = run_in(None, ["query", path_str(&named), "-", "40MiB"]);
    assert!(
        !failed(&run).contains("--capacity-blocks"),
        "{}",
        run.stderr
    );
    // OUT left out with a single capacity: said as such, not "no capacity given".
    let run = run_in(Some(dir.path()), ["query", path_str(&named), "40"]);
    assert_mentions(failed(&run), &["OUT 40 looks like a capacity"]);
    // `-` is standard input even where a directory is named `-`.
    fs::create_dir(dir.path().join("-")).unwrap();
    let piped = run_with_stdin(
        Some(dir.path()),
        ["query", "-", "-", "1", "-1"],
        fs::read(&named).unwrap(),
    );
    assert_eq!(ok(piped).stdout, from_file.stdout);
    let run = run_in(None, ["mrc", path_str(&plain), "--png", "plot.svg"]);
    assert_mentions(failed(&run), &["--png plot.svg", "use --svg"]);
    let run = run_in(None, ["mrc", path_str(&plain), "--max-curve-points", "1"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("at least 2"), "{}", run.stderr);
    // A directory without facts in it is named in the error.
    let empty = dir.path().join("empty");
    fs::create_dir(&empty).unwrap();
    let run = run_in(None, ["query", path_str(&empty), "-", "1"]);
    assert_mentions(failed(&run), &[&format!("{}", empty.join(FACTS).display())]);
}
