//! Decode blocks (`output_keys`, written by `--format openai --cache-output`; issue 31 §2):
//! after a request is served, the full blocks of its prompt + output (without the last output
//! token) are in the cache, chained on the prompt, while its hits count its prompt only.
//! Checked on generated multi-turn conversations against a naive engine written here (one
//! LRU pool per capacity: the prompt's leading cached blocks hit, then the request's whole
//! chain, prompt then output, is made most recent, its head last), and OPT against the naive
//! Belady simulator on the same chains.

use std::collections::HashMap;
use std::fmt::Write as _;

use litehit_core::facts::RequestFact;
use litehit_core::projector::project_blocks;

use crate::common::cli_bin::{FACTS, ok, read_facts, replay_to, write_file};
use crate::common::opt_oracle::min_unit_hits;

/// Tokens per trace block.
const TRACE_BLOCK: usize = 4;
const POOL_SIZES: [u64; 9] = [1, 2, 3, 4, 6, 9, 15, 40, 1000];

/// One request of a conversation: its prompt and its output, as tokens.
#[derive(Debug, Clone)]
struct Turn {
    prompt: Vec<u32>,
    output: Vec<u32>,
}

/// `count` requests of interleaved conversations (xorshift, seeded): a next turn re-sends
/// its conversation's last prompt and output (usually as generated, sometimes re-rendered:
/// the output's last tokens changed, or the output left out), then a new user message; some
/// requests start a new conversation, some share a system prompt, some have no output.
fn conversations(seed: u64, count: usize) -> Vec<Turn> {
    let mut rng = crate::common::rng::Rng::seeded(seed);
    let mut next = move |bound: u64| u32::try_from(rng.below(bound)).unwrap();
    let mut open: Vec<Vec<u32>> = Vec::new(); // each conversation's history so far
    let mut turns = Vec::new();
    let mut fresh = 100_u32;
    let words = |n: u32, fresh: &mut u32| -> Vec<u32> {
        (0..n)
            .map(|_| {
                *fresh += 1;
                *fresh
            })
            .collect()
    };
    for _ in 0..count {
        let mut prompt = if open.is_empty() || next(4) == 0 {
            // A new conversation: a shared system prompt (tokens 1..=6) or none.
            let system: Vec<u32> = if next(2) == 0 {
                (1..=6).collect()
            } else {
                Vec::new()
            };
            open.push(system);
            open.last().unwrap().clone()
        } else {
            open[usize::try_from(next(u64::try_from(open.len()).unwrap())).unwrap()].clone()
        };
        let index = open.iter().position(|history| *history == prompt).unwrap();
        prompt.extend(words(1 + next(9), &mut fresh));
        let output = if next(5) == 0 {
            Vec::new()
        } else {
            words(next(11), &mut fresh)
        };
        let mut history = prompt.clone();
        match next(6) {
            0 => {} // the template drops the output
            1 => {
                // re-rendered: the output's last token differs
                history.extend(&output);
                if let Some(last) = history.last_mut() {
                    *last += 50_000;
                }
            }
            _ => history.extend(&output),
        }
        open[index] = history;
        turns.push(Turn { prompt, output });
    }
    turns
}

/// Keys of `tokens`' full blocks of `block` tokens: each prefix's own id (chained by
/// construction: two sequences share key `i` exactly when they share the first `i + 1`
/// blocks).
fn prefix_keys(tokens: &[u32], block: usize, ids: &mut HashMap<Vec<u32>, i64>) -> Vec<i64> {
    (1..=tokens.len() / block)
        .map(|blocks| {
            let next = i64::try_from(ids.len()).unwrap() + 1;
            *ids.entry(tokens[..blocks * block].to_vec()).or_insert(next)
        })
        .collect()
}

/// A turn's chain at `block` tokens: the prompt's keys, then the output's (the full blocks
/// of prompt + output without its last token, past the prompt's).
fn chain(turn: &Turn, block: usize, ids: &mut HashMap<Vec<u32>, i64>) -> (Vec<i64>, Vec<i64>) {
    let prompt = prefix_keys(&turn.prompt, block, ids);
    let mut cached = turn.prompt.clone();
    cached.extend(&turn.output[..turn.output.len().saturating_sub(1)]);
    let all = prefix_keys(&cached, block, ids);
    (prompt.clone(), all[prompt.len()..].to_vec())
}

/// The trace at [`TRACE_BLOCK`]: standard rows with `output_keys` (or without, `outputs`
/// false).
fn trace(turns: &[Turn], ids: &mut HashMap<Vec<u32>, i64>, outputs: bool) -> String {
    let mut text = String::new();
    for (index, turn) in turns.iter().enumerate() {
        let (prompt, output) = chain(turn, TRACE_BLOCK, ids);
        let list = |keys: &[i64]| {
            keys.iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(",")
        };
        write!(
            text,
            r#"{{"type":"get","instance_id":"a","trace_id":"r{index}","timestamp_ns":{},"keys":[{}],"input_len":{}"#,
            index + 1,
            list(&prompt),
            turn.prompt.len()
        )
        .unwrap();
        if outputs {
            write!(text, r#","output_keys":[{}]"#, list(&output)).unwrap();
        }
        text.push_str("}\n");
    }
    text
}

/// The naive engine: per request, the hit blocks with a pool of `pool_blocks` (`None`:
/// unlimited), the last-token rule or not.
fn simulate(
    chains: &[(Vec<i64>, Vec<i64>)],
    turns: &[Turn],
    block: usize,
    pool_blocks: u64,
    last_token_rule: bool,
) -> Vec<u64> {
    let mut pool: Vec<i64> = Vec::new(); // least recent first
    chains
        .iter()
        .zip(turns)
        .map(|((prompt, output), turn)| {
            let mut hits = prompt.iter().take_while(|key| pool.contains(key)).count();
            if last_token_rule {
                hits = hits.min(turn.prompt.len().saturating_sub(1) / block);
            }
            for key in prompt.iter().chain(output).rev() {
                pool.retain(|cached| cached != key);
                pool.push(*key);
            }
            let over = pool
                .len()
                .saturating_sub(usize::try_from(pool_blocks).unwrap());
            pool.drain(..over);
            hits as u64
        })
        .collect()
}

fn facts(path: &std::path::Path) -> Vec<RequestFact> {
    read_facts(path)
        .iter()
        .map(|row| {
            let pairs: Vec<[u64; 2]> = serde_json::from_str(&row.hit_curve).unwrap();
            RequestFact::from_pairs(&pairs)
        })
        .collect()
}

fn replayed(
    dir: &std::path::Path,
    trace_path: &std::path::Path,
    name: &str,
    flags: &[&str],
) -> std::path::PathBuf {
    let out = dir.join(name);
    ok(replay_to(trace_path, &out, &[flags, &["--quiet"]].concat()));
    out
}

#[test]
fn cached_outputs_are_a_naive_engine_that_keeps_each_requests_output_blocks() {
    let mut outputs_mattered = false;
    for seed in 1..=5 {
        let dir = tempfile::tempdir().unwrap();
        let turns = conversations(seed, 160);
        let mut ids = HashMap::new();
        let path = write_file(dir.path(), "trace.jsonl", &trace(&turns, &mut ids, true));
        // At the trace's block size and coarsened to 8 tokens (an output block then often
        // completes the prompt's partial tail).
        for (block, block_flags) in [
            (TRACE_BLOCK, vec!["--block-size", "4"]),
            (8, vec!["--block-size", "8", "--trace-block-size", "4"]),
        ] {
            let chains: Vec<_> = turns
                .iter()
                .map(|turn| chain(turn, block, &mut ids))
                .collect();
            for (engine, rule) in [("ideal", false), ("vllm", true)] {
                let flags = [
                    &block_flags[..],
                    &["--engine", engine, "--policy", "lru,opt"],
                ]
                .concat();
                let out = replayed(dir.path(), &path, &format!("{block}-{engine}"), &flags);
                let lru = facts(&out.join(FACTS));
                let opt = facts(&out.join("litehit_facts.opt.csv"));
                // OPT on the requests' whole chains, its hits capped at each prompt's blocks.
                let unit_trace: Vec<Vec<i64>> = chains
                    .iter()
                    .map(|(prompt, output)| [&prompt[..], output].concat())
                    .collect();
                for pool_blocks in POOL_SIZES {
                    let expected = simulate(&chains, &turns, block, pool_blocks, rule);
                    let got: Vec<u64> =
                        lru.iter().map(|f| project_blocks(f, pool_blocks)).collect();
                    assert_eq!(
                        got, expected,
                        "seed {seed}, {block}-token blocks, {engine}, {pool_blocks} blocks"
                    );
                    let without: Vec<u64> = {
                        let prompts_only: Vec<_> = chains
                            .iter()
                            .map(|(p, _)| (p.clone(), Vec::new()))
                            .collect();
                        simulate(&prompts_only, &turns, block, pool_blocks, rule)
                    };
                    outputs_mattered |= without != expected;
                    if !rule {
                        let capacity = usize::try_from(pool_blocks).unwrap();
                        let min = min_unit_hits(&unit_trace, Some(capacity));
                        let expected_opt: Vec<u64> = min
                            .iter()
                            .zip(&chains)
                            .map(|(hits, (prompt, _))| (*hits).min(prompt.len() as u64))
                            .collect();
                        let got_opt: Vec<u64> =
                            opt.iter().map(|f| project_blocks(f, pool_blocks)).collect();
                        assert_eq!(
                            got_opt, expected_opt,
                            "OPT, seed {seed}, {block}, {pool_blocks}"
                        );
                    }
                }
            }
        }
    }
    // The conversations reach the point: some next turn hit blocks only an output had.
    assert!(outputs_mattered);
}

#[test]
fn without_output_keys_the_facts_are_the_prompts_alone() {
    let dir = tempfile::tempdir().unwrap();
    let turns = conversations(9, 120);
    let mut ids = HashMap::new();
    let with = write_file(dir.path(), "with.jsonl", &trace(&turns, &mut ids, true));
    let without = write_file(dir.path(), "without.jsonl", &trace(&turns, &mut ids, false));
    let flags = ["--block-size", "4"];
    let a = replayed(dir.path(), &with, "with", &flags);
    let b = replayed(dir.path(), &without, "without", &flags);
    let chains: Vec<_> = turns
        .iter()
        .map(|turn| (chain(turn, TRACE_BLOCK, &mut ids).0, Vec::new()))
        .collect();
    let facts_without = facts(&b.join(FACTS));
    for pool_blocks in POOL_SIZES {
        let got: Vec<u64> = facts_without
            .iter()
            .map(|f| project_blocks(f, pool_blocks))
            .collect();
        assert_eq!(
            got,
            simulate(&chains, &turns, TRACE_BLOCK, pool_blocks, false)
        );
    }
    // Every request's hits at ∞ only grow with its outputs cached; the rows' tokens are
    // the same.
    let (rows_with, rows_without) = (read_facts(&a.join(FACTS)), read_facts(&b.join(FACTS)));
    assert_eq!(rows_with.len(), rows_without.len());
    for ((row_a, row_b), (fa, fb)) in rows_with
        .iter()
        .zip(&rows_without)
        .zip(facts(&a.join(FACTS)).iter().zip(&facts_without))
    {
        assert_eq!(row_a.input_token_len, row_b.input_token_len);
        assert!(project_blocks(fa, u64::MAX) >= project_blocks(fb, u64::MAX));
    }
}
