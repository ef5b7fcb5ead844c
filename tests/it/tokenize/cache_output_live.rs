//! `watch --format openai --cache-output` live (issue 31 §2): on a generated multi-turn chat log
//! whose records carry their replies (as text and as token ids), the headless totals, per
//! instance and overall, and the `--facts-out` file equal `replay --format openai
//! --cache-output` + `query` of the same log, and differ from the monitor without the flag: the
//! flag acts live, not only offline.

use std::path::Path;

use serde_json::{Value, json};

use super::trace::Fixture;
use crate::common::cli_bin::{ok, run_in, u64s, write_file};
use crate::common::headless::{headless_to_end, instance_entry};
use crate::common::rng::Rng;

/// Capacity slots of the monitor, in blocks: small enough that the LRU evicts.
const SLOTS_BLOCKS: [u64; 2] = [6, 24];
const REQUESTS: usize = 150;

/// The fixture tokenizer's id of word `wN` (after 4 added tokens and 3 role words).
const FIRST_WORD_ID: u64 = 7;

/// `count` words of the fixture's vocabulary (`w0`..`w99`), as the word numbers.
fn words(rng: &mut Rng, count: u64) -> Vec<u64> {
    (0..count).map(|_| rng.below(100)).collect()
}

fn text(words: &[u64]) -> String {
    words
        .iter()
        .map(|word| format!("w{word}"))
        .collect::<Vec<_>>()
        .join(" ")
}

/// The log: interleaved conversations over two instances (`model`), one of three shared
/// system prompts each, a next turn re-sending the history with the previous reply (as
/// generated, or now and then re-rendered with another last word). Each record carries its
/// reply: `choices.0.message.content`, or `output_token_ids`, or (one in seven) nothing.
fn log_text(seed: u64) -> String {
    let mut rng = Rng::seeded(seed);
    let systems: Vec<String> = (0..3).map(|_| text(&words(&mut rng, 7))).collect();
    let mut histories: Vec<(String, Vec<Value>)> = Vec::new();
    let mut lines = Vec::new();
    for request in 0..REQUESTS {
        if histories.is_empty() || rng.below(4) == 0 {
            let system = &systems[usize::try_from(rng.below(3)).unwrap()];
            let model = format!("m{}", rng.below(2));
            histories.push((model, vec![json!({"role": "system", "content": system})]));
        }
        let at = usize::try_from(rng.below(histories.len() as u64)).unwrap();
        let (model, history) = &mut histories[at];
        let user_words = 2 + rng.below(7);
        history.push(json!({"role": "user", "content": text(&words(&mut rng, user_words))}));
        let reply_words = 1 + rng.below(9);
        let reply = words(&mut rng, reply_words);
        let mut line = json!({
            "timestamp": 1_000 + request * 10,
            "request_id": format!("r{request}"),
            "model": model.clone(),
            "messages": history.clone(),
        });
        match rng.below(7) {
            0 => {}
            1 | 2 => {
                let ids: Vec<u64> = reply.iter().map(|word| FIRST_WORD_ID + word).collect();
                line["output_token_ids"] = json!(ids);
            }
            _ => line["choices"] = json!([{"message": {"content": text(&reply)}}]),
        }
        lines.push(line.to_string());
        let mut resent = reply;
        if rng.below(5) == 0 {
            *resent.last_mut().unwrap() = (resent.last().unwrap() + 1) % 100;
        }
        history.push(json!({"role": "assistant", "content": text(&resent)}));
    }
    lines.join("\n") + "\n"
}

/// The flags shared by `watch` and `replay`: the fixture's tokenizer and template, block
/// size 4, times in ms.
fn tokenize_flags(fixture: &Fixture) -> Vec<String> {
    [
        "--format",
        "openai",
        "--tokenizer",
        fixture.path("tokenizer.json").to_str().unwrap(),
        "--chat-template",
        fixture.path("chat.jinja").to_str().unwrap(),
        "--time-unit",
        "ms",
        "--block-size",
        "4",
    ]
    .map(str::to_owned)
    .to_vec()
}

/// The last headless report of `watch LOG --headless --exit-at-eof` at the slots, writing
/// `facts`.
fn watch_report(fixture: &Fixture, log: &Path, facts: &Path, cache_output: bool) -> Value {
    let mut flags = tokenize_flags(fixture);
    let slots = SLOTS_BLOCKS.map(|blocks| format!("{blocks}b")).join(",");
    flags.extend([
        "--capacity-gb".to_owned(),
        slots,
        "--facts-out".to_owned(),
        facts.display().to_string(),
    ]);
    if cache_output {
        flags.push("--cache-output".to_owned());
    }
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let (lines, stderr) = headless_to_end(log, &flags);
    let report = lines
        .last()
        .unwrap_or_else(|| panic!("no report: {stderr}"));
    assert_eq!(report["total"]["requests"], REQUESTS, "{report}");
    assert_eq!(report["format"], "openai", "{report}");
    report.clone()
}

/// `replay --format openai LOG --cache-output` into `out/`, then `query` at ∞ and the slots:
/// the summary lines (one per instance, then the overall one).
fn replay_and_query(fixture: &Fixture, log: &Path, out: &Path) -> Vec<Value> {
    let mut args = vec!["replay".to_owned(), log.display().to_string()];
    args.extend(tokenize_flags(fixture));
    args.extend([
        "--cache-output".to_owned(),
        "--out".to_owned(),
        out.display().to_string(),
        "--quiet".to_owned(),
    ]);
    ok(run_in(None, &args));
    let slots = SLOTS_BLOCKS.map(|blocks| blocks.to_string()).join(",");
    let query = ok(run_in(
        None,
        [
            "query",
            out.join("litehit_facts.csv").to_str().unwrap(),
            "-",
            "-1",
            "--capacity-blocks",
            &slots,
            "--summary-only",
        ],
    ));
    query
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// A headless entry (an instance's or the total) against `query`'s summary line, whose slots
/// are ∞ then [`SLOTS_BLOCKS`].
fn assert_same(headless: &Value, summary: &Value, what: &str) {
    let hits = u64s(&summary["total_hit_tokens"]);
    assert_eq!(
        u64s(&headless["hit_tokens"]),
        hits[1..],
        "{what}: {headless}"
    );
    assert_eq!(headless["infinite_hit_tokens"], hits[0], "{what} ∞");
    assert_eq!(headless["requests"], summary["requests"], "{what}");
    assert_eq!(
        headless["input_tokens"], summary["total_input_tokens"],
        "{what}"
    );
}

#[test]
fn watch_cache_output_equals_replay_and_query_and_differs_without_the_flag() {
    let fixture = Fixture::new();
    let log = write_file(fixture.dir.path(), "chats.jsonl", &log_text(31));
    let live_facts = fixture.path("live/facts.csv");
    let report = watch_report(&fixture, &log, &live_facts, true);
    let summaries = replay_and_query(&fixture, &log, &fixture.path("replayed"));
    assert_eq!(
        std::fs::read(&live_facts).unwrap(),
        std::fs::read(fixture.path("replayed/litehit_facts.csv")).unwrap(),
        "the live facts are the replay's, byte for byte"
    );
    let mut instances = 0;
    for summary in &summaries {
        match summary["instance_id"].as_str() {
            Some(id) => {
                assert_same(instance_entry(&report, id), summary, id);
                instances += 1;
            }
            None => assert_same(&report["total"], summary, "total"),
        }
    }
    assert_eq!(instances, 2, "{summaries:?}");
    let total = u64s(&report["total"]["hit_tokens"]);
    assert!(total[0] < total[1], "the small slot evicts: {report}");

    // Without the flag the same log hits less: the replies' blocks were never cached.
    let plain_facts = fixture.path("plain/facts.csv");
    let plain = watch_report(&fixture, &log, &plain_facts, false);
    assert_eq!(
        plain["total"]["input_tokens"],
        report["total"]["input_tokens"]
    );
    let plain_total = u64s(&plain["total"]["hit_tokens"]);
    assert!(
        plain_total[1] < total[1],
        "{plain_total:?} vs {total:?} with --cache-output"
    );
    assert!(
        plain["total"]["infinite_hit_tokens"].as_u64()
            < report["total"]["infinite_hit_tokens"].as_u64(),
        "∞: {plain} vs {report}"
    );
    assert_ne!(
        std::fs::read(&plain_facts).unwrap(),
        std::fs::read(&live_facts).unwrap()
    );
}
