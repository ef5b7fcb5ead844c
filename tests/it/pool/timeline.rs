//! The shared pool's timeline (`watch --pool`): each window's pool figures at N × each slot,
//! apart from the instances' windows (never in their Σ). Checked against two independent
//! answers: the naive LRU oracle over the merged stream, hits counted per window of trace
//! time, and a live run whose every row goes to one lane (`--instance`), its slots at N × C.
//! An instance born mid-trace changes N: that window has no pool slot figure, the ones before
//! are at 2 × C, the ones after at 3 × C. Then the TUI: the pool row's timeline is the pool's,
//! the totals row's has the pool's line beside the instances' total.

use std::collections::BTreeSet;
use std::path::Path;
use std::time::{Duration, Instant};

use litehit_core::config::{SingleInstanceFlags, resolve_single_instance};
use litehit_core::projector::Capacity;
use litehit_core::workload::{SyntheticRequest, WorkloadConfig};
use litehit_live::ingest::{IngestConfig, spawn};
use litehit_live::snapshot::{LaneSnapshot, LaneWindow, PoolWindow, Slot, Timeline, Window};
use litehit_live::{Command, LiveSnapshot};
use litehit_tui::app::App;
use litehit_tui::render::timeline;
use ratatui::layout::Rect;

use crate::common::cli_bin::{generate, standard_trace};
use crate::common::oracle::OracleBank;

const REQUESTS: usize = 3000;
const CAPACITIES_BLOCKS: [u64; 3] = [3, 40, 400];
const BLOCK_SIZE_TOKENS: u64 = 16;
/// Longest wait for a live run: a hang fails the test.
const WAIT: Duration = Duration::from_secs(120);

/// Three instances, the third born halfway through the trace (its rows before go to the
/// first), so N is 2 and then 3.
fn requests() -> Vec<SyntheticRequest> {
    let mut requests = generate(
        WorkloadConfig {
            seed: 23,
            instance_ids: (0..3).map(|i| format!("engine-{i}")).collect(),
            live_conversations: 40,
            ..WorkloadConfig::default()
        },
        REQUESTS,
    );
    for request in &mut requests[..REQUESTS / 2] {
        if request.instance_id == "engine-2" {
            "engine-0".clone_into(&mut request.instance_id);
        }
    }
    requests
}

/// The live monitor's last snapshot once it has read every row of `trace`.
fn live_run(
    trace: &Path,
    dir: &Path,
    flags: &SingleInstanceFlags,
    slots: Vec<Capacity>,
    window_ns: i64,
) -> std::sync::Arc<LiveSnapshot> {
    let engine = resolve_single_instance(flags).unwrap().engine;
    let mut config = IngestConfig::new(trace, engine);
    config.slots = slots;
    config.window_ns = window_ns;
    config.frame_period = Duration::from_millis(10);
    config.spill_dir = Some(dir.to_path_buf());
    config.facts_out = dir.join("facts.csv");
    config.retain_facts = false;
    let live = spawn(config).unwrap();
    let started = Instant::now();
    let snap = loop {
        let snap = live.latest();
        if snap.totals.requests == REQUESTS as u64 {
            break snap;
        }
        assert!(started.elapsed() < WAIT, "timed out waiting for the rows");
        std::thread::sleep(Duration::from_millis(10));
    };
    live.send(Command::Shutdown);
    snap
}

/// What one window of the pool must hold, from the oracle.
#[derive(Debug, Default, Clone)]
struct Expected {
    input_tokens: u64,
    infinite_hit_tokens: u64,
    /// Hit tokens per capacity at 2 × C, then at 3 × C.
    pooled_hit_tokens: Vec<u64>,
    /// Distinct instances before the window, and once it ends.
    instances_before: usize,
    instances_after: usize,
}

/// Per window of `window_ns` (by start), the naive oracle on the merged stream.
fn oracle_windows(requests: &[SyntheticRequest], window_ns: i64) -> Vec<(i64, Expected)> {
    let capacities: Vec<Option<usize>> = [2, 3]
        .iter()
        .flat_map(|n| CAPACITIES_BLOCKS.map(|c| Some(usize::try_from(c * n).unwrap())))
        .chain([None])
        .collect();
    let mut pool = OracleBank::new(&capacities, None);
    let mut seen: BTreeSet<&str> = BTreeSet::new();
    let mut windows: Vec<(i64, Expected)> = Vec::new();
    for request in requests {
        let start = request.timestamp_ns.div_euclid(window_ns) * window_ns;
        if windows.last().is_none_or(|(last, _)| *last != start) {
            windows.push((
                start,
                Expected {
                    pooled_hit_tokens: vec![0; 2 * CAPACITIES_BLOCKS.len()],
                    instances_before: seen.len(),
                    ..Expected::default()
                },
            ));
        }
        seen.insert(&request.instance_id);
        let hits = pool.process_request(&request.keys, request.timestamp_ns);
        let window = &mut windows.last_mut().unwrap().1;
        window.input_tokens += request.input_token_len;
        window.infinite_hit_tokens += hits.last().unwrap() * BLOCK_SIZE_TOKENS;
        for (sum, h) in window.pooled_hit_tokens.iter_mut().zip(&hits) {
            *sum += h * BLOCK_SIZE_TOKENS;
        }
        window.instances_after = seen.len();
    }
    windows
}

/// One window of the pool against the oracle's `want` and the one-lane run's `single` (its
/// hit tokens at a capacity from `single_slot`); `false` for the window an instance was born
/// in (no pool slot figure).
fn check_window(
    index: usize,
    window: &Window,
    want: &Expected,
    single: &LaneWindow,
    single_slot: &dyn Fn(u64) -> Option<u64>,
) -> bool {
    let pool = window.pool.as_ref().expect("a pool window");
    assert_eq!(pool.lane.input_tokens, want.input_tokens, "window {index}");
    assert_eq!(
        pool.lane.input_tokens, single.input_tokens,
        "window {index}"
    );
    assert_eq!(
        pool.lane.infinite_hit_tokens, want.infinite_hit_tokens,
        "window {index}"
    );
    assert_eq!(
        pool.lane.infinite_hit_tokens, single.infinite_hit_tokens,
        "window {index}"
    );
    assert_eq!(
        pool.shared_by, want.instances_after as u64,
        "window {index}"
    );
    // The instances' windows hold the instances only: their Σ input is the pool's once.
    assert_eq!(window.lanes.len(), want.instances_after, "window {index}");
    let instances_input: u64 = window.lanes.iter().map(|lane| lane.input_tokens).sum();
    assert_eq!(instances_input, pool.lane.input_tokens, "window {index}");
    let slot_count = CAPACITIES_BLOCKS.len();
    if want.instances_before != 0 && want.instances_before != want.instances_after {
        assert_eq!(
            pool.lane.slot_hit_tokens,
            vec![None; slot_count],
            "window {index}"
        );
        return false;
    }
    let at = match want.instances_after {
        2 => 0,
        3 => slot_count,
        n => panic!("window {index}: {n} instances"),
    };
    let oracle: Vec<Option<u64>> = want.pooled_hit_tokens[at..at + slot_count]
        .iter()
        .map(|&tokens| Some(tokens))
        .collect();
    assert_eq!(
        pool.lane.slot_hit_tokens, oracle,
        "window {index} against the oracle"
    );
    // The one-lane run lists its slots by size: each N × C looked up.
    let n = want.instances_after as u64;
    let one_lane: Vec<Option<u64>> = CAPACITIES_BLOCKS
        .iter()
        .map(|&c| single_slot(c * n))
        .collect();
    assert_eq!(
        pool.lane.slot_hit_tokens, one_lane,
        "window {index} against the one-lane run"
    );
    true
}

fn check_width(window_ns: i64, expect_merged: bool) {
    let dir = tempfile::tempdir().unwrap();
    let requests = requests();
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(&trace, standard_trace(&requests)).unwrap();
    let flags = SingleInstanceFlags {
        trace_block_size_tokens: Some(BLOCK_SIZE_TOKENS),
        pool: Some("pool".to_owned()),
        ..SingleInstanceFlags::default()
    };
    let slots: Vec<Capacity> = CAPACITIES_BLOCKS.map(Capacity::Blocks).to_vec();
    let with_pool = live_run(&trace, dir.path(), &flags, slots, window_ns);
    // Every row to one lane, its slots at 2 × C and 3 × C: that lane is the pool.
    let one_lane = SingleInstanceFlags {
        pool: None,
        instance: Some("pool".to_owned()),
        ..flags.clone()
    };
    let pooled_slots: Vec<Capacity> = [2, 3]
        .iter()
        .flat_map(|n| CAPACITIES_BLOCKS.map(|c| Capacity::Blocks(c * n)))
        .collect();
    let merged_lane = live_run(&trace, dir.path(), &one_lane, pooled_slots, window_ns);

    let timeline = &with_pool.timeline;
    assert_eq!(timeline.window_ns, merged_lane.timeline.window_ns);
    assert_eq!(
        timeline.window_ns > window_ns,
        expect_merged,
        "window {} ns",
        timeline.window_ns
    );
    let expected = oracle_windows(&requests, timeline.window_ns);
    assert_eq!(timeline.windows.len(), expected.len());
    assert_eq!(merged_lane.timeline.windows.len(), expected.len());
    let mut birth_windows = 0;
    for (index, ((window, (start, want)), single)) in timeline
        .windows
        .iter()
        .zip(&expected)
        .zip(&merged_lane.timeline.windows)
        .enumerate()
    {
        assert_eq!(window.start_ns, *start, "window {index}");
        let single_slot = |capacity_blocks: u64| {
            let slot = merged_lane
                .slots
                .iter()
                .position(|slot| slot.capacity == Capacity::Blocks(capacity_blocks))
                .unwrap();
            single.lanes[0].slot_hit_tokens[slot]
        };
        if !check_window(index, window, want, &single.lanes[0], &single_slot) {
            birth_windows += 1;
        }
    }
    assert_eq!(birth_windows, 1, "engine-2 is born in one window");
    // The snapshot's totals are the instances' alone too.
    let totals = &with_pool.totals;
    let pool = with_pool.pool.as_ref().unwrap();
    assert_eq!(totals.requests, pool.requests);
    assert_eq!(totals.input_tokens, pool.input_tokens);
    assert_eq!(with_pool.lanes.len(), 3);
}

#[test]
fn the_pools_windows_are_the_oracles_at_n_times_each_slot() {
    check_width(200_000_000, false);
}

/// Merged windows (the trace outgrows the windows kept) are sums of the same figures.
#[test]
fn the_pools_merged_windows_are_the_oracles_too() {
    check_width(2_000_000, true);
}

// ---- the TUI ----

fn lane(id: &str) -> LaneSnapshot {
    LaneSnapshot {
        instance_id: id.to_owned(),
        block_size_tokens: 16,
        block_bytes: 1 << 20,
        requests: 100,
        input_tokens: 120_000,
        slot_hit_blocks: vec![1000],
        infinite_hit_blocks: 3000,
        ..LaneSnapshot::default()
    }
}

/// Two instances at 20 % (slot) / 60 % (∞) in every window, the pool at 35 % + 5 % × i / 80 %.
fn snapshot() -> LiveSnapshot {
    let instance = LaneWindow {
        input_tokens: 10_000,
        slot_hit_tokens: vec![Some(2_000)],
        infinite_hit_tokens: 6_000,
    };
    LiveSnapshot {
        slots: vec![Slot {
            id: 1,
            capacity: Capacity::Blocks(64),
        }],
        lanes: vec![lane("engine-a"), lane("engine-b")],
        pool: Some(LaneSnapshot {
            requests: 200,
            input_tokens: 240_000,
            ..lane("pool")
        }),
        timeline: Timeline {
            window_ns: 10_000_000_000,
            origin_ns: Some(0),
            windows: (0..12_u64)
                .map(|i| Window {
                    start_ns: i64::try_from(i).unwrap() * 10_000_000_000,
                    lanes: vec![instance.clone(), instance.clone()],
                    pool: Some(PoolWindow {
                        shared_by: 2,
                        lane: LaneWindow {
                            input_tokens: 20_000,
                            slot_hit_tokens: vec![Some(7_000 + 1_000 * (i % 2))],
                            infinite_hit_tokens: 16_000,
                        },
                    }),
                    open: i == 11,
                })
                .collect(),
        },
        ..LiveSnapshot::default()
    }
    .finished()
}

fn key(app: &mut App, code: crossterm::event::KeyCode) {
    app.handle_key(crossterm::event::KeyEvent::new(
        code,
        crossterm::event::KeyModifiers::NONE,
    ));
}

/// The rates of a series' points, rounded to 0.1 %.
fn rates(points: &[(f64, f64)]) -> Vec<i64> {
    #[expect(clippy::cast_possible_truncation, reason = "percent × 10")]
    points
        .iter()
        .map(|&(_, y)| (y * 10.0).round() as i64)
        .collect()
}

#[test]
fn the_pool_row_shows_the_pools_timeline_and_the_totals_row_the_pool_beside() {
    use crossterm::event::KeyCode;
    let snap = snapshot();
    let mut app = App::default();
    app.observe(&snap);
    let area = Rect::new(0, 0, 60, 20);
    // Two lanes, the totals, then the pool.
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Down);
    assert!(app.selected_pool());
    let chart = timeline::layout(area, &snap, &app).unwrap();
    let by_slot = |slot: Option<usize>| {
        let series = chart
            .series
            .iter()
            .find(|s| s.slot == slot && !s.pool_beside);
        rates(&series.unwrap().points)
    };
    // One chart window per collected one here: the pool's own rates, not the instances'.
    assert_eq!(chart.window_ns, snap.timeline.window_ns);
    assert_eq!(by_slot(None), vec![800; 12]);
    let pool_slot: Vec<i64> = (0..12)
        .map(|i| if i % 2 == 0 { 350 } else { 400 })
        .collect();
    assert_eq!(by_slot(Some(0)), pool_slot);
    assert!(chart.series.iter().all(|s| !s.pool_beside));
    let lines = crate::tui::render::screen_rows(&snap, &app, 120, 40);
    let screen = lines.join("\n");
    assert!(
        lines
            .iter()
            .any(|line| line.contains("(auto) · pool (shared, N × slot)")),
        "{screen}"
    );

    // The totals row: the instances' Σ (the pool not in it), the pool's line beside.
    key(&mut app, KeyCode::Up);
    assert!(!app.selected_pool() && app.selected_lane().is_none());
    let chart = timeline::layout(area, &snap, &app).unwrap();
    let totals: Vec<_> = chart.series.iter().filter(|s| !s.pool_beside).collect();
    assert_eq!(rates(&totals[0].points), vec![600; 12]);
    assert_eq!(rates(&totals.last().unwrap().points), vec![200; 12]);
    let beside: Vec<_> = chart.series.iter().filter(|s| s.pool_beside).collect();
    assert_eq!(beside.len(), 1);
    assert_eq!(beside[0].slot, Some(0));
    assert_eq!(rates(&beside[0].points), pool_slot);
    let lines = crate::tui::render::screen_rows(&snap, &app, 120, 40);
    let screen = lines.join("\n");
    assert!(
        lines
            .iter()
            .any(|line| line.contains("· every instance vs pool")),
        "{screen}"
    );
    assert!(
        screen.contains("⠒ pool"),
        "the legend names the pool:\n{screen}"
    );

    // An instance's row: no pool line.
    key(&mut app, KeyCode::Home);
    let chart = timeline::layout(area, &snap, &app).unwrap();
    assert!(chart.series.iter().all(|s| !s.pool_beside));
    assert_eq!(rates(&chart.series[0].points), vec![600; 12]);
}

/// A named pool (`--pool NAME`) is `pool NAME` in the legend and the title of the totals row.
#[test]
fn a_named_pools_line_beside_the_totals_is_pool_and_its_name() {
    use crossterm::event::KeyCode;
    let mut snap = snapshot();
    "shared-kv".clone_into(&mut snap.pool.as_mut().unwrap().instance_id);
    let mut app = App::default();
    app.observe(&snap);
    // Two lanes, then the totals.
    key(&mut app, KeyCode::Down);
    key(&mut app, KeyCode::Down);
    assert!(!app.selected_pool() && app.selected_lane().is_none());
    let lines = crate::tui::render::screen_rows(&snap, &app, 120, 40);
    let screen = lines.join("\n");
    assert!(
        lines
            .iter()
            .any(|line| line.contains("· every instance vs pool shared-kv")),
        "{screen}"
    );
    assert!(
        screen.contains("⠒ pool shared-kv"),
        "the legend names the pool:\n{screen}"
    );
}
