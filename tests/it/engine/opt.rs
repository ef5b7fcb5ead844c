//! The OPT core (`litehit_core::OptCore`) against independent naive Belady simulators
//! (`common/opt_oracle.rs`): per request at many capacities on random prefix trees, on traces
//! outside the prefix contract (a lower bound, exact at ∞), on the real traces; and the
//! invariants: no demand policy beats it (exhaustive search), OPT ≥ LRU, OPT(∞) = LRU(∞).

use crate::common::opt_oracle::{
    best_demand_policy_unit_hits, min_unit_hits, min_unit_total_hits, request_granular_hits,
};
use crate::common::shared_file;
use crate::common::traces::prefix_tree_trace;
use litehit_core::LiteHit;
use litehit_core::OptCore;
use litehit_core::apply_prefix_hash;
use litehit_core::facts::RequestFact;
use litehit_core::projector::{project_blocks, project_infinite};
use proptest::prelude::*;

const CAPACITIES: [Option<usize>; 13] = [
    Some(0),
    Some(1),
    Some(2),
    Some(3),
    Some(4),
    Some(5),
    Some(7),
    Some(9),
    Some(12),
    Some(16),
    Some(33),
    Some(100),
    None,
];

fn project(fact: &RequestFact, capacity: Option<usize>) -> u64 {
    capacity.map_or_else(
        || project_infinite(fact),
        |c| project_blocks(fact, c as u64),
    )
}

fn opt_facts(trace: &[Vec<i64>]) -> Vec<RequestFact> {
    let mut core = OptCore::new();
    trace
        .iter()
        .map(|keys| core.process_request(keys, 0))
        .collect()
}

fn lru_facts(trace: &[Vec<i64>]) -> Vec<RequestFact> {
    let mut core = LiteHit::new();
    trace
        .iter()
        .map(|keys| core.process_request(keys, 0))
        .collect()
}

/// Every request at every capacity equals both simulators.
fn check_exact(trace: &[Vec<i64>], capacities: &[Option<usize>]) -> Result<(), TestCaseError> {
    let facts = opt_facts(trace);
    for fact in &facts {
        prop_assert!(
            fact.is_canonical(),
            "curve {:?} not canonical",
            fact.to_pairs()
        );
    }
    for &capacity in capacities {
        let min = min_unit_hits(trace, capacity);
        let granular = request_granular_hits(trace, capacity);
        for (index, fact) in facts.iter().enumerate() {
            let projected = project(fact, capacity);
            prop_assert_eq!(
                projected,
                min[index],
                "request {} capacity {:?} vs MIN",
                index,
                capacity
            );
            prop_assert_eq!(
                projected,
                granular[index],
                "request {} capacity {:?} vs request-granular",
                index,
                capacity
            );
        }
    }
    Ok(())
}

/// A tiny prefix tree: up to 6 requests of up to 4 blocks, for the exhaustive search.
fn tiny_prefix_tree_trace() -> impl Strategy<Value = Vec<Vec<i64>>> {
    prop::collection::vec(
        (
            any::<prop::sample::Index>(),
            0..4_usize,
            prop::collection::vec(0..3_i64, 0..3),
        ),
        1..7,
    )
    .prop_map(|steps| {
        let mut raw_requests: Vec<Vec<i64>> = Vec::new();
        for (base, keep, extension) in steps {
            let mut raw = raw_requests.last().map_or_else(Vec::new, |_| {
                let base = &raw_requests[base.index(raw_requests.len())];
                base[..keep.min(base.len())].to_vec()
            });
            raw.extend(extension);
            raw.truncate(4);
            raw_requests.push(raw);
        }
        raw_requests
            .iter()
            .map(|raw| apply_prefix_hash(raw))
            .collect()
    })
}

/// Keys from a small alphabet in any order, repeats inside a request included.
fn non_contract_trace() -> impl Strategy<Value = Vec<Vec<i64>>> {
    prop::collection::vec(prop::collection::vec(0..8_i64, 0..9), 1..50)
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn prefix_trees_equal_both_simulators_per_request(trace in prefix_tree_trace()) {
        check_exact(&trace, &CAPACITIES)?;
    }

    #[test]
    fn dense_small_ids_equal_both_simulators_per_request(trace in prefix_tree_trace()) {
        // The same trees renumbered 0.. in first-appearance order: the dense-id key store.
        let mut ids = std::collections::HashMap::new();
        let dense: Vec<Vec<i64>> = trace
            .iter()
            .map(|keys| {
                keys.iter()
                    .map(|k| {
                        let next = i64::try_from(ids.len()).unwrap();
                        *ids.entry(*k).or_insert(next)
                    })
                    .collect()
            })
            .collect();
        check_exact(&dense, &CAPACITIES)?;
    }

    #[test]
    fn outside_the_contract_a_lower_bound_exact_at_infinity(trace in non_contract_trace()) {
        let facts = opt_facts(&trace);
        for &capacity in &CAPACITIES {
            let min = min_unit_hits(&trace, capacity);
            for (index, fact) in facts.iter().enumerate() {
                let projected = project(fact, capacity);
                if capacity.is_none() {
                    prop_assert_eq!(projected, min[index], "request {} at infinity", index);
                } else {
                    prop_assert!(projected <= min[index], "request {index} capacity {capacity:?}: {projected} > {}", min[index]);
                }
            }
        }
    }

    #[test]
    fn opt_is_at_least_lru_monotone_and_equal_at_infinity(trace in prefix_tree_trace()) {
        let (opt, lru) = (opt_facts(&trace), lru_facts(&trace));
        let total = |facts: &[RequestFact], c: Option<usize>| facts.iter().map(|f| project(f, c)).sum::<u64>();
        let mut previous = 0;
        for &capacity in &CAPACITIES {
            let opt_total = total(&opt, capacity);
            prop_assert!(opt_total >= total(&lru, capacity), "capacity {:?}", capacity);
            prop_assert!(opt_total >= previous, "not monotone at {:?}", capacity);
            previous = opt_total;
        }
        for (o, l) in opt.iter().zip(&lru) {
            prop_assert_eq!(project_infinite(o), project_infinite(l));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    /// The core's first-pass hits are MIN's (the tests above), and MIN's unit hits are the
    /// most any demand policy gets: the core's curves are an optimal policy's.
    #[test]
    fn no_demand_policy_hits_more_than_min_on_tiny_prefix_trees(trace in tiny_prefix_tree_trace()) {
        let facts = opt_facts(&trace);
        for capacity in 1..=5 {
            prop_assert_eq!(
                min_unit_total_hits(&trace, Some(capacity)),
                best_demand_policy_unit_hits(&trace, capacity),
                "capacity {}", capacity
            );
            let min = min_unit_hits(&trace, Some(capacity));
            for (index, fact) in facts.iter().enumerate() {
                prop_assert_eq!(project_blocks(fact, capacity as u64), min[index], "request {} capacity {}", index, capacity);
            }
        }
    }
}

/// Each line's `hash_ids` (Mooncake's chained dense ids).
fn mooncake_requests(relative: &str) -> Vec<Vec<i64>> {
    std::fs::read_to_string(shared_file(relative))
        .unwrap()
        .lines()
        .map(|line| {
            let row: serde_json::Value = serde_json::from_str(line).unwrap();
            row["hash_ids"]
                .as_array()
                .unwrap()
                .iter()
                .map(|id| id.as_i64().unwrap())
                .collect()
        })
        .collect()
}

fn check_real_trace(relative: &str) {
    let trace = mooncake_requests(relative);
    let facts = opt_facts(&trace);
    for capacity in [
        Some(1),
        Some(10),
        Some(100),
        Some(1_000),
        Some(10_000),
        None,
    ] {
        let min = min_unit_hits(&trace, capacity);
        for (index, fact) in facts.iter().enumerate() {
            assert_eq!(
                project(fact, capacity),
                min[index],
                "{relative} line {} at {capacity:?}",
                index + 1
            );
        }
    }
    for capacity in [Some(10), Some(300)] {
        let granular = request_granular_hits(&trace, capacity);
        for (index, fact) in facts.iter().enumerate() {
            assert_eq!(
                project(fact, capacity),
                granular[index],
                "{relative} line {} at {capacity:?}",
                index + 1
            );
        }
    }
}

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn conversation_trace_equals_the_simulators() {
    check_real_trace("traces/conversation_trace.jsonl");
}

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn synthetic_trace_equals_the_simulators() {
    check_real_trace("traces/synthetic_trace.jsonl");
}
