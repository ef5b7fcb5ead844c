//! Tenants on real data: the Mooncake conversation trace split into four tenants by a rule
//! written here (a row's second block id mod 4: the first id after the system prompt's block
//! 0, so a conversation's turns stay with one tenant), rewritten as a standard trace with a
//! `tenant` field and replayed with `--lane-by tenant --pool`. Each tenant's lane, per row at
//! several quotas, is a naive LRU over that tenant's rows alone; the pool lane a naive LRU
//! over every row; and the quota plan on a small grid is the brute-force best split.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::Path;

use serde_json::Value;

use crate::common::cli_bin::{ok, replay_to, run_in, write_file};
use crate::common::oracle::OracleLru;
use crate::common::shared_file;

/// The Mooncake traces' block size in tokens.
const BLOCK_TOKENS: u64 = 512;
/// Tenants of the rule.
const TENANTS: i64 = 4;

/// One row of the trace: its tenant and its full blocks (the partial last block dropped,
/// the length contract `floor(input_length / 512)`).
struct Row {
    tenant: String,
    keys: Vec<i64>,
}

/// The rule: the row's second id (the first after the shared block 0) mod 4.
fn tenant_of(hash_ids: &[i64]) -> String {
    let id = hash_ids.get(1).copied().unwrap_or(0);
    format!("t{}", id.rem_euclid(TENANTS))
}

/// Reads the conversation trace and writes it in the standard format with a `tenant` field.
fn split_into_tenants(dir: &Path) -> (Vec<Row>, std::path::PathBuf) {
    let text = std::fs::read_to_string(shared_file("traces/conversation_trace.jsonl")).unwrap();
    let mut rows = Vec::new();
    let mut standard = String::new();
    for (index, line) in text.lines().enumerate() {
        let value: Value = serde_json::from_str(line).unwrap();
        let input_tokens = value["input_length"].as_u64().unwrap();
        let hash_ids: Vec<i64> = value["hash_ids"]
            .as_array()
            .unwrap()
            .iter()
            .map(|id| id.as_i64().unwrap())
            .collect();
        let tenant = tenant_of(&hash_ids);
        let full_blocks = usize::try_from(input_tokens / BLOCK_TOKENS).unwrap();
        let keys = hash_ids[..full_blocks.min(hash_ids.len())].to_vec();
        // Milliseconds from 0; the standard format's times are positive nanoseconds.
        let timestamp_ns = (value["timestamp"].as_i64().unwrap() + 1) * 1_000_000;
        let keys_text: Vec<String> = keys.iter().map(ToString::to_string).collect();
        let _ = writeln!(
            standard,
            r#"{{"type":"get","instance_id":"mooncake","tenant":"{tenant}","trace_id":"r{index}","timestamp_ns":{timestamp_ns},"keys":[{}],"input_len":{input_tokens}}}"#,
            keys_text.join(",")
        );
        rows.push(Row { tenant, keys });
    }
    let trace = write_file(dir, "tenants.jsonl", &standard);
    (rows, trace)
}

/// Σ hit blocks of a naive LRU of `capacity` blocks over `requests`.
fn oracle_hits<'a>(requests: impl Iterator<Item = &'a Vec<i64>>, capacity: usize) -> u64 {
    let mut lru = OracleLru::new(Some(capacity), None);
    requests.map(|keys| lru.process_request(keys, 0)).sum()
}

/// Every split of `budget` steps (each tenant at least its floor): the most summed hits.
fn brute_force(curves: &[Vec<u64>], floors: &[usize], budget: usize) -> Option<u64> {
    let Some((curve, rest)) = curves.split_first() else {
        return Some(0);
    };
    (floors[0]..=budget.min(curve.len() - 1))
        .filter_map(|steps| {
            brute_force(rest, &floors[1..], budget - steps).map(|others| curve[steps] + others)
        })
        .max()
}

fn u64_at(value: &Value, field: &str) -> u64 {
    value[field]
        .as_u64()
        .unwrap_or_else(|| panic!("{field} in {value}"))
}

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn mooncake_split_into_tenants_is_one_lru_per_tenant_and_the_plan_is_the_best_split() {
    let dir = tempfile::tempdir().unwrap();
    let (rows, trace) = split_into_tenants(dir.path());
    let out = dir.path().join("out");
    ok(replay_to(
        &trace,
        &out,
        &["--block-size", "512", "--lane-by", "tenant", "--pool", "-q"],
    ));
    let facts = out.display().to_string();
    lanes_are_naive_lrus_row_by_row(&facts, &rows);
    the_plan_is_the_brute_force_best_split(&facts, &rows);
}

/// Per row, at several quotas: each tenant's lane and the pool lane against naive LRUs.
fn lanes_are_naive_lrus_row_by_row(facts: &str, rows: &[Row]) {
    let capacities: [usize; 5] = [0, 64, 1_000, 8_000, 40_000];
    let capacity_list: Vec<String> = capacities.iter().map(ToString::to_string).collect();
    let query = ok(run_in(
        None,
        [
            "query",
            facts,
            "-",
            "--capacity-blocks",
            &capacity_list.join(","),
        ],
    ))
    .stdout;
    let new_lrus = || -> Vec<OracleLru> {
        capacities
            .iter()
            .map(|&capacity| OracleLru::new(Some(capacity), None))
            .collect()
    };
    let mut tenant_lrus: BTreeMap<&str, Vec<OracleLru>> = BTreeMap::new();
    let mut pool_lrus = new_lrus();
    let mut lines = query.lines();
    let mut hits_seen = 0_u64;
    for (index, row) in rows.iter().enumerate() {
        let lrus = tenant_lrus
            .entry(row.tenant.as_str())
            .or_insert_with(new_lrus);
        for (lane, lrus) in [(row.tenant.as_str(), lrus), ("pool", &mut pool_lrus)] {
            let line: Value = serde_json::from_str(lines.next().unwrap()).unwrap();
            assert_eq!(
                line["trace_id"].as_str(),
                Some(format!("r{index}").as_str())
            );
            assert_eq!(line["instance_id"].as_str(), Some(lane), "{line}");
            for (slot, lru) in lrus.iter_mut().enumerate() {
                let expected = lru.process_request(&row.keys, 0);
                hits_seen += expected;
                assert_eq!(
                    line["hit_blocks"][slot].as_u64(),
                    Some(expected),
                    "row {index}, lane {lane}, capacity {}",
                    capacities[slot]
                );
            }
        }
    }
    assert_eq!(tenant_lrus.len(), usize::try_from(TENANTS).unwrap());
    // Every row was compared (the summaries follow), and there were hits to compare.
    assert!(hits_seen > 0);
    assert!(
        lines.all(|line| line.contains(r#""summary":true"#)),
        "a row past the trace's"
    );
}

/// The plan on a small grid (6 steps of 1000 blocks), with and without a floor, against
/// brute force over every split of the tenants' naive curves.
fn the_plan_is_the_brute_force_best_split(facts: &str, rows: &[Row]) {
    let by_tenant: BTreeMap<&str, Vec<&Vec<i64>>> =
        rows.iter().fold(BTreeMap::new(), |mut tenants, row| {
            tenants
                .entry(row.tenant.as_str())
                .or_default()
                .push(&row.keys);
            tenants
        });
    let step_blocks = 1_000_usize;
    let steps = 6_usize;
    let curves: Vec<Vec<u64>> = by_tenant
        .values()
        .map(|requests| {
            (0..=steps)
                .map(|k| oracle_hits(requests.iter().copied(), k * step_blocks) * BLOCK_TOKENS)
                .collect()
        })
        .collect();
    let pooled = oracle_hits(rows.iter().map(|row| &row.keys), steps * step_blocks) * BLOCK_TOKENS;
    let equal: u64 = by_tenant
        .values()
        .map(|requests| {
            oracle_hits(
                requests.iter().copied(),
                steps * step_blocks / by_tenant.len(),
            ) * BLOCK_TOKENS
        })
        .sum();
    for (floor_flag, floors) in [
        (None, vec![0; curves.len()]),
        (Some("t1=1500b"), vec![0, 2, 0, 0]),
    ] {
        let mut args = vec![
            "query".to_owned(),
            facts.to_owned(),
            "-".to_owned(),
            "--quota-total".to_owned(),
            format!("{}b", steps * step_blocks),
            "--quota-step".to_owned(),
            format!("{step_blocks}b"),
        ];
        if let Some(floor) = floor_flag {
            args.extend(["--quota-floor".to_owned(), floor.to_owned()]);
        }
        let line: Value = serde_json::from_str(&ok(run_in(None, &args)).stdout).unwrap();
        let best = brute_force(&curves, &floors, steps).unwrap();
        assert_eq!(u64_at(&line, "isolated_hit_tokens"), best, "{floor_flag:?}");
        let planned = line["tenants"].as_array().unwrap();
        assert_eq!(planned.len(), curves.len());
        for (((name, _), curve), (tenant, floor)) in by_tenant
            .iter()
            .zip(&curves)
            .zip(planned.iter().zip(&floors))
        {
            assert_eq!(tenant["instance_id"].as_str(), Some(*name));
            let quota_steps =
                usize::try_from(u64_at(tenant, "quota_blocks")).unwrap() / step_blocks;
            assert!(quota_steps >= *floor, "{tenant}");
            assert_eq!(u64_at(tenant, "hit_tokens"), curve[quota_steps], "{tenant}");
        }
        assert_eq!(u64_at(&line, "pooled_hit_tokens"), pooled);
        assert_eq!(u64_at(&line, "equal_split_hit_tokens"), equal);
    }
}
