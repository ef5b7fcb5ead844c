//! Query failures, broken pipes and in-process parsing.

use std::process::Stdio;

use clap::Parser as _;
use litehit::cli::{Cli, Command};

use crate::common::cli_bin::{
    FACTS, Run, assert_mentions, failed, generate, litehit, ok, run_in, run_ok, standard_trace,
    write_file,
};

use super::{block_flags, multi_instance_workload, path_str, replay_flags, tempdir};

#[test]
fn query_failures_exit_2_and_publish_nothing() {
    let dir = tempdir();
    let out = dir.path().join("q.jsonl");
    let missing = dir.path().join("missing.csv");
    let run = run_in(None, ["query", path_str(&missing), path_str(&out), "-1"]);
    assert_mentions(failed(&run), &["failed to open facts file", "missing.csv"]);

    let facts = write_file(
        dir.path(),
        "facts.csv",
        "trace_id,instance_id,timestamp_ns,input_token_len,block_size_tokens,block_bytes,hit_curve\n\
         r1,i1,1000,13,4,16384,\"[]\"\n\
         r2,i1,2000,12,4,16384,\"[[1,2]\"\n",
    );
    let run = run_in(None, ["query", path_str(&facts), path_str(&out), "-1"]);
    assert_mentions(failed(&run), &["facts line 3", "hit_curve"]);
    let run = run_in(None, ["query", path_str(&facts), path_str(&out), "1PB"]);
    assert_mentions(failed(&run), &["invalid capacity_gb: 1PB"]);
    let run = run_in(None, ["query", path_str(&facts), path_str(&out)]);
    assert_mentions(failed(&run), &["no capacity"]);
    assert!(!out.exists());
    assert!(!dir.path().join("q.jsonl.tmp").exists());
}

/// Runs `litehit ARGS` with stdout a pipe whose reader is closed at once. The output must be
/// larger than a pipe buffer, so the binary meets the closed pipe whatever the timing.
fn run_with_closed_stdout(args: &[&str]) -> Run {
    let mut child = litehit()
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    drop(child.stdout.take());
    let output = child.wait_with_output().unwrap();
    Run {
        code: output.status.code(),
        stdout: String::new(),
        stderr: String::from_utf8(output.stderr).unwrap(),
    }
}

#[test]
fn a_closed_stdout_is_not_an_error() {
    let requests = generate(multi_instance_workload(31), 4_000);
    let dir = tempdir();
    let trace = write_file(dir.path(), "trace.jsonl", &standard_trace(&requests));
    let out = dir.path().join("out");
    let extra = block_flags();
    ok(replay_flags(
        &trace,
        &out,
        &extra.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let facts = out.join(FACTS);
    for args in [
        vec!["query", path_str(&facts), "-", "1", "2", "-1"],
        vec![
            "mrc",
            path_str(&facts),
            "--json",
            "--max-curve-points",
            "5000",
        ],
    ] {
        let full = run_ok(&args);
        assert!(
            full.stdout.len() > 256 << 10,
            "more than a pipe buffer: {args:?}"
        );
        let run = run_with_closed_stdout(&args);
        assert_eq!((run.code, run.stderr.as_str()), (Some(0), ""), "{args:?}");
    }
}

#[test]
fn command_lines_used_here_parse_in_process() {
    let cli = Cli::parse_from([
        "litehit",
        "query",
        "f.csv",
        "-",
        "0",
        "0.3",
        "-1",
        "--capacity-blocks=1,50",
        "--summary-only",
    ]);
    let Command::Query(args) = cli.command else {
        panic!("query expected")
    };
    assert_eq!(args.capacity_gb, ["0", "0.3", "-1"]);
    assert_eq!(args.capacity_blocks, [1, 50]);
    assert!(args.summary_only && args.writes_to_stdout());

    let cli = Cli::parse_from(["litehit", "replay", "cfg/config.json", "--quiet"]);
    let Command::Replay(args) = cli.command else {
        panic!("replay expected")
    };
    assert_eq!(
        (args.input.to_str(), args.out, args.quiet),
        (Some("cfg/config.json"), None, true)
    );

    let cli = Cli::parse_from([
        "litehit", "mrc", "a.csv", "b.csv", "--json", "--png", "p.png",
    ]);
    let Command::Mrc(args) = cli.command else {
        panic!("mrc expected")
    };
    assert_eq!(args.facts.len(), 2);
    assert!(args.json && args.png.is_some());

    // Usage errors exit 1 as well (upstream exits 1 on a bad command line).
    let run = run_in(
        None,
        [
            "replay",
            "t.jsonl",
            "--out",
            "o",
            "--block-bytes",
            "1",
            "--kv-bytes-per-token",
            "2",
        ],
    );
    assert_eq!(
        run.code,
        Some(1),
        "usage errors fail like any other: {}",
        run.stderr
    );
    assert!(run.stderr.contains("cannot be used with"), "{}", run.stderr);
}
