//! `query --window`: the accounted rows summed per window of trace time and per slot (or,
//! with `--tiers`, per tier: the hit tokens each tier served). With a shared pool lane, its
//! rows are left out of the windows' sums (the instances' own caches, as the overall summary)
//! and get their own sums per window, at N × each capacity or tier size.
//!
//! Windows are numbered from an origin (the trace's first request): window `k` holds the
//! rows with `origin + k·width ≤ timestamp_ns < origin + (k+1)·width`. Hits come from the
//! projector only (through [`QueryTotals`]).

use std::collections::BTreeMap;
use std::path::PathBuf;

use litehit_core::facts::FactRecord;
use litehit_core::projector::tiers::{TierBand, project_tiers};
use litehit_core::projector::{self, Capacity};

use super::QueryError;
use super::plan::{PoolRule, QuerySlots, TierPlan};
use super::totals::QueryTotals;
use crate::facts_files::FactsFiles;
use crate::span::TimeRange;

/// Per window: requests, input tokens, and hit tokens per slot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowTotals {
    /// Accounted rows of the instances in the window.
    pub requests: u64,
    /// Σ `input_token_len` of those rows.
    pub input_tokens: u64,
    /// Per slot: their hit tokens.
    pub hit_tokens: Vec<u64>,
    /// Per tier (with `--tiers`): hit tokens the tier served in the window.
    pub tier_hit_tokens: Vec<u64>,
    /// The shared pool lane's rows in the window (with [`QueryWindows::with_pool_lane`]).
    pub pool_requests: u64,
    /// Σ `input_token_len` of the pool's rows in the window.
    pub pool_input_tokens: u64,
    /// Per slot: the pool's hit tokens at N × the slot's capacity.
    pub pool_hit_tokens: Vec<u64>,
    /// Per tier (with `--tiers`): the hit tokens the pool's tier of N × its size served.
    pub pool_tier_hit_tokens: Vec<u64>,
}

/// The pool lane of `query --window`: its rows projected at N × each slot's capacity.
#[derive(Debug, Clone)]
struct PoolLane {
    name: String,
    /// N: the instances besides the pool.
    instances: u64,
    capacities: Vec<Capacity>,
    /// `block_bytes` of the pool's rows, once one was seen.
    block_bytes: Option<u64>,
    /// A second `block_bytes` among the pool's rows (an error at the end).
    other_block_bytes: Option<u64>,
    /// Per slot: N × the slot's blocks for `block_bytes`; `None` = unlimited.
    capacity_blocks: Vec<Option<u64>>,
    hit_blocks: Vec<u64>,
    /// With `--tiers`: the tiers at N × each size, as the summary's pool line has them.
    tiers: Option<TierPlan>,
    /// Per tier: N × the tier's blocks for `block_bytes`; `None` = unlimited.
    tier_capacity_blocks: Vec<Option<u64>>,
    tier_bands: Vec<TierBand>,
    tier_hit_blocks: Vec<u64>,
}

impl PoolLane {
    /// Projects a pool row at N × every slot into `hit_blocks`.
    fn project(&mut self, record: &FactRecord) {
        match self.block_bytes {
            Some(block_bytes) if block_bytes != record.block_bytes => {
                self.other_block_bytes.get_or_insert(record.block_bytes);
                return;
            }
            Some(_) => {}
            None => {
                self.block_bytes = Some(record.block_bytes);
                self.capacity_blocks = self
                    .capacities
                    .iter()
                    .map(|&capacity| {
                        projector::pooled_capacity_blocks(
                            capacity,
                            record.block_bytes,
                            self.instances,
                        )
                    })
                    .collect();
                if let Some(plan) = &self.tiers {
                    self.tier_capacity_blocks =
                        plan.pooled_capacity_blocks(record.block_bytes, self.instances);
                    self.tier_bands = plan.pooled_bands(record.block_bytes, self.instances);
                }
            }
        }
        if self.tiers.is_some() {
            project_tiers(&record.fact, &self.tier_bands, &mut self.tier_hit_blocks);
        }
        for (hits, capacity) in self.hit_blocks.iter_mut().zip(&self.capacity_blocks) {
            *hits = match *capacity {
                Some(blocks) => projector::project_blocks(&record.fact, blocks),
                None => projector::project_infinite(&record.fact),
            };
        }
    }
}

/// The windows of `query --window`, keyed by index: window `k` holds the accounted rows
/// with `origin_ns + k·width_ns ≤ timestamp_ns < origin_ns + (k+1)·width_ns`, and is
/// labelled with that interval clipped to the accounted span ([`Self::windows`]).
#[derive(Debug, Clone)]
pub struct QueryWindows {
    totals: QueryTotals,
    range: TimeRange,
    origin_ns: i64,
    width_ns: i64,
    windows: BTreeMap<i64, WindowTotals>,
    pool_lane: Option<PoolLane>,
}

impl QueryWindows {
    /// Windows of `width_ns` (at least 1) from `origin_ns`, accounting only `range`.
    #[must_use]
    pub fn new(slots: QuerySlots, range: TimeRange, origin_ns: i64, width_ns: i64) -> Self {
        Self::with_tiers_and_pool(slots, None, None, range, origin_ns, width_ns)
    }

    /// [`Self::new`], each window also split among `tiers` (then the binary's `write_windows`
    /// writes one line per window and tier instead of per capacity), leaving out the rows of the shared
    /// pool lane `pool` names ([`PoolRule::Recognised`]: windows are written as rows come,
    /// so the pool must be known before): a window sums the instances' own caches, as the
    /// overall summary does.
    #[must_use]
    pub fn with_tiers_and_pool(
        slots: QuerySlots,
        tiers: Option<TierPlan>,
        pool: Option<PoolRule>,
        range: TimeRange,
        origin_ns: i64,
        width_ns: i64,
    ) -> Self {
        Self {
            totals: QueryTotals::with_tiers(slots, tiers).with_pool(pool),
            range,
            origin_ns,
            width_ns: width_ns.max(1),
            windows: BTreeMap::new(),
            pool_lane: None,
        }
    }

    /// Also writes the pool lane's own lines per window and slot, at N × the slot's
    /// capacity (`instances` = N), after the instances' lines; with `--tiers`, per window
    /// and tier, the pool's tiers at N × each size. The pool is the one
    /// [`Self::with_tiers_and_pool`] names.
    #[must_use]
    pub fn with_pool_lane(mut self, name: &str, instances: u64) -> Self {
        let capacities = self.totals.slots().capacities();
        let tiers = self.totals.tiers().cloned();
        let tier_count = tiers.as_ref().map_or(0, |plan| plan.names.len());
        self.pool_lane = Some(PoolLane {
            name: name.to_owned(),
            instances,
            hit_blocks: vec![0; capacities.len()],
            capacity_blocks: vec![None; capacities.len()],
            capacities,
            block_bytes: None,
            other_block_bytes: None,
            tiers,
            tier_capacity_blocks: vec![None; tier_count],
            tier_bands: Vec::new(),
            tier_hit_blocks: vec![0; tier_count],
        });
        self
    }

    /// Fails when the pool's rows have several block geometries (one pool holds blocks of
    /// one size, as the summary's pool line says).
    pub fn check_pool(&self) -> Result<(), QueryError> {
        match &self.pool_lane {
            Some(PoolLane {
                name,
                block_bytes: Some(first),
                other_block_bytes: Some(other),
                ..
            }) => Err(QueryError::PoolGeometry {
                name: name.clone(),
                first: *first,
                other: *other,
            }),
            _ => Ok(()),
        }
    }

    /// A pool row: projected at N × C into its window.
    fn add_pool_record(&mut self, index: i64, record: &FactRecord) {
        let Some(pool) = &mut self.pool_lane else {
            return;
        };
        pool.project(record);
        let slot_count = pool.hit_blocks.len();
        let tier_count = pool.tier_hit_blocks.len();
        let window = self.windows.entry(index).or_insert_with(|| WindowTotals {
            hit_tokens: vec![0; slot_count],
            tier_hit_tokens: vec![0; tier_count],
            ..WindowTotals::default()
        });
        if window.pool_hit_tokens.len() != slot_count {
            window.pool_hit_tokens = vec![0; slot_count];
        }
        if window.pool_tier_hit_tokens.len() != tier_count {
            window.pool_tier_hit_tokens = vec![0; tier_count];
        }
        for (tokens, &hits) in window
            .pool_tier_hit_tokens
            .iter_mut()
            .zip(&pool.tier_hit_blocks)
        {
            *tokens = tokens.wrapping_add(hits.wrapping_mul(record.block_size_tokens));
        }
        window.pool_requests += 1;
        window.pool_input_tokens = window
            .pool_input_tokens
            .wrapping_add(record.input_token_len);
        for (tokens, &hits) in window.pool_hit_tokens.iter_mut().zip(&pool.hit_blocks) {
            *tokens = tokens.wrapping_add(hits.wrapping_mul(record.block_size_tokens));
        }
    }

    /// Projects `record` at every slot and adds it to its window (if it is in the range).
    pub fn add_record(&mut self, record: &FactRecord) {
        if !self.range.contains(record.timestamp_ns) {
            return;
        }
        let index = (i128::from(record.timestamp_ns) - i128::from(self.origin_ns))
            .div_euclid(i128::from(self.width_ns));
        let index = i64::try_from(index).unwrap_or(i64::MAX);
        if self.totals.is_pool(&record.instance_id) {
            self.add_pool_record(index, record);
            return;
        }
        let slot_count = self.totals.slots().len();
        let tier_count = self.totals.tiers().map_or(0, |plan| plan.names.len());
        // Only the projection: the windows keep their own sums (no per-instance totals).
        self.totals.project_record(record);
        // Rows come in time order, so their window is nearly always the last one.
        let window = if let Some(last) = self
            .windows
            .last_entry()
            .filter(|last| *last.key() == index)
        {
            last.into_mut()
        } else {
            self.windows.entry(index).or_insert_with(|| WindowTotals {
                hit_tokens: vec![0; slot_count],
                tier_hit_tokens: vec![0; tier_count],
                ..WindowTotals::default()
            })
        };
        window.requests += 1;
        window.input_tokens = window.input_tokens.wrapping_add(record.input_token_len);
        let block_size_tokens = record.block_size_tokens;
        let add = |sums: &mut [u64], blocks: &[u64]| {
            for (tokens, &hits) in sums.iter_mut().zip(blocks) {
                *tokens = tokens.wrapping_add(hits.wrapping_mul(block_size_tokens));
            }
        };
        add(&mut window.hit_tokens, self.totals.last_hit_blocks());
        add(
            &mut window.tier_hit_tokens,
            self.totals.last_tier_hit_blocks(),
        );
    }

    /// Whether no row (of the instances or the pool) fell in any window.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.windows.is_empty()
    }

    /// Every non-empty window in time order, with the start and end (ns) of its accounted
    /// part: the window clipped to the accounted span, so that a window `--from` or `--to`
    /// cuts (or the end of `--exclude-warmup`) is labelled with what it sums, never as a
    /// full one.
    pub fn windows(&self) -> impl Iterator<Item = (i64, i64, &WindowTotals)> {
        self.windows.iter().map(|(&index, totals)| {
            let start = self
                .origin_ns
                .saturating_add(index.saturating_mul(self.width_ns));
            let end = start.saturating_add(self.width_ns);
            // `to_ns == i64::MAX` is no end: it includes the rows at i64::MAX.
            let end = if self.range.to_ns == i64::MAX {
                end
            } else {
                end.min(self.range.to_ns)
            };
            (start.max(self.range.from_ns), end, totals)
        })
    }

    /// The slots, in output order.
    #[must_use]
    pub fn slots(&self) -> &QuerySlots {
        self.totals.slots()
    }

    /// The tiers, if any (then each window is split among them instead of the slots).
    #[must_use]
    pub fn tiers(&self) -> Option<&TierPlan> {
        self.totals.tiers()
    }

    /// The pool lane's own lines, when [`Self::with_pool_lane`] added them.
    #[must_use]
    pub fn pool_lane(&self) -> Option<PoolLaneCapacities<'_>> {
        self.pool_lane.as_ref().map(|pool| PoolLaneCapacities {
            name: &pool.name,
            instances: pool.instances,
            capacity_blocks: &pool.capacity_blocks,
            tier_capacity_blocks: &pool.tier_capacity_blocks,
        })
    }
}

/// The pool lane of `query --window` as its lines name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PoolLaneCapacities<'a> {
    /// The pool lane's `instance_id`.
    pub name: &'a str,
    /// N: the instances besides the pool.
    pub instances: u64,
    /// Per slot: N × the slot's blocks; `None` = unlimited.
    pub capacity_blocks: &'a [Option<u64>],
    /// Per tier: N × the tier's blocks; `None` = unlimited.
    pub tier_capacity_blocks: &'a [Option<u64>],
}

/// Reads `facts_paths` into windows (see [`QueryWindows`]).
pub fn query_windows(
    facts_paths: &[PathBuf],
    slots: QuerySlots,
    tiers: Option<TierPlan>,
    range: TimeRange,
    origin_ns: i64,
    width_ns: i64,
) -> Result<QueryWindows, QueryError> {
    query_windows_with_pool(
        facts_paths,
        slots,
        tiers,
        range,
        origin_ns,
        width_ns,
        None,
        None,
        None,
    )
}

/// [`query_windows`] leaving out the rows of the pool lane from the instances' lines (`pool`
/// is [`PoolRule::Recognised`], by [`super::trace_span_and_instances`]'s lanes); with `pool_instances` (N, see [`super::pool_instance_count`]) the pool's own
/// lines at N × C follow each window's. `kv_bytes_per_token`: as [`QueryPlan::kv_bytes_per_token`].
#[expect(clippy::too_many_arguments, reason = "the query's plan, spelled out")]
pub fn query_windows_with_pool(
    facts_paths: &[PathBuf],
    slots: QuerySlots,
    tiers: Option<TierPlan>,
    range: TimeRange,
    origin_ns: i64,
    width_ns: i64,
    pool: Option<PoolRule>,
    pool_instances: Option<u64>,
    kv_bytes_per_token: Option<u64>,
) -> Result<QueryWindows, QueryError> {
    let mut files = FactsFiles::open(facts_paths)?.with_kv_bytes_per_token(kv_bytes_per_token);
    let pool_name = pool
        .as_ref()
        .and_then(PoolRule::candidate)
        .map(str::to_owned);
    let mut windows =
        QueryWindows::with_tiers_and_pool(slots, tiers, pool, range, origin_ns, width_ns);
    if let (Some(name), Some(instances)) = (pool_name, pool_instances) {
        windows = windows.with_pool_lane(&name, instances);
    }
    let mut record = FactRecord::default();
    // The rows of every file together: no window's total can wrap (the reader refuses).
    while files.next_record(&mut record)? {
        windows.add_record(&record);
    }
    windows.check_pool()?;
    Ok(windows)
}
