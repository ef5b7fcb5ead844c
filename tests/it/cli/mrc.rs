//! `litehit mrc` through the binary.

use std::fs;

use serde_json::Value;

use crate::common::cli_bin::{
    FACTS, generate, ok, parse_query_output, run_ok, standard_trace, u64s, write_file,
};

use super::{block_flags, multi_instance_workload, path_str, replay_flags, tempdir};

#[test]
fn mrc_json_ceiling_equals_query_infinity_and_png_is_written() {
    let requests = generate(multi_instance_workload(29), 1_500);
    let dir = tempdir();
    let trace = write_file(dir.path(), "trace.jsonl", &standard_trace(&requests));
    let out = dir.path().join("out");
    let extra = block_flags();
    ok(replay_flags(
        &trace,
        &out,
        &extra.iter().map(String::as_str).collect::<Vec<_>>(),
    ));
    let facts = out.join(FACTS);
    let png = dir.path().join("plots/mrc.png");
    fs::create_dir_all(png.parent().unwrap()).unwrap();

    let mrc = run_ok(["mrc", path_str(&facts), "--json", "--png", path_str(&png)]);
    let report: Value = serde_json::from_str(&mrc.stdout).unwrap();
    let query = run_ok(["query", path_str(&facts), "-", "-1", "--summary-only"]);
    let query = parse_query_output(&query.stdout);

    let total = &report["total"];
    assert_eq!(total["requests"], query.overall["requests"]);
    assert_eq!(
        total["total_input_tokens"],
        query.overall["total_input_tokens"]
    );
    assert_eq!(
        total["infinite_hit_tokens"].as_u64().unwrap(),
        u64s(&query.overall["total_hit_tokens"])[0]
    );
    let rate = total["infinite_hit_rate"].as_f64().unwrap();
    let query_rate = query.overall["hit_rates"][0].as_f64().unwrap();
    assert!(
        rate > 0.0 && (rate - query_rate).abs() <= 5e-6 * rate,
        "{rate} vs {query_rate}"
    );
    let instances = report["instances"].as_array().unwrap();
    assert_eq!(instances.len(), query.instance_summaries.len());
    for (instance, summary) in instances.iter().zip(&query.instance_summaries) {
        assert_eq!(instance["instance_id"], summary["instance_id"]);
        assert_eq!(
            instance["infinite_hit_blocks"].as_u64().unwrap(),
            u64s(&summary["total_hit_blocks"])[0]
        );
    }

    let bytes = fs::read(&png).unwrap();
    assert!(bytes.len() > 1000, "a non-empty plot");
    assert_eq!(bytes[..8], *b"\x89PNG\r\n\x1a\n");
    assert!(!dir.path().join("plots/mrc.png.tmp").exists());
}
