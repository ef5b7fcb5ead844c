//! `watch --quota-total` (issue 30): the live best split of one cache among the tenant lanes.
//! At the end of the input the headless JSON's `quota` is exactly the line `query
//! --quota-total` writes from the facts `watch --facts-out` wrote (the same planner, the same
//! curves); a floor for a tenant not seen says why there is no split; without the flag
//! there is no `quota`.

use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::common::cli_bin::{ok, run_in, write_file};
use crate::common::headless::headless_to_end;

/// Three tenants on one instance: two with conversations re-sending a growing history (hot
/// prefixes), one with one-off prompts that push them out of a shared LRU.
fn tenant_trace() -> String {
    let mut text = String::new();
    let mut state: u64 = 30;
    let mut next = || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1);
        state >> 33
    };
    for index in 0..900_u64 {
        let (tenant, keys): (&str, Vec<u64>) = match next() % 5 {
            0 | 1 => {
                let conversation = next() % 6;
                let turn = next() % 12;
                (
                    "team-a",
                    (0..4 + turn * 2)
                        .map(|k| 1_000 * conversation + k)
                        .collect(),
                )
            }
            2 | 3 => {
                let conversation = next() % 3;
                let turn = next() % 20;
                (
                    "team-b",
                    (0..2 + turn)
                        .map(|k| 100_000 + 1_000 * conversation + k)
                        .collect(),
                )
            }
            _ => (
                "batch",
                (0..6).map(|k| 10_000_000 + index * 10 + k).collect(),
            ),
        };
        let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
        writeln!(
            text,
            r#"{{"type":"get","instance_id":"i","tenant":"{tenant}","trace_id":"t{index}","timestamp_ns":{},"keys":[{}],"input_len":{}}}"#,
            index + 1,
            keys.join(","),
            4 * keys.len() + 1
        )
        .unwrap();
    }
    text
}

const LANE_FLAGS: [&str; 7] = [
    "--block-size",
    "4",
    "--block-bytes",
    "64",
    "--lane-by",
    "tenant",
    "--pool",
];

/// `query FACTS quota.jsonl QUOTA_FLAGS`'s one line.
fn query_plan(dir: &Path, facts: &Path, quota_flags: &[&str]) -> Value {
    let line = dir.join("quota.jsonl");
    let mut args = vec![
        "query".to_owned(),
        facts.display().to_string(),
        line.display().to_string(),
    ];
    args.extend(quota_flags.iter().map(|&flag| flag.to_owned()));
    ok(run_in(None, &args));
    serde_json::from_str(std::fs::read_to_string(&line).unwrap().trim_end()).unwrap()
}

#[test]
fn the_live_plan_at_eof_is_query_quota_total_on_the_facts_watch_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &tenant_trace());
    let facts = dir.path().join("live").join("f.csv");
    for quota_flags in [
        &["--quota-total", "150b", "--quota-floor", "batch=20b"][..],
        &["--quota-total", "0.000008", "--quota-step", "5b"][..], // 8 kB: 125 blocks
    ] {
        let mut flags: Vec<&str> = LANE_FLAGS.to_vec();
        flags.extend(quota_flags);
        let facts_flag = facts.display().to_string();
        flags.extend(["--facts-out", &facts_flag]);
        let (lines, stderr) = headless_to_end(&trace, &flags);
        let live = &lines.last().unwrap()["quota"];
        assert!(live.is_object(), "{quota_flags:?}: {live}\n{stderr}");
        let offline = query_plan(dir.path(), &facts, quota_flags);
        assert_eq!(live, &offline, "{quota_flags:?}");
        // A real plan: every tenant, the pool beside them, a signed isolation cost.
        assert_eq!(live["tenants"].as_array().unwrap().len(), 3, "{live}");
        assert!(live["pooled_hit_rate"].is_f64(), "{live}");
        assert!(live["isolation_cost_tokens"].is_i64(), "{live}");
    }
}

#[test]
fn a_floor_for_an_unseen_tenant_says_why_and_no_flag_means_no_plan() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &tenant_trace());
    let mut flags: Vec<&str> = LANE_FLAGS.to_vec();
    flags.extend(["--quota-total", "600b", "--quota-floor", "nobody=10b"]);
    let (lines, _) = headless_to_end(&trace, &flags);
    let error = lines.last().unwrap()["quota"]["error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        error.contains("nobody") && error.contains("no such lane"),
        "{error}"
    );
    let (lines, _) = headless_to_end(&trace, &LANE_FLAGS);
    assert!(lines.last().unwrap().get("quota").is_none());
}
