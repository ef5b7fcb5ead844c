//! Key → latest recency position: a compact open-addressing table.
//!
//! Each slot is 12 bytes (the 64-bit key split in two `u32` halves, and the position + 1, with
//! 0 meaning "empty"), so the table costs `12 / load` bytes per key; the load is kept in
//! `[MAX_LOAD / GROWTH, MAX_LOAD]` ≈ `[0.63, 0.86]`, i.e. 14–19 bytes per key. Keys are
//! already hashes (or dense ids), so no `SipHash`: the home slot is the key folded to 32 bits,
//! reduced modulo the capacity. Dense ids therefore land in neighbouring slots (a chain's
//! blocks are one or two cache lines), and random 64-bit keys spread uniformly. A key set
//! that defeats the fold (long probe runs) switches the table to a multiplicative mix.
//!
//! Linear probing, no deletions except by rebuilding (compaction), so a slot index found in
//! phase 1 of a request stays valid through phase 2 as long as the table does not grow —
//! the core reserves room for the whole request first.

/// Grow when the load would pass this.
const MAX_LOAD: f64 = 0.86;
/// Capacity multiplier on growth once the table is large (small, to keep bytes per key low).
const GROWTH: f64 = 1.37;
/// Below this many slots the table doubles instead: rebuilds dominate small tables, and the
/// wasted bytes are negligible there.
const DOUBLING_BELOW_SLOTS: usize = 1 << 22;
/// Inserts probing this far on average (from their home slot) mean the fold hash is
/// clustering — dense ids arriving in runs pile up into long linear-probing clusters (seen on
/// multi-instance traces whose ids are dense globally but sparse per lane): switch to the
/// mixing hash. A uniform hash at the maximum load averages about 26.
const MAX_MEAN_INSERT_DISTANCE: usize = 64;
/// Inserts observed before the mean is trusted.
const MIN_INSERTS_FOR_MEAN: usize = 4096;
const MIN_CAPACITY: usize = 1 << 12;
/// How far ahead whole-table passes (growth, compaction) prefetch what they will touch.
const LOOKAHEAD_SLOTS: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum HashMode {
    /// `(key ^ key >> 32) as u32`: identity on dense ids, uniform on random hashes.
    #[default]
    Fold,
    /// A multiplicative mix: robust for any key set.
    Mix,
}

/// One slot: `[key low half, key high half, position + 1]`; position + 1 == 0 means empty.
type Slot = [u32; 3];

#[derive(Debug, Clone, Default)]
pub(crate) struct KeyTable {
    slots: Vec<Slot>,
    len: usize,
    /// Lemire's fastmod multiplier for `slots.len()`.
    fastmod_multiplier: u64,
    hash_mode: HashMode,
    /// Set when inserts probe too far; the owner rehashes between requests.
    wants_rehash: bool,
    /// Inserts since the last rebuild and the sum of their distances from their home slots.
    inserts_since_rebuild: usize,
    insert_distance_sum: usize,
}

/// Where a key lives (or would be inserted) and its stored position.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lookup {
    pub(crate) slot: usize,
    /// `Some(position)` if the key is present.
    pub(crate) position: Option<usize>,
}

#[inline]
fn split_key(key: i64) -> (u32, u32) {
    // Reinterpreting the key's bits as two halves; the truncations are the point.
    #[expect(
        clippy::cast_sign_loss,
        clippy::cast_possible_truncation,
        reason = "bit split"
    )]
    let (low, high) = (key as u64 as u32, ((key as u64) >> 32) as u32);
    (low, high)
}

#[inline]
fn join_key(slot: Slot) -> i64 {
    #[expect(clippy::cast_possible_wrap, reason = "bit join")]
    let key = (u64::from(slot[0]) | (u64::from(slot[1]) << 32)) as i64;
    key
}

#[inline]
fn encode_position(position: usize) -> u32 {
    u32::try_from(position + 1)
        .expect("recency positions stay below 2^32 - 1 (about 2 billion live keys)")
}

impl KeyTable {
    /// Number of keys stored.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    #[inline]
    fn home_slot(&self, key: i64) -> usize {
        let (low, high) = split_key(key);
        let hash32 = match self.hash_mode {
            HashMode::Fold => low ^ high,
            HashMode::Mix => {
                #[expect(clippy::cast_sign_loss, reason = "hash bits")]
                let mixed = ((key as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32;
                mixed
            }
        };
        // Lemire's fastmod: hash32 mod capacity with two multiplications, no division.
        let low_bits = self.fastmod_multiplier.wrapping_mul(u64::from(hash32));
        #[expect(
            clippy::cast_possible_truncation,
            reason = "result is below the capacity"
        )]
        let slot = ((u128::from(low_bits) * self.slots.len() as u128) >> 64) as usize;
        slot
    }

    /// Makes room for `additional` more keys without growing mid-request.
    pub(crate) fn reserve(&mut self, additional: usize) {
        let needed = self.len + additional;
        if self.slots.is_empty() || needed as f64 > self.slots.len() as f64 * MAX_LOAD {
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "sizes"
            )]
            let grown = if self.slots.len() < DOUBLING_BELOW_SLOTS {
                self.slots.len() * 2
            } else {
                (self.slots.len() as f64 * GROWTH) as usize
            };
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "sizes"
            )]
            let for_needed = (needed as f64 / MAX_LOAD) as usize + 1;
            self.rebuild(grown.max(for_needed).max(MIN_CAPACITY), self.hash_mode);
        }
    }

    /// Starts loading the home slot of `key` (a hint; no effect on results).
    #[inline]
    pub(crate) fn prefetch(&self, key: i64) {
        if !self.slots.is_empty() {
            super::hints::prefetch_read(&self.slots[self.home_slot(key)]);
        }
    }

    /// Finds `key`, or the empty slot where it would be inserted.
    #[inline]
    pub(crate) fn lookup(&self, key: i64) -> Lookup {
        let (low, high) = split_key(key);
        let mut slot = self.home_slot(key);
        loop {
            let [slot_low, slot_high, position_plus_one] = self.slots[slot];
            if position_plus_one == 0 {
                return Lookup {
                    slot,
                    position: None,
                };
            }
            if slot_low == low && slot_high == high {
                return Lookup {
                    slot,
                    position: Some(position_plus_one as usize - 1),
                };
            }
            slot += 1;
            if slot == self.slots.len() {
                slot = 0;
            }
        }
    }

    /// The position stored at an occupied slot.
    #[inline]
    pub(crate) fn position_at(&self, slot: usize) -> usize {
        self.slots[slot][2] as usize - 1
    }

    /// Stores a new position for the key at an occupied slot.
    #[inline]
    pub(crate) fn set_position(&mut self, slot: usize, position: usize) {
        self.slots[slot][2] = encode_position(position);
    }

    /// Continues a failed lookup from its empty slot: returns the key's slot and position if
    /// an earlier insert of this request already added it, else inserts it (with `position`).
    #[inline]
    pub(crate) fn find_or_insert_from(
        &mut self,
        start_slot: usize,
        key: i64,
        position: usize,
    ) -> Lookup {
        let (low, high) = split_key(key);
        let mut slot = start_slot;
        loop {
            let [slot_low, slot_high, position_plus_one] = self.slots[slot];
            if position_plus_one == 0 {
                self.slots[slot] = [low, high, encode_position(position)];
                self.len += 1;
                self.note_insert_distance(key, slot);
                return Lookup {
                    slot,
                    position: None,
                };
            }
            if slot_low == low && slot_high == high {
                return Lookup {
                    slot,
                    position: Some(position_plus_one as usize - 1),
                };
            }
            slot += 1;
            if slot == self.slots.len() {
                slot = 0;
            }
        }
    }

    /// Tracks how far inserts land from their home slot (the cost of every later lookup).
    #[inline]
    fn note_insert_distance(&mut self, key: i64, slot: usize) {
        if self.hash_mode == HashMode::Mix {
            return; // already uniform: long probes can only mean high load, handled by growth
        }
        let home = self.home_slot(key);
        let distance = if slot >= home {
            slot - home
        } else {
            slot + self.slots.len() - home
        };
        self.inserts_since_rebuild += 1;
        self.insert_distance_sum += distance;
        if self.inserts_since_rebuild >= MIN_INSERTS_FOR_MEAN
            && self.insert_distance_sum > MAX_MEAN_INSERT_DISTANCE * self.inserts_since_rebuild
        {
            self.wants_rehash = true;
        }
    }

    /// Rehashes with the mixing hash if inserts reported clustering. Call between requests.
    pub(crate) fn rehash_if_clustered(&mut self) {
        if self.wants_rehash {
            self.wants_rehash = false;
            self.rebuild(self.slots.len(), HashMode::Mix);
        }
    }

    /// Rewrites every stored position in place (no key is dropped). `prefetch` is called a
    /// few slots ahead with the position about to be renumbered, so the lookups it needs
    /// overlap.
    pub(crate) fn renumber_positions(
        &mut self,
        new_position: impl Fn(usize) -> usize,
        prefetch: impl Fn(usize),
    ) {
        for index in 0..self.slots.len() {
            if let Some(ahead) = self.slots.get(index + LOOKAHEAD_SLOTS)
                && ahead[2] != 0
            {
                prefetch(ahead[2] as usize - 1);
            }
            let slot = &mut self.slots[index];
            if slot[2] != 0 {
                slot[2] = encode_position(new_position(slot[2] as usize - 1));
            }
        }
    }

    /// Keeps the keys for which `new_position` returns `Some`, with that position, and
    /// rebuilds the table sized for them (removing entries breaks linear-probing chains).
    pub(crate) fn retain_renumbered(&mut self, new_position: impl Fn(usize) -> Option<usize>) {
        let survivors: Vec<Slot> = self
            .slots
            .iter()
            .filter(|slot| slot[2] != 0)
            .filter_map(|slot| {
                new_position(slot[2] as usize - 1).map(|p| [slot[0], slot[1], encode_position(p)])
            })
            .collect();
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "sizes"
        )]
        let capacity = ((survivors.len() as f64 / MAX_LOAD * GROWTH) as usize).max(MIN_CAPACITY);
        self.slots = Vec::new();
        self.rebuild(capacity, self.hash_mode);
        for entry in survivors {
            self.insert_new(entry);
        }
    }

    /// Inserts a slot whose key is known to be absent (rebuilds only).
    fn insert_new(&mut self, entry: Slot) {
        let mut slot = self.home_slot(join_key(entry));
        while self.slots[slot][2] != 0 {
            slot += 1;
            if slot == self.slots.len() {
                slot = 0;
            }
        }
        self.slots[slot] = entry;
        self.len += 1;
    }

    fn rebuild(&mut self, capacity: usize, hash_mode: HashMode) {
        assert!(
            u32::try_from(capacity).is_ok(),
            "key table capacity {capacity} exceeds 2^32 slots"
        );
        let mut new_slots = vec![[0; 3]; capacity];
        super::hints::advise_huge_pages(&mut new_slots);
        let old_slots = std::mem::replace(&mut self.slots, new_slots);
        self.fastmod_multiplier = (u64::MAX / capacity as u64).wrapping_add(1);
        self.hash_mode = hash_mode;
        self.len = 0;
        self.inserts_since_rebuild = 0;
        self.insert_distance_sum = 0;
        for (index, &old) in old_slots.iter().enumerate() {
            if let Some(ahead) = old_slots.get(index + LOOKAHEAD_SLOTS)
                && ahead[2] != 0
            {
                super::hints::prefetch_read(&self.slots[self.home_slot(join_key(*ahead))]);
            }
            if old[2] != 0 {
                self.insert_new(old);
            }
        }
    }

    /// Forgets every key but keeps the allocation (and its page mappings) for reuse.
    pub(crate) fn clear(&mut self) {
        self.slots.fill([0; 3]);
        self.len = 0;
        self.hash_mode = HashMode::Fold;
        self.wants_rehash = false;
        self.inserts_since_rebuild = 0;
        self.insert_distance_sum = 0;
    }

    /// Every stored `(key, position)`, in slot order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (i64, usize)> + '_ {
        self.slots
            .iter()
            .filter(|s| s[2] != 0)
            .map(|&s| (join_key(s), s[2] as usize - 1))
    }

    /// Heap bytes held.
    pub(crate) fn memory_usage_bytes(&self) -> usize {
        self.slots.capacity() * size_of::<Slot>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mean distance of stored keys from their home slot (what every lookup walks).
    fn mean_home_distance(table: &KeyTable) -> f64 {
        let capacity = table.slots.len();
        let total: usize = table
            .slots
            .iter()
            .enumerate()
            .filter(|(_, s)| s[2] != 0)
            .map(|(slot, s)| (slot + capacity - table.home_slot(join_key(*s))) % capacity)
            .sum();
        total as f64 / table.len() as f64
    }

    #[test]
    fn runs_of_dense_ids_that_cluster_switch_to_the_mixing_hash() {
        // Globally dense ids handed out in runs to conversations spread over four lanes; one
        // lane sees the runs of its conversations only. Under the fold hash these runs pile
        // up into giant linear-probing clusters (a real multi-instance trace did this).
        let mut rng = crate::workload::SplitMix64::new(7);
        let mut table = KeyTable::default();
        let mut next_id = 0_i64;
        let mut position = 0;
        for _ in 0..40_000 {
            let conversation = rng.index(2000);
            let run = i64::from(rng.range_u32(1, 20));
            let ids = next_id..next_id + run;
            next_id += run;
            if conversation % 4 != 0 {
                continue;
            }
            table.reserve(20);
            for id in ids {
                let found = table.lookup(id);
                table.find_or_insert_from(found.slot, id, position);
                position += 1;
            }
            table.rehash_if_clustered();
        }
        assert_eq!(table.hash_mode, HashMode::Mix);
        assert!(
            mean_home_distance(&table) < 8.0,
            "{}",
            mean_home_distance(&table)
        );
        for (key, position) in table.iter().collect::<Vec<_>>() {
            assert_eq!(table.lookup(key).position, Some(position));
        }
    }

    #[test]
    fn contiguous_dense_ids_keep_the_fold_hash() {
        let mut table = KeyTable::default();
        for id in 0..100_000_i64 {
            table.reserve(1);
            let found = table.lookup(id);
            table.find_or_insert_from(found.slot, id, usize::try_from(id).unwrap());
            table.rehash_if_clustered();
        }
        assert_eq!(
            table.hash_mode,
            HashMode::Fold,
            "neighbouring ids keep neighbouring slots"
        );
        assert!(mean_home_distance(&table) < 1.0);
    }

    #[test]
    fn insert_then_find_dense_random_and_adversarial_keys() {
        let key_sets: [Vec<i64>; 3] = [
            (0..20_000).collect(),
            (0..20_000_i64)
                .map(|i| i.wrapping_mul(0x5851_f42d_4c95_7f2d) ^ 0x1234)
                .collect(),
            // Keys whose halves cancel under the fold: all fold to 0.
            (0..5_000_i64).map(|i| i | (i << 32)).collect(),
        ];
        for keys in key_sets {
            let mut table = KeyTable::default();
            for (position, &key) in keys.iter().enumerate() {
                table.reserve(1);
                let found = table.lookup(key);
                assert!(found.position.is_none());
                table.find_or_insert_from(found.slot, key, position);
                table.rehash_if_clustered();
            }
            assert_eq!(table.len(), keys.len());
            for (position, &key) in keys.iter().enumerate() {
                assert_eq!(table.lookup(key).position, Some(position), "key {key}");
            }
            assert!(table.lookup(i64::MIN + 7).position.is_none());
        }
    }

    #[test]
    fn negative_keys_roundtrip() {
        let mut table = KeyTable::default();
        table.reserve(3);
        for (position, key) in [-1_i64, i64::MIN, -7_046_029_254_386_353_130]
            .into_iter()
            .enumerate()
        {
            let found = table.lookup(key);
            table.find_or_insert_from(found.slot, key, position);
        }
        assert_eq!(table.lookup(i64::MIN).position, Some(1));
        assert_eq!(table.lookup(-1).position, Some(0));
    }

    #[test]
    fn remap_drops_and_keeps() {
        let mut table = KeyTable::default();
        table.reserve(1000);
        for key in 0..1000_i64 {
            let found = table.lookup(key * 7919);
            table.find_or_insert_from(found.slot, key * 7919, usize::try_from(key).unwrap());
        }
        table.retain_renumbered(|p| (p >= 500).then(|| p - 500));
        assert_eq!(table.len(), 500);
        assert_eq!(table.lookup(499 * 7919).position, None);
        assert_eq!(table.lookup(500 * 7919).position, Some(0));
        assert_eq!(table.lookup(999 * 7919).position, Some(499));
    }
}
