//! `watch --tiers`: the live monitor's tier figures (headless JSON, `/metrics` encoding, the
//! TUI's tiers panel) against `litehit query --tiers` on the facts the same watch wrote —
//! the offline path, itself checked against the naive tier simulators in `tiers.rs`.

use crate::common::cli_bin::{generate, ok, parse_query_output, run_in, standard_trace, u64s};
use litehit_core::projector::Capacity;
use litehit_core::projector::tiers::{TierMode, TierPlan};
use litehit_core::workload::WorkloadConfig;
use litehit_tui::app::App;
use serde_json::Value;

const REQUESTS: usize = 2500;
/// Typed once, given to `watch` and to `query` alike: blocks, GB (floored per lane) and a
/// tier larger than everything (exclusive tiers may mix units).
const TIERS: &str = "hbm=200b,dram=0.05,ssd=1TB";
/// Inclusive tiers are sized in one unit (their order is checked), growing top first.
const INCLUSIVE_TIERS: &str = "hbm=0.02,dram=0.05,ssd=1TB";

fn trace_text() -> String {
    let config = WorkloadConfig {
        seed: 7,
        block_size_tokens: 16,
        instance_ids: vec!["prefill-0".to_owned(), "prefill-1".to_owned()],
        live_conversations: 60,
        ..WorkloadConfig::default()
    };
    standard_trace(&generate(config, REQUESTS))
}

fn tier_tokens(value: &Value) -> Vec<u64> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("a tiers array: {value}"))
        .iter()
        .map(|tier| tier["hit_tokens"].as_u64().unwrap())
        .collect()
}

#[test]
fn headless_tier_figures_equal_query_on_the_facts_the_watch_wrote() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(&trace, trace_text()).unwrap();
    let trace = trace.to_str().unwrap();
    for (mode, tiers) in [("exclusive", TIERS), ("inclusive", INCLUSIVE_TIERS)] {
        let facts = dir.path().join(format!("facts-{mode}.csv"));
        let facts = facts.to_str().unwrap();
        let watch = ok(run_in(
            None,
            [
                "watch",
                trace,
                "--headless",
                "--exit-at-eof",
                "--interval",
                "0.2",
                "--capacity-gb",
                "0.01",
                "--trace-block-size",
                "16",
                "--tiers",
                tiers,
                "--tier-mode",
                mode,
                "--facts-out",
                facts,
            ],
        ));
        let last: Value = serde_json::from_str(watch.stdout.lines().last().unwrap()).unwrap();
        assert_eq!(last["total"]["requests"], REQUESTS as u64);
        assert_eq!(last["tier_mode"], mode);
        let query = ok(run_in(
            None,
            [
                "query",
                facts,
                "-",
                "--summary-only",
                "--capacity-blocks",
                "1",
                "--tiers",
                tiers,
                "--tier-mode",
                mode,
            ],
        ));
        let query = parse_query_output(&query.stdout);
        let instances = last["instances"].as_array().unwrap();
        assert_eq!(instances.len(), query.instance_summaries.len());
        for summary in &query.instance_summaries {
            let instance = instances
                .iter()
                .find(|instance| instance["instance_id"] == summary["instance_id"])
                .unwrap_or_else(|| panic!("{} not in the headless line", summary["instance_id"]));
            assert_eq!(
                tier_tokens(&instance["tiers"]),
                u64s(&summary["tier_hit_tokens"]),
                "{mode}: {}",
                summary["instance_id"]
            );
            let names: Vec<&str> = instance["tiers"]
                .as_array()
                .unwrap()
                .iter()
                .map(|tier| tier["name"].as_str().unwrap())
                .collect();
            assert_eq!(names, ["hbm", "dram", "ssd"]);
        }
        let total = tier_tokens(&last["total"]["tiers"]);
        assert_eq!(total, u64s(&query.overall["tier_hit_tokens"]), "{mode}");
        // Every tier serves something here, so a tier dropped or swapped shows.
        assert!(total.iter().all(|&tokens| tokens > 0), "{mode}: {total:?}");
        let input = last["total"]["input_tokens"].as_u64().unwrap();
        let served: u64 = total.iter().sum();
        let miss = last["total"]["miss_share"].as_f64().unwrap();
        assert!(
            (miss - (input - served) as f64 / input as f64).abs() < 1e-12,
            "{miss}"
        );
        let query_miss = query.overall["miss_share"].as_f64().unwrap();
        assert!((miss - query_miss).abs() < 1e-5, "{miss} vs {query_miss}");
    }
}

#[test]
fn without_tiers_the_headless_line_has_no_tier_fields() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(&trace, trace_text()).unwrap();
    let watch = ok(run_in(
        None,
        [
            "watch",
            trace.to_str().unwrap(),
            "--headless",
            "--exit-at-eof",
            "--trace-block-size",
            "16",
        ],
    ));
    let last: Value = serde_json::from_str(watch.stdout.lines().last().unwrap()).unwrap();
    assert!(last.get("tier_mode").is_none(), "{last}");
    assert!(last["total"].get("tiers").is_none(), "{last}");
    assert!(last["instances"][0].get("miss_share").is_none(), "{last}");
}

#[test]
fn a_bad_tier_is_refused_at_startup_as_query_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(&trace, trace_text()).unwrap();
    for (tiers, expected) in [
        ("hbm=80GB,hbm=1TB", "tier name hbm given twice"),
        ("80XB", "invalid --tiers"),
    ] {
        let run = run_in(
            None,
            [
                "watch",
                trace.to_str().unwrap(),
                "--headless",
                "--exit-at-eof",
                "--tiers",
                tiers,
            ],
        );
        assert_eq!(run.code, Some(1), "{tiers}");
        assert!(run.stderr.contains(expected), "{tiers}: {}", run.stderr);
    }
}

/// The snapshot of `tui::render::several_instances` with three tiers.
fn tiered_snapshot() -> litehit_live::LiveSnapshot {
    let mut snap = crate::tui::render::several_instances();
    snap.tiers = Some(TierPlan {
        names: vec!["hbm".to_owned(), "dram".to_owned(), "ssd".to_owned()],
        sizes_text: vec!["80GB".to_owned(), "512GB".to_owned(), "4TB".to_owned()],
        capacities: vec![
            Capacity::Gigabytes(80.0),
            Capacity::Gigabytes(512.0),
            Capacity::Gigabytes(4096.0),
        ],
        mode: TierMode::Exclusive,
    });
    for (index, lane) in snap.lanes.iter_mut().enumerate() {
        let scale = index as u64 + 1;
        lane.tier_hit_blocks = vec![60_000 / scale, 30_000 / scale, 10_000 / scale];
    }
    snap.finished()
}

#[test]
fn the_tiers_panel_shows_the_selected_instance_and_the_total() {
    let snap = tiered_snapshot();
    let mut app = App::default();
    app.observe(&snap);
    let screen = crate::tui::render::screen_text(&snap, &app, 120, 40);
    insta::assert_snapshot!("tiers_panel_120x40", screen);
    // prefill-a: 60 000 blocks × 16 tokens of 4.8 M input tokens = 20.00 %; the total:
    // (960 000 + 480 000 + 320 000) / 9.6 M = 18.33 %.
    let hbm = screen
        .lines()
        .find(|line| line.contains("hbm"))
        .expect("an hbm row");
    assert!(hbm.contains("20.00%") && hbm.contains("18.33%"), "{hbm}");
    let miss = screen.lines().find(|line| line.contains("miss")).unwrap();
    // prefill-a: 1 − (60 000 + 30 000 + 10 000) × 16 / 4.8 M = 66.67 %.
    assert!(miss.contains("66.67%"), "{miss}");
    // Short screens drop the tiers panel before the gauges, and never panic.
    for (width, height) in [(80, 24), (60, 20), (40, 12), (120, 18)] {
        let screen = crate::tui::render::screen_text(&snap, &app, width, height);
        if screen.contains("cache tiers") {
            assert!(screen.contains(" gauges "), "{width}x{height}:\n{screen}");
        }
    }
}
