//! Order statistics over recency positions: "how many tracked keys are more recent than this
//! position?" in a few cache misses.
//!
//! This is the design document's Fenwick tree, made compact: the logical 0/1 array over
//! positions is a bitset (1 bit per position) and the Fenwick tree runs over 512-bit blocks,
//! each leaf holding that block's popcount. The tree (a `u32` per 64-byte block) is 1/16 of
//! the bitset — 2 MB at 33 M live keys — and the upper levels every walk passes through stay
//! in cache; a rank is one tree walk plus at most 8 popcounts. Tree updates are batched per block,
//! because a request removes and appends runs of neighbouring positions.

/// Bits per Fenwick leaf block.
const BLOCK_BITS: usize = 512;
const WORDS_PER_BLOCK: usize = BLOCK_BITS / 64;

use super::{AllocFailed, try_reserve_exact, try_reserve_total};

/// The bitset of live recency markers plus a Fenwick tree over block popcounts.
///
/// Position `p` (0-based) is set iff it is the latest position of some tracked key. Positions
/// are handed out in increasing order: a higher position is more recent.
#[derive(Debug, Clone, Default)]
pub(crate) struct RecencyRanks {
    words: Vec<u64>,
    /// 1-based Fenwick tree; node `b + 1` covers block `b`.
    block_tree: Vec<u32>,
    /// Positions handed out so far (the next position is `len`).
    len: usize,
    /// Set bits in total.
    set_count: usize,
    pending_removal: PendingBlockDelta,
}

/// A tree update for one block, held back while neighbouring positions change.
#[derive(Debug, Clone, Copy, Default)]
struct PendingBlockDelta {
    block: usize,
    count: u32,
}

impl RecencyRanks {
    /// Positions handed out so far, live or dead (the design's `fenwick.size()`).
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Live markers in total (including TTL-expired ones not yet compacted away).
    #[inline]
    pub(crate) fn set_count(&self) -> usize {
        self.set_count
    }

    /// Makes room for `additional` more positions so `push` never reallocates mid-request.
    /// Fails, changing nothing, when the memory is not there.
    pub(crate) fn reserve(&mut self, additional: usize) -> Result<(), AllocFailed> {
        let needed_bits = self.len + additional;
        if needed_bits <= self.words.len() * 64 {
            return Ok(());
        }
        self.flush();
        let current_blocks = self.words.len() / WORDS_PER_BLOCK;
        let needed_blocks = needed_bits.div_ceil(BLOCK_BITS);
        // Grow by 1/4: positions stay below 8 × live + slack (compaction), so a tight margin
        // wastes little.
        let new_blocks = needed_blocks.max(current_blocks + current_blocks / 4 + 16);
        // Exact: `resize` alone would double the capacity, and the spare half counts as memory.
        try_reserve_total(&mut self.block_tree, new_blocks + 1)?;
        try_reserve_total(&mut self.words, new_blocks * WORDS_PER_BLOCK)?;
        self.words.resize(new_blocks * WORDS_PER_BLOCK, 0);
        self.rebuild_tree();
        Ok(())
    }

    /// The position of the set marker with `count` set markers before it (`count <
    /// set_count`, pending removals flushed). O(positions / 64): for compaction.
    pub(crate) fn nth_set_position(&self, count: usize) -> usize {
        debug_assert!(count < self.set_count && self.pending_removal.count == 0);
        let mut remaining = count;
        for (index, &word) in self.words.iter().enumerate() {
            let ones = word.count_ones() as usize;
            if remaining < ones {
                let mut word = word;
                for _ in 0..remaining {
                    word &= word - 1; // clear the lowest set bit
                }
                return index * 64 + word.trailing_zeros() as usize;
            }
            remaining -= ones;
        }
        self.len
    }

    /// Number of set positions in `0..=position`.
    #[inline]
    pub(crate) fn count_through(&self, position: usize) -> usize {
        debug_assert!(self.pending_removal.count == 0);
        let word_index = position / 64;
        let block = position / BLOCK_BITS;
        let mut count = self.tree_prefix(block);
        for word in &self.words[block * WORDS_PER_BLOCK..word_index] {
            count += word.count_ones() as usize;
        }
        let through_bit = u64::MAX >> (63 - (position % 64));
        count + (self.words[word_index] & through_bit).count_ones() as usize
    }

    /// Number of set positions strictly after `position` (more recent than it).
    #[inline]
    pub(crate) fn count_after(&self, position: usize) -> usize {
        self.set_count - self.count_through(position)
    }

    /// Number of set positions in `0..end` (`end` may be 0).
    #[inline]
    pub(crate) fn count_before(&self, end: usize) -> usize {
        if end == 0 {
            0
        } else {
            self.count_through(end - 1)
        }
    }

    /// Starts loading the bitset word of `position` (a hint; no effect on results).
    #[inline]
    pub(crate) fn prefetch(&self, position: usize) {
        if let Some(word) = self.words.get(position / 64) {
            super::hints::prefetch_read(word);
        }
    }

    /// Appends `count` new most-recent positions and returns the first: bits set a word at a
    /// time and one tree update per block touched. Call [`Self::reserve`] first.
    #[inline]
    pub(crate) fn push_run(&mut self, count: usize) -> usize {
        let first = self.len;
        let end = first + count;
        let mut position = first;
        while position < end {
            let bit = position % 64;
            let bits = (64 - bit).min(end - position);
            let mask = if bits == 64 {
                u64::MAX
            } else {
                ((1 << bits) - 1) << bit
            };
            self.words[position / 64] |= mask;
            position += bits;
        }
        self.len = end;
        self.set_count += count;
        let mut block_start = first;
        while block_start < end {
            let block = block_start / BLOCK_BITS;
            let block_end = ((block + 1) * BLOCK_BITS).min(end);
            #[expect(clippy::cast_possible_truncation, reason = "at most BLOCK_BITS")]
            let added = (block_end - block_start) as u32;
            self.tree_add(block, added);
            block_start = block_end;
        }
        first
    }

    /// Clears a set position (the key moved to a newer position or was dropped).
    #[inline]
    pub(crate) fn remove(&mut self, position: usize) {
        debug_assert!(self.words[position / 64] & (1 << (position % 64)) != 0);
        self.words[position / 64] &= !(1 << (position % 64));
        self.set_count -= 1;
        let block = position / BLOCK_BITS;
        if self.pending_removal.block != block || self.pending_removal.count == 0 {
            self.flush();
            self.pending_removal.block = block;
        }
        self.pending_removal.count += 1;
    }

    /// Applies held-back tree updates; required before the next rank query.
    pub(crate) fn flush(&mut self) {
        let PendingBlockDelta { block, count } = std::mem::take(&mut self.pending_removal);
        if count > 0 {
            self.tree_add(block, count.wrapping_neg());
        }
    }

    /// Renumbers the set positions in `first_kept..len` to `0..kept` (order preserved) and
    /// drops every position below `first_kept`. `new_position` maps old → new for callers.
    /// Fails, changing nothing, when the memory for the remap is not there.
    pub(crate) fn compact(&mut self, first_kept: usize) -> Result<PositionRemap, AllocFailed> {
        self.flush();
        let remap = PositionRemap::new(self, first_kept)?;
        let kept = self.set_count - remap.dropped_count;
        let kept_blocks = (kept + 1).div_ceil(BLOCK_BITS).max(1);
        // Keep the allocation only if it is not much larger than needed.
        let target_blocks = kept_blocks + kept_blocks / 4 + 16;
        if self.words.len() / WORDS_PER_BLOCK > 2 * target_blocks {
            self.words = vec![0; target_blocks * WORDS_PER_BLOCK];
        } else {
            self.words.fill(0);
        }
        let (full_words, rest_bits) = (kept / 64, kept % 64);
        self.words[..full_words].fill(u64::MAX);
        if rest_bits > 0 {
            self.words[full_words] = (1 << rest_bits) - 1;
        }
        self.len = kept;
        self.set_count = kept;
        self.rebuild_tree();
        Ok(remap)
    }

    /// Forgets every position but keeps the allocation for reuse.
    pub(crate) fn clear(&mut self) {
        self.words.fill(0);
        self.block_tree.fill(0);
        self.len = 0;
        self.set_count = 0;
        self.pending_removal = PendingBlockDelta::default();
    }

    /// Heap bytes held.
    pub(crate) fn memory_usage_bytes(&self) -> usize {
        self.words.capacity() * size_of::<u64>() + self.block_tree.capacity() * size_of::<u32>()
    }

    #[inline]
    fn tree_prefix(&self, block_count: usize) -> usize {
        let mut sum = 0_u32;
        let mut node = block_count;
        while node > 0 {
            sum = sum.wrapping_add(self.block_tree[node]);
            node &= node - 1;
        }
        sum as usize
    }

    #[inline]
    fn tree_add(&mut self, block: usize, delta: u32) {
        let mut node = block + 1;
        while node < self.block_tree.len() {
            self.block_tree[node] = self.block_tree[node].wrapping_add(delta);
            node += node & node.wrapping_neg();
        }
    }

    /// Rebuilds the Fenwick tree from the bitset in O(n).
    fn rebuild_tree(&mut self) {
        let block_count = self.words.len() / WORDS_PER_BLOCK;
        self.block_tree.clear();
        self.block_tree.reserve_exact(block_count + 1);
        self.block_tree.resize(block_count + 1, 0);
        for (block, words) in self.words.chunks_exact(WORDS_PER_BLOCK).enumerate() {
            self.block_tree[block + 1] = words.iter().map(|w| w.count_ones()).sum();
        }
        for node in 1..=block_count {
            let parent = node + (node & node.wrapping_neg());
            if parent <= block_count {
                self.block_tree[parent] =
                    self.block_tree[parent].wrapping_add(self.block_tree[node]);
            }
        }
    }
}

/// Old position → new position for one compaction, in O(1) per lookup.
pub(crate) struct PositionRemap {
    /// Set positions before each block (exclusive prefix), over the pre-compaction bitset.
    set_before_block: Vec<usize>,
    words: Vec<u64>,
    first_kept: usize,
    /// Set positions below `first_kept`.
    pub(crate) dropped_count: usize,
}

impl PositionRemap {
    fn new(ranks: &RecencyRanks, first_kept: usize) -> Result<Self, AllocFailed> {
        let mut set_before_block = Vec::new();
        try_reserve_exact(
            &mut set_before_block,
            ranks.words.len() / WORDS_PER_BLOCK + 1,
        )?;
        let mut words = Vec::new();
        try_reserve_exact(&mut words, ranks.words.len())?;
        words.extend_from_slice(&ranks.words);
        let mut running = 0;
        for words in ranks.words.chunks_exact(WORDS_PER_BLOCK) {
            set_before_block.push(running);
            running += words.iter().map(|w| w.count_ones() as usize).sum::<usize>();
        }
        set_before_block.push(running);
        let mut remap = Self {
            set_before_block,
            words,
            first_kept,
            dropped_count: 0,
        };
        remap.dropped_count = remap.set_before(first_kept);
        Ok(remap)
    }

    /// Set positions in `0..end` of the old bitset.
    fn set_before(&self, end: usize) -> usize {
        let block = end / BLOCK_BITS;
        let word_index = end / 64;
        let mut count = self.set_before_block[block];
        for word in &self.words[block * WORDS_PER_BLOCK..word_index] {
            count += word.count_ones() as usize;
        }
        if !end.is_multiple_of(64) {
            count += (self.words[word_index] & ((1 << (end % 64)) - 1)).count_ones() as usize;
        }
        count
    }

    /// Starts loading what [`Self::new_position`] will read for `old_position`.
    #[inline]
    pub(crate) fn prefetch(&self, old_position: usize) {
        if let Some(word) = self.words.get(old_position / 64) {
            super::hints::prefetch_read(word);
        }
    }

    /// Whether `old_position` survives (is at or above the first kept position).
    #[inline]
    pub(crate) fn keeps(&self, old_position: usize) -> bool {
        old_position >= self.first_kept
    }

    /// The new position of a kept set position, or of a boundary such as an epoch start.
    #[inline]
    pub(crate) fn new_position(&self, old_position: usize) -> usize {
        self.set_before(old_position) - self.dropped_count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranks_match_naive_model_across_blocks() {
        let mut ranks = RecencyRanks::default();
        let mut bits: Vec<bool> = Vec::new();
        let mut state = 0x1234_5678_u64;
        let mut next_random = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1);
            (state >> 33) as usize
        };
        for step in 0..1500 {
            // Runs of 1..=70 positions: within a word, across words and across blocks.
            let run = next_random() % 70 + 1;
            ranks.reserve(run).unwrap();
            assert_eq!(ranks.push_run(run), bits.len());
            bits.resize(bits.len() + run, true);
            // About as many removals as a request's hits make, anywhere in the past.
            for _ in 0..run / 2 {
                let candidate = next_random() % bits.len();
                if bits[candidate] {
                    bits[candidate] = false;
                    ranks.remove(candidate);
                }
            }
            ranks.flush();
            if step % 50 == 0 {
                // Naive model: set positions strictly after each position, from the end.
                let mut after = vec![0; bits.len()];
                for position in (0..bits.len().saturating_sub(1)).rev() {
                    after[position] = after[position + 1] + usize::from(bits[position + 1]);
                }
                for position in (0..bits.len()).filter(|&p| bits[p]) {
                    assert_eq!(ranks.count_after(position), after[position], "{position}");
                }
            }
        }
        assert_eq!(ranks.set_count(), bits.iter().filter(|b| **b).count());
        assert_eq!(ranks.len(), bits.len());
    }

    #[test]
    fn compaction_preserves_order_and_drops_prefix() {
        let mut ranks = RecencyRanks::default();
        ranks.reserve(2000).unwrap();
        assert_eq!(ranks.push_run(2000), 0);
        for p in (0..2000).filter(|p| p % 3 != 0) {
            ranks.remove(p);
        }
        ranks.flush();
        // Survivors: multiples of 3; drop those below 600.
        let remap = ranks.compact(600).unwrap();
        assert_eq!(remap.dropped_count, 200);
        assert_eq!(remap.new_position(600), 0);
        assert_eq!(remap.new_position(603), 1);
        assert_eq!(remap.new_position(1998), 466);
        assert!(!remap.keeps(597));
        assert_eq!(ranks.len(), 467);
        assert_eq!(ranks.set_count(), 467);
        assert_eq!(ranks.count_after(0), 466);
        assert_eq!(ranks.count_after(466), 0);
    }

    #[test]
    fn nth_set_position_counts_set_markers_across_words_and_blocks() {
        let mut ranks = RecencyRanks::default();
        ranks.reserve(3000).unwrap();
        ranks.push_run(3000);
        for p in (0..3000).filter(|p| p % 7 != 0) {
            ranks.remove(p);
        }
        ranks.flush();
        for count in [0, 1, 9, 10, 73, 200, 428] {
            assert_eq!(ranks.nth_set_position(count), count * 7, "count {count}");
        }
    }
}
