//! Following a trace file: partial lines, truncation, rotation, late creation.

use std::fmt::Write as _;
use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::Path;

use litehit::live::tail::{StartAt, TailNotice, Tailer};

fn append(path: &Path, bytes: &str) {
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .unwrap();
    file.write_all(bytes.as_bytes()).unwrap();
}

/// Checks and reads until nothing more comes; returns the lines and notices seen.
fn drain(tailer: &mut Tailer) -> (Vec<String>, Vec<TailNotice>) {
    let mut lines = Vec::new();
    let mut notices = Vec::new();
    for _ in 0..100 {
        if let Some(notice) = tailer.check().unwrap() {
            notices.push(notice);
        }
        let (chunk, notice) = tailer.read_chunk().unwrap();
        let got = !chunk.is_empty() || notice.is_some();
        assert!(
            chunk.is_empty() || chunk.ends_with(b"\n"),
            "only complete lines"
        );
        lines.extend(
            String::from_utf8(chunk.to_vec())
                .unwrap()
                .lines()
                .map(str::to_owned),
        );
        notices.extend(notice);
        if !got {
            break;
        }
    }
    (lines, notices)
}

#[test]
fn partial_lines_wait_for_their_newline() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    append(&path, "one\ntw");
    let mut tailer = Tailer::new(&path, StartAt::Beginning);
    let (lines, notices) = drain(&mut tailer);
    assert_eq!(lines, ["one"]);
    assert_eq!(notices, [TailNotice::Opened]);
    assert_eq!(tailer.pending_partial_bytes(), 2);
    assert_eq!(
        tailer.backlog_bytes(),
        2,
        "the partial line is still behind"
    );

    append(&path, "o\nthr");
    assert_eq!(drain(&mut tailer).0, ["two"]);
    append(&path, "ee");
    assert!(drain(&mut tailer).0.is_empty());
    append(&path, "\n");
    assert_eq!(drain(&mut tailer).0, ["three"]);
    assert_eq!(tailer.backlog_bytes(), 0);
}

#[test]
fn byte_by_byte_appends_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    let text: String = (0..50).fold(String::new(), |mut text, i| {
        writeln!(text, "line-{i}").unwrap();
        text
    });
    let mut tailer = Tailer::new(&path, StartAt::Beginning);
    let mut lines = Vec::new();
    for ch in text.chars() {
        append(&path, &ch.to_string());
        lines.extend(drain(&mut tailer).0);
    }
    let expected: Vec<String> = (0..50).map(|i| format!("line-{i}")).collect();
    assert_eq!(lines, expected);
}

#[test]
fn long_lines_grow_the_buffer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    let long = "x".repeat(1_000_000);
    append(&path, &format!("{long}\nshort\n"));
    let mut tailer = Tailer::new(&path, StartAt::Beginning);
    let (lines, _) = drain(&mut tailer);
    assert_eq!(lines.len(), 2);
    assert_eq!(lines[0].len(), 1_000_000);
    assert_eq!(lines[1], "short");
}

#[test]
fn truncation_restarts_from_the_top() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    append(&path, "a\nb\nc\n");
    let mut tailer = Tailer::new(&path, StartAt::Beginning);
    assert_eq!(drain(&mut tailer).0, ["a", "b", "c"]);
    let generation = tailer.generation();

    // copytruncate: the file is emptied in place and the writer goes on.
    OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(&path)
        .unwrap();
    append(&path, "d\n");
    let (lines, notices) = drain(&mut tailer);
    assert_eq!(notices, [TailNotice::Truncated]);
    assert_eq!(lines, ["d"]);
    assert!(tailer.generation() > generation);
}

#[test]
fn rename_and_recreate_reads_old_tail_then_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    append(&path, "a\n");
    let mut tailer = Tailer::new(&path, StartAt::Beginning);
    assert_eq!(drain(&mut tailer).0, ["a"]);

    // The writer appends a last line (unterminated) just before logrotate renames the file.
    append(&path, "b\nc");
    fs::rename(&path, dir.path().join("trace.jsonl.1")).unwrap();
    append(&path, "d\n");
    let (lines, notices) = drain(&mut tailer);
    assert_eq!(lines, ["b", "c", "d"], "old file read to its end first");
    assert_eq!(notices, [TailNotice::Replaced]);

    append(&path, "e\n");
    assert_eq!(drain(&mut tailer).0, ["e"]);
}

#[test]
fn deleted_file_is_waited_for() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    append(&path, "a\n");
    let mut tailer = Tailer::new(&path, StartAt::Beginning);
    drain(&mut tailer);
    fs::remove_file(&path).unwrap();
    let (lines, notices) = drain(&mut tailer);
    assert!(lines.is_empty());
    assert_eq!(notices, [TailNotice::Deleted]);
    assert!(!tailer.is_open());

    append(&path, "b\n");
    let (lines, notices) = drain(&mut tailer);
    assert_eq!(lines, ["b"]);
    assert_eq!(notices, [TailNotice::Opened]);
}

#[test]
fn file_created_late_is_read_from_its_start() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("later.jsonl");
    let mut tailer = Tailer::new(&path, StartAt::End);
    let (lines, notices) = drain(&mut tailer);
    assert!(lines.is_empty());
    assert_eq!(notices, [TailNotice::Waiting]);
    // Waiting is reported once, not on every check.
    assert!(drain(&mut tailer).1.is_empty());

    append(&path, "x\ny\n");
    let (lines, notices) = drain(&mut tailer);
    assert_eq!(notices, [TailNotice::Opened]);
    // `--from-end` skips history that existed at startup; a file born later is all new.
    assert_eq!(lines, ["x", "y"]);
}

#[test]
fn from_end_skips_existing_lines_and_a_partial_tail() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    append(&path, "old1\nold2\nhalf");
    let mut tailer = Tailer::new(&path, StartAt::End);
    assert!(drain(&mut tailer).0.is_empty());
    append(&path, "-line\nnew\n");
    assert_eq!(drain(&mut tailer).0, ["new"]);
}
