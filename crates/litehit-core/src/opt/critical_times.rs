//! Each capacity's critical time, and the smallest capacity critical at or before a time.
//!
//! Capacity `c >= 2` (one per distinct key beyond the first) is *critical* at the position of
//! the last access whose OPT stack distance was `c` (a cold access makes the capacity it adds,
//! the number of distinct keys, critical). The stack distance of an access is the smallest
//! capacity whose critical time is at or before the key [`super::imbalance`] stops at.
//!
//! Layout: the times in an array indexed by capacity, and a min-tree over blocks of
//! [`BLOCK_CAPACITIES`] of them: a query is one walk down and a scan of one block.

use crate::hitcore::{AllocFailed, try_reserve_total};

/// Capacities per tree leaf.
const BLOCK_CAPACITIES: usize = 16;

/// The first capacity with a critical time (capacity 1 holds only the key being accessed).
const FIRST_CAPACITY: usize = 2;

/// Critical times of capacities `2..`, in positions.
#[derive(Debug, Clone, Default)]
pub(crate) struct CriticalTimes {
    /// Index `c - 2`: capacity `c`'s critical position.
    times: Vec<u32>,
    /// 1-based min-heap over blocks; block `b`'s leaf is `leaf_base + b`.
    tree: Vec<u32>,
    leaf_base: usize,
}

impl CriticalTimes {
    /// Makes room for `additional` more capacities, so nothing grows mid-request.
    pub(crate) fn reserve(&mut self, additional: usize) -> Result<(), AllocFailed> {
        let needed = self.times.len() + additional;
        if needed > self.times.capacity() {
            let grown = needed.max(self.times.len() + self.times.len() / 4 + 64);
            try_reserve_total(&mut self.times, grown)?;
        }
        let needed_blocks = needed.div_ceil(BLOCK_CAPACITIES);
        if needed_blocks > self.leaf_base {
            let leaf_base = needed_blocks.next_power_of_two().max(16);
            try_reserve_total(&mut self.tree, 2 * leaf_base)?;
            self.leaf_base = leaf_base;
            self.rebuild_tree();
        }
        Ok(())
    }

    /// Adds the next capacity, critical at `position` (room was reserved).
    #[inline]
    pub(crate) fn push(&mut self, position: u32) {
        self.times.push(position);
        self.update_block((self.times.len() - 1) / BLOCK_CAPACITIES);
    }

    /// Capacity `capacity`'s critical position.
    #[inline]
    pub(crate) fn time(&self, capacity: usize) -> u32 {
        self.times[capacity - FIRST_CAPACITY]
    }

    /// Makes capacity `capacity` critical at `position`, the most recent position so far.
    #[inline]
    pub(crate) fn set(&mut self, capacity: usize, position: u32) {
        let index = capacity - FIRST_CAPACITY;
        let block = index / BLOCK_CAPACITIES;
        let old = std::mem::replace(&mut self.times[index], position);
        debug_assert!(position >= old);
        // A later time changes the block's minimum only if the old one was it.
        if old == self.tree[self.leaf_base + block] {
            self.update_block(block);
        }
    }

    /// The smallest capacity critical at or before `position`, if any.
    pub(crate) fn smallest_capacity_at_or_before(&self, position: u32) -> Option<usize> {
        if self.leaf_base == 0 || self.tree[1] > position {
            return None;
        }
        let mut node = 1;
        while node < self.leaf_base {
            node = if self.tree[2 * node] <= position {
                2 * node
            } else {
                2 * node + 1
            };
        }
        let block = node - self.leaf_base;
        let start = block * BLOCK_CAPACITIES;
        let end = (start + BLOCK_CAPACITIES).min(self.times.len());
        self.times[start..end]
            .iter()
            .position(|&time| time <= position)
            .map(|offset| start + offset + FIRST_CAPACITY)
    }

    /// Rewrites every time through `new_position` (after a position compaction).
    pub(crate) fn renumber(&mut self, new_position: impl Fn(u32) -> u32) {
        for time in &mut self.times {
            *time = new_position(*time);
        }
        self.rebuild_tree();
    }

    fn update_block(&mut self, block: usize) {
        let start = block * BLOCK_CAPACITIES;
        let end = (start + BLOCK_CAPACITIES).min(self.times.len());
        let mut node = self.leaf_base + block;
        self.tree[node] = self.times[start..end]
            .iter()
            .copied()
            .min()
            .unwrap_or(u32::MAX);
        while node > 1 {
            node /= 2;
            let minimum = self.tree[2 * node].min(self.tree[2 * node + 1]);
            if self.tree[node] == minimum {
                break; // nothing above changes
            }
            self.tree[node] = minimum;
        }
    }

    fn rebuild_tree(&mut self) {
        self.tree.clear();
        self.tree.resize(2 * self.leaf_base, u32::MAX);
        for (block, times) in self.times.chunks(BLOCK_CAPACITIES).enumerate() {
            self.tree[self.leaf_base + block] = times.iter().copied().min().unwrap_or(u32::MAX);
        }
        for node in (1..self.leaf_base).rev() {
            self.tree[node] = self.tree[2 * node].min(self.tree[2 * node + 1]);
        }
    }

    /// Forgets every capacity; keeps the allocations.
    pub(crate) fn clear(&mut self) {
        self.times.clear();
        self.tree.fill(u32::MAX);
    }

    /// Heap bytes held.
    pub(crate) fn memory_usage_bytes(&self) -> usize {
        (self.times.capacity() + self.tree.capacity()) * size_of::<u32>()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn smallest_capacity_at_or_before_scans_blocks_in_capacity_order() {
        let mut times = CriticalTimes::default();
        times.reserve(40).unwrap();
        for capacity in 2..42 {
            times.push(1000 - capacity); // capacity 41 is the oldest
        }
        assert_eq!(times.smallest_capacity_at_or_before(958), None);
        assert_eq!(times.smallest_capacity_at_or_before(959), Some(41));
        assert_eq!(times.smallest_capacity_at_or_before(995), Some(5));
        // Capacity 5 critical again, most recently: 6 is the first at or before 995.
        times.set(5, 2000);
        assert_eq!(times.smallest_capacity_at_or_before(995), Some(6));
        assert_eq!(times.smallest_capacity_at_or_before(2000), Some(2));
        times.renumber(|p| p / 2);
        assert_eq!(times.time(5), 1000);
        assert_eq!(times.smallest_capacity_at_or_before(497), Some(6));
    }
}
