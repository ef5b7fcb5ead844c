//! Key → latest recency position for keys that are not small dense ids (64-bit hashes, mixed
//! or sparse key sets; dense ids go to [`super::dense_id_table::DenseIdTable`]): entries in
//! insertion order, found through a compact hash index — and, most of the time, without it.
//!
//! Why two parts: block keys are prefix-chained, and a request mostly re-reads chains that an
//! earlier request added in one go. The core appends a request's new keys head first, so a
//! chain's blocks sit next to each other in the entry vector: once block `i` is found at
//! entry `e`, block `i + 1` is usually at `e + 1`, and the core checks that neighbour first
//! ([`KeyTable::lookup_near`]). The hash index is only needed for the first block of a run and
//! for keys not seen before. On the large generated trace 74 % of all accesses are found next
//! to the previous block, 4 % through the index, and 22 % are new (`cargo bench --bench core
//! -- adjacency`); with keys that are random
//! 64-bit hashes, that turns most DRAM misses of a hashed table into sequential reads. Every
//! match compares the full key, so the neighbour guess is only a shortcut, never part of a
//! result.
//!
//! * **Entries**: `[key low half, key high half, position + 1]`, 12 bytes, in a vector grown
//!   by a sixteenth at a time (Linux grows it with `mremap`, no copy): 12–12.75 bytes per key.
//!   An entry's index (its *id*) never changes, except when [`KeyTable::retain_renumbered`]
//!   drops keys (order kept).
//! * **Index**: open addressing with linear probing over `u32` slots: `0` is empty, else the
//!   entry id + 1 in the low bits and a fingerprint of the key in the bits above, so a probe
//!   rarely reads an entry that is not the key. Load kept in `[MAX_LOAD / GROWTH, MAX_LOAD]` ≈
//!   `[0.50, 0.80]` once large (5.0–8.0 bytes per key; small indexes double instead). Keys
//!   are already hashes (or ids), so no `SipHash`: the home slot comes from the key folded to
//!   32 bits, in one of three [`HashMode`]s — small ids (a lane's share of globally dense
//!   ids) keep `fold mod capacity` (neighbouring ids, neighbouring slots), keys that look
//!   like hashes switch to `fold × capacity / 2^32`, and a key set that defeats the fold
//!   (long probe runs) switches to a multiplicative mix, then to a full avalanche (below).
//!
//! No deletions except by rebuilding (compaction). The index never grows mid-request (the core
//! reserves room for the whole request first); the one rebuild that can happen mid-request is
//! a switch of home function at the same capacity, in the index's own allocation
//! (`KeyTable::switch_hash`). A rebuild reads the entries in order and never needs a second
//! index. Each rebuilt key is one random index write (~20 ns here), so the index grows by
//! ×1.6: fewer rebuilds (1.7 re-inserts per key on average instead of 2.7 at ×1.37) for at
//! most 1.3 bytes more per key.
//!
//! **Bounded probe work.** A home function picked from earlier keys can be defeated by later
//! ones: after a request of hash-like keys the order-preserving `fold × capacity / 2^32`
//! puts every small id into the first few slots, and a request of 200 k ids then read
//! 2 × 10^10 slots (issue 16). So every search (lookup or insert) adds the slots it read to a
//! window of [`SEARCH_WINDOW`] searches, checked after each search against a budget of
//! [`MAX_MEAN_SEARCH_PROBES`] slots per search; past it the index switches at once, mid-request
//! if need be, to the next [`HashMode`] (fold → multiplicative mix → avalanche; never back,
//! except by [`KeyTable::clear`]). A rebuild is bounded alike: past that many slots per entry
//! plus one window's budget it stops and starts over with the next function. So between
//! switches the 4096 searches of a window read at most 16 × 4096 slots plus one search's
//! walk; a table switches at most twice in its life (plus the fold modes'
//! one move to range homes at a growth), each time at the cost of one rebuild; and the last
//! function, the `SplitMix64` finalizer, is no longer watched (it is fixed, not seeded: a key
//! set built against it could still cluster it). [`KeyTable::probe_count`] counts the slots.
//!
//! **Invariant: entry ids survive every mid-request switch; saved empty slots do not.** Ids
//! are entry-vector indexes and a switch rewrites only the index, so an id found in phase 1
//! (or earlier in phase 2) stays valid in phase 2. An *empty slot* where a failed lookup
//! stopped is meaningful only under the home function that produced it: without a switch the
//! index has only gained slots since, and a search resumes there (past any slot another new
//! key took since); after a switch (`search_slots_stale`: set by the switch, cleared when the
//! next request begins in [`KeyTable::reserve`]) [`KeyTable::find_or_insert_unplaced`] ignores
//! it and searches from the key's home slot under the new function. A switch is only made
//! after a search's result is used — an insert has written its slot — never between a search
//! and the write it leads to. (Phase 1 saves at most one empty slot, from its last lookup, and
//! phase 2's first insert consumes it; the rule does not rely on that.)

/// Grow the index when its load would pass this.
use super::{AllocFailed, try_reserve_exact, try_reserve_total};

const MAX_LOAD: f64 = 0.80;
/// Index capacity multiplier on growth once the index is large: rebuild work against bytes
/// per key (module docs).
const GROWTH: f64 = 1.6;
/// Below this many index slots the index doubles instead: rebuilds dominate small tables, and
/// the wasted bytes are negligible there.
const DOUBLING_BELOW_SLOTS: usize = 1 << 22;
/// The entry vector grows by `len / ENTRY_GROWTH_DIVISOR` (at least [`MIN_ENTRY_GROWTH`],
/// and at least the request): small steps keep the unused tail small, and `mremap` makes each
/// step cheap.
const ENTRY_GROWTH_DIVISOR: usize = 16;
const MIN_ENTRY_GROWTH: usize = 1 << 12;
/// Searches reading this many index slots on average, over a window of [`SEARCH_WINDOW`]
/// searches, mean the home function is clustering — dense ids arriving in runs pile up into
/// long linear-probing clusters (seen on multi-instance traces whose ids are dense globally
/// but sparse per lane), and small ids after hash-like keys all have homes in the first slots
/// of the order-preserving [`HashMode::FoldRange`] (issue 16): the index switches to the next
/// [`HashMode`] at once, mid-request if need be. A uniform hash at the maximum load reads
/// about 13 slots per insert and 3 per lookup of a stored key, so 16 is just above the
/// worst a good home function gives; ids on a stride (`i << 39`: homes on every 128th slot
/// under `fold mod capacity`) fill runs as long as the stride and read about half of it per
/// search, which a looser bound (64) let through.
const MAX_MEAN_SEARCH_PROBES: u64 = 16;
/// The window over which search probes are summed. Its budget,
/// `MAX_MEAN_SEARCH_PROBES × SEARCH_WINDOW` slots, is checked after every search, so at most
/// that many slots (plus one search's) are read before a clustering home function is left.
const SEARCH_WINDOW: u32 = 4096;
pub(super) const SEARCH_WINDOW_PROBE_BUDGET: u64 = MAX_MEAN_SEARCH_PROBES * SEARCH_WINDOW as u64;
/// The search window is one word: the searches in its low bits (up to [`SEARCH_WINDOW`]), the
/// slots they read above, so a search updates it with one add.
const WINDOW_COUNT_BITS: u32 = 13;
const _: () = assert!(SEARCH_WINDOW < 1 << WINDOW_COUNT_BITS);
/// A window word above this has read more than its budget, whatever its search count.
const WINDOW_WORD_LIMIT: u64 =
    (SEARCH_WINDOW_PROBE_BUDGET << WINDOW_COUNT_BITS) | ((1 << WINDOW_COUNT_BITS) - 1);
const MIN_CAPACITY: usize = 1 << 12;
/// How far ahead a rebuild prefetches the index slot an entry will land in (~100 ns of DRAM
/// latency at a few ns per entry).
const REBUILD_LOOKAHEAD_ENTRIES: usize = 32;
/// How far ahead compaction's renumbering pass prefetches the positions it will look up.
const LOOKAHEAD_ENTRIES: usize = 16;
/// The multiplier of the mixing hash and of the fingerprint (2^64 / golden ratio).
const MIX_MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

/// The home functions, in the order a clustering index moves through them (it never moves
/// back, except when cleared): each is faster on the keys it was chosen for and the later
/// ones are harder to defeat. [`HashMode::FoldModulo`] moves to [`HashMode::FoldRange`] at a
/// rebuild once a stored key looks like a hash; any mode but the last moves to the next one
/// ([`HashMode::next`]) when searches or a rebuild read too many slots.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
enum HashMode {
    /// `fold mod capacity`, with `fold = (key ^ key >> 32) as u32`: identity on dense ids, so
    /// neighbouring ids share cache lines.
    #[default]
    FoldModulo,
    /// `fold × capacity / 2^32`: for keys whose fold is spread over all 32 bits (hashes).
    FoldRange,
    /// A multiplicative mix, then `× capacity / 2^32`: spreads arithmetic progressions and
    /// runs of any stride; only keys built against the multiplier cluster.
    MixRange,
    /// A full avalanche (the `SplitMix64` finalizer), then `× capacity / 2^32`: every key bit
    /// moves every home bit. The last resort: searches are no longer watched.
    AvalancheRange,
}

impl HashMode {
    /// The mode a clustering index switches to, `None` for the last one.
    fn next(self) -> Option<Self> {
        match self {
            Self::FoldModulo | Self::FoldRange => Some(Self::MixRange),
            Self::MixRange => Some(Self::AvalancheRange),
            Self::AvalancheRange => None,
        }
    }
}

/// A fold at or above this means the keys are not small dense ids: they are hashes.
const HASHED_FOLD_THRESHOLD: u32 = 1 << 31;

/// One entry: `[key low half, key high half, position + 1]`.
type Entry = [u32; 3];

/// `position + 1` of an entry added in the current request and not placed yet.
const UNPLACED: u32 = 0;

#[derive(Debug, Clone, Default)]
pub(crate) struct KeyTable {
    /// Every stored key, in insertion order; the index of an entry is its id.
    entries: Vec<Entry>,
    /// `0` = empty, else `fingerprint bits | (id + 1)`; see [`Self::id_mask`].
    index: Vec<u32>,
    /// The low bits of an index slot that hold `id + 1`: enough for any id below the index
    /// capacity; the bits above hold the fingerprint.
    id_mask: u32,
    /// Lemire's fastmod multiplier for `index.len()` (used by [`HashMode::FoldModulo`]).
    fastmod_multiplier: u64,
    hash_mode: HashMode,
    /// The current search window (since the last rebuild or the window's start): its searches
    /// and, shifted by [`WINDOW_COUNT_BITS`], the index slots they read; see [`SEARCH_WINDOW`].
    window: u64,
    /// Set when the index was rebuilt with another home function since the request began
    /// ([`Self::reserve`]): the empty slots that earlier failed lookups returned mean nothing
    /// now, so [`Self::find_or_insert_unplaced`] searches from the key's home slot instead.
    search_slots_stale: bool,
    /// Index slots read by searches and rebuilds since the table was made or cleared, but
    /// for the current search window's ([`Self::probe_count`] adds them).
    probes: u64,
    /// The most keys the table holds between two requests, when the core compacts it down
    /// at a bound (a memory horizon): the index then never grows past what that many keys
    /// plus a request need ([`Self::index_slots_cap`]). `None`: the table grows freely.
    key_limit: Option<usize>,
}

/// Where a key lives (or would be inserted) and its stored position.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Lookup {
    /// The key's entry id if it is present (`position` is `None` only for a key added in the
    /// current request and not placed yet), else the empty index slot where the search ended
    /// (where [`KeyTable::find_or_insert_unplaced`] continues).
    pub(crate) slot: usize,
    /// `Some(position)` if the key is present and placed.
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
fn join_key(entry: Entry) -> i64 {
    #[expect(clippy::cast_possible_wrap, reason = "bit join")]
    let key = (u64::from(entry[0]) | (u64::from(entry[1]) << 32)) as i64;
    key
}

#[inline]
fn mixed(key: i64) -> u64 {
    #[expect(clippy::cast_sign_loss, reason = "hash bits")]
    let bits = key as u64;
    bits.wrapping_mul(MIX_MULTIPLIER)
}

/// The `SplitMix64` finalizer (a bijection on 64 bits with full avalanche).
#[inline]
fn avalanche(key: i64) -> u64 {
    #[expect(clippy::cast_sign_loss, reason = "hash bits")]
    let mut z = key as u64;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The home slot of `key` in an index of `capacity` slots.
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
            let upper = (mixed(key) >> 32) as u32;
            scaled(upper)
        }
        HashMode::AvalancheRange => {
            let upper = (avalanche(key) >> 32) as u32;
            scaled(upper)
        }
    }
}

/// The low `id_bits` bits that hold `id + 1` in an index of `capacity` slots: ids stay below
/// the capacity, so `id + 1 ≤ capacity ≤ id_mask`.
fn id_mask_for(capacity: usize) -> u32 {
    let id_bits = usize::BITS - capacity.leading_zeros();
    if id_bits >= 32 {
        u32::MAX
    } else {
        (1 << id_bits) - 1
    }
}

#[inline]
pub(crate) fn encode_position(position: usize) -> u32 {
    u32::try_from(position + 1)
        .expect("recency positions stay below 2^32 - 1 (about 2 billion live keys)")
}

impl KeyTable {
    /// Number of keys stored.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.entries.len()
    }

    /// A table holding `placed` (`(key, position)` pairs, `count` of them), entries in that
    /// order: how the core takes over the keys of a [`super::dense_id_table::DenseIdTable`].
    pub(crate) fn from_placed(
        placed: impl Iterator<Item = (i64, usize)>,
        count: usize,
    ) -> Result<Self, AllocFailed> {
        let mut table = Self::default();
        try_reserve_exact(&mut table.entries, count.max(MIN_ENTRY_GROWTH))?;
        table.entries.extend(placed.map(|(key, position)| {
            let (low, high) = split_key(key);
            [low, high, encode_position(position)]
        }));
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "sizes"
        )]
        let capacity = ((table.len() as f64 / MAX_LOAD * GROWTH) as usize).max(MIN_CAPACITY);
        try_reserve_exact(&mut table.index, capacity)?;
        table.rebuild_index(capacity, HashMode::FoldModulo);
        Ok(table)
    }

    #[inline]
    fn home_slot(&self, key: i64) -> usize {
        home_slot_for(
            key,
            self.hash_mode,
            self.index.len(),
            self.fastmod_multiplier,
        )
    }

    /// The fingerprint bits of `key` as they sit in an index slot (its id bits zero). Taken
    /// from the mixing hash's low half, which no home slot uses.
    #[inline]
    fn fingerprint(&self, key: i64) -> u32 {
        #[expect(clippy::cast_possible_truncation, reason = "lower hash bits")]
        let lower = mixed(key) as u32;
        lower & !self.id_mask
    }

    /// Makes room for `additional` more keys, so that the index never grows mid-request;
    /// call it as a request begins (it also forgets that an earlier request rebuilt the index,
    /// [`Self::search_slots_stale`]).
    ///
    /// Fails, changing nothing a lookup sees, when the memory for that is not there.
    ///
    /// `key_limit` is the most keys the table holds between requests (the core compacts it
    /// down there: a memory horizon), `None` when it grows freely: the index and the entries
    /// then never grow past that plus this request, so a bounded table does not keep a
    /// growth margin it will never use.
    pub(crate) fn reserve(
        &mut self,
        additional: usize,
        key_limit: Option<usize>,
    ) -> Result<(), AllocFailed> {
        self.search_slots_stale = false;
        self.key_limit = key_limit;
        let len = self.entries.len();
        if len + additional > self.entries.capacity() {
            let mut step = (len / ENTRY_GROWTH_DIVISOR).max(MIN_ENTRY_GROWTH);
            if let Some(limit) = key_limit {
                step = step.min(limit.saturating_sub(len));
            }
            try_reserve_exact(&mut self.entries, step.max(additional))?;
        }
        let needed = len + additional;
        if self.index.is_empty() || needed as f64 > self.index.len() as f64 * MAX_LOAD {
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "sizes"
            )]
            let grown = if self.index.len() < DOUBLING_BELOW_SLOTS {
                self.index.len() * 2
            } else {
                (self.index.len() as f64 * GROWTH) as usize
            };
            #[expect(
                clippy::cast_possible_truncation,
                clippy::cast_sign_loss,
                reason = "sizes"
            )]
            let for_needed = (needed as f64 / MAX_LOAD) as usize + 1;
            let grown = grown.min(self.index_slots_cap(additional));
            let capacity = grown.max(for_needed).max(MIN_CAPACITY);
            // Grown here, fallibly; the rebuild then only reuses the allocation.
            try_reserve_total(&mut self.index, capacity)?;
            self.rebuild_index(capacity, self.hash_mode);
        }
        Ok(())
    }

    /// Starts loading what the lookups of a request's keys read first (a hint; no effect on
    /// results). While keys look like ids: the index slot where each run of consecutive ids
    /// starts (the rest of a run is on the following slots, which the hardware streams in by
    /// itself). For hashed keys nothing: most are found next to the previous block without
    /// the index, and the index slots of new keys are started when the first new key shows
    /// up.
    #[inline]
    pub(crate) fn prefetch_request(&self, keys: &[i64]) {
        if self.hash_mode != HashMode::FoldModulo {
            return;
        }
        for key in super::hints::run_heads(keys) {
            self.prefetch_index(key);
        }
    }

    /// Starts loading the index slot where the search for `key` begins (a hint).
    #[inline]
    pub(crate) fn prefetch_index(&self, key: i64) {
        if !self.index.is_empty() {
            super::hints::prefetch_read(&self.index[self.home_slot(key)]);
        }
    }

    /// Starts loading the entry of `key` if the index names one (a hint). Reads the index, so
    /// call it once [`Self::prefetch_index`] has had time to bring the slot in.
    #[inline]
    pub(crate) fn prefetch_entry_of(&self, key: i64) {
        if self.index.is_empty() {
            return;
        }
        let fingerprint = self.fingerprint(key);
        let mut slot = self.home_slot(key);
        loop {
            let word = self.index[slot];
            if word == 0 {
                return;
            }
            if word & !self.id_mask == fingerprint {
                let id = (word & self.id_mask) as usize - 1;
                super::hints::prefetch_read(&self.entries[id]);
                return;
            }
            slot = self.next_slot(slot);
        }
    }

    /// Finds `key`, trying `neighbour_guess` (the entry after the previous block's; any
    /// value, `usize::MAX` for none) before the index.
    #[inline]
    pub(crate) fn lookup_near(&mut self, key: i64, neighbour_guess: usize) -> Lookup {
        if let Some(found) = self.entry_if_key(neighbour_guess, key) {
            return found;
        }
        self.lookup(key)
    }

    /// Entry `id` if it exists and holds `key`.
    #[inline]
    fn entry_if_key(&self, id: usize, key: i64) -> Option<Lookup> {
        let &entry = self.entries.get(id)?;
        (join_key(entry) == key).then(|| Lookup {
            slot: id,
            position: self.placed_position(id),
        })
    }

    /// Finds `key` through the index, or the empty index slot where it would be inserted.
    #[inline]
    pub(crate) fn lookup(&mut self, key: i64) -> Lookup {
        if self.index.is_empty() {
            return Lookup {
                slot: 0,
                position: None,
            };
        }
        let found = self.search_from(self.home_slot(key), key);
        self.switch_hash_if_clustering();
        match found {
            Ok(id) => Lookup {
                slot: id,
                position: self.placed_position(id),
            },
            Err(empty_slot) => Lookup {
                slot: empty_slot,
                position: None,
            },
        }
    }

    /// Walks the index from `slot`: `Ok(entry id)` of `key`, or `Err(the empty slot)` where
    /// the walk ended. Only slots whose fingerprint matches read their entry.
    #[inline]
    fn search_from(&mut self, mut slot: usize, key: i64) -> Result<usize, usize> {
        let fingerprint = self.fingerprint(key);
        let mut probes = 1;
        let found = loop {
            let word = self.index[slot];
            if word == 0 {
                break Err(slot);
            }
            if word & !self.id_mask == fingerprint {
                let id = (word & self.id_mask) as usize - 1;
                if join_key(self.entries[id]) == key {
                    break Ok(id);
                }
            }
            slot = self.next_slot(slot);
            probes += 1;
        };
        self.window += (probes << WINDOW_COUNT_BITS) | 1;
        found
    }

    /// Checks the search window after a search: the index switches to the next home
    /// function at once when the window's searches read more than their budget, else a full
    /// window starts over.
    ///
    /// Called after a search's result is used or saved, never in between: an entry id stays
    /// valid across the rebuild (entries do not move), an empty slot does not, which
    /// [`Self::search_slots_stale`] records.
    #[inline]
    fn switch_hash_if_clustering(&mut self) {
        if self.window > WINDOW_WORD_LIMIT {
            self.switch_hash();
        } else if self.window & u64::from(SEARCH_WINDOW) != 0 {
            // The count (below `2 × SEARCH_WINDOW`, a power of two) has reached the window.
            self.start_search_window();
        }
    }

    /// Rebuilds the index with the next home function, at the same capacity and in its own
    /// allocation (no copy, no growth; entries and their ids unchanged). The last function
    /// is kept and its searches are no longer watched.
    #[cold]
    #[inline(never)]
    fn switch_hash(&mut self) {
        self.start_search_window();
        if let Some(next) = self.hash_mode.next() {
            self.rebuild_index(self.index.len(), next);
            self.search_slots_stale = true;
        }
    }

    /// Index slots read so far by key searches (lookups and inserts, each from where it
    /// starts to where it ends) and by rebuilds (each entry from its home slot to the empty
    /// slot it lands in); prefetch hints are not counted. A cost measure for tests and
    /// diagnostics: results never depend on it. Zeroed by [`Self::clear`].
    pub(crate) fn probe_count(&self) -> u64 {
        self.probes + (self.window >> WINDOW_COUNT_BITS)
    }

    /// The slot after `slot`, wrapping at the end of the index.
    #[inline]
    fn next_slot(&self, slot: usize) -> usize {
        if slot + 1 == self.index.len() {
            0
        } else {
            slot + 1
        }
    }

    /// The position stored in entry `id`, `None` while it is not placed yet (a key added by
    /// [`Self::find_or_insert_unplaced`] in the current request).
    #[inline]
    pub(crate) fn placed_position(&self, id: usize) -> Option<usize> {
        self.entries[id][2].checked_sub(1).map(|p| p as usize)
    }

    /// Stores a new position in entry `id`.
    #[inline]
    pub(crate) fn set_position(&mut self, id: usize, position: usize) {
        self.entries[id][2] = encode_position(position);
    }

    /// Continues a failed lookup from its empty index slot: returns the key's entry id if an
    /// earlier insert of this request already added it, else appends it, not placed yet
    /// (the caller sets its position before the request ends), and returns the new id.
    /// (After a rebuild with another home function this request, the slot is stale, and the
    /// search starts at the key's home slot instead.)
    #[inline]
    pub(crate) fn find_or_insert_unplaced(&mut self, start_slot: usize, key: i64) -> usize {
        let start_slot = if self.search_slots_stale {
            self.home_slot(key)
        } else {
            start_slot
        };
        let id = match self.search_from(start_slot, key) {
            Ok(id) => id,
            Err(empty_slot) => {
                let id = self.push_unplaced(key);
                self.index[empty_slot] = self.fingerprint(key) | self.encode_id(id);
                id
            }
        };
        self.switch_hash_if_clustering();
        id
    }

    /// [`Self::find_or_insert_unplaced`] from the key's home slot: for a key that was not
    /// looked up before ([`Self::reserve`] made the index non-empty).
    #[inline]
    pub(crate) fn find_or_insert(&mut self, key: i64) -> usize {
        self.find_or_insert_unplaced(self.home_slot(key), key)
    }

    #[inline]
    fn encode_id(&self, id: usize) -> u32 {
        let id_plus_one = u32::try_from(id + 1).expect("entry ids stay below the index capacity");
        debug_assert!(id_plus_one <= self.id_mask);
        id_plus_one
    }

    /// Appends an unplaced entry ([`Self::reserve`] made room for it).
    #[inline]
    fn push_unplaced(&mut self, key: i64) -> usize {
        let (low, high) = split_key(key);
        self.entries.push([low, high, UNPLACED]);
        self.entries.len() - 1
    }

    /// Rewrites every stored position in place (no key is dropped). `prefetch` is called a
    /// few entries ahead with the position about to be renumbered, so the lookups it needs
    /// overlap.
    pub(crate) fn renumber_positions(
        &mut self,
        new_position: impl Fn(usize) -> usize,
        prefetch: impl Fn(usize),
    ) {
        for index in 0..self.entries.len() {
            if let Some(ahead) = self.entries.get(index + LOOKAHEAD_ENTRIES) {
                prefetch(ahead[2] as usize - 1);
            }
            let entry = &mut self.entries[index];
            entry[2] = encode_position(new_position(entry[2] as usize - 1));
        }
    }

    /// Keeps the keys for which `new_position` returns `Some`, with that position, in their
    /// order (ids are renumbered), and rebuilds the index sized for them.
    pub(crate) fn retain_renumbered(&mut self, new_position: impl Fn(usize) -> Option<usize>) {
        self.entries.retain_mut(|entry| {
            new_position(entry[2] as usize - 1).is_some_and(|position| {
                entry[2] = encode_position(position);
                true
            })
        });
        if self.entries.capacity() > self.entries.len() * 2 {
            self.entries.shrink_to(self.entries.len() * 5 / 4);
        }
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "sizes"
        )]
        let grown = ((self.len() as f64 / MAX_LOAD * GROWTH) as usize)
            .min(self.index_slots_cap(MIN_ENTRY_GROWTH));
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "sizes"
        )]
        let for_len = (self.len() as f64 / MAX_LOAD) as usize + 1;
        self.rebuild_index(grown.max(for_len).max(MIN_CAPACITY), self.hash_mode);
    }

    /// The most index slots worth having: enough for [`Self::key_limit`] keys plus a request
    /// of `additional` at [`MAX_LOAD`] (`usize::MAX` when the table grows freely).
    fn index_slots_cap(&self, additional: usize) -> usize {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "sizes"
        )]
        self.key_limit.map_or(usize::MAX, |limit| {
            (limit.saturating_add(additional) as f64 / MAX_LOAD) as usize + 1
        })
    }

    /// What depends on the index capacity: the id field's width, the fastmod multiplier, and
    /// the search window, which starts over.
    fn set_index_capacity(&mut self, capacity: usize) {
        assert!(
            u32::try_from(capacity).is_ok(),
            "key index capacity {capacity} exceeds 2^32 slots"
        );
        self.id_mask = id_mask_for(capacity);
        self.fastmod_multiplier = (u64::MAX / capacity as u64).wrapping_add(1);
        self.start_search_window();
    }

    /// Starts a new search window (the slots the last one read are kept in the total).
    fn start_search_window(&mut self) {
        self.probes += self.window >> WINDOW_COUNT_BITS;
        self.window = 0;
    }

    /// Rebuilds the index for `capacity` slots and `hash_mode` from the entries, in id order.
    ///
    /// The index vector is resized in place (growth extends it with `mremap`, no copy;
    /// shrinking releases the tail) and cleared, then every entry is inserted again, its
    /// landing slot prefetched a few entries ahead. While still in [`HashMode::FoldModulo`], a
    /// fold of at least [`HASHED_FOLD_THRESHOLD`] among the stored keys switches to
    /// [`HashMode::FoldRange`]. A rebuild whose inserts read more than
    /// [`MAX_MEAN_SEARCH_PROBES`] slots each on average (plus one window's budget) stops,
    /// and starts over with the next home function: so ids that an earlier growth stored
    /// under the identity-like fold, and that all fall into the first slots once the keys
    /// look hashed, cost a bounded rebuild instead of a quadratic one.
    fn rebuild_index(&mut self, capacity: usize, hash_mode: HashMode) {
        assert!(self.len() < capacity, "a rebuild must leave an empty slot");
        // From the keys still stored: compaction may just have dropped the large folds.
        let max_fold = self.entries.iter().map(|e| e[0] ^ e[1]).max().unwrap_or(0);
        self.hash_mode = match hash_mode {
            HashMode::FoldModulo if max_fold >= HASHED_FOLD_THRESHOLD => HashMode::FoldRange,
            mode => mode,
        };
        self.set_index_capacity(capacity);
        self.index.clear();
        if capacity > self.index.capacity() {
            self.index.reserve_exact(capacity);
        }
        self.index.resize(capacity, 0);
        if capacity < self.index.capacity() / 2 {
            self.index.shrink_to_fit();
        }
        while !self.insert_all_in_id_order() {
            self.hash_mode = self
                .hash_mode
                .next()
                .expect("the last home function's rebuild is not bounded");
            self.index.fill(0);
        }
    }

    /// Inserts every entry into the (empty) index, in id order, each landing slot prefetched
    /// a few entries ahead. Returns `false`, leaving the index part-filled, as soon as the
    /// inserts have read more slots than the rebuild's budget (unless the home function is
    /// the last one, [`HashMode::next`]).
    fn insert_all_in_id_order(&mut self) -> bool {
        // Slots the rebuild may still read past the entries' home slots: one window's budget,
        // plus `MAX_MEAN_SEARCH_PROBES - 1` per entry (the home slot itself is always read).
        // Only a collision spends it, so most entries just add to it.
        let initial_allowance = if self.hash_mode.next().is_some() {
            SEARCH_WINDOW_PROBE_BUDGET
        } else {
            u64::MAX / 2 // the last function: not bounded (2^32 entries × 63 cannot reach it)
        };
        let mut allowance = initial_allowance;
        let count = self.entries.len() as u64;
        let probes_read = |allowance: u64, entries: u64| {
            entries + initial_allowance + entries * (MAX_MEAN_SEARCH_PROBES - 1) - allowance
        };
        for id in 0..self.entries.len() {
            if let Some(&ahead) = self.entries.get(id + REBUILD_LOOKAHEAD_ENTRIES) {
                super::hints::prefetch_read(&self.index[self.home_slot(join_key(ahead))]);
            }
            let key = join_key(self.entries[id]);
            let word = self.fingerprint(key) | self.encode_id(id);
            let mut slot = self.home_slot(key);
            allowance += MAX_MEAN_SEARCH_PROBES - 1;
            while self.index[slot] != 0 {
                if allowance == 0 {
                    self.probes += probes_read(allowance, id as u64 + 1);
                    return false;
                }
                allowance -= 1;
                slot = self.next_slot(slot);
            }
            self.index[slot] = word;
        }
        self.probes += probes_read(allowance, count);
        true
    }

    /// Forgets every key but keeps the allocations (and their page mappings) for reuse.
    pub(crate) fn clear(&mut self) {
        self.entries.clear();
        self.index.fill(0);
        self.hash_mode = HashMode::FoldModulo;
        self.fastmod_multiplier = (u64::MAX / self.index.len().max(1) as u64).wrapping_add(1);
        self.window = 0;
        self.search_slots_stale = false;
        self.probes = 0;
    }

    /// Every stored `(key, position)`, in insertion order.
    pub(crate) fn iter(&self) -> impl Iterator<Item = (i64, usize)> + '_ {
        self.entries
            .iter()
            .map(|&entry| (join_key(entry), entry[2] as usize - 1))
    }

    /// Heap bytes held.
    pub(crate) fn memory_usage_bytes(&self) -> usize {
        self.entries.capacity() * size_of::<Entry>() + self.index.capacity() * size_of::<u32>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Mean distance of stored keys from their home slot (what every lookup walks).
    fn mean_home_distance(table: &KeyTable) -> f64 {
        let capacity = table.index.len();
        let total: usize = table
            .index
            .iter()
            .enumerate()
            .filter(|&(_, &word)| word != 0)
            .map(|(slot, &word)| {
                let id = (word & table.id_mask) as usize - 1;
                let home = table.home_slot(join_key(table.entries[id]));
                (slot + capacity - home) % capacity
            })
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
            if !conversation.is_multiple_of(4) {
                continue;
            }
            table.reserve(20, None).unwrap();
            for id in ids {
                upsert(&mut table, id, position);
                position += 1;
            }
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
            table.reserve(1, None).unwrap();
            upsert(&mut table, id, usize::try_from(id).unwrap());
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
                table.reserve(1, None).unwrap();
                assert!(table.lookup(key).position.is_none());
                upsert(&mut table, key, position);
            }
            assert_eq!(table.len(), keys.len());
            for (position, &key) in keys.iter().enumerate() {
                assert_eq!(table.lookup(key).position, Some(position), "key {key}");
            }
            assert!(table.lookup(i64::MIN + 7).position.is_none());
        }
    }

    /// Inserts or moves `key` to `position`, as the core does over one request.
    fn upsert(table: &mut KeyTable, key: i64, position: usize) {
        let found = table.lookup(key);
        let id = match found.position {
            Some(_) => found.slot,
            None => table.find_or_insert_unplaced(found.slot, key),
        };
        table.set_position(id, position);
    }

    /// Every stored key is found with its position, through the index and through any
    /// neighbour guess (right, wrong or out of range).
    fn assert_matches_model(table: &mut KeyTable, model: &std::collections::HashMap<i64, usize>) {
        assert_eq!(table.len(), model.len());
        assert_eq!(table.iter().count(), model.len());
        for (&key, &position) in model {
            let found = table.lookup(key);
            assert_eq!(found.position, Some(position), "key {key}");
            for guess in [
                found.slot,
                found.slot.wrapping_sub(1),
                found.slot + 1,
                usize::MAX,
            ] {
                let near = table.lookup_near(key, guess);
                assert_eq!((near.slot, near.position), (found.slot, found.position));
            }
        }
    }

    #[test]
    fn rebuilds_keep_every_key_through_growth_mode_switches_and_shrinking() {
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
                table.reserve(1, None).unwrap();
                upsert(&mut table, key, position);
                model.insert(key, position);
                position += 1;
                if modes_seen.last() != Some(&table.hash_mode) {
                    modes_seen.push(table.hash_mode);
                }
            }
            assert_matches_model(&mut table, &model);
        }
        assert_eq!(
            modes_seen,
            [
                HashMode::FoldModulo,
                HashMode::FoldRange,
                HashMode::MixRange
            ]
        );

        // Compaction that drops most keys shrinks the index.
        let capacity_before = table.index.len();
        table.retain_renumbered(|p| (p % 7 == 0).then_some(p / 7));
        model.retain(|_, p| *p % 7 == 0);
        for position in model.values_mut() {
            *position /= 7;
        }
        assert!(table.index.len() < capacity_before / 3);
        assert_matches_model(&mut table, &model);
    }

    #[test]
    fn chains_are_found_by_their_neighbour() {
        let mut table = KeyTable::default();
        let chain: Vec<i64> = (0..50_u64)
            .map(|i| i64::from_ne_bytes(crate::workload::mix64(i).to_ne_bytes()))
            .collect();
        table.reserve(chain.len() + 1, None).unwrap();
        upsert(&mut table, -5, 0);
        // One request adds the chain (head first, as the core's commit does).
        for (position, &key) in chain.iter().enumerate() {
            upsert(&mut table, key, position + 1);
        }
        // Read order: head first; each block is in the entry after the previous block's.
        let head = table.lookup(chain[0]);
        let mut guess = head.slot + 1;
        for &key in &chain[1..] {
            let entry = table.entries.get(guess).copied();
            assert_eq!(
                entry.map(join_key),
                Some(key),
                "the neighbour holds the next block"
            );
            guess = table.lookup_near(key, guess).slot + 1;
        }
        // A neighbour holding another key is not taken for it.
        let wrong = table.lookup_near(-5, head.slot);
        assert_eq!((wrong.slot, wrong.position), (0, Some(0)));
    }

    #[test]
    fn a_new_key_stays_unplaced_until_its_position_is_set() {
        let mut table = KeyTable::default();
        table.reserve(2, None).unwrap();
        let slot = table.lookup(42).slot;
        let id = table.find_or_insert_unplaced(slot, 42);
        assert_eq!(table.placed_position(id), None);
        assert_eq!(
            table.lookup(42).position,
            None,
            "found, but with no position yet"
        );
        assert_eq!(
            table.find_or_insert_unplaced(slot, 42),
            id,
            "a repeat finds it"
        );
        assert_eq!(table.len(), 1);
        table.set_position(id, 7);
        assert_eq!(table.placed_position(id), Some(7));
        assert_eq!(table.lookup(42).position, Some(7));
    }

    #[test]
    fn id_bits_and_fingerprints_share_each_index_slot() {
        assert_eq!(id_mask_for(4096), 0x1fff);
        assert_eq!(id_mask_for(4095), 0x0fff);
        assert_eq!(id_mask_for(u32::MAX as usize), u32::MAX);
        let mut table = KeyTable::default();
        table.reserve(3000, None).unwrap();
        let keys: Vec<i64> = (0..3000_i64).map(|i| i * 0x1_0000_0001).collect();
        for (position, &key) in keys.iter().enumerate() {
            upsert(&mut table, key, position);
        }
        let fingerprinted = table
            .index
            .iter()
            .filter(|&&word| word & !table.id_mask != 0)
            .count();
        assert!(fingerprinted > 2000, "most slots carry fingerprint bits");
        for (position, &key) in keys.iter().enumerate() {
            assert_eq!(table.lookup(key).position, Some(position));
        }
    }

    #[test]
    fn empty_slots_saved_before_a_mid_request_switch_are_not_trusted_after_it() {
        // As in one request: stored hashed keys, then phase 1 looks up new keys and saves the
        // empty slots where their searches stopped; a clustering switch rebuilds the index
        // with another home function; phase 2 inserts the new keys from the saved slots.
        let mut rng = crate::workload::SplitMix64::new(3);
        let mut table = KeyTable::default();
        let stored: Vec<i64> = (0..3000)
            .map(|_| i64::from_ne_bytes(rng.next_u64().to_ne_bytes()))
            .collect();
        table.reserve(stored.len(), None).unwrap();
        for (position, &key) in stored.iter().enumerate() {
            upsert(&mut table, key, position);
        }
        let fresh: Vec<i64> = (0..500)
            .map(|_| i64::from_ne_bytes(rng.next_u64().to_ne_bytes()))
            .collect();
        table.reserve(fresh.len(), None).unwrap();
        let saved: Vec<usize> = fresh.iter().map(|&key| table.lookup(key).slot).collect();
        let stored_ids: Vec<usize> = stored.iter().map(|&key| table.lookup(key).slot).collect();
        let mode_before = table.hash_mode;
        table.switch_hash();
        assert_ne!(table.hash_mode, mode_before);
        for (index, (&key, &slot)) in fresh.iter().zip(&saved).enumerate() {
            let id = table.find_or_insert_unplaced(slot, key);
            table.set_position(id, stored.len() + index);
        }
        let mut model: std::collections::HashMap<i64, usize> =
            stored.iter().enumerate().map(|(p, &k)| (k, p)).collect();
        model.extend(
            fresh
                .iter()
                .enumerate()
                .map(|(i, &k)| (k, stored.len() + i)),
        );
        assert_matches_model(&mut table, &model);
        // Entry ids found before the switch still name their keys.
        for (&key, &id) in stored.iter().zip(&stored_ids) {
            assert_eq!(table.lookup(key).slot, id);
        }
        // The next request trusts its own saved slots again.
        table.reserve(1, None).unwrap();
        assert!(!table.search_slots_stale);
    }

    #[test]
    fn a_search_continues_past_a_slot_another_new_key_took() {
        // Two new keys with the same home, both looked up before either is inserted (as in
        // phase 1), then inserted from their phase-1 slots (as in phase 2).
        let mut table = KeyTable::default();
        table.reserve(2, None).unwrap();
        let (first, second) = (7_i64, (1_i64 << 32) | 6); // both fold to 7
        let (first_slot, second_slot) = (table.lookup(first).slot, table.lookup(second).slot);
        assert_eq!(first_slot, second_slot);
        let first_id = table.find_or_insert_unplaced(first_slot, first);
        let second_id = table.find_or_insert_unplaced(second_slot, second);
        assert_ne!(first_id, second_id);
        table.set_position(first_id, 0);
        table.set_position(second_id, 1);
        assert_eq!(table.lookup(first).position, Some(0));
        assert_eq!(table.lookup(second).position, Some(1));
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
                        table.reserve(keys.len(), None).unwrap();
                        for key in keys.into_iter().map(key_of) {
                            upsert(&mut table, key, next_position);
                            model.insert(key, next_position);
                            next_position += 1;
                        }
                                }
                    Step::Compact { keep_one_in } => {
                        table.retain_renumbered(|p| (p % keep_one_in == 0).then_some(p));
                        model.retain(|_, p| *p % keep_one_in == 0);
                    }
                    Step::SwitchToMix if !table.index.is_empty() => {
                        table.rebuild_index(table.index.len(), HashMode::MixRange);
                    }
                    Step::SwitchToMix => {}
                }
                assert_matches_model(&mut table, &model);
            }
        }
    }

    #[test]
    fn range_homes_rebuild_at_every_load_and_size() {
        // Random keys at sizes around every growth step, including wrap-around at the end.
        let mut rng = crate::workload::SplitMix64::new(5);
        for count in [1, 100, 3_000, 3_600, 7_000, 50_000] {
            let mut table = KeyTable::default();
            let mut model = std::collections::HashMap::new();
            for position in 0..count {
                let key = i64::from_ne_bytes((rng.next_u64() | 1 << 63).to_ne_bytes());
                table.reserve(1, None).unwrap();
                upsert(&mut table, key, position);
                model.insert(key, position);
            }
            assert_matches_model(&mut table, &model);
            table.rebuild_index(table.index.len(), table.hash_mode);
            assert_matches_model(&mut table, &model);
        }
    }

    #[test]
    fn negative_keys_roundtrip() {
        let mut table = KeyTable::default();
        table.reserve(3, None).unwrap();
        for (position, key) in [-1_i64, i64::MIN, -7_046_029_254_386_353_130]
            .into_iter()
            .enumerate()
        {
            upsert(&mut table, key, position);
        }
        assert_eq!(table.lookup(i64::MIN).position, Some(1));
        assert_eq!(table.lookup(-1).position, Some(0));
        assert_eq!(table.lookup(-7_046_029_254_386_353_130).position, Some(2));
    }

    #[test]
    fn remap_drops_and_keeps() {
        let mut table = KeyTable::default();
        table.reserve(1000, None).unwrap();
        for key in 0..1000_i64 {
            upsert(&mut table, key * 7919, usize::try_from(key).unwrap());
        }
        table.retain_renumbered(|p| (p >= 500).then(|| p - 500));
        assert_eq!(table.len(), 500);
        assert_eq!(table.lookup(499 * 7919).position, None);
        assert_eq!(table.lookup(500 * 7919).position, Some(0));
        assert_eq!(table.lookup(999 * 7919).position, Some(499));
    }
}
