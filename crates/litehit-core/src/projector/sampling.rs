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

/// `0, 1, …, last` spaced evenly on a log axis: `per_doubling` capacities per doubling
/// (rounded to whole blocks, without duplicates), `last` included: the capacities a chart
/// with a log capacity axis (the live monitor's) reads a curve at, so small capacities are
/// as finely sampled as large ones.
pub fn log_spaced(last: u64, per_doubling: u32) -> impl Iterator<Item = u64> {
    let per_doubling = f64::from(per_doubling.max(1));
    let mut previous: Option<u64> = None;
    let mut step = 0_u32;
    std::iter::from_fn(move || {
        loop {
            if previous == Some(last) {
                return None;
            }
            let value = if previous.is_none() {
                0
            } else {
                let exponent = f64::from(step) / per_doubling;
                step += 1;
                #[expect(
                    clippy::cast_possible_truncation,
                    clippy::cast_sign_loss,
                    reason = "a capacity in blocks, clamped to `last`"
                )]
                let value = exponent.exp2().round() as u64;
                value.min(last)
            };
            if previous.is_some_and(|p| value <= p) {
                continue;
            }
            previous = Some(value);
            return Some(value);
        }
    })
}

/// A curve as `(capacity_blocks, hit_blocks)` points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampledCurve {
    /// Whether the points are the curve's own breakpoints (linear in between, so the curve
    /// is drawn exactly), rather than evenly spaced samples.
    pub exact_breakpoints: bool,
    /// `(capacity_blocks, hit_blocks)`, by increasing capacity.
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
    fn log_spaced_doubles_evenly_and_ends_at_last() {
        assert_eq!(log_spaced(8, 1).collect::<Vec<_>>(), [0, 1, 2, 4, 8]);
        assert_eq!(log_spaced(0, 4).collect::<Vec<_>>(), [0]);
        assert_eq!(log_spaced(5, 1).collect::<Vec<_>>(), [0, 1, 2, 4, 5]);
        let fine: Vec<u64> = log_spaced(1 << 20, 8).collect();
        assert_eq!(fine.last(), Some(&(1 << 20)));
        assert!(fine.windows(2).all(|w| w[0] < w[1]));
        // 8 per doubling: 2^19..2^20 holds 8 samples (the last one included).
        assert_eq!(fine.iter().filter(|&&c| c > 1 << 19).count(), 8);
        assert_eq!(log_spaced(u64::MAX, 1).count(), 66);
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
