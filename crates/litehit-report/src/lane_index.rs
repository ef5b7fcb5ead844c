//! Lanes by instance id: the one lookup behind every per-lane table of this crate (the
//! query's totals, the lane fingerprints, the `mrc` curves, the observed comparison), each
//! table keeping its rows in the index's order.
//!
//! Facts rows come in runs of one lane or in turns among a few, once per row of a file of
//! millions: the lane of the row before is tried first, a few lanes are scanned, and a hash
//! map takes over beyond. Ids of one fleet often differ only at their end (`engine-1`,
//! `engine-2`), so a compare looks at the length and the last byte before the whole id.

use indexmap::IndexSet;

/// A per-lane table could not grow for one more lane: memory is short (the caller names the
/// facts file and row).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("out of memory for one more lane")]
pub struct LaneTableFull;

impl From<std::collections::TryReserveError> for LaneTableFull {
    fn from(_: std::collections::TryReserveError) -> Self {
        Self
    }
}

/// Up to this many lanes, a lane is looked up by a scan.
const SCANNED_LANES: usize = 16;

/// Instance ids, each at the index of its lane (in order of first sight), each stored once.
#[derive(Debug, Clone, Default)]
pub(crate) struct LaneIndex {
    ids: IndexSet<String>,
    /// The lane found last.
    last: Option<usize>,
}

impl LaneIndex {
    /// The lane of `instance_id`, and whether it was new: then its index is the next one,
    /// and the caller's table must grow by its row.
    pub(crate) fn index_or_insert(&mut self, instance_id: &str) -> (usize, bool) {
        if let Some(index) = self.find(instance_id) {
            self.last = Some(index);
            return (index, false);
        }
        let (index, _) = self.ids.insert_full(instance_id.to_owned());
        self.last = Some(index);
        (index, true)
    }

    /// The lane of `instance_id`, if it was inserted.
    pub(crate) fn get(&self, instance_id: &str) -> Option<usize> {
        self.find(instance_id)
    }

    /// Room for one more lane, fallibly (call before [`Self::index_or_insert`]).
    pub(crate) fn try_reserve(&mut self) -> Result<(), LaneTableFull> {
        self.ids.try_reserve(1).map_err(|_| LaneTableFull)
    }

    fn find(&self, instance_id: &str) -> Option<usize> {
        if let Some(last) = self.last
            && same_id(&self.ids[last], instance_id)
        {
            return Some(last);
        }
        if self.ids.len() <= SCANNED_LANES {
            self.ids.iter().position(|id| same_id(id, instance_id))
        } else {
            self.ids.get_index_of(instance_id)
        }
    }
}

/// `a == b`, deciding most unequal ids of one fleet without a full compare, and comparing
/// the usual short ids 8 bytes at a time in line (a call to `memcmp` per row costs more).
#[inline]
fn same_id(a: &str, b: &str) -> bool {
    let (a, b) = (a.as_bytes(), b.as_bytes());
    if a.len() != b.len() || a.last() != b.last() {
        return false;
    }
    let (a_words, a_tail) = a.as_chunks::<8>();
    let (b_words, b_tail) = b.as_chunks::<8>();
    a_tail.iter().zip(b_tail).all(|(x, y)| x == y)
        && a_words
            .iter()
            .zip(b_words)
            .all(|(x, y)| u64::from_ne_bytes(*x) == u64::from_ne_bytes(*y))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lanes_keep_their_first_seen_index_past_the_scanned_few() {
        let mut index = LaneIndex::default();
        let ids: Vec<String> = (0..40).map(|n| format!("engine-{n}")).collect();
        for (expected, id) in ids.iter().enumerate() {
            index.try_reserve().unwrap();
            assert_eq!(index.index_or_insert(id), (expected, true));
            // Scanned up to 16 lanes, hashed beyond: each lane is found either way.
            for (earlier, earlier_id) in ids[..=expected].iter().enumerate() {
                assert_eq!(index.get(earlier_id), Some(earlier));
            }
        }
        // In turns, backwards, and again: every id finds its own lane, never a new one.
        for id in ids.iter().rev().chain(&ids) {
            let (found, new) = index.index_or_insert(id);
            assert_eq!((ids[found].as_str(), new), (id.as_str(), false));
            assert_eq!(index.get(id), Some(found));
        }
        assert_eq!(index.get("engine-40"), None);
        assert_eq!(index.get("engine-"), None);
        assert_eq!(index.get(""), None);
        // Same length and last byte, different id.
        assert_eq!(index.get("enginf-1"), None);
    }
}
