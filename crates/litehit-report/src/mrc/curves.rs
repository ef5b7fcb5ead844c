//! Per-instance curves from facts rows: one [`CapacityAxisAccumulator`] per instance (and
//! the shared pool lane's, moved out at the end), and the total over every instance with its
//! own cache of one size in bytes.

use std::path::{Path, PathBuf};

use super::MrcError;
use serde::Serialize;

use crate::facts_files::FactsFiles;
use crate::lane_index::{LaneIndex, LaneTableFull};
use crate::pool_detect::{LaneFingerprint, LaneFingerprints};
use crate::query::PoolRule;
use crate::ratio;
use crate::span::{TimeRange, widen_span};
use litehit_core::display::bytes_to_gib;
use litehit_core::facts::FactRecord;
use litehit_core::projector::accumulator::percent_of_rounded_up;
use litehit_core::projector::sampling::sample_curve;
use litehit_core::projector::{self, CapacityAxisAccumulator};

/// A row whose instance was first seen with another block geometry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GeometryMismatch {
    /// `block_size_tokens` of the instance's first row.
    pub expected_block_size_tokens: u64,
    /// `block_bytes` of the instance's first row.
    pub expected_block_bytes: u64,
}

/// The exact hits-versus-capacity curve of one instance.
#[derive(Debug, Clone)]
pub struct InstanceCurve {
    /// The instance (a lane of the facts).
    pub instance_id: String,
    /// Tokens per block of every row.
    pub block_size_tokens: u64,
    /// Bytes per block of every row.
    pub block_bytes: u64,
    /// Accounted rows.
    pub requests: u64,
    /// Σ `input_token_len` of those rows.
    pub total_input_tokens: u64,
    /// Cumulative hits at any capacity, exactly.
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
    index: LaneIndex,
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
    /// [`FactsFiles::after_input_tokens`]).
    input_tokens_read: u64,
    /// `--model`'s KV bytes per token ([`FactsFiles::with_kv_bytes_per_token`]).
    kv_bytes_per_token: Option<u64>,
}

impl MrcBuilder {
    #[must_use]
    /// No rows yet, no pool rule.
    pub fn new() -> Self {
        Self::default()
    }

    /// Finds the shared pool lane by `rule` (by its rows, see `pool_detect`):
    /// [`Self::finish`] moves its curve out of the instances into [`MrcCurves::pool`].
    #[must_use]
    pub fn with_pool(mut self, rule: PoolRule) -> Self {
        self.pool = Some(rule);
        self
    }

    /// Reads every row of [`Self::add_facts_files_in`] with `block_bytes` = the model's
    /// `kv_bytes_per_token` × its `block_size_tokens` (`mrc --model`); `None`: the facts' own.
    #[must_use]
    pub fn with_kv_bytes_per_token(mut self, kv_bytes_per_token: Option<u64>) -> Self {
        self.kv_bytes_per_token = kv_bytes_per_token;
        self
    }

    /// Adds one record; an instance must keep the block geometry of its first row.
    pub fn add_record(&mut self, record: &FactRecord) -> Result<(), GeometryMismatch> {
        self.observe(record, 0);
        self.account(record)
    }

    /// Adds a row, accounted or not, to its lane's fingerprint (with [`PoolRule::Recognise`]:
    /// the pool is recognised over every row).
    fn observe(&mut self, record: &FactRecord, file: usize) {
        if matches!(self.pool, Some(PoolRule::Recognise { .. })) {
            self.lanes.observe_in_file(record, file);
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
        // The rows of every file together, and of the calls before: no total can wrap.
        let mut files = FactsFiles::lazy(paths)
            .after_input_tokens(self.input_tokens_read)
            .with_kv_bytes_per_token(self.kv_bytes_per_token);
        let files_before = self.files_read.len();
        self.files_read.extend_from_slice(paths);
        while files.next_record(&mut record)? {
            self.try_reserve_instance()
                .map_err(|_| files.out_of_memory())?;
            self.observe(&record, files_before + files.file_index());
            self.seen_span = widen_span(self.seen_span, record.timestamp_ns);
            if !range.contains(record.timestamp_ns) {
                continue;
            }
            self.account(&record).map_err(|mismatch| {
                mixed_geometry(files.path(), files.line_number(), &record, mismatch)
            })?;
        }
        self.input_tokens_read = files.input_tokens_read();
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
    fn try_reserve_instance(&mut self) -> Result<(), LaneTableFull> {
        self.lanes.try_reserve_lane()?;
        self.instances.try_reserve(1)?;
        self.index.try_reserve()
    }

    fn instance_slot(&mut self, record: &FactRecord) -> usize {
        let (index, new) = self.index.index_or_insert(&record.instance_id);
        if new {
            self.instances.push(InstanceCurve::new(record));
        }
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
    /// [`LaneFingerprints::partial_pool_note`](crate::pool_detect::LaneFingerprints::partial_pool_note).
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
    /// Accounted rows of every instance (the pool's not among them).
    pub fn requests(&self) -> u64 {
        self.instances.iter().map(|i| i.requests).sum()
    }

    #[must_use]
    /// Σ `input_token_len` of every instance's rows.
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
}

/// The cumulative hits of one instance at one capacity.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct CurvePoint {
    /// The capacity in the instance's blocks.
    pub capacity_blocks: u64,
    /// `capacity_blocks × block_bytes`.
    pub capacity_bytes: u64,
    /// `capacity_bytes / 2^30`; querying this GB value gives exactly `capacity_blocks`.
    pub capacity_gb: f64,
    /// Cumulative hit blocks at that capacity.
    pub hit_blocks: u64,
    /// `hit_blocks × block_size_tokens`.
    pub hit_tokens: u64,
    /// Hit tokens / input tokens (0 without input tokens).
    pub hit_rate: f64,
}

/// Curve points by increasing capacity; linear in blocks between consecutive points when
/// `exact_breakpoints`, otherwise a sample (still exact at each point). Per instance the
/// points are [`CurvePoint`]s, for the total [`TotalPoint`]s.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Curve<Point = CurvePoint> {
    /// Whether the points are every corner of the exact curve.
    pub exact_breakpoints: bool,
    /// By increasing capacity.
    pub points: Vec<Point>,
}

/// The total hits at one per-instance cache size.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct TotalPoint {
    /// The per-instance cache size.
    pub capacity_bytes: u64,
    /// `capacity_bytes / 2^30`.
    pub capacity_gb: f64,
    /// Only when all instances share one `block_bytes`.
    pub capacity_blocks: Option<u64>,
    /// Σ over the instances of their hit tokens at that size.
    pub hit_tokens: u64,
    /// Hit tokens / every instance's input tokens.
    pub hit_rate: f64,
}
