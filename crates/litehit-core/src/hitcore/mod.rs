//! The capacity-free core: `preprocess` → **hitcore** → `facts`.
//!
//! [`LiteHit::process_request`] replays one request against one global LRU order and returns
//! its [`RequestFact`]. It takes block keys and a timestamp, never a capacity: stack inclusion
//! makes one depth per block answer every capacity at once, and `projector` does the rest.
//!
//! State: [`key_store::KeyStore`] (key → latest recency position: an array indexed by the key
//! while keys are dense ids, else a hashed table) and [`recency_ranks::RecencyRanks`] (order
//! statistics over positions), plus the optional TTL watermark. Phase 1 reads the
//! pre-request snapshot; phase 2 gives every block a new position as if touched from the
//! request tail to its head (head most recent; a repeated key ends at its first occurrence,
//! the one nearest the head),
//! committing the stored blocks first and then adding the new keys (head first, so in the
//! hashed table chains are neighbouring entries); then dead positions are compacted when they
//! dominate (REFERENCE §3).
//!
//! Memory: every growth that scales with the keys held (key table, key index, dense-id array,
//! position bitset and its Fenwick tree, compaction's remap) is reserved fallibly, once per request before anything
//! changes, so running out of memory is an [`OutOfMemory`] error with the state still that of
//! the previous request, not an abort. An optional *memory horizon*
//! ([`LiteHit::with_memory_horizon_blocks`]) bounds the keys held: like TTL expiry it only
//! decides which keys are forgotten (a key deeper than the horizon counts as cold, and
//! compaction drops it), never how a depth is evaluated; the core still takes no capacity.

pub(crate) mod dense_id_table;
mod hints;
pub(crate) mod key_store;
pub(crate) mod key_table;
mod recency_ranks;
mod ttl;

use crate::facts::RequestFact;
use crate::facts::curve::PrefixCurveBuilder;
use key_store::{BlockLookups, KeyStore};
use recency_ranks::RecencyRanks;
use ttl::TtlWatermark;

/// Dead positions are reclaimed once
/// `positions > COMPACTION_POSITIONS_PER_LIVE_KEY × live + COMPACTION_SLACK_POSITIONS`.
///
/// Upstream uses 2 × live + 4096. A compaction rewrites every key-table entry, so on large
/// traces it dominated the replay; at 8 it runs about 7× less often, while the position
/// bitset (1 bit per position) still costs about a byte per live key (1.3 with its growth
/// margin and Fenwick tree). Results never depend on it.
pub const COMPACTION_POSITIONS_PER_LIVE_KEY: usize = 8;

/// The fixed slack of the compaction rule (upstream's `kCompactionSlackPositions`).
pub const COMPACTION_SLACK_POSITIONS: usize = 4096;

/// How many new keys ahead of the one being inserted have their index slot requested. A
/// bounded window, not the whole tail: a fresh 400-block request would otherwise fill every
/// line-fill buffer at once and stall on the requests themselves.
const NEW_KEY_SEARCH_LOOKAHEAD: usize = 16;

/// A growth the allocator refused: about `bytes` were asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct AllocFailed {
    pub(crate) bytes: usize,
}

/// What a growth must leave free: the run's clean out-of-memory stop (the facts write, the
/// last report, the message) needs a little memory of its own, so a growth that would leave
/// less than this fails as if it had not fitted, before any state changes.
pub const GROWTH_HEADROOM_BYTES: usize = 8 << 20;

/// Whether [`GROWTH_HEADROOM_BYTES`] could still be allocated (a probe, freed at once).
#[must_use]
pub fn headroom_left() -> bool {
    let mut probe: Vec<u8> = Vec::new();
    probe.try_reserve_exact(GROWTH_HEADROOM_BYTES).is_ok()
}

/// `vec.try_reserve_exact(additional)`, saying how many bytes it asked for when it fails; a
/// growth that leaves less than [`GROWTH_HEADROOM_BYTES`] free fails too.
pub(crate) fn try_reserve_exact<T>(vec: &mut Vec<T>, additional: usize) -> Result<(), AllocFailed> {
    let failed = || AllocFailed {
        bytes: additional
            .saturating_mul(size_of::<T>())
            .saturating_add(GROWTH_HEADROOM_BYTES),
    };
    let capacity = vec.capacity();
    vec.try_reserve_exact(additional).map_err(|_| failed())?;
    if vec.capacity() != capacity && !headroom_left() {
        return Err(failed());
    }
    Ok(())
}

/// Makes `vec`'s capacity at least `total` elements (exactly that when it grows).
pub(crate) fn try_reserve_total<T>(vec: &mut Vec<T>, total: usize) -> Result<(), AllocFailed> {
    let additional = total.saturating_sub(vec.len());
    try_reserve_exact(vec, additional)
}

/// The core could not grow: the request that needed it was not replayed, and the state is
/// still that of the request before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("out of memory after {unique_blocks} unique blocks (about {needed_bytes} bytes needed)")]
pub struct OutOfMemory {
    /// Keys held when the growth failed.
    pub unique_blocks: u64,
    /// The core's heap bytes plus the growth that failed: roughly what it would need.
    pub needed_bytes: u64,
}

/// With a memory horizon of `H` blocks, keys are compacted away once the key table holds more
/// than `H + H / HORIZON_SLACK_DIVISOR + COMPACTION_SLACK_POSITIONS` of them (about 1.125 ×
/// the horizon); results never depend on it.
const HORIZON_SLACK_DIVISOR: usize = 8;

/// One lane's exact LRU replay state. Capacity-free by construction.
#[derive(Debug, Clone, Default)]
pub struct LiteHit {
    keys: KeyStore,
    ranks: RecencyRanks,
    /// `0` disables TTL (timestamps are then ignored).
    ttl_ns: u64,
    ttl: TtlWatermark,
    ttl_expired_blocks: u64,
    /// Latest timestamp seen; earlier ones are clamped up to it.
    last_timestamp_ns: Option<i64>,
    scratch: RequestScratch,
    /// The first key of the next request, from [`Self::prefetch`].
    next_head_hint: Option<i64>,
    /// Keys deeper than this in the recency order are forgotten (`None`: none are).
    memory_horizon_blocks: Option<usize>,
}

/// Per-request buffers, reused so a request allocates nothing once warm.
#[derive(Debug, Clone, Default)]
struct RequestScratch {
    /// Per block: its entry id; for a key new to the table, until phase 2 adds it, the index
    /// slot where its search ended. Phase 1 fills it up to the first new key, phase 2 the
    /// rest.
    slots: Vec<usize>,
    /// Position + 1 before the request, 0 if the key was absent: for the blocks phase 1
    /// looked up.
    old_positions_plus_one: Vec<usize>,
}

impl LiteHit {
    /// A core without TTL (every key lives forever, as in a pure LRU).
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// A core whose blocks expire `ttl_ns` after their last access (`0` = no TTL). An age
    /// `>= ttl_ns` is dead for every capacity and truncates the prefix like a cold block.
    #[must_use]
    pub fn with_ttl_ns(ttl_ns: u64) -> Self {
        Self {
            ttl_ns,
            ..Self::default()
        }
    }

    /// Sets a memory horizon of `horizon_blocks` (`None`: off, the default). A key deeper
    /// than the horizon in the recency order is forgotten, as TTL forgets an expired one:
    /// the core then holds O(horizon) keys instead of O(unique blocks). A block is a hit at
    /// capacity `c <= horizon_blocks` exactly as without the horizon; above it the curve
    /// stops at the horizon, so hits there are lower bounds. Only which keys are forgotten
    /// depends on it: the core still takes no capacity for evaluation.
    #[must_use]
    pub fn with_memory_horizon_blocks(mut self, horizon_blocks: Option<u64>) -> Self {
        self.memory_horizon_blocks =
            horizon_blocks.map(|blocks| usize::try_from(blocks.max(1)).unwrap_or(usize::MAX));
        self
    }

    /// The memory horizon in blocks, if one is set: hits at larger capacities are lower
    /// bounds.
    #[must_use]
    pub fn memory_horizon_blocks(&self) -> Option<u64> {
        self.memory_horizon_blocks.map(|blocks| blocks as u64)
    }

    /// The TTL in nanoseconds (`0` = none).
    #[must_use]
    pub fn ttl_ns(&self) -> u64 {
        self.ttl_ns
    }

    /// Replays one request and returns its capacity-free fact.
    ///
    /// # Panics
    /// When memory runs out ([`Self::try_process_request_into`] returns that as an error).
    pub fn process_request(&mut self, block_keys: &[i64], now_ns: i64) -> RequestFact {
        let mut fact = RequestFact::default();
        self.process_request_into(block_keys, now_ns, &mut fact);
        fact
    }

    /// [`Self::process_request`] writing into `fact`, reusing its allocation.
    ///
    /// # Panics
    /// When memory runs out ([`Self::try_process_request_into`] returns that as an error).
    pub fn process_request_into(
        &mut self,
        block_keys: &[i64],
        now_ns: i64,
        fact: &mut RequestFact,
    ) {
        if let Err(error) = self.try_process_request_into(block_keys, now_ns, fact) {
            panic!("{error}");
        }
    }

    /// [`Self::process_request_into`], returning an error instead when the core cannot grow:
    /// that request is then not replayed (the state is the previous request's) and `fact`
    /// is empty.
    pub fn try_process_request_into(
        &mut self,
        block_keys: &[i64],
        now_ns: i64,
        fact: &mut RequestFact,
    ) -> Result<(), OutOfMemory> {
        fact.hit_curve.clear();
        if !block_keys.is_empty() {
            self.reserve_for(block_keys)
                .map_err(|failed| self.out_of_memory(failed))?;
        }
        let now_ns = self.clamp_timestamp(now_ns);
        if self.ttl_ns > 0 {
            self.advance_watermark(now_ns);
        }
        if !block_keys.is_empty() {
            if self.ttl_ns > 0 {
                self.ttl.open_epoch(self.ranks.len(), now_ns);
            }
            let next_head = self.next_head_hint.take();
            // [`Self::prefetch`] already started this request's loads.
            let hinted = next_head.is_some() && next_head == block_keys.first().copied();
            let forgotten = Forgotten {
                dead_below: self.ttl.dead_below_position,
                max_required: self.memory_horizon_blocks.map_or(u64::MAX, |h| h as u64),
            };
            let (ranks, scratch) = (&mut self.ranks, &mut self.scratch);
            match &mut self.keys {
                KeyStore::DenseIds(table) => {
                    build_hit_curve(table, ranks, scratch, forgotten, block_keys, hinted, fact);
                    commit(table, ranks, scratch, block_keys);
                }
                KeyStore::Hashed(table) => {
                    build_hit_curve(table, ranks, scratch, forgotten, block_keys, hinted, fact);
                    if let Some(next_head) = next_head {
                        // Its index slot has arrived by now; start its entry for the next
                        // request.
                        table.prefetch_entry_of(next_head);
                    }
                    commit(table, ranks, scratch, block_keys);
                }
            }
        }
        self.compact_if_sparse()
            .map_err(|failed| self.out_of_memory(failed))
    }

    /// Reserves everything one request can grow, before any state changes.
    fn reserve_for(&mut self, block_keys: &[i64]) -> Result<(), AllocFailed> {
        self.keys
            .prepare_for(block_keys, self.horizon_key_limit())?;
        self.ranks.reserve(block_keys.len())?;
        let scratch = &mut self.scratch;
        // `old_positions_plus_one` only holds the blocks phase 1 looks up (up to the first new
        // key), so it is not reserved for the whole request: that would cost 8 bytes per block
        // of the largest request for nothing; it grows at most like one request's keys.
        try_reserve_total(&mut scratch.slots, block_keys.len())
    }

    fn out_of_memory(&self, failed: AllocFailed) -> OutOfMemory {
        OutOfMemory {
            unique_blocks: self.keys.len() as u64,
            needed_bytes: (self.memory_usage_bytes() as u64).saturating_add(failed.bytes as u64),
        }
    }

    /// Hints that `next_block_keys` is the request after the one about to be replayed: starts
    /// loading the index slot of its first block now, and its entry during the current
    /// request, so the next request does not begin with two dependent cache misses (and, for
    /// dense ids or ids in a hashed table's fold-modulo mode, the slots where its runs of
    /// consecutive ids start). Only a hint; results never change.
    #[inline]
    pub fn prefetch(&mut self, next_block_keys: &[i64]) {
        self.keys.prefetch_next_request(next_block_keys);
        self.next_head_hint = next_block_keys.first().copied();
    }

    /// Expires blocks as of `now_ns` without a request (idle lanes report their live set).
    pub fn advance_time(&mut self, now_ns: i64) {
        let now_ns = self.clamp_timestamp(now_ns);
        if self.ttl_ns > 0 {
            self.advance_watermark(now_ns);
        }
    }

    /// Forgets every key, position, counter and the timestamp clamp; keeps the TTL and the
    /// allocations (like `Vec::clear`), so a reused core does not page-fault its memory in
    /// again. Drop the core to release the memory.
    pub fn reset(&mut self) {
        self.keys.clear();
        self.ranks.clear();
        self.ttl = TtlWatermark::default();
        self.ttl_expired_blocks = 0;
        self.last_timestamp_ns = None;
        self.next_head_hint = None;
    }

    /// Distinct keys that are currently resident at unlimited capacity (expired excluded).
    #[must_use]
    /// With a memory horizon, at most the horizon.
    pub fn current_unique_blocks(&self) -> u64 {
        let live = self.live_markers();
        self.memory_horizon_blocks
            .map_or(live, |horizon| live.min(horizon)) as u64
    }

    /// Markers swept by the TTL watermark so far (a key that expires, returns and expires again
    /// counts twice).
    #[must_use]
    pub fn ttl_expired_blocks(&self) -> u64 {
        self.ttl_expired_blocks
    }

    /// Heap bytes of the whole core state, from the real container capacities.
    #[must_use]
    pub fn memory_usage_bytes(&self) -> usize {
        self.keys.memory_usage_bytes()
            + self.ranks.memory_usage_bytes()
            + self.ttl.memory_usage_bytes()
            + (self.scratch.slots.capacity() + self.scratch.old_positions_plus_one.capacity())
                * size_of::<usize>()
    }

    /// Recency positions in use, live or dead (the design's Fenwick size; bounded by
    /// [`COMPACTION_POSITIONS_PER_LIVE_KEY`] × live + slack after every request).
    #[must_use]
    pub fn position_space_len(&self) -> usize {
        self.ranks.len()
    }

    /// Index slots the hashed key table has read in key searches and index rebuilds since the
    /// core was made or [`Self::reset`] (`0` while the keys are dense ids, which need no
    /// index). A cost measure, about one per block access that misses the neighbour
    /// shortcut on usual traces; results never depend on it.
    #[must_use]
    pub fn key_index_probes(&self) -> u64 {
        self.keys.index_probe_count()
    }

    /// Keys held in the key table, including expired ones not yet compacted away.
    #[must_use]
    pub fn tracked_keys(&self) -> usize {
        self.keys.len()
    }

    /// Resident keys from most to least recent (expired keys excluded). O(U log U): for
    /// tests, debugging and small examples, not for the replay loop.
    #[must_use]
    pub fn recency_order(&self) -> Vec<i64> {
        let mut by_position: Vec<(usize, i64)> = self
            .keys
            .iter()
            .filter(|&(_, position)| position >= self.ttl.dead_below_position)
            .map(|(key, position)| (position, key))
            .collect();
        by_position.sort_unstable_by_key(|&(position, _)| std::cmp::Reverse(position));
        by_position.into_iter().map(|(_, key)| key).collect()
    }

    /// Whether the keys sit in the dense-id array (else in the hashed table).
    #[cfg(test)]
    pub(crate) fn uses_dense_id_table(&self) -> bool {
        matches!(self.keys, KeyStore::DenseIds(_))
    }

    /// Markers at or above the TTL watermark.
    fn live_markers(&self) -> usize {
        self.ranks.set_count() - self.ranks.count_before(self.ttl.dead_below_position)
    }

    fn clamp_timestamp(&mut self, now_ns: i64) -> i64 {
        let clamped = self
            .last_timestamp_ns
            .map_or(now_ns, |last| last.max(now_ns));
        self.last_timestamp_ns = Some(clamped);
        clamped
    }

    fn advance_watermark(&mut self, now_ns: i64) {
        if let Some(old_dead_below) = self.ttl.advance(now_ns, self.ttl_ns, self.ranks.len()) {
            let newly_dead = self.ranks.count_before(self.ttl.dead_below_position)
                - self.ranks.count_before(old_dead_below);
            self.ttl_expired_blocks += newly_dead as u64;
        }
    }

    /// Reclaims dead positions once they dominate, or keys past the memory horizon once they
    /// add up; drops TTL-expired keys and those past the horizon while at it.
    #[inline]
    fn compact_if_sparse(&mut self) -> Result<(), AllocFailed> {
        let positions = self.ranks.len();
        let past_horizon = self
            .horizon_key_limit()
            .is_some_and(|limit| self.keys.len() > limit);
        if past_horizon
            || positions
                > COMPACTION_POSITIONS_PER_LIVE_KEY * self.live_markers()
                    + COMPACTION_SLACK_POSITIONS
        {
            self.compact()?;
        }
        Ok(())
    }

    /// With a memory horizon, the most keys held between requests: past it, compaction
    /// drops the keys deeper than the horizon.
    fn horizon_key_limit(&self) -> Option<usize> {
        self.memory_horizon_blocks.map(|horizon| {
            horizon
                .saturating_add(horizon / HORIZON_SLACK_DIVISOR)
                .saturating_add(COMPACTION_SLACK_POSITIONS)
        })
    }

    /// The first position compaction keeps: the TTL watermark, or the marker of the key at
    /// the horizon's depth if that is higher.
    fn first_kept_position(&mut self) -> usize {
        let dead_below = self.ttl.dead_below_position;
        let Some(horizon) = self.memory_horizon_blocks else {
            return dead_below;
        };
        self.ranks.flush();
        let live = self.live_markers();
        if live <= horizon {
            return dead_below;
        }
        self.ranks
            .nth_set_position(self.ranks.set_count() - horizon)
            .max(dead_below)
    }

    #[inline(never)]
    fn compact(&mut self) -> Result<(), AllocFailed> {
        let first_kept = self.first_kept_position();
        let remap = self.ranks.compact(first_kept)?;
        if remap.dropped_count == 0 {
            self.keys
                .renumber_positions(|old| remap.new_position(old), |old| remap.prefetch(old));
        } else {
            // Expired keys sit below the watermark: forget them.
            self.keys
                .retain_renumbered(|old| remap.keeps(old).then(|| remap.new_position(old)));
        }
        if self.ttl_ns > 0 {
            // Epochs that began below the horizon's cut start at the first kept position.
            self.ttl
                .remap(|old| remap.new_position(old.max(first_kept)));
        }
        Ok(())
    }
}

/// What phase 1 treats as cold although the key is stored.
#[derive(Debug, Clone, Copy)]
struct Forgotten {
    /// Positions below the TTL watermark are expired.
    dead_below: usize,
    /// A depth past the memory horizon (`u64::MAX`: none) is forgotten.
    max_required: u64,
}

/// Phase 1: the hit curve on the read-only pre-request snapshot. Stops looking keys up at the
/// first new key, where the curve ends (past a TTL-expired key the curve ends too, but the
/// lookups go on: that key and its chain are stored, and the neighbour shortcut finds them
/// cheaply); records each looked-up key's id (for a key new to a [`key_table::KeyTable`]: the
/// index slot where its search ended) and old position for phase 2, so no key is looked up
/// twice. Phase 2 searches the rest from their home slots — for prefix-chained requests all
/// new; input that is not a chain (an old key after a new one) loses the neighbour shortcut
/// there, never exactness.
#[inline]
fn build_hit_curve(
    keys: &mut impl BlockLookups,
    ranks: &RecencyRanks,
    scratch: &mut RequestScratch,
    forgotten: Forgotten,
    block_keys: &[i64],
    hinted: bool,
    fact: &mut RequestFact,
) {
    let Forgotten {
        dead_below,
        max_required,
    } = forgotten;
    if !hinted {
        keys.prefetch_request(block_keys);
    }
    scratch.slots.clear();
    scratch.old_positions_plus_one.clear();
    // New keys are appended head first (see `commit`), so the next block of a chain is
    // usually the entry just after the previous block's.
    let mut neighbour_guess = usize::MAX;
    for (index, &key) in block_keys.iter().enumerate() {
        let lookup = keys.lookup_near(key, neighbour_guess);
        neighbour_guess = usize::MAX;
        if let Some(position) = lookup.position {
            ranks.prefetch(position);
            neighbour_guess = lookup.slot + 1;
        }
        scratch.slots.push(lookup.slot);
        scratch
            .old_positions_plus_one
            .push(lookup.position.map_or(0, |p| p + 1));
        if lookup.position.is_none() {
            // A new key: no capacity hits it or any block after it, so the curve needs no
            // more lookups. In a prefix chain every later block is new too: start the searches
            // of the next few, and let phase 2 finish them once the curve is built and the
            // stored blocks are committed, so the misses overlap that work instead of
            // stalling here (phase 2 keeps the window moving).
            for &later in block_keys[index + 1..]
                .iter()
                .take(NEW_KEY_SEARCH_LOOKAHEAD)
            {
                keys.prefetch_search(later);
            }
            break;
        }
    }

    let curve = &mut fact.hit_curve;
    let mut builder = PrefixCurveBuilder::default();
    // The previous block's position and depth: a chain neighbour one position older is
    // exactly one deeper, so only the first block of each run needs a rank query.
    let mut previous: Option<(usize, u64)> = None;
    for &position_plus_one in &scratch.old_positions_plus_one {
        let Some(position) = position_plus_one
            .checked_sub(1)
            .filter(|&p| p >= dead_below)
        else {
            break; // cold or expired: no capacity hits this block, nor any after it
        };
        let required = match previous {
            Some((previous_position, previous_required)) if previous_position == position + 1 => {
                previous_required + 1
            }
            _ => ranks.count_after(position) as u64 + 1,
        };
        if required > max_required {
            break; // past the memory horizon: forgotten, as if cold
        }
        previous = Some((position, required));
        builder.push(curve, required);
    }
}

/// Phase 2: every block gets a new position, the request tail the oldest and the head the
/// most recent (the same as touching block by block from the tail); a repeated key ends at
/// the position of its first occurrence (the one nearest the head), and its other positions
/// are freed.
///
/// That rule does not depend on the order the blocks are visited in, so the blocks phase 1
/// found stored are committed first, while the index slots of the new keys (requested in
/// phase 1) arrive; then the new keys are added, head first and not yet placed (in a
/// [`key_table::KeyTable`] a chain's entries then follow the request order, and the next
/// request walks them forward), and placed.
#[inline]
fn commit(
    keys: &mut impl BlockLookups,
    ranks: &mut RecencyRanks,
    scratch: &mut RequestScratch,
    block_keys: &[i64],
) {
    let looked_up = scratch.slots.len();
    // Phase 1 looked up `0..looked_up`; only its last lookup can have found nothing.
    let first_new = match scratch.old_positions_plus_one.last() {
        Some(0) => looked_up - 1,
        _ => looked_up,
    };
    let block_count = block_keys.len();
    let first_position = ranks.push_run(block_count);
    let new_position_of = |index: usize| first_position + (block_count - 1 - index);

    // Stored blocks, tail to head: a repeat nearer the head moves the key again.
    for index in (0..first_new).rev() {
        let id = scratch.slots[index];
        if let Some(previous_position) = keys.placed_position(id) {
            ranks.remove(previous_position);
        }
        keys.set_position(id, new_position_of(index));
    }

    // The rest: for a prefix chain all new; otherwise some may be stored, or repeat a block
    // committed above.
    for (index, &key) in block_keys.iter().enumerate().skip(first_new) {
        if let Some(&ahead) = block_keys.get(index + 1 + NEW_KEY_SEARCH_LOOKAHEAD) {
            keys.prefetch_search(ahead);
        }
        if index < looked_up {
            scratch.slots[index] = keys.find_or_insert_unplaced(scratch.slots[index], key);
        } else {
            scratch.slots.push(keys.find_or_insert(key));
        }
    }
    for index in (first_new..block_count).rev() {
        let id = scratch.slots[index];
        let position = new_position_of(index);
        match keys.placed_position(id) {
            // Placed nearer the head by this request already: this position stays free.
            Some(current) if current > position => ranks.remove(position),
            // Its position before the request, or one nearer the tail from this request.
            Some(current) => {
                ranks.remove(current);
                keys.set_position(id, position);
            }
            None => keys.set_position(id, position),
        }
    }
    ranks.flush();
}

#[cfg(test)]
mod tests;
