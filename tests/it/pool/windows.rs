//! `query --window` with the shared pool lane (`replay --pool`): besides the instances'
//! lines, the pool's own line per window and capacity at N × C. Checked against the naive
//! LRU oracle (one cache per instance at C; one cache over the merged stream at N × C) by
//! window, and without a pool lane the output is byte for byte the plain replay's.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use crate::common::cli_bin::{FACTS, generate, ok, run_in, standard_trace};
use crate::common::oracle::OracleBank;
use litehit_core::workload::{SyntheticRequest, WorkloadConfig};
use serde_json::Value;

const CAPACITIES_BLOCKS: [usize; 3] = [3, 40, 400];
const INSTANCES: usize = 3;

fn trace(dir: &Path) -> (Vec<SyntheticRequest>, PathBuf) {
    let requests = generate(
        WorkloadConfig {
            seed: 11,
            instance_ids: (0..INSTANCES).map(|i| format!("engine-{i}")).collect(),
            live_conversations: 60,
            ..WorkloadConfig::default()
        },
        2500,
    );
    let path = dir.join("trace.jsonl");
    std::fs::write(&path, standard_trace(&requests)).unwrap();
    (requests, path)
}

fn replay(trace: &Path, out: &Path, extra: &[&str]) -> PathBuf {
    let mut args = vec![
        "replay",
        trace.to_str().unwrap(),
        "--trace-block-size",
        "16",
        "--out",
        out.to_str().unwrap(),
        "--quiet",
    ];
    args.extend(extra);
    ok(run_in(None, &args));
    out.join(FACTS)
}

fn query(facts: &Path, extra: &[&str]) -> String {
    let list: Vec<String> = CAPACITIES_BLOCKS.iter().map(ToString::to_string).collect();
    let capacities = format!("--capacity-blocks={}", list.join(","));
    let mut args = vec!["query", facts.to_str().unwrap(), "-", &capacities];
    args.extend(extra);
    ok(run_in(None, &args)).stdout
}

/// Per window index: (requests, input tokens, hit tokens per capacity) of the instances'
/// own caches at C and of one pool at N × C, from the naive oracle.
type Windows = BTreeMap<i64, (u64, u64, Vec<u64>)>;

fn oracle_windows(
    requests: &[SyntheticRequest],
    width_ns: i64,
    from_ns: i64,
) -> (Windows, Windows) {
    let first = requests.iter().map(|r| r.timestamp_ns).min().unwrap();
    let own: Vec<Option<usize>> = CAPACITIES_BLOCKS.iter().map(|&c| Some(c)).collect();
    let pooled: Vec<Option<usize>> = CAPACITIES_BLOCKS
        .iter()
        .map(|&c| Some(c * INSTANCES))
        .collect();
    let mut lanes: BTreeMap<&str, OracleBank> = BTreeMap::new();
    let mut pool = OracleBank::new(&pooled, None);
    let (mut instances, mut shared) = (Windows::new(), Windows::new());
    for request in requests {
        let lane = lanes
            .entry(request.instance_id.as_str())
            .or_insert_with(|| OracleBank::new(&own, None));
        let hits = lane.process_request(&request.keys, request.timestamp_ns);
        let pool_hits = pool.process_request(&request.keys, request.timestamp_ns);
        if request.timestamp_ns < from_ns {
            continue;
        }
        let index = (request.timestamp_ns - first).div_euclid(width_ns);
        for (windows, hits) in [(&mut instances, hits), (&mut shared, pool_hits)] {
            let window = windows
                .entry(index)
                .or_insert_with(|| (0, 0, vec![0; CAPACITIES_BLOCKS.len()]));
            window.0 += 1;
            window.1 += request.input_token_len;
            for (sum, h) in window.2.iter_mut().zip(hits) {
                *sum += h * 16;
            }
        }
    }
    (instances, shared)
}

/// The lines of `text` grouped like the oracle (by window of the trace whose first request
/// is at `first_ns`): instance lines, then pool lines. A window start is clipped to the
/// accounted span, so it lies in its window but is not always its start.
fn parsed_windows(text: &str, first_ns: i64, width_ns: i64) -> (Windows, Windows) {
    let (mut instances, mut shared) = (Windows::new(), Windows::new());
    for line in text.lines() {
        let line: Value = serde_json::from_str(line).unwrap();
        let start = line["window_start_ns"].as_i64().unwrap();
        let index = (start - first_ns).div_euclid(width_ns);
        let slot = CAPACITIES_BLOCKS
            .iter()
            .position(|&c| line["capacity_blocks"].as_u64() == Some(c as u64))
            .unwrap();
        let windows = if line.get("pool").is_some() {
            assert_eq!(line["pool"], "pool", "{line}");
            assert_eq!(line["instances"], INSTANCES as u64, "{line}");
            assert_eq!(
                line["pool_capacity_blocks"],
                (CAPACITIES_BLOCKS[slot] * INSTANCES) as u64,
                "{line}"
            );
            &mut shared
        } else {
            assert!(line.get("pool_capacity_blocks").is_none(), "{line}");
            &mut instances
        };
        let window = windows
            .entry(index)
            .or_insert_with(|| (0, 0, vec![0; CAPACITIES_BLOCKS.len()]));
        window.0 = line["requests"].as_u64().unwrap();
        window.1 = line["total_input_tokens"].as_u64().unwrap();
        window.2[slot] = line["total_hit_tokens"].as_u64().unwrap();
    }
    (instances, shared)
}

#[test]
fn window_lines_give_the_pool_at_n_times_c_beside_the_instances_and_plain_bytes_stay() {
    let dir = tempfile::tempdir().unwrap();
    let (requests, trace) = trace(dir.path());
    let pooled = replay(&trace, &dir.path().join("pooled"), &["--pool"]);
    let plain = replay(&trace, &dir.path().join("plain"), &[]);
    let first = requests.iter().map(|r| r.timestamp_ns).min().unwrap();
    let last = requests.iter().map(|r| r.timestamp_ns).max().unwrap();
    assert!(
        last - first > 2_000_000_000,
        "the trace spans a few windows"
    );
    let width_ns = 1_000_000_000;

    let text = query(&pooled, &["--window", "1s"]);
    let (instances, shared) = parsed_windows(&text, first, width_ns);
    let (expected_instances, expected_pool) = oracle_windows(&requests, width_ns, i64::MIN);
    assert!(instances.len() > 2);
    assert_eq!(instances, expected_instances);
    assert_eq!(shared, expected_pool);
    assert!(
        shared
            .values()
            .zip(instances.values())
            .any(|(p, i)| p.2[0] > i.2[0]),
        "one cache of N × C beats N of C somewhere"
    );
    // Each window: its instance lines, then its pool lines.
    let kinds: Vec<bool> = text.lines().map(|l| l.contains("\"pool\":")).collect();
    let per_window = CAPACITIES_BLOCKS.len();
    for chunk in kinds.chunks(2 * per_window) {
        assert_eq!(chunk[..per_window], vec![false; per_window][..]);
        assert_eq!(chunk[per_window..], vec![true; per_window][..]);
    }

    // A restricted span counts N and accounts only its rows, from a cache built from the start.
    let from_ns = first + 1_500_000_000;
    let text = query(&pooled, &["--window", "1s", "--from", "1.5s"]);
    let (instances, shared) = parsed_windows(&text, first, width_ns);
    let (expected_instances, expected_pool) = oracle_windows(&requests, width_ns, from_ns);
    // Window 1 of the trace, the first shown, starts where the span does.
    let first_line: Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    assert_eq!(first_line["window_start_ns"], from_ns);
    assert_eq!(first_line["window_start_s"], 1.5);
    assert_eq!(instances, expected_instances);
    assert_eq!(shared, expected_pool);

    // Without a pool lane: the instances' lines only, the bytes of the pooled query's.
    let plain_text = query(&plain, &["--window", "1s"]);
    let pooled_text = query(&pooled, &["--window", "1s"]);
    let mut without_pool = String::new();
    for line in pooled_text
        .lines()
        .filter(|line| !line.contains("\"pool\":"))
    {
        without_pool.push_str(line);
        without_pool.push('\n');
    }
    assert_eq!(plain_text, without_pool);
    assert!(!plain_text.contains("pool"));

    // CSV: the pool's columns only with a pool lane.
    let plain_csv = query(&plain, &["--window", "1s", "--csv"]);
    let pooled_csv = query(&pooled, &["--window", "1s", "--csv"]);
    let header = pooled_csv.lines().next().unwrap();
    assert_eq!(
        header,
        "window_start_s,window_end_s,window_start_ns,pool,instances,capacity_gb,capacity_blocks,\
         pool_capacity_blocks,requests,total_input_tokens,total_hit_tokens,hit_rate"
    );
    assert!(plain_csv.lines().next().unwrap().ends_with(",hit_rate"));
    // The pool's columns (pool, instances, pool_capacity_blocks) left out: the plain CSV.
    let without_pool_columns = |fields: &[&str]| {
        let kept: Vec<&str> = fields
            .iter()
            .enumerate()
            .filter(|(index, _)| ![3, 4, 7].contains(index))
            .map(|(_, field)| *field)
            .collect();
        kept.join(",")
    };
    let mut stripped = String::new();
    for (index, line) in pooled_csv.lines().enumerate() {
        let fields: Vec<&str> = line.split(',').collect();
        if index > 0 && fields[3] == "pool" {
            assert_eq!(fields[4], INSTANCES.to_string(), "{line}");
            let blocks: usize = fields[6].parse().unwrap();
            assert_eq!(fields[7], (blocks * INSTANCES).to_string());
            continue;
        }
        if index > 0 {
            assert_eq!((fields[3], fields[4], fields[7]), ("", "", ""), "{line}");
        }
        stripped.push_str(&without_pool_columns(&fields));
        stripped.push('\n');
    }
    assert_eq!(plain_csv, stripped);
}
