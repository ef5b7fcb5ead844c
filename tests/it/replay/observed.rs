//! Observed vs ideal (issue 31 §3): a request log whose lines carry the engine's own cached
//! tokens. The logs here come from a small engine simulator written in the test: an LRU pool
//! of a known number of blocks (some of them pinned, so they never serve as prefix cache)
//! with vLLM's last-token rule. LiteHit's LRU under `--engine vllm` at the simulator's pool
//! (`--gpu-blocks`) equals the observed hits request by request; the effective capacity is
//! the smallest pool a naive search over the simulator finds reaching them, at most the pool,
//! and it falls with the pinned blocks.

use crate::common::traces::{TreeRequest, TreeWalk, tree_walk_requests};
use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::common::cli_bin::{get_row, ok, replay_to, write_file};

const BLOCK_SIZE: u64 = 16;
const POOL_BLOCKS: u64 = 40;

/// The requests: random walks down a prefix tree, token counts often a whole number of
/// blocks (where the last-token rule bites) and often not.
const WALK: TreeWalk = TreeWalk {
    block_size: BLOCK_SIZE,
    max_depth: 10,
    new_branch_one_in: 5,
    partial_block_one_in: 2,
};

fn requests(seed: u64, count: usize) -> Vec<TreeRequest> {
    tree_walk_requests(WALK, seed, count)
}

/// The engine simulator: cached tokens per request with a pool of `pool_blocks` of which
/// `pinned_blocks` are held by something else (never evicted, never a prefix hit): a prompt
/// hits its longest cached prefix, never its last token, then its blocks become most
/// recent (its head last) and the least recent beyond the free pool are evicted.
fn simulate(requests: &[TreeRequest], pool_blocks: u64, pinned_blocks: u64) -> Vec<u64> {
    let free = usize::try_from(pool_blocks - pinned_blocks).unwrap();
    let mut pool: Vec<i64> = Vec::new(); // least recent first
    requests
        .iter()
        .map(|request| {
            let cached = request
                .keys
                .iter()
                .take_while(|key| pool.contains(key))
                .count() as u64;
            let hits = cached.min((request.input_len - 1) / BLOCK_SIZE);
            for key in request.keys.iter().rev() {
                pool.retain(|held| held != key);
                pool.push(*key);
            }
            let over = pool.len().saturating_sub(free);
            pool.drain(..over);
            hits * BLOCK_SIZE
        })
        .collect()
}

/// The log as a standard trace whose lines say the engine's `cached_tokens`.
fn log(dir: &Path, requests: &[TreeRequest], cached_tokens: &[u64]) -> std::path::PathBuf {
    let mut text = String::new();
    for (index, (request, cached)) in requests.iter().zip(cached_tokens).enumerate() {
        let row = get_row(
            "engine-0",
            &format!("r{index}"),
            i64::try_from(index).unwrap() + 1,
            &request.keys,
            request.input_len,
        );
        text.push_str(row.trim_end().trim_end_matches('}'));
        writeln!(text, ",\"cached_tokens\":{cached}}}").unwrap();
    }
    write_file(dir, "log.jsonl", &text)
}

/// What `replay --engine vllm --gpu-blocks POOL` says: the summary's comparison row
/// (observed %, LRU at the engine slot %, effective capacity in blocks) and the report.
struct Replayed {
    observed: String,
    lru_engine: String,
    effective_blocks: u64,
    report: Vec<Value>,
}

fn replay(dir: &Path, log: &Path) -> Replayed {
    let report = dir.join("gaps.jsonl");
    let run = ok(replay_to(
        log,
        &dir.join("out"),
        &[
            "--block-size",
            "16",
            "--engine",
            "vllm",
            "--gpu-blocks",
            &POOL_BLOCKS.to_string(),
            "--observed-report",
            report.to_str().unwrap(),
        ],
    ));
    let row = run
        .stderr
        .lines()
        .skip_while(|line| !line.contains("effective capacity"))
        .nth(1)
        .unwrap_or_else(|| panic!("no comparison in:\n{}", run.stderr));
    let cells: Vec<&str> = row.split_whitespace().collect();
    assert_eq!(cells[0], "engine-0", "{row}");
    assert_eq!(cells[1], POOL_BLOCKS.to_string(), "{row}");
    assert_eq!(cells[6], "blocks", "{row}");
    Replayed {
        observed: cells[2].to_owned(),
        lru_engine: cells[3].to_owned(),
        effective_blocks: cells[5].replace(',', "").parse().unwrap(),
        report: std::fs::read_to_string(&report)
            .unwrap()
            .lines()
            .map(|line| serde_json::from_str(line).unwrap())
            .collect(),
    }
}

/// The smallest pool whose simulated hits (with nothing pinned) reach `observed` in total.
fn naive_effective_capacity(requests: &[TreeRequest], observed: u64) -> u64 {
    (0..=POOL_BLOCKS)
        .find(|&pool| simulate(requests, pool, 0).iter().sum::<u64>() >= observed)
        .expect("the pool itself reaches the observed hits")
}

#[test]
fn lru_at_the_engine_pool_equals_the_engines_observed_hits() {
    for seed in 1..=4 {
        let dir = tempfile::tempdir().unwrap();
        let requests = requests(seed, 300);
        let observed = simulate(&requests, POOL_BLOCKS, 0);
        assert!(observed.iter().sum::<u64>() > 0, "the log has hits");
        let replayed = replay(dir.path(), &log(dir.path(), &requests, &observed));
        // Request by request: no request where the engine hit less than LRU at its pool.
        assert!(replayed.report.is_empty(), "{:?}", replayed.report);
        assert_eq!(replayed.observed, replayed.lru_engine);
        let effective = naive_effective_capacity(&requests, observed.iter().sum());
        assert_eq!(replayed.effective_blocks, effective, "seed {seed}");
        assert!(effective <= POOL_BLOCKS);
    }
}

#[test]
fn pinned_blocks_lower_the_effective_capacity_and_each_gap_is_the_simulators() {
    let mut gaps_seen = 0;
    for (seed, pinned) in [(1, 15), (2, 25), (3, 8)] {
        let dir = tempfile::tempdir().unwrap();
        let requests = requests(seed, 300);
        let unpinned = replay(
            dir.path(),
            &log(dir.path(), &requests, &simulate(&requests, POOL_BLOCKS, 0)),
        );
        let observed = simulate(&requests, POOL_BLOCKS, pinned);
        let replayed = replay(dir.path(), &log(dir.path(), &requests, &observed));
        let effective = naive_effective_capacity(&requests, observed.iter().sum());
        assert_eq!(replayed.effective_blocks, effective, "seed {seed}");
        assert!(
            effective <= POOL_BLOCKS - pinned,
            "seed {seed}: {effective}"
        );
        assert!(effective <= unpinned.effective_blocks);
        // Every line: LRU at the pool is the simulator with nothing pinned, the observed
        // hits its own; exactly the requests where those differ, largest gap first.
        let at_pool = simulate(&requests, POOL_BLOCKS, 0);
        let mut expected: Vec<(String, u64, u64)> = (0..requests.len())
            .filter(|&index| at_pool[index] > observed[index])
            .map(|index| (format!("r{index}"), observed[index], at_pool[index]))
            .collect();
        expected.sort_by_key(|(_, observed, lru)| std::cmp::Reverse(lru - observed));
        let got: Vec<(String, u64, u64)> = replayed
            .report
            .iter()
            .map(|line| {
                assert_eq!(
                    line["gap_tokens"].as_u64().unwrap(),
                    line["lru_engine_hit_tokens"].as_u64().unwrap()
                        - line["observed_hit_tokens"].as_u64().unwrap()
                );
                (
                    line["request_id"].as_str().unwrap().to_owned(),
                    line["observed_hit_tokens"].as_u64().unwrap(),
                    line["lru_engine_hit_tokens"].as_u64().unwrap(),
                )
            })
            .collect();
        assert_eq!(got, expected, "seed {seed}");
        gaps_seen += got.len();
    }
    assert!(gaps_seen > 0, "pinning made the engine miss somewhere");
}

/// Live, the same log: each instance's `observed` in the headless JSON has the engine's
/// sums and the same effective capacity as the naive search (every row said its count).
#[test]
fn watch_shows_the_same_observed_hits_and_effective_capacity() {
    let dir = tempfile::tempdir().unwrap();
    let requests = requests(5, 300);
    let observed = simulate(&requests, POOL_BLOCKS, 12);
    let log = log(dir.path(), &requests, &observed);
    let (lines, stderr) =
        crate::common::headless::headless_to_end(&log, &["--block-size", "16", "--engine", "vllm"]);
    let last = lines.last().unwrap_or_else(|| panic!("no line: {stderr}"));
    let entry = &crate::common::headless::instance_entry(last, "engine-0")["observed"];
    assert_eq!(entry["requests"], 300);
    assert_eq!(entry["hit_tokens"], observed.iter().sum::<u64>());
    assert_eq!(
        entry["effective_capacity_blocks"],
        naive_effective_capacity(&requests, observed.iter().sum())
    );
}

/// Bad observations and a report that cannot be written stop the replay before anything is
/// published: more cached tokens than the row's `input_len` (an observed rate over 100 %) is
/// refused naming file, line and field, and a report in a missing folder is refused up front.
#[test]
fn a_bad_observation_or_report_path_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let requests = requests(6, 20);
    let mut observed = simulate(&requests, POOL_BLOCKS, 0);
    observed[7] = requests[7].input_len + 1;
    let bad_log = log(dir.path(), &requests, &observed);
    let out = dir.path().join("out");
    let run = replay_to(&bad_log, &out, &["--block-size", "16"]);
    let stderr = crate::common::cli_bin::failed(&run);
    assert!(
        stderr.contains("log.jsonl: line 8") && stderr.contains("\"cached_tokens\""),
        "{stderr}"
    );
    assert!(!out.join("litehit_facts.csv").exists());

    observed[7] = 0;
    let good_log = log(dir.path(), &requests, &observed);
    let missing = dir.path().join("no-such-dir/gaps.jsonl");
    let run = replay_to(
        &good_log,
        &out,
        &[
            "--block-size",
            "16",
            "--observed-report",
            missing.to_str().unwrap(),
        ],
    );
    let stderr = crate::common::cli_bin::failed(&run);
    assert!(
        stderr.contains("--observed-report") && stderr.contains("no-such-dir"),
        "{stderr}"
    );
    assert!(!out.join("litehit_facts.csv").exists(), "{stderr}");
}

/// With `--policy lru,opt` the comparison also shows OPT at the engine's pool: equal to the
/// naive MIN simulator at the pool's size (under vLLM's last-token rule) over the observed
/// requests, and never below LRU's there.
#[test]
fn opt_at_the_engine_pool_is_shown_beside_lru() {
    let dir = tempfile::tempdir().unwrap();
    let requests = requests(7, 300);
    let observed = simulate(&requests, POOL_BLOCKS, 6);
    let log = log(dir.path(), &requests, &observed);
    let run = ok(replay_to(
        &log,
        &dir.path().join("out"),
        &[
            "--block-size",
            "16",
            "--engine",
            "vllm",
            "--gpu-blocks",
            &POOL_BLOCKS.to_string(),
            "--policy",
            "lru,opt",
        ],
    ));
    let mut lines = run
        .stderr
        .lines()
        .skip_while(|line| !line.contains("effective capacity"));
    let header = lines.next().unwrap_or_else(|| panic!("{}", run.stderr));
    assert!(header.contains("LRU engine OPT engine"), "{header}");
    let cells: Vec<&str> = lines.next().unwrap().split_whitespace().collect();
    assert_eq!(cells[0], "engine-0");
    let keys: Vec<Vec<i64>> = requests.iter().map(|r| r.keys.clone()).collect();
    let pool = usize::try_from(POOL_BLOCKS).unwrap();
    let opt_tokens: u64 = crate::common::opt_oracle::min_unit_hits(&keys, Some(pool))
        .iter()
        .zip(&requests)
        .map(|(&hits, request)| hits.min((request.input_len - 1) / BLOCK_SIZE) * BLOCK_SIZE)
        .sum();
    let input_tokens: u64 = requests.iter().map(|r| r.input_len).sum();
    #[expect(clippy::cast_precision_loss, reason = "a percentage")]
    let expected = format!("{:.2}%", opt_tokens as f64 / input_tokens as f64 * 100.0);
    assert_eq!(cells[4], expected, "{}", run.stderr);
    let percent = |cell: &str| cell.trim_end_matches('%').parse::<f64>().unwrap();
    assert!(percent(cells[4]) >= percent(cells[3]), "{}", run.stderr);
}
