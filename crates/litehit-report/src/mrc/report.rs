//! The report of `litehit mrc`: per instance the ceiling, knees, saturation and the curve
//! (exact breakpoints or an exact sample), the total's equal-share knees, the shared pool at
//! N × C beside the instances' caches, and the implausible KV sizes; plus the exact hits at
//! any sampled sizes, for a plot.

use serde::Serialize;

use super::KNEE_PERCENTS;
use super::curves::{Curve, CurvePoint, InstanceCurve, MrcCurves, TotalPoint};
use crate::ratio;
use litehit_core::projector;
use litehit_core::projector::sampling::evenly_spaced;

impl MrcCurves {
    /// The full report; curves hold at most `max_curve_points` points each (exact
    /// breakpoints when there are no more than that).
    #[must_use]
    pub fn report(&self, max_curve_points: usize) -> MrcReport {
        let instances: Vec<InstanceReport> = self
            .instances
            .iter()
            .map(|curve| single_report(curve, max_curve_points))
            .collect();
        let infinite_hit_tokens = self.total_infinite_hit_tokens();
        let infinite_hit_rate = ratio(infinite_hit_tokens, self.total_input_tokens());
        let saturation_bytes = self.total_saturation_bytes();
        let total = TotalReport {
            requests: self.requests(),
            total_input_tokens: self.total_input_tokens(),
            shared_block_bytes: self.shared_block_bytes(),
            infinite_hit_tokens,
            infinite_hit_rate,
            saturation: self.total_point(saturation_bytes),
            knees: KNEE_PERCENTS
                .iter()
                .map(|&percent| TotalKnee {
                    percent,
                    target_hit_rate: infinite_hit_rate * f64::from(percent) / 100.0,
                    point: self.total_point(self.total_knee_bytes(percent)),
                })
                .collect(),
            curve: self.total_curve(saturation_bytes, max_curve_points),
        };
        let pool = self
            .pool
            .as_ref()
            .map(|pool| self.pool_report(pool, &total, max_curve_points));
        let kv_size_warnings =
            litehit_core::config::ImplausibleKvSize::distinct(instances.iter().map(
                |instance: &InstanceReport| (instance.block_bytes, instance.block_size_tokens),
            ))
            .iter()
            .map(KvSizeWarning::from)
            .collect();
        MrcReport {
            knee_percents: KNEE_PERCENTS.to_vec(),
            instances,
            total,
            pool,
            kv_size_warnings,
        }
    }

    /// The pool's own curve (x: its capacity, which is the fleet's total capacity) and, at
    /// each point of the total's curve (every instance with C) and its knees, the pool at
    /// the same total capacity N × C (when the pool and the instances share `block_bytes`).
    fn pool_report(
        &self,
        pool: &InstanceCurve,
        total: &TotalReport,
        max_curve_points: usize,
    ) -> PoolReport {
        let instances = self.instances.len() as u64;
        let shared = self
            .shared_block_bytes()
            .filter(|&block_bytes| block_bytes == pool.block_bytes);
        let at = |point: &TotalPoint| {
            let per_instance_capacity_blocks = point.capacity_blocks?;
            shared?;
            let pool_point = pool.point(
                projector::pooled_capacity_blocks(
                    projector::Capacity::Blocks(per_instance_capacity_blocks),
                    pool.block_bytes,
                    instances,
                )
                .unwrap_or(u64::MAX),
            );
            Some(PoolPoint {
                per_instance_capacity_blocks,
                per_instance_capacity_gb: point.capacity_gb,
                total_capacity_blocks: pool_point.capacity_blocks,
                total_capacity_bytes: pool_point.capacity_bytes,
                total_capacity_gb: pool_point.capacity_gb,
                per_instance_hit_tokens: point.hit_tokens,
                per_instance_hit_rate: point.hit_rate,
                pool_hit_tokens: pool_point.hit_tokens,
                pool_hit_rate: pool_point.hit_rate,
            })
        };
        let comparison = shared.map(|_| PoolComparison {
            knees: total
                .knees
                .iter()
                .filter_map(|knee| {
                    at(&knee.point).map(|point| PoolKnee {
                        percent: knee.percent,
                        point,
                    })
                })
                .collect(),
            curve: total.curve.points.iter().filter_map(at).collect(),
        });
        PoolReport {
            instance_id: pool.instance_id.clone(),
            instances,
            own: single_report(pool, max_curve_points),
            comparison,
        }
    }

    /// The total's curve up to `saturation_bytes`. When every instance has the same
    /// `block_bytes`, the total is piecewise linear in whole blocks with corners only where
    /// some instance's curve has one, so those corners are the exact curve (if there are at
    /// most `max_points`). Otherwise — too many corners, or instances whose caches floor
    /// bytes to different block sizes (a staircase with a step at every multiple of each
    /// size) — `max_points` evenly spaced sizes, each value exact.
    fn total_curve(&self, saturation_bytes: u64, max_points: usize) -> Curve<TotalPoint> {
        if let Some(block_bytes) = self.shared_block_bytes().filter(|&b| b > 0) {
            let saturation_blocks =
                litehit_core::projector::capacity_blocks_for_bytes(saturation_bytes, block_bytes);
            let mut corners: Vec<u64> = self
                .instances
                .iter()
                .flat_map(|instance| instance.hits.curve_points())
                .map(|(capacity_blocks, _)| capacity_blocks.min(saturation_blocks))
                .chain([0, saturation_blocks])
                .collect();
            corners.sort_unstable();
            corners.dedup();
            if corners.len() <= max_points.max(2) {
                return Curve {
                    exact_breakpoints: true,
                    points: corners
                        .into_iter()
                        .map(|blocks| self.total_point(blocks * block_bytes))
                        .collect(),
                };
            }
        }
        Curve {
            exact_breakpoints: false,
            points: evenly_spaced(saturation_bytes, max_points.max(2))
                .map(|bytes| self.total_point(bytes))
                .collect(),
        }
    }

    /// The exact hit rates at each of `sample_bytes` (a per-instance cache size, in bytes):
    /// every instance's own, the total's (every instance with its own cache of that size),
    /// and the shared pool's at N × that size (when it shares the instances' `block_bytes`,
    /// as [`PoolReport::comparison`]). What a plot draws, one sample per pixel.
    #[must_use]
    pub fn sample_hit_rates(&self, sample_bytes: &[u64]) -> SampledHits {
        let instances = self
            .instances
            .iter()
            .map(|curve| {
                sample_bytes
                    .iter()
                    .map(|&bytes| {
                        let hit_tokens = curve
                            .hit_blocks_at_bytes(bytes)
                            .wrapping_mul(curve.block_size_tokens);
                        ratio(hit_tokens, curve.total_input_tokens)
                    })
                    .collect()
            })
            .collect();
        let total_input_tokens = self.total_input_tokens();
        let total = sample_bytes
            .iter()
            .map(|&bytes| ratio(self.total_hit_tokens_at_bytes(bytes), total_input_tokens))
            .collect();
        let shared_by = self.instances.len() as u64;
        let pool = self
            .pool
            .as_ref()
            .filter(|pool| self.shared_block_bytes() == Some(pool.block_bytes))
            .map(|pool| {
                sample_bytes
                    .iter()
                    .map(|&bytes| {
                        let per_instance =
                            projector::capacity_blocks_for_bytes(bytes, pool.block_bytes);
                        let blocks = projector::pooled_capacity_blocks(
                            projector::Capacity::Blocks(per_instance),
                            pool.block_bytes,
                            shared_by,
                        )
                        .unwrap_or(u64::MAX);
                        let hit_tokens = pool
                            .hits
                            .hit_blocks_at(blocks)
                            .wrapping_mul(pool.block_size_tokens);
                        ratio(hit_tokens, pool.total_input_tokens)
                    })
                    .collect()
            });
        SampledHits {
            instances,
            total,
            pool,
        }
    }
}

/// One curve's report (an instance, or the pool on its own).
fn single_report(curve: &InstanceCurve, max_curve_points: usize) -> InstanceReport {
    let infinite_hit_blocks = curve.hits.infinite_hit_blocks();
    let infinite_hit_tokens = infinite_hit_blocks.wrapping_mul(curve.block_size_tokens);
    let infinite_hit_rate = ratio(infinite_hit_tokens, curve.total_input_tokens);
    InstanceReport {
        instance_id: curve.instance_id.clone(),
        requests: curve.requests,
        total_input_tokens: curve.total_input_tokens,
        block_size_tokens: curve.block_size_tokens,
        block_bytes: curve.block_bytes,
        infinite_hit_blocks,
        infinite_hit_tokens,
        infinite_hit_rate,
        saturation: curve.point(curve.hits.saturation_capacity_blocks()),
        knees: KNEE_PERCENTS
            .iter()
            .map(|&percent| Knee {
                percent,
                target_hit_rate: infinite_hit_rate * f64::from(percent) / 100.0,
                point: curve.point(curve.knee_capacity_blocks(percent)),
            })
            .collect(),
        curve: curve.curve(max_curve_points),
    }
}

/// `litehit mrc --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MrcReport {
    /// [`KNEE_PERCENTS`].
    pub knee_percents: Vec<u32>,
    /// In byte order of `instance_id`.
    pub instances: Vec<InstanceReport>,
    /// Every instance with its own cache of one size, summed.
    pub total: TotalReport,
    /// Only when the facts have a shared pool lane (`replay --pool`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pool: Option<PoolReport>,
    /// Each distinct implausible KV size per token among the instances (the core's rule,
    /// `ImplausibleKvSize`), in first-seen order; left out when there is none. The table
    /// prints these same warnings under it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub kv_size_warnings: Vec<KvSizeWarning>,
}

/// One implausible KV size per token: the geometry and the warning's text.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct KvSizeWarning {
    /// Bytes per block.
    pub block_bytes: u64,
    /// Tokens per block.
    pub block_size_tokens: u64,
    /// `block_bytes / block_size_tokens`.
    pub kv_bytes_per_token: f64,
    /// The warning as stderr and the table print it (without `warning: `).
    pub message: String,
}

impl From<&litehit_core::config::ImplausibleKvSize> for KvSizeWarning {
    fn from(warning: &litehit_core::config::ImplausibleKvSize) -> Self {
        let kv_bytes_per_token = warning.block_bytes as f64 / warning.block_size_tokens as f64;
        Self {
            block_bytes: warning.block_bytes,
            block_size_tokens: warning.block_size_tokens,
            kv_bytes_per_token,
            message: warning.to_string(),
        }
    }
}

/// The shared pool lane: its own curve (capacity = the pool's, i.e. the fleet's total) and
/// the comparison with the instances' own caches at the same total capacity.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PoolReport {
    /// The pool lane's `instance_id`.
    pub instance_id: String,
    /// N: the instances the pool is shared by.
    pub instances: u64,
    /// The pool as one more curve, x = its (total) capacity.
    pub own: InstanceReport,
    /// `None` when the pool and the instances do not share one `block_bytes`.
    pub comparison: Option<PoolComparison>,
}

/// The pool at N × C beside N caches of C each, at the total curve's knees and points.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PoolComparison {
    /// At the total's knees.
    pub knees: Vec<PoolKnee>,
    /// At each point of the total's curve.
    pub curve: Vec<PoolPoint>,
}

/// At the total's p% knee C.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PoolKnee {
    /// The knee level.
    pub percent: u32,
    #[serde(flatten)]
    /// The two fleets at that knee's per-instance size.
    pub point: PoolPoint,
}

/// One total capacity: N caches of C blocks each, or one pool of N × C blocks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PoolPoint {
    /// C, per instance.
    pub per_instance_capacity_blocks: u64,
    /// C in binary GB.
    pub per_instance_capacity_gb: f64,
    /// N × C in the pool's blocks.
    pub total_capacity_blocks: u64,
    /// N × C in bytes.
    pub total_capacity_bytes: u64,
    /// N × C in binary GB.
    pub total_capacity_gb: f64,
    /// Σ hit tokens of the N caches of C.
    pub per_instance_hit_tokens: u64,
    /// Their hit rate.
    pub per_instance_hit_rate: f64,
    /// Hit tokens of the pool of N × C.
    pub pool_hit_tokens: u64,
    /// Its hit rate.
    pub pool_hit_rate: f64,
}

/// One instance: totals, the unlimited-capacity ceiling, knees, saturation and the curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstanceReport {
    /// The instance.
    pub instance_id: String,
    /// Accounted rows.
    pub requests: u64,
    /// Σ `input_token_len`.
    pub total_input_tokens: u64,
    /// Tokens per block.
    pub block_size_tokens: u64,
    /// Bytes per block.
    pub block_bytes: u64,
    /// Hit blocks at unlimited capacity.
    pub infinite_hit_blocks: u64,
    /// Hit tokens at unlimited capacity.
    pub infinite_hit_tokens: u64,
    /// The ceiling: hit tokens / input tokens at unlimited capacity.
    pub infinite_hit_rate: f64,
    /// The smallest capacity with the unlimited-capacity hits.
    pub saturation: CurvePoint,
    /// At each of [`KNEE_PERCENTS`].
    pub knees: Vec<Knee>,
    /// The curve from 0 to saturation.
    pub curve: Curve,
}

/// The smallest capacity reaching `percent`% of the unlimited-capacity hit rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Knee {
    /// The knee level.
    pub percent: u32,
    /// `percent`% of the unlimited-capacity hit rate.
    pub target_hit_rate: f64,
    #[serde(flatten)]
    /// The smallest capacity reaching it.
    pub point: CurvePoint,
}

/// Every instance with its own cache of `capacity_bytes`, summed (as `query`'s total line).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TotalReport {
    /// Accounted rows of every instance.
    pub requests: u64,
    /// Σ `input_token_len` of every instance.
    pub total_input_tokens: u64,
    /// Set when every instance has the same `block_bytes`; capacities then also in blocks.
    pub shared_block_bytes: Option<u64>,
    /// Σ hit tokens at unlimited capacity.
    pub infinite_hit_tokens: u64,
    /// The total's ceiling.
    pub infinite_hit_rate: f64,
    /// The smallest per-instance size with the unlimited-capacity hits.
    pub saturation: TotalPoint,
    /// Equal-share knees at each of [`KNEE_PERCENTS`].
    pub knees: Vec<TotalKnee>,
    /// From 0 to the saturation point: the exact corners, or evenly spaced sizes.
    pub curve: Curve<TotalPoint>,
}

/// An equal-share knee: the smallest per-instance cache size (the same for every instance)
/// reaching `percent`% of the total ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TotalKnee {
    /// The knee level.
    pub percent: u32,
    /// `percent`% of the total's unlimited-capacity hit rate.
    pub target_hit_rate: f64,
    #[serde(flatten)]
    /// The smallest equal per-instance size reaching it.
    pub point: TotalPoint,
}

/// Exact hit rates at sampled per-instance cache sizes ([`MrcCurves::sample_hit_rates`]).
#[derive(Debug, Clone, PartialEq)]
pub struct SampledHits {
    /// Per instance (in the order of [`MrcCurves::instances`]), the rate at each size.
    pub instances: Vec<Vec<f64>>,
    /// The total's rate at each size.
    pub total: Vec<f64>,
    /// The shared pool's rate at N × each size; `None` without a pool lane, or when it does
    /// not share the instances' `block_bytes`.
    pub pool: Option<Vec<f64>>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mrc::MrcBuilder;
    use litehit_core::facts::FactRecord;
    use litehit_core::facts::RequestFact;

    fn record(instance_id: &str, len: u64, block_bytes: u64, pairs: &[[u64; 2]]) -> FactRecord {
        FactRecord {
            trace_id: "t".into(),
            instance_id: instance_id.into(),
            timestamp_ns: 1,
            input_token_len: len,
            block_size_tokens: 4,
            block_bytes,
            fact: RequestFact::from_pairs(pairs),
        }
    }

    fn design_example() -> MrcCurves {
        let mut builder = MrcBuilder::new();
        for (len, pairs) in [
            (13, &[][..]),
            (12, &[[1, 2]]),
            (13, &[[1, 2], [4, 1]]),
            (8, &[[1, 1]]),
            (8, &[[1, 2]]),
        ] {
            builder
                .add_record(&record("engine-0", len, 1024, pairs))
                .unwrap();
        }
        builder.finish()
    }

    #[test]
    fn design_example_knees_and_saturation() {
        let report = design_example().report(100);
        let instance = &report.instances[0];
        assert_eq!(instance.infinite_hit_blocks, 8);
        assert_eq!(instance.infinite_hit_tokens, 32);
        // Hits by capacity: 0→0, 1→4, 2→7, 3→7, 4→8.
        let knee_blocks: Vec<u64> = instance
            .knees
            .iter()
            .map(|k| k.point.capacity_blocks)
            .collect();
        // Targets ceil(8 × p%): 4, 8, 8, 8 hit blocks.
        assert_eq!(knee_blocks, [1, 4, 4, 4]);
        assert_eq!(instance.saturation.capacity_blocks, 4);
        assert_eq!(instance.saturation.capacity_bytes, 4096);
        assert!(instance.curve.exact_breakpoints);
        let curve: Vec<(u64, u64)> = instance
            .curve
            .points
            .iter()
            .map(|p| (p.capacity_blocks, p.hit_blocks))
            .collect();
        assert_eq!(curve, [(0, 0), (1, 4), (2, 7), (3, 7), (4, 8)]);
        assert_eq!(report.total.saturation.capacity_bytes, 4096);
        assert_eq!(report.total.saturation.capacity_blocks, Some(4));
        assert_eq!(report.total.knees[0].point.capacity_bytes, 1024);
    }

    #[test]
    fn total_curve_is_exact_at_every_block_between_its_corners() {
        // Two instances, one block size: the total is linear between the union of corners.
        let mut builder = MrcBuilder::new();
        let mut rng = litehit_core::workload::SplitMix64::new(11);
        for index in 0..400_u64 {
            let start = 1 + rng.index(60) as u64;
            let run = 1 + rng.index(9) as u64;
            let pairs = [[start, run], [start + run + rng.index(30) as u64, 2]];
            let instance = if index % 3 == 0 { "a" } else { "b" };
            builder
                .add_record(&record(instance, 4 * 80, 1024, &pairs))
                .unwrap();
        }
        let curves = builder.finish();
        let report = curves.report(10_000);
        let curve = &report.total.curve;
        assert!(curve.exact_breakpoints);
        let corners: Vec<(u64, u64)> = curve
            .points
            .iter()
            .map(|p| (p.capacity_blocks.unwrap(), p.hit_tokens))
            .collect();
        assert_eq!(corners[0].0, 0);
        assert_eq!(
            corners.last().unwrap().0,
            report.total.saturation.capacity_blocks.unwrap()
        );
        for pair in corners.windows(2) {
            let ((x0, y0), (x1, y1)) = (pair[0], pair[1]);
            for x in x0..=x1 {
                let interpolated = y0 + (y1 - y0) * (x - x0) / (x1 - x0);
                assert_eq!(
                    curves.total_hit_tokens_at_bytes(x * 1024),
                    interpolated,
                    "{x}"
                );
            }
        }
        // Fewer points allowed than corners: evenly spaced, every value still exact.
        let sampled = curves.report(5).total.curve;
        assert!(!sampled.exact_breakpoints);
        assert!(sampled.points.len() <= 5);
        for point in &sampled.points {
            assert_eq!(
                point.hit_tokens,
                curves.total_hit_tokens_at_bytes(point.capacity_bytes)
            );
        }
    }

    #[test]
    fn total_over_different_block_bytes_searches_bytes() {
        let mut builder = MrcBuilder::new();
        builder
            .add_record(&record("small", 40, 100, &[[1, 10]]))
            .unwrap();
        builder
            .add_record(&record("large", 40, 1000, &[[1, 10]]))
            .unwrap();
        let curves = builder.finish();
        assert_eq!(curves.instances[0].instance_id, "large");
        assert_eq!(curves.shared_block_bytes(), None);
        // At 1000 bytes: small has 10 blocks (10 hits), large 1 block (1 hit) → 44 tokens.
        assert_eq!(curves.total_hit_tokens_at_bytes(1000), 44);
        assert_eq!(curves.total_infinite_hit_tokens(), 80);
        // 50% = 40 tokens: 36 at 999 bytes (9 + 0 blocks), 44 at 1000 (10 + 1).
        assert_eq!(curves.total_knee_bytes(50), 1000);
        assert_eq!(curves.total_hit_tokens_at_bytes(999), 36);
        assert_eq!(curves.total_saturation_bytes(), 10_000);
        let report = curves.report(16);
        assert_eq!(report.total.knees[0].point.capacity_blocks, None);
        // A staircase with steps at multiples of 100 and of 1000 bytes: sampled, not corners.
        assert!(!report.total.curve.exact_breakpoints);
        assert!(report.total.curve.points.len() <= 16);
    }

    #[test]
    fn mixed_geometry_in_one_instance_is_rejected() {
        let mut builder = MrcBuilder::new();
        builder.add_record(&record("i", 8, 1024, &[])).unwrap();
        let mismatch = builder.add_record(&record("i", 8, 2048, &[])).unwrap_err();
        assert_eq!(mismatch.expected_block_bytes, 1024);
    }

    #[test]
    fn long_curves_are_sampled_exactly() {
        let mut builder = MrcBuilder::new();
        for start in 1..500 {
            builder
                .add_record(&record("i", 100, 1, &[[start * 3, 1], [start * 3 + 2, 1]]))
                .unwrap();
        }
        let curves = builder.finish();
        let curve = curves.instances[0].curve(50);
        assert!(!curve.exact_breakpoints);
        assert_eq!(curve.points.len(), 50);
        assert_eq!(curve.points[0].capacity_blocks, 0);
        let last = curve.points.last().unwrap();
        assert_eq!(
            last.capacity_blocks,
            curves.instances[0].hits.saturation_capacity_blocks()
        );
        assert_eq!(
            last.hit_blocks,
            curves.instances[0].hits.infinite_hit_blocks()
        );
    }

    #[test]
    fn json_report_has_flat_knees_and_optional_blocks() {
        let value = serde_json::to_value(design_example().report(100)).unwrap();
        let knee = &value["instances"][0]["knees"][1];
        assert_eq!(knee["percent"], 90);
        assert_eq!(knee["capacity_blocks"], 4);
        assert_eq!(knee["capacity_bytes"], 4096);
        assert_eq!(knee["hit_blocks"], 8);
        assert_eq!(value["total"]["knees"][0]["capacity_blocks"], 1);
        assert_eq!(value["total"]["shared_block_bytes"], 1024);
        assert_eq!(value["knee_percents"], serde_json::json!([50, 90, 95, 99]));
        assert_eq!(value["instances"][0]["curve"]["exact_breakpoints"], true);
    }

    #[test]
    fn empty_input_reports_zeros() {
        let report = MrcBuilder::new().finish().report(10);
        assert!(report.instances.is_empty());
        assert!(report.total.infinite_hit_rate.abs() < f64::EPSILON);
        assert_eq!(report.total.saturation.capacity_bytes, 0);
    }
}
