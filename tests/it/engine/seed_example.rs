//! Data-driven scenarios (`tests/fixtures/scenarios/*.json`); the first is the design
//! document's worked example. Each scenario gives the requests, every expected hit curve, the
//! LRU order after each request, and projections at byte capacities (null = infinite).

use std::collections::HashMap;
use std::path::Path;

use crate::common::oracle::OracleBank;
use litehit_core::LiteHit;
use litehit_core::projector::{
    CapacityAxisAccumulator, capacity_blocks_for_bytes, project_bytes, project_infinite,
};
use serde::Deserialize;

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Scenario {
    #[allow(dead_code, reason = "documentation inside the data file")]
    description: String,
    block_size_tokens: u64,
    block_bytes: u64,
    requests: Vec<ScenarioRequest>,
    projections: Vec<ScenarioProjection>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioRequest {
    keys: Vec<String>,
    input_token_len: u64,
    hit_curve: Vec<[u64; 2]>,
    lru_after: Vec<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ScenarioProjection {
    capacity_bytes: Option<u64>,
    hit_blocks: Vec<u64>,
    total_hit_blocks: u64,
    total_hit_tokens: u64,
    total_input_tokens: u64,
}

fn run_scenario(path: &Path) {
    let scenario: Scenario = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut ids: HashMap<String, i64> = HashMap::new();
    let mut id_of = |name: &str| {
        let next = i64::try_from(ids.len()).unwrap() + 1;
        *ids.entry(name.to_owned()).or_insert(next)
    };
    let mut core = LiteHit::new();
    let mut facts = Vec::new();
    let mut accumulator = CapacityAxisAccumulator::new();
    let mut oracle_capacities: Vec<Option<usize>> = scenario
        .projections
        .iter()
        .map(|p| {
            p.capacity_bytes.map(|b| {
                usize::try_from(capacity_blocks_for_bytes(b, scenario.block_bytes)).unwrap()
            })
        })
        .collect();
    oracle_capacities.dedup();
    let mut oracle = OracleBank::new(&oracle_capacities, None);
    for (index, request) in scenario.requests.iter().enumerate() {
        let keys: Vec<i64> = request.keys.iter().map(|k| id_of(k)).collect();
        let fact = core.process_request(&keys, 0);
        oracle.process_request(&keys, 0);
        assert_eq!(
            fact.to_pairs(),
            request.hit_curve,
            "{}: request {}",
            path.display(),
            index + 1
        );
        let lru: Vec<i64> = request.lru_after.iter().map(|k| id_of(k)).collect();
        assert_eq!(
            core.recency_order(),
            lru,
            "{}: LRU after request {}",
            path.display(),
            index + 1
        );
        accumulator.add_fact(&fact);
        facts.push((fact, request.input_token_len));
    }
    for projection in &scenario.projections {
        let per_request: Vec<u64> = facts
            .iter()
            .map(|(fact, _)| {
                projection.capacity_bytes.map_or_else(
                    || project_infinite(fact),
                    |bytes| project_bytes(fact, bytes, scenario.block_bytes),
                )
            })
            .collect();
        assert_eq!(
            per_request, projection.hit_blocks,
            "capacity {:?}",
            projection.capacity_bytes
        );
        let total: u64 = per_request.iter().sum();
        assert_eq!(total, projection.total_hit_blocks);
        assert_eq!(
            total * scenario.block_size_tokens,
            projection.total_hit_tokens
        );
        let input_tokens: u64 = facts.iter().map(|(_, len)| len).sum();
        assert_eq!(input_tokens, projection.total_input_tokens);
        let cumulative = projection.capacity_bytes.map_or_else(
            || accumulator.infinite_hit_blocks(),
            |bytes| {
                accumulator.hit_blocks_at(capacity_blocks_for_bytes(bytes, scenario.block_bytes))
            },
        );
        assert_eq!(
            cumulative, total,
            "accumulator at {:?}",
            projection.capacity_bytes
        );
    }
    // The independent oracle agrees on the totals too.
    for (capacity, total) in oracle.capacities.iter().zip(&oracle.total_hits) {
        let expected = scenario
            .projections
            .iter()
            .find(|p| {
                p.capacity_bytes.map(|b| {
                    usize::try_from(capacity_blocks_for_bytes(b, scenario.block_bytes)).unwrap()
                }) == *capacity
            })
            .unwrap();
        assert_eq!(*total, expected.total_hit_blocks);
    }
}

#[test]
fn every_scenario_file() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/scenarios");
    let mut count = 0;
    for entry in std::fs::read_dir(dir).unwrap().filter(|e| {
        e.as_ref()
            .unwrap()
            .path()
            .extension()
            .is_some_and(|x| x == "json")
    }) {
        run_scenario(&entry.unwrap().path());
        count += 1;
    }
    assert!(count >= 1);
}

#[test]
fn design_example_rates_are_28_and_32_of_54() {
    // 28 / 54 = 51.85 %, 32 / 54 = 59.26 % (the design document's table).
    assert_eq!(format!("{:.2}", 28.0 / 54.0 * 100.0), "51.85");
    let mut core = LiteHit::new();
    let trace: [&[i64]; 5] = [&[1, 2, 3], &[1, 2, 4], &[1, 2, 3], &[1, 5], &[1, 5]];
    let hits: u64 = trace
        .iter()
        .map(|k| project_bytes(&core.process_request(k, 0), 3072, 1024))
        .sum();
    assert_eq!(hits * 4, 28);
}
