//! `watch --policy lru,opt`: OPT live. The headless JSON's OPT figures (the positional arrays
//! and each `slot_results` object's) equal `replay --policy lru,opt` + `query` of the same
//! lines at the same capacities (exact integers), and
//! `--facts-out F.csv` writes both facts files byte for byte as the replay; `--policy opt`
//! alone and OPT with a memory horizon are refused.

use serde_json::Value;

use crate::common::cli_bin::{
    assert_mentions, failed, generate, replay_to, run_in, standard_trace, u64s, write_file,
};
use crate::common::headless::{headless_to_end, instance_entry};
use litehit_core::workload::WorkloadConfig;

const REQUESTS: usize = 1500;

fn trace_text() -> String {
    let config = WorkloadConfig {
        seed: 29,
        block_size_tokens: 256,
        instance_ids: vec!["prefill-0".to_owned(), "prefill-1".to_owned()],
        ..WorkloadConfig::default()
    };
    standard_trace(&generate(config, REQUESTS))
}

/// The index in `query`'s slots (`0.5`, `2` GB, ∞, then 300 blocks) of a headless slot.
fn query_slot(slot: &Value) -> usize {
    match (
        slot["capacity_gb"].as_f64(),
        slot["capacity_blocks"].as_u64(),
    ) {
        (Some(gb), None) if (gb - 0.5).abs() < 1e-12 => 0,
        (Some(gb), None) if (gb - 2.0).abs() < 1e-12 => 1,
        (None, Some(300)) => 3,
        _ => panic!("unexpected slot {slot}"),
    }
}

/// One headless instance (or the total) against `query`'s summary line of the same lane at
/// the same `slots`: LRU and OPT, positional and in each `slot_results` object.
fn check_against_query(headless: &Value, summary: &Value, slots: &[Value], what: &str) {
    let (live_lru, live_opt) = (
        u64s(&headless["hit_tokens"]),
        u64s(&headless["opt_hit_tokens"]),
    );
    let (lru, opt) = (
        u64s(&summary["total_hit_tokens"]),
        u64s(&summary["opt_hit_tokens"]),
    );
    assert_eq!(live_opt.len(), slots.len(), "{what}");
    for (index, slot) in slots.iter().enumerate() {
        let slot_index = query_slot(slot);
        assert_eq!(live_lru[index], lru[slot_index], "{what} LRU at {slot}");
        assert_eq!(live_opt[index], opt[slot_index], "{what} OPT at {slot}");
    }
    assert_eq!(
        headless["infinite_hit_tokens"].as_u64().unwrap(),
        opt[2],
        "{what} ∞"
    );
    let rates = headless["opt_hit_rates"].as_array().unwrap();
    assert_eq!(rates.len(), slots.len(), "{what}");
    // Each slot object carries OPT beside LRU, the same integers.
    let input_tokens = headless["input_tokens"].as_u64().unwrap();
    let slot_results = headless["slot_results"].as_array().unwrap();
    assert_eq!(slot_results.len(), slots.len(), "{what}");
    for ((slot_result, slot), rate) in slot_results.iter().zip(slots).zip(rates) {
        let expected = opt[query_slot(slot)];
        assert_eq!(
            slot_result["opt_hit_tokens"].as_u64(),
            Some(expected),
            "{what} slot object OPT at {slot}"
        );
        // The same division as the positional rate (serde_json reads a float back to
        // within one ulp, so the quotient is compared to a relative 1e-12).
        assert_eq!(&slot_result["opt_hit_rate"], rate, "{what} at {slot}");
        let live_rate = slot_result["opt_hit_rate"].as_f64().unwrap();
        let quotient = expected as f64 / input_tokens as f64;
        assert!(
            (live_rate - quotient).abs() <= quotient * 1e-12,
            "{what} slot object OPT rate at {slot}: {live_rate} vs {quotient}"
        );
    }
}

#[test]
fn headless_opt_equals_replay_and_query_and_the_facts_are_the_replays() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &trace_text());
    let facts_out = dir.path().join("live").join("f.csv");
    let (lines, stderr) = headless_to_end(
        &trace,
        &[
            "--policy",
            "lru,opt",
            "--capacity-gb",
            "0.5,2,300b",
            "--pool",
            "--facts-out",
            facts_out.to_str().unwrap(),
        ],
    );
    assert_mentions(&stderr, &["f.opt.csv"]);
    let report = lines.last().unwrap();
    assert_eq!(report["total"]["requests"], REQUESTS);

    let out = dir.path().join("out");
    let replay = replay_to(&trace, &out, &["--quiet", "--policy", "lru,opt", "--pool"]);
    assert_eq!(replay.code, Some(0), "{}", replay.stderr);
    // The live facts are the replay's, for both policies.
    for (live, offline) in [
        ("f.csv", "litehit_facts.csv"),
        ("f.opt.csv", "litehit_facts.opt.csv"),
    ] {
        assert_eq!(
            std::fs::read(facts_out.with_file_name(live)).unwrap(),
            std::fs::read(out.join(offline)).unwrap(),
            "{live}"
        );
    }
    let query = run_in(
        None,
        [
            "query",
            out.to_str().unwrap(),
            "-",
            "0.5",
            "2",
            "-1",
            "--capacity-blocks",
            "300",
            "--summary-only",
        ],
    );
    assert_eq!(query.code, Some(0), "{}", query.stderr);
    // The summary lines: one per lane, the overall line, then the pool's comparison line.
    let summaries: Vec<Value> = query
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let overall = summaries
        .iter()
        .find(|line| line.get("instance_id").is_none() && line.get("pool").is_none())
        .expect("the overall line");
    let slots = report["slots"].as_array().unwrap();
    let mut gap_seen = false;
    for summary in summaries
        .iter()
        .filter(|line| line.get("instance_id").is_some())
    {
        let id = summary["instance_id"].as_str().unwrap();
        if id == "pool" {
            continue; // live, the pool is at N × each slot (its facts are checked above)
        }
        check_against_query(instance_entry(report, id), summary, slots, id);
        gap_seen |= u64s(&summary["policy_miss_tokens"])
            .iter()
            .any(|&gap| gap > 0);
    }
    check_against_query(&report["total"], overall, slots, "total");
    assert!(gap_seen, "the trace shows a policy gap somewhere");
    // The pool has OPT figures too.
    assert!(instance_entry(report, "pool")["opt_hit_tokens"].is_array());
}

#[test]
fn opt_alone_and_opt_with_a_memory_horizon_are_refused_live() {
    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &trace_text());
    let path = trace.to_str().unwrap();
    let alone = run_in(
        None,
        [
            "watch",
            path,
            "--headless",
            "--exit-at-eof",
            "--policy",
            "opt",
        ],
    );
    assert_mentions(failed(&alone), &["--policy lru,opt"]);
    let horizon = run_in(
        None,
        [
            "watch",
            path,
            "--headless",
            "--exit-at-eof",
            "--policy",
            "lru,opt",
            "--memory-horizon",
            "100b",
        ],
    );
    assert_mentions(failed(&horizon), &["OPT policy is defined without"]);
    let without = headless_to_end(&trace, &[]).0;
    let without = without.last().unwrap();
    assert!(without["total"].get("opt_hit_tokens").is_none());
    // Without OPT the slot objects keep today's keys only.
    for slot_result in without["total"]["slot_results"]
        .as_array()
        .unwrap()
        .iter()
        .chain(without["instances"][0]["slot_results"].as_array().unwrap())
    {
        assert!(slot_result.get("opt_hit_tokens").is_none(), "{slot_result}");
        assert!(slot_result.get("opt_hit_rate").is_none(), "{slot_result}");
    }
}

/// The chart's OPT curve is built by the ingest's snapshot assembly: each lane's OPT samples
/// sit at its LRU curve's capacities, and each equals the OPT facts `replay --policy lru,opt`
/// writes, projected at that capacity and summed (the oracle: every fact through the one
/// projector). Without OPT there is none.
#[test]
fn the_live_opt_curve_equals_the_opt_facts_projected_at_each_sample() {
    use litehit_core::config::{SingleInstanceFlags, resolve_single_instance};
    use litehit_core::engine::CachePolicies;
    use litehit_core::facts::FactRecord;
    use litehit_core::facts::file::FactsReader;
    use litehit_core::projector::project_blocks;
    use litehit_live::ingest::{IngestConfig, spawn};
    use std::time::{Duration, Instant};

    let dir = tempfile::tempdir().unwrap();
    let trace = write_file(dir.path(), "trace.jsonl", &trace_text());
    let out = dir.path().join("out");
    let replay = replay_to(&trace, &out, &["--quiet", "--policy", "lru,opt"]);
    assert_eq!(replay.code, Some(0), "{}", replay.stderr);
    let mut reader = FactsReader::open(&out.join("litehit_facts.opt.csv")).unwrap();
    let mut opt_facts: Vec<FactRecord> = Vec::new();
    let mut record = FactRecord::default();
    while reader.next_record(&mut record).unwrap() {
        opt_facts.push(record.clone());
    }

    let last_snapshot = |policies: CachePolicies| {
        let engine = resolve_single_instance(&SingleInstanceFlags::default())
            .unwrap()
            .engine;
        let mut config = IngestConfig::new(&trace, engine);
        config.cache_policies = policies;
        config.frame_period = Duration::from_millis(10);
        let live = spawn(config).unwrap();
        let deadline = Instant::now() + Duration::from_secs(60);
        let snap = loop {
            let snap = live.latest();
            if snap.lanes.iter().map(|lane| lane.requests).sum::<u64>() == REQUESTS as u64 {
                break snap;
            }
            assert!(Instant::now() < deadline, "timed out reading the trace");
            std::thread::sleep(Duration::from_millis(10));
        };
        live.send(litehit_live::Command::Shutdown);
        snap
    };
    let snap = last_snapshot(CachePolicies::BOTH);
    assert_eq!(snap.lanes.len(), 2);
    let mut gap_seen = false;
    for lane in &snap.lanes {
        let opt_curve = lane.opt_curve.as_ref().expect("an OPT curve with OPT");
        assert_eq!(opt_curve.len(), lane.curve.len(), "{}", lane.instance_id);
        for (opt, lru) in opt_curve.iter().zip(&lane.curve) {
            assert_eq!(opt.capacity_blocks, lru.capacity_blocks);
            let projected: u64 = opt_facts
                .iter()
                .filter(|record| record.instance_id == lane.instance_id)
                .map(|record| project_blocks(&record.fact, opt.capacity_blocks))
                .sum();
            assert_eq!(
                opt.hit_blocks, projected,
                "{} OPT at {} blocks",
                lane.instance_id, opt.capacity_blocks
            );
            gap_seen |= opt.hit_blocks > lru.hit_blocks;
        }
    }
    assert!(gap_seen, "OPT's curve stands above LRU's somewhere");
    let plain = last_snapshot(CachePolicies::LRU);
    assert!(plain.lanes.iter().all(|lane| lane.opt_curve.is_none()));
}
