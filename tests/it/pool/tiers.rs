//! `query --tiers` with the shared pool lane: the pool line carries the tier fields of the
//! pool at N × each tier size, checked against the projector on the pool's facts rows
//! (exclusive: a tier serves H(N·(C1+…+Ci)) − H(N·(C1+…+Ci−1)); inclusive: H(N·Ci) −
//! H(N·Ci−1) over the sizes in order), and the instances' tier shares beside them.

use std::path::{Path, PathBuf};

use crate::common::cli_bin::{FACTS, generate, ok, run_in, standard_trace};
use litehit_core::facts::FactRecord;
use litehit_core::facts::file::FactsReader;
use litehit_core::projector::project_blocks;
use litehit_core::workload::WorkloadConfig;
use serde_json::Value;

const INSTANCES: u64 = 3;
const BLOCK_BYTES: u64 = 1 << 20;

fn pooled_facts(dir: &Path) -> PathBuf {
    let requests = generate(
        WorkloadConfig {
            seed: 5,
            instance_ids: (0..INSTANCES).map(|i| format!("engine-{i}")).collect(),
            live_conversations: 50,
            ..WorkloadConfig::default()
        },
        1500,
    );
    let trace = dir.join("trace.jsonl");
    std::fs::write(&trace, standard_trace(&requests)).unwrap();
    let out = dir.join("out");
    ok(run_in(
        None,
        [
            "replay",
            trace.to_str().unwrap(),
            "--trace-block-size",
            "16",
            "--block-bytes",
            &BLOCK_BYTES.to_string(),
            "--out",
            out.to_str().unwrap(),
            "--pool",
            "--quiet",
        ],
    ));
    out.join(FACTS)
}

fn u64s(value: &Value) -> Vec<u64> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

#[test]
fn the_pool_line_splits_the_pool_at_n_times_each_tier_size() {
    let dir = tempfile::tempdir().unwrap();
    let facts = pooled_facts(dir.path());
    let mut pool_rows: Vec<FactRecord> = Vec::new();
    let mut reader = FactsReader::open(&facts).unwrap();
    let mut record = FactRecord::default();
    while reader.next_record(&mut record).unwrap() {
        if record.instance_id == "pool" {
            pool_rows.push(record.clone());
        }
    }
    let hits = |capacity: u64| -> u64 {
        pool_rows
            .iter()
            .map(|row| project_blocks(&row.fact, capacity))
            .sum()
    };
    // Tier sizes in blocks: a small tier under a larger one for exclusive (odd but valid);
    // inclusive tiers must grow top first.
    for (mode, sizes_blocks) in [("exclusive", [40_u64, 8, 200]), ("inclusive", [8, 40, 200])] {
        let tiers = sizes_blocks.map(|blocks| format!("{blocks}b")).join(",");
        let text = ok(run_in(
            None,
            [
                "query",
                facts.to_str().unwrap(),
                "-",
                "0.01",
                "--summary-only",
                "--tiers",
                &tiers,
                "--tier-mode",
                mode,
            ],
        ))
        .stdout;
        let lines: Vec<Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        let pool = lines.last().unwrap();
        assert_eq!(pool["pool"], "pool", "{pool}");
        assert_eq!(pool["tier_mode"], mode);
        let pooled: Vec<u64> = sizes_blocks
            .iter()
            .map(|blocks| blocks * INSTANCES)
            .collect();
        assert_eq!(u64s(&pool["pool_tier_capacity_blocks"]), pooled);
        let expected: Vec<u64> = if mode == "exclusive" {
            let mut below = 0;
            pooled
                .iter()
                .map(|size| {
                    let served = hits(below + size) - if below == 0 { 0 } else { hits(below) };
                    below += size;
                    served
                })
                .collect()
        } else {
            let mut sorted = pooled.clone();
            sorted.sort_unstable();
            pooled
                .iter()
                .map(|size| {
                    let index = sorted.iter().position(|s| s == size).unwrap();
                    hits(*size)
                        - if index == 0 {
                            0
                        } else {
                            hits(sorted[index - 1])
                        }
                })
                .collect()
        };
        assert_eq!(u64s(&pool["tier_hit_blocks"]), expected, "{mode}");
        assert_eq!(
            u64s(&pool["tier_hit_tokens"]),
            expected.iter().map(|b| b * 16).collect::<Vec<_>>()
        );
        // The instances' own tiers: the overall line's shares.
        let overall = &lines[lines.len() - 2];
        assert_eq!(pool["per_instance_tier_shares"], overall["tier_shares"]);
        assert_eq!(pool["per_instance_miss_share"], overall["miss_share"]);
        assert!(expected[0] > 0);
    }
    // Without --tiers the pool line has no tier fields.
    let plain = ok(run_in(
        None,
        [
            "query",
            facts.to_str().unwrap(),
            "-",
            "0.01",
            "--summary-only",
        ],
    ))
    .stdout;
    assert!(!plain.lines().last().unwrap().contains("tier"));
}
