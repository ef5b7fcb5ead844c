//! Upstream config file: relative paths, fanout across two block sizes.

use litehit_core::workload::{SyntheticRequest, WorkloadConfig};
use serde_json::Value;

use crate::common::cli_bin::{
    FACTS, InstanceSpec, config_json, generate, ok, parse_query_output, read_facts, run_in,
    standard_trace, u64s, write_file,
};

use super::{expected_hit_blocks, multi_instance_workload, tempdir};

#[test]
fn config_fanout_across_two_block_sizes_writes_two_rows_per_request() {
    let dir = tempdir();
    let requests = generate(
        WorkloadConfig {
            instance_ids: vec!["pod-a".into(), "pod-b".into()],
            ..multi_instance_workload(23)
        },
        1_200,
    );
    // Config order differs from byte order: rows follow the config, summaries byte order.
    let instances = [
        InstanceSpec {
            instance_id: "zeta-b16",
            block_size: 16,
            block_bytes: 65_536,
        },
        InstanceSpec {
            instance_id: "alpha-b64",
            block_size: 64,
            block_bytes: 262_144,
        },
    ];
    write_file(dir.path(), "traces/t.jsonl", &standard_trace(&requests));
    write_file(
        dir.path(),
        "cfg/config.json",
        &config_json(
            "traces/t.jsonl",
            "results/fanout",
            16,
            &instances,
            r#""fanout_all_instances":true,"pipeline_worker_count":3,"#,
        ),
    );
    // Relative paths are relative to the working directory, not to the config file.
    ok(run_in(
        Some(dir.path()),
        ["replay", "cfg/config.json", "--quiet"],
    ));
    let facts = dir.path().join("results/fanout").join(FACTS);
    let rows = read_facts(&facts);
    assert_eq!(rows.len(), 2 * requests.len());
    for (pair, request) in rows.chunks(2).zip(&requests) {
        let trace_id = format!("trace_{}_{}", request.instance_id, request.timestamp_ns);
        for (row, instance) in pair.iter().zip(&instances) {
            assert_eq!(row.trace_id, trace_id);
            assert_eq!(row.instance_id, instance.instance_id);
            assert_eq!(row.block_size_tokens, instance.block_size);
            assert_eq!(row.block_bytes, instance.block_bytes);
            assert_eq!(row.timestamp_ns, request.timestamp_ns);
            assert_eq!(row.input_token_len, request.input_token_len);
        }
    }

    let capacities = [Some(3), Some(40), Some(600), None];
    let (fine, coarse) = fanout_lane_expectations(&requests, &capacities);

    let run = run_in(
        Some(dir.path()),
        [
            "query",
            "results/fanout/litehit_facts.csv",
            "-",
            "-1",
            "--capacity-blocks",
            "3,40,600",
        ],
    );
    let output = parse_query_output(&ok(run).stdout);
    for ((pair, fine), coarse) in output.rows.chunks(2).zip(&fine).zip(&coarse) {
        // Slots: -1, then blocks 3, 40, 600; the oracle's order is 3, 40, 600, ∞.
        let reorder = |hits: &Vec<u64>| vec![hits[3], hits[0], hits[1], hits[2]];
        assert_eq!(u64s(&pair[0]["hit_blocks"]), reorder(fine), "{}", pair[0]);
        assert_eq!(u64s(&pair[1]["hit_blocks"]), reorder(coarse), "{}", pair[1]);
    }
    let ids: Vec<&str> = output
        .instance_summaries
        .iter()
        .map(|s| s["instance_id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["alpha-b64", "zeta-b16"], "byte order, then the total");
    let input_tokens: u64 = requests.iter().map(|r| r.input_token_len).sum();
    for summary in &output.instance_summaries {
        assert_eq!(summary["requests"], requests.len());
        assert_eq!(summary["total_input_tokens"], input_tokens);
    }
    assert_eq!(output.overall["requests"], 2 * requests.len());
    let infinite = |hits: &[Vec<u64>]| hits.iter().map(|h| h[3]).sum::<u64>();
    let summary_infinite = |summary: &Value| u64s(&summary["total_hit_blocks"])[0];
    assert_eq!(
        summary_infinite(&output.instance_summaries[0]),
        infinite(&coarse)
    );
    assert_eq!(
        summary_infinite(&output.instance_summaries[1]),
        infinite(&fine)
    );
    assert_eq!(
        summary_infinite(&output.overall),
        infinite(&coarse) + infinite(&fine)
    );
    assert_eq!(
        u64s(&output.overall["total_hit_tokens"])[0],
        infinite(&coarse) * 64 + infinite(&fine) * 16
    );
}

/// Expected hit blocks of the two fanout lanes (16- and 64-token blocks): each lane sees
/// every request, whatever its instance id, and the 64-token lane keeps every 4th key.
fn fanout_lane_expectations(
    requests: &[SyntheticRequest],
    capacities: &[Option<u64>],
) -> (Vec<Vec<u64>>, Vec<Vec<u64>>) {
    let one_lane = |keys: fn(&[i64]) -> Vec<i64>| -> Vec<SyntheticRequest> {
        requests
            .iter()
            .map(|r| SyntheticRequest {
                instance_id: "lane".into(),
                keys: keys(&r.keys),
                ..r.clone()
            })
            .collect()
    };
    let fine = expected_hit_blocks(&one_lane(<[i64]>::to_vec), capacities, 0);
    let coarse = expected_hit_blocks(
        &one_lane(|keys| keys.iter().skip(3).step_by(4).copied().collect()),
        capacities,
        0,
    );
    let per_instance = expected_hit_blocks(requests, capacities, 0);
    assert_ne!(fine, per_instance, "one lane for all instances must matter");
    (fine, coarse)
}
