//! `query --quota-total`: the best split of one cache among tenant lanes. The planner's
//! dynamic programming is checked against brute force over every split (random curves, and
//! through the real binary against naive LRUs, one per tenant at its quota, and one over every
//! row for the pool), with floors; a trace where greedy marginal allocation loses; and
//! isolation cost of either sign.

use std::path::Path;

use proptest::prelude::*;
use serde_json::Value;

use crate::common::cli_bin::{failed, ok, replay_to, run_in, write_file};
use crate::common::oracle::OracleLru;
use crate::common::traces::prefix_tree_trace;
use litehit_report::best_split;

/// Tokens per block of the traces here (each row also has a partial block of one token).
pub(super) const BLOCK_TOKENS: u64 = 4;

/// Every split of `budget` steps (each tenant at least its floor): the most summed hits.
fn brute_force(curves: &[Vec<u64>], floors: &[usize], budget: usize) -> Option<u64> {
    fn walk(curves: &[Vec<u64>], floors: &[usize], budget: usize) -> Option<u64> {
        let Some((curve, rest)) = curves.split_first() else {
            return Some(0);
        };
        (floors[0]..=budget.min(curve.len() - 1))
            .filter_map(|steps| {
                walk(rest, &floors[1..], budget - steps).map(|others| curve[steps] + others)
            })
            .max()
    }
    walk(curves, floors, budget)
}

/// Non-decreasing random curves of `steps + 1` points.
fn curves() -> impl Strategy<Value = (Vec<Vec<u64>>, Vec<usize>, usize)> {
    (1..5_usize, 0..7_usize).prop_flat_map(|(tenants, steps)| {
        (
            prop::collection::vec(
                prop::collection::vec(0..20_u64, steps + 1).prop_map(|gains| {
                    let mut sum = 0;
                    let mut curve: Vec<u64> = gains
                        .iter()
                        .map(|gain| {
                            sum += gain;
                            sum
                        })
                        .collect();
                    curve[0] = 0;
                    curve
                }),
                tenants,
            ),
            prop::collection::vec(0..3_usize, tenants),
            0..=steps,
        )
    })
}

/// Σ hit blocks of a naive LRU of `capacity` blocks over `requests`.
pub(super) fn oracle_hits(requests: &[&Vec<i64>], capacity: usize) -> u64 {
    let mut lru = OracleLru::new(Some(capacity), None);
    requests
        .iter()
        .map(|keys| lru.process_request(keys, 0))
        .sum()
}

/// Replays `rows` (tenant, keys) with `--lane-by tenant --pool` into `dir/out`, each block
/// `block_bytes` bytes; the facts' directory.
pub(super) fn replay_tenants(
    dir: &Path,
    rows: &[(String, Vec<i64>)],
    block_bytes: u64,
) -> std::path::PathBuf {
    let trace: String = rows
        .iter()
        .enumerate()
        .map(|(index, (tenant, keys))| {
            let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
            format!(
                r#"{{"type":"get","instance_id":"i","tenant":"{tenant}","trace_id":"t{index}","timestamp_ns":{},"keys":[{}],"input_len":{}}}"#,
                index + 1,
                keys.join(","),
                BLOCK_TOKENS * keys.len() as u64 + 1
            ) + "\n"
        })
        .collect();
    let trace = write_file(dir, "trace.jsonl", &trace);
    let out = dir.join("out");
    let block_bytes = block_bytes.to_string();
    let lane_flags = [
        "--block-size",
        "4",
        "--block-bytes",
        &block_bytes,
        "--lane-by",
        "tenant",
        "--pool",
        "-q",
    ];
    ok(replay_to(&trace, &out, &lane_flags));
    out
}

/// Replays `rows` (tenant, keys) with `--lane-by tenant --pool`, then plans `flags`; the line.
fn plan(dir: &Path, rows: &[(String, Vec<i64>)], flags: &[&str]) -> Value {
    let out = replay_tenants(dir, rows, 64);
    let line = dir.join("quota.jsonl");
    let mut args = vec![
        "query".to_owned(),
        out.display().to_string(),
        line.display().to_string(),
    ];
    args.extend(flags.iter().map(|flag| (*flag).to_owned()));
    let run = ok(run_in(None, &args));
    assert!(run.stdout.contains("| tenant | quota |"), "{}", run.stdout);
    let text = std::fs::read_to_string(&line).unwrap();
    assert_eq!(text.lines().count(), 1, "{text}");
    serde_json::from_str(&text).unwrap()
}

/// Each tenant's requests, in byte order of the tenant's name.
pub(super) fn by_tenant(rows: &[(String, Vec<i64>)]) -> Vec<(String, Vec<&Vec<i64>>)> {
    let mut tenants: std::collections::BTreeMap<&str, Vec<&Vec<i64>>> =
        std::collections::BTreeMap::default();
    for (tenant, keys) in rows {
        tenants.entry(tenant).or_default().push(keys);
    }
    tenants
        .into_iter()
        .map(|(tenant, requests)| (tenant.to_owned(), requests))
        .collect()
}

fn u64_at(value: &Value, field: &str) -> u64 {
    value[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} in {value}"))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// The DP's split reaches the brute-force maximum, respects floors and the budget, and is
    /// infeasible exactly when the floors are.
    #[test]
    fn the_best_split_is_the_brute_force_maximum((curves, floors, budget) in curves()) {
        let expected = brute_force(&curves, &floors, budget);
        let split = best_split(&curves, &floors, budget);
        prop_assert_eq!(split.as_ref().map(|split| split.hit_tokens), expected);
        if let Some(split) = split {
            prop_assert!(split.steps.iter().sum::<usize>() <= budget);
            let sum: u64 = split.steps.iter().zip(&curves).map(|(&k, curve)| curve[k]).sum();
            prop_assert_eq!(sum, split.hit_tokens);
            for (steps, floor) in split.steps.iter().zip(&floors) {
                prop_assert!(steps >= floor);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    /// Through the binary: each tenant's hits at its quota are a naive LRU's of that size over
    /// its rows, the isolated total is the best over every split of the total (brute force on
    /// the naive LRUs), with a floor respected, and the pooled and equal-split numbers are the
    /// naive LRUs' of the total over every row and of total / N per tenant.
    #[test]
    fn the_plan_matches_naive_lrus_and_brute_force(
        trace in prefix_tree_trace(),
        owners in prop::collection::vec(0..3_usize, 1..7),
        total_blocks in 1..9_usize,
        floor_blocks in 0..3_usize,
    ) {
        let rows: Vec<(String, Vec<i64>)> = trace
            .into_iter()
            .enumerate()
            .map(|(index, keys)| (format!("t{}", owners[index % owners.len()]), keys))
            .collect();
        let tenants = by_tenant(&rows);
        prop_assume!(tenants.len() >= 2); // the pool is recognised beside two lanes or more
        let floor_blocks = floor_blocks.min(total_blocks);
        let dir = tempfile::tempdir().unwrap();
        let total = format!("{total_blocks}b");
        let floor = format!("{}={floor_blocks}b", tenants[0].0);
        let line = plan(
            dir.path(),
            &rows,
            &["--quota-total", &total, "--quota-step", "1b", "--quota-floor", &floor],
        );
        let curves: Vec<Vec<u64>> = tenants
            .iter()
            .map(|(_, requests)| {
                (0..=total_blocks).map(|q| oracle_hits(requests, q) * BLOCK_TOKENS).collect()
            })
            .collect();
        let mut floors = vec![0; tenants.len()];
        floors[0] = floor_blocks;
        let best = brute_force(&curves, &floors, total_blocks).unwrap();
        prop_assert_eq!(u64_at(&line, "isolated_hit_tokens"), best);
        prop_assert_eq!(u64_at(&line, "quota_total_blocks"), total_blocks as u64);
        let planned = line["tenants"].as_array().unwrap();
        prop_assert_eq!(planned.len(), tenants.len());
        let mut quota_sum = 0;
        for ((name, requests), planned) in tenants.iter().zip(planned) {
            let quota = u64_at(planned, "quota_blocks");
            quota_sum += quota;
            prop_assert_eq!(planned["instance_id"].as_str(), Some(name.as_str()));
            prop_assert_eq!(
                u64_at(planned, "hit_tokens"),
                oracle_hits(requests, usize::try_from(quota).unwrap()) * BLOCK_TOKENS
            );
        }
        prop_assert!(quota_sum <= total_blocks as u64);
        prop_assert!(u64_at(&planned[0], "quota_blocks") >= floor_blocks as u64);
        let all: Vec<&Vec<i64>> = rows.iter().map(|(_, keys)| keys).collect();
        let pooled = oracle_hits(&all, total_blocks) * BLOCK_TOKENS;
        prop_assert_eq!(u64_at(&line, "pooled_hit_tokens"), pooled);
        let equal: u64 = tenants
            .iter()
            .map(|(_, requests)| oracle_hits(requests, total_blocks / tenants.len()) * BLOCK_TOKENS)
            .sum();
        prop_assert_eq!(u64_at(&line, "equal_split_hit_tokens"), equal);
        let cost = i128::from(pooled) - i128::from(best);
        prop_assert_eq!(line["isolation_cost_tokens"].as_i64().map(i128::from), Some(cost));
    }
}

/// Greedy marginal allocation is not enough: tenant `a` cycles over three one-block prompts
/// (no hit below three blocks, then every one), tenant `b` repeats one block and now and then
/// two others. With three blocks greedy feeds `b`'s small gains; the DP gives `a` all three.
#[test]
fn the_plan_beats_greedy_marginal_allocation_where_curves_are_not_concave() {
    let mut rows = Vec::new();
    for round in 0..10_i64 {
        for key in [1, 2, 3] {
            rows.push(("a".to_owned(), vec![key]));
        }
        rows.push(("b".to_owned(), vec![100]));
        if round % 3 == 0 {
            rows.push(("b".to_owned(), vec![101 + round % 2]));
        }
    }
    let tenants = by_tenant(&rows);
    let curves: Vec<Vec<u64>> = tenants
        .iter()
        .map(|(_, requests)| (0..=3).map(|q| oracle_hits(requests, q)).collect())
        .collect();
    // Greedy: each block to the tenant with the largest marginal gain (ties to the first).
    let mut greedy = vec![0_usize; curves.len()];
    for _ in 0..3 {
        let gain = |i: usize| curves[i][greedy[i] + 1] - curves[i][greedy[i]];
        let best = (0..curves.len())
            .max_by_key(|&i| (gain(i), std::cmp::Reverse(i)))
            .unwrap();
        greedy[best] += 1;
    }
    let greedy_hits: u64 = greedy.iter().zip(&curves).map(|(&k, curve)| curve[k]).sum();
    let dir = tempfile::tempdir().unwrap();
    let line = plan(
        dir.path(),
        &rows,
        &["--quota-total", "3b", "--quota-step", "1b"],
    );
    let planned_hits = u64_at(&line, "isolated_hit_tokens") / BLOCK_TOKENS;
    assert_eq!(Some(planned_hits), brute_force(&curves, &[0, 0], 3));
    assert!(
        planned_hits > greedy_hits,
        "DP {planned_hits}, greedy {greedy_hits} ({greedy:?})"
    );
    assert_eq!(u64_at(&line["tenants"][0], "quota_blocks"), 3);
}

/// Isolation cost is signed. One tenant's one-off prompts push another's hot block out of a
/// shared LRU, so the best partition wins (cost < 0); two tenants sending the same prompt
/// share one copy in the pool but need one each when isolated, so sharing wins (cost > 0).
#[test]
fn isolation_can_cost_and_can_gain() {
    let mut churn = Vec::new();
    for round in 0..8_i64 {
        churn.push(("hot".to_owned(), vec![7]));
        churn.push(("noisy".to_owned(), vec![1000 + 2 * round]));
        churn.push(("noisy".to_owned(), vec![1001 + 2 * round]));
    }
    let dir = tempfile::tempdir().unwrap();
    let line = plan(
        dir.path(),
        &churn,
        &["--quota-total", "2b", "--quota-step", "1b"],
    );
    assert_eq!(u64_at(&line, "pooled_hit_tokens"), 0);
    assert_eq!(u64_at(&line, "isolated_hit_tokens"), 7 * BLOCK_TOKENS);
    assert!(
        line["isolation_cost_rate"].as_f64().unwrap() < 0.0,
        "{line}"
    );

    let shared: Vec<(String, Vec<i64>)> = (0..8)
        .map(|round| (format!("t{}", round % 2), vec![7]))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let line = plan(
        dir.path(),
        &shared,
        &["--quota-total", "1b", "--quota-step", "1b"],
    );
    assert_eq!(u64_at(&line, "pooled_hit_tokens"), 7 * BLOCK_TOKENS);
    assert_eq!(u64_at(&line, "isolated_hit_tokens"), 3 * BLOCK_TOKENS);
    assert_eq!(line["isolation_cost_tokens"].as_i64(), Some(4 * 4));
}

/// Floors that need more than the total, a floor for a lane that is not there, a total under
/// one block and a step over the total are refused with what was asked.
#[test]
fn impossible_floors_are_refused() {
    let rows: Vec<(String, Vec<i64>)> = (0..6)
        .map(|i| (format!("t{}", i % 3), vec![i % 2]))
        .collect();
    let dir = tempfile::tempdir().unwrap();
    plan(dir.path(), &rows, &["--quota-total", "4b"]);
    let facts = dir.path().join("out").display().to_string();
    let over = run_in(
        None,
        [
            "query",
            &facts,
            "-",
            "--quota-total",
            "4b",
            "--quota-floor",
            "t0=3b",
            "--quota-floor",
            "t1=2b",
        ],
    );
    assert!(failed(&over).contains("need 5 blocks"), "{}", over.stderr);
    let unknown = run_in(
        None,
        [
            "query",
            &facts,
            "-",
            "--quota-total",
            "4b",
            "--quota-floor",
            "zz=1b",
        ],
    );
    assert!(
        failed(&unknown).contains("--quota-floor zz: no such lane"),
        "{}",
        unknown.stderr
    );
    // Nothing to split, or a grid whose only point is 0: refused rather than planned.
    for (flags, says) in [
        (&["--quota-total", "0b"][..], "less than one block"),
        (
            &["--quota-total", "4b", "--quota-step", "5b"][..],
            "larger than --quota-total",
        ),
    ] {
        let mut args = vec!["query", &facts, "-"];
        args.extend_from_slice(flags);
        let run = run_in(None, &args);
        assert!(failed(&run).contains(says), "{flags:?}: {}", run.stderr);
    }
}

/// The planner is exact on its grid, but the equal split (total / N) may be off it: with a
/// coarse step it can do better, and the table says so and how to fix it.
#[test]
fn a_coarse_grid_that_the_equal_split_beats_is_said() {
    // Two tenants, each with a hot 3-block prompt: 3 blocks each hit everything, and on a
    // grid of 4 blocks in a total of 6 only one tenant can have them.
    let rows: Vec<(String, Vec<i64>)> = (0..10)
        .map(|i| {
            (
                format!("t{}", i % 2),
                (1..=3).map(|k| k + 10 * (i % 2)).collect(),
            )
        })
        .collect();
    let dir = tempfile::tempdir().unwrap();
    let line = plan(
        dir.path(),
        &rows,
        &["--quota-total", "6b", "--quota-step", "4b"],
    );
    assert!(
        line["equal_split_hit_rate"].as_f64() > line["isolated_hit_rate"].as_f64(),
        "{line}"
    );
    let facts = dir.path().join("out").display().to_string();
    let table = ok(run_in(
        None,
        [
            "query",
            &facts,
            "-",
            "--quota-total",
            "6b",
            "--quota-step",
            "4b",
        ],
    ));
    assert!(
        table.stderr.contains("take a finer --quota-step"),
        "{}",
        table.stderr
    );
    // On a fine grid the best split is the equal one, and nothing is said.
    let fine = ok(run_in(
        None,
        [
            "query",
            &facts,
            "-",
            "--quota-total",
            "6b",
            "--quota-step",
            "1b",
        ],
    ));
    assert!(!fine.stderr.contains("finer"), "{}", fine.stderr);
}
