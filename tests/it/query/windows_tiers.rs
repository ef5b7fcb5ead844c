//! `query --window` and `--exclude-warmup` / `--from` / `--to` together with `--tiers`,
//! against the naive tier simulators of `tiers.rs` (an LRU hierarchy of real lists for
//! exclusive tiers, independent LRUs for inclusive ones), one per instance, fed every request
//! from the start; only the accounting is filtered by time.
//!
//! With `--window` and `--tiers`, `query` writes one line per window and tier (JSONL or CSV):
//! the tier's hit tokens in the window, their share of the window's input tokens and the
//! window's miss share; no capacities are taken.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::cli_bin::{ok, run_in, u64s};
use crate::common::oracle::OracleLru;
use crate::query::tiers::{ExclusiveHierarchy, inclusive_served};
use litehit_core::workload::SyntheticRequest;
use serde_json::Value;

const BLOCK_SIZE_TOKENS: u64 = 16;
const TIER_BLOCKS: [usize; 3] = [3, 40, 400];
const TIERS: &str = "hbm=3b,dram=40b,ssd=400b";

/// Per request, in trace order: timestamp, input tokens and hit tokens per tier.
struct TierOracle {
    rows: Vec<(i64, u64, Vec<u64>)>,
}

impl TierOracle {
    fn of(requests: &[SyntheticRequest], mode: &str) -> Self {
        let sizes: Vec<Option<usize>> = TIER_BLOCKS.iter().map(|&size| Some(size)).collect();
        let mut hierarchies: BTreeMap<&str, ExclusiveHierarchy> = BTreeMap::new();
        let mut caches: BTreeMap<&str, Vec<OracleLru>> = BTreeMap::new();
        let rows = requests
            .iter()
            .map(|request| {
                let id = request.instance_id.as_str();
                let served = if mode == "exclusive" {
                    hierarchies
                        .entry(id)
                        .or_insert_with(|| ExclusiveHierarchy::new(&sizes))
                        .process_request(&request.keys)
                } else {
                    let lanes = caches.entry(id).or_insert_with(|| {
                        sizes
                            .iter()
                            .map(|&size| OracleLru::new(size, None))
                            .collect()
                    });
                    inclusive_served(lanes, &sizes, &request.keys)
                };
                (
                    request.timestamp_ns,
                    request.input_token_len,
                    served.iter().map(|s| s * BLOCK_SIZE_TOKENS).collect(),
                )
            })
            .collect();
        Self { rows }
    }

    /// Requests, input tokens and hit tokens per tier over the rows with `from ≤ t < to`.
    fn totals(&self, from_ns: i64, to_ns: i64) -> (u64, u64, Vec<u64>) {
        let mut requests = 0;
        let mut input = 0;
        let mut hits = vec![0; TIER_BLOCKS.len()];
        for (t, tokens, served) in &self.rows {
            if (from_ns..to_ns).contains(t) {
                requests += 1;
                input += tokens;
                for (sum, h) in hits.iter_mut().zip(served) {
                    *sum += h;
                }
            }
        }
        (requests, input, hits)
    }
}

fn query(facts: &Path, mode: &str, extra: &[&str]) -> String {
    let mut args = vec![
        "query",
        facts.to_str().unwrap(),
        "-",
        "--tiers",
        TIERS,
        "--tier-mode",
        mode,
    ];
    args.extend(extra);
    ok(run_in(None, &args)).stdout
}

#[test]
fn windows_with_tiers_are_the_simulator_per_window_and_tier_in_jsonl_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let (requests, facts) = crate::query::windows::replayed_trace(dir.path(), 9);
    let first = requests.iter().map(|r| r.timestamp_ns).min().unwrap();
    let last = requests.iter().map(|r| r.timestamp_ns).max().unwrap();
    let width = 700_000_000_i64;
    for mode in ["exclusive", "inclusive"] {
        let oracle = TierOracle::of(&requests, mode);
        let jsonl = query(&facts, mode, &["--window", "700ms"]);
        let lines: Vec<Value> = jsonl
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let window_count = usize::try_from((last - first) / width + 1).unwrap();
        assert_eq!(lines.len(), window_count * TIER_BLOCKS.len(), "{mode}");
        let mut served_below_the_top = 0;
        for (window, group) in lines.chunks(TIER_BLOCKS.len()).enumerate() {
            let start = first + width * i64::try_from(window).unwrap();
            let (count, input, hits) = oracle.totals(start, start + width);
            let miss = (input - hits.iter().sum::<u64>()) as f64 / input as f64;
            for ((line, name), &expected) in group.iter().zip(["hbm", "dram", "ssd"]).zip(&hits) {
                assert_eq!(line["window_start_ns"].as_i64(), Some(start));
                assert_eq!(line["tier"], name);
                assert_eq!(line["tier_mode"], mode);
                assert_eq!(line["requests"].as_u64(), Some(count));
                assert_eq!(line["total_input_tokens"].as_u64(), Some(input));
                assert_eq!(line["tier_hit_tokens"].as_u64(), Some(expected), "{line}");
                let share = line["tier_share"].as_f64().unwrap();
                assert!(
                    (share - expected as f64 / input as f64).abs() < 1e-5,
                    "{line}"
                );
                assert!((line["miss_share"].as_f64().unwrap() - miss).abs() < 1e-5);
            }
            served_below_the_top += hits[1] + hits[2];
        }
        assert!(served_below_the_top > 0, "{mode}: the lower tiers serve");

        let csv = query(&facts, mode, &["--window", "700ms", "--csv"]);
        let mut rows = csv.lines();
        assert_eq!(
            rows.next(),
            Some(
                "window_start_s,window_end_s,window_start_ns,tier_mode,tier,tier_size,requests,\
                 total_input_tokens,tier_hit_tokens,tier_share,miss_share"
            )
        );
        let csv_rows: Vec<Vec<&str>> = rows.map(|r| r.split(',').collect()).collect();
        assert_eq!(csv_rows.len(), lines.len());
        for (fields, line) in csv_rows.iter().zip(&lines) {
            assert_eq!(fields[3], mode);
            assert_eq!(fields[4], line["tier"].as_str().unwrap());
            assert_eq!(fields[5], line["tier_size"].as_str().unwrap());
            assert_eq!(fields[7], line["total_input_tokens"].to_string());
            assert_eq!(fields[8], line["tier_hit_tokens"].to_string());
        }
    }
}

#[test]
fn a_warmup_or_a_span_with_tiers_accounts_only_its_rows_of_a_hierarchy_built_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let (requests, facts) = crate::query::windows::replayed_trace(dir.path(), 9);
    let first = requests.iter().map(|r| r.timestamp_ns).min().unwrap();
    let last = requests.iter().map(|r| r.timestamp_ns).max().unwrap();
    for mode in ["exclusive", "inclusive"] {
        let oracle = TierOracle::of(&requests, mode);
        // 30 % of the span: floor(span × 0.3) ns after the first request.
        #[expect(
            clippy::cast_possible_truncation,
            reason = "a floored ns offset in range"
        )]
        let warmup_end = first + ((last - first) as f64 * 0.3).floor() as i64;
        for (extra, from, to) in [
            (vec!["--exclude-warmup", "30%"], warmup_end, i64::MAX),
            (
                vec!["--from", "1s", "--to", "3s"],
                first + 1_000_000_000,
                first + 3_000_000_000,
            ),
        ] {
            let mut args = vec!["--summary-only", "--capacity-blocks", "1"];
            args.extend(&extra);
            let text = query(&facts, mode, &args);
            let overall: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
            let (count, input, hits) = oracle.totals(from, to);
            assert!(count > 0 && count < requests.len() as u64, "{extra:?}");
            assert_eq!(overall["requests"].as_u64(), Some(count), "{extra:?}");
            assert_eq!(overall["total_input_tokens"].as_u64(), Some(input));
            assert_eq!(u64s(&overall["tier_hit_tokens"]), hits, "{mode} {extra:?}");
        }
    }
}

#[test]
fn windows_with_tiers_take_no_capacities() {
    let dir = tempfile::tempdir().unwrap();
    let (_, facts) = crate::query::windows::replayed_trace(dir.path(), 9);
    let run = run_in(
        None,
        [
            "query",
            facts.to_str().unwrap(),
            "-",
            "1",
            "--window",
            "1s",
            "--tiers",
            TIERS,
        ],
    );
    assert_eq!(run.code, Some(1));
    assert!(
        run.stderr.contains("one line per window and tier"),
        "{}",
        run.stderr
    );
}
