//! `--gpu-blocks N --gpu-block-size T` and `--gpu-memory SIZE` (issue 31 §1): the engine's own
//! pool as a slot named `engine`. The replay summary's LRU rate at it equals `query` at the
//! block count the test computes by hand (⌊N × T / block size⌋, or ⌊SIZE / block bytes⌋).

use std::path::Path;

use serde_json::Value;

use crate::common::cli_bin::{FACTS, generate, ok, replay_to, run_in, standard_trace, write_file};
use litehit_core::workload::WorkloadConfig;

const BLOCK_SIZE_TOKENS: u64 = 64;

fn trace(dir: &Path) -> std::path::PathBuf {
    let requests = generate(
        WorkloadConfig {
            seed: 11,
            instance_ids: vec!["a".into(), "b".into()],
            block_size_tokens: BLOCK_SIZE_TOKENS,
            ..WorkloadConfig::default()
        },
        300,
    );
    write_file(dir, "trace.jsonl", &standard_trace(&requests))
}

/// Per instance, then overall: `query`'s hit rate at `--capacity-blocks blocks`, as the
/// summary prints a rate (`12.34%`).
fn query_rates(facts: &Path, blocks: u64) -> Vec<(String, String)> {
    let run = ok(run_in(
        None,
        [
            "query",
            facts.to_str().unwrap(),
            "-",
            "--summary-only",
            "--capacity-blocks",
            &blocks.to_string(),
        ],
    ));
    run.stdout
        .lines()
        .map(|line| {
            let summary: Value = serde_json::from_str(line).unwrap();
            let id = summary["instance_id"]
                .as_str()
                .unwrap_or("total")
                .to_owned();
            let rate = summary["hit_rates"][0].as_f64().unwrap();
            (id, format!("{:.2}%", rate * 100.0))
        })
        .collect()
}

/// The summary's engine table: instance → (engine blocks, LRU engine rate).
fn engine_table(stderr: &str) -> Vec<(String, String, String)> {
    let start = stderr
        .lines()
        .position(|line| line.starts_with("instance") && line.contains("engine blocks"))
        .unwrap_or_else(|| panic!("no engine table in:\n{stderr}"));
    stderr
        .lines()
        .skip(start + 1)
        .take_while(|line| !line.is_empty())
        .map(|line| {
            let cells: Vec<&str> = line.split_whitespace().collect();
            (
                cells[0].to_owned(),
                cells[1].to_owned(),
                cells[2].to_owned(),
            )
        })
        .collect()
}

#[test]
fn the_engine_slot_of_gpu_blocks_is_their_tokens_in_analysis_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path());
    let out = dir.path().join("out");
    // 37 engine blocks of 16 tokens: 592 tokens, 9.25 analysis blocks of 64: 9.
    let run = ok(replay_to(
        &trace,
        &out,
        &["--block-size", "64", "--gpu-blocks", "37"],
    ));
    assert!(
        run.stderr
            .contains("engine slot: 37 × 16-token blocks (592 tokens)"),
        "{}",
        run.stderr
    );
    let table = engine_table(&run.stderr);
    let expected = query_rates(&out.join(FACTS), 592 / BLOCK_SIZE_TOKENS);
    assert_eq!(table.len(), expected.len());
    for ((id, blocks, rate), (query_id, query_rate)) in table.iter().zip(&expected) {
        assert_eq!(id, query_id);
        assert_eq!(rate, query_rate, "{id}");
        let per_instance = if id == "total" { 18 } else { 9 };
        assert_eq!(blocks, &per_instance.to_string());
    }
    // Another engine block size: 37 × 64 tokens = 37 analysis blocks.
    let run = ok(replay_to(
        &trace,
        &out,
        &[
            "--block-size",
            "64",
            "--gpu-blocks",
            "37",
            "--gpu-block-size",
            "64",
        ],
    ));
    let table = engine_table(&run.stderr);
    assert_eq!(table[0].1, "37");
    assert_eq!(table[0].2, query_rates(&out.join(FACTS), 37)[0].1);
}

#[test]
fn the_engine_slot_of_gpu_memory_is_its_bytes_in_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path());
    let out = dir.path().join("out");
    // 64-token blocks of 1 KiB per token: 64 KiB each; 1 MiB + 1 byte holds 16 of them.
    let run = ok(replay_to(
        &trace,
        &out,
        &[
            "--block-size",
            "64",
            "--kv-bytes-per-token",
            "1KiB",
            "--gpu-memory",
            "1048577",
        ],
    ));
    let table = engine_table(&run.stderr);
    assert_eq!(table[0].1, "16");
    let expected = query_rates(&out.join(FACTS), 16);
    for ((id, _, rate), (query_id, query_rate)) in table.iter().zip(&expected) {
        assert_eq!((id, rate), (query_id, query_rate));
    }
}

#[test]
fn gpu_blocks_and_gpu_memory_exclude_each_other() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path());
    let run = replay_to(
        &trace,
        &dir.path().join("out"),
        &["--gpu-blocks", "10", "--gpu-memory", "1GiB"],
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("--gpu-memory"), "{}", run.stderr);
    let run = replay_to(&trace, &dir.path().join("out"), &["--gpu-block-size", "16"]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(run.stderr.contains("--gpu-blocks"), "{}", run.stderr);
}

/// The shared pool lane (`--pool`) is no engine's: its rows stay out of the engine table,
/// whose total is the instances' as without it.
#[test]
fn the_pool_lane_is_left_out_of_the_engine_table() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path());
    let flags = ["--block-size", "64", "--gpu-blocks", "37"];
    let without = ok(replay_to(&trace, &dir.path().join("a"), &flags));
    let mut pooled = flags.to_vec();
    pooled.push("--pool");
    let with = ok(replay_to(&trace, &dir.path().join("b"), &pooled));
    assert_eq!(engine_table(&with.stderr), engine_table(&without.stderr));
}
