//! `replay --policy`: OPT facts from the real binary, per lane and for the pool lane, against
//! the naive Belady simulator (`common/opt_oracle.rs`); LRU facts byte-identical with and
//! without OPT beside them; the file names; TTL and the memory horizon refused with OPT.

use crate::common::traces::two_lane_prefix_trace;

use crate::common::cli_bin::{
    FACTS, assert_mentions, failed, ok, read_facts, replay_to, write_file,
};
use crate::common::opt_oracle::min_unit_hits;
use litehit_core::facts::RequestFact;
use litehit_core::projector::{project_blocks, project_infinite};

const OPT_FACTS: &str = "litehit_facts.opt.csv";

/// 400 standard `get` rows over instances `a` and `b`: chains that re-send a prefix of an
/// earlier request and extend it (a small deterministic prefix tree), 4 tokens per block.
fn trace() -> (String, Vec<(String, Vec<i64>)>) {
    two_lane_prefix_trace(0x2545_f491_4f6c_dd1d, 400, 4)
}

fn curve(text: &str) -> RequestFact {
    let pairs: Vec<[u64; 2]> = serde_json::from_str(text).unwrap();
    RequestFact::from_pairs(&pairs)
}

#[test]
fn lru_and_opt_from_one_read_per_lane_and_for_the_pool() {
    let dir = tempfile::tempdir().unwrap();
    let (text, requests) = trace();
    let trace_path = write_file(dir.path(), "trace.jsonl", &text);
    let flags = ["--block-size", "4", "--pool", "-q"];
    let (both, lru, opt) = (
        dir.path().join("both"),
        dir.path().join("lru"),
        dir.path().join("opt"),
    );
    ok(replay_to(
        &trace_path,
        &both,
        &[&flags[..], &["--policy", "lru,opt"]].concat(),
    ));
    ok(replay_to(&trace_path, &lru, &flags));
    ok(replay_to(
        &trace_path,
        &opt,
        &[&flags[..], &["--policy", "opt"]].concat(),
    ));
    let read = |path: std::path::PathBuf| std::fs::read(path).unwrap();
    // LRU is byte-identical with OPT beside it; OPT alone writes what `lru,opt` writes beside.
    assert_eq!(read(both.join(FACTS)), read(lru.join(FACTS)));
    assert_eq!(read(both.join(OPT_FACTS)), read(opt.join(FACTS)));
    assert!(!opt.join(OPT_FACTS).exists() && !lru.join(OPT_FACTS).exists());

    let rows = read_facts(&both.join(OPT_FACTS));
    for lane in ["a", "b", "pool"] {
        let lane_requests: Vec<Vec<i64>> = requests
            .iter()
            .filter(|(instance, _)| lane == "pool" || instance == lane)
            .map(|(_, keys)| keys.clone())
            .collect();
        let lane_rows: Vec<_> = rows.iter().filter(|row| row.instance_id == lane).collect();
        assert_eq!(lane_rows.len(), lane_requests.len(), "lane {lane}");
        for capacity in [
            Some(1),
            Some(2),
            Some(3),
            Some(5),
            Some(8),
            Some(20),
            Some(60),
            None,
        ] {
            let expected = min_unit_hits(&lane_requests, capacity);
            for (index, row) in lane_rows.iter().enumerate() {
                let fact = curve(&row.hit_curve);
                let hits = capacity.map_or_else(
                    || project_infinite(&fact),
                    |c| project_blocks(&fact, c as u64),
                );
                assert_eq!(
                    hits, expected[index],
                    "lane {lane} row {} at {capacity:?}",
                    row.trace_id
                );
            }
        }
    }
}

#[test]
fn a_csv_name_gets_its_opt_sibling_and_the_summary_names_both() {
    let dir = tempfile::tempdir().unwrap();
    let trace_path = write_file(dir.path(), "trace.jsonl", &trace().0);
    let out = dir.path().join("run.csv");
    let run = ok(replay_to(
        &trace_path,
        &out,
        &["--block-size", "4", "--policy", "lru,opt"],
    ));
    assert!(out.is_file() && dir.path().join("run.opt.csv").is_file());
    assert_mentions(
        &run.stderr,
        &[
            "run.csv (LRU)",
            "run.opt.csv (OPT, Belady's optimal policy)",
        ],
    );
}

#[test]
fn opt_refuses_a_ttl_and_a_memory_horizon() {
    let dir = tempfile::tempdir().unwrap();
    let trace_path = write_file(dir.path(), "trace.jsonl", &trace().0);
    for extra in [["--ttl-seconds", "10"], ["--memory-horizon", "1000b"]] {
        let out = dir.path().join("out");
        let run = replay_to(
            &trace_path,
            &out,
            &[&["--block-size", "4", "--policy", "opt"][..], &extra].concat(),
        );
        let stderr = failed(&run);
        assert_mentions(stderr, &["OPT policy is defined without", extra[0]]);
        // A flag asks it of every lane: no lane is named (`lane *` or `lane default` was).
        assert!(!stderr.contains("lane "), "{stderr}");
        assert!(!out.join(FACTS).exists());
    }
    let bad = replay_to(&trace_path, &dir.path().join("x"), &["--policy", "lfu"]);
    assert_eq!(bad.code, Some(1), "{}", bad.stderr);
}
