//! The shared pool lane (`replay --pool`, `watch --pool`, config `pool_instance_id`): one LRU
//! fed by every instance's rows. Checked against independent answers: a replay whose config
//! maps every instance to one id (`override_instance_id`), the naive LRU oracle on the merged
//! stream, the projector over the facts rows (query and mrc's pool at N × C), the live
//! monitor against the replay, and the `--shard` rule.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use proptest::prelude::*;
use serde_json::Value;

use crate::common::cli_bin::{
    FACTS, InstanceSpec, config_json, failed, generate, litehit, ok, read_facts, run_in,
    standard_trace, write_file,
};
use crate::common::oracle::OracleLru;
use crate::common::traces::prefix_tree_trace;
use litehit_core::engine::{
    Engine, EngineConfig, LaneSet, LaneSpec, Policy, Routing, shard::shard_of,
};
use litehit_core::facts::FactRecord;
use litehit_core::facts::file::FactsReader;
use litehit_core::formats::{EventKind, TraceEvent};
use litehit_core::projector::{self, Capacity};
use litehit_core::workload::WorkloadConfig;

const TRACE_BLOCK_SIZE: u64 = 16;
const BLOCK_BYTES: u64 = 16 * 65_536;
/// Longest wait of the live test: a hang fails it.
const WAIT: Duration = Duration::from_secs(120);

fn spec(instance_id: &str) -> LaneSpec {
    LaneSpec {
        instance_id: instance_id.to_owned(),
        block_size_tokens: 1,
        block_bytes: 64,
        ttl_ns: 0,
        enable_prefix_hash: false,
    }
}

/// `(trace_id, instance_id, timestamp_ns, input tokens, curve)` of every row.
type Rows = Vec<(String, String, i64, u64, Vec<[u64; 2]>)>;

fn run_engine(config: EngineConfig, events: &[TraceEvent]) -> Rows {
    let mut engine = Engine::new(config, Policy::FailFast).unwrap();
    let mut rows = Rows::new();
    for (index, event) in events.iter().enumerate() {
        engine
            .process_event(event, index as u64 + 1, &mut |row| {
                rows.push((
                    row.trace_id.to_owned(),
                    row.instance_id.to_owned(),
                    row.timestamp_ns,
                    row.input_token_len,
                    row.fact.to_pairs(),
                ));
            })
            .unwrap();
    }
    rows
}

fn events(trace: &[Vec<i64>], owners: &[usize]) -> Vec<TraceEvent> {
    trace
        .iter()
        .enumerate()
        .map(|(index, keys)| TraceEvent {
            kind: EventKind::Read,
            instance_id: Some(format!("i{}", owners[index % owners.len()])),
            trace_id: format!("t{index}"),
            timestamp_ns: i64::try_from(index).unwrap(),
            keys: keys.clone(),
            input_token_len: i64::try_from(keys.len()).unwrap(),
            tenant: None,
            cached_tokens: None,
            output_keys: Vec::new(),
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    /// The pool lane is, row for row, a replay with every instance mapped to one id; the
    /// instances' own rows are those of a run without the pool; and its hits at every
    /// capacity are the naive oracle's on the merged stream.
    #[test]
    fn the_pool_lane_is_one_lru_over_the_merged_stream(
        trace in prefix_tree_trace(),
        owners in prop::collection::vec(0..3_usize, 1..8),
    ) {
        let events = events(&trace, &owners);
        let by_instance = |pool: Option<&str>| EngineConfig {
            trace_block_size_tokens: 1,
            lanes: LaneSet::OnTheFly(spec("default")),
            routing: Routing::ByInstance,
            pool: pool.map(str::to_owned),
        };
        let with_pool = run_engine(by_instance(Some("pool")), &events);
        let without = run_engine(by_instance(None), &events);
        let override_all = run_engine(
            EngineConfig {
                trace_block_size_tokens: 1,
                lanes: LaneSet::Configured(vec![spec("pool")]),
                routing: Routing::Override("pool".to_owned()),
                pool: None,
            },
            &events,
        );
        let (pool_rows, instance_rows): (Rows, Rows) =
            with_pool.iter().cloned().partition(|row| row.1 == "pool");
        prop_assert_eq!(&pool_rows, &override_all);
        prop_assert_eq!(&instance_rows, &without);
        // Each event's pool row follows its instance row.
        for pair in with_pool.chunks(2) {
            prop_assert_eq!(&pair[0].0, &pair[1].0);
            prop_assert_eq!(pair[1].1.as_str(), "pool");
        }
        let max_blocks = trace.iter().map(Vec::len).sum::<usize>() + 1;
        for capacity in 0..=max_blocks {
            let mut oracle = OracleLru::new(Some(capacity), None);
            for (keys, row) in trace.iter().zip(&pool_rows) {
                let fact = litehit_core::facts::RequestFact::from_pairs(&row.4);
                prop_assert_eq!(
                    projector::project_blocks(&fact, capacity as u64),
                    oracle.process_request(keys, 0),
                    "capacity {}", capacity
                );
            }
        }
    }
}

#[test]
fn a_pool_name_that_is_an_instance_is_refused_at_the_first_collision() {
    let config = EngineConfig {
        trace_block_size_tokens: 1,
        lanes: LaneSet::OnTheFly(spec("default")),
        routing: Routing::ByInstance,
        pool: Some("i1".to_owned()),
    };
    let mut engine = Engine::new(config, Policy::FailFast).unwrap();
    let trace = vec![vec![1, 2], vec![1, 3], vec![1, 2]];
    let events = events(&trace, &[0, 1]);
    engine.process_event(&events[0], 1, &mut |_| {}).unwrap();
    let error = engine
        .process_event(&events[1], 2, &mut |_| {})
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("line 2") && error.contains("instance[i1]"),
        "{error}"
    );
    assert!(error.contains("pool"), "{error}");
    // A configured instance of that name, or lanes the pool cannot hold, fail at once.
    let configured = |lanes: Vec<LaneSpec>| {
        Engine::new(
            EngineConfig {
                trace_block_size_tokens: 1,
                lanes: LaneSet::Configured(lanes),
                routing: Routing::ByInstance,
                pool: Some("pool".to_owned()),
            },
            Policy::FailFast,
        )
        .map(|_| ())
        .unwrap_err()
        .to_string()
    };
    assert!(configured(vec![spec("a"), spec("pool")]).contains("configured instance id"));
    let bigger = LaneSpec {
        block_size_tokens: 2,
        ..spec("b")
    };
    assert!(configured(vec![spec("a"), bigger]).contains("one shared pool"));
}

/// A multi-instance standard trace in `dir`.
fn fleet_trace(dir: &Path, requests: usize) -> PathBuf {
    let requests = generate(
        WorkloadConfig {
            seed: 7,
            instance_ids: (0..3).map(|i| format!("engine-{i}")).collect(),
            live_conversations: 40,
            ..WorkloadConfig::default()
        },
        requests,
    );
    write_file(dir, "trace.jsonl", &standard_trace(&requests))
}

fn replay(trace: &Path, out: &Path, extra: &[&str]) -> PathBuf {
    let mut args: Vec<String> = [
        "replay",
        &trace.display().to_string(),
        "--trace-block-size",
        &TRACE_BLOCK_SIZE.to_string(),
        "--block-bytes",
        &BLOCK_BYTES.to_string(),
        "--out",
        &out.display().to_string(),
        "--quiet",
    ]
    .map(str::to_owned)
    .to_vec();
    args.extend(extra.iter().map(|&flag| flag.to_owned()));
    ok(run_in(None, &args));
    out.join(FACTS)
}

fn records(paths: &[&Path]) -> Vec<FactRecord> {
    let mut all = Vec::new();
    for path in paths {
        let mut reader = FactsReader::open(path).unwrap();
        let mut record = FactRecord::default();
        while reader.next_record(&mut record).unwrap() {
            all.push(record.clone());
        }
    }
    all
}

/// Σ hit tokens of `rows` at `capacity_blocks` (`None` = unlimited), through the projector.
fn hit_tokens<'a>(rows: impl Iterator<Item = &'a FactRecord>, capacity_blocks: Option<u64>) -> u64 {
    rows.map(|row| {
        let blocks = match capacity_blocks {
            Some(capacity) => projector::project_blocks(&row.fact, capacity),
            None => projector::project_infinite(&row.fact),
        };
        blocks * row.block_size_tokens
    })
    .sum()
}

const CAPACITIES_GB: [&str; 4] = ["0.01", "0.05", "0.2", "-1"];

fn query_summaries(facts: &[&Path], extra: &[&str]) -> Vec<Value> {
    let mut args = vec![
        "query".to_owned(),
        facts[0].display().to_string(),
        "-".to_owned(),
    ];
    args.extend(CAPACITIES_GB.map(str::to_owned));
    args.push("--summary-only".to_owned());
    for more in &facts[1..] {
        args.extend(["--shard".to_owned(), more.display().to_string()]);
    }
    args.extend(extra.iter().map(|&flag| flag.to_owned()));
    ok(run_in(None, &args))
        .stdout
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

fn u64s(value: &Value) -> Vec<u64> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|v| v.as_u64().unwrap())
        .collect()
}

/// Checks query's pool line against the projector on the facts rows: the pool at N × C,
/// the instances (and the overall line) at C each.
fn check_pool_line(summaries: &[Value], rows: &[FactRecord], pool: &str) {
    let line = summaries.last().unwrap();
    assert_eq!(line["pool"], pool, "{line}");
    let (pool_rows, instance_rows): (Vec<&FactRecord>, Vec<&FactRecord>) =
        rows.iter().partition(|row| row.instance_id == pool);
    let mut instances: Vec<&str> = instance_rows
        .iter()
        .map(|r| r.instance_id.as_str())
        .collect();
    instances.sort_unstable();
    instances.dedup();
    let n = instances.len() as u64;
    assert_eq!(line["instances"], n);
    assert_eq!(line["requests"], pool_rows.len() as u64);
    let per_instance: Vec<Option<u64>> = CAPACITIES_GB
        .iter()
        .map(|gb| Capacity::from_gb(gb.parse().unwrap()).blocks(BLOCK_BYTES))
        .collect();
    let expected_pool: Vec<u64> = per_instance
        .iter()
        .map(|blocks| hit_tokens(pool_rows.iter().copied(), blocks.map(|b| b * n)))
        .collect();
    let expected_instances: Vec<u64> = per_instance
        .iter()
        .map(|blocks| hit_tokens(instance_rows.iter().copied(), *blocks))
        .collect();
    assert_eq!(u64s(&line["pool_total_hit_tokens"]), expected_pool);
    assert_eq!(
        u64s(&line["per_instance_total_hit_tokens"]),
        expected_instances
    );
    let overall = &summaries[summaries.len() - 2];
    assert!(overall.get("instance_id").is_none() && overall.get("pool").is_none());
    assert_eq!(u64s(&overall["total_hit_tokens"]), expected_instances);
    let capacities: Vec<i64> = per_instance
        .iter()
        .map(|blocks| blocks.map_or(-1, |b| (b * n).cast_signed()))
        .collect();
    let shown: Vec<i64> = line["pool_capacity_blocks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| v.as_i64().unwrap())
        .collect();
    assert_eq!(shown, capacities);
    assert!(
        expected_pool[0] > expected_instances[0],
        "one shared cache of N × C beats N of C on shared prefixes"
    );
}

#[test]
fn replay_pool_equals_an_override_replay_and_query_compares_it_at_n_times_c() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fleet_trace(dir.path(), 1500);
    let pooled = replay(&trace, &dir.path().join("pooled"), &["--pool"]);
    let plain = replay(&trace, &dir.path().join("plain"), &[]);
    // The same pool from a config: `override_instance_id` maps every row to one lane.
    let config = write_file(
        dir.path(),
        "override.json",
        &config_json(
            &trace.display().to_string(),
            &dir.path().join("override").display().to_string(),
            TRACE_BLOCK_SIZE,
            &[InstanceSpec {
                instance_id: "pool",
                block_size: TRACE_BLOCK_SIZE,
                block_bytes: BLOCK_BYTES,
            }],
            r#""override_instance_id":"pool","#,
        ),
    );
    ok(run_in(
        None,
        ["replay", &config.display().to_string(), "--quiet"],
    ));
    let override_rows = read_facts(&dir.path().join("override").join(FACTS));
    let pooled_rows = read_facts(&pooled);
    let (pool_rows, instance_rows): (Vec<_>, Vec<_>) = pooled_rows
        .into_iter()
        .partition(|row| row.instance_id == "pool");
    assert_eq!(pool_rows, override_rows);
    assert_eq!(instance_rows, read_facts(&plain));

    // query: the pool line against the projector; recognised by the default name and by
    // `--pool NAME` alike.
    let rows = records(&[&pooled]);
    let summaries = query_summaries(&[&pooled], &[]);
    check_pool_line(&summaries, &rows, "pool");
    assert_eq!(query_summaries(&[&pooled], &["--pool", "pool"]), summaries);
    // Without a pool lane the output is byte for byte as before; with one, the lines besides
    // the pool's two are those bytes.
    let plain_out = ok(run_in(
        None,
        [
            "query",
            &plain.display().to_string(),
            "-",
            "0.01",
            "-1",
            "--summary-only",
        ],
    ))
    .stdout;
    let pooled_out = ok(run_in(
        None,
        [
            "query",
            &pooled.display().to_string(),
            "-",
            "0.01",
            "-1",
            "--summary-only",
        ],
    ))
    .stdout;
    let kept: Vec<&str> = pooled_out
        .lines()
        .filter(|line| {
            !line.contains(r#""instance_id":"pool""#) && !line.contains(r#""pool":"pool""#)
        })
        .collect();
    assert_eq!(kept.join("\n") + "\n", plain_out);
    assert!(!plain_out.contains("pool"));
    // `--pool NAME` that names no instance is an error; the default name quietly is none.
    let missing = run_in(
        None,
        [
            "query",
            &plain.display().to_string(),
            "-",
            "1",
            "--pool",
            "shared",
        ],
    );
    assert!(
        failed(&missing).contains("--pool shared"),
        "{}",
        missing.stderr
    );
}

#[test]
fn the_config_key_gives_the_facts_of_the_flag() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fleet_trace(dir.path(), 600);
    let pooled = replay(&trace, &dir.path().join("pooled"), &["--pool"]);
    let keyed = write_file(
        dir.path(),
        "keyed.json",
        &config_json(
            &trace.display().to_string(),
            &dir.path().join("keyed").display().to_string(),
            TRACE_BLOCK_SIZE,
            &(0..3)
                .map(|i| InstanceSpec {
                    instance_id: ["engine-0", "engine-1", "engine-2"][i],
                    block_size: TRACE_BLOCK_SIZE,
                    block_bytes: BLOCK_BYTES,
                })
                .collect::<Vec<_>>(),
            r#""pool_instance_id":"pool","#,
        ),
    );
    ok(run_in(
        None,
        ["replay", &keyed.display().to_string(), "--quiet"],
    ));
    let mut keyed_rows = read_facts(&dir.path().join("keyed").join(FACTS));
    let mut flag_rows = read_facts(&pooled);
    keyed_rows.sort_by(|a, b| (&a.trace_id, &a.instance_id).cmp(&(&b.trace_id, &b.instance_id)));
    flag_rows.sort_by(|a, b| (&a.trace_id, &a.instance_id).cmp(&(&b.trace_id, &b.instance_id)));
    assert_eq!(keyed_rows, flag_rows);
}

#[test]
fn mrc_compares_the_pool_at_the_totals_knees_and_leaves_it_out_of_the_total() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fleet_trace(dir.path(), 1200);
    let pooled = replay(&trace, &dir.path().join("pooled"), &["--pool"]);
    let plain = replay(&trace, &dir.path().join("plain"), &[]);
    let json = |facts: &Path| -> Value {
        serde_json::from_str(
            &ok(run_in(
                None,
                ["mrc", &facts.display().to_string(), "--json"],
            ))
            .stdout,
        )
        .unwrap()
    };
    let with = json(&pooled);
    let without = json(&plain);
    assert_eq!(
        with["total"], without["total"],
        "the pool is not in the total"
    );
    assert_eq!(with["instances"], without["instances"]);
    assert!(without.get("pool").is_none());
    let pool = &with["pool"];
    assert_eq!(pool["instances"], 3);
    let rows = records(&[&pooled]);
    let pool_rows: Vec<&FactRecord> = rows.iter().filter(|r| r.instance_id == "pool").collect();
    let instance_rows: Vec<&FactRecord> = rows.iter().filter(|r| r.instance_id != "pool").collect();
    let comparison = &pool["comparison"];
    let mut points: Vec<&Value> = comparison["knees"].as_array().unwrap().iter().collect();
    points.extend(comparison["curve"].as_array().unwrap());
    assert!(points.len() > 4);
    for point in points {
        let c = point["per_instance_capacity_blocks"].as_u64().unwrap();
        assert_eq!(point["total_capacity_blocks"], 3 * c);
        assert_eq!(
            point["pool_hit_tokens"],
            hit_tokens(pool_rows.iter().copied(), Some(3 * c))
        );
        assert_eq!(
            point["per_instance_hit_tokens"],
            hit_tokens(instance_rows.iter().copied(), Some(c))
        );
    }
    let table = ok(run_in(None, ["mrc", &pooled.display().to_string()])).stdout;
    assert!(table.contains("pool (shared by 3 instances)"), "{table}");
    assert!(table.contains("pool of N × C"), "{table}");
}

#[test]
fn shard_runs_refuse_the_pool_and_one_more_override_task_gives_it_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let trace = fleet_trace(dir.path(), 800);
    let refused = run_in(
        None,
        [
            "replay",
            &trace.display().to_string(),
            "--out",
            &dir.path().join("s").display().to_string(),
            "--pool",
            "--shard",
            "0/2",
        ],
    );
    let message = failed(&refused);
    assert!(
        message.contains("--shard 0/2") && message.contains("--instance pool"),
        "{message}"
    );
    assert!(!dir.path().join("s").join(FACTS).exists());
    // The documented way: the shards without the pool, plus the pool as one more task.
    let whole = replay(&trace, &dir.path().join("whole"), &["--pool"]);
    let mut files: Vec<PathBuf> = (0..2)
        .map(|k| {
            replay(
                &trace,
                &dir.path().join(format!("shard{k}")),
                &["--shard", &format!("{k}/2")],
            )
        })
        .collect();
    assert!((0..2).all(|k| {
        read_facts(&files[k])
            .iter()
            .all(|row| shard_of(&row.instance_id, 2) == k as u64)
    }));
    files.push(replay(
        &trace,
        &dir.path().join("pool"),
        &["--instance", "pool"],
    ));
    let paths: Vec<&Path> = files.iter().map(PathBuf::as_path).collect();
    let sharded = query_summaries(&paths, &[]);
    let unsharded = query_summaries(&[&whole], &[]);
    assert_eq!(sharded, unsharded);
    check_pool_line(&sharded, &records(&paths), "pool");
}

#[test]
fn watch_on_a_growing_file_gives_the_replays_pool_numbers() {
    let dir = tempfile::tempdir().unwrap();
    let full = fleet_trace(dir.path(), 900);
    let text = std::fs::read_to_string(&full).unwrap();
    let lines: Vec<&str> = text.lines().collect();
    let growing = dir.path().join("growing.jsonl");
    let (first, second) = lines.split_at(lines.len() / 2);
    std::fs::write(&growing, first.join("\n") + "\n").unwrap();
    let capacity_gb = "0.01,0.05";
    let mut child = litehit()
        .args([
            "watch",
            &growing.display().to_string(),
            "--headless",
            "--interval",
            "0.1",
            "--pool",
            "--trace-block-size",
            &TRACE_BLOCK_SIZE.to_string(),
            "--block-bytes",
            &BLOCK_BYTES.to_string(),
            "--capacity-gb",
            capacity_gb,
        ])
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (sender, receiver) = std::sync::mpsc::channel::<Value>();
    std::thread::spawn(move || {
        use std::io::BufRead as _;
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Ok(value) = serde_json::from_str(&line) {
                let _ = sender.send(value);
            }
        }
    });
    let wait_for = |requests: usize| -> Value {
        let started = Instant::now();
        loop {
            let left = WAIT
                .checked_sub(started.elapsed())
                .expect("the monitor keeps up");
            let line = receiver.recv_timeout(left).expect("a headless line");
            if line["total"]["requests"] == requests as u64 {
                return line;
            }
        }
    };
    wait_for(first.len());
    let mut file = std::fs::OpenOptions::new()
        .append(true)
        .open(&growing)
        .unwrap();
    file.write_all((second.join("\n") + "\n").as_bytes())
        .unwrap();
    drop(file);
    let last = wait_for(lines.len());
    let _ = child.kill();
    let _ = child.wait();

    let pooled = replay(&full, &dir.path().join("replayed"), &["--pool"]);
    let rows = records(&[&pooled]);
    let instances = last["instances"].as_array().unwrap();
    let pool = instances.last().unwrap();
    assert_eq!(pool["instance_id"], "pool");
    assert_eq!(pool["kind"], "pool");
    assert_eq!(pool["shared_by"], 3);
    assert!(
        instances[..instances.len() - 1]
            .iter()
            .all(|i| i.get("kind").is_none())
    );
    let pool_rows: Vec<&FactRecord> = rows.iter().filter(|r| r.instance_id == "pool").collect();
    assert_eq!(pool["requests"], pool_rows.len() as u64);
    assert_eq!(
        last["total"]["requests"],
        pool_rows.len() as u64,
        "the pool is not in the total"
    );
    for (index, gb) in capacity_gb.split(',').enumerate() {
        let blocks = Capacity::from_gb(gb.parse().unwrap())
            .blocks(BLOCK_BYTES)
            .unwrap();
        assert_eq!(
            pool["hit_tokens"][index],
            hit_tokens(pool_rows.iter().copied(), Some(3 * blocks)),
            "slot {gb}: the pool at 3 × the slot"
        );
        assert_eq!(pool["slot_results"][index]["capacity_blocks"], 3 * blocks);
    }
    assert_eq!(
        pool["infinite_hit_tokens"],
        hit_tokens(pool_rows.iter().copied(), None)
    );
}

#[test]
fn the_fleet_table_shows_the_pool_below_the_total_and_leaves_it_out() {
    use litehit_live::LiveSnapshot;
    use litehit_live::snapshot::{LaneSnapshot, Slot};
    let lane = |id: &str, requests: u64, input_tokens: u64, hits: u64| LaneSnapshot {
        instance_id: id.to_owned(),
        block_size_tokens: 16,
        block_bytes: 1 << 20,
        requests,
        input_tokens,
        slot_hit_blocks: vec![hits],
        infinite_hit_blocks: hits * 2,
        ..LaneSnapshot::default()
    };
    let snap = LiveSnapshot {
        slots: vec![Slot {
            id: 1,
            capacity: Capacity::Gigabytes(1.0),
        }],
        lanes: vec![
            lane("engine-a", 10, 1600, 20),
            lane("engine-b", 30, 1600, 30),
        ],
        // 50 hit blocks × 16 tokens of 3200: the pool at 2 × 1 GiB.
        pool: Some(lane("pool", 40, 3200, 100)),
        ..LiveSnapshot::default()
    }
    .finished();
    let mut app = litehit_tui::app::App::default();
    app.observe(&snap);
    let screen = crate::tui::render::screen_rows(&snap, &app, 120, 40);
    let row_of = |name: &str| {
        screen
            .iter()
            .position(|line| line.contains(name))
            .unwrap_or_else(|| panic!("no {name} row:\n{}", screen.join("\n")))
    };
    let total = row_of("total");
    let pool = row_of("pool (shared)");
    assert_eq!(pool, total + 1, "{}", screen.join("\n"));
    // The total is the instances' 40 requests and (20 + 30) × 16 / 3200 = 25.0 %; the pool
    // row shows its own 40 and 100 × 16 / 3200 = 50.0 %.
    assert!(screen[total].contains("25.0"), "{}", screen[total]);
    assert!(screen[pool].contains("50.0"), "{}", screen[pool]);
    assert!(
        screen
            .iter()
            .any(|line| line.contains("shared pool at 2 × slot"))
    );
}
