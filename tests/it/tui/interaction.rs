//! The monitor's interaction points: key hints and notices at every size, the notice log,
//! gauges that shorten by rank, the mouse, and the live block-bytes and refresh changes —
//! rendered on hand-built snapshots (`TestBackend`), and the block-bytes change checked on a
//! live ingest thread against a run started with those block bytes.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use litehit_core::projector::Capacity;
use litehit_core::workload::{Workload, WorkloadConfig};
use litehit_live::snapshot::{
    FollowState, InputHealth, LaneSnapshot, MemoryGauge, Slot, SourceStatus,
};
use litehit_live::tail::{TailNotice, WakeSource};
use litehit_live::{Command, LiveSnapshot};
use litehit_tui::app::{App, Mode};

const SIZES: [(u16, u16); 3] = [(120, 40), (80, 24), (60, 20)];

fn screen(snap: &LiveSnapshot, app: &App, width: u16, height: u16) -> Vec<String> {
    crate::tui::render::screen_rows(snap, app, width, height)
}

fn key(app: &mut App, code: KeyCode) -> Option<Command> {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE))
}

fn type_text(app: &mut App, text: &str) {
    for ch in text.chars() {
        key(app, KeyCode::Char(ch));
    }
}

/// `lanes` instances with large numbers (the widest gauges), a fresh file notice and write
/// events (a KVCM log).
fn fleet(lanes: usize) -> LiveSnapshot {
    LiveSnapshot {
        uptime: Duration::from_secs(75),
        source: SourceStatus {
            path: "/var/log/kvcm/event_publisher.log".to_owned(),
            state: FollowState::CatchingUp,
            wake: WakeSource::Events,
            backlog_bytes: 3_456_789_012,
            unterminated_bytes: 0,
            consumed_bytes: 1 << 30,
            catch_up_eta: Some(Duration::from_secs(754)),
            last_notice: Some((TailNotice::Opened, Duration::from_secs(3))),
            read_error: None,
            reading: None,
            queued: 0,
            lost_bytes: 0,
            lost_files: 0,
            format: None,
            converted_from: None,
        },
        slots: vec![
            Slot {
                id: 1,
                capacity: Capacity::Gigabytes(10.0),
            },
            Slot {
                id: 2,
                capacity: Capacity::Gigabytes(40.0),
            },
        ],
        lanes: (0..lanes)
            .map(|index| LaneSnapshot {
                instance_id: format!("instance-{index}"),
                block_size_tokens: 16,
                block_bytes: 2 << 20,
                requests: 123_456_789,
                input_tokens: 98_765_432_100,
                request_blocks: 6_172_839_506,
                unique_blocks: 987_654_321,
                slot_hit_blocks: vec![1_000_000_000, 2_000_000_000],
                infinite_hit_blocks: 3_000_000_000,
                ..LaneSnapshot::default()
            })
            .collect(),
        memory: MemoryGauge {
            core_bytes: 12_345_678_901,
            accumulator_bytes: 2_345_678_901,
            facts_buffer_bytes: 8 << 20,
            facts_on_disk_bytes: 98_765_432_109,
            monitor_bytes: 45_678_901,
        },
        health: InputHealth {
            bad_lines: 12_345,
            out_of_order_timestamps: 67_890,
            write_events: 1_234_567,
            ..InputHealth::default()
        },
        facts_rows: 123_456_789,
        ..LiveSnapshot::default()
    }
    .finished()
}

#[test]
fn key_hints_stay_whole_under_a_notice_at_every_size() {
    let snap = fleet(4);
    let mut app = App::default();
    app.observe(&snap);
    for (width, height) in SIZES {
        let lines = screen(&snap, &app, width, height);
        let hints = lines.last().unwrap();
        let notice = &lines[lines.len() - 2];
        assert!(
            hints.contains("? help") && hints.contains("q quit"),
            "{width}×{height}: {hints:?}"
        );
        assert!(
            notice.contains("opened /var/log/kvcm"),
            "{width}×{height}: the notice takes its own line: {notice:?}"
        );
        assert!(hints.trim_end().ends_with("q quit"), "{hints:?}");
        // The title names how the file is watched and the refresh rate.
        assert!(lines[0].contains("notify · 10 fps"), "{:?}", lines[0]);
    }
}

/// The text inside the gauges box, a line each (borders dropped).
fn gauge_lines(lines: &[String]) -> Vec<String> {
    let top = lines
        .iter()
        .position(|line| line.contains(" gauges "))
        .expect("gauges drawn");
    lines[top + 1..]
        .iter()
        .take_while(|line| !line.starts_with('└'))
        .map(|line| line.trim_matches('│').to_owned())
        .collect()
}

#[test]
fn gauges_drop_or_shorten_whole_parts_and_never_cut_a_number() {
    let snap = fleet(1);
    let app = App::default();
    let wide = gauge_lines(&screen(&snap, &app, 240, 60));
    let numbers = |line: &str| -> Vec<String> {
        line.split([' ', '(', ')', '~'])
            .filter(|word| word.chars().any(|ch| ch.is_ascii_digit()))
            .map(str::to_owned)
            .collect()
    };
    assert!(
        wide[4].contains("1.23M write events ignored (not lookups)"),
        "KVCM writes are counted: {wide:?}"
    );
    for (width, height) in [(80, 40), (60, 30)] {
        let narrow = gauge_lines(&screen(&snap, &app, width, height));
        for (narrow_line, wide_line) in narrow.iter().zip(&wide) {
            assert!(
                narrow_line.ends_with(' '),
                "{width}: the line reaches the border (cut?): {narrow_line:?}"
            );
            let wide_numbers = numbers(wide_line);
            for number in numbers(narrow_line) {
                assert!(
                    wide_numbers.contains(&number),
                    "{width}: {number:?} is not a whole value of {wide_line:?}"
                );
            }
            // Every word shown is whole: a word of the wide line or a short form.
            for word in narrow_line.split_whitespace() {
                assert!(
                    wide_line.split_whitespace().any(|wide| wide == word)
                        || ["acc", "buffer", "mon", "left", "writes", "disk"].contains(&word),
                    "{width}: {word:?} is cut in {narrow_line:?}"
                );
            }
        }
        // What matters most stays: blocks, RAM, rows, the request rate and bad lines.
        let text = narrow.join("\n");
        for kept in ["blocks", "in RAM", "rows", "req/s", "bad lines", "ignored"] {
            assert!(text.contains(kept), "{width}: {kept} dropped:\n{text}");
        }
    }
}

#[test]
fn the_notice_log_lists_every_notice_with_its_time() {
    let mut snap = fleet(2);
    let mut app = App::default();
    snap.source.last_notice = Some((TailNotice::Waiting, Duration::from_secs(0)));
    snap.uptime = Duration::from_secs(2);
    app.observe(&snap);
    snap.source.last_notice = Some((TailNotice::Opened, Duration::from_secs(0)));
    snap.uptime = Duration::from_secs(65);
    app.observe(&snap);
    // Long faded from the status line, still in the log.
    snap.uptime = Duration::from_secs(600);
    snap.source.last_notice = Some((TailNotice::Opened, Duration::from_secs(535)));
    app.observe(&snap);
    snap.assumed_block_bytes = Some(1 << 20);
    app.observe(&snap);
    key(&mut app, KeyCode::Char('!'));
    for (width, height) in SIZES {
        let lines = screen(&snap, &app, width, height);
        let text = lines.join("\n");
        let opened = lines
            .iter()
            .position(|line| line.contains("1m05s opened /var/log"))
            .unwrap_or_else(|| panic!("{width}×{height}:\n{text}"));
        let waiting = lines
            .iter()
            .position(|line| line.contains("2s waiting for the trace file"))
            .unwrap_or_else(|| panic!("{width}×{height}:\n{text}"));
        assert!(opened < waiting, "newest first:\n{text}");
        assert!(
            lines.iter().any(|line| line.contains("write events seen")),
            "the write events are said in the log:\n{text}"
        );
        assert!(
            lines
                .iter()
                .any(|line| line.contains("assuming 1.00 MiB per block")),
            "the block-bytes change is in the log:\n{text}"
        );
        assert!(lines.last().unwrap().contains("q quit"), "{text}");
    }
    key(&mut app, KeyCode::Esc);
    assert_eq!(app.mode, Mode::Normal);
}

#[test]
fn a_click_on_a_drawn_row_selects_that_instance() {
    let snap = fleet(30);
    let mut app = App::default();
    app.observe(&snap);
    for (width, height) in SIZES {
        app.selected_row = 0;
        let lines = screen(&snap, &app, width, height);
        let y = lines
            .iter()
            .position(|line| line.contains("instance-3 "))
            .expect("instance-3 drawn");
        app.handle_mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: 5,
            row: u16::try_from(y).unwrap(),
            modifiers: KeyModifiers::NONE,
        });
        assert_eq!(app.selected_lane(), Some(3), "{width}×{height}");
        // (The table may scroll to centre the selection.)
        let lines = screen(&snap, &app, width, height);
        assert!(
            lines.iter().any(|line| line.contains("▶ instance-3 ")),
            "{width}×{height}:\n{}",
            lines.join("\n")
        );
        // The pinned totals row is clickable too.
        let total = lines
            .iter()
            .position(|line| line.contains("│  total"))
            .unwrap();
        app.handle_mouse(MouseEvent {
            kind: MouseEventKind::Down(MouseButton::Left),
            column: 5,
            row: u16::try_from(total).unwrap(),
            modifiers: KeyModifiers::NONE,
        });
        assert_eq!(app.selected_lane(), None, "{width}×{height}: totals");
        // The wheel scrolls the table.
        for _ in 0..5 {
            app.handle_mouse(MouseEvent {
                kind: MouseEventKind::ScrollUp,
                column: 0,
                row: 0,
                modifiers: KeyModifiers::NONE,
            });
        }
        let lines = screen(&snap, &app, width, height);
        assert!(
            lines.iter().any(|line| line.contains("▶ instance-15")),
            "{width}×{height}:\n{}",
            lines.join("\n")
        );
    }
}

#[test]
fn dialogs_show_their_refusals_whole_at_60_by_20() {
    let snap = fleet(1);
    let mut app = App::default();
    app.observe(&snap);
    key(&mut app, KeyCode::Char('a'));
    type_text(&mut app, "-5");
    key(&mut app, KeyCode::Enter);
    let text = screen(&snap, &app, 60, 20).join("\n");
    // The slot policy's message, whole (wrapped at words).
    let words: Vec<&str> = text
        .lines()
        .flat_map(|line| line.split(['│', ' ']))
        .filter(|word| !word.is_empty())
        .collect();
    let expected =
        "unlimited (inf, or any negative size) is always shown (the ∞ column); leave it out";
    assert!(words.join(" ").contains(expected), "{text}");
    key(&mut app, KeyCode::Esc);
    key(&mut app, KeyCode::Char('b'));
    type_text(&mut app, "0");
    key(&mut app, KeyCode::Enter);
    let text = screen(&snap, &app, 60, 20).join("\n");
    assert!(text.contains("KV bytes per block"), "{text}");
    assert!(text.contains("now 2.00 MiB per block"), "{text}");
    assert!(text.contains("0 bytes per block"), "{text}");
    key(&mut app, KeyCode::Esc);
    assert_eq!(
        key(&mut app, KeyCode::Char('+')),
        Some(Command::SetFramePeriod(Duration::from_millis(50)))
    );
    let title = &screen(&snap, &app, 80, 24)[0];
    assert!(title.contains("20 fps"), "{title}");
}

/// A live ingest thread reading `trace` to its end, with these flags.
fn live_run(
    trace: &std::path::Path,
    block_bytes: &str,
    dir: &std::path::Path,
) -> litehit_live::LiveHandle {
    let trace = trace.display().to_string();
    let cli = <litehit::cli::Cli as clap::Parser>::parse_from([
        "litehit",
        "watch",
        trace.as_str(),
        "--headless",
        "--block-size",
        "4",
        "--block-bytes",
        block_bytes,
        "--capacity-gb",
        "0.001,700b,0.0001",
    ]);
    let litehit::cli::Command::Watch(args) = cli.command else {
        panic!("watch expected")
    };
    let mut config = litehit::commands::watch::ingest_config(&args).unwrap();
    config.spill_dir = Some(dir.to_path_buf());
    config.frame_period = Duration::from_millis(10);
    config.exit_at_eof = true;
    litehit_live::ingest::spawn(config).unwrap()
}

fn wait_for(
    live: &litehit_live::LiveHandle,
    what: &str,
    done: impl Fn(&LiveSnapshot) -> bool,
) -> std::sync::Arc<LiveSnapshot> {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let snap = live.latest();
        if done(&snap) {
            return snap;
        }
        assert!(Instant::now() < deadline, "still not {what}");
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// Each lane's hit blocks per slot capacity, in the slots' order.
fn by_slot(snap: &LiveSnapshot) -> Vec<(String, Vec<(String, u64)>)> {
    snap.lanes
        .iter()
        .map(|lane| {
            (
                lane.instance_id.clone(),
                snap.slots
                    .iter()
                    .zip(&lane.slot_hit_blocks)
                    .map(|(slot, &hits)| (format!("{:?}", slot.capacity), hits))
                    .collect(),
            )
        })
        .collect()
}

#[test]
fn a_block_bytes_change_re_projects_as_a_run_started_with_them() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let mut text = String::new();
    let workload = Workload::new(WorkloadConfig {
        seed: 5,
        instance_ids: vec!["i1".into(), "i2".into()],
        block_size_tokens: 4,
        live_conversations: 30,
        max_request_blocks: 60,
        ..WorkloadConfig::default()
    });
    for request in workload.take(800) {
        request.to_standard_jsonl(&mut text);
    }
    std::fs::write(&trace, &text).unwrap();
    let finished = |snap: &LiveSnapshot| snap.source.state == FollowState::Finished;

    let changed = live_run(&trace, "1024", dir.path());
    let before = wait_for(&changed, "at the end", finished);
    changed.send(Command::SetBlockBytes(2048));
    let after = wait_for(&changed, "re-projected", |snap| {
        snap.assumed_block_bytes == Some(2048)
    });
    let fresh = live_run(&trace, "2048", dir.path());
    let expected = wait_for(&fresh, "at the end", finished);

    assert_eq!(
        by_slot(&after),
        by_slot(&expected),
        "the same as a run at 2048 B"
    );
    assert_ne!(by_slot(&before), by_slot(&after), "the GB slots moved");
    assert!(after.lanes.iter().all(|lane| lane.block_bytes == 2048));
    // Blocks and the ∞ bound do not depend on block bytes.
    for (old, new) in before.lanes.iter().zip(&after.lanes) {
        assert_eq!(old.infinite_hit_blocks, new.infinite_hit_blocks);
        assert_eq!(old.requests, new.requests, "no replay");
    }
    // Sorted by block count: at 1 KiB/block 700b lies between 0.0001 GB (104 blocks) and
    // 0.001 GB (1048); at 2 KiB/block 0.001 GB is 524 blocks, below 700b.
    let order = |snap: &LiveSnapshot| -> Vec<String> {
        snap.slots
            .iter()
            .map(|slot| format!("{:?}", slot.capacity))
            .collect()
    };
    assert_eq!(
        order(&before),
        ["Gigabytes(0.0001)", "Blocks(700)", "Gigabytes(0.001)"]
    );
    assert_eq!(
        order(&after),
        ["Gigabytes(0.0001)", "Gigabytes(0.001)", "Blocks(700)"]
    );
    assert_eq!(order(&after), order(&expected));
    changed.send(Command::Shutdown);
    fresh.send(Command::Shutdown);
}
