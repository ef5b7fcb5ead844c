//! What replay reads and where it writes: standard input and pipes, FIFOs, skipped event
//! types, and outputs that would overwrite an input or name a descriptor.

use std::fs;
use std::io::Write as _;
use std::path::Path;
use std::process::Stdio;
use std::time::{Duration, Instant};

use crate::common::cli_bin::{
    FACTS, assert_mentions, failed, generate, get_row, litehit, make_fifo, ok, replay_to, run_in,
    run_with_stdin, send_signal, standard_trace, write_file,
};

use super::{
    BLOCK_TOKENS, block_flags, mooncake_trace, multi_instance_workload, path_str, read_stderr,
    replay_flags, short_request_workload, tempdir,
};

#[test]
fn a_failed_replay_leaves_no_new_directory_and_out_must_be_a_directory() {
    let dir = tempdir();
    let mut text = standard_trace(&generate(short_request_workload(3), 50));
    text.push_str("{\"broken\n");
    let trace = write_file(dir.path(), "t.jsonl", &text);
    let fresh = dir.path().join("fresh");
    let flags = block_flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let run = replay_flags(&trace, &fresh, &flags);
    assert_mentions(failed(&run), &["line 51"]);
    assert!(
        !fresh.exists(),
        "the output directory it created is removed again"
    );
    let nested = dir.path().join("a").join("b").join("c");
    let run = replay_flags(&trace, &nested, &flags);
    assert_mentions(failed(&run), &["line 51"]);
    assert!(
        !dir.path().join("a").exists(),
        "and every parent it created"
    );

    let run = replay_flags(&trace, &trace, &flags);
    assert_mentions(
        failed(&run),
        &["t.jsonl: is a file", "names a directory", "ending in .csv"],
    );
}

/// `litehit replay - --out OUT FLAGS`, its standard input written by `feed` on another
/// thread; asserts success.
fn replay_from_stdin(
    out: &Path,
    flags: &[&str],
    feed: impl FnOnce(&mut std::process::ChildStdin) + Send + 'static,
) {
    let mut child = litehit()
        .args(["replay", "-", "--out", path_str(out), "--quiet"])
        .args(flags)
        .stdin(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let feeder = std::thread::spawn(move || feed(&mut stdin));
    let output = child.wait_with_output().unwrap();
    feeder.join().unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
}

/// A trace piped in (`-`, or a shell's `<(zcat t.gz)`) is read once: the first line that
/// names the format is replayed too. Before, the format was detected on a first read of the
/// pipe and the replay read it again, so the first 64 KiB were lost; a trace whose first
/// chunk ended on a line boundary even replayed "successfully" with rows missing.
#[test]
fn a_piped_trace_replays_exactly_like_the_file() {
    let dir = tempdir();
    let text = standard_trace(&generate(multi_instance_workload(17), 600));
    assert!(text.len() > 3 << 16, "more than the first read's 64 KiB");
    let trace = write_file(dir.path(), "trace.jsonl", &text);
    let from_file = dir.path().join("from_file");
    let flags = block_flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    ok(replay_flags(&trace, &from_file, &flags));

    let from_pipe = dir.path().join("from_pipe");
    replay_from_stdin(&from_pipe, &flags, move |stdin| {
        // Small writes, so the replay sees a stream and not one buffer.
        for piece in text.as_bytes().chunks(4096) {
            stdin.write_all(piece).unwrap();
        }
    });
    assert_eq!(
        fs::read(from_pipe.join(FACTS)).unwrap(),
        fs::read(from_file.join(FACTS)).unwrap()
    );
}

/// The reading of a trace once (above) must not cost what reading it twice handled: a gzip
/// stream whose first byte arrives alone, a first line over 1 MiB, a first line that is only
/// a byte-order mark.
#[test]
fn a_trace_read_once_still_detects_what_it_used_to() {
    let dir = tempdir();
    let flags = block_flags();
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let text = standard_trace(&generate(multi_instance_workload(23), 200));
    let trace = write_file(dir.path(), "trace.jsonl", &text);
    let expected_out = dir.path().join("expected");
    ok(replay_flags(&trace, &expected_out, &flags));
    let expected = fs::read(expected_out.join(FACTS)).unwrap();

    // gzip through a pipe, its first byte alone.
    let mut gzip = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gzip.write_all(text.as_bytes()).unwrap();
    let gz = gzip.finish().unwrap();
    let out = dir.path().join("gz");
    replay_from_stdin(&out, &flags, move |stdin| {
        stdin.write_all(&gz[..1]).unwrap();
        stdin.flush().unwrap();
        std::thread::sleep(Duration::from_millis(200));
        stdin.write_all(&gz[1..]).unwrap();
    });
    assert_eq!(fs::read(out.join(FACTS)).unwrap(), expected);

    // A byte-order mark on a line of its own before the trace.
    let bom = write_file(dir.path(), "bom.jsonl", &format!("\u{feff}\n{text}"));
    let out = dir.path().join("bom");
    ok(replay_flags(&bom, &out, &flags));
    assert_eq!(fs::read(out.join(FACTS)).unwrap(), expected);

    // A first request of 200 000 blocks: a first line over 1 MiB is detected as before.
    let keys: Vec<i64> = (1..=200_000).collect();
    let long = write_file(
        dir.path(),
        "long.jsonl",
        &get_row("a", "r1", 1, &keys, 200_000 * BLOCK_TOKENS),
    );
    assert!(fs::metadata(&long).unwrap().len() > 1 << 20);
    ok(replay_flags(&long, &dir.path().join("long"), &flags));
}

#[test]
fn facts_are_never_written_over_the_trace_they_come_from() {
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 20);
    let before = fs::read(&trace).unwrap();
    // However the two paths are spelled: the same text, `./` in front, a trace not created
    // yet, a directory whose `litehit_facts.csv` is the trace.
    let spellings = [
        ("mooncake.jsonl", "mooncake.jsonl"),
        ("mooncake.jsonl", "./mooncake.jsonl"),
        ("later.jsonl", "./later.jsonl"),
    ];
    for (watched, facts_out) in spellings {
        let run = run_in(
            Some(dir.path()),
            ["watch", watched, "--facts-out", facts_out],
        );
        assert_mentions(failed(&run), &["trace being watched"]);
    }
    // A link to the trace, also while neither exists yet (the snapshot would create it).
    std::os::unix::fs::symlink("mooncake.jsonl", dir.path().join("link.csv")).unwrap();
    std::os::unix::fs::symlink("later2.jsonl", dir.path().join("dangling.csv")).unwrap();
    for (watched, facts_out) in [
        ("mooncake.jsonl", "link.csv"),
        ("later2.jsonl", "dangling.csv"),
    ] {
        let run = run_in(
            Some(dir.path()),
            ["watch", watched, "--facts-out", facts_out],
        );
        assert_mentions(failed(&run), &["trace being watched"]);
    }
    let named_like_facts = write_file(dir.path(), FACTS, &String::from_utf8_lossy(&before));
    let run = run_in(Some(dir.path()), ["watch", FACTS, "--facts-out", "."]);
    assert_mentions(failed(&run), &["trace being watched"]);
    let run = run_in(Some(dir.path()), ["replay", FACTS, "--out", "."]);
    assert_mentions(failed(&run), &["would replace the trace"]);
    assert_eq!(fs::read(&trace).unwrap(), before);
    assert_eq!(fs::read(&named_like_facts).unwrap(), before);
}

/// `litehit replay - --out OUT` fed `trace` through a pipe that stays open (the returned
/// stdin): it reads the lines and then waits for more.
fn replay_waiting_on_open_stdin(
    trace: &Path,
    out: &Path,
) -> (std::process::Child, std::process::ChildStdin) {
    let mut child = litehit()
        .args(["replay", "-", "--out", path_str(out)])
        .stdin(Stdio::piped())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(&fs::read(trace).unwrap()).unwrap();
    stdin.flush().unwrap();
    (child, stdin)
}

#[test]
fn ctrl_c_ends_a_replay_waiting_for_input_on_a_pipe() {
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 5);
    let out = dir.path().join("out");
    let (mut child, stdin) = replay_waiting_on_open_stdin(&trace, &out);
    let deadline = Instant::now() + Duration::from_secs(10);
    while !out.exists() {
        assert!(Instant::now() < deadline, "the replay never started");
        std::thread::sleep(Duration::from_millis(20));
    }
    std::thread::sleep(Duration::from_millis(200));
    send_signal(child.id(), "INT");
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        assert!(
            Instant::now() < deadline,
            "still waiting for input after Ctrl-C"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    drop(stdin);
    assert_eq!(status.code(), Some(130));
    let stderr = read_stderr(&mut child);
    assert!(stderr.contains("interrupted by signal 2"), "{stderr}");
    assert!(!out.exists(), "nothing published, no directory left");
}

#[test]
fn kvcm_events_of_other_types_are_skipped_with_a_warning() {
    let dir = tempdir();
    let log = write_file(
        dir.path(),
        "events.log",
        concat!(
            r#"{"id":"a","source":"i","type":"GetCacheLocation","trigger_time_us":1,"keys":[1,2],"input_len":32}"#,
            "\n",
            r#"{"id":"b","source":"i","type":"GetCacheLocatio","trigger_time_us":2,"keys":[1,2],"input_len":32}"#,
            "\n",
            r#"{"id":"c","source":"i","type":"RemoveCache","trigger_time_us":3,"keys":[1]}"#,
            "\n",
            r#"{"id":"d","source":"i","type":"GetCacheLocation","trigger_time_us":4,"keys":[1,2],"input_len":32}"#,
            "\n",
        ),
    );
    let out = dir.path().join("out");
    let run = ok(run_in(
        None,
        ["replay", path_str(&log), "--out", path_str(&out), "--quiet"],
    ));
    assert_mentions(
        &run.stderr,
        &[
            "warning",
            "2 lines of other event types",
            "the first: line 2",
        ],
    );
    let facts = fs::read_to_string(out.join(FACTS)).unwrap();
    assert_eq!(facts.lines().count(), 3, "two reads: {facts}");

    // `--block-size` alone takes KVCM keys at that size: said, since nothing else would (reads
    // without a length, as in real logs, cannot be checked).
    let log = write_file(
        dir.path(),
        "nolen.log",
        concat!(
            r#"{"id":"a","source":"i","type":"GetCacheLocation","trigger_time_us":1,"keys":[1,2]}"#,
            "\n",
        ),
    );
    let run = ok(replay_to(&log, &out, &["--block-size", "64"]));
    assert_mentions(
        &run.stderr,
        &[
            "KVCM logs do not say their block size",
            "--trace-block-size 16",
        ],
    );
    let run = ok(replay_to(
        &log,
        &out,
        &["--block-size", "32", "--trace-block-size", "16"],
    ));
    assert!(
        !run.stderr.contains("do not say their block size"),
        "{}",
        run.stderr
    );

    // Read in the wrong format, every line is an event of another type: the error says so.
    let standard = write_file(
        dir.path(),
        "standard.jsonl",
        &get_row("i", "r1", 1, &[1, 2], 32),
    );
    let run = replay_flags(&standard, &dir.path().join("wrong"), &["--format", "kvcm"]);
    assert_mentions(
        failed(&run),
        &[
            "no valid Request/Get events",
            "1 event of another type (the first at line 1)",
            "--format",
        ],
    );
}

#[test]
fn query_and_mrc_read_facts_from_standard_input() {
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 50);
    let out = dir.path().join("out");
    ok(run_in(
        None,
        ["replay", path_str(&trace), "--out", path_str(&out)],
    ));
    let facts = out.join(FACTS);
    let piped = |args: &[&str]| ok(run_with_stdin(None, args, fs::read(&facts).unwrap())).stdout;
    let from_file = ok(run_in(None, ["query", path_str(&facts), "-", "1", "-1"]));
    assert_eq!(piped(&["query", "-", "-", "1", "-1"]), from_file.stdout);
    let mrc_file = ok(run_in(None, ["mrc", path_str(&facts), "--json"]));
    assert_eq!(piped(&["mrc", "-", "--json"]), mrc_file.stdout);
}

#[test]
fn standard_output_under_another_name_is_written_through_the_stdout_handle() {
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 30);
    let out = dir.path().join("out");
    ok(run_in(
        None,
        ["replay", path_str(&trace), "--out", path_str(&out)],
    ));
    let facts = out.join(FACTS);
    let expected = ok(run_in(None, ["query", path_str(&facts), "-", "1", "-1"])).stdout;
    // Redirected with `>>`: the earlier content stays, the JSONL follows it, and no status
    // line lands in between. (`/proc/self/fd/1` is what `/dev/stdout` links to; a test that
    // went wrong could not replace it, where it could replace `/dev/stdout` as root.)
    let log = dir.path().join("log.txt");
    fs::write(&log, "earlier\n").unwrap();
    let appended = fs::OpenOptions::new().append(true).open(&log).unwrap();
    let status = litehit()
        .args(["query", path_str(&facts), "/proc/self/fd/1", "1", "-1"])
        .stdout(Stdio::from(appended))
        .status()
        .unwrap();
    assert!(status.success());
    assert_eq!(
        fs::read_to_string(&log).unwrap(),
        format!("earlier\n{expected}")
    );
    // A plot on standard output: the image alone there, the table on stderr.
    let output = litehit()
        .args(["mrc", path_str(&facts), "--png", "/proc/self/fd/1"])
        .output()
        .unwrap();
    assert!(output.status.success(), "{output:?}");
    assert!(
        output.stdout.starts_with(b"\x89PNG\r\n\x1a\n"),
        "a PNG on stdout"
    );
    assert!(String::from_utf8_lossy(&output.stderr).contains("95% knee"));
    // A symlink loop is an error, not a file written over the link.
    std::os::unix::fs::symlink("loop-b", dir.path().join("loop-a")).unwrap();
    std::os::unix::fs::symlink("loop-a", dir.path().join("loop-b")).unwrap();
    let run = run_in(Some(dir.path()), ["query", path_str(&facts), "loop-a", "1"]);
    assert_mentions(failed(&run), &["too many levels of symbolic links"]);
    assert!(
        fs::symlink_metadata(dir.path().join("loop-a"))
            .unwrap()
            .is_symlink()
    );
}

#[test]
fn an_interrupted_replay_never_removes_a_fifo_it_was_writing_to() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 5);
    let out = dir.path().join("out");
    fs::create_dir(&out).unwrap();
    let fifo = out.join(FACTS);
    make_fifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::read(fifo).unwrap())
    };
    let (mut child, stdin) = replay_waiting_on_open_stdin(&trace, &out);
    std::thread::sleep(Duration::from_millis(500));
    send_signal(child.id(), "INT");
    let status = child.wait().unwrap();
    drop(stdin);
    assert_eq!(status.code(), Some(130));
    let _ = reader.join();
    assert!(
        fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(),
        "the FIFO is still there"
    );
}

#[test]
fn outputs_that_are_inputs_or_descriptors_by_another_name_are_refused() {
    let dir = tempdir();
    let trace = mooncake_trace(dir.path(), 30);
    let out = dir.path().join("out");
    ok(run_in(
        None,
        ["replay", path_str(&trace), "--out", path_str(&out)],
    ));
    let facts = out.join(FACTS);
    let before = fs::read(&facts).unwrap();
    let appending_to =
        |path: &Path| Stdio::from(fs::OpenOptions::new().append(true).open(path).unwrap());
    // Standard output appended to the facts being read: refused, the facts untouched.
    for args in [
        vec!["query", path_str(&facts), "/proc/self/fd/1", "1"],
        vec!["query", path_str(&facts), "-", "1"],
        vec!["mrc", path_str(&facts), "--png", "/proc/self/fd/1"],
    ] {
        let output = litehit()
            .args(&args)
            .stdout(appending_to(&facts))
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            stderr.contains("facts file being read"),
            "{args:?}: {stderr}"
        );
    }
    assert_eq!(fs::read(&facts).unwrap(), before);
    // Both plots to standard output.
    let run = run_in(
        None,
        [
            "mrc",
            path_str(&facts),
            "--png",
            "-",
            "--svg",
            "/proc/self/fd/1",
        ],
    );
    assert_mentions(failed(&run), &["name the same file"]);
    // Another descriptor of this process that leads to a regular file: publishing by rename
    // would leave the descriptor on the old file (and wipe an appended log).
    let log = dir.path().join("app.log");
    fs::write(&log, "earlier\n").unwrap();
    let output = litehit()
        .args(["query", path_str(&facts), "/proc/self/fd/2", "1"])
        .stderr(appending_to(&log))
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(1));
    let log_text = fs::read_to_string(&log).unwrap();
    assert!(log_text.starts_with("earlier\n"), "{log_text}");
    assert!(log_text.contains("open descriptor"), "{log_text}");
    // The live monitor's snapshot never goes to standard output (checked before the
    // terminal is), where the screen or the headless JSON lines go. `demo --headless` has no
    // `--facts-out`.
    for command in ["watch", "demo"] {
        let mut args = vec![command, "--facts-out", "-"];
        if command == "watch" {
            args.insert(1, path_str(&trace));
        }
        let run = run_in(None, &args);
        assert_mentions(failed(&run), &["standard output"]);
        args.push("--headless");
        let run = run_in(None, &args);
        assert_eq!(run.code, Some(1));
        if command == "watch" {
            assert_mentions(failed(&run), &["standard output"]);
        } else {
            assert!(run.stderr.contains("cannot be used with"), "{}", run.stderr);
        }
    }
}
