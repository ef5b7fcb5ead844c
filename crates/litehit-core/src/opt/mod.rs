//! The capacity-free optimal-policy core: `preprocess` → **opt** → `facts`, beside `hitcore`.
//!
//! OPT is Belady's MIN on the unit access sequence in which every request touches its
//! distinct keys head to tail and then once more tail to head: demand admission, and over
//! capacity the resident key used again farthest in the future is evicted. A request's hits
//! at capacity `C` are the leading keys that hit on the first pass. MIN is a stack policy, and
//! the stack distance of an access (the smallest capacity at which it hits) depends only on the
//! past (Bilardi, Ekanadham, Pattnaik, "Optimal on-line computation of stack distances for MIN
//! and OPT", CF 2017), so [`OptCore::process_request`] returns the same capacity-free
//! [`RequestFact`] as the LRU core, for every capacity at once, and never takes a capacity.
//!
//! The step per access (their critical stack algorithm, in time positions): every key sits at
//! the position of its latest access, and every capacity `c >= 2` has a *critical time*, the
//! position of the last access whose distance was `c` (a cold access makes the capacity it
//! adds critical). For an access to the key at position `s`:
//! 1. [`imbalance`]: `q` = the oldest key position after `s` where the markers after `q`
//!    balance the keys after `q` (markers − keys = 0; it is never negative at a key);
//! 2. [`critical_times`]: the distance is the smallest capacity critical at or before `q`;
//! 3. the key moves to a new, most recent position, and that capacity becomes critical there.
//!
//! The most recent key hits at capacity 1 and changes nothing. Both queries and all updates
//! are O(log) tree walks, so a request costs O(blocks × log keys), and in practice less:
//! the second pass needs no query at all (its distances are known, see
//! [`OptCore::second_pass`]) and is applied as one batch; in the first pass a key used
//! together with the previous one before almost always has the previous distance plus one,
//! which the capacity query checks first with one read ([`critical_times::Finger`]). Dead
//! positions are closed up between requests once they dominate; results never depend on when.
//!
//! Memory: as in `hitcore`, every growth is reserved fallibly before a request changes
//! anything, so running out of memory is an [`OutOfMemory`] error with the state of the
//! previous request.

mod critical_times;
mod imbalance;

use crate::facts::RequestFact;
use crate::facts::curve::PrefixCurveBuilder;
use crate::hitcore::key_store::{BlockLookups, KeyStore};
use crate::hitcore::{AllocFailed, OutOfMemory, try_reserve_total};
use critical_times::{CriticalTimes, Finger};
use imbalance::Imbalance;

/// Dead positions are closed up once
/// `positions > COMPACTION_POSITIONS_PER_USED × used + COMPACTION_SLACK_POSITIONS`
/// (a used position holds a key or a critical marker: at most two per key). A position costs
/// about 3 bits, so 4 keeps the position space near 3 bytes per key while a compaction, which
/// rewrites every key's position, runs once per ~3 × used accesses.
const COMPACTION_POSITIONS_PER_USED: usize = 4;

/// The fixed slack of the compaction rule.
const COMPACTION_SLACK_POSITIONS: usize = 4096;

/// A stack distance that no capacity reaches: the key was never accessed before.
const COLD: u64 = u64::MAX;

/// One lane's exact OPT replay state. Capacity-free by construction.
#[derive(Debug, Clone, Default)]
pub struct OptCore {
    keys: KeyStore,
    imbalance: Imbalance,
    critical: CriticalTimes,
    /// The most recently accessed key's position.
    top_position: Option<usize>,
    /// The previous first-pass access's capacity query, the guess for the next one (`None`
    /// at the start of a request: the second pass changed the times).
    finger: Option<Finger>,
    /// Distinct keys accessed so far.
    unique_keys: usize,
    scratch: OptScratch,
}

/// Per-request buffers, reused so a request allocates nothing once warm.
#[derive(Debug, Clone, Default)]
struct OptScratch {
    /// The request's distinct keys' ids, head to tail.
    distinct_ids: Vec<usize>,
    /// Their first-pass stack distances ([`COLD`]: never seen before).
    distinct_distances: Vec<u64>,
    /// Words of the position space the second pass changed (see [`Imbalance::refresh`]).
    touched_words: Vec<usize>,
}

impl OptCore {
    /// An empty core.
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Replays one request and returns its capacity-free OPT fact. `now_ns` is accepted for
    /// symmetry with the LRU core; OPT has no time of its own.
    ///
    /// # Panics
    /// When memory runs out ([`Self::try_process_request_into`] returns that as an error).
    pub fn process_request(&mut self, block_keys: &[i64], now_ns: i64) -> RequestFact {
        let mut fact = RequestFact::default();
        if let Err(error) = self.try_process_request_into(block_keys, now_ns, &mut fact) {
            panic!("{error}");
        }
        fact
    }

    /// [`Self::process_request`] writing into `fact`, returning an error instead when the core
    /// cannot grow: that request is then not replayed (the state is the previous request's)
    /// and `fact` is empty.
    pub fn try_process_request_into(
        &mut self,
        block_keys: &[i64],
        _now_ns: i64,
        fact: &mut RequestFact,
    ) -> Result<(), OutOfMemory> {
        fact.hit_curve.clear();
        if block_keys.is_empty() {
            return Ok(());
        }
        self.reserve_for(block_keys)
            .map_err(|failed| self.out_of_memory(failed))?;
        let mut keys = std::mem::take(&mut self.keys);
        match &mut keys {
            KeyStore::DenseIds(table) => self.replay(table, block_keys, fact),
            KeyStore::Hashed(table) => self.replay(table, block_keys, fact),
        }
        self.keys = keys;
        Ok(())
    }

    /// Distinct keys seen (all resident at unlimited capacity).
    #[must_use]
    pub fn current_unique_blocks(&self) -> u64 {
        self.unique_keys as u64
    }

    /// Heap bytes of the whole core state, from the real container capacities.
    #[must_use]
    pub fn memory_usage_bytes(&self) -> usize {
        self.keys.memory_usage_bytes()
            + self.imbalance.memory_usage_bytes()
            + self.critical.memory_usage_bytes()
            + (self.scratch.distinct_ids.capacity()
                + self.scratch.distinct_distances.capacity()
                + self.scratch.touched_words.capacity())
                * size_of::<u64>()
    }

    /// Forgets every key and capacity; keeps the allocations.
    pub fn reset(&mut self) {
        self.keys.clear();
        self.imbalance.clear();
        self.critical.clear();
        self.top_position = None;
        self.unique_keys = 0;
    }

    /// Positions in use, live or dead (bounded by the compaction rule between requests).
    #[must_use]
    pub fn position_space_len(&self) -> usize {
        self.imbalance.len()
    }

    fn out_of_memory(&self, failed: AllocFailed) -> OutOfMemory {
        OutOfMemory {
            unique_blocks: self.unique_keys as u64,
            needed_bytes: (self.memory_usage_bytes() as u64).saturating_add(failed.bytes as u64),
        }
    }

    /// Closes up dead positions if they dominate, then makes room for the request's two
    /// passes: up to two positions and one new capacity per block.
    fn reserve_for(&mut self, block_keys: &[i64]) -> Result<(), AllocFailed> {
        if self.imbalance.len()
            > COMPACTION_POSITIONS_PER_USED * self.imbalance.in_use() + COMPACTION_SLACK_POSITIONS
        {
            self.compact()?;
        }
        let blocks = block_keys.len();
        self.keys.prepare_for(block_keys, None)?;
        self.imbalance.reserve(2 * blocks)?;
        let positions_after = self.imbalance.len() + 2 * blocks;
        if u32::try_from(positions_after).is_err() {
            // Critical times are stored in 32 bits; compaction keeps positions below
            // 2 × keys × COMPACTION_POSITIONS_PER_USED, so this is billions of keys.
            return Err(AllocFailed { bytes: usize::MAX });
        }
        self.critical.reserve(blocks)?;
        try_reserve_total(&mut self.scratch.distinct_ids, blocks)?;
        try_reserve_total(&mut self.scratch.distinct_distances, blocks)?;
        try_reserve_total(&mut self.scratch.touched_words, 3 * blocks)
    }

    fn compact(&mut self) -> Result<(), AllocFailed> {
        let remap = self.imbalance.compact()?;
        self.keys
            .renumber_positions(|old| remap.new_position(old), |_| {});
        #[expect(
            clippy::cast_possible_truncation,
            reason = "positions fit u32 (checked in reserve_for) and compaction only lowers them"
        )]
        self.critical
            .renumber(|old| remap.new_position(old as usize) as u32);
        self.top_position = self.top_position.map(|old| remap.new_position(old));
        Ok(())
    }

    /// Both passes of one request, then its curve from the first pass.
    fn replay(
        &mut self,
        store: &mut impl BlockLookups,
        block_keys: &[i64],
        fact: &mut RequestFact,
    ) {
        let request_start = self.imbalance.len();
        self.scratch.distinct_ids.clear();
        self.scratch.distinct_distances.clear();
        let mut builder = PrefixCurveBuilder::default();
        let mut curve_open = true;
        self.finger = None;
        for &key in block_keys {
            let lookup = store.lookup_near(key, usize::MAX);
            let distance = match lookup.position {
                Some(position) if self.repeats_in_request(lookup.slot, position, request_start) => {
                    // A repeat inside the request: the first occurrence's distance.
                    let index = self
                        .scratch
                        .distinct_ids
                        .iter()
                        .position(|&id| id == lookup.slot)
                        .expect("a repeat's first occurrence is among the distinct ids");
                    self.scratch.distinct_distances[index]
                }
                Some(position) => {
                    let distance = self.access_stored(store, lookup.slot, position);
                    self.scratch.distinct_ids.push(lookup.slot);
                    self.scratch.distinct_distances.push(distance);
                    distance
                }
                None => {
                    let id = store.find_or_insert_unplaced(lookup.slot, key);
                    self.access_new(store, id);
                    self.scratch.distinct_ids.push(id);
                    self.scratch.distinct_distances.push(COLD);
                    COLD
                }
            };
            if distance == COLD {
                curve_open = false; // no capacity hits this block, nor any after it
            }
            if curve_open {
                builder.push(&mut fact.hit_curve, distance);
            }
        }
        self.second_pass(store);
    }

    /// The second pass, tail to head: every key of the request ends resident, the head the
    /// most recent.
    ///
    /// Its distances need no search. The unit accesses are `k_1 … k_n` (the distinct keys)
    /// then `k_n … k_1`, so `k_i`'s second access has distance `n - i + 1`: between its two
    /// accesses come exactly `k_{i+1} … k_n`, every one used again before `k_i`. At capacity
    /// `C > n - i` fewer than `C` keys are used again sooner, so MIN never evicts `k_i` (it
    /// evicts the resident key used again farthest); at `C <= n - i`, once `C` of them have
    /// been accessed they and `k_i` cannot all stay, and `k_i` is the one used again last.
    /// So the tail `k_n` hits at 1 (it is the most recent key: nothing moves) and `k_{n-m}`
    /// at `m + 1`: key and marker of capacity `m + 1` move to the `m`-th new position. The
    /// moves are applied as bits, and the summaries above them recomputed once at the end.
    fn second_pass(&mut self, store: &mut impl BlockLookups) {
        let distinct = self.scratch.distinct_ids.len();
        if distinct < 2 {
            return;
        }
        let first_new = self.imbalance.len();
        for step in 1..distinct {
            let id = self.scratch.distinct_ids[distinct - 1 - step];
            let key_from = store
                .placed_position(id)
                .expect("the first pass placed every key of the request");
            let capacity = step + 1;
            let new_position = self.imbalance.push();
            self.imbalance.move_bits(
                key_from,
                self.critical.time(capacity) as usize,
                new_position,
                &mut self.scratch.touched_words,
            );
            store.set_position(id, new_position);
        }
        let end = self.imbalance.len();
        self.imbalance.refresh(&mut self.scratch.touched_words);
        #[expect(
            clippy::cast_possible_truncation,
            reason = "positions fit u32 (checked in reserve_for)"
        )]
        self.critical
            .set_first((first_new..end).map(|position| position as u32));
        self.top_position = Some(end - 1);
    }

    /// Whether the stored key `id` at `position` was already accessed in this request's first
    /// pass: it moved past the request's start, or it is the first key and was the most
    /// recent one already (an access that moves nothing).
    #[inline]
    fn repeats_in_request(&self, id: usize, position: usize, request_start: usize) -> bool {
        position >= request_start || self.scratch.distinct_ids.first() == Some(&id)
    }

    /// One access to a stored key: its stack distance, and the state moved past it.
    #[inline]
    fn access_stored(&mut self, store: &mut impl BlockLookups, id: usize, position: usize) -> u64 {
        if self.top_position == Some(position) {
            return 1;
        }
        let stop = self
            .imbalance
            .first_balanced_key_after(position)
            .expect("the most recent key is balanced and more recent than any other");
        #[expect(
            clippy::cast_possible_truncation,
            reason = "positions fit u32 (checked in reserve_for)"
        )]
        let answer = self
            .critical
            .smallest_capacity_at_or_before(stop as u32, self.finger)
            .expect("some capacity is critical at or before every key but the most recent");
        let capacity = answer.capacity;
        let new_position = self.imbalance.push();
        self.imbalance.move_to_new(
            position,
            self.critical.time(capacity) as usize,
            new_position,
        );
        #[expect(
            clippy::cast_possible_truncation,
            reason = "positions fit u32 (checked in reserve_for)"
        )]
        let newest = new_position as u32;
        self.critical.set(capacity, newest);
        self.finger = Some(answer.after_access(newest));
        store.set_position(id, new_position);
        self.top_position = Some(new_position);
        capacity as u64
    }

    /// The first access to a key: the capacity it adds becomes critical here.
    #[inline]
    fn access_new(&mut self, store: &mut impl BlockLookups, id: usize) {
        let position = self.imbalance.push();
        store.set_position(id, position);
        self.top_position = Some(position);
        self.unique_keys += 1;
        // The first key adds capacity 1, which holds only the key being accessed: no marker.
        let marker = self.unique_keys >= 2;
        self.imbalance.append(position, marker);
        if marker {
            #[expect(
                clippy::cast_possible_truncation,
                reason = "positions fit u32 (checked in reserve_for)"
            )]
            self.critical.push(position as u32);
        }
    }
}

#[cfg(test)]
mod tests;
