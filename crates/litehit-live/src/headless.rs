//! `--headless`: one JSON line per interval on stdout with the numbers the TUI shows.
//!
//! Reads the same [`LiveSnapshot`] as the TUI and turns it into a serde DTO (serde stays at
//! this edge). Stops at the end of the file with `--exit-at-eof`, on Ctrl-C, or when the
//! ingest thread ends; the last state is always printed once more before stopping.

use std::io;
use std::time::Duration;

use serde::Serialize;
use tokio::time::MissedTickBehavior;

use crate::error::{LiveError, Result};
use crate::headless_output::{HeadlessOutput, OutputState};
use crate::signals::{SecondSignal, StopSignals};

/// How often the run looks for a stop signal.
const SIGNAL_POLL: Duration = Duration::from_millis(20);

use super::LiveHandle;
use super::snapshot::{
    FactsRetention, FactsWrite, FollowState, LaneSnapshot, LiveSnapshot, Slot, Totals, tier_shares,
};
use litehit_core::projector::Capacity;
use litehit_core::projector::tiers::TierPlan;

/// Headless settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadlessOptions {
    /// Time between lines.
    pub interval: Duration,
}

/// How long a signal waits for the ingest thread's last snapshot before printing what it has.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// Prints JSON lines until the end (see the module docs); returns the last snapshot. Lines
/// go through `out`'s bounded queue: a reader that stops reading never blocks this loop, so
/// signals, HTTP and ingestion go on (the dropped lines are counted).
pub fn run(
    live: &LiveHandle,
    options: HeadlessOptions,
    out: &HeadlessOutput,
) -> Result<std::sync::Arc<LiveSnapshot>> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(LiveError::io("starting the headless runtime"))?;
    runtime.block_on(async {
        let mut snapshots = live.snapshots();
        let mut ticker = tokio::time::interval(options.interval.max(Duration::from_millis(10)));
        ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
        ticker.tick().await;
        // Ctrl-C, SIGTERM and SIGHUP end the run alike (`crate::signals`): a last line, then
        // a clean exit (a demo's generated trace is removed on the way out).
        let signals = StopSignals::install(SecondSignal::IsCaught)
            .map_err(LiveError::io("listening for termination signals"))?;
        let stop_signal = async {
            let mut poll = tokio::time::interval(SIGNAL_POLL);
            while signals.received().is_none() {
                poll.tick().await;
            }
        };
        tokio::pin!(stop_signal);
        let mut ingest_alive = true;
        loop {
            tokio::select! {
                _ = ticker.tick() => {
                    let written = offer_line(out, &snapshots.borrow())?;
                    if written == OutputState::ReaderGone {
                        // `| head -1` has what it wanted: stop as on a signal (the facts are
                        // still written if asked), with no one left to print to.
                        live.send(super::Command::Shutdown);
                        let stopped = async { while snapshots.changed().await.is_ok() {} };
                        let _ = tokio::time::timeout(SHUTDOWN_WAIT, stopped).await;
                        return Ok(live.latest());
                    }
                }
                changed = snapshots.changed(), if ingest_alive => {
                    if changed.is_err() {
                        ingest_alive = false;
                    }
                    let snap = std::sync::Arc::clone(&snapshots.borrow_and_update());
                    if snap.source.state == FollowState::Finished || !ingest_alive {
                        write_final_line(out, &snap)?;
                        return Ok(snap);
                    }
                }
                () = &mut stop_signal => {
                    // Stop the ingest thread first: on the way out it reads an unterminated
                    // last line (if everything else was read) and publishes once more.
                    live.send(super::Command::Shutdown);
                    let stopped = async { while snapshots.changed().await.is_ok() {} };
                    let _ = tokio::time::timeout(SHUTDOWN_WAIT, stopped).await;
                    let snap = live.latest();
                    write_final_line(out, &snap)?;
                    return Ok(snap);
                }
            }
        }
    })
}

/// Queues one more report line for `snap`, whatever the queue holds (after the run, once the
/// facts are written, so the last line says how that went); a closed standard output is not
/// an error.
pub fn write_final_line(out: &HeadlessOutput, snap: &LiveSnapshot) -> Result<()> {
    out.push_last(report_line(snap, out.dropped_lines())?);
    Ok(())
}

/// `time` as RFC 3339 in UTC with milliseconds (`2026-12-01T21:42:37.123Z`); before 1970 it
/// says 1970 (a clock that far off has bigger problems). A dozen lines rather than a date
/// crate: only this one format is ever written.
#[must_use]
pub fn rfc3339_utc(time: std::time::SystemTime) -> String {
    let since = time
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    let seconds = since.as_secs();
    let (days, second_of_day) = (seconds / 86_400, seconds % 86_400);
    // Days to a civil date (Howard Hinnant's `civil_from_days`), in unsigned arithmetic.
    let z = days + 719_468;
    let era = z / 146_097;
    let day_of_era = z % 146_097;
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + u64::from(month <= 2);
    format!(
        "{year:04}-{month:02}-{day:02}T{:02}:{:02}:{:02}.{:03}Z",
        second_of_day / 3600,
        second_of_day / 60 % 60,
        second_of_day % 60,
        since.subsec_millis()
    )
}

/// Offers a report line for `snap` to `out` (dropped and counted if its reader is behind).
fn offer_line(out: &HeadlessOutput, snap: &LiveSnapshot) -> Result<OutputState> {
    out.offer(report_line(snap, out.dropped_lines())?)
        .map_err(|message| LiveError::io("writing a report line")(io::Error::other(message)))
}

/// `snap` as one JSON line with its newline; `dropped_lines`: lines dropped before it.
fn report_line(snap: &LiveSnapshot, dropped_lines: u64) -> Result<Vec<u8>> {
    let mut report = Report::of(snap);
    report.dropped_lines = dropped_lines;
    let mut line = serde_json::to_vec(&report).map_err(LiveError::Encode)?;
    line.push(b'\n');
    Ok(line)
}

/// The version of the report line's layout (`schema`): raised when a field changes meaning or
/// goes away (fields are only added within one version, and so are values of a field that
/// names a state, as `state`'s `stopped`: a reader treats an unknown one as "other").
pub const SCHEMA: u32 = 2;

/// One report line.
#[derive(Debug, Serialize)]
pub struct Report {
    /// [`SCHEMA`].
    pub schema: u32,
    /// Wall clock when the line was written, RFC 3339 in UTC (`2026-12-01T21:42:37.123Z`).
    pub time: String,
    /// The trace format read (`standard`, `mooncake`, …), `null` before the first line.
    pub format: Option<&'static str>,
    pub uptime_s: f64,
    /// The source: `waiting` (no file yet), `catching_up`, `following`, `paused`,
    /// `read_error`, then on the last line `finished` (`--exit-at-eof` read it all) or
    /// `stopped` (SIGTERM, SIGINT, SIGHUP or a closed stdout ended the run first).
    pub state: &'static str,
    pub backlog_bytes: u64,
    /// A last line still without its newline (not counted in `backlog_bytes`).
    pub unterminated_last_line_bytes: u64,
    /// The file being read (a rotation's or a directory's current generation).
    pub reading: Option<String>,
    /// Files queued behind it.
    pub queued_files: usize,
    /// Bytes that could not be read (truncated before they were read, or in a file deleted
    /// before its turn), and the files lost that way.
    pub lost_bytes: u64,
    pub lost_files: u64,
    pub slots: Vec<SlotDto>,
    /// `--memory-horizon` as given (`null`: none, exact at every capacity): results above
    /// it, and the ∞ bound, are lower bounds (each instance has it in blocks and bytes).
    pub memory_horizon: Option<SlotDto>,
    /// `watch --tiers`: how the tiers relate (`exclusive` or `inclusive`); absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tier_mode: Option<&'static str>,
    /// `--model`: the model the block bytes were computed for; absent otherwise.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelDto>,
    /// `--engine`: whose prefix-cache rule the hits follow (`ideal`, `vllm`, `sglang`).
    pub engine: &'static str,
    /// `--engine-metrics`: each endpoint's scrapes and last window (absent without).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub engine_metrics: Vec<EngineMetricsDto>,
    /// `watch --quota-total`: the best split of the total among the lanes now, as
    /// `query --quota-total`'s line (the same fields), or `{"error": ...}` while there is
    /// none (no lane yet, a floor's tenant not seen yet); absent without `--quota-total`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub quota: Option<QuotaDto>,
    pub instances: Vec<InstanceDto>,
    /// Σ over instances (each projected with its own block_bytes).
    pub total: TotalDto,
    pub ingest: IngestDto,
    /// The HTTP ingest endpoint, with `--listen` (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpDto>,
    /// What the HTTP servers refused, with `--listen` or `--metrics-listen` (absent
    /// otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http_refused: Option<HttpRefusedDto>,
    pub memory: MemoryDto,
    pub bad_lines: u64,
    /// `watch --format openai`: lone surrogate escapes (`"\ud800"`) its lines held, read
    /// as U+FFFD (the lines are kept); absent for trace input.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub lone_surrogates: Option<u64>,
    pub last_error: Option<ErrorDto>,
    pub out_of_order_timestamps: u64,
    pub facts_rows: u64,
    /// Whether facts rows are kept for a facts write: `on` (spilled to disk), `off` (nothing
    /// can read them: no --facts-out, or --no-facts), `stopped` (a spill write failed).
    pub facts_retention: &'static str,
    /// Why retention stopped.
    pub facts_retention_error: Option<String>,
    /// Bytes of facts rows spilled to disk.
    pub facts_spill_bytes: u64,
    /// The spill file (beside the facts destination, or in --spill-dir), while retaining.
    pub facts_spill_path: Option<String>,
    pub facts_write: Option<String>,
    pub notice: Option<String>,
    /// Report lines dropped before this one because standard output was not read (a
    /// stalled reader: at most `headless_output::QUEUE_LINES` lines wait for it).
    pub dropped_lines: u64,
}

/// [`Report::quota`]: the plan, or why there is none.
#[derive(Debug, Serialize)]
#[serde(untagged)]
pub enum QuotaDto {
    Plan(litehit_report::QuotaPlan),
    Error { error: String },
}

impl QuotaDto {
    fn of(view: &crate::snapshot::QuotaView) -> Self {
        match &view.plan {
            Ok(plan) => Self::Plan(plan.clone()),
            Err(error) => Self::Error {
                error: error.to_string(),
            },
        }
    }
}

/// One `--engine-metrics` endpoint: its scrapes and the last window between two of them.
#[derive(Debug, Serialize)]
pub struct EngineMetricsDto {
    /// The instance it compares with (`null`: every instance).
    pub instance: Option<String>,
    pub url: String,
    pub scrapes: u64,
    pub failed_scrapes: u64,
    /// Why the last scrape failed (`null` once one succeeded).
    pub last_error: Option<String>,
    /// The engine's cumulative prefix-cache query and hit tokens.
    pub query_tokens: Option<u64>,
    pub hit_tokens: Option<u64>,
    /// `vllm:cache_config_info`: the engine's blocks and their tokens.
    pub num_gpu_blocks: Option<u64>,
    pub block_size: Option<u64>,
    /// The last window: the engine's hit rate and LiteHit's (at `litehit_at`).
    pub window: Option<EngineWindowDto>,
    /// `engine` (the `engine` slot) or `inf`: where LiteHit's side is read.
    pub litehit_at: &'static str,
}

/// [`EngineMetricsDto::window`].
#[derive(Debug, Serialize)]
pub struct EngineWindowDto {
    pub engine_query_tokens: u64,
    pub engine_hit_tokens: u64,
    pub engine_hit_rate: Option<f64>,
    pub litehit_input_tokens: u64,
    pub litehit_hit_tokens: u64,
    pub litehit_hit_rate: Option<f64>,
}

impl EngineMetricsDto {
    fn of(view: &crate::snapshot::EngineMetricsView) -> Self {
        Self {
            instance: view.instance_id.clone(),
            url: view.url.clone(),
            scrapes: view.scrapes,
            failed_scrapes: view.failed_scrapes,
            last_error: view.last_error.clone(),
            query_tokens: view.query_tokens,
            hit_tokens: view.hit_tokens,
            num_gpu_blocks: view.pool.map(|(blocks, _)| blocks),
            block_size: view.pool.map(|(_, size)| size),
            window: view.window.map(|window| EngineWindowDto {
                engine_query_tokens: window.engine_query_tokens,
                engine_hit_tokens: window.engine_hit_tokens,
                engine_hit_rate: window.engine_hit_rate(),
                litehit_input_tokens: window.litehit_input_tokens,
                litehit_hit_tokens: window.litehit_hit_tokens,
                litehit_hit_rate: window.litehit_hit_rate(),
            }),
            litehit_at: if view.compared_at_engine_slot {
                litehit_core::engine_pool::ENGINE_SLOT_NAME
            } else {
                crate::labels::INFINITE_CAPACITY_LABEL
            },
        }
    }
}

/// The engine's observed hits (`cached_tokens` in the trace), beside LiteHit's.
#[derive(Debug, Serialize)]
pub struct ObservedDto {
    /// Rows that said the engine's cached tokens.
    pub requests: u64,
    /// Σ input tokens of those rows.
    pub input_tokens: u64,
    /// Σ the engine's cached tokens.
    pub hit_tokens: u64,
    /// `hit_tokens / input_tokens`.
    pub hit_rate: Option<f64>,
    /// An instance's effective capacity in its blocks (the smallest LRU cache reaching the
    /// observed hits), when every row said them; absent otherwise (and in the total).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub effective_capacity_blocks: Option<u64>,
}

impl ObservedDto {
    fn of(counts: litehit_core::engine::ObservedCounts, hit_rate: Option<f64>) -> Option<Self> {
        (counts.requests > 0).then_some(Self {
            requests: counts.requests,
            input_tokens: counts.input_tokens,
            hit_tokens: counts.hit_tokens,
            hit_rate,
            effective_capacity_blocks: None,
        })
    }
}

/// `--model`, as the headless line says it.
#[derive(Debug, Serialize)]
pub struct ModelDto {
    /// The preset's Hugging Face id, or the config file as given.
    pub name: String,
    pub kv_bytes_per_token: u64,
    /// `fp8`, `bf16`, `fp16` or `fp32`.
    pub kv_cache_dtype: &'static str,
    pub full_attention_layers: u64,
    /// Sliding-window or linear-attention layers, not modelled (0: none).
    pub windowed_layers_not_modelled: u64,
    /// What is not modelled, in words; absent when every layer is full attention.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub notice: Option<String>,
}

impl ModelDto {
    fn of(model: &litehit_core::config::ModelKvSize) -> Self {
        Self {
            name: model.model.clone(),
            kv_bytes_per_token: model.kv_bytes_per_token,
            kv_cache_dtype: model.kv_cache_dtype.name(),
            full_attention_layers: model.full_attention_layers,
            windowed_layers_not_modelled: model.windowed_layers,
            notice: model.windowed_notice(),
        }
    }
}

#[derive(Debug, Serialize)]
pub struct SlotDto {
    /// The slot's name (`engine`: the serving engine's own pool); absent for a typed slot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_gb: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_blocks: Option<u64>,
}

impl SlotDto {
    /// A capacity as typed: GB (`-1` for unlimited) or blocks.
    #[must_use]
    pub fn of(capacity: Capacity) -> Self {
        match capacity {
            Capacity::Gigabytes(gb) => Self {
                name: None,
                capacity_gb: Some(gb),
                capacity_blocks: None,
            },
            Capacity::Blocks(blocks) => Self {
                name: None,
                capacity_gb: None,
                capacity_blocks: Some(blocks),
            },
            Capacity::Infinite => Self {
                name: None,
                capacity_gb: Some(-1.0),
                capacity_blocks: None,
            },
        }
    }

    /// A slot: its capacity as typed, and its name if it has one.
    #[must_use]
    pub fn of_slot(slot: &Slot) -> Self {
        Self {
            name: slot.name(),
            ..Self::of(slot.capacity)
        }
    }
}

#[derive(Debug, Serialize)]
pub struct InstanceDto {
    pub instance_id: String,
    /// `"pool"` for the shared pool lane (`watch --pool`), last in `instances` and not in
    /// `total`; absent for an instance.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<&'static str>,
    /// For the pool: N, the instances it is shared by; its slots are at N × each slot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub shared_by: Option<u64>,
    pub requests: u64,
    pub input_tokens: u64,
    pub block_size_tokens: u64,
    pub block_bytes: u64,
    /// When `block_bytes / block_size_tokens` is no real model's KV size per token (the
    /// core's rule, `ImplausibleKvSize`): the warning, as `replay` and `query` print it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kv_size_warning: Option<String>,
    /// The serving engine's own observed hits (`cached_tokens`), once a row said them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed: Option<ObservedDto>,
    /// Cumulative hit tokens per slot.
    pub hit_tokens: Vec<u64>,
    /// Cumulative token hit rate per slot (`null` before the first request).
    pub hit_rates: Vec<Option<f64>>,
    /// `watch --policy lru,opt`: OPT's cumulative hit tokens per slot (absent without OPT).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opt_hit_tokens: Option<Vec<u64>>,
    /// `watch --policy lru,opt`: OPT's cumulative token hit rate per slot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opt_hit_rates: Option<Vec<Option<f64>>>,
    pub infinite_hit_tokens: u64,
    pub infinite_hit_rate: Option<f64>,
    /// Whether `infinite_hit_*` is only a lower bound (under a memory horizon: hits of a
    /// cache of the horizon's size).
    pub infinite_is_lower_bound: bool,
    /// This instance's memory horizon (`null`: none).
    pub memory_horizon: Option<HorizonDto>,
    pub unique_blocks: u64,
    pub unique_kv_bytes: u64,
    /// Whether `unique_blocks` and `unique_kv_bytes` are only lower bounds (under a memory
    /// horizon the keys past it are forgotten and leave the count).
    pub unique_blocks_is_lower_bound: bool,
    pub ttl_expired_blocks: u64,
    /// Rows that came earlier than this lane's latest and were replayed at its latest (each
    /// instance keeps its own clock; the pool, fed by every instance, counts the rows not in
    /// global time order).
    pub clamped_timestamps: u64,
    /// With a TTL: whether `clamped_timestamps` made this lane's expiry, and so its hits,
    /// approximate (`replay` of the time-sorted rows is exact).
    pub ttl_approximate: bool,
    /// One object per slot, aligned with the top-level `slots`.
    pub slot_results: Vec<SlotResultDto>,
    /// `watch --tiers`: one object per tier, top first (absent without tiers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<TierResultDto>>,
    /// `watch --tiers`: the share of the input tokens no tier served.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub miss_share: Option<Option<f64>>,
    /// `watch --tiers`: whether `miss_share` is only an upper bound (some tier is a lower
    /// bound).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub miss_share_is_upper_bound: Option<bool>,
    /// The smallest capacity reaching 50, 90, 95 and 99 % of the ∞ bound's hits (exact,
    /// from the accumulator; `mrc`'s knees), as in `/metrics`; for the pool, in its total
    /// capacity (on its own curve). Lower bounds under a memory horizon (`lower_bound`).
    pub capacity_for_fraction: Vec<FractionDto>,
}

/// The smallest capacity whose hits reach `percent` % of the ∞ bound's.
#[derive(Debug, Serialize)]
pub struct FractionDto {
    pub percent: u32,
    /// Per instance (the pool's: its total capacity) only.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_blocks: Option<u64>,
    /// Per instance: blocks × block bytes. Total: Σ over instances of each one's own.
    pub capacity_bytes: u64,
    /// Whether the capacity is only a lower bound: under a memory horizon the ∞ bound it is a
    /// fraction of is itself a lower bound, so the true knee is at least this (of some
    /// instance, in the total).
    pub lower_bound: bool,
}

impl FractionDto {
    /// One lane's knees, in its own blocks and bytes.
    fn of_lane(lane: &LaneSnapshot) -> Vec<Self> {
        lane.capacity_for_fraction
            .iter()
            .map(|fraction| Self {
                percent: fraction.percent,
                capacity_blocks: Some(fraction.capacity_blocks),
                capacity_bytes: fraction.capacity_blocks.saturating_mul(lane.block_bytes),
                lower_bound: lane.knees_are_lower_bounds(),
            })
            .collect()
    }
}

impl InstanceDto {
    /// One lane's figures; `pool` for the shared pool lane, whose slots are at N × each
    /// slot's blocks (N its `shared_by`).
    fn of(lane: &LaneSnapshot, snap: &LiveSnapshot, labels: &[String], pool: bool) -> Self {
        let slot_count = snap.slots.len();
        // The pool's tiers are at N × each tier (its `tier_capacity_blocks` say so).
        let (tiers, miss_share, miss_share_is_upper_bound) = tier_fields(
            snap,
            &lane.tier_hit_tokens(),
            lane.input_tokens,
            &TierBounds {
                lower_bounds: &lane.tier_lower_bounds,
                miss_is_upper_bound: lane.tier_miss_is_upper_bound(),
                capacity_blocks: Some(&lane.tier_capacity_blocks),
            },
        );
        InstanceDto {
            instance_id: lane.instance_id.clone(),
            kind: pool.then_some("pool"),
            shared_by: pool.then_some(lane.shared_by),
            requests: lane.requests,
            input_tokens: lane.input_tokens,
            block_size_tokens: lane.block_size_tokens,
            block_bytes: lane.block_bytes,
            kv_size_warning: litehit_core::config::ImplausibleKvSize::check(
                lane.block_bytes,
                lane.block_size_tokens,
            )
            .map(|warning| warning.to_string()),
            observed: ObservedDto::of(lane.observed, lane.observed_hit_rate()).map(|dto| {
                ObservedDto {
                    effective_capacity_blocks: lane.observed_effective_capacity_blocks,
                    ..dto
                }
            }),
            hit_tokens: (0..slot_count).map(|i| lane.slot_hit_tokens(i)).collect(),
            hit_rates: (0..slot_count).map(|i| lane.slot_hit_rate(i)).collect(),
            opt_hit_tokens: lane.opt_slot_hit_blocks.as_ref().map(|_| {
                (0..slot_count)
                    .filter_map(|i| lane.opt_slot_hit_tokens(i))
                    .collect()
            }),
            opt_hit_rates: lane
                .opt_slot_hit_blocks
                .as_ref()
                .map(|_| (0..slot_count).map(|i| lane.opt_slot_hit_rate(i)).collect()),
            infinite_hit_tokens: lane.infinite_hit_tokens(),
            infinite_hit_rate: lane.infinite_hit_rate(),
            infinite_is_lower_bound: lane.is_lower_bound(None),
            memory_horizon: lane.memory_horizon_blocks.map(|blocks| HorizonDto {
                blocks,
                bytes: blocks.saturating_mul(lane.block_bytes),
            }),
            unique_blocks: lane.unique_blocks,
            unique_kv_bytes: lane.unique_kv_bytes(),
            unique_blocks_is_lower_bound: lane.is_lower_bound(None),
            ttl_expired_blocks: lane.ttl_expired_blocks,
            clamped_timestamps: lane.clamped_timestamps,
            ttl_approximate: lane.ttl_is_approximate(),
            capacity_for_fraction: FractionDto::of_lane(lane),
            slot_results: snap
                .slots
                .iter()
                .zip(labels)
                .enumerate()
                .map(|(i, (_, label))| SlotResultDto {
                    label: label.clone(),
                    capacity_bytes: lane.slot_capacity_bytes(i),
                    capacity_blocks: lane.slot_capacity_blocks(i),
                    hit_tokens: lane.slot_hit_tokens(i),
                    hit_rate: lane.slot_hit_rate(i),
                    lower_bound: lane.slot_is_lower_bound(i),
                    opt_hit_tokens: lane.opt_slot_hit_tokens(i),
                    opt_hit_rate: lane
                        .opt_slot_hit_blocks
                        .as_ref()
                        .map(|_| lane.opt_slot_hit_rate(i)),
                })
                .collect(),
            tiers,
            miss_share,
            miss_share_is_upper_bound,
        }
    }
}

/// One cache tier's figures for one instance (or the total), as `query --tiers` gives them.
#[derive(Debug, Serialize)]
pub struct TierResultDto {
    pub name: String,
    /// The size as typed (`80GB`, `4TB`, `1000b`).
    pub size: String,
    /// Hit tokens this tier served.
    pub hit_tokens: u64,
    /// Their share of the input tokens (`null` before the first request).
    pub share: Option<f64>,
    /// Whether `hit_tokens` / `share` are only a lower bound: the tier reaches above the
    /// memory horizon (of some instance, in the total). Exact otherwise.
    pub lower_bound: bool,
    /// Per instance: the tier's size in this lane's blocks (`null`: unlimited); for the pool,
    /// N × the size (the pool's tiers are at N × each tier). Absent in the total.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_blocks: Option<Option<u64>>,
}

/// One slot's figures for one instance (or the total).
#[derive(Debug, Serialize)]
pub struct SlotResultDto {
    /// As in `/metrics`: `40GiB`, `0.5GiB`, `5000blocks`, `inf`.
    pub label: String,
    /// Per instance: its cache size in bytes (whole blocks; `null` for `inf`). Total: the
    /// per-instance size typed (`null` for block and `inf` slots).
    pub capacity_bytes: Option<u64>,
    /// Per instance: the size in blocks (`null` for `inf`). Total: only for block slots.
    pub capacity_blocks: Option<u64>,
    pub hit_tokens: u64,
    pub hit_rate: Option<f64>,
    /// Whether `hit_*` is only a lower bound: the capacity (or `inf`) lies above the memory
    /// horizon (of some instance, in the total).
    pub lower_bound: bool,
    /// `watch --policy lru,opt`: OPT's hit tokens at this slot (absent without OPT, so a
    /// line without OPT keeps its bytes).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opt_hit_tokens: Option<u64>,
    /// `watch --policy lru,opt`: OPT's hit rate at this slot (`null` before the first
    /// request; absent without OPT).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opt_hit_rate: Option<Option<f64>>,
}

/// One instance's memory horizon.
#[derive(Debug, Serialize)]
pub struct HorizonDto {
    /// Keys deeper than this in the recency order are forgotten.
    pub blocks: u64,
    /// `blocks × block_bytes`.
    pub bytes: u64,
}

#[derive(Debug, Serialize)]
pub struct TotalDto {
    pub requests: u64,
    pub input_tokens: u64,
    /// Σ over instances of the engine's observed hits, once a row said them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub observed: Option<ObservedDto>,
    pub hit_tokens: Vec<u64>,
    pub hit_rates: Vec<Option<f64>>,
    /// `watch --policy lru,opt`: Σ OPT's hit tokens per slot (absent without OPT).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opt_hit_tokens: Option<Vec<u64>>,
    /// `watch --policy lru,opt`: OPT's Σ token hit rate per slot.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub opt_hit_rates: Option<Vec<Option<f64>>>,
    pub infinite_hit_tokens: u64,
    pub infinite_hit_rate: Option<f64>,
    /// Whether `infinite_hit_*` is only a lower bound (some instance has a memory horizon).
    pub infinite_is_lower_bound: bool,
    pub unique_blocks: u64,
    pub unique_kv_bytes: u64,
    /// Whether `unique_blocks` and `unique_kv_bytes` are only lower bounds (some instance
    /// has a memory horizon).
    pub unique_blocks_is_lower_bound: bool,
    pub slot_results: Vec<SlotResultDto>,
    /// Σ over instances of each one's capacity for 50, 90, 95 and 99 % of its ∞ hits.
    pub capacity_for_fraction: Vec<FractionDto>,
    /// `watch --tiers`: one object per tier, Σ over instances (absent without tiers).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tiers: Option<Vec<TierResultDto>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub miss_share: Option<Option<f64>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub miss_share_is_upper_bound: Option<bool>,
}

/// The tier objects, the miss share of `tier_hit_tokens` over `input_tokens` and whether it
/// is an upper bound; `None` without tiers.
type TierFields = (
    Option<Vec<TierResultDto>>,
    Option<Option<f64>>,
    Option<bool>,
);

/// Per tier: whether it is a lower bound, whether the miss share is an upper bound, and its
/// size in blocks (a lane's, not the total's).
struct TierBounds<'a> {
    lower_bounds: &'a [bool],
    miss_is_upper_bound: bool,
    capacity_blocks: Option<&'a [Option<u64>]>,
}

fn tier_fields(
    snap: &LiveSnapshot,
    tier_hit_tokens: &[u64],
    input_tokens: u64,
    bounds: &TierBounds<'_>,
) -> TierFields {
    let Some(plan) = &snap.tiers else {
        return (None, None, None);
    };
    let (shares, miss_share) = tier_shares(tier_hit_tokens, input_tokens);
    let tiers = plan
        .names
        .iter()
        .zip(&plan.sizes_text)
        .enumerate()
        .map(|(index, (name, size))| TierResultDto {
            name: name.clone(),
            size: size.clone(),
            hit_tokens: tier_hit_tokens.get(index).copied().unwrap_or(0),
            share: shares.get(index).copied().flatten(),
            lower_bound: bounds.lower_bounds.get(index).copied().unwrap_or(false),
            capacity_blocks: bounds
                .capacity_blocks
                .map(|blocks| blocks.get(index).copied().flatten()),
        })
        .collect();
    (
        Some(tiers),
        Some(miss_share),
        Some(bounds.miss_is_upper_bound),
    )
}

#[derive(Debug, Serialize)]
pub struct IngestDto {
    pub requests_per_s: f64,
    pub blocks_per_s: f64,
    pub bytes_per_s: f64,
}

#[derive(Debug, Serialize)]
pub struct HttpDto {
    pub listen: String,
    /// `POST /v1/trace` bodies read into the engine.
    pub requests: u64,
    pub accepted_lines: u64,
    pub rejected_lines: u64,
    /// Bodies waiting for the monitor to resume (paused).
    pub held_requests: u64,
}

/// The HTTP servers' refusals by reason, and what they hold now
/// ([`crate::snapshot::HttpRefusals`]).
#[derive(Debug, Serialize)]
pub struct HttpRefusedDto {
    pub open_connections: u64,
    /// 503: over --max-connections.
    pub connection_cap: u64,
    /// 403: a foreign Host or Origin.
    pub host_or_origin: u64,
    /// 401: no or the wrong --listen-token-file token.
    pub token: u64,
    /// 415: not a JSON-lines Content-Type.
    pub content_type: u64,
    /// Idle, half-sent or paused past --http-idle-timeout.
    pub timeout: u64,
    /// 413: over --max-body.
    pub body_size: u64,
    /// 503: over --max-body-total (or memory).
    pub body_memory: u64,
    pub body_bytes_held: u64,
}

#[derive(Debug, Serialize)]
pub struct MemoryDto {
    pub core_bytes: u64,
    pub accumulator_bytes: u64,
    pub facts_buffer_bytes: u64,
    pub monitor_bytes: u64,
    pub resident_bytes: u64,
    pub facts_on_disk_bytes: u64,
}

#[derive(Debug, Serialize)]
pub struct ErrorDto {
    pub line_number: u64,
    pub message: String,
}

impl Report {
    /// The report for one snapshot.
    #[must_use]
    #[expect(clippy::too_many_lines, reason = "one line per field of the report")]
    pub fn of(snap: &LiveSnapshot) -> Self {
        let slot_count = snap.slots.len();
        let totals: &Totals = &snap.totals;
        let labels: Vec<String> = snap
            .slots
            .iter()
            .map(|slot| {
                crate::labels::slot_label(slot)
                    .unwrap_or_else(|| crate::labels::INFINITE_CAPACITY_LABEL.to_owned())
            })
            .collect();
        let (total_tiers, total_miss_share, total_miss_is_upper_bound) = tier_fields(
            snap,
            &totals.tier_hit_tokens,
            totals.input_tokens,
            &TierBounds {
                lower_bounds: &totals.tier_lower_bounds,
                miss_is_upper_bound: totals.tier_miss_is_upper_bound(),
                capacity_blocks: None,
            },
        );
        Self {
            schema: SCHEMA,
            time: rfc3339_utc(std::time::SystemTime::now()),
            format: snap.trace_format,
            // Whole milliseconds: `1.601`, not `1.6010939419999999`.
            uptime_s: snap.uptime.as_millis() as f64 / 1e3,
            state: match snap.source.state {
                FollowState::Waiting => "waiting",
                FollowState::CatchingUp => "catching_up",
                FollowState::Following => "following",
                FollowState::Paused => "paused",
                FollowState::Finished => "finished",
                FollowState::Stopped => "stopped",
                FollowState::Failed => "read_error",
            },
            backlog_bytes: snap.source.backlog_bytes,
            unterminated_last_line_bytes: snap.source.unterminated_bytes,
            reading: snap.source.reading.clone(),
            queued_files: snap.source.queued,
            lost_bytes: snap.source.lost_bytes,
            lost_files: snap.source.lost_files,
            slots: snap.slots.iter().map(SlotDto::of_slot).collect(),
            memory_horizon: snap.memory_horizon.map(SlotDto::of),
            tier_mode: snap.tiers.as_ref().map(TierPlan::mode_name),
            // Unless `b` set other bytes since: then the model no longer says the size.
            model: snap
                .model
                .as_ref()
                .filter(|_| snap.assumed_block_bytes.is_none())
                .map(ModelDto::of),
            engine: snap.engine_rule.name(),
            engine_metrics: snap
                .engine_metrics
                .iter()
                .map(EngineMetricsDto::of)
                .collect(),
            quota: snap.quota.as_ref().map(QuotaDto::of),
            instances: snap
                .lanes
                .iter()
                .map(|lane| InstanceDto::of(lane, snap, &labels, false))
                .chain(
                    snap.pool
                        .as_ref()
                        .map(|pool| InstanceDto::of(pool, snap, &labels, true)),
                )
                .collect(),
            total: TotalDto {
                requests: totals.requests,
                input_tokens: totals.input_tokens,
                observed: ObservedDto::of(totals.observed, totals.observed_hit_rate()),
                hit_rates: (0..slot_count).map(|i| totals.slot_hit_rate(i)).collect(),
                hit_tokens: totals.slot_hit_tokens.clone(),
                opt_hit_tokens: totals.opt_slot_hit_tokens.clone(),
                opt_hit_rates: totals.opt_slot_hit_tokens.as_ref().map(|_| {
                    (0..slot_count)
                        .map(|i| totals.opt_slot_hit_rate(i))
                        .collect()
                }),
                infinite_hit_tokens: totals.infinite_hit_tokens,
                infinite_hit_rate: totals.infinite_hit_rate(),
                infinite_is_lower_bound: snap.infinite_is_lower_bound(),
                unique_blocks: totals.unique_blocks,
                unique_kv_bytes: totals.unique_kv_bytes,
                unique_blocks_is_lower_bound: totals.infinite_is_lower_bound,
                slot_results: snap
                    .slots
                    .iter()
                    .zip(&labels)
                    .enumerate()
                    .map(|(i, (slot, label))| SlotResultDto {
                        label: label.clone(),
                        capacity_bytes: totals.slot_capacity_bytes.get(i).copied().flatten(),
                        capacity_blocks: match slot.capacity {
                            Capacity::Blocks(blocks) => Some(blocks),
                            Capacity::Gigabytes(_) | Capacity::Infinite => None,
                        },
                        hit_tokens: totals.slot_hit_tokens.get(i).copied().unwrap_or(0),
                        hit_rate: totals.slot_hit_rate(i),
                        lower_bound: totals.slot_lower_bounds.get(i).copied().unwrap_or(false),
                        opt_hit_tokens: totals
                            .opt_slot_hit_tokens
                            .as_ref()
                            .map(|tokens| tokens.get(i).copied().unwrap_or(0)),
                        opt_hit_rate: totals
                            .opt_slot_hit_tokens
                            .as_ref()
                            .map(|_| totals.opt_slot_hit_rate(i)),
                    })
                    .collect(),
                // Every fraction, 0 before the first instance.
                capacity_for_fraction: crate::snapshot::CAPACITY_FRACTION_PERCENTS
                    .iter()
                    .map(|&percent| {
                        let sum = totals
                            .capacity_for_fraction
                            .iter()
                            .find(|sum| sum.percent == percent)
                            .copied()
                            .unwrap_or_default();
                        FractionDto {
                            percent,
                            capacity_blocks: None,
                            capacity_bytes: sum.capacity_bytes,
                            lower_bound: sum.lower_bound,
                        }
                    })
                    .collect(),
                tiers: total_tiers,
                miss_share: total_miss_share,
                miss_share_is_upper_bound: total_miss_is_upper_bound,
            },
            ingest: IngestDto {
                requests_per_s: snap.rate.requests_per_s,
                blocks_per_s: snap.rate.blocks_per_s,
                bytes_per_s: snap.rate.bytes_per_s,
            },
            http: snap.http.as_ref().map(|http| HttpDto {
                listen: http.listen.clone(),
                requests: http.requests,
                accepted_lines: http.accepted_lines,
                rejected_lines: http.rejected_lines,
                held_requests: http.held_requests,
            }),
            http_refused: snap.http_refused.map(|refused| HttpRefusedDto {
                open_connections: refused.open_connections,
                connection_cap: refused.connection_cap,
                host_or_origin: refused.host_or_origin,
                token: refused.token,
                content_type: refused.content_type,
                timeout: refused.timeout,
                body_size: refused.body_size,
                body_memory: refused.body_memory,
                body_bytes_held: refused.body_bytes_held,
            }),
            memory: MemoryDto {
                core_bytes: snap.memory.core_bytes,
                accumulator_bytes: snap.memory.accumulator_bytes,
                facts_buffer_bytes: snap.memory.facts_buffer_bytes,
                monitor_bytes: snap.memory.monitor_bytes,
                resident_bytes: snap.memory.resident_bytes(),
                facts_on_disk_bytes: snap.memory.facts_on_disk_bytes,
            },
            bad_lines: snap.health.bad_lines,
            lone_surrogates: snap
                .source
                .converted_from
                .map(|_| snap.health.lone_surrogates),
            last_error: snap.health.last_error.as_ref().map(|error| ErrorDto {
                line_number: error.line_number,
                message: error.message.clone(),
            }),
            out_of_order_timestamps: snap.health.out_of_order_timestamps,
            facts_rows: snap.facts_rows,
            facts_retention: match snap.facts_retention {
                FactsRetention::Retaining => "on",
                FactsRetention::Off => "off",
                FactsRetention::Stopped { .. } => "stopped",
            },
            facts_retention_error: match &snap.facts_retention {
                FactsRetention::Stopped { message } => Some(message.clone()),
                FactsRetention::Retaining | FactsRetention::Off => None,
            },
            facts_spill_bytes: snap.memory.facts_on_disk_bytes,
            facts_spill_path: snap.facts_spill_path.clone(),
            facts_write: match &snap.facts_write {
                FactsWrite::Idle => None,
                FactsWrite::Writing { path, .. } => Some(format!("writing {path}")),
                FactsWrite::Done { path, .. } => {
                    Some(format!("wrote {path}{}", horizon_note(snap)))
                }
                FactsWrite::Failed { path, message } => Some(format!("failed {path}: {message}")),
            },
            notice: snap
                .source
                .read_error
                .clone()
                .or_else(|| snap.fatal.clone()),
            dropped_lines: snap.headless_lines_dropped,
        }
    }
}

/// After a facts write under a memory horizon: the facts' curves stop at the horizon, so what
/// `query` and `mrc` read from them above it (and at ∞) are lower bounds.
#[must_use]
pub fn horizon_note(snap: &LiveSnapshot) -> String {
    let Some(horizon_blocks) = snap
        .lanes
        .iter()
        .filter_map(|lane| lane.memory_horizon_blocks)
        .max()
    else {
        return String::new();
    };
    format!(
        " (memory horizon {} {}: hits at larger capacities and ∞ are lower bounds)",
        litehit_core::display::count(horizon_blocks),
        if horizon_blocks == 1 {
            "block"
        } else {
            "blocks"
        }
    )
}

/// A few plain lines for the terminal after the TUI closes.
#[must_use]
#[expect(clippy::too_many_lines, reason = "one block per kind of row and note")]
pub fn summary_text(snap: &LiveSnapshot) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    // One column per slot, then the infinite-capacity bound (as on screen: ∞).
    let columns: Vec<String> = snap
        .slots
        .iter()
        .map(|slot| {
            slot.name().map_or_else(
                || litehit_core::display::capacity_label(slot.capacity),
                str::to_owned,
            )
        })
        .chain(std::iter::once("∞".to_owned()))
        .collect();
    // `≥` marks a cell that is only a lower bound (above the memory horizon, and ∞ under it).
    let percent = |rate: Option<f64>, lower_bound: bool| {
        litehit_core::display::percent_bound(rate, 2, lower_bound)
    };
    let _ = writeln!(
        text,
        "litehit watch {}: {} requests, {} {}; token hit rate at {}",
        snap.source.path,
        snap.totals.requests,
        snap.health.bad_lines,
        litehit_core::display::bad_lines_noun(snap.health.bad_lines),
        columns.join(", ")
    ); // writing to a String cannot fail
    // Per slot then ∞: whether a lane's cell is only a lower bound.
    let bounds = |lane: &crate::snapshot::LaneSnapshot| -> Vec<bool> {
        (0..snap.slots.len())
            .map(|index| lane.slot_is_lower_bound(index))
            .chain(std::iter::once(lane.is_lower_bound(None)))
            .collect()
    };
    let mut row = |name: &str,
                   slot_rate: &dyn Fn(usize) -> Option<f64>,
                   infinite: Option<f64>,
                   bounds: &[bool]| {
        let rates: Vec<String> = (0..snap.slots.len())
            .map(slot_rate)
            .chain(std::iter::once(infinite))
            .zip(bounds)
            .map(|(rate, &lower_bound)| percent(rate, lower_bound))
            .collect();
        let _ = writeln!(text, "  {name}: {}", rates.join(", "));
    };
    for lane in &snap.lanes {
        row(
            &lane.instance_id,
            &|i| lane.slot_hit_rate(i),
            lane.infinite_hit_rate(),
            &bounds(lane),
        );
    }
    if snap.lanes.len() > 1 {
        let totals = &snap.totals;
        let total_bounds: Vec<bool> = totals
            .slot_lower_bounds
            .iter()
            .copied()
            .chain(std::iter::once(totals.infinite_is_lower_bound))
            .collect();
        row(
            "total",
            &|i| totals.slot_hit_rate(i),
            totals.infinite_hit_rate(),
            &total_bounds,
        );
    }
    if let Some(pool) = &snap.pool {
        row(
            &format!(
                "{} (shared, {} × each slot)",
                pool.instance_id, pool.shared_by
            ),
            &|i| pool.slot_hit_rate(i),
            pool.infinite_hit_rate(),
            &bounds(pool),
        );
    }
    if snap.totals.opt_slot_hit_tokens.is_some() {
        // `--policy lru,opt`: the optimal policy over every instance (no horizon with OPT).
        let totals = &snap.totals;
        row(
            "OPT (Belady's optimal policy), total",
            &|i| totals.opt_slot_hit_rate(i),
            totals.infinite_hit_rate(),
            &vec![false; snap.slots.len() + 1],
        );
    }
    if snap.totals.infinite_is_lower_bound {
        let _ = writeln!(
            text,
            "  (≥: a lower bound: the memory horizon forgets keys, so larger caches and ∞ would hit more)"
        );
    }
    if let Some(block_bytes) = snap.assumed_block_bytes {
        let _ = writeln!(
            text,
            "  GiB slots at {}/block (set live with b); the facts keep the run's own block bytes",
            litehit_core::display::bytes(
                block_bytes,
                litehit_core::display::Precision::Decimals(2)
            )
        );
    }
    let note = horizon_note(snap);
    if !note.is_empty() {
        let _ = writeln!(text, "  ∞ is a lower bound{note}");
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::snapshot::{LaneSnapshot, Slot};

    fn lane(name: &str, hits: Vec<u64>, infinite: u64) -> LaneSnapshot {
        LaneSnapshot {
            instance_id: name.to_owned(),
            block_size_tokens: 10,
            requests: 4,
            input_tokens: 1000,
            slot_hit_blocks: hits,
            infinite_hit_blocks: infinite,
            ..LaneSnapshot::default()
        }
    }

    #[test]
    fn rfc3339_times_are_utc_civil_dates() {
        use std::time::{Duration, UNIX_EPOCH};
        let at = |seconds: u64, millis: u64| {
            rfc3339_utc(UNIX_EPOCH + Duration::from_secs(seconds) + Duration::from_millis(millis))
        };
        assert_eq!(at(0, 0), "1970-01-01T00:00:00.000Z");
        // `date -u -d @951782400`: the leap day of a year divisible by 400.
        assert_eq!(at(951_782_400, 5), "2000-02-29T00:00:00.005Z");
        assert_eq!(at(1_796_161_357, 123), "2026-12-01T21:42:37.123Z");
        assert_eq!(at(4_102_444_799, 999), "2099-12-31T23:59:59.999Z");
    }

    #[test]
    fn the_report_has_a_schema_and_slot_objects() {
        let snap = LiveSnapshot {
            slots: vec![
                Slot {
                    id: 1,
                    capacity: Capacity::Gigabytes(0.5),
                },
                Slot {
                    id: 2,
                    capacity: Capacity::Blocks(7),
                },
                Slot {
                    id: 3,
                    capacity: Capacity::Infinite,
                },
            ],
            lanes: vec![LaneSnapshot {
                block_bytes: 1 << 20,
                ..lane("a", vec![10, 5, 30], 30)
            }],
            facts_retention: FactsRetention::Off,
            ..LiveSnapshot::default()
        }
        .finished();
        let report = serde_json::to_value(Report::of(&snap)).unwrap();
        assert_eq!(report["schema"], SCHEMA);
        assert_eq!(report["facts_retention"], "off");
        let slots = &report["instances"][0]["slot_results"];
        assert_eq!(slots[0]["label"], "0.5GiB");
        assert_eq!(slots[0]["capacity_blocks"], 512);
        assert_eq!(slots[0]["capacity_bytes"], 512 << 20);
        assert_eq!(slots[0]["hit_tokens"], 100);
        assert_eq!(slots[0]["hit_rate"], 0.1);
        assert_eq!(slots[1]["label"], "7blocks");
        assert_eq!(slots[1]["capacity_bytes"], 7 << 20);
        assert_eq!(slots[2]["label"], "inf");
        assert!(slots[2]["capacity_blocks"].is_null());
        let total = &report["total"]["slot_results"];
        assert_eq!(total[0]["capacity_bytes"], 512 << 20);
        assert!(total[0]["capacity_blocks"].is_null());
        assert_eq!(total[1]["capacity_blocks"], 7);
        // The old, positional fields are still there.
        assert_eq!(report["instances"][0]["hit_tokens"][1], 50);
    }

    /// Issue #26: under `--memory-horizon` the exit summary marks its bounds `≥`, and the
    /// JSON says the unique blocks are a lower bound (a marker beside the number).
    #[test]
    fn under_a_horizon_the_summary_and_the_unique_blocks_are_marked_as_lower_bounds() {
        let mut bounded = lane("a", vec![10, 20], 30);
        bounded.block_bytes = 1 << 20;
        bounded.unique_blocks = 77;
        bounded.memory_horizon_blocks = Some(5);
        let snap = LiveSnapshot {
            slots: vec![
                Slot {
                    id: 1,
                    capacity: Capacity::Blocks(4),
                },
                Slot {
                    id: 2,
                    capacity: Capacity::Blocks(7),
                },
            ],
            lanes: vec![bounded, lane("b", vec![0, 5], 50)],
            ..LiveSnapshot::default()
        }
        .finished();
        let text = summary_text(&snap);
        assert!(text.contains("  a: 10.00%, ≥20.00%, ≥30.00%\n"), "{text}");
        assert!(text.contains("  b: 0.00%, 5.00%, 50.00%\n"), "{text}");
        assert!(
            text.contains("  total: 5.00%, ≥12.50%, ≥40.00%\n"),
            "{text}"
        );
        assert!(text.contains("≥: a lower bound"), "{text}");

        let report: serde_json::Value = serde_json::to_value(Report::of(&snap)).unwrap();
        let instances = &report["instances"];
        assert_eq!(
            instances[0]["unique_blocks"], 77,
            "the number stays a number"
        );
        assert_eq!(instances[0]["unique_blocks_is_lower_bound"], true);
        assert_eq!(instances[1]["unique_blocks_is_lower_bound"], false);
        assert_eq!(report["total"]["unique_blocks_is_lower_bound"], true);

        // Without a horizon: no mark anywhere.
        let exact = LiveSnapshot {
            lanes: vec![lane("a", vec![10, 20], 30)],
            ..snap
        }
        .finished();
        assert!(!summary_text(&exact).contains('≥'));
        let report: serde_json::Value = serde_json::to_value(Report::of(&exact)).unwrap();
        assert_eq!(report["total"]["unique_blocks_is_lower_bound"], false);
    }

    /// Issue 26: each instance says when its KV size per token is no real model's.
    #[test]
    fn an_implausible_kv_size_is_a_field_of_its_instance() {
        let snap = LiveSnapshot {
            lanes: vec![
                LaneSnapshot {
                    block_size_tokens: 512,
                    block_bytes: 1 << 20,
                    ..lane("small", vec![], 0)
                },
                LaneSnapshot {
                    block_bytes: 1 << 20,
                    ..lane("plausible", vec![], 0)
                },
            ],
            ..LiveSnapshot::default()
        }
        .finished();
        let report = serde_json::to_value(Report::of(&snap)).unwrap();
        let warning = report["instances"][0]["kv_size_warning"].as_str().unwrap();
        assert!(
            warning.starts_with("implausible KV size: 2 KiB per token"),
            "{warning}"
        );
        assert!(report["instances"][1].get("kv_size_warning").is_none());
    }

    #[test]
    fn the_exit_summary_has_a_column_per_slot_then_infinity() {
        let mut snap = LiveSnapshot {
            slots: vec![
                Slot {
                    id: 1,
                    capacity: Capacity::Gigabytes(40.0),
                },
                Slot {
                    id: 2,
                    capacity: Capacity::Blocks(7),
                },
            ],
            lanes: vec![lane("a", vec![10, 20], 30), lane("b", vec![0, 5], 50)],
            ..LiveSnapshot::default()
        }
        .finished();
        let text = summary_text(&snap);
        assert!(
            text.contains("token hit rate at 40 GiB, 7 blk, ∞\n"),
            "the screen's spelling: {text}"
        );
        assert!(!text.contains("set live with b"), "{text}");
        assert!(text.contains("  a: 10.00%, 20.00%, 30.00%\n"), "{text}");
        assert!(text.contains("  total: 5.00%, 12.50%, 40.00%\n"), "{text}");

        // Every slot deleted: only the ∞ column, no dangling separator.
        snap.slots.clear();
        for lane in &mut snap.lanes {
            lane.slot_hit_blocks.clear();
        }
        snap.assumed_block_bytes = Some(1 << 20);
        let text = summary_text(&snap);
        assert!(text.contains("token hit rate at ∞\n"), "{text}");
        assert!(
            text.contains("GiB slots at 1.00 MiB/block (set live with b)"),
            "{text}"
        );
        assert!(text.contains("  a: 30.00%\n"), "{text}");
    }
}
