//! Key shapes that defeat an order-preserving index (issue 16, point 4): the core's work stays
//! linear in the accesses — checked on its count of index probes, never on time — and its
//! facts stay the naive oracle's (`common/oracle.rs`).
//!
//! The reproducer: a request of 41 hash-like keys makes the hashed key table pick homes in key
//! order (`fold × capacity / 2^32`); one request of 200 k structured ids (`i*3 + rand(3)`, or
//! `i << 32`) then all have homes in the first few slots, and every insert used to walk the
//! whole cluster the ones before it built: 2 × 10^10 probes, 14.6 s.

use crate::common::oracle::OracleBank;
use litehit_core::LiteHit;
use litehit_core::projector::{project_blocks, project_infinite};
use litehit_core::workload::SplitMix64;

/// Index probes per block access the reproducers may cost, all requests together. A uniform
/// hash at the index's highest load reads about 13 slots per insert and 3 per lookup of a
/// stored key; the quadratic index read about 50,000 per access on this trace.
const MAX_PROBES_PER_ACCESS: u64 = 8;

const CAPACITIES: [Option<usize>; 9] = [
    Some(0),
    Some(1),
    Some(2),
    Some(4),
    Some(9),
    Some(1_000),
    Some(150_000),
    Some(200_100),
    None,
];

fn random_key(rng: &mut SplitMix64) -> i64 {
    i64::from_ne_bytes(rng.next_u64().to_ne_bytes())
}

/// 41 random keys, then one request of `count` keys from `structured`, then requests that
/// re-read parts of both (so the curves have hits at every depth).
fn reproducer(structured: impl Fn(i64, &mut SplitMix64) -> i64, count: i64) -> Vec<Vec<i64>> {
    let mut rng = SplitMix64::new(16);
    let hashed: Vec<i64> = (0..41).map(|_| random_key(&mut rng)).collect();
    let ids: Vec<i64> = (0..count).map(|i| structured(i, &mut rng)).collect();
    let mut reread: Vec<i64> = ids[..5_000].to_vec();
    reread.extend((0..100).map(|_| random_key(&mut rng)));
    vec![hashed.clone(), ids.clone(), reread, ids, hashed]
}

/// Replays `requests` through the core and the oracle: every request's hits at every
/// capacity agree; returns the accesses and the index probes the core spent.
fn replay_against_oracle(requests: &[Vec<i64>]) -> (u64, u64) {
    let mut core = LiteHit::new();
    let mut oracle = OracleBank::new(&CAPACITIES, None);
    let mut accesses = 0;
    for (index, keys) in requests.iter().enumerate() {
        let now_ns = i64::try_from(index).unwrap();
        let fact = core.process_request(keys, now_ns);
        let expected = oracle.process_request(keys, now_ns);
        for (&capacity, &hits) in CAPACITIES.iter().zip(&expected) {
            let got = capacity.map_or_else(
                || project_infinite(&fact),
                |c| project_blocks(&fact, c as u64),
            );
            assert_eq!(got, hits, "request {index}, capacity {capacity:?}");
        }
        accesses += keys.len() as u64;
    }
    (accesses, core.key_index_probes())
}

fn assert_linear(name: &str, (accesses, probes): (u64, u64)) {
    eprintln!("{name}: {probes} index probes for {accesses} accesses");
    assert!(probes > 0, "{name}: the keys went through the hashed index");
    assert!(
        probes <= MAX_PROBES_PER_ACCESS * accesses,
        "{name}: {probes} index probes for {accesses} accesses ({:.1} per access)",
        probes as f64 / accesses as f64
    );
}

/// Regression test for issue 16, point 4: the reproducer as filed.
#[test]
fn issue_16_structured_ids_after_hashed_keys_stay_linear() {
    let requests = reproducer(|i, rng| i * 3 + i64::from(rng.range_u32(0, 2)), 200_000);
    assert_linear("i*3+rand(3)", replay_against_oracle(&requests));
}

#[test]
fn issue_16_ids_in_the_high_half_after_hashed_keys_stay_linear() {
    let requests = reproducer(|i, _| i << 32, 200_000);
    assert_linear("i<<32", replay_against_oracle(&requests));
}
