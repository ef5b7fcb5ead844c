//! Lanes by tenant (`--lane-by`): each tenant's rows feed its own lane, an isolated LRU equal
//! to the naive oracle over that tenant's rows alone at every capacity, while the pool lane
//! stays one LRU over every row. Rows are read by the real standard reader, so the `tenant`
//! field, the `INSTANCE/TENANT` spelling and the `-` lane of rows without one are what is
//! tested, then replayed by the real engine.

use std::collections::BTreeMap;

use proptest::prelude::*;

use crate::common::cli_bin::{FACTS, failed, ok, read_facts, replay_to, write_file};
use crate::common::oracle::OracleLru;
use crate::common::traces::prefix_tree_trace;
use litehit_core::engine::{Engine, EngineConfig, LaneSet, LaneSpec, Policy, Routing};
use litehit_core::facts::RequestFact;
use litehit_core::formats::{
    LaneBy, LineOutcome, LineParser, ParseOptions, TraceEvent, TraceFormat,
};
use litehit_core::projector;

/// One standard row with an optional tenant (blocks of 4 tokens, and a partial one, so that
/// a row without keys is valid too).
fn row(index: usize, instance: &str, tenant: Option<&str>, keys: &[i64]) -> String {
    let tenant = tenant.map_or_else(String::new, |tenant| format!(r#""tenant":"{tenant}","#));
    let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
    format!(
        r#"{{"type":"get","instance_id":"{instance}",{tenant}"trace_id":"t{index}","timestamp_ns":{},"keys":[{}],"input_len":{}}}"#,
        index + 1,
        keys.join(","),
        4 * keys.len() + 1
    )
}

/// Each row's lane as the engine names it, and the facts of every lane, pool included.
fn replay_lines(lines: &[String], lane_by: LaneBy) -> Vec<(String, RequestFact)> {
    let spec = LaneSpec {
        instance_id: "default".to_owned(),
        block_size_tokens: 4,
        block_bytes: 64,
        ttl_ns: 0,
        enable_prefix_hash: false,
    };
    let config = EngineConfig {
        trace_block_size_tokens: 4,
        lanes: LaneSet::OnTheFly(spec),
        routing: Routing::ByInstance,
        pool: Some("pool".to_owned()),
    };
    let mut engine = Engine::new(config, Policy::FailFast).unwrap();
    let mut parser = LineParser::new(
        TraceFormat::Standard,
        ParseOptions {
            trace_block_size_tokens: 4,
            lane_by,
        },
    );
    let mut event = TraceEvent::default();
    let mut rows = Vec::new();
    for (index, line) in lines.iter().enumerate() {
        let number = index as u64 + 1;
        let outcome = parser
            .parse_line(line.as_bytes(), number, &mut event)
            .unwrap();
        assert_eq!(outcome, LineOutcome::Event);
        engine
            .process_event(&event, number, &mut |fact| {
                rows.push((fact.instance_id.to_owned(), fact.fact.clone()));
            })
            .unwrap();
    }
    rows
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

    /// Every tenant's lane is the naive LRU over that tenant's rows alone, at every capacity
    /// (its isolated cache at any quota), and the pool lane the naive LRU over every row,
    /// with `--lane-by tenant` and with `--lane-by instance,tenant`.
    #[test]
    fn tenant_lanes_are_isolated_lrus_and_the_pool_one_shared_lru(
        trace in prefix_tree_trace(),
        owners in prop::collection::vec((0..2_usize, 0..4_usize), 1..9),
        keep_instance in any::<bool>(),
    ) {
        // Tenant 3 stands for a row without a tenant: such rows share the lane `-`.
        let tenant_of = |index: usize| owners[index % owners.len()];
        let lines: Vec<String> = trace
            .iter()
            .enumerate()
            .map(|(index, keys)| {
                let (instance, tenant) = tenant_of(index);
                let tenant = ["a", "b", "c"].get(tenant).copied();
                row(index, &format!("i{instance}"), tenant, keys)
            })
            .collect();
        let lane_by = if keep_instance { LaneBy::InstanceAndTenant } else { LaneBy::Tenant };
        let rows = replay_lines(&lines, lane_by);
        let expected_lane = |index: usize| {
            let (instance, tenant) = tenant_of(index);
            let tenant = ["a", "b", "c"].get(tenant).copied().unwrap_or("-");
            if keep_instance { format!("i{instance}/{tenant}") } else { tenant.to_owned() }
        };
        // Two rows per line: the lane's, then the pool's.
        prop_assert_eq!(rows.len(), 2 * trace.len());
        let mut by_lane: BTreeMap<String, Vec<(&Vec<i64>, &RequestFact)>> = BTreeMap::new();
        for (index, keys) in trace.iter().enumerate() {
            let (lane, fact) = &rows[2 * index];
            prop_assert_eq!(lane, &expected_lane(index));
            prop_assert_eq!(rows[2 * index + 1].0.as_str(), "pool");
            by_lane.entry(lane.clone()).or_default().push((keys, fact));
            by_lane.entry("pool".to_owned()).or_default().push((keys, &rows[2 * index + 1].1));
        }
        let max_blocks = trace.iter().map(Vec::len).sum::<usize>() + 1;
        for (lane, requests) in &by_lane {
            for capacity in 0..=max_blocks {
                let mut oracle = OracleLru::new(Some(capacity), None);
                for (keys, fact) in requests {
                    prop_assert_eq!(
                        projector::project_blocks(fact, capacity as u64),
                        oracle.process_request(keys, 0),
                        "lane {} capacity {}", lane, capacity
                    );
                }
            }
        }
    }
}

/// Through the real binary: `replay --lane-by tenant` names the facts' lanes by tenant, a
/// format without tenants is refused with what to type, and a field path is for OpenAI logs.
#[test]
fn replay_lane_by_tenant_names_the_lanes_and_refuses_what_rows_cannot_carry() {
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        row(0, "i0", Some("team-a"), &[1, 2]),
        row(1, "i1", Some("team-b"), &[1, 2]),
        row(2, "i0", None, &[3]),
    ];
    let trace = write_file(dir.path(), "trace.jsonl", &(lines.join("\n") + "\n"));
    let out = dir.path().join("out");
    let flags = ["--block-size", "4", "--lane-by", "instance,tenant", "-q"];
    ok(replay_to(&trace, &out, &flags));
    let facts_lanes: Vec<String> = read_facts(&out.join(FACTS))
        .into_iter()
        .map(|row| row.instance_id)
        .collect();
    assert_eq!(facts_lanes, ["i0/team-a", "i1/team-b", "i0/-"]);

    let field_path = replay_to(&trace, &dir.path().join("x"), &["--lane-by", "user"]);
    assert!(
        failed(&field_path).contains("field paths such as `user` are for --format openai"),
        "{}",
        field_path.stderr
    );
    let mooncake = write_file(
        dir.path(),
        "mooncake.jsonl",
        "{\"timestamp\":1,\"input_length\":512,\"output_length\":1,\"hash_ids\":[1]}\n",
    );
    let refused = replay_to(&mooncake, &dir.path().join("y"), &["--lane-by", "tenant"]);
    assert!(
        failed(&refused).contains("mooncake rows carry no tenant"),
        "{}",
        refused.stderr
    );
}
