//! End to end through the real binary: `litehit replay` → `litehit query` / `litehit mrc`.
//!
//! Every expected number comes from somewhere else than the binary: an in-memory replay of
//! the same requests (`LiteHit` + `projector`), the naive LRU oracle (`common/oracle.rs`), a
//! `serde_json` parse of the real trace, or the upstream reference files. Failures are
//! checked for their exit code (1, as upstream), their one-line `litehit: ...` message (file, line and
//! trace id) and for publishing nothing. Tests that need `../shared` skip with a message.

mod common;

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use clap::Parser as _;
use common::cli_bin::{
    FACTS, FACTS_TMP, InstanceSpec, QueryOutput, Run, assert_mentions, assert_nothing_published,
    config_json, failed, generate, get_row, litehit, make_fifo, ok, parse_query_output, read_facts,
    run_in, run_ok, run_with_stdin, send_signal, standard_trace, u64s, write_file, write_row,
};
use common::oracle::OracleBank;
use litehit::cli::{Cli, Command};
use litehit_core::facts::RequestFact;
use litehit_core::hitcore::LiteHit;
use litehit_core::projector::{project_blocks, project_infinite};
use litehit_core::workload::{SyntheticRequest, WorkloadConfig};
use serde_json::Value;

// ---------------------------------------------------------------------------------------------
// Shared setup

/// Analysis and trace block size of the generated traces, in tokens.
const BLOCK_TOKENS: u64 = 16;
/// `--block-bytes` of the generated runs: 1 MiB, so 1 GB is 1024 blocks.
const BLOCK_BYTES: u64 = 1 << 20;

/// GB slots and the block counts they must become at 1 MiB per block:
/// `floor(gb × 2^30) / 2^20` (e.g. 0.3 GB = 322 122 547 bytes = 307.2 blocks → 307).
const GB_SLOTS: [(&str, u64); 6] = [
    ("0", 0),
    ("0.0009765625", 1),
    ("0.3", 307),
    ("1", 1024),
    ("2.5", 2560),
    ("8", 8192),
];
/// `--capacity-blocks` slots (after the GB slots and the `-1` slot).
const BLOCK_SLOTS: [u64; 3] = [1, 50, 1000];

fn tempdir() -> tempfile::TempDir {
    tempfile::tempdir().unwrap()
}

fn path_str(path: &Path) -> &str {
    path.to_str().expect("temp paths are UTF-8")
}

/// Several instances, conversations with shared system prompts, hashed keys.
fn multi_instance_workload(seed: u64) -> WorkloadConfig {
    WorkloadConfig {
        seed,
        // Byte order is not case or locale order: "Pod-c" < "pod-a" < "pod-b" < "pod-é".
        instance_ids: vec![
            "pod-b".into(),
            "pod-é".into(),
            "pod-a".into(),
            "Pod-c".into(),
        ],
        live_conversations: 150,
        max_request_blocks: 160,
        block_size_tokens: BLOCK_TOKENS,
        ..WorkloadConfig::default()
    }
}

/// Short requests: many facts rows per trace byte (the temp file fills quickly).
fn short_request_workload(seed: u64) -> WorkloadConfig {
    WorkloadConfig {
        max_request_blocks: 12,
        turn_growth_blocks: (1, 4),
        system_prompt_blocks: (1, 4),
        ..multi_instance_workload(seed)
    }
}

/// The capacity of every query slot, in slot order: the GB slots, `-1`, the block slots.
fn slot_capacities() -> Vec<Option<u64>> {
    GB_SLOTS
        .iter()
        .map(|&(_, blocks)| Some(blocks))
        .chain([None])
        .chain(BLOCK_SLOTS.iter().copied().map(Some))
        .collect()
}

/// `query FACTS OUT <GB slots> -1 --capacity-blocks <block slots>`.
fn query_args(facts: &Path, out: &Path) -> Vec<String> {
    let mut args = vec![
        "query".to_owned(),
        path_str(facts).to_owned(),
        path_str(out).to_owned(),
    ];
    args.extend(GB_SLOTS.iter().map(|&(gb, _)| gb.to_owned()));
    args.push("-1".to_owned());
    let blocks: Vec<String> = BLOCK_SLOTS.iter().map(ToString::to_string).collect();
    args.push(format!("--capacity-blocks={}", blocks.join(",")));
    args
}

fn project(fact: &RequestFact, capacity: Option<u64>) -> u64 {
    capacity.map_or_else(|| project_infinite(fact), |c| project_blocks(fact, c))
}

/// Expected hit blocks per request and slot: the in-memory core + projector, checked
/// against the naive oracle request by request.
fn expected_hit_blocks(
    requests: &[SyntheticRequest],
    capacities: &[Option<u64>],
    ttl_ns: u64,
) -> Vec<Vec<u64>> {
    let oracle_capacities: Vec<Option<usize>> = capacities
        .iter()
        .map(|c| c.map(|c| usize::try_from(c).unwrap()))
        .collect();
    let mut cores: HashMap<&str, LiteHit> = HashMap::new();
    let mut oracles: HashMap<&str, OracleBank> = HashMap::new();
    let oracle_ttl = (ttl_ns > 0).then(|| i64::try_from(ttl_ns).unwrap());
    requests
        .iter()
        .enumerate()
        .map(|(index, request)| {
            let core = cores
                .entry(&request.instance_id)
                .or_insert_with(|| LiteHit::with_ttl_ns(ttl_ns));
            let fact = core.process_request(&request.keys, request.timestamp_ns);
            let projected: Vec<u64> = capacities.iter().map(|&c| project(&fact, c)).collect();
            let oracle = oracles
                .entry(&request.instance_id)
                .or_insert_with(|| OracleBank::new(&oracle_capacities, oracle_ttl));
            let naive = oracle.process_request(&request.keys, request.timestamp_ns);
            assert_eq!(projected, naive, "request {index}: core vs oracle");
            projected
        })
        .collect()
}

/// Replays `trace` with flags into `out` (quiet) and returns the run.
fn replay_flags(trace: &Path, out: &Path, extra: &[&str]) -> Run {
    let mut args = vec!["replay", path_str(trace), "--out", path_str(out), "--quiet"];
    args.extend_from_slice(extra);
    run_in(None, args)
}

fn block_flags() -> Vec<String> {
    vec![
        "--block-size".into(),
        BLOCK_TOKENS.to_string(),
        "--block-bytes".into(),
        BLOCK_BYTES.to_string(),
    ]
}

/// Checks query output rows and summaries against the generated requests and the expected
/// hit blocks per slot.
fn check_query_output(
    output: &QueryOutput,
    requests: &[SyntheticRequest],
    expected: &[Vec<u64>],
    block_size_tokens: u64,
) {
    assert_eq!(output.rows.len(), requests.len());
    let slot_count = expected.first().map_or(0, Vec::len);
    let mut per_instance: BTreeMap<&str, (u64, u64, Vec<u64>)> = BTreeMap::new();
    for (index, ((row, request), hits)) in
        output.rows.iter().zip(requests).zip(expected).enumerate()
    {
        let trace_id = format!("trace_{}_{}", request.instance_id, request.timestamp_ns);
        assert_eq!(row["trace_id"], trace_id.as_str(), "row {index}");
        assert_eq!(
            row["instance_id"],
            request.instance_id.as_str(),
            "row {index}"
        );
        assert_eq!(row["timestamp_ns"], request.timestamp_ns, "row {index}");
        assert_eq!(
            row["input_token_len"], request.input_token_len,
            "row {index}"
        );
        assert_eq!(&u64s(&row["hit_blocks"]), hits, "row {index} ({trace_id})");
        let rates = row["hit_rates"].as_array().unwrap();
        for (rate, &hit_blocks) in rates.iter().zip(hits) {
            let exact = (hit_blocks * block_size_tokens) as f64 / request.input_token_len as f64;
            assert!(
                (rate.as_f64().unwrap() - exact).abs() <= 1e-5 * exact.max(1e-9),
                "row {index}"
            );
        }
        let entry = per_instance
            .entry(&request.instance_id)
            .or_insert_with(|| (0, 0, vec![0; slot_count]));
        entry.0 += 1;
        entry.1 += request.input_token_len;
        for (total, hit_blocks) in entry.2.iter_mut().zip(hits) {
            *total += hit_blocks;
        }
    }
    // One summary per instance, in byte order of the id, then the overall line.
    let ids: Vec<&str> = output
        .instance_summaries
        .iter()
        .map(|s| s["instance_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, per_instance.keys().copied().collect::<Vec<_>>());
    let mut overall = (0, 0, vec![0; slot_count]);
    for (summary, (_, (requests, input_tokens, hits))) in
        output.instance_summaries.iter().zip(&per_instance)
    {
        check_summary(summary, *requests, *input_tokens, hits, block_size_tokens);
        overall.0 += requests;
        overall.1 += input_tokens;
        for (total, hit_blocks) in overall.2.iter_mut().zip(hits) {
            *total += hit_blocks;
        }
    }
    check_summary(
        &output.overall,
        overall.0,
        overall.1,
        &overall.2,
        block_size_tokens,
    );
}

fn check_summary(
    summary: &Value,
    requests: u64,
    input_tokens: u64,
    hit_blocks: &[u64],
    block_size_tokens: u64,
) {
    assert_eq!(summary["requests"], requests, "{summary}");
    assert_eq!(summary["total_input_tokens"], input_tokens, "{summary}");
    assert_eq!(u64s(&summary["total_hit_blocks"]), hit_blocks, "{summary}");
    let hit_tokens: Vec<u64> = hit_blocks.iter().map(|b| b * block_size_tokens).collect();
    assert_eq!(u64s(&summary["total_hit_tokens"]), hit_tokens, "{summary}");
    for (rate, tokens) in summary["hit_rates"]
        .as_array()
        .unwrap()
        .iter()
        .zip(&hit_tokens)
    {
        let exact = *tokens as f64 / input_tokens as f64;
        assert!(
            (rate.as_f64().unwrap() - exact).abs() <= 1e-5 * exact.max(1e-9),
            "{summary}"
        );
    }
}

// ---------------------------------------------------------------------------------------------
// 1. Generated traces: replay → query equals the in-memory projection and the oracle

#[test]
fn generated_trace_query_equals_in_memory_projection_and_oracle_for_any_worker_count() {
    let requests = generate(multi_instance_workload(11), 3_000);
    let text = standard_trace(&requests);
    assert!(text.len() > 3 << 20, "several 1 MiB pipeline chunks");
    let dir = tempdir();
    let trace = write_file(dir.path(), "trace.jsonl", &text);

    let mut published = Vec::new();
    for workers in ["1", "2", "4"] {
        let out = dir.path().join(format!("out-{workers}"));
        let mut extra: Vec<String> = block_flags();
        extra.extend(["--workers".to_owned(), workers.to_owned()]);
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let run = ok(replay_flags(&trace, &out, &extra));
        assert_eq!(run.stdout, "", "--quiet replay prints nothing");
        assert_eq!(run.stderr, "", "--quiet replay prints nothing");
        assert!(!out.join(FACTS_TMP).exists());
        published.push(fs::read(out.join(FACTS)).unwrap());
    }
    assert_eq!(published[0], published[1], "--workers 1 vs 2");
    assert_eq!(published[0], published[2], "--workers 1 vs 4");

    let facts = dir.path().join("out-2").join(FACTS);
    let rows = read_facts(&facts);
    assert_eq!(rows.len(), requests.len());
    for row in &rows {
        assert_eq!(
            (row.block_size_tokens, row.block_bytes),
            (BLOCK_TOKENS, BLOCK_BYTES)
        );
    }

    let query_out = dir.path().join("query.jsonl");
    let run = run_ok(query_args(&facts, &query_out));
    assert_eq!(
        run.stdout,
        format!("facts query done: {}\n", query_out.display())
    );
    let output = parse_query_output(&fs::read_to_string(&query_out).unwrap());
    let expected = expected_hit_blocks(&requests, &slot_capacities(), 0);
    let infinite: u64 = expected.iter().map(|hits| hits[GB_SLOTS.len()]).sum();
    assert!(infinite > 0, "the workload must hit");
    check_query_output(&output, &requests, &expected, BLOCK_TOKENS);

    // The GB and block slots are echoed in the summaries.
    assert_eq!(
        output.overall["capacity_gb"],
        serde_json::json!([0, 0.000_976_562, 0.3, 1, 2.5, 8, -1])
    );
    assert_eq!(
        output.overall["capacity_blocks"],
        serde_json::json!(BLOCK_SLOTS)
    );
}

#[test]
fn ttl_replay_equals_the_oracle_with_the_same_ttl() {
    let config = WorkloadConfig {
        mean_interarrival_ns: 5_000_000, // 1 500 requests span about 7.5 s
        ..multi_instance_workload(5)
    };
    let requests = generate(config, 1_500);
    let dir = tempdir();
    let trace = write_file(dir.path(), "trace.jsonl", &standard_trace(&requests));
    let out = dir.path().join("out");
    let mut extra = block_flags();
    extra.extend(["--ttl-seconds".to_owned(), "1".to_owned()]);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    ok(replay_flags(&trace, &out, &extra));

    let query_out = dir.path().join("query.jsonl");
    run_ok(query_args(&out.join(FACTS), &query_out));
    let output = parse_query_output(&fs::read_to_string(&query_out).unwrap());
    let expected = expected_hit_blocks(&requests, &slot_capacities(), 1_000_000_000);
    check_query_output(&output, &requests, &expected, BLOCK_TOKENS);

    // The TTL must matter for this test to mean anything.
    let without_ttl = expected_hit_blocks(&requests, &[None], 0);
    let infinite = |hits: &[Vec<u64>], slot: usize| hits.iter().map(|h| h[slot]).sum::<u64>();
    assert!(infinite(&expected, GB_SLOTS.len()) < infinite(&without_ttl, 0));
}

#[test]
fn replay_summary_on_stderr_lists_every_instance_in_order_of_appearance() {
    let requests = generate(multi_instance_workload(41), 800);
    let dir = tempdir();
    let trace = write_file(dir.path(), "trace.jsonl", &standard_trace(&requests));
    let out = dir.path().join("out");
    let mut args = vec![
        "replay".to_owned(),
        path_str(&trace).to_owned(),
        "--out".to_owned(),
    ];
    args.push(path_str(&out).to_owned());
    args.extend(block_flags());
    let run = run_ok(&args);
    assert_eq!(run.stdout, "", "the summary goes to stderr");

    let expected = expected_hit_blocks(&requests, &[None], 0);
    let mut order: Vec<&str> = Vec::new();
    let mut totals: HashMap<&str, (u64, u64, u64)> = HashMap::new();
    for (request, hits) in requests.iter().zip(&expected) {
        if !order.contains(&request.instance_id.as_str()) {
            order.push(&request.instance_id);
        }
        let entry = totals.entry(&request.instance_id).or_default();
        entry.0 += 1;
        entry.1 += request.input_token_len;
        entry.2 += hits[0] * BLOCK_TOKENS;
    }
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert!(order.len() > 1, "several instances, so a total row");
    assert_eq!(lines.len(), order.len() + 4, "{}", run.stderr);
    assert!(lines[0].starts_with("instance"), "{}", run.stderr);
    // The block geometry the facts keep (`--block-bytes` 1 MiB, 16-token blocks).
    assert_eq!(lines[order.len() + 2], "blocks: 16 tokens, 1.0 MiB each");
    let sum = |pick: fn(&(u64, u64, u64)) -> u64| totals.values().map(pick).sum::<u64>();
    totals.insert("total", (sum(|t| t.0), sum(|t| t.1), sum(|t| t.2)));
    order.push("total");
    for (line, id) in lines[1..].iter().zip(&order) {
        let (requests, input_tokens, hit_tokens) = totals[id];
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields[0], *id, "{line}");
        assert_eq!(fields[1], requests.to_string(), "{line}");
        let percent = 100.0 * hit_tokens as f64 / input_tokens as f64;
        assert_eq!(fields[4], format!("{percent:.2}%"), "{line}");
    }
    let last = lines.last().unwrap();
    assert!(
        last.ends_with(&format!("facts: {}", out.join(FACTS).display())),
        "{last}"
    );
}

// ---------------------------------------------------------------------------------------------
// 2. Fail fast: exit 1, a message naming file, line and trace id, nothing published

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
    // Qwen-Bailian rows: no instance id, no trace id (the default id names an instance).
    let trace = "{\"chat_id\": 1, \"timestamp\": 1.5, \"input_length\": 40, \"output_length\": 3, \"hash_ids\": [1, 2, 3]}\n\
                 {\"chat_id\": 2, \"timestamp\": 2.0, \"input_length\": 70, \"output_length\": 3, \"hash_ids\": [1, 2, 4, 5, 6]}\n";
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
    assert!(!out.join(FACTS_TMP).exists());
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

// ---------------------------------------------------------------------------------------------
// 3. A killed replay publishes nothing; a rerun overwrites its stale temp file

/// Starts a replay, waits until its temp file holds rows, kills it (SIGKILL) and waits.
fn kill_mid_replay(trace: &Path, out: &Path) {
    let (status, _) = signal_mid_replay(trace, out, None);
    assert!(!status.success(), "killed, not finished");
}

/// Starts a replay, waits until its temp file holds rows, sends it `signal` (`kill -s`;
/// `None` = SIGKILL) and returns its exit status and stderr.
fn signal_mid_replay(
    trace: &Path,
    out: &Path,
    signal: Option<&str>,
) -> (std::process::ExitStatus, String) {
    let tmp = out.join(FACTS_TMP);
    let mut child = litehit()
        .args(["replay", path_str(trace), "--out", path_str(out), "--quiet"])
        .args(block_flags())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let stderr = read_stderr(&mut child);
            panic!("the replay ended ({status}) before it could be killed; stderr: {stderr}");
        }
        // Some rows flushed, more to come: mid-way.
        if fs::metadata(&tmp).is_ok_and(|m| m.len() >= 2 << 20) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no temp file appeared"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    match signal {
        None => child.kill().unwrap(),
        Some(signal) => {
            send_signal(child.id(), signal);
        }
    }
    let status = child.wait().unwrap();
    (status, read_stderr(&mut child))
}

/// Everything a finished child wrote to its piped stderr.
fn read_stderr(child: &mut std::process::Child) -> String {
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    stderr
}

#[test]
fn interrupted_replay_removes_its_temp_file_and_keeps_the_published_one() {
    let dir = tempdir();
    let requests = generate(short_request_workload(19), 200_000);
    let trace = write_file(dir.path(), "big.jsonl", &standard_trace(&requests));
    let out = dir.path().join("out");
    ok(replay_flags(
        &trace,
        &out,
        &block_flags().iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let published = fs::read(out.join(FACTS)).unwrap();
    // Ctrl-C and SIGTERM: the run stops, deletes its temp file, exits 128 + the signal.
    for (signal, code) in [("INT", 130), ("TERM", 143)] {
        let (status, stderr) = signal_mid_replay(&trace, &out, Some(signal));
        assert_eq!(status.code(), Some(code), "SIG{signal}: {stderr}");
        assert_mentions(&stderr, &["interrupted", "nothing was published"]);
        assert!(
            !out.join(FACTS_TMP).exists(),
            "SIG{signal} left the temp file"
        );
        assert_eq!(fs::read(out.join(FACTS)).unwrap(), published);
    }
}

#[test]
fn killed_replay_publishes_nothing_and_a_rerun_overwrites_its_stale_temp_file() {
    let dir = tempdir();
    let requests = generate(short_request_workload(17), 200_000);
    let text = standard_trace(&requests);
    assert!(text.len() > 20 << 20, "tens of MB: {} bytes", text.len());
    let trace = write_file(dir.path(), "big.jsonl", &text);
    drop(text);
    let out = dir.path().join("out");

    // Killed before anything was published: nothing is.
    kill_mid_replay(&trace, &out);
    assert!(!out.join(FACTS).exists(), "a killed run published facts");
    let stale = out.join(FACTS_TMP);
    assert!(stale.exists(), "SIGKILL leaves the temp file behind");
    // Make the stale temp file recognisable.
    fs::OpenOptions::new()
        .append(true)
        .open(&stale)
        .unwrap()
        .write_all(b"STALE PARTIAL ROW\n")
        .unwrap();

    // The rerun publishes complete facts and never reuses the stale bytes.
    ok(replay_flags(
        &trace,
        &out,
        &block_flags().iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    assert!(!stale.exists());
    let published = fs::read(out.join(FACTS)).unwrap();
    assert!(!published.windows(5).any(|w| w == b"STALE"));
    let rows = read_facts(&out.join(FACTS));
    assert_eq!(rows.len(), requests.len());
    let query = run_ok([
        "query",
        path_str(&out.join(FACTS)),
        "-",
        "-1",
        "--summary-only",
    ]);
    assert_eq!(
        parse_query_output(&query.stdout).overall["requests"],
        requests.len()
    );
    // Every row equals an in-memory replay of the same requests.
    let mut cores: HashMap<&str, LiteHit> = HashMap::new();
    for (index, (row, request)) in rows.iter().zip(&requests).enumerate() {
        let fact = cores
            .entry(&request.instance_id)
            .or_default()
            .process_request(&request.keys, request.timestamp_ns);
        let curve: Vec<String> = fact
            .to_pairs()
            .iter()
            .map(|[s, r]| format!("[{s},{r}]"))
            .collect();
        assert_eq!(
            row.hit_curve,
            format!("[{}]", curve.join(",")),
            "row {index}"
        );
        assert_eq!(row.timestamp_ns, request.timestamp_ns, "row {index}");
    }

    // Killed while a previous file is published: that file stays byte-identical.
    kill_mid_replay(&trace, &out);
    assert_eq!(fs::read(out.join(FACTS)).unwrap(), published);
}

// ---------------------------------------------------------------------------------------------
// 4. Upstream config file: relative paths, fanout across two block sizes

#[test]
fn config_fanout_across_two_block_sizes_writes_two_rows_per_request() {
    let dir = tempdir();
    let requests = generate(
        WorkloadConfig {
            instance_ids: vec!["pod-a".into(), "pod-b".into()],
            ..multi_instance_workload(23)
        },
        1_200,
    );
    // Config order differs from byte order: rows follow the config, summaries byte order.
    let instances = [
        InstanceSpec {
            instance_id: "zeta-b16",
            block_size: 16,
            block_bytes: 65_536,
        },
        InstanceSpec {
            instance_id: "alpha-b64",
            block_size: 64,
            block_bytes: 262_144,
        },
    ];
    write_file(dir.path(), "traces/t.jsonl", &standard_trace(&requests));
    write_file(
        dir.path(),
        "cfg/config.json",
        &config_json(
            "traces/t.jsonl",
            "results/fanout",
            16,
            &instances,
            r#""fanout_all_instances":true,"pipeline_worker_count":3,"#,
        ),
    );
    // Relative paths are relative to the working directory, not to the config file.
    ok(run_in(
        Some(dir.path()),
        ["replay", "cfg/config.json", "--quiet"],
    ));
    let facts = dir.path().join("results/fanout").join(FACTS);
    let rows = read_facts(&facts);
    assert_eq!(rows.len(), 2 * requests.len());
    for (pair, request) in rows.chunks(2).zip(&requests) {
        let trace_id = format!("trace_{}_{}", request.instance_id, request.timestamp_ns);
        for (row, instance) in pair.iter().zip(&instances) {
            assert_eq!(row.trace_id, trace_id);
            assert_eq!(row.instance_id, instance.instance_id);
            assert_eq!(row.block_size_tokens, instance.block_size);
            assert_eq!(row.block_bytes, instance.block_bytes);
            assert_eq!(row.timestamp_ns, request.timestamp_ns);
            assert_eq!(row.input_token_len, request.input_token_len);
        }
    }

    let capacities = [Some(3), Some(40), Some(600), None];
    let (fine, coarse) = fanout_lane_expectations(&requests, &capacities);

    let run = run_in(
        Some(dir.path()),
        [
            "query",
            "results/fanout/litehit_facts.csv",
            "-",
            "-1",
            "--capacity-blocks",
            "3,40,600",
        ],
    );
    let output = parse_query_output(&ok(run).stdout);
    for ((pair, fine), coarse) in output.rows.chunks(2).zip(&fine).zip(&coarse) {
        // Slots: -1, then blocks 3, 40, 600; the oracle's order is 3, 40, 600, ∞.
        let reorder = |hits: &Vec<u64>| vec![hits[3], hits[0], hits[1], hits[2]];
        assert_eq!(u64s(&pair[0]["hit_blocks"]), reorder(fine), "{}", pair[0]);
        assert_eq!(u64s(&pair[1]["hit_blocks"]), reorder(coarse), "{}", pair[1]);
    }
    let ids: Vec<&str> = output
        .instance_summaries
        .iter()
        .map(|s| s["instance_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["alpha-b64", "zeta-b16"], "byte order, then the total");
    let input_tokens: u64 = requests.iter().map(|r| r.input_token_len).sum();
    for summary in &output.instance_summaries {
        assert_eq!(summary["requests"], requests.len());
        assert_eq!(summary["total_input_tokens"], input_tokens);
    }
    assert_eq!(output.overall["requests"], 2 * requests.len());
    let infinite = |hits: &[Vec<u64>]| hits.iter().map(|h| h[3]).sum::<u64>();
    let summary_infinite = |summary: &Value| u64s(&summary["total_hit_blocks"])[0];
    assert_eq!(
        summary_infinite(&output.instance_summaries[0]),
        infinite(&coarse)
    );
    assert_eq!(
        summary_infinite(&output.instance_summaries[1]),
        infinite(&fine)
    );
    assert_eq!(
        summary_infinite(&output.overall),
        infinite(&coarse) + infinite(&fine)
    );
    assert_eq!(
        u64s(&output.overall["total_hit_tokens"])[0],
        infinite(&coarse) * 64 + infinite(&fine) * 16
    );
}

/// Expected hit blocks of the two fanout lanes (16- and 64-token blocks): each lane sees
/// every request, whatever its instance id, and the 64-token lane keeps every 4th key.
fn fanout_lane_expectations(
    requests: &[SyntheticRequest],
    capacities: &[Option<u64>],
) -> (Vec<Vec<u64>>, Vec<Vec<u64>>) {
    let one_lane = |keys: fn(&[i64]) -> Vec<i64>| -> Vec<SyntheticRequest> {
        requests
            .iter()
            .map(|r| SyntheticRequest {
                instance_id: "lane".into(),
                keys: keys(&r.keys),
                ..r.clone()
            })
            .collect()
    };
    let fine = expected_hit_blocks(&one_lane(<[i64]>::to_vec), capacities, 0);
    let coarse = expected_hit_blocks(
        &one_lane(|keys| keys.iter().skip(3).step_by(4).copied().collect()),
        capacities,
        0,
    );
    let per_instance = expected_hit_blocks(requests, capacities, 0);
    assert_ne!(fine, per_instance, "one lane for all instances must matter");
    (fine, coarse)
}

// ---------------------------------------------------------------------------------------------
// 5. Real traces

fn shared_file(relative: &str) -> Option<PathBuf> {
    let path = common::shared_dir()?.join(relative);
    if path.is_file() {
        Some(path)
    } else {
        eprintln!("skipping: {} is absent", path.display());
        None
    }
}

#[test]
fn mooncake_conversation_trace_replays_with_exact_infinite_hits() {
    let Some(trace) = shared_file("traces/conversation_trace.jsonl") else {
        return;
    };
    let dir = tempdir();
    let out = dir.path().join("out");
    let run = ok(replay_flags(&trace, &out, &["--workers", "3"]));
    assert_eq!(run.stderr, "");
    let rows = read_facts(&out.join(FACTS));
    assert_eq!(rows.len(), 12_031);
    for (index, row) in rows.iter().enumerate() {
        assert_eq!(
            row.trace_id,
            (index + 1).to_string(),
            "trace ids are line numbers"
        );
        assert_eq!(row.block_size_tokens, 512, "Mooncake's 512-token blocks");
    }

    // Independent: serde_json + the oracle at ∞, floor(input_length / 512) blocks each.
    let mut oracle = OracleBank::new(&[None], None);
    let mut input_tokens = 0;
    for (line, row) in fs::read_to_string(&trace).unwrap().lines().zip(&rows) {
        let value: Value = serde_json::from_str(line).unwrap();
        let input_length = value["input_length"].as_u64().unwrap();
        let full_blocks = usize::try_from(input_length / 512).unwrap();
        let keys: Vec<i64> = value["hash_ids"].as_array().unwrap()[..full_blocks]
            .iter()
            .map(|k| k.as_i64().unwrap())
            .collect();
        let timestamp_ns = value["timestamp"].as_i64().unwrap() * 1_000_000;
        assert_eq!(
            (row.timestamp_ns, row.input_token_len),
            (timestamp_ns, input_length)
        );
        oracle.process_request(&keys, timestamp_ns);
        input_tokens += input_length;
    }
    let query = run_ok([
        "query",
        path_str(&out.join(FACTS)),
        "-",
        "-1",
        "--summary-only",
    ]);
    let output = parse_query_output(&query.stdout);
    assert!(output.rows.is_empty());
    assert_eq!(output.overall["requests"], 12_031);
    assert_eq!(output.overall["total_input_tokens"], input_tokens);
    assert_eq!(u64s(&output.overall["total_hit_blocks"]), oracle.total_hits);
    assert!(oracle.total_hits[0] > 100_000);
}

#[test]
fn kvcm_publisher_log_replays() {
    let Some(trace) = shared_file("traces/event_publisher.log") else {
        return;
    };
    let dir = tempdir();
    let out = dir.path().join("out");
    ok(replay_flags(&trace, &out, &[]));
    let reads = fs::read_to_string(&trace)
        .unwrap()
        .lines()
        .filter(|line| line.contains("\"type\":\"GetCacheLocation\""))
        .count();
    let rows = read_facts(&out.join(FACTS));
    assert_eq!(rows.len(), reads);
    assert!(rows.iter().all(|r| r.instance_id == "3780643326877293460"));
}

#[test]
fn upstream_fanout_fixture_replays_the_kvcm_log_on_four_lanes_with_and_without_ttl() {
    let Some(log) = shared_file("traces/event_publisher.log") else {
        return;
    };
    let dir = tempdir();
    fs::create_dir_all(dir.path().join("traces")).unwrap();
    fs::copy(&log, dir.path().join("traces/event_publisher.log")).unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/config/fanout_block_sizes_ttls.json");
    fs::copy(&fixture, dir.path().join("config.json")).unwrap();
    ok(run_in(
        Some(dir.path()),
        ["replay", "config.json", "--quiet"],
    ));

    // Independent: serde_json + the oracle per lane (config order), TTL 300 s on two lanes.
    let lanes: [(&str, usize, Option<i64>); 4] = [
        ("b16-no-ttl", 1, None),
        ("b64-no-ttl", 4, None),
        ("b16-ttl", 1, Some(300_000_000_000)),
        ("b64-ttl", 4, Some(300_000_000_000)),
    ];
    let capacities = [Some(10), Some(100), None];
    let mut oracles: Vec<OracleBank> = lanes
        .iter()
        .map(|&(_, _, ttl_ns)| OracleBank::new(&capacities, ttl_ns))
        .collect();
    let mut reads = 0;
    for line in fs::read_to_string(&log).unwrap().lines() {
        let event: Value = serde_json::from_str(line).unwrap();
        if event["type"] != "GetCacheLocation" {
            continue;
        }
        reads += 1;
        let keys: Vec<i64> = event["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_i64().unwrap())
            .collect();
        let timestamp_ns = event["trigger_time_us"].as_i64().unwrap() * 1_000;
        for ((_, stride, _), oracle) in lanes.iter().zip(&mut oracles) {
            let lane_keys: Vec<i64> = keys
                .iter()
                .skip(stride - 1)
                .step_by(*stride)
                .copied()
                .collect();
            oracle.process_request(&lane_keys, timestamp_ns);
        }
    }
    let rows = read_facts(&dir.path().join("out/fanout").join(FACTS));
    assert_eq!(rows.len(), 4 * reads);
    for (row, (instance_id, _, _)) in rows.iter().zip(lanes.iter().cycle()) {
        assert_eq!(row.instance_id, *instance_id);
    }

    let query = ok(run_in(
        Some(dir.path()),
        [
            "query",
            "out/fanout/litehit_facts.csv",
            "-",
            "--capacity-blocks=10,100",
            "-1",
            "--summary-only",
        ],
    ));
    let output = parse_query_output(&query.stdout);
    let mut expected: Vec<(&str, Vec<u64>)> = lanes
        .iter()
        .zip(&oracles)
        .map(|(&(id, _, _), oracle)| {
            let totals = &oracle.total_hits;
            (id, vec![totals[2], totals[0], totals[1]]) // slots: -1, then 10 and 100 blocks
        })
        .collect();
    expected.sort_unstable();
    let found: Vec<(&str, Vec<u64>)> = output
        .instance_summaries
        .iter()
        .map(|s| {
            (
                s["instance_id"].as_str().unwrap(),
                u64s(&s["total_hit_blocks"]),
            )
        })
        .collect();
    assert_eq!(found, expected, "byte order; hit blocks per lane");
    assert!(
        oracles[2].total_hits[2] < oracles[0].total_hits[2],
        "the TTL matters"
    );
}

#[test]
fn hisim_smoke_trace_replays_with_prefix_hash_and_four_times_coarser_blocks() {
    let Some(trace) = shared_file("reference/zishano_hisim_smoke_trace.jsonl") else {
        return;
    };
    let dir = tempdir();
    let out = dir.path().join("out");
    let flags = [
        "--prefix-hash",
        "--trace-block-size",
        "256",
        "--block-size",
        "1024",
    ];
    ok(replay_flags(&trace, &out, &flags));
    let rows = read_facts(&out.join(FACTS));
    assert_eq!(rows.len(), 16);

    // Independent: the trace's own `bundle_keys` = ApplyPrefixHash(keys)[3::4].
    let capacities = [Some(1), Some(20), Some(100), None];
    let mut oracle = OracleBank::new(&capacities, None);
    let mut expected = Vec::new();
    for (line, row) in fs::read_to_string(&trace).unwrap().lines().zip(&rows) {
        let value: Value = serde_json::from_str(line).unwrap();
        assert_eq!(row.trace_id, value["trace_id"].as_str().unwrap());
        assert_eq!(row.instance_id, value["instance_id"].as_str().unwrap());
        assert_eq!(row.block_size_tokens, 1024);
        assert_eq!(row.input_token_len, value["input_len"].as_u64().unwrap());
        let bundle_keys: Vec<i64> = value["bundle_keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_i64().unwrap())
            .collect();
        expected.push(oracle.process_request(&bundle_keys, 0));
    }
    let query = run_ok([
        "query",
        path_str(&out.join(FACTS)),
        "-",
        "--capacity-blocks",
        "1,20,100",
        "-1",
    ]);
    let output = parse_query_output(&query.stdout);
    for (row, hits) in output.rows.iter().zip(&expected) {
        // Slots: -1 first (GB slots), then the block slots.
        assert_eq!(
            u64s(&row["hit_blocks"]),
            [hits[3], hits[0], hits[1], hits[2]],
            "{row}"
        );
    }
    assert!(oracle.total_hits[3] > 0, "the smoke trace shares prefixes");
}

// ---------------------------------------------------------------------------------------------
// 6. The upstream query reference, through the binary

#[test]
fn query_reproduces_the_upstream_capacity_query_excerpt() {
    let (Some(facts), Some(excerpt)) = (
        shared_file("reference/zishano_kimi_k3_tp8_litehit_facts.csv"),
        shared_file("reference/zishano_kimi_k3_tp8_capacity_query_excerpt.jsonl"),
    ) else {
        return;
    };
    let dir = tempdir();
    let out = dir.path().join("capacity_query.jsonl");
    let mut args = vec![
        "query".to_owned(),
        path_str(&facts).to_owned(),
        path_str(&out).to_owned(),
    ];
    args.extend((0..=1000).step_by(25).map(|gb: u32| gb.to_string()));
    args.extend(["1024".to_owned(), "-1".to_owned()]);
    assert_eq!(args.len(), 3 + 43);
    run_ok(&args);

    let ours = fs::read_to_string(&out).unwrap();
    let ours: Vec<&str> = ours.split_inclusive('\n').collect();
    let theirs = fs::read_to_string(&excerpt).unwrap();
    let theirs: Vec<&str> = theirs.split_inclusive('\n').collect();
    assert_eq!(theirs.len(), 9);
    assert_eq!(ours.len(), 133, "131 rows, one instance summary, the total");
    assert_eq!(ours[..7], theirs[..7], "the first 7 lines");
    assert_eq!(
        ours[131..],
        theirs[7..],
        "the two summary lines, byte for byte"
    );
    assert!(!dir.path().join("capacity_query.jsonl.tmp").exists());
}

// ---------------------------------------------------------------------------------------------
// 7. `--help` snapshots

#[test]
fn help_texts_are_stable() {
    for (name, args) in [
        ("litehit_help", vec!["--help"]),
        ("replay_help", vec!["replay", "--help"]),
        ("query_help", vec!["query", "--help"]),
        ("mrc_help", vec!["mrc", "--help"]),
        ("watch_help", vec!["watch", "--help"]),
        ("demo_help", vec!["demo", "--help"]),
    ] {
        let run = run_ok(&args);
        assert_eq!(run.stderr, "");
        insta::assert_snapshot!(name, run.stdout);
    }
}

// ---------------------------------------------------------------------------------------------
// 8. `litehit mrc` through the binary

#[test]
fn mrc_json_ceiling_equals_query_infinity_and_png_is_written() {
    let requests = generate(multi_instance_workload(29), 1_500);
    let dir = tempdir();
    let trace = write_file(dir.path(), "trace.jsonl", &standard_trace(&requests));
    let out = dir.path().join("out");
    let extra = block_flags();
    ok(replay_flags(
        &trace,
        &out,
        &extra.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let facts = out.join(FACTS);
    let png = dir.path().join("plots/mrc.png");
    fs::create_dir_all(png.parent().unwrap()).unwrap();

    let mrc = run_ok(["mrc", path_str(&facts), "--json", "--png", path_str(&png)]);
    let report: Value = serde_json::from_str(&mrc.stdout).unwrap();
    let query = run_ok(["query", path_str(&facts), "-", "-1", "--summary-only"]);
    let query = parse_query_output(&query.stdout);

    let total = &report["total"];
    assert_eq!(total["requests"], query.overall["requests"]);
    assert_eq!(
        total["total_input_tokens"],
        query.overall["total_input_tokens"]
    );
    assert_eq!(
        total["infinite_hit_tokens"].as_u64().unwrap(),
        u64s(&query.overall["total_hit_tokens"])[0]
    );
    let rate = total["infinite_hit_rate"].as_f64().unwrap();
    let query_rate = query.overall["hit_rates"][0].as_f64().unwrap();
    assert!(
        rate > 0.0 && (rate - query_rate).abs() <= 5e-6 * rate,
        "{rate} vs {query_rate}"
    );
    let instances = report["instances"].as_array().unwrap();
    assert_eq!(instances.len(), query.instance_summaries.len());
    for (instance, summary) in instances.iter().zip(&query.instance_summaries) {
        assert_eq!(instance["instance_id"], summary["instance_id"]);
        assert_eq!(
            instance["infinite_hit_blocks"].as_u64().unwrap(),
            u64s(&summary["total_hit_blocks"])[0]
        );
    }

    let bytes = fs::read(&png).unwrap();
    assert!(bytes.len() > 1000, "a non-empty plot");
    assert_eq!(bytes[..8], *b"\x89PNG\r\n\x1a\n");
    assert!(!dir.path().join("plots/mrc.png.tmp").exists());
}

// ---------------------------------------------------------------------------------------------
// Query failures, broken pipes and in-process parsing

#[test]
fn query_failures_exit_2_and_publish_nothing() {
    let dir = tempdir();
    let out = dir.path().join("q.jsonl");
    let missing = dir.path().join("missing.csv");
    let run = run_in(None, ["query", path_str(&missing), path_str(&out), "-1"]);
    assert_mentions(failed(&run), &["failed to open facts file", "missing.csv"]);

    let facts = write_file(
        dir.path(),
        "facts.csv",
        "trace_id,instance_id,timestamp_ns,input_token_len,block_size_tokens,block_bytes,hit_curve\n\
         r1,i1,1000,13,4,16384,\"[]\"\n\
         r2,i1,2000,12,4,16384,\"[[1,2]\"\n",
    );
    let run = run_in(None, ["query", path_str(&facts), path_str(&out), "-1"]);
    assert_mentions(failed(&run), &["facts line 3", "hit_curve"]);
    let run = run_in(None, ["query", path_str(&facts), path_str(&out), "1TB"]);
    assert_mentions(failed(&run), &["invalid capacity_gb: 1TB"]);
    let run = run_in(None, ["query", path_str(&facts), path_str(&out)]);
    assert_mentions(failed(&run), &["no capacity"]);
    assert!(!out.exists());
    assert!(!dir.path().join("q.jsonl.tmp").exists());
}

/// Runs `litehit ARGS` with stdout a pipe whose reader is closed at once. The output must be
/// larger than a pipe buffer, so the binary meets the closed pipe whatever the timing.
fn run_with_closed_stdout(args: &[&str]) -> Run {
    let mut child = litehit()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    Run {
        code: output.status.code(),
        stdout: String::new(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    let requests = generate(multi_instance_workload(31), 4_000);
    let dir = tempdir();
    let trace = write_file(dir.path(), "trace.jsonl", &standard_trace(&requests));
    let out = dir.path().join("out");
    let extra = block_flags();
    ok(replay_flags(
        &trace,
        &out,
        &extra.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let facts = out.join(FACTS);
    for args in [
        vec!["query", path_str(&facts), "-", "1", "2", "-1"],
        vec![
            "mrc",
            path_str(&facts),
            "--json",
            "--max-curve-points",
            "5000",
        ],
    ] {
        let full = run_ok(&args);
        assert!(
            full.stdout.len() > 256 << 10,
            "more than a pipe buffer: {args:?}"
        );
        let run = run_with_closed_stdout(&args);
        assert_eq!((run.code, run.stderr.as_str()), (Some(0), ""), "{args:?}");
    }
}

#[test]
fn command_lines_used_here_parse_in_process() {
    let cli = Cli::parse_from([
        "litehit",
        "query",
        "f.csv",
        "-",
        "0",
        "0.3",
        "-1",
        "--capacity-blocks=1,50",
        "--summary-only",
    ]);
    let Command::Query(args) = cli.command else {
        panic!("query expected")
    };
    assert_eq!(args.capacity_gb, ["0", "0.3", "-1"]);
    assert_eq!(args.capacity_blocks, [1, 50]);
    assert!(args.summary_only && args.writes_to_stdout());

    let cli = Cli::parse_from(["litehit", "replay", "cfg/config.json", "--quiet"]);
    let Command::Replay(args) = cli.command else {
        panic!("replay expected")
    };
    assert_eq!(
        (args.input.to_str(), args.out, args.quiet),
        (Some("cfg/config.json"), None, true)
    );

    let cli = Cli::parse_from([
        "litehit", "mrc", "a.csv", "b.csv", "--json", "--png", "p.png",
    ]);
    let Command::Mrc(args) = cli.command else {
        panic!("mrc expected")
    };
    assert_eq!(args.facts.len(), 2);
    assert!(args.json && args.png.is_some());

    // Usage errors exit 1 as well (upstream exits 1 on a bad command line).
    let run = run_in(
        None,
        [
            "replay",
            "t.jsonl",
            "--out",
            "o",
            "--block-bytes",
            "1",
            "--kv-bytes-per-token",
            "2",
        ],
    );
    assert_eq!(
        run.code,
        Some(1),
        "usage errors fail like any other: {}",
        run.stderr
    );
    assert!(run.stderr.contains("cannot be used with"), "{}", run.stderr);
}

/// A Mooncake-format trace (dense ids, 512-token blocks) of `n` generated requests.
fn mooncake_trace(dir: &Path, n: usize) -> PathBuf {
    let requests = generate(
        WorkloadConfig {
            key_style: litehit_core::workload::KeyStyle::Dense,
            block_size_tokens: 512,
            ..short_request_workload(17)
        },
        n,
    );
    let mut text = String::new();
    for request in &requests {
        request.to_mooncake_jsonl(&mut text);
    }
    write_file(dir, "mooncake.jsonl", &text)
}

/// The last JSON line `watch --headless --exit-at-eof` printed.
fn last_headless_line(run: &Run) -> Value {
    let line = run.stdout.lines().last().expect("a headless line");
    serde_json::from_str(line).expect("headless lines are JSON")
}

#[test]
fn headless_watch_with_facts_out_publishes_the_replays_facts_at_the_end() {
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 300);
    let out = dir.path().join("out");
    ok(run_in(
        None,
        ["replay", path_str(&trace), "--out", path_str(&out)],
    ));
    let replayed = fs::read(out.join(FACTS)).unwrap();

    let facts = dir.path().join("live.csv");
    let headless = |facts_out: &Path| {
        run_in(
            None,
            [
                "watch",
                path_str(&trace),
                "--headless",
                "--exit-at-eof",
                "--facts-out",
                path_str(facts_out),
            ],
        )
    };
    let run = ok(headless(&facts));
    assert_eq!(
        fs::read(&facts).unwrap(),
        replayed,
        "the same facts as replay"
    );
    assert!(
        run.stderr.contains("facts written to") && run.stderr.contains("(300 rows)"),
        "{}",
        run.stderr
    );
    assert_eq!(last_headless_line(&run)["instances"][0]["requests"], 300);

    // Without --facts-out, a headless run writes nothing.
    let quiet_dir = tempdir();
    ok(run_in(
        Some(quiet_dir.path()),
        ["watch", path_str(&trace), "--headless", "--exit-at-eof"],
    ));
    assert_eq!(fs::read_dir(quiet_dir.path()).unwrap().count(), 0);

    // A path that cannot be written is said at once, before anything is read.
    let blocked = dir.path().join("a-file");
    fs::write(&blocked, "").unwrap();
    let run = headless(&blocked.join("facts.csv"));
    assert_mentions(failed(&run), &["--facts-out", "a-file is not a directory"]);
    assert!(run.stdout.is_empty(), "nothing ran: {}", run.stdout);
    let run = headless(&dir.path().join("no-such-dir").join("facts.csv"));
    assert_mentions(failed(&run), &["--facts-out", "no-such-dir does not exist"]);
    // One that fails only when written fails the run, naming it: here a directory stands
    // where the snapshot file would go.
    let taken = dir.path().join("taken");
    fs::create_dir_all(taken.join(FACTS)).unwrap();
    let run = headless(&taken);
    assert_mentions(failed(&run), &["writing the facts to", "is a directory"]);
    assert_eq!(last_headless_line(&run)["instances"][0]["requests"], 300);
}

#[test]
fn a_config_without_block_size_takes_the_detected_formats_as_if_it_named_the_format() {
    // Before, leaving out `trace_format` as well meant upstream's 256 for a Mooncake trace
    // (every line failed its length check) and for a KVCM log (silently 16× too few blocks).
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 200);
    let config = |with_format: bool| {
        format!(
            r#"{{"trace_file_path": "{}", "output_result_path": "out", {}
               "instance_groups": [{{"name": "g"}}],
               "instances": [{{"instance_group_name": "g", "instance_id": "m", "block_size": 512,
                 "location_spec_infos": [{{"name": "kv", "size": 1048576}}],
                 "location_spec_groups": [{{"name": "full", "spec_names": ["kv"]}}]}}]}}"#,
            path_str(&trace),
            if with_format {
                r#""trace_format": "mooncake","#
            } else {
                ""
            }
        )
    };
    let mut published = Vec::new();
    for with_format in [true, false] {
        let out_dir = dir.path().join(format!("run-{with_format}"));
        fs::create_dir(&out_dir).unwrap();
        let config_path = write_file(&out_dir, "config.json", &config(with_format));
        ok(run_in(
            Some(&out_dir),
            ["replay", path_str(&config_path), "--quiet"],
        ));
        published.push(fs::read(out_dir.join("out").join(FACTS)).unwrap());
        // The live monitor resolves the config the same way.
        let run = ok(run_in(
            Some(&out_dir),
            [
                "watch",
                "--config",
                path_str(&config_path),
                "--headless",
                "--exit-at-eof",
            ],
        ));
        let last = last_headless_line(&run);
        assert_eq!(last["bad_lines"], 0, "{last}");
        assert_eq!(last["instances"][0]["requests"], 200, "{last}");
    }
    assert_eq!(published[0], published[1]);
}

#[test]
fn watch_reads_an_existing_trace_in_its_own_format_as_replay_does() {
    // Before this was fixed, `watch` read every trace with the standard format's 256-token
    // blocks unless told `--format`, so every Mooncake line failed its length check.
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 300);
    let run = ok(run_in(
        None,
        [
            "watch",
            path_str(&trace),
            "--headless",
            "--exit-at-eof",
            "--capacity-gb",
            "1",
        ],
    ));
    let last = last_headless_line(&run);
    assert_eq!(last["bad_lines"], 0, "{last}");
    let instance = &last["instances"][0];
    assert_eq!(instance["requests"], 300, "{last}");
    assert_eq!(instance["block_size_tokens"], 512, "{last}");

    // The same ∞ hit rate as an offline replay of the same file.
    let out = dir.path().join("out");
    ok(run_in(
        None,
        ["replay", path_str(&trace), "--out", path_str(&out)],
    ));
    let query = ok(run_in(
        None,
        [
            "query",
            path_str(&out.join(FACTS)),
            "-",
            "-1",
            "--summary-only",
        ],
    ));
    let summary: Value = serde_json::from_str(query.stdout.lines().last().unwrap()).unwrap();
    let (replayed, watched) = (
        summary["total_hit_blocks"][0].as_u64().unwrap() * 512,
        instance["infinite_hit_tokens"].as_u64().unwrap(),
    );
    assert_eq!(watched, replayed, "{summary}\n{last}");

    // Mooncake keys are 512-token blocks by definition, so `--block-size` alone is the
    // analysis size: the trace is coarsened from 512, as with `--trace-block-size 512`.
    let coarse = dir.path().join("coarse");
    ok(replay_flags(&trace, &coarse, &["--block-size", "1024"]));
    let facts = fs::read_to_string(coarse.join(FACTS)).unwrap();
    assert!(
        facts.lines().skip(1).all(|row| row.contains(",1024,")),
        "{facts}"
    );
    let explicit = dir.path().join("explicit");
    ok(replay_flags(
        &trace,
        &explicit,
        &["--block-size", "1024", "--trace-block-size", "512"],
    ));
    assert_eq!(fs::read_to_string(explicit.join(FACTS)).unwrap(), facts);
    // A finer size cannot come from 512-token keys; the error says how to key it otherwise.
    let finer = replay_flags(&trace, &dir.path().join("finer"), &["--block-size", "256"]);
    assert_mentions(
        failed(&finer),
        &["the Mooncake block size 512", "--trace-block-size"],
    );
    // A trace really keyed at 1024 tokens says so, and its key counts are checked at that size.
    let keyed_coarse = replay_flags(
        &trace,
        &dir.path().join("keyed"),
        &["--block-size", "1024", "--trace-block-size", "1024"],
    );
    assert_mentions(
        failed(&keyed_coarse),
        &["block 1024", "they fit 512-token blocks"],
    );
}

#[test]
fn watch_refuses_what_it_cannot_follow_with_a_clear_message() {
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 20);
    // Compressed, by name or by content.
    let named = write_file(
        dir.path(),
        "t.jsonl.gz",
        &fs::read_to_string(&trace).unwrap(),
    );
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(fs::read_to_string(&trace).unwrap().as_bytes())
        .unwrap();
    let unnamed = dir.path().join("t.jsonl");
    fs::write(&unnamed, gzip.finish().unwrap()).unwrap();
    for path in [&named, &unnamed] {
        let run = run_in(
            None,
            ["watch", path_str(path), "--headless", "--exit-at-eof"],
        );
        assert_mentions(failed(&run), &["does not decompress", "litehit replay"]);
    }
    // A directory, and a FIFO (what `<(cmd)` gives): neither can be followed, and peeking at
    // a pipe would eat its first bytes.
    let run = run_in(
        None,
        ["watch", path_str(dir.path()), "--headless", "--exit-at-eof"],
    );
    assert_mentions(failed(&run), &["is a directory"]);
    let fifo = dir.path().join("fifo.jsonl");
    make_fifo(&fifo);
    let run = run_in(
        None,
        ["watch", path_str(&fifo), "--headless", "--exit-at-eof"],
    );
    assert_mentions(failed(&run), &["regular file", "litehit replay"]);
    // Standard input is a stream, not a file to follow.
    let run = run_in(None, ["watch", "-", "--headless", "--exit-at-eof"]);
    assert_mentions(failed(&run), &["not standard input", "litehit replay -"]);
    // A missing file with --exit-at-eof is a typo, not a file to wait for.
    let missing = dir.path().join("missing.jsonl");
    let run = run_in(
        None,
        ["watch", path_str(&missing), "--headless", "--exit-at-eof"],
    );
    assert_mentions(failed(&run), &["missing.jsonl", "no such file"]);
    // Without --exit-at-eof a missing file is waited for, but not in a missing directory.
    let typo = dir.path().join("no-such-dir").join("later.jsonl");
    let run = run_in(None, ["watch", path_str(&typo), "--headless"]);
    assert_mentions(failed(&run), &["no-such-dir does not exist"]);
    // Slots: distinct, and ∞ is a column already.
    for (slots, fragment) in [
        ("40,40GB", "40 GB is given twice"),
        ("10,inf", "unlimited (inf, -1) is always shown"),
        ("-1", "unlimited (inf, -1) is always shown"),
    ] {
        let run = run_in(None, ["demo", "--headless", "--capacity-gb", slots]);
        assert_mentions(failed(&run), &[fragment]);
    }
    // No terminal (stdin is /dev/null here): an error, not a panic.
    for args in [vec!["watch", path_str(&trace)], vec!["demo"]] {
        let run = run_in(None, args);
        assert_mentions(failed(&run), &["needs a terminal", "--headless"]);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
}

#[test]
fn a_failed_replay_leaves_no_new_directory_and_out_must_be_a_directory() {
    let dir = tempdir();
    let mut text = standard_trace(&generate(short_request_workload(3), 50));
    text.push_str("{\"broken\n");
    let trace = write_file(dir.path(), "t.jsonl", &text);
    let fresh = dir.path().join("fresh");
    let flags = block_flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let run = replay_flags(&trace, &fresh, &flags);
    assert_mentions(failed(&run), &["line 51"]);
    assert!(
        !fresh.exists(),
        "the output directory it created is removed again"
    );
    let nested = dir.path().join("a").join("b").join("c");
    let run = replay_flags(&trace, &nested, &flags);
    assert_mentions(failed(&run), &["line 51"]);
    assert!(
        !dir.path().join("a").exists(),
        "and every parent it created"
    );

    let run = replay_flags(&trace, &trace, &flags);
    assert_mentions(
        failed(&run),
        &["t.jsonl: is a file", "names a directory", "ending in .csv"],
    );
}

#[test]
fn sigterm_ends_a_headless_demo_cleanly() {
    let dir = tempdir();
    let mut child = litehit()
        .args(["demo", "--headless", "--rate", "200"])
        .env("TMPDIR", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first report line, then ask it to stop.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0_u8; 1];
    stdout.read_exact(&mut first).unwrap();
    let traces = || {
        fs::read_dir(dir.path())
            .unwrap()
            .filter(|entry| {
                entry
                    .as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("litehit-demo-"))
            })
            .count()
    };
    assert_eq!(traces(), 1, "the demo writes its trace");
    send_signal(child.id(), "TERM");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(0), "a clean exit, not 143");
    let last = rest.lines().last().expect("a last report line");
    assert!(last.ends_with('}'), "{last}");
    assert_eq!(traces(), 0, "the generated trace is removed");
}

/// `litehit replay - --out OUT FLAGS`, its standard input written by `feed` on another
/// thread; asserts success.
fn replay_from_stdin(
    out: &Path,
    flags: &[&str],
    feed: impl FnOnce(&mut std::process::ChildStdin) + Send + 'static,
) {
    let mut child = litehit()
        .args(["replay", "-", "--out", path_str(out), "--quiet"])
        .args(flags)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || feed(&mut stdin));
    let output = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A trace piped in (`-`, or a shell's `<(zcat t.gz)`) is read once: the first line that
/// names the format is replayed too. Before, the format was detected on a first read of the
/// pipe and the replay read it again, so the first 64 KiB were lost; a trace whose first
/// chunk ended on a line boundary even replayed "successfully" with rows missing.
#[test]
fn a_piped_trace_replays_exactly_like_the_file() {
    let dir = tempdir();
    let text = standard_trace(&generate(multi_instance_workload(17), 600));
    assert!(text.len() > 3 << 16, "more than the first read's 64 KiB");
    let trace = write_file(dir.path(), "trace.jsonl", &text);
    let from_file = dir.path().join("from_file");
    let flags = block_flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    ok(replay_flags(&trace, &from_file, &flags));

    let from_pipe = dir.path().join("from_pipe");
    replay_from_stdin(&from_pipe, &flags, move |stdin| {
        // Small writes, so the replay sees a stream and not one buffer.
        for piece in text.as_bytes().chunks(4096) {
            stdin.write_all(piece).unwrap();
        }
    });
    assert_eq!(
        fs::read(from_pipe.join(FACTS)).unwrap(),
        fs::read(from_file.join(FACTS)).unwrap()
    );
}

/// `watch` names skipped lines on stderr when it ends, and a trace none of whose lines could
/// be used (here: keys of 16-token blocks read at the standard format's 256) is an error, not
/// an exit 0 that showed nothing.
#[test]
fn watch_at_eof_reports_bad_lines_and_fails_when_nothing_was_usable() {
    let dir = tempdir();
    let rows: String = (1..=3)
        .map(|i| get_row("a", &format!("r{i}"), i, &[1, 2, 3], 48))
        .collect();
    let unusable = write_file(dir.path(), "unusable.jsonl", &rows);
    let run = run_in(
        None,
        ["watch", path_str(&unusable), "--headless", "--exit-at-eof"],
    );
    assert_mentions(
        failed(&run),
        &[
            "no valid Request/Get events",
            "3 bad lines skipped",
            "line 3",
            "they fit 16-token blocks",
        ],
    );

    let mixed = write_file(
        dir.path(),
        "mixed.jsonl",
        &format!("{rows}{{\"type\":\"get\"\n"),
    );
    let run = ok(run_in(
        None,
        [
            "watch",
            path_str(&mixed),
            "--headless",
            "--exit-at-eof",
            "--block-size",
            "16",
        ],
    ));
    assert_mentions(&run.stderr, &["1 bad line skipped", "line 4"]);

    // Read to the end without a single request (empty here; a forced format that skips
    // every row does the same): an error, as for `replay`.
    let empty = write_file(dir.path(), "empty.jsonl", "");
    let run = run_in(
        None,
        ["watch", path_str(&empty), "--headless", "--exit-at-eof"],
    );
    assert_mentions(failed(&run), &["no valid Request/Get events"]);

    // Only a write and a bad line: still nothing usable (a bad line must not turn it into a
    // success).
    let writes = write_file(
        dir.path(),
        "writes.jsonl",
        &format!("{}garbage\n", write_row("a", "w1", 1, &[1, 2])),
    );
    let run = run_in(
        None,
        ["watch", path_str(&writes), "--headless", "--exit-at-eof"],
    );
    assert_mentions(
        failed(&run),
        &["no valid Request/Get events", "1 bad line skipped"],
    );

    // From the end of a valid trace nothing is read, which proves nothing: exit 0.
    let sample = write_file(dir.path(), "valid.jsonl", &rows);
    ok(run_in(
        None,
        [
            "watch",
            path_str(&sample),
            "--headless",
            "--exit-at-eof",
            "--from-end",
            "--block-size",
            "16",
        ],
    ));
}

/// The reading of a trace once (above) must not cost what reading it twice handled: a gzip
/// stream whose first byte arrives alone, a first line over 1 MiB, a first line that is only
/// a byte-order mark.
#[test]
fn a_trace_read_once_still_detects_what_it_used_to() {
    let dir = tempdir();
    let flags = block_flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let text = standard_trace(&generate(multi_instance_workload(23), 200));
    let trace = write_file(dir.path(), "trace.jsonl", &text);
    let expected_out = dir.path().join("expected");
    ok(replay_flags(&trace, &expected_out, &flags));
    let expected = fs::read(expected_out.join(FACTS)).unwrap();

    // gzip through a pipe, its first byte alone.
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(text.as_bytes()).unwrap();
    let gz = gzip.finish().unwrap();
    let out = dir.path().join("gz");
    replay_from_stdin(&out, &flags, move |stdin| {
        stdin.write_all(&gz[..1]).unwrap();
        stdin.flush().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        stdin.write_all(&gz[1..]).unwrap();
    });
    assert_eq!(fs::read(out.join(FACTS)).unwrap(), expected);

    // A byte-order mark on a line of its own before the trace.
    let bom = write_file(dir.path(), "bom.jsonl", &format!("\u{feff}\n{text}"));
    let out = dir.path().join("bom");
    ok(replay_flags(&bom, &out, &flags));
    assert_eq!(fs::read(out.join(FACTS)).unwrap(), expected);

    // A first request of 200 000 blocks: a first line over 1 MiB is detected as before.
    let keys: Vec<i64> = (1..=200_000).collect();
    let long = write_file(
        dir.path(),
        "long.jsonl",
        &get_row("a", "r1", 1, &keys, 200_000 * BLOCK_TOKENS),
    );
    assert!(fs::metadata(&long).unwrap().len() > 1 << 20);
    ok(replay_flags(&long, &dir.path().join("long"), &flags));
}

#[test]
fn facts_are_never_written_over_the_trace_they_come_from() {
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 20);
    let before = fs::read(&trace).unwrap();
    // However the two paths are spelled: the same text, `./` in front, a trace not created
    // yet, a directory whose `litehit_facts.csv` is the trace.
    let spellings = [
        ("mooncake.jsonl", "mooncake.jsonl"),
        ("mooncake.jsonl", "./mooncake.jsonl"),
        ("later.jsonl", "./later.jsonl"),
    ];
    for (watched, facts_out) in spellings {
        let run = run_in(
            Some(dir.path()),
            ["watch", watched, "--facts-out", facts_out],
        );
        assert_mentions(failed(&run), &["trace being watched"]);
    }
    // A link to the trace, also while neither exists yet (the snapshot would create it).
    std::os::unix::fs::symlink("mooncake.jsonl", dir.path().join("link.csv")).unwrap();
    std::os::unix::fs::symlink("later2.jsonl", dir.path().join("dangling.csv")).unwrap();
    for (watched, facts_out) in [
        ("mooncake.jsonl", "link.csv"),
        ("later2.jsonl", "dangling.csv"),
    ] {
        let run = run_in(
            Some(dir.path()),
            ["watch", watched, "--facts-out", facts_out],
        );
        assert_mentions(failed(&run), &["trace being watched"]);
    }
    let named_like_facts = write_file(dir.path(), FACTS, &String::from_utf8_lossy(&before));
    let run = run_in(Some(dir.path()), ["watch", FACTS, "--facts-out", "."]);
    assert_mentions(failed(&run), &["trace being watched"]);
    let run = run_in(Some(dir.path()), ["replay", FACTS, "--out", "."]);
    assert_mentions(failed(&run), &["would replace the trace"]);
    assert_eq!(fs::read(&trace).unwrap(), before);
    assert_eq!(fs::read(&named_like_facts).unwrap(), before);
}

#[test]
fn headless_lines_are_fresh_at_any_interval_and_fps_must_be_positive() {
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 20);
    let child = litehit()
        .args([
            "watch",
            path_str(&trace),
            "--headless",
            "--interval",
            "0.25",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1600));
    send_signal(child.id(), "TERM");
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let uptimes: Vec<f64> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line).unwrap();
            value["uptime_s"].as_f64().unwrap()
        })
        .collect();
    assert!(uptimes.len() >= 4, "{uptimes:?}");
    // The last line is written on the signal, possibly right after a tick's: all but it
    // must each show a newer snapshot than the line before.
    let ticks = &uptimes[..uptimes.len() - 1];
    assert!(
        ticks.windows(2).all(|pair| pair[1] > pair[0]),
        "a line repeats the previous snapshot: {uptimes:?}"
    );

    let run = run_in(None, ["watch", path_str(&trace), "--fps", "0"]);
    assert_mentions(failed(&run), &["--fps", "positive"]);
    let run = run_in(
        None,
        ["demo", "--headless", "--fps", "nan", "--requests", "10"],
    );
    assert_mentions(failed(&run), &["--fps", "positive"]);
}

/// `litehit replay - --out OUT` fed `trace` through a pipe that stays open (the returned
/// stdin): it reads the lines and then waits for more.
fn replay_waiting_on_open_stdin(
    trace: &Path,
    out: &Path,
) -> (std::process::Child, std::process::ChildStdin) {
    let mut child = litehit()
        .args(["replay", "-", "--out", path_str(out)])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&fs::read(trace).unwrap()).unwrap();
    stdin.flush().unwrap();
    (child, stdin)
}

#[test]
fn ctrl_c_ends_a_replay_waiting_for_input_on_a_pipe() {
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 5);
    let out = dir.path().join("out");
    let (mut child, stdin) = replay_waiting_on_open_stdin(&trace, &out);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !out.exists() {
        assert!(Instant::now() < deadline, "the replay never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    send_signal(child.id(), "INT");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "still waiting for input after Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    assert_eq!(status.code(), Some(130));
    let stderr = read_stderr(&mut child);
    assert!(stderr.contains("interrupted by signal 2"), "{stderr}");
    assert!(!out.exists(), "nothing published, no directory left");
}

#[test]
fn kvcm_events_of_other_types_are_skipped_with_a_warning() {
    let dir = tempdir();
    let log = write_file(
        dir.path(),
        "events.log",
        concat!(
            r#"{"id":"a","source":"i","type":"GetCacheLocation","trigger_time_us":1,"keys":[1,2],"input_len":32}"#,
            "\n",
            r#"{"id":"b","source":"i","type":"GetCacheLocatio","trigger_time_us":2,"keys":[1,2],"input_len":32}"#,
            "\n",
            r#"{"id":"c","source":"i","type":"RemoveCache","trigger_time_us":3,"keys":[1]}"#,
            "\n",
            r#"{"id":"d","source":"i","type":"GetCacheLocation","trigger_time_us":4,"keys":[1,2],"input_len":32}"#,
            "\n",
        ),
    );
    let out = dir.path().join("out");
    let run = ok(run_in(
        None,
        ["replay", path_str(&log), "--out", path_str(&out), "--quiet"],
    ));
    assert_mentions(
        &run.stderr,
        &[
            "warning",
            "2 lines of other event types",
            "the first: line 2",
        ],
    );
    let facts = fs::read_to_string(out.join(FACTS)).unwrap();
    assert_eq!(facts.lines().count(), 3, "two reads: {facts}");

    // `--block-size` alone takes KVCM keys at that size: said, since nothing else would (reads
    // without a length, as in real logs, cannot be checked).
    let log = write_file(
        dir.path(),
        "nolen.log",
        concat!(
            r#"{"id":"a","source":"i","type":"GetCacheLocation","trigger_time_us":1,"keys":[1,2]}"#,
            "\n",
        ),
    );
    let run = ok(run_in(
        None,
        [
            "replay",
            path_str(&log),
            "--out",
            path_str(&out),
            "--block-size",
            "64",
        ],
    ));
    assert_mentions(
        &run.stderr,
        &[
            "KVCM logs do not say their block size",
            "--trace-block-size 16",
        ],
    );
    let run = ok(run_in(
        None,
        [
            "replay",
            path_str(&log),
            "--out",
            path_str(&out),
            "--block-size",
            "32",
            "--trace-block-size",
            "16",
        ],
    ));
    assert!(
        !run.stderr.contains("do not say their block size"),
        "{}",
        run.stderr
    );

    // Read in the wrong format, every line is an event of another type: the error says so.
    let standard = write_file(
        dir.path(),
        "standard.jsonl",
        &get_row("i", "r1", 1, &[1, 2], 32),
    );
    let run = replay_flags(&standard, &dir.path().join("wrong"), &["--format", "kvcm"]);
    assert_mentions(
        failed(&run),
        &[
            "no valid Request/Get events",
            "1 event of another type (the first at line 1)",
            "--format",
        ],
    );
}

#[test]
fn query_and_mrc_read_facts_from_standard_input() {
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 50);
    let out = dir.path().join("out");
    ok(run_in(
        None,
        ["replay", path_str(&trace), "--out", path_str(&out)],
    ));
    let facts = out.join(FACTS);
    let piped = |args: &[&str]| ok(run_with_stdin(None, args, fs::read(&facts).unwrap())).stdout;
    let from_file = ok(run_in(None, ["query", path_str(&facts), "-", "1", "-1"]));
    assert_eq!(piped(&["query", "-", "-", "1", "-1"]), from_file.stdout);
    let mrc_file = ok(run_in(None, ["mrc", path_str(&facts), "--json"]));
    assert_eq!(piped(&["mrc", "-", "--json"]), mrc_file.stdout);
}

#[test]
fn standard_output_under_another_name_is_written_through_the_stdout_handle() {
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 30);
    let out = dir.path().join("out");
    ok(run_in(
        None,
        ["replay", path_str(&trace), "--out", path_str(&out)],
    ));
    let facts = out.join(FACTS);
    let expected = ok(run_in(None, ["query", path_str(&facts), "-", "1", "-1"])).stdout;
    // Redirected with `>>`: the earlier content stays, the JSONL follows it, and no status
    // line lands in between. (`/proc/self/fd/1` is what `/dev/stdout` links to; a test that
    // went wrong could not replace it, where it could replace `/dev/stdout` as root.)
    let log = dir.path().join("log.txt");
    fs::write(&log, "earlier\n").unwrap();
    let appended = fs::OpenOptions::new().append(true).open(&log).unwrap();
    let status = litehit()
        .args(["query", path_str(&facts), "/proc/self/fd/1", "1", "-1"])
        .stdout(Stdio::from(appended))
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        fs::read_to_string(&log).unwrap(),
        format!("earlier\n{expected}")
    );
    // A plot on standard output: the image alone there, the table on stderr.
    let output = litehit()
        .args(["mrc", path_str(&facts), "--png", "/proc/self/fd/1"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(
        output.stdout.starts_with(b"\x89PNG\r\n\x1a\n"),
        "a PNG on stdout"
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("95% knee"));
    // A symlink loop is an error, not a file written over the link.
    std::os::unix::fs::symlink("loop-b", dir.path().join("loop-a")).unwrap();
    std::os::unix::fs::symlink("loop-a", dir.path().join("loop-b")).unwrap();
    let run = run_in(Some(dir.path()), ["query", path_str(&facts), "loop-a", "1"]);
    assert_mentions(failed(&run), &["too many levels of symbolic links"]);
    assert!(
        fs::symlink_metadata(dir.path().join("loop-a"))
            .unwrap()
            .is_symlink()
    );
}

#[test]
fn an_interrupted_replay_never_removes_a_fifo_it_was_writing_to() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 5);
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    let fifo = out.join(FACTS);
    make_fifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::read(fifo).unwrap())
    };
    let (mut child, stdin) = replay_waiting_on_open_stdin(&trace, &out);
    std::thread::sleep(Duration::from_millis(500));
    send_signal(child.id(), "INT");
    let status = child.wait().unwrap();
    drop(stdin);
    assert_eq!(status.code(), Some(130));
    let _ = reader.join();
    assert!(
        fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(),
        "the FIFO is still there"
    );
}

#[test]
fn outputs_that_are_inputs_or_descriptors_by_another_name_are_refused() {
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 30);
    let out = dir.path().join("out");
    ok(run_in(
        None,
        ["replay", path_str(&trace), "--out", path_str(&out)],
    ));
    let facts = out.join(FACTS);
    let before = fs::read(&facts).unwrap();
    let appending_to =
        |path: &Path| Stdio::from(fs::OpenOptions::new().append(true).open(path).unwrap());
    // Standard output appended to the facts being read: refused, the facts untouched.
    for args in [
        vec!["query", path_str(&facts), "/proc/self/fd/1", "1"],
        vec!["query", path_str(&facts), "-", "1"],
        vec!["mrc", path_str(&facts), "--png", "/proc/self/fd/1"],
    ] {
        let output = litehit()
            .args(&args)
            .stdout(appending_to(&facts))
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("facts file being read"),
            "{args:?}: {stderr}"
        );
    }
    assert_eq!(fs::read(&facts).unwrap(), before);
    // Both plots to standard output.
    let run = run_in(
        None,
        [
            "mrc",
            path_str(&facts),
            "--png",
            "-",
            "--svg",
            "/proc/self/fd/1",
        ],
    );
    assert_mentions(failed(&run), &["name the same file"]);
    // Another descriptor of this process that leads to a regular file: publishing by rename
    // would leave the descriptor on the old file (and wipe an appended log).
    let log = dir.path().join("app.log");
    fs::write(&log, "earlier\n").unwrap();
    let output = litehit()
        .args(["query", path_str(&facts), "/proc/self/fd/2", "1"])
        .stderr(appending_to(&log))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let log_text = fs::read_to_string(&log).unwrap();
    assert!(log_text.starts_with("earlier\n"), "{log_text}");
    assert!(log_text.contains("open descriptor"), "{log_text}");
    // The live monitor's snapshot never goes to standard output (checked before the
    // terminal is), where the screen or the headless JSON lines go. `demo --headless` has no
    // `--facts-out`.
    for command in ["watch", "demo"] {
        let mut args = vec![command, "--facts-out", "-"];
        if command == "watch" {
            args.insert(1, path_str(&trace));
        }
        let run = run_in(None, &args);
        assert_mentions(failed(&run), &["standard output"]);
        args.push("--headless");
        let run = run_in(None, &args);
        assert_eq!(run.code, Some(1));
        if command == "watch" {
            assert_mentions(failed(&run), &["standard output"]);
        } else {
            assert!(run.stderr.contains("cannot be used with"), "{}", run.stderr);
        }
    }
}

#[test]
fn watch_format_flag_wins_over_the_config_as_in_replay() {
    let dir = tempdir();
    write_file(
        dir.path(),
        "trace.jsonl",
        &(get_row("i1", "r1", 1, &[1, 2], 32) + &get_row("i1", "r2", 2, &[1, 2], 32)),
    );
    let config = write_file(
        dir.path(),
        "config.json",
        &config_json(
            "trace.jsonl",
            "out",
            16,
            &[InstanceSpec {
                instance_id: "i1",
                block_size: 16,
                block_bytes: 1024,
            }],
            r#""trace_format":"kvcm","#,
        ),
    );
    let watch = |extra: &[&str]| {
        let mut args = vec![
            "watch",
            "--config",
            path_str(&config),
            "--headless",
            "--exit-at-eof",
        ];
        args.extend_from_slice(extra);
        run_in(Some(dir.path()), args)
    };
    // The config says kvcm: every line is an event of another type.
    assert_eq!(watch(&[]).code, Some(1));
    let run = ok(watch(&["--format", "standard"]));
    let last = last_headless_line(&run);
    assert_eq!(last["instances"][0]["requests"], 2, "{last}");
    // `replay` does the same.
    ok(run_in(
        Some(dir.path()),
        ["replay", path_str(&config), "--format", "standard"],
    ));
}

#[test]
fn a_signal_ends_headless_watch_with_the_unterminated_last_line_read() {
    let dir = tempdir();
    let text = get_row("i1", "r1", 1, &[1, 2], 32) + &get_row("i1", "r2", 2, &[1, 2], 32);
    let trace = write_file(dir.path(), "trace.jsonl", text.trim_end());
    let mut child = litehit()
        .args([
            "watch",
            path_str(&trace),
            "--headless",
            "--block-size",
            "16",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0_u8; 1];
    stdout.read_exact(&mut first).unwrap(); // the first line: everything but the last line read
    send_signal(child.id(), "TERM");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    let last: Value = serde_json::from_str(rest.lines().last().unwrap()).unwrap();
    assert_eq!(last["instances"][0]["requests"], 2, "{last}");
}
