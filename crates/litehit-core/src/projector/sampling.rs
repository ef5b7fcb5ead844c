//! The one curve sampler: which capacities a hits-vs-capacity curve is shown at, for `mrc`'s
//! table and JSON, its plots and the live monitor's chart. Every value at a sampled capacity
//! is exact (read from the [`CapacityAxisAccumulator`]); sampling only chooses where to look.

use super::CapacityAxisAccumulator;

/// `0, …, last` in `count` (at least two) near-even integer steps, without duplicates: the
/// capacities a curve, a table or a plot's pixel columns are read at.
pub fn evenly_spaced(last: u64, count: usize) -> impl Iterator<Item = u64> {
    let steps = u128::try_from(count.max(2) - 1).unwrap_or(u128::MAX);
    let mut previous = None;
    (0..=steps).filter_map(move |step| {
        let value = u64::try_from(u128::from(last) * step / steps).unwrap_or(u64::MAX);
        if previous == Some(value) {
            return None;
        }
        previous = Some(value);
        Some(value)
    })
}

/// A curve as `(capacity_blocks, hit_blocks)` points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampledCurve {
    /// Whether the points are the curve's own breakpoints (linear in between, so the curve
    /// is drawn exactly), rather than evenly spaced samples.
    pub exact_breakpoints: bool,
    pub points: Vec<(u64, u64)>,
}

/// The curve of `hits` from capacity 0 to its saturation point: its exact breakpoints when
/// there are at most `max_points` (at least 2), else `max_points` evenly spaced capacities.
#[must_use]
pub fn sample_curve(hits: &CapacityAxisAccumulator, max_points: usize) -> SampledCurve {
    let breakpoints = hits.curve_points();
    if breakpoints.len() <= max_points.max(2) {
        return SampledCurve {
            exact_breakpoints: true,
            points: breakpoints,
        };
    }
    SampledCurve {
        exact_breakpoints: false,
        points: sample_at(
            hits,
            evenly_spaced(hits.saturation_capacity_blocks(), max_points),
        ),
    }
}

/// `hits` read at each of `capacities` (blocks).
pub fn sample_at(
    hits: &CapacityAxisAccumulator,
    capacities: impl IntoIterator<Item = u64>,
) -> Vec<(u64, u64)> {
    capacities
        .into_iter()
        .map(|capacity_blocks| (capacity_blocks, hits.hit_blocks_at(capacity_blocks)))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::facts::RequestFact;

    #[test]
    fn evenly_spaced_covers_both_ends_without_duplicates() {
        assert_eq!(evenly_spaced(10, 3).collect::<Vec<_>>(), [0, 5, 10]);
        assert_eq!(evenly_spaced(2, 5).collect::<Vec<_>>(), [0, 1, 2]);
        assert_eq!(evenly_spaced(0, 4).collect::<Vec<_>>(), [0]);
        assert_eq!(
            evenly_spaced(u64::MAX, 2).collect::<Vec<_>>(),
            [0, u64::MAX]
        );
    }

    #[test]
    fn samples_are_exact_and_breakpoints_used_when_few() {
        let mut hits = CapacityAxisAccumulator::new();
        for pairs in [[[1_u64, 5_u64]], [[3, 40]]] {
            hits.add_fact(&RequestFact::from_pairs(&pairs));
        }
        let exact = sample_curve(&hits, 100);
        assert!(exact.exact_breakpoints);
        assert_eq!(exact.points, hits.curve_points());
        let sampled = sample_curve(&hits, 3);
        assert!(!sampled.exact_breakpoints);
        let saturation = hits.saturation_capacity_blocks();
        assert_eq!(sampled.points.len(), 3);
        assert_eq!(sampled.points.last().map(|p| p.0), Some(saturation));
        for (capacity, hit_blocks) in sampled.points {
            assert_eq!(hit_blocks, hits.hit_blocks_at(capacity));
        }
    }
}
