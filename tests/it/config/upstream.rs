//! Configuration: upstream config files and single-instance flags resolve to the same
//! validated `EngineConfig`; every rule fails with the field path.

use std::path::{Path, PathBuf};

use litehit_core::config::{
    ConfigError, DEFAULT_KV_BYTES_PER_TOKEN, DEFAULT_LANE_ID, DefaultLane, ReplayConfig,
    SingleInstanceFlags, default_block_size_tokens, default_lane_for_rows_without_instance,
    load_config_file, parse_config_str, resolve_single_instance,
};
use litehit_core::engine::{EngineConfig, LaneSet, LaneSpec, Routing};
use litehit_core::formats::TraceFormat;
use proptest::prelude::*;
use serde_json::{Value, json};

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/config")
        .join(name)
}

fn load_fixture(name: &str) -> ReplayConfig {
    load_config_file(&fixture(name)).unwrap_or_else(|e| panic!("{name}: {e}"))
}

fn lane(id: &str, block_size_tokens: u64, block_bytes: u64, ttl_ns: u64, hash: bool) -> LaneSpec {
    LaneSpec {
        instance_id: id.to_owned(),
        block_size_tokens,
        block_bytes,
        ttl_ns,
        enable_prefix_hash: hash,
    }
}

fn configured(config: &ReplayConfig) -> &[LaneSpec] {
    match &config.engine.lanes {
        LaneSet::Configured(lanes) => lanes,
        LaneSet::OnTheFly(_) => panic!("a config file configures its lanes"),
    }
}

/// The REFERENCE §6.2 example, the base every error case mutates.
fn base() -> Value {
    json!({
        "trace_file_path": "t.jsonl", "output_result_path": "out", "block_size": 4,
        "instance_groups": [{"name": "g1", "capacity_gb": [1.0], "eviction_policy": "lru",
                             "ttl_seconds": 0, "enable_prefix_hash": false}],
        "instances": [{
            "instance_group_name": "g1", "instance_id": "i1", "block_size": 4, "linear_step": 0,
            "location_spec_infos": [{"name": "tp0", "size": 8192}, {"name": "tp1", "size": 8192}],
            "location_spec_groups": [{"name": "full", "spec_names": ["tp0", "tp1"]}],
            "optimizer_state_info": {"full_location_spec_group_name": "full",
                                     "linear_location_spec_group_name": ""}
        }]
    })
}

/// `base()` with a second instance `i2` (same group, block size 8).
fn two_instances() -> Value {
    let mut config = base();
    let mut second = config["instances"][0].clone();
    second["instance_id"] = json!("i2");
    second["block_size"] = json!(8);
    config["instances"].as_array_mut().unwrap().push(second);
    config
}

fn parse(config: &Value) -> Result<ReplayConfig, ConfigError> {
    parse_config_str(&config.to_string())
}

fn error_of(config: &Value) -> String {
    match parse(config) {
        Ok(resolved) => panic!("expected an error, resolved {resolved:?}"),
        Err(error) => error.to_string(),
    }
}

fn with(mut config: Value, edit: impl FnOnce(&mut Value)) -> Value {
    edit(&mut config);
    config
}

// ---------------------------------------------------------------------------------------
// Upstream configs parse

#[test]
fn upstream_example_resolves_to_one_lane_of_16384_bytes() {
    let config = load_fixture("upstream_example.json");
    assert_eq!(
        config,
        ReplayConfig {
            trace_path: PathBuf::from("t.jsonl"),
            output_dir: PathBuf::from("out"),
            trace_format: None,
            engine: EngineConfig {
                trace_block_size_tokens: 4,
                lanes: LaneSet::Configured(vec![lane("i1", 4, 16_384, 0, false)]),
                routing: Routing::ByInstance,
                pool: None,
            },
            pipeline_worker_count: None,
            capacity_gb: vec![1.0],
            unknown_keys: Vec::new(),
        }
    );
    assert_eq!(
        default_lane_for_rows_without_instance(&config.engine).unwrap(),
        DefaultLane::Lane("i1")
    );
}

#[test]
fn fanout_across_two_block_sizes_and_two_ttl_groups() {
    let config = load_fixture("fanout_block_sizes_ttls.json");
    assert_eq!(config.trace_format, Some(TraceFormat::Kvcm));
    assert_eq!(config.engine.trace_block_size_tokens, 16);
    assert_eq!(config.engine.routing, Routing::Fanout);
    assert_eq!(config.pipeline_worker_count, Some(4));
    assert_eq!(config.capacity_gb, vec![8.0, 16.0, 32.0, 64.0]);
    let five_minutes_ns = 300 * 1_000_000_000;
    assert_eq!(
        configured(&config),
        [
            lane("b16-no-ttl", 16, 917_504, 0, false),
            lane("b64-no-ttl", 64, 3_670_016, 0, false),
            lane("b16-ttl", 16, 917_504, five_minutes_ns, false),
            lane("b64-ttl", 64, 3_670_016, five_minutes_ns, false),
        ]
    );
    assert_eq!(
        default_lane_for_rows_without_instance(&config.engine).unwrap(),
        DefaultLane::EveryLane
    );
}

#[test]
fn override_routes_every_row_to_the_named_instance() {
    let config = load_fixture("override.json");
    assert_eq!(
        config.engine.routing,
        Routing::Override("decode-1".to_owned())
    );
    assert_eq!(config.engine.trace_block_size_tokens, 256);
    assert_eq!(
        configured(&config),
        [
            lane("decode-0", 256, 33_554_432, 0, false),
            lane("decode-1", 512, 67_108_864, 0, false),
        ]
    );
    assert_eq!(
        config.pipeline_worker_count,
        Some(1),
        "values < 1 clamp to 1"
    );
    assert_eq!(config.capacity_gb, vec![0.0, 10.5, 100.0]);
    assert_eq!(
        default_lane_for_rows_without_instance(&config.engine).unwrap(),
        DefaultLane::Lane("decode-1")
    );
}

#[test]
fn prefix_hash_group_and_the_only_spec_group_as_full_group() {
    let config = load_fixture("prefix_hash_group.json");
    assert_eq!(config.trace_format, Some(TraceFormat::Standard));
    assert_eq!(config.engine.trace_block_size_tokens, 256);
    // 8 × 84 483 072 = 675 864 576, the block_bytes of the kimi-k3 reference facts.
    assert_eq!(
        configured(&config),
        [lane(
            "kimi-k3.tp8.checkpoint1024",
            1024,
            675_864_576,
            0,
            true
        )]
    );
}

#[test]
fn trace_format_picks_the_default_trace_block_size_and_unknown_keys_are_ignored() {
    let config = load_fixture("mooncake_default_block.json");
    assert_eq!(config.trace_format, Some(TraceFormat::Mooncake));
    assert_eq!(config.engine.trace_block_size_tokens, 512);
    assert_eq!(
        configured(&config),
        [lane("mooncake", 512, 67_108_864, 600_000_000_000, false)]
    );
    assert!(config.capacity_gb.is_empty());
}

#[test]
fn missing_optional_keys_take_upstream_defaults() {
    let minimal = json!({
        "trace_file_path": "t", "output_result_path": "o",
        "instance_groups": [{"name": "g"}],
        "instances": [{"instance_group_name": "g", "instance_id": "i", "block_size": 256,
                       "location_spec_infos": [{"name": "s", "size": 1}],
                       "location_spec_groups": [{"name": "full", "spec_names": ["s"]}]}]
    });
    let config = parse(&minimal).unwrap();
    assert_eq!(config.engine.trace_block_size_tokens, 256);
    assert_eq!(config.engine.routing, Routing::ByInstance);
    assert_eq!(config.pipeline_worker_count, None);
    assert_eq!(config.trace_format, None);
    assert_eq!(configured(&config), [lane("i", 256, 1, 0, false)]);
}

#[test]
fn pipeline_worker_count_is_kept_when_positive_and_clamped_below_one() {
    for (count, expected) in [(8, 8), (1, 1), (0, 1), (-3, 1)] {
        let config = parse(&with(base(), |c| c["pipeline_worker_count"] = json!(count))).unwrap();
        assert_eq!(config.pipeline_worker_count, Some(expected), "{count}");
    }
}

#[test]
fn every_trace_format_name_is_accepted() {
    for (name, format) in [
        ("standard", TraceFormat::Standard),
        ("mooncake", TraceFormat::Mooncake),
        ("bailian", TraceFormat::Bailian),
        ("kvcm", TraceFormat::Kvcm),
        ("lmcache", TraceFormat::Lmcache),
    ] {
        let config = parse(&with(base(), |c| c["trace_format"] = json!(name))).unwrap();
        assert_eq!(config.trace_format, Some(format));
    }
}

// ---------------------------------------------------------------------------------------
// Files: the error starts with the path

#[test]
fn load_errors_start_with_the_config_path() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.json");
    let config = with(base(), |c| {
        c["instance_groups"][0]["ttl_seconds"] = json!(-5);
    });
    std::fs::write(&path, config.to_string()).unwrap();
    assert_eq!(
        load_config_file(&path).unwrap_err().to_string(),
        format!(
            "{}: instance_groups[0].ttl_seconds: must not be negative, found -5",
            path.display()
        )
    );

    std::fs::write(&path, "{\"block_size\": 4,").unwrap();
    let message = load_config_file(&path).unwrap_err().to_string();
    assert!(
        message.starts_with(&format!("{}: invalid JSON: ", path.display())),
        "{message}"
    );

    let missing = dir.path().join("absent.json");
    let message = load_config_file(&missing).unwrap_err().to_string();
    assert!(
        message.starts_with(&format!("{}: cannot read config: ", missing.display())),
        "{message}"
    );
}

// ---------------------------------------------------------------------------------------
// Validation errors name the field path

#[test]
#[expect(clippy::too_many_lines, reason = "one table of cases")]
fn each_validation_fails_with_its_field_path() {
    let cases: Vec<(&str, Value, &str)> = vec![
        (
            "trace path missing",
            with(base(), |c| {
                c.as_object_mut().unwrap().remove("trace_file_path");
            }),
            "trace_file_path: missing, expected a non-empty string",
        ),
        (
            "trace path empty",
            with(base(), |c| c["trace_file_path"] = json!("")),
            "trace_file_path: must not be empty",
        ),
        (
            "output path empty",
            with(base(), |c| c["output_result_path"] = json!("")),
            "output_result_path: must not be empty",
        ),
        (
            "no groups",
            with(base(), |c| c["instance_groups"] = json!([])),
            "instance_groups: must not be empty",
        ),
        (
            "instances missing",
            with(base(), |c| {
                c.as_object_mut().unwrap().remove("instances");
            }),
            "instances: missing, expected a non-empty array",
        ),
        (
            "negative ttl",
            with(base(), |c| {
                c["instance_groups"][0]["ttl_seconds"] = json!(-5);
            }),
            "instance_groups[0].ttl_seconds: must not be negative, found -5",
        ),
        (
            "ttl overflows nanoseconds",
            with(base(), |c| {
                c["instance_groups"][0]["ttl_seconds"] = json!(18_446_744_074_i64);
            }),
            "instance_groups[0].ttl_seconds: 18446744074 seconds overflows a u64 count of \
             nanoseconds",
        ),
        (
            "spec sizes past int64, as upstream sums them",
            with(base(), |c| {
                c["instances"][0]["location_spec_infos"][0]["size"] = json!(i64::MAX);
                c["instances"][0]["location_spec_infos"][1]["size"] = json!(i64::MAX);
            }),
            "instances[0].location_spec_groups[0]: the sizes of full group \"full\" overflow a \
             64-bit byte count",
        ),
        (
            "negative capacity",
            with(base(), |c| {
                c["instance_groups"][0]["capacity_gb"] = json!([1, 2, -1]);
            }),
            "instance_groups[0].capacity_gb[2]: must be finite and not negative, found -1",
        ),
        (
            "eviction policy",
            with(base(), |c| {
                c["instance_groups"][0]["eviction_policy"] = json!("lfu");
            }),
            "instance_groups[0].eviction_policy: expected \"lru\" (the only policy), found \
             \"lfu\"",
        ),
        (
            "shared quota",
            with(base(), |c| {
                c["instance_groups"][0]["shared_group_quota"] = json!(true);
            }),
            "instance_groups[0].shared_group_quota: true is not supported: each instance is \
             simulated with the whole group capacity",
        ),
        (
            "duplicate group name",
            with(base(), |c| {
                let group = c["instance_groups"][0].clone();
                c["instance_groups"].as_array_mut().unwrap().push(group);
            }),
            "instance_groups[1].name: duplicate group name \"g1\" (also instance_groups[0])",
        ),
        (
            "trace block size zero",
            with(base(), |c| c["block_size"] = json!(0)),
            "block_size: trace block_size must be positive, found 0",
        ),
        (
            "linear step",
            with(base(), |c| c["instances"][0]["linear_step"] = json!(1)),
            "instances[0].linear_step: must be 0, found 1 (the facts replay is Full-only)",
        ),
        (
            "instance block size zero",
            with(base(), |c| c["instances"][0]["block_size"] = json!(0)),
            "instances[0].block_size: must be positive, found 0",
        ),
        (
            "instance block size missing",
            with(base(), |c| {
                c["instances"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("block_size");
            }),
            "instances[0].block_size: missing: the instance's block size in tokens (a multiple \
             of the trace block_size)",
        ),
        (
            "not coarsening",
            with(two_instances(), |c| {
                c["instances"][1]["block_size"] = json!(6);
            }),
            "instances[1].block_size: 6 is not a multiple of trace block_size 4 (re-blocking \
             is coarsening only)",
        ),
        (
            "finer than the trace",
            with(base(), |c| c["instances"][0]["block_size"] = json!(2)),
            "instances[0].block_size: 2 is not a multiple of trace block_size 4 (re-blocking \
             is coarsening only)",
        ),
        (
            "empty instance id",
            with(base(), |c| c["instances"][0]["instance_id"] = json!("")),
            "instances[0].instance_id: must not be empty",
        ),
        (
            "unknown group",
            with(base(), |c| {
                c["instances"][0]["instance_group_name"] = json!("g9");
            }),
            "instances[0].instance_group_name: group \"g9\" not found in instance_groups",
        ),
        (
            "missing group name",
            with(base(), |c| {
                c["instances"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("instance_group_name");
            }),
            "instances[0].instance_group_name: missing: the name of one of instance_groups \
             (\"g1\")",
        ),
        (
            "duplicate instance id",
            with(two_instances(), |c| {
                c["instances"][1]["instance_id"] = json!("i1");
            }),
            "instances[1].instance_id: duplicate instance id \"i1\" (also instances[0])",
        ),
        (
            "no specs",
            with(base(), |c| {
                c["instances"][0]["location_spec_infos"] = json!([]);
            }),
            "instances[0].location_spec_infos: must not be empty",
        ),
        (
            "spec size zero",
            with(base(), |c| {
                c["instances"][0]["location_spec_infos"][1]["size"] = json!(0);
            }),
            "instances[0].location_spec_infos[1].size: must be positive, found 0",
        ),
        (
            "spec size negative",
            with(base(), |c| {
                c["instances"][0]["location_spec_infos"][0]["size"] = json!(-8192);
            }),
            "instances[0].location_spec_infos[0].size: must be positive, found -8192",
        ),
        (
            "duplicate spec name",
            with(base(), |c| {
                c["instances"][0]["location_spec_infos"][1]["name"] = json!("tp0");
            }),
            "instances[0].location_spec_infos[1].name: duplicate spec name \"tp0\" (also \
             location_spec_infos[0])",
        ),
        (
            "empty spec name",
            with(base(), |c| {
                c["instances"][0]["location_spec_infos"][0]["name"] = json!("");
            }),
            "instances[0].location_spec_infos[0].name: must not be empty",
        ),
        (
            "duplicate spec group name",
            with(base(), |c| {
                let group = c["instances"][0]["location_spec_groups"][0].clone();
                c["instances"][0]["location_spec_groups"]
                    .as_array_mut()
                    .unwrap()
                    .push(group);
            }),
            "instances[0].location_spec_groups[1].name: duplicate group name \"full\" (also \
             location_spec_groups[0])",
        ),
        (
            "empty spec group name",
            with(base(), |c| {
                c["instances"][0]["location_spec_groups"][0]["name"] = json!("");
            }),
            "instances[0].location_spec_groups[0].name: must not be empty",
        ),
        (
            "spec named twice in a group",
            with(base(), |c| {
                c["instances"][0]["location_spec_groups"][0]["spec_names"] = json!(["tp0", "tp0"]);
            }),
            "instances[0].location_spec_groups[0].spec_names[1]: duplicate spec name \"tp0\" \
             in group \"full\"",
        ),
        (
            "full group not found",
            with(base(), |c| {
                c["instances"][0]["location_spec_groups"][0]["name"] = json!("kv");
            }),
            "instances[0].location_spec_groups: full group \"full\" not found",
        ),
        (
            "missing spec",
            with(base(), |c| {
                c["instances"][0]["location_spec_groups"][0]["spec_names"] = json!(["tp0", "tp9"]);
            }),
            "instances[0].location_spec_groups[0].spec_names[1]: spec \"tp9\" not found in \
             location_spec_infos",
        ),
        (
            "full group names no spec",
            with(base(), |c| {
                c["instances"][0]["location_spec_groups"][0]["spec_names"] = json!([]);
            }),
            "instances[0].location_spec_groups[0].spec_names: full group \"full\" names no \
             spec, so its size would be 0",
        ),
        (
            "empty full name with two spec groups",
            with(base(), |c| {
                let instance = &mut c["instances"][0];
                instance["location_spec_groups"]
                    .as_array_mut()
                    .unwrap()
                    .push(json!({"name": "linear", "spec_names": ["tp1"]}));
                instance["optimizer_state_info"]["full_location_spec_group_name"] = json!("");
            }),
            "instances[0].optimizer_state_info.full_location_spec_group_name: must name one of \
             the 2 location_spec_groups (\"full\", \"linear\") when there is more than one",
        ),
        (
            "empty full name without spec groups",
            with(base(), |c| {
                let instance = &mut c["instances"][0];
                instance["location_spec_groups"] = json!([]);
                instance["optimizer_state_info"]["full_location_spec_group_name"] = json!("");
            }),
            "instances[0].location_spec_groups: must not be empty: the full group gives \
             block_bytes",
        ),
        (
            "linear group equals full group",
            with(base(), |c| {
                c["instances"][0]["optimizer_state_info"]["linear_location_spec_group_name"] =
                    json!("full");
            }),
            "instances[0].optimizer_state_info.linear_location_spec_group_name: must differ \
             from the full group \"full\"",
        ),
        (
            "linear group not found",
            with(base(), |c| {
                c["instances"][0]["optimizer_state_info"]["linear_location_spec_group_name"] =
                    json!("lin");
            }),
            "instances[0].location_spec_groups: linear group \"lin\" not found",
        ),
        (
            "override names no instance",
            with(two_instances(), |c| c["override_instance_id"] = json!("i3")),
            "override_instance_id: \"i3\" does not name a configured instance (configured: \
             \"i1\", \"i2\")",
        ),
        (
            "fanout and override",
            with(two_instances(), |c| {
                c["override_instance_id"] = json!("i1");
                c["fanout_all_instances"] = json!(true);
            }),
            "fanout_all_instances: cannot be combined with override_instance_id \"i1\"",
        ),
        (
            "unknown trace format",
            with(base(), |c| c["trace_format"] = json!("csv")),
            "trace_format: expected one of standard, mooncake, bailian, kvcm, lmcache, found \
             \"csv\"",
        ),
    ];
    for (name, config, expected) in cases {
        assert_eq!(error_of(&config), expected, "case {name:?}");
    }
}

#[test]
fn the_linear_group_is_validated_but_does_not_change_block_bytes() {
    let config = with(base(), |c| {
        let instance = &mut c["instances"][0];
        instance["location_spec_infos"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "state", "size": 1000}));
        instance["location_spec_groups"]
            .as_array_mut()
            .unwrap()
            .push(json!({"name": "linear", "spec_names": ["state"]}));
        instance["optimizer_state_info"]["linear_location_spec_group_name"] = json!("linear");
    });
    assert_eq!(
        configured(&parse(&config).unwrap()),
        [lane("i1", 4, 16_384, 0, false)]
    );
    let missing_spec = with(config, |c| {
        c["instances"][0]["location_spec_groups"][1]["spec_names"] = json!(["ghost"]);
    });
    assert_eq!(
        error_of(&missing_spec),
        "instances[0].location_spec_groups[1].spec_names[0]: spec \"ghost\" not found in \
         location_spec_infos"
    );
}

#[test]
fn rules_run_in_upstream_order() {
    // Full-only before coarsening, and both before the rules of the instance's group, which
    // upstream checks when the instance registers with it (issue 16: only groups in use).
    let config = with(base(), |c| {
        c["instance_groups"][0]["ttl_seconds"] = json!(-1);
        c["instances"][0]["linear_step"] = json!(2);
        c["instances"][0]["block_size"] = json!(6);
    });
    assert!(error_of(&config).starts_with("instances[0].linear_step:"));
    let config = with(config, |c| c["instances"][0]["linear_step"] = json!(0));
    assert!(error_of(&config).starts_with("instances[0].block_size:"));
    let config = with(config, |c| c["instances"][0]["block_size"] = json!(4));
    assert!(error_of(&config).starts_with("instance_groups[0].ttl_seconds:"));
}

// ---------------------------------------------------------------------------------------
// Strict JSON typing

#[test]
#[expect(clippy::too_many_lines, reason = "one table of cases")]
fn a_present_key_of_the_wrong_type_fails_with_its_path() {
    let cases: Vec<(Value, &str)> = vec![
        (
            with(base(), |c| c["block_size"] = json!("4")),
            "block_size: expected a non-negative integer, found \"4\"",
        ),
        (
            with(base(), |c| c["block_size"] = json!(-4)),
            "block_size: expected a non-negative integer, found -4",
        ),
        (
            with(base(), |c| c["block_size"] = json!(4.0)),
            "block_size: expected a non-negative integer, found 4.0",
        ),
        (
            with(base(), |c| c["fanout_all_instances"] = json!(1)),
            "fanout_all_instances: expected a boolean, found 1",
        ),
        (
            with(base(), |c| c["override_instance_id"] = json!(null)),
            "override_instance_id: expected a string, found null",
        ),
        (
            with(base(), |c| c["pipeline_worker_count"] = json!(2.5)),
            "pipeline_worker_count: expected a 32-bit integer, found 2.5",
        ),
        (
            with(base(), |c| c["trace_format"] = json!(["kvcm"])),
            "trace_format: expected a string, found an array",
        ),
        (
            with(base(), |c| c["instances"] = json!({"i1": {}})),
            "instances: expected an array, found an object",
        ),
        (
            with(base(), |c| c["instance_groups"][0] = json!("g1")),
            "instance_groups[0]: expected an object, found \"g1\"",
        ),
        (
            with(base(), |c| {
                c["instance_groups"][0]["capacity_gb"] = json!(1.0);
            }),
            "instance_groups[0].capacity_gb: expected an array, found 1.0",
        ),
        (
            with(base(), |c| {
                c["instance_groups"][0]["capacity_gb"] = json!([1.0, "2"]);
            }),
            "instance_groups[0].capacity_gb[1]: expected a number, found \"2\"",
        ),
        (
            with(base(), |c| {
                c["instance_groups"][0]["ttl_seconds"] = json!(1.5);
            }),
            "instance_groups[0].ttl_seconds: expected a 64-bit integer, found 1.5",
        ),
        (
            with(base(), |c| {
                c["instance_groups"][0]["enable_prefix_hash"] = json!("true");
            }),
            "instance_groups[0].enable_prefix_hash: expected a boolean, found \"true\"",
        ),
        (
            with(base(), |c| {
                c["instance_groups"][0]["enable_theoretical_max_cache"] = json!(0);
            }),
            "instance_groups[0].enable_theoretical_max_cache: expected a boolean, found 0",
        ),
        (
            with(base(), |c| {
                c["instance_groups"][0]["shared_group_quota"] = json!("no");
            }),
            "instance_groups[0].shared_group_quota: expected a boolean, found \"no\"",
        ),
        (
            with(base(), |c| {
                c["instances"][0]["block_size"] = json!(4_294_967_300_i64);
            }),
            "instances[0].block_size: expected a 32-bit integer, found 4294967300",
        ),
        (
            with(base(), |c| c["instances"][0]["linear_step"] = json!(false)),
            "instances[0].linear_step: expected a 32-bit integer, found false",
        ),
        (
            with(base(), |c| {
                c["instances"][0]["location_spec_infos"][1]["size"] = json!("8192");
            }),
            "instances[0].location_spec_infos[1].size: expected a 64-bit integer, found \
             \"8192\"",
        ),
        (
            with(base(), |c| {
                c["instances"][0]["location_spec_groups"][0]["spec_names"] = json!(["tp0", 1]);
            }),
            "instances[0].location_spec_groups[0].spec_names[1]: expected a string, found 1",
        ),
        (
            with(base(), |c| {
                c["instances"][0]["optimizer_state_info"] = json!("full");
            }),
            "instances[0].optimizer_state_info: expected an object, found \"full\"",
        ),
        (
            with(base(), |c| {
                c["instances"][0]["optimizer_state_info"]["full_location_spec_group_name"] =
                    json!(7);
            }),
            "instances[0].optimizer_state_info.full_location_spec_group_name: expected a \
             string, found 7",
        ),
        (
            json!([base()]),
            "config: expected a JSON object, found an array",
        ),
    ];
    for (config, expected) in cases {
        assert_eq!(error_of(&config), expected);
    }
}

#[test]
fn type_errors_come_before_rule_errors() {
    // The group's ttl is invalid, but the instance's wrongly typed key is reported first.
    let config = with(base(), |c| {
        c["instance_groups"][0]["ttl_seconds"] = json!(-1);
        c["instances"][0]["block_size"] = json!("4");
    });
    assert_eq!(
        error_of(&config),
        "instances[0].block_size: expected a 32-bit integer, found \"4\""
    );
}

#[test]
fn capacities_take_any_number_a_double_holds_exactly() {
    let config = parse(&with(base(), |c| {
        c["instance_groups"][0]["capacity_gb"] = json!([2, 0.5, 1_099_511_627_776_u64]);
    }))
    .unwrap();
    assert_eq!(config.capacity_gb, vec![0.5, 2.0, 1_099_511_627_776.0]);
    let inexact = (1_u64 << 53) + 1;
    assert_eq!(
        error_of(&with(base(), |c| {
            c["instance_groups"][0]["capacity_gb"] = json!([inexact]);
        })),
        format!("instance_groups[0].capacity_gb[0]: expected a number, found {inexact}")
    );
}

// ---------------------------------------------------------------------------------------
// Routing

#[test]
fn several_instances_without_override_or_fanout_leave_rows_without_id_ambiguous() {
    let config = parse(&two_instances()).unwrap();
    assert_eq!(config.engine.routing, Routing::ByInstance);
    let message = default_lane_for_rows_without_instance(&config.engine)
        .unwrap_err()
        .to_string();
    assert_eq!(
        message,
        "a row without an instance id cannot be routed: 2 instances are configured; set \
         override_instance_id to one of them, or fanout_all_instances to true"
    );

    let config = parse(&with(two_instances(), |c| {
        c["override_instance_id"] = json!("i2");
    }))
    .unwrap();
    assert_eq!(
        default_lane_for_rows_without_instance(&config.engine).unwrap(),
        DefaultLane::Lane("i2")
    );
}

#[test]
fn an_empty_override_means_no_override() {
    let config = parse(&with(two_instances(), |c| {
        c["override_instance_id"] = json!("");
        c["fanout_all_instances"] = json!(true);
    }))
    .unwrap();
    assert_eq!(config.engine.routing, Routing::Fanout);
}

// ---------------------------------------------------------------------------------------
// Single-instance flags

fn flags_error(flags: &SingleInstanceFlags) -> String {
    match resolve_single_instance(flags) {
        Ok(resolved) => panic!("expected an error, resolved {resolved:?}"),
        Err(error) => error.to_string(),
    }
}

#[test]
fn without_flags_lanes_are_created_on_the_fly_with_documented_defaults() {
    let resolved = resolve_single_instance(&SingleInstanceFlags::default()).unwrap();
    assert_eq!(resolved.trace_format, None);
    assert_eq!(
        resolved.engine,
        EngineConfig {
            trace_block_size_tokens: 256,
            lanes: LaneSet::OnTheFly(lane(
                DEFAULT_LANE_ID,
                256,
                256 * DEFAULT_KV_BYTES_PER_TOKEN,
                0,
                false
            )),
            routing: Routing::ByInstance,
            pool: None,
        }
    );
    assert_eq!(
        default_lane_for_rows_without_instance(&resolved.engine).unwrap(),
        DefaultLane::Lane("default")
    );
}

#[test]
fn the_format_picks_the_default_block_size() {
    for (format, block_size) in [
        (TraceFormat::Standard, 256),
        (TraceFormat::Mooncake, 512),
        (TraceFormat::Bailian, 16),
        (TraceFormat::Kvcm, 16),
        (TraceFormat::Lmcache, 256),
    ] {
        assert_eq!(default_block_size_tokens(Some(format)), block_size);
        let flags = SingleInstanceFlags {
            format: Some(format),
            ..SingleInstanceFlags::default()
        };
        let resolved = resolve_single_instance(&flags).unwrap();
        assert_eq!(resolved.trace_format, Some(format));
        assert_eq!(resolved.engine.trace_block_size_tokens, block_size);
        let LaneSet::OnTheFly(template) = &resolved.engine.lanes else {
            panic!("lanes on the fly without --instance");
        };
        assert_eq!(template.block_size_tokens, block_size, "{format:?}");
        assert_eq!(
            template.block_bytes,
            block_size * DEFAULT_KV_BYTES_PER_TOKEN
        );
    }
}

#[test]
fn one_block_size_flag_sets_both_sizes() {
    let analysis_only = SingleInstanceFlags {
        block_size_tokens: Some(64),
        format: Some(TraceFormat::Standard),
        ..SingleInstanceFlags::default()
    };
    let resolved = resolve_single_instance(&analysis_only).unwrap();
    assert_eq!(resolved.engine.trace_block_size_tokens, 64);

    // Except where the format fixes the key size: Mooncake ids are 512-token blocks, so
    // `--block-size` alone is the analysis size, coarsened from 512.
    let mooncake = SingleInstanceFlags {
        block_size_tokens: Some(1024),
        format: Some(TraceFormat::Mooncake),
        ..SingleInstanceFlags::default()
    };
    let resolved = resolve_single_instance(&mooncake).unwrap();
    assert_eq!(resolved.engine.trace_block_size_tokens, 512);
    let LaneSet::OnTheFly(template) = &resolved.engine.lanes else {
        panic!("lanes on the fly without --instance");
    };
    assert_eq!(template.block_size_tokens, 1024);

    let trace_only = SingleInstanceFlags {
        trace_block_size_tokens: Some(1024),
        ..SingleInstanceFlags::default()
    };
    let resolved = resolve_single_instance(&trace_only).unwrap();
    assert_eq!(resolved.engine.trace_block_size_tokens, 1024);
    let LaneSet::OnTheFly(template) = &resolved.engine.lanes else {
        panic!("lanes on the fly without --instance");
    };
    assert_eq!(template.block_size_tokens, 1024);
}

#[test]
fn block_bytes_come_from_either_flag_and_must_agree() {
    let bytes_of = |flags: SingleInstanceFlags| {
        let resolved = resolve_single_instance(&flags).unwrap();
        match resolved.engine.lanes {
            LaneSet::OnTheFly(template) => template.block_bytes,
            LaneSet::Configured(_) => panic!("lanes on the fly without --instance"),
        }
    };
    let sized = SingleInstanceFlags {
        block_size_tokens: Some(16),
        ..SingleInstanceFlags::default()
    };
    assert_eq!(
        bytes_of(SingleInstanceFlags {
            block_bytes: Some(1000),
            ..sized.clone()
        }),
        1000
    );
    assert_eq!(
        bytes_of(SingleInstanceFlags {
            kv_bytes_per_token: Some(57_344),
            ..sized.clone()
        }),
        917_504
    );
    assert_eq!(
        bytes_of(SingleInstanceFlags {
            kv_bytes_per_token: Some(57_344),
            block_bytes: Some(917_504),
            ..sized.clone()
        }),
        917_504
    );
    assert_eq!(
        flags_error(&SingleInstanceFlags {
            kv_bytes_per_token: Some(57_344),
            block_bytes: Some(1000),
            ..sized
        }),
        "--block-bytes: 1000 disagrees with --kv-bytes-per-token 57344 × block size 16 = 917504"
    );
}

#[test]
fn each_flag_validation_names_the_flag() {
    let cases = [
        (
            SingleInstanceFlags {
                block_size_tokens: Some(0),
                ..SingleInstanceFlags::default()
            },
            "--block-size: must be positive, found 0",
        ),
        (
            SingleInstanceFlags {
                trace_block_size_tokens: Some(0),
                ..SingleInstanceFlags::default()
            },
            "--trace-block-size: must be positive, found 0",
        ),
        (
            SingleInstanceFlags {
                block_size_tokens: Some(6),
                trace_block_size_tokens: Some(4),
                ..SingleInstanceFlags::default()
            },
            "--block-size: 6 is not a multiple of --trace-block-size 4 (re-blocking is \
             coarsening only)",
        ),
        (
            SingleInstanceFlags {
                block_bytes: Some(0),
                ..SingleInstanceFlags::default()
            },
            "--block-bytes: must be positive, found 0",
        ),
        (
            SingleInstanceFlags {
                kv_bytes_per_token: Some(0),
                ..SingleInstanceFlags::default()
            },
            "--kv-bytes-per-token: must be positive, found 0",
        ),
        (
            SingleInstanceFlags {
                kv_bytes_per_token: Some(u64::MAX / 2),
                ..SingleInstanceFlags::default()
            },
            "--kv-bytes-per-token: 9223372036854775807 KV bytes per token × block size 256 \
             tokens overflows a u64 byte count",
        ),
        (
            SingleInstanceFlags {
                instance: Some(String::new()),
                ..SingleInstanceFlags::default()
            },
            "--instance: must not be empty",
        ),
    ];
    for (flags, expected) in cases {
        assert_eq!(flags_error(&flags), expected);
    }
}

/// The config file a user would write for the same single-instance setup.
fn equivalent_config(
    instance: &str,
    block_size: u64,
    trace_block_size: u64,
    block_bytes: u64,
    ttl_seconds: u64,
    prefix_hash: bool,
) -> Value {
    json!({
        "trace_file_path": "t.jsonl", "output_result_path": "out",
        "block_size": trace_block_size,
        "override_instance_id": instance,
        "instance_groups": [{"name": "g", "capacity_gb": [1.0], "ttl_seconds": ttl_seconds,
                             "enable_prefix_hash": prefix_hash}],
        "instances": [{
            "instance_group_name": "g", "instance_id": instance, "block_size": block_size,
            "location_spec_infos": [{"name": "kv", "size": block_bytes}],
            "location_spec_groups": [{"name": "full", "spec_names": ["kv"]}],
            "optimizer_state_info": {"full_location_spec_group_name": "full"}
        }]
    })
}

#[test]
fn flags_and_the_equivalent_config_file_resolve_to_the_same_engine() {
    let flags = SingleInstanceFlags {
        block_size_tokens: Some(1024),
        block_bytes: Some(675_864_576),
        kv_bytes_per_token: None,
        model: None,
        ttl_ns: Some(60_000_000_000),
        prefix_hash: true,
        instance: Some("kimi-k3.tp8".to_owned()),
        trace_block_size_tokens: Some(256),
        format: Some(TraceFormat::Standard),
        pool: None,
    };
    let from_flags = resolve_single_instance(&flags).unwrap();
    let from_file = parse(&with(
        equivalent_config("kimi-k3.tp8", 1024, 256, 675_864_576, 60, true),
        |c| c["trace_format"] = json!("standard"),
    ))
    .unwrap();
    assert_eq!(from_flags.engine, from_file.engine);
    assert_eq!(from_flags.trace_format, from_file.trace_format);
    assert_eq!(
        from_flags.engine.lanes,
        LaneSet::Configured(vec![lane(
            "kimi-k3.tp8",
            1024,
            675_864_576,
            60_000_000_000,
            true
        )])
    );
}

#[test]
fn on_the_fly_template_equals_the_equivalent_configured_lane() {
    let flags = SingleInstanceFlags {
        block_size_tokens: Some(512),
        kv_bytes_per_token: Some(131_072),
        format: Some(TraceFormat::Mooncake),
        ..SingleInstanceFlags::default()
    };
    let from_flags = resolve_single_instance(&flags).unwrap();
    let from_file = parse(&equivalent_config(
        DEFAULT_LANE_ID,
        512,
        512,
        512 * 131_072,
        0,
        false,
    ))
    .unwrap();
    let LaneSet::OnTheFly(template) = &from_flags.engine.lanes else {
        panic!("lanes on the fly without --instance");
    };
    assert_eq!(std::slice::from_ref(template), configured(&from_file));
    assert_eq!(
        from_flags.engine.trace_block_size_tokens,
        from_file.engine.trace_block_size_tokens
    );
}

proptest! {
    #[test]
    fn any_valid_flags_equal_their_config_file(
        trace_block_size in 1_u64..=1024,
        coarsening in 1_u64..=8,
        bytes_per_token in 1_u64..=1_000_000,
        ttl_seconds in 0_u64..=1_000_000,
        prefix_hash: bool,
        instance in "[a-z][a-z0-9.-]{0,12}",
    ) {
        let block_size = trace_block_size * coarsening;
        let flags = SingleInstanceFlags {
            block_size_tokens: Some(block_size),
            block_bytes: None,
            kv_bytes_per_token: Some(bytes_per_token),
            model: None,
            ttl_ns: Some(ttl_seconds * 1_000_000_000),
            prefix_hash,
            instance: Some(instance.clone()),
            trace_block_size_tokens: Some(trace_block_size),
            format: None,
            pool: None,
        };
        let from_flags = resolve_single_instance(&flags).unwrap();
        let config = equivalent_config(
            &instance,
            block_size,
            trace_block_size,
            bytes_per_token * block_size,
            ttl_seconds,
            prefix_hash,
        );
        let from_file = parse(&config).unwrap();
        prop_assert_eq!(from_flags.engine, from_file.engine);
    }
}

#[test]
fn unknown_keys_at_any_level_are_named_not_rejected() {
    // Upstream ignores keys it does not know; so does LiteHit, but it names them (a typo of
    // an optional key such as `override_instance_id` would otherwise pass unnoticed).
    let mut config = base();
    config["overide_instance_id"] = json!("i1");
    config["comment"] = json!("sizing run 3");
    config["instance_groups"][0]["ttl_second"] = json!(5);
    config["instances"][0]["blok_size"] = json!(16);
    config["instances"][0]["location_spec_infos"][1]["sise"] = json!(1);
    config["instances"][0]["optimizer_state_info"]["full_group"] = json!("full");
    let parsed = parse(&config).unwrap();
    let mut unknown = parsed.unknown_keys.clone();
    unknown.sort();
    assert_eq!(
        unknown,
        [
            "comment",
            "instance_groups[0].ttl_second",
            "instances[0].blok_size",
            "instances[0].location_spec_infos[1].sise",
            "instances[0].optimizer_state_info.full_group",
            "overide_instance_id",
        ]
    );
    assert!(parse(&base()).unwrap().unknown_keys.is_empty());
}
