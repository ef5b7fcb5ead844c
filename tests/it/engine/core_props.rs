//! The core against the independent naive oracle (`common/oracle.rs`) on random traces.
//!
//! Contract traces (random prefix trees chained with the prefix hash): every request's
//! projection equals one real LRU per capacity, and so do the totals. Non-contract traces
//! (repeated and arbitrary keys): projections never exceed the oracle, are equal at ∞, and the
//! core's recency order is the unlimited oracle's after every request.
//! TTL: a fixed TTL × every capacity is exact in one replay.

use crate::common::oracle::{OracleBank, OracleLru};
use crate::common::traces::prefix_tree_trace;
use litehit_core::facts::RequestFact;
use litehit_core::projector::{CapacityAxisAccumulator, project_blocks, project_infinite};
use litehit_core::workload::{KeyStyle, Workload, WorkloadConfig};
use litehit_core::{COMPACTION_POSITIONS_PER_LIVE_KEY, COMPACTION_SLACK_POSITIONS, LiteHit};
use proptest::prelude::*;

const CAPACITIES: [Option<usize>; 12] = [
    Some(0),
    Some(1),
    Some(2),
    Some(3),
    Some(4),
    Some(5),
    Some(7),
    Some(9),
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

/// The same prefix trees with dense ids instead of hashes (Mooncake-style: numbered in order
/// of first appearance, with random gaps), so the core keeps them in its dense-id array. Keys
/// first seen from a random request on may be out of that array's reach (negative or far
/// ids): every stored key then moves to the hashed table mid-trace, and the older chains go
/// on being hit there.
fn dense_id_trace() -> impl Strategy<Value = Vec<Vec<i64>>> {
    (
        prefix_tree_trace(),
        prop::collection::vec(prop_oneof![Just(0_i64), Just(1), 2..9_i64], 16),
        any::<prop::sample::Index>(),
        prop_oneof![Just(0_i64), Just(-1_000_000), Just(1 << 40)],
    )
        .prop_map(|(trace, gaps, switch_at, shift)| {
            let mut ids = std::collections::HashMap::new();
            let (mut next_id, mut assigned) = (0_i64, 0_usize);
            let switch_at = switch_at.index(trace.len() + 1);
            trace
                .iter()
                .enumerate()
                .map(|(index, keys)| {
                    keys.iter()
                        .map(|key| {
                            *ids.entry(*key).or_insert_with(|| {
                                next_id += 1 + gaps[assigned % gaps.len()];
                                assigned += 1;
                                if index >= switch_at {
                                    next_id + shift
                                } else {
                                    next_id
                                }
                            })
                        })
                        .collect()
                })
                .collect()
        })
}

/// Non-decreasing timestamps for 60 requests (repeats, small and large gaps) and a TTL
/// from 1 ns to about as long as the whole trace.
fn timestamps_and_ttl() -> impl Strategy<Value = (Vec<i64>, u64)> {
    (
        prop::collection::vec(prop_oneof![Just(0_i64), 1..5_i64, 5..40_i64], 60),
        prop_oneof![Just(1_u64), 2..10_u64, 10..60_u64],
    )
        .prop_map(|(gaps, ttl_ns)| {
            let timestamps = gaps
                .iter()
                .scan(1_000, |t, gap| {
                    *t += gap;
                    Some(*t)
                })
                .collect();
            (timestamps, ttl_ns)
        })
}

/// Arbitrary keys from a small alphabet: repeats inside a request, reorders, anything. Half
/// the traces spell the alphabet as random-looking 64-bit keys, so both key stores (the
/// dense-id array and the hashed table) see it.
fn non_contract_trace() -> impl Strategy<Value = Vec<Vec<i64>>> {
    (
        prop::collection::vec(
            prop_oneof![
                prop::collection::vec(0..8_i64, 0..9),
                // Longer than the core's new-key search window, over a larger alphabet.
                prop::collection::vec(0..40_i64, 0..40),
            ],
            1..60,
        ),
        any::<bool>(),
    )
        .prop_map(|(trace, hashed)| {
            let spell = |letter: i64| {
                if hashed {
                    letter.wrapping_add(1).wrapping_mul(-0x61c8_8646_80b5_83eb) // 0x9e37_79b9_7f4a_7c15 as i64
                } else {
                    letter
                }
            };
            trace
                .into_iter()
                .map(|keys| keys.into_iter().map(spell).collect())
                .collect()
        })
}

fn check_exact(trace: &[Vec<i64>], timestamps: &[i64], ttl_ns: u64) -> Result<(), TestCaseError> {
    let mut core = LiteHit::with_ttl_ns(ttl_ns);
    let oracle_ttl = (ttl_ns > 0).then(|| i64::try_from(ttl_ns).unwrap());
    let mut oracle = OracleBank::new(&CAPACITIES, oracle_ttl);
    let mut accumulator = CapacityAxisAccumulator::new();
    for (index, keys) in trace.iter().enumerate() {
        let now_ns = timestamps.get(index).copied().unwrap_or(0);
        let fact = core.process_request(keys, now_ns);
        prop_assert!(
            fact.is_canonical(),
            "request {index}: curve {:?} not canonical",
            fact.to_pairs()
        );
        let expected = oracle.process_request(keys, now_ns);
        for (capacity, expected_hits) in CAPACITIES.iter().zip(&expected) {
            prop_assert_eq!(
                project(&fact, *capacity),
                *expected_hits,
                "request {} capacity {:?}",
                index,
                capacity
            );
        }
        accumulator.add_fact(&fact);
    }
    for (capacity, total) in CAPACITIES.iter().zip(&oracle.total_hits) {
        let cumulative = capacity.map_or_else(
            || accumulator.infinite_hit_blocks(),
            |c| accumulator.hit_blocks_at(c as u64),
        );
        prop_assert_eq!(cumulative, *total, "cumulative at capacity {:?}", capacity);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 400, ..ProptestConfig::default() })]

    #[test]
    fn contract_traces_equal_the_oracle_per_request_and_cumulatively(trace in prefix_tree_trace()) {
        check_exact(&trace, &[], 0)?;
    }

    #[test]
    fn dense_id_traces_equal_the_oracle_including_a_move_to_the_hashed_table(trace in dense_id_trace()) {
        check_exact(&trace, &[], 0)?;
    }

    #[test]
    fn non_contract_traces_never_exceed_the_oracle_and_match_at_infinity(trace in non_contract_trace()) {
        let mut core = LiteHit::new();
        let mut oracle = OracleBank::new(&CAPACITIES, None);
        let mut unlimited = OracleLru::new(None, None);
        for (index, keys) in trace.iter().enumerate() {
            let fact = core.process_request(keys, 0);
            let expected = oracle.process_request(keys, 0);
            unlimited.process_request(keys, 0);
            prop_assert_eq!(core.recency_order(), unlimited.recency_order(), "after request {}", index);
            // Positions a repeat leaves behind must be freed, or every depth below them
            // grows (which "≤ oracle" alone would not notice).
            prop_assert_eq!(core.current_unique_blocks(), unlimited.len() as u64, "after request {}", index);
            for (capacity, expected_hits) in CAPACITIES.iter().zip(&expected) {
                let projected = project(&fact, *capacity);
                if capacity.is_none() {
                    prop_assert_eq!(projected, *expected_hits, "request {} at infinity", index);
                } else {
                    prop_assert!(projected <= *expected_hits, "request {index} capacity {capacity:?}: {projected} > {expected_hits}");
                }
            }
        }
    }

    #[test]
    fn fixed_ttl_times_every_capacity_is_exact(
        trace in prefix_tree_trace(),
        (timestamps, ttl_ns) in timestamps_and_ttl(),
    ) {
        check_exact(&trace, &timestamps, ttl_ns)?;
    }

    #[test]
    fn fixed_ttl_on_dense_ids_is_exact(
        trace in dense_id_trace(),
        (timestamps, ttl_ns) in timestamps_and_ttl(),
    ) {
        check_exact(&trace, &timestamps, ttl_ns)?;
    }
}

#[test]
fn long_non_contract_traces_keep_the_oracles_order_through_compactions() {
    // Repeats and reorders over a small alphabet, long enough that dead positions pile up
    // and get compacted many times; both key stores.
    for (seed, hashed) in [(1, false), (2, true), (3, true)] {
        let mut rng = litehit_core::workload::SplitMix64::new(seed);
        let mut core = LiteHit::new();
        let mut unlimited = OracleLru::new(None, None);
        let mut compactions_seen = 0;
        let mut last_positions = 0;
        for index in 0..3000 {
            let len = rng.index(48);
            let keys: Vec<i64> = (0..len)
                .map(|_| {
                    let letter = rng.index(60) as u64;
                    let key = if hashed {
                        litehit_core::workload::mix64(letter + 1)
                    } else {
                        letter
                    };
                    i64::from_ne_bytes(key.to_ne_bytes())
                })
                .collect();
            let fact = core.process_request(&keys, 0);
            let expected = unlimited.process_request(&keys, 0);
            assert_eq!(
                project(&fact, None),
                expected,
                "request {index} at infinity"
            );
            assert_eq!(
                core.recency_order(),
                unlimited.recency_order(),
                "request {index}"
            );
            assert_eq!(
                core.current_unique_blocks(),
                unlimited.len() as u64,
                "request {index}"
            );
            if core.position_space_len() < last_positions {
                compactions_seen += 1;
            }
            last_positions = core.position_space_len();
        }
        assert!(
            compactions_seen > 3,
            "seed {seed}: {compactions_seen} compactions"
        );
    }
}

#[test]
fn design_example_matches_the_oracle() {
    let trace: Vec<Vec<i64>> = vec![
        vec![1, 2, 3],
        vec![1, 2, 4],
        vec![1, 2, 3],
        vec![1, 5],
        vec![1, 5],
    ];
    check_exact(&trace, &[], 0).unwrap();
}

#[test]
fn generated_workload_equals_the_oracle_with_compactions() {
    // Long enough for many compactions (positions > 2 × live + 4096) and table growth.
    for key_style in [KeyStyle::Dense, KeyStyle::Hashed] {
        let config = WorkloadConfig {
            seed: 9,
            key_style,
            live_conversations: 60,
            max_request_blocks: 120,
            ..WorkloadConfig::default()
        };
        let capacities = [Some(0), Some(50), Some(400), Some(3_000), None];
        let mut oracle = OracleBank::new(&capacities, None);
        let mut core = LiteHit::new();
        let mut max_positions_seen = 0;
        for request in Workload::new(config).take(1_500) {
            let fact = core.process_request(&request.keys, request.timestamp_ns);
            let expected = oracle.process_request(&request.keys, request.timestamp_ns);
            for (capacity, hits) in capacities.iter().zip(expected) {
                assert_eq!(project(&fact, *capacity), hits, "capacity {capacity:?}");
            }
            max_positions_seen = max_positions_seen.max(core.position_space_len());
            assert!(
                core.position_space_len()
                    <= COMPACTION_POSITIONS_PER_LIVE_KEY * core.tracked_keys()
                        + COMPACTION_SLACK_POSITIONS
                        + 400
            );
        }
        assert!(
            max_positions_seen > COMPACTION_SLACK_POSITIONS,
            "trace too small to compact"
        );
    }
}

#[test]
fn ttl_workload_equals_the_oracle_and_compaction_drops_expired_keys() {
    let config = WorkloadConfig {
        seed: 3,
        live_conversations: 50,
        mean_interarrival_ns: 1_000,
        ..WorkloadConfig::default()
    };
    let ttl_ns = 40_000;
    let capacities = [Some(10), Some(200), None];
    let mut oracle = OracleBank::new(&capacities, Some(ttl_ns));
    let mut core = LiteHit::with_ttl_ns(ttl_ns.unsigned_abs());
    for request in Workload::new(config).take(3_000) {
        let fact = core.process_request(&request.keys, request.timestamp_ns);
        let expected = oracle.process_request(&request.keys, request.timestamp_ns);
        for (capacity, hits) in capacities.iter().zip(expected) {
            assert_eq!(project(&fact, *capacity), hits, "capacity {capacity:?}");
        }
    }
    assert!(core.ttl_expired_blocks() > 0);
    assert!(
        core.tracked_keys()
            < 3 * usize::try_from(core.current_unique_blocks()).unwrap()
                + COMPACTION_SLACK_POSITIONS,
        "expired keys are forgotten: tracked {} live {}",
        core.tracked_keys(),
        core.current_unique_blocks()
    );
}
