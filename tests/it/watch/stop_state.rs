//! `watch --headless` stopped by a signal: its last JSON line says the source `stopped`
//! (it said `following` before, as if the monitor were still reading), also when that line
//! comes after the facts write of `--facts-out`; a run to the end of input still ends
//! `finished`.

use std::ffi::OsStr;
use std::path::Path;

use crate::common::cli_bin::{generate, run_in, standard_trace, write_file};
use crate::common::headless::HeadlessMonitor;
use litehit_core::workload::WorkloadConfig;
use serde_json::Value;

const REQUESTS: usize = 200;

fn trace(dir: &Path) -> std::path::PathBuf {
    let config = WorkloadConfig {
        seed: 4242,
        block_size_tokens: 256,
        ..WorkloadConfig::default()
    };
    write_file(
        dir,
        "trace.jsonl",
        &standard_trace(&generate(config, REQUESTS)),
    )
}

fn requests(report: &Value) -> u64 {
    report["total"]["requests"].as_u64().unwrap_or(0)
}

/// Follows the whole trace, then `signal`: the line before said `following`, the last one
/// `stopped`.
fn stopped_by(signal: &str, extra: &[&OsStr]) -> Value {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path());
    let mut monitor =
        HeadlessMonitor::start([trace.as_os_str()].into_iter().chain(extra.iter().copied()));
    let following = monitor.wait_for("every request read, following", |report| {
        requests(report) == REQUESTS as u64 && report["state"] == "following"
    });
    assert_eq!(following["state"], "following");
    let (status, stderr, last) = monitor.stop_with(signal);
    assert!(status.success(), "{status:?}: {stderr}");
    let last = last.expect("a last line");
    assert_eq!(last["state"], "stopped", "after SIG{signal}: {last}");
    assert_eq!(requests(&last), REQUESTS as u64, "{last}");
    last
}

#[test]
fn watch_headless_ends_stopped_on_sigterm() {
    stopped_by("TERM", &[]);
}

#[test]
fn watch_headless_ends_stopped_on_sigint() {
    stopped_by("INT", &[]);
}

#[test]
fn watch_headless_line_after_the_facts_write_says_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let facts = dir.path().join("facts.csv");
    let last = stopped_by("TERM", &[OsStr::new("--facts-out"), facts.as_os_str()]);
    assert!(
        last["facts_write"]
            .as_str()
            .is_some_and(|written| written.starts_with("wrote ")),
        "{last}"
    );
    assert!(facts.exists());
}

#[test]
fn watch_headless_to_the_end_of_input_ends_finished() {
    let dir = tempfile::tempdir().unwrap();
    let trace = trace(dir.path());
    let run = run_in(
        None,
        [
            OsStr::new("watch"),
            trace.as_os_str(),
            OsStr::new("--headless"),
            OsStr::new("--exit-at-eof"),
        ],
    );
    assert_eq!(run.code, Some(0), "{}", run.stderr);
    let last: Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["state"], "finished", "{last}");
}
