//! Generated traces: replay → query equals the in-memory projection and the oracle.

use std::collections::HashMap;
use std::fs;

use litehit_core::workload::WorkloadConfig;

use crate::common::cli_bin::{
    FACTS, facts_temps, generate, ok, parse_query_output, read_facts, run_ok, standard_trace,
    write_file,
};

use super::{
    BLOCK_BYTES, BLOCK_SLOTS, BLOCK_TOKENS, GB_SLOTS, block_flags, check_query_output,
    expected_hit_blocks, multi_instance_workload, path_str, query_args, replay_flags,
    slot_capacities, tempdir,
};

#[test]
fn generated_trace_query_equals_in_memory_projection_and_oracle_for_any_worker_count() {
    let requests = generate(multi_instance_workload(11), 3_000);
    let text = standard_trace(&requests);
    assert!(text.len() > 3 << 20, "several 1 MiB pipeline chunks");
    let dir = tempdir();
    let trace = write_file(dir.path(), "trace.jsonl", &text);

    let mut published = Vec::new();
    for workers in ["1", "2", "4"] {
        let out = dir.path().join(format!("out-{workers}"));
        let mut extra: Vec<String> = block_flags();
        extra.extend(["--workers".to_owned(), workers.to_owned()]);
        let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
        let run = ok(replay_flags(&trace, &out, &extra));
        assert_eq!(run.stdout, "", "--quiet replay prints nothing");
        assert_eq!(run.stderr, "", "--quiet replay prints nothing");
        assert!(facts_temps(&out).is_empty());
        published.push(fs::read(out.join(FACTS)).unwrap());
    }
    assert_eq!(published[0], published[1], "--workers 1 vs 2");
    assert_eq!(published[0], published[2], "--workers 1 vs 4");

    let facts = dir.path().join("out-2").join(FACTS);
    let rows = read_facts(&facts);
    assert_eq!(rows.len(), requests.len());
    for row in &rows {
        assert_eq!(
            (row.block_size_tokens, row.block_bytes),
            (BLOCK_TOKENS, BLOCK_BYTES)
        );
    }

    let query_out = dir.path().join("query.jsonl");
    let run = run_ok(query_args(&facts, &query_out));
    assert_eq!(
        run.stdout,
        format!("facts query done: {}\n", query_out.display())
    );
    let output = parse_query_output(&fs::read_to_string(&query_out).unwrap());
    let expected = expected_hit_blocks(&requests, &slot_capacities(), 0);
    let infinite: u64 = expected.iter().map(|hits| hits[GB_SLOTS.len()]).sum();
    assert!(infinite > 0, "the workload must hit");
    check_query_output(&output, &requests, &expected, BLOCK_TOKENS);

    // The GB and block slots are echoed in the summaries.
    assert_eq!(
        output.overall["capacity_gb"],
        serde_json::json!([0, 0.000_976_562, 0.3, 1, 2.5, 8, -1])
    );
    assert_eq!(
        output.overall["capacity_blocks"],
        serde_json::json!(BLOCK_SLOTS)
    );
}

#[test]
fn ttl_replay_equals_the_oracle_with_the_same_ttl() {
    let config = WorkloadConfig {
        mean_interarrival_ns: 5_000_000, // 1 500 requests span about 7.5 s
        ..multi_instance_workload(5)
    };
    let requests = generate(config, 1_500);
    let dir = tempdir();
    let trace = write_file(dir.path(), "trace.jsonl", &standard_trace(&requests));
    let out = dir.path().join("out");
    let mut extra = block_flags();
    extra.extend(["--ttl-seconds".to_owned(), "1".to_owned()]);
    let extra: Vec<&str> = extra.iter().map(String::as_str).collect();
    ok(replay_flags(&trace, &out, &extra));

    let query_out = dir.path().join("query.jsonl");
    run_ok(query_args(&out.join(FACTS), &query_out));
    let output = parse_query_output(&fs::read_to_string(&query_out).unwrap());
    let expected = expected_hit_blocks(&requests, &slot_capacities(), 1_000_000_000);
    check_query_output(&output, &requests, &expected, BLOCK_TOKENS);

    // The TTL must matter for this test to mean anything.
    let without_ttl = expected_hit_blocks(&requests, &[None], 0);
    let infinite = |hits: &[Vec<u64>], slot: usize| hits.iter().map(|h| h[slot]).sum::<u64>();
    assert!(infinite(&expected, GB_SLOTS.len()) < infinite(&without_ttl, 0));
}

#[test]
fn replay_summary_on_stderr_lists_every_instance_in_byte_order_as_query_does() {
    let requests = generate(multi_instance_workload(41), 800);
    let dir = tempdir();
    let trace = write_file(dir.path(), "trace.jsonl", &standard_trace(&requests));
    let out = dir.path().join("out");
    let mut args = vec![
        "replay".to_owned(),
        path_str(&trace).to_owned(),
        "--out".to_owned(),
    ];
    args.push(path_str(&out).to_owned());
    args.extend(block_flags());
    let run = run_ok(&args);
    assert_eq!(run.stdout, "", "the summary goes to stderr");

    let expected = expected_hit_blocks(&requests, &[None], 0);
    let mut order: Vec<&str> = Vec::new();
    let mut totals: HashMap<&str, (u64, u64, u64)> = HashMap::new();
    for (request, hits) in requests.iter().zip(&expected) {
        if !order.contains(&request.instance_id.as_str()) {
            order.push(&request.instance_id);
        }
        let entry = totals.entry(&request.instance_id).or_default();
        entry.0 += 1;
        entry.1 += request.input_token_len;
        entry.2 += hits[0] * BLOCK_TOKENS;
    }
    // As `query`'s summary: byte order of `instance_id`, whatever order the trace named them.
    order.sort_unstable();
    let lines: Vec<&str> = run.stderr.lines().collect();
    assert!(order.len() > 1, "several instances, so a total row");
    assert_eq!(lines.len(), order.len() + 4, "{}", run.stderr);
    assert!(lines[0].starts_with("instance"), "{}", run.stderr);
    // The block geometry the facts keep (`--block-bytes` 1 MiB, 16-token blocks).
    assert_eq!(lines[order.len() + 2], "blocks: 16 tokens, 1.0 MiB each");
    let sum = |pick: fn(&(u64, u64, u64)) -> u64| totals.values().map(pick).sum::<u64>();
    totals.insert("total", (sum(|t| t.0), sum(|t| t.1), sum(|t| t.2)));
    order.push("total");
    for (line, id) in lines[1..].iter().zip(&order) {
        let (requests, input_tokens, hit_tokens) = totals[id];
        let fields: Vec<&str> = line.split_whitespace().collect();
        assert_eq!(fields[0], *id, "{line}");
        assert_eq!(fields[1], requests.to_string(), "{line}");
        let percent = 100.0 * hit_tokens as f64 / input_tokens as f64;
        assert_eq!(fields[4], format!("{percent:.2}%"), "{line}");
    }
    let last = lines.last().unwrap();
    assert!(
        last.ends_with(&format!("facts: {}", out.join(FACTS).display())),
        "{last}"
    );
}
