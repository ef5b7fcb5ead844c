//! The live monitor's charts: knees, the ∞ line and slot markers drawn where the projector
//! puts them (the expected cell computed through the charts' own axis mapping), the y axis
//! scaled to the data, the log capacity axis keeping Mooncake's 10/40/80 GiB slots apart,
//! legends that hide what is under them, and the timeline in trace time, summed per window.

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use litehit_core::facts::FactRecord;
use litehit_core::facts::file::FactsReader;
use litehit_core::projector::sampling::{log_spaced, sample_at};
use litehit_core::projector::{Capacity, CapacityAxisAccumulator, project_blocks};
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::{
    CAPACITY_FRACTION_PERCENTS, CurvePoint, FollowState, FractionCapacity, LaneSnapshot,
    LaneWindow, Slot, SourceStatus, Timeline, Window,
};
use litehit_tui::app::App;
use litehit_tui::render::{self, curve, timeline};
use ratatui::Terminal;
use ratatui::backend::TestBackend;
use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};

use crate::common::cli_bin::run_ok;
use crate::common::shared_file;

/// Facts of one lane, read back from what `litehit replay` wrote.
struct Facts {
    records: Vec<FactRecord>,
    hits: CapacityAxisAccumulator,
}

fn replay(trace: &std::path::Path) -> Facts {
    let dir = tempfile::tempdir().unwrap();
    run_ok([
        "replay".as_ref(),
        trace.as_os_str(),
        "--out".as_ref(),
        dir.path().as_os_str(),
    ]);
    let mut reader = FactsReader::open(&dir.path().join("litehit_facts.csv")).unwrap();
    let mut records = Vec::new();
    let mut record = FactRecord::default();
    let mut hits = CapacityAxisAccumulator::new();
    while reader.next_record(&mut record).unwrap() {
        hits.add_fact(&record.fact);
        records.push(record.clone());
    }
    Facts { records, hits }
}

/// Facts of a small generated lane: requests sharing prefixes of growing length.
fn generated() -> Facts {
    let mut core = litehit_core::LiteHit::new();
    let mut hits = CapacityAxisAccumulator::new();
    let mut records = Vec::new();
    for i in 0..400_i64 {
        // 8 conversations re-sending a growing history, plus a fresh tail.
        let conversation = i % 8;
        let turn = i / 8;
        let keys: Vec<i64> = (0..(4 + turn * 3))
            .map(|j| conversation * 1_000_000 + j)
            .chain((0..5).map(|j| 900_000_000 + i * 10 + j))
            .collect();
        let fact = core.process_request(&keys, i * 1_000_000_000);
        hits.add_fact(&fact);
        records.push(FactRecord {
            input_token_len: keys.len() as u64 * 16 + 7,
            block_size_tokens: 16,
            block_bytes: 2 << 20,
            timestamp_ns: i * 1_000_000_000,
            instance_id: "engine-0".to_owned(),
            fact,
            ..FactRecord::default()
        });
    }
    Facts { records, hits }
}

/// The lane as the ingest thread publishes it: every number from the accumulator, the curve
/// sampled through the one curve sampler up to a power of two past saturation.
fn lane_snapshot(facts: &Facts, slots: &[Slot]) -> (LaneSnapshot, Vec<FractionCapacity>) {
    let first = &facts.records[0];
    let (block_size_tokens, block_bytes) = (first.block_size_tokens, first.block_bytes);
    let saturation = facts.hits.saturation_capacity_blocks();
    let end = (saturation + saturation / 16).max(2).next_power_of_two();
    let lane = LaneSnapshot {
        instance_id: first.instance_id.clone(),
        block_size_tokens,
        block_bytes,
        requests: facts.records.len() as u64,
        input_tokens: facts.records.iter().map(|r| r.input_token_len).sum(),
        slot_hit_blocks: slots
            .iter()
            .map(|slot| {
                facts
                    .hits
                    .hit_blocks_at(slot.capacity.blocks(block_bytes).unwrap_or(u64::MAX))
            })
            .collect(),
        infinite_hit_blocks: facts.hits.infinite_hit_blocks(),
        saturation_capacity_blocks: saturation,
        curve: sample_at(&facts.hits, log_spaced(end, 12))
            .into_iter()
            .map(|(capacity_blocks, hit_blocks)| CurvePoint {
                capacity_blocks,
                hit_blocks,
            })
            .collect(),
        ..LaneSnapshot::default()
    };
    let knees = CAPACITY_FRACTION_PERCENTS
        .iter()
        .map(|&percent| {
            let capacity_blocks = facts.hits.knee_capacity_blocks(percent);
            FractionCapacity {
                percent,
                capacity_blocks,
                hit_blocks: facts.hits.hit_blocks_at(capacity_blocks),
            }
        })
        .collect();
    (lane, knees)
}

fn gib_slots(gib: &[f64]) -> Vec<Slot> {
    gib.iter()
        .zip(1..)
        .map(|(&gb, id)| Slot {
            id,
            capacity: Capacity::Gigabytes(gb),
        })
        .collect()
}

fn snapshot(
    lanes: Vec<LaneSnapshot>,
    knees: Vec<Vec<FractionCapacity>>,
    slots: Vec<Slot>,
) -> LiveSnapshot {
    LiveSnapshot {
        source: SourceStatus {
            path: "trace.jsonl".to_owned(),
            state: FollowState::Following,
            ..SourceStatus::default()
        },
        slots,
        // Each lane with its knees (a lane without any in `knees` has none).
        lanes: lanes
            .into_iter()
            .zip(knees.into_iter().chain(std::iter::repeat(Vec::new())))
            .map(|(lane, knees)| LaneSnapshot {
                capacity_for_fraction: knees,
                ..lane
            })
            .collect(),
        ..LiveSnapshot::default()
    }
    .finished()
}

fn draw(snap: &LiveSnapshot, app: &App, width: u16, height: u16) -> Buffer {
    let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
    terminal
        .draw(|frame| render::draw(frame, snap, app))
        .unwrap();
    terminal.backend().buffer().clone()
}

/// Draws only the curve panel into `area` of a `width` × `height` screen.
fn draw_curve(snap: &LiveSnapshot, app: &App, area: Rect) -> Buffer {
    let mut terminal = Terminal::new(TestBackend::new(area.right(), area.bottom())).unwrap();
    terminal
        .draw(|frame| curve::render(frame, area, snap, app))
        .unwrap();
    terminal.backend().buffer().clone()
}

fn symbol(buf: &Buffer, x: u16, y: u16) -> &str {
    buf[(x, y)].symbol()
}

fn row_text(buf: &Buffer, y: u16, from: u16, to: u16) -> String {
    (from..to).map(|x| symbol(buf, x, y)).collect()
}

fn observed(snap: &LiveSnapshot) -> App {
    let mut app = App::default();
    app.observe(snap);
    app
}

fn is_braille(text: &str) -> bool {
    text.chars().any(|c| ('\u{2801}'..='\u{28ff}').contains(&c))
}

/// The knee search checked against projecting every fact (the oracle of `mrc`'s knees).
fn assert_knees_match_projection(facts: &Facts, knees: &[FractionCapacity]) {
    let hits_at = |capacity: u64| -> u64 {
        facts
            .records
            .iter()
            .map(|r| project_blocks(&r.fact, capacity))
            .sum()
    };
    let infinite = facts.hits.infinite_hit_blocks();
    for knee in knees {
        let target = (infinite * u64::from(knee.percent)).div_ceil(100);
        assert!(hits_at(knee.capacity_blocks) >= target, "{knee:?}");
        if knee.capacity_blocks > 0 {
            assert!(hits_at(knee.capacity_blocks - 1) < target, "{knee:?}");
        }
        // The hits a knee carries (its marker's height) are those at its capacity.
        assert_eq!(knee.hit_blocks, hits_at(knee.capacity_blocks), "{knee:?}");
    }
}

fn check_marks(snap: &LiveSnapshot, app: &App, area: Rect) {
    let buf = draw_curve(snap, app, area);
    let layout = curve::layout(area, snap, app).expect("a chart");
    let plot = layout.plot;
    let lane = &snap.lanes[0];
    let infinite_percent = lane.infinite_hit_rate().unwrap() * 100.0;
    let screen = (0..area.bottom())
        .map(|y| row_text(&buf, y, 0, area.right()))
        .collect::<Vec<_>>()
        .join("\n");
    // Knees: at the capacity the knee search gives and the rate the curve has there (its hits
    // checked against projecting every fact by `assert_knees_match_projection`).
    for knee in &snap.lanes[0].capacity_for_fraction {
        let x = curve::capacity_x(knee.capacity_blocks as f64 * lane.block_bytes as f64);
        let column = plot.column_clamped(x);
        let knee_percent =
            (knee.hit_blocks * lane.block_size_tokens) as f64 / lane.input_tokens as f64 * 100.0;
        let row = plot.row(knee_percent).unwrap();
        assert_eq!(
            symbol(&buf, column, row),
            "◆",
            "{}% knee ({} blocks) not at ({column}, {row}):\n{screen}",
            knee.percent,
            knee.capacity_blocks
        );
    }
    // The ∞ line: its row is mostly `╌` where the curve does not cross it.
    let row = plot.row(infinite_percent).unwrap();
    let infinity_row = row_text(&buf, row, plot.area.x, plot.area.right());
    let dashes = infinity_row.chars().filter(|&c| c == '╌').count();
    assert!(
        dashes * 3 >= usize::from(plot.area.width),
        "∞ line missing from row {row}: {infinity_row:?}\n{screen}"
    );
    // Slot markers: a `┊` column at each slot's capacity (the projector's blocks), labelled.
    for (index, slot) in snap.slots.iter().enumerate() {
        let blocks = slot.capacity.blocks(lane.block_bytes).unwrap();
        let column =
            plot.column_clamped(curve::capacity_x(blocks as f64 * lane.block_bytes as f64));
        let marks = (plot.area.y..plot.area.bottom())
            .filter(|&y| symbol(&buf, column, y) == "┊")
            .count();
        assert!(
            marks >= 2,
            "slot {index} has no marker in column {column}:\n{screen}"
        );
        let label = render::format::capacity(slot.capacity);
        assert!(
            (plot.area.y..plot.area.bottom()).any(|y| row_text(
                &buf,
                y,
                plot.area.x,
                plot.area.right()
            )
            .contains(&label)),
            "slot label {label} missing:\n{screen}"
        );
    }
    // y: the top tick is a round value above the ∞ rate, not 100 % for a low one.
    let top = row_text(&buf, plot.area.y, area.x + 1, plot.area.x - 1);
    let top: f64 = top
        .trim()
        .trim_end_matches('%')
        .parse()
        .unwrap_or_else(|_| {
            panic!("no top tick label in {top:?}:\n{screen}");
        });
    assert!(
        top >= infinite_percent && top <= (infinite_percent * 1.6).max(1.0),
        "y top {top}% for an ∞ rate of {infinite_percent}%:\n{screen}"
    );
}

#[test]
fn knees_infinity_line_and_slot_markers_sit_where_the_projector_says() {
    let facts = generated();
    let slots = vec![
        Slot {
            id: 1,
            capacity: Capacity::Blocks(40),
        },
        Slot {
            id: 2,
            capacity: Capacity::Blocks(300),
        },
    ];
    let (lane, knees) = lane_snapshot(&facts, &slots);
    assert_knees_match_projection(&facts, &knees);
    let snap = snapshot(vec![lane], vec![knees], slots);
    let app = observed(&snap);
    for area in [Rect::new(0, 0, 100, 30), Rect::new(3, 2, 70, 18)] {
        check_marks(&snap, &app, area);
    }
}

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared/traces/conversation_trace.jsonl"
)]
/// Facts of a lane whose hits rise in one step: 20 one-block prompts in turn, so each hit
/// needs a cache of all 20 and every knee lies at one capacity where the rate is already the
/// ∞ rate.
fn one_step() -> Facts {
    let mut core = litehit_core::LiteHit::new();
    let mut hits = CapacityAxisAccumulator::new();
    let mut records = Vec::new();
    for i in 0..400_i64 {
        let keys = [i % 20];
        let fact = core.process_request(&keys, i * 1_000_000_000);
        hits.add_fact(&fact);
        records.push(FactRecord {
            input_token_len: keys.len() as u64 * 16,
            block_size_tokens: 16,
            block_bytes: 2 << 20,
            timestamp_ns: i * 1_000_000_000,
            instance_id: "engine-0".to_owned(),
            fact,
            ..FactRecord::default()
        });
    }
    Facts { records, hits }
}

#[test]
fn knees_sit_on_the_curve_not_at_their_share_of_the_infinite_rate() {
    let facts = one_step();
    let slots = vec![Slot {
        id: 1,
        capacity: Capacity::Blocks(200),
    }];
    let (lane, knees) = lane_snapshot(&facts, &slots);
    assert_knees_match_projection(&facts, &knees);
    // The step: the 50 % knee already has (nearly) every hit, far above half the ∞ rate.
    let fifty = knees.iter().find(|knee| knee.percent == 50).unwrap();
    assert!(
        fifty.hit_blocks * 10 >= lane.infinite_hit_blocks * 9,
        "{knees:?}"
    );
    let snap = snapshot(vec![lane], vec![knees], slots);
    let app = observed(&snap);
    for area in [Rect::new(0, 0, 100, 30), Rect::new(3, 2, 70, 18)] {
        check_marks(&snap, &app, area);
        // And no knee anywhere else: not at half the ∞ rate for the 50 % one.
        let buf = draw_curve(&snap, &app, area);
        let plot = curve::layout(area, &snap, &app).unwrap().plot;
        let lane = &snap.lanes[0];
        let knee_rows: Vec<u16> = snap.lanes[0]
            .capacity_for_fraction
            .iter()
            .map(|knee| {
                plot.row(
                    (knee.hit_blocks * lane.block_size_tokens) as f64 / lane.input_tokens as f64
                        * 100.0,
                )
                .unwrap()
            })
            .collect();
        for y in plot.area.y..plot.area.bottom() {
            let text = row_text(&buf, y, plot.area.x, plot.area.right());
            assert!(
                !text.contains('◆') || knee_rows.contains(&y) || text.contains("knees"),
                "a knee off the curve in row {y}: {text:?} (knees on rows {knee_rows:?})"
            );
        }
    }
}

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn log_axis_keeps_10_40_80_gib_apart_on_the_mooncake_trace() {
    let facts = replay(&shared_file("traces/conversation_trace.jsonl"));
    let slots = gib_slots(&[10.0, 40.0, 80.0]);
    let (lane, knees) = lane_snapshot(&facts, &slots);
    assert_knees_match_projection(&facts, &knees);
    let snap = snapshot(vec![lane], vec![knees], slots);
    let app = observed(&snap);
    // The chart's half of a 120- and an 80-column screen.
    for area in [Rect::new(0, 0, 60, 22), Rect::new(0, 0, 40, 12)] {
        let layout = curve::layout(area, &snap, &app).unwrap();
        let columns: Vec<u16> = layout
            .slots
            .iter()
            .map(|&(_, x)| layout.plot.column_clamped(x))
            .collect();
        assert!(
            columns.windows(2).all(|pair| pair[1] >= pair[0] + 2),
            "10/40/80 GiB at columns {columns:?} in {area:?}"
        );
        // On a linear axis from 0 to the curve's end they would share a column.
        let end = snap.lanes[0].curve.last().unwrap().capacity_blocks as f64
            * snap.lanes[0].block_bytes as f64;
        let linear: Vec<f64> = [10.0_f64, 80.0]
            .iter()
            .map(|gib| (gib * f64::from(1 << 30) / end * f64::from(layout.plot.area.width)).floor())
            .collect();
        assert!(
            (linear[0] - linear[1]).abs() < 0.5,
            "the linear axis would separate them too"
        );
    }
    check_marks(&snap, &app, Rect::new(0, 0, 60, 22));
    insta::assert_snapshot!(
        "mooncake_curve_60x22",
        buffer_text(&draw_curve(&snap, &app, Rect::new(0, 0, 60, 22)))
    );
}

fn buffer_text(buf: &Buffer) -> String {
    (0..buf.area.height)
        .map(|y| row_text(buf, y, 0, buf.area.width) + "\n")
        .collect()
}

#[test]
fn the_x_range_only_grows_in_doublings() {
    // The same trace seen at two points in time: the axis ends at powers of two of blocks.
    let facts = generated();
    let slots = gib_slots(&[0.25]);
    let half = Facts {
        hits: {
            let mut hits = CapacityAxisAccumulator::new();
            for r in &facts.records[..200] {
                hits.add_fact(&r.fact);
            }
            hits
        },
        records: facts.records[..200].to_vec(),
    };
    let mut ends = Vec::new();
    for part in [&half, &facts] {
        let (lane, knees) = lane_snapshot(part, &slots);
        let snap = snapshot(vec![lane], vec![knees], slots.clone());
        let app = observed(&snap);
        let layout = curve::layout(Rect::new(0, 0, 80, 20), &snap, &app).unwrap();
        let [lo, hi] = layout.plot.x_bounds;
        assert!(hi.fract().abs() < 1e-12, "axis end {hi} not a power of two");
        assert!(
            lo.fract().abs() < 1e-12,
            "axis start {lo} not a power of two"
        );
        ends.push(hi);
    }
    assert!(ends[1] >= ends[0]);
}

#[test]
fn legends_hide_what_is_under_them() {
    let facts = generated();
    let slots = gib_slots(&[0.05, 0.2]);
    let (lane, knees) = lane_snapshot(&facts, &slots);
    let snap = snapshot(vec![lane], vec![knees], slots);
    let app = observed(&snap);
    let area = Rect::new(0, 0, 90, 26);
    let buf = draw_curve(&snap, &app, area);
    let screen = buffer_text(&buf);
    // The legend's rows, between its side borders, hold no braille.
    let top = (0..area.height)
        .find(|&y| row_text(&buf, y + 1, 0, area.width).contains("╌ ∞"))
        .expect(&screen);
    let first_row = row_text(&buf, top + 1, 0, area.width);
    let start = first_row.find("│╌ ∞").expect(&screen);
    let left = u16::try_from(first_row[..start].chars().count()).unwrap();
    let right = (left + 1..area.width)
        .find(|&x| symbol(&buf, x, top + 1) == "│")
        .expect(&screen);
    let mut y = top + 1;
    while symbol(&buf, left, y) == "│" {
        let inside = row_text(&buf, y, left + 1, right);
        assert!(
            !is_braille(&inside),
            "data shows through the legend: {inside:?}\n{screen}"
        );
        y += 1;
    }
    assert!(y > top + 3, "legend rows not found:\n{screen}");
}

fn key(app: &mut App, code: KeyCode) {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
}

#[test]
fn every_instance_says_how_many_curves_it_draws() {
    let facts = generated();
    let slots = gib_slots(&[0.1]);
    let (lane, knees) = lane_snapshot(&facts, &slots);
    let lanes: Vec<LaneSnapshot> = (0..60)
        .map(|i| LaneSnapshot {
            instance_id: format!("engine-{i:02}"),
            ..lane.clone()
        })
        .collect();
    let snap = snapshot(lanes, vec![knees; 60], slots);
    let mut app = observed(&snap);
    key(&mut app, KeyCode::End); // the totals row
    let screen = buffer_text(&draw(&snap, &app, 160, 48));
    assert!(screen.contains("6 of 60 drawn"), "{screen}");
    assert!(
        screen.contains("· every instance"),
        "timeline title:\n{screen}"
    );
}

/// `count` windows of 10 s from `first_ns`, the trace's first request 3 s into the first;
/// input and hits vary per window.
fn timeline_of(count: i64, first_ns: i64) -> Timeline {
    Timeline {
        window_ns: 10_000_000_000,
        origin_ns: Some(first_ns + 3_000_000_000),
        windows: (0..count)
            .map(|i| Window {
                start_ns: first_ns + i * 10_000_000_000,
                lanes: vec![LaneWindow {
                    input_tokens: 1_000 + (i.unsigned_abs() % 7) * 300,
                    slot_hit_tokens: vec![Some((i.unsigned_abs() % 5) * 40)],
                    infinite_hit_tokens: 200 + (i.unsigned_abs() % 3) * 100,
                }],
                pool: None,
                open: i == count - 1,
            })
            .collect(),
    }
}

#[test]
fn timeline_counts_trace_time_from_the_first_request_in_summed_windows() {
    let facts = generated();
    let slots = gib_slots(&[0.1]);
    let (lane, knees) = lane_snapshot(&facts, &slots);
    let mut snap = snapshot(vec![lane], vec![knees], slots);
    // 354 windows (the Mooncake conversation trace's hour), starting 1137 s into trace time.
    snap.timeline = timeline_of(354, 1_137_000_000_000);
    let mut app = observed(&snap);
    let area = Rect::new(0, 0, 60, 20);
    let layout = timeline::layout(area, &snap, &app).unwrap();
    assert!(layout.auto);
    // About one chart window per two columns, a whole number of collected windows.
    let windows = usize::try_from(layout.window_ns / snap.timeline.window_ns).unwrap();
    assert_eq!(layout.window_ns % snap.timeline.window_ns, 0);
    let infinite = &layout.series[0];
    assert!(
        infinite.points.len() <= usize::from(layout.plot.area.width / 2) + 1,
        "{} points on {} columns",
        infinite.points.len(),
        layout.plot.area.width
    );
    // x starts at the first request, and each point is Σ hits / Σ input of its windows.
    assert!(infinite.points[0].0.abs() < f64::EPSILON);
    for (k, &(x, y)) in infinite.points.iter().enumerate() {
        let group = &snap.timeline.windows[k * windows..((k + 1) * windows).min(354)];
        let hits: u64 = group.iter().map(|w| w.lanes[0].infinite_hit_tokens).sum();
        let input: u64 = group.iter().map(|w| w.lanes[0].input_tokens).sum();
        assert!(
            (y - hits as f64 / input as f64 * 100.0).abs() < 1e-9,
            "window {k}: {y}"
        );
        let start = (group[0].start_ns - snap.timeline.origin_ns.unwrap()).max(0);
        assert!((x - start as f64 / 1e9).abs() < 1e-9, "window {k} at {x} s");
    }
    let screen = buffer_text(&draw_timeline(&snap, &app, area));
    assert!(
        screen.contains("(auto)") && screen.contains("engine-0"),
        "{screen}"
    );
    assert!(
        screen.contains(" 0 "),
        "x axis does not start at 0:\n{screen}"
    );
    // `w`: a fixed 1-minute window, then 5 minutes; the title says so.
    key(&mut app, KeyCode::Char('w'));
    key(&mut app, KeyCode::Char('w'));
    let layout = timeline::layout(area, &snap, &app).unwrap();
    assert_eq!(layout.window_ns, 60_000_000_000);
    assert!(!layout.auto);
    key(&mut app, KeyCode::Char('w'));
    let screen = buffer_text(&draw_timeline(&snap, &app, area));
    assert!(screen.contains("per 5m00s"), "{screen}");
}

/// A trace of 10 s (one window): each line is drawn across its window, not as one dot at
/// x = 0 (issue #26, "the timeline on a 10 s trace draws one window as dots at x = 0").
#[test]
fn a_one_window_trace_draws_its_window_across_the_chart() {
    let slots = gib_slots(&[0.1]);
    let snap = LiveSnapshot {
        lanes: vec![LaneSnapshot {
            instance_id: "engine-0".to_owned(),
            block_size_tokens: 16,
            block_bytes: 1 << 20,
            requests: 10,
            input_tokens: 1_000,
            slot_hit_blocks: vec![0],
            ..LaneSnapshot::default()
        }],
        slots,
        timeline: timeline_of(1, 0),
        ..LiveSnapshot::default()
    }
    .finished();
    let app = observed(&snap);
    let area = Rect::new(0, 0, 60, 20);
    let layout = timeline::layout(area, &snap, &app).unwrap();
    assert!(layout.series.iter().all(|series| series.points.len() == 1));
    let buf = draw_timeline(&snap, &app, area);
    let plot = layout.plot.area;
    let widest = (plot.y..plot.bottom())
        .map(|y| {
            (plot.x..plot.right())
                .filter(|&x| is_braille(symbol(&buf, x, y)))
                .count()
        })
        .max()
        .unwrap_or(0);
    assert!(
        widest >= usize::from(plot.width) * 3 / 4,
        "a line {widest} cells wide on {} columns:\n{}",
        plot.width,
        buffer_text(&buf)
    );
}

fn draw_timeline(snap: &LiveSnapshot, app: &App, area: Rect) -> Buffer {
    let mut terminal = Terminal::new(TestBackend::new(area.right(), area.bottom())).unwrap();
    terminal
        .draw(|frame| timeline::render(frame, area, snap, app))
        .unwrap();
    terminal.backend().buffer().clone()
}

#[test]
fn each_slot_has_its_own_colour_and_legend_entry_in_both_charts() {
    let facts = generated();
    let slots = gib_slots(&[0.05, 0.1, 0.2]);
    let (lane, knees) = lane_snapshot(&facts, &slots);
    let mut snap = snapshot(vec![lane], vec![knees], slots);
    snap.timeline = Timeline {
        windows: timeline_of(40, 0)
            .windows
            .into_iter()
            .map(|mut w| {
                let lane = &mut w.lanes[0];
                let hit = lane.slot_hit_tokens[0];
                lane.slot_hit_tokens = vec![hit, hit.map(|h| h + 50), hit.map(|h| h + 90)];
                w
            })
            .collect(),
        ..timeline_of(40, 0)
    };
    let app = observed(&snap);
    let [left, right] =
        Layout::horizontal([Constraint::Percentage(50), Constraint::Percentage(50)])
            .areas(Rect::new(0, 0, 200, 30));
    for (buf, area) in [
        (draw_curve(&snap, &app, left), left),
        (draw_timeline(&snap, &app, right), right),
    ] {
        let mut colours = Vec::new();
        for slot in &snap.slots {
            let label = render::format::capacity(slot.capacity);
            // The legend line naming the slot, in the slot's colour.
            let (x, y) = (area.y..area.bottom())
                .find_map(|y| {
                    let text = row_text(&buf, y, 0, area.right());
                    let at = text
                        .find(&format!("│┊ {label}"))
                        .or(text.find(&format!("│⠒ {label}")))?;
                    Some((u16::try_from(text[..at].chars().count()).unwrap() + 1, y))
                })
                .unwrap_or_else(|| panic!("no legend entry for {label}:\n{}", buffer_text(&buf)));
            colours.push(buf[(x, y)].fg);
        }
        colours.dedup();
        assert_eq!(colours.len(), snap.slots.len(), "slot colours {colours:?}");
    }
}

#[test]
fn tiny_and_empty_charts_do_not_panic() {
    let facts = generated();
    let slots = gib_slots(&[0.0, 1e-9, 1e9]);
    let (lane, knees) = lane_snapshot(&facts, &slots);
    let mut snap = snapshot(vec![lane], vec![knees], slots);
    snap.timeline = timeline_of(1, 0);
    let app = observed(&snap);
    for (width, height) in [(200, 60), (120, 40), (80, 24), (60, 20), (30, 8), (10, 4)] {
        draw(&snap, &app, width, height);
        draw_curve(&snap, &app, Rect::new(0, 0, width / 2, height / 2));
        draw_timeline(&snap, &app, Rect::new(0, 0, width / 2, height / 2));
    }
}

/// The ingest thread keeps the whole trace on the timeline: when it outgrows the windows kept,
/// pairs are merged (the width doubles) and every window's figures still sum to the totals.
#[test]
fn the_timeline_keeps_the_whole_trace_in_merged_windows() {
    use litehit_core::config::{SingleInstanceFlags, resolve_single_instance};
    use litehit_live::Command;
    use litehit_live::ingest::{IngestConfig, spawn};
    use std::fmt::Write as _;
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("trace.jsonl");
    // 1000 requests one second apart from 5000 s of trace time, in 1 s windows.
    let first_ns: i64 = 5_000_000_000_000;
    let mut text = String::new();
    for i in 0..1000_i64 {
        let keys: Vec<String> = (0..=(i % 6))
            .map(|k| (k + (i % 3) * 10).to_string())
            .collect();
        writeln!(
            text,
            "{{\"type\":\"get\",\"instance_id\":\"a\",\"timestamp_ns\":{},\"keys\":[{}],\"input_len\":{}}}",
            first_ns + i * 1_000_000_000,
            keys.join(","),
            keys.len() * 4
        )
        .unwrap();
    }
    std::fs::write(&path, text).unwrap();
    let flags = SingleInstanceFlags {
        block_size_tokens: Some(4),
        block_bytes: Some(1024),
        ..SingleInstanceFlags::default()
    };
    let engine = resolve_single_instance(&flags).unwrap().engine;
    let mut config = IngestConfig::new(&path, engine);
    config.slots = vec![Capacity::Blocks(3), Capacity::Infinite];
    config.window_ns = 1_000_000_000;
    config.frame_period = Duration::from_millis(10);
    config.spill_dir = Some(dir.path().to_path_buf());
    config.facts_out = dir.path().join("facts.csv");
    let live = spawn(config).unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    let snap = loop {
        let snap = live.latest();
        if snap.lanes.iter().map(|l| l.requests).sum::<u64>() == 1000 {
            break snap;
        }
        assert!(
            Instant::now() < deadline,
            "timed out waiting for 1000 requests"
        );
        std::thread::sleep(Duration::from_millis(10));
    };
    live.send(Command::Shutdown);
    let timeline = &snap.timeline;
    assert_eq!(timeline.origin_ns, Some(first_ns));
    let first = timeline.windows.first().unwrap();
    assert!(first.start_ns <= first_ns && first_ns < first.start_ns + timeline.window_ns);
    let factor = timeline.window_ns / 1_000_000_000;
    assert!(factor > 1 && factor.count_ones() == 1, "window {factor} s");
    assert!(
        timeline.windows.len() <= 480,
        "{} windows",
        timeline.windows.len()
    );
    let lane = &snap.lanes[0];
    let sum = |f: &dyn Fn(&LaneWindow) -> u64| -> u64 {
        timeline.windows.iter().map(|w| f(&w.lanes[0])).sum()
    };
    assert_eq!(sum(&|w| w.input_tokens), lane.input_tokens);
    assert_eq!(sum(&|w| w.infinite_hit_tokens), lane.infinite_hit_tokens());
    assert_eq!(
        sum(&|w| w.slot_hit_tokens[0].unwrap()),
        lane.slot_hit_tokens(0)
    );
}
