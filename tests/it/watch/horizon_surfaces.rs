//! `--memory-horizon` on every surface (issue 18, "every surface says so"): the TUI's ∞
//! column and legend become `≤ H`, the headless JSON carries the horizon and marks the
//! results above it as lower bounds, `/metrics` exports the horizon and labels the series
//! above it, and the facts notice says what `query` / `mrc` will read above it. The exact
//! figures at capacities up to the horizon are compared with a run without it (the horizon
//! only decides what is forgotten). Also: `watch` under an address-space limit stops cleanly,
//! out of memory, never aborts.
//!
//! Servers bind 127.0.0.1 with port 0 (the monitor prints the port); every wait is bounded.

use crate::common::headless::instance_entry;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

use crate::common::cli_bin::{
    Announced, facts_temps, generate, litehit, run_in, spawn_announcing_port, standard_trace,
    write_file,
};
use litehit_core::projector::Capacity;
use litehit_core::workload::WorkloadConfig;
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::{
    FactsWrite, FollowState, LaneSnapshot, LaneWindow, Slot, SourceStatus, Timeline, Window,
};
use litehit_tui::app::App;
use serde_json::Value;

/// Longest wait for anything: a hang fails the test.
const WAIT: Duration = Duration::from_secs(120);
const REQUESTS: usize = 2000;
/// The horizon, in blocks, and the block slots on each side of it.
const HORIZON_BLOCKS: u64 = 300;
const SLOTS: &str = "100b,300b,2000b";

fn screen(snap: &LiveSnapshot, width: u16, height: u16) -> String {
    let mut app = App::default();
    app.observe(snap);
    crate::tui::render::screen_text(snap, &app, width, height)
}

/// One lane, one GB slot, a timeline, a facts snapshot just written; with or without a
/// horizon of 20 TiB.
fn snapshot(horizon: Option<Capacity>) -> LiveSnapshot {
    let block_bytes = 2 << 20;
    LiveSnapshot {
        source: SourceStatus {
            path: "t.jsonl".to_owned(),
            state: FollowState::Following,
            ..SourceStatus::default()
        },
        slots: vec![Slot {
            id: 1,
            capacity: Capacity::Gigabytes(40.0),
        }],
        lanes: vec![LaneSnapshot {
            instance_id: "engine-0".to_owned(),
            block_size_tokens: 16,
            block_bytes,
            requests: 1000,
            input_tokens: 160_000,
            slot_hit_blocks: vec![2_000],
            infinite_hit_blocks: 5_000,
            unique_blocks: 9_000,
            memory_horizon_blocks: horizon.and_then(|horizon| horizon.blocks(block_bytes)),
            ..LaneSnapshot::default()
        }],
        timeline: Timeline {
            window_ns: 10_000_000_000,
            origin_ns: Some(0),
            windows: (0..4)
                .map(|i| Window {
                    start_ns: i * 10_000_000_000,
                    lanes: vec![LaneWindow {
                        input_tokens: 10_000,
                        slot_hit_tokens: vec![Some(2_000)],
                        infinite_hit_tokens: 6_000,
                    }],
                    pool: None,
                    open: i == 3,
                })
                .collect(),
        },
        facts_write: FactsWrite::Done {
            path: "f.csv".to_owned(),
            rows: 1000,
            bytes: 1 << 20,
        },
        memory_horizon: horizon,
        ..LiveSnapshot::default()
    }
    .finished()
}

/// The instances table's header row.
fn header_row(text: &str) -> &str {
    text.lines()
        .find(|line| line.contains("instance") && line.contains("requests"))
        .unwrap_or_else(|| panic!("no table header in\n{text}"))
}

#[test]
fn the_tui_shows_the_infinite_column_under_the_horizon_as_a_lower_bound() {
    let horizon = Capacity::Gigabytes(20.0 * 1024.0);
    let text = screen(&snapshot(Some(horizon)), 160, 44);
    let header = header_row(&text);
    // Issue #26: `≤ 20.00 TiB` read as "a cache of up to 20 TiB": it is ∞, under a horizon.
    assert!(header.contains("∞ H=20.00 TiB"), "{header}\n{text}");
    assert!(!header.contains('≤'), "{header}");
    // The timeline's legend names the bound the same way.
    assert!(text.matches("∞ H=20.00 TiB").count() >= 2, "{text}");
    // The notice of the facts snapshot just written says what its readers get above it.
    assert!(
        text.contains("memory horizon 20.00 TiB: hits above it (and at ∞) are lower bounds"),
        "{text}"
    );

    // Without a horizon: ∞, and no note.
    let text = screen(&snapshot(None), 160, 44);
    let header = header_row(&text);
    assert!(
        header.contains('∞') && !header.contains("H=") && !header.contains('≤'),
        "{header}"
    );
    assert!(!text.contains("memory horizon"), "{text}");

    // A horizon in blocks is shown in blocks.
    let text = screen(&snapshot(Some(Capacity::Blocks(50_000_000))), 160, 44);
    assert!(header_row(&text).contains("∞ H=50000000 blk"), "{text}");
}

/// Two instances with reuse deeper than the horizon (so the bound really differs).
fn trace_text() -> String {
    let config = WorkloadConfig {
        seed: 1818,
        block_size_tokens: 256,
        instance_ids: vec!["prefill-0".to_owned(), "prefill-1".to_owned()],
        ..WorkloadConfig::default()
    };
    standard_trace(&generate(config, REQUESTS))
}

/// `watch --headless --exit-at-eof` of `trace` with `extra` flags: every JSON line, stderr.
fn headless(trace: &Path, extra: &[&str]) -> (Vec<Value>, String) {
    let args = [&["--capacity-gb", SLOTS][..], extra].concat();
    crate::common::headless::headless_to_end(trace, &args)
}

#[test]
fn headless_lines_carry_the_horizon_and_mark_the_lower_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &trace_text());
    let facts = dir.path().join("facts.csv");
    let horizon = format!("{HORIZON_BLOCKS}b");
    let (lines, stderr) = headless(
        &trace,
        &[
            "--memory-horizon",
            &horizon,
            "--facts-out",
            facts.to_str().unwrap(),
        ],
    );
    let (exact_lines, _) = headless(&trace, &[]);
    let last = lines.last().unwrap();
    let exact = exact_lines.last().unwrap();
    assert_eq!(last["schema"], litehit_live::headless::SCHEMA);
    assert_eq!(last["memory_horizon"]["capacity_blocks"], HORIZON_BLOCKS);
    assert!(exact["memory_horizon"].is_null(), "{exact}");
    let mut deeper = false;
    for id in ["prefill-0", "prefill-1"] {
        let bounded = instance_entry(last, id);
        let exact = instance_entry(exact, id);
        let block_bytes = bounded["block_bytes"].as_u64().unwrap();
        assert_eq!(bounded["memory_horizon"]["blocks"], HORIZON_BLOCKS);
        assert_eq!(
            bounded["memory_horizon"]["bytes"],
            HORIZON_BLOCKS * block_bytes
        );
        assert!(exact["memory_horizon"].is_null());
        assert_eq!(bounded["infinite_is_lower_bound"], true);
        assert_eq!(exact["infinite_is_lower_bound"], false);
        let bound_inf = bounded["infinite_hit_tokens"].as_u64().unwrap();
        let exact_inf = exact["infinite_hit_tokens"].as_u64().unwrap();
        assert!(bound_inf <= exact_inf, "{id}: ∞ {bound_inf} > {exact_inf}");
        deeper |= bound_inf < exact_inf;
        let slots = bounded["slot_results"].as_array().unwrap();
        for (slot, exact_slot) in slots.iter().zip(exact["slot_results"].as_array().unwrap()) {
            let capacity = slot["capacity_blocks"].as_u64().unwrap();
            let (hits, exact_hits) = (
                slot["hit_tokens"].as_u64().unwrap(),
                exact_slot["hit_tokens"].as_u64().unwrap(),
            );
            assert_eq!(slot["lower_bound"], capacity > HORIZON_BLOCKS, "{slot}");
            assert_eq!(exact_slot["lower_bound"], false, "{exact_slot}");
            if capacity <= HORIZON_BLOCKS {
                assert_eq!(hits, exact_hits, "{id} at {capacity} blocks: exact");
            } else {
                assert!(hits <= exact_hits, "{id} at {capacity} blocks");
            }
        }
    }
    assert!(deeper, "the trace reuses blocks deeper than the horizon");
    assert_eq!(last["total"]["infinite_is_lower_bound"], true);
    assert_eq!(last["total"]["slot_results"][2]["lower_bound"], true);
    assert_eq!(last["total"]["slot_results"][1]["lower_bound"], false);
    // The facts written say what their readers get above the horizon.
    let note = "memory horizon 300 blocks: hits at larger capacities and ∞ are lower bounds";
    let written = last["facts_write"].as_str().unwrap_or_default();
    assert!(
        written.starts_with("wrote ") && written.contains(note),
        "{last}"
    );
    assert!(stderr.contains(note), "{stderr}");
    assert!(facts.exists());
}

/// The replay summary's ∞ cell of the row named `id`: the table's fifth column.
fn infinite_cell<'a>(summary: &'a str, id: &str) -> &'a str {
    summary
        .lines()
        .find(|line| line.split_whitespace().next() == Some(id))
        .and_then(|line| line.split_whitespace().nth(4))
        .unwrap_or_else(|| panic!("no row {id} in\n{summary}"))
}

/// `replay --memory-horizon`: the summary's ∞ cell of every row (and the total) is itself
/// marked `≥`, the one lower-bound mark of the TUI and the formatter, not only the note under
/// the table; without a horizon nothing is marked.
#[test]
fn the_replay_summary_marks_the_infinite_cells_as_lower_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &trace_text());
    let replay = |name: &str, extra: &[&str]| {
        let mut args = vec![
            "replay".to_owned(),
            trace.display().to_string(),
            "--out".to_owned(),
            dir.path().join(name).display().to_string(),
        ];
        args.extend(extra.iter().map(|&arg| arg.to_owned()));
        let run = run_in(None, &args);
        assert_eq!(run.code, Some(0), "{}", run.stderr);
        run.stderr
    };
    let horizon = format!("{HORIZON_BLOCKS}b");
    let bounded = replay("bounded", &["--memory-horizon", &horizon]);
    let exact = replay("exact", &[]);
    let mark = litehit_core::display::LOWER_BOUND_MARK;
    for id in ["prefill-0", "prefill-1", "total"] {
        let cell = infinite_cell(&bounded, id);
        assert!(
            cell.starts_with(mark) && cell.ends_with('%'),
            "{id}: {cell:?}\n{bounded}"
        );
        let exact_cell = infinite_cell(&exact, id);
        assert!(
            !exact_cell.starts_with(mark) && exact_cell.ends_with('%'),
            "{id}: {exact_cell:?}\n{exact}"
        );
    }
    assert!(
        bounded.contains(&format!("(and ∞, marked {mark}) are lower bounds")),
        "{bounded}"
    );
    assert!(!exact.contains(mark), "{exact}");
    // The table stays aligned: every row as wide as the header.
    let widths: Vec<usize> = bounded
        .lines()
        .take(4)
        .map(|line| line.chars().count())
        .collect();
    assert!(widths.iter().all(|&w| w == widths[0]), "{bounded}");
}

/// `GET path` on a fresh connection: the body of a 200 reply.
fn get(port: u16, path: &str) -> String {
    let (status, head, body) = crate::common::http::get(port, path);
    assert_eq!(status, 200, "{head}");
    body
}

#[test]
fn metrics_export_the_horizon_and_label_the_lower_bounds() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &trace_text());
    let horizon = format!("{HORIZON_BLOCKS}b");
    let mut command = litehit();
    command
        .arg("watch")
        .arg(&trace)
        .args(["--headless", "--interval", "0.1", "--metrics-listen", "0"])
        .args(["--capacity-gb", SLOTS, "--memory-horizon", &horizon]);
    let Announced {
        mut child,
        port,
        stdout,
    } = spawn_announcing_port(
        &mut command,
        "litehit: metrics on http://",
        "/metrics",
        WAIT,
    );
    let deadline = Instant::now() + WAIT;
    let report: Value = loop {
        let left = deadline.saturating_duration_since(Instant::now());
        let line = stdout.recv_timeout(left).expect("a headless line in time");
        let report: Value = serde_json::from_str(&line).unwrap();
        if report["total"]["requests"] == REQUESTS as u64 && report["state"] == "following" {
            break report;
        }
    };
    let body = get(port, "/metrics");
    let _ = child.kill();
    let _ = child.wait();
    for id in ["prefill-0", "prefill-1"] {
        let block_bytes = instance_entry(&report, id)["block_bytes"].as_u64().unwrap();
        let hits = |index: usize| {
            instance_entry(&report, id)["slot_results"][index]["hit_tokens"]
                .as_u64()
                .unwrap()
        };
        let infinite = instance_entry(&report, id)["infinite_hit_tokens"]
            .as_u64()
            .unwrap();
        for line in [
            format!("litehit_memory_horizon_blocks{{instance=\"{id}\"}} {HORIZON_BLOCKS}\n"),
            format!(
                "litehit_memory_horizon_bytes{{instance=\"{id}\"}} {}\n",
                HORIZON_BLOCKS * block_bytes
            ),
            format!(
                "litehit_hit_tokens_total{{instance=\"{id}\",capacity=\"300blocks\"}} {}\n",
                hits(1)
            ),
            format!(
                "litehit_hit_tokens_total{{instance=\"{id}\",capacity=\"2000blocks\",lower_bound=\"true\"}} {}\n",
                hits(2)
            ),
            format!(
                "litehit_hit_tokens_total{{instance=\"{id}\",capacity=\"inf\",lower_bound=\"true\"}} {infinite}\n"
            ),
        ] {
            assert!(body.contains(&line), "{line:?} missing from\n{body}");
        }
    }
    assert!(
        body.contains("inf included) are lower bounds and carry the label lower_bound=true"),
        "{body}"
    );
}

/// `watch --headless --exit-at-eof --facts-out` under `ulimit -v`, on a trace of millions of
/// unique blocks: whatever runs out first (the core, the accumulator, a buffer), the run
/// stops with exit 1 and the message, writes the facts it had, and leaves no temp or spill
/// file; it never aborts (exit 134). One limit at least must run out.
#[test]
fn watch_out_of_memory_stops_cleanly_and_never_aborts() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(&trace, crate::engine::memory::many_unique_blocks_trace()).unwrap();
    let mut out_of_memory_runs = 0;
    // From about where the monitor starts to past what the whole trace needs (a debug build
    // needs ~75 MB of address space to start, its Arrow and Parquet code included; below
    // ~85 MB it can die in start-up allocations before any of its own; the 2 M keys need
    // ~40 MB more).
    for limit_kib in [
        85_000_u64, 90_000, 95_000, 100_000, 105_000, 110_000, 120_000, 140_000, 180_000,
    ] {
        let out = dir.path().join(format!("out-{limit_kib}"));
        std::fs::create_dir(&out).unwrap();
        let facts = out.join("litehit_facts.csv");
        let output = Command::new("sh")
            .arg("-c")
            .arg(format!(
                "ulimit -v {limit_kib} && exec \"$0\" watch \"$1\" --headless --exit-at-eof \
                 --interval 0.2 --facts-out \"$2\""
            ))
            .arg(env!("CARGO_BIN_EXE_litehit"))
            .arg(&trace)
            .arg(&facts)
            .env_remove("RUST_BACKTRACE")
            .output()
            .unwrap();
        let stderr = String::from_utf8_lossy(&output.stderr);
        let stdout = String::from_utf8_lossy(&output.stdout);
        let code = output.status.code();
        assert!(
            matches!(code, Some(0 | 1)),
            "limit {limit_kib} KiB: exit {code:?} (an abort?), stderr: {stderr}"
        );
        let left: Vec<_> = std::fs::read_dir(&out)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|name| {
                Path::new(name).extension().is_some_and(|extension| {
                    extension.eq_ignore_ascii_case("tmp") || extension.eq_ignore_ascii_case("spill")
                })
            })
            .collect();
        assert_eq!(
            left,
            Vec::<String>::new(),
            "limit {limit_kib} KiB: files left"
        );
        assert_eq!(facts_temps(&out), Vec::<std::path::PathBuf>::new());
        if code == Some(1) && stderr.contains("out of memory after ") {
            assert!(
                stderr.contains("unique blocks (about ")
                    && stderr.contains("GiB needed; try --memory-horizon or a TTL)"),
                "limit {limit_kib} KiB: {stderr}"
            );
            // Stopped, with the facts read so far published when the writer could make them.
            let last: Value = serde_json::from_str(stdout.lines().last().unwrap()).unwrap();
            assert_eq!(last["state"], "finished", "{last}");
            if facts.exists() {
                assert!(
                    last["facts_write"]
                        .as_str()
                        .is_some_and(|write| write.starts_with("wrote ")),
                    "{last}"
                );
            }
            out_of_memory_runs += 1;
        } else if code == Some(1) {
            // A limit so low the monitor cannot start (a thread, the runtime): an error
            // message, not an abort.
            assert!(
                !stderr.trim().is_empty(),
                "limit {limit_kib} KiB: exit 1, no message"
            );
        }
    }
    assert!(
        out_of_memory_runs > 0,
        "no limit made the monitor run out of memory"
    );
}
