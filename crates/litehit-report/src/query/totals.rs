//! The running totals of a query: every accounted row projected at every slot (and split
//! among the tiers) through the projector, summed per instance and overall; the pool lane
//! found by its rows and compared at N × C ([`super::pool`]).

use std::path::PathBuf;

use litehit_core::facts::FactRecord;
use litehit_core::projector::tiers::{TierBand, project_tiers, tier_bands};
use litehit_core::projector::{self, Capacity};

use super::QueryError;
use super::plan::{PoolRule, QuerySlots, TierPlan};
use super::pool::{PoolSummary, PoolTotals};
use crate::lane_index::{LaneIndex, LaneTableFull};
use crate::pool_detect::{LaneFingerprint, LaneFingerprints, RepeatedRows};
use crate::ratio;

/// Cumulative integers of one summary line.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SlotTotals {
    /// Accounted rows.
    pub requests: u64,
    /// Σ `input_token_len` of those rows.
    pub total_input_tokens: u64,
    /// Per slot, in output order.
    pub total_hit_blocks: Vec<u64>,
    /// Per slot: Σ hit blocks × the row's `block_size_tokens`.
    pub total_hit_tokens: Vec<u64>,
    /// Per tier (empty without `--tiers`): hit blocks the tier served.
    pub tier_hit_blocks: Vec<u64>,
    /// Per tier: Σ served blocks × the row's `block_size_tokens`.
    pub tier_hit_tokens: Vec<u64>,
    /// With the OPT facts of the same trace read beside (`query --opt`): OPT's sums.
    pub opt: Option<OptTotals>,
}

/// OPT's sums beside LRU's, from the OPT facts of the same trace (`query --opt`).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct OptTotals {
    /// Per slot: Σ OPT's hit blocks × the row's `block_size_tokens`.
    pub hit_tokens: Vec<u64>,
    /// Σ hit tokens at unlimited capacity, where OPT and LRU hit alike (every key seen
    /// before): what no capacity can hit is the cold misses.
    pub infinite_hit_tokens: u64,
}

/// The input tokens LRU misses at one slot, by cause: `cold + capacity + policy + LRU's hit
/// tokens = input tokens`, at every slot.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MissSplit {
    /// Missed even at unlimited capacity (the first time a block is seen).
    pub cold_miss_tokens: u64,
    /// Per slot: hit at unlimited capacity, missed by OPT at the slot's capacity.
    pub capacity_miss_tokens: Vec<u64>,
    /// Per slot: hit by OPT, missed by LRU at the slot's capacity; negative where OPT's
    /// curve is only a lower bound (keys outside the prefix-chain contract) and falls below
    /// LRU's.
    pub policy_miss_tokens: Vec<i64>,
}

impl SlotTotals {
    /// Takes `lane`'s sums (added before) out of these, wrapping as the sums do.
    fn subtract(&mut self, lane: &Self) {
        self.combine(lane, u64::wrapping_sub);
    }

    /// Adds `lane`'s sums to these, wrapping as the sums do.
    fn add(&mut self, lane: &Self) {
        self.combine(lane, u64::wrapping_add);
    }

    /// Every sum of these `op` the same sum of `lane`.
    fn combine(&mut self, lane: &Self, op: fn(u64, u64) -> u64) {
        self.requests = op(self.requests, lane.requests);
        self.total_input_tokens = op(self.total_input_tokens, lane.total_input_tokens);
        for (sums, other) in [
            (&mut self.total_hit_blocks, &lane.total_hit_blocks),
            (&mut self.total_hit_tokens, &lane.total_hit_tokens),
            (&mut self.tier_hit_blocks, &lane.tier_hit_blocks),
            (&mut self.tier_hit_tokens, &lane.tier_hit_tokens),
        ] {
            for (sum, &value) in sums.iter_mut().zip(other) {
                *sum = op(*sum, value);
            }
        }
        if let (Some(opt), Some(other)) = (&mut self.opt, &lane.opt) {
            for (sum, &value) in opt.hit_tokens.iter_mut().zip(&other.hit_tokens) {
                *sum = op(*sum, value);
            }
            opt.infinite_hit_tokens = op(opt.infinite_hit_tokens, other.infinite_hit_tokens);
        }
    }

    fn new(slot_count: usize, tier_count: usize, with_opt: bool) -> Self {
        Self {
            requests: 0,
            total_input_tokens: 0,
            total_hit_blocks: vec![0; slot_count],
            total_hit_tokens: vec![0; slot_count],
            tier_hit_blocks: vec![0; tier_count],
            tier_hit_tokens: vec![0; tier_count],
            opt: with_opt.then(|| OptTotals {
                hit_tokens: vec![0; slot_count],
                infinite_hit_tokens: 0,
            }),
        }
    }

    /// OPT's cumulative token hit rate per slot, with OPT facts read beside.
    #[must_use]
    pub fn opt_hit_rates(&self) -> Option<Vec<f64>> {
        self.opt.as_ref().map(|opt| {
            opt.hit_tokens
                .iter()
                .map(|&tokens| ratio(tokens, self.total_input_tokens))
                .collect()
        })
    }

    /// LRU's misses per slot by cause, with OPT facts read beside.
    #[must_use]
    pub fn miss_split(&self) -> Option<MissSplit> {
        let opt = self.opt.as_ref()?;
        let signed = |tokens: u64| i64::try_from(tokens).unwrap_or(i64::MAX);
        Some(MissSplit {
            cold_miss_tokens: self
                .total_input_tokens
                .saturating_sub(opt.infinite_hit_tokens),
            capacity_miss_tokens: opt
                .hit_tokens
                .iter()
                .map(|&opt_tokens| opt.infinite_hit_tokens.saturating_sub(opt_tokens))
                .collect(),
            policy_miss_tokens: opt
                .hit_tokens
                .iter()
                .zip(&self.total_hit_tokens)
                .map(|(&opt_tokens, &lru_tokens)| {
                    if opt_tokens >= lru_tokens {
                        signed(opt_tokens - lru_tokens)
                    } else {
                        -signed(lru_tokens - opt_tokens)
                    }
                })
                .collect(),
        })
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
        (
            shares,
            tier_miss_share(self.total_input_tokens, &self.tier_hit_tokens),
        )
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

/// The share of `input_tokens` no tier served (`miss_share`), given the tokens each tier
/// served; 0 when there are no input tokens.
#[must_use]
pub fn tier_miss_share(input_tokens: u64, tier_hit_tokens: &[u64]) -> f64 {
    let served = tier_hit_tokens
        .iter()
        .fold(0_u64, |sum, &tokens| sum.wrapping_add(tokens));
    ratio(input_tokens.saturating_sub(served), input_tokens)
}

/// What a finished query summed up: per instance (byte order of `instance_id`) and overall.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QuerySummary {
    /// Per instance, in byte order of `instance_id`.
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

/// Projection at every slot plus the running totals, without any output.
#[derive(Debug, Clone)]
pub struct QueryTotals {
    slots: QuerySlots,
    capacities: Vec<Capacity>,
    /// `block_bytes` that `slot_capacity_blocks` was computed for.
    projected_block_bytes: Option<u64>,
    /// Per slot: capacity in blocks for `projected_block_bytes`; `None` = unlimited.
    slot_capacity_blocks: Vec<Option<u64>>,
    /// The slots by capacity (unlimited last), and their capacities in that order: the
    /// projector walks a curve once for all of them.
    ascending_slots: Vec<usize>,
    ascending_capacity_blocks: Vec<Option<u64>>,
    /// Hits per slot in `ascending_slots` order, for the row being projected.
    ascending_hit_blocks: Vec<u64>,
    hit_blocks: Vec<u64>,
    /// Per slot: OPT's hit blocks for the record last added with its OPT row.
    opt_hit_blocks: Vec<u64>,
    /// OPT facts are read beside (every total has [`SlotTotals::opt`]).
    with_opt: bool,
    instance_index: LaneIndex,
    instances: Vec<(String, SlotTotals)>,
    /// The index of the pool's instance (its totals), once it has rows.
    pool_instance: Option<usize>,
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
            ascending_slots: (0..slot_count).collect(),
            ascending_capacity_blocks: vec![None; slot_count],
            ascending_hit_blocks: vec![0; slot_count],
            hit_blocks: vec![0; slot_count],
            opt_hit_blocks: vec![0; slot_count],
            with_opt: false,
            instance_index: LaneIndex::default(),
            instances: Vec::new(),
            pool_instance: None,
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
    /// with [`PoolRule::Recognise`], every row must also go through [`Self::observe_in_file`].
    #[must_use]
    pub fn with_pool(mut self, rule: Option<PoolRule>) -> Self {
        self.pool = rule
            .as_ref()
            .and_then(PoolRule::candidate)
            .map(PoolTotals::new);
        self.pool_instance = self
            .pool
            .as_ref()
            .and_then(|pool| self.instance_index.get(&pool.name));
        self.lanes = matches!(rule, Some(PoolRule::Recognise { .. })).then(LaneFingerprints::new);
        self.pool_rule = rule;
        self
    }

    /// Also sums OPT's hits, from the OPT facts of the same trace: every record then goes
    /// through [`Self::add_record_pair`] with its OPT row.
    #[must_use]
    pub fn with_opt(mut self) -> Self {
        self.with_opt = true;
        self.pool = self.pool.take().map(PoolTotals::with_opt);
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

    /// Adds a row of file `file` (its index among the files read, in order), accounted or
    /// not, to its lane's fingerprint (the pool lane is recognised over every row); nothing
    /// without [`PoolRule::Recognise`].
    pub fn observe_in_file(&mut self, record: &FactRecord, file: usize) {
        if let Some(lanes) = &mut self.lanes {
            lanes.observe_in_file(record, file);
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
        let pool = PoolTotals::new(name);
        self.pool = Some(if self.with_opt { pool.with_opt() } else { pool });
        self.pool_instance = self.instance_index.get(name);
    }

    /// Adds an accounted row of the pool lane to the pool's accumulation only, with OPT's
    /// row of the same request when OPT facts are read beside ([`Self::with_opt`]; without
    /// it, the pool line has no OPT figures).
    pub fn add_pool_row(&mut self, record: &FactRecord, opt: Option<&FactRecord>) {
        if let Some(pool) = &mut self.pool {
            pool.add(record, opt);
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

    /// Projects `record` at every slot, adds it to its instance's totals (the overall ones
    /// are theirs summed), and returns its hit blocks per slot.
    pub fn add_record(&mut self, record: &FactRecord) -> &[u64] {
        self.add_record_pair(record, None)
    }

    /// [`Self::add_record`], and with [`Self::with_opt`] also `opt`, the OPT row of the same
    /// request (same geometry: [`crate::OptRows`] checked), to OPT's sums.
    pub fn add_record_pair(&mut self, record: &FactRecord, opt: Option<&FactRecord>) -> &[u64] {
        let geometry = (record.block_bytes, record.block_size_tokens);
        if self.geometries.last() != Some(&geometry) && !self.geometries.contains(&geometry) {
            self.geometries.push(geometry);
        }
        self.project(record);
        let infinite_hit_blocks = match opt {
            Some(opt) if self.with_opt => {
                Self::project_ascending(
                    &opt.fact,
                    &self.ascending_slots,
                    &self.ascending_capacity_blocks,
                    &mut self.ascending_hit_blocks,
                    &mut self.opt_hit_blocks,
                );
                projector::project_infinite(&record.fact)
            }
            _ => {
                self.opt_hit_blocks.fill(0);
                0
            }
        };
        let instance = self.instance_slot(&record.instance_id);
        let block_size_tokens = record.block_size_tokens;
        if self.pool_instance == Some(instance)
            && let Some(pool) = &mut self.pool
        {
            pool.add(record, opt);
        }
        // The overall totals are the instances' summed at the end (`overall`): the pool's
        // lane is known only then, and its own totals are taken out again.
        let totals = &mut self.instances[instance].1;
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
        if let Some(opt_totals) = &mut totals.opt {
            for (tokens, &hits) in opt_totals.hit_tokens.iter_mut().zip(&self.opt_hit_blocks) {
                *tokens = tokens.wrapping_add(hits.wrapping_mul(block_size_tokens));
            }
            opt_totals.infinite_hit_tokens = opt_totals
                .infinite_hit_tokens
                .wrapping_add(infinite_hit_blocks.wrapping_mul(block_size_tokens));
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
    pub fn try_into_summary(self, pool: Option<&str>) -> Result<QuerySummary, QueryError> {
        let mut overall = self.overall();
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
            overall.subtract(lane);
        }
        let several_files = self.lanes.as_ref().map_or_else(Vec::new, |lanes| {
            lanes.lanes_in_several_files().cloned().collect()
        });
        let pool_note = self
            .lanes
            .as_ref()
            .and_then(LaneFingerprints::partial_pool_note);
        let mut summary = self.into_summary_with(overall);
        summary.pool = pool;
        summary.lanes_in_several_files = several_files;
        summary.pool_note = pool_note;
        Ok(summary)
    }

    /// The totals, instances in byte order of `instance_id`, every row in the overall
    /// totals (no pool comparison: see [`Self::try_into_summary`]).
    #[must_use]
    pub fn into_summary(self) -> QuerySummary {
        let overall = self.overall();
        self.into_summary_with(overall)
    }

    /// [`Self::into_summary`] with its overall totals already summed.
    fn into_summary_with(self, overall: SlotTotals) -> QuerySummary {
        let mut per_instance = self.instances;
        per_instance.sort_unstable_by(|a, b| a.0.cmp(&b.0));
        QuerySummary {
            per_instance,
            overall,
            pool: None,
            lanes_in_several_files: Vec::new(),
            pool_note: None,
            geometries: self.geometries,
        }
    }

    /// Every row's sums: the instances' added up (in first-seen order; wrapping sums, so
    /// any order gives the same).
    fn overall(&self) -> SlotTotals {
        let mut overall = SlotTotals::new(
            self.capacities.len(),
            self.tier_hit_blocks.len(),
            self.with_opt,
        );
        for (_, totals) in &self.instances {
            overall.add(totals);
        }
        overall
    }

    /// Fills `hit_blocks` for `record` at every slot, through the projector.
    fn project(&mut self, record: &FactRecord) {
        if self.projected_block_bytes != Some(record.block_bytes) {
            for (capacity_blocks, capacity) in
                self.slot_capacity_blocks.iter_mut().zip(&self.capacities)
            {
                *capacity_blocks = capacity.blocks(record.block_bytes);
            }
            let blocks = &self.slot_capacity_blocks;
            // Unlimited last (`Option`'s own order puts `None` first).
            self.ascending_slots
                .sort_by_key(|&slot| (blocks[slot].is_none(), blocks[slot]));
            for (capacity_blocks, &slot) in self
                .ascending_capacity_blocks
                .iter_mut()
                .zip(&self.ascending_slots)
            {
                *capacity_blocks = blocks[slot];
            }
            if let Some(plan) = &self.tiers {
                self.tier_bands = tier_bands(&plan.capacities, record.block_bytes, plan.mode);
            }
            self.projected_block_bytes = Some(record.block_bytes);
        }
        if self.tiers.is_some() {
            project_tiers(&record.fact, &self.tier_bands, &mut self.tier_hit_blocks);
        }
        Self::project_ascending(
            &record.fact,
            &self.ascending_slots,
            &self.ascending_capacity_blocks,
            &mut self.ascending_hit_blocks,
            &mut self.hit_blocks,
        );
    }

    /// `fact`'s hits at every slot into `hit_blocks` (slot order), through the projector's
    /// one walk over the slots in `ascending_slots` order.
    fn project_ascending(
        fact: &litehit_core::facts::RequestFact,
        ascending_slots: &[usize],
        ascending_capacity_blocks: &[Option<u64>],
        ascending_hit_blocks: &mut [u64],
        hit_blocks: &mut [u64],
    ) {
        projector::project_blocks_ascending(fact, ascending_capacity_blocks, ascending_hit_blocks);
        for (&slot, &hits) in ascending_slots.iter().zip(ascending_hit_blocks.iter()) {
            hit_blocks[slot] = hits;
        }
    }

    /// Room for one more instance, fallibly: call before [`Self::observe_in_file`] and
    /// [`Self::add_record`] (its tables' growth is the one that can be large; the reader's memory checks cover the rest).
    pub fn try_reserve_instance(&mut self) -> Result<(), LaneTableFull> {
        if let Some(lanes) = &mut self.lanes {
            lanes.try_reserve_lane()?;
        }
        self.instances.try_reserve(1)?;
        self.instance_index.try_reserve()
    }

    /// Index of the totals of `instance_id`, created on first sight.
    fn instance_slot(&mut self, instance_id: &str) -> usize {
        let (index, new) = self.instance_index.index_or_insert(instance_id);
        if new {
            self.instances.push((
                instance_id.to_owned(),
                SlotTotals::new(
                    self.capacities.len(),
                    self.tier_hit_blocks.len(),
                    self.with_opt,
                ),
            ));
            if self
                .pool
                .as_ref()
                .is_some_and(|pool| pool.name == instance_id)
            {
                self.pool_instance = Some(index);
            }
        }
        index
    }
}
