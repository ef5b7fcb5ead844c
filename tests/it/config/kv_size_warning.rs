//! The warning on an implausible KV size per token (issue 26), on every surface that shows
//! GB: `replay` and `query` (stderr), `mrc` (stderr and its table) and `watch --headless`
//! (`kv_size_warning` per instance). The rule is the core's; here, that each surface says it.

use crate::common::cli_bin::{FACTS, generate, ok, replay_to, run_in, standard_trace, write_file};
use crate::common::headless::headless_to_end;
use litehit_core::workload::WorkloadConfig;

const WARNING: &str = "implausible KV size: 1 KiB per token (16 KiB per 16-token block)";

/// A small generated trace of 16-token blocks.
fn trace(dir: &std::path::Path) -> std::path::PathBuf {
    let requests = generate(
        WorkloadConfig {
            seed: 26,
            block_size_tokens: 16,
            ..WorkloadConfig::default()
        },
        50,
    );
    write_file(dir, "trace.jsonl", &standard_trace(&requests))
}

#[test]
fn replay_query_and_mrc_warn_of_an_implausible_kv_size() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path());
    let out = dir.path().join("out");
    // 16 KiB per 16-token block: 1 KiB per token.
    let replay = ok(replay_to(
        &trace,
        &out,
        &["--block-size", "16", "--block-bytes", "16KiB", "--quiet"],
    ));
    assert_eq!(
        replay.stderr.matches(WARNING).count(),
        1,
        "{}",
        replay.stderr
    );
    let facts = out.join(FACTS);
    let facts = facts.to_str().unwrap();
    let query = ok(run_in(None, ["query", facts, "-", "10", "--summary-only"]));
    assert!(
        query
            .stderr
            .contains(&format!("litehit: warning: {WARNING}")),
        "{}",
        query.stderr
    );
    let mrc = ok(run_in(None, ["mrc", facts]));
    assert!(mrc.stderr.contains(WARNING), "{}", mrc.stderr);
    assert!(
        mrc.stdout.contains(&format!("warning: {WARNING}")),
        "{}",
        mrc.stdout
    );

    // A real model's size (Llama 3.1 8B in bf16): no warning anywhere.
    let plausible = dir.path().join("plausible");
    let replay = ok(replay_to(
        &trace,
        &plausible,
        &[
            "--block-size",
            "16",
            "--kv-bytes-per-token",
            "131072",
            "--quiet",
        ],
    ));
    assert!(!replay.stderr.contains("implausible"), "{}", replay.stderr);
    let facts = plausible.join(FACTS);
    let facts = facts.to_str().unwrap();
    let query = ok(run_in(None, ["query", facts, "-", "10", "--summary-only"]));
    assert!(!query.stderr.contains("implausible"), "{}", query.stderr);
    let mrc = ok(run_in(None, ["mrc", facts]));
    assert!(!mrc.stdout.contains("implausible"), "{}", mrc.stdout);
    assert!(!mrc.stderr.contains("implausible"), "{}", mrc.stderr);
}

/// Issue 26: `query --window` (whose first pass kept no row geometry) warns on stderr as the
/// plain query does, once; `mrc --json` carries the warnings in `kv_size_warnings` (left out
/// when there is none), the same text as the table's.
#[test]
fn query_window_and_mrc_json_warn_of_an_implausible_kv_size() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path());
    let out = dir.path().join("out");
    ok(replay_to(
        &trace,
        &out,
        &["--block-size", "16", "--block-bytes", "16KiB", "--quiet"],
    ));
    let facts = out.join(FACTS);
    let facts = facts.to_str().unwrap();
    let windows = ok(run_in(None, ["query", facts, "-", "10", "--window", "1s"]));
    assert!(!windows.stdout.is_empty());
    assert_eq!(
        windows
            .stderr
            .matches(&format!("litehit: warning: {WARNING}"))
            .count(),
        1,
        "{}",
        windows.stderr
    );
    let mrc = ok(run_in(None, ["mrc", facts, "--json"]));
    let report: serde_json::Value = serde_json::from_str(&mrc.stdout).unwrap();
    let warnings = report["kv_size_warnings"].as_array().expect("the field");
    assert_eq!(warnings.len(), 1, "{report}");
    assert_eq!(warnings[0]["block_bytes"], 16 * 1024);
    assert_eq!(warnings[0]["block_size_tokens"], 16);
    assert_eq!(warnings[0]["kv_bytes_per_token"], 1024.0);
    let message = warnings[0]["message"].as_str().unwrap();
    assert!(message.starts_with(WARNING), "{message}");
    let table = ok(run_in(None, ["mrc", facts])).stdout;
    assert!(table.contains(&format!("warning: {message}")), "{table}");

    // A real model's size: neither warns, and the JSON has no such field.
    let plausible = dir.path().join("plausible");
    ok(replay_to(
        &trace,
        &plausible,
        &[
            "--block-size",
            "16",
            "--kv-bytes-per-token",
            "131072",
            "--quiet",
        ],
    ));
    let facts = plausible.join(FACTS);
    let facts = facts.to_str().unwrap();
    let windows = ok(run_in(None, ["query", facts, "-", "10", "--window", "1s"]));
    assert!(
        !windows.stderr.contains("implausible"),
        "{}",
        windows.stderr
    );
    let mrc = ok(run_in(None, ["mrc", facts, "--json"]));
    let report: serde_json::Value = serde_json::from_str(&mrc.stdout).unwrap();
    assert!(report.get("kv_size_warnings").is_none(), "{report}");
}

#[test]
fn headless_instances_carry_the_warning() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path());
    let (lines, _) = headless_to_end(&trace, &["--block-size", "16", "--block-bytes", "16KiB"]);
    let last = lines.last().expect("a report line");
    let instances = last["instances"].as_array().unwrap();
    assert!(!instances.is_empty(), "{last}");
    for instance in instances {
        let warning = instance["kv_size_warning"].as_str().unwrap_or_default();
        assert!(warning.starts_with(WARNING), "{instance}");
    }
    let (lines, _) = headless_to_end(&trace, &["--block-size", "16"]);
    let last = lines.last().expect("a report line");
    for instance in last["instances"].as_array().unwrap() {
        assert!(instance.get("kv_size_warning").is_none(), "{instance}");
    }
}
