use super::*;
use crate::facts::RequestFact;

fn spec(instance_id: &str, block_size_tokens: u64) -> LaneSpec {
    LaneSpec {
        instance_id: instance_id.into(),
        block_size_tokens,
        block_bytes: 1024,
        ttl_ns: 0,
        enable_prefix_hash: false,
    }
}

fn event(
    instance: Option<&str>,
    timestamp_ns: i64,
    keys: &[i64],
    input_token_len: i64,
) -> TraceEvent {
    TraceEvent {
        kind: EventKind::Read,
        instance_id: instance.map(str::to_owned),
        trace_id: String::new(),
        timestamp_ns,
        keys: keys.to_vec(),
        input_token_len,
        tenant: None,
        cached_tokens: None,
        output_keys: Vec::new(),
    }
}

/// `(trace_id, instance_id, curve pairs)` of every row produced.
type Rows = Vec<(String, String, Vec<[u64; 2]>)>;

fn run(engine: &mut Engine, events: &[TraceEvent]) -> Result<Rows, EngineError> {
    let mut rows = Vec::new();
    for (index, e) in events.iter().enumerate() {
        engine.process_event(e, index as u64 + 1, &mut |row| {
            rows.push((
                row.trace_id.to_owned(),
                row.instance_id.to_owned(),
                row.fact.to_pairs(),
            ));
        })?;
    }
    Ok(rows)
}

fn configured(
    specs: Vec<LaneSpec>,
    routing: Routing,
    trace_block_size_tokens: u64,
) -> EngineConfig {
    EngineConfig {
        trace_block_size_tokens,
        lanes: LaneSet::Configured(specs),
        routing,
        pool: None,
    }
}

#[test]
fn design_example_through_the_engine() {
    let mut engine = Engine::new(
        configured(vec![spec("i1", 4)], Routing::ByInstance, 4),
        Policy::FailFast,
    )
    .unwrap();
    let (a, b, c, d, e) = (1, 2, 3, 4, 5);
    let events = [
        event(Some("i1"), 1, &[a, b, c], 13),
        event(Some("i1"), 2, &[a, b, d], 12),
        event(Some("i1"), 3, &[a, b, c], 13),
        event(Some("i1"), 4, &[a, e], 8),
        event(Some("i1"), 5, &[a, e], 8),
    ];
    let rows = run(&mut engine, &events).unwrap();
    let curves: Vec<_> = rows.iter().map(|r| r.2.clone()).collect();
    assert_eq!(
        curves,
        vec![
            vec![],
            vec![[1, 2]],
            vec![[1, 2], [4, 1]],
            vec![[1, 1]],
            vec![[1, 2]]
        ]
    );
    assert_eq!(rows[0].0, "trace_i1_1", "upstream default trace id");
    let lane = &engine.lanes()[0];
    assert_eq!(lane.input_tokens(), 54);
    assert_eq!(
        lane.hit_tokens_at(crate::projector::Capacity::Blocks(2))
            .unwrap(),
        28
    );
    assert_eq!(
        lane.hit_tokens_at(crate::projector::Capacity::Infinite),
        Some(32)
    );
    assert_eq!(
        lane.hit_blocks_at(crate::projector::Capacity::Gigabytes(
            3072.0 / f64::from(1 << 30)
        )),
        Some(7)
    );
}

#[test]
fn fanout_replays_every_row_on_every_lane_with_its_own_block_size() {
    let config = configured(vec![spec("fine", 4), spec("coarse", 8)], Routing::Fanout, 4);
    let mut engine = Engine::new(config, Policy::FailFast).unwrap();
    let rows = run(
        &mut engine,
        &[
            event(Some("whatever"), 1, &[1, 2, 3, 4], 16),
            event(None, 2, &[1, 2, 3, 4], 16),
        ],
    )
    .unwrap();
    assert_eq!(rows.len(), 4);
    assert_eq!(
        rows[2],
        (
            "trace_whatever_1".replace("whatever_1", "fine_2"),
            "fine".into(),
            vec![[1, 4]]
        )
    );
    assert_eq!(rows[3].1, "coarse");
    assert_eq!(
        rows[3].2,
        vec![[1, 2]],
        "coarse lane sees keys 2 and 4 only"
    );
    assert_eq!(engine.lanes()[1].request_blocks(), 4);
}

#[test]
fn override_sends_every_row_to_one_lane() {
    let config = configured(
        vec![spec("a", 4), spec("b", 4)],
        Routing::Override("b".into()),
        4,
    );
    let mut engine = Engine::new(config, Policy::FailFast).unwrap();
    let rows = run(
        &mut engine,
        &[event(Some("a"), 1, &[1], 4), event(None, 2, &[1], 4)],
    )
    .unwrap();
    assert_eq!(rows[0].1, "b");
    assert_eq!(
        rows[0].0, "trace_a_1",
        "default trace id keeps the row's own instance"
    );
    assert_eq!(
        rows[1].0, "trace_b_2",
        "a row without instance: the override lane"
    );
    assert_eq!(rows[1].2, vec![[1, 1]]);
}

#[test]
fn unknown_and_ambiguous_instances_fail_fast() {
    let config = configured(vec![spec("a", 4), spec("b", 4)], Routing::ByInstance, 4);
    let mut engine = Engine::new(config.clone(), Policy::FailFast).unwrap();
    let error = run(&mut engine, &[event(Some("zzz"), 1, &[1], 4)]).unwrap_err();
    assert!(
        error.to_string().contains("unknown instance[zzz]"),
        "{error}"
    );
    assert_eq!(error.line_number(), Some(1));
    let mut engine = Engine::new(config, Policy::FailFast).unwrap();
    let error = run(&mut engine, &[event(None, 1, &[1], 4)]).unwrap_err();
    assert!(
        error.to_string().contains("override_instance_id"),
        "{error}"
    );
}

#[test]
fn rows_without_instance_go_to_the_single_configured_lane() {
    let mut engine = Engine::new(
        configured(vec![spec("only", 4)], Routing::ByInstance, 4),
        Policy::FailFast,
    )
    .unwrap();
    let rows = run(&mut engine, &[event(None, 1, &[1], 4)]).unwrap();
    assert_eq!(rows[0].1, "only");
}

#[test]
fn out_of_order_fails_fast_even_for_write_rows() {
    let mut engine = Engine::new(
        configured(vec![spec("a", 4)], Routing::ByInstance, 4),
        Policy::FailFast,
    )
    .unwrap();
    let mut write = event(Some("a"), 10, &[9], 0);
    write.kind = EventKind::Write;
    let error = run(&mut engine, &[write, event(Some("a"), 9, &[1], 4)]).unwrap_err();
    assert!(
        matches!(error, EngineError::OutOfOrder { line_number: 2, .. }),
        "{error}"
    );
    assert!(error.to_string().contains("not sorted by timestamp_ns"));
    assert_eq!(engine.stats().write_events, 1);
}

#[test]
fn equal_timestamps_are_fine() {
    let mut engine = Engine::new(
        configured(vec![spec("a", 4)], Routing::ByInstance, 4),
        Policy::FailFast,
    )
    .unwrap();
    assert!(
        run(
            &mut engine,
            &[event(Some("a"), 5, &[1], 4), event(Some("a"), 5, &[1], 4)]
        )
        .is_ok()
    );
}

#[test]
fn length_violation_names_line_and_trace() {
    let mut engine = Engine::new(
        configured(vec![spec("a", 4)], Routing::ByInstance, 4),
        Policy::FailFast,
    )
    .unwrap();
    let mut bad = event(Some("a"), 1, &[1, 2], 13);
    bad.trace_id = "req-7".into();
    let error = run(&mut engine, &[bad]).unwrap_err();
    let message = error.to_string();
    assert!(
        message.starts_with("line 1: trace_id[req-7]: invalid request:"),
        "{message}"
    );
    assert!(message.contains("expected 3 keys"), "{message}");
    assert!(
        !message.contains("they fit"),
        "13 tokens fit no block size: {message}"
    );
}

#[test]
fn length_violation_names_a_power_of_two_that_fits_an_unrelated_size() {
    // 1000-token analysis blocks over a trace of 256-token keys: 2048 tokens make 8 keys.
    let mut engine = Engine::new(
        configured(vec![spec("a", 1000)], Routing::ByInstance, 1000),
        Policy::FailFast,
    )
    .unwrap();
    let keys: Vec<i64> = (1..=8).collect();
    let error = run(&mut engine, &[event(Some("a"), 1, &keys, 2048)]).unwrap_err();
    assert!(
        error.to_string().contains("(they fit 256-token blocks"),
        "{error}"
    );
}

#[test]
fn length_violation_names_the_block_size_the_keys_fit() {
    // A trace of 16-token blocks read with a lane of 64-token blocks: 40 tokens make 2 keys.
    let mut engine = Engine::new(
        configured(vec![spec("a", 64)], Routing::ByInstance, 64),
        Policy::FailFast,
    )
    .unwrap();
    let error = run(&mut engine, &[event(Some("a"), 1, &[1, 2], 40)]).unwrap_err();
    let message = error.to_string();
    assert!(
        message.ends_with(
            "found 2 (they fit 16-token blocks: --trace-block-size 16 or a config's block_size; \
             --block-size can only be a multiple of it)"
        ),
        "{message}"
    );
}

#[test]
fn skip_and_count_keeps_going_and_clamps_time() {
    let template = spec("default", 4);
    let config = EngineConfig {
        trace_block_size_tokens: 4,
        lanes: LaneSet::OnTheFly(template),
        routing: Routing::ByInstance,
        pool: None,
    };
    let mut engine = Engine::new(config, Policy::SkipAndCount).unwrap();
    let rows = run(
        &mut engine,
        &[
            event(Some("x"), 10, &[1, 2], 8),
            event(Some("x"), 11, &[1, 2], 13), // bad length: skipped
            event(Some("y"), 5, &[1], 4),      // out of order: clamped, counted, kept
            event(None, 12, &[1], 4),          // no instance: lane "default"
        ],
    )
    .unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(engine.stats().bad_lines, 1);
    assert_eq!(engine.stats().out_of_order_timestamps, 1);
    assert_eq!(
        engine.stats().last_error.as_ref().map(|e| e.line_number),
        Some(2)
    );
    let names: Vec<_> = engine
        .lanes()
        .iter()
        .map(|l| l.spec().instance_id.clone())
        .collect();
    assert_eq!(names, ["x", "y", "default"]);
    assert_eq!(
        engine.lanes()[0].requests(),
        1,
        "the skipped row did not reach the lane"
    );
}

#[test]
fn bad_lane_fails_at_setup() {
    let error = Engine::new(
        configured(vec![spec("a", 6)], Routing::ByInstance, 4),
        Policy::FailFast,
    )
    .unwrap_err();
    assert!(error.to_string().contains("coarsening only"), "{error}");
}

#[test]
fn engine_facts_equal_direct_core_facts() {
    let mut engine = Engine::new(
        configured(vec![spec("a", 4)], Routing::ByInstance, 4),
        Policy::FailFast,
    )
    .unwrap();
    let mut core = crate::hitcore::LiteHit::new();
    let requests: [&[i64]; 4] = [&[1, 2, 3], &[1, 2, 4], &[1, 5], &[1, 2, 3]];
    for (index, keys) in requests.iter().enumerate() {
        let mut seen = RequestFact::default();
        engine
            .process_event(
                &event(Some("a"), 1, keys, 0),
                index as u64 + 1,
                &mut |row| seen = row.fact.clone(),
            )
            .unwrap();
        assert_eq!(seen, core.process_request(keys, 1));
    }
}

#[test]
fn without_capacity_curves_keeps_facts_and_infinite_totals() {
    let config = configured(vec![spec("a", 4)], Routing::ByInstance, 4);
    let mut with = Engine::new(config.clone(), Policy::FailFast).unwrap();
    let mut without = Engine::new(config, Policy::FailFast)
        .unwrap()
        .without_capacity_curves();
    let events = [
        event(Some("a"), 1, &[1, 2, 3], 12),
        event(Some("a"), 2, &[1, 2, 4], 12),
    ];
    assert_eq!(
        run(&mut with, &events).unwrap(),
        run(&mut without, &events).unwrap()
    );
    let (lane_with, lane_without) = (&with.lanes()[0], &without.lanes()[0]);
    assert_eq!(lane_without.infinite_hit_blocks(), 2);
    assert_eq!(
        lane_with.hit_blocks_at(crate::projector::Capacity::Infinite),
        Some(2)
    );
    assert_eq!(
        lane_without.hit_blocks_at(crate::projector::Capacity::Blocks(5)),
        None
    );
    assert!(lane_without.accumulator().is_none());
    assert!(lane_without.memory_usage_bytes() < lane_with.memory_usage_bytes());
}

#[test]
fn batched_fanout_on_lane_threads_equals_event_by_event() {
    use crate::workload::{Workload, WorkloadConfig};
    let lanes = vec![spec("fine", 16), spec("coarse", 32), spec("coarser", 64)];
    let config = configured(lanes, Routing::Fanout, 16);
    let events: Vec<TraceEvent> = Workload::new(WorkloadConfig::default())
        .take(3000)
        .map(|r| {
            event(
                Some("x"),
                r.timestamp_ns,
                &r.keys,
                i64::try_from(r.input_token_len).unwrap(),
            )
        })
        .collect();
    let line_numbers: Vec<u64> = (1..=events.len() as u64).collect();
    assert!(
        events.iter().map(|e| e.keys.len()).sum::<usize>() > 3 * super::batch_parallel_min_keys()
    );
    let mut one_by_one = Engine::new(config.clone(), Policy::FailFast).unwrap();
    let expected = run(&mut one_by_one, &events).unwrap();
    let mut batched = Engine::new(config, Policy::FailFast).unwrap();
    let mut rows = Vec::new();
    for (chunk, lines) in events.chunks(1000).zip(line_numbers.chunks(1000)) {
        batched
            .process_events(chunk, lines, &mut |row| {
                rows.push((
                    row.trace_id.to_owned(),
                    row.instance_id.to_owned(),
                    row.fact.to_pairs(),
                ));
            })
            .unwrap();
    }
    assert_eq!(rows, expected);
    assert_eq!(batched.stats(), one_by_one.stats());
}

#[test]
fn batch_hands_out_rows_before_the_first_bad_event() {
    let mut engine = Engine::new(
        configured(vec![spec("a", 4)], Routing::ByInstance, 4),
        Policy::FailFast,
    )
    .unwrap();
    let events = [
        event(Some("a"), 1, &[1], 4),
        event(Some("a"), 2, &[1, 2], 4), // length violation
        event(Some("a"), 3, &[1], 4),
    ];
    let mut rows = 0;
    let error = engine
        .process_events(&events, &[1, 2, 3], &mut |_| rows += 1)
        .unwrap_err();
    assert_eq!(error.line_number(), Some(2));
    assert_eq!(rows, 1);
    assert_eq!(
        engine.lanes()[0].requests(),
        1,
        "nothing after the bad event was replayed"
    );
}

/// Issue #27 (Medium 4): input tokens that would wrap a lane's total (here three rows of
/// 2^63 − 1 tokens: blocks of 2^62 tokens make such lengths valid) are refused at the row,
/// naming line, trace and field; offline fails fast, live skips and counts the row, and the
/// totals stay exact. Without the check the lane's `+=` overflowed (a panic in a debug build,
/// a wrapped hit rate in a release one).
#[test]
fn input_tokens_that_would_wrap_a_total_are_refused() {
    let half = i64::MAX;
    let half_tokens = half.cast_unsigned();
    let events = [
        event(Some("a"), 1, &[1], half),
        event(Some("b"), 2, &[1], half), // another lane: the fleet total counts both
        event(Some("a"), 3, &[1], half),
        event(Some("a"), 4, &[], 1), // 2^64 - 1 in all: fits
    ];
    let config = || EngineConfig {
        trace_block_size_tokens: 1 << 62,
        lanes: LaneSet::OnTheFly(spec("default", 1 << 62)),
        routing: Routing::ByInstance,
        pool: None,
    };
    let mut offline = Engine::new(config(), Policy::FailFast).unwrap();
    let error = run(&mut offline, &events).unwrap_err();
    assert_eq!(error.line_number(), Some(3));
    assert!(
        error.to_string().contains(&format!(
            "field \"input_len\": {half} takes the input tokens of the rows read so far ({}",
            2 * half_tokens
        )),
        "{error}"
    );
    let mut live = Engine::new(config(), Policy::SkipAndCount).unwrap();
    let rows = run(&mut live, &events).unwrap();
    assert_eq!(rows.len(), 3);
    assert_eq!(live.stats().bad_lines, 1);
    let totals: Vec<u64> = live.lanes().iter().map(Lane::input_tokens).collect();
    assert_eq!(totals, [half_tokens + 1, half_tokens]);
}

/// Issue #27 (Medium 1): rows in time order per instance, interleaved across instances, must
/// expire on each lane's own clock, not on the latest time of any instance.
#[test]
fn each_lane_expires_on_its_own_clock() {
    let template = LaneSpec {
        ttl_ns: 10,
        ..spec("default", 4)
    };
    let config = EngineConfig {
        trace_block_size_tokens: 4,
        lanes: LaneSet::OnTheFly(template),
        routing: Routing::ByInstance,
        pool: None,
    };
    let mut engine = Engine::new(config, Policy::SkipAndCount).unwrap();
    let rows = run(
        &mut engine,
        &[
            event(Some("x"), 100, &[1], 4),
            // y's rows are in y's time order, behind x's: 20 ns apart, beyond the TTL.
            event(Some("y"), 0, &[7], 4),
            event(Some("y"), 20, &[7], 4),
        ],
    )
    .unwrap();
    assert_eq!(
        rows[2].2,
        Vec::<[u64; 2]>::new(),
        "expired on y's clock: a miss"
    );
    assert_eq!(engine.stats().out_of_order_timestamps, 2);
    let clamped: Vec<u64> = engine
        .lanes()
        .iter()
        .map(Lane::clamped_timestamps)
        .collect();
    assert_eq!(
        clamped,
        [0, 0],
        "each lane's rows came in its own time order"
    );
}

/// The pool lane takes every instance's rows: rows not in global time order are clamped on
/// its clock, and counted.
#[test]
fn the_pool_counts_rows_out_of_global_order() {
    let config = EngineConfig {
        trace_block_size_tokens: 4,
        lanes: LaneSet::OnTheFly(spec("default", 4)),
        routing: Routing::ByInstance,
        pool: Some("pool".to_owned()),
    };
    let mut engine = Engine::new(config, Policy::SkipAndCount).unwrap();
    run(
        &mut engine,
        &[
            event(Some("x"), 100, &[1], 4),
            event(Some("y"), 0, &[7], 4),
            event(Some("y"), 20, &[7], 4),
        ],
    )
    .unwrap();
    let pool = engine.pool_lane().expect("a pool lane");
    assert_eq!(pool.clamped_timestamps(), 2);
}

#[test]
fn lane_threads_stay_under_the_cap_and_the_rows_do_not_change() {
    use crate::workload::{Workload, WorkloadConfig};
    use std::num::NonZeroUsize;
    let lanes = (1..=5)
        .map(|n| spec(&format!("lane-{n}"), 16 * n))
        .collect();
    let config = configured(lanes, Routing::Fanout, 16);
    let events: Vec<TraceEvent> = Workload::new(WorkloadConfig::default())
        .take(3000)
        .map(|r| {
            event(
                Some("x"),
                r.timestamp_ns,
                &r.keys,
                i64::try_from(r.input_token_len).unwrap(),
            )
        })
        .collect();
    let line_numbers: Vec<u64> = (1..=events.len() as u64).collect();
    // Batches big enough that five busy lanes replay in parallel.
    assert!(
        events.iter().map(|e| e.keys.len()).sum::<usize>() > 3 * super::batch_parallel_min_keys()
    );
    let batched = |engine: &mut Engine| {
        let mut rows = Vec::new();
        for (chunk, lines) in events.chunks(1000).zip(line_numbers.chunks(1000)) {
            engine
                .process_events(chunk, lines, &mut |row| {
                    rows.push((row.instance_id.to_owned(), row.fact.to_pairs()));
                })
                .unwrap();
        }
        rows
    };
    let mut one_by_one = Engine::new(config.clone(), Policy::FailFast).unwrap();
    let expected: Vec<_> = run(&mut one_by_one, &events)
        .unwrap()
        .into_iter()
        .map(|(_, instance, pairs)| (instance, pairs))
        .collect();
    assert_eq!(one_by_one.peak_lane_threads(), 1, "one event at a time");
    for (cap, peak) in [(1, 1), (2, 2), (3, 3), (8, 5)] {
        let threads = NonZeroUsize::new(cap).unwrap();
        let mut engine = Engine::new(config.clone(), Policy::FailFast)
            .unwrap()
            .with_threads(threads);
        assert_eq!(batched(&mut engine), expected, "cap {cap}");
        // Five busy lanes: as many threads as the cap allows (a spawn that fails would replay
        // its lanes on the calling thread, which this machine does not run out of).
        assert_eq!(engine.peak_lane_threads(), peak, "cap {cap}");
    }
}

#[test]
fn thread_groups_deal_every_lane_once_to_at_most_the_cap() {
    use std::num::NonZeroUsize;
    for lanes in 0..9 {
        for cap in 1..6 {
            let groups = super::batch::thread_groups(lanes, NonZeroUsize::new(cap).unwrap());
            assert_eq!(groups.len(), cap.min(lanes), "{lanes} lanes, cap {cap}");
            let mut dealt: Vec<usize> = groups.concat();
            dealt.sort_unstable();
            assert_eq!(dealt, (0..lanes).collect::<Vec<_>>());
            assert!(groups.iter().all(|group| group.is_sorted()));
        }
    }
}
