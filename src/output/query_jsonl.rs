//! The facts query's JSONL output, byte-compatible with upstream (REFERENCE §8).
//!
//! One line per facts row (unless summary-only), then one summary line per `instance_id` in
//! byte order, then the overall summary. Slots keep the caller's order: the GB slots first
//! (duplicates and zeros allowed, negative = unlimited), then the optional block slots.
//!
//! Block slots are our extension: when present, each summary gets a `capacity_blocks` array
//! right after `capacity_gb`, and every per-slot array (`hit_blocks`, `hit_rates`,
//! `total_hit_blocks`, ...) holds the GB slots followed by the block slots. Without block
//! slots the output is exactly upstream's.
//!
//! Hits come from `projector` only. Numbers are formatted by hand (`%g`, in-place digits)
//! because the query must stream millions of rows per second; [`query_facts_files`] also
//! formats and writes the row lines on a second thread while the first reads, parses and
//! projects (the output is identical to the single-threaded [`QueryJsonlWriter`]).

use std::collections::HashMap;
use std::io::{self, Write};
use std::path::PathBuf;
use std::sync::mpsc;
use std::thread;

use super::line_buffer::LineBuffer;
use super::number_format::{
    G6_MAX_BYTES, INTEGER_MAX_BYTES, NEEDS_ESCAPE, append_g6, append_json_string,
};
use super::pool_detect::{LaneFingerprint, LaneFingerprints, PoolCheckError, RepeatedRows};
use super::summary::ratio;
use litehit_core::facts::FactRecord;
use litehit_core::facts::file::{FactsError, FactsReader};
use litehit_core::projector::tiers::{
    TierBand, TierMode, accumulated_tier_hit_blocks, project_tiers, tier_bands,
};
use litehit_core::projector::{self, Capacity};

/// Up to this many instances, an instance is looked up by a linear scan.
const LINEAR_SEARCH_INSTANCES: usize = 16;

/// Output is handed to the writer in chunks of about this size.
const FLUSH_THRESHOLD_BYTES: usize = 1 << 20;

/// The capacities a query projects at, in output order: every GB slot, then every block slot.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QuerySlots {
    /// Binary GB (`GB × 2^30` bytes, floored), negative (`-1`, `-inf`) = unlimited; echoed
    /// in `capacity_gb` as upstream does, with `%g` (`-1`, `-inf`).
    pub capacity_gb: Vec<f64>,
    /// Exact block counts, independent of `block_bytes`; echoed in `capacity_blocks`.
    pub capacity_blocks: Vec<u64>,
}

impl QuerySlots {
    /// Number of slots.
    #[must_use]
    pub fn len(&self) -> usize {
        self.capacity_gb.len() + self.capacity_blocks.len()
    }

    /// Whether there is no slot at all.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The slots as projector capacities, in output order.
    #[must_use]
    pub fn capacities(&self) -> Vec<Capacity> {
        let gigabytes = self.capacity_gb.iter().map(|&gb| Capacity::from_gb(gb));
        let blocks = self
            .capacity_blocks
            .iter()
            .map(|&blocks| Capacity::Blocks(blocks));
        gigabytes.chain(blocks).collect()
    }
}

/// Output switches of the query.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueryOptions {
    /// Skip the per-row lines; write only the summaries.
    pub summary_only: bool,
}

/// The accounted span lives in [`super::query_span`].
pub use super::query_span::TimeRange;
/// Cache tiers to split each summary's hits among (`query --tiers`); the same plan `watch
/// --tiers` shows live.
pub use litehit_core::projector::tiers::TierPlan;

/// What a query adds to upstream's: cache tiers and a time range (both off by default, and
/// then the output is byte for byte upstream's).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct QueryPlan {
    pub tiers: Option<TierPlan>,
    pub time_range: TimeRange,
    /// How to find the shared pool lane (`replay --pool`); `None`: the facts are taken as
    /// having none (every row in the overall line, as upstream).
    pub pool: Option<PoolRule>,
}

/// How the shared pool lane is found in facts: by its rows, whatever its name (see
/// [`super::pool_detect`]), or as a first pass over the same facts already found it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolRule {
    /// Recognise it by its rows while reading; `named` (`--pool NAME`) must be it.
    Recognise { named: Option<String> },
    /// Already recognised, by a first pass over the same facts: this lane (`None`: none).
    Recognised(Option<String>),
}

impl PoolRule {
    /// `--pool NAME` if given: recognised by its rows, and checked to be the named lane.
    #[must_use]
    pub fn from_flag(name: Option<&str>) -> Self {
        Self::Recognise {
            named: name.map(str::to_owned),
        }
    }

    /// The lane accumulated as the pool while reading: the recognised one, else the one it
    /// most likely is (`--pool NAME`, else replay's default name). When another lane turns
    /// out to be the pool, its rows are read a second time.
    #[must_use]
    pub fn candidate(&self) -> Option<&str> {
        match self {
            Self::Recognise { named } => Some(
                named
                    .as_deref()
                    .unwrap_or(litehit_core::engine::DEFAULT_POOL_NAME),
            ),
            Self::Recognised(name) => name.as_deref(),
        }
    }
}

/// The shared pool at the fleet's total capacity, beside the instances' own caches: with N
/// instances (every instance id but the pool's), slot C compares the pool at N × C with the
/// N caches of C each (the overall line, which leaves the pool out).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct PoolSummary {
    pub name: String,
    /// N: the instances besides the pool.
    pub instances: u64,
    /// Per slot: the pool's capacity in blocks, N × the slot's blocks; `None` = unlimited.
    pub pool_capacity_blocks: Vec<Option<u64>>,
    /// The pool's requests, input tokens and hits at `pool_capacity_blocks`; with `--tiers`,
    /// the hits each tier of N × its size served.
    pub pool: SlotTotals,
    /// Per tier (with `--tiers`): N × the tier's size in blocks; `None` = unlimited.
    pub pool_tier_capacity_blocks: Vec<Option<u64>>,
}

/// Cumulative integers of one summary line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlotTotals {
    pub requests: u64,
    pub total_input_tokens: u64,
    /// Per slot, in output order.
    pub total_hit_blocks: Vec<u64>,
    /// Per slot: Σ hit blocks × the row's `block_size_tokens`.
    pub total_hit_tokens: Vec<u64>,
    /// Per tier (empty without `--tiers`): hit blocks the tier served.
    pub tier_hit_blocks: Vec<u64>,
    /// Per tier: Σ served blocks × the row's `block_size_tokens`.
    pub tier_hit_tokens: Vec<u64>,
}

impl SlotTotals {
    /// Takes `lane`'s sums (added before) out of these, wrapping as the sums do.
    fn subtract(&mut self, lane: &Self) {
        self.requests -= lane.requests;
        self.total_input_tokens = self
            .total_input_tokens
            .wrapping_sub(lane.total_input_tokens);
        for (sums, taken) in [
            (&mut self.total_hit_blocks, &lane.total_hit_blocks),
            (&mut self.total_hit_tokens, &lane.total_hit_tokens),
            (&mut self.tier_hit_blocks, &lane.tier_hit_blocks),
            (&mut self.tier_hit_tokens, &lane.tier_hit_tokens),
        ] {
            for (sum, &value) in sums.iter_mut().zip(taken) {
                *sum = sum.wrapping_sub(value);
            }
        }
    }

    fn new(slot_count: usize, tier_count: usize) -> Self {
        Self {
            requests: 0,
            total_input_tokens: 0,
            total_hit_blocks: vec![0; slot_count],
            total_hit_tokens: vec![0; slot_count],
            tier_hit_blocks: vec![0; tier_count],
            tier_hit_tokens: vec![0; tier_count],
        }
    }

    /// Share of the input tokens each tier served, then the miss share (input tokens no tier
    /// served); 0 when there are no input tokens.
    #[must_use]
    pub fn tier_shares(&self) -> (Vec<f64>, f64) {
        let shares = self
            .tier_hit_tokens
            .iter()
            .map(|&tokens| ratio(tokens, self.total_input_tokens))
            .collect();
        let served = self
            .tier_hit_tokens
            .iter()
            .fold(0_u64, |sum, &tokens| sum.wrapping_add(tokens));
        let missed = self.total_input_tokens.saturating_sub(served);
        (shares, ratio(missed, self.total_input_tokens))
    }

    /// Cumulative token hit rate per slot (0 when there are no input tokens).
    #[must_use]
    pub fn hit_rates(&self) -> Vec<f64> {
        self.total_hit_tokens
            .iter()
            .map(|&tokens| ratio(tokens, self.total_input_tokens))
            .collect()
    }
}

/// What a finished query summed up: per instance (byte order of `instance_id`) and overall.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuerySummary {
    pub per_instance: Vec<(String, SlotTotals)>,
    /// Every row, or with a pool lane every row but the pool's (the instances' own caches).
    pub overall: SlotTotals,
    /// The pool at N × C, when the facts have a pool lane.
    pub pool: Option<PoolSummary>,
    /// The lanes with rows in more than one of the files read (for a note: replay shards
    /// are disjoint by instance); empty when the pool was recognised by a first pass.
    pub lanes_in_several_files: Vec<LaneFingerprint>,
    /// [`LaneFingerprints::partial_pool_note`], for the command to print.
    pub pool_note: Option<String>,
    /// The distinct `(block_bytes, block_size_tokens)` of the rows, in first-seen order (for
    /// the command's warning on an implausible KV size).
    pub geometries: Vec<(u64, u64)>,
}

/// The query failed: a facts file could not be read, or the output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    #[error(transparent)]
    Facts(#[from] FactsError),
    #[error("write to output log failed")]
    Write(#[source] io::Error),
    /// The output thread could not start (out of memory or threads).
    #[error("starting the output thread")]
    Spawn(#[source] io::Error),
    #[error(transparent)]
    Pool(#[from] PoolCheckError),
    #[error(transparent)]
    RepeatedRows(#[from] RepeatedRows),
    #[error(
        "{path}: lane {name} is the shared pool lane (its rows are every other lane's), and its \
         N × C comparison reads its rows a second time, which {path} cannot be: pass the facts \
         as a file, or name the lane with --pool {name} (then it is read once)"
    )]
    PoolNotRereadable { name: String, path: String },
    #[error(
        "pool {name}: its rows have several block geometries ({first} and {other} bytes per \
         block); one shared pool holds blocks of one size"
    )]
    PoolGeometry {
        name: String,
        first: u64,
        other: u64,
    },
    #[error(transparent)]
    EmptySpan(#[from] super::query_span::EmptySpan),
}

/// Projection at every slot plus the running totals, without any output.
#[derive(Debug, Clone)]
pub struct QueryTotals {
    slots: QuerySlots,
    capacities: Vec<Capacity>,
    /// `block_bytes` that `slot_capacity_blocks` was computed for.
    projected_block_bytes: Option<u64>,
    /// Per slot: capacity in blocks for `projected_block_bytes`; `None` = unlimited.
    slot_capacity_blocks: Vec<Option<u64>>,
    hit_blocks: Vec<u64>,
    instance_index: HashMap<String, usize>,
    instances: Vec<(String, SlotTotals)>,
    last_instance: Option<usize>,
    overall: SlotTotals,
    tiers: Option<TierPlan>,
    /// Per tier: the band of the capacity axis it serves, for `projected_block_bytes`.
    tier_bands: Vec<TierBand>,
    tier_hit_blocks: Vec<u64>,
    /// How the pool lane is found (`None`: the facts are taken as having none).
    pool_rule: Option<PoolRule>,
    /// The rows of the lane that is (or most likely is) the pool: [`PoolRule::candidate`].
    pool: Option<PoolTotals>,
    /// Every row's lane fingerprint, for [`PoolRule::Recognise`].
    lanes: Option<LaneFingerprints>,
    /// The distinct `(block_bytes, block_size_tokens)` of the rows, in first-seen order.
    geometries: Vec<(u64, u64)>,
}

/// The pool lane's facts on the capacity axis: N is known only at the end, and the
/// accumulator answers N × C then, exactly, for every row seen.
#[derive(Debug, Clone)]
struct PoolTotals {
    /// The lane accumulated.
    name: String,
    accumulator: projector::CapacityAxisAccumulator,
    requests: u64,
    input_tokens: u64,
    /// `(block_size_tokens, block_bytes)` of the pool's rows, once one was seen.
    geometry: Option<(u64, u64)>,
    /// A second `block_bytes` among the pool's rows (an error at the end).
    other_block_bytes: Option<u64>,
}
impl QueryTotals {
    /// Totals over `slots`, all zero.
    #[must_use]
    pub fn new(slots: QuerySlots) -> Self {
        Self::with_tiers(slots, None)
    }

    /// Totals over `slots`, all zero, that also split the hits among `tiers`.
    #[must_use]
    pub fn with_tiers(slots: QuerySlots, tiers: Option<TierPlan>) -> Self {
        let capacities = slots.capacities();
        let slot_count = capacities.len();
        let tier_count = tiers.as_ref().map_or(0, |plan| plan.capacities.len());
        Self {
            slots,
            capacities,
            projected_block_bytes: None,
            slot_capacity_blocks: vec![None; slot_count],
            hit_blocks: vec![0; slot_count],
            instance_index: HashMap::new(),
            instances: Vec::new(),
            last_instance: None,
            overall: SlotTotals::new(slot_count, tier_count),
            tiers,
            tier_bands: Vec::new(),
            tier_hit_blocks: vec![0; tier_count],
            pool_rule: None,
            pool: None,
            lanes: None,
            geometries: Vec::new(),
        }
    }

    /// Also finds the shared pool lane by `rule` and compares it (see [`PoolSummary`]);
    /// with [`PoolRule::Recognise`], every row must also go through [`Self::observe`].
    #[must_use]
    pub fn with_pool(mut self, rule: Option<PoolRule>) -> Self {
        self.pool = rule
            .as_ref()
            .and_then(PoolRule::candidate)
            .map(PoolTotals::new);
        self.lanes = matches!(rule, Some(PoolRule::Recognise { .. })).then(LaneFingerprints::new);
        self.pool_rule = rule;
        self
    }

    /// Whether `instance_id` is the lane accumulated as the pool ([`PoolRule::candidate`]:
    /// with [`PoolRule::Recognised`], the pool lane).
    #[must_use]
    pub fn is_pool(&self, instance_id: &str) -> bool {
        self.pool
            .as_ref()
            .is_some_and(|pool| pool.name == instance_id)
    }

    /// The rows that follow are from file `index` of the files read (in order).
    pub fn start_file(&mut self, index: usize) {
        if let Some(lanes) = &mut self.lanes {
            lanes.start_file(index);
        }
    }

    /// Adds a row, accounted or not, to its lane's fingerprint (the pool lane is recognised
    /// over every row); nothing without [`PoolRule::Recognise`].
    pub fn observe(&mut self, record: &FactRecord) {
        if let Some(lanes) = &mut self.lanes {
            lanes.observe(record);
        }
    }

    /// The pool lane, once every row was observed: recognised by its rows (and `--pool NAME`
    /// checked), or as the rule says.
    pub fn resolve_pool(&self) -> Result<Option<String>, QueryError> {
        Ok(match (&self.pool_rule, &self.lanes) {
            (Some(PoolRule::Recognise { named }), Some(lanes)) => {
                lanes.recognise_pool(named.as_deref())?.map(str::to_owned)
            }
            (Some(PoolRule::Recognised(name)), _) => name.clone(),
            _ => None,
        })
    }

    /// `Err` when two of `facts_paths` (the files read, in order) hold the same rows of a lane
    /// (see [`LaneFingerprints::check_no_repeated_rows`]); nothing to check without
    /// [`PoolRule::Recognise`] (a first pass checked).
    pub fn check_no_repeated_rows(&self, facts_paths: &[PathBuf]) -> Result<(), RepeatedRows> {
        self.lanes
            .as_ref()
            .map_or(Ok(()), |lanes| lanes.check_no_repeated_rows(facts_paths))
    }

    /// Indexes of the files with rows of lane `instance_id` (all of them when not known).
    #[must_use]
    pub fn files_of(&self, instance_id: &str, file_count: usize) -> Vec<usize> {
        self.lanes
            .as_ref()
            .and_then(|lanes| lanes.lane(instance_id))
            .map_or_else(|| (0..file_count).collect(), LaneFingerprint::file_indexes)
    }

    /// Starts the pool's accumulation over, for lane `name` (whose accounted rows then go
    /// through [`Self::add_pool_row`]).
    pub fn restart_pool(&mut self, name: &str) {
        self.pool = Some(PoolTotals::new(name));
    }

    /// Adds an accounted row of the pool lane to the pool's accumulation only.
    pub fn add_pool_row(&mut self, record: &FactRecord) {
        if let Some(pool) = &mut self.pool {
            pool.add(record);
        }
    }

    /// The slots, in output order.
    #[must_use]
    pub fn slots(&self) -> &QuerySlots {
        &self.slots
    }

    /// The tiers, if any.
    #[must_use]
    pub fn tiers(&self) -> Option<&TierPlan> {
        self.tiers.as_ref()
    }

    /// Projects `record` at every slot, adds it to its instance's totals and the overall
    /// totals, and returns its hit blocks per slot.
    pub fn add_record(&mut self, record: &FactRecord) -> &[u64] {
        let geometry = (record.block_bytes, record.block_size_tokens);
        if self.geometries.last() != Some(&geometry) && !self.geometries.contains(&geometry) {
            self.geometries.push(geometry);
        }
        self.project(record);
        let instance = self.instance_slot(&record.instance_id);
        let block_size_tokens = record.block_size_tokens;
        if self.is_pool(&record.instance_id)
            && let Some(pool) = &mut self.pool
        {
            pool.add(record);
        }
        // Every row goes into the overall totals: the pool's lane is known only at the end,
        // and then its own totals are taken out again (see `try_into_summary`).
        for totals in [&mut self.instances[instance].1, &mut self.overall] {
            totals.requests += 1;
            // Exact: the reader refuses a row that would take the input tokens of all the
            // rows past u64, and a row's hit tokens never exceed its input tokens.
            totals.total_input_tokens = totals
                .total_input_tokens
                .wrapping_add(record.input_token_len);
            for ((blocks, tokens), &hits) in totals
                .total_hit_blocks
                .iter_mut()
                .zip(&mut totals.total_hit_tokens)
                .zip(&self.hit_blocks)
            {
                *blocks = blocks.wrapping_add(hits);
                *tokens = tokens.wrapping_add(hits.wrapping_mul(block_size_tokens));
            }
            for ((blocks, tokens), &hits) in totals
                .tier_hit_blocks
                .iter_mut()
                .zip(&mut totals.tier_hit_tokens)
                .zip(&self.tier_hit_blocks)
            {
                *blocks = blocks.wrapping_add(hits);
                *tokens = tokens.wrapping_add(hits.wrapping_mul(block_size_tokens));
            }
        }
        &self.hit_blocks
    }

    /// Projects `record` at every slot (and tier) without adding it to any total (what
    /// `--window` needs: it keeps its own sums per window); returns its hit blocks per slot.
    pub fn project_record(&mut self, record: &FactRecord) -> &[u64] {
        self.project(record);
        &self.hit_blocks
    }

    /// Hit blocks per slot for the record last added.
    #[must_use]
    pub fn last_hit_blocks(&self) -> &[u64] {
        &self.hit_blocks
    }

    /// Hit blocks each tier served for the record last added (empty without tiers).
    #[must_use]
    pub fn last_tier_hit_blocks(&self) -> &[u64] {
        &self.tier_hit_blocks
    }

    /// The totals, instances in byte order of `instance_id`, with lane `pool` (from
    /// [`Self::resolve_pool`]) left out of the overall totals and compared at N × C; its
    /// rows must have been accumulated ([`Self::is_pool`]). Fails only for a pool
    /// whose rows have several block sizes.
    pub fn try_into_summary(mut self, pool: Option<&str>) -> Result<QuerySummary, QueryError> {
        let pool = match (pool, &self.pool) {
            (Some(name), Some(totals)) if totals.name == name => {
                totals.summary(&self.capacities, self.tiers.as_ref(), self.instances.len())?
            }
            _ => None,
        };
        if let Some(pool) = &pool
            && let Some((_, lane)) = self.instances.iter().find(|(id, _)| *id == pool.name)
        {
            // The pool is not one more instance: the overall line is the instances' own
            // caches. Wrapping sums, so taking the lane out again is exact.
            self.overall.subtract(lane);
        }
        let several_files = self.lanes.as_ref().map_or_else(Vec::new, |lanes| {
            lanes.lanes_in_several_files().cloned().collect()
        });
        let pool_note = self
            .lanes
            .as_ref()
            .and_then(LaneFingerprints::partial_pool_note);
        let mut summary = self.into_summary();
        summary.pool = pool;
        summary.lanes_in_several_files = several_files;
        summary.pool_note = pool_note;
        Ok(summary)
    }

    /// The totals, instances in byte order of `instance_id`, every row in the overall
    /// totals (no pool comparison: see [`Self::try_into_summary`]).
    #[must_use]
    pub fn into_summary(self) -> QuerySummary {
        let mut per_instance = self.instances;
        per_instance.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        QuerySummary {
            per_instance,
            overall: self.overall,
            pool: None,
            lanes_in_several_files: Vec::new(),
            pool_note: None,
            geometries: self.geometries,
        }
    }

    /// Fills `hit_blocks` for `record` at every slot, through the projector.
    fn project(&mut self, record: &FactRecord) {
        if self.projected_block_bytes != Some(record.block_bytes) {
            for (capacity_blocks, capacity) in
                self.slot_capacity_blocks.iter_mut().zip(&self.capacities)
            {
                *capacity_blocks = capacity.blocks(record.block_bytes);
            }
            if let Some(plan) = &self.tiers {
                self.tier_bands = tier_bands(&plan.capacities, record.block_bytes, plan.mode);
            }
            self.projected_block_bytes = Some(record.block_bytes);
        }
        if self.tiers.is_some() {
            project_tiers(&record.fact, &self.tier_bands, &mut self.tier_hit_blocks);
        }
        for (hits, capacity_blocks) in self.hit_blocks.iter_mut().zip(&self.slot_capacity_blocks) {
            *hits = match *capacity_blocks {
                Some(capacity_blocks) => projector::project_blocks(&record.fact, capacity_blocks),
                None => projector::project_infinite(&record.fact),
            };
        }
    }

    /// Room for one more instance, fallibly: call before [`Self::observe`] and
    /// [`Self::add_record`] (its tables' growth is the one that can be large; the reader's memory checks cover the rest).
    pub fn try_reserve_instance(&mut self) -> Result<(), std::collections::TryReserveError> {
        if let Some(lanes) = &mut self.lanes {
            lanes.try_reserve_lane()?;
        }
        self.instances.try_reserve(1)?;
        self.instance_index.try_reserve(1)
    }

    /// Index of the totals of `instance_id`, created on first sight.
    fn instance_slot(&mut self, instance_id: &str) -> usize {
        if let Some(last) = self.last_instance
            && self.instances[last].0 == instance_id
        {
            return last;
        }
        // A few instances (the usual case) are found faster by scanning than by hashing.
        let known = if self.instances.len() <= LINEAR_SEARCH_INSTANCES {
            self.instances.iter().position(|(id, _)| id == instance_id)
        } else {
            self.instance_index.get(instance_id).copied()
        };
        let index = if let Some(index) = known {
            index
        } else {
            let index = self.instances.len();
            self.instances.push((
                instance_id.to_owned(),
                SlotTotals::new(self.capacities.len(), self.tier_hit_blocks.len()),
            ));
            self.instance_index.insert(instance_id.to_owned(), index);
            index
        };
        self.last_instance = Some(index);
        index
    }
}

impl PoolTotals {
    fn new(name: &str) -> Self {
        Self {
            name: name.to_owned(),
            accumulator: projector::CapacityAxisAccumulator::new(),
            requests: 0,
            input_tokens: 0,
            geometry: None,
            other_block_bytes: None,
        }
    }

    fn add(&mut self, record: &FactRecord) {
        match self.geometry {
            None => self.geometry = Some((record.block_size_tokens, record.block_bytes)),
            Some((_, block_bytes)) if block_bytes != record.block_bytes => {
                self.other_block_bytes.get_or_insert(record.block_bytes);
            }
            Some(_) => {}
        }
        self.accumulator.add_fact(&record.fact);
        self.requests += 1;
        self.input_tokens = self.input_tokens.wrapping_add(record.input_token_len);
    }

    /// The comparison at `capacities`, with `instance_count` instance ids with accounted
    /// rows (the pool's among them); `None` when the pool has no accounted rows.
    fn summary(
        &self,
        capacities: &[Capacity],
        tiers: Option<&TierPlan>,
        instance_count: usize,
    ) -> Result<Option<PoolSummary>, QueryError> {
        let name = &self.name;
        let Some((block_size_tokens, block_bytes)) = self.geometry else {
            return Ok(None);
        };
        if let Some(other) = self.other_block_bytes {
            return Err(QueryError::PoolGeometry {
                name: name.clone(),
                first: block_bytes,
                other,
            });
        }
        let instances = instance_count as u64 - 1;
        let pool_capacity_blocks: Vec<Option<u64>> = capacities
            .iter()
            .map(|&capacity| projector::pooled_capacity_blocks(capacity, block_bytes, instances))
            .collect();
        let total_hit_blocks: Vec<u64> = pool_capacity_blocks
            .iter()
            .map(|capacity| match *capacity {
                Some(blocks) => self.accumulator.hit_blocks_at(blocks),
                None => self.accumulator.infinite_hit_blocks(),
            })
            .collect();
        let tokens = |blocks: &[u64]| -> Vec<u64> {
            blocks
                .iter()
                .map(|&blocks| blocks.wrapping_mul(block_size_tokens))
                .collect()
        };
        let total_hit_tokens = tokens(&total_hit_blocks);
        // The tiers at N × each size: bands of the pooled sizes on the pool's own axis.
        let pool_tier_capacity_blocks = tiers.map_or_else(Vec::new, |plan| {
            plan.pooled_capacity_blocks(block_bytes, instances)
        });
        let tier_hit_blocks = tiers.map_or_else(Vec::new, |plan| {
            accumulated_tier_hit_blocks(
                &self.accumulator,
                &plan.pooled_bands(block_bytes, instances),
            )
        });
        let tier_hit_tokens = tokens(&tier_hit_blocks);
        Ok(Some(PoolSummary {
            name: name.clone(),
            instances,
            pool_capacity_blocks,
            pool: SlotTotals {
                requests: self.requests,
                total_input_tokens: self.input_tokens,
                total_hit_blocks,
                total_hit_tokens,
                tier_hit_blocks,
                tier_hit_tokens,
            },
            pool_tier_capacity_blocks,
        }))
    }
}

impl QuerySummary {
    /// The summary lines: one per instance, then the overall one.
    #[must_use]
    pub fn to_jsonl(&self, slots: &QuerySlots) -> Vec<u8> {
        self.to_jsonl_with_tiers(slots, None)
    }

    /// The summary lines, each with the tier fields after `hit_rates` when `tiers` is given.
    #[must_use]
    pub fn to_jsonl_with_tiers(&self, slots: &QuerySlots, tiers: Option<&TierPlan>) -> Vec<u8> {
        let mut out = Vec::new();
        for (instance_id, totals) in &self.per_instance {
            append_summary_line(&mut out, Some(instance_id), totals, slots, tiers);
        }
        append_summary_line(&mut out, None, &self.overall, slots, tiers);
        if let Some(pool) = &self.pool {
            append_pool_line(&mut out, pool, &self.overall, slots);
            if let Some(tiers) = tiers {
                // The tier fields go inside the pool line, before its closing brace.
                out.truncate(out.len() - 2);
                append_pool_tier_fields(&mut out, pool, &self.overall, tiers);
                out.extend_from_slice(b"}\n");
            }
        }
        out
    }
}

/// The fields of one row line.
#[derive(Debug, Clone, Copy)]
struct RowLine<'a> {
    trace_id: &'a str,
    instance_id: &'a str,
    timestamp_ns: i64,
    input_token_len: u64,
    block_size_tokens: u64,
    hit_blocks: &'a [u64],
}

impl<'a> RowLine<'a> {
    fn new(record: &'a FactRecord, hit_blocks: &'a [u64]) -> Self {
        Self {
            trace_id: &record.trace_id,
            instance_id: &record.instance_id,
            timestamp_ns: record.timestamp_ns,
            input_token_len: record.input_token_len,
            block_size_tokens: record.block_size_tokens,
            hit_blocks,
        }
    }
}

/// Appends one row line: `{"trace_id":..,"instance_id":..,"timestamp_ns":..,
/// "input_token_len":..,"hit_blocks":[..],"hit_rates":[..]}`.
fn append_row_line(out: &mut LineBuffer, row: &RowLine<'_>) {
    out.reserve(
        ROW_FIXED_BYTES
            + 2 * (row.trace_id.len() + row.instance_id.len())
            + row.hit_blocks.len() * (INTEGER_MAX_BYTES + G6_MAX_BYTES + 2),
    );
    out.extend(b"{\"trace_id\":");
    push_json_string(out, row.trace_id);
    out.extend(b",\"instance_id\":");
    push_json_string(out, row.instance_id);
    out.extend(b",\"timestamp_ns\":");
    out.push_i64(row.timestamp_ns);
    out.extend(b",\"input_token_len\":");
    out.push_u64(row.input_token_len);
    out.extend(b",\"hit_blocks\":[");
    for (index, &hits) in row.hit_blocks.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.push_u64(hits);
    }
    out.extend(b"],\"hit_rates\":[");
    // Neighbouring slots often have equal hits (a saturated curve): reuse the text.
    let mut previous: Option<(u64, [u8; G6_MAX_BYTES], usize)> = None;
    for (index, &hits) in row.hit_blocks.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        match &previous {
            Some((previous_hits, text, length)) if *previous_hits == hits => {
                out.push_g6_text(text, *length);
            }
            _ => {
                let hit_tokens = hits.wrapping_mul(row.block_size_tokens);
                let (text, length) = out.push_g6(ratio(hit_tokens, row.input_token_len));
                previous = Some((hits, text, length));
            }
        }
    }
    out.extend(b"]}\n");
}

/// Streams facts records to upstream-format JSONL and keeps the summary totals (single
/// thread; [`query_facts_files`] is the two-thread version of the same output).
#[derive(Debug)]
pub struct QueryJsonlWriter<W: Write> {
    out: W,
    buffer: LineBuffer,
    totals: QueryTotals,
    options: QueryOptions,
}

impl<W: Write> QueryJsonlWriter<W> {
    /// A writer projecting at `slots`.
    pub fn new(out: W, slots: QuerySlots, options: QueryOptions) -> Self {
        Self {
            out,
            buffer: LineBuffer::with_capacity(FLUSH_THRESHOLD_BYTES + 64 * 1024),
            totals: QueryTotals::new(slots),
            options,
        }
    }

    /// Projects one record at every slot, adds it to the totals and writes its line.
    pub fn write_record(&mut self, record: &FactRecord) -> io::Result<()> {
        let hit_blocks = self.totals.add_record(record);
        if !self.options.summary_only {
            append_row_line(&mut self.buffer, &RowLine::new(record, hit_blocks));
            if self.buffer.len() >= FLUSH_THRESHOLD_BYTES {
                self.out.write_all(self.buffer.as_bytes())?;
                self.buffer.clear();
            }
        }
        Ok(())
    }

    /// Writes the summary lines, flushes and returns the writer and the totals.
    pub fn finish(mut self) -> io::Result<(W, QuerySummary)> {
        self.out.write_all(self.buffer.as_bytes())?;
        let slots = self.totals.slots().clone();
        let summary = self.totals.into_summary();
        self.out.write_all(&summary.to_jsonl(&slots))?;
        self.out.flush()?;
        Ok((self.out, summary))
    }
}

/// Appends a quoted, upstream-escaped JSON string; needs `2 × len + 2` bytes of room.
fn push_json_string(out: &mut LineBuffer, value: &str) {
    let bytes = value.as_bytes();
    out.push(b'"');
    if bytes.iter().any(|&b| NEEDS_ESCAPE[usize::from(b)]) {
        let mut escaped = Vec::with_capacity(bytes.len() + 8);
        append_json_string(&mut escaped, value);
        out.extend(&escaped[1..escaped.len() - 1]);
    } else {
        out.extend(bytes);
    }
    out.push(b'"');
}

/// Bytes of a row line besides the strings and the per-slot numbers (keys, two integers).
const ROW_FIXED_BYTES: usize = 128 + 2 * INTEGER_MAX_BYTES;

/// Rows handed from the reading thread to the formatting thread at a time.
const BATCH_ROWS: usize = 4096;

/// Batches in flight between the two threads (bounded, so memory stays small).
const BATCHES_IN_FLIGHT: usize = 4;

/// Projected rows on their way to the formatting thread, strings copied out of the record.
#[derive(Debug, Default)]
struct RowBatch {
    /// `trace_id` then `instance_id` of each row, back to back.
    text: String,
    rows: Vec<BatchRow>,
    /// `slot_count` hit counts per row.
    hit_blocks: Vec<u64>,
}

#[derive(Debug, Clone, Copy)]
struct BatchRow {
    trace_id_end: usize,
    instance_id_end: usize,
    timestamp_ns: i64,
    input_token_len: u64,
    block_size_tokens: u64,
}

impl RowBatch {
    fn push(&mut self, record: &FactRecord, hit_blocks: &[u64]) {
        self.text.push_str(&record.trace_id);
        let trace_id_end = self.text.len();
        self.text.push_str(&record.instance_id);
        self.rows.push(BatchRow {
            trace_id_end,
            instance_id_end: self.text.len(),
            timestamp_ns: record.timestamp_ns,
            input_token_len: record.input_token_len,
            block_size_tokens: record.block_size_tokens,
        });
        self.hit_blocks.extend_from_slice(hit_blocks);
    }

    fn clear(&mut self) {
        self.text.clear();
        self.rows.clear();
        self.hit_blocks.clear();
    }

    /// Formats every row into `out`, writing to `writer` whenever `out` is full enough.
    fn write_lines(
        &self,
        slot_count: usize,
        out: &mut LineBuffer,
        writer: &mut impl Write,
    ) -> io::Result<()> {
        let mut text_start = 0;
        // By index, not `chunks_exact`: with no slots (`--tiers` alone) every row still has
        // its line, with empty arrays.
        for (index, row) in self.rows.iter().enumerate() {
            let hit_blocks = &self.hit_blocks[index * slot_count..(index + 1) * slot_count];
            let line = RowLine {
                trace_id: &self.text[text_start..row.trace_id_end],
                instance_id: &self.text[row.trace_id_end..row.instance_id_end],
                timestamp_ns: row.timestamp_ns,
                input_token_len: row.input_token_len,
                block_size_tokens: row.block_size_tokens,
                hit_blocks,
            };
            text_start = row.instance_id_end;
            append_row_line(out, &line);
            if out.len() >= FLUSH_THRESHOLD_BYTES {
                writer.write_all(out.as_bytes())?;
                out.clear();
            }
        }
        Ok(())
    }
}

fn append_u64_array(out: &mut Vec<u8>, values: &[u64]) {
    let mut itoa = itoa::Buffer::new();
    out.push(b'[');
    for (index, &value) in values.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        out.extend_from_slice(itoa.format(value).as_bytes());
    }
    out.push(b']');
}

/// Block counts as a JSON array, `-1` for unlimited (`None`), as upstream writes ∞.
fn append_blocks_or_unlimited(out: &mut Vec<u8>, values: &[Option<u64>]) {
    out.push(b'[');
    for (index, &value) in values.iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        append_block_count_or_unlimited(out, value);
    }
    out.push(b']');
}

/// One block count, `-1` for unlimited (`None`): a JSON number or a CSV cell.
pub(crate) fn append_block_count_or_unlimited(out: &mut Vec<u8>, value: Option<u64>) {
    match value {
        Some(blocks) => out.extend_from_slice(itoa::Buffer::new().format(blocks).as_bytes()),
        None => out.extend_from_slice(b"-1"),
    }
}

fn append_g6_array(out: &mut Vec<u8>, values: impl IntoIterator<Item = f64>) {
    out.push(b'[');
    for (index, value) in values.into_iter().enumerate() {
        if index > 0 {
            out.push(b',');
        }
        append_g6(out, value);
    }
    out.push(b']');
}

fn append_summary_line(
    out: &mut Vec<u8>,
    instance_id: Option<&str>,
    totals: &SlotTotals,
    slots: &QuerySlots,
    tiers: Option<&TierPlan>,
) {
    let mut itoa = itoa::Buffer::new();
    out.extend_from_slice(b"{\"summary\":true,");
    if let Some(instance_id) = instance_id {
        out.extend_from_slice(b"\"instance_id\":");
        append_json_string(out, instance_id);
        out.push(b',');
    }
    out.extend_from_slice(b"\"requests\":");
    out.extend_from_slice(itoa.format(totals.requests).as_bytes());
    out.extend_from_slice(b",\"total_input_tokens\":");
    out.extend_from_slice(itoa.format(totals.total_input_tokens).as_bytes());
    out.extend_from_slice(b",\"capacity_gb\":");
    append_g6_array(out, slots.capacity_gb.iter().copied());
    if !slots.capacity_blocks.is_empty() {
        out.extend_from_slice(b",\"capacity_blocks\":");
        append_u64_array(out, &slots.capacity_blocks);
    }
    out.extend_from_slice(b",\"total_hit_blocks\":");
    append_u64_array(out, &totals.total_hit_blocks);
    out.extend_from_slice(b",\"total_hit_tokens\":");
    append_u64_array(out, &totals.total_hit_tokens);
    out.extend_from_slice(b",\"hit_rates\":");
    append_g6_array(out, totals.hit_rates());
    if let Some(tiers) = tiers {
        append_tier_fields(out, totals, tiers);
    }
    out.extend_from_slice(b"}\n");
}

/// The pool comparison line, after the overall one (only with a pool lane):
/// `{"summary":true,"pool":NAME,"instances":N,"requests":..,"total_input_tokens":..,
/// "capacity_gb":[..],("capacity_blocks":[..],)"pool_capacity_blocks":[N × C, -1 = unlimited],
/// "pool_total_hit_blocks":[..],"pool_total_hit_tokens":[..],"pool_hit_rates":[..],
/// "per_instance_total_hit_tokens":[..],"per_instance_hit_rates":[..]}`.
fn append_pool_line(
    out: &mut Vec<u8>,
    pool: &PoolSummary,
    instances: &SlotTotals,
    slots: &QuerySlots,
) {
    let mut itoa = itoa::Buffer::new();
    out.extend_from_slice(b"{\"summary\":true,\"pool\":");
    append_json_string(out, &pool.name);
    out.extend_from_slice(b",\"instances\":");
    out.extend_from_slice(itoa.format(pool.instances).as_bytes());
    out.extend_from_slice(b",\"requests\":");
    out.extend_from_slice(itoa.format(pool.pool.requests).as_bytes());
    out.extend_from_slice(b",\"total_input_tokens\":");
    out.extend_from_slice(itoa.format(pool.pool.total_input_tokens).as_bytes());
    out.extend_from_slice(b",\"capacity_gb\":");
    append_g6_array(out, slots.capacity_gb.iter().copied());
    if !slots.capacity_blocks.is_empty() {
        out.extend_from_slice(b",\"capacity_blocks\":");
        append_u64_array(out, &slots.capacity_blocks);
    }
    out.extend_from_slice(b",\"pool_capacity_blocks\":");
    append_blocks_or_unlimited(out, &pool.pool_capacity_blocks);
    out.extend_from_slice(b",\"pool_total_hit_blocks\":");
    append_u64_array(out, &pool.pool.total_hit_blocks);
    out.extend_from_slice(b",\"pool_total_hit_tokens\":");
    append_u64_array(out, &pool.pool.total_hit_tokens);
    out.extend_from_slice(b",\"pool_hit_rates\":");
    append_g6_array(out, pool.pool.hit_rates());
    out.extend_from_slice(b",\"per_instance_total_hit_tokens\":");
    append_u64_array(out, &instances.total_hit_tokens);
    out.extend_from_slice(b",\"per_instance_hit_rates\":");
    append_g6_array(out, instances.hit_rates());
    out.extend_from_slice(b"}\n");
}

/// With `--tiers`, the pool line's tier fields: `,"pool_tier_capacity_blocks":[N × size,
/// -1 = unlimited]`, then the pool's own tier fields (as a summary line's, for the pool at
/// N × each tier size), then `"per_instance_tier_shares":[..],"per_instance_miss_share":x`
/// (the instances' own tiers, as the overall line's).
fn append_pool_tier_fields(
    out: &mut Vec<u8>,
    pool: &PoolSummary,
    instances: &SlotTotals,
    tiers: &TierPlan,
) {
    out.extend_from_slice(b",\"pool_tier_capacity_blocks\":");
    append_blocks_or_unlimited(out, &pool.pool_tier_capacity_blocks);
    append_tier_fields(out, &pool.pool, tiers);
    let (shares, miss_share) = instances.tier_shares();
    out.extend_from_slice(b",\"per_instance_tier_shares\":");
    append_g6_array(out, shares);
    out.extend_from_slice(b",\"per_instance_miss_share\":");
    append_g6(out, miss_share);
}

/// `,"tier_mode":..,"tier_names":[..],"tier_sizes":[..],"tier_hit_blocks":[..],
/// "tier_hit_tokens":[..],"tier_shares":[..],"miss_share":x`.
fn append_tier_fields(out: &mut Vec<u8>, totals: &SlotTotals, tiers: &TierPlan) {
    let strings = |out: &mut Vec<u8>, values: &[String]| {
        out.push(b'[');
        for (index, value) in values.iter().enumerate() {
            if index > 0 {
                out.push(b',');
            }
            append_json_string(out, value);
        }
        out.push(b']');
    };
    out.extend_from_slice(match tiers.mode {
        TierMode::Exclusive => b",\"tier_mode\":\"exclusive\"",
        TierMode::Inclusive => b",\"tier_mode\":\"inclusive\"",
    });
    out.extend_from_slice(b",\"tier_names\":");
    strings(out, &tiers.names);
    out.extend_from_slice(b",\"tier_sizes\":");
    strings(out, &tiers.sizes_text);
    out.extend_from_slice(b",\"tier_hit_blocks\":");
    append_u64_array(out, &totals.tier_hit_blocks);
    out.extend_from_slice(b",\"tier_hit_tokens\":");
    append_u64_array(out, &totals.tier_hit_tokens);
    let (shares, miss_share) = totals.tier_shares();
    out.extend_from_slice(b",\"tier_shares\":");
    append_g6_array(out, shares);
    out.extend_from_slice(b",\"miss_share\":");
    append_g6(out, miss_share);
}

/// The rows a query read: their first and last `timestamp_ns`, and whether any was in the
/// accounted span.
#[derive(Debug, Clone, Copy, Default)]
struct SeenRows {
    span: Option<(i64, i64)>,
    accounted: bool,
}

impl SeenRows {
    fn add(&mut self, timestamp_ns: i64) {
        self.span = super::query_span::widen_span(self.span, timestamp_ns);
    }
}

/// Queries `facts_paths` in order (shards of one run: rows are written file by file, the
/// summaries add up every file) and writes the JSONL to `out`.
///
/// Every file is opened and its header checked before anything is written. Any malformed row
/// fails the whole query with an error naming the file and line (rows before it may already
/// have been written: publish `out` atomically). Row lines are formatted and written on a
/// second thread; the bytes are the same as [`QueryJsonlWriter`]'s.
pub fn query_facts_files<W: Write + Send>(
    facts_paths: &[PathBuf],
    slots: QuerySlots,
    options: QueryOptions,
    out: W,
) -> Result<(W, QuerySummary), QueryError> {
    query_facts_files_planned(facts_paths, slots, options, &QueryPlan::default(), out)
}

/// [`query_facts_files`] with cache tiers (tier fields in every summary) and a time range
/// (rows outside it are neither written nor summed). The readers count the input tokens of
/// every file's rows together, so no total can wrap (a row that would is refused).
pub fn query_facts_files_planned<W: Write + Send>(
    facts_paths: &[PathBuf],
    slots: QuerySlots,
    options: QueryOptions,
    plan: &QueryPlan,
    mut out: W,
) -> Result<(W, QuerySummary), QueryError> {
    let mut readers = facts_paths
        .iter()
        .map(|path| FactsReader::open(path))
        .collect::<Result<Vec<_>, _>>()?;
    let mut totals =
        QueryTotals::with_tiers(slots, plan.tiers.clone()).with_pool(plan.pool.clone());
    let range = plan.time_range;
    // For a span: whether it holds a row, and the trace's own first and last timestamps to
    // say so when it does not.
    let mut seen = SeenRows::default();
    let mut record = FactRecord::default();
    if options.summary_only {
        sum_rows(&mut readers, &mut totals, &mut seen, range)?;
    } else {
        let slot_count = totals.slots().len();
        let (full_sender, full_receiver) = mpsc::sync_channel::<RowBatch>(BATCHES_IN_FLIGHT);
        let (empty_sender, empty_receiver) = mpsc::channel::<RowBatch>();
        let (read_result, written) = thread::scope(|scope| {
            let formatter = thread::Builder::new()
                .name("litehit-format".into())
                .spawn_scoped(scope, move || -> io::Result<W> {
                    let mut buffer = LineBuffer::with_capacity(FLUSH_THRESHOLD_BYTES + 64 * 1024);
                    for mut batch in full_receiver {
                        batch.write_lines(slot_count, &mut buffer, &mut out)?;
                        batch.clear();
                        // The reader may be done already; then the batch is simply dropped.
                        let _ = empty_sender.send(batch);
                    }
                    out.write_all(buffer.as_bytes())?;
                    Ok(out)
                })
                .map_err(QueryError::Spawn)?;
            let read_result = (|| -> Result<(), QueryError> {
                let mut batch = RowBatch::default();
                let mut input_tokens_read = 0;
                for (index, reader) in readers.iter_mut().enumerate() {
                    totals.start_file(index);
                    reader.continue_input_tokens(input_tokens_read);
                    while reader.next_record(&mut record)? {
                        if !observe_row(reader, &record, &mut totals, &mut seen, range)? {
                            continue;
                        }
                        batch.push(&record, totals.add_record(&record));
                        if batch.rows.len() == BATCH_ROWS {
                            let next = empty_receiver.try_recv().unwrap_or_default();
                            if full_sender
                                .send(std::mem::replace(&mut batch, next))
                                .is_err()
                            {
                                return Ok(()); // the formatter stopped: its error is reported
                            }
                        }
                    }
                    input_tokens_read = reader.input_tokens_read();
                }
                // A send error means the formatter stopped; its join result carries why.
                let _ = full_sender.send(batch);
                Ok(())
            })();
            drop(full_sender);
            let written = formatter
                .join()
                .unwrap_or_else(|panic| std::panic::resume_unwind(panic));
            Ok::<_, QueryError>((read_result, written))
        })?;
        out = written.map_err(QueryError::Write)?;
        read_result?;
    }
    // Before any summary: a file given twice would double every count in it.
    totals.check_no_repeated_rows(facts_paths)?;
    if !range.is_everything() && !seen.accounted {
        return Err(super::query_span::EmptySpan {
            range,
            trace: seen.span,
        }
        .into());
    }
    let pool = totals.resolve_pool()?;
    if let Some(name) = &pool
        && !totals.is_pool(name)
    {
        reread_pool(facts_paths, name, range, &mut totals)?;
    }
    let slots = totals.slots().clone();
    let tiers = totals.tiers().cloned();
    let summary = totals.try_into_summary(pool.as_deref())?;
    out.write_all(&summary.to_jsonl_with_tiers(&slots, tiers.as_ref()))
        .map_err(QueryError::Write)?;
    out.flush().map_err(QueryError::Write)?;
    Ok((out, summary))
}

/// What every row read tells before it is added: its lane (room for it first: memory may be
/// short) and its time. Whether it is in `range`, so to be added to `totals`.
fn observe_row<R: std::io::Read>(
    reader: &FactsReader<R>,
    record: &FactRecord,
    totals: &mut QueryTotals,
    seen: &mut SeenRows,
    range: TimeRange,
) -> Result<bool, QueryError> {
    totals
        .try_reserve_instance()
        .map_err(|_| reader.out_of_memory())?;
    totals.observe(record);
    seen.add(record.timestamp_ns);
    let accounted = range.contains(record.timestamp_ns);
    seen.accounted |= accounted;
    Ok(accounted)
}

/// `--summary-only`: every row of every file into `totals`, none written.
fn sum_rows<R: std::io::Read>(
    readers: &mut [FactsReader<R>],
    totals: &mut QueryTotals,
    seen: &mut SeenRows,
    range: TimeRange,
) -> Result<(), QueryError> {
    let mut record = FactRecord::default();
    let mut input_tokens_read = 0;
    for (index, reader) in readers.iter_mut().enumerate() {
        totals.start_file(index);
        reader.continue_input_tokens(input_tokens_read);
        while reader.next_record(&mut record)? {
            if observe_row(reader, &record, totals, seen, range)? {
                totals.add_record(&record);
            }
        }
        input_tokens_read = reader.input_tokens_read();
    }
    Ok(())
}

/// Reads the accounted rows of pool lane `name` a second time, into the pool's accumulation:
/// it was recognised only at the end, and was not the lane most likely to be it (a pool with
/// a name of its own and no `--pool NAME`). Only the files holding its rows are read.
fn reread_pool(
    facts_paths: &[PathBuf],
    name: &str,
    range: TimeRange,
    totals: &mut QueryTotals,
) -> Result<(), QueryError> {
    totals.restart_pool(name);
    let mut record = FactRecord::default();
    for index in totals.files_of(name, facts_paths.len()) {
        let path = &facts_paths[index];
        let rereadable = path.as_os_str() != "-"
            && std::fs::metadata(path).is_ok_and(|metadata| metadata.is_file());
        if !rereadable {
            return Err(QueryError::PoolNotRereadable {
                name: name.to_owned(),
                path: path.display().to_string(),
            });
        }
        let mut reader = FactsReader::open(path)?;
        while reader.next_record(&mut record)? {
            if record.instance_id == name && range.contains(record.timestamp_ns) {
                totals.add_pool_row(&record);
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use litehit_core::facts::RequestFact;

    fn record(
        trace_id: &str,
        instance_id: &str,
        timestamp_ns: i64,
        len: u64,
        pairs: &[[u64; 2]],
    ) -> FactRecord {
        FactRecord {
            trace_id: trace_id.into(),
            instance_id: instance_id.into(),
            timestamp_ns,
            input_token_len: len,
            block_size_tokens: 4,
            block_bytes: 16384,
            fact: RequestFact::from_pairs(pairs),
        }
    }

    fn run(records: &[FactRecord], slots: QuerySlots, options: QueryOptions) -> String {
        let mut writer = QueryJsonlWriter::new(Vec::new(), slots, options);
        for r in records {
            writer.write_record(r).unwrap();
        }
        String::from_utf8(writer.finish().unwrap().0).unwrap()
    }

    fn offline_runner_fixture() -> Vec<FactRecord> {
        vec![
            record("r1", "i1", 1000, 13, &[]),
            record("r2", "i1", 2000, 12, &[[1, 2]]),
            record("r3", "i1", 3000, 13, &[[1, 2], [4, 1]]),
        ]
    }

    #[test]
    fn reference_offline_runner_output() {
        let slots = QuerySlots {
            capacity_gb: vec![2.0 * 16384.0 / f64::from(1u32 << 30), -1.0],
            capacity_blocks: vec![],
        };
        let expected = concat!(
            r#"{"trace_id":"r1","instance_id":"i1","timestamp_ns":1000,"input_token_len":13,"hit_blocks":[0,0],"hit_rates":[0,0]}"#,
            "\n",
            r#"{"trace_id":"r2","instance_id":"i1","timestamp_ns":2000,"input_token_len":12,"hit_blocks":[2,2],"hit_rates":[0.666667,0.666667]}"#,
            "\n",
            r#"{"trace_id":"r3","instance_id":"i1","timestamp_ns":3000,"input_token_len":13,"hit_blocks":[2,3],"hit_rates":[0.615385,0.923077]}"#,
            "\n",
            r#"{"summary":true,"instance_id":"i1","requests":3,"total_input_tokens":38,"capacity_gb":[3.05176e-05,-1],"total_hit_blocks":[4,5],"total_hit_tokens":[16,20],"hit_rates":[0.421053,0.526316]}"#,
            "\n",
            r#"{"summary":true,"requests":3,"total_input_tokens":38,"capacity_gb":[3.05176e-05,-1],"total_hit_blocks":[4,5],"total_hit_tokens":[16,20],"hit_rates":[0.421053,0.526316]}"#,
            "\n",
        );
        assert_eq!(
            run(&offline_runner_fixture(), slots, QueryOptions::default()),
            expected
        );
    }

    #[test]
    fn block_slots_follow_gb_slots_and_get_their_own_key() {
        let slots = QuerySlots {
            capacity_gb: vec![0.0],
            capacity_blocks: vec![3, 4],
        };
        let out = run(
            &offline_runner_fixture(),
            slots,
            QueryOptions { summary_only: true },
        );
        let expected = concat!(
            r#"{"summary":true,"instance_id":"i1","requests":3,"total_input_tokens":38,"capacity_gb":[0],"capacity_blocks":[3,4],"total_hit_blocks":[0,4,5],"total_hit_tokens":[0,16,20],"hit_rates":[0,0.421053,0.526316]}"#,
            "\n",
            r#"{"summary":true,"requests":3,"total_input_tokens":38,"capacity_gb":[0],"capacity_blocks":[3,4],"total_hit_blocks":[0,4,5],"total_hit_tokens":[0,16,20],"hit_rates":[0,0.421053,0.526316]}"#,
            "\n",
        );
        assert_eq!(out, expected);
    }

    #[test]
    fn instances_in_byte_order_then_total() {
        let records = [
            record("a", "b", 1, 8, &[[1, 1]]),
            record("b", "B", 2, 8, &[[1, 2]]),
            record("c", "a", 3, 8, &[]),
            record("d", "b", 4, 0, &[[1, 1]]),
        ];
        let slots = QuerySlots {
            capacity_gb: vec![-1.0],
            capacity_blocks: vec![],
        };
        let out = run(&records, slots, QueryOptions { summary_only: true });
        let ids: Vec<_> = out
            .lines()
            .map(|l| l.split("\"instance_id\":").nth(1).map(|s| &s[..3]))
            .collect();
        assert_eq!(ids, [Some("\"B\""), Some("\"a\""), Some("\"b\""), None]);
        assert!(
            out.lines()
                .nth(2)
                .unwrap()
                .contains(r#""requests":2,"total_input_tokens":8,"#)
        );
        assert!(
            out.lines()
                .nth(2)
                .unwrap()
                .ends_with(r#""total_hit_blocks":[2],"total_hit_tokens":[8],"hit_rates":[1]}"#)
        );
    }

    #[test]
    fn zero_rows_give_one_zero_summary() {
        let slots = QuerySlots {
            capacity_gb: vec![1.0, 0.0],
            capacity_blocks: vec![],
        };
        assert_eq!(
            run(&[], slots, QueryOptions::default()),
            "{\"summary\":true,\"requests\":0,\"total_input_tokens\":0,\"capacity_gb\":[1,0],\"total_hit_blocks\":[0,0],\"total_hit_tokens\":[0,0],\"hit_rates\":[0,0]}\n"
        );
    }

    #[test]
    fn mixed_block_bytes_reproject_slots() {
        let mut small = record("s", "i", 1, 100, &[[1, 10]]);
        small.block_bytes = 1 << 20;
        let mut large = record("l", "j", 2, 100, &[[1, 10]]);
        large.block_bytes = 1 << 28;
        let slots = QuerySlots {
            capacity_gb: vec![1.0],
            capacity_blocks: vec![2],
        };
        let out = run(&[small, large], slots, QueryOptions::default());
        let lines: Vec<_> = out.lines().collect();
        assert!(lines[0].contains(r#""hit_blocks":[10,2]"#), "{}", lines[0]);
        assert!(lines[1].contains(r#""hit_blocks":[4,2]"#), "{}", lines[1]);
    }
}
