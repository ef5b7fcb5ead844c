//! `watch` and `demo` without a terminal: headless lines, `--facts-out`, format detection,
//! refusals and signals.

use std::fs;
use std::io::{Read as _, Write as _};
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::Value;

use crate::common::cli_bin::{
    FACTS, InstanceSpec, Run, assert_mentions, config_json, failed, get_row, litehit, make_fifo,
    ok, run_in, send_signal, write_file, write_row,
};

use super::{mooncake_trace, path_str, replay_flags, tempdir};

/// The last JSON line `watch --headless --exit-at-eof` printed.
fn last_headless_line(run: &Run) -> Value {
    let line = run.stdout.lines().last().expect("a headless line");
    serde_json::from_str(line).expect("headless lines are JSON")
}

#[test]
fn headless_watch_with_facts_out_publishes_the_replays_facts_at_the_end() {
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 300);
    let out = dir.path().join("out");
    ok(run_in(
        None,
        ["replay", path_str(&trace), "--out", path_str(&out)],
    ));
    let replayed = fs::read(out.join(FACTS)).unwrap();

    let facts = dir.path().join("live.csv");
    let headless = |facts_out: &Path| {
        run_in(
            None,
            [
                "watch",
                path_str(&trace),
                "--headless",
                "--exit-at-eof",
                "--facts-out",
                path_str(facts_out),
            ],
        )
    };
    let run = ok(headless(&facts));
    assert_eq!(
        fs::read(&facts).unwrap(),
        replayed,
        "the same facts as replay"
    );
    assert!(
        run.stderr.contains("facts written to") && run.stderr.contains("(300 rows)"),
        "{}",
        run.stderr
    );
    assert_eq!(last_headless_line(&run)["instances"][0]["requests"], 300);

    // Without --facts-out, a headless run writes nothing.
    let quiet_dir = tempdir();
    ok(run_in(
        Some(quiet_dir.path()),
        ["watch", path_str(&trace), "--headless", "--exit-at-eof"],
    ));
    assert_eq!(fs::read_dir(quiet_dir.path()).unwrap().count(), 0);

    // A path that cannot be written is said at once, before anything is read.
    let blocked = dir.path().join("a-file");
    fs::write(&blocked, "").unwrap();
    let run = headless(&blocked.join("facts.csv"));
    assert_mentions(
        failed(&run),
        &["--facts-out", "a-file is a file, not a directory"],
    );
    assert!(run.stdout.is_empty(), "nothing ran: {}", run.stdout);
    // A missing directory is created, as `replay --out` creates its own.
    let created = dir.path().join("no-such-dir").join("facts.csv");
    ok(headless(&created));
    assert_eq!(fs::read(&created).unwrap(), replayed);
    // One that fails only when written fails the run, naming it: here a directory stands
    // where the snapshot file would go.
    let taken = dir.path().join("taken");
    fs::create_dir_all(taken.join(FACTS)).unwrap();
    let run = headless(&taken);
    assert_mentions(failed(&run), &["writing the facts to", "is a directory"]);
    assert_eq!(last_headless_line(&run)["instances"][0]["requests"], 300);
}

#[test]
fn a_config_without_block_size_takes_the_detected_formats_as_if_it_named_the_format() {
    // Before, leaving out `trace_format` as well meant upstream's 256 for a Mooncake trace
    // (every line failed its length check) and for a KVCM log (silently 16× too few blocks).
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 200);
    let config = |with_format: bool| {
        format!(
            r#"{{"trace_file_path": "{}", "output_result_path": "out", {}
               "instance_groups": [{{"name": "g"}}],
               "instances": [{{"instance_group_name": "g", "instance_id": "m", "block_size": 512,
                 "location_spec_infos": [{{"name": "kv", "size": 1048576}}],
                 "location_spec_groups": [{{"name": "full", "spec_names": ["kv"]}}]}}]}}"#,
            path_str(&trace),
            if with_format {
                r#""trace_format": "mooncake","#
            } else {
                ""
            }
        )
    };
    let mut published = Vec::new();
    for with_format in [true, false] {
        let out_dir = dir.path().join(format!("run-{with_format}"));
        fs::create_dir(&out_dir).unwrap();
        let config_path = write_file(&out_dir, "config.json", &config(with_format));
        ok(run_in(
            Some(&out_dir),
            ["replay", path_str(&config_path), "--quiet"],
        ));
        published.push(fs::read(out_dir.join("out").join(FACTS)).unwrap());
        // The live monitor resolves the config the same way.
        let run = ok(run_in(
            Some(&out_dir),
            [
                "watch",
                "--config",
                path_str(&config_path),
                "--headless",
                "--exit-at-eof",
            ],
        ));
        let last = last_headless_line(&run);
        assert_eq!(last["bad_lines"], 0, "{last}");
        assert_eq!(last["instances"][0]["requests"], 200, "{last}");
    }
    assert_eq!(published[0], published[1]);
}

#[test]
fn watch_reads_an_existing_trace_in_its_own_format_as_replay_does() {
    // Before this was fixed, `watch` read every trace with the standard format's 256-token
    // blocks unless told `--format`, so every Mooncake line failed its length check.
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 300);
    let run = ok(run_in(
        None,
        [
            "watch",
            path_str(&trace),
            "--headless",
            "--exit-at-eof",
            "--capacity-gb",
            "1",
        ],
    ));
    let last = last_headless_line(&run);
    assert_eq!(last["bad_lines"], 0, "{last}");
    let instance = &last["instances"][0];
    assert_eq!(instance["requests"], 300, "{last}");
    assert_eq!(instance["block_size_tokens"], 512, "{last}");

    // The same ∞ hit rate as an offline replay of the same file.
    let out = dir.path().join("out");
    ok(run_in(
        None,
        ["replay", path_str(&trace), "--out", path_str(&out)],
    ));
    let query = ok(run_in(
        None,
        [
            "query",
            path_str(&out.join(FACTS)),
            "-",
            "-1",
            "--summary-only",
        ],
    ));
    let summary: Value = serde_json::from_str(query.stdout.lines().last().unwrap()).unwrap();
    let (replayed, watched) = (
        summary["total_hit_blocks"][0].as_u64().unwrap() * 512,
        instance["infinite_hit_tokens"].as_u64().unwrap(),
    );
    assert_eq!(watched, replayed, "{summary}\n{last}");

    // Mooncake keys are 512-token blocks by definition, so `--block-size` alone is the
    // analysis size: the trace is coarsened from 512, as with `--trace-block-size 512`.
    let coarse = dir.path().join("coarse");
    ok(replay_flags(&trace, &coarse, &["--block-size", "1024"]));
    let facts = fs::read_to_string(coarse.join(FACTS)).unwrap();
    assert!(
        facts.lines().skip(1).all(|row| row.contains(",1024,")),
        "{facts}"
    );
    let explicit = dir.path().join("explicit");
    ok(replay_flags(
        &trace,
        &explicit,
        &["--block-size", "1024", "--trace-block-size", "512"],
    ));
    assert_eq!(fs::read_to_string(explicit.join(FACTS)).unwrap(), facts);
    // A finer size cannot come from 512-token keys; the error says how to key it otherwise.
    let finer = replay_flags(&trace, &dir.path().join("finer"), &["--block-size", "256"]);
    assert_mentions(
        failed(&finer),
        &["the Mooncake block size 512", "--trace-block-size"],
    );
    // A trace really keyed at 1024 tokens says so, and its key counts are checked at that size.
    let keyed_coarse = replay_flags(
        &trace,
        &dir.path().join("keyed"),
        &["--block-size", "1024", "--trace-block-size", "1024"],
    );
    assert_mentions(
        failed(&keyed_coarse),
        &["block 1024", "they fit 512-token blocks"],
    );
}

#[test]
fn watch_refuses_what_it_cannot_follow_with_a_clear_message() {
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 20);
    // Compressed, by name or by content.
    let named = write_file(
        dir.path(),
        "t.jsonl.gz",
        &fs::read_to_string(&trace).unwrap(),
    );
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(fs::read_to_string(&trace).unwrap().as_bytes())
        .unwrap();
    let unnamed = dir.path().join("t.jsonl");
    fs::write(&unnamed, gzip.finish().unwrap()).unwrap();
    for path in [&named, &unnamed] {
        let run = run_in(
            None,
            ["watch", path_str(path), "--headless", "--exit-at-eof"],
        );
        assert_mentions(failed(&run), &["does not decompress", "litehit replay"]);
    }
    // A FIFO (what `<(cmd)` gives) cannot be followed as a file, and peeking at a pipe would
    // eat its first bytes: it is read as standard input instead (`watch - < FIFO`).
    let fifo = dir.path().join("fifo.jsonl");
    make_fifo(&fifo);
    let run = run_in(
        None,
        ["watch", path_str(&fifo), "--headless", "--exit-at-eof"],
    );
    assert_mentions(failed(&run), &["regular file", "watch -"]);
    // A directory and standard input are followed (issue 17); --glob needs a directory.
    let run = run_in(
        None,
        ["watch", path_str(&trace), "--glob", "*.jsonl", "--headless"],
    );
    assert_mentions(failed(&run), &["--glob needs a directory"]);
    let run = run_in(None, ["watch", "-", "--glob", "*.jsonl", "--headless"]);
    assert_mentions(failed(&run), &["--glob applies to a directory"]);
    // A missing file with --exit-at-eof is a typo, not a file to wait for.
    let missing = dir.path().join("missing.jsonl");
    let run = run_in(
        None,
        ["watch", path_str(&missing), "--headless", "--exit-at-eof"],
    );
    assert_mentions(failed(&run), &["missing.jsonl", "no such file"]);
    // Without --exit-at-eof a missing file is waited for, but not in a missing directory.
    let typo = dir.path().join("no-such-dir").join("later.jsonl");
    let run = run_in(None, ["watch", path_str(&typo), "--headless"]);
    assert_mentions(failed(&run), &["no-such-dir does not exist"]);
    // Slots: distinct, and ∞ is a column already.
    for (slots, fragment) in [
        ("40,40GB", "40 GiB is given twice"),
        (
            "10,inf",
            "unlimited (inf, or any negative size) is always shown",
        ),
        (
            "-1",
            "unlimited (inf, or any negative size) is always shown",
        ),
        ("0", "0 GiB is 0 blocks"),
    ] {
        let run = run_in(None, ["demo", "--headless", "--capacity-gb", slots]);
        assert_mentions(failed(&run), &[fragment]);
    }
    // No terminal (stdin is /dev/null here): an error, not a panic.
    for args in [vec!["watch", path_str(&trace)], vec!["demo"]] {
        let run = run_in(None, args);
        assert_mentions(failed(&run), &["needs a terminal", "--headless"]);
        assert!(!run.stderr.contains("panicked"), "{}", run.stderr);
    }
}

#[test]
fn sigterm_ends_a_headless_demo_cleanly() {
    let dir = tempdir();
    let mut child = litehit()
        .args(["demo", "--headless", "--rate", "200"])
        .env("TMPDIR", dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Wait for the first report line, then ask it to stop.
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0_u8; 1];
    stdout.read_exact(&mut first).unwrap();
    let traces = || {
        fs::read_dir(dir.path())
            .unwrap()
            .filter(|entry| {
                entry
                    .as_ref()
                    .is_ok_and(|e| e.file_name().to_string_lossy().starts_with("litehit-demo-"))
            })
            .count()
    };
    assert_eq!(traces(), 1, "the demo writes its trace");
    send_signal(child.id(), "TERM");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    let exit = child.wait().unwrap();
    assert_eq!(exit.code(), Some(0), "a clean exit, not 143");
    let last = rest.lines().last().expect("a last report line");
    assert!(last.ends_with('}'), "{last}");
    assert_eq!(traces(), 0, "the generated trace is removed");
}

/// `watch` names skipped lines on stderr when it ends, and a trace none of whose lines could
/// be used (here: keys of 16-token blocks read at the standard format's 256) is an error, not
/// an exit 0 that showed nothing.
#[test]
fn watch_at_eof_reports_bad_lines_and_fails_when_nothing_was_usable() {
    let dir = tempdir();
    let rows: String = (1..=3)
        .map(|i| get_row("a", &format!("r{i}"), i, &[1, 2, 3], 48))
        .collect();
    let unusable = write_file(dir.path(), "unusable.jsonl", &rows);
    let run = run_in(
        None,
        ["watch", path_str(&unusable), "--headless", "--exit-at-eof"],
    );
    assert_mentions(
        failed(&run),
        &[
            "no valid Request/Get events",
            "3 bad lines skipped",
            "line 3",
            "they fit 16-token blocks",
        ],
    );

    let mixed = write_file(
        dir.path(),
        "mixed.jsonl",
        &format!("{rows}{{\"type\":\"get\"\n"),
    );
    let run = ok(run_in(
        None,
        [
            "watch",
            path_str(&mixed),
            "--headless",
            "--exit-at-eof",
            "--block-size",
            "16",
        ],
    ));
    assert_mentions(&run.stderr, &["1 bad line skipped", "line 4"]);

    // Read to the end without a single request (empty here; a forced format that skips
    // every row does the same): an error, as for `replay`.
    let empty = write_file(dir.path(), "empty.jsonl", "");
    let run = run_in(
        None,
        ["watch", path_str(&empty), "--headless", "--exit-at-eof"],
    );
    assert_mentions(failed(&run), &["no valid Request/Get events"]);

    // Only a write and a bad line: still nothing usable (a bad line must not turn it into a
    // success).
    let writes = write_file(
        dir.path(),
        "writes.jsonl",
        &format!("{}garbage\n", write_row("a", "w1", 1, &[1, 2])),
    );
    let run = run_in(
        None,
        ["watch", path_str(&writes), "--headless", "--exit-at-eof"],
    );
    assert_mentions(
        failed(&run),
        &["no valid Request/Get events", "1 bad line skipped"],
    );

    // From the end of a valid trace nothing is read, which proves nothing: exit 0.
    let sample = write_file(dir.path(), "valid.jsonl", &rows);
    ok(run_in(
        None,
        [
            "watch",
            path_str(&sample),
            "--headless",
            "--exit-at-eof",
            "--from-end",
            "--block-size",
            "16",
        ],
    ));
}

#[test]
fn headless_lines_are_fresh_at_any_interval_and_fps_must_be_positive() {
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 20);
    let child = litehit()
        .args([
            "watch",
            path_str(&trace),
            "--headless",
            "--interval",
            "0.25",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1600));
    send_signal(child.id(), "TERM");
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{output:?}");
    let uptimes: Vec<f64> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| {
            let value: Value = serde_json::from_str(line).unwrap();
            value["uptime_s"].as_f64().unwrap()
        })
        .collect();
    assert!(uptimes.len() >= 4, "{uptimes:?}");
    // The last line is written on the signal, possibly right after a tick's: all but it
    // must each show a newer snapshot than the line before.
    let ticks = &uptimes[..uptimes.len() - 1];
    assert!(
        ticks.windows(2).all(|pair| pair[1] > pair[0]),
        "a line repeats the previous snapshot: {uptimes:?}"
    );

    let run = run_in(None, ["watch", path_str(&trace), "--fps", "0"]);
    assert_mentions(failed(&run), &["--fps", "positive"]);
    let run = run_in(
        None,
        ["demo", "--headless", "--fps", "nan", "--requests", "10"],
    );
    assert_mentions(failed(&run), &["--fps", "positive"]);
}

#[test]
fn watch_format_flag_wins_over_the_config_as_in_replay() {
    let dir = tempdir();
    write_file(
        dir.path(),
        "trace.jsonl",
        &(get_row("i1", "r1", 1, &[1, 2], 32) + &get_row("i1", "r2", 2, &[1, 2], 32)),
    );
    let config = write_file(
        dir.path(),
        "config.json",
        &config_json(
            "trace.jsonl",
            "out",
            16,
            &[InstanceSpec {
                instance_id: "i1",
                block_size: 16,
                block_bytes: 1024,
            }],
            r#""trace_format":"kvcm","#,
        ),
    );
    let watch = |extra: &[&str]| {
        let mut args = vec![
            "watch",
            "--config",
            path_str(&config),
            "--headless",
            "--exit-at-eof",
        ];
        args.extend_from_slice(extra);
        run_in(Some(dir.path()), args)
    };
    // The config says kvcm: every line is an event of another type.
    assert_eq!(watch(&[]).code, Some(1));
    let run = ok(watch(&["--format", "standard"]));
    let last = last_headless_line(&run);
    assert_eq!(last["instances"][0]["requests"], 2, "{last}");
    // `replay` does the same.
    ok(run_in(
        Some(dir.path()),
        ["replay", path_str(&config), "--format", "standard"],
    ));
}

#[test]
fn a_signal_ends_headless_watch_with_the_unterminated_last_line_read() {
    let dir = tempdir();
    let text = get_row("i1", "r1", 1, &[1, 2], 32) + &get_row("i1", "r2", 2, &[1, 2], 32);
    let trace = write_file(dir.path(), "trace.jsonl", text.trim_end());
    let mut child = litehit()
        .args([
            "watch",
            path_str(&trace),
            "--headless",
            "--block-size",
            "16",
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut first = [0_u8; 1];
    stdout.read_exact(&mut first).unwrap(); // the first line: everything but the last line read
    send_signal(child.id(), "TERM");
    let mut rest = String::new();
    stdout.read_to_string(&mut rest).unwrap();
    assert!(child.wait().unwrap().success());
    let last: Value = serde_json::from_str(rest.lines().last().unwrap()).unwrap();
    assert_eq!(last["instances"][0]["requests"], 2, "{last}");
}
