//! How `query` reads its capacity arguments: list flags take every value up to the next flag,
//! and every negative capacity is unlimited (issue 26).

use std::path::Path;

use serde_json::Value;

use crate::common::cli_bin::{
    FACTS, assert_mentions, failed, generate, ok, parse_query_output, run_in, run_ok,
    standard_trace, u64s, write_file,
};
use crate::common::oracle::OracleBank;
use crate::common::shared_file;

use super::{block_flags, multi_instance_workload, path_str, replay_flags, tempdir};

/// The overall summary line of `query FACTS - ARGS --summary-only`.
fn overall(facts: &Path, args: &[&str]) -> Value {
    let mut all = vec!["query", path_str(facts), "-"];
    all.extend_from_slice(args);
    all.push("--summary-only");
    parse_query_output(&run_ok(all).stdout).overall
}

/// A replayed generated trace: its facts file and the directory that holds it.
fn generated_facts() -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = tempdir();
    let requests = generate(multi_instance_workload(26), 300);
    let trace = write_file(dir.path(), "trace.jsonl", &standard_trace(&requests));
    let out = dir.path().join("out");
    let flags = block_flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    ok(replay_flags(&trace, &out, &flags));
    (dir, out.join(FACTS))
}

/// Issue 26: `--capacity-blocks 10 100 500` read 100 and 500 as GB slots, listed first.
#[test]
fn capacity_blocks_takes_every_value_up_to_the_next_flag() {
    let (_dir, facts) = generated_facts();
    let spaced = overall(&facts, &["--capacity-blocks", "1", "50b", "1000"]);
    let commas = overall(&facts, &["--capacity-blocks", "1,50,1000"]);
    assert_eq!(spaced, commas);
    assert_eq!(spaced["capacity_gb"], serde_json::json!([]));
    assert_eq!(u64s(&spaced["capacity_blocks"]), [1, 50, 1000]);
    // GB capacities before the flag (or after another flag) stay GB slots, listed first.
    let mixed = overall(&facts, &["2", "--capacity-blocks", "1", "50"]);
    assert_eq!(mixed["capacity_gb"], serde_json::json!([2]));
    assert_eq!(u64s(&mixed["capacity_blocks"]), [1, 50]);
    let text = run_ok([
        "query",
        path_str(&facts),
        "-",
        "--capacity-blocks",
        "1",
        "50",
        "--summary-only",
        "2",
    ])
    .stdout;
    assert_eq!(parse_query_output(&text).overall, mixed);
    // A GB capacity typed after the flag is refused, naming it, never read as GB.
    for after in ["40GB", "0.5", "-1", "inf"] {
        let run = run_in(
            None,
            [
                "query",
                path_str(&facts),
                "-",
                "--capacity-blocks",
                "10",
                after,
            ],
        );
        // A command-line error: clap's own words, exit 1.
        assert_eq!(run.code, Some(1), "{after}: {}", run.stdout);
        assert_mentions(
            &run.stderr,
            &[after, "--capacity-blocks", "type GB capacities before"],
        );
    }
}

/// Issue 26: a negative value after `--capacity-blocks` was echoed as `' -1'` (the space
/// that hides negative capacities from clap); the refusal shows exactly what was typed,
/// `-inf` and `-.5` (which clap would take for flags) included.
#[test]
fn a_refused_negative_block_slot_is_echoed_as_typed() {
    let dir = tempdir();
    let facts = write_file(
        dir.path(),
        "facts.csv",
        &format!("{}\n", litehit_core::facts::file::FACTS_HEADER),
    );
    for typed in ["-1", "-inf", "-.5", "-1e-9"] {
        let run = run_in(
            None,
            [
                "query",
                path_str(&facts),
                "-",
                "--capacity-blocks",
                "10",
                typed,
            ],
        );
        assert_eq!(run.code, Some(1), "{typed}: {}", run.stdout);
        let first = run.stderr.lines().next().unwrap_or_default();
        assert_eq!(
            first,
            format!(
                "error: invalid value '{typed}' for '--capacity-blocks <N>...': \"{typed}\": \
                 expected a whole number of blocks, e.g. 1000 or 1000b (every value up to the \
                 next flag is a block count: type GB capacities before --capacity-blocks)"
            ),
            "{typed}"
        );
        assert!(
            !run.stderr.contains(&format!(" {typed}'")),
            "{}",
            run.stderr
        );
    }
    // After the block list ends (another flag), a negative capacity is a GB slot again.
    let run = run_ok([
        "query",
        path_str(&facts),
        "-",
        "--capacity-blocks",
        "10",
        "--summary-only",
        "-1",
    ]);
    assert!(
        run.stdout.contains(r#""capacity_gb":[-1]"#),
        "{}",
        run.stdout
    );
}

/// Issue 26: upstream's `strtod` reads `-1e400` as −∞, an unlimited slot; so does `-inf`.
#[test]
fn an_overflowing_negative_capacity_is_unlimited() {
    let (_dir, facts) = generated_facts();
    let summary = |spelling: &str| {
        run_ok(["query", path_str(&facts), "-", "--summary-only", spelling]).stdout
    };
    let unlimited = summary("-inf");
    // strtod's value is echoed, as upstream prints it (not JSON, as upstream's is not).
    assert!(unlimited.contains(r#""capacity_gb":[-inf]"#), "{unlimited}");
    assert_eq!(summary("-1e400"), unlimited);
    assert_eq!(summary("-1e999GB"), unlimited);
    let minus_one = parse_query_output(&summary("-1")).overall;
    let as_json = parse_query_output(&unlimited.replace("-inf", "-1")).overall;
    assert_eq!(as_json, minus_one);
    let run = run_in(None, ["query", path_str(&facts), "-", "1e400"]);
    assert_mentions(failed(&run), &["invalid capacity_gb: 1e400"]);
}

/// The issue's own case: the KVCM event log, `--capacity-blocks 10 100 500 1000`, each slot
/// checked against the naive LRU oracle over the log's keys.
#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn kvcm_log_block_slots_are_read_as_typed() {
    let log = shared_file("traces/event_publisher.log");
    let dir = tempdir();
    let out = dir.path().join("out");
    ok(replay_flags(&log, &out, &[]));
    let capacities = [Some(10), Some(100), Some(500), Some(1000)];
    let mut oracle = OracleBank::new(&capacities, None);
    for line in std::fs::read_to_string(&log).unwrap().lines() {
        let event: Value = serde_json::from_str(line).unwrap();
        if event["type"] != "GetCacheLocation" {
            continue;
        }
        let keys: Vec<i64> = event["keys"]
            .as_array()
            .unwrap()
            .iter()
            .map(|k| k.as_i64().unwrap())
            .collect();
        oracle.process_request(&keys, event["trigger_time_us"].as_i64().unwrap() * 1_000);
    }
    let summary = overall(
        &out.join(FACTS),
        &["--capacity-blocks", "10", "100", "500", "1000"],
    );
    assert_eq!(summary["capacity_gb"], serde_json::json!([]));
    assert_eq!(u64s(&summary["capacity_blocks"]), [10, 100, 500, 1000]);
    assert_eq!(u64s(&summary["total_hit_blocks"]), oracle.total_hits);
    assert!(
        oracle.total_hits[0] < oracle.total_hits[3],
        "10 blocks hit less than 1000: {:?}",
        oracle.total_hits
    );
}
