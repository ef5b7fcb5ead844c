//! `--engine vllm|sglang` (issue 31 §2): the facts follow the engines' last-token rule. Checked
//! against a naive engine written here: an LRU pool of a known number of blocks that hits a
//! request's longest cached prefix, but never its last token (⌊(input_len − 1) / block size⌋
//! blocks at most), then makes the prompt's blocks most recent (its head last).

use crate::common::traces::{TreeRequest, TreeWalk, tree_walk_requests};
use litehit_core::facts::RequestFact;
use litehit_core::projector::project_blocks;

use crate::common::cli_bin::{FACTS, get_row, ok, read_facts, replay_to, write_file};

const BLOCK_SIZE: u64 = 4;
const POOL_SIZES: [u64; 8] = [1, 2, 3, 5, 8, 13, 40, 1000];

/// The requests: random walks down a prefix tree, token counts often a whole number of
/// blocks (where the last-token rule bites) and often not.
const WALK: TreeWalk = TreeWalk {
    block_size: BLOCK_SIZE,
    max_depth: 12,
    new_branch_one_in: 4,
    partial_block_one_in: 3,
};

fn requests(seed: u64, count: usize) -> Vec<TreeRequest> {
    tree_walk_requests(WALK, seed, count)
}

/// The naive engine: hit blocks per request with a pool of `pool_blocks`.
fn simulate(requests: &[TreeRequest], pool_blocks: u64, last_token_rule: bool) -> Vec<u64> {
    let mut pool: Vec<i64> = Vec::new(); // least recent first
    requests
        .iter()
        .map(|request| {
            let mut hits = request
                .keys
                .iter()
                .take_while(|key| pool.contains(key))
                .count() as u64;
            if last_token_rule {
                hits = hits.min(request.input_len.saturating_sub(1) / BLOCK_SIZE);
            }
            for key in request.keys.iter().rev() {
                pool.retain(|cached| cached != key);
                pool.push(*key);
            }
            let over = pool
                .len()
                .saturating_sub(usize::try_from(pool_blocks).unwrap());
            pool.drain(..over);
            hits
        })
        .collect()
}

fn facts_of(dir: &std::path::Path, requests: &[TreeRequest], engine: &str) -> Vec<RequestFact> {
    let trace: String = requests
        .iter()
        .enumerate()
        .map(|(index, request)| {
            get_row(
                "a",
                &index.to_string(),
                i64::try_from(index).unwrap() + 1,
                &request.keys,
                request.input_len,
            )
        })
        .collect();
    let path = write_file(dir, "trace.jsonl", &trace);
    let out = dir.join(engine);
    let flags = ["--block-size", "4", "--engine", engine, "--quiet"];
    ok(replay_to(&path, &out, &flags));
    read_facts(&out.join(FACTS))
        .iter()
        .map(|row| {
            let pairs: Vec<[u64; 2]> = serde_json::from_str(&row.hit_curve).unwrap();
            RequestFact::from_pairs(&pairs)
        })
        .collect()
}

#[test]
fn vllm_and_sglang_facts_are_a_naive_engine_with_the_last_token_rule() {
    let mut capped_somewhere = false;
    for seed in 1..=6 {
        let dir = tempfile::tempdir().unwrap();
        let requests = requests(seed, 250);
        let ideal = facts_of(dir.path(), &requests, "ideal");
        for engine in ["vllm", "sglang"] {
            let facts = facts_of(dir.path(), &requests, engine);
            for pool_blocks in POOL_SIZES {
                let expected = simulate(&requests, pool_blocks, true);
                let got: Vec<u64> = facts
                    .iter()
                    .map(|f| project_blocks(f, pool_blocks))
                    .collect();
                assert_eq!(got, expected, "seed {seed}, {engine}, {pool_blocks} blocks");
                let without_rule: Vec<u64> = ideal
                    .iter()
                    .map(|f| project_blocks(f, pool_blocks))
                    .collect();
                assert_eq!(without_rule, simulate(&requests, pool_blocks, false));
                capped_somewhere |= without_rule != expected;
            }
        }
    }
    // The traces reach the rule: some fully cached prompt of whole blocks lost its last block.
    assert!(capped_somewhere);
}
