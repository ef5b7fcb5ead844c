//! `watch --ttl-seconds` with rows in time order per instance but interleaved across
//! instances (one sidecar per engine, docs/SIDECAR.md): each instance expires on its own
//! clock, so its facts equal `replay`'s of the time-sorted rows; the pool lane, fed by every
//! instance, says its TTL figures are approximate when rows were not in global time order
//! ([#27](https://github.com/litehit/litehit/issues/27), Medium 1).

use std::fmt::Write as _;

use crate::common::cli_bin::{FactsLine, generate, read_facts, replay_to, write_file};
use crate::common::headless::{headless_to_end, instance_entry};
use litehit_core::workload::{SyntheticRequest, WorkloadConfig};

/// Rows of `requests` as standard JSON lines.
fn jsonl(requests: &[&SyntheticRequest]) -> String {
    let mut text = String::new();
    for request in requests {
        request.to_standard_jsonl(&mut text);
    }
    text
}

/// Sorted, for comparing two runs' rows whatever their order.
fn sorted(mut rows: Vec<FactsLine>, instance_id: &str) -> Vec<(String, i64, String)> {
    rows.retain(|row| row.instance_id == instance_id);
    let mut rows: Vec<(String, i64, String)> = rows
        .into_iter()
        .map(|row| (row.trace_id, row.timestamp_ns, row.hit_curve))
        .collect();
    rows.sort();
    rows
}

#[test]
fn interleaved_instances_expire_on_their_own_clocks() {
    let dir = tempfile::tempdir().unwrap();
    let config = WorkloadConfig {
        instance_ids: vec!["a".to_owned(), "b".to_owned()],
        // 50 ms apart on average: 1,500 rows span about 75 s, TTL 2 s.
        mean_interarrival_ns: 50_000_000,
        ..WorkloadConfig::default()
    };
    let requests = generate(config, 1500);
    let sorted_trace = write_file(
        dir.path(),
        "sorted.jsonl",
        &jsonl(&requests.iter().collect::<Vec<_>>()),
    );
    // Each instance's rows in its own time order, 100 at a time in turn: globally out of order.
    let of = |id: &str| -> Vec<&SyntheticRequest> {
        requests.iter().filter(|r| r.instance_id == id).collect()
    };
    let (a, b) = (of("a"), of("b"));
    assert!(a.len() > 300 && b.len() > 300, "{} {}", a.len(), b.len());
    let mut interleaved = String::new();
    for (chunk_a, chunk_b) in a.chunks(100).zip(b.chunks(100)) {
        let _ = write!(interleaved, "{}{}", jsonl(chunk_b), jsonl(chunk_a));
    }
    let rows = a.len().min(b.len()).div_ceil(100) * 100;
    let interleaved_trace = write_file(dir.path(), "interleaved.jsonl", &interleaved);

    let flags = ["--block-size", "16", "--ttl-seconds", "2"];
    let facts = dir.path().join("watch.csv");
    let facts_arg = facts.display().to_string();
    let mut watch_flags = vec!["--pool", "--facts-out", &facts_arg];
    watch_flags.extend(flags);
    let (lines, stderr) = headless_to_end(&interleaved_trace, &watch_flags);
    let last = lines.last().unwrap_or_else(|| panic!("no line: {stderr}"));
    let out = dir.path().join("replayed");
    let replayed = replay_to(&sorted_trace, &out, &[&["--quiet"][..], &flags].concat());
    assert_eq!(replayed.code, Some(0), "{}", replayed.stderr);
    let replayed = read_facts(&out.join("litehit_facts.csv"));
    let watched = read_facts(&facts);
    for id in ["a", "b"] {
        let live = sorted(watched.clone(), id);
        let offline: Vec<_> = sorted(replayed.clone(), id)
            .into_iter()
            .filter(|(trace_id, ..)| live.iter().any(|row| &row.0 == trace_id))
            .collect();
        assert!(live.len() >= rows / 2, "{id}: {} rows", live.len());
        assert_eq!(
            live, offline,
            "instance {id}: the facts differ from replay's"
        );
        let entry = instance_entry(last, id);
        assert_eq!(entry["clamped_timestamps"], 0, "{entry}");
        assert_eq!(entry["ttl_approximate"], false);
    }
    let pool = instance_entry(last, "pool");
    assert!(pool["clamped_timestamps"].as_u64().unwrap() > 0, "{pool}");
    assert_eq!(pool["ttl_approximate"], true);
}
