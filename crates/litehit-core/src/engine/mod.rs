//! The engine: runs `formats` → `preprocess` → `hitcore` → `projector` for offline replay and
//! the live monitor alike.
//!
//! Owns lanes (one core per instance), routing (by instance id, override, fanout), per-lane
//! normalization and the per-lane capacity-axis accumulators. [`policy`] decides what a bad
//! line does: offline fails fast, live skips and counts. Commands and the TUI are shells over
//! this module and hold no analysis logic.

mod batch;
pub mod cache_policy;
mod lane;
pub mod pipeline;
pub mod policy;
mod route;
pub mod shard;

use std::fmt::Write as _;

use crate::facts::{FactRow, RequestFact};
use crate::formats::{EventKind, TraceEvent};
use crate::preprocess::{NormalizeError, NormalizeParams, normalize_appended_request};
use crate::projector::Capacity;
pub use cache_policy::{CachePolicies, CachePolicy};
pub use lane::{Lane, ObservedCounts};
pub use policy::Policy;
pub use route::RouteError;
use route::{Route, Router};

/// The shared pool lane's name when none is given (`--pool`), and the instance id `query` and
/// `mrc` recognise as the pool by default.
pub const DEFAULT_POOL_NAME: &str = "pool";

/// One lane's analysis parameters (one `LiteHit` core per lane).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneSpec {
    /// The instance this lane replays; its facts rows carry it, and routing matches rows to it.
    pub instance_id: String,
    /// Analysis tokens per block (a multiple of the trace block size).
    pub block_size_tokens: u64,
    /// KV bytes per block (`size_full_only`), recorded in facts for projection.
    pub block_bytes: u64,
    /// Fixed TTL in nanoseconds, `0` = none.
    pub ttl_ns: u64,
    /// Chain raw per-block hashes with the prefix hash before re-blocking.
    pub enable_prefix_hash: bool,
}

/// Which lanes a row goes to.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Routing {
    /// The row's own instance id (rows without one go to the only lane, or to `default`).
    #[default]
    ByInstance,
    /// Every row goes to this lane, whatever its instance id.
    Override(String),
    /// Every row goes to every lane (several block sizes / TTLs in one pass).
    Fanout,
}

/// The lanes an engine runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LaneSet {
    /// Lanes fixed by a config file, in config order; an unknown instance is an error.
    Configured(Vec<LaneSpec>),
    /// No config file: a lane is created for each instance id seen, all with these
    /// parameters (`instance_id` of the template is the name used for rows without one).
    OnTheFly(LaneSpec),
}

impl LaneSet {
    /// Each lane's `(block_size_tokens, block_bytes)` (the template's for lanes made on the
    /// fly): what one capacity slot must fit (`EnginePool::slot_capacity`).
    #[must_use]
    pub fn block_geometry(&self) -> Vec<(u64, u64)> {
        match self {
            Self::Configured(specs) => specs
                .iter()
                .map(|spec| (spec.block_size_tokens, spec.block_bytes))
                .collect(),
            Self::OnTheFly(spec) => vec![(spec.block_size_tokens, spec.block_bytes)],
        }
    }
}

/// Everything the engine needs to turn trace events into facts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EngineConfig {
    /// The trace's native block size in tokens (upstream config `block_size`).
    pub trace_block_size_tokens: u64,
    /// Which lanes exist: fixed by a config file, or made per instance seen.
    pub lanes: LaneSet,
    /// Which lanes each row feeds.
    pub routing: Routing,
    /// `--pool [NAME]` / config key `pool_instance_id`: one more lane, named so, that every
    /// read row also feeds — one LRU shared by all instances. Its facts are ordinary rows with
    /// this name as instance id, each right after the row's own lanes' rows.
    pub pool: Option<String>,
}

/// Why a row (or the engine setup) was rejected. Every row error names the line and trace id.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum EngineError {
    /// The engine keeps one clock: a row older than the last read would replay time backwards.
    #[error(
        "line {line_number}: trace_id[{trace_id}]: trace is not sorted by timestamp_ns ({timestamp_ns} after {previous_timestamp_ns})"
    )]
    OutOfOrder {
        /// The trace line at fault (1-based).
        line_number: u64,
        /// The row's request id, so the user can find it.
        trace_id: String,
        /// The row's time.
        timestamp_ns: i64,
        /// The latest time before it, which it goes behind.
        previous_timestamp_ns: i64,
    },
    /// The row names no lane the engine can send it to.
    #[error("line {line_number}: trace_id[{trace_id}]: {error}")]
    Route {
        /// The trace line at fault (1-based).
        line_number: u64,
        /// The row's request id.
        trace_id: String,
        /// In the message, not a `#[source]`: one error, one line.
        error: RouteError,
    },
    /// The row breaks the length contract, so its blocks cannot be counted.
    #[error(
        "line {line_number}: trace_id[{trace_id}]: invalid request: {error}{}",
        error.block_size_hint()
    )]
    InvalidRequest {
        /// The trace line at fault (1-based).
        line_number: u64,
        /// The row's request id.
        trace_id: String,
        /// In the message (with the block-size hint after it), not a `#[source]`.
        error: NormalizeError,
    },
    /// Every lane's input-token total (and the fleet's, the pool's and the windows') is a part
    /// of the sum this row would wrap (issue #27).
    #[error(
        "line {line_number}: trace_id[{trace_id}]: field \"input_len\": {input_token_len} \
         takes the input tokens of the rows read so far ({total_before}, once per lane a row \
         feeds) past 2^64 - 1; every total of them would wrap"
    )]
    InputTokensOverflow {
        /// The trace line at fault (1-based).
        line_number: u64,
        /// The row's request id.
        trace_id: String,
        /// The row's input length.
        input_token_len: u64,
        /// The input tokens of the rows before it, once per lane fed.
        total_before: u64,
    },
    /// OPT asked with something it has no meaning for (a TTL, a memory horizon).
    #[error(
        "{lane}the OPT policy is defined without {what}; replay OPT without it (or --policy lru with it)",
        lane = .lane.as_deref().map(|id| format!("lane {id}: ")).unwrap_or_default()
    )]
    OptWithout {
        /// The configured lane that asks for it; `None` when a flag asks it of every lane.
        lane: Option<String>,
        /// What OPT has no meaning for, with its flag.
        what: &'static str,
    },
    /// A lane's parameters are unusable (say, a block size that is no coarsening of the trace's).
    #[error("lane {instance_id}: {reason}")]
    InvalidLane {
        /// The lane at fault.
        instance_id: String,
        /// Why its parameters are unusable.
        reason: String,
    },
    /// A lane's core could not grow: a clean stop instead of an allocation abort.
    #[error(
        "out of memory after {unique_blocks} unique blocks (about {} GiB needed; try --memory-horizon or a TTL)",
        crate::display::significant_up(crate::display::bytes_to_gib(*needed_bytes), 2)
    )]
    OutOfMemory {
        /// Keys the lane held when it could not grow.
        unique_blocks: u64,
        /// Roughly the heap bytes the lane would have needed.
        needed_bytes: u64,
    },
}

impl EngineError {
    /// The 1-based trace line the error is about, if any.
    #[must_use]
    pub fn line_number(&self) -> Option<u64> {
        match self {
            Self::OutOfOrder { line_number, .. }
            | Self::Route { line_number, .. }
            | Self::InvalidRequest { line_number, .. }
            | Self::InputTokensOverflow { line_number, .. } => Some(*line_number),
            Self::InvalidLane { .. } | Self::OptWithout { .. } | Self::OutOfMemory { .. } => None,
        }
    }
}

/// A rejected line as the live monitor shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LineError {
    /// The line refused (1-based), so it can be found in the trace.
    pub line_number: u64,
    /// Why it was refused, as the error says it.
    pub message: String,
}

/// Engine-wide counters (per-lane numbers live on [`Lane`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct EngineStats {
    /// Read events (get/request) accepted.
    pub read_events: u64,
    /// Write events seen (no facts; timestamp-checked).
    pub write_events: u64,
    /// Lines skipped under [`Policy::SkipAndCount`] (parse, routing or length errors).
    pub bad_lines: u64,
    /// Timestamps earlier than a previous one (clamped under `SkipAndCount`).
    pub out_of_order_timestamps: u64,
    /// The most recent refused line, shown so a user sees what is being skipped.
    pub last_error: Option<LineError>,
    /// The latest (clamped) trace timestamp seen.
    pub last_timestamp_ns: Option<i64>,
}

/// Routes, normalizes and replays trace events into per-lane cores; shared by `replay` and
/// `watch`.
#[derive(Debug, Clone)]
pub struct Engine {
    config: EngineConfig,
    policy: Policy,
    lanes: Vec<Lane>,
    router: Router,
    stats: EngineStats,
    targets: Vec<usize>,
    /// Per event: each distinct normalization's parameters, key range, token count and
    /// prompt blocks (the leading keys its hit curve counts; the rest are its output's).
    normalized: Vec<(NormalizeParams, std::ops::Range<usize>, u64, usize)>,
    batch: batch::Batch,
    fact: RequestFact,
    derived_trace_id: String,
    capacity_curves: bool,
    /// Applied to every lane, also those created later.
    memory_horizon: Option<Capacity>,
    /// The serving engine's rule on each fact ([`Self::with_engine_rule`]), every lane.
    serving_rule: crate::facts::EngineRule,
    /// The policies every lane replays, also those created later.
    cache_policies: CachePolicies,
    /// The index of the shared pool lane ([`EngineConfig::pool`]), if any.
    pool_lane: Option<usize>,
    /// Σ input tokens of the rows planned, once per lane each feeds: every lane's total, the
    /// fleet's and the pool's are parts of it, so a row that would wrap it is refused.
    input_tokens_planned: u64,
}

impl Engine {
    /// Builds the lanes of `config` (on-the-fly lanes appear as instances are seen).
    pub fn new(config: EngineConfig, policy: Policy) -> Result<Self, EngineError> {
        let specs: Vec<LaneSpec> = match &config.lanes {
            LaneSet::Configured(specs) => specs.clone(),
            LaneSet::OnTheFly(template) => {
                check_lane(template, config.trace_block_size_tokens)?;
                Vec::new()
            }
        };
        let mut lanes = Vec::with_capacity(specs.len() + 1);
        let mut pool_lane = None;
        if let Some(name) = &config.pool {
            // Lane 0, so the instances' lanes are one slice after it (`instance_lanes`).
            let spec = pool_spec(&config, name)?;
            let mut lane = Lane::new(spec, config.trace_block_size_tokens, true);
            lane.mark_pool();
            pool_lane = Some(0);
            lanes.push(lane);
        }
        for spec in specs {
            check_lane(&spec, config.trace_block_size_tokens)?;
            lanes.push(Lane::new(spec, config.trace_block_size_tokens, true));
        }
        Ok(Self {
            router: Router::new(&config),
            config,
            policy,
            lanes,
            stats: EngineStats::default(),
            targets: Vec::new(),
            normalized: Vec::new(),
            batch: batch::Batch::default(),
            fact: RequestFact::default(),
            derived_trace_id: String::new(),
            capacity_curves: true,
            memory_horizon: None,
            serving_rule: crate::facts::EngineRule::Ideal,
            cache_policies: CachePolicies::LRU,
            pool_lane,
            input_tokens_planned: 0,
        })
    }

    /// The shared pool lane ([`EngineConfig::pool`]), if the engine has one (lane 0).
    #[must_use]
    pub fn pool_lane(&self) -> Option<&Lane> {
        self.pool_lane.map(|index| &self.lanes[index])
    }

    /// The instances' own lanes: every lane but the shared pool's, in creation order.
    #[must_use]
    pub fn instance_lanes(&self) -> &[Lane] {
        &self.lanes[usize::from(self.pool_lane.is_some())..]
    }

    /// Stops feeding the per-lane capacity-axis accumulators (they cost 8 bytes per block of
    /// the deepest reuse). The offline replay only needs facts and the ∞ totals; the live
    /// monitor keeps them to answer any capacity at once.
    #[must_use]
    pub fn without_capacity_curves(mut self) -> Self {
        self.capacity_curves = false;
        for lane in &mut self.lanes {
            lane.drop_capacity_curve();
        }
        self
    }

    /// Chooses the eviction policies every lane replays (LRU alone by default). OPT has no
    /// meaning yet for a TTL or a memory horizon, so with OPT either is refused
    /// ([`EngineError::OptWithout`]); call this after [`Self::with_memory_horizon`].
    pub fn with_cache_policies(mut self, policies: CachePolicies) -> Result<Self, EngineError> {
        if policies.contains(CachePolicy::Opt) {
            if self.memory_horizon.is_some() {
                return Err(EngineError::OptWithout {
                    lane: None,
                    what: "a memory horizon (--memory-horizon)",
                });
            }
            let what = "a TTL (--ttl-seconds, ttl_seconds)";
            if let LaneSet::OnTheFly(template) = &self.config.lanes
                && template.ttl_ns > 0
            {
                return Err(EngineError::OptWithout { lane: None, what });
            }
            let configured = match &self.config.lanes {
                LaneSet::Configured(specs) => specs.iter().collect::<Vec<_>>(),
                LaneSet::OnTheFly(_) => Vec::new(),
            };
            if let Some(spec) = configured
                .into_iter()
                .chain(self.lanes.iter().map(Lane::spec))
                .find(|spec| spec.ttl_ns > 0)
            {
                return Err(EngineError::OptWithout {
                    lane: Some(spec.instance_id.clone()),
                    what,
                });
            }
        }
        self.cache_policies = policies;
        for lane in &mut self.lanes {
            lane.set_cache_policies(policies);
        }
        Ok(self)
    }

    /// The eviction policies the lanes replay.
    #[must_use]
    pub fn cache_policies(&self) -> CachePolicies {
        self.cache_policies
    }

    /// Gives every lane a memory horizon (converted to blocks with its `block_bytes`;
    /// infinite: none): keys deeper than it are forgotten, so memory is O(horizon). It only
    /// decides which keys are forgotten, like a TTL; results at capacities up to the horizon
    /// stay exact, above it they are lower bounds ([`Lane::memory_horizon_blocks`]).
    #[must_use]
    pub fn with_memory_horizon(mut self, horizon: Capacity) -> Self {
        self.memory_horizon = Some(horizon);
        for lane in &mut self.lanes {
            lane.set_memory_horizon(horizon);
        }
        self
    }

    /// Applies a serving engine's rule to every fact of every lane (`--engine`; see
    /// [`crate::facts::EngineRule`]): the facts, the ∞ hits and the capacity curves follow it.
    #[must_use]
    pub fn with_engine_rule(mut self, rule: crate::facts::EngineRule) -> Self {
        self.serving_rule = rule;
        for lane in &mut self.lanes {
            lane.set_engine_rule(rule);
        }
        self
    }

    /// The rule [`Self::with_engine_rule`] set ([`crate::facts::EngineRule::Ideal`] if none).
    #[must_use]
    pub fn engine_rule(&self) -> crate::facts::EngineRule {
        self.serving_rule
    }

    /// At most `threads` threads replay lanes at once, the calling one included (a batch of
    /// several busy lanes deals them round-robin to that many threads). Without it the cap is
    /// [`crate::threads::available`]`(None)`: `LITEHIT_THREADS`, else one per core. The facts
    /// are the same for any count.
    #[must_use]
    pub fn with_threads(mut self, threads: std::num::NonZeroUsize) -> Self {
        self.batch.max_threads = Some(threads);
        self
    }

    /// The most threads that replayed lanes at once so far, the calling one included (0
    /// before the first batch): at most the cap of [`Self::with_threads`].
    #[must_use]
    pub fn peak_lane_threads(&self) -> usize {
        self.batch.peak_threads
    }

    /// The memory horizon [`Self::with_memory_horizon`] set, if any.
    #[must_use]
    pub fn memory_horizon(&self) -> Option<Capacity> {
        self.memory_horizon
    }

    /// Whether some lane has a memory horizon: results above it are lower bounds.
    #[must_use]
    pub fn has_memory_horizon(&self) -> bool {
        self.memory_horizon
            .is_some_and(|horizon| !matches!(horizon, Capacity::Infinite))
    }

    /// Replays only the instances of `shard` (`replay --shard K/N`): rows for other
    /// instances are read and order-checked but go to no lane.
    #[must_use]
    pub fn with_shard(mut self, shard: shard::Shard) -> Self {
        self.router.set_shard(shard);
        self
    }

    /// With [`Self::with_shard`]: the instances seen (or configured) outside the shard, which
    /// got no lane; 0 without a shard.
    #[must_use]
    pub fn instances_outside_shard(&self) -> usize {
        self.router.instances_outside_shard()
    }

    /// The configuration the engine was built from (its lanes and routing), for a caller
    /// that reports them.
    #[must_use]
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }

    /// Whether a bad row stops the engine or is skipped and counted.
    #[must_use]
    pub fn policy(&self) -> Policy {
        self.policy
    }

    /// Lanes in creation order (the shared pool lane first, if any; then config order, then
    /// first appearance).
    #[must_use]
    pub fn lanes(&self) -> &[Lane] {
        &self.lanes
    }

    /// The out-of-memory error for a run that could not get `failed_bytes` more (outside
    /// the lanes, e.g. a read buffer): the keys every lane holds and their heap bytes.
    #[must_use]
    pub fn out_of_memory(&self, failed_bytes: u64) -> EngineError {
        EngineError::OutOfMemory {
            unique_blocks: self.lanes.iter().map(Lane::tracked_keys).sum(),
            needed_bytes: self
                .lanes
                .iter()
                .map(|lane| lane.memory_usage_bytes() as u64)
                .sum::<u64>()
                + failed_bytes,
        }
    }

    /// Rows seen, skipped and the last error: what a caller shows besides the facts.
    #[must_use]
    pub fn stats(&self) -> &EngineStats {
        &self.stats
    }

    /// Expires TTL blocks on every lane as of `now_ns` (idle lanes report their live set).
    pub fn advance_time(&mut self, now_ns: i64) {
        for lane in &mut self.lanes {
            lane.advance_time(now_ns);
        }
    }

    /// Takes over the bad-line count and last error of `earlier` (an engine this one replaces
    /// before any event reached either: the live monitor's, once the format is known).
    pub fn inherit_bad_lines(&mut self, earlier: &EngineStats) {
        self.stats.bad_lines += earlier.bad_lines;
        if earlier.last_error.is_some() {
            self.stats.last_error.clone_from(&earlier.last_error);
        }
    }

    /// Counts a line the parser rejected (under `SkipAndCount`; offline runs stop instead).
    pub fn record_bad_line(&mut self, line_number: u64, message: String) {
        self.stats.bad_lines += 1;
        self.stats.last_error = Some(LineError {
            line_number,
            message,
        });
    }

    /// Routes, normalizes and replays one event; `on_fact` receives every facts row produced,
    /// in lane order. Under `FailFast` the first problem is returned; under `SkipAndCount` it is
    /// counted and `Ok` is returned.
    pub fn process_event(
        &mut self,
        event: &TraceEvent,
        line_number: u64,
        on_fact: &mut dyn FnMut(FactRow<'_>),
    ) -> Result<(), EngineError> {
        self.process_events(std::slice::from_ref(event), &[line_number], on_fact)
    }

    /// Processes a batch of events as if one by one: routing, normalization and the order
    /// checks run in input order, then each lane replays its requests (independent lanes on
    /// their own threads), then `on_fact` receives the rows in input order. Under `FailFast`
    /// the rows before the first bad event are still handed out, then its error is returned.
    /// The rows are the [primary](CachePolicies::primary) policy's; see
    /// [`Self::process_events_by_policy`] for every policy's.
    pub fn process_events(
        &mut self,
        events: &[TraceEvent],
        line_numbers: &[u64],
        on_fact: &mut dyn FnMut(FactRow<'_>),
    ) -> Result<(), EngineError> {
        let primary = self.cache_policies.primary();
        self.process_events_by_policy(events, line_numbers, &mut |policy, row| {
            if policy == primary {
                on_fact(row);
            }
        })
    }

    /// [`Self::process_events`], handing out every computed policy's row of each request
    /// (LRU's first), each with its policy.
    pub fn process_events_by_policy(
        &mut self,
        events: &[TraceEvent],
        line_numbers: &[u64],
        on_fact: &mut dyn FnMut(CachePolicy, FactRow<'_>),
    ) -> Result<(), EngineError> {
        debug_assert_eq!(events.len(), line_numbers.len());
        self.batch.clear(self.lanes.len());
        let mut failure = None;
        for (event, &line_number) in events.iter().zip(line_numbers) {
            match self.plan_event(event, line_number) {
                Ok(()) => {}
                Err(error) if self.policy == Policy::SkipAndCount => {
                    self.record_bad_line(line_number, error.to_string());
                }
                Err(error) => {
                    failure = Some(error);
                    break;
                }
            }
        }
        let replayed = self.batch.replay(&mut self.lanes);
        for emit in &self.batch.emits {
            if emit.item_index >= self.batch.facts[emit.lane_index].replayed_items() {
                // Out of memory: rows stop at the first request not replayed.
                break;
            }
            let lane = &mut self.lanes[emit.lane_index];
            if let Some(observed) = emit.observed_cached_tokens {
                lane.count_observed(emit.input_token_len, observed);
            }
            let lane = &self.lanes[emit.lane_index];
            for policy in [CachePolicy::Lru, CachePolicy::Opt] {
                if !self.cache_policies.contains(policy) {
                    continue;
                }
                let facts = &self.batch.facts[emit.lane_index];
                let curves = match policy {
                    CachePolicy::Lru => &facts.lru,
                    CachePolicy::Opt => &facts.opt,
                };
                self.fact.hit_curve.clear();
                self.fact
                    .hit_curve
                    .extend_from_slice(curves.curve(emit.item_index));
                on_fact(
                    policy,
                    FactRow {
                        trace_id: &self.batch.trace_ids[emit.trace_id.clone()],
                        instance_id: &lane.spec().instance_id,
                        timestamp_ns: emit.timestamp_ns,
                        input_token_len: emit.input_token_len,
                        block_size_tokens: lane.spec().block_size_tokens,
                        block_bytes: lane.spec().block_bytes,
                        fact: &self.fact,
                        observed_cached_tokens: emit.observed_cached_tokens,
                    },
                );
            }
        }
        if let Err(error) = replayed {
            return Err(EngineError::OutOfMemory {
                unique_blocks: error.unique_blocks,
                needed_bytes: error.needed_bytes,
            });
        }
        failure.map_or(Ok(()), Err)
    }

    /// Opens the lane a first row of a new instance asks for; its index.
    fn open_lane(&mut self, spec: LaneSpec) -> usize {
        let index = self.router.add_lane(&spec.instance_id);
        self.lanes.push(Lane::new(
            spec,
            self.config.trace_block_size_tokens,
            self.capacity_curves,
        ));
        if let (Some(horizon), Some(lane)) = (self.memory_horizon, self.lanes.last_mut()) {
            lane.set_memory_horizon(horizon);
        }
        if let Some(lane) = self.lanes.last_mut() {
            lane.set_engine_rule(self.serving_rule);
            lane.set_cache_policies(self.cache_policies);
        }
        self.batch.ensure_lanes(self.lanes.len());
        index
    }

    /// Checks, routes and normalizes one event into the batch; nothing is added for an event
    /// that fails.
    fn plan_event(&mut self, event: &TraceEvent, line_number: u64) -> Result<(), EngineError> {
        // Offline, order is enforced here; live, the engine's clock (windows, the order count)
        // clamps, while each lane replays on its own clock (below).
        self.check_timestamp_order(event, line_number)?;
        if event.kind == EventKind::Write {
            self.stats.write_events += 1;
            return Ok(());
        }
        let trace_id = self.trace_id_for(event);
        let route = self
            .router
            .route(event.instance_id.as_deref(), &mut self.targets);
        let route = match route {
            Ok(route) => route,
            Err(source) => {
                let error = EngineError::Route {
                    line_number,
                    trace_id: trace_id.clone(),
                    error: source,
                };
                self.derived_trace_id = trace_id;
                return Err(error);
            }
        };
        if let Route::NewLane(spec) = route {
            let index = self.open_lane(spec);
            self.targets.clear();
            self.targets.push(index);
        }
        if let Some(pool) = self.pool_lane {
            // Every read row also feeds the shared pool, after the row's own lanes.
            self.targets.push(pool);
        }
        // Normalize once per distinct parameter set, all before queueing any work: the length
        // contract is lane-independent, so a row that fails fails for every target.
        let keys_start = self.batch.keys.len();
        self.normalized.clear();
        for &lane_index in &self.targets {
            let params = self.lanes[lane_index].normalize_params();
            if self.normalized.iter().any(|(p, ..)| *p == params) {
                continue;
            }
            let start = self.batch.keys.len();
            // The output's blocks (`--cache-output`) follow the prompt's in one chain.
            self.batch.keys.extend_from_slice(&event.keys);
            self.batch.keys.extend_from_slice(&event.output_keys);
            let (input_token_len, prompt_blocks) = match normalize_appended_request(
                &mut self.batch.keys,
                start,
                event.keys.len(),
                event.input_token_len,
                params,
            ) {
                Ok(normalized) => normalized,
                Err(source) => {
                    self.batch.keys.truncate(keys_start);
                    let error = EngineError::InvalidRequest {
                        line_number,
                        trace_id: trace_id.clone(),
                        error: source,
                    };
                    self.derived_trace_id = trace_id;
                    return Err(error);
                }
            };
            self.normalized.push((
                params,
                start..self.batch.keys.len(),
                input_token_len,
                prompt_blocks,
            ));
        }
        if let Err(error) = self.plan_input_tokens(line_number, &trace_id, keys_start) {
            self.derived_trace_id = trace_id;
            return Err(error);
        }
        let trace_id_start = self.batch.trace_ids.len();
        self.batch.trace_ids.push_str(&trace_id);
        let trace_id_range = trace_id_start..self.batch.trace_ids.len();
        for &lane_index in &self.targets {
            let params = self.lanes[lane_index].normalize_params();
            let (_, keys, input_token_len, prompt_blocks) = self
                .normalized
                .iter()
                .find(|(p, ..)| *p == params)
                .cloned()
                .expect("every target's parameters were normalized above");
            let core_timestamp_ns = self.lanes[lane_index].advance_clock(event.timestamp_ns);
            let items = &mut self.batch.items[lane_index];
            self.batch.emits.push(batch::Emit {
                trace_id: trace_id_range.clone(),
                lane_index,
                item_index: items.len(),
                timestamp_ns: event.timestamp_ns,
                input_token_len,
                observed_cached_tokens: event.cached_tokens,
            });
            items.push(batch::WorkItem {
                keys,
                prompt_blocks,
                input_token_len,
                core_timestamp_ns,
            });
        }
        self.stats.read_events += 1;
        self.derived_trace_id = trace_id;
        Ok(())
    }

    /// Adds the event's input tokens (once per target) to the sum of the rows planned, or
    /// refuses the event (its keys taken out of the batch again) when the sum would wrap.
    fn plan_input_tokens(
        &mut self,
        line_number: u64,
        trace_id: &str,
        keys_start: usize,
    ) -> Result<(), EngineError> {
        let planned = self
            .normalized_input_tokens()
            .and_then(|tokens| self.input_tokens_planned.checked_add(tokens));
        let Some(planned) = planned else {
            self.batch.keys.truncate(keys_start);
            return Err(EngineError::InputTokensOverflow {
                line_number,
                trace_id: trace_id.to_owned(),
                input_token_len: self
                    .normalized
                    .first()
                    .map_or(0, |(_, _, tokens, _)| *tokens),
                total_before: self.input_tokens_planned,
            });
        };
        self.input_tokens_planned = planned;
        Ok(())
    }

    /// Σ over the event's targets of its normalized input tokens; `None` past `u64`.
    fn normalized_input_tokens(&self) -> Option<u64> {
        self.targets.iter().try_fold(0_u64, |sum, &lane_index| {
            let params = self.lanes[lane_index].normalize_params();
            let (_, _, tokens, _) = self.normalized.iter().find(|(p, ..)| *p == params)?;
            sum.checked_add(*tokens)
        })
    }

    /// Enforces (offline) or clamps and counts (live) timestamp order; writes count too.
    fn check_timestamp_order(
        &mut self,
        event: &TraceEvent,
        line_number: u64,
    ) -> Result<i64, EngineError> {
        let timestamp_ns = match self.stats.last_timestamp_ns {
            Some(previous) if event.timestamp_ns < previous => {
                if self.policy == Policy::FailFast {
                    return Err(EngineError::OutOfOrder {
                        line_number,
                        trace_id: self.trace_id_for(event),
                        timestamp_ns: event.timestamp_ns,
                        previous_timestamp_ns: previous,
                    });
                }
                self.stats.out_of_order_timestamps += 1;
                previous
            }
            _ => event.timestamp_ns,
        };
        self.stats.last_timestamp_ns = Some(timestamp_ns);
        Ok(timestamp_ns)
    }

    /// The row's own trace id, or upstream's default `trace_<instance_id>_<timestamp_ns>`
    /// (the row's own instance id, even when routing re-attributes it; a row without one is
    /// named after the override lane it goes to, else the first lane). Reuses a buffer.
    fn trace_id_for(&mut self, event: &TraceEvent) -> String {
        let mut trace_id = std::mem::take(&mut self.derived_trace_id);
        trace_id.clear();
        if event.trace_id.is_empty() {
            let instance_id = event.instance_id.as_deref().unwrap_or_else(|| {
                match (&self.config.routing, &self.config.lanes) {
                    (Routing::Override(id), _) => id.as_str(),
                    (_, LaneSet::OnTheFly(template)) => template.instance_id.as_str(),
                    (_, LaneSet::Configured(specs)) => {
                        specs.first().map_or("", |s| s.instance_id.as_str())
                    }
                }
            });
            let _ = write!(trace_id, "trace_{instance_id}_{}", event.timestamp_ns); // String writes cannot fail
        } else {
            trace_id.push_str(&event.trace_id);
        }
        trace_id
    }
}

/// Checks a lane's parameters once, before any row: a bad lane fails the whole run.
fn check_lane(spec: &LaneSpec, trace_block_size_tokens: u64) -> Result<(), EngineError> {
    let invalid = |reason: String| EngineError::InvalidLane {
        instance_id: spec.instance_id.clone(),
        reason,
    };
    if trace_block_size_tokens == 0 {
        return Err(invalid("trace block_size must be positive".into()));
    }
    if spec.block_size_tokens == 0
        || !spec
            .block_size_tokens
            .is_multiple_of(trace_block_size_tokens)
    {
        return Err(invalid(format!(
            "block_size {} is not a positive multiple of trace block_size {trace_block_size_tokens} (re-blocking is coarsening only)",
            spec.block_size_tokens
        )));
    }
    if spec.block_bytes == 0 {
        return Err(invalid("block_bytes must be positive".into()));
    }
    Ok(())
}

/// The pool lane's parameters: the lanes' own (on-the-fly template, or the configured lanes,
/// which must then all agree: one cache holds blocks of one size) under the pool's name,
/// which no configured or override instance may have.
fn pool_spec(config: &EngineConfig, name: &str) -> Result<LaneSpec, EngineError> {
    let invalid = |reason: String| EngineError::InvalidLane {
        instance_id: name.to_owned(),
        reason,
    };
    if name.is_empty() || name.contains(['\n', '\r']) {
        return Err(invalid(
            "the pool name must be non-empty and on one line".into(),
        ));
    }
    if let Routing::Override(id) = &config.routing
        && id == name
    {
        return Err(invalid(format!(
            "the pool name equals the override instance id {id:?}; name the pool otherwise, \
             with --pool=NAME (or the config's pool_instance_id)"
        )));
    }
    let template = match &config.lanes {
        LaneSet::OnTheFly(template) => template,
        LaneSet::Configured(specs) => {
            if specs.iter().any(|spec| spec.instance_id == name) {
                return Err(invalid(
                    "the pool name equals a configured instance id; name the pool otherwise, \
                     with --pool=NAME (or the config's pool_instance_id)"
                        .to_owned(),
                ));
            }
            let Some(first) = specs.first() else {
                return Err(invalid("no instances to pool".into()));
            };
            let same = |spec: &LaneSpec| LaneSpec {
                instance_id: String::new(),
                ..spec.clone()
            };
            if let Some(other) = specs.iter().find(|spec| same(spec) != same(first)) {
                return Err(invalid(format!(
                    "instances {:?} and {:?} differ in block_size, block bytes, TTL or prefix \
                     hash; one shared pool holds blocks of one kind",
                    first.instance_id, other.instance_id
                )));
            }
            first
        }
    };
    Ok(LaneSpec {
        instance_id: name.to_owned(),
        ..template.clone()
    })
}

/// The batch size above which lanes replay on their own threads (for tests).
#[cfg(test)]
pub(crate) fn batch_parallel_min_keys() -> usize {
    batch::PARALLEL_MIN_KEYS
}

#[cfg(test)]
mod tests;
