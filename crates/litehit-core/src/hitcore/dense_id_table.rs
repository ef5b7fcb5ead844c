//! Key → latest recency position for keys that are small non-negative ids (Mooncake's
//! `hash_ids`, KVCM block ids): a plain array indexed by the key itself.
//!
//! Such ids are handed out densely, in first-appearance order, so the array is mostly full
//! (the real Mooncake conversation trace uses 93 % of its id range; the gaps are ids of
//! partial last blocks, which the core never sees). A lookup is one 4-byte read at a place
//! the key names, a prefix chain is a sequential walk, and there is no hashing, no index and
//! nothing to rebuild: 4 bytes per id instead of the [`super::key_table::KeyTable`]'s ~18.
//!
//! The table only takes a request whose keys all fit (see [`DenseIdTable::make_room_for`]):
//! non-negative, and an id range at most [`MAX_IDS_PER_KEY`] × the keys stored (plus
//! [`SLACK_IDS`]). Otherwise the core moves every key to a `KeyTable` once, for good — hashed
//! keys do that on their first request, and a long TTL run whose ids outgrow its live keys
//! does it when the range gets too sparse.

use super::key_table::Lookup;
use super::{AllocFailed, try_reserve_exact};

/// The id range may be this many times the keys (stored, plus the request's) and
/// [`SLACK_IDS`] more (holes cost 4 bytes each), so while the table grows it costs about
/// 16 bytes per key at most. (It never shrinks: TTL compaction and `clear` keep the array.)
pub(crate) const MAX_IDS_PER_KEY: usize = 4;
/// Plus this many ids regardless of the keys stored (4 MiB), so a young table can grow.
pub(crate) const SLACK_IDS: usize = 1 << 20;
/// Growth past the largest id of a request, as a fraction of the current length (a
/// sixteenth: Linux grows the vector with `mremap`, no copy, so small steps are cheap and
/// keep the unused tail small).
const GROWTH_DIVISOR: usize = 16;

/// `position + 1` of an absent key (or one added in the current request, not placed yet).
const ABSENT: u32 = 0;

#[derive(Debug, Clone, Default)]
pub(crate) struct DenseIdTable {
    /// At index `key`: its `position + 1`, or [`ABSENT`].
    positions_plus_one: Vec<u32>,
    /// Keys with a position (slots not [`ABSENT`]).
    placed_keys: usize,
}

impl DenseIdTable {
    /// Number of keys stored.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.placed_keys
    }

    /// Grows the array so every key of `keys` has a slot, and says whether the request may be
    /// replayed here: `false` for a negative key or one beyond the density limit (the table
    /// is then left unchanged). Fails, leaving it unchanged, when the memory is not there.
    pub(crate) fn make_room_for(&mut self, keys: &[i64]) -> Result<bool, AllocFailed> {
        let (mut smallest, mut largest) = (0_i64, 0_i64);
        for &key in keys {
            smallest = smallest.min(key);
            largest = largest.max(key);
        }
        if smallest < 0 {
            return Ok(false);
        }
        let Ok(needed) = usize::try_from(largest).map(|largest| largest + 1) else {
            return Ok(false);
        };
        let len = self.positions_plus_one.len();
        if needed <= len {
            return Ok(true);
        }
        let limit = MAX_IDS_PER_KEY * (self.placed_keys + keys.len()) + SLACK_IDS;
        if needed > limit {
            return Ok(false);
        }
        let grown = needed.max(len + len / GROWTH_DIVISOR).min(limit);
        try_reserve_exact(&mut self.positions_plus_one, grown - len)?;
        self.positions_plus_one.resize(grown, ABSENT);
        Ok(true)
    }

    /// Starts loading the slots where a request's runs of consecutive ids start (a hint; the
    /// rest of a run is on the following lines, which the hardware streams in by itself).
    #[inline]
    pub(crate) fn prefetch_request(&self, keys: &[i64]) {
        for key in super::hints::run_heads(keys) {
            if let Some(slot) = usize::try_from(key)
                .ok()
                .and_then(|id| self.positions_plus_one.get(id))
            {
                super::hints::prefetch_read(slot);
            }
        }
    }

    /// Finds `key` (its id is the key; [`Self::make_room_for`] admitted the request).
    #[inline]
    pub(crate) fn lookup(&self, key: i64) -> Lookup {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "make_room_for admitted the request: 0 <= key < len"
        )]
        let id = key as usize;
        Lookup {
            slot: id,
            position: self.placed_position(id),
        }
    }

    /// The position of key `id`, `None` while absent or not placed yet.
    #[inline]
    pub(crate) fn placed_position(&self, id: usize) -> Option<usize> {
        self.positions_plus_one[id]
            .checked_sub(1)
            .map(|p| p as usize)
    }

    /// Stores a new position for key `id`.
    #[inline]
    pub(crate) fn set_position(&mut self, id: usize, position: usize) {
        let slot = &mut self.positions_plus_one[id];
        self.placed_keys += usize::from(*slot == ABSENT);
        *slot = super::key_table::encode_position(position);
    }

    /// Rewrites every stored position (no key is dropped).
    pub(crate) fn renumber_positions(&mut self, new_position: impl Fn(usize) -> usize) {
        for slot in &mut self.positions_plus_one {
            if *slot != ABSENT {
                *slot = super::key_table::encode_position(new_position(*slot as usize - 1));
            }
        }
    }

    /// Keeps the keys for which `new_position` returns `Some`, with that position.
    pub(crate) fn retain_renumbered(&mut self, new_position: impl Fn(usize) -> Option<usize>) {
        for slot in &mut self.positions_plus_one {
            if *slot != ABSENT {
                if let Some(position) = new_position(*slot as usize - 1) {
                    *slot = super::key_table::encode_position(position);
                } else {
                    *slot = ABSENT;
                    self.placed_keys -= 1;
                }
            }
        }
    }

    /// Forgets every key but keeps the allocation (and its page mappings) for reuse.
    pub(crate) fn clear(&mut self) {
        self.positions_plus_one.fill(ABSENT);
        self.placed_keys = 0;
    }

    /// Every stored `(key, position)`, in key order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (i64, usize)> + '_ {
        (0_i64..)
            .zip(&self.positions_plus_one)
            .filter(|&(_, &slot)| slot != ABSENT)
            .map(|(key, &slot)| (key, slot as usize - 1))
    }

    /// Heap bytes held.
    pub(crate) fn memory_usage_bytes(&self) -> usize {
        self.positions_plus_one.capacity() * size_of::<u32>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn room_is_made_only_for_dense_non_negative_ids() {
        let mut table = DenseIdTable::default();
        assert!(table.make_room_for(&[0, 1, 2, 7]).unwrap());
        assert!(table.positions_plus_one.len() >= 8);
        assert!(
            !table.make_room_for(&[3, -1]).unwrap(),
            "negative keys do not fit"
        );
        assert!(
            !table.make_room_for(&[i64::MAX]).unwrap(),
            "hashed keys do not fit"
        );
        // With no key stored yet, the limit is the slack plus 4 ids per key of the request.
        let limit = SLACK_IDS + MAX_IDS_PER_KEY * 2;
        let before = table.positions_plus_one.len();
        let limit_key = i64::try_from(limit).unwrap();
        assert!(!table.make_room_for(&[0, limit_key]).unwrap());
        assert_eq!(
            table.positions_plus_one.len(),
            before,
            "a refused request changes nothing"
        );
        assert!(table.make_room_for(&[0, limit_key - 1]).unwrap());
        assert_eq!(
            table.positions_plus_one.len(),
            limit,
            "growth stops at the limit"
        );
    }

    #[test]
    fn the_limit_follows_the_keys_stored() {
        let mut table = DenseIdTable::default();
        let keys: Vec<i64> = (0..1000).collect();
        assert!(table.make_room_for(&keys).unwrap());
        for (position, &key) in keys.iter().enumerate() {
            table.set_position(usize::try_from(key).unwrap(), position);
        }
        assert_eq!(table.len(), 1000);
        let limit = i64::try_from(MAX_IDS_PER_KEY * (1000 + 1) + SLACK_IDS).unwrap();
        assert!(!table.make_room_for(&[limit]).unwrap());
        assert!(table.make_room_for(&[limit - 1]).unwrap());
    }

    #[test]
    fn positions_count_keys_once_and_retain_drops_them() {
        let mut table = DenseIdTable::default();
        assert!(table.make_room_for(&[5, 6, 9]).unwrap());
        assert_eq!(table.lookup(6).position, None);
        table.set_position(6, 0);
        table.set_position(6, 3); // a repeat moves the key, it does not add one
        table.set_position(9, 1);
        table.set_position(5, 2);
        assert_eq!(table.len(), 3);
        assert_eq!(table.lookup(6).position, Some(3));
        assert_eq!(table.lookup(6).slot, 6, "the id is the key");
        assert_eq!(table.iter().collect::<Vec<_>>(), [(5, 2), (6, 3), (9, 1)]);

        table.renumber_positions(|old| old + 10);
        assert_eq!(
            table.iter().collect::<Vec<_>>(),
            [(5, 12), (6, 13), (9, 11)]
        );
        table.retain_renumbered(|old| (old != 11).then_some(old - 10));
        assert_eq!(table.iter().collect::<Vec<_>>(), [(5, 2), (6, 3)]);
        assert_eq!(table.len(), 2);
        assert_eq!(table.lookup(9).position, None);

        table.clear();
        assert_eq!(table.len(), 0);
        assert_eq!(table.iter().count(), 0);
        assert!(
            table.memory_usage_bytes() >= 10 * size_of::<u32>(),
            "clear keeps the array"
        );
    }
}
