//! `query` and `mrc` expand FACTS globs themselves (`'shards/*/litehit_facts.csv'`, quoted so
//! the shell passes it on): the shards of a `replay --shard K/N` run read through one glob
//! give the unsharded replay's totals; a glob that matches nothing is an error.

use std::path::{Path, PathBuf};

use crate::common::cli_bin::{FACTS, generate, ok, run_in, standard_trace};
use crate::replay::shards::replay;
use litehit_core::workload::WorkloadConfig;
use serde_json::Value;

/// A 6-instance trace replayed whole and as 3 shards under `shards/K/`.
fn sharded_run(dir: &Path) -> PathBuf {
    let requests = generate(
        WorkloadConfig {
            seed: 5,
            instance_ids: (0..6).map(|i| format!("engine-{i}")).collect(),
            live_conversations: 60,
            ..WorkloadConfig::default()
        },
        1500,
    );
    let trace = dir.join("trace.jsonl");
    std::fs::write(&trace, standard_trace(&requests)).unwrap();
    for k in 0..3 {
        replay(
            &trace,
            &dir.join("shards").join(k.to_string()),
            Some(&format!("{k}/3")),
        );
    }
    replay(&trace, &dir.join("whole"), None)
}

fn query(facts: &str) -> String {
    ok(run_in(
        None,
        [
            "query",
            facts,
            "-",
            "--summary-only",
            "0.001",
            "0.01",
            "-1",
            "--tiers",
            "0.002,0.01",
        ],
    ))
    .stdout
}

#[test]
fn a_glob_of_shards_gives_the_unsharded_totals() {
    let dir = tempfile::tempdir().unwrap();
    let whole = sharded_run(dir.path());
    let unsharded = query(whole.to_str().unwrap());
    let root = dir.path().display();
    for pattern in [
        format!("{root}/shards/*/{FACTS}"),
        // A matched directory means its facts file.
        format!("{root}/shards/[0-2]"),
    ] {
        assert_eq!(query(&pattern), unsharded, "{pattern}");
    }
    // One shard alone is not the whole: the comparison can fail.
    assert_ne!(query(&format!("{root}/shards/0/{FACTS}")), unsharded);

    let mrc = |facts: &str| -> Value {
        serde_json::from_str(&ok(run_in(None, ["mrc", facts, "--json"])).stdout).unwrap()
    };
    let whole_report = mrc(whole.to_str().unwrap());
    let sharded_report = mrc(&format!("{root}/shards/*/{FACTS}"));
    assert_eq!(sharded_report["total"], whole_report["total"]);
    assert_eq!(sharded_report["instances"], whole_report["instances"]);
}

#[test]
fn a_glob_that_matches_nothing_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let pattern = format!("{}/nowhere/*/{FACTS}", dir.path().display());
    for args in [vec!["query", &pattern, "-", "1"], vec!["mrc", &pattern]] {
        let run = run_in(None, &args);
        assert_eq!(run.code, Some(1), "{args:?}");
        assert!(
            run.stderr.contains("the glob matches no file"),
            "{args:?}: {}",
            run.stderr
        );
    }
}
