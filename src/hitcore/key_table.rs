//! Key → latest recency position: a compact open-addressing table.
//!
//! Each slot is 12 bytes (the 64-bit key split in two `u32` halves, and the position + 1, with
//! 0 meaning "empty"), so the table costs `12 / load` bytes per key; the load is kept in
//! `[MAX_LOAD / GROWTH, MAX_LOAD]` ≈ `[0.63, 0.86]`, i.e. 14–19 bytes per key. Keys are
//! already hashes (or dense ids), so no `SipHash`; the home slot comes from the key folded to
//! 32 bits, in one of three [`HashMode`]s: dense ids keep `fold mod capacity` (a chain's blocks
//! land in one or two cache lines), keys that look like hashes switch to `fold × capacity /
//! 2^32` (order-preserving, so growth moves entries in two forward streams instead of at
//! random), and a key set that defeats the fold (long probe runs) switches to a multiplicative
//! mix.
//!
//! Linear probing, no deletions except by rehashing (compaction), so a slot index found in
//! phase 1 of a request stays valid through phase 2 as long as the table does not grow —
//! the core reserves room for the whole request first.
//!
//! Growth and rehashing happen **in place**: the slot vector is extended (a reallocation that
//! keeps the already-touched pages; Linux moves them with `mremap`, no copy) and the entries
//! are re-placed inside it. A second table never exists, so peak memory is the table itself,
//! and only the new tail is ever touched for the first time — on virtual machines, where the
//! first touch of a page is by far the most expensive part of growing, that matters most.

/// Grow when the load would pass this.
const MAX_LOAD: f64 = 0.86;
/// Capacity multiplier on growth once the table is large (small, to keep bytes per key low).
const GROWTH: f64 = 1.37;
/// Below this many slots the table doubles instead: rehashes dominate small tables, and the
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
/// Slots in 64 bytes, rounded up: `home + this` is on the next cache line.
const SLOTS_PER_CACHE_LINE: usize = 64 / size_of::<Slot>() + 1;
/// How far ahead the rehash pass prefetches where entries will land (~100 ns of DRAM
/// latency at a few ns per entry).
const REHASH_LOOKAHEAD_SLOTS: usize = 64;
/// How far ahead compaction's renumbering pass prefetches the positions it will look up.
const LOOKAHEAD_SLOTS: usize = 16;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum HashMode {
    /// `fold mod capacity`, with `fold = (key ^ key >> 32) as u32`: identity on dense ids, so
    /// neighbouring ids share cache lines.
    #[default]
    FoldModulo,
    /// `fold × capacity / 2^32`: for keys whose fold is spread over all 32 bits (hashes).
    /// Homes keep the fold's order, so a rehash is two forward streams.
    FoldRange,
    /// A multiplicative mix, then `× capacity / 2^32`: robust for any key set.
    MixRange,
}

/// A fold at or above this means the keys are not small dense ids: they are hashes.
const HASHED_FOLD_THRESHOLD: u32 = 1 << 31;

/// One slot: `[key low half, key high half, position + 1]`; position + 1 == 0 means empty.
type Slot = [u32; 3];

#[derive(Debug, Clone, Default)]
pub(crate) struct KeyTable {
    slots: Vec<Slot>,
    len: usize,
    /// Lemire's fastmod multiplier for `slots.len()` (used by [`HashMode::FoldModulo`]).
    fastmod_multiplier: u64,
    hash_mode: HashMode,
    /// Set when inserts probe too far; the owner rehashes between requests.
    wants_rehash: bool,
    /// Inserts since the last rehash and the sum of their distances from their home slots.
    inserts_since_rehash: usize,
    insert_distance_sum: usize,
    /// Largest fold of any key stored (an upper bound once keys are dropped).
    max_fold: u32,
    /// Every key sits in its home slot. With `fold mod capacity` and every fold below the
    /// capacity (dense ids), growth then moves nothing: see [`Self::rehash_in_place`].
    every_key_at_home: bool,
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

/// The home slot of `key` in a table of `capacity` slots.
#[inline]
fn home_slot_for(key: i64, hash_mode: HashMode, capacity: usize, fastmod_multiplier: u64) -> usize {
    let (low, high) = split_key(key);
    let fold = low ^ high;
    // `hash32 × capacity / 2^32`: below the capacity, and monotone in `hash32`.
    let scaled = |hash32: u32| ((u64::from(hash32) * capacity as u64) >> 32) as usize;
    match hash_mode {
        HashMode::FoldModulo => {
            // Lemire's fastmod: fold mod capacity with two multiplications, no division.
            let low_bits = fastmod_multiplier.wrapping_mul(u64::from(fold));
            #[expect(
                clippy::cast_possible_truncation,
                reason = "result is below the capacity"
            )]
            let slot = ((u128::from(low_bits) * capacity as u128) >> 64) as usize;
            slot
        }
        HashMode::FoldRange => scaled(fold),
        HashMode::MixRange => {
            #[expect(clippy::cast_sign_loss, reason = "hash bits")]
            let mixed = ((key as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) >> 32) as u32;
            scaled(mixed)
        }
    }
}

const EMPTY_SLOT: Slot = [0; 3];

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
        home_slot_for(
            key,
            self.hash_mode,
            self.slots.len(),
            self.fastmod_multiplier,
        )
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
            self.rehash_in_place(grown.max(for_needed).max(MIN_CAPACITY), self.hash_mode);
        }
    }

    /// Starts loading the home slot of `key` and the cache line after it (a hint; no effect
    /// on results). A probe walks about 2–4 slots (24–48 bytes) on average, so it leaves the
    /// home line often; without the second line that became a dependent DRAM miss.
    #[inline]
    pub(crate) fn prefetch(&self, key: i64) {
        if let Some(last) = self.slots.len().checked_sub(1) {
            let home = self.home_slot(key);
            super::hints::prefetch_read(&self.slots[home]);
            super::hints::prefetch_read(&self.slots[(home + SLOTS_PER_CACHE_LINE).min(last)]);
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
        if self.hash_mode == HashMode::MixRange {
            return; // already uniform: long probes can only mean high load, handled by growth
        }
        let home = self.home_slot(key);
        let (low, high) = split_key(key);
        self.max_fold = self.max_fold.max(low ^ high);
        self.every_key_at_home &= slot == home;
        let distance = if slot >= home {
            slot - home
        } else {
            slot + self.slots.len() - home
        };
        self.inserts_since_rehash += 1;
        self.insert_distance_sum += distance;
        if self.inserts_since_rehash >= MIN_INSERTS_FOR_MEAN
            && self.insert_distance_sum > MAX_MEAN_INSERT_DISTANCE * self.inserts_since_rehash
        {
            self.wants_rehash = true;
        }
    }

    /// Rehashes with the mixing hash if inserts reported clustering. Call between requests.
    pub(crate) fn rehash_if_clustered(&mut self) {
        if self.wants_rehash {
            self.wants_rehash = false;
            self.rehash_in_place(self.slots.len(), HashMode::MixRange);
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
    /// rehashes in place sized for them (removing entries breaks linear-probing chains).
    pub(crate) fn retain_renumbered(&mut self, new_position: impl Fn(usize) -> Option<usize>) {
        for slot in &mut self.slots {
            if slot[2] != 0 {
                if let Some(position) = new_position(slot[2] as usize - 1) {
                    slot[2] = encode_position(position);
                } else {
                    *slot = EMPTY_SLOT;
                    self.len -= 1;
                }
            }
        }
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "sizes"
        )]
        let capacity = ((self.len as f64 / MAX_LOAD * GROWTH) as usize).max(MIN_CAPACITY);
        self.rehash_in_place(capacity, self.hash_mode);
    }

    /// Re-places every entry for `capacity` slots and `hash_mode`, inside the one slot vector.
    ///
    /// The vector is first extended (growth) — the new tail is the only memory touched for
    /// the first time. Every entry then starts *pending* and is re-placed, from the last slot
    /// down: it moves to the first slot of its new probe run that is empty or still pending
    /// (swapping with a pending one, which is then placed in turn), or stays if that slot is
    /// its own. Placed entries only ever pass placed entries, so no probe run is broken when
    /// a pending slot empties. With order-preserving homes, growth moves entries forward in
    /// order, so the pass streams. A smaller `capacity` (after compaction drops keys) moves
    /// the tail's entries down and then releases the tail. Dense ids that all sit in their
    /// home slots skip the pass: nothing would move.
    ///
    /// While still in [`HashMode::FoldModulo`], a fold of at least
    /// [`HASHED_FOLD_THRESHOLD`] among the stored keys switches to [`HashMode::FoldRange`].
    fn rehash_in_place(&mut self, capacity: usize, hash_mode: HashMode) {
        assert!(
            u32::try_from(capacity).is_ok(),
            "key table capacity {capacity} exceeds 2^32 slots"
        );
        assert!(self.len < capacity, "a rehash must leave an empty slot");
        let old_capacity = self.slots.len();
        if capacity > old_capacity {
            self.slots.reserve_exact(capacity - old_capacity);
            self.slots.resize(capacity, EMPTY_SLOT);
        }
        // Dense ids: every key is at slot == fold, below both capacities, which is also its
        // new home (`fold mod capacity == fold`). Nothing moves.
        let nothing_moves = hash_mode == HashMode::FoldModulo
            && self.hash_mode == HashMode::FoldModulo
            && self.every_key_at_home
            && (self.max_fold as usize) < capacity.min(old_capacity);
        self.hash_mode = match hash_mode {
            HashMode::FoldModulo if !nothing_moves && self.max_fold >= HASHED_FOLD_THRESHOLD => {
                HashMode::FoldRange
            }
            mode => mode,
        };
        self.fastmod_multiplier = (u64::MAX / capacity as u64).wrapping_add(1);
        self.inserts_since_rehash = 0;
        self.insert_distance_sum = 0;
        if !nothing_moves {
            self.re_place_entries(old_capacity, capacity);
        }
        if capacity < old_capacity {
            self.slots.truncate(capacity);
            self.slots.shrink_to_fit();
        }
    }

    /// The sweep of [`Self::rehash_in_place`]: re-places the entries of the first
    /// `old_capacity` slots into the first `capacity` (the current hash mode), and recomputes
    /// `max_fold` and `every_key_at_home` from them. A shrinking caller truncates afterwards.
    fn re_place_entries(&mut self, old_capacity: usize, capacity: usize) {
        let (hash_mode, fastmod_multiplier) = (self.hash_mode, self.fastmod_multiplier);
        let home_of =
            |slot: Slot| home_slot_for(join_key(slot), hash_mode, capacity, fastmod_multiplier);

        // Slots are visited from the last down. Above the visited slot everything is placed;
        // below it an occupied slot is still pending unless an entry was placed there — rare
        // (its new probe run started below the slot it came from, or wrapped), so those are
        // marked in a bitset whose untouched pages cost nothing.
        let mut placed_below = vec![0_u64; old_capacity.div_ceil(64)];
        let is_placed = |placed: &[u64], slot: usize| placed[slot / 64] & (1 << (slot % 64)) != 0;
        let mark_placed = |placed: &mut [u64], slot: usize| placed[slot / 64] |= 1 << (slot % 64);
        // Entries that move land ~capacity / old_capacity further on: start those lines
        // early. Dense ids under `fold mod capacity` mostly stay where they are.
        let entries_move = hash_mode != HashMode::FoldModulo;
        let mut every_key_at_home = true;
        let mut max_fold = 0_u32;
        for index in (0..old_capacity).rev() {
            if entries_move
                && let Some(ahead) = index
                    .checked_sub(REHASH_LOOKAHEAD_SLOTS)
                    .map(|i| self.slots[i])
                && ahead[2] != 0
            {
                super::hints::prefetch_read(&self.slots[home_of(ahead)]);
            }
            if self.slots[index][2] == 0 || is_placed(&placed_below, index) {
                continue;
            }
            // Place the entry at `index`; a swap brings another pending entry here.
            loop {
                let entry = self.slots[index];
                max_fold = max_fold.max(entry[0] ^ entry[1]);
                let home = home_of(entry);
                let mut target = home;
                let swapped = loop {
                    every_key_at_home &= target == home;
                    if target == index {
                        break false; // stays
                    }
                    let occupant = self.slots[target];
                    if occupant[2] == 0 {
                        self.slots[target] = entry;
                        self.slots[index] = EMPTY_SLOT;
                        if target < index {
                            mark_placed(&mut placed_below, target);
                        }
                        break false;
                    }
                    if target < index && !is_placed(&placed_below, target) {
                        // A pending entry: take its slot, and place it next.
                        self.slots[target] = entry;
                        self.slots[index] = occupant;
                        mark_placed(&mut placed_below, target);
                        break true;
                    }
                    target += 1;
                    if target == capacity {
                        target = 0;
                    }
                };
                if !swapped {
                    break;
                }
            }
        }
        self.every_key_at_home = every_key_at_home;
        self.max_fold = max_fold;
    }

    /// Forgets every key but keeps the allocation (and its page mappings) for reuse.
    pub(crate) fn clear(&mut self) {
        self.slots.fill(EMPTY_SLOT);
        self.len = 0;
        self.hash_mode = HashMode::FoldModulo;
        self.max_fold = 0;
        self.every_key_at_home = true;
        self.wants_rehash = false;
        self.inserts_since_rehash = 0;
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
        assert_eq!(table.hash_mode, HashMode::MixRange);
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
            HashMode::FoldModulo,
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

    /// Every stored key is found with its position, and every probe run is unbroken.
    fn assert_matches_model(table: &KeyTable, model: &std::collections::HashMap<i64, usize>) {
        assert_eq!(table.len(), model.len());
        assert_eq!(table.iter().count(), model.len());
        for (&key, &position) in model {
            assert_eq!(table.lookup(key).position, Some(position), "key {key}");
        }
    }

    #[test]
    fn in_place_rehash_keeps_every_key_through_growth_mode_switches_and_shrinking() {
        use std::collections::HashMap;
        let mut rng = crate::workload::SplitMix64::new(11);
        // Hashes (from `fold mod capacity` to the order-preserving range homes at the first
        // growth), then dense ids (they crowd the range homes' first slots: clustering, so
        // the mixing hash), then keys whose fold is 0 for all of them.
        let dense: Vec<i64> = (0..30_000).collect();
        let hashed: Vec<i64> = (0..60_000)
            .map(|_| i64::from_ne_bytes(rng.next_u64().to_ne_bytes()))
            .collect();
        let folding_to_zero: Vec<i64> = (1..6_000_i64).map(|i| i | (i << 32)).collect();
        let mut table = KeyTable::default();
        let mut model = HashMap::new();
        let mut position = 0;
        let mut modes_seen = Vec::new();
        for keys in [&hashed, &dense, &folding_to_zero] {
            for &key in keys {
                table.reserve(1);
                let found = table.lookup(key);
                table.find_or_insert_from(found.slot, key, position);
                table.rehash_if_clustered();
                model.insert(key, position);
                position += 1;
                if modes_seen.last() != Some(&table.hash_mode) {
                    modes_seen.push(table.hash_mode);
                }
            }
            assert_matches_model(&table, &model);
        }
        assert_eq!(
            modes_seen,
            [
                HashMode::FoldModulo,
                HashMode::FoldRange,
                HashMode::MixRange
            ]
        );

        // Compaction that drops most keys shrinks the table in place.
        let capacity_before = table.slots.len();
        table.retain_renumbered(|p| (p % 7 == 0).then_some(p / 7));
        model.retain(|_, p| *p % 7 == 0);
        for position in model.values_mut() {
            *position /= 7;
        }
        assert!(table.slots.len() < capacity_before / 3);
        assert_matches_model(&table, &model);
    }

    #[test]
    fn dense_ids_grow_without_moving_and_stay_exact() {
        use std::collections::HashMap;
        let mut rng = crate::workload::SplitMix64::new(3);
        let mut table = KeyTable::default();
        let mut model = HashMap::new();
        // Dense ids in shuffled runs: every key lands on slot == id, so growth moves nothing.
        for (position, start) in (0..40_000_i64).step_by(100).enumerate() {
            let mut run: Vec<i64> = (start..start + 100).collect();
            for i in (1..run.len()).rev() {
                run.swap(i, rng.index(i + 1));
            }
            table.reserve(run.len());
            for key in run {
                let found = table.lookup(key);
                table.find_or_insert_from(found.slot, key, position);
                model.insert(key, position);
            }
        }
        assert!(table.every_key_at_home);
        assert_matches_model(&table, &model);
        // A key beyond the capacity wraps: the next growth must really rehash.
        let far = i64::try_from(table.slots.len()).unwrap() + 17;
        table.reserve(1);
        let found = table.lookup(far);
        table.find_or_insert_from(found.slot, far, 999);
        model.insert(far, 999);
        assert!(!table.every_key_at_home);
        let capacity = table.slots.len();
        table.reserve(capacity - table.len() + 1);
        assert!(table.slots.len() > capacity);
        assert_matches_model(&table, &model);
        // Dropping keys shrinks the table; the survivors are still found.
        table.retain_renumbered(|p| (p < 50).then_some(p));
        model.retain(|_, p| *p < 50);
        assert_matches_model(&table, &model);
    }

    /// One step of the table's life, for the property test below.
    #[derive(Debug, Clone)]
    enum Step {
        /// Insert (or move) keys: `(style, value)`, style 0 dense, 1 hashed, 2 fold-to-zero.
        Upsert(Vec<(u8, u32)>),
        /// Compaction: keep every `keep_one_in`-th position, renumbered.
        Compact { keep_one_in: usize },
        /// The clustering switch to the mixing hash, at the same capacity.
        SwitchToMix,
    }

    fn key_of((style, value): (u8, u32)) -> i64 {
        let hashed = crate::workload::mix64(u64::from(value));
        let value = i64::from(value);
        match style {
            0 => value,
            1 => i64::from_ne_bytes(hashed.to_ne_bytes()),
            _ => value | (value << 32),
        }
    }

    use proptest::prelude::Strategy as _;

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(48))]
        /// Any mix of growth, hash switches and compaction keeps the table equal to a map.
        #[test]
        fn table_matches_a_map_through_any_sequence_of_rehashes(
            steps in proptest::collection::vec(
                proptest::prop_oneof![
                    6 => proptest::collection::vec((0_u8..3, 0_u32..20_000), 1..600)
                        .prop_map(Step::Upsert),
                    1 => (1_usize..5).prop_map(|keep_one_in| Step::Compact { keep_one_in }),
                    1 => proptest::strategy::Just(Step::SwitchToMix),
                ],
                1..12,
            )
        ) {
            let mut table = KeyTable::default();
            let mut model = std::collections::HashMap::new();
            let mut next_position = 0;
            for step in steps {
                match step {
                    Step::Upsert(keys) => {
                        table.reserve(keys.len());
                        for key in keys.into_iter().map(key_of) {
                            let found = table.lookup(key);
                            let inserted = table.find_or_insert_from(found.slot, key, next_position);
                            if inserted.position.is_some() {
                                table.set_position(inserted.slot, next_position);
                            }
                            model.insert(key, next_position);
                            next_position += 1;
                        }
                        table.rehash_if_clustered();
                    }
                    Step::Compact { keep_one_in } => {
                        table.retain_renumbered(|p| (p % keep_one_in == 0).then_some(p));
                        model.retain(|_, p| *p % keep_one_in == 0);
                    }
                    Step::SwitchToMix if !table.slots.is_empty() => {
                        table.rehash_in_place(table.slots.len(), HashMode::MixRange);
                    }
                    Step::SwitchToMix => {}
                }
                assert_matches_model(&table, &model);
            }
        }
    }

    #[test]
    fn range_homes_rehash_at_every_load_and_size() {
        // Random keys at sizes around every growth step, including wrap-around at the end.
        let mut rng = crate::workload::SplitMix64::new(5);
        for count in [1, 100, 3_000, 3_600, 7_000, 50_000] {
            let mut table = KeyTable::default();
            let mut model = std::collections::HashMap::new();
            for position in 0..count {
                let key = i64::from_ne_bytes((rng.next_u64() | 1 << 63).to_ne_bytes());
                table.reserve(1);
                let found = table.lookup(key);
                table.find_or_insert_from(found.slot, key, position);
                model.insert(key, position);
            }
            assert_matches_model(&table, &model);
            table.rehash_in_place(table.slots.len(), table.hash_mode);
            assert_matches_model(&table, &model);
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
