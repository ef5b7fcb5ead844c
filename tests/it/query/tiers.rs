//! Cache tiers (`projector::tiers`) against naive multi-tier simulators on random prefix-tree
//! traces and random tier sizes, per request and cumulatively.
//!
//! - Exclusive: an LRU hierarchy of real lists. A request's prefix is looked up across all
//!   tiers; each hit block is credited to the tier it sits in. Then every block is touched
//!   tail-first: taken out of its tier and put on top of tier 1; a tier over its size demotes
//!   its least recent block to the top of the next tier; the last tier drops it.
//! - Inclusive: independent LRUs of each size over the same accesses (the per-capacity oracle
//!   of `common/oracle.rs`); tier i (by size) serves its LRU's hits minus the next smaller's.
//!
//! Neither simulator imports `hitcore` or the projector.

use crate::common::traces::prefix_tree_trace;
use std::collections::VecDeque;

use crate::common::oracle::OracleLru;
use litehit_core::LiteHit;
use litehit_core::projector::tiers::{
    TierMode, accumulated_tier_hit_blocks, project_tiers, tier_bands,
};
use litehit_core::projector::{Capacity, CapacityAxisAccumulator};
use proptest::prelude::*;

/// An LRU hierarchy: `tiers[0]` is the top; each list runs from most to least recent.
pub(crate) struct ExclusiveHierarchy {
    /// `None` = unlimited.
    sizes: Vec<Option<usize>>,
    tiers: Vec<VecDeque<i64>>,
}

impl ExclusiveHierarchy {
    pub(crate) fn new(sizes: &[Option<usize>]) -> Self {
        Self {
            sizes: sizes.to_vec(),
            tiers: vec![VecDeque::new(); sizes.len()],
        }
    }

    fn tier_of(&self, key: i64) -> Option<usize> {
        self.tiers.iter().position(|tier| tier.contains(&key))
    }

    /// Hit blocks served by each tier, then the request is committed tail-first.
    pub(crate) fn process_request(&mut self, keys: &[i64]) -> Vec<u64> {
        let mut served = vec![0; self.tiers.len()];
        for &key in keys {
            match self.tier_of(key) {
                Some(tier) => served[tier] += 1,
                None => break,
            }
        }
        for &key in keys.iter().rev() {
            self.touch(key);
        }
        served
    }

    fn touch(&mut self, key: i64) {
        if let Some(tier) = self.tier_of(key) {
            self.tiers[tier].retain(|&k| k != key);
        }
        let mut carried = Some(key);
        for (tier, size) in self.tiers.iter_mut().zip(&self.sizes) {
            let Some(block) = carried.take() else { break };
            tier.push_front(block);
            if size.is_some_and(|size| tier.len() > size) {
                carried = tier.pop_back(); // demoted to the next tier
            }
        }
        // A block carried past the last tier is evicted.
    }
}

/// Inclusive tiers from independent LRUs: served by tier i = hits(Ci) − hits(next smaller).
pub(crate) fn inclusive_served(
    caches: &mut [OracleLru],
    sizes: &[Option<usize>],
    keys: &[i64],
) -> Vec<u64> {
    let hits: Vec<u64> = caches
        .iter_mut()
        .map(|cache| cache.process_request(keys, 0))
        .collect();
    // Sorted by size (unlimited last), ties by position.
    let mut order: Vec<usize> = (0..sizes.len()).collect();
    order.sort_by_key(|&i| (sizes[i].is_none(), sizes[i], i));
    let mut served = vec![0; sizes.len()];
    let mut below = 0;
    for i in order {
        served[i] = hits[i] - below;
        below = hits[i];
    }
    served
}

/// One to four tiers of 0 to 12 blocks, the last sometimes unlimited.
fn tier_sizes() -> impl Strategy<Value = Vec<Option<usize>>> {
    (prop::collection::vec(0..13_usize, 1..5), any::<bool>()).prop_map(|(sizes, unlimited)| {
        let last = sizes.len() - 1;
        sizes
            .into_iter()
            .enumerate()
            .map(|(i, size)| (!(unlimited && i == last)).then_some(size))
            .collect()
    })
}

fn capacities(sizes: &[Option<usize>]) -> Vec<Capacity> {
    sizes
        .iter()
        .map(|size| size.map_or(Capacity::Infinite, |s| Capacity::Blocks(s as u64)))
        .collect()
}

fn check(trace: &[Vec<i64>], sizes: &[Option<usize>], mode: TierMode) -> Result<(), TestCaseError> {
    let bands = tier_bands(&capacities(sizes), 1, mode);
    let mut core = LiteHit::new();
    let mut hierarchy = ExclusiveHierarchy::new(sizes);
    let mut caches: Vec<OracleLru> = sizes.iter().map(|&s| OracleLru::new(s, None)).collect();
    let mut accumulator = CapacityAxisAccumulator::new();
    let mut expected_totals = vec![0; sizes.len()];
    let mut projected = vec![0; sizes.len()];
    for (index, keys) in trace.iter().enumerate() {
        let fact = core.process_request(keys, 0);
        accumulator.add_fact(&fact);
        project_tiers(&fact, &bands, &mut projected);
        let expected = match mode {
            TierMode::Exclusive => hierarchy.process_request(keys),
            TierMode::Inclusive => inclusive_served(&mut caches, sizes, keys),
        };
        prop_assert_eq!(&projected, &expected, "request {} tiers {:?}", index, sizes);
        for (total, served) in expected_totals.iter_mut().zip(&expected) {
            *total += served;
        }
    }
    prop_assert_eq!(
        accumulated_tier_hit_blocks(&accumulator, &bands),
        expected_totals,
        "cumulative, tiers {:?}",
        sizes
    );
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn exclusive_tiers_equal_an_lru_hierarchy(trace in prefix_tree_trace(), sizes in tier_sizes()) {
        check(&trace, &sizes, TierMode::Exclusive)?;
    }

    #[test]
    fn inclusive_tiers_equal_independent_lrus(trace in prefix_tree_trace(), sizes in tier_sizes()) {
        check(&trace, &sizes, TierMode::Inclusive)?;
    }
}

#[test]
fn a_hit_in_a_lower_tier_is_promoted_to_the_top() {
    // Tiers of 1 and 2 blocks. A B C fill the hierarchy; A (in tier 2) is then hit by tier 2,
    // promoted, and hit again by tier 1.
    let mut hierarchy = ExclusiveHierarchy::new(&[Some(1), Some(2)]);
    for key in [1, 2, 3] {
        hierarchy.process_request(&[key]);
    }
    assert_eq!(hierarchy.process_request(&[1]), [0, 1]);
    assert_eq!(hierarchy.process_request(&[1]), [1, 0]);
    let bands = tier_bands(
        &[Capacity::Blocks(1), Capacity::Blocks(2)],
        1,
        TierMode::Exclusive,
    );
    let mut core = LiteHit::new();
    let mut served = vec![0; 2];
    for key in [1, 2, 3, 1] {
        let fact = core.process_request(&[key], 0);
        project_tiers(&fact, &bands, &mut served);
    }
    assert_eq!(served, [0, 1]);
}

/// `query --tiers` on a replayed generated trace: each summary's tier fields are the plain
/// query's totals at the cumulative (exclusive) or own (inclusive) capacities, differenced.
#[test]
fn query_tier_fields_are_differences_of_plain_query_totals() {
    use crate::common::cli_bin::{
        FACTS, generate, ok, parse_query_output, run_in, standard_trace, u64s,
    };
    use litehit_core::workload::WorkloadConfig;

    let dir = tempfile::tempdir().unwrap();
    let requests = generate(
        WorkloadConfig {
            instance_ids: vec!["x".into(), "y".into()],
            live_conversations: 50,
            ..WorkloadConfig::default()
        },
        1500,
    );
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(&trace, standard_trace(&requests)).unwrap();
    let out = dir.path().join("out");
    let (trace, out) = (trace.to_str().unwrap(), out.to_str().unwrap());
    ok(run_in(
        None,
        [
            "replay",
            trace,
            "--trace-block-size",
            "16",
            "--out",
            out,
            "--quiet",
        ],
    ));
    let facts = format!("{out}/{FACTS}");
    let query = |extra: &[&str]| {
        let mut args = vec!["query", &facts, "-", "--summary-only"];
        args.extend(extra);
        parse_query_output(&ok(run_in(None, &args)).stdout)
    };
    for (mode, cumulative) in [("exclusive", "3,43,443"), ("inclusive", "3,40,400")] {
        let blocks = format!("--capacity-blocks={cumulative}");
        let plain = query(&[&blocks]);
        let tiered = query(&[
            &blocks,
            "--tiers",
            "hbm=3b,dram=40b,ssd=400b",
            "--tier-mode",
            mode,
        ]);
        let mut summaries = plain.instance_summaries.clone();
        summaries.push(plain.overall.clone());
        let mut tiered_summaries = tiered.instance_summaries.clone();
        tiered_summaries.push(tiered.overall.clone());
        for (plain, tiered) in summaries.iter().zip(&tiered_summaries) {
            let totals = u64s(&plain["total_hit_blocks"]);
            let expected = vec![totals[0], totals[1] - totals[0], totals[2] - totals[1]];
            assert_eq!(
                u64s(&tiered["tier_hit_blocks"]),
                expected,
                "{mode}: {tiered}"
            );
            assert!(
                totals[2] > totals[0],
                "the tiers below the top serve something"
            );
            assert_eq!(tiered["tier_mode"], mode);
            assert_eq!(
                tiered["tier_names"],
                serde_json::json!(["hbm", "dram", "ssd"])
            );
            // Everything before the tier fields is the plain query's line.
            let plain_text = plain.to_string();
            assert_eq!(tiered["hit_rates"], plain["hit_rates"], "{plain_text}");
            let input = tiered["total_input_tokens"].as_u64().unwrap() as f64;
            let served: u64 = u64s(&tiered["tier_hit_tokens"]).iter().sum();
            let miss = tiered["miss_share"].as_f64().unwrap();
            assert!(
                (miss - (input - served as f64) / input).abs() < 1e-5,
                "{tiered}"
            );
        }
    }
}
