//! `demo --pool`: the generated fleet with the shared pool lane, so a newcomer sees the pool
//! without a trace. The headless pool entry is checked against the naive LRU oracle over the
//! same seeded workload: one cache over every instance's requests at N × each capacity.

use crate::common::cli_bin::{generate, ok, run_in};
use crate::common::oracle::OracleBank;
use litehit_core::projector::Capacity;
use litehit_core::workload::WorkloadConfig;
use serde_json::Value;

const INSTANCES: usize = 3;
const REQUESTS: usize = 800;
/// The demo's block: 16 tokens of the default KV bytes per token.
const BLOCK_BYTES: u64 = 2_097_152;

#[test]
fn demo_pool_shows_one_cache_of_every_instance_at_n_times_c() {
    let capacities_gb = [0.05_f64, 0.2];
    let run = ok(run_in(
        None,
        [
            "demo",
            "--headless",
            "--requests",
            &REQUESTS.to_string(),
            "--rate",
            "20000",
            "--instances",
            &INSTANCES.to_string(),
            "--capacity-gb",
            "0.05,0.2",
            "--pool",
        ],
    ));
    assert!(
        run.stderr.contains("with the shared pool lane pool"),
        "{}",
        run.stderr
    );
    let last: Value = serde_json::from_str(run.stdout.lines().last().unwrap()).unwrap();
    let lanes = last["instances"].as_array().unwrap();
    let pool = lanes.iter().find(|lane| lane["kind"] == "pool").unwrap();
    assert_eq!(pool["instance_id"], "pool");
    assert_eq!(pool["shared_by"], INSTANCES as u64);
    assert_eq!(lanes.len(), INSTANCES + 1);

    let requests = generate(
        WorkloadConfig {
            seed: 42,
            instance_ids: (0..INSTANCES).map(|i| format!("instance-{i}")).collect(),
            ..WorkloadConfig::default()
        },
        REQUESTS,
    );
    let pooled: Vec<Option<usize>> = capacities_gb
        .iter()
        .map(|gb| {
            let per_instance = Capacity::from_gb(*gb).blocks(BLOCK_BYTES).unwrap();
            Some(usize::try_from(per_instance).unwrap() * INSTANCES)
        })
        .collect();
    let mut oracle = OracleBank::new(&pooled, None);
    let mut input_tokens = 0;
    for request in &requests {
        oracle.process_request(&request.keys, request.timestamp_ns);
        input_tokens += request.input_token_len;
    }
    let expected: Vec<u64> = oracle.total_hits.iter().map(|hits| hits * 16).collect();
    let shown: Vec<u64> = pool["hit_tokens"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect();
    assert_eq!(pool["requests"], REQUESTS as u64);
    assert_eq!(pool["input_tokens"], input_tokens);
    assert_eq!(shown, expected);
    let capacity_blocks: Vec<u64> = pool["slot_results"]
        .as_array()
        .unwrap()
        .iter()
        .map(|slot| slot["capacity_blocks"].as_u64().unwrap())
        .collect();
    assert_eq!(
        capacity_blocks,
        pooled.iter().map(|c| c.unwrap() as u64).collect::<Vec<_>>()
    );

    // Without --pool: no pool lane.
    let plain = ok(run_in(
        None,
        ["demo", "--headless", "--requests", "50", "--rate", "20000"],
    ));
    assert!(!plain.stdout.contains("\"kind\":\"pool\""));
}
