//! `watch --pool --memory-horizon H`: every surface marks what is only a lower bound, and the
//! pool has its knees (a new user's review).
//!
//! * The pool's cell at slot C is the pool at N × C: it is a lower bound once N × C > H, even
//!   when C ≤ H (the TUI table judged it by C; headless and `/metrics` already by N × C).
//! * Under a horizon the knees ("capacity for target") are lower bounds: the curve is exact up
//!   to H, but the ∞ bound they are a fraction of is itself a lower bound, so the true knee is
//!   at least the computed one. Checked against a run without the horizon (the true knees).
//! * The pool's knees, in its total capacity, on every surface, equal a one-lane run of the
//!   same rows (`--instance pool`): its knees are its own curve's.
//! * `/metrics` exports the pool's memory horizon as it does each instance's.
//!
//! The TUI and `/metrics` read a real ingest thread's last snapshot (in-process, the same
//! snapshot the binary draws and serves); the headless JSON is the binary's.

use crate::common::headless::instance_entry;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use litehit_core::display::LOWER_BOUND_MARK;
use litehit_core::projector::Capacity;
use litehit_core::workload::WorkloadConfig;
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::{FollowState, LaneSnapshot};
use litehit_tui::app::App;
use litehit_tui::render::targets::{SHOWN_PERCENTS, capacity_text};
use litehit_tui::render::{curve, format};
use ratatui::layout::Rect;
use serde_json::Value;

use crate::common::cli_bin::{generate, standard_trace, write_file};
use crate::common::headless::headless_to_end;

/// 16 MiB blocks: 4 GiB is 256 blocks, the horizon of 8 GiB 512, the pool at 4 × 4 GiB 1024.
const BLOCK_BYTES: &str = "16777216";
const SLOTS: &str = "4,16";
const HORIZON: &str = "8GB";
const INSTANCES: usize = 4;
/// The longest wait for the ingest thread to finish the trace.
const WAIT: Duration = Duration::from_secs(60);

/// Four instances with reuse deeper than the horizon, alone and pooled (so the pool at
/// 16 GiB really differs from the capped one).
fn fleet_trace(dir: &Path) -> PathBuf {
    let config = WorkloadConfig {
        seed: 2612,
        instance_ids: (0..INSTANCES).map(|i| format!("engine-{i}")).collect(),
        block_size_tokens: 16,
        ..WorkloadConfig::default()
    };
    write_file(dir, "fleet.jsonl", &standard_trace(&generate(config, 3000)))
}

/// The flags every run shares, then `extra`.
fn flags<'a>(extra: &[&'a str]) -> Vec<&'a str> {
    let mut flags = vec![
        "--block-size",
        "16",
        "--block-bytes",
        BLOCK_BYTES,
        "--capacity-gb",
        SLOTS,
    ];
    flags.extend_from_slice(extra);
    flags
}

/// The last snapshot of a live ingest thread that read `trace` to its end with `extra` flags.
fn live_snapshot(trace: &Path, extra: &[&str], dir: &Path) -> Arc<LiveSnapshot> {
    let trace = trace.display().to_string();
    let args = [
        &["litehit", "watch", trace.as_str(), "--headless"][..],
        &flags(extra),
    ]
    .concat();
    let cli = <litehit::cli::Cli as clap::Parser>::parse_from(args);
    let litehit::cli::Command::Watch(args) = cli.command else {
        panic!("watch expected")
    };
    let mut config = litehit::commands::watch::ingest_config(&args).unwrap();
    config.spill_dir = Some(dir.to_path_buf());
    config.frame_period = Duration::from_millis(10);
    config.exit_at_eof = true;
    let live = litehit_live::ingest::spawn(config).unwrap();
    let deadline = Instant::now() + WAIT;
    loop {
        let snap = live.latest();
        if snap.source.state == FollowState::Finished {
            return snap;
        }
        assert!(
            Instant::now() < deadline,
            "the trace was not read to its end"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn key(app: &mut App, code: KeyCode) {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
}

/// An app that saw `snap`, with the pool's row selected (↓ past the instances and totals).
fn pool_selected(snap: &LiveSnapshot) -> App {
    let mut app = App::default();
    app.observe(snap);
    for _ in 0..=snap.lanes.len() + 1 {
        key(&mut app, KeyCode::Down);
    }
    assert!(app.selected_pool());
    app
}

fn screen(snap: &LiveSnapshot, app: &App) -> Vec<String> {
    crate::tui::render::screen_rows(snap, app, 160, 48)
}

/// The last headless report line of `watch TRACE` with the shared and `extra` flags.
fn headless_last(trace: &Path, extra: &[&str]) -> Value {
    let (lines, stderr) = headless_to_end(trace, &flags(extra));
    let last = lines
        .last()
        .unwrap_or_else(|| panic!("no report line: {stderr}"))
        .clone();
    assert_eq!(last["bad_lines"], 0, "{last}");
    last
}

/// Every instance id of a report, the pool's (last) included.
fn ids(report: &Value) -> Vec<String> {
    report["instances"]
        .as_array()
        .unwrap()
        .iter()
        .map(|instance| instance["instance_id"].as_str().unwrap().to_owned())
        .collect()
}

/// `(percent, capacity_blocks, capacity_bytes, lower_bound)` of each knee of a report object.
fn knees(object: &Value) -> Vec<(u64, Option<u64>, u64, Option<bool>)> {
    object["capacity_for_fraction"]
        .as_array()
        .unwrap()
        .iter()
        .map(|knee| {
            (
                knee["percent"].as_u64().unwrap(),
                knee["capacity_blocks"].as_u64(),
                knee["capacity_bytes"].as_u64().unwrap(),
                knee["lower_bound"].as_bool(),
            )
        })
        .collect()
}

/// The screen row holding `text`.
fn row_with<'a>(rows: &'a [String], text: &str) -> &'a str {
    rows.iter()
        .find(|row| row.contains(text))
        .unwrap_or_else(|| panic!("no row with {text:?}:\n{}", rows.join("\n")))
}

/// The instances table's cells after the row named `name` (`requests`, `input tok`, then
/// one per slot, ∞, …).
fn cells_after<'a>(rows: &'a [String], name: &str) -> Vec<&'a str> {
    let row = rows
        .iter()
        .find(|row| {
            row.trim_start_matches('│')
                .trim_start_matches(['▶', ' '])
                .starts_with(&format!("{name} "))
        })
        .unwrap_or_else(|| panic!("no table row {name:?}:\n{}", rows.join("\n")));
    let start = row.find(name).unwrap() + name.len();
    row[start..]
        .trim_end_matches(['│', ' '])
        .split_whitespace()
        .collect()
}

/// `a · b · c` as the targets line spells one lane's knees (in bytes), marked or not.
fn targets_values(bytes: &[u64], lower_bound: bool) -> String {
    bytes
        .iter()
        .map(|&bytes| capacity_text(bytes, lower_bound))
        .collect::<Vec<_>>()
        .join(" · ")
}

/// The knees' bytes of `lane` at the targets line's percents.
fn shown_knee_bytes(lane: &LaneSnapshot) -> Vec<u64> {
    SHOWN_PERCENTS
        .iter()
        .map(|&percent| {
            let knee = lane
                .capacity_for_fraction
                .iter()
                .find(|knee| knee.percent == percent)
                .unwrap_or_else(|| panic!("{} has no {percent}% knee", lane.instance_id));
            knee.capacity_blocks * lane.block_bytes
        })
        .collect()
}

#[test]
fn the_pool_cells_are_judged_at_n_times_c_against_the_horizon() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fleet_trace(dir.path());
    let bounded = live_snapshot(&trace, &["--pool", "--memory-horizon", HORIZON], dir.path());
    let exact = live_snapshot(&trace, &["--pool"], dir.path());
    assert_eq!(bounded.health.bad_lines, 0);
    let (pool, exact_pool) = (bounded.pool.as_ref().unwrap(), exact.pool.as_ref().unwrap());
    assert_eq!(pool.shared_by, INSTANCES as u64);
    // 4 GiB ≤ H = 8 GiB < 4 × 4 GiB: every instance is exact there, the pool is not, and it
    // really falls short of the exact figure (the mark matters).
    let horizon_blocks = pool.memory_horizon_blocks.unwrap();
    let c_blocks = Capacity::Gigabytes(4.0).blocks(pool.block_bytes).unwrap();
    assert!(c_blocks <= horizon_blocks && horizon_blocks < 4 * c_blocks);
    assert!(
        pool.slot_hit_blocks[0] < exact_pool.slot_hit_blocks[0],
        "the pool at 16 GiB loses hits beyond the horizon: {} vs {}",
        pool.slot_hit_blocks[0],
        exact_pool.slot_hit_blocks[0]
    );

    let mut app = App::default();
    app.observe(&bounded);
    let rows = screen(&bounded, &app);
    let pool_cells = cells_after(&rows, "pool (shared)");
    assert_eq!(
        pool_cells[2],
        format::percent_bound(pool.slot_hit_rate(0), true),
        "the pool's 4 GiB cell (the pool at 16 GiB, above the 8 GiB horizon) is a lower bound"
    );
    assert!(pool_cells[2].starts_with(LOWER_BOUND_MARK));
    assert!(
        pool_cells[3].starts_with(LOWER_BOUND_MARK),
        "{pool_cells:?}"
    );
    for (lane, exact_lane) in bounded.lanes.iter().zip(&exact.lanes) {
        assert_eq!(
            lane.slot_hit_blocks[0], exact_lane.slot_hit_blocks[0],
            "exact at C ≤ H"
        );
        let cells = cells_after(&rows, &lane.instance_id);
        assert_eq!(
            cells[2],
            format::percent(lane.slot_hit_rate(0)),
            "{cells:?}"
        );
        assert!(
            cells[3].starts_with(LOWER_BOUND_MARK),
            "16 GiB > H: {cells:?}"
        );
    }
    // Without the horizon nothing is marked.
    let mut app = App::default();
    app.observe(&exact);
    let rows = screen(&exact, &app);
    let cells = cells_after(&rows, "pool (shared)");
    assert_eq!(cells[2], format::percent(exact_pool.slot_hit_rate(0)));

    // The pool's chart: its slots at N × C, each legend entry judged there.
    let app = pool_selected(&bounded);
    let rows = screen(&bounded, &app);
    for (index, slot) in bounded.slots.iter().enumerate() {
        let pooled = slot.capacity.blocks(pool.block_bytes).unwrap() * INSTANCES as u64;
        let entry = format!(
            "┊ {} {}",
            format::capacity(Capacity::Blocks(pooled)),
            format::percent_bound(pool.slot_hit_rate(index), pooled > horizon_blocks)
        );
        row_with(&rows, &entry);
        assert!(entry.contains(LOWER_BOUND_MARK), "{entry}");
    }
}

#[test]
fn under_a_horizon_the_knees_are_lower_bounds_on_every_surface() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fleet_trace(dir.path());
    let bounded = headless_last(&trace, &["--pool", "--memory-horizon", HORIZON]);
    let exact = headless_last(&trace, &["--pool"]);

    // Headless: each knee says whether it is a lower bound; under the horizon each is, and
    // the true knee (the run without it) is never smaller, often larger.
    let mut strictly_larger = 0;
    for id in ids(&bounded) {
        let (capped, truth) = (
            knees(instance_entry(&bounded, &id)),
            knees(instance_entry(&exact, &id)),
        );
        assert_eq!(capped.len(), 4, "{id}: {capped:?}");
        for (capped, truth) in capped.iter().zip(&truth) {
            assert_eq!(capped.3, Some(true), "{id}: {capped:?}");
            assert_eq!(truth.3, Some(false), "{id}: {truth:?}");
            assert!(
                capped.2 <= truth.2,
                "{id}: {capped:?} above the true {truth:?}"
            );
            strictly_larger += usize::from(capped.2 < truth.2);
        }
    }
    assert!(strictly_larger > 0, "the horizon changes some knee");
    for (capped, truth) in knees(&bounded["total"]).iter().zip(&knees(&exact["total"])) {
        assert_eq!((capped.3, truth.3), (Some(true), Some(false)));
        assert!(capped.2 <= truth.2);
    }

    // /metrics: the same bytes, labelled lower_bound="true" (and not without the horizon).
    let snap = live_snapshot(&trace, &["--pool", "--memory-horizon", HORIZON], dir.path());
    let text = litehit_live::metrics::encode(&snap).unwrap();
    let plain =
        litehit_live::metrics::encode(&live_snapshot(&trace, &["--pool"], dir.path())).unwrap();
    for id in ids(&bounded) {
        for (percent, _, bytes, _) in knees(instance_entry(&bounded, &id)) {
            let fraction = litehit_live::metrics::fraction_label(u32::try_from(percent).unwrap());
            let series = format!(
                "litehit_capacity_for_fraction_bytes{{instance=\"{id}\",fraction=\"{fraction}\""
            );
            let line = format!("{series},lower_bound=\"true\"}} {bytes}\n");
            assert!(text.contains(&line), "{line:?} missing from\n{text}");
            assert!(
                plain.contains(&format!("{series}}} ")),
                "{series} in\n{plain}"
            );
            assert!(!plain.contains(&format!("{series},lower_bound")), "{plain}");
        }
    }

    // TUI: the targets line puts the mark before each capacity, the instance's and the Σ.
    let mut app = App::default();
    app.observe(&snap);
    let first = &snap.lanes[0];
    let line = row_with(&screen(&snap, &app), "to reach 90/95/99 % of ∞").to_owned();
    let expected = format!(
        "{}: {}",
        first.instance_id,
        targets_values(&shown_knee_bytes(first), true)
    );
    assert!(line.contains(&expected), "{expected:?} not in {line:?}");
    assert!(
        line.contains(&format!("Σ of instance knees: {LOWER_BOUND_MARK}")),
        "{line}"
    );
    // The chart's legend says its knees are lower bounds.
    row_with(&screen(&snap, &app), "◆ 50/90/95/99% knees (lower bounds)");
    let exact_snap = live_snapshot(&trace, &["--pool"], dir.path());
    let mut app = App::default();
    app.observe(&exact_snap);
    let rows = screen(&exact_snap, &app);
    let line = row_with(&rows, "to reach 90/95/99 % of ∞");
    assert!(!line.contains(LOWER_BOUND_MARK), "{line}");
    assert!(!rows.iter().any(|row| row.contains("(lower bounds)")));
}

#[test]
fn the_pool_has_its_knees_in_total_capacity_on_every_surface() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fleet_trace(dir.path());
    for horizon in [&[][..], &["--memory-horizon", HORIZON][..]] {
        let pooled = headless_last(&trace, &[&["--pool"][..], horizon].concat());
        // The oracle: one pool_lane fed every row, its own knees.
        let one_lane = headless_last(&trace, &[&["--instance", "pool"][..], horizon].concat());
        assert_eq!(ids(&one_lane), ["pool"]);
        let pool = instance_entry(&pooled, "pool");
        assert_eq!(pool["kind"], "pool");
        let pool_knees = knees(pool);
        assert_eq!(pool_knees.len(), 4, "{pool}");
        assert_eq!(
            pool_knees,
            knees(instance_entry(&one_lane, "pool")),
            "{horizon:?}"
        );
        assert!(pool_knees.iter().all(|knee| knee.1.unwrap() > 0));

        // /metrics and the TUI read the same knees from the live snapshot.
        let snap = live_snapshot(&trace, &[&["--pool"][..], horizon].concat(), dir.path());
        let pool_lane = snap.pool.as_ref().unwrap();
        let blocks: Vec<Option<u64>> = pool_lane
            .capacity_for_fraction
            .iter()
            .map(|knee| Some(knee.capacity_blocks))
            .collect();
        assert_eq!(
            blocks,
            pool_knees.iter().map(|knee| knee.1).collect::<Vec<_>>()
        );
        let text = litehit_live::metrics::encode(&snap).unwrap();
        let bound = if horizon.is_empty() {
            String::new()
        } else {
            ",lower_bound=\"true\"".to_owned()
        };
        for (percent, _, bytes, _) in &pool_knees {
            let fraction = litehit_live::metrics::fraction_label(u32::try_from(*percent).unwrap());
            let line = format!(
                "litehit_capacity_for_fraction_bytes{{instance=\"pool\",fraction=\"{fraction}\"{bound}}} {bytes}\n"
            );
            assert!(text.contains(&line), "{line:?} missing from\n{text}");
        }

        // The TUI, pool row selected: its knees on the targets line, then the Σ; ◆ on its
        // curve at its total capacity.
        let app = pool_selected(&snap);
        let rows = screen(&snap, &app);
        let line = row_with(&rows, "to reach 90/95/99 % of ∞");
        let expected = format!(
            "pool (shared): {} │ Σ of instance knees: ",
            targets_values(&shown_knee_bytes(pool_lane), !horizon.is_empty())
        );
        assert!(line.contains(&expected), "{expected:?} not in {line:?}");
        let chart = curve::layout(Rect::new(0, 0, 80, 30), &snap, &app).unwrap();
        let xs: Vec<f64> = chart.knees.iter().map(|knee| knee.2).collect();
        let expected: Vec<f64> = pool_lane
            .capacity_for_fraction
            .iter()
            .map(|knee| curve::capacity_x((knee.capacity_blocks * pool_lane.block_bytes) as f64))
            .collect();
        assert_eq!(xs, expected, "the pool's knees on its total-capacity axis");
        assert!(
            rows.iter().any(|row| row.contains('◆')),
            "{}",
            rows.join("\n")
        );
    }
}

#[test]
fn metrics_export_the_pools_memory_horizon_as_each_instances() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fleet_trace(dir.path());
    let report = headless_last(&trace, &["--pool", "--memory-horizon", HORIZON]);
    let snap = live_snapshot(&trace, &["--pool", "--memory-horizon", HORIZON], dir.path());
    let text = litehit_live::metrics::encode(&snap).unwrap();
    for id in ids(&report) {
        let horizon = &instance_entry(&report, &id)["memory_horizon"];
        for (unit, value) in [("blocks", &horizon["blocks"]), ("bytes", &horizon["bytes"])] {
            let value = value.as_u64().unwrap_or_else(|| panic!("{id}: {horizon}"));
            let line = format!("litehit_memory_horizon_{unit}{{instance=\"{id}\"}} {value}\n");
            assert!(text.contains(&line), "{line:?} missing from\n{text}");
        }
    }
    assert_eq!(
        instance_entry(&report, "pool")["memory_horizon"]["bytes"],
        8_u64 << 30
    );
    // Without a horizon, no such series, the pool's included.
    let plain =
        litehit_live::metrics::encode(&live_snapshot(&trace, &["--pool"], dir.path())).unwrap();
    assert!(!plain.contains("litehit_memory_horizon_blocks{"), "{plain}");
}
