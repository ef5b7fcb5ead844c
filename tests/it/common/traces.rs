//! Random traces the property tests share.

use std::fmt::Write as _;

use litehit_core::apply_prefix_hash;
use proptest::prelude::*;

/// A random prefix tree: each request re-sends a prefix of an earlier request's raw blocks
/// and appends new raw blocks from a small alphabet (so branches fork and re-converge in raw
/// content), then is chained with the prefix hash.
pub fn prefix_tree_trace() -> impl Strategy<Value = Vec<Vec<i64>>> {
    prop::collection::vec(
        (
            any::<prop::sample::Index>(),
            0..12_usize,
            prop::collection::vec(0..4_i64, 0..7),
        ),
        1..60,
    )
    .prop_map(|steps| {
        let mut raw_requests: Vec<Vec<i64>> = Vec::new();
        for (base, keep, extension) in steps {
            let mut raw = if raw_requests.is_empty() {
                Vec::new()
            } else {
                let base = &raw_requests[base.index(raw_requests.len())];
                base[..keep.min(base.len())].to_vec()
            };
            raw.extend(extension);
            raw_requests.push(raw);
        }
        raw_requests
            .iter()
            .map(|raw| apply_prefix_hash(raw))
            .collect()
    })
}

/// How [`tree_walk_requests`] walks: depths `1..=max_depth`, an existing child reused unless
/// a draw of `new_branch_one_in` is 0, and a partial last block (`0..block_size` tokens more)
/// when a draw of `partial_block_one_in` is 0 (else a whole number of blocks, where an engine's
/// last-token rule bites).
#[derive(Debug, Clone, Copy)]
pub struct TreeWalk {
    pub block_size: u64,
    pub max_depth: u64,
    pub new_branch_one_in: u64,
    pub partial_block_one_in: u64,
}

/// A request of [`tree_walk_requests`]: its prefix-tree path (one key per block) and its
/// token count.
#[derive(Debug, Clone)]
pub struct TreeRequest {
    pub keys: Vec<i64>,
    pub input_len: u64,
}

/// `count` seeded random walks down one prefix tree (xorshift): reused paths, new branches.
pub fn tree_walk_requests(walk: TreeWalk, seed: u64, count: usize) -> Vec<TreeRequest> {
    let mut rng = super::rng::Rng::seeded(seed);
    let mut next = move |bound: u64| rng.below(bound);
    let mut children: Vec<Vec<i64>> = vec![Vec::new()];
    (0..count)
        .map(|_| {
            let depth = 1 + next(walk.max_depth);
            let mut node = 0_usize;
            let mut keys = Vec::new();
            for _ in 0..depth {
                let existing = children[node].len() as u64;
                let child = if existing > 0 && next(walk.new_branch_one_in) != 0 {
                    children[node][usize::try_from(next(existing)).unwrap()]
                } else {
                    children.push(Vec::new());
                    let id = i64::try_from(children.len() - 1).unwrap();
                    children[node].push(id);
                    id
                };
                keys.push(child);
                node = usize::try_from(child).unwrap();
            }
            let extra = if next(walk.partial_block_one_in) == 0 {
                next(walk.block_size)
            } else {
                0
            };
            TreeRequest {
                input_len: keys.len() as u64 * walk.block_size + extra,
                keys,
            }
        })
        .collect()
}

/// A seeded prefix-tree trace of `rows` standard `get` rows over lanes `a` and `b`: each
/// request re-sends a prefix of an earlier one and extends it (chained keys), `block_tokens`
/// per block and one token more, so every request has a tail no block holds.
pub fn two_lane_prefix_trace(
    seed: u64,
    rows: usize,
    block_tokens: u64,
) -> (String, Vec<(String, Vec<i64>)>) {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    let mut next = |n: usize| {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        usize::try_from((state >> 33) % n as u64).unwrap()
    };
    let (mut text, mut requests, mut fresh) = (String::new(), Vec::new(), 1_000_i64);
    let mut chains: Vec<Vec<i64>> = Vec::new();
    for index in 0..rows {
        let mut keys = if chains.is_empty() || next(5) == 0 {
            Vec::new()
        } else {
            let base = &chains[next(chains.len())];
            base[..next(base.len() + 1)].to_vec()
        };
        for _ in 0..next(5) {
            fresh += 1;
            keys.push(fresh);
        }
        chains.push(keys.clone());
        let instance = if next(3) == 0 { "b" } else { "a" };
        let list: Vec<String> = keys.iter().map(ToString::to_string).collect();
        writeln!(
            text,
            "{{\"type\":\"get\",\"instance_id\":\"{instance}\",\"trace_id\":\"r{index}\",\"timestamp_ns\":{},\"keys\":[{}],\"input_len\":{}}}",
            index + 1,
            list.join(","),
            usize::try_from(block_tokens).unwrap() * keys.len() + 1
        )
        .unwrap();
        requests.push((instance.to_owned(), keys));
    }
    (text, requests)
}
