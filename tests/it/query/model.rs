//! `query`/`mrc --model` (issue 31 §1): every facts row's block bytes become the model's KV
//! bytes per token × its block size, so facts replayed with any size answer for the model —
//! as if replayed with `--model` — and a note, the mrc table, its JSON and its plot say so.

use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::cli_bin::{
    FACTS, FACTS_HEADER, failed, generate, ok, replay_to, run_in, standard_trace, write_file,
};
use litehit_core::workload::WorkloadConfig;

/// Not the default KV size (128 KiB/token), so the override shows.
const MODEL: &str = "Qwen/Qwen3-8B";
/// Qwen3 8B in bf16: 36 layers × 2 × 8 KV heads × 128 × 2 bytes.
const MODEL_KV_BYTES_PER_TOKEN: u64 = 36 * 2 * 8 * 128 * 2;
const BLOCK_SIZE_TOKENS: u64 = 16;

/// Facts of one trace replayed twice: with the default KV size, and with `--model`.
fn facts_pair(dir: &Path) -> (PathBuf, PathBuf) {
    let requests = generate(
        WorkloadConfig {
            seed: 7,
            instance_ids: vec!["a".into(), "b".into()],
            block_size_tokens: BLOCK_SIZE_TOKENS,
            ..WorkloadConfig::default()
        },
        300,
    );
    let trace = write_file(dir, "trace.jsonl", &standard_trace(&requests));
    let plain = dir.join("plain");
    let modelled = dir.join("modelled");
    ok(replay_to(&trace, &plain, &["--pool", "--block-size", "16"]));
    ok(replay_to(
        &trace,
        &modelled,
        &["--pool", "--block-size", "16", "--model", MODEL],
    ));
    (plain.join(FACTS), modelled.join(FACTS))
}

fn arg(path: &Path) -> &str {
    path.to_str().unwrap()
}

#[test]
fn query_with_a_model_equals_a_replay_with_it() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, modelled) = facts_pair(dir.path());
    let capacities = ["0.015625", "0.0625", "0.25", "-1"];
    let query = |facts: &Path, extra: &[&str]| {
        let mut args = vec!["query", arg(facts), "-"];
        args.extend(capacities);
        args.extend(extra);
        ok(run_in(None, &args))
    };
    let overridden = query(&plain, &["--model", MODEL]);
    let replayed = query(&modelled, &[]);
    assert!(overridden.stdout == replayed.stdout, "the rows differ");
    // Without the flag the facts' own (smaller) block bytes give other answers.
    assert!(query(&plain, &[]).stdout != replayed.stdout);
    assert!(
        overridden.stderr.contains(&format!(
            "--model {MODEL}: every facts row's block_bytes is taken as \
             {MODEL_KV_BYTES_PER_TOKEN} B/token"
        )),
        "{}",
        overridden.stderr
    );
    // The windows and the first pass read the rows the same way.
    let windows = |facts: &Path, extra: &[&str]| {
        let mut args = vec!["query", arg(facts), "-", "0.0625", "--window", "1s"];
        args.extend(extra);
        ok(run_in(None, &args)).stdout
    };
    assert!(windows(&plain, &["--model", MODEL]) == windows(&modelled, &[]));
}

#[test]
fn a_gb_slot_under_a_model_is_the_block_count_of_its_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, _) = facts_pair(dir.path());
    // 2^-k GB are whole bytes; the oracle's floor division of them by the model's block.
    let block_bytes = MODEL_KV_BYTES_PER_TOKEN * BLOCK_SIZE_TOKENS;
    for (gb, bytes) in [
        ("0.015625", 1_u64 << 24),
        ("0.0625", 1 << 26),
        ("0.25", 1 << 28),
    ] {
        let blocks = (bytes / block_bytes).to_string();
        let by_gb = ok(run_in(
            None,
            [
                "query",
                arg(&plain),
                "-",
                gb,
                "--summary-only",
                "--model",
                MODEL,
            ],
        ));
        let by_blocks = ok(run_in(
            None,
            [
                "query",
                arg(&plain),
                "-",
                "--summary-only",
                "--capacity-blocks",
                &blocks,
            ],
        ));
        let hits = |text: &str| -> Vec<Value> {
            text.lines()
                .map(|line| {
                    let value: Value = serde_json::from_str(line).unwrap();
                    value["total_hit_tokens"].clone()
                })
                .collect()
        };
        assert_eq!(hits(&by_gb.stdout), hits(&by_blocks.stdout), "{gb} GB");
    }
}

#[test]
fn mrc_with_a_model_equals_a_replay_with_it_and_names_the_model() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, modelled) = facts_pair(dir.path());
    let json = |facts: &Path, extra: &[&str]| -> Value {
        let mut args = vec!["mrc", arg(facts), "--json"];
        args.extend(extra);
        serde_json::from_str(&ok(run_in(None, &args)).stdout).unwrap()
    };
    let mut overridden = json(&plain, &["--model", MODEL]);
    let model = overridden.as_object_mut().unwrap().remove("model").unwrap();
    assert_eq!(model["name"], MODEL);
    assert_eq!(model["kv_bytes_per_token"], MODEL_KV_BYTES_PER_TOKEN);
    assert_eq!(overridden, json(&modelled, &[]));
    let table = ok(run_in(None, ["mrc", arg(&plain), "--model", MODEL]));
    assert!(
        table.stdout.starts_with(&format!("model: {MODEL}: ")),
        "{}",
        table.stdout
    );
    assert!(table.stderr.contains("every facts row's block_bytes"));
    let svg = dir.path().join("mrc.svg");
    ok(run_in(
        None,
        ["mrc", arg(&plain), "--model", MODEL, "--svg", arg(&svg)],
    ));
    assert!(
        std::fs::read_to_string(&svg)
            .unwrap()
            .contains(&format!("model {MODEL}"))
    );
}

#[test]
fn a_model_block_past_u64_names_the_row() {
    let dir = tempfile::tempdir().unwrap();
    let facts = write_file(
        dir.path(),
        "facts.csv",
        &format!(
            "{FACTS_HEADER}\nr1,i,1,16,16,64,[]\nr2,i,2,0,{},64,[]\n",
            1_u64 << 60
        ),
    );
    let run = run_in(None, ["query", arg(&facts), "-", "1", "--model", MODEL]);
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    let message = run.stderr.lines().last().unwrap();
    assert!(
        message.contains("facts.csv: facts line 3: block_size_tokens"),
        "{message}"
    );
    assert!(message.contains("past 2^64 - 1"), "{message}");
}

#[test]
fn a_kv_cache_dtype_without_a_model_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (plain, _) = facts_pair(dir.path());
    for command in ["query", "mrc"] {
        let mut args = vec![command, arg(&plain)];
        if command == "query" {
            args.extend(["-", "1"]);
        }
        args.extend(["--kv-cache-dtype", "fp8"]);
        let run = run_in(None, &args);
        assert!(failed(&run).contains("give --model"), "{}", run.stderr);
    }
}
