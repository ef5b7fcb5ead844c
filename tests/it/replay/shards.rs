//! `replay --shard K/N`: N sharded replays read together give one unsharded replay's facts
//! (the same rows, grouped by shard) and `query` totals, on a multi-instance trace.

use std::path::{Path, PathBuf};

use crate::common::cli_bin::{
    FACTS, generate, ok, parse_query_output, read_facts, run_in, standard_trace,
};
use litehit_core::engine::shard::shard_of;
use litehit_core::workload::WorkloadConfig;

/// `replay TRACE --out OUT` (shard `K/N` if given): the facts file (also used by
/// `facts_globs`).
pub(crate) fn replay(trace: &Path, out: &Path, shard: Option<&str>) -> PathBuf {
    let mut args = vec![
        "replay".to_owned(),
        trace.display().to_string(),
        "--trace-block-size".to_owned(),
        "16".to_owned(),
        "--out".to_owned(),
        out.display().to_string(),
        "--quiet".to_owned(),
    ];
    if let Some(shard) = shard {
        args.extend(["--shard".to_owned(), shard.to_owned()]);
    }
    ok(run_in(None, &args));
    out.join(FACTS)
}

#[test]
fn sharded_replays_add_up_to_the_unsharded_one() {
    let dir = tempfile::tempdir().unwrap();
    let instance_ids: Vec<String> = (0..7).map(|i| format!("engine-{i}")).collect();
    let requests = generate(
        WorkloadConfig {
            seed: 11,
            instance_ids: instance_ids.clone(),
            live_conversations: 80,
            ..WorkloadConfig::default()
        },
        2000,
    );
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(&trace, standard_trace(&requests)).unwrap();
    let whole = replay(&trace, &dir.path().join("whole"), None);
    let shard_count = 3;
    let shards: Vec<PathBuf> = (0..shard_count)
        .map(|k| {
            replay(
                &trace,
                &dir.path().join(format!("shard{k}")),
                Some(&format!("{k}/{shard_count}")),
            )
        })
        .collect();

    // Every shard holds exactly its instances' rows, in the unsharded order.
    let whole_rows = read_facts(&whole);
    let mut nonempty = 0;
    for (k, shard) in shards.iter().enumerate() {
        let rows = read_facts(shard);
        let expected: Vec<_> = whole_rows
            .iter()
            .filter(|row| shard_of(&row.instance_id, shard_count) == k as u64)
            .cloned()
            .collect();
        assert_eq!(rows, expected, "shard {k}");
        nonempty += usize::from(!rows.is_empty());
    }
    assert!(nonempty >= 2, "the instances spread over several shards");

    let capacities = ["0.001", "0.01", "0.1", "-1"];
    let query = |files: &[&Path]| {
        let mut args = vec![
            "query".to_owned(),
            files[0].display().to_string(),
            "-".to_owned(),
            "--summary-only".to_owned(),
        ];
        for extra in &files[1..] {
            args.extend(["--shard".to_owned(), extra.display().to_string()]);
        }
        args.extend(capacities.iter().map(|c| (*c).to_owned()));
        ok(run_in(None, &args)).stdout
    };
    let unsharded = query(&[whole.as_path()]);
    let sharded_paths: Vec<&Path> = shards.iter().map(PathBuf::as_path).collect();
    let sharded = query(&sharded_paths);
    assert_eq!(sharded, unsharded, "summaries are byte for byte the same");
    let summary = parse_query_output(&unsharded);
    assert_eq!(summary.instance_summaries.len(), instance_ids.len());
    assert_eq!(summary.overall["requests"], requests.len());
}

#[test]
fn a_shard_must_be_k_of_n() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("t.jsonl");
    std::fs::write(&trace, "").unwrap();
    let run = run_in(
        None,
        [
            "replay",
            trace.to_str().unwrap(),
            "--out",
            dir.path().join("o").to_str().unwrap(),
            "--shard",
            "3/3",
        ],
    );
    assert_eq!(run.code, Some(1), "{}", run.stderr);
    assert!(
        run.stderr.contains("expected K/N with 0 ≤ K < N"),
        "{}",
        run.stderr
    );
}
