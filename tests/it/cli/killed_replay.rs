//! A killed replay publishes nothing; a rerun overwrites its stale temp file.

use std::collections::HashMap;
use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use litehit_core::LiteHit;

use crate::common::cli_bin::{
    FACTS, assert_mentions, facts_temps, generate, litehit, ok, parse_query_output, read_facts,
    run_ok, send_signal, standard_trace, write_file,
};

use super::{block_flags, path_str, read_stderr, replay_flags, short_request_workload, tempdir};

/// Starts a replay, waits until its temp file holds rows, kills it (SIGKILL) and waits.
fn kill_mid_replay(trace: &Path, out: &Path) {
    let (status, _) = signal_mid_replay(trace, out, None);
    assert!(!status.success(), "killed, not finished");
}

/// Starts a replay, waits until its temp file holds rows, sends it `signal` (`kill -s`;
/// `None` = SIGKILL) and returns its exit status and stderr.
fn signal_mid_replay(
    trace: &Path,
    out: &Path,
    signal: Option<&str>,
) -> (std::process::ExitStatus, String) {
    let mut child = litehit()
        .args(["replay", path_str(trace), "--out", path_str(out), "--quiet"])
        .args(block_flags())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let started = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            let stderr = read_stderr(&mut child);
            panic!("the replay ended ({status}) before it could be killed; stderr: {stderr}");
        }
        // Some rows flushed, more to come: mid-way.
        let temps = facts_temps(out);
        if temps
            .iter()
            .any(|tmp| fs::metadata(tmp).is_ok_and(|m| m.len() >= 2 << 20))
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(120),
            "no temp file appeared"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
    match signal {
        None => child.kill().unwrap(),
        Some(signal) => {
            send_signal(child.id(), signal);
        }
    }
    let status = child.wait().unwrap();
    (status, read_stderr(&mut child))
}

#[test]
fn interrupted_replay_removes_its_temp_file_and_keeps_the_published_one() {
    let dir = tempdir();
    let requests = generate(short_request_workload(19), 200_000);
    let trace = write_file(dir.path(), "big.jsonl", &standard_trace(&requests));
    let out = dir.path().join("out");
    ok(replay_flags(
        &trace,
        &out,
        &block_flags().iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let published = fs::read(out.join(FACTS)).unwrap();
    // Ctrl-C and SIGTERM: the run stops, deletes its temp file, exits 128 + the signal.
    // SIGHUP (a closed terminal, issue 15) cleans up like SIGTERM.
    for (signal, code) in [("INT", 130), ("TERM", 143), ("HUP", 129)] {
        let (status, stderr) = signal_mid_replay(&trace, &out, Some(signal));
        assert_eq!(status.code(), Some(code), "SIG{signal}: {stderr}");
        assert_mentions(&stderr, &["interrupted", "nothing was published"]);
        assert!(
            facts_temps(&out).is_empty(),
            "SIG{signal} left the temp file"
        );
        assert_eq!(fs::read(out.join(FACTS)).unwrap(), published);
    }
}

#[test]
fn killed_replay_publishes_nothing_and_a_rerun_overwrites_its_stale_temp_file() {
    let dir = tempdir();
    let requests = generate(short_request_workload(17), 200_000);
    let text = standard_trace(&requests);
    assert!(text.len() > 20 << 20, "tens of MB: {} bytes", text.len());
    let trace = write_file(dir.path(), "big.jsonl", &text);
    drop(text);
    let out = dir.path().join("out");

    // Killed before anything was published: nothing is.
    kill_mid_replay(&trace, &out);
    assert!(!out.join(FACTS).exists(), "a killed run published facts");
    let mut temps = facts_temps(&out);
    assert_eq!(temps.len(), 1, "SIGKILL leaves the temp file behind");
    let stale = temps.pop().unwrap();
    // Make the stale temp file recognisable.
    fs::OpenOptions::new()
        .append(true)
        .open(&stale)
        .unwrap()
        .write_all(b"STALE PARTIAL ROW\n")
        .unwrap();

    // The rerun publishes complete facts and never reuses the stale bytes.
    ok(replay_flags(
        &trace,
        &out,
        &block_flags().iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    assert!(!stale.exists());
    let published = fs::read(out.join(FACTS)).unwrap();
    assert!(!published.windows(5).any(|w| w == b"STALE"));
    let rows = read_facts(&out.join(FACTS));
    assert_eq!(rows.len(), requests.len());
    let query = run_ok([
        "query",
        path_str(&out.join(FACTS)),
        "-",
        "-1",
        "--summary-only",
    ]);
    assert_eq!(
        parse_query_output(&query.stdout).overall["requests"],
        requests.len()
    );
    // Every row equals an in-memory replay of the same requests.
    let mut cores: HashMap<&str, LiteHit> = HashMap::new();
    for (index, (row, request)) in rows.iter().zip(&requests).enumerate() {
        let fact = cores
            .entry(&request.instance_id)
            .or_default()
            .process_request(&request.keys, request.timestamp_ns);
        let curve: Vec<String> = fact
            .to_pairs()
            .iter()
            .map(|[s, r]| format!("[{s},{r}]"))
            .collect();
        assert_eq!(
            row.hit_curve,
            format!("[{}]", curve.join(",")),
            "row {index}"
        );
        assert_eq!(row.timestamp_ns, request.timestamp_ns, "row {index}");
    }

    // Killed while a previous file is published: that file stays byte-identical.
    kill_mid_replay(&trace, &out);
    assert_eq!(fs::read(out.join(FACTS)).unwrap(), published);
}
