//! `query --from/--to/--exclude-warmup` and `query --window` against two oracles on a
//! generated two-instance trace: the naive per-capacity LRU (`common/oracle.rs`) fed every
//! request from the start, with only the accounting restricted to the rows in range; and the
//! facts filtered by time and projected with the projector.

use std::collections::BTreeMap;
use std::path::Path;

use crate::common::cli_bin::{FACTS, generate, ok, read_facts, replay_to, run_in, standard_trace};
use crate::common::oracle::OracleBank;
use litehit_core::facts::RequestFact;
use litehit_core::projector::project_blocks;
use litehit_core::workload::{SyntheticRequest, WorkloadConfig};
use serde_json::Value;

const CAPACITIES_BLOCKS: [usize; 4] = [0, 3, 40, 400];

/// Per request, in trace order: timestamp, input tokens and hit tokens at each capacity.
struct OracleRows {
    rows: Vec<(i64, u64, Vec<u64>)>,
}

impl OracleRows {
    fn of(requests: &[SyntheticRequest], block_size_tokens: u64) -> Self {
        let capacities: Vec<Option<usize>> = CAPACITIES_BLOCKS.iter().map(|&c| Some(c)).collect();
        let mut lanes: BTreeMap<&str, OracleBank> = BTreeMap::new();
        let rows = requests
            .iter()
            .map(|request| {
                let lane = lanes
                    .entry(request.instance_id.as_str())
                    .or_insert_with(|| OracleBank::new(&capacities, None));
                let hits = lane.process_request(&request.keys, request.timestamp_ns);
                (
                    request.timestamp_ns,
                    request.input_token_len,
                    hits.iter().map(|h| h * block_size_tokens).collect(),
                )
            })
            .collect();
        Self { rows }
    }

    /// Input tokens and hit tokens per capacity over the rows with `from ≤ t < to`.
    fn totals(&self, from_ns: i64, to_ns: i64) -> (u64, Vec<u64>) {
        let mut input = 0;
        let mut hits = vec![0; CAPACITIES_BLOCKS.len()];
        for (t, tokens, row_hits) in &self.rows {
            if (from_ns..to_ns).contains(t) {
                input += tokens;
                for (sum, h) in hits.iter_mut().zip(row_hits) {
                    *sum += h;
                }
            }
        }
        (input, hits)
    }
}

/// A generated two-instance trace (workload `seed`) replayed into `dir`: its requests and the
/// facts file (also used by `windows_tiers`).
pub(crate) fn replayed_trace(dir: &Path, seed: u64) -> (Vec<SyntheticRequest>, std::path::PathBuf) {
    let requests = generate(
        WorkloadConfig {
            seed,
            instance_ids: vec!["a".into(), "b".into()],
            live_conversations: 60,
            ..WorkloadConfig::default()
        },
        2500,
    );
    let trace = dir.join("trace.jsonl");
    std::fs::write(&trace, standard_trace(&requests)).unwrap();
    let out = dir.join("out");
    ok(replay_to(
        &trace,
        &out,
        &["--trace-block-size", "16", "--quiet"],
    ));
    (requests, out.join(FACTS))
}

fn capacity_flag() -> String {
    let list: Vec<String> = CAPACITIES_BLOCKS.iter().map(ToString::to_string).collect();
    format!("--capacity-blocks={}", list.join(","))
}

fn query(facts: &Path, extra: &[&str]) -> String {
    let capacities = capacity_flag();
    let mut args = vec!["query", facts.to_str().unwrap(), "-", &capacities];
    args.extend(extra);
    ok(run_in(None, &args)).stdout
}

fn overall(text: &str) -> (u64, Vec<u64>) {
    let last: Value = serde_json::from_str(text.lines().last().unwrap()).unwrap();
    let hits = last["total_hit_tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    (last["total_input_tokens"].as_u64().unwrap(), hits)
}

#[test]
fn from_to_and_warmup_account_only_their_rows_of_a_cache_built_from_the_start() {
    let dir = tempfile::tempdir().unwrap();
    let (requests, facts) = replayed_trace(dir.path(), 7);
    let oracle = OracleRows::of(&requests, 16);
    let first = requests.iter().map(|r| r.timestamp_ns).min().unwrap();
    let last = requests.iter().map(|r| r.timestamp_ns).max().unwrap();
    let second = 1_000_000_000_i64;
    // The trace spans a few seconds (2 ms mean inter-arrival).
    assert!(last - first > 2 * second, "span {}", last - first);

    let (all_input, all_hits) = overall(&query(&facts, &["--summary-only"]));
    assert_eq!(
        (all_input, all_hits.clone()),
        oracle.totals(i64::MIN, i64::MAX)
    );

    let from_2s = overall(&query(&facts, &["--summary-only", "--from", "2s"]));
    assert_eq!(from_2s, oracle.totals(first + 2 * second, i64::MAX));
    assert_ne!(from_2s.0, all_input, "the range leaves rows out");

    let absolute = format!("{}ns", first + second);
    let to_1500ms = format!("{}", first + 1_500 * second / 1000);
    let between = overall(&query(
        &facts,
        &[
            "--summary-only",
            "--from",
            &absolute,
            "--to",
            &format!("{to_1500ms}ns"),
        ],
    ));
    assert_eq!(
        between,
        oracle.totals(first + second, first + 1_500 * second / 1000)
    );

    // A warm-up share: 25% of the span; --from earlier than that loses to it.
    let warmup_end = first + (last - first) / 4;
    let warm = overall(&query(
        &facts,
        &["--summary-only", "--exclude-warmup", "25%", "--from", "0s"],
    ));
    assert_eq!(warm, oracle.totals(warmup_end, i64::MAX));

    // The rows written are the accounted ones, as the facts filtered by time say.
    let rows_text = query(&facts, &["--exclude-warmup", "1s"]);
    let kept: Vec<_> = read_facts(&facts)
        .into_iter()
        .filter(|row| row.timestamp_ns >= first + second)
        .collect();
    let row_lines: Vec<Value> = rows_text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .filter(|v: &Value| v.get("summary").is_none())
        .collect();
    assert_eq!(row_lines.len(), kept.len());
    for (line, row) in row_lines.iter().zip(&kept) {
        assert_eq!(line["trace_id"].as_str(), Some(row.trace_id.as_str()));
        let fact = fact_of(&row.hit_curve);
        let expected: Vec<u64> = CAPACITIES_BLOCKS
            .iter()
            .map(|&c| project_blocks(&fact, c as u64))
            .collect();
        let found: Vec<u64> = line["hit_blocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_u64().unwrap())
            .collect();
        assert_eq!(found, expected, "{}", row.trace_id);
    }
}

fn fact_of(hit_curve: &str) -> RequestFact {
    let pairs: Vec<[u64; 2]> = serde_json::from_str(hit_curve).unwrap();
    RequestFact::from_pairs(&pairs)
}

#[test]
fn windows_are_the_oracle_per_window_and_capacity_in_jsonl_and_csv() {
    let dir = tempfile::tempdir().unwrap();
    let (requests, facts) = replayed_trace(dir.path(), 7);
    let oracle = OracleRows::of(&requests, 16);
    let first = requests.iter().map(|r| r.timestamp_ns).min().unwrap();
    let last = requests.iter().map(|r| r.timestamp_ns).max().unwrap();
    let width = 700_000_000_i64;

    let jsonl = query(&facts, &["--window", "700ms"]);
    let lines: Vec<Value> = jsonl
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    let window_count = usize::try_from((last - first) / width + 1).unwrap();
    assert_eq!(lines.len(), window_count * CAPACITIES_BLOCKS.len());
    for (window, group) in lines.chunks(CAPACITIES_BLOCKS.len()).enumerate() {
        let start = first + width * i64::try_from(window).unwrap();
        let (input, hits) = oracle.totals(start, start + width);
        for ((line, &capacity), &expected) in group.iter().zip(&CAPACITIES_BLOCKS).zip(&hits) {
            assert_eq!(line["window_start_ns"].as_i64(), Some(start));
            assert_eq!(line["capacity_blocks"].as_u64(), Some(capacity as u64));
            assert_eq!(line["total_input_tokens"].as_u64(), Some(input));
            assert_eq!(line["total_hit_tokens"].as_u64(), Some(expected), "{line}");
        }
    }

    let csv = query(&facts, &["--window", "700ms", "--csv"]);
    let mut rows = csv.lines();
    assert_eq!(
        rows.next(),
        Some(
            "window_start_s,window_end_s,window_start_ns,capacity_gb,capacity_blocks,requests,\
             total_input_tokens,total_hit_tokens,hit_rate"
        )
    );
    let csv_rows: Vec<Vec<&str>> = rows.map(|r| r.split(',').collect()).collect();
    assert_eq!(csv_rows.len(), lines.len());
    for (fields, line) in csv_rows.iter().zip(&lines) {
        assert_eq!(fields[2], line["window_start_ns"].to_string());
        assert_eq!(fields[4], line["capacity_blocks"].to_string());
        assert_eq!(fields[6], line["total_input_tokens"].to_string());
        assert_eq!(fields[7], line["total_hit_tokens"].to_string());
    }
}

#[test]
fn mrc_with_a_warmup_and_tiers_agrees_with_query_and_says_its_span() {
    let dir = tempfile::tempdir().unwrap();
    let (requests, facts) = replayed_trace(dir.path(), 7);
    let oracle = OracleRows::of(&requests, 16);
    let first = requests.iter().map(|r| r.timestamp_ns).min().unwrap();
    let last = requests.iter().map(|r| r.timestamp_ns).max().unwrap();
    let warmup_end = first + (last - first) / 4;
    let facts_arg = facts.to_str().unwrap();
    let svg = dir.path().join("mrc.svg");
    let mrc = ok(run_in(
        None,
        [
            "mrc",
            facts_arg,
            "--json",
            "--exclude-warmup",
            "25%",
            "--tiers",
            "3b,37b",
            "--svg",
            svg.to_str().unwrap(),
        ],
    ));
    let report: Value = serde_json::from_str(&mrc.stdout).unwrap();
    assert_eq!(
        report["accounted_span"]["from_ns"].as_i64(),
        Some(warmup_end)
    );
    let (input, hits) = oracle.totals(warmup_end, i64::MAX);
    assert_eq!(report["total"]["total_input_tokens"].as_u64(), Some(input));
    // Tiers of 3 and 37 blocks reach 3 and 40 blocks, two of the oracle's capacities.
    assert_eq!(
        report["tiers"]["total"]["tier_hit_tokens"],
        serde_json::json!([hits[1], hits[2] - hits[1]])
    );
    let queried = query(
        &facts,
        &[
            "--summary-only",
            "--exclude-warmup",
            "25%",
            "--tiers",
            "3b,37b",
        ],
    );
    let overall_line: Value = serde_json::from_str(queried.lines().last().unwrap()).unwrap();
    assert_eq!(
        overall_line["tier_hit_tokens"],
        report["tiers"]["total"]["tier_hit_tokens"]
    );
    let subtitle = std::fs::read_to_string(&svg).unwrap();
    assert!(subtitle.contains("trace time "), "the plot says its span");

    let table = ok(run_in(None, ["mrc", facts_arg, "--from", "1s"])).stdout;
    assert!(
        table.starts_with("accounted: trace time 1 s – end\n"),
        "{table}"
    );
}
