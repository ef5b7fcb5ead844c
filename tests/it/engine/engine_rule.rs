//! `--engine vllm|sglang` (issue 31 §2): the facts follow the engines' last-token rule. Checked
//! against a naive engine written here: an LRU pool of a known number of blocks that hits a
//! request's longest cached prefix, but never its last token (⌊(input_len − 1) / block size⌋
//! blocks at most), then makes the prompt's blocks most recent (its head last).

use litehit_core::facts::RequestFact;
use litehit_core::projector::project_blocks;

use crate::common::cli_bin::{FACTS, get_row, ok, read_facts, replay_to, write_file};

const BLOCK_SIZE: u64 = 4;
const POOL_SIZES: [u64; 8] = [1, 2, 3, 5, 8, 13, 40, 1000];

/// A request: its prefix-tree path (one key per block) and its token count.
struct Request {
    keys: Vec<i64>,
    input_len: u64,
}

/// Random walks down a prefix tree (xorshift, seeded): reused paths, new branches, and token
/// counts that are often a whole number of blocks (where the rule bites) and often not.
fn requests(seed: u64, count: usize) -> Vec<Request> {
    let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut next = move |bound: u64| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state % bound
    };
    let mut children: Vec<Vec<i64>> = vec![Vec::new()];
    (0..count)
        .map(|_| {
            let depth = 1 + next(12);
            let mut node = 0_usize;
            let mut keys = Vec::new();
            for _ in 0..depth {
                let existing = children[node].len() as u64;
                let child = if existing > 0 && next(4) != 0 {
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
            let extra = match next(3) {
                0 => next(BLOCK_SIZE),
                _ => 0,
            };
            let input_len = keys.len() as u64 * BLOCK_SIZE + extra;
            Request { keys, input_len }
        })
        .collect()
}

/// The naive engine: hit blocks per request with a pool of `pool_blocks`.
fn simulate(requests: &[Request], pool_blocks: u64, last_token_rule: bool) -> Vec<u64> {
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

fn facts_of(dir: &std::path::Path, requests: &[Request], engine: &str) -> Vec<RequestFact> {
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
