//! Following a trace file: partial lines, truncation, rotation, late creation.

use std::fmt::Write as _;
use std::fs::{self, OpenOptions};
use std::io::Write as _;
use std::path::Path;
use std::time::Duration;

use litehit_live::tail::{StartAt, TailNotice, Tailer};

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
fn a_paused_reader_still_learns_how_far_behind_it_is() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    append(&path, "one\n");
    let mut tailer = Tailer::new(&path, StartAt::Beginning);
    assert_eq!(drain(&mut tailer).0, ["one"]);
    assert_eq!(tailer.backlog_bytes(), 0);
    append(&path, "two\nthree\n");
    assert!(tailer.refresh_len(), "the file grew");
    assert_eq!(tailer.backlog_bytes(), 10, "nothing read, the lag counted");
    assert!(!tailer.refresh_len(), "no change since");
    assert_eq!(
        drain(&mut tailer).0,
        ["two", "three"],
        "resuming loses nothing"
    );
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
    let mut tailer = Tailer::new(&path, StartAt::Beginning).with_rotation_grace(Duration::ZERO);
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
    let mut tailer = Tailer::new(&path, StartAt::Beginning).with_rotation_grace(Duration::ZERO);
    drain(&mut tailer);
    fs::remove_file(&path).unwrap();
    let (lines, notices) = drain(&mut tailer);
    assert!(lines.is_empty());
    assert_eq!(notices, [TailNotice::Deleted]);
    // A writer holding the old file may still append to it: it stays open until a new file
    // appears at the path.
    assert!(tailer.is_open());
    assert!(drain(&mut tailer).1.is_empty(), "reported once");

    append(&path, "b\n");
    let (lines, notices) = drain(&mut tailer);
    assert_eq!(lines, ["b"]);
    assert_eq!(notices, [TailNotice::Replaced]);
}

#[test]
fn a_writer_still_appending_to_the_renamed_file_loses_nothing() {
    // The writer (holding the file open) appends a few more lines to it after the rename,
    // and only then reopens the path as a new file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    append(&path, "a\n");
    let mut writer = fs::OpenOptions::new().append(true).open(&path).unwrap();
    let mut tailer = Tailer::new(&path, StartAt::Beginning).with_rotation_grace(Duration::ZERO);
    assert_eq!(drain(&mut tailer).0, ["a"]);

    fs::rename(&path, dir.path().join("trace.jsonl.1")).unwrap();
    let (lines, notices) = drain(&mut tailer);
    assert!(lines.is_empty());
    assert_eq!(notices, [TailNotice::Deleted]);
    writer.write_all(b"b\nc\n").unwrap();
    assert_eq!(
        drain(&mut tailer).0,
        ["b", "c"],
        "the renamed file is still followed"
    );
    writer.write_all(b"d\n").unwrap();
    append(&path, "e\n");
    let (lines, notices) = drain(&mut tailer);
    assert_eq!(lines, ["d", "e"], "its end, then the new file");
    assert_eq!(notices, [TailNotice::Replaced]);
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

mod ingest {
    //! The ingest thread over a real file: state survives truncation and rotation, bad lines
    //! are counted and shown, a late file is waited for.

    use std::path::Path;
    use std::sync::Arc;
    use std::time::{Duration, Instant};

    use litehit_core::config::{SingleInstanceFlags, resolve_single_instance};
    use litehit_core::projector::Capacity;
    use litehit_live::ingest::{IngestConfig, spawn};
    use litehit_live::snapshot::FollowState;
    use litehit_live::tail::TailNotice;
    use litehit_live::{Command, LiveHandle, LiveSnapshot};

    use super::append;

    fn line(instance: &str, timestamp_ns: i64, keys: &[i64]) -> String {
        let keys: Vec<String> = keys.iter().map(i64::to_string).collect();
        format!(
            "{{\"type\":\"get\",\"instance_id\":\"{instance}\",\"timestamp_ns\":{timestamp_ns},\"keys\":[{}],\"input_len\":{}}}\n",
            keys.join(","),
            keys.len() * 4
        )
    }

    fn start(path: &std::path::Path, dir: &std::path::Path) -> LiveHandle {
        start_with(path, dir, false)
    }

    fn start_with(
        path: &std::path::Path,
        dir: &std::path::Path,
        force_polling: bool,
    ) -> LiveHandle {
        let flags = SingleInstanceFlags {
            block_size_tokens: Some(4),
            block_bytes: Some(1024),
            ..SingleInstanceFlags::default()
        };
        let engine = resolve_single_instance(&flags).unwrap().engine;
        let mut config = IngestConfig::new(path, engine);
        config.slots = vec![Capacity::Blocks(2), Capacity::Infinite];
        config.frame_period = Duration::from_millis(10);
        config.spill_dir = Some(dir.to_path_buf());
        config.facts_out = dir.join("facts.csv");
        config.force_polling = force_polling;
        spawn(config).unwrap()
    }

    fn wait(
        live: &LiveHandle,
        what: &str,
        ready: impl Fn(&LiveSnapshot) -> bool,
    ) -> Arc<LiveSnapshot> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let snap = live.latest();
            if ready(&snap) {
                return snap;
            }
            assert!(
                Instant::now() < deadline,
                "timed out waiting for {what}: {snap:#?}"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn requests(snap: &LiveSnapshot) -> u64 {
        snap.lanes.iter().map(|lane| lane.requests).sum()
    }

    /// `litehit watch PATH --headless FLAGS`, resolved as the command resolves it.
    fn watch_from_the_command_line(path: &Path, dir: &Path, flags: &[&str]) -> LiveHandle {
        let mut command_line = vec!["litehit", "watch", path.to_str().unwrap(), "--headless"];
        command_line.extend_from_slice(flags);
        let cli = <litehit::cli::Cli as clap::Parser>::parse_from(command_line);
        let litehit::cli::Command::Watch(args) = cli.command else {
            panic!("watch expected")
        };
        let mut config = litehit::commands::watch::ingest_config(&args).unwrap();
        config.frame_period = Duration::from_millis(10);
        config.spill_dir = Some(dir.to_path_buf());
        spawn(config).unwrap()
    }

    /// `count` generated Mooncake lines (512-token blocks, dense ids).
    fn mooncake_lines(count: usize) -> String {
        let mut workload =
            litehit_core::workload::Workload::new(litehit_core::workload::WorkloadConfig {
                key_style: litehit_core::workload::KeyStyle::Dense,
                block_size_tokens: 512,
                ..litehit_core::workload::WorkloadConfig::default()
            });
        let mut request = litehit_core::workload::SyntheticRequest::default();
        let mut text = String::new();
        for _ in 0..count {
            workload.fill_next(&mut request);
            request.to_mooncake_jsonl(&mut text);
        }
        text
    }

    #[test]
    fn a_file_created_later_is_read_in_the_format_its_first_line_has() {
        a_file_created_later_is_read_in_its_format(&[]);
    }

    #[test]
    fn bad_lines_before_the_first_readable_one_do_not_decide_the_format() {
        // Before this was fixed, a bad first line kept the standard format's 256-token
        // blocks, so every Mooncake line after it was rejected (or accepted at the wrong
        // block size).
        a_file_created_later_is_read_in_its_format(&["oops\n", "{\"no\": \"format\"}\n"]);
    }

    #[test]
    fn flags_that_do_not_fit_the_late_format_make_every_line_bad_with_the_reason() {
        // `--block-size 256` cannot come from 512-token Mooncake keys: `replay` says so at
        // once; for a trace created later the monitor says so on every line, instead of
        // quietly keeping the standard format's engine.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("later.jsonl");
        let live = watch_from_the_command_line(&path, dir.path(), &["--block-size", "256"]);
        append(&path, &mooncake_lines(20));
        let snap = wait(&live, "every line", |snap| snap.health.bad_lines == 20);
        assert_eq!(requests(&snap), 0);
        let message = &snap.health.last_error.as_ref().unwrap().message;
        assert!(message.contains("the Mooncake block size 512"), "{message}");
        live.send(Command::Shutdown);
    }

    #[test]
    fn lanes_by_tenant_of_a_late_format_without_tenants_make_every_line_bad_as_replay_refuses() {
        // `--lane-by tenant` on a trace created later that turns out to be Mooncake (rows
        // without a tenant): `replay` refuses it at once; the monitor said nothing and put
        // every row in the lane `-`. Now every line is bad with `replay`'s reason.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("later.jsonl");
        let live = watch_from_the_command_line(&path, dir.path(), &["--lane-by", "tenant"]);
        append(&path, &mooncake_lines(20));
        let snap = wait(&live, "every line", |snap| snap.health.bad_lines == 20);
        assert_eq!(requests(&snap), 0);
        assert!(
            snap.lanes.iter().all(|lane| lane.requests == 0),
            "{snap:#?}"
        );
        let message = snap.health.last_error.as_ref().unwrap().message.clone();
        live.send(Command::Shutdown);
        assert!(
            message.contains("--lane-by tenant: mooncake rows carry no tenant"),
            "{message}"
        );
        let replayed = crate::common::cli_bin::replay_to(
            &path,
            &dir.path().join("out"),
            &["--lane-by", "tenant"],
        );
        let refused = crate::common::cli_bin::failed(&replayed);
        assert!(
            refused.contains(&message),
            "replay: {refused}\nwatch: {message}"
        );
    }

    #[test]
    fn lanes_by_tenant_of_a_late_standard_trace_are_its_tenants() {
        // The control: a late standard trace with tenants gets one lane per tenant (and `-`
        // for a row without one), as `replay --lane-by tenant` names them.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("later.jsonl");
        let live = watch_from_the_command_line(&path, dir.path(), &["--lane-by", "tenant"]);
        let rows: String = ["a", "b", "a", ""]
            .iter()
            .enumerate()
            .map(|(index, tenant)| {
                let tenant = if tenant.is_empty() {
                    String::new()
                } else {
                    format!(r#""tenant":"{tenant}","#)
                };
                format!(
                    r#"{{"type":"get","instance_id":"i0",{tenant}"timestamp_ns":{},"keys":[1,2],"input_len":512}}"#,
                    index + 1
                ) + "\n"
            })
            .collect();
        append(&path, &rows);
        let snap = wait(&live, "every row", |snap| requests(snap) == 4);
        live.send(Command::Shutdown);
        assert_eq!(snap.health.bad_lines, 0);
        let mut lanes: Vec<(&str, u64)> = snap
            .lanes
            .iter()
            .map(|lane| (lane.instance_id.as_str(), lane.requests))
            .collect();
        lanes.sort_unstable();
        assert_eq!(lanes, [("-", 1), ("a", 2), ("b", 1)]);
    }

    #[test]
    fn a_slot_of_no_block_at_the_late_format_is_refused_as_the_flag_refuses_it() {
        // Issue #28, item 3: before the format is known the block bytes are not, so
        // `--capacity-gb 0.01` was taken at start and then showed 0 blocks of 64 MiB, which
        // the add-slot dialog and `watch` on an existing trace refuse. Now the ingest thread
        // applies the same policy when the first line names the format.
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("later.jsonl");
        let flags = ["--block-bytes", "64MiB", "--capacity-gb", "10,0.01"];
        let live = watch_from_the_command_line(&path, dir.path(), &flags);
        append(&path, &mooncake_lines(20));
        let snap = wait(&live, "every line", |snap| snap.health.bad_lines == 20);
        assert_eq!(requests(&snap), 0);
        let message = &snap.health.last_error.as_ref().unwrap().message;
        let reason =
            "--capacity-gb: 0.01 GiB is 0 blocks of 64.00 MiB: a slot needs at least one block";
        assert!(message.contains(reason), "{message}");
        live.send(Command::Shutdown);
        // The same flags on the trace once it exists: refused at start, with the same reason.
        let mut command_line = vec!["litehit", "watch", path.to_str().unwrap(), "--headless"];
        command_line.extend_from_slice(&flags);
        let cli = <litehit::cli::Cli as clap::Parser>::parse_from(command_line);
        let litehit::cli::Command::Watch(args) = cli.command else {
            panic!("watch expected")
        };
        let error = litehit::commands::watch::ingest_config(&args).unwrap_err();
        assert!(error.to_string().contains(reason), "{error}");
    }

    /// `litehit watch later.jsonl` before the file exists: the block size comes from the
    /// format of its first readable line (Mooncake: 512 tokens), as for a file that exists;
    /// `bad_first` lines come first and stay counted as bad.
    fn a_file_created_later_is_read_in_its_format(bad_first: &[&str]) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("later.jsonl");
        let live = watch_from_the_command_line(&path, dir.path(), &[]);
        append(&path, &(bad_first.concat() + &mooncake_lines(200)));
        let snap = wait(&live, "every request", |snap| requests(snap) == 200);
        assert_eq!(snap.health.bad_lines, bad_first.len() as u64);
        if !bad_first.is_empty() {
            let last_error = snap.health.last_error.as_ref().unwrap();
            assert_eq!(last_error.line_number, bad_first.len() as u64);
        }
        assert_eq!(snap.lanes[0].block_size_tokens, 512);
        live.send(Command::Shutdown);
    }

    #[test]
    fn slots_added_in_any_order_are_listed_by_size_with_their_own_figures() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        // [1, 2, 3] three times: its second replay finds its blocks 1–3 deep, its third 4–6
        // deep ([4, 5, 6] came between).
        for (timestamp, keys) in [
            (1, [1, 2, 3]),
            (2, [1, 2, 3]),
            (3, [4, 5, 6]),
            (4, [1, 2, 3]),
        ] {
            append(&path, &line("a", timestamp, &keys));
        }
        let live = start(&path, dir.path()); // slots [2 blocks, ∞]
        wait(&live, "four requests", |s| requests(s) == 4);
        live.send(Command::AddSlot(Capacity::Blocks(7)));
        live.send(Command::AddSlot(Capacity::Gigabytes(0.5)));
        live.send(Command::AddSlot(Capacity::Blocks(1)));
        let snap = wait(&live, "five slots", |s| s.slots.len() == 5);
        let capacities: Vec<Capacity> = snap.slots.iter().map(|slot| slot.capacity).collect();
        assert_eq!(
            capacities,
            // By block count (0.5 GB = 524288 blocks of 1 KiB), whatever the unit.
            [
                Capacity::Blocks(1),
                Capacity::Blocks(2),
                Capacity::Blocks(7),
                Capacity::Gigabytes(0.5),
                Capacity::Infinite,
            ]
        );
        // Each figure belongs to its own slot, whatever the order the slots came in: at 1
        // block the second request hits its head only, the fourth ([4, 5, 6] in between)
        // nothing; at 2 blocks 2 + 0; from 6 blocks on 3 + 3.
        let lane = &snap.lanes[0];
        assert_eq!(lane.slot_hit_blocks, [1, 2, 6, 6, 6]);
        assert_eq!(lane.infinite_hit_blocks, 6);
        for window in &snap.timeline.windows {
            for lane_window in &window.lanes {
                assert_eq!(lane_window.slot_hit_tokens.len(), 5, "{window:?}");
            }
        }
        live.send(Command::Shutdown);
    }

    #[test]
    fn truncation_and_rotation_keep_the_accumulated_state() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        append(&path, &line("a", 1, &[1, 2]));
        append(&path, &line("a", 2, &[1, 2]));
        let live = start(&path, dir.path());
        wait(&live, "two requests", |s| requests(s) == 2);

        std::fs::OpenOptions::new()
            .write(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        append(&path, &line("a", 3, &[1, 2]));
        let snap = wait(&live, "a third request after truncation", |s| {
            requests(s) == 3
        });
        assert!(matches!(
            snap.source.last_notice,
            Some((TailNotice::Truncated, _))
        ));
        // Keys 1, 2 were seen before the truncation: the state is kept, so they hit.
        assert_eq!(snap.lanes[0].slot_hit_blocks, [4, 4]);

        std::fs::rename(&path, dir.path().join("trace.jsonl.1")).unwrap();
        append(&path, &line("b", 4, &[7]));
        append(&path, &line("a", 5, &[1, 2]));
        let snap = wait(&live, "requests from the new file", |s| requests(s) == 5);
        // Seen between the rename and the create, the path is briefly missing: the new file
        // is then "opened" rather than "replaced". Either way the state is kept.
        assert!(
            matches!(
                snap.source.last_notice,
                Some((TailNotice::Replaced | TailNotice::Opened, _))
            ),
            "{:?}",
            snap.source.last_notice
        );
        assert_eq!(snap.lanes.len(), 2, "lane b appeared on the fly");
        assert_eq!(snap.lanes[0].slot_hit_blocks, [6, 6]);
        live.shutdown();
    }

    #[test]
    fn bad_lines_are_skipped_counted_and_shown() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        append(&path, &line("a", 10, &[1]));
        append(&path, "{not json\n");
        append(&path, &line("a", 5, &[1])); // out of order: clamped, counted, still replayed
        append(
            &path,
            "{\"type\":\"get\",\"instance_id\":\"a\",\"timestamp_ns\":20,\"keys\":[1,2],\"input_len\":4}\n",
        );
        append(&path, &line("a", 30, &[1]));
        let live = start(&path, dir.path());
        let snap = wait(&live, "every line", |s| {
            requests(s) == 3 && s.health.bad_lines == 2
        });
        assert_eq!(snap.health.out_of_order_timestamps, 1);
        let error = snap.health.last_error.as_ref().unwrap();
        assert_eq!(
            error.line_number, 4,
            "the key-count mismatch is the last error: {error:?}"
        );
        assert_eq!(snap.facts_rows, 3);
        live.shutdown();
    }

    #[test]
    fn a_file_created_late_is_waited_for_and_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("later.jsonl");
        let live = start(&path, dir.path());
        wait(&live, "the waiting state", |s| {
            s.source.state == FollowState::Waiting
        });
        append(&path, &line("a", 1, &[1]));
        append(
            &path,
            "{\"type\":\"get\",\"instance_id\":\"a\",\"timestamp_ns\":2,",
        );
        wait(&live, "the first request", |s| requests(s) == 1);
        std::thread::sleep(Duration::from_millis(100));
        assert_eq!(
            requests(&live.latest()),
            1,
            "a partial line waits for its newline"
        );
        append(&path, "\"keys\":[1],\"input_len\":4}\n");
        let snap = wait(&live, "the completed line", |s| requests(s) == 2);
        assert_eq!(snap.lanes[0].infinite_hit_blocks, 1);
        live.shutdown();
    }

    #[test]
    fn facts_snapshot_runs_in_the_background_and_matches_the_rows() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        for t in 1..=50 {
            append(&path, &line("a", t, &[1, 2, t + 100]));
        }
        let live = start(&path, dir.path());
        wait(&live, "fifty requests", |s| requests(s) == 50);
        live.send(Command::WriteFacts);
        let snap = wait(&live, "the facts file", |s| {
            matches!(
                s.facts_write,
                litehit_live::snapshot::FactsWrite::Done { .. }
            )
        });
        let text = std::fs::read_to_string(dir.path().join("facts.csv")).unwrap();
        assert_eq!(text.lines().count(), 51);
        assert!(text.starts_with("trace_id,instance_id,"));
        assert!(
            text.lines().nth(2).unwrap().ends_with("\"[[1,2]]\""),
            "{text}"
        );
        assert_eq!(snap.facts_rows, 50);
        // The spill is a visible, named file beside the facts (issue 18: what it takes on
        // disk can be seen), and nothing else is left there.
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names.len(), 3, "{names:?}");
        assert!(
            names[0].starts_with(".facts.csv.") && names[0].rsplit('.').next() == Some("spill"),
            "{names:?}"
        );
        assert_eq!(names[1..], ["facts.csv", "trace.jsonl"]);
        // A second snapshot after more rows reads the spill from its start again.
        for t in 51..=60 {
            append(&path, &line("a", t, &[1, 2, t + 100]));
        }
        wait(&live, "sixty requests", |s| requests(s) == 60);
        live.send(Command::WriteFacts);
        wait(&live, "the second facts file", |s| {
            s.facts_rows == 60
                && matches!(
                    s.facts_write,
                    litehit_live::snapshot::FactsWrite::Done { rows: 60, .. }
                )
        });
        let text = std::fs::read_to_string(dir.path().join("facts.csv")).unwrap();
        assert_eq!(text.lines().count(), 61);
        live.shutdown();
    }

    #[test]
    fn an_unterminated_last_line_is_read_at_quit_as_replay_reads_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        append(&path, &line("a", 1, &[1, 2]));
        append(&path, &line("a", 2, &[1, 2]));
        let last = line("a", 3, &[1, 2]);
        let unterminated = last.trim_end();
        append(&path, unterminated); // no newline, as the shipped KVCM log ends
        let live = start(&path, dir.path());
        let snap = wait(&live, "two requests and the last line seen", |s| {
            requests(s) == 2 && s.source.unterminated_bytes > 0
        });
        assert_eq!(
            snap.source.unterminated_bytes,
            unterminated.len() as u64,
            "the last line waits for its newline"
        );
        assert_eq!(snap.source.backlog_bytes, 0, "and is not lag");
        std::thread::sleep(Duration::from_millis(50));
        assert_eq!(requests(&live.latest()), 2);
        let last = live.shutdown();
        assert_eq!(requests(&last), 3, "read at quit");
        assert_eq!(last.health.bad_lines, 0);
    }

    #[test]
    fn a_busy_writer_keeps_the_monitor_on_file_events() {
        // A writer appending every few milliseconds: lines are often read straight after a read,
        // before their event arrives. That is not a missed event, so the source stays `notify`
        // (it once switched to `polling` within seconds of such a writer).
        const LAST: i64 = 30_000;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        append(&path, &line("a", 1, &[1]));
        let live = start(&path, dir.path());
        wait(&live, "the first line", |s| requests(s) == 1);
        let mut seen_polling = None;
        for request in 2..=LAST {
            append(&path, &line("a", request, &[1, request + 1]));
            if request % 50 != 0 {
                continue;
            }
            std::thread::sleep(Duration::from_millis(1));
            let snap = live.latest();
            if snap.source.wake == litehit_live::tail::WakeSource::Polling {
                seen_polling = Some(requests(&snap));
                break;
            }
        }
        wait(&live, "every line", |s| requests(s) == LAST as u64);
        assert_eq!(
            seen_polling, None,
            "switched to polling after that many requests"
        );
        live.shutdown();
    }

    #[test]
    fn polling_alone_follows_appends() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("trace.jsonl");
        let live = start_with(&path, dir.path(), true);
        append(&path, &line("a", 1, &[1]));
        let snap = wait(&live, "a request without file events", |s| requests(s) == 1);
        assert_eq!(snap.source.wake, litehit_live::tail::WakeSource::Polling);
        append(&path, &line("a", 2, &[1]));
        wait(&live, "a second request", |s| requests(s) == 2);
        live.shutdown();
    }
}

#[test]
fn logrotate_create_keeps_reading_the_old_file_until_it_goes_quiet() {
    // logrotate's `create`: rename, create the new (empty) file at once, and only then tell
    // the writer to reopen; its lines in between still go to the old file.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    append(&path, "a\n");
    let mut writer = fs::OpenOptions::new().append(true).open(&path).unwrap();
    let grace = Duration::from_millis(300);
    let mut tailer = Tailer::new(&path, StartAt::Beginning).with_rotation_grace(grace);
    assert_eq!(drain(&mut tailer).0, ["a"]);

    fs::rename(&path, dir.path().join("trace.jsonl.1")).unwrap();
    append(&path, "");
    assert!(drain(&mut tailer).0.is_empty());
    writer.write_all(b"b\n").unwrap();
    append(&path, "c\n");
    let (lines, notices) = drain(&mut tailer);
    assert_eq!(lines, ["b"], "the old file first, and not left yet");
    assert!(notices.is_empty());
    assert!(
        tailer.switch_pending(),
        "the end of the trace is not reached yet"
    );
    // A late line to the old file starts its quiet period again.
    std::thread::sleep(Duration::from_millis(200));
    writer.write_all(b"b2\n").unwrap();
    assert_eq!(drain(&mut tailer).0, ["b2"]);
    std::thread::sleep(Duration::from_millis(200));
    let (lines, notices) = drain(&mut tailer);
    assert!(
        lines.is_empty() && notices.is_empty(),
        "quiet for 200 ms only"
    );
    std::thread::sleep(grace);
    let (lines, notices) = drain(&mut tailer);
    assert_eq!(
        lines,
        ["c"],
        "once the old file has been quiet for the grace period"
    );
    assert_eq!(notices, [TailNotice::Replaced]);
    assert!(!tailer.switch_pending());
}

/// Makes `link` point at `target` the way `ln -sfn` does: a new symlink renamed over it.
fn point_symlink(link: &Path, target: &Path) {
    let temporary = link.with_extension("flip");
    std::os::unix::fs::symlink(target, &temporary).unwrap();
    fs::rename(&temporary, link).unwrap();
}

/// Issue #27 (High 7): a writer that restarts within the rotation grace and reopens the new
/// file with `"w"` truncates it before its turn; what it held was seen and is counted.
#[test]
fn a_queued_generation_truncated_before_its_turn_is_counted_as_lost() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    let rotated = dir.path().join("trace.jsonl.1");
    append(&path, "a\n");
    // A grace no test outlasts: the old file is left only once its mtime is made old.
    let mut tailer =
        Tailer::new(&path, StartAt::Beginning).with_rotation_grace(Duration::from_secs(3600));
    assert_eq!(drain(&mut tailer).0, ["a"]);

    fs::rename(&path, &rotated).unwrap();
    append(&path, "x\ny\n");
    assert!(
        drain(&mut tailer).0.is_empty(),
        "the old file is in its grace"
    );
    assert_eq!(tailer.queued(), 1);
    // The writer restarts and reopens the new file with "w".
    fs::write(&path, "z\n").unwrap();
    let (lines, notices) = drain(&mut tailer);
    assert!(lines.is_empty());
    assert_eq!(notices, [TailNotice::Truncated]);
    assert_eq!(tailer.lost_bytes(), "x\ny\n".len() as u64);

    let an_hour_ago = std::time::SystemTime::now() - Duration::from_secs(7200);
    fs::File::options()
        .write(true)
        .open(&rotated)
        .unwrap()
        .set_modified(an_hour_ago)
        .unwrap();
    let (lines, notices) = drain(&mut tailer);
    assert_eq!(lines, ["z"], "what the file holds now is read");
    assert_eq!(notices, [TailNotice::Replaced]);
    assert_eq!(tailer.lost_bytes(), "x\ny\n".len() as u64, "counted once");
}

/// Issue #27 (Medium 3): a followed symlink flipped between two files already read reads
/// neither again; what was appended to one since is read, from where reading stopped.
#[test]
fn a_symlink_flipped_back_to_a_file_read_before_resumes_where_it_stopped() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.jsonl"), dir.path().join("b.jsonl"));
    let rows = |name: &str| -> String {
        (0..100).fold(String::new(), |mut text, i| {
            let _ = writeln!(text, "{name}{i}");
            text
        })
    };
    append(&a, &rows("a"));
    append(&b, &rows("b"));
    let link = dir.path().join("trace.jsonl");
    point_symlink(&link, &a);
    let mut tailer = Tailer::new(&link, StartAt::Beginning).with_rotation_grace(Duration::ZERO);
    let mut lines = drain(&mut tailer).0;
    for flip in 0..10 {
        point_symlink(&link, if flip % 2 == 0 { &b } else { &a });
        lines.extend(drain(&mut tailer).0);
    }
    assert_eq!(lines.len(), 200, "each row once, not 1,100");
    assert_eq!(lines[..100], rows("a").lines().collect::<Vec<_>>()[..]);
    assert_eq!(lines[100..], rows("b").lines().collect::<Vec<_>>()[..]);

    // The link is at `a` again; `b` grows while it is not followed, then comes back.
    append(&a, "a100\n");
    append(&b, "b100\n");
    assert_eq!(drain(&mut tailer).0, ["a100"]);
    point_symlink(&link, &b);
    assert_eq!(drain(&mut tailer).0, ["b100"], "from where reading stopped");
    assert_eq!(tailer.lost_bytes(), 0);
}

/// Issue #26: a file whose last line has no newline, renamed away (or deleted) with nothing
/// new at the path, is finished once quiet for the grace: that line is read, once and whole.
#[test]
fn an_unterminated_last_line_is_read_once_its_file_is_renamed_away() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    append(&path, "a\nb");
    let mut tailer = Tailer::new(&path, StartAt::Beginning).with_rotation_grace(Duration::ZERO);
    assert_eq!(
        drain(&mut tailer).0,
        ["a"],
        "at its path, the file may still grow"
    );
    assert_eq!(tailer.pending_partial_bytes(), 1);

    fs::rename(&path, dir.path().join("trace.jsonl.1")).unwrap();
    let (lines, notices) = drain(&mut tailer);
    assert_eq!(lines, ["b"], "renamed away and quiet: it is complete");
    assert_eq!(notices, [TailNotice::Deleted, TailNotice::Waiting]);
    assert!(!tailer.is_open(), "the next file at the path is waited for");
    assert!(
        tailer.vanished_read(),
        "the end of the input for --exit-at-eof"
    );
    assert_eq!(tailer.pending_partial_bytes(), 0);

    append(&path, "c\n");
    let (lines, notices) = drain(&mut tailer);
    assert_eq!(lines, ["c"], "nothing of the old file again");
    assert_eq!(notices, [TailNotice::Opened]);
    assert!(!tailer.vanished_read());
}
