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

use super::{
    Capacity, CapacityAxisAccumulator, pooled_capacity_blocks, project_blocks, project_infinite,
};
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
    /// Each tier's size, top first.
    pub capacities: Vec<Capacity>,
    /// How the tiers relate: a hierarchy whose capacities add up, or independent LRUs.
    pub mode: TierMode,
}

/// Inclusive tiers whose order cannot be right (`--tiers 40GB,10GB --tier-mode inclusive`):
/// a lower tier holds a superset of the one above, so it must be larger.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TierOrderError {
    /// With inclusive tiers a lower tier holds the one above, so it must be larger.
    #[error(
        "inclusive tiers must grow top first (a lower tier holds a superset of the one above): \
         {lower} ({lower_size}) is not larger than {upper} ({upper_size}) above it; list them \
         smallest first, or use --tier-mode exclusive"
    )]
    NotLarger {
        /// The upper tier's name.
        upper: String,
        /// Its size as typed.
        upper_size: String,
        /// The lower tier's name.
        lower: String,
        /// Its size as typed.
        lower_size: String,
    },
    /// A GB size next to a block count: which is larger depends on each lane's block bytes,
    /// so the order could be right for one lane and wrong for another.
    #[error(
        "inclusive tiers must be sized in one unit, so their order can be checked: {upper} \
         ({upper_size}) and {lower} ({lower_size}) compare only through each instance's \
         block bytes; give both in GB/TB or both in blocks"
    )]
    MixedUnits {
        /// The upper tier's name.
        upper: String,
        /// Its size as typed.
        upper_size: String,
        /// The lower tier's name.
        lower: String,
        /// Its size as typed.
        lower_size: String,
    },
}

/// Whether `lower` is surely larger than `upper` (`None`: not comparable without the block
/// bytes, a GB size against a block count).
fn surely_larger(lower: Capacity, upper: Capacity) -> Option<bool> {
    match (upper, lower) {
        (Capacity::Infinite, _) => Some(false),
        (_, Capacity::Infinite) => Some(true),
        (Capacity::Gigabytes(upper), Capacity::Gigabytes(lower)) => Some(lower > upper),
        (Capacity::Blocks(upper), Capacity::Blocks(lower)) => Some(lower > upper),
        (Capacity::Gigabytes(_), Capacity::Blocks(_))
        | (Capacity::Blocks(_), Capacity::Gigabytes(_)) => None,
    }
}

impl TierPlan {
    /// The one check of a plan, for `query`, `mrc` and `watch` alike: inclusive tiers must
    /// grow strictly top first, sized in one unit (a GB size next to a block count compares
    /// only through each lane's block bytes, so it is refused rather than sorted per lane);
    /// `inf` goes last. Exclusive tiers may take any sizes: a small tier under a large one is
    /// odd but a valid hierarchy.
    pub fn check(&self) -> Result<(), TierOrderError> {
        if self.mode == TierMode::Exclusive {
            return Ok(());
        }
        for lower in 1..self.capacities.len() {
            let upper = lower - 1;
            let (upper_name, upper_size) = (&self.names[upper], &self.sizes_text[upper]);
            let (lower_name, lower_size) = (&self.names[lower], &self.sizes_text[lower]);
            match surely_larger(self.capacities[lower], self.capacities[upper]) {
                Some(true) => {}
                Some(false) => {
                    return Err(TierOrderError::NotLarger {
                        upper: upper_name.clone(),
                        upper_size: upper_size.clone(),
                        lower: lower_name.clone(),
                        lower_size: lower_size.clone(),
                    });
                }
                None => {
                    return Err(TierOrderError::MixedUnits {
                        upper: upper_name.clone(),
                        upper_size: upper_size.clone(),
                        lower: lower_name.clone(),
                        lower_size: lower_size.clone(),
                    });
                }
            }
        }
        Ok(())
    }

    /// The band of each tier for a lane with `block_bytes` per block ([`tier_bands`]).
    #[must_use]
    pub fn bands(&self, block_bytes: u64) -> Vec<TierBand> {
        tier_bands(&self.capacities, block_bytes, self.mode)
    }

    /// Each tier at `instances` × its size in blocks (`None`: unlimited): the shared pool's
    /// tiers, at the same total capacity as the `instances` caches' tiers.
    #[must_use]
    pub fn pooled_capacity_blocks(&self, block_bytes: u64, instances: u64) -> Vec<Option<u64>> {
        self.capacities
            .iter()
            .map(|&capacity| pooled_capacity_blocks(capacity, block_bytes, instances))
            .collect()
    }

    /// The bands of the tiers at `instances` × each size, on the pool lane's own capacity
    /// axis ([`Self::pooled_capacity_blocks`]).
    #[must_use]
    pub fn pooled_bands(&self, block_bytes: u64, instances: u64) -> Vec<TierBand> {
        let pooled: Vec<Capacity> = self
            .pooled_capacity_blocks(block_bytes, instances)
            .into_iter()
            .map(|blocks| blocks.map_or(Capacity::Infinite, Capacity::Blocks))
            .collect();
        tier_bands(&pooled, block_bytes, self.mode)
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
    /// Where the band starts: hits within this reach are served in front of the tier.
    pub below: Reach,
    /// Where the band ends: the reach the tier adds its hits up to.
    pub upper: Reach,
}

impl TierBand {
    /// Whether the hits this tier serves are only a lower bound under a memory horizon of
    /// `horizon_blocks` (`None`: no horizon, exact): when the band's upper edge lies above
    /// the horizon.
    ///
    /// Why a lower bound, and not a difference of two bounds of unknown sign: a horizon only
    /// turns hits into misses (a key deeper than it is forgotten, so a block with threshold
    /// `t > horizon` reads as a miss), and never changes the threshold of a block it keeps
    /// (the kept keys are the most recent ones, so their stack depths are exact). The hits
    /// counted in a band `(below, upper]` are therefore a subset of the true ones: exactly
    /// those with `t ≤ min(upper, horizon)`. Every band is a lower bound, exact when
    /// `upper ≤ horizon`; a band entirely above the horizon reads (about) 0 served; the
    /// tiers together are a lower bound and the miss share an upper one.
    #[must_use]
    pub fn is_lower_bound(&self, horizon_blocks: Option<u64>) -> bool {
        horizon_blocks.is_some_and(|horizon| self.upper > Reach::Blocks(horizon))
    }
}

/// Whether the miss share (what no tier served) is only an upper bound, given each tier's
/// [`TierBand::is_lower_bound`]: when some tier is a lower bound. The one rule for every
/// surface (the live snapshot's lanes and totals, headless).
#[must_use]
pub fn miss_is_upper_bound(tier_lower_bounds: &[bool]) -> bool {
    tier_lower_bounds.contains(&true)
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

    fn plan(sizes: &[(&str, Capacity)], mode: TierMode) -> TierPlan {
        TierPlan {
            names: (1..=sizes.len()).map(|i| format!("tier{i}")).collect(),
            sizes_text: sizes.iter().map(|(text, _)| (*text).to_owned()).collect(),
            capacities: sizes.iter().map(|&(_, capacity)| capacity).collect(),
            mode,
        }
    }

    #[test]
    fn inclusive_tiers_must_grow_top_first_and_exclusive_ones_may_not() {
        let shrinking = [
            ("40GB", Capacity::Gigabytes(40.0)),
            ("10GB", Capacity::Gigabytes(10.0)),
        ];
        let error = plan(&shrinking, TierMode::Inclusive).check().unwrap_err();
        assert!(
            matches!(&error, TierOrderError::NotLarger { lower, .. } if lower == "tier2"),
            "{error:?}"
        );
        assert!(error.to_string().contains("tier2 (10GB)"), "{error}");
        assert_eq!(plan(&shrinking, TierMode::Exclusive).check(), Ok(()));
        let equal = [("8b", Capacity::Blocks(8)), ("8b", Capacity::Blocks(8))];
        assert!(plan(&equal, TierMode::Inclusive).check().is_err());
        let after_unlimited = [("inf", Capacity::Infinite), ("8b", Capacity::Blocks(8))];
        assert!(plan(&after_unlimited, TierMode::Inclusive).check().is_err());
        let growing = [
            ("1GB", Capacity::Gigabytes(1.0)),
            ("2GB", Capacity::Gigabytes(2.0)),
            ("inf", Capacity::Infinite),
        ];
        assert_eq!(plan(&growing, TierMode::Inclusive).check(), Ok(()));
        let growing_blocks = [("8b", Capacity::Blocks(8)), ("9b", Capacity::Blocks(9))];
        assert_eq!(plan(&growing_blocks, TierMode::Inclusive).check(), Ok(()));
        // A block count next to a GB size compares only through the block bytes.
        let mixed = [
            ("8b", Capacity::Blocks(8)),
            ("1GB", Capacity::Gigabytes(1.0)),
        ];
        assert!(matches!(
            plan(&mixed, TierMode::Inclusive).check(),
            Err(TierOrderError::MixedUnits { .. })
        ));
        assert_eq!(plan(&mixed, TierMode::Exclusive).check(), Ok(()));
    }

    #[test]
    fn a_band_above_the_horizon_is_a_lower_bound_and_so_makes_the_misses_an_upper_one() {
        let bands = tier_bands(
            &[Capacity::Blocks(2), Capacity::Blocks(4), Capacity::Infinite],
            1,
            TierMode::Exclusive,
        );
        let marks = |horizon| {
            bands
                .iter()
                .map(|band| band.is_lower_bound(horizon))
                .collect::<Vec<_>>()
        };
        assert_eq!(marks(None), [false, false, false]);
        assert_eq!(marks(Some(6)), [false, false, true]);
        assert_eq!(marks(Some(5)), [false, true, true]);
        assert!(miss_is_upper_bound(&marks(Some(6))));
        assert!(!miss_is_upper_bound(&marks(Some(6))[..2]));
        assert!(!miss_is_upper_bound(&marks(None)));
    }

    #[test]
    fn pooled_bands_are_the_bands_of_n_times_each_tier() {
        let tiers = plan(
            &[
                ("2b", Capacity::Blocks(2)),
                ("1GB", Capacity::Gigabytes(1.0)),
            ],
            TierMode::Exclusive,
        );
        let gib = 1_u64 << 30;
        assert_eq!(
            tiers.pooled_capacity_blocks(gib / 4, 3),
            [Some(6), Some(12)]
        );
        assert_eq!(
            tiers
                .pooled_bands(gib / 4, 3)
                .iter()
                .map(|band| band.upper)
                .collect::<Vec<_>>(),
            [Reach::Blocks(6), Reach::Blocks(18)]
        );
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
