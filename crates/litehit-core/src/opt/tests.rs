//! Hand-checked scenarios; the property tests against naive MIN simulators are in
//! `tests/it/engine/opt.rs`.

use super::OptCore;

#[test]
fn belady_keeps_the_key_used_again_sooner() {
    // Unit accesses a a b b c c | a: at capacity 2, c evicts b (never used again), so a hits
    // at 2, where LRU needs 3.
    let mut core = OptCore::new();
    for key in [1, 2, 3] {
        assert!(core.process_request(&[key], 0).hit_curve.is_empty());
    }
    assert_eq!(core.process_request(&[1], 0).to_pairs(), [[2, 1]]);
    assert_eq!(core.current_unique_blocks(), 3);
}

#[test]
fn the_same_request_again_hits_from_capacity_one_block_per_block() {
    let mut core = OptCore::new();
    assert!(core.process_request(&[1, 2, 3], 0).hit_curve.is_empty());
    assert_eq!(core.process_request(&[1, 2, 3], 0).to_pairs(), [[1, 3]]);
    assert_eq!(core.process_request(&[1, 2, 4], 0).to_pairs(), [[1, 2]]);
}

#[test]
fn a_repeat_inside_a_request_takes_its_first_occurrences_distance() {
    let mut core = OptCore::new();
    core.process_request(&[1, 2], 0);
    // 1 hits at 1, the repeat of 1 at the guard's 2, 2 at 3 (it was first hit at 2).
    assert_eq!(core.process_request(&[1, 1, 2], 0).to_pairs(), [[1, 3]]);
}

#[test]
fn compaction_changes_no_result() {
    // Many requests over few keys: positions are closed up many times.
    let requests: Vec<Vec<i64>> = (0..20_000_i64)
        .map(|i| (0..=(i % 7)).map(|j| (i * 31 + j * 17) % 50).collect())
        .collect();
    let mut core = OptCore::new();
    let mut fresh = OptCore::new();
    let facts: Vec<_> = requests
        .iter()
        .map(|r| core.process_request(r, 0))
        .collect();
    assert!(core.position_space_len() < 4 * 100 + 4096 + 20);
    // Replaying again from a reset core gives the same facts.
    fresh.reset();
    let again: Vec<_> = requests
        .iter()
        .map(|r| fresh.process_request(r, 0))
        .collect();
    assert_eq!(facts, again);
}
