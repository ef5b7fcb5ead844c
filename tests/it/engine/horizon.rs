//! `--memory-horizon`: the core against the naive per-capacity LRU oracle with a horizon of
//! `H` blocks. Every capacity up to `H` is exact (with and without TTL); above it the hits
//! are lower bounds; and the keys held stay near `H` however many unique blocks pass.

use crate::common::oracle::OracleBank;
use crate::common::traces::prefix_tree_trace;
use litehit_core::facts::RequestFact;
use litehit_core::projector::{project_blocks, project_infinite};
use litehit_core::workload::{KeyStyle, Workload, WorkloadConfig};
use litehit_core::{COMPACTION_SLACK_POSITIONS, LiteHit};
use proptest::prelude::*;

const CAPACITIES: [Option<usize>; 10] = [
    Some(0),
    Some(1),
    Some(2),
    Some(3),
    Some(5),
    Some(8),
    Some(13),
    Some(40),
    Some(3_000),
    None,
];

fn project(fact: &RequestFact, capacity: Option<usize>) -> u64 {
    capacity.map_or_else(
        || project_infinite(fact),
        |c| project_blocks(fact, c as u64),
    )
}

/// Checks one request: equal to the oracle at every capacity `<= horizon`, at most the
/// oracle's above it.
fn check_request(
    fact: &RequestFact,
    expected: &[u64],
    capacities: &[Option<usize>],
    horizon: usize,
) -> Result<(), TestCaseError> {
    for (&capacity, &hits) in capacities.iter().zip(expected) {
        let got = project(fact, capacity);
        if capacity.is_some_and(|c| c <= horizon) {
            prop_assert_eq!(
                got,
                hits,
                "capacity {:?} within horizon {}",
                capacity,
                horizon
            );
        } else {
            prop_assert!(
                got <= hits,
                "capacity {:?} above horizon {}: {} > oracle {}",
                capacity,
                horizon,
                got,
                hits
            );
        }
    }
    Ok(())
}

fn check_trace(
    trace: &[Vec<i64>],
    timestamps: &[i64],
    ttl_ns: u64,
    horizon: usize,
) -> Result<(), TestCaseError> {
    let mut core = LiteHit::with_ttl_ns(ttl_ns).with_memory_horizon_blocks(Some(horizon as u64));
    let oracle_ttl = (ttl_ns > 0).then(|| i64::try_from(ttl_ns).unwrap());
    let mut oracle = OracleBank::new(&CAPACITIES, oracle_ttl);
    for (keys, &now_ns) in trace.iter().zip(timestamps) {
        let fact = core.process_request(keys, now_ns);
        let expected = oracle.process_request(keys, now_ns);
        check_request(&fact, &expected, &CAPACITIES, horizon)?;
        prop_assert!(core.current_unique_blocks() <= horizon as u64);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn exact_up_to_the_horizon_and_lower_bounds_above(
        trace in prefix_tree_trace(),
        horizon in 1..20_usize,
    ) {
        let timestamps: Vec<i64> = (0..i64::try_from(trace.len()).unwrap()).collect();
        check_trace(&trace, &timestamps, 0, horizon)?;
    }

    #[test]
    fn with_a_ttl_exact_up_to_the_horizon_and_lower_bounds_above(
        trace in prefix_tree_trace(),
        gaps in prop::collection::vec(prop_oneof![Just(0_i64), 1..5_i64, 5..40_i64], 60),
        ttl_ns in prop_oneof![Just(1_u64), 2..10_u64, 10..60_u64],
        horizon in 1..20_usize,
    ) {
        let timestamps: Vec<i64> = gaps
            .iter()
            .scan(1_000, |t, gap| {
                *t += gap;
                Some(*t)
            })
            .collect();
        check_trace(&trace, &timestamps, ttl_ns, horizon)?;
    }
}

/// Long generated workloads, so the horizon's compactions really drop keys: exactness up to
/// the horizon holds through them, with and without TTL, and the key table stays bounded.
#[test]
fn compactions_past_the_horizon_keep_every_capacity_up_to_it_exact() {
    let horizon = 400_usize;
    let capacities = [Some(0), Some(50), Some(399), Some(400), Some(3_000), None];
    for (key_style, ttl_ns) in [
        (KeyStyle::Dense, 0_i64),
        (KeyStyle::Hashed, 0),
        (KeyStyle::Hashed, 1_000_000_000), // about a third of the trace
    ] {
        let config = WorkloadConfig {
            seed: 11,
            key_style,
            live_conversations: 60,
            max_request_blocks: 120,
            ..WorkloadConfig::default()
        };
        let mut oracle = OracleBank::new(&capacities, (ttl_ns > 0).then_some(ttl_ns));
        let mut core = LiteHit::with_ttl_ns(ttl_ns.unsigned_abs())
            .with_memory_horizon_blocks(Some(horizon as u64));
        let mut unbounded = LiteHit::with_ttl_ns(ttl_ns.unsigned_abs());
        let mut below_oracle_above_horizon = false;
        for request in Workload::new(config).take(1_500) {
            let fact = core.process_request(&request.keys, request.timestamp_ns);
            unbounded.process_request(&request.keys, request.timestamp_ns);
            let expected = oracle.process_request(&request.keys, request.timestamp_ns);
            check_request(&fact, &expected, &capacities, horizon).unwrap();
            below_oracle_above_horizon |= project(&fact, Some(3_000)) < expected[4];
            assert!(
                core.tracked_keys() <= horizon + horizon / 8 + COMPACTION_SLACK_POSITIONS,
                "{} keys held",
                core.tracked_keys()
            );
        }
        assert!(
            unbounded.tracked_keys() > 2 * (horizon + COMPACTION_SLACK_POSITIONS),
            "trace too small for the horizon to drop keys: {} ({key_style:?}, ttl {ttl_ns})",
            unbounded.tracked_keys()
        );
        assert!(
            ttl_ns == 0 || unbounded.ttl_expired_blocks() > 0,
            "the TTL never expired a key"
        );
        assert!(
            below_oracle_above_horizon,
            "the horizon never forgot a reused key ({key_style:?}, ttl {ttl_ns})"
        );
    }
}

/// `replay --memory-horizon`: a horizon deeper than any reuse leaves the facts byte-identical;
/// a shallow one changes them and the summary says results above it are lower bounds; byte
/// sizes such as `20TiB` are taken.
#[test]
fn replay_memory_horizon_flag() {
    use crate::common::cli_bin::{generate, run_ok, standard_trace, write_file};
    let dir = tempfile::tempdir().unwrap();
    let config = WorkloadConfig {
        seed: 5,
        live_conversations: 30,
        max_request_blocks: 60,
        ..WorkloadConfig::default()
    };
    let trace = write_file(
        dir.path(),
        "trace.jsonl",
        &standard_trace(&generate(config, 600)),
    );
    let replay = |name: &str, extra: &[&str]| {
        let out = dir.path().join(name);
        let mut args = vec![
            "replay".to_owned(),
            trace.display().to_string(),
            "--out".to_owned(),
            out.display().to_string(),
            "--block-size".to_owned(),
            "16".to_owned(),
        ];
        args.extend(extra.iter().map(|&arg| arg.to_owned()));
        let run = run_ok(args);
        (
            std::fs::read(out.join("litehit_facts.csv")).unwrap(),
            run.stderr,
        )
    };
    let (exact, exact_stderr) = replay("exact", &[]);
    assert!(!exact_stderr.contains("lower bounds"), "{exact_stderr}");
    for deep in ["20TiB", "50000000b"] {
        let (facts, stderr) = replay(deep, &["--memory-horizon", deep]);
        assert_eq!(facts, exact, "horizon {deep} changed the facts");
        assert!(stderr.contains("lower bounds"), "{stderr}");
    }
    let (shallow, stderr) = replay("shallow", &["--memory-horizon", "50b"]);
    assert_ne!(shallow, exact, "a 50-block horizon changed nothing");
    assert!(
        stderr.contains(
            "memory horizon: 50 blocks; hits at larger capacities (and ∞, marked ≥) are lower bounds"
        ),
        "{stderr}"
    );
}
