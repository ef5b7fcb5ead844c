//! Each capacity's critical time, and the smallest capacity critical at or before a time.
//!
//! Capacity `c >= 2` (one per distinct key beyond the first) is *critical* at the position of
//! the last access whose OPT stack distance was `c` (a cold access makes the capacity it adds,
//! the number of distinct keys, critical). The stack distance of an access is the smallest
//! capacity whose critical time is at or before the key [`super::imbalance`] stops at.
//!
//! Layout: the times in an array indexed by capacity, and above them a min-tree with
//! [`FANOUT`] children per node, level by level (each level the minima of 16 consecutive
//! entries of the level below, padded to whole groups of 16): a query is one walk down that
//! reads one 64-byte group per level, about 7 levels for 30 M capacities.

use crate::hitcore::{AllocFailed, try_reserve_total};

/// Children per tree node (16 `u32`: one cache line).
const FANOUT: usize = 16;

/// The first capacity with a critical time (capacity 1 holds only the key being accessed).
const FIRST_CAPACITY: usize = 2;

/// Critical times of capacities `2..`, in positions.
#[derive(Debug, Clone, Default)]
pub(crate) struct CriticalTimes {
    /// Index `c - 2`: capacity `c`'s critical position.
    times: Vec<u32>,
    /// The tree's levels, lowest first, one after the other: entry `i` of a level is the
    /// minimum of entries `16 i .. 16 i + 16` of the level below (`u32::MAX`: none). The top
    /// level is one group of 16.
    tree: Vec<u32>,
    /// Where each level starts in `tree`; the last is the top.
    level_starts: Vec<usize>,
    /// Capacities the tree covers (times may grow to this many without a rebuild).
    covered: usize,
    /// Lowest-level entries whose group's minimum may have risen since (see [`Self::set`]):
    /// the entries above them are lower bounds until [`Self::refresh_stale`].
    stale_groups: Vec<usize>,
}

/// Marked groups held before they are recomputed anyway.
const STALE_GROUPS: usize = 64;

/// A query's answer, and what it tells the next query of the same first pass.
///
/// Every capacity below `capacity` is critical after the queried position, the oldest of them
/// at `oldest_below` (`u32::MAX`: none). The access then makes `capacity` critical at the
/// newest position, so (times change only that way within a first pass) the next query's
/// answer is `capacity + 1` exactly when that one is critical at or before its position and
/// `min(oldest_below, newest)` is after it. In the generated traces 95 % of first-pass
/// distances are the previous one plus one: a run of keys used together before.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Finger {
    /// The smallest capacity critical at or before the queried position.
    pub(crate) capacity: usize,
    /// The oldest critical time of the capacities below it.
    pub(crate) oldest_below: u32,
}

impl Finger {
    /// The guess for the next query after `capacity` became critical at `newest`.
    #[inline]
    pub(crate) fn after_access(self, newest: u32) -> Self {
        Self {
            capacity: self.capacity + 1,
            oldest_below: self.oldest_below.min(newest),
        }
    }
}

/// Index of the first of `group`'s entries at or before `position`, if any.
#[inline]
fn first_at_or_before(group: &[u32], position: u32) -> Option<usize> {
    let mut mask = 0_u32;
    for (index, &time) in group.iter().enumerate() {
        mask |= u32::from(time <= position) << index;
    }
    (mask != 0).then(|| mask.trailing_zeros() as usize)
}

impl CriticalTimes {
    /// Makes room for `additional` more capacities, so nothing grows mid-request.
    pub(crate) fn reserve(&mut self, additional: usize) -> Result<(), AllocFailed> {
        let needed = self.times.len() + additional;
        if needed > self.times.capacity() {
            let grown = needed.max(self.times.len() + self.times.len() / 4 + 64);
            try_reserve_total(&mut self.times, grown)?;
        }
        try_reserve_total(&mut self.stale_groups, STALE_GROUPS)?;
        if needed > self.covered {
            let covered = self.times.capacity();
            let mut level_starts = Vec::new();
            let mut total = 0;
            let mut below = covered;
            loop {
                let entries = below.div_ceil(FANOUT).next_multiple_of(FANOUT);
                level_starts.push(total);
                total += entries;
                if entries == FANOUT {
                    break;
                }
                below = entries;
            }
            try_reserve_total(&mut self.tree, total)?;
            self.level_starts = level_starts;
            self.covered = covered;
            self.tree.clear();
            self.tree.resize(total, u32::MAX);
            self.rebuild_tree();
        }
        Ok(())
    }

    /// Adds the next capacity, critical at `position`, the most recent position so far (room
    /// was reserved).
    #[inline]
    pub(crate) fn push(&mut self, position: u32) {
        let mut index = self.times.len();
        self.times.push(position);
        for &start in &self.level_starts {
            index /= FANOUT;
            let entry = &mut self.tree[start + index];
            if *entry <= position {
                break; // a minimum at or before the newest position stays
            }
            *entry = position;
        }
    }

    /// Capacity `capacity`'s critical position.
    #[inline]
    pub(crate) fn time(&self, capacity: usize) -> u32 {
        self.times[capacity - FIRST_CAPACITY]
    }

    /// Makes capacity `capacity` critical at `position`, the most recent position so far.
    ///
    /// A later time changes its group's minimum only if the old one was it; the group is then
    /// only marked, and recomputed (with the levels above) before the tree is next read, so a
    /// run of consecutive capacities made critical one after the other costs one recompute.
    #[inline]
    pub(crate) fn set(&mut self, capacity: usize, position: u32) {
        let index = capacity - FIRST_CAPACITY;
        let old = std::mem::replace(&mut self.times[index], position);
        debug_assert!(position >= old);
        let group = index / FANOUT;
        // The lowest level starts at 0; a stale (marked) entry is never above the true minimum.
        if self.tree[group] != old || self.stale_groups.last() == Some(&group) {
            return;
        }
        if self.stale_groups.len() == self.stale_groups.capacity() {
            self.refresh_stale();
        }
        if self.stale_groups.len() < self.stale_groups.capacity() {
            self.stale_groups.push(group);
        } else {
            self.refresh_group(group); // no room was reserved
        }
    }

    /// Recomputes the marked groups and what is above them.
    fn refresh_stale(&mut self) {
        for index in 0..self.stale_groups.len() {
            self.refresh_group(self.stale_groups[index]);
        }
        self.stale_groups.clear();
    }

    /// The minimum of `group`'s members: times (`below_start` `None`, the lowest level) or
    /// the entries of the level starting at `below_start`; `u32::MAX` for a group past the end.
    #[inline]
    fn group_minimum(&self, below_start: Option<usize>, group: usize) -> u32 {
        let members = FANOUT * group..FANOUT * group + FANOUT;
        match below_start {
            None => self.times[members.start..members.end.min(self.times.len())]
                .iter()
                .copied()
                .min(),
            Some(below) => self.tree[below + members.start..below + members.end]
                .iter()
                .copied()
                .min(),
        }
        .unwrap_or(u32::MAX)
    }

    /// Recomputes lowest-level entry `group` from the times, and the entries above it while
    /// they change.
    fn refresh_group(&mut self, group: usize) {
        let mut below_start = None;
        let mut group = group;
        for &start in &self.level_starts {
            let minimum = self.group_minimum(below_start, group);
            let entry = start + group;
            if self.tree[entry] == minimum {
                break; // nothing above changes
            }
            self.tree[entry] = minimum;
            below_start = Some(start);
            group /= FANOUT;
        }
    }

    /// Makes capacities `2..2 + times.len()` critical at `times`, the most recent positions
    /// so far (the second pass of a request), with one pass up for all of them.
    pub(crate) fn set_first(&mut self, times: impl ExactSizeIterator<Item = u32>) {
        let count = times.len();
        if count == 0 {
            return;
        }
        for (slot, time) in self.times[..count].iter_mut().zip(times) {
            debug_assert!(time >= *slot);
            *slot = time;
        }
        self.refresh_stale();
        self.rebuild_prefix(count);
    }

    /// The smallest capacity critical at or before `position`, if any, and the oldest time
    /// below it. A `guess` from the previous query of a request's first pass (see [`Finger`])
    /// is checked with one read first; almost always it is the answer.
    #[inline]
    pub(crate) fn smallest_capacity_at_or_before(
        &mut self,
        position: u32,
        guess: Option<Finger>,
    ) -> Option<Finger> {
        if let Some(guess) = guess
            && guess.oldest_below > position
            && self
                .times
                .get(guess.capacity - FIRST_CAPACITY)
                .is_some_and(|&time| time <= position)
        {
            return Some(guess);
        }
        self.refresh_stale();
        self.search(position)
    }

    /// [`Self::smallest_capacity_at_or_before`] by a walk down the tree; the entries left of
    /// the path, all after `position`, give the oldest time below the answer.
    fn search(&self, position: u32) -> Option<Finger> {
        let (&top, lower) = self.level_starts.split_last()?;
        let mut oldest_below = u32::MAX;
        let mut first_at_most = |group: &[u32]| {
            let index = first_at_or_before(group, position)?;
            oldest_below = group[..index].iter().copied().fold(oldest_below, u32::min);
            Some(index)
        };
        let mut group = first_at_most(&self.tree[top..top + FANOUT])?;
        for &start in lower.iter().rev() {
            let first = start + FANOUT * group;
            group = FANOUT * group
                + first_at_most(&self.tree[first..first + FANOUT])
                    .expect("a group's minimum is one of its members");
        }
        let first = FANOUT * group;
        let members = &self.times[first..(first + FANOUT).min(self.times.len())];
        let offset = first_at_most(members).expect("a group's minimum is one of its members");
        Some(Finger {
            capacity: first + offset + FIRST_CAPACITY,
            oldest_below,
        })
    }

    /// Rewrites every time through `new_position` (after a position compaction).
    pub(crate) fn renumber(&mut self, new_position: impl Fn(u32) -> u32) {
        for time in &mut self.times {
            *time = new_position(*time);
        }
        self.rebuild_tree();
    }

    fn rebuild_tree(&mut self) {
        self.stale_groups.clear();
        self.tree.fill(u32::MAX);
        self.rebuild_prefix(self.times.len());
    }

    /// Recomputes the tree entries above the first `count` times.
    fn rebuild_prefix(&mut self, count: usize) {
        if count == 0 {
            return;
        }
        let mut below: Option<usize> = None;
        let mut below_count = count;
        for &start in &self.level_starts {
            let groups = below_count.div_ceil(FANOUT);
            for group in 0..groups {
                self.tree[start + group] = self.group_minimum(below, group);
            }
            below = Some(start);
            below_count = groups;
        }
    }

    /// Forgets every capacity; keeps the allocations.
    pub(crate) fn clear(&mut self) {
        self.stale_groups.clear();
        self.times.clear();
        self.tree.fill(u32::MAX);
    }

    /// Heap bytes held.
    pub(crate) fn memory_usage_bytes(&self) -> usize {
        (self.times.capacity() + self.tree.capacity()) * size_of::<u32>()
            + (self.level_starts.capacity() + self.stale_groups.capacity()) * size_of::<usize>()
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
        let smallest = |times: &mut CriticalTimes, position| {
            times
                .smallest_capacity_at_or_before(position, None)
                .map(|finger| finger.capacity)
        };
        assert_eq!(smallest(&mut times, 958), None);
        assert_eq!(smallest(&mut times, 959), Some(41));
        assert_eq!(smallest(&mut times, 995), Some(5));
        // Capacity 5 critical again, most recently: 6 is the first at or before 995.
        times.set(5, 2000);
        assert_eq!(smallest(&mut times, 995), Some(6));
        assert_eq!(smallest(&mut times, 2000), Some(2));
        times.renumber(|p| p / 2);
        assert_eq!(times.time(5), 1000);
        assert_eq!(smallest(&mut times, 497), Some(6));
    }

    /// Times of many capacities (three tree levels) against a scan of all of them, with and
    /// without a finger from the previous query.
    #[test]
    #[expect(clippy::cast_possible_truncation, reason = "small test values")]
    fn queries_equal_a_scan_through_pushes_sets_and_renumbering() {
        fn scan(times: &[u32], position: u32) -> Option<Finger> {
            let index = times.iter().position(|&time| time <= position)?;
            Some(Finger {
                capacity: index + FIRST_CAPACITY,
                oldest_below: times[..index].iter().copied().fold(u32::MAX, u32::min),
            })
        }
        let mut times = CriticalTimes::default();
        let mut naive = Vec::new();
        let mut state = 0x2545_f491_4f6c_dd1d_u64;
        let mut next_position = 0_u32;
        let mut finger: Option<Finger> = None;
        let (mut fingers_taken, mut fingers_refused) = (0, 0);
        for round in 0..40_000 {
            state = crate::workload::mix64(state);
            next_position += 1;
            let previous = finger.take();
            if naive.len() < 2 || state.is_multiple_of(4) {
                times.reserve(1).unwrap();
                times.push(next_position);
                naive.push(next_position);
                finger = previous; // a new capacity changes no older time
            } else if state % 4 == 1 {
                let capacity = FIRST_CAPACITY + (state >> 8) as usize % naive.len();
                times.set(capacity, next_position);
                naive[capacity - FIRST_CAPACITY] = next_position;
            } else if state % 4 == 2 {
                let count = 1 + (state >> 8) as usize % naive.len().min(40);
                times.set_first((0..count).map(|offset| next_position + offset as u32));
                for (offset, time) in naive[..count].iter_mut().enumerate() {
                    *time = next_position + offset as u32;
                }
                next_position += count as u32;
            } else if let Some(answer) = previous {
                // An access: the answer becomes critical at the newest position.
                times.set(answer.capacity, next_position);
                naive[answer.capacity - FIRST_CAPACITY] = next_position;
                finger = Some(answer.after_access(next_position));
            }
            if round % 10_000 == 9_999 {
                times.renumber(|p| p / 2 + 7);
                for time in &mut naive {
                    *time = *time / 2 + 7;
                }
                finger = None;
            }
            state = crate::workload::mix64(state);
            // Mostly probes that the guess could answer: at or before the guess's time.
            let probe = match finger {
                Some(guess)
                    if !state.is_multiple_of(8)
                        && guess.capacity - FIRST_CAPACITY < naive.len() =>
                {
                    naive[guess.capacity - FIRST_CAPACITY] + (state >> 8) as u32 % 4
                }
                _ => (state % u64::from(next_position + 2)) as u32,
            };
            let expected = scan(&naive, probe);
            let answer = times.smallest_capacity_at_or_before(probe, finger);
            assert_eq!(answer, expected);
            if let Some(guess) = finger {
                if expected.is_some_and(|e| e.capacity == guess.capacity) {
                    fingers_taken += 1;
                } else {
                    fingers_refused += 1;
                }
            }
            finger = answer;
        }
        assert!(naive.len() > 16 * 16 * 16, "three levels were exercised");
        assert!(fingers_taken > 1000 && fingers_refused > 1000);
    }
}
