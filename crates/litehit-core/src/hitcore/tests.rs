//! Core behaviour on hand-checked scenarios; the random-trace oracle lives in
//! `tests/core_props.rs`.

use super::*;
use crate::projector::{project_blocks, project_infinite};

const A: i64 = 101;
const B: i64 = 102;
const C: i64 = 103;
const D: i64 = 104;
const E: i64 = 105;

fn pairs(fact: &RequestFact) -> Vec<[u64; 2]> {
    fact.to_pairs()
}

/// (request keys, expected hit curve, expected LRU order MRU-first afterwards)
type Step<'a> = (&'a [i64], &'a [[u64; 2]], &'a [i64]);

#[test]
fn design_document_example_curves_and_lru_order() {
    let mut core = LiteHit::new();
    let steps: [Step<'_>; 5] = [
        (&[A, B, C], &[], &[A, B, C]),
        (&[A, B, D], &[[1, 2]], &[A, B, D, C]),
        (&[A, B, C], &[[1, 2], [4, 1]], &[A, B, C, D]),
        (&[A, E], &[[1, 1]], &[A, E, B, C, D]),
        (&[A, E], &[[1, 2]], &[A, E, B, C, D]),
    ];
    for (index, (keys, curve, order)) in steps.into_iter().enumerate() {
        let fact = core.process_request(keys, 0);
        assert_eq!(pairs(&fact), curve, "request {}", index + 1);
        assert_eq!(
            core.recency_order(),
            order,
            "LRU after request {}",
            index + 1
        );
    }
    assert_eq!(core.current_unique_blocks(), 5);
}

#[test]
fn reverse_commit_matters_forward_commit_would_lose_hits() {
    // Same trace, capacity 2: tail-first commit keeps the chain heads (7 hits in the design
    // example); check the head really is most recent after one request.
    let mut core = LiteHit::new();
    core.process_request(&[A, B, C], 0);
    assert_eq!(core.recency_order()[0], A);
}

#[test]
fn whole_chain_replay_is_one_segment() {
    let mut core = LiteHit::new();
    let chain: Vec<i64> = (1..=50).collect();
    core.process_request(&chain, 0);
    let fact = core.process_request(&chain, 0);
    assert_eq!(pairs(&fact), [[1, 50]]);
}

#[test]
fn queue_jump_splits_segment_and_segments_never_merge() {
    let mut core = LiteHit::new();
    core.process_request(&[1, 2, 3, 4], 0);
    core.process_request(&[1, 2, 9], 0); // sibling branch jumps the queue before 3
    let fact = core.process_request(&[1, 2, 3, 4], 0);
    assert_eq!(pairs(&fact), [[1, 2], [4, 2]]);
    assert!(fact.is_canonical());
}

#[test]
fn cold_key_truncates_but_everything_is_committed() {
    let mut core = LiteHit::new();
    core.process_request(&[1, 2, 3], 0);
    let fact = core.process_request(&[1, 7, 3], 0);
    assert_eq!(
        pairs(&fact),
        [[1, 1]],
        "7 is cold: 3 must not count even though it is resident"
    );
    assert_eq!(core.recency_order(), [1, 7, 3, 2]);
}

#[test]
fn duplicate_keys_are_pessimistic_and_commit_at_first_occurrence() {
    let mut core = LiteHit::new();
    core.process_request(&[1, 2], 0);
    let fact = core.process_request(&[1, 1, 2], 0);
    // Snapshot depths: 1 → 1, 1 → 1 (guard raises to 2), 2 → 2 (guard raises to 3).
    assert_eq!(pairs(&fact), [[1, 3]]);
    assert_eq!(core.recency_order(), [1, 2]);
    // A cold duplicate is inserted once.
    core.process_request(&[5, 6, 5], 0);
    assert_eq!(core.recency_order(), [5, 6, 1, 2]);
    assert_eq!(core.current_unique_blocks(), 4);
}

#[test]
fn empty_request_changes_nothing() {
    let mut core = LiteHit::new();
    core.process_request(&[1, 2], 0);
    let fact = core.process_request(&[], 0);
    assert!(fact.hit_curve.is_empty());
    assert_eq!(core.recency_order(), [1, 2]);
}

#[test]
fn compaction_bounds_positions_and_keeps_every_key() {
    let mut core = LiteHit::new();
    let keys: Vec<i64> = (0..3000).collect();
    for round in 0..20 {
        // Re-touch everything in shifting orders: lots of dead positions.
        let start = round * 37 % 3000;
        let mut request: Vec<i64> = keys[start..].to_vec();
        request.extend_from_slice(&keys[..start]);
        for chunk in request.chunks(100) {
            core.process_request(chunk, 0);
            assert!(
                core.position_space_len()
                    <= COMPACTION_POSITIONS_PER_LIVE_KEY * core.tracked_keys()
                        + COMPACTION_SLACK_POSITIONS
                        + 100
            );
        }
    }
    assert_eq!(core.current_unique_blocks(), 3000);
    assert!(
        core.position_space_len() < 20 * 3000,
        "compaction must have run"
    );
    // Every key is still resident: a request of the 3000 most recent keys fully hits at ∞.
    let order = core.recency_order();
    assert_eq!(order.len(), 3000);
    let fact = core.process_request(&order[..10], 0);
    assert_eq!(project_infinite(&fact), 10);
}

#[test]
fn ttl_strict_boundary_age_equal_to_ttl_is_a_miss() {
    let mut core = LiteHit::with_ttl_ns(100);
    core.process_request(&[1, 2], 1_000);
    assert_eq!(pairs(&core.process_request(&[1, 2], 1_099)), [[1, 2]]);
    // Last access at 1099; at 1199 the age is exactly the TTL: dead.
    let fact = core.process_request(&[1, 2], 1_199);
    assert!(fact.hit_curve.is_empty());
    assert_eq!(core.ttl_expired_blocks(), 2);
}

#[test]
fn ttl_expired_counter_and_unique_count() {
    let mut core = LiteHit::with_ttl_ns(10);
    core.process_request(&[1, 2, 3], 0);
    core.process_request(&[4], 5);
    core.advance_time(10);
    assert_eq!(core.current_unique_blocks(), 1, "1,2,3 expired at age 10");
    assert_eq!(core.ttl_expired_blocks(), 3);
    core.advance_time(15);
    assert_eq!(core.current_unique_blocks(), 0);
    assert_eq!(core.ttl_expired_blocks(), 4);
    // A revived key that expires again counts again.
    core.process_request(&[1], 20);
    core.advance_time(30);
    assert_eq!(core.ttl_expired_blocks(), 5);
}

#[test]
fn ttl_every_access_refreshes_even_misses() {
    let mut core = LiteHit::with_ttl_ns(10);
    core.process_request(&[1, 2], 0);
    core.process_request(&[1, 9], 8); // 9 is cold, still committed at 8; 1 refreshed
    let fact = core.process_request(&[1, 9], 15);
    assert_eq!(pairs(&fact), [[1, 2]]);
    assert_eq!(core.recency_order(), [1, 9]);
}

#[test]
fn ttl_out_of_order_timestamps_are_clamped() {
    let mut core = LiteHit::with_ttl_ns(10);
    core.process_request(&[1], 100);
    core.process_request(&[2], 50); // clamped to 100
    core.advance_time(109);
    assert_eq!(core.current_unique_blocks(), 2);
    core.advance_time(110);
    assert_eq!(core.current_unique_blocks(), 0);
}

#[test]
fn compaction_drops_expired_keys() {
    let mut core = LiteHit::with_ttl_ns(1_000);
    let old: Vec<i64> = (0..6000).collect();
    core.process_request(&old, 0);
    assert_eq!(core.tracked_keys(), 6000);
    // After expiry, live keys are few, positions many: compaction forgets the expired keys.
    core.process_request(&[-1], 5_000);
    assert_eq!(core.current_unique_blocks(), 1);
    assert_eq!(core.tracked_keys(), 1);
    assert_eq!(core.position_space_len(), 1);
    assert_eq!(core.ttl_expired_blocks(), 6000);
    assert!(core.process_request(&[0], 5_001).hit_curve.is_empty());
    assert_eq!(pairs(&core.process_request(&[-1], 5_002)), [[2, 1]]);
}

#[test]
fn reset_forgets_everything_but_ttl() {
    let mut core = LiteHit::with_ttl_ns(7);
    core.process_request(&[1, 2], 0);
    core.advance_time(100);
    core.reset();
    assert_eq!(core.current_unique_blocks(), 0);
    assert_eq!(core.ttl_expired_blocks(), 0);
    assert_eq!(core.ttl_ns(), 7);
    assert!(
        core.process_request(&[1, 2], 0).hit_curve.is_empty(),
        "timestamp clamp reset too"
    );
    assert_eq!(pairs(&core.process_request(&[1, 2], 6)), [[1, 2]]);
}

#[test]
fn memory_usage_grows_with_keys() {
    // Dense ids (4 bytes per id) and hashed keys (12-byte entries + a 4-byte index slot at a
    // load of 0.40-0.80); both also count the position bitset and the per-request scratch (one
    // `usize` per block of the largest request, here one 100 000-block request, and one more
    // per block phase 1 looked up, which stops at the first new key: ~8 bytes).
    let dense: Vec<i64> = (0..100_000).collect();
    let hashed = crate::preprocess::apply_prefix_hash(&dense);
    for (keys, bytes_per_key) in [(dense, 12.0..17.0), (hashed, 24.0..32.0)] {
        let mut core = LiteHit::new();
        let empty = core.memory_usage_bytes();
        core.process_request(&keys, 0);
        let bytes = core.memory_usage_bytes();
        assert!(bytes > empty);
        let per_key = bytes as f64 / 100_000.0;
        assert!(bytes_per_key.contains(&per_key), "{per_key} bytes per key");
    }
}

#[test]
fn projections_of_design_example() {
    let mut core = LiteHit::new();
    let trace: [(&[i64], u64); 5] = [
        (&[A, B, C], 13),
        (&[A, B, D], 12),
        (&[A, B, C], 13),
        (&[A, E], 8),
        (&[A, E], 8),
    ];
    let facts: Vec<RequestFact> = trace
        .iter()
        .map(|(k, _)| core.process_request(k, 0))
        .collect();
    let hits = |capacity_blocks: Option<u64>| -> Vec<u64> {
        facts
            .iter()
            .map(|f| capacity_blocks.map_or_else(|| project_infinite(f), |c| project_blocks(f, c)))
            .collect()
    };
    assert_eq!(hits(Some(2)), [0, 2, 2, 1, 2]);
    assert_eq!(hits(Some(3)), [0, 2, 2, 1, 2]);
    assert_eq!(hits(None), [0, 2, 3, 1, 2]);
}

#[test]
fn reset_core_replays_exactly_like_a_fresh_one() {
    let trace: Vec<Vec<i64>> = (0..400_i64)
        .map(|i| (0..(i % 37)).map(|j| (i % 11) * 1000 + j).collect())
        .collect();
    let mut reused = LiteHit::new();
    for keys in &trace {
        reused.process_request(keys, 0);
    }
    reused.reset();
    let mut fresh = LiteHit::new();
    for keys in &trace {
        assert_eq!(
            reused.process_request(keys, 0),
            fresh.process_request(keys, 0)
        );
    }
    assert_eq!(reused.recency_order(), fresh.recency_order());
}

#[test]
fn prefetch_is_only_a_hint() {
    // Both key stores (hashed keys use the index), hints that are right, wrong, empty or
    // stale.
    for key_style in [
        crate::workload::KeyStyle::Hashed,
        crate::workload::KeyStyle::Dense,
    ] {
        let mut workload = crate::workload::Workload::new(crate::workload::WorkloadConfig {
            seed: 9,
            key_style,
            ..crate::workload::WorkloadConfig::default()
        });
        let mut request = crate::workload::SyntheticRequest::default();
        let trace: Vec<Vec<i64>> = (0..3000)
            .map(|_| {
                workload.fill_next(&mut request);
                request.keys.clone()
            })
            .collect();
        let mut right = LiteHit::new();
        let mut wrong = LiteHit::new();
        let mut plain = LiteHit::new();
        for (index, keys) in trace.iter().enumerate() {
            if let Some(next) = trace.get(index + 1) {
                right.prefetch(next);
            }
            wrong.prefetch(&trace[index / 2]);
            wrong.prefetch(&[]);
            wrong.prefetch(&[-5, i64::MAX, 1 << 40]);
            let expected = plain.process_request(keys, 0);
            assert_eq!(right.process_request(keys, 0), expected, "request {index}");
            assert_eq!(wrong.process_request(keys, 0), expected, "request {index}");
        }
        assert_eq!(right.recency_order(), plain.recency_order());
        assert_eq!(
            plain.uses_dense_id_table(),
            key_style == crate::workload::KeyStyle::Dense
        );
    }
}

#[test]
fn dense_ids_use_the_array_until_a_key_does_not_fit() {
    for misfit in [-1, 1 << 40] {
        let mut core = LiteHit::new();
        let mut twin = LiteHit::new();
        // The twin holds the same keys shifted far away, so it uses the hashed table from
        // the start; both must agree on everything.
        let far = |key: i64| key + (1 << 50);
        let requests: Vec<Vec<i64>> = (0..200)
            .map(|i| (0..(i % 23)).map(|j| (i % 7) * 100 + j).collect())
            .collect();
        for keys in &requests {
            let twin_keys: Vec<i64> = keys.iter().map(|&k| far(k)).collect();
            assert_eq!(
                core.process_request(keys, 0),
                twin.process_request(&twin_keys, 0)
            );
        }
        assert!(core.uses_dense_id_table());
        assert!(!twin.uses_dense_id_table());
        let order_before: Vec<i64> = core.recency_order();
        let twin_order: Vec<i64> = twin
            .recency_order()
            .into_iter()
            .map(|k| k - (1 << 50))
            .collect();
        assert_eq!(order_before, twin_order);

        // One key that does not fit moves every key to the hashed table, keeping each
        // position: the next request still hits its whole chain.
        let fact = core.process_request(&[0, 1, 2, misfit], 0);
        assert!(!core.uses_dense_id_table(), "misfit {misfit}");
        let twin_fact = twin.process_request(&[far(0), far(1), far(2), misfit], 0);
        assert_eq!(fact, twin_fact);
        let order_after = core.recency_order();
        assert_eq!(order_after[..4], [0, 1, 2, misfit]);
        let untouched: Vec<i64> = order_before
            .into_iter()
            .filter(|k| ![0, 1, 2].contains(k))
            .collect();
        assert_eq!(order_after[4..], untouched[..]);
        for keys in &requests {
            let twin_keys: Vec<i64> = keys.iter().map(|&k| far(k)).collect();
            assert_eq!(
                core.process_request(keys, 0),
                twin.process_request(&twin_keys, 0)
            );
        }
        assert_eq!(core.current_unique_blocks(), twin.current_unique_blocks());
    }
}

/// Key shapes that a home function of the hashed index can cluster on (issue 16, point 4).
#[derive(Debug, Clone, Copy)]
enum KeyShape {
    /// Random-looking 64-bit keys (about half negative: the core leaves the dense-id array).
    Hashed,
    /// `i × stride + rand(stride)`: small structured ids, as in the reproducer.
    Arithmetic { stride: i64 },
    /// `i << shift`: ids in the high half, whose fold is `i`.
    Shifted { shift: u32 },
    /// Runs of `run` consecutive ids, the runs 2^20 apart.
    Clustered { run: i64 },
    /// Globally dense ids handed out in runs of 1–19, one lane's share (every fourth run).
    LaneShare,
}

/// Index probes a replay may cost: this many per block access ...
const PROBES_PER_ACCESS: u64 = 16;
/// ... plus this many search windows' budgets (each home function switch may spend one
/// before it is made, and one more in a rebuild it abandons).
const PROBE_BUDGET_WINDOWS: u64 = 8;

/// Makes the keys of shapes, continuing a shared counter so that phases do not repeat keys.
struct ShapedKeys {
    rng: crate::workload::SplitMix64,
    next: i64,
}

impl ShapedKeys {
    fn take(&mut self, shape: KeyShape, count: usize) -> Vec<i64> {
        let mut keys = Vec::with_capacity(count);
        while keys.len() < count {
            let i = self.next;
            self.next += 1;
            match shape {
                KeyShape::Hashed => {
                    keys.push(i64::from_ne_bytes(self.rng.next_u64().to_ne_bytes()));
                }
                KeyShape::Arithmetic { stride } => {
                    let offset = i64::from(self.rng.range_u32(0, 31)) % stride;
                    keys.push(i * stride + offset);
                }
                KeyShape::Shifted { shift } => keys.push(i << shift),
                KeyShape::Clustered { run } => keys.push(((i / run) << 20) + i % run),
                KeyShape::LaneShare => {
                    let run = i64::from(self.rng.range_u32(1, 19));
                    if self.rng.index(4) == 0 {
                        keys.extend((i..i + run).take(count - keys.len()));
                    }
                    self.next += run - 1;
                }
            }
        }
        keys
    }
}

/// Replays `phases` (each: its shape's keys cut into requests of `request_len`, then one
/// request re-reading them all), checks every request's infinite-capacity hits and the unique
/// count against a set of the keys seen, and the index probes so far against the bound at the
/// end of every phase; returns the probes. The bound is on the work so far, not on each
/// phase's own: a phase of one new key may pay for moving every earlier key to another index
/// (dense ids to the hashed table), work those keys' own accesses already paid for.
fn replay_shapes(phases: &[(KeyShape, usize, usize)]) -> u64 {
    let mut core = LiteHit::new();
    let mut shaped = ShapedKeys {
        rng: crate::workload::SplitMix64::new(16),
        next: 0,
    };
    let mut seen = std::collections::HashSet::new();
    let budget = PROBE_BUDGET_WINDOWS * super::key_table::SEARCH_WINDOW_PROBE_BUDGET;
    let mut accesses = 0_u64;
    for (phase, &(shape, count, request_len)) in phases.iter().enumerate() {
        let keys = shaped.take(shape, count);
        let probes_before = core.key_index_probes();
        let mut phase_accesses = 0_u64;
        for request in keys.chunks(request_len.max(1)).chain([&keys[..]]) {
            let fact = core.process_request(request, 0);
            let expected_hits = request.iter().take_while(|k| seen.contains(*k)).count();
            assert_eq!(
                project_infinite(&fact),
                expected_hits as u64,
                "phase {phase} ({shape:?})"
            );
            seen.extend(request.iter().copied());
            assert_eq!(core.current_unique_blocks(), seen.len() as u64);
            phase_accesses += request.len() as u64;
        }
        let phase_probes = core.key_index_probes() - probes_before;
        accesses += phase_accesses;
        let probes_so_far = core.key_index_probes();
        assert!(
            probes_so_far <= PROBES_PER_ACCESS * accesses + budget,
            "after phase {phase} ({shape:?}, {count} keys in requests of {request_len}; \
             {phase_probes} probes for its {phase_accesses} accesses): {probes_so_far} index \
             probes for {accesses} accesses"
        );
    }
    let probes = core.key_index_probes();
    assert!(
        probes <= PROBES_PER_ACCESS * accesses + budget,
        "{probes} index probes for {accesses} accesses"
    );
    probes
}

#[test]
fn structured_ids_after_hashed_keys_keep_index_probes_linear() {
    for shape in [
        KeyShape::Arithmetic { stride: 3 },
        KeyShape::Shifted { shift: 32 },
        KeyShape::Clustered { run: 300 },
        KeyShape::LaneShare,
    ] {
        let probes = replay_shapes(&[(KeyShape::Hashed, 41, 41), (shape, 60_000, 60_000)]);
        assert!(probes > 60_000, "{shape:?}: the ids went through the index");
    }
}

#[test]
fn hashed_keys_after_dense_ids_rebuild_in_bounded_work() {
    // Dense ids fill the array, one negative key moves them to the hashed table (identity-
    // like fold homes), then hash-like keys grow it: the growth's rebuild picks the order-
    // preserving homes, where every dense id falls into the first slots.
    replay_shapes(&[
        (KeyShape::Arithmetic { stride: 1 }, 60_000, 400),
        (KeyShape::Hashed, 80_000, 500),
    ]);
}

fn key_shape() -> impl proptest::strategy::Strategy<Value = KeyShape> {
    use proptest::prelude::*;
    prop_oneof![
        Just(KeyShape::Hashed),
        (1_i64..9).prop_map(|stride| KeyShape::Arithmetic { stride }),
        (32_u32..41).prop_map(|shift| KeyShape::Shifted { shift }),
        (1_i64..2000).prop_map(|run| KeyShape::Clustered { run }),
        Just(KeyShape::LaneShare),
    ]
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(24))]
    /// Any sequence of key shapes, in requests of any size, costs a bounded number of index
    /// probes per block access, and keeps the unlimited cache's hits and unique count.
    #[test]
    fn index_probes_stay_linear_for_any_sequence_of_key_shapes(
        phases in proptest::collection::vec(
            (
                key_shape(),
                1_usize..25_000,
                proptest::prop_oneof![
                    proptest::strategy::Just(1_usize),
                    2_usize..300,
                    proptest::strategy::Just(usize::MAX),
                ],
            ),
            1..5,
        )
    ) {
        replay_shapes(&phases);
    }
}

#[test]
fn a_memory_horizon_forgets_keys_deeper_than_it() {
    // Key 1 returns at depth 3: a hit from capacity 3 on without a horizon, cold with a
    // horizon of 2 (capacities 1 and 2 miss it either way).
    let trace: [&[i64]; 4] = [&[1], &[2], &[3], &[1]];
    let mut exact = LiteHit::new();
    let mut bounded = LiteHit::new().with_memory_horizon_blocks(Some(2));
    assert_eq!(bounded.memory_horizon_blocks(), Some(2));
    let (mut exact_fact, mut bounded_fact) = (RequestFact::default(), RequestFact::default());
    for (time, keys) in (1..).zip(trace) {
        exact_fact = exact.process_request(keys, time);
        bounded_fact = bounded.process_request(keys, time);
    }
    assert_eq!(pairs(&exact_fact), [[3, 1]]);
    assert!(bounded_fact.hit_curve.is_empty());
    for capacity in 0..=2 {
        assert_eq!(
            project_blocks(&bounded_fact, capacity),
            project_blocks(&exact_fact, capacity)
        );
    }
    assert_eq!(bounded.current_unique_blocks(), 2);
    assert_eq!(exact.current_unique_blocks(), 3);
}

#[test]
fn a_memory_horizon_bounds_the_keys_held() {
    let horizon = 1_000_usize;
    let mut core = LiteHit::new().with_memory_horizon_blocks(Some(horizon as u64));
    let bound = horizon + horizon / HORIZON_SLACK_DIVISOR + COMPACTION_SLACK_POSITIONS;
    for request in 0..400_i64 {
        let keys: Vec<i64> = (0..100).map(|i| request * 100 + i).collect();
        core.process_request(&keys, request + 1);
        assert!(core.tracked_keys() <= bound, "{} keys", core.tracked_keys());
    }
    assert!(core.tracked_keys() <= bound);
    // 40 000 unique keys went through; a re-access of the first is cold now.
    let fact = core.process_request(&[0], 500);
    assert!(fact.hit_curve.is_empty());
}
