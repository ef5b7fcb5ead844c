//! Random traces the property tests share.

use litehit_core::apply_prefix_hash;
use proptest::prelude::*;

/// A random prefix tree: each request re-sends a prefix of an earlier request's raw blocks
/// and appends new raw blocks from a small alphabet (so branches fork and re-converge in raw
/// content), then is chained with the prefix hash.
pub fn prefix_tree_trace() -> impl Strategy<Value = Vec<Vec<i64>>> {
    prop::collection::vec(
        (
            any::<prop::sample::Index>(),
            0..12_usize,
            prop::collection::vec(0..4_i64, 0..7),
        ),
        1..60,
    )
    .prop_map(|steps| {
        let mut raw_requests: Vec<Vec<i64>> = Vec::new();
        for (base, keep, extension) in steps {
            let mut raw = if raw_requests.is_empty() {
                Vec::new()
            } else {
                let base = &raw_requests[base.index(raw_requests.len())];
                base[..keep.min(base.len())].to_vec()
            };
            raw.extend(extension);
            raw_requests.push(raw);
        }
        raw_requests
            .iter()
            .map(|raw| apply_prefix_hash(raw))
            .collect()
    })
}
