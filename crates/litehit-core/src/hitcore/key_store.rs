//! The core's key → latest position store, in one of two shapes:
//!
//! * [`DenseIdTable`] while every key is a small non-negative id (Mooncake `hash_ids`): an
//!   array indexed by the key. A fresh core starts here.
//! * [`KeyTable`] for anything else (64-bit hashes, negative keys, ids too sparse for the
//!   array). The store moves there once, between requests, and stays.
//!
//! Which shape holds the keys never changes a result: both answer the same lookups. The core
//! picks the shape once per request and runs phase 1 and phase 2 specialised for it through
//! [`BlockLookups`], so the per-block loop has no branch on the shape.

use super::AllocFailed;
use super::dense_id_table::DenseIdTable;
use super::key_table::{KeyTable, Lookup};

/// What phase 1 and phase 2 of a request do per block.
pub(crate) trait BlockLookups {
    /// Hint: start loading what the lookups of `keys` read first.
    fn prefetch_request(&self, keys: &[i64]);
    /// Hint: `key` is about to be searched as a new key.
    fn prefetch_search(&self, key: i64);
    /// Finds `key`; `neighbour_guess` is the id after the previous block's (`usize::MAX` for
    /// none), which a store may try first. (`&mut`: the hashed table counts its probes.)
    fn lookup_near(&mut self, key: i64, neighbour_guess: usize) -> Lookup;
    /// Adds `key` not placed yet (or finds it if this request added it already), continuing
    /// from the `slot` its failed lookup returned; returns its id.
    fn find_or_insert_unplaced(&mut self, slot: usize, key: i64) -> usize;
    /// Finds `key` (placed or not) or adds it not placed yet; returns its id. For keys phase 1
    /// did not look up.
    fn find_or_insert(&mut self, key: i64) -> usize;
    /// The position of id `id`, `None` while not placed yet.
    fn placed_position(&self, id: usize) -> Option<usize>;
    /// Stores a new position for id `id`.
    fn set_position(&mut self, id: usize, position: usize);
}

impl BlockLookups for KeyTable {
    #[inline]
    fn prefetch_request(&self, keys: &[i64]) {
        KeyTable::prefetch_request(self, keys);
    }
    #[inline]
    fn prefetch_search(&self, key: i64) {
        self.prefetch_index(key);
    }
    #[inline]
    fn lookup_near(&mut self, key: i64, neighbour_guess: usize) -> Lookup {
        KeyTable::lookup_near(self, key, neighbour_guess)
    }
    #[inline]
    fn find_or_insert_unplaced(&mut self, slot: usize, key: i64) -> usize {
        KeyTable::find_or_insert_unplaced(self, slot, key)
    }
    #[inline]
    fn find_or_insert(&mut self, key: i64) -> usize {
        KeyTable::find_or_insert(self, key)
    }
    #[inline]
    fn placed_position(&self, id: usize) -> Option<usize> {
        KeyTable::placed_position(self, id)
    }
    #[inline]
    fn set_position(&mut self, id: usize, position: usize) {
        KeyTable::set_position(self, id, position);
    }
}

impl BlockLookups for DenseIdTable {
    #[inline]
    fn prefetch_request(&self, keys: &[i64]) {
        DenseIdTable::prefetch_request(self, keys);
    }
    #[inline]
    fn prefetch_search(&self, _key: i64) {}
    #[inline]
    fn lookup_near(&mut self, key: i64, _neighbour_guess: usize) -> Lookup {
        self.lookup(key)
    }
    #[inline]
    fn find_or_insert_unplaced(&mut self, slot: usize, _key: i64) -> usize {
        slot // the key's id is the key, and its slot is reserved already
    }
    #[inline]
    fn find_or_insert(&mut self, key: i64) -> usize {
        self.lookup(key).slot
    }
    #[inline]
    fn placed_position(&self, id: usize) -> Option<usize> {
        DenseIdTable::placed_position(self, id)
    }
    #[inline]
    fn set_position(&mut self, id: usize, position: usize) {
        DenseIdTable::set_position(self, id, position);
    }
}

#[derive(Debug, Clone)]
pub(crate) enum KeyStore {
    DenseIds(DenseIdTable),
    Hashed(KeyTable),
}

impl Default for KeyStore {
    fn default() -> Self {
        Self::DenseIds(DenseIdTable::default())
    }
}

impl KeyStore {
    /// Makes room for a request's keys before it is replayed (nothing grows and no entry moves
    /// mid-request; the hashed index may only switch its home function, keeping every id), and
    /// leaves the dense-id array for good if the request does not fit it.
    ///
    /// `key_limit`: the most keys held between requests, when the core compacts down to a
    /// bound (see [`KeyTable::reserve`]).
    ///
    /// Fails, leaving every key where it was, when the memory for that is not there.
    pub(crate) fn prepare_for(
        &mut self,
        keys: &[i64],
        key_limit: Option<usize>,
    ) -> Result<(), AllocFailed> {
        if let Self::DenseIds(table) = self
            && !table.make_room_for(keys)?
        {
            *self = Self::Hashed(KeyTable::from_placed(table.iter(), table.len())?);
        }
        if let Self::Hashed(table) = self {
            table.reserve(keys.len(), key_limit)?;
        }
        Ok(())
    }

    /// Hints that `keys` is the request after the one about to be replayed.
    #[inline]
    pub(crate) fn prefetch_next_request(&self, keys: &[i64]) {
        match self {
            Self::DenseIds(table) => table.prefetch_request(keys),
            Self::Hashed(table) => {
                table.prefetch_request(keys);
                if let Some(&head) = keys.first() {
                    table.prefetch_index(head);
                }
            }
        }
    }

    /// Number of keys stored.
    pub(crate) fn len(&self) -> usize {
        match self {
            Self::DenseIds(table) => table.len(),
            Self::Hashed(table) => table.len(),
        }
    }

    /// Every stored `(key, position)`.
    pub(crate) fn iter(&self) -> Box<dyn Iterator<Item = (i64, usize)> + '_> {
        match self {
            Self::DenseIds(table) => Box::new(table.iter()),
            Self::Hashed(table) => Box::new(table.iter()),
        }
    }

    /// Rewrites every stored position (no key is dropped); `prefetch` is called ahead with
    /// positions about to be renumbered.
    pub(crate) fn renumber_positions(
        &mut self,
        new_position: impl Fn(usize) -> usize,
        prefetch: impl Fn(usize),
    ) {
        match self {
            Self::DenseIds(table) => table.renumber_positions(new_position),
            Self::Hashed(table) => table.renumber_positions(new_position, prefetch),
        }
    }

    /// Keeps the keys for which `new_position` returns `Some`, with that position.
    pub(crate) fn retain_renumbered(&mut self, new_position: impl Fn(usize) -> Option<usize>) {
        match self {
            Self::DenseIds(table) => table.retain_renumbered(new_position),
            Self::Hashed(table) => table.retain_renumbered(new_position),
        }
    }

    /// Forgets every key but keeps the shape and the allocations.
    pub(crate) fn clear(&mut self) {
        match self {
            Self::DenseIds(table) => table.clear(),
            Self::Hashed(table) => table.clear(),
        }
    }

    /// Index slots the hashed table has read ([`KeyTable::probe_count`]); `0` while the keys
    /// sit in the dense-id array, which has no index.
    pub(crate) fn index_probe_count(&self) -> u64 {
        match self {
            Self::DenseIds(_) => 0,
            Self::Hashed(table) => table.probe_count(),
        }
    }

    /// Heap bytes held.
    pub(crate) fn memory_usage_bytes(&self) -> usize {
        match self {
            Self::DenseIds(table) => table.memory_usage_bytes(),
            Self::Hashed(table) => table.memory_usage_bytes(),
        }
    }
}
