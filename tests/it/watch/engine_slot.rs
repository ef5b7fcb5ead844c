//! The `engine` slot live (`watch --gpu-blocks`, issue 31 §1): listed first and named in the
//! headless JSON, at ⌊N × T / block size⌋ blocks of each lane, with the hits `query` gives at
//! that count.

use serde_json::Value;

use crate::common::cli_bin::{
    FACTS, InstanceSpec, config_json, failed, generate, ok, parse_query_output, replay_to, run_in,
    standard_trace, u64s, write_file,
};
use crate::common::headless::{headless_to_end, instance_entry};
use litehit_core::workload::WorkloadConfig;

#[test]
fn the_engine_slot_is_first_named_and_equals_query_at_its_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let requests = generate(
        WorkloadConfig {
            seed: 12,
            instance_ids: vec!["a".into(), "b".into()],
            block_size_tokens: 64,
            ..WorkloadConfig::default()
        },
        300,
    );
    let trace = write_file(dir.path(), "trace.jsonl", &standard_trace(&requests));
    // 37 × 16 tokens = 592 tokens: 9 blocks of 64; a typed slot smaller than it still
    // comes after it.
    let flags = [
        "--block-size",
        "64",
        "--gpu-blocks",
        "37",
        "--capacity-gb",
        "5b",
    ];
    let (lines, stderr) = headless_to_end(&trace, &flags);
    let last: &Value = lines.last().unwrap_or_else(|| panic!("no line: {stderr}"));
    assert_eq!(
        last["slots"][0],
        serde_json::json!({"name": "engine", "capacity_blocks": 9})
    );
    assert_eq!(last["slots"][1]["capacity_blocks"], 5);
    let out = dir.path().join("out");
    ok(replay_to(&trace, &out, &["--block-size", "64"]));
    let query = parse_query_output(
        &ok(run_in(
            None,
            [
                "query",
                out.join(FACTS).to_str().unwrap(),
                "-",
                "--summary-only",
                "--capacity-blocks",
                "9",
            ],
        ))
        .stdout,
    );
    for summary in &query.instance_summaries {
        let id = summary["instance_id"].as_str().unwrap();
        let result = &instance_entry(last, id)["slot_results"][0];
        assert_eq!(result["label"], "engine");
        assert_eq!(result["capacity_blocks"], 9);
        assert_eq!(
            result["hit_tokens"].as_u64().unwrap(),
            u64s(&summary["total_hit_tokens"])[0],
            "{id}"
        );
    }
}

/// A trace of lanes `a` and `b` (16-token blocks) and a config giving `a` 16-token blocks
/// of 1 KiB per token and `b` 48-token blocks of `b_bytes`.
fn mixed_lanes(dir: &std::path::Path, b_bytes: u64) -> (std::path::PathBuf, std::path::PathBuf) {
    let requests = generate(
        WorkloadConfig {
            seed: 5,
            instance_ids: vec!["a".into(), "b".into()],
            block_size_tokens: 16,
            ..WorkloadConfig::default()
        },
        300,
    );
    let trace = write_file(dir, "trace.jsonl", &standard_trace(&requests));
    let lanes = [
        InstanceSpec {
            instance_id: "a",
            block_size: 16,
            block_bytes: 16 * 1024,
        },
        InstanceSpec {
            instance_id: "b",
            block_size: 48,
            block_bytes: b_bytes,
        },
    ];
    let out = dir.join("out");
    let text = config_json(
        trace.to_str().unwrap(),
        out.to_str().unwrap(),
        16,
        &lanes,
        "",
    );
    let config = write_file(dir, "config.json", &text);
    (trace, config)
}

/// `query`'s hit tokens of instance `id` at `blocks` blocks.
fn query_hit_tokens(facts: &std::path::Path, id: &str, blocks: u64) -> u64 {
    let blocks = blocks.to_string();
    let query = parse_query_output(
        &ok(run_in(
            None,
            [
                "query",
                facts.to_str().unwrap(),
                "-",
                "--summary-only",
                "--capacity-blocks",
                &blocks,
            ],
        ))
        .stdout,
    );
    let summary = query
        .instance_summaries
        .iter()
        .find(|summary| summary["instance_id"] == id)
        .unwrap();
    u64s(&summary["total_hit_tokens"])[0]
}

/// A config's lanes of different block sizes each hold their own ⌊N × T / block size⌋ blocks
/// of `--gpu-blocks` (one slot, the pool's KV bytes at the lanes' common bytes per token),
/// with the hits `query` gives each lane at its count.
#[test]
fn lanes_of_different_block_sizes_each_hold_their_share_of_the_engine_pool() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, config) = mixed_lanes(dir.path(), 48 * 1024);
    // 41 × 16 tokens = 656 tokens: 41 blocks of 16, 13 of 48.
    let flags = ["--config", config.to_str().unwrap(), "--gpu-blocks", "41"];
    let (lines, stderr) = headless_to_end(&trace, &flags);
    let last: &Value = lines.last().unwrap_or_else(|| panic!("no line: {stderr}"));
    assert_eq!(last["slots"][0]["name"], "engine");
    ok(run_in(
        None,
        ["replay", config.to_str().unwrap(), "--quiet"],
    ));
    let facts = dir.path().join("out").join(FACTS);
    for (id, blocks) in [("a", 41), ("b", 13)] {
        let result = &instance_entry(last, id)["slot_results"][0];
        assert_eq!(result["label"], "engine", "{id}");
        assert_eq!(result["capacity_blocks"], blocks, "{id}");
        assert_eq!(
            result["hit_tokens"].as_u64().unwrap(),
            query_hit_tokens(&facts, id, blocks),
            "{id}"
        );
    }
}

/// Lanes of different KV bytes per token have no one slot for `--gpu-blocks`: refused at
/// start, naming `--gpu-memory`, whose bytes are each lane's ⌊SIZE / block bytes⌋.
#[test]
fn lanes_of_different_bytes_per_token_refuse_gpu_blocks_and_take_gpu_memory() {
    let dir = tempfile::tempdir().unwrap();
    let (trace, config) = mixed_lanes(dir.path(), 48 * 2048);
    let run = run_in(
        None,
        [
            "watch",
            trace.to_str().unwrap(),
            "--headless",
            "--exit-at-eof",
            "--config",
            config.to_str().unwrap(),
            "--gpu-blocks",
            "41",
        ],
    );
    let message = failed(&run);
    assert!(
        message.contains("16-token blocks of 16384 B, 48-token blocks of 98304 B")
            && message.contains("--gpu-memory"),
        "{message}"
    );
    let flags = ["--config", config.to_str().unwrap(), "--gpu-memory", "1MiB"];
    let (lines, stderr) = headless_to_end(&trace, &flags);
    let last: &Value = lines.last().unwrap_or_else(|| panic!("no line: {stderr}"));
    assert_eq!(
        instance_entry(last, "a")["slot_results"][0]["capacity_blocks"],
        64
    );
    assert_eq!(
        instance_entry(last, "b")["slot_results"][0]["capacity_blocks"],
        10
    );
}
