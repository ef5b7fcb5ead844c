//! Real traces from `../shared` (see `common::shared_file` for when they are missing).

use crate::common::shared_file;
use std::fs;
use std::path::Path;

use serde_json::Value;

use crate::common::cli_bin::{FACTS, ok, parse_query_output, read_facts, run_in, run_ok, u64s};
use crate::common::oracle::OracleBank;

use super::{path_str, replay_flags, tempdir};

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn mooncake_conversation_trace_replays_with_exact_infinite_hits() {
    let trace = shared_file("traces/conversation_trace.jsonl");
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

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn kvcm_publisher_log_replays() {
    let trace = shared_file("traces/event_publisher.log");
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

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn upstream_fanout_fixture_replays_the_kvcm_log_on_four_lanes_with_and_without_ttl() {
    let log = shared_file("traces/event_publisher.log");
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

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn hisim_smoke_trace_replays_with_prefix_hash_and_four_times_coarser_blocks() {
    let trace = shared_file("reference/zishano_hisim_smoke_trace.jsonl");
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
        "-1",
        "--capacity-blocks",
        "1,20,100",
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
