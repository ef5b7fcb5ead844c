//! Cache tiers after a new user's review, one test per finding:
//!
//! 1. Under `--memory-horizon H`, a tier whose band reaches above H is a lower bound and the
//!    miss share an upper bound, on every `watch` surface (headless `lower_bound` /
//!    `miss_share_is_upper_bound`, `/metrics` `lower_bound="true"`, the TUI's `≥` / `≤`).
//!    The rule is checked quantitatively: a horizon only turns hits deeper than H into misses,
//!    so a band `(below, upper]` reads exactly `H(min(upper, H)) − H(min(below, H))` of the
//!    run without a horizon (an exact slot curve): exact up to H, less above it, 0 for a tier
//!    entirely above it.
//! 2. The shared pool lane's tiers (at N × each size) on every surface: `watch --headless`,
//!    `/metrics`, the TUI with the pool row selected, `query --window --tiers` (JSONL and
//!    CSV) and `mrc --tiers`; against the naive tier simulators of `tiers.rs` fed every row
//!    as one lane, with the tier sizes × N.
//! 3. Inclusive tiers must grow top first, refused alike by `query`, `mrc` and `watch`;
//!    exclusive tiers may take any sizes.

use crate::common::headless::instance_entry;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use litehit_core::projector::Capacity;
use litehit_core::projector::tiers::{TierMode, TierPlan};
use litehit_core::workload::{SyntheticRequest, WorkloadConfig};
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::LaneSnapshot;
use litehit_tui::app::App;
use serde_json::Value;

use crate::common::cli_bin::{
    Announced, FACTS, generate, litehit, ok, run_in, spawn_announcing_port, standard_trace, u64s,
    write_file,
};
use crate::common::oracle::OracleLru;
use crate::query::tiers::{ExclusiveHierarchy, inclusive_served};

const WAIT: Duration = Duration::from_secs(120);

// ---------------------------------------------------------------------------------------
// 1. Bounds under a memory horizon.

const HORIZON_BLOCKS: u64 = 300;
/// Exclusive bands (0, 100], (100, 500] (crossing the horizon), (500, 1500] (above it).
const HORIZON_TIERS: &str = "hbm=100b,dram=400b,ssd=1000b";
/// The edges of those bands, and the horizon: the exact curve at each.
const EDGES: &str = "100b,300b,500b,1500b";

/// Two instances with reuse deeper than the horizon (as `horizon_surfaces.rs`).
fn horizon_trace() -> String {
    let config = WorkloadConfig {
        seed: 1818,
        block_size_tokens: 256,
        instance_ids: vec!["prefill-0".to_owned(), "prefill-1".to_owned()],
        ..WorkloadConfig::default()
    };
    standard_trace(&generate(config, 2000))
}

/// The last line of `watch --headless --exit-at-eof` of `trace` with `extra` flags.
fn headless_last(trace: &Path, extra: &[&str]) -> Value {
    let (mut lines, _) = crate::common::headless::headless_to_end(trace, extra);
    lines.pop().expect("a headless line")
}

fn tier_tokens(figures: &Value) -> Vec<u64> {
    figures["tiers"]
        .as_array()
        .unwrap_or_else(|| panic!("a tiers array: {figures}"))
        .iter()
        .map(|tier| tier["hit_tokens"].as_u64().unwrap())
        .collect()
}

fn tier_marks(figures: &Value) -> Vec<bool> {
    figures["tiers"]
        .as_array()
        .unwrap_or_else(|| panic!("a tiers array: {figures}"))
        .iter()
        .map(|tier| {
            tier["lower_bound"]
                .as_bool()
                .unwrap_or_else(|| panic!("lower_bound in {tier}"))
        })
        .collect()
}

#[test]
fn tiers_above_the_horizon_are_lower_bounds_and_the_misses_an_upper_one_headless() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &horizon_trace());
    let horizon = format!("{HORIZON_BLOCKS}b");
    let tiered = ["--capacity-gb", EDGES, "--tiers", HORIZON_TIERS];
    let bounded = headless_last(
        &trace,
        &[&tiered[..], &["--memory-horizon", &horizon]].concat(),
    );
    let exact = headless_last(&trace, &tiered);
    let mut deeper = false;
    for id in ["prefill-0", "prefill-1"] {
        let (bounded, exact) = (instance_entry(&bounded, id), instance_entry(&exact, id));
        // The exact curve at 100, 300 (= H), 500 and 1500 blocks.
        let curve = u64s(&exact["hit_tokens"]);
        let (at_100, at_300, at_500, at_fifteen_hundred) = (curve[0], curve[1], curve[2], curve[3]);
        assert_eq!(
            tier_tokens(exact),
            [at_100, at_500 - at_100, at_fifteen_hundred - at_500],
            "{id}"
        );
        // Under the horizon each band reads H(min(upper, H)) − H(min(below, H)).
        assert_eq!(tier_tokens(bounded), [at_100, at_300 - at_100, 0], "{id}");
        deeper |= at_500 > at_300;
        assert_eq!(tier_marks(bounded), [false, true, true], "{id}: {bounded}");
        assert_eq!(tier_marks(exact), [false, false, false], "{id}");
        assert_eq!(bounded["miss_share_is_upper_bound"], true, "{id}");
        assert_eq!(exact["miss_share_is_upper_bound"], false, "{id}");
        let (bounded_miss, exact_miss) = (
            bounded["miss_share"].as_f64().unwrap(),
            exact["miss_share"].as_f64().unwrap(),
        );
        assert!(
            bounded_miss >= exact_miss,
            "{id}: the misses, an upper bound"
        );
        // An instance's tiers carry their size in its blocks.
        assert_eq!(
            u64s(&Value::Array(
                bounded["tiers"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|tier| tier["capacity_blocks"].clone())
                    .collect()
            )),
            [100, 400, 1000]
        );
    }
    assert!(
        deeper,
        "the trace reuses blocks between the horizon and 500 blocks"
    );
    assert_eq!(tier_marks(&bounded["total"]), [false, true, true]);
    assert_eq!(bounded["total"]["miss_share_is_upper_bound"], true);
    assert_eq!(exact["total"]["miss_share_is_upper_bound"], false);
    assert!(
        bounded["total"]["tiers"][0]
            .get("capacity_blocks")
            .is_none()
    );
    assert_eq!(bounded["schema"], 2, "fields only added");

    // Inclusive: a tier is a lower bound when its own size is above the horizon.
    let inclusive = headless_last(
        &trace,
        &[
            "--capacity-gb",
            EDGES,
            "--tiers",
            "100b,300b,500b",
            "--tier-mode",
            "inclusive",
            "--memory-horizon",
            &horizon,
        ],
    );
    assert_eq!(tier_marks(&inclusive["total"]), [false, false, true]);
    assert_eq!(inclusive["total"]["tiers"][2]["hit_tokens"], 0);
}

#[test]
fn tier_series_above_the_horizon_carry_the_lower_bound_label() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &horizon_trace());
    let horizon = format!("{HORIZON_BLOCKS}b");
    let body = scrape_at_eof(
        &trace,
        &[
            "--capacity-gb",
            EDGES,
            "--tiers",
            HORIZON_TIERS,
            "--memory-horizon",
            &horizon,
        ],
    );
    for id in ["prefill-0", "prefill-1"] {
        let series = |tier: &str| {
            body.lines()
                .find(|line| {
                    line.starts_with(&format!(
                        "litehit_tier_hit_tokens_total{{instance=\"{id}\",tier=\"{tier}\""
                    ))
                })
                .unwrap_or_else(|| panic!("{id} {tier} missing from:\n{body}"))
                .to_owned()
        };
        assert!(!series("hbm").contains("lower_bound"), "{}", series("hbm"));
        assert!(
            series("dram").contains(",lower_bound=\"true\"}"),
            "{}",
            series("dram")
        );
        assert!(
            series("ssd").contains(",lower_bound=\"true\"} 0"),
            "{}",
            series("ssd")
        );
    }
}

/// `watch TRACE --headless --metrics-listen 0 EXTRA`, scraped once every request is read.
fn scrape_at_eof(trace: &Path, extra: &[&str]) -> String {
    let requests = trace_requests(trace);
    let mut command = litehit();
    command
        .arg("watch")
        .arg(trace)
        .args(["--headless", "--interval", "0.1", "--metrics-listen", "0"])
        .args(extra);
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
    let deadline = std::time::Instant::now() + WAIT;
    let read_all = loop {
        let Ok(line) = stdout.recv_timeout(Duration::from_secs(1)) else {
            if std::time::Instant::now() > deadline {
                break false;
            }
            continue;
        };
        let value: Value = serde_json::from_str(&line).unwrap();
        if value["total"]["requests"] == requests && value["backlog_bytes"] == 0 {
            break true;
        }
        if std::time::Instant::now() > deadline {
            break false;
        }
    };
    let body = read_all.then(|| crate::common::http::get(port, "/metrics").2);
    let _ = child.kill();
    let _ = child.wait();
    body.expect("the monitor read the whole trace in time")
}

/// Request lines of a standard trace (one per line).
fn trace_requests(trace: &Path) -> u64 {
    std::fs::read_to_string(trace).unwrap().lines().count() as u64
}

fn tier_lane(id: &str, tier_hit_blocks: Vec<u64>, tier_lower_bounds: Vec<bool>) -> LaneSnapshot {
    LaneSnapshot {
        instance_id: id.to_owned(),
        block_size_tokens: 16,
        block_bytes: 1 << 20,
        requests: 10,
        input_tokens: 1600,
        slot_hit_blocks: vec![20],
        infinite_hit_blocks: 60,
        tier_hit_blocks,
        tier_lower_bounds,
        ..LaneSnapshot::default()
    }
}

fn tier_plan() -> TierPlan {
    TierPlan {
        names: vec!["hbm".to_owned(), "dram".to_owned()],
        sizes_text: vec!["1GB".to_owned(), "4GB".to_owned()],
        capacities: vec![Capacity::Gigabytes(1.0), Capacity::Gigabytes(4.0)],
        mode: TierMode::Exclusive,
    }
}

fn row<'a>(lines: &'a [String], start: &str) -> &'a str {
    lines
        .iter()
        .find(|line| line.trim_start_matches(['│', ' ']).starts_with(start))
        .unwrap_or_else(|| panic!("no {start:?} row in:\n{}", lines.join("\n")))
}

#[test]
fn the_tui_tier_panel_marks_lower_bounds_and_the_upper_bound_miss_share() {
    let snap = LiveSnapshot {
        slots: vec![litehit_live::snapshot::Slot {
            id: 1,
            capacity: Capacity::Gigabytes(8.0),
        }],
        // 1600 input tokens: hbm 20 blocks (320 tokens, 20%), dram 10 blocks (10%).
        lanes: vec![tier_lane("engine-0", vec![20, 10], vec![false, true])],
        tiers: Some(tier_plan()),
        ..LiveSnapshot::default()
    }
    .finished();
    let mut app = App::default();
    app.observe(&snap);
    let lines = crate::tui::render::screen_rows(&snap, &app, 120, 40);
    let text = lines.join("\n");
    assert!(row(&lines, "hbm").contains(" 20.00%"), "{text}");
    assert!(!row(&lines, "hbm").contains('≥'), "{text}");
    assert!(row(&lines, "dram").contains("≥10.00%"), "{text}");
    assert!(row(&lines, "miss").contains("≤70.00%"), "{text}");
    assert!(
        text.contains("≥ lower bound above the horizon, ≤ upper bound"),
        "{text}"
    );
    // Without a horizon: no marks, no note.
    let exact = LiveSnapshot {
        lanes: vec![tier_lane("engine-0", vec![20, 10], vec![false, false])],
        ..snap
    }
    .finished();
    let lines = crate::tui::render::screen_rows(&exact, &app, 120, 40);
    let text = lines.join("\n");
    assert!(row(&lines, "dram").contains(" 10.00%"), "{text}");
    assert!(!row(&lines, "dram").contains('≥'), "{text}");
    assert!(!row(&lines, "miss").contains('≤'), "{text}");
    assert!(!text.contains("upper bound"), "{text}");
}

// ---------------------------------------------------------------------------------------
// 2. The pool's tiers.

const INSTANCES: u64 = 3;
const BLOCK_SIZE_TOKENS: u64 = 16;
/// Per-instance tier sizes in blocks; the pool's are N × each.
const POOL_TIER_BLOCKS: [usize; 3] = [8, 40, 200];
const POOL_TIERS: &str = "8b,40b,200b";

fn pool_requests() -> Vec<SyntheticRequest> {
    generate(
        WorkloadConfig {
            seed: 5,
            block_size_tokens: BLOCK_SIZE_TOKENS,
            instance_ids: (0..INSTANCES).map(|i| format!("engine-{i}")).collect(),
            live_conversations: 50,
            ..WorkloadConfig::default()
        },
        1500,
    )
}

/// The naive simulator of `mode` fed every request as one lane, tiers at N × each size:
/// per request, its timestamp and the hit tokens each tier served.
fn pool_oracle(requests: &[SyntheticRequest], mode: &str) -> Vec<(i64, Vec<u64>)> {
    let sizes: Vec<Option<usize>> = POOL_TIER_BLOCKS
        .iter()
        .map(|&size| Some(size * usize::try_from(INSTANCES).unwrap()))
        .collect();
    let mut hierarchy = ExclusiveHierarchy::new(&sizes);
    let mut caches: Vec<OracleLru> = sizes.iter().map(|&s| OracleLru::new(s, None)).collect();
    requests
        .iter()
        .map(|request| {
            let served = if mode == "exclusive" {
                hierarchy.process_request(&request.keys)
            } else {
                inclusive_served(&mut caches, &sizes, &request.keys)
            };
            (
                request.timestamp_ns,
                served.iter().map(|s| s * BLOCK_SIZE_TOKENS).collect(),
            )
        })
        .collect()
}

fn summed(rows: &[(i64, Vec<u64>)]) -> Vec<u64> {
    let mut sums = vec![0; POOL_TIER_BLOCKS.len()];
    for (_, served) in rows {
        for (sum, tokens) in sums.iter_mut().zip(served) {
            *sum += tokens;
        }
    }
    sums
}

fn pooled_blocks() -> Vec<u64> {
    POOL_TIER_BLOCKS
        .iter()
        .map(|&size| size as u64 * INSTANCES)
        .collect()
}

#[test]
fn watch_gives_the_pool_its_tiers_at_n_times_each_size_headless_and_in_metrics() {
    let dir = tempfile::tempdir().unwrap();
    let requests = pool_requests();
    let trace = write_file(dir.path(), "trace.jsonl", &standard_trace(&requests));
    let flags = [
        "--capacity-gb",
        "0.01",
        "--trace-block-size",
        "16",
        "--pool",
        "--tiers",
        POOL_TIERS,
    ];
    for mode in ["exclusive", "inclusive"] {
        let expected = summed(&pool_oracle(&requests, mode));
        assert!(
            expected[1] > 0 && expected[2] > 0,
            "{mode}: the lower tiers serve"
        );
        let last = headless_last(&trace, &[&flags[..], &["--tier-mode", mode]].concat());
        let pool = instance_entry(&last, "pool");
        assert_eq!(pool["kind"], "pool");
        assert_eq!(tier_tokens(pool), expected, "{mode}: {pool}");
        let capacities: Vec<Value> = pool["tiers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|tier| tier["capacity_blocks"].clone())
            .collect();
        assert_eq!(u64s(&Value::Array(capacities)), pooled_blocks());
        assert_eq!(pool["miss_share_is_upper_bound"], false);
        // The pool stays out of the total.
        let own: u64 = (0..INSTANCES)
            .map(|i| tier_tokens(instance_entry(&last, &format!("engine-{i}")))[0])
            .sum();
        assert_eq!(tier_tokens(&last["total"])[0], own);
    }
    let body = scrape_at_eof(&trace, &flags);
    let expected = summed(&pool_oracle(&requests, "exclusive"));
    for (tier, tokens) in ["tier1", "tier2", "tier3"].iter().zip(expected) {
        let line = format!(
            "litehit_tier_hit_tokens_total{{instance=\"pool\",tier=\"{tier}\"}} {tokens}\n"
        );
        assert!(body.contains(&line), "{line:?} missing from:\n{body}");
    }
}

#[test]
fn the_tui_tier_panel_shows_the_pool_when_its_row_is_selected() {
    let snap = LiveSnapshot {
        slots: vec![litehit_live::snapshot::Slot {
            id: 1,
            capacity: Capacity::Gigabytes(8.0),
        }],
        lanes: vec![
            tier_lane("engine-a", vec![10, 10], vec![false, false]),
            tier_lane("engine-b", vec![10, 10], vec![false, false]),
        ],
        // 3200 input tokens: 40 blocks (640 tokens) in hbm = 20%, 60 in dram = 30%.
        pool: Some(LaneSnapshot {
            input_tokens: 3200,
            ..tier_lane("pool", vec![40, 60], vec![false, false])
        }),
        tiers: Some(tier_plan()),
        ..LiveSnapshot::default()
    }
    .finished();
    let mut app = App::default();
    app.observe(&snap);
    for _ in 0..5 {
        app.handle_key(KeyEvent::new(KeyCode::Down, KeyModifiers::NONE));
    }
    assert!(app.selected_pool());
    let lines = crate::tui::render::screen_rows(&snap, &app, 120, 40);
    let text = lines.join("\n");
    assert!(text.contains("pool ×2 served"), "{text}");
    assert!(text.contains("pool at 2 × each size"), "{text}");
    assert!(row(&lines, "hbm").contains("20.00%"), "{text}");
    assert!(row(&lines, "dram").contains("30.00%"), "{text}");
    assert!(row(&lines, "miss").contains("50.00%"), "{text}");
}

/// `replay --pool` of `requests` (block size 16, 1 MiB blocks): the facts file.
fn pooled_facts(dir: &Path, requests: &[SyntheticRequest]) -> PathBuf {
    let trace = write_file(dir, "trace.jsonl", &standard_trace(requests));
    let out = dir.join("out");
    ok(run_in(
        None,
        [
            "replay",
            trace.to_str().unwrap(),
            "--trace-block-size",
            "16",
            "--block-bytes",
            "1048576",
            "--out",
            out.to_str().unwrap(),
            "--pool",
            "--quiet",
        ],
    ));
    out.join(FACTS)
}

#[test]
fn query_windows_with_tiers_write_the_pool_lines_at_n_times_each_size() {
    let dir = tempfile::tempdir().unwrap();
    let requests = pool_requests();
    let facts = pooled_facts(dir.path(), &requests);
    let facts = facts.to_str().unwrap();
    let first = requests.iter().map(|r| r.timestamp_ns).min().unwrap();
    let width: i64 = 700_000_000;
    for mode in ["exclusive", "inclusive"] {
        let oracle = pool_oracle(&requests, mode);
        let query = |extra: &[&str]| {
            let mut args = vec![
                "query",
                facts,
                "-",
                "--tiers",
                POOL_TIERS,
                "--tier-mode",
                mode,
            ];
            args.extend(extra);
            ok(run_in(None, &args)).stdout
        };
        let lines: Vec<Value> = query(&["--window", "700ms"])
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect();
        let pool_lines: Vec<&Value> = lines.iter().filter(|l| l.get("pool").is_some()).collect();
        assert!(!pool_lines.is_empty(), "{mode}: no pool lines");
        let mut served_below_the_top = 0;
        for line in &pool_lines {
            assert_eq!(line["pool"], "pool");
            assert_eq!(line["instances"], INSTANCES);
            let index = ["tier1", "tier2", "tier3"]
                .iter()
                .position(|name| line["tier"] == *name)
                .unwrap();
            assert_eq!(
                line["pool_tier_capacity_blocks"].as_u64(),
                Some(pooled_blocks()[index])
            );
            let start = line["window_start_ns"].as_i64().unwrap();
            assert_eq!((start - first) % width, 0);
            let in_window: Vec<&(i64, Vec<u64>)> = oracle
                .iter()
                .filter(|(t, _)| (start..start + width).contains(t))
                .collect();
            let expected: u64 = in_window.iter().map(|(_, served)| served[index]).sum();
            assert_eq!(
                line["tier_hit_tokens"].as_u64(),
                Some(expected),
                "{mode}: {line}"
            );
            assert_eq!(line["requests"].as_u64(), Some(in_window.len() as u64));
            if index > 0 {
                served_below_the_top += expected;
            }
        }
        assert!(served_below_the_top > 0, "{mode}");
        // Every window has its pool lines; their sums are the summary's pool line.
        let instance_lines = lines.len() - pool_lines.len();
        assert_eq!(pool_lines.len(), instance_lines, "{mode}");
        let summary: Value =
            serde_json::from_str(query(&["0.01", "--summary-only"]).lines().last().unwrap())
                .unwrap();
        let mut sums = vec![0; POOL_TIER_BLOCKS.len()];
        for line in &pool_lines {
            let index = ["tier1", "tier2", "tier3"]
                .iter()
                .position(|name| line["tier"] == *name)
                .unwrap();
            sums[index] += line["tier_hit_tokens"].as_u64().unwrap();
        }
        assert_eq!(u64s(&summary["tier_hit_tokens"]), sums, "{mode}");
        assert_eq!(sums, summed(&oracle), "{mode}");

        let csv = query(&["--window", "700ms", "--csv"]);
        let mut rows = csv.lines();
        assert_eq!(
            rows.next(),
            Some(
                "window_start_s,window_end_s,window_start_ns,pool,instances,tier_mode,tier,\
                 tier_size,pool_tier_capacity_blocks,requests,total_input_tokens,\
                 tier_hit_tokens,tier_share,miss_share"
            )
        );
        let csv_rows: Vec<Vec<&str>> = rows.map(|row| row.split(',').collect()).collect();
        assert_eq!(csv_rows.len(), lines.len());
        for (fields, line) in csv_rows.iter().zip(&lines) {
            assert_eq!(fields.len(), 14);
            assert_eq!(fields[11], line["tier_hit_tokens"].to_string());
            match line.get("pool") {
                Some(_) => {
                    assert_eq!(fields[3], "pool");
                    assert_eq!(fields[4], line["instances"].to_string());
                    assert_eq!(fields[8], line["pool_tier_capacity_blocks"].to_string());
                }
                None => assert_eq!([fields[3], fields[4], fields[8]], ["", "", ""]),
            }
        }
    }
}

#[test]
fn mrc_tiers_give_the_pool_its_row_at_n_times_each_size() {
    let dir = tempfile::tempdir().unwrap();
    let requests = pool_requests();
    let facts = pooled_facts(dir.path(), &requests);
    let facts = facts.to_str().unwrap();
    let expected = summed(&pool_oracle(&requests, "exclusive"));
    let json: Value = serde_json::from_str(
        &ok(run_in(
            None,
            ["mrc", facts, "--json", "--tiers", POOL_TIERS],
        ))
        .stdout,
    )
    .unwrap();
    let pool = &json["tiers"]["pool"];
    assert_eq!(pool["instance_id"], "pool", "{json}");
    assert_eq!(pool["shared_by"], INSTANCES);
    assert_eq!(u64s(&pool["pool_tier_capacity_blocks"]), pooled_blocks());
    assert_eq!(u64s(&pool["tier_hit_tokens"]), expected);
    let table = ok(run_in(None, ["mrc", facts, "--tiers", POOL_TIERS])).stdout;
    let pool_row = table
        .lines()
        .find(|line| line.starts_with("pool (shared, ×3)"))
        .unwrap_or_else(|| panic!("no pool row in:\n{table}"));
    let total_input = pool["total_input_tokens"].as_u64().unwrap() as f64;
    let share = format!("{:.2}%", expected[1] as f64 / total_input * 100.0);
    assert!(pool_row.contains(&share), "{pool_row} lacks {share}");
    assert!(
        table.contains("the shared pool's tiers are 3 × each size"),
        "{table}"
    );
}

// ---------------------------------------------------------------------------------------
// 3. Inclusive sizes must grow.

#[test]
fn inclusive_tiers_that_shrink_are_refused_by_query_mrc_and_watch_alike() {
    let dir = tempfile::tempdir().unwrap();
    let requests = pool_requests();
    let facts = pooled_facts(dir.path(), &requests);
    let facts = facts.to_str().unwrap();
    let trace = dir.path().join("trace.jsonl");
    let trace = trace.to_str().unwrap();
    let shrinking = ["--tiers", "40GB,10GB", "--tier-mode", "inclusive"];
    let runs = [
        [
            &["query", facts, "-", "1", "--summary-only"][..],
            &shrinking,
        ]
        .concat(),
        [&["mrc", facts][..], &shrinking].concat(),
        [
            &["watch", trace, "--headless", "--exit-at-eof"][..],
            &shrinking,
        ]
        .concat(),
    ];
    for args in runs {
        let run = run_in(None, &args);
        assert_ne!(run.code, Some(0), "{args:?} accepted");
        assert!(
            run.stderr.contains(
                "invalid --tiers: inclusive tiers must grow top first (a lower tier holds a \
                 superset of the one above): tier2 (10GB) is not larger than tier1 (40GB)"
            ),
            "{args:?}: {}",
            run.stderr
        );
    }
    // GB next to blocks: the order depends on each lane's block bytes, so it is refused
    // (it was accepted and sorted per lane by size, which renamed the tiers' figures).
    for mixed in ["5000b,4GB", "8GB,8192b"] {
        let run = run_in(
            None,
            [
                "query",
                facts,
                "-",
                "--summary-only",
                "--tiers",
                mixed,
                "--tier-mode",
                "inclusive",
            ],
        );
        assert_eq!(run.code, Some(1), "{mixed} accepted: {}", run.stdout);
        assert!(
            run.stderr.contains(
                "inclusive tiers must be sized in one unit, so their order can be checked"
            ),
            "{mixed}: {}",
            run.stderr
        );
    }
    // Exclusive: a small tier under a large one is a valid hierarchy.
    ok(run_in(
        None,
        [
            "query",
            facts,
            "-",
            "1",
            "--summary-only",
            "--tiers",
            "40GB,10GB",
        ],
    ));
}
