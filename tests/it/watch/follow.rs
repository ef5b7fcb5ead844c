//! `watch` follows what real deployments write, through the real binary: fast rename +
//! create rotations, copytruncate while the monitor is stopped, a directory of LMCache-style
//! files rotated by new names (and old ones deleted), standard input, a first line that is
//! bad or still being written, and a reader that goes away. The expected facts always come
//! from `litehit replay` of the same lines, concatenated in the order they were written.

use std::fmt::Write as _;
use std::fs;
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::cli_bin::{failed, litehit, ok, replay_to, run_with_stdin, send_signal};
use crate::common::headless::HeadlessMonitor;
use serde_json::Value;
use std::ffi::OsStr;

/// `n` standard-format rows starting at request `first`, over four instances, with keys
/// that share prefixes (so hits depend on order and history).
fn rows(first: usize, n: usize) -> String {
    let mut text = String::new();
    for i in first..first + n {
        let instance = i % 4;
        let keys: Vec<String> = (0..=(i % 7))
            .map(|depth| ((i / 3) % 50 * 10 + depth).to_string())
            .collect();
        let _ = writeln!(
            text,
            "{{\"type\":\"get\",\"instance_id\":\"i{instance}\",\"trace_id\":\"r{i}\",\
             \"timestamp_ns\":{},\"keys\":[{}],\"input_len\":{}}}",
            (i + 1) * 1000,
            keys.join(","),
            keys.len() * 256 + 7
        );
    }
    text
}

fn append(path: &Path, text: &str) {
    let mut file = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(text.as_bytes()).unwrap();
}

/// The facts `litehit replay` publishes for `text`.
fn replayed(dir: &Path, text: &str) -> Vec<u8> {
    let trace = dir.join("all.jsonl");
    fs::write(&trace, text).unwrap();
    let out = dir.join("replayed");
    ok(replay_to(&trace, &out, &["--quiet"]));
    fs::read(out.join("litehit_facts.csv")).unwrap()
}

/// A headless monitor with `--facts-out` at `facts`.
fn start_monitor(args: &[&str], facts: &Path) -> HeadlessMonitor {
    HeadlessMonitor::start(
        args.iter()
            .map(OsStr::new)
            .chain([OsStr::new("--facts-out"), facts.as_os_str()]),
    )
}

fn requests(report: &Value) -> u64 {
    report["total"]["requests"].as_u64().unwrap_or(0)
}

#[test]
fn fifty_fast_rotations_lose_no_line() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let facts = dir.path().join("facts.csv");
    fs::write(&trace, "").unwrap();
    let mut monitor = start_monitor(
        &[trace.to_str().unwrap(), "--rotation-grace", "0.3"],
        &facts,
    );
    // Rotations start once the monitor holds the file (one renamed away before it ever
    // looked could not be known to it).
    monitor.wait_for("the file opened", |r| r["reading"].is_string());
    let mut written = String::new();
    for generation in 0..50 {
        let text = rows(generation * 200, 200);
        append(&trace, &text);
        written.push_str(&text);
        fs::rename(&trace, dir.path().join(format!("trace.jsonl.{generation}"))).unwrap();
        fs::write(&trace, "").unwrap();
        std::thread::sleep(Duration::from_millis(50));
    }
    let report = monitor.wait_for("all 10,000 requests", |r| requests(r) == 10_000);
    assert_eq!(report["lost_bytes"], 0, "{report}");
    assert!(monitor.stop().0.success());
    assert_eq!(
        fs::read(&facts).unwrap(),
        replayed(dir.path(), &written),
        "facts equal a replay of the generations in order"
    );
}

#[test]
fn copytruncate_while_the_monitor_is_stopped_reads_the_rest_from_the_copy() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let facts = dir.path().join("facts.csv");
    let first = rows(0, 300);
    fs::write(&trace, &first).unwrap();
    let mut monitor = start_monitor(&[trace.to_str().unwrap()], &facts);
    monitor.wait_for("the first lines", |r| requests(r) == 300);
    send_signal(monitor.pid(), "STOP");
    // While it is stopped: more lines, then logrotate's copytruncate, then a refill longer
    // than the old content (so length alone cannot tell).
    let more = rows(300, 200);
    append(&trace, &more);
    fs::copy(&trace, dir.path().join("trace.jsonl.1")).unwrap();
    fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&trace)
        .unwrap();
    let refill = rows(500, 900);
    append(&trace, &refill);
    send_signal(monitor.pid(), "CONT");
    let report = monitor.wait_for("every line", |r| requests(r) == 1400);
    assert_eq!(report["lost_bytes"], 0, "{report}");
    assert!(monitor.stop().0.success());
    assert_eq!(
        fs::read(&facts).unwrap(),
        replayed(dir.path(), &format!("{first}{more}{refill}"))
    );
}

#[test]
fn truncated_and_refilled_past_the_old_offset_is_noticed() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let facts = dir.path().join("facts.csv");
    let first = rows(0, 100);
    fs::write(&trace, &first).unwrap();
    let mut monitor = start_monitor(&[trace.to_str().unwrap()], &facts);
    monitor.wait_for("the first lines", |r| requests(r) == 100);
    send_signal(monitor.pid(), "STOP");
    // Emptied in place and refilled past the old length before the next look: only the
    // first bytes tell (length alone would read on from the old offset, mid-content).
    fs::OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&trace)
        .unwrap();
    let refill = rows(1000, 400);
    append(&trace, &refill);
    send_signal(monitor.pid(), "CONT");
    let report = monitor.wait_for("the refill", |r| requests(r) == 500);
    assert_eq!(
        report["bad_lines"], 0,
        "no line read from the middle: {report}"
    );
    assert_eq!(report["lost_bytes"], 0, "nothing was unread: {report}");
    assert!(monitor.stop().0.success());
    assert_eq!(
        fs::read(&facts).unwrap(),
        replayed(dir.path(), &format!("{first}{refill}"))
    );
}

#[test]
fn a_directory_of_rotating_files_is_followed_and_deleted_files_are_counted() {
    let dir = tempfile::tempdir().unwrap();
    let logs = dir.path().join("logs");
    fs::create_dir(&logs).unwrap();
    let facts = dir.path().join("facts.csv");
    let mut written = String::new();
    for n in 0..3 {
        let text = rows(n * 100, 100);
        fs::write(logs.join(format!("lookup_hashes_{n:03}.jsonl")), &text).unwrap();
        written.push_str(&text);
    }
    fs::write(logs.join("unrelated.txt"), "not a trace\n").unwrap();
    fs::write(logs.join(".lookup_hashes_hidden.jsonl"), "hidden\n").unwrap();
    let mut monitor = start_monitor(
        &[
            logs.to_str().unwrap(),
            "--glob",
            "lookup_hashes_*.jsonl",
            "--rotation-grace",
            "0.2",
        ],
        &facts,
    );
    monitor.wait_for("the existing files", |r| requests(r) == 300);
    // Rotation by new names; the writer's retention deletes the oldest, already read.
    for n in 3..6 {
        let text = rows(n * 100, 100);
        fs::write(logs.join(format!("lookup_hashes_{n:03}.jsonl")), &text).unwrap();
        written.push_str(&text);
        fs::remove_file(logs.join(format!("lookup_hashes_{:03}.jsonl", n - 3))).unwrap();
        std::thread::sleep(Duration::from_millis(100));
    }
    let report = monitor.wait_for("the new files", |r| requests(r) == 600);
    assert_eq!(
        report["bad_lines"], 0,
        "only matching files are read: {report}"
    );
    assert_eq!(report["lost_bytes"], 0);
    assert!(monitor.stop().0.success());
    assert_eq!(fs::read(&facts).unwrap(), replayed(dir.path(), &written));

    // A queued file deleted before its turn is counted, with its size.
    let logs = dir.path().join("logs2");
    fs::create_dir(&logs).unwrap();
    let facts = dir.path().join("facts2.csv");
    fs::write(logs.join("a.jsonl"), rows(0, 10)).unwrap();
    // A long grace keeps `a` current while the others queue up.
    let mut monitor = start_monitor(&[logs.to_str().unwrap(), "--rotation-grace", "60"], &facts);
    monitor.wait_for("the first file", |r| requests(r) == 10);
    let doomed = rows(10, 10);
    fs::write(logs.join("b.jsonl"), &doomed).unwrap();
    let kept = rows(20, 10);
    fs::write(logs.join("c.jsonl"), &kept).unwrap();
    monitor.wait_for("two files queued", |r| r["queued_files"] == 2);
    fs::remove_file(logs.join("b.jsonl")).unwrap();
    // `a` last changed long ago: it is finished, and reading moves on.
    let touched = std::process::Command::new("touch")
        .args(["-d", "2 minutes ago"])
        .arg(logs.join("a.jsonl"))
        .status()
        .unwrap();
    assert!(touched.success());
    let report = monitor.wait_for("c after the lost b", |r| requests(r) == 20);
    assert_eq!(report["lost_bytes"], doomed.len() as u64, "{report}");
    assert_eq!(report["lost_files"], 1);
    assert!(monitor.stop().0.success());
    assert_eq!(
        fs::read(&facts).unwrap(),
        replayed(dir.path(), &format!("{}{kept}", rows(0, 10)))
    );
}

#[test]
fn standard_input_gives_the_same_facts_as_replay() {
    let dir = tempfile::tempdir().unwrap();
    let text = rows(0, 2000);
    let facts = dir.path().join("stdin.csv");
    let run = run_with_stdin(
        None,
        [
            "watch",
            "-",
            "--headless",
            "--interval",
            "5",
            "--facts-out",
            facts.to_str().unwrap(),
        ],
        text.clone().into_bytes(),
    );
    assert_eq!(run.code, Some(0), "end of input ends --headless: {run:?}");
    assert_eq!(fs::read(&facts).unwrap(), replayed(dir.path(), &text));
    let last: Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["state"], "finished");
}

/// `watch - --lane-by tenant` of Mooncake rows (their format told by the first line, rows
/// without a tenant): every line bad with `replay`'s reason in the headless report, no row
/// replayed into the lane `-`, and at the end, no line having been usable, exit 1 with that
/// reason, as `replay` of the same rows.
#[test]
fn standard_input_of_a_format_without_tenants_is_every_line_bad_under_lane_by_tenant() {
    const REASON: &str = "--lane-by tenant: mooncake rows carry no tenant";
    let text = "{\"timestamp\":1,\"input_length\":1024,\"output_length\":1,\"hash_ids\":[1,2]}\n"
        .repeat(5);
    let run = run_with_stdin(
        None,
        [
            "watch",
            "-",
            "--headless",
            "--lane-by",
            "tenant",
            "--no-facts",
        ],
        text.clone().into_bytes(),
    );
    let message = failed(&run);
    assert!(
        message.contains("5 bad lines skipped") && message.contains(REASON),
        "{message}"
    );
    let last: Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    assert_eq!(last["bad_lines"], 5, "{last}");
    assert_eq!(last["facts_rows"], 0, "{last}");
    let reported = last["last_error"]["message"].as_str().unwrap();
    assert!(reported.starts_with(REASON), "{reported}");
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("mooncake.jsonl");
    fs::write(&trace, text).unwrap();
    let replayed = replay_to(&trace, &dir.path().join("out"), &["--lane-by", "tenant"]);
    assert!(failed(&replayed).contains(reported), "{}", replayed.stderr);
}

#[test]
fn a_bad_or_unfinished_first_line_is_waited_for_or_skipped_not_fatal() {
    let dir = tempfile::tempdir().unwrap();
    // A bad first line: skipped and counted as the live path does; the format comes from
    // the first good line.
    let bad = dir.path().join("bad.jsonl");
    let good = rows(0, 50);
    fs::write(&bad, format!("{{not json\n{good}")).unwrap();
    let facts = dir.path().join("bad.csv");
    let mut monitor = start_monitor(&[bad.to_str().unwrap()], &facts);
    let report = monitor.wait_for("the good lines", |r| requests(r) == 50);
    assert_eq!(report["bad_lines"], 1);
    assert!(monitor.stop().0.success());

    // A first line still being written: waited for.
    let fresh = dir.path().join("fresh.jsonl");
    let first = rows(0, 1);
    let (head, tail) = first.split_at(first.len() / 2);
    fs::write(&fresh, head).unwrap();
    let facts = dir.path().join("fresh.csv");
    let mut monitor = start_monitor(&[fresh.to_str().unwrap()], &facts);
    std::thread::sleep(Duration::from_millis(300));
    assert!(monitor.is_running(), "still running with half a first line");
    append(&fresh, &format!("{tail}{}", rows(1, 9)));
    monitor.wait_for("the completed lines", |r| requests(r) == 10);
    assert!(monitor.stop().0.success());
    assert_eq!(
        fs::read(&facts).unwrap(),
        replayed(dir.path(), &rows(0, 10))
    );
}

#[test]
fn headless_ends_cleanly_when_its_reader_goes_away() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    fs::write(&trace, rows(0, 100)).unwrap();
    let facts: PathBuf = dir.path().join("facts.csv");
    let mut child = litehit()
        .args([
            "watch",
            trace.to_str().unwrap(),
            "--headless",
            "--interval",
            "0.05",
        ])
        .arg("--facts-out")
        .arg(&facts)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // `| head -1`: read one line, then close the pipe.
    let mut stdout = BufReader::new(child.stdout.take().unwrap());
    let mut line = String::new();
    stdout.read_line(&mut line).unwrap();
    drop(stdout);
    let deadline = Instant::now() + Duration::from_secs(20);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "still running after its reader left"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(status.success(), "{status:?}");
    assert!(facts.exists(), "the facts are still written");
}

#[test]
fn the_facts_spill_is_a_visible_file_beside_the_facts_and_goes_when_the_monitor_stops() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    fs::write(&trace, rows(0, 50)).unwrap();
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    let facts = out.join("facts.csv");
    let mut monitor = start_monitor(&[trace.to_str().unwrap()], &facts);
    let report = monitor.wait_for("the spill", |r| {
        requests(r) == 50 && r["facts_spill_path"].is_string()
    });
    let spill = PathBuf::from(report["facts_spill_path"].as_str().unwrap());
    assert_eq!(
        spill.parent(),
        Some(out.as_path()),
        "beside the facts: {report}"
    );
    let name = spill.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        name.starts_with(".facts.csv.") && spill.extension().is_some_and(|e| e == "spill"),
        "{name}"
    );
    assert!(spill.exists(), "visible while the monitor runs");
    assert!(monitor.stop().0.success());
    assert!(!spill.exists(), "removed when the monitor stops");
    let left: Vec<_> = fs::read_dir(&out)
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert_eq!(left, [std::ffi::OsString::from("facts.csv")]);
}

/// Issue #27 (High 7): a writer restarts within the rotation grace and reopens the new file
/// with `"w"`: what that file held before its turn is shown as lost bytes, not dropped.
#[test]
fn a_rotated_in_file_truncated_before_its_turn_shows_its_lost_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let facts = dir.path().join("facts.csv");
    fs::write(&trace, rows(0, 10)).unwrap();
    let mut monitor = start_monitor(&[trace.to_str().unwrap(), "--rotation-grace", "1h"], &facts);
    monitor.wait_for("the first file", |report| requests(report) == 10);
    fs::rename(&trace, dir.path().join("trace.jsonl.1")).unwrap();
    let queued = rows(10, 20);
    fs::write(&trace, &queued).unwrap();
    // Queued, and seen whole (its bytes are in the backlog).
    monitor.wait_for("the new file queued", |report| {
        report["queued_files"] == 1 && report["backlog_bytes"].as_u64() == Some(queued.len() as u64)
    });
    fs::write(&trace, rows(30, 5)).unwrap(); // the restarted writer's "w"
    let report = monitor.wait_for("the lost bytes", |report| {
        report["lost_bytes"].as_u64() == Some(queued.len() as u64)
    });
    assert_eq!(requests(&report), 10, "the old file is still in its grace");
    let (status, stderr) = monitor.stop();
    assert!(status.success(), "{stderr}");
}
