//! The imbalance over the time axis: which key the critical-stack step stops at.
//!
//! Positions are access times, handed out in increasing order (a higher position is more
//! recent). A position holds at most one key (the key's latest access) and at most one
//! *critical marker* (capacity `c`'s marker sits at the last access whose OPT stack distance was
//! `c`). Each marker counts `+1`, each key `-1`; the imbalance at a key position `q` is the sum
//! over the positions after `q`: markers more recent than `q` minus keys more recent than `q`.
//! It is never negative at a key position (Bilardi et al.'s β), and it is 0 at the most recent
//! key. An access to the key at `s` stops at the oldest key more recent than `s` whose
//! imbalance is 0.
//!
//! Layout: two bitsets (keys, markers; 2 bits per position) and a segment tree over 64-position
//! words holding each word's sum and its minimum suffix at a key position, so a query is one
//! walk down and a change one walk up: O(log positions).

use crate::hitcore::{AllocFailed, try_reserve_total};

/// A minimum suffix where no key can be: larger than any imbalance (|sum| <= positions in use,
/// which compaction keeps below 2^30 long before memory would allow more).
const NO_KEY: i32 = i32::MAX / 4;

/// Positions per bitset word (a segment-tree leaf).
const WORD_BITS: usize = 64;

/// A word's or a subtree's summary.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Summary {
    /// Markers minus keys in the range.
    sum: i32,
    /// Minimum over the range's key positions `q` of the sum over the range's positions
    /// after `q` ([`NO_KEY`] without a key).
    min_suffix: i32,
}

impl Default for Summary {
    fn default() -> Self {
        Self {
            sum: 0,
            min_suffix: NO_KEY,
        }
    }
}

impl Summary {
    /// The summary of `older` followed by `newer`.
    #[inline]
    fn then(self, newer: Self) -> Self {
        Self {
            sum: self.sum + newer.sum,
            min_suffix: newer
                .min_suffix
                .min(self.min_suffix.saturating_add(newer.sum)),
        }
    }

    /// One word's summary, from its key and marker bits: 8 bytes through [`BYTE_SUMMARIES`],
    /// the most recent first.
    #[inline]
    fn of_word(keys: u64, markers: u64) -> Self {
        let mut summary = Self::default();
        for byte in (0..8).rev() {
            let (sum, min_suffix) = byte_summary(keys, markers, byte);
            summary = Self {
                sum: summary.sum + sum,
                min_suffix: summary
                    .min_suffix
                    .min(min_suffix.saturating_add(summary.sum)),
            };
        }
        summary
    }
}

/// Byte `byte` (positions `8 byte .. 8 byte + 8` of a word)'s `(sum, min_suffix)`, the minimum
/// suffix [`NO_KEY`] without a key.
#[inline]
fn byte_summary(keys: u64, markers: u64, byte: u32) -> (i32, i32) {
    let shift = 8 * byte;
    let index = ((keys >> shift) & 0xff) | (((markers >> shift) & 0xff) << 8);
    #[expect(clippy::cast_possible_truncation, reason = "index < 65536")]
    let (sum, min_suffix) = BYTE_SUMMARIES[index as usize];
    let min_suffix = if min_suffix == SMALL_NO_KEY {
        NO_KEY
    } else {
        i32::from(min_suffix)
    };
    (i32::from(sum), min_suffix)
}

/// [`BYTE_SUMMARIES`]'s minimum suffix for a byte without a key.
const SMALL_NO_KEY: i8 = i8::MAX;

/// The summary `(sum, min_suffix)` of 8 positions, indexed by `keys | markers << 8` (8 bits
/// each, the lowest bit the oldest position): 128 KiB, read 8 times per word summarised.
static BYTE_SUMMARIES: [(i8, i8); 1 << 16] = {
    let mut table = [(0_i8, SMALL_NO_KEY); 1 << 16];
    let mut index = 0;
    while index < 1 << 16 {
        let (keys, markers) = (index & 0xff, index >> 8);
        let (mut sum, mut min_suffix) = (0_i8, SMALL_NO_KEY);
        let mut bit = 8;
        while bit > 0 {
            bit -= 1;
            if keys & (1 << bit) != 0 {
                if sum < min_suffix {
                    min_suffix = sum;
                }
                sum -= 1;
            }
            if markers & (1 << bit) != 0 {
                sum += 1;
            }
        }
        table[index] = (sum, min_suffix);
        index += 1;
    }
    table
};

/// Key and marker bits over positions, with the summary tree.
#[derive(Debug, Clone, Default)]
pub(crate) struct Imbalance {
    keys: Vec<u64>,
    markers: Vec<u64>,
    /// 1-based heap; word `w`'s leaf is `leaf_base + w`.
    tree: Vec<Summary>,
    /// Leaves in the tree (a power of two, `keys.len()`).
    leaf_base: usize,
    /// Positions handed out so far (the next position is `len`).
    len: usize,
    /// Positions holding a key or a marker.
    in_use: usize,
}

/// Old position → new position after [`Imbalance::compact`]: positions holding a key or a
/// marker keep their order and close up.
#[derive(Debug)]
pub(crate) struct PositionRemap {
    in_use_words: Vec<u64>,
    used_before_word: Vec<u32>,
}

impl PositionRemap {
    /// The new position of `old`, which held a key or a marker.
    #[inline]
    pub(crate) fn new_position(&self, old: usize) -> usize {
        let word = old / WORD_BITS;
        let below = self.in_use_words[word] & ((1_u64 << (old % WORD_BITS)) - 1);
        self.used_before_word[word] as usize + below.count_ones() as usize
    }
}

impl Imbalance {
    /// Positions handed out so far, in use or not.
    #[inline]
    pub(crate) fn len(&self) -> usize {
        self.len
    }

    /// Positions holding a key or a marker.
    #[inline]
    pub(crate) fn in_use(&self) -> usize {
        self.in_use
    }

    /// Makes room for `additional` more positions, so nothing grows mid-request.
    pub(crate) fn reserve(&mut self, additional: usize) -> Result<(), AllocFailed> {
        let needed_words = (self.len + additional).div_ceil(WORD_BITS);
        if needed_words <= self.leaf_base {
            return Ok(());
        }
        let leaf_base = needed_words.next_power_of_two().max(16);
        try_reserve_total(&mut self.keys, leaf_base)?;
        try_reserve_total(&mut self.markers, leaf_base)?;
        try_reserve_total(&mut self.tree, 2 * leaf_base)?;
        self.keys.resize(leaf_base, 0);
        self.markers.resize(leaf_base, 0);
        self.leaf_base = leaf_base;
        self.rebuild_tree();
        Ok(())
    }

    /// A new position, the most recent, holding nothing yet (room was reserved).
    #[inline]
    pub(crate) fn push(&mut self) -> usize {
        let position = self.len;
        debug_assert!(position < self.leaf_base * WORD_BITS);
        self.len += 1;
        position
    }

    /// A key (and, with `marker`, a marker) at the fresh, most recent position `new`: the
    /// highest used position of its word, so its word's summary is extended, not recomputed.
    #[inline]
    pub(crate) fn append(&mut self, new: usize, marker: bool) {
        let word = new / WORD_BITS;
        self.keys[word] |= bit(new);
        if marker {
            self.markers[word] |= bit(new);
        }
        self.in_use += 1;
        let own = Summary {
            sum: i32::from(marker) - 1,
            min_suffix: 0,
        };
        let leaf = self.leaf_base + word;
        self.tree[leaf] = self.tree[leaf].then(own);
        self.update_paths([leaf, leaf, leaf]);
    }

    /// The bits of one access: the key at `key_from` and the marker at `marker_from` move to
    /// the fresh position `new`. Returns the words of the three positions (key's, marker's,
    /// new), whose summaries the caller brings up to date.
    #[inline]
    fn move_key_and_marker(
        &mut self,
        key_from: usize,
        marker_from: usize,
        new: usize,
    ) -> [usize; 3] {
        let words = [
            key_from / WORD_BITS,
            marker_from / WORD_BITS,
            new / WORD_BITS,
        ];
        self.release(words[0], key_from, true);
        self.release(words[1], marker_from, false);
        self.keys[words[2]] |= bit(new);
        self.markers[words[2]] |= bit(new);
        self.in_use += 1;
        words
    }

    /// One access: the key at `key_from` and the marker at `marker_from` both move to the
    /// fresh, most recent position `new`; one walk up for the words that changed.
    #[inline]
    pub(crate) fn move_to_new(&mut self, key_from: usize, marker_from: usize, new: usize) {
        let [key_word, marker_word, new_word] =
            self.move_key_and_marker(key_from, marker_from, new);
        let new_leaf = self.leaf_base + new_word;
        for word in [key_word, marker_word] {
            self.tree[self.leaf_base + word] =
                Summary::of_word(self.keys[word], self.markers[word]);
        }
        if new_word != key_word && new_word != marker_word {
            // Key and marker at the word's highest used position: sum 0, balanced.
            self.tree[new_leaf] = self.tree[new_leaf].then(Summary {
                sum: 0,
                min_suffix: 0,
            });
        }
        self.update_paths([
            self.leaf_base + key_word,
            self.leaf_base + marker_word,
            new_leaf,
        ]);
    }

    /// [`Self::move_to_new`]'s bits only: the summaries of the words it names in `touched`
    /// are left for [`Self::refresh`] (room for 3 words was reserved).
    #[inline]
    pub(crate) fn move_bits(
        &mut self,
        key_from: usize,
        marker_from: usize,
        new: usize,
        touched: &mut Vec<usize>,
    ) {
        for word in self.move_key_and_marker(key_from, marker_from, new) {
            // Each kind moves through few words in a request: a repeat is usually recent.
            if !touched[touched.len().saturating_sub(6)..].contains(&word) {
                touched.push(word);
            }
        }
    }

    /// Recomputes the summaries of the words in `touched` (changed by [`Self::move_bits`])
    /// and of their ancestors, each once, level by level; `touched` is used up as scratch.
    pub(crate) fn refresh(&mut self, touched: &mut Vec<usize>) {
        touched.sort_unstable();
        touched.dedup();
        for node in touched.iter_mut() {
            let word = *node;
            *node += self.leaf_base;
            self.tree[*node] = Summary::of_word(self.keys[word], self.markers[word]);
        }
        // `touched` holds this level's changed nodes, in order; their parents come next.
        while !touched.is_empty() && touched[0] > 1 {
            let mut changed = 0;
            let mut previous = 0;
            for index in 0..touched.len() {
                let node = touched[index] / 2;
                if node == previous {
                    continue;
                }
                previous = node;
                let summary = self.tree[2 * node].then(self.tree[2 * node + 1]);
                if self.tree[node] != summary {
                    self.tree[node] = summary;
                    touched[changed] = node;
                    changed += 1;
                }
            }
            touched.truncate(changed);
        }
        touched.clear();
    }

    /// Clears a key (or a marker) bit, counting the position out of use when it empties.
    #[inline]
    fn release(&mut self, word: usize, position: usize, key: bool) {
        if key {
            self.keys[word] &= !bit(position);
        } else {
            self.markers[word] &= !bit(position);
        }
        if (self.keys[word] | self.markers[word]) & bit(position) == 0 {
            self.in_use -= 1;
        }
    }

    /// Recomputes the ancestors of three leaves (whose own summaries are current), each
    /// shared ancestor once; a path stops where a recomputed summary comes out unchanged
    /// (nothing above it can change through it).
    #[inline]
    fn update_paths(&mut self, mut nodes: [usize; 3]) {
        let mut active = [true; 3];
        while nodes[0] > 1 && active.contains(&true) {
            for node in &mut nodes {
                *node /= 2;
            }
            let mut done = [0_usize; 3]; // nodes recomputed at this level (0: none)
            for path in 0..3 {
                let node = nodes[path];
                if !active[path] || done.contains(&node) {
                    continue;
                }
                done[path] = node;
                let summary = self.tree[2 * node].then(self.tree[2 * node + 1]);
                let changed = self.tree[node] != summary;
                self.tree[node] = summary;
                for other in path..3 {
                    if nodes[other] == node {
                        active[other] = changed;
                    }
                }
            }
        }
    }

    /// The oldest key position after `after` whose imbalance is 0 (the most recent key's is
    /// always 0, so one exists when a key is more recent than `after`).
    ///
    /// Bottom-up, as the answer is usually near `after`: the subtrees just after `after` are
    /// the right siblings met walking up from its word, in position order; the sum after each
    /// is the sum of those met later. The first that can hold a balanced key is walked down.
    pub(crate) fn first_balanced_key_after(&self, after: usize) -> Option<usize> {
        let first_word = (after + 1) / WORD_BITS;
        if first_word >= self.leaf_base {
            return None;
        }
        // Right siblings up to the root, nearest first (at most one per level).
        let mut siblings = [0_usize; usize::BITS as usize];
        let mut count = 0;
        let mut sum_after = 0;
        let mut node = self.leaf_base + first_word;
        while node > 1 {
            if node.is_multiple_of(2) {
                siblings[count] = node + 1;
                sum_after += self.tree[node + 1].sum;
                count += 1;
            }
            node /= 2;
        }
        if let Some(found) = self.find_in_word(first_word, after + 1, sum_after) {
            return Some(found);
        }
        for &sibling in &siblings[..count] {
            let summary = self.tree[sibling];
            sum_after -= summary.sum;
            if summary.min_suffix.saturating_add(sum_after) <= 0 {
                return self.descend(sibling, sum_after);
            }
        }
        None
    }

    /// The oldest balanced key in `node`'s subtree, which holds one, given the sum after it.
    fn descend(&self, mut node: usize, mut sum_after: i32) -> Option<usize> {
        while node < self.leaf_base {
            let newer = self.tree[2 * node + 1];
            if self.tree[2 * node]
                .min_suffix
                .saturating_add(sum_after + newer.sum)
                <= 0
            {
                sum_after += newer.sum;
                node *= 2;
            } else {
                node = 2 * node + 1;
            }
        }
        let word = node - self.leaf_base;
        self.find_in_word(word, word * WORD_BITS, sum_after)
    }

    /// The oldest balanced key of `word` at or after position `first`, given the sum after the
    /// word: the oldest byte that holds one, through [`BYTE_SUMMARIES`], then its bits.
    fn find_in_word(&self, word: usize, first: usize, sum_after: i32) -> Option<usize> {
        let from_first = u64::MAX << (first.saturating_sub(word * WORD_BITS)).min(63);
        let keys = self.keys[word] & from_first;
        let markers = self.markers[word] & from_first;
        let mut sum = sum_after;
        let mut found = None; // (byte, sum after it)
        for byte in (0..8).rev() {
            let (byte_sum, min_suffix) = byte_summary(keys, markers, byte);
            if min_suffix.saturating_add(sum) <= 0 {
                found = Some((byte, sum)); // keep going: the oldest one wins
            }
            sum += byte_sum;
        }
        let (byte, mut sum) = found?;
        let mut oldest = None;
        for bit_index in (8 * byte..8 * byte + 8).rev() {
            let mask = 1_u64 << bit_index;
            if keys & mask != 0 {
                if sum <= 0 {
                    oldest = Some(word * WORD_BITS + bit_index as usize);
                }
                sum -= 1;
            }
            if markers & mask != 0 {
                sum += 1;
            }
        }
        oldest
    }

    fn rebuild_tree(&mut self) {
        self.tree.clear();
        self.tree.resize(2 * self.leaf_base, Summary::default());
        for word in 0..self.leaf_base {
            self.tree[self.leaf_base + word] =
                Summary::of_word(self.keys[word], self.markers[word]);
        }
        for node in (1..self.leaf_base).rev() {
            self.tree[node] = self.tree[2 * node].then(self.tree[2 * node + 1]);
        }
    }

    /// Closes up the positions that hold nothing; returns where every used one went. Fails,
    /// changing nothing, when the memory for the map is not there.
    pub(crate) fn compact(&mut self) -> Result<PositionRemap, AllocFailed> {
        let words = self.len.div_ceil(WORD_BITS);
        let mut in_use_words = Vec::new();
        let mut used_before_word = Vec::new();
        try_reserve_total(&mut in_use_words, words)?;
        try_reserve_total(&mut used_before_word, words)?;
        let mut used = 0_u32;
        for word in 0..words {
            let in_use = self.keys[word] | self.markers[word];
            in_use_words.push(in_use);
            used_before_word.push(used);
            used += in_use.count_ones();
        }
        let remap = PositionRemap {
            in_use_words,
            used_before_word,
        };
        // New positions never pass old ones, so one forward sweep can rewrite in place.
        let mut next = 0_usize;
        for word in 0..words {
            let (keys, markers) = (self.keys[word], self.markers[word]);
            self.keys[word] = 0;
            self.markers[word] = 0;
            let mut bits = keys | markers;
            while bits != 0 {
                let mask = bits & bits.wrapping_neg();
                let (target_word, target_bit) = (next / WORD_BITS, bit(next));
                if keys & mask != 0 {
                    self.keys[target_word] |= target_bit;
                }
                if markers & mask != 0 {
                    self.markers[target_word] |= target_bit;
                }
                next += 1;
                bits &= !mask;
            }
        }
        debug_assert_eq!(next, self.in_use);
        self.len = next;
        self.rebuild_tree();
        Ok(remap)
    }

    /// Forgets every position; keeps the allocations.
    pub(crate) fn clear(&mut self) {
        self.keys.fill(0);
        self.markers.fill(0);
        self.tree.fill(Summary::default());
        self.len = 0;
        self.in_use = 0;
    }

    /// Heap bytes held.
    pub(crate) fn memory_usage_bytes(&self) -> usize {
        (self.keys.capacity() + self.markers.capacity()) * size_of::<u64>()
            + self.tree.capacity() * size_of::<Summary>()
    }
}

#[inline]
fn bit(position: usize) -> u64 {
    1_u64 << (position % WORD_BITS)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The imbalance at key position `q`, summed position by position.
    fn naive_imbalance(keys: &[usize], markers: &[usize], q: usize) -> i32 {
        let count = |set: &[usize]| i32::try_from(set.iter().filter(|&&p| p > q).count()).unwrap();
        count(markers) - count(keys)
    }

    #[test]
    fn word_summaries_by_bytes_equal_position_by_position() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for _ in 0..2000 {
            state = crate::workload::mix64(state);
            let keys = state;
            state = crate::workload::mix64(state);
            let markers = state & crate::workload::mix64(state ^ 1);
            let (mut sum, mut min_suffix) = (0, NO_KEY);
            for bit in (0..64).rev() {
                if keys >> bit & 1 == 1 {
                    min_suffix = min_suffix.min(sum);
                    sum -= 1;
                }
                sum += i32::from(markers >> bit & 1 == 1);
            }
            assert_eq!(Summary::of_word(keys, markers), Summary { sum, min_suffix });
        }
        assert_eq!(Summary::of_word(0, 0), Summary::default());
    }

    /// Moves applied one by one and as one batch leave the same bits and summaries, and the
    /// search finds what a position-by-position sum finds.
    #[test]
    fn batched_moves_equal_single_moves_and_the_search_equals_a_naive_one() {
        let (mut single, mut batched) = (Imbalance::default(), Imbalance::default());
        let (mut keys, mut markers) = (Vec::new(), Vec::new());
        let mut touched = Vec::new();
        let mut state = 0x1234_5678_9abc_def0_u64;
        let mut random = |bound: usize| {
            state = crate::workload::mix64(state);
            usize::try_from(state % bound as u64).unwrap()
        };
        for round in 0..3000 {
            for imbalance in [&mut single, &mut batched] {
                imbalance.reserve(8).unwrap();
            }
            if keys.len() < 8 || random(3) == 0 {
                let position = single.push();
                assert_eq!(batched.push(), position);
                let marker = !keys.is_empty();
                single.append(position, marker);
                batched.append(position, marker);
                keys.push(position);
                if marker {
                    markers.push(position);
                }
            } else {
                for _ in 0..=random(4) {
                    let (key, marker) = (random(keys.len()), random(markers.len()));
                    let position = single.push();
                    assert_eq!(batched.push(), position);
                    single.move_to_new(keys[key], markers[marker], position);
                    batched.move_bits(keys[key], markers[marker], position, &mut touched);
                    (keys[key], markers[marker]) = (position, position);
                }
                batched.refresh(&mut touched);
            }
            assert_eq!(single.keys, batched.keys);
            assert_eq!(single.markers, batched.markers);
            assert_eq!(single.tree, batched.tree);
            assert_eq!(single.in_use, batched.in_use);
            if round % 50 == 0 {
                let after = random(single.len());
                let naive = (after + 1..single.len())
                    .find(|&q| keys.contains(&q) && naive_imbalance(&keys, &markers, q) <= 0);
                assert_eq!(single.first_balanced_key_after(after), naive);
            }
        }
    }

    #[test]
    fn finds_the_oldest_balanced_key_after() {
        // keys at 0, 3, 5, 130; markers at 3, 5, 130: imbalance 0 at 3, 5 and 130.
        let mut imbalance = Imbalance::default();
        imbalance.reserve(200).unwrap();
        for p in 0..=130 {
            assert_eq!(imbalance.push(), p);
            if [0, 3, 5, 130].contains(&p) {
                imbalance.append(p, p != 0);
            }
        }
        for q in [3, 5, 130] {
            assert_eq!(naive_imbalance(&[0, 3, 5, 130], &[3, 5, 130], q), 0);
        }
        assert_eq!(imbalance.first_balanced_key_after(0), Some(3));
        assert_eq!(imbalance.first_balanced_key_after(3), Some(5));
        assert_eq!(imbalance.first_balanced_key_after(5), Some(130));
        assert_eq!(imbalance.first_balanced_key_after(130), None);
        // The key at 130 and the marker at 5 move to 131: 3 stays balanced.
        imbalance.push();
        imbalance.move_to_new(130, 5, 131);
        assert_eq!(naive_imbalance(&[0, 3, 5, 131], &[3, 130, 131], 3), 0);
        assert_eq!(imbalance.first_balanced_key_after(0), Some(3));
        assert_eq!(imbalance.in_use(), 5);
        let remap = imbalance.compact().unwrap();
        assert_eq!(
            [0, 3, 5, 130, 131].map(|p| remap.new_position(p)),
            [0, 1, 2, 3, 4]
        );
        assert_eq!(imbalance.len(), 5);
        assert_eq!(imbalance.first_balanced_key_after(0), Some(1));
    }
}
