//! The `engine` slot live (`watch --gpu-blocks`, issue 31 §1): listed first and named in the
//! headless JSON, at ⌊N × T / block size⌋ blocks, with the hits `query` gives at that count.

use serde_json::Value;

use crate::common::cli_bin::{
    FACTS, generate, ok, parse_query_output, replay_to, run_in, standard_trace, u64s, write_file,
};
use crate::common::headless::{headless_to_end, instance_entry};
use litehit_core::workload::WorkloadConfig;

#[test]
fn the_engine_slot_is_first_named_and_equals_query_at_its_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let requests = generate(
        WorkloadConfig {
            seed: 12,
            instance_ids: vec!["a".into(), "b".into()],
            block_size_tokens: 64,
            ..WorkloadConfig::default()
        },
        300,
    );
    let trace = write_file(dir.path(), "trace.jsonl", &standard_trace(&requests));
    // 37 × 16 tokens = 592 tokens: 9 blocks of 64; a typed slot smaller than it still
    // comes after it.
    let flags = [
        "--block-size",
        "64",
        "--gpu-blocks",
        "37",
        "--capacity-gb",
        "5b",
    ];
    let (lines, stderr) = headless_to_end(&trace, &flags);
    let last: &Value = lines.last().unwrap_or_else(|| panic!("no line: {stderr}"));
    assert_eq!(
        last["slots"][0],
        serde_json::json!({"name": "engine", "capacity_blocks": 9})
    );
    assert_eq!(last["slots"][1]["capacity_blocks"], 5);
    let out = dir.path().join("out");
    ok(replay_to(&trace, &out, &["--block-size", "64"]));
    let query = parse_query_output(
        &ok(run_in(
            None,
            [
                "query",
                out.join(FACTS).to_str().unwrap(),
                "-",
                "--summary-only",
                "--capacity-blocks",
                "9",
            ],
        ))
        .stdout,
    );
    for summary in &query.instance_summaries {
        let id = summary["instance_id"].as_str().unwrap();
        let result = &instance_entry(last, id)["slot_results"][0];
        assert_eq!(result["label"], "engine");
        assert_eq!(result["capacity_blocks"], 9);
        assert_eq!(
            result["hit_tokens"].as_u64().unwrap(),
            u64s(&summary["total_hit_tokens"])[0],
            "{id}"
        );
    }
}
