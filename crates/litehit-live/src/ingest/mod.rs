//! The ingest thread: tail → parse → `Engine` → facts spill, publishing snapshots.
//!
//! A plain `std::thread` (CPU-bound work stays off the UI's runtime) owns the [`Engine`] and
//! takes one [`IngestEvent`] enum on one channel: user commands, file-change wake-ups from
//! notify, facts-writer results and batches posted over HTTP (read between two chunks). It reads at least 64 KiB at a time, takes only complete
//! lines, checks the channel between chunks (a backlog never starves a command), and publishes
//! an `Arc<LiveSnapshot>` to a `watch` channel at most once per frame, plus at once after a
//! command and once a second while idle (so rates decay and ages advance).
//!
//! Every number comes from the engine, its lanes and their capacity-axis accumulators (a
//! slot added late is exact since the start of the trace). Facts rows are formatted with
//! `facts::file::append_fact_row` and spilled to a temporary file, so memory does not grow
//! with the trace; `s` copies the spill behind the header into the facts file atomically on a
//! writer thread.
//!
//! This file is the loop: [`IngestConfig`], [`spawn`] and the thread's state and main loop
//! (commands, reading, follow state, when to publish). One job per file beside it:
//!
//! ```text
//! mod.rs       the loop: config, spawn, events and commands, tail → pipeline, publish timing
//! pipeline.rs  bytes → lines → parser → Engine; format detection; bad lines counted
//! assemble.rs  Engine, tailer and run state → LiveSnapshot (lanes, curve, gauges, status)
//! timeline.rs  hit rates per window of trace time, as differences of cumulative answers
//! rate.rs      ingest throughput over the last second of wall time
//! run_state.rs running, paused, finished (input ended) or stopped, and the transitions
//! spill.rs     facts rows buffered, then spilled to an unnamed temporary file (when read)
//! writer.rs    the facts writer: the spill behind the header → the facts file, atomically
//!              (`s` on its thread, or at the end), one write at a time, and its status
//! ```
//!
//! Nothing here leaves this module but [`IngestConfig`], [`EngineForFormat`], [`LineTransform`]
//! and [`spawn`].

mod assemble;
mod engine_scrape;
mod pipeline;
mod rate;
mod run_state;
mod spill;
mod timeline;
mod writer;

use std::io;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use crate::http::{BatchRefused, HttpBatch};
use crate::snapshot::{FollowState, IngestRate, LiveSnapshot, Slot};
use crate::tail::{DirectoryOrder, FileWatcher, StartAt, TailNotice, Tailer, WakeSource};

/// The tailer for what `config` follows: a file, a directory, or standard input.
fn tailer_for(config: &IngestConfig) -> Tailer {
    let tailer = if config.trace_path.as_os_str() == "-" {
        Tailer::stdin()
    } else if let Some((pattern, order)) = &config.directory {
        Tailer::directory(&config.trace_path, pattern.clone(), *order, config.start_at)
    } else {
        Tailer::new(&config.trace_path, config.start_at)
    };
    tailer
        .with_rotation_grace(config.rotation_grace)
        .with_max_line_bytes(config.max_line_bytes)
}
use crate::{Command, IngestEvent, LiveHandle, SlotId};
use litehit_core::engine::{Engine, EngineConfig, LaneSet, Policy};
use litehit_core::facts::file::opt_facts_path;
use litehit_core::formats::TraceFormat;
use litehit_core::projector::Capacity;
use pipeline::Pipeline;
use rate::RateMeter;
use run_state::RunState;
use spill::FactsSpill;
use writer::FactsWriter;

/// A backlog at least this large shows as "catching up" (smaller ones are a writer's last
/// burst).
const CATCHING_UP_BYTES: u64 = 1 << 20;
/// Published at least this often even when nothing changes (rates decay, ages advance).
/// Default of [`IngestConfig::heartbeat`].
const HEARTBEAT: Duration = Duration::from_secs(1);
/// File checks while notify delivers events (a safety net).
const SLOW_POLL: Duration = Duration::from_millis(500);
/// File checks when notify is unavailable or silent.
const FAST_POLL: Duration = Duration::from_millis(100);
/// Growth found by polling without a notify event this many times in a row means events do
/// not arrive (network file systems): switch to fast polling. Three, not two: on a loaded
/// machine a starved watcher thread once let two slow polls in a row find a busy writer's
/// lines first; three such polls with no event at all (1.5 s) is a file system without events.
const MISSED_EVENTS_FOR_POLLING: u32 = 3;

/// Everything the ingest thread needs.
#[derive(Debug, Clone)]
#[expect(clippy::struct_excessive_bools, reason = "independent run switches")]
pub struct IngestConfig {
    /// The trace file, a directory (with [`Self::directory`]), or `-` for standard input.
    pub trace_path: PathBuf,
    /// Follow the files of the directory `trace_path` whose names match this glob, in this
    /// order (`watch DIR --glob 'lookup_hashes_*.jsonl'`).
    pub directory: Option<(glob::Pattern, DirectoryOrder)>,
    /// How long a finished-looking file generation must stay quiet before reading moves on.
    pub rotation_grace: Duration,
    /// The longest line read, without its newline (`--max-line-bytes`): a longer one, from
    /// the file or in a posted body, is skipped and counted as a bad line, and no more than
    /// this of it is held in memory.
    pub max_line_bytes: u64,
    pub start_at: StartAt,
    pub engine: EngineConfig,
    /// `None`: detect from the first non-empty line.
    pub format: Option<TraceFormat>,
    /// What each row's lane is (`--lane-by`): its instance, its tenant, or both.
    pub lane_by: litehit_core::formats::LaneBy,
    /// `--lane-by` as typed, for a trace still to name its format (`format: None`; `lane_by`
    /// then assumed the standard format's `tenant`): checked again, by `replay`'s rule
    /// (`LaneBy::for_format`), when the first line names it. A format whose rows carry no
    /// tenant then makes every line bad with `replay`'s reason, as flags that do not fit
    /// the late format do, instead of sending every row to the lane `-`.
    pub lane_by_spec: Option<litehit_core::grammar::LaneBySpec>,
    /// Initial capacity slots.
    pub slots: Vec<Capacity>,
    /// Cache tiers to split each lane's hits among (`watch --tiers`), through the projector.
    pub tiers: Option<litehit_core::projector::tiers::TierPlan>,
    /// `watch --quota-total`: the cache to split among the tenant lanes, planned on every
    /// publication by `litehit_report`'s planner (`query --quota-total`'s).
    pub quota: Option<litehit_report::QuotaRequest>,
    /// Where `s` publishes the facts (`.tmp`, fsync, rename).
    pub facts_out: PathBuf,
    /// `facts_out` is the default, not a path the user named: a failed write says how to
    /// name another (`--facts-out`).
    pub facts_out_is_default: bool,
    /// Publish the facts at `facts_out` once more when the run ends (`--headless
    /// --facts-out`, which has no `s` key).
    pub facts_at_end: bool,
    /// Snapshots are published at most once per this period.
    pub frame_period: Duration,
    /// And at least once per this period, even when nothing changed (uptime, lag and rates
    /// move on; `--headless --interval 0.5` needs a fresh one every half second).
    pub heartbeat: Duration,
    /// Width of a timeline window in trace nanoseconds.
    pub window_ns: i64,
    /// Stop (state `Finished`) once the end of the file is reached.
    pub exit_at_eof: bool,
    /// Directory of the facts spill file (default: beside `facts_out`, so what it takes on
    /// disk is where the facts go, visible to `ls` and `du`).
    pub spill_dir: Option<PathBuf>,
    /// Keep the facts rows (spilled to disk) for a facts write: only when something can read
    /// them (`--facts-out`, or the TUI's `s` without `--no-facts`). Off: rows are counted,
    /// nothing is written to disk.
    pub retain_facts: bool,
    /// Skip notify and poll only (tests of the fallback, network file systems).
    pub force_polling: bool,
    /// With `format: None`: the engine for the format the first line turns out to have
    /// (block size defaults depend on the format, and a file that does not exist yet cannot
    /// be asked at startup). `None` keeps `engine` whatever the format.
    pub engine_for_format: Option<EngineForFormat>,
    /// Follow `trace_path` (false: `watch --listen` without a trace, rows come only over HTTP).
    pub follow_file: bool,
    /// The HTTP endpoint's address, shown in the snapshot (`watch --listen`).
    pub listen: Option<std::net::SocketAddr>,
    /// The HTTP servers' refusal counters, copied into each snapshot (any server running).
    pub http_counters: Option<Arc<crate::http::limits::HttpCounters>>,
    /// Every lane's memory horizon (`watch --memory-horizon`; `None`: exact at every
    /// capacity): see `Engine::with_memory_horizon`.
    pub memory_horizon: Option<Capacity>,
    /// The serving engine's rule on each fact (`--engine`): see `Engine::with_engine_rule`.
    pub engine_rule: litehit_core::facts::EngineRule,
    /// The serving engine's KV pool (`--gpu-blocks`, `--gpu-memory`): the `engine` slot,
    /// listed first, at the lanes' block size (again when a late format names it).
    pub engine_pool: Option<litehit_core::engine_pool::EnginePool>,
    /// `--engine-metrics`: the engines' Prometheus endpoints, scraped every
    /// `engine_metrics_interval`; the first that says its pool sets the `engine` slot when
    /// none was given.
    pub engine_metrics: Vec<crate::engine_metrics::EngineEndpoint>,
    pub engine_metrics_interval: std::time::Duration,
    /// The eviction policies replayed (`watch --policy lru,opt`): with OPT, every lane's
    /// OPT hits are in the snapshot, and the OPT facts go beside `facts_out`
    /// (`NAME.opt.csv`, with every facts write).
    pub cache_policies: litehit_core::engine::CachePolicies,
    /// Each line (file or HTTP) goes through this before it is parsed; `None`: lines are
    /// trace lines.
    pub line_transform: Option<LineTransform>,
    /// The name of the input's format when `line_transform` converts it (`openai`), shown
    /// instead of the trace format its lines become.
    pub source_format: Option<&'static str>,
    /// `--model`, resolved: named in every snapshot ([`crate::LiveSnapshot::model`]).
    pub model: Option<litehit_core::config::ModelKvSize>,
    /// `--headless` report lines dropped because standard output was not read
    /// (`crate::headless_output`), counted there and published in every snapshot.
    pub headless_lines_dropped: Arc<std::sync::atomic::AtomicU64>,
    /// Lone surrogate escapes (`"\ud800"`) that `line_transform` read as U+FFFD (`openai`),
    /// counted by it and published in every snapshot (`InputHealth::lone_surrogates`).
    pub lone_surrogates: Arc<std::sync::atomic::AtomicU64>,
}

/// Turns the lines of a log that is not a trace into trace lines before they are parsed
/// (`watch --format openai`: request bodies → standard rows). Called with a chunk's non-blank
/// lines and their numbers; returns, for each, the trace line (without its newline) or the
/// reason the line is bad, which is skipped and counted as any bad line.
#[derive(Clone)]
pub struct LineTransform(pub Arc<TransformLines>);

/// The function of a [`LineTransform`]: numbered lines in, one trace line or reason each out.
pub type TransformLines = dyn Fn(&[(u64, &[u8])]) -> Vec<Result<Vec<u8>, String>> + Send + Sync;

impl std::fmt::Debug for LineTransform {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("LineTransform(..)")
    }
}

/// Makes the engine configuration for a detected trace format (see
/// [`IngestConfig::engine_for_format`]).
#[derive(Clone)]
pub struct EngineForFormat(
    pub Arc<dyn Fn(TraceFormat) -> Result<EngineConfig, String> + Send + Sync>,
);

impl std::fmt::Debug for EngineForFormat {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("EngineForFormat(..)")
    }
}

impl IngestConfig {
    /// Defaults for everything but the trace and the engine.
    pub fn new(trace_path: impl Into<PathBuf>, engine: EngineConfig) -> Self {
        Self {
            trace_path: trace_path.into(),
            directory: None,
            rotation_grace: crate::tail::ROTATION_GRACE,
            max_line_bytes: litehit_core::formats::DEFAULT_MAX_LINE_BYTES,
            start_at: StartAt::Beginning,
            engine,
            format: None,
            lane_by: litehit_core::formats::LaneBy::Instance,
            lane_by_spec: None,
            slots: vec![
                Capacity::Gigabytes(10.0),
                Capacity::Gigabytes(40.0),
                Capacity::Gigabytes(80.0),
            ],
            tiers: None,
            quota: None,
            facts_out: PathBuf::from("litehit_facts.csv"),
            facts_out_is_default: false,
            facts_at_end: false,
            frame_period: Duration::from_millis(100),
            heartbeat: HEARTBEAT,
            window_ns: 10_000_000_000,
            exit_at_eof: false,
            spill_dir: None,
            retain_facts: true,
            force_polling: false,
            engine_for_format: None,
            follow_file: true,
            listen: None,
            http_counters: None,
            memory_horizon: None,
            engine_rule: litehit_core::facts::EngineRule::Ideal,
            engine_pool: None,
            engine_metrics: Vec::new(),
            engine_metrics_interval: std::time::Duration::from_secs(1),
            cache_policies: litehit_core::engine::CachePolicies::LRU,
            line_transform: None,
            source_format: None,
            model: None,
            headless_lines_dropped: Arc::default(),
            lone_surrogates: Arc::default(),
        }
    }
}

/// Starts the ingest thread. Fails only if the engine configuration is invalid or the spill
/// file cannot be created; problems with the trace itself are shown, never fatal.
pub fn spawn(config: IngestConfig) -> crate::Result<LiveHandle> {
    let mut engine = Engine::new(config.engine.clone(), Policy::SkipAndCount)?;
    if let Some(horizon) = config.memory_horizon {
        engine = engine.with_memory_horizon(horizon);
    }
    engine = engine
        .with_engine_rule(config.engine_rule)
        .with_cache_policies(config.cache_policies)?;
    let spill_for = |facts_out: &std::path::Path| {
        if !config.retain_facts {
            return Ok(FactsSpill::counting_only());
        }
        let beside = litehit_core::facts::file::directory_of(facts_out);
        let name = facts_out
            .file_name()
            .map_or_else(|| "litehit_facts.csv".into(), |name| name.to_string_lossy());
        FactsSpill::create(config.spill_dir.as_deref().unwrap_or(beside), &name)
            .map_err(crate::LiveError::io("creating the facts spill file"))
    };
    let spill = spill_for(&config.facts_out)?;
    let opt_spill = if config
        .cache_policies
        .contains(litehit_core::engine::CachePolicy::Opt)
    {
        Some(spill_for(&opt_facts_path(&config.facts_out))?)
    } else {
        None
    };
    let (events_tx, events_rx) = mpsc::channel();
    if !config.engine_metrics.is_empty() {
        engine_scrape::spawn_scraper(
            config.engine_metrics.clone(),
            config.engine_metrics_interval,
            events_tx.clone(),
        )
        .map_err(crate::LiveError::io("starting the engine metrics thread"))?;
    }
    let (snapshot_tx, snapshot_rx) = watch::channel(Arc::new(LiveSnapshot::default()));
    let mut ingest = Ingest::new(
        config,
        engine,
        (spill, opt_spill),
        events_tx.clone(),
        events_rx,
        snapshot_tx,
    );
    ingest.publish(Instant::now());
    let thread = std::thread::Builder::new()
        .name("litehit-ingest".to_owned())
        .spawn(move || ingest.run())
        .map_err(crate::LiveError::io("starting the ingest thread"))?;
    Ok(LiveHandle::new(events_tx, snapshot_rx, Some(thread)))
}

/// The `engine` slot of `pool` for `lanes`: each lane's own share of the pool
/// (`EnginePool::slot_capacity`), or why one slot cannot be.
pub(super) fn engine_slot(
    pool: litehit_core::engine_pool::EnginePool,
    lanes: &LaneSet,
) -> Result<Slot, litehit_core::engine_pool::MixedLanePool> {
    pool.slot_capacity(&lanes.block_geometry())
        .map(|capacity| Slot {
            id: crate::snapshot::ENGINE_SLOT_ID,
            capacity,
        })
}

/// The block bytes slots are ordered by (see [`Capacity::order_at`]): `assumed`, else the one
/// value every lane has (or, before any lane exists, every configured lane or the template).
fn ordering_block_bytes(
    assumed: Option<u64>,
    engine: &Engine,
    config: &EngineConfig,
) -> Option<u64> {
    if assumed.is_some() {
        return assumed;
    }
    let mut values: Vec<u64> = engine
        .lanes()
        .iter()
        .map(|lane| lane.spec().block_bytes)
        .collect();
    if values.is_empty() {
        values = match &config.lanes {
            LaneSet::Configured(specs) => specs.iter().map(|spec| spec.block_bytes).collect(),
            LaneSet::OnTheFly(spec) => vec![spec.block_bytes],
        };
    }
    let first = *values.first()?;
    values.iter().all(|&value| value == first).then_some(first)
}

/// Whether the thread goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Stop,
}

struct Ingest {
    config: IngestConfig,
    tailer: Tailer,
    generation_seen: u64,
    /// The tailer's count of lines dropped past the cap, as far as the pipeline has counted
    /// them.
    long_lines_seen: u64,
    pipeline: Pipeline,
    next_slot_id: SlotId,
    events_tx: Sender<IngestEvent>,
    events_rx: Receiver<IngestEvent>,
    snapshots: watch::Sender<Arc<LiveSnapshot>>,
    watcher: Option<FileWatcher>,
    wake: WakeSource,
    /// A notify event arrived since the last read. Apart from `polled`, not one state with it:
    /// both can hold (a wait timed out, then an event came), and growth found with `polled`
    /// but not `woken` is what counts as a missed event.
    woken: bool,
    /// A wait for events timed out since the last read (the next read is a poll's).
    polled: bool,
    missed_events: u32,
    /// Running, paused, finished or stopped: see [`RunState`].
    run: RunState,
    /// The facts writer (`s`, and `--facts-out` at the end): the write in flight and its
    /// status.
    facts: FactsWriter,
    last_notice: Option<(TailNotice, Instant)>,
    read_error: Option<String>,
    /// What the reader is doing (waiting, following, catching up), shown while running.
    state: FollowState,
    started: Instant,
    last_publish: Instant,
    /// Something changed since the last snapshot: one is due at the next frame. A bool of its
    /// own, as it is in any run state (a paused run's lag, a finished run's facts write).
    dirty: bool,
    sequence: u64,
    rates: RateMeter,
    rate: IngestRate,
    /// HTTP batches that came while paused, read (and answered) on resume, in arrival order.
    held_batches: Vec<HttpBatch>,
    /// `--engine-metrics`: each endpoint's scrapes, in flag order.
    engine_scrapes: Vec<engine_scrape::EndpointState>,
}

impl Ingest {
    fn new(
        config: IngestConfig,
        engine: Engine,
        (spill, opt_spill): (FactsSpill, Option<FactsSpill>),
        events_tx: Sender<IngestEvent>,
        events_rx: Receiver<IngestEvent>,
        snapshots: watch::Sender<Arc<LiveSnapshot>>,
    ) -> Self {
        let now = Instant::now();
        let mut slots: Vec<Slot> = config
            .slots
            .iter()
            .zip(1..)
            .map(|(&capacity, id)| Slot { id, capacity })
            .collect();
        // `watch` refused a pool no slot can hold at start (`EnginePool::slot_capacity`).
        slots.extend(
            config
                .engine_pool
                .and_then(|pool| engine_slot(pool, &config.engine.lanes).ok()),
        );
        let order_bytes = ordering_block_bytes(None, &engine, &config.engine);
        slots.sort_by(|a, b| a.order_at(b, order_bytes));
        let next_slot_id = config.slots.len() as u64 + 1;
        let opt_path = opt_spill
            .as_ref()
            .map(|_| opt_facts_path(&config.facts_out));
        let mut pipeline = Pipeline::new(&config, engine, spill, slots);
        pipeline.opt_spill = opt_spill;
        let mut facts = FactsWriter::new(
            config.facts_out.clone(),
            config.facts_out_is_default,
            events_tx.clone(),
        );
        if let Some(opt_path) = opt_path {
            facts = facts.with_opt_path(opt_path);
        }
        let mut ingest = Self {
            tailer: tailer_for(&config),
            generation_seen: 0,
            long_lines_seen: 0,
            pipeline,
            next_slot_id,
            events_tx,
            events_rx,
            snapshots,
            watcher: None,
            wake: WakeSource::Polling,
            woken: false,
            polled: false,
            missed_events: 0,
            run: RunState::Running,
            facts,
            last_notice: None,
            read_error: None,
            state: FollowState::Waiting,
            started: now,
            last_publish: now,
            dirty: true,
            sequence: 0,
            rates: RateMeter::default(),
            rate: IngestRate::default(),
            held_batches: Vec::new(),
            engine_scrapes: config
                .engine_metrics
                .iter()
                .cloned()
                .map(engine_scrape::EndpointState::new)
                .collect(),
            config,
        };
        if ingest.config.follow_file {
            ingest.start_watcher();
        } else {
            // Nothing to wait for: rows arrive over HTTP.
            ingest.state = FollowState::Following;
        }
        ingest
    }

    fn start_watcher(&mut self) {
        if self.config.force_polling || self.config.trace_path.as_os_str() == "-" {
            return; // standard input raises no file-system events
        }
        let tx = self.events_tx.clone();
        let wake = move || {
            // The ingest thread is gone only at shutdown: a lost wake-up is harmless then.
            let _ = tx.send(IngestEvent::FileChanged);
        };
        let watcher = if self.config.directory.is_some() {
            FileWatcher::start_directory(&self.config.trace_path, wake)
        } else {
            FileWatcher::start(&self.config.trace_path, self.tailer.rename_sink(), wake)
        };
        if let Ok(watcher) = watcher {
            self.watcher = Some(watcher);
            self.wake = WakeSource::Events;
        }
    }

    fn run(mut self) {
        loop {
            // Commands first, between every chunk.
            while let Ok(event) = self.events_rx.try_recv() {
                if self.handle(event) == Flow::Stop {
                    self.finish();
                    return;
                }
            }
            let progressed = match self.run {
                RunState::Running => self.config.follow_file && self.step(),
                RunState::Paused => {
                    if self.tailer.refresh_len() {
                        self.dirty = true; // the lag gauge keeps counting while paused
                    }
                    false
                }
                RunState::Finished | RunState::Stopped => false,
            };
            let now = Instant::now();
            let since_publish = now.duration_since(self.last_publish);
            if (self.dirty && since_publish >= self.config.frame_period)
                || since_publish >= self.config.heartbeat
            {
                self.publish(now);
            }
            if progressed {
                continue;
            }
            let poll = match self.wake {
                WakeSource::Events => SLOW_POLL,
                WakeSource::Polling => FAST_POLL,
            };
            let timeout = if self.dirty {
                self.config
                    .frame_period
                    .saturating_sub(since_publish)
                    .min(poll)
            } else {
                poll.min(self.config.heartbeat.saturating_sub(since_publish))
            };
            match self
                .events_rx
                .recv_timeout(timeout.max(Duration::from_millis(1)))
            {
                Ok(event) => {
                    if self.handle(event) == Flow::Stop {
                        self.finish();
                        return;
                    }
                }
                Err(RecvTimeoutError::Timeout) => self.polled = true,
                Err(RecvTimeoutError::Disconnected) => {
                    self.finish();
                    return;
                }
            }
        }
    }

    fn finish(&mut self) {
        // Every snapshot from here on (the facts write's, the last one) says the run stopped
        // (or finished, if it had, or does in the last read).
        let was_reading = self.run.stop();
        // Quitting with everything read but an unterminated last line: read it as `replay`
        // (and `--exit-at-eof`) do, so the totals agree with theirs.
        if was_reading
            && self.pipeline.out_of_memory.is_none()
            && self.tailer.pending_partial_bytes() > 0
        {
            // One last read first: a writer may just be finishing that line.
            self.step();
            if self.caught_up() {
                self.read_unterminated_last_line();
            }
        }
        self.pipeline.spill.flush();
        if self.config.facts_at_end {
            self.facts.write_at_end(
                &mut self.pipeline.spill,
                self.pipeline.opt_spill.as_mut(),
                &self.events_rx,
            );
        }
        self.publish(Instant::now());
    }

    fn handle(&mut self, event: IngestEvent) -> Flow {
        match event {
            IngestEvent::FileChanged => {
                self.woken = true;
                // Events arrive: notify works (again), whatever polling found before.
                self.missed_events = 0;
                if self.watcher.is_some() {
                    self.wake = WakeSource::Events;
                }
            }
            IngestEvent::HttpBatch(batch) => self.read_batch(batch),
            IngestEvent::EngineScrape { index, result } => self.record_scrape(index, result),
            IngestEvent::FactsWritten(result) => {
                self.facts.report(result);
                self.dirty = true;
            }
            IngestEvent::Command(command) => {
                match command {
                    Command::Shutdown => return Flow::Stop,
                    Command::AddSlot(capacity) => {
                        let id = self.next_slot_id;
                        self.next_slot_id += 1;
                        // Slots stay listed by size, whatever order they were added in.
                        let order_bytes = self.ordering_block_bytes();
                        let index = self.pipeline.slots.partition_point(|slot| {
                            slot.is_engine()
                                || slot.capacity.order_at(&capacity, order_bytes).is_le()
                        });
                        self.pipeline.slots.insert(index, Slot { id, capacity });
                        self.pipeline.timeline.add_slot(index);
                    }
                    Command::RemoveSlot(id) => {
                        if let Some(index) =
                            self.pipeline.slots.iter().position(|slot| slot.id == id)
                        {
                            self.pipeline.slots.remove(index);
                            self.pipeline.timeline.remove_slot(index);
                        }
                    }
                    Command::TogglePause => {
                        if self.run.toggle_pause() {
                            self.read_held_batches();
                        }
                    }
                    Command::WriteFacts => self
                        .facts
                        .start(&mut self.pipeline.spill, self.pipeline.opt_spill.as_mut()),
                    Command::SetBlockBytes(block_bytes) => self.set_block_bytes(block_bytes),
                    Command::SetFramePeriod(period) => {
                        self.config.frame_period = period.max(Duration::from_millis(1));
                    }
                    Command::StopAtEof => self.config.exit_at_eof = true,
                }
                // A command is answered at once, not at the next frame.
                self.publish(Instant::now());
            }
        }
        Flow::Continue
    }

    /// Reads a posted batch between two file chunks and answers it; held while paused, refused
    /// once the run has finished (`--exit-at-eof`).
    fn read_batch(&mut self, batch: HttpBatch) {
        if self.run.holds_batches() {
            self.held_batches.push(batch);
            self.dirty = true;
            return;
        }
        let reply = if self.run.is_reading() {
            self.dirty = true;
            Ok(self.pipeline.process_batch(&batch.body))
        } else {
            Err(BatchRefused::Finished)
        };
        self.stop_if_out_of_memory();
        // The client may have hung up: its rows are read all the same.
        let _ = batch.reply.send(reply);
    }

    /// The batches held while paused, in arrival order: read when reading resumes, refused
    /// if the run finished meanwhile.
    fn read_held_batches(&mut self) {
        for batch in std::mem::take(&mut self.held_batches) {
            self.read_batch(batch);
        }
    }

    /// Nothing more is read (the input ended, or memory ran out): the run is `Finished`, the
    /// spill flushed for the facts write, and any batch still held refused.
    fn finish_input(&mut self) {
        if self.run.finish() {
            self.pipeline.spill.flush();
            self.dirty = true;
            self.read_held_batches();
        }
    }

    /// Checks the file, reads one chunk and processes it. Returns whether bytes came in.
    fn step(&mut self) -> bool {
        match self.tailer.check() {
            Ok(notice) => {
                self.read_error = None;
                if let Some(notice) = notice {
                    self.note(notice);
                }
            }
            Err(err) => {
                self.fail_read(&err);
                return false;
            }
        }
        self.sync_generation();
        let chunk = match self.tailer.read_chunk() {
            Ok((chunk, notice)) => {
                let had_bytes = !chunk.is_empty();
                self.pipeline.process_chunk(chunk);
                if let Some(notice) = notice {
                    self.note(notice);
                }
                had_bytes || notice.is_some()
            }
            Err(err) if err.kind() == io::ErrorKind::OutOfMemory => {
                // A partial line longer than memory: the run stops as when the engine
                // cannot grow.
                let pending = self.tailer.pending_partial_bytes();
                self.pipeline
                    .run_out_of_memory(pending.max(crate::tail::READ_CHUNK_BYTES));
                self.stop_if_out_of_memory();
                return false;
            }
            Err(err) => {
                self.fail_read(&err);
                return false;
            }
        };
        // A line dropped past the cap came after every line just processed.
        for _ in self.long_lines_seen..self.tailer.long_lines() {
            self.pipeline.skip_long_line();
        }
        self.long_lines_seen = self.tailer.long_lines();
        if self.stop_if_out_of_memory() {
            return false;
        }
        self.sync_generation();
        let backlog = self.tailer.backlog_bytes();
        let caught_up = self.caught_up();
        if chunk {
            self.dirty = true;
            // Only growth found by a poll (a wait that no event ended) counts: a read right
            // after another finds a busy writer's next lines before their event arrives.
            if !self.woken
                && self.polled
                && !self.tailer.is_draining() // appends to a renamed file raise no event
                && caught_up
                && self.wake == WakeSource::Events
                && self.state == FollowState::Following
            {
                // New data found by polling that notify never announced.
                self.missed_events += 1;
                if self.missed_events >= MISSED_EVENTS_FOR_POLLING {
                    self.wake = WakeSource::Polling;
                }
            } else if self.woken {
                self.missed_events = 0;
            }
            self.woken = false;
            self.polled = false;
        }
        let input_over = self.tailer.input_ended() && !chunk;
        let at_end = caught_up || self.tailer.vanished_read();
        if (self.config.exit_at_eof && at_end && !chunk && !self.tailer.switch_pending())
            || (input_over && self.run != RunState::Finished)
        {
            self.read_unterminated_last_line();
            self.finish_input();
        }
        let state = if !self.tailer.is_open() {
            FollowState::Waiting
        } else if backlog < CATCHING_UP_BYTES {
            FollowState::Following
        } else {
            FollowState::CatchingUp
        };
        if state != self.state {
            self.state = state;
            self.dirty = true;
        }
        chunk
    }

    /// Out of memory (the engine, or a buffer that grows with the input, could not grow):
    /// nothing more is read and the run is over (`Finished`: headless prints its last line
    /// and stops, `--facts-out` gets the facts read so far, the command exits 1 with the
    /// message). Returns whether it stopped.
    fn stop_if_out_of_memory(&mut self) -> bool {
        if self.pipeline.out_of_memory.is_none() {
            return false;
        }
        self.finish_input();
        true
    }

    /// Everything the file holds has been read, but for an unterminated last line.
    fn caught_up(&self) -> bool {
        self.tailer.is_open()
            && self.tailer.backlog_bytes() <= self.tailer.pending_partial_bytes() as u64
    }

    /// Takes an unterminated last line as a final line, as `replay` reads it.
    fn read_unterminated_last_line(&mut self) {
        let partial = self.tailer.take_partial_line();
        self.pipeline.process_chunk(&partial);
    }

    /// Line numbers run on across file generations (rotations, a directory's files, a
    /// truncation), as in a replay of the generations concatenated in order: a trace id
    /// derived from the line number is then the one `replay` gives.
    fn sync_generation(&mut self) {
        self.generation_seen = self.tailer.generation();
    }

    /// The block bytes slots are ordered by: the live assumption, else the one every lane
    /// (or the lane template) has; `None` when lanes differ.
    fn ordering_block_bytes(&self) -> Option<u64> {
        ordering_block_bytes(
            self.pipeline.assumed_block_bytes,
            &self.pipeline.engine,
            &self.config.engine,
        )
    }

    /// `b`: every lane is projected with `block_bytes` from now on. GB slots re-project from
    /// the accumulators (in blocks) at once; their timeline figures so far are dropped, and the
    /// slots re-sorted by their new block counts.
    fn set_block_bytes(&mut self, block_bytes: u64) {
        if block_bytes == 0 {
            return; // refused by the dialog; 0 would make every GB slot 0 blocks
        }
        let pipeline = &mut self.pipeline;
        pipeline.assumed_block_bytes = Some(block_bytes);
        let gb_slots: Vec<usize> = pipeline
            .slots
            .iter()
            .enumerate()
            .filter(|(_, slot)| matches!(slot.capacity, Capacity::Gigabytes(_)))
            .map(|(index, _)| index)
            .collect();
        pipeline.timeline.forget_slots(&gb_slots);
        let mut order: Vec<usize> = (0..pipeline.slots.len()).collect();
        let slots = &pipeline.slots;
        order.sort_by(|&a, &b| slots[a].order_at(&slots[b], Some(block_bytes)));
        pipeline.slots = order
            .iter()
            .map(|&index| pipeline.slots[index].clone())
            .collect();
        pipeline.timeline.reorder_slots(&order);
    }

    /// One engine scrape, beside LiteHit's lanes now; the first pool an engine says is the
    /// `engine` slot when none was given.
    fn record_scrape(
        &mut self,
        index: usize,
        result: Result<crate::engine_metrics::EngineCounters, String>,
    ) {
        let pipeline = &mut self.pipeline;
        let Some(state) = self.engine_scrapes.get_mut(index) else {
            return;
        };
        state.record(
            result,
            pipeline.engine.lanes(),
            &pipeline.slots,
            pipeline.assumed_block_bytes,
        );
        if let Some((gpu_blocks, gpu_block_size_tokens)) = state.pool()
            && pipeline.engine_pool.is_none()
            && gpu_blocks > 0
            && gpu_block_size_tokens > 0
        {
            let pool = litehit_core::engine_pool::EnginePool::Blocks {
                gpu_blocks,
                gpu_block_size_tokens,
            };
            pipeline.engine_pool = Some(pool);
            // Lanes no one slot fits compare at ∞ instead, as without a pool.
            if let Ok(slot) = engine_slot(pool, &self.config.engine.lanes) {
                pipeline.slots.insert(0, slot);
                pipeline.timeline.add_slot(0);
            }
        }
        self.dirty = true;
    }

    fn note(&mut self, notice: TailNotice) {
        self.last_notice = Some((notice, Instant::now()));
        self.dirty = true;
        if notice == TailNotice::Opened && self.watcher.is_none() {
            // The file's directory may not have existed at start (notify could not watch
            // it then): now that the file is there, watch it rather than poll for good.
            self.start_watcher();
        }
    }

    fn fail_read(&mut self, err: &io::Error) {
        let message = err.to_string();
        if self.read_error.as_deref() != Some(message.as_str()) {
            self.read_error = Some(message);
            self.dirty = true;
        }
    }
}

#[cfg(test)]
mod tests {
    /// The files beside `mod.rs`, each importing only from those before it (issue #28, item
    /// 4: `pipeline.rs` and `timeline.rs` once took a name from `assemble.rs`, which imports
    /// `pipeline.rs`).
    const ONE_WAY: &[(&str, &str)] = &[
        ("run_state", include_str!("run_state.rs")),
        ("rate", include_str!("rate.rs")),
        ("spill", include_str!("spill.rs")),
        ("timeline", include_str!("timeline.rs")),
        ("pipeline", include_str!("pipeline.rs")),
        ("writer", include_str!("writer.rs")),
        ("assemble", include_str!("assemble.rs")),
    ];

    /// Whether `line` names the module `name` in a path (`name::`, not `rename::`).
    fn names_module(line: &str, name: &str) -> bool {
        let path = format!("{name}::");
        line.match_indices(&path).any(|(at, _)| {
            !line[..at]
                .chars()
                .next_back()
                .is_some_and(|before| before.is_alphanumeric() || before == '_')
        })
    }

    #[test]
    fn the_files_import_one_way() {
        for (index, (file, text)) in ONE_WAY.iter().enumerate() {
            for (later, _) in &ONE_WAY[index..] {
                let named: Vec<(usize, &str)> = text
                    .lines()
                    .enumerate()
                    .filter(|(_, line)| !line.trim_start().starts_with("//"))
                    .filter(|(_, line)| names_module(line, later))
                    .map(|(number, line)| (number + 1, line))
                    .collect();
                assert!(named.is_empty(), "{file}.rs names {later}.rs: {named:?}");
            }
        }
    }

    #[test]
    fn a_module_is_named_only_in_a_path() {
        assert!(names_module("use super::assemble::x;", "assemble"));
        assert!(names_module("assemble::x()", "assemble"));
        assert!(!names_module("reassemble::x()", "assemble"));
        assert!(!names_module("assemble.rs", "assemble"));
    }
}
