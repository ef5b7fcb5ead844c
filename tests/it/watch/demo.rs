//! `litehit demo`: its generated trace and facts spill live in a temp directory of their own,
//! removed at exit, never in the working directory
//! ([#26](https://github.com/litehit/litehit/issues/26)); a bounded demo reads every row it
//! generated.

use crate::common::cli_bin::litehit;

#[test]
fn the_demo_writes_nothing_in_the_working_directory_and_cleans_its_temp_dir() {
    let cwd = tempfile::tempdir().unwrap();
    let tmp = tempfile::tempdir().unwrap();
    let output = litehit()
        .args(["demo", "--headless", "--requests", "500", "--rate", "20000"])
        .current_dir(cwd.path())
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let lines: Vec<serde_json::Value> = stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let spill = lines
        .iter()
        .find_map(|line| line["facts_spill_path"].as_str())
        .expect("the demo keeps its facts for `s`: a spill");
    assert!(
        std::path::Path::new(spill).starts_with(tmp.path()),
        "the spill {spill} is in the demo's temp directory"
    );
    let last = lines.last().unwrap();
    assert_eq!(last["state"], "finished");
    assert_eq!(
        last["total"]["requests"], 500,
        "every generated row was read"
    );
    assert_eq!(
        fs_entries(cwd.path()),
        0,
        "nothing in the working directory"
    );
    assert_eq!(
        fs_entries(tmp.path()),
        0,
        "the temp directory is removed at exit"
    );
}

fn fs_entries(dir: &std::path::Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

/// Issue 31: `demo --gpu-memory` shows the engine's pool as the first slot, `engine`, at
/// ⌊SIZE / block bytes⌋ blocks (the demo's 16-token blocks of the default 128 KiB per
/// token: 2 MiB each; 201 MiB hold 100 of them).
#[test]
fn the_demo_shows_the_engine_slot_first() {
    let tmp = tempfile::tempdir().unwrap();
    let output = litehit()
        .args([
            "demo",
            "--headless",
            "--requests",
            "50",
            "--rate",
            "20000",
            "--gpu-memory",
            "201MiB",
        ])
        .env("TMPDIR", tmp.path())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    let stdout = String::from_utf8(output.stdout).unwrap();
    let last: serde_json::Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["slots"][0]["name"], "engine");
    let result = &last["instances"][0]["slot_results"][0];
    assert_eq!(result["label"], "engine");
    assert_eq!(result["capacity_blocks"], 100, "{result}");
}
