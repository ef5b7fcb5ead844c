//! Cache tiers (HBM → DRAM → SSD / remote pool) from the same facts: which tier serves each
//! prefix-hit block.
//!
//! A tier is a capacity band of the hit curve: it serves `H(upper) − H(below)`, the hit
//! blocks whose threshold `t` lies in `(below, upper]` ([`TierBand`]).
//!
//! - **Exclusive** (an LRU hierarchy: a tier's evictions are demoted to the next tier, a hit
//!   is promoted to the top): the tiers together are one LRU stack cut into consecutive
//!   pieces, so tier `i` serves `H(C1+…+Ci) − H(C1+…+Ci−1)`, in the order given (top first).
//! - **Inclusive** (each tier an LRU of its own size over the same accesses, a larger tier
//!   holding a superset): tiers sorted by size, tier `i` serves `H(Ci) − H(Ci−1)`; ties go
//!   to the tier given first.
//!
//! Exact under the key contract: a parent block is always more recent than its child, so a
//! request's prefix is ordered by stack depth and the block at depth `d` is hit by exactly
//! the tiers whose reach is at least `d` (its own depth is its threshold). Off the contract
//! the projection is a bound, as every projection is.

use super::{Capacity, CapacityAxisAccumulator, project_blocks, project_infinite};
use crate::facts::RequestFact;

/// How the tiers relate.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum TierMode {
    /// An LRU hierarchy (demote on evict, promote on hit): capacities add up.
    #[default]
    Exclusive,
    /// Independent LRUs of each size over the same accesses.
    Inclusive,
}

/// Named cache tiers as typed (`--tiers hbm=80GB,dram=512GB`), top first, and how they
/// relate: what `query`, `mrc` and `watch` split the hits among.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TierPlan {
    /// Name of each tier, top first (`tier1`, `tier2`, … when none was typed).
    pub names: Vec<String>,
    /// Each tier's size as typed, echoed in `tier_sizes`.
    pub sizes_text: Vec<String>,
    pub capacities: Vec<Capacity>,
    pub mode: TierMode,
}

impl TierPlan {
    /// The band of each tier for a lane with `block_bytes` per block ([`tier_bands`]).
    #[must_use]
    pub fn bands(&self, block_bytes: u64) -> Vec<TierBand> {
        tier_bands(&self.capacities, block_bytes, self.mode)
    }

    /// `exclusive` or `inclusive`.
    #[must_use]
    pub fn mode_name(&self) -> &'static str {
        match self.mode {
            TierMode::Exclusive => "exclusive",
            TierMode::Inclusive => "inclusive",
        }
    }
}

/// How far a cache reaches along the capacity axis, in blocks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Reach {
    /// No cache at all: hits nothing (not even a hand-made threshold 0).
    Nothing,
    /// A cache of this many blocks.
    Blocks(u64),
    /// Unlimited.
    Unlimited,
}

impl Reach {
    /// The reach of `capacity` for a lane with `block_bytes` per block.
    #[must_use]
    pub fn of(capacity: Capacity, block_bytes: u64) -> Self {
        capacity
            .blocks(block_bytes)
            .map_or(Self::Unlimited, Self::Blocks)
    }

    /// Two caches stacked: their capacities add (saturating).
    #[must_use]
    pub fn plus(self, other: Self) -> Self {
        match (self, other) {
            (Self::Unlimited, _) | (_, Self::Unlimited) => Self::Unlimited,
            (Self::Nothing, reach) | (reach, Self::Nothing) => reach,
            (Self::Blocks(a), Self::Blocks(b)) => Self::Blocks(a.saturating_add(b)),
        }
    }

    /// Prefix-hit blocks of `fact` in a cache of this reach.
    #[must_use]
    pub fn project(self, fact: &RequestFact) -> u64 {
        match self {
            Self::Nothing => 0,
            Self::Blocks(capacity_blocks) => project_blocks(fact, capacity_blocks),
            Self::Unlimited => project_infinite(fact),
        }
    }

    /// Cumulative hit blocks of `accumulator` in a cache of this reach.
    #[must_use]
    pub fn accumulated(self, accumulator: &CapacityAxisAccumulator) -> u64 {
        match self {
            Self::Nothing => 0,
            Self::Blocks(capacity_blocks) => accumulator.hit_blocks_at(capacity_blocks),
            Self::Unlimited => accumulator.infinite_hit_blocks(),
        }
    }
}

/// The band of the capacity axis one tier serves: thresholds in `(below, upper]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TierBand {
    pub below: Reach,
    pub upper: Reach,
}

/// The band of each tier (in the order given) for a lane with `block_bytes` per block.
#[must_use]
pub fn tier_bands(tiers: &[Capacity], block_bytes: u64, mode: TierMode) -> Vec<TierBand> {
    let reaches: Vec<Reach> = tiers
        .iter()
        .map(|&capacity| Reach::of(capacity, block_bytes))
        .collect();
    match mode {
        TierMode::Exclusive => {
            let mut below = Reach::Nothing;
            reaches
                .iter()
                .map(|&reach| {
                    let upper = below.plus(reach);
                    let band = TierBand { below, upper };
                    below = upper;
                    band
                })
                .collect()
        }
        TierMode::Inclusive => {
            let mut order: Vec<usize> = (0..reaches.len()).collect();
            order.sort_by_key(|&index| (reaches[index], index));
            let mut bands = vec![
                TierBand {
                    below: Reach::Nothing,
                    upper: Reach::Nothing,
                };
                reaches.len()
            ];
            let mut below = Reach::Nothing;
            for index in order {
                bands[index] = TierBand {
                    below,
                    upper: reaches[index],
                };
                below = reaches[index];
            }
            bands
        }
    }
}

/// Hit blocks of `fact` served by each tier: `hit_blocks[i]` for `bands[i]`. The misses are
/// the request's blocks minus the sum.
pub fn project_tiers(fact: &RequestFact, bands: &[TierBand], hit_blocks: &mut [u64]) {
    // A band's lower edge is usually the previous band's upper one (always for exclusive
    // tiers): that projection is reused instead of walking the curve again.
    let mut previous: Option<(Reach, u64)> = None;
    for (hits, band) in hit_blocks.iter_mut().zip(bands) {
        let below = match previous {
            Some((reach, projected)) if reach == band.below => projected,
            _ => band.below.project(fact),
        };
        let upper = band.upper.project(fact);
        // `upper ≥ below` by construction, and projections are monotone in the reach.
        *hits = upper - below;
        previous = Some((band.upper, upper));
    }
}

/// Cumulative hit blocks served by each tier over every fact in `accumulator`.
#[must_use]
pub fn accumulated_tier_hit_blocks(
    accumulator: &CapacityAxisAccumulator,
    bands: &[TierBand],
) -> Vec<u64> {
    bands
        .iter()
        .map(|band| {
            band.upper
                .accumulated(accumulator)
                .wrapping_sub(band.below.accumulated(accumulator))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiers(bands: &[TierBand], fact: &RequestFact) -> Vec<u64> {
        let mut hits = vec![0; bands.len()];
        project_tiers(fact, bands, &mut hits);
        hits
    }

    #[test]
    fn exclusive_tiers_add_their_capacities() {
        let fact = RequestFact::from_pairs(&[[1, 3], [6, 4]]);
        // Thresholds 1 2 3 6 7 8 9: tiers of 2, 4, 2 blocks reach 2, 6, 8.
        let bands = tier_bands(
            &[
                Capacity::Blocks(2),
                Capacity::Blocks(4),
                Capacity::Blocks(2),
            ],
            1,
            TierMode::Exclusive,
        );
        assert_eq!(
            bands.iter().map(|b| b.upper).collect::<Vec<_>>(),
            [Reach::Blocks(2), Reach::Blocks(6), Reach::Blocks(8)]
        );
        assert_eq!(tiers(&bands, &fact), [2, 2, 2]);
    }

    #[test]
    fn inclusive_tiers_are_sorted_by_size_and_ties_go_first() {
        let fact = RequestFact::from_pairs(&[[1, 3], [6, 4]]);
        let bands = tier_bands(
            &[
                Capacity::Blocks(8),
                Capacity::Blocks(2),
                Capacity::Blocks(2),
                Capacity::Infinite,
            ],
            1,
            TierMode::Inclusive,
        );
        assert_eq!(tiers(&bands, &fact), [4, 2, 0, 1]);
    }

    #[test]
    fn a_tier_after_an_unlimited_one_serves_nothing() {
        let fact = RequestFact::from_pairs(&[[0, 2], [5, 1]]);
        let bands = tier_bands(
            &[Capacity::Infinite, Capacity::Blocks(3)],
            1,
            TierMode::Exclusive,
        );
        // The hand-made threshold 0 is served by the first tier, not lost to `Nothing`.
        assert_eq!(tiers(&bands, &fact), [3, 0]);
    }

    #[test]
    fn gigabyte_tiers_floor_per_lane_and_the_accumulator_agrees() {
        let facts = [
            RequestFact::from_pairs(&[[1, 5]]),
            RequestFact::from_pairs(&[[2, 2], [9, 3]]),
        ];
        let gib = 1_u64 << 30;
        let bands = tier_bands(
            &[Capacity::Gigabytes(1.0), Capacity::Gigabytes(2.0)],
            gib / 2,
            TierMode::Exclusive,
        );
        assert_eq!(bands[1].upper, Reach::Blocks(6));
        let mut accumulator = CapacityAxisAccumulator::new();
        let mut summed = vec![0; 2];
        for fact in &facts {
            accumulator.add_fact(fact);
            for (sum, hits) in summed.iter_mut().zip(tiers(&bands, fact)) {
                *sum += hits;
            }
        }
        assert_eq!(summed, [2 + 1, 3 + 1]);
        assert_eq!(accumulated_tier_hit_blocks(&accumulator, &bands), summed);
    }
}
