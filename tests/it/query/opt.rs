//! `query` and `mrc` with the OPT facts beside the LRU ones (`replay --policy lru,opt`),
//! through the real binary: OPT's totals equal the naive Belady simulator's
//! (`common/opt_oracle.rs`) and LRU's the naive LRU's (`common/oracle.rs`) at every capacity,
//! the miss split adds up to the input tokens, the output without OPT stays byte for byte
//! today's, and facts of another trace are refused.

use crate::common::traces::two_lane_prefix_trace;
use std::path::Path;

use serde_json::Value;

use crate::common::cli_bin::{
    assert_mentions, failed, ok, parse_query_output, replay_to, run_in, u64s, write_file,
};
use crate::common::opt_oracle::min_unit_hits;
use crate::common::oracle::OracleLru;

/// Tokens per block of the generated traces.
const BLOCK_TOKENS: u64 = 4;

/// Capacities (blocks) the query is asked at; `-1` GB is ∞.
const CAPACITY_BLOCKS: [usize; 9] = [0, 1, 2, 3, 5, 8, 13, 30, 1000];

fn trace(seed: u64, rows: usize) -> (String, Vec<(String, Vec<i64>)>) {
    two_lane_prefix_trace(seed, rows, BLOCK_TOKENS)
}

/// One lane's expected sums, by the naive simulators: input tokens, then per capacity of
/// [`CAPACITY_BLOCKS`] LRU's and OPT's hit tokens, then the hit tokens at ∞.
#[expect(
    clippy::struct_field_names,
    reason = "every field is in tokens, and says so"
)]
struct Expected {
    input_tokens: u64,
    lru_hit_tokens: Vec<u64>,
    opt_hit_tokens: Vec<u64>,
    infinite_hit_tokens: u64,
}

fn expected(requests: &[(String, Vec<i64>)], lane: Option<&str>) -> Expected {
    let lane_requests: Vec<Vec<i64>> = requests
        .iter()
        .filter(|(instance, _)| lane.is_none_or(|lane| lane == instance))
        .map(|(_, keys)| keys.clone())
        .collect();
    // The overall line sums the lanes, each its own cache.
    let lanes: Vec<Vec<Vec<i64>>> = match lane {
        Some(_) => vec![lane_requests.clone()],
        None => ["a", "b"]
            .iter()
            .map(|lane| {
                requests
                    .iter()
                    .filter(|(instance, _)| instance == lane)
                    .map(|(_, keys)| keys.clone())
                    .collect()
            })
            .collect(),
    };
    let tokens = |hits: u64| hits * BLOCK_TOKENS;
    let lru = |capacity: Option<usize>| -> u64 {
        lanes
            .iter()
            .map(|lane| {
                let mut cache = OracleLru::new(capacity, None);
                lane.iter()
                    .enumerate()
                    .map(|(at, keys)| cache.process_request(keys, i64::try_from(at).unwrap()))
                    .sum::<u64>()
            })
            .sum()
    };
    let opt = |capacity: Option<usize>| -> u64 {
        lanes
            .iter()
            .map(|lane| min_unit_hits(lane, capacity).iter().sum::<u64>())
            .sum()
    };
    Expected {
        input_tokens: lane_requests
            .iter()
            .map(|keys| BLOCK_TOKENS * keys.len() as u64 + 1)
            .sum(),
        lru_hit_tokens: CAPACITY_BLOCKS
            .iter()
            .map(|&c| tokens(lru(Some(c))))
            .collect(),
        opt_hit_tokens: CAPACITY_BLOCKS
            .iter()
            .map(|&c| tokens(opt(Some(c))))
            .collect(),
        infinite_hit_tokens: tokens(opt(None)),
    }
}

fn i64s(value: &Value) -> Vec<i64> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect()
}

/// A summary line's OPT fields against `expected`, and the split adding up at every slot
/// (the last slot is ∞).
fn check_summary(summary: &Value, expected: &Expected, what: &str) {
    let lru = u64s(&summary["total_hit_tokens"]);
    let opt = u64s(&summary["opt_hit_tokens"]);
    let cold = u64s(&summary["cold_miss_tokens"]);
    let capacity = u64s(&summary["capacity_miss_tokens"]);
    let policy = i64s(&summary["policy_miss_tokens"]);
    let input = summary["total_input_tokens"].as_u64().unwrap();
    assert_eq!(input, expected.input_tokens, "{what}");
    let slots = CAPACITY_BLOCKS.len();
    assert_eq!(lru[..slots], expected.lru_hit_tokens, "{what}: LRU");
    assert_eq!(opt[..slots], expected.opt_hit_tokens, "{what}: OPT");
    assert_eq!(opt[slots], expected.infinite_hit_tokens, "{what}: OPT at ∞");
    assert_eq!(lru[slots], expected.infinite_hit_tokens, "{what}: LRU at ∞");
    for slot in 0..=slots {
        assert_eq!(cold[slot], input - expected.infinite_hit_tokens, "{what}");
        assert_eq!(
            capacity[slot],
            expected.infinite_hit_tokens - opt[slot],
            "{what}"
        );
        assert_eq!(
            i128::from(lru[slot])
                + i128::from(cold[slot])
                + i128::from(capacity[slot])
                + i128::from(policy[slot]),
            i128::from(input),
            "{what}: slot {slot}: LRU hits + cold + capacity + policy misses"
        );
        assert!(policy[slot] >= 0, "{what}: OPT ≥ LRU in total");
    }
    let rates: Vec<f64> = summary["opt_hit_rates"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_f64().unwrap())
        .collect();
    for (rate, &tokens) in rates.iter().zip(&opt) {
        #[expect(clippy::cast_precision_loss, reason = "small test counts")]
        let exact = tokens as f64 / input as f64;
        assert!(
            (rate - exact).abs() <= 1e-5 * exact.max(1e-9),
            "{what}: {rate} {exact}"
        );
    }
}

fn query_args(facts: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec![
        "query".to_owned(),
        facts.display().to_string(),
        "-".to_owned(),
        "-1".to_owned(),
        "--summary-only".to_owned(),
        "--capacity-blocks".to_owned(),
    ];
    args.extend(CAPACITY_BLOCKS.iter().map(ToString::to_string));
    args.extend(extra.iter().map(|&arg| arg.to_owned()));
    args
}

/// The slots as the summary orders them: the GB slot (∞) first, then the blocks; put ∞ last.
fn reorder(summary: &Value) -> Value {
    let mut summary = summary.clone();
    for field in [
        "total_hit_tokens",
        "opt_hit_tokens",
        "cold_miss_tokens",
        "capacity_miss_tokens",
        "policy_miss_tokens",
        "opt_hit_rates",
    ] {
        let array = summary[field].as_array_mut().unwrap();
        let infinite = array.remove(0);
        array.push(infinite);
    }
    summary
}

#[test]
fn query_opt_equals_the_naive_simulators_and_the_misses_add_up() {
    for seed in 1..=4 {
        let dir = tempfile::tempdir().unwrap();
        let (text, requests) = trace(seed, 150 + 50 * usize::try_from(seed).unwrap());
        let trace_path = write_file(dir.path(), "trace.jsonl", &text);
        let out = dir.path().join("out");
        ok(replay_to(
            &trace_path,
            &out,
            &["--block-size", "4", "--policy", "lru,opt", "-q"],
        ));
        // The sibling `litehit_facts.opt.csv` is found, and said so.
        let run = ok(run_in(None, query_args(&out, &[])));
        assert_mentions(
            &run.stderr,
            &["litehit_facts.opt.csv", "LRU hit", "policy miss"],
        );
        let output = parse_query_output(&run.stdout);
        for summary in &output.instance_summaries {
            let lane = summary["instance_id"].as_str().unwrap();
            check_summary(
                &reorder(summary),
                &expected(&requests, Some(lane)),
                &format!("seed {seed} lane {lane}"),
            );
        }
        check_summary(
            &reorder(&output.overall),
            &expected(&requests, None),
            &format!("seed {seed} overall"),
        );
        // `--opt FILE` reads the same, and `--no-opt` writes no OPT field.
        let facts = out.join("litehit_facts.csv");
        let typed = ok(run_in(
            None,
            query_args(
                &facts,
                &[
                    "--opt",
                    &out.join("litehit_facts.opt.csv").display().to_string(),
                ],
            ),
        ));
        assert_eq!(typed.stdout, run.stdout, "seed {seed}");
        let without = ok(run_in(None, query_args(&facts, &["--no-opt"])));
        assert!(!without.stdout.contains("opt_hit") && !without.stderr.contains("OPT"));
        // Today's fields are unchanged: each line with OPT is the line without, plus fields.
        for (with, without) in run.stdout.lines().zip(without.stdout.lines()) {
            let prefix = without.strip_suffix('}').unwrap();
            assert!(
                with.starts_with(prefix)
                    && with[prefix.len()..].starts_with(",\"opt_hit_tokens\":"),
                "{with}\n{without}"
            );
        }
    }
}

/// The requests of lanes `a` and `b`.
fn lanes(requests: &[(String, Vec<i64>)]) -> Vec<Vec<Vec<i64>>> {
    ["a", "b"]
        .iter()
        .map(|lane| {
            requests
                .iter()
                .filter(|(instance, _)| instance == lane)
                .map(|(_, keys)| keys.clone())
                .collect()
        })
        .collect()
}

/// OPT's hit tokens, each lane its own cache of `capacity` blocks (`None`: ∞).
fn opt_total_tokens(lanes: &[Vec<Vec<i64>>], capacity: Option<usize>) -> u64 {
    lanes
        .iter()
        .map(|lane| min_unit_hits(lane, capacity).iter().sum::<u64>() * BLOCK_TOKENS)
        .sum()
}

/// LRU's hit tokens, each lane its own cache of `capacity` blocks.
fn lru_total_tokens(lanes: &[Vec<Vec<i64>>], capacity: usize) -> u64 {
    lanes
        .iter()
        .map(|lane| {
            let mut cache = OracleLru::new(Some(capacity), None);
            lane.iter()
                .map(|keys| cache.process_request(keys, 0))
                .sum::<u64>()
                * BLOCK_TOKENS
        })
        .sum()
}

#[test]
fn mrc_opt_curve_and_gap_equal_the_naive_simulator() {
    let dir = tempfile::tempdir().unwrap();
    let (text, requests) = trace(7, 300);
    let trace_path = write_file(dir.path(), "trace.jsonl", &text);
    let out = dir.path().join("out");
    ok(replay_to(
        &trace_path,
        &out,
        &["--block-size", "4", "--policy", "lru,opt", "-q"],
    ));
    let png = dir.path().join("mrc.png");
    let run = ok(run_in(
        None,
        [
            "mrc".as_ref(),
            out.as_os_str(),
            "--json".as_ref(),
            "--png".as_ref(),
            png.as_os_str(),
        ],
    ));
    assert!(png.is_file());
    let report: Value = serde_json::from_str(&run.stdout).unwrap();
    let opt = &report["opt"];
    let gap = opt["gap"].as_array().unwrap();
    assert!(gap.len() >= 2, "{opt}");
    let lanes = lanes(&requests);
    let opt_tokens = |capacity| opt_total_tokens(&lanes, capacity);
    let lru_tokens = |capacity| lru_total_tokens(&lanes, capacity);
    let infinite = opt_tokens(None);
    for point in gap {
        let blocks = usize::try_from(point["capacity_blocks"].as_u64().unwrap()).unwrap();
        let input = point["total_input_tokens"].as_u64().unwrap();
        assert_eq!(
            point["opt_hit_tokens"].as_u64().unwrap(),
            opt_tokens(Some(blocks)),
            "{point}"
        );
        assert_eq!(
            point["lru_hit_tokens"].as_u64().unwrap(),
            lru_tokens(blocks),
            "{point}"
        );
        assert_eq!(point["infinite_hit_tokens"].as_u64().unwrap(), infinite);
        let split = point["cold_miss_tokens"].as_u64().unwrap()
            + point["capacity_miss_tokens"].as_u64().unwrap()
            + point["lru_hit_tokens"].as_u64().unwrap();
        assert_eq!(
            i128::from(split) + i128::from(point["policy_miss_tokens"].as_i64().unwrap()),
            i128::from(input),
            "{point}"
        );
    }
    // OPT's curve: every exact breakpoint of the total equals the simulator there.
    for point in opt["report"]["total"]["curve"]["points"]
        .as_array()
        .unwrap()
    {
        let blocks = usize::try_from(point["capacity_blocks"].as_u64().unwrap()).unwrap();
        assert_eq!(
            point["hit_tokens"].as_u64().unwrap(),
            opt_tokens(Some(blocks)),
            "{point}"
        );
    }
    for knee in opt["report"]["total"]["knees"].as_array().unwrap() {
        let blocks = usize::try_from(knee["capacity_blocks"].as_u64().unwrap()).unwrap();
        let target = knee["target_hit_rate"].as_f64().unwrap();
        let input = report["total"]["total_input_tokens"].as_u64().unwrap();
        #[expect(clippy::cast_precision_loss, reason = "small test counts")]
        let rate = |tokens: u64| tokens as f64 / input as f64;
        assert!(rate(opt_tokens(Some(blocks))) >= target - 1e-12, "{knee}");
        if blocks > 0 {
            assert!(
                rate(opt_tokens(Some(blocks - 1))) < target,
                "{knee}: the smallest"
            );
        }
    }
    // The table says it too.
    let table = ok(run_in(None, ["mrc".as_ref(), out.as_os_str()]));
    assert_mentions(
        &table.stdout,
        &["OPT (Belady's optimal policy), total", "policy miss"],
    );
}

#[test]
fn facts_of_another_trace_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let (one, two) = (dir.path().join("one"), dir.path().join("two"));
    for (out, seed, rows) in [(&one, 3, 120), (&two, 5, 120)] {
        let trace_path = write_file(
            dir.path(),
            &format!("trace{seed}.jsonl"),
            &trace(seed, rows).0,
        );
        ok(replay_to(
            &trace_path,
            out,
            &["--block-size", "4", "--policy", "lru,opt", "-q"],
        ));
    }
    let lru = one.join("litehit_facts.csv");
    let other = two.join("litehit_facts.opt.csv");
    for command in ["query", "mrc"] {
        let mut args = vec![command.to_owned(), lru.display().to_string()];
        if command == "query" {
            args.extend(["-".to_owned(), "-1".to_owned()]);
        }
        args.extend(["--opt".to_owned(), other.display().to_string()]);
        let run = run_in(None, &args);
        assert_mentions(
            failed(&run),
            &["not the same trace", "litehit_facts.opt.csv"],
        );
    }
    // The same trace with one row fewer: refused by its row count.
    let opt = std::fs::read_to_string(one.join("litehit_facts.opt.csv")).unwrap();
    let short = write_file(
        dir.path(),
        "short.opt.csv",
        &opt[..=opt.trim_end().rfind('\n').unwrap()],
    );
    let run = run_in(
        None,
        [
            "query".as_ref(),
            lru.as_os_str(),
            "-".as_ref(),
            "-1".as_ref(),
            "--opt".as_ref(),
            short.as_os_str(),
        ],
    );
    assert_mentions(failed(&run), &["rows", "not the same trace"]);
    // `--window` takes no OPT file.
    let run = run_in(
        None,
        [
            "query".as_ref(),
            lru.as_os_str(),
            "-".as_ref(),
            "-1".as_ref(),
            "--window".as_ref(),
            "10s".as_ref(),
            "--opt".as_ref(),
            short.as_os_str(),
        ],
    );
    assert_mentions(failed(&run), &["--window"]);
    // The two files of one replay named the other way round: refused, naming both.
    let opt = one.join("litehit_facts.opt.csv");
    for command in ["query", "mrc"] {
        let mut args = vec![command.to_owned(), opt.display().to_string()];
        if command == "query" {
            args.extend(["-".to_owned(), "-1".to_owned()]);
        }
        args.extend(["--opt".to_owned(), lru.display().to_string()]);
        let run = run_in(None, &args);
        assert_mentions(
            failed(&run),
            &["look swapped", "litehit_facts.opt.csv", "litehit_facts.csv"],
        );
    }
}

/// The real conversation trace (Mooncake, 512-token blocks) through `replay --policy lru,opt`
/// and `query`: OPT's and LRU's totals at 1,000 and 10,000 blocks and ∞ equal the naive
/// simulators on the same keys (each request's complete blocks), and the misses add up.
#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn the_conversation_trace_query_equals_the_naive_simulators() {
    const TRACE_BLOCK_TOKENS: u64 = 512;
    let path = crate::common::shared_file("traces/conversation_trace.jsonl");
    let text = std::fs::read_to_string(&path).unwrap();
    // The length contract: a request's keys are its complete blocks.
    let (requests, input_tokens): (Vec<Vec<i64>>, u64) =
        text.lines()
            .fold((Vec::new(), 0), |(mut requests, input), line| {
                let row: Value = serde_json::from_str(line).unwrap();
                let length = row["input_length"].as_u64().unwrap();
                let complete = usize::try_from(length / TRACE_BLOCK_TOKENS).unwrap();
                let keys: Vec<i64> = row["hash_ids"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .take(complete)
                    .map(|id| id.as_i64().unwrap())
                    .collect();
                requests.push(keys);
                (requests, input + length)
            });
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("out");
    ok(replay_to(&path, &out, &["--policy", "lru,opt", "-q"]));
    let capacities = [1_000_usize, 10_000];
    let run = ok(run_in(
        None,
        [
            "query",
            out.to_str().unwrap(),
            "-",
            "-1",
            "--summary-only",
            "--capacity-blocks",
            "1000",
            "10000",
        ],
    ));
    let overall = parse_query_output(&run.stdout).overall;
    assert_eq!(
        overall["total_input_tokens"].as_u64().unwrap(),
        input_tokens
    );
    let (lru, opt) = (
        u64s(&overall["total_hit_tokens"]),
        u64s(&overall["opt_hit_tokens"]),
    );
    let tokens = |hits: u64| hits * TRACE_BLOCK_TOKENS;
    let infinite = tokens(min_unit_hits(&requests, None).iter().sum());
    assert_eq!((lru[0], opt[0]), (infinite, infinite), "∞");
    for (slot, capacity) in capacities.into_iter().enumerate() {
        let mut cache = OracleLru::new(Some(capacity), None);
        let lru_hits: u64 = requests
            .iter()
            .map(|keys| cache.process_request(keys, 0))
            .sum();
        let opt_hits: u64 = min_unit_hits(&requests, Some(capacity)).iter().sum();
        assert_eq!(lru[slot + 1], tokens(lru_hits), "LRU at {capacity}");
        assert_eq!(opt[slot + 1], tokens(opt_hits), "OPT at {capacity}");
    }
    let (cold, capacity_misses, policy) = (
        u64s(&overall["cold_miss_tokens"]),
        u64s(&overall["capacity_miss_tokens"]),
        i64s(&overall["policy_miss_tokens"]),
    );
    for slot in 0..3 {
        assert_eq!(
            i128::from(lru[slot])
                + i128::from(cold[slot])
                + i128::from(capacity_misses[slot])
                + i128::from(policy[slot]),
            i128::from(input_tokens),
            "slot {slot}"
        );
    }
}

/// The pool lane (`replay --pool`) with OPT: the pool line's `pool_opt_hit_tokens` at N × C
/// equal the naive MIN simulator over every row at N × C — both when the pool is the lane
/// accumulated while reading (`--pool`, named `pool`) and when it is recognised only at the
/// end and its rows are read again, OPT's in step (`--pool=shared`) — and the text table
/// shows the shared cache's split too.
#[test]
fn the_pool_line_has_opt_at_n_times_c() {
    let dir = tempfile::tempdir().unwrap();
    let (text, requests) = trace(11, 160);
    let trace_path = write_file(dir.path(), "trace.jsonl", &text);
    let all_keys: Vec<Vec<i64>> = requests.iter().map(|(_, keys)| keys.clone()).collect();
    for pool_flag in ["--pool", "--pool=shared"] {
        let out = dir
            .path()
            .join(pool_flag.trim_start_matches('-').replace('=', "-"));
        ok(replay_to(
            &trace_path,
            &out,
            &["--block-size", "4", "--policy", "lru,opt", pool_flag, "-q"],
        ));
        let run = ok(run_in(None, query_args(&out, &[])));
        let pool_line: Value = run
            .stdout
            .lines()
            .map(|line| serde_json::from_str::<Value>(line).unwrap())
            .find(|line| line.get("pool").is_some())
            .unwrap_or_else(|| panic!("{pool_flag}: no pool line in\n{}", run.stdout));
        let capacities: Vec<Option<usize>> = pool_line["pool_capacity_blocks"]
            .as_array()
            .unwrap()
            .iter()
            .map(|blocks| usize::try_from(blocks.as_i64().unwrap()).ok())
            .collect();
        assert_eq!(capacities.len(), CAPACITY_BLOCKS.len() + 1, "{pool_line}");
        let expected: Vec<u64> = capacities
            .iter()
            .map(|&capacity| min_unit_hits(&all_keys, capacity).iter().sum::<u64>() * BLOCK_TOKENS)
            .collect();
        assert_eq!(
            u64s(&pool_line["pool_opt_hit_tokens"]),
            expected,
            "{pool_flag}: {pool_line}"
        );
        // LRU's pool hits never above OPT's.
        for (lru, opt) in u64s(&pool_line["pool_total_hit_tokens"])
            .into_iter()
            .zip(expected)
        {
            assert!(lru <= opt, "{pool_flag}: {pool_line}");
        }
        let table = run_in(
            None,
            query_args(&out, &[]).into_iter().map(|arg| {
                if arg == "-" {
                    dir.path().join("q.jsonl").display().to_string()
                } else {
                    arg
                }
            }),
        );
        assert_mentions(&ok(table).stdout, &["one cache shared by the 2 instances"]);
    }
}
