//! Rendered frames of the live monitor on hand-built snapshots (`TestBackend` + insta).

use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use litehit_core::formats::TraceFormat;
use litehit_core::projector::Capacity;
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::{
    CurvePoint, FactsWrite, FollowState, IngestRate, InputHealth, LaneSnapshot, LaneWindow,
    LineErrorView, MemoryGauge, Slot, SourceStatus, Timeline, Window,
};
use litehit_live::tail::{TailNotice, WakeSource};
use litehit_tui::app::App;
use litehit_tui::render;
use ratatui::Terminal;
use ratatui::backend::TestBackend;

fn draw(snap: &LiveSnapshot, app: &App, width: u16, height: u16) -> Terminal<TestBackend> {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| render::draw(frame, snap, app))
        .unwrap();
    terminal
}

/// The drawn screen's rows as text (the one way the screen tests read it).
pub(crate) fn screen_rows(snap: &LiveSnapshot, app: &App, width: u16, height: u16) -> Vec<String> {
    draw(snap, app, width, height)
        .backend()
        .buffer()
        .content()
        .chunks(usize::from(width))
        .map(|row| row.iter().map(ratatui::buffer::Cell::symbol).collect())
        .collect()
}

/// The drawn screen as text, one line per row.
pub(crate) fn screen_text(snap: &LiveSnapshot, app: &App, width: u16, height: u16) -> String {
    screen_rows(snap, app, width, height)
        .into_iter()
        .map(|row| row + "\n")
        .collect()
}

fn key(app: &mut App, code: KeyCode) {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
}

fn slots() -> Vec<Slot> {
    vec![
        Slot {
            id: 1,
            capacity: Capacity::Gigabytes(10.0),
        },
        Slot {
            id: 2,
            capacity: Capacity::Gigabytes(40.0),
        },
        Slot {
            id: 3,
            capacity: Capacity::Blocks(1000),
        },
    ]
}

/// A lane whose curve rises linearly to `infinite_hit_blocks` at `saturation` blocks.
fn lane(
    instance_id: &str,
    requests: u64,
    input_tokens: u64,
    slot_hit_blocks: Vec<u64>,
    infinite: u64,
) -> LaneSnapshot {
    let saturation = 40_000;
    LaneSnapshot {
        instance_id: instance_id.to_owned(),
        block_size_tokens: 16,
        block_bytes: 2 << 20,
        ttl_ns: 0,
        requests,
        input_tokens,
        request_blocks: input_tokens / 16,
        unique_blocks: 52_000,
        ttl_expired_blocks: 0,
        clamped_timestamps: 0,
        slot_hit_blocks,
        infinite_hit_blocks: infinite,
        opt_slot_hit_blocks: None,
        saturation_capacity_blocks: saturation,
        curve: (0..=20)
            .map(|i| CurvePoint {
                capacity_blocks: saturation * i / 20,
                hit_blocks: infinite * i / 20,
            })
            .collect(),
        opt_curve: None,
        core_memory_bytes: 3 << 20,
        accumulator_memory_bytes: 1 << 20,
        memory_horizon_blocks: None,
        tier_hit_blocks: Vec::new(),
        tier_capacity_blocks: Vec::new(),
        tier_lower_bounds: Vec::new(),
        capacity_for_fraction: Vec::new(),
        // Filled by `LiveSnapshot::finished`.
        shared_by: 0,
        slot_capacity_blocks: Vec::new(),
        observed: litehit_core::engine::ObservedCounts::default(),
        observed_effective_capacity_blocks: None,
    }
}

fn timeline(lanes: usize) -> Timeline {
    Timeline {
        window_ns: 10_000_000_000,
        origin_ns: Some(1_000_000_000_000),
        windows: (0..12)
            .map(|i| Window {
                start_ns: 1_000_000_000_000 + i * 10_000_000_000,
                lanes: (0..lanes)
                    .map(|_| LaneWindow {
                        input_tokens: 10_000,
                        slot_hit_tokens: vec![
                            Some(2_000 + 200 * i.unsigned_abs()),
                            Some(4_000 + 100 * i.unsigned_abs()),
                            (i > 6).then_some(1_000),
                        ],
                        infinite_hit_tokens: 6_000,
                    })
                    .collect(),
                pool: None,
                open: i == 11,
            })
            .collect(),
    }
}

fn running(lanes: Vec<LaneSnapshot>) -> LiveSnapshot {
    let lane_count = lanes.len();
    LiveSnapshot {
        sequence: 42,
        uptime: Duration::from_secs(95),
        source: SourceStatus {
            path: "/var/log/kv/trace.jsonl".to_owned(),
            state: FollowState::Following,
            wake: WakeSource::Events,
            backlog_bytes: 0,
            unterminated_bytes: 0,
            consumed_bytes: 12 << 20,
            catch_up_eta: None,
            last_notice: None,
            read_error: None,
            format: Some(TraceFormat::Standard),
            ..SourceStatus::default()
        },
        slots: slots(),
        lanes,
        timeline: timeline(lane_count),
        memory: MemoryGauge {
            core_bytes: 6 << 20,
            accumulator_bytes: 2 << 20,
            facts_buffer_bytes: 512 << 10,
            facts_on_disk_bytes: 40 << 20,
            monitor_bytes: 300 << 10,
        },
        rate: IngestRate {
            requests_per_s: 5_300.0,
            blocks_per_s: 1_250_000.0,
            bytes_per_s: 21.0 * 1024.0 * 1024.0,
        },
        health: InputHealth::default(),
        facts_rows: 120_000,
        ..LiveSnapshot::default()
    }
    .finished()
}

fn one_instance() -> LiveSnapshot {
    running(vec![lane(
        "engine-0",
        120_000,
        9_600_000,
        vec![150_000, 300_000, 20_000],
        360_000,
    )])
}

pub(crate) fn several_instances() -> LiveSnapshot {
    running(vec![
        lane(
            "prefill-a",
            60_000,
            4_800_000,
            vec![90_000, 160_000, 10_000],
            200_000,
        ),
        lane(
            "prefill-b",
            50_000,
            4_000_000,
            vec![40_000, 110_000, 9_000],
            150_000,
        ),
        lane(
            "decode-long-context-7",
            10_000,
            800_000,
            vec![0, 2_000, 500],
            20_000,
        ),
    ])
}

#[test]
fn startup_waiting_for_the_file() {
    let snap = LiveSnapshot {
        source: SourceStatus {
            path: "trace.jsonl".to_owned(),
            state: FollowState::Waiting,
            last_notice: Some((TailNotice::Waiting, Duration::from_secs(1))),
            ..SourceStatus::default()
        },
        slots: slots(),
        ..LiveSnapshot::default()
    }
    .finished();
    let mut app = App::default();
    app.observe(&snap);
    insta::assert_snapshot!(draw(&snap, &app, 120, 40).backend());
}

#[test]
fn one_instance_following() {
    let snap = one_instance();
    let mut app = App::default();
    app.observe(&snap);
    key(&mut app, KeyCode::Right);
    insta::assert_snapshot!(draw(&snap, &app, 120, 40).backend());
}

#[test]
fn several_instances_with_totals_row() {
    let snap = several_instances();
    let mut app = App::default();
    app.observe(&snap);
    key(&mut app, KeyCode::Down);
    insta::assert_snapshot!(draw(&snap, &app, 120, 40).backend());
}

#[test]
fn totals_row_selected_overlays_every_curve() {
    let snap = several_instances();
    let mut app = App::default();
    app.observe(&snap);
    for _ in 0..3 {
        key(&mut app, KeyCode::Down);
    }
    assert_eq!(app.selected_lane(), None);
    insta::assert_snapshot!(draw(&snap, &app, 120, 40).backend());
}

#[test]
fn slot_editor_open_with_a_refusal() {
    let snap = one_instance();
    let mut app = App::default();
    app.observe(&snap);
    key(&mut app, KeyCode::Char('a'));
    for ch in "12x".chars() {
        key(&mut app, KeyCode::Char(ch));
    }
    key(&mut app, KeyCode::Enter);
    insta::assert_snapshot!(draw(&snap, &app, 120, 40).backend());
}

#[test]
fn help_overlay() {
    let snap = one_instance();
    let mut app = App::default();
    app.observe(&snap);
    key(&mut app, KeyCode::Char('?'));
    insta::assert_snapshot!(draw(&snap, &app, 120, 40).backend());
}

#[test]
fn help_overlay_fits_60x20() {
    let snap = several_instances();
    let mut app = App::default();
    app.observe(&snap);
    key(&mut app, KeyCode::Char('?'));
    let screen = screen_text(&snap, &app, 60, 20);
    assert!(screen.contains("↑↓ PgUp PgDn scroll"), "{screen}");
    // What the screen's words mean is below the keys: scrolled to, it is whole.
    for _ in 0..3 {
        key(&mut app, KeyCode::PageDown);
    }
    let screen = screen_text(&snap, &app, 60, 20);
    assert!(screen.contains("notify/polling"), "{screen}");
    insta::assert_snapshot!(draw(&snap, &app, 60, 20).backend());
}

#[test]
fn errors_shown() {
    let mut snap = several_instances();
    snap.health = InputHealth {
        bad_lines: 3,
        last_error: Some(LineErrorView {
            line_number: 1834,
            message: "field \"keys\": expected 13 keys (input_len 6758, block 512), found 14"
                .to_owned(),
        }),
        out_of_order_timestamps: 2,
        ..InputHealth::default()
    };
    snap.source.state = FollowState::CatchingUp;
    snap.source.backlog_bytes = 700 << 20;
    snap.source.catch_up_eta = Some(Duration::from_secs(35));
    snap.source.last_notice = Some((TailNotice::Replaced, Duration::from_secs(4)));
    let mut app = App::default();
    app.observe(&snap);
    insta::assert_snapshot!(draw(&snap, &app, 120, 40).backend());
}

/// Issue #26: an OpenAI log's lone surrogate escapes (read as U+FFFD, the lines kept) are
/// counted on the input gauge line, as `trace`/`replay --format openai` count them offline.
#[test]
fn lone_surrogates_show_on_the_input_gauge() {
    let mut snap = several_instances();
    snap.source.converted_from = Some("openai");
    let app = App::default();
    let screen = screen_text(&snap, &app, 160, 40);
    assert!(!screen.contains("U+FFFD"), "{screen}");
    snap.health.lone_surrogates = 1234;
    let screen = screen_text(&snap, &app, 160, 40);
    assert!(
        screen.contains("1234 lone surrogates read as U+FFFD"),
        "{screen}"
    );
}

#[test]
fn a_long_bad_line_message_keeps_its_end() {
    let mut snap = several_instances();
    snap.health = InputHealth {
        bad_lines: 12031,
        last_error: Some(LineErrorView {
            line_number: 12031,
            message: "field \"hash_ids\": expected 82 keys (or 81 without the partial tail) \
                      (input_length 20774, block 256), found 41 (they fit 512-token blocks)"
                .to_owned(),
        }),
        ..InputHealth::default()
    };
    let mut app = App::default();
    app.observe(&snap);
    let screen = screen_text(&snap, &app, 100, 40);
    let line = screen
        .lines()
        .find(|line| line.contains("last: line 12031"))
        .unwrap_or_else(|| panic!("no error line:\n{screen}"));
    assert!(line.contains("…"), "{line}");
    assert!(line.contains("(they fit 512-token blocks)"), "{line}");
}

#[test]
fn a_finished_facts_write_gives_way_to_newer_notices() {
    let mut snap = one_instance();
    snap.facts_write = FactsWrite::Done {
        path: "/tmp/litehit_facts.csv".to_owned(),
        rows: 787,
        bytes: 40_000,
    };
    snap.source.last_notice = Some((TailNotice::Truncated, Duration::from_secs(2)));
    let status = |snap: &LiveSnapshot| {
        let mut app = App::default();
        app.observe(snap);
        screen_text(snap, &app, 120, 40)
    };
    snap.facts_write_age = Duration::from_secs(3);
    assert!(status(&snap).contains("wrote 787 facts rows"));
    snap.facts_write_age = Duration::from_secs(120);
    let screen = status(&snap);
    assert!(!screen.contains("wrote 787 facts rows"), "{screen}");
    assert!(screen.contains("file truncated"), "{screen}");
}

#[test]
fn an_unterminated_last_line_is_named_not_shown_as_lag() {
    let mut snap = one_instance();
    snap.source.unterminated_bytes = 1110;
    let mut app = App::default();
    app.observe(&snap);
    let screen = screen_text(&snap, &app, 120, 40);
    let title = screen.lines().next().unwrap();
    assert!(
        title.contains("last line unterminated (1.08 KiB)"),
        "{title}"
    );
    assert!(!title.contains("backlog"), "{title}");
    assert!(screen.contains("lag 0 B behind"), "{screen}");
}

#[test]
fn long_instance_ids_that_share_a_prefix_stay_apart() {
    let mut snap = several_instances();
    snap.lanes[0].instance_id = "prefill-node-us-east-1a-000042".to_owned();
    snap.lanes[1].instance_id = "prefill-node-us-east-1a-000043".to_owned();
    let mut app = App::default();
    app.observe(&snap);
    let screen_at = |width: u16| screen_text(&snap, &app, width, 40);
    // Room to spare: the whole ids.
    let wide = screen_at(200);
    assert!(wide.contains("prefill-node-us-east-1a-000042"), "{wide}");
    assert!(wide.contains("prefill-node-us-east-1a-000043"), "{wide}");
    // Little room: cut in the middle, the ends still tell them apart.
    let narrow = screen_at(60);
    // The table's rows (the targets line above it names the selected instance too).
    let id_cells: Vec<&str> = narrow
        .lines()
        .filter(|line| line.starts_with('│') && line.contains("prefill") && line.contains('%'))
        .collect();
    assert_eq!(id_cells.len(), 2, "{narrow}");
    assert!(
        id_cells[0].contains('…') && id_cells[0].contains("000042"),
        "{narrow}"
    );
    assert!(
        id_cells[1].contains('…') && id_cells[1].contains("000043"),
        "{narrow}"
    );
}

#[test]
fn narrow_terminal_40x12() {
    let snap = several_instances();
    let mut app = App::default();
    app.observe(&snap);
    key(&mut app, KeyCode::Right);
    insta::assert_snapshot!(draw(&snap, &app, 40, 12).backend());
}

#[test]
fn tiny_and_odd_sizes_never_panic() {
    let snaps = [LiveSnapshot::default(), one_instance(), several_instances()];
    for snap in &snaps {
        for mode_keys in [&[][..], &[KeyCode::Char('?')], &[KeyCode::Char('a')]] {
            let mut app = App::default();
            app.observe(snap);
            for &code in mode_keys {
                key(&mut app, code);
            }
            for (width, height) in [
                (1, 1),
                (2, 3),
                (10, 4),
                (20, 6),
                (59, 15),
                (60, 16),
                (80, 24),
                (300, 100),
            ] {
                draw(snap, &app, width, height);
            }
        }
    }
}

#[test]
fn many_instances_scroll_to_keep_the_selected_row_in_view() {
    let lanes: Vec<LaneSnapshot> = (0..30)
        .map(|i| lane(&format!("node-{i:02}"), 100, 16_000, vec![1, 2, 3], 500))
        .collect();
    let snap = running(lanes);
    let mut app = App::default();
    app.observe(&snap);
    let instance_lines = |screen: &str| -> Vec<String> {
        screen
            .lines()
            .filter(|line| line.contains("node-") || line.contains("total"))
            .map(str::to_owned)
            .collect()
    };
    let top = screen_text(&snap, &app, 100, 24);
    assert!(
        top.contains("rows 1–"),
        "the title says rows are hidden:\n{top}"
    );
    assert!(top.contains("▶ node-00"), "{top}");
    let line_of = |screen: &str, what: &str| screen.lines().position(|line| line.contains(what));
    assert!(
        line_of(&top, "│  total ") > line_of(&top, "▶ node-00")
            && line_of(&top, "│  total ") < line_of(&top, "└"),
        "the totals row is pinned below the scrolled rows:\n{top}"
    );
    // Down to the totals row (30 lanes + total): it and the marker stay on screen.
    for _ in 0..30 {
        key(&mut app, KeyCode::Down);
    }
    let bottom = screen_text(&snap, &app, 100, 24);
    let shown = instance_lines(&bottom);
    assert!(
        shown.iter().any(|line| line.contains("▶ total")),
        "{bottom}"
    );
    assert!(bottom.contains("of 30"), "{bottom}");
    assert!(
        !bottom.contains("node-00 "),
        "scrolled past the top:\n{bottom}"
    );
    // Half way: the selected row is shown with rows above and below it.
    for _ in 0..15 {
        key(&mut app, KeyCode::Up);
    }
    let middle = screen_text(&snap, &app, 100, 24);
    let shown = instance_lines(&middle);
    let marker = shown
        .iter()
        .position(|line| line.contains("▶ node-15"))
        .unwrap_or_else(|| panic!("{middle}"));
    assert!(marker > 0 && marker + 1 < shown.len(), "{middle}");
}

#[test]
fn slots_left_out_on_a_narrow_screen_are_counted_in_the_title() {
    let snap = several_instances();
    let mut app = App::default();
    app.observe(&snap);
    let wide = screen_text(&snap, &app, 160, 40);
    assert!(!wide.contains("off screen"), "{wide}");
    let narrow = screen_text(&snap, &app, 52, 40);
    let title = narrow
        .lines()
        .find(|line| line.contains("┌ instances"))
        .unwrap_or_else(|| panic!("{narrow}"));
    assert!(title.contains("off screen (←→)"), "{narrow}");
}

/// `count` instances whose KV bytes fall in 1000–1023.99 MiB (where the column used to cut
/// the leading digit), ids of two lengths.
fn fleet(count: u64) -> LiveSnapshot {
    running(
        (0..count)
            .map(|i| {
                let mut lane = lane(
                    &format!(
                        "node-{i:02}{}",
                        if i % 3 == 0 { "-long-context" } else { "" }
                    ),
                    1_000 + 37 * i,
                    80_000 + 5_000 * i,
                    vec![2_000 + 10 * i, 3_000 + 20 * i, 200 + i],
                    4_000 + 30 * i,
                );
                // 2 MiB blocks: 1001.36 … 1023.x MiB.
                lane.unique_blocks = 500 + (i * 7) % 12;
                lane.block_bytes = (2 << 20) + 1401;
                lane
            })
            .collect(),
    )
}

/// The main screen of the monitor at the sizes people use, for 1, 4 and 60 instances: every
/// number whole (`1003.41 MiB`, not `003.41 MiB`).
#[test]
fn main_screen_at_each_size_and_fleet() {
    for instances in [1, 4, 60] {
        let snap = fleet(instances);
        let mut app = App::default();
        app.observe(&snap);
        for (width, height) in [(200, 60), (120, 40), (80, 24), (60, 20)] {
            let screen = screen_text(&snap, &app, width, height);
            for lane in snap.lanes.iter().take(3) {
                let kv = litehit_core::display::bytes(
                    lane.unique_kv_bytes(),
                    litehit_core::display::Precision::Decimals(2),
                );
                let row = screen
                    .lines()
                    .find(|line| line.contains(&format!(" {} ", lane.instance_id)));
                if let Some(row) = row.filter(|row| row.contains("MiB")) {
                    assert!(row.contains(&kv), "{kv} cut in {row:?}");
                }
            }
            insta::assert_snapshot!(
                format!("main_screen_{instances}_instances_{width}x{height}"),
                draw(&snap, &app, width, height).backend()
            );
        }
    }
}

#[test]
fn quit_asks_first_when_facts_would_be_lost() {
    let snap = several_instances();
    let mut app = App::default();
    app.observe(&snap);
    key(&mut app, KeyCode::Char('q'));
    assert!(!app.quitting);
    for (width, height) in [(120, 40), (60, 20)] {
        insta::assert_snapshot!(
            format!("quit_asks_first_{width}x{height}"),
            draw(&snap, &app, width, height).backend()
        );
    }
}

/// 60 instances sorted by the selected slot, then filtered: the title names both, the totals
/// row stays pinned, and wide (CJK) ids are cut in the middle by display width.
#[test]
fn a_big_fleet_sorted_filtered_and_paged() {
    let mut snap = fleet(60);
    snap.lanes[7].instance_id = "推理节点-上海-第七机房-0007".to_owned();
    snap.lanes[8].instance_id = "推理节点-上海-第七机房-0008".to_owned();
    let mut app = App::default();
    app.observe(&snap);
    key(&mut app, KeyCode::Right); // the 40 GiB slot
    for _ in 0..3 {
        key(&mut app, KeyCode::Char('o'));
    }
    let sorted = screen_text(&snap, &app, 120, 40);
    assert!(sorted.contains("by 40 GiB ↓"), "{sorted}");
    insta::assert_snapshot!(
        "big_fleet_sorted_120x40",
        draw(&snap, &app, 120, 40).backend()
    );
    key(&mut app, KeyCode::PageDown);
    insta::assert_snapshot!("big_fleet_paged_80x24", draw(&snap, &app, 80, 24).backend());
    key(&mut app, KeyCode::Char('/'));
    for ch in "上海".chars() {
        key(&mut app, KeyCode::Char(ch));
    }
    key(&mut app, KeyCode::Enter);
    let filtered = screen_text(&snap, &app, 60, 20);
    // (The text dump puts a blank after each wide character.)
    assert!(filtered.contains(": 2 of 60"), "{filtered}");
    assert!(
        filtered.contains("-0007") && filtered.contains("-0008"),
        "{filtered}"
    );
    insta::assert_snapshot!(
        "big_fleet_filtered_60x20",
        draw(&snap, &app, 60, 20).backend()
    );
}

/// On the totals row of a big fleet, the curve panel says how many of the curves it draws.
#[test]
fn every_instance_says_how_many_curves_it_draws() {
    let mut app = App::default();
    let snap = fleet(60);
    app.observe(&snap);
    key(&mut app, KeyCode::Char('G'));
    let screen = screen_text(&snap, &app, 120, 40);
    assert!(screen.contains("6 of 60 drawn (table order)"), "{screen}");
    let snap = fleet(4);
    app.observe(&snap);
    key(&mut app, KeyCode::Char('G'));
    let screen = screen_text(&snap, &app, 120, 40);
    assert!(screen.contains("every instance (4 drawn)"), "{screen}");
}

/// A lane shaped like `demo --instances 1` after a few seconds (2 MiB blocks, 83 % at ∞,
/// knees at about 2 / 34 / 56 / 124 GiB, the curve sampled to 128 GiB), slots 10/40/80 GiB.
fn demo_like_lane() -> LaneSnapshot {
    // (capacity in 1/32 GiB, per mille of ∞)
    let knots = [
        (1, 50),
        (4, 200),
        (16, 350),
        (64, 500),
        (256, 750),
        (512, 850),
        (34 * 32, 900),
        (56 * 32, 950),
        (124 * 32, 990),
        (128 * 32, 1000),
    ];
    lane_of_knots(&knots, [64, 34 * 32, 56 * 32, 124 * 32])
}

/// A lane of 2 MiB blocks, 83 % at ∞, whose curve joins `knots` (capacity in 1/32 GiB, per
/// mille of ∞; the last at 128 GiB), its 50/90/95/99 % knees at `knees` (1/32 GiB).
fn lane_of_knots(knots: &[(u64, u64)], knees: [u64; 4]) -> LaneSnapshot {
    const GIB: u64 = 512; // blocks of 2 MiB
    let input_tokens = 31_280_000;
    let infinite = input_tokens / 16 * 83 / 100;
    let hits_at = |thirty_seconds: u64| -> u64 {
        let mut previous = (0, 0);
        for &(at, per_mille) in knots {
            if thirty_seconds <= at {
                let (from, base) = previous;
                let share = base + (per_mille - base) * (thirty_seconds - from) / (at - from);
                return infinite * share / 1000;
            }
            previous = (at, per_mille);
        }
        infinite
    };
    let blocks = |thirty_seconds: u64| thirty_seconds * GIB / 32;
    LaneSnapshot {
        curve: std::iter::once(0)
            .chain((0..=12).map(|doubling| 1 << doubling))
            .map(|thirty_seconds| CurvePoint {
                capacity_blocks: blocks(thirty_seconds),
                hit_blocks: hits_at(thirty_seconds),
            })
            .collect(),
        slot_hit_blocks: [10, 40, 80].map(|gib| hits_at(gib * 32)).to_vec(),
        capacity_for_fraction: [50, 90, 95, 99]
            .into_iter()
            .zip(knees)
            .map(|(percent, at)| litehit_live::snapshot::FractionCapacity {
                percent,
                capacity_blocks: blocks(at),
                hit_blocks: hits_at(at),
            })
            .collect(),
        saturation_capacity_blocks: blocks(128 * 32),
        ..lane("instance-0", 23_626, input_tokens, Vec::new(), infinite)
    }
}

/// The text on the capacity chart's rows: every `◆` followed by nothing but its own label
/// (`90`, `95/99`), every slot label by no digit or `◆`; returns the chart's rows.
fn assert_chart_labels_apart(snap: &LiveSnapshot, app: &App, width: u16, height: u16) -> String {
    let rows = screen_rows(snap, app, width, height);
    let labels: Vec<String> = ["50", "90", "95", "99", "90/95", "95/99", "90/95/99"]
        .map(str::to_owned)
        .to_vec();
    let half = usize::from(width / 2);
    let chart: Vec<String> = rows
        .iter()
        .map(|row| row.chars().take(half).collect::<String>())
        .skip_while(|row| !row.contains("hit rate vs capacity"))
        .take_while(|row| !row.starts_with('└'))
        .collect();
    let text = chart.join("\n");
    assert!(text.contains('◆'), "no knee drawn:\n{text}");
    for row in &chart {
        for (at, _) in row.match_indices('◆') {
            let after: String = row[at + '◆'.len_utf8()..]
                .chars()
                .take_while(|ch| ch.is_ascii_digit() || *ch == '/')
                .collect();
            let next = row[at + '◆'.len_utf8() + after.len()..].chars().next();
            assert!(
                (after.is_empty() || labels.contains(&after))
                    && !next.is_some_and(|ch| ch.is_alphanumeric() || ch == '◆'),
                "{width}×{height}: a knee label runs into other text: {row:?}\n{text}"
            );
        }
        for (at, _) in row.match_indices("GiB") {
            let next = row[at + 3..].chars().next();
            assert!(
                !next.is_some_and(|ch| ch.is_alphanumeric() || ch == '◆'),
                "{width}×{height}: a slot label runs into other text: {row:?}\n{text}"
            );
        }
    }
    text
}

/// Issue #26: at 80×24 the knee marker and the slot labels ran together (`◆540 GiB` read as
/// a 540 GiB knee; `10 GiB9`); at 100×30 `◆9580 GiB`, the 99 % knee hidden behind 95 %.
#[test]
fn knee_and_slot_labels_stay_apart_at_80x24_and_100x30() {
    let mut snap = running(vec![demo_like_lane()]);
    snap.slots = [(1, 10.0), (2, 40.0), (3, 80.0)]
        .map(|(id, gib)| Slot {
            id,
            capacity: Capacity::Gigabytes(gib),
        })
        .to_vec();
    snap.timeline = timeline(1);
    let snap = snap.finished();
    let mut app = App::default();
    app.observe(&snap);
    let small = assert_chart_labels_apart(&snap, &app, 80, 24);
    let medium = assert_chart_labels_apart(&snap, &app, 100, 30);
    let large = assert_chart_labels_apart(&snap, &app, 160, 40);
    insta::assert_snapshot!("knees_and_slot_labels_80x24", small);
    insta::assert_snapshot!("knees_and_slot_labels_100x30", medium);
    insta::assert_snapshot!("knees_and_slot_labels_160x40", large);
}

/// Issue #26: at 100×30 the legend box covered the ∞ line.
#[test]
fn the_legend_box_never_covers_the_infinity_line() {
    // Nothing cached below 16 GiB, then a steep rise: the emptiest corner is the ∞ line's.
    let steep = [
        (512, 0),
        (1024, 500),
        (1536, 900),
        (1792, 950),
        (2016, 990),
        (4096, 1000),
    ];
    let mut demo = running(vec![lane_of_knots(&steep, [1024, 1536, 1792, 2016])]);
    demo.slots = [(1, 10.0), (2, 40.0), (3, 80.0)]
        .map(|(id, gib)| Slot {
            id,
            capacity: Capacity::Gigabytes(gib),
        })
        .to_vec();
    demo.timeline = timeline(1);
    let fleet = several_instances();
    for (name, snap, totals) in [
        ("demo", &demo, false),
        ("fleet", &fleet, false),
        ("fleet totals", &fleet, true),
    ] {
        let mut app = App::default();
        app.observe(snap);
        if totals {
            key(&mut app, KeyCode::Char('G'));
        }
        for (width, height) in [(100, 30), (120, 40), (160, 40), (160, 50)] {
            let rows = screen_rows(snap, &app, width, height);
            let half = usize::from(width / 2);
            for row in &rows {
                let chart: String = row.chars().take(half).collect();
                if chart.contains("╌╌╌") {
                    // The ∞ line's row: no legend box border crosses it.
                    let inner: String = chart.chars().skip(6).take(half - 8).collect();
                    assert!(
                        !inner.contains('│') && !inner.contains('┌') && !inner.contains('└'),
                        "{name} {width}×{height}: the legend covers the ∞ line: {chart:?}\n{}",
                        rows.join("\n")
                    );
                }
            }
        }
    }
}
