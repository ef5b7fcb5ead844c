//! End to end through the real binary: `litehit replay` → `litehit query` / `litehit mrc`.
//!
//! Every expected number comes from somewhere else than the binary: an in-memory replay of
//! the same requests (`LiteHit` + `projector`), the naive LRU oracle (`common/oracle.rs`), a
//! `serde_json` parse of the real trace, or the upstream reference files. Failures are
//! checked for their exit code (1, as upstream), their one-line `litehit: ...` message (file, line and
//! trace id) and for publishing nothing. Tests that need `../shared` are ignored when it is
//! absent, and fail if `CI` is set (`common::shared_file`).
//!
//! One module per section; the helpers they share are below.

mod capacity_arguments;
mod fail_fast;
mod generated;
mod help;
mod inputs_and_outputs;
mod killed_replay;
mod mrc;
mod query_failures;
mod query_reference;
mod real_traces;
mod upstream_config;
mod watch;

use std::collections::{BTreeMap, HashMap};
use std::io::Read as _;
use std::path::{Path, PathBuf};

use litehit_core::LiteHit;
use litehit_core::facts::RequestFact;
use litehit_core::projector::{project_blocks, project_infinite};
use litehit_core::workload::{SyntheticRequest, WorkloadConfig};
use serde_json::Value;

use crate::common::cli_bin::{QueryOutput, Run, generate, run_in, u64s, write_file};
use crate::common::oracle::OracleBank;

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
