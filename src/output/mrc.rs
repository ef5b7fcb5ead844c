//! The miss-ratio-curve report of `litehit mrc`: the exact cumulative token hit rate at every
//! capacity, the knees and the saturation point, per instance and in total.
//!
//! One [`CapacityAxisAccumulator`] per instance answers hits at any capacity exactly, so the
//! whole curve comes from one pass over the facts (no sweep of projections).
//!
//! * **Per instance** everything is in blocks first: rows of one instance must share
//!   `block_size_tokens` and `block_bytes` (fanout gives each geometry its own instance id), and
//!   a capacity of `b` blocks is `b × block_bytes` bytes. The hit rate is hit blocks ×
//!   `block_size_tokens` / input tokens.
//! * **Total** means every instance with its own cache of the same size in bytes, exactly as
//!   the overall summary line of `litehit query`: at `B` bytes the total hit tokens are
//!   `Σᵢ hitsᵢ(floor(B / block_bytesᵢ)) × block_size_tokensᵢ`. Its knees are **equal-share
//!   knees** (the smallest equal per-instance size `B` whose total reaches the target; not
//!   the live monitor's "Σ of instance knees", each instance's own knee summed), in JSON
//!   `total.knees` (per-instance capacities). They are found by a binary
//!   search over bytes (the total is a non-decreasing step function of `B`); they are also
//!   given in blocks when every instance has the same `block_bytes`.
//! * **Knee p%**: the smallest capacity whose cumulative hit rate reaches p% of the
//!   unlimited-capacity hit rate (target hits rounded up to a whole block or token).
//!   **Saturation**: the smallest capacity that reaches the unlimited-capacity hit rate.

use std::collections::HashMap;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use unicode_width::UnicodeWidthStr as _;

use serde::Serialize;

use super::pool_detect::{LaneFingerprint, LaneFingerprints, PoolCheckError, RepeatedRows};
use super::query_jsonl::{PoolRule, TimeRange};
use super::summary::ratio;
use litehit_core::display::{self, Precision, bytes_to_gib};
use litehit_core::facts::FactRecord;
use litehit_core::facts::file::{FactsError, FactsReader};
use litehit_core::projector::accumulator::percent_of_rounded_up;
use litehit_core::projector::sampling::{evenly_spaced, sample_curve};
use litehit_core::projector::{self, CapacityAxisAccumulator};

/// Knee levels reported, in percent of the unlimited-capacity hit rate.
pub const KNEE_PERCENTS: [u32; 4] = [50, 90, 95, 99];

/// Building the curves failed.
#[derive(Debug, thiserror::Error)]
pub enum MrcError {
    #[error(transparent)]
    Facts(#[from] FactsError),
    #[error(transparent)]
    Pool(#[from] PoolCheckError),
    #[error(transparent)]
    RepeatedRows(#[from] RepeatedRows),
    #[error(
        "{}: facts line {line}: instance {instance_id:?} mixes block geometry: expected \
         block_size_tokens {expected_block_size_tokens} and block_bytes {expected_block_bytes} \
         (as in its first row), found {found_block_size_tokens} and {found_block_bytes}",
        path.display()
    )]
    MixedBlockGeometry {
        path: PathBuf,
        line: u64,
        instance_id: String,
        expected_block_size_tokens: u64,
        expected_block_bytes: u64,
        found_block_size_tokens: u64,
        found_block_bytes: u64,
    },
}

/// A row whose instance was first seen with another block geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeometryMismatch {
    pub expected_block_size_tokens: u64,
    pub expected_block_bytes: u64,
}

/// The exact hits-versus-capacity curve of one instance.
#[derive(Debug, Clone)]
pub struct InstanceCurve {
    pub instance_id: String,
    pub block_size_tokens: u64,
    pub block_bytes: u64,
    pub requests: u64,
    pub total_input_tokens: u64,
    pub hits: CapacityAxisAccumulator,
}

impl InstanceCurve {
    fn new(record: &FactRecord) -> Self {
        Self {
            instance_id: record.instance_id.clone(),
            block_size_tokens: record.block_size_tokens,
            block_bytes: record.block_bytes,
            requests: 0,
            total_input_tokens: 0,
            hits: CapacityAxisAccumulator::new(),
        }
    }

    /// Cumulative hit blocks in a cache of `capacity_bytes` (floored to whole blocks).
    #[must_use]
    pub fn hit_blocks_at_bytes(&self, capacity_bytes: u64) -> u64 {
        self.hits
            .hit_blocks_at(projector::capacity_blocks_for_bytes(
                capacity_bytes,
                self.block_bytes,
            ))
    }

    /// `capacity_blocks` in bytes (saturating).
    #[must_use]
    pub fn bytes_for_blocks(&self, capacity_blocks: u64) -> u64 {
        capacity_blocks.saturating_mul(self.block_bytes)
    }

    /// The smallest capacity (blocks) reaching `percent`% of the unlimited-capacity hits.
    #[must_use]
    pub fn knee_capacity_blocks(&self, percent: u32) -> u64 {
        self.hits.knee_capacity_blocks(percent)
    }

    /// The curve point at `capacity_blocks`.
    #[must_use]
    pub fn point(&self, capacity_blocks: u64) -> CurvePoint {
        self.point_with_hits(capacity_blocks, self.hits.hit_blocks_at(capacity_blocks))
    }

    fn point_with_hits(&self, capacity_blocks: u64, hit_blocks: u64) -> CurvePoint {
        let capacity_bytes = self.bytes_for_blocks(capacity_blocks);
        let hit_tokens = hit_blocks.wrapping_mul(self.block_size_tokens);
        CurvePoint {
            capacity_blocks,
            capacity_bytes,
            capacity_gb: bytes_to_gib(capacity_bytes),
            hit_blocks,
            hit_tokens,
            hit_rate: ratio(hit_tokens, self.total_input_tokens),
        }
    }

    /// Breakpoints of the exact curve, or `max_points` evenly spaced capacities if there are
    /// more breakpoints than that (values are exact at every returned capacity).
    #[must_use]
    pub fn curve(&self, max_points: usize) -> Curve {
        let sampled = sample_curve(&self.hits, max_points);
        Curve {
            exact_breakpoints: sampled.exact_breakpoints,
            points: sampled
                .points
                .into_iter()
                .map(|(capacity_blocks, hit_blocks)| {
                    self.point_with_hits(capacity_blocks, hit_blocks)
                })
                .collect(),
        }
    }
}

/// Collects per-instance curves from facts records.
#[derive(Debug, Default)]
pub struct MrcBuilder {
    instances: Vec<InstanceCurve>,
    index: HashMap<String, usize>,
    last_instance: Option<usize>,
    /// How the shared pool lane is found (`None`: the facts are taken as having none).
    pool: Option<PoolRule>,
    /// Every row's lane fingerprint, for [`PoolRule::Recognise`].
    lanes: LaneFingerprints,
    /// The files read so far, in order (shards may come in several calls).
    files_read: Vec<PathBuf>,
    /// The first and last `timestamp_ns` of every row read by [`Self::add_facts_files_in`],
    /// in the span or not (to say where the trace is when a span holds no row).
    seen_span: Option<(i64, i64)>,
    /// Σ `input_token_len` of the files read so far (see
    /// [`FactsReader::continue_input_tokens`]).
    input_tokens_read: u64,
}

impl MrcBuilder {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// Finds the shared pool lane by `rule` (by its rows, see [`super::pool_detect`]):
    /// [`Self::finish`] moves its curve out of the instances into [`MrcCurves::pool`].
    #[must_use]
    pub fn with_pool(mut self, rule: PoolRule) -> Self {
        self.pool = Some(rule);
        self
    }

    /// Adds one record; an instance must keep the block geometry of its first row.
    pub fn add_record(&mut self, record: &FactRecord) -> Result<(), GeometryMismatch> {
        self.observe(record);
        self.account(record)
    }

    /// Adds a row, accounted or not, to its lane's fingerprint (with [`PoolRule::Recognise`]:
    /// the pool is recognised over every row).
    fn observe(&mut self, record: &FactRecord) {
        if matches!(self.pool, Some(PoolRule::Recognise { .. })) {
            self.lanes.observe(record);
        }
    }

    /// Adds an accounted row to its instance's curve.
    fn account(&mut self, record: &FactRecord) -> Result<(), GeometryMismatch> {
        let index = self.instance_slot(record);
        let curve = &mut self.instances[index];
        if curve.block_size_tokens != record.block_size_tokens
            || curve.block_bytes != record.block_bytes
        {
            return Err(GeometryMismatch {
                expected_block_size_tokens: curve.block_size_tokens,
                expected_block_bytes: curve.block_bytes,
            });
        }
        curve.requests += 1;
        curve.total_input_tokens = curve
            .total_input_tokens
            .wrapping_add(record.input_token_len);
        curve.hits.add_fact(&record.fact);
        Ok(())
    }

    /// Reads every file in order (shards of one run aggregate into the same instances).
    pub fn add_facts_files(&mut self, paths: &[PathBuf]) -> Result<(), MrcError> {
        self.add_facts_files_in(paths, TimeRange::default())
    }

    /// [`Self::add_facts_files`], accounting only the rows whose timestamp is in `range`
    /// (the facts already hold the cache state built from the start of the trace).
    pub fn add_facts_files_in(
        &mut self,
        paths: &[PathBuf],
        range: TimeRange,
    ) -> Result<(), MrcError> {
        let mut record = FactRecord::default();
        for path in paths {
            let mut reader = FactsReader::open(path)?;
            // The rows of every file together: no total can wrap (the reader refuses).
            reader.continue_input_tokens(self.input_tokens_read);
            self.lanes.start_file(self.files_read.len());
            self.files_read.push(path.clone());
            while reader.next_record(&mut record)? {
                self.try_reserve_instance()
                    .map_err(|_| reader.out_of_memory())?;
                self.observe(&record);
                self.seen_span =
                    super::query_windows::widen_span(self.seen_span, record.timestamp_ns);
                if !range.contains(record.timestamp_ns) {
                    continue;
                }
                self.account(&record).map_err(|mismatch| {
                    mixed_geometry(reader.path(), reader.line_number(), &record, mismatch)
                })?;
            }
            self.input_tokens_read = reader.input_tokens_read();
        }
        Ok(())
    }

    /// The first and last `timestamp_ns` of the rows [`Self::add_facts_files_in`] read (in
    /// its span or not); `None` without rows.
    #[must_use]
    pub fn seen_span(&self) -> Option<(i64, i64)> {
        self.seen_span
    }

    /// Whether any row was added (the pool's included).
    #[must_use]
    pub fn has_rows(&self) -> bool {
        !self.instances.is_empty()
    }

    /// The curves, instances in byte order of `instance_id`.
    #[must_use]
    pub fn finish(self) -> MrcCurves {
        self.try_finish()
            .unwrap_or_else(|_| unreachable!("only with PoolRule::Recognise can it fail"))
    }

    /// `Err` when two of the files read held the same rows of a lane (one file given twice;
    /// see [`LaneFingerprints::check_no_repeated_rows`]); only [`PoolRule::Recognise`] keeps
    /// the lanes' sums to tell.
    pub fn check_no_repeated_rows(&self) -> Result<(), MrcError> {
        Ok(self.lanes.check_no_repeated_rows(&self.files_read)?)
    }

    /// [`Self::finish`]; fails when `--pool NAME` named no pool lane, or (with
    /// [`PoolRule::Recognise`]) two files held the same rows of a lane (one file given twice).
    pub fn try_finish(self) -> Result<MrcCurves, MrcError> {
        self.check_no_repeated_rows()?;
        let mut instances = self.instances;
        instances.sort_unstable_by(|a, b| a.instance_id.cmp(&b.instance_id));
        let pool_name = match &self.pool {
            Some(PoolRule::Recognise { named }) => self.lanes.recognise_pool(named.as_deref())?,
            Some(PoolRule::Recognised(name)) => name.as_deref(),
            None => None,
        };
        // No curve when the pool has no accounted rows (then neither have the others).
        let pool = pool_name
            .and_then(|name| instances.iter().position(|i| i.instance_id == name))
            .map(|index| instances.remove(index));
        Ok(MrcCurves {
            instances,
            pool,
            lanes_in_several_files: self.lanes.lanes_in_several_files().cloned().collect(),
            pool_note: self.lanes.partial_pool_note(),
        })
    }

    /// Room for one more instance, fallibly (its table's growth is the one that can be
    /// large: the reader's memory checks cover the rest).
    fn try_reserve_instance(&mut self) -> Result<(), std::collections::TryReserveError> {
        self.lanes.try_reserve_lane()?;
        self.instances.try_reserve(1)?;
        self.index.try_reserve(1)
    }

    fn instance_slot(&mut self, record: &FactRecord) -> usize {
        if let Some(last) = self.last_instance
            && self.instances[last].instance_id == record.instance_id
        {
            return last;
        }
        let index = if let Some(&index) = self.index.get(record.instance_id.as_str()) {
            index
        } else {
            self.instances.push(InstanceCurve::new(record));
            self.index
                .insert(record.instance_id.clone(), self.instances.len() - 1);
            self.instances.len() - 1
        };
        self.last_instance = Some(index);
        index
    }
}

fn mixed_geometry(
    path: &Path,
    line: u64,
    record: &FactRecord,
    mismatch: GeometryMismatch,
) -> MrcError {
    MrcError::MixedBlockGeometry {
        path: path.to_path_buf(),
        line,
        instance_id: record.instance_id.clone(),
        expected_block_size_tokens: mismatch.expected_block_size_tokens,
        expected_block_bytes: mismatch.expected_block_bytes,
        found_block_size_tokens: record.block_size_tokens,
        found_block_bytes: record.block_bytes,
    }
}

/// Exact curves of every instance of one or more facts files.
#[derive(Debug, Clone, Default)]
pub struct MrcCurves {
    /// In byte order of `instance_id` (the shared pool lane is not among them).
    pub instances: Vec<InstanceCurve>,
    /// The shared pool lane (`replay --pool`), one cache for every instance's rows.
    pub pool: Option<InstanceCurve>,
    /// The lanes with rows in more than one of the files read (for a note: replay shards
    /// are disjoint by instance).
    pub lanes_in_several_files: Vec<LaneFingerprint>,
    /// [`LaneFingerprints::partial_pool_note`](super::pool_detect::LaneFingerprints::partial_pool_note).
    pub pool_note: Option<String>,
}

impl MrcCurves {
    /// Reads `paths` (shards aggregate) into curves.
    pub fn from_facts_files(paths: &[PathBuf]) -> Result<Self, MrcError> {
        let mut builder = MrcBuilder::new();
        builder.add_facts_files(paths)?;
        Ok(builder.finish())
    }

    #[must_use]
    pub fn requests(&self) -> u64 {
        self.instances.iter().map(|i| i.requests).sum()
    }

    #[must_use]
    pub fn total_input_tokens(&self) -> u64 {
        self.instances
            .iter()
            .fold(0, |sum, i| sum.wrapping_add(i.total_input_tokens))
    }

    /// The `block_bytes` of every instance, if they all share one.
    #[must_use]
    pub fn shared_block_bytes(&self) -> Option<u64> {
        let first = self.instances.first()?.block_bytes;
        self.instances
            .iter()
            .all(|i| i.block_bytes == first)
            .then_some(first)
    }

    /// Total hit tokens when every instance has its own cache of `capacity_bytes`.
    #[must_use]
    pub fn total_hit_tokens_at_bytes(&self, capacity_bytes: u64) -> u64 {
        self.instances.iter().fold(0, |sum, i| {
            sum.wrapping_add(
                i.hit_blocks_at_bytes(capacity_bytes)
                    .wrapping_mul(i.block_size_tokens),
            )
        })
    }

    /// Total hit tokens with unlimited capacity.
    #[must_use]
    pub fn total_infinite_hit_tokens(&self) -> u64 {
        self.instances.iter().fold(0, |sum, i| {
            sum.wrapping_add(
                i.hits
                    .infinite_hit_blocks()
                    .wrapping_mul(i.block_size_tokens),
            )
        })
    }

    /// The smallest per-instance cache size (bytes) at which the total reaches its
    /// unlimited-capacity hits.
    #[must_use]
    pub fn total_saturation_bytes(&self) -> u64 {
        self.min_bytes_for_total_hit_tokens(self.total_infinite_hit_tokens())
    }

    /// The smallest per-instance cache size (bytes) reaching `percent`% of the total
    /// unlimited-capacity hit tokens.
    #[must_use]
    pub fn total_knee_bytes(&self, percent: u32) -> u64 {
        self.min_bytes_for_total_hit_tokens(percent_of_rounded_up(
            self.total_infinite_hit_tokens(),
            percent,
        ))
    }

    /// Binary search over bytes: the total is non-decreasing in the cache size.
    fn min_bytes_for_total_hit_tokens(&self, target_hit_tokens: u64) -> u64 {
        let (mut low, mut high) = (
            0_u64,
            self.instances
                .iter()
                .map(|i| i.bytes_for_blocks(i.hits.saturation_capacity_blocks()))
                .max()
                .unwrap_or(0),
        );
        while low < high {
            let mid = low + (high - low) / 2;
            if self.total_hit_tokens_at_bytes(mid) >= target_hit_tokens {
                high = mid;
            } else {
                low = mid + 1;
            }
        }
        low
    }

    /// The total's point at `capacity_bytes`.
    #[must_use]
    pub fn total_point(&self, capacity_bytes: u64) -> TotalPoint {
        let hit_tokens = self.total_hit_tokens_at_bytes(capacity_bytes);
        TotalPoint {
            capacity_bytes,
            capacity_gb: bytes_to_gib(capacity_bytes),
            capacity_blocks: self.shared_block_bytes().map(|block_bytes| {
                projector::capacity_blocks_for_bytes(capacity_bytes, block_bytes)
            }),
            hit_tokens,
            hit_rate: ratio(hit_tokens, self.total_input_tokens()),
        }
    }

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

impl MrcCurves {
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
}

/// `litehit mrc --json`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MrcReport {
    pub knee_percents: Vec<u32>,
    /// In byte order of `instance_id`.
    pub instances: Vec<InstanceReport>,
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
    pub block_bytes: u64,
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
    pub knees: Vec<PoolKnee>,
    pub curve: Vec<PoolPoint>,
}

/// At the total's p% knee C.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PoolKnee {
    pub percent: u32,
    #[serde(flatten)]
    pub point: PoolPoint,
}

/// One total capacity: N caches of C blocks each, or one pool of N × C blocks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct PoolPoint {
    pub per_instance_capacity_blocks: u64,
    pub per_instance_capacity_gb: f64,
    pub total_capacity_blocks: u64,
    pub total_capacity_bytes: u64,
    pub total_capacity_gb: f64,
    pub per_instance_hit_tokens: u64,
    pub per_instance_hit_rate: f64,
    pub pool_hit_tokens: u64,
    pub pool_hit_rate: f64,
}

/// One instance: totals, the unlimited-capacity ceiling, knees, saturation and the curve.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct InstanceReport {
    pub instance_id: String,
    pub requests: u64,
    pub total_input_tokens: u64,
    pub block_size_tokens: u64,
    pub block_bytes: u64,
    pub infinite_hit_blocks: u64,
    pub infinite_hit_tokens: u64,
    pub infinite_hit_rate: f64,
    /// The smallest capacity with the unlimited-capacity hits.
    pub saturation: CurvePoint,
    pub knees: Vec<Knee>,
    pub curve: Curve,
}

/// The cumulative hits of one instance at one capacity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CurvePoint {
    pub capacity_blocks: u64,
    pub capacity_bytes: u64,
    /// `capacity_bytes / 2^30`; querying this GB value gives exactly `capacity_blocks`.
    pub capacity_gb: f64,
    pub hit_blocks: u64,
    pub hit_tokens: u64,
    pub hit_rate: f64,
}

/// The smallest capacity reaching `percent`% of the unlimited-capacity hit rate.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Knee {
    pub percent: u32,
    pub target_hit_rate: f64,
    #[serde(flatten)]
    pub point: CurvePoint,
}

/// Curve points by increasing capacity; linear in blocks between consecutive points when
/// `exact_breakpoints`, otherwise a sample (still exact at each point). Per instance the
/// points are [`CurvePoint`]s, for the total [`TotalPoint`]s.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Curve<Point = CurvePoint> {
    pub exact_breakpoints: bool,
    pub points: Vec<Point>,
}

/// Every instance with its own cache of `capacity_bytes`, summed (as `query`'s total line).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TotalReport {
    pub requests: u64,
    pub total_input_tokens: u64,
    /// Set when every instance has the same `block_bytes`; capacities then also in blocks.
    pub shared_block_bytes: Option<u64>,
    pub infinite_hit_tokens: u64,
    pub infinite_hit_rate: f64,
    pub saturation: TotalPoint,
    pub knees: Vec<TotalKnee>,
    /// From 0 to the saturation point: the exact corners, or evenly spaced sizes.
    pub curve: Curve<TotalPoint>,
}

/// The total hits at one per-instance cache size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TotalPoint {
    pub capacity_bytes: u64,
    pub capacity_gb: f64,
    /// Only when all instances share one `block_bytes`.
    pub capacity_blocks: Option<u64>,
    pub hit_tokens: u64,
    pub hit_rate: f64,
}

/// An equal-share knee: the smallest per-instance cache size (the same for every instance)
/// reaching `percent`% of the total ceiling.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TotalKnee {
    pub percent: u32,
    pub target_hit_rate: f64,
    #[serde(flatten)]
    pub point: TotalPoint,
}

/// The GiB columns assume each instance's KV size: a blank line and one `warning:` line per
/// implausible one (the core's rule), or nothing.
fn kv_size_warnings(report: &MrcReport) -> String {
    let mut out = String::new();
    if !report.kv_size_warnings.is_empty() {
        out.push('\n');
    }
    for warning in &report.kv_size_warnings {
        let _ = writeln!(out, "warning: {}", warning.message);
    }
    out
}

/// The human-readable table of `litehit mrc`.
#[must_use]
pub fn render_table(report: &MrcReport) -> String {
    let mut header: Vec<String> = [
        "instance",
        "requests",
        "input tokens",
        "block tokens",
        "block bytes",
        "∞ hit rate",
    ]
    .map(String::from)
    .to_vec();
    header.extend(report.knee_percents.iter().map(|p| format!("{p}% knee")));
    header.push("saturation".into());

    let mut rows: Vec<Vec<String>> = report
        .instances
        .iter()
        .map(|i| {
            let mut row = vec![
                i.instance_id.clone(),
                i.requests.to_string(),
                i.total_input_tokens.to_string(),
                i.block_size_tokens.to_string(),
                format_bytes(i.block_bytes),
                format_percent(i.infinite_hit_rate),
            ];
            let hits = i.infinite_hit_rate > 0.0;
            row.extend(
                i.knees
                    .iter()
                    .map(|k| knee_cell(hits, k.point.capacity_gb, Some(k.point.capacity_blocks))),
            );
            row.push(knee_cell(
                hits,
                i.saturation.capacity_gb,
                Some(i.saturation.capacity_blocks),
            ));
            row
        })
        .collect();
    let total = &report.total;
    let mut total_row = vec![
        "total".to_owned(),
        total.requests.to_string(),
        total.total_input_tokens.to_string(),
        String::new(),
        total
            .shared_block_bytes
            .map_or_else(|| "mixed".into(), format_bytes),
        format_percent(total.infinite_hit_rate),
    ];
    let hits = total.infinite_hit_rate > 0.0;
    total_row.extend(
        total
            .knees
            .iter()
            .map(|k| knee_cell(hits, k.point.capacity_gb, k.point.capacity_blocks)),
    );
    total_row.push(knee_cell(
        hits,
        total.saturation.capacity_gb,
        total.saturation.capacity_blocks,
    ));
    rows.push(total_row);

    let widths: Vec<usize> = (0..header.len())
        .map(|column| {
            rows.iter()
                .map(|row| row[column].width())
                .chain([header[column].width()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut out = String::new();
    for row in std::iter::once(&header).chain(&rows) {
        let mut line = String::new();
        for (column, cell) in row.iter().enumerate() {
            let pad = widths[column] - cell.width();
            if column == 0 {
                let _ = write!(line, "{cell}{}", " ".repeat(pad));
            } else {
                let _ = write!(line, "  {}{cell}", " ".repeat(pad));
            }
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    if let Some(pool) = &report.pool {
        out.push_str(&render_pool_lines(pool));
    }
    out.push_str(&kv_size_warnings(report));
    out.push_str(concat!(
        "\nCumulative token hit rate of an exact LRU prefix cache. A p% knee is the smallest\n",
        "capacity reaching p% of the ∞-capacity hit rate; saturation is the smallest reaching all\n",
        "of it. GiB = 2^30 bytes, (n) = blocks. total: every instance with its own cache of that\n",
        "size, as in the overall line of `litehit query`; its knees are equal-share knees (the\n",
        "smallest equal per-instance size whose total reaches p%), not the Σ of instance knees\n",
        "that `watch` shows.\n",
    ));
    out
}

/// The pool's own line and, at the total's knees, the pool at N × C beside N caches of C.
fn render_pool_lines(pool: &PoolReport) -> String {
    let own = &pool.own;
    let hits = own.infinite_hit_rate > 0.0;
    let knees: Vec<String> = own
        .knees
        .iter()
        .map(|k| {
            format!(
                "{}% {}",
                k.percent,
                knee_cell(hits, k.point.capacity_gb, Some(k.point.capacity_blocks))
            )
        })
        .collect();
    let mut out = format!(
        "\n{} (shared by {} instances): {} requests, ∞ hit rate {}; pool size for {}\n",
        own.instance_id,
        pool.instances,
        own.requests,
        format_percent(own.infinite_hit_rate),
        knees.join(", "),
    );
    let Some(comparison) = &pool.comparison else {
        out.push_str("(no N × C comparison: the pool and the instances differ in block bytes)\n");
        return out;
    };
    let mut rows = vec![[
        "at equal-share knee".to_owned(),
        "per instance C".to_owned(),
        "total N × C".to_owned(),
        "N caches of C".to_owned(),
        "pool of N × C".to_owned(),
    ]];
    for knee in &comparison.knees {
        let point = &knee.point;
        rows.push([
            format!("{}%", knee.percent),
            format_capacity(
                point.per_instance_capacity_gb,
                Some(point.per_instance_capacity_blocks),
            ),
            format_capacity(point.total_capacity_gb, Some(point.total_capacity_blocks)),
            format_percent(point.per_instance_hit_rate),
            format_percent(point.pool_hit_rate),
        ]);
    }
    let widths: Vec<usize> = (0..5)
        .map(|column| {
            rows.iter()
                .map(|row| row[column].width())
                .max()
                .unwrap_or(0)
        })
        .collect();
    for row in &rows {
        let mut line = String::from(" ");
        for (cell, width) in row.iter().zip(&widths) {
            let _ = write!(line, "  {}{cell}", " ".repeat(width - cell.width()));
        }
        out.push_str(&line);
        out.push('\n');
    }
    out
}

fn format_percent(rate: f64) -> String {
    display::percent(Some(rate), 2)
}

/// A knee or saturation cell: `-` when nothing ever hits (every knee would read `0 GiB`,
/// true but unhelpful), else [`format_capacity`].
fn knee_cell(hits: bool, capacity_gb: f64, capacity_blocks: Option<u64>) -> String {
    if hits {
        format_capacity(capacity_gb, capacity_blocks)
    } else {
        "-".to_owned()
    }
}

/// `12.34 GiB (91)`; the block count is omitted when unknown. The GB figure is rounded
/// *up*: every capacity shown is a smallest capacity reaching a target, so the figure typed
/// back into `query` must reach it too.
fn format_capacity(capacity_gb: f64, capacity_blocks: Option<u64>) -> String {
    let gb = display::significant_up(capacity_gb, 4);
    match capacity_blocks {
        Some(blocks) => format!("{gb} GiB ({blocks})"),
        None => format!("{gb} GiB"),
    }
}

/// A byte count in the largest binary unit that keeps it at least 1 (`644.5 MiB`).
fn format_bytes(bytes: u64) -> String {
    display::bytes(bytes, Precision::Significant(4))
}

#[cfg(test)]
mod tests {
    use super::*;
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
        assert!(render_table(&report).contains("mixed"));
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
    fn knees_are_a_dash_when_nothing_ever_hits() {
        let mut builder = MrcBuilder::new();
        builder.add_record(&record("a", 8, 1024, &[])).unwrap();
        let table = render_table(&builder.finish().report(10));
        let instance_row = table.lines().nth(1).unwrap();
        let last_cells: Vec<&str> = instance_row.split_whitespace().rev().take(5).collect();
        assert_eq!(
            last_cells, ["-"; 5],
            "four knees and the saturation: {table}"
        );
        assert!(!table.contains("0 GiB"), "{table}");
    }

    #[test]
    fn empty_input_reports_zeros() {
        let report = MrcBuilder::new().finish().report(10);
        assert!(report.instances.is_empty());
        assert!(report.total.infinite_hit_rate.abs() < f64::EPSILON);
        assert_eq!(report.total.saturation.capacity_bytes, 0);
        assert!(render_table(&report).starts_with("instance"));
    }

    #[test]
    fn significant_formatting() {
        assert_eq!(display::significant(57.421_875, 4), "57.42");
        assert_eq!(display::significant(1024.0, 4), "1024");
        assert_eq!(display::significant(0.000_976_562_5, 4), "0.0009766");
        assert_eq!(display::significant(0.0, 4), "0");
        // Knees and saturation round up, so the figure typed back still reaches the target
        // (7.705078125 GB is 7890 blocks of 1 MiB; 7.705 GB would be 7889).
        assert_eq!(display::significant_up(7.705_078_125, 4), "7.706");
        assert_eq!(display::significant_up(34.590_82, 4), "34.6");
        assert_eq!(display::significant_up(144.415, 4), "144.5");
        assert_eq!(display::significant_up(40.0, 4), "40");
        assert_eq!(display::significant_up(0.5, 4), "0.5");
        assert_eq!(display::significant_up(1024.0, 4), "1024");
        assert_eq!(format_bytes(675_864_576), "644.6 MiB");
        assert_eq!(format_bytes(512), "512 B");
    }
}
