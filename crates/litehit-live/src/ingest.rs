//! The ingest thread: tail → parse → `Engine` → facts spill, publishing snapshots.
//!
//! A plain `std::thread` (CPU-bound work stays off the UI's runtime) owns the [`Engine`] and
//! takes one [`IngestEvent`] enum on one channel: user commands, file-change wake-ups from
//! notify, and facts-writer results. It reads at least 64 KiB at a time, takes only complete
//! lines, checks the channel between chunks (a backlog never starves a command), and publishes
//! an `Arc<LiveSnapshot>` to a `watch` channel at most once per frame, plus at once after a
//! command and once a second while idle (so rates decay and ages advance).
//!
//! Every number comes from the engine, its lanes and their capacity-axis accumulators (a
//! slot added late is exact since the start of the trace). Facts rows are formatted with
//! `facts::file::append_fact_row` and spilled to a temporary file, so memory does not grow
//! with the trace; `s` copies the spill behind the header into the facts file atomically on a
//! writer thread.

use std::collections::VecDeque;
use std::fs::File;
use std::io::{self, Read as _, Write as _};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::time::{Duration, Instant};

use tokio::sync::watch;

use super::snapshot::{
    CurvePoint, FactsWrite, FollowState, IngestRate, InputHealth, LaneSnapshot, LaneWindow,
    LineErrorView, LiveSnapshot, MemoryGauge, Slot, SourceStatus, Timeline, Window,
};
use super::tail::{FileWatcher, StartAt, TailNotice, Tailer, WakeSource};
use super::{Command, IngestEvent, LiveHandle, SlotId};
use litehit_core::engine::{Engine, EngineConfig, Lane, Policy};
use litehit_core::facts::file::{FACTS_HEADER, FactsError, append_fact_row, write_atomically};
use litehit_core::formats::{
    LineOutcome, LineParser, ParseOptions, TraceEvent, TraceFormat, detect_format,
};
use litehit_core::projector::Capacity;

/// Facts rows are spilled to disk once this many bytes are buffered.
const SPILL_BUFFER_BYTES: usize = 1 << 20;
/// Closed time windows kept for the timeline.
const MAX_WINDOWS: usize = 240;
/// Samples of the hits-vs-capacity curve per lane.
const CURVE_SAMPLES: u64 = 160;
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
/// not arrive (network file systems): switch to fast polling.
const MISSED_EVENTS_FOR_POLLING: u32 = 2;

/// Everything the ingest thread needs.
#[derive(Debug, Clone)]
pub struct IngestConfig {
    pub trace_path: PathBuf,
    pub start_at: StartAt,
    pub engine: EngineConfig,
    /// `None`: detect from the first non-empty line.
    pub format: Option<TraceFormat>,
    /// Initial capacity slots.
    pub slots: Vec<Capacity>,
    /// Where `s` publishes the facts (`.tmp`, fsync, rename).
    pub facts_out: PathBuf,
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
    /// Directory of the facts spill file (default: the system temp directory).
    pub spill_dir: Option<PathBuf>,
    /// Skip notify and poll only (tests of the fallback, network file systems).
    pub force_polling: bool,
    /// With `format: None`: the engine for the format the first line turns out to have
    /// (block size defaults depend on the format, and a file that does not exist yet cannot
    /// be asked at startup). `None` keeps `engine` whatever the format.
    pub engine_for_format: Option<EngineForFormat>,
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
            start_at: StartAt::Beginning,
            engine,
            format: None,
            slots: vec![
                Capacity::Gigabytes(10.0),
                Capacity::Gigabytes(40.0),
                Capacity::Gigabytes(80.0),
            ],
            facts_out: PathBuf::from("litehit_facts.csv"),
            facts_at_end: false,
            frame_period: Duration::from_millis(100),
            heartbeat: HEARTBEAT,
            window_ns: 10_000_000_000,
            exit_at_eof: false,
            spill_dir: None,
            force_polling: false,
            engine_for_format: None,
        }
    }
}

/// Starts the ingest thread. Fails only if the engine configuration is invalid or the spill
/// file cannot be created; problems with the trace itself are shown, never fatal.
pub fn spawn(config: IngestConfig) -> crate::Result<LiveHandle> {
    let engine = Engine::new(config.engine.clone(), Policy::SkipAndCount)?;
    let spill = FactsSpill::create(config.spill_dir.as_deref())
        .map_err(crate::LiveError::io("creating the facts spill file"))?;
    let (events_tx, events_rx) = mpsc::channel();
    let (snapshot_tx, snapshot_rx) = watch::channel(Arc::new(LiveSnapshot::default()));
    let mut ingest = Ingest::new(
        config,
        engine,
        spill,
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

/// Formatted facts rows: a small buffer in memory, the rest in an unnamed-on-exit temp file.
struct FactsSpill {
    /// Unnamed (unlinked at once), so even a killed monitor leaves nothing behind; the
    /// snapshot writer reads it through a clone of the descriptor at explicit offsets.
    file: File,
    buffer: Vec<u8>,
    on_disk_bytes: u64,
    rows: u64,
    error: Option<String>,
}

impl FactsSpill {
    fn create(dir: Option<&std::path::Path>) -> io::Result<Self> {
        let file = match dir {
            Some(dir) => tempfile::tempfile_in(dir)?,
            None => tempfile::tempfile()?,
        };
        Ok(Self {
            file,
            buffer: Vec::with_capacity(SPILL_BUFFER_BYTES + 4096),
            on_disk_bytes: 0,
            rows: 0,
            error: None,
        })
    }

    fn flush(&mut self) {
        if self.buffer.is_empty() || self.error.is_some() {
            return;
        }
        match self.file.write_all(&self.buffer) {
            Ok(()) => self.on_disk_bytes += self.buffer.len() as u64,
            Err(err) => {
                self.error = Some(format!("spilling facts to a temporary file: {err}"));
            }
        }
        self.buffer.clear();
    }
}

/// Cumulative hit blocks of a live lane at any capacity (the live engine always keeps the
/// capacity-axis accumulators, so every capacity has an answer).
fn live_hit_blocks(lane: &Lane, capacity: litehit_core::projector::Capacity) -> u64 {
    lane.hit_blocks_at(capacity)
        .expect("the live engine keeps capacity curves")
}

/// Cumulative numbers of one lane at a window's start.
#[derive(Debug, Clone, Default)]
struct LaneMark {
    input_tokens: u64,
    infinite_hit_blocks: u64,
    /// `None` for a slot added after the window opened.
    slot_hit_blocks: Vec<Option<u64>>,
}

impl LaneMark {
    fn of(lane: &Lane, slots: &[Slot]) -> Self {
        Self {
            input_tokens: lane.input_tokens(),
            infinite_hit_blocks: lane.infinite_hit_blocks(),
            slot_hit_blocks: slots
                .iter()
                .map(|slot| Some(live_hit_blocks(lane, slot.capacity)))
                .collect(),
        }
    }

    /// The window so far: now minus this mark.
    fn window(&self, lane: &Lane, slots: &[Slot]) -> LaneWindow {
        let block_size_tokens = lane.spec().block_size_tokens;
        LaneWindow {
            input_tokens: lane.input_tokens() - self.input_tokens,
            slot_hit_tokens: slots
                .iter()
                .zip(&self.slot_hit_blocks)
                .map(|(slot, start)| {
                    start.map(|start| {
                        (live_hit_blocks(lane, slot.capacity) - start) * block_size_tokens
                    })
                })
                .collect(),
            infinite_hit_tokens: (lane.infinite_hit_blocks() - self.infinite_hit_blocks)
                * block_size_tokens,
        }
    }
}

/// Hit rates per window of trace time, from differences of cumulative accumulator answers.
#[derive(Debug, Default)]
struct TimelineBuilder {
    window_ns: i64,
    /// Index and start marks of the open window.
    open: Option<(i64, Vec<LaneMark>)>,
    closed: VecDeque<Window>,
}

impl TimelineBuilder {
    /// Called before an event at `timestamp_ns` (already clamped) is processed.
    fn before_event(&mut self, timestamp_ns: i64, lanes: &[Lane], slots: &[Slot]) {
        let index = timestamp_ns.div_euclid(self.window_ns.max(1));
        match &self.open {
            Some((open_index, _)) if *open_index == index => {}
            _ => {
                if let Some(window) = self.current(lanes, slots, false) {
                    if self.closed.len() == MAX_WINDOWS {
                        self.closed.pop_front();
                    }
                    self.closed.push_back(window);
                }
                let marks = lanes.iter().map(|lane| LaneMark::of(lane, slots)).collect();
                self.open = Some((index, marks));
            }
        }
    }

    /// The open window so far (marks of lanes born inside it are zero).
    fn current(&self, lanes: &[Lane], slots: &[Slot], open: bool) -> Option<Window> {
        let (index, marks) = self.open.as_ref()?;
        let born_inside = LaneMark {
            slot_hit_blocks: vec![Some(0); slots.len()],
            ..LaneMark::default()
        };
        Some(Window {
            start_ns: index.saturating_mul(self.window_ns),
            lanes: lanes
                .iter()
                .enumerate()
                .map(|(lane_index, lane)| {
                    marks
                        .get(lane_index)
                        .unwrap_or(&born_inside)
                        .window(lane, slots)
                })
                .collect(),
            open,
        })
    }

    /// A slot was inserted at `index`: earlier windows have no figure for it.
    fn add_slot(&mut self, index: usize) {
        if let Some((_, marks)) = &mut self.open {
            for mark in marks {
                mark.slot_hit_blocks
                    .insert(index.min(mark.slot_hit_blocks.len()), None);
            }
        }
        for window in &mut self.closed {
            for lane in &mut window.lanes {
                lane.slot_hit_tokens
                    .insert(index.min(lane.slot_hit_tokens.len()), None);
            }
        }
    }

    fn remove_slot(&mut self, index: usize) {
        if let Some((_, marks)) = &mut self.open {
            for mark in marks {
                if index < mark.slot_hit_blocks.len() {
                    mark.slot_hit_blocks.remove(index);
                }
            }
        }
        for window in &mut self.closed {
            for lane in &mut window.lanes {
                if index < lane.slot_hit_tokens.len() {
                    lane.slot_hit_tokens.remove(index);
                }
            }
        }
    }

    fn snapshot(&self, lanes: &[Lane], slots: &[Slot]) -> Timeline {
        let mut windows: Vec<Window> = self.closed.iter().cloned().collect();
        windows.extend(self.current(lanes, slots, true));
        Timeline {
            window_ns: self.window_ns,
            windows,
        }
    }

    fn memory_usage_bytes(&self) -> usize {
        self.closed
            .iter()
            .map(|window| {
                size_of::<Window>()
                    + window
                        .lanes
                        .iter()
                        .map(|lane| {
                            size_of::<LaneWindow>()
                                + lane.slot_hit_tokens.capacity() * size_of::<Option<u64>>()
                        })
                        .sum::<usize>()
            })
            .sum()
    }
}

/// Throughput over the last second of wall time.
#[derive(Debug, Default)]
struct RateMeter {
    /// `(when, requests, blocks, bytes)` cumulative samples, oldest first.
    samples: VecDeque<(Instant, u64, u64, u64)>,
}

impl RateMeter {
    fn sample(&mut self, now: Instant, requests: u64, blocks: u64, bytes: u64) -> IngestRate {
        self.samples.push_back((now, requests, blocks, bytes));
        while self
            .samples
            .get(1)
            .is_some_and(|&(when, ..)| now.duration_since(when) >= Duration::from_secs(1))
        {
            self.samples.pop_front();
        }
        let Some(&(then, requests_then, blocks_then, bytes_then)) = self.samples.front() else {
            return IngestRate::default();
        };
        let seconds = now.duration_since(then).as_secs_f64();
        if seconds <= 0.0 {
            return IngestRate::default();
        }
        IngestRate {
            requests_per_s: (requests - requests_then) as f64 / seconds,
            blocks_per_s: (blocks - blocks_then) as f64 / seconds,
            bytes_per_s: (bytes - bytes_then) as f64 / seconds,
        }
    }
}

/// Parsing and replay state (apart from the tailer, so a chunk borrowed from the tailer can
/// be processed while this is borrowed mutably).
struct Pipeline {
    engine: Engine,
    /// See [`IngestConfig::engine_for_format`]; used once, when the format is detected.
    engine_for_format: Option<EngineForFormat>,
    /// The flags do not fit the format the trace turned out to have (e.g. `--block-size
    /// 256` on 512-token Mooncake keys): every line is bad, for this reason.
    engine_error: Option<String>,
    parser: Option<LineParser>,
    parse_options: ParseOptions,
    event: TraceEvent,
    /// Number of the next line in the current file generation.
    line_number: u64,
    slots: Vec<Slot>,
    spill: FactsSpill,
    timeline: TimelineBuilder,
    consumed_bytes_total: u64,
}

impl Pipeline {
    /// Parses and replays every line of `chunk` (complete lines, each ending in `\n`).
    fn process_chunk(&mut self, chunk: &[u8]) {
        self.consumed_bytes_total += chunk.len() as u64;
        let mut rest = chunk;
        while let Some(newline) = memchr::memchr(b'\n', rest) {
            let mut line = &rest[..newline];
            rest = &rest[newline + 1..];
            if let [head @ .., b'\r'] = line {
                line = head;
            }
            let line_number = self.line_number;
            self.line_number += 1;
            self.process_line(line, line_number);
        }
    }

    /// Switches to the engine made for the detected `format` (its native block size), before
    /// any event reached the engine; lines before the first detectable one stay counted as
    /// bad.
    fn adopt_engine_for(&mut self, format: TraceFormat) {
        let Some(make) = self.engine_for_format.take() else {
            return;
        };
        let earlier = self.engine.stats();
        if earlier.read_events > 0 || earlier.write_events > 0 {
            return;
        }
        let config = match (make.0)(format) {
            Ok(config) => config,
            Err(reason) => {
                self.engine_error = Some(reason);
                return;
            }
        };
        let trace_block_size_tokens = config.trace_block_size_tokens;
        match Engine::new(config, Policy::SkipAndCount) {
            Ok(mut engine) => {
                engine.inherit_bad_lines(earlier);
                self.engine = engine;
                self.parse_options = ParseOptions {
                    trace_block_size_tokens,
                };
            }
            Err(error) => self.engine_error = Some(error.to_string()),
        }
    }

    fn process_line(&mut self, line: &[u8], line_number: u64) {
        if self.parser.is_none() {
            if line.iter().all(u8::is_ascii_whitespace) {
                return;
            }
            let Some(format) = detect_format(line) else {
                let reason = match serde_json::from_slice::<serde::de::IgnoredAny>(line) {
                    Err(error) => format!("invalid JSON: {error}"),
                    Ok(_) => {
                        "cannot tell the trace format from this line; pass --format".to_owned()
                    }
                };
                self.engine.record_bad_line(line_number, reason);
                return;
            };
            self.adopt_engine_for(format);
            self.parser = Some(LineParser::new(format, self.parse_options));
        }
        if let Some(reason) = &self.engine_error {
            if !line.iter().all(u8::is_ascii_whitespace) {
                self.engine.record_bad_line(line_number, reason.clone());
            }
            return;
        }
        let Some(parser) = self.parser.as_mut() else {
            return;
        };
        match parser.parse_line(line, line_number, &mut self.event) {
            Ok(LineOutcome::Event) => {
                let clamped_ns = self
                    .engine
                    .stats()
                    .last_timestamp_ns
                    .map_or(self.event.timestamp_ns, |last| {
                        last.max(self.event.timestamp_ns)
                    });
                self.timeline
                    .before_event(clamped_ns, self.engine.lanes(), &self.slots);
                let spill = &mut self.spill;
                let result = self
                    .engine
                    .process_event(&self.event, line_number, &mut |row| {
                        append_fact_row(&mut spill.buffer, &row);
                        spill.rows += 1;
                    });
                if let Err(error) = result {
                    // Live runs skip and count; an error here still must not stop the monitor.
                    self.engine.record_bad_line(line_number, error.to_string());
                }
                if self.spill.buffer.len() >= SPILL_BUFFER_BYTES {
                    self.spill.flush();
                }
            }
            Ok(LineOutcome::Blank | LineOutcome::Ignored) => {}
            Err(error) => {
                let message = match error.field {
                    Some(field) => format!("field \"{field}\": {}", error.message),
                    None => error.message,
                };
                self.engine.record_bad_line(line_number, message);
            }
        }
    }

    fn lane_snapshot(&self, lane: &Lane) -> LaneSnapshot {
        let spec = lane.spec();
        let accumulator = lane
            .accumulator()
            .expect("the live engine keeps capacity curves");
        let saturation = accumulator.saturation_capacity_blocks();
        let largest_slot = self
            .slots
            .iter()
            .filter_map(|slot| slot.capacity.blocks(spec.block_bytes))
            .max()
            .unwrap_or(0);
        let x_max = saturation
            .max(largest_slot)
            .saturating_add(saturation / 20)
            .max(1);
        let step = x_max.div_ceil(CURVE_SAMPLES).max(1);
        let curve = (0..=x_max.div_ceil(step))
            .map(|i| {
                let capacity_blocks = (i * step).min(x_max);
                CurvePoint {
                    capacity_blocks,
                    hit_blocks: accumulator.hit_blocks_at(capacity_blocks),
                }
            })
            .collect();
        LaneSnapshot {
            instance_id: spec.instance_id.clone(),
            block_size_tokens: spec.block_size_tokens,
            block_bytes: spec.block_bytes,
            ttl_ns: spec.ttl_ns,
            requests: lane.requests(),
            input_tokens: lane.input_tokens(),
            request_blocks: lane.request_blocks(),
            unique_blocks: lane.core().current_unique_blocks(),
            ttl_expired_blocks: lane.core().ttl_expired_blocks(),
            slot_hit_blocks: self
                .slots
                .iter()
                .map(|slot| live_hit_blocks(lane, slot.capacity))
                .collect(),
            infinite_hit_blocks: lane.infinite_hit_blocks(),
            saturation_capacity_blocks: saturation,
            curve,
            core_memory_bytes: lane.core().memory_usage_bytes() as u64,
            accumulator_memory_bytes: accumulator.memory_usage_bytes() as u64,
        }
    }
}

/// Whether the thread goes on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Flow {
    Continue,
    Stop,
}

#[expect(clippy::struct_excessive_bools, reason = "independent run flags")]
struct Ingest {
    config: IngestConfig,
    tailer: Tailer,
    generation_seen: u64,
    pipeline: Pipeline,
    next_slot_id: SlotId,
    events_tx: Sender<IngestEvent>,
    events_rx: Receiver<IngestEvent>,
    snapshots: watch::Sender<Arc<LiveSnapshot>>,
    watcher: Option<FileWatcher>,
    wake: WakeSource,
    /// A notify event arrived since the last read.
    woken: bool,
    missed_events: u32,
    paused: bool,
    finished: bool,
    facts_write: FactsWrite,
    /// When `facts_write` last changed (its age is published, so a message can fade).
    facts_write_since: Instant,
    writing_facts: bool,
    last_notice: Option<(TailNotice, Instant)>,
    read_error: Option<String>,
    state: FollowState,
    started: Instant,
    last_publish: Instant,
    dirty: bool,
    sequence: u64,
    rates: RateMeter,
    rate: IngestRate,
}

impl Ingest {
    fn new(
        config: IngestConfig,
        engine: Engine,
        spill: FactsSpill,
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
        slots.sort_by(|a, b| a.capacity.display_order(&b.capacity));
        let next_slot_id = slots.len() as u64 + 1;
        let parse_options = ParseOptions {
            trace_block_size_tokens: config.engine.trace_block_size_tokens,
        };
        let pipeline = Pipeline {
            engine,
            engine_for_format: config.engine_for_format.clone(),
            engine_error: None,
            parser: config
                .format
                .map(|format| LineParser::new(format, parse_options)),
            parse_options,
            event: TraceEvent::default(),
            line_number: 1,
            slots,
            spill,
            timeline: TimelineBuilder {
                window_ns: config.window_ns.max(1),
                ..TimelineBuilder::default()
            },
            consumed_bytes_total: 0,
        };
        let mut ingest = Self {
            tailer: Tailer::new(&config.trace_path, config.start_at),
            generation_seen: 0,
            pipeline,
            next_slot_id,
            events_tx,
            events_rx,
            snapshots,
            watcher: None,
            wake: WakeSource::Polling,
            woken: false,
            missed_events: 0,
            paused: false,
            finished: false,
            facts_write: FactsWrite::Idle,
            facts_write_since: Instant::now(),
            writing_facts: false,
            last_notice: None,
            read_error: None,
            state: FollowState::Waiting,
            started: now,
            last_publish: now,
            dirty: true,
            sequence: 0,
            rates: RateMeter::default(),
            rate: IngestRate::default(),
            config,
        };
        ingest.start_watcher();
        ingest
    }

    fn start_watcher(&mut self) {
        if self.config.force_polling {
            return;
        }
        let tx = self.events_tx.clone();
        let wake = move || {
            // The ingest thread is gone only at shutdown: a lost wake-up is harmless then.
            let _ = tx.send(IngestEvent::FileChanged);
        };
        if let Ok(watcher) = FileWatcher::start(&self.config.trace_path, wake) {
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
            let progressed = if self.paused || self.finished {
                if self.paused && self.tailer.refresh_len() {
                    self.dirty = true; // the lag gauge keeps counting while paused
                }
                false
            } else {
                self.step()
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
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => {
                    self.finish();
                    return;
                }
            }
        }
    }

    fn finish(&mut self) {
        // Quitting with everything read but an unterminated last line: read it as `replay`
        // (and `--exit-at-eof`) do, so the totals agree with theirs.
        if !self.paused && self.tailer.pending_partial_bytes() > 0 {
            // One last read first: a writer may just be finishing that line.
            self.step();
            if self.caught_up() {
                self.read_unterminated_last_line();
            }
        }
        self.pipeline.spill.flush();
        if self.config.facts_at_end {
            self.write_facts_at_end();
        }
        self.publish(Instant::now());
    }

    fn handle(&mut self, event: IngestEvent) -> Flow {
        match event {
            IngestEvent::FileChanged => self.woken = true,
            IngestEvent::FactsWritten(result) => {
                self.writing_facts = false;
                self.facts_write = result;
                self.facts_write_since = Instant::now();
                self.dirty = true;
            }
            IngestEvent::Command(command) => {
                match command {
                    Command::Shutdown => return Flow::Stop,
                    Command::AddSlot(capacity) => {
                        let id = self.next_slot_id;
                        self.next_slot_id += 1;
                        // Slots stay listed by size, whatever order they were added in.
                        let index = self
                            .pipeline
                            .slots
                            .partition_point(|slot| slot.capacity.display_order(&capacity).is_le());
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
                    Command::TogglePause => self.paused = !self.paused,
                    Command::WriteFacts => self.write_facts(),
                    Command::StopAtEof => self.config.exit_at_eof = true,
                }
                // A command is answered at once, not at the next frame.
                self.publish(Instant::now());
            }
        }
        Flow::Continue
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
            Err(err) => {
                self.fail_read(&err);
                return false;
            }
        };
        self.sync_generation();
        let backlog = self.tailer.backlog_bytes();
        let caught_up = self.caught_up();
        if chunk {
            self.dirty = true;
            if !self.woken
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
        }
        if self.config.exit_at_eof && caught_up && !chunk && !self.tailer.switch_pending() {
            self.read_unterminated_last_line();
            self.finished = true;
            self.pipeline.spill.flush();
            self.dirty = true;
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

    /// Line numbers restart when reading restarts on new content.
    fn sync_generation(&mut self) {
        let generation = self.tailer.generation();
        if generation != self.generation_seen {
            self.generation_seen = generation;
            self.pipeline.line_number = 1;
        }
    }

    fn note(&mut self, notice: TailNotice) {
        self.last_notice = Some((notice, Instant::now()));
        self.dirty = true;
    }

    fn fail_read(&mut self, err: &io::Error) {
        let message = err.to_string();
        if self.read_error.as_deref() != Some(message.as_str()) {
            self.read_error = Some(message);
            self.dirty = true;
        }
    }

    /// `s`: publishes every fact so far on a writer thread (the replay goes on meanwhile).
    fn write_facts(&mut self) {
        if self.writing_facts {
            return;
        }
        let job = match self.facts_job() {
            Ok(job) => job,
            Err(failed) => {
                self.facts_write = failed;
                return;
            }
        };
        let (path, rows) = (job.display.clone(), job.rows);
        self.writing_facts = true;
        self.facts_write = FactsWrite::Writing {
            path: path.clone(),
            rows,
        };
        let tx = self.events_tx.clone();
        let spawned = std::thread::Builder::new()
            .name("litehit-facts-writer".to_owned())
            .spawn(move || {
                // The ingest thread may have ended (quit during a write): nobody to tell.
                let _ = tx.send(IngestEvent::FactsWritten(job.run()));
            });
        if let Err(err) = spawned {
            self.writing_facts = false;
            self.facts_write = FactsWrite::Failed {
                path,
                message: format!("starting the writer thread: {err}"),
            };
        }
    }

    /// At the end of a run that asked for it (`--headless --facts-out`): publishes every fact
    /// on this thread. Headless runs have no `s` key, so no writer thread is in flight (two
    /// would share the temp file).
    fn write_facts_at_end(&mut self) {
        debug_assert!(
            !self.writing_facts,
            "a facts snapshot is still being written"
        );
        self.facts_write = match self.facts_job() {
            Ok(job) => job.run(),
            Err(failed) => failed,
        };
    }

    /// Takes what a facts write needs from the spill (flushed first).
    fn facts_job(&mut self) -> Result<FactsJob, FactsWrite> {
        let path = self.config.facts_out.clone();
        // Absolute, so the message says where the file went whatever the working directory.
        let display = std::path::absolute(&path)
            .unwrap_or_else(|_| path.clone())
            .display()
            .to_string();
        let spill = &mut self.pipeline.spill;
        spill.flush();
        if let Some(error) = &spill.error {
            return Err(FactsWrite::Failed {
                path: display,
                message: error.clone(),
            });
        }
        match spill.file.try_clone() {
            Ok(source) => Ok(FactsJob {
                source,
                spilled_bytes: spill.on_disk_bytes,
                rows: spill.rows,
                path,
                display,
            }),
            Err(err) => Err(FactsWrite::Failed {
                path: display,
                message: format!("reopening the facts spill: {err}"),
            }),
        }
    }

    fn publish(&mut self, now: Instant) {
        let pipeline = &self.pipeline;
        let lanes = pipeline.engine.lanes();
        let engine_stats = pipeline.engine.stats();
        let requests: u64 = lanes.iter().map(Lane::requests).sum();
        let blocks: u64 = lanes.iter().map(Lane::request_blocks).sum();
        self.rate = self
            .rates
            .sample(now, requests, blocks, pipeline.consumed_bytes_total);
        // A last line still waiting for its newline is not lag: the writer has it.
        let unterminated_bytes = if self.caught_up() {
            self.tailer.pending_partial_bytes() as u64
        } else {
            0
        };
        let backlog_bytes = self
            .tailer
            .backlog_bytes()
            .saturating_sub(unterminated_bytes);
        let catch_up_eta = (backlog_bytes > 0 && self.rate.bytes_per_s > 0.0)
            .then(|| Duration::from_secs_f64(backlog_bytes as f64 / self.rate.bytes_per_s));
        let state = if self.finished {
            FollowState::Finished
        } else if self.paused {
            FollowState::Paused
        } else if self.read_error.is_some() {
            FollowState::Failed
        } else {
            self.state
        };
        let lane_snapshots: Vec<LaneSnapshot> = lanes
            .iter()
            .map(|lane| pipeline.lane_snapshot(lane))
            .collect();
        let core_bytes: u64 = lane_snapshots
            .iter()
            .map(|lane| lane.core_memory_bytes)
            .sum();
        let accumulator_bytes: u64 = lane_snapshots
            .iter()
            .map(|lane| lane.accumulator_memory_bytes)
            .sum();
        let monitor_bytes = self.tailer.memory_usage_bytes()
            + pipeline.timeline.memory_usage_bytes()
            + pipeline.event.keys.capacity() * size_of::<i64>();
        self.sequence += 1;
        let snapshot = LiveSnapshot {
            sequence: self.sequence,
            uptime: now.duration_since(self.started),
            source: SourceStatus {
                path: self.config.trace_path.display().to_string(),
                state,
                wake: self.wake,
                backlog_bytes,
                unterminated_bytes,
                consumed_bytes: self.tailer.consumed_offset(),
                catch_up_eta,
                last_notice: self
                    .last_notice
                    .map(|(notice, when)| (notice, now.duration_since(when))),
                read_error: self.read_error.clone(),
            },
            slots: pipeline.slots.clone(),
            timeline: pipeline.timeline.snapshot(lanes, &pipeline.slots),
            lanes: lane_snapshots,
            memory: MemoryGauge {
                core_bytes,
                accumulator_bytes,
                facts_buffer_bytes: pipeline.spill.buffer.capacity() as u64,
                facts_on_disk_bytes: pipeline.spill.on_disk_bytes,
                monitor_bytes: monitor_bytes as u64,
            },
            rate: self.rate,
            health: InputHealth {
                bad_lines: engine_stats.bad_lines,
                last_error: engine_stats.last_error.as_ref().map(|error| LineErrorView {
                    line_number: error.line_number,
                    message: strip_line_prefix(&error.message, error.line_number).to_owned(),
                }),
                out_of_order_timestamps: engine_stats.out_of_order_timestamps,
                read_events: engine_stats.read_events,
                write_events: engine_stats.write_events,
                last_timestamp_ns: engine_stats.last_timestamp_ns,
            },
            facts_write: self.facts_write.clone(),
            facts_write_age: now.duration_since(self.facts_write_since),
            facts_rows: pipeline.spill.rows,
            fatal: pipeline.spill.error.clone(),
        };
        // No receiver left means the UI is gone; the next command will be Shutdown.
        self.snapshots.send_replace(Arc::new(snapshot));
        self.last_publish = now;
        self.dirty = false;
    }
}

/// One facts write: the spill's rows so far, to be published at `path`.
struct FactsJob {
    source: File,
    spilled_bytes: u64,
    rows: u64,
    path: PathBuf,
    /// `path` made absolute, for messages.
    display: String,
}

impl FactsJob {
    fn run(self) -> FactsWrite {
        match copy_facts(&self.source, self.spilled_bytes, &self.path) {
            Ok(bytes) => FactsWrite::Done {
                path: self.display,
                rows: self.rows,
                bytes,
            },
            Err(err) => FactsWrite::Failed {
                path: self.display,
                message: error_chain(&err),
            },
        }
    }
}

/// Writes the header and the first `spilled_bytes` of the spill to `path` atomically.
fn copy_facts(
    source: &File,
    spilled_bytes: u64,
    path: &std::path::Path,
) -> Result<u64, FactsError> {
    let write_error = |source| FactsError::Write {
        path: path.to_path_buf(),
        source,
    };
    write_atomically(path, |out| -> Result<u64, FactsError> {
        out.write_all(FACTS_HEADER.as_bytes())
            .map_err(write_error)?;
        out.write_all(b"\n").map_err(write_error)?;
        // At explicit offsets: the descriptor's own offset is the spill writer's.
        let copied = io::copy(&mut OffsetReader::new(source).take(spilled_bytes), out)
            .map_err(write_error)?;
        if copied != spilled_bytes {
            return Err(write_error(io::Error::new(
                io::ErrorKind::UnexpectedEof,
                format!("facts spill ended after {copied} of {spilled_bytes} bytes"),
            )));
        }
        Ok(FACTS_HEADER.len() as u64 + 1 + copied)
    })
}

/// Reads a file from its start with `pread`, leaving the descriptor's offset alone.
struct OffsetReader<'a> {
    file: &'a File,
    offset: u64,
}

impl<'a> OffsetReader<'a> {
    fn new(file: &'a File) -> Self {
        Self { file, offset: 0 }
    }
}

impl io::Read for OffsetReader<'_> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use std::os::unix::fs::FileExt as _;
        let read = self.file.read_at(buf, self.offset)?;
        self.offset += read as u64;
        Ok(read)
    }
}

/// An error with its causes, `: `-separated.
fn error_chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    while let Some(cause) = source {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        source = cause.source();
    }
    text
}

/// Engine messages start with `line N: `; the view shows the number separately.
fn strip_line_prefix(message: &str, line_number: u64) -> &str {
    message
        .strip_prefix(&format!("line {line_number}: "))
        .unwrap_or(message)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_meter_measures_the_last_second() {
        let mut meter = RateMeter::default();
        let start = Instant::now();
        assert_eq!(meter.sample(start, 0, 0, 0), IngestRate::default());
        let rate = meter.sample(start + Duration::from_millis(500), 50, 500, 5_000);
        assert!((rate.requests_per_s - 100.0).abs() < 1e-6);
        assert!((rate.blocks_per_s - 1000.0).abs() < 1e-6);
        // Nothing new for two seconds: the rate decays to zero.
        let idle = meter.sample(start + Duration::from_millis(2600), 50, 500, 5_000);
        assert!(idle.requests_per_s.abs() < 1e-9);
    }

    #[test]
    fn line_prefix_is_stripped_once() {
        assert_eq!(
            strip_line_prefix("line 7: trace_id[x]: bad", 7),
            "trace_id[x]: bad"
        );
        assert_eq!(
            strip_line_prefix("field \"keys\": bad", 7),
            "field \"keys\": bad"
        );
    }
}
