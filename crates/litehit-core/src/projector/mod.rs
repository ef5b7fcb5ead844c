//! The one projector: `facts` → **projector** → outputs.
//!
//! This is the only module where a capacity meets a fact, and the only place bytes become
//! blocks (`floor(capacity_bytes / block_bytes)`). Online slots, the facts query, the `mrc`
//! report and the live monitor all call these functions; nothing else implements boundary
//! logic. [`accumulator::CapacityAxisAccumulator`] answers cumulative hits at any capacity;
//! [`tiers`] splits the hits among cache tiers.

pub mod accumulator;
pub mod sampling;
pub mod tiers;

use crate::facts::RequestFact;

pub use accumulator::CapacityAxisAccumulator;

/// Bytes in one binary gigabyte (capacities in GB are `GB × 1024³` bytes).
pub const BYTES_PER_GIB: u64 = 1 << 30;

/// Prefix-hit blocks of `fact` in an LRU cache of `capacity_blocks` blocks.
#[must_use]
pub fn project_blocks(fact: &RequestFact, capacity_blocks: u64) -> u64 {
    let mut hit_blocks = 0;
    for segment in &fact.hit_curve {
        if segment.start_required_blocks > capacity_blocks {
            break;
        }
        // Saturating: a hand-made facts file may hold start 0 with a capacity of u64::MAX.
        hit_blocks += segment
            .run_length
            .min((capacity_blocks - segment.start_required_blocks).saturating_add(1));
    }
    hit_blocks
}

/// [`project_blocks`] of `fact` at each of `capacities_ascending` (blocks, non-decreasing,
/// `None` = unlimited and last) into `hit_blocks`, in one walk of the curve instead of one
/// per capacity: what a query at many capacities spends most of its projection time on.
///
/// A curve made by `hitcore` has at most one run partly below any capacity (each run starts
/// past the one before ends), so the hits are the runs entered before it plus that run's
/// share. A hand-made curve without that shape is projected per capacity, so the result is
/// [`project_blocks`]'s for every curve.
pub fn project_blocks_ascending(
    fact: &RequestFact,
    capacities_ascending: &[Option<u64>],
    hit_blocks: &mut [u64],
) {
    debug_assert_eq!(capacities_ascending.len(), hit_blocks.len());
    let curve = fact.hit_curve.as_slice();
    if curve.is_empty() {
        // A cold head: no hits anywhere (a common row).
        hit_blocks.fill(0);
        return;
    }
    // Runs `..entered` start at or below the capacity; every one before the last entered is
    // wholly below it, and `below_last` sums their lengths.
    let mut entered = 0;
    let mut below_last = 0_u64;
    for (slot, capacity) in capacities_ascending.iter().enumerate() {
        let Some(capacity_blocks) = *capacity else {
            hit_blocks[slot..].fill(project_infinite(fact));
            return;
        };
        if entered == curve.len()
            && let Some(last) = curve.last()
            && capacity_blocks - last.start_required_blocks >= last.run_length
        {
            // The whole curve is below this capacity, so below every one after it too.
            hit_blocks[slot..].fill(below_last + last.run_length);
            return;
        }
        while let Some(segment) = curve.get(entered)
            && segment.start_required_blocks <= capacity_blocks
        {
            if let Some(previous) = entered.checked_sub(1).map(|index| curve[index]) {
                // The shape the one walk relies on; otherwise project each capacity alone.
                if previous
                    .start_required_blocks
                    .checked_add(previous.run_length)
                    .is_none_or(|end| end > segment.start_required_blocks)
                {
                    return project_blocks_each(fact, capacities_ascending, hit_blocks);
                }
                below_last += previous.run_length;
            }
            entered += 1;
        }
        hit_blocks[slot] = match entered.checked_sub(1).map(|index| curve[index]) {
            Some(last) => {
                below_last
                    + last
                        .run_length
                        .min((capacity_blocks - last.start_required_blocks).saturating_add(1))
            }
            None => 0,
        };
    }
}

/// [`project_blocks`] at each capacity on its own (`None` = unlimited).
fn project_blocks_each(fact: &RequestFact, capacities: &[Option<u64>], hit_blocks: &mut [u64]) {
    for (hits, capacity) in hit_blocks.iter_mut().zip(capacities) {
        *hits = capacity.map_or_else(
            || project_infinite(fact),
            |capacity_blocks| project_blocks(fact, capacity_blocks),
        );
    }
}

/// Converts a byte capacity to whole blocks: the single floor division of the design.
///
/// `block_bytes == 0` is rejected by every reader and config before reaching here; it maps to
/// zero blocks rather than dividing by zero.
#[must_use]
pub fn capacity_blocks_for_bytes(capacity_bytes: u64, block_bytes: u64) -> u64 {
    capacity_bytes.checked_div(block_bytes).unwrap_or(0)
}

/// Prefix-hit blocks of `fact` in a cache of `capacity_bytes` bytes at `block_bytes` per block.
#[must_use]
pub fn project_bytes(fact: &RequestFact, capacity_bytes: u64, block_bytes: u64) -> u64 {
    project_blocks(fact, capacity_blocks_for_bytes(capacity_bytes, block_bytes))
}

/// Prefix-hit blocks with unlimited capacity (only cold or expired blocks miss).
#[must_use]
pub fn project_infinite(fact: &RequestFact) -> u64 {
    fact.hit_curve.iter().map(|s| s.run_length).sum()
}

/// `floor(gb × 1024³)` bytes, as upstream's facts query computes it; `None` for a negative
/// (infinite) slot. Saturates at `u64::MAX` for absurdly large values.
#[must_use]
pub fn capacity_bytes_for_gb(capacity_gb: f64) -> Option<u64> {
    if capacity_gb < 0.0 || capacity_gb.is_nan() {
        return None;
    }
    // `gb × 2^30` is exact in f64; the cast floors and saturates.
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "floor, saturating"
    )]
    let bytes = (capacity_gb * BYTES_PER_GIB as f64).floor() as u64;
    Some(bytes)
}

/// A capacity a user asked about: a byte size, a block count, or unlimited.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Capacity {
    /// Binary gigabytes (converted with the lane's `block_bytes` at projection time).
    Gigabytes(f64),
    /// An exact block count (independent of `block_bytes`).
    Blocks(u64),
    /// No capacity misses.
    Infinite,
}

impl Capacity {
    /// Parses a negative GB value as infinite, as the upstream facts query does.
    #[must_use]
    pub fn from_gb(capacity_gb: f64) -> Self {
        if capacity_gb < 0.0 {
            Self::Infinite
        } else {
            Self::Gigabytes(capacity_gb)
        }
    }

    /// The capacity in blocks for a lane with `block_bytes` per block; `None` = infinite.
    #[must_use]
    pub fn blocks(self, block_bytes: u64) -> Option<u64> {
        match self {
            Self::Gigabytes(gb) => {
                capacity_bytes_for_gb(gb).map(|b| capacity_blocks_for_bytes(b, block_bytes))
            }
            Self::Blocks(blocks) => Some(blocks),
            Self::Infinite => None,
        }
    }

    /// The order capacity slots are listed in: binary GB ascending, then block counts
    /// ascending, then ∞ (GB and blocks compare only once a lane's `block_bytes` is known, and
    /// lanes may differ).
    #[must_use]
    pub fn display_order(&self, other: &Self) -> std::cmp::Ordering {
        let rank = |capacity: &Self| match capacity {
            Self::Gigabytes(_) => 0,
            Self::Blocks(_) => 1,
            Self::Infinite => 2,
        };
        rank(self)
            .cmp(&rank(other))
            .then_with(|| match (self, other) {
                (Self::Gigabytes(a), Self::Gigabytes(b)) => a.total_cmp(b),
                (Self::Blocks(a), Self::Blocks(b)) => a.cmp(b),
                _ => std::cmp::Ordering::Equal,
            })
    }
}

/// The shared pool's capacity beside `instances` caches of `capacity` each (`--pool`): the
/// blocks they hold together, `instances × capacity.blocks(block_bytes)` (saturating), so the
/// pool and the fleet compare at the same number of cache blocks; `None` = unlimited.
#[must_use]
pub fn pooled_capacity_blocks(capacity: Capacity, block_bytes: u64, instances: u64) -> Option<u64> {
    capacity
        .blocks(block_bytes)
        .map(|blocks| blocks.saturating_mul(instances))
}

impl Capacity {
    /// The order capacity slots are listed in once the block bytes are known (one value for
    /// every lane): by block count, a GB slot and a block slot of the same count GB first,
    /// ∞ last; without it, [`Self::display_order`].
    #[must_use]
    pub fn order_at(&self, other: &Self, block_bytes: Option<u64>) -> std::cmp::Ordering {
        let Some(block_bytes) = block_bytes else {
            return self.display_order(other);
        };
        let blocks = |capacity: &Self| capacity.blocks(block_bytes).unwrap_or(u64::MAX);
        let infinite = |capacity: &Self| matches!(capacity, Self::Infinite);
        infinite(self)
            .cmp(&infinite(other))
            .then_with(|| blocks(self).cmp(&blocks(other)))
            .then_with(|| self.display_order(other))
    }
}

/// Prefix-hit blocks of `fact` at `capacity` for a lane with `block_bytes` per block.
#[must_use]
pub fn project(fact: &RequestFact, capacity: Capacity, block_bytes: u64) -> u64 {
    match capacity.blocks(block_bytes) {
        Some(capacity_blocks) => project_blocks(fact, capacity_blocks),
        None => project_infinite(fact),
    }
}

/// As in summaries and messages: `40 GB`, `1000 blocks`, `∞`.
impl std::fmt::Display for Capacity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Self::Gigabytes(gb) => write!(f, "{gb} GB"),
            Self::Blocks(blocks) => write!(f, "{blocks} blocks"),
            Self::Infinite => f.write_str("∞"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::HitCurveSegment;
    use proptest::prelude::*;

    /// A curve as `hitcore` makes it (gaps between runs), or any runs at all (hand-made).
    fn curves() -> impl Strategy<Value = Vec<HitCurveSegment>> {
        let segment = (0_u64..40, 0_u64..6).prop_map(|(start, run)| HitCurveSegment {
            start_required_blocks: start,
            run_length: run,
        });
        let made = proptest::collection::vec((1_u64..8, 1_u64..6), 0..8).prop_map(|gaps| {
            let mut next_start = 0;
            gaps.into_iter()
                .map(|(gap, run)| {
                    let segment = HitCurveSegment {
                        start_required_blocks: next_start + gap,
                        run_length: run,
                    };
                    next_start = segment.start_required_blocks + run;
                    segment
                })
                .collect()
        });
        prop_oneof![made, proptest::collection::vec(segment, 0..8)]
    }

    proptest! {
        /// The one walk equals a projection per capacity, for any curve and capacities
        /// (u64::MAX included, unlimited last).
        #[test]
        fn one_walk_equals_one_projection_per_capacity(
            hit_curve in curves(),
            mut capacities in proptest::collection::vec(
                prop_oneof![0_u64..60, Just(u64::MAX)], 0..12),
            unlimited in 0_usize..3,
        ) {
            capacities.sort_unstable();
            let capacities: Vec<Option<u64>> = capacities
                .into_iter()
                .map(Some)
                .chain(std::iter::repeat_n(None, unlimited))
                .collect();
            let fact = RequestFact { hit_curve };
            let mut walked = vec![u64::MAX; capacities.len()];
            project_blocks_ascending(&fact, &capacities, &mut walked);
            let mut each = vec![0; capacities.len()];
            project_blocks_each(&fact, &capacities, &mut each);
            let one_by_one: Vec<u64> = capacities
                .iter()
                .map(|capacity| capacity.map_or_else(
                    || project_infinite(&fact),
                    |blocks| project_blocks(&fact, blocks),
                ))
                .collect();
            prop_assert_eq!(&walked, &one_by_one);
            prop_assert_eq!(&each, &one_by_one);
        }
    }

    #[test]
    fn with_known_block_bytes_slots_are_listed_by_block_count() {
        let mut slots = [
            Capacity::Infinite,
            Capacity::Blocks(1000),
            Capacity::Gigabytes(1.0), // 1024 blocks of 1 MiB, 512 of 2 MiB
            Capacity::Blocks(1024),
            Capacity::Blocks(600),
        ];
        slots.sort_by(|a, b| a.order_at(b, Some(1 << 20)));
        assert_eq!(
            slots,
            [
                Capacity::Blocks(600),
                Capacity::Blocks(1000),
                Capacity::Gigabytes(1.0), // the same count: GB first
                Capacity::Blocks(1024),
                Capacity::Infinite,
            ]
        );
        slots.sort_by(|a, b| a.order_at(b, Some(2 << 20)));
        assert_eq!(slots[0], Capacity::Gigabytes(1.0));
        slots.sort_by(|a, b| a.order_at(b, None));
        assert_eq!(slots[0], Capacity::Gigabytes(1.0), "unknown: GB first");
        assert_eq!(slots[1], Capacity::Blocks(600));
    }

    #[test]
    fn slots_are_listed_by_size_gb_before_blocks() {
        let mut slots = [
            Capacity::Blocks(1000),
            Capacity::Gigabytes(80.0),
            Capacity::Infinite,
            Capacity::Blocks(7),
            Capacity::Gigabytes(0.5),
            Capacity::Gigabytes(10.0),
        ];
        slots.sort_by(Capacity::display_order);
        assert_eq!(
            slots,
            [
                Capacity::Gigabytes(0.5),
                Capacity::Gigabytes(10.0),
                Capacity::Gigabytes(80.0),
                Capacity::Blocks(7),
                Capacity::Blocks(1000),
                Capacity::Infinite,
            ]
        );
    }

    fn fact(pairs: &[[u64; 2]]) -> RequestFact {
        RequestFact::from_pairs(pairs)
    }

    #[test]
    fn extreme_values_do_not_overflow() {
        let f = fact(&[[0, 3], [u64::MAX - 1, 5]]);
        assert_eq!(project_blocks(&f, u64::MAX), 3 + 2);
        assert_eq!(project_blocks(&f, 0), 1);
        assert_eq!(f.hit_curve[1].end_required_blocks(), u64::MAX);
    }

    #[test]
    fn capacity_zero_hits_nothing() {
        assert_eq!(project_blocks(&fact(&[[1, 5]]), 0), 0);
    }

    #[test]
    fn empty_curve_hits_nothing() {
        assert_eq!(project_blocks(&fact(&[]), u64::MAX), 0);
        assert_eq!(project_infinite(&fact(&[])), 0);
    }

    #[test]
    fn segment_edges() {
        let f = fact(&[[1, 2], [4, 1]]);
        let expected = [
            (0, 0),
            (1, 1),
            (2, 2),
            (3, 2),
            (4, 3),
            (5, 3),
            (u64::MAX, 3),
        ];
        for (capacity_blocks, hits) in expected {
            assert_eq!(
                project_blocks(&f, capacity_blocks),
                hits,
                "capacity {capacity_blocks}"
            );
        }
        assert_eq!(project_infinite(&f), 3);
    }

    #[test]
    fn partial_run_counts_only_reached_thresholds() {
        let f = fact(&[[3, 10]]);
        assert_eq!(project_blocks(&f, 2), 0);
        assert_eq!(project_blocks(&f, 3), 1);
        assert_eq!(project_blocks(&f, 7), 5);
        assert_eq!(project_blocks(&f, 12), 10);
        assert_eq!(project_blocks(&f, 13), 10);
    }

    #[test]
    fn bytes_floor_to_whole_blocks() {
        let f = fact(&[[1, 2], [4, 1]]);
        assert_eq!(project_bytes(&f, 2048, 1024), 2);
        assert_eq!(project_bytes(&f, 3072, 1024), 2);
        assert_eq!(project_bytes(&f, 4095, 1024), 2, "4095 B is 3 whole blocks");
        assert_eq!(project_bytes(&f, 4096, 1024), 3);
        assert_eq!(project_bytes(&f, 1023, 1024), 0);
    }

    #[test]
    fn gigabytes_are_binary_and_negative_is_infinite() {
        assert_eq!(capacity_bytes_for_gb(1.0), Some(1 << 30));
        assert_eq!(capacity_bytes_for_gb(0.5), Some(1 << 29));
        assert_eq!(capacity_bytes_for_gb(-1.0), None);
        assert_eq!(capacity_bytes_for_gb(-0.0), Some(0));
        assert_eq!(Capacity::from_gb(-3.0), Capacity::Infinite);
        let f = fact(&[[1, 2], [4, 1]]);
        assert_eq!(
            project(
                &f,
                Capacity::Gigabytes(3.0 * 1024.0 / f64::from(1u32 << 30)),
                1024
            ),
            2
        );
        assert_eq!(project(&f, Capacity::Blocks(4), 1024), 3);
        assert_eq!(project(&f, Capacity::Infinite, 1024), 3);
    }
}
