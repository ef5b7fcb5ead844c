//! `LITEHIT_THREADS` sizes `replay`'s parse workers and lane threads when neither `--workers`
//! nor the config sets them (`litehit_core::threads`): a bad value stops the replay before it
//! publishes anything, naming the variable; a good one changes nothing in the facts. `watch`
//! and `demo` (whose engine and HTTP server it caps) refuse a bad one at start too.

use std::fmt::Write as _;
use std::path::Path;

use crate::common::cli_bin::{Run, litehit, ok, write_file};

fn trace_text() -> String {
    let mut text = String::new();
    for i in 0..40_usize {
        let keys: Vec<String> = (0..=(i % 5)).map(|depth| (depth * 7).to_string()).collect();
        let _ = writeln!(
            text,
            "{{\"type\":\"get\",\"instance_id\":\"i{}\",\"trace_id\":\"r{i}\",\
             \"timestamp_ns\":{},\"keys\":[{}],\"input_len\":{}}}",
            i % 2,
            (i + 1) * 1000,
            keys.join(","),
            keys.len() * 256
        );
    }
    text
}

/// `litehit replay TRACE --out OUT FLAGS` with `LITEHIT_THREADS` set to `threads`.
fn replay_with(threads: &str, trace: &Path, out: &Path, flags: &[&str]) -> Run {
    let output = litehit()
        .env("LITEHIT_THREADS", threads)
        .arg("replay")
        .arg(trace)
        .arg("--out")
        .arg(out)
        .args(flags)
        .output()
        .expect("the litehit binary runs");
    Run {
        code: output.status.code(),
        stdout: String::from_utf8(output.stdout).expect("stdout is UTF-8"),
        stderr: String::from_utf8(output.stderr).expect("stderr is UTF-8"),
    }
}

#[test]
fn a_bad_litehit_threads_is_an_error_naming_it_and_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &trace_text());
    for bad in ["0", "two", "257"] {
        let out = dir.path().join(format!("out-{bad}"));
        let run = replay_with(bad, &trace, &out, &[]);
        assert_eq!(run.code, Some(1), "{bad}: {}", run.stderr);
        assert!(
            run.stderr.contains(&format!("LITEHIT_THREADS=\"{bad}\"")),
            "{bad}: {}",
            run.stderr
        );
        assert!(!out.join("litehit_facts.csv").exists(), "{bad}: published");
    }
}

#[test]
fn watch_and_demo_refuse_a_bad_litehit_threads_at_start() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &trace_text());
    let trace = trace.to_str().unwrap();
    for command in [
        ["watch", trace, "--headless", "--exit-at-eof"],
        ["demo", "--headless", "--requests", "50"],
    ] {
        for (threads, refused) in [("0", true), ("2", false)] {
            let output = litehit()
                .env("LITEHIT_THREADS", threads)
                .arg("--no-config-file")
                .args(command)
                .current_dir(dir.path())
                .output()
                .expect("the litehit binary runs");
            let stderr = String::from_utf8_lossy(&output.stderr);
            assert_eq!(
                stderr.contains("LITEHIT_THREADS=\"0\""),
                refused,
                "{command:?} with {threads}: {stderr}"
            );
            let code = i32::from(refused);
            assert_eq!(output.status.code(), Some(code), "{command:?}: {stderr}");
        }
    }
}

#[test]
fn litehit_threads_one_gives_the_same_facts_and_workers_wins_over_it() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &trace_text());
    let facts =
        |name: &str| std::fs::read(dir.path().join(name).join("litehit_facts.csv")).unwrap();
    ok(replay_with("1", &trace, &dir.path().join("one"), &[]));
    ok(replay_with("4", &trace, &dir.path().join("four"), &[]));
    // An explicit count wins, so the variable is not even read.
    ok(replay_with(
        "0",
        &trace,
        &dir.path().join("flag"),
        &["--workers", "2"],
    ));
    let one = facts("one");
    assert!(one.len() > 100, "facts too short: {}", one.len());
    assert_eq!(one, facts("four"));
    assert_eq!(one, facts("flag"));
}
