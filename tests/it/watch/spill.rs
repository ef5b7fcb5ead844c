//! The facts spill of `watch --facts-out` (`.NAME.RANDOM.spill`): a run killed with `kill -9`
//! leaves it, and the next run for the same destination removes it — never a live monitor's
//! ([#27](https://github.com/litehit/litehit/issues/27), Medium 2).

use std::path::PathBuf;

use crate::common::cli_bin::{generate, standard_trace, write_file};
use crate::common::headless::HeadlessMonitor;
use litehit_core::workload::WorkloadConfig;

/// The spill path a monitor's report lines name.
fn spill_of(monitor: &mut HeadlessMonitor) -> PathBuf {
    let line = monitor.wait_for("the spill path", |line| {
        line["facts_spill_path"].is_string()
    });
    PathBuf::from(line["facts_spill_path"].as_str().unwrap())
}

#[test]
fn a_killed_monitors_spill_is_removed_by_the_next_run_and_a_live_ones_kept() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(
        dir.path(),
        "trace.jsonl",
        &standard_trace(&generate(WorkloadConfig::default(), 200)),
    );
    let facts = dir.path().join("facts.csv");
    let args = [
        trace.as_os_str(),
        "--facts-out".as_ref(),
        facts.as_os_str(),
        "--block-size".as_ref(),
        "16".as_ref(),
    ];
    let mut live = HeadlessMonitor::start(args);
    let live_spill = spill_of(&mut live);
    let mut killed = HeadlessMonitor::start(args);
    let killed_spill = spill_of(&mut killed);
    assert_ne!(live_spill, killed_spill);
    let _ = killed.stop_with("KILL");
    assert!(killed_spill.exists(), "kill -9 leaves its spill behind");

    let mut next = HeadlessMonitor::start(args);
    let next_spill = spill_of(&mut next);
    assert!(
        !killed_spill.exists(),
        "the next run removes the spill of the killed one"
    );
    assert!(live_spill.exists(), "a live monitor's spill is kept");
    assert!(next_spill.exists());
    // One at a time, so their facts writes do not meet at the lock.
    let (status, stderr) = live.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!live_spill.exists(), "removed when its monitor stops");
    let (status, stderr) = next.stop();
    assert_eq!(status.code(), Some(0), "{stderr}");
    assert!(!next_spill.exists());
}
