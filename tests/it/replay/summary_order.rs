//! The replay summary lists the instances in the order `query`'s summary does (byte order
//! of `instance_id`), not in the order the trace first named them; the shared pool stays
//! last. `query`'s JSONL is upstream-compatible bytes and is the reference here.

use std::fmt::Write as _;

use crate::common::cli_bin::{ok, replay_to, run_in, write_file};
use serde_json::Value;

/// First seen `zeta`, then `alpha`, then `Beta`: byte order is `Beta`, `alpha`, `zeta`.
const FIRST_SEEN: [&str; 3] = ["zeta", "alpha", "Beta"];

fn trace_text() -> String {
    let mut text = String::new();
    for i in 0..30_usize {
        let instance = FIRST_SEEN[i % 3];
        let keys: Vec<String> = (0..=(i % 4))
            .map(|depth| (depth * 10).to_string())
            .collect();
        let _ = writeln!(
            text,
            "{{\"type\":\"get\",\"instance_id\":\"{instance}\",\"trace_id\":\"r{i}\",\
             \"timestamp_ns\":{},\"keys\":[{}],\"input_len\":{}}}",
            (i + 1) * 1000,
            keys.join(","),
            keys.len() * 256 + 7
        );
    }
    text
}

/// The instance ids of the summary table's rows, top to bottom (header and `total` left out).
fn summary_rows(stderr: &str) -> Vec<String> {
    stderr
        .lines()
        .skip(1)
        .take_while(|line| !line.starts_with("blocks:"))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|id| *id != "total")
        .map(str::to_owned)
        .collect()
}

#[test]
fn replay_summary_lists_instances_in_query_order() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &trace_text());
    let out = dir.path().join("out");
    let replay = ok(replay_to(&trace, &out, &[]));
    let facts = out.join("litehit_facts.csv");
    let query = ok(run_in(
        None,
        ["query", facts.to_str().unwrap(), "-", "--summary-only", "1"],
    ));
    let query_order: Vec<String> = query
        .stdout
        .lines()
        .filter_map(|line| serde_json::from_str::<Value>(line).ok())
        .filter_map(|value| value["instance_id"].as_str().map(str::to_owned))
        .collect();
    assert_eq!(query_order, ["Beta", "alpha", "zeta"], "{}", query.stdout);
    assert_eq!(
        summary_rows(&replay.stderr),
        query_order,
        "{}",
        replay.stderr
    );
}
