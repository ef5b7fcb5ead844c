//! `--headless`: one JSON line per interval on stdout with the numbers the TUI shows.
//!
//! Reads the same [`LiveSnapshot`] as the TUI and turns it into a serde DTO (serde stays at
//! this edge). Stops at the end of the file with `--exit-at-eof`, on Ctrl-C, or when the
//! ingest thread ends; the last state is always printed once more before stopping.

use std::io::{self, Write};
use std::time::Duration;

use serde::Serialize;
use tokio::time::MissedTickBehavior;

use crate::error::{LiveError, Result};
use crate::signals::{SecondSignal, StopSignals};

/// How often the run looks for a stop signal.
const SIGNAL_POLL: Duration = Duration::from_millis(20);

use super::LiveHandle;
use super::snapshot::{FactsWrite, FollowState, LiveSnapshot, Totals};
use litehit_core::projector::Capacity;

/// Headless settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HeadlessOptions {
    /// Time between lines.
    pub interval: Duration,
}

/// How long a signal waits for the ingest thread's last snapshot before printing what it has.
const SHUTDOWN_WAIT: Duration = Duration::from_secs(5);

/// Prints JSON lines until the end (see the module docs); returns the last snapshot.
pub fn run(
    live: &LiveHandle,
    options: HeadlessOptions,
    out: &mut dyn Write,
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
                    let written = write_line(out, &snapshots.borrow())?;
                    if written == Written::ReaderGone {
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
                        write_line(out, &snap)?;
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
                    write_line(out, &snap)?;
                    return Ok(snap);
                }
            }
        }
    })
}

/// Whether a report line reached its reader.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Written {
    Line,
    /// Standard output is closed (`| head -1` exited): the run ends cleanly.
    ReaderGone,
}

fn write_line(out: &mut dyn Write, snap: &LiveSnapshot) -> Result<Written> {
    let line = serde_json::to_string(&Report::of(snap)).map_err(LiveError::Encode)?;
    match writeln!(out, "{line}").and_then(|()| out.flush()) {
        Ok(()) => Ok(Written::Line),
        Err(err) if err.kind() == io::ErrorKind::BrokenPipe => Ok(Written::ReaderGone),
        Err(err) => Err(LiveError::io("writing a report line")(err)),
    }
}

/// One report line.
#[derive(Debug, Serialize)]
pub struct Report {
    pub uptime_s: f64,
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
    pub instances: Vec<InstanceDto>,
    /// Σ over instances (each projected with its own block_bytes).
    pub total: TotalDto,
    pub ingest: IngestDto,
    /// The HTTP ingest endpoint, with `--listen` (absent otherwise).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub http: Option<HttpDto>,
    pub memory: MemoryDto,
    pub bad_lines: u64,
    pub last_error: Option<ErrorDto>,
    pub out_of_order_timestamps: u64,
    pub facts_rows: u64,
    pub facts_write: Option<String>,
    pub notice: Option<String>,
}

#[derive(Debug, Serialize)]
pub struct SlotDto {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_gb: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub capacity_blocks: Option<u64>,
}

#[derive(Debug, Serialize)]
pub struct InstanceDto {
    pub instance_id: String,
    pub requests: u64,
    pub input_tokens: u64,
    pub block_size_tokens: u64,
    pub block_bytes: u64,
    /// Cumulative hit tokens per slot.
    pub hit_tokens: Vec<u64>,
    /// Cumulative token hit rate per slot (`null` before the first request).
    pub hit_rates: Vec<Option<f64>>,
    pub infinite_hit_tokens: u64,
    pub infinite_hit_rate: Option<f64>,
    pub unique_blocks: u64,
    pub unique_kv_bytes: u64,
    pub ttl_expired_blocks: u64,
}

#[derive(Debug, Serialize)]
pub struct TotalDto {
    pub requests: u64,
    pub input_tokens: u64,
    pub hit_tokens: Vec<u64>,
    pub hit_rates: Vec<Option<f64>>,
    pub infinite_hit_tokens: u64,
    pub infinite_hit_rate: Option<f64>,
    pub unique_blocks: u64,
    pub unique_kv_bytes: u64,
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
        let totals: Totals = snap.totals();
        Self {
            // Whole milliseconds: `1.601`, not `1.6010939419999999`.
            uptime_s: snap.uptime.as_millis() as f64 / 1e3,
            state: match snap.source.state {
                FollowState::Waiting => "waiting",
                FollowState::CatchingUp => "catching_up",
                FollowState::Following => "following",
                FollowState::Paused => "paused",
                FollowState::Finished => "finished",
                FollowState::Failed => "read_error",
            },
            backlog_bytes: snap.source.backlog_bytes,
            unterminated_last_line_bytes: snap.source.unterminated_bytes,
            reading: snap.source.reading.clone(),
            queued_files: snap.source.queued,
            lost_bytes: snap.source.lost_bytes,
            lost_files: snap.source.lost_files,
            slots: snap
                .slots
                .iter()
                .map(|slot| match slot.capacity {
                    Capacity::Gigabytes(gb) => SlotDto {
                        capacity_gb: Some(gb),
                        capacity_blocks: None,
                    },
                    Capacity::Blocks(blocks) => SlotDto {
                        capacity_gb: None,
                        capacity_blocks: Some(blocks),
                    },
                    Capacity::Infinite => SlotDto {
                        capacity_gb: Some(-1.0),
                        capacity_blocks: None,
                    },
                })
                .collect(),
            instances: snap
                .lanes
                .iter()
                .map(|lane| InstanceDto {
                    instance_id: lane.instance_id.clone(),
                    requests: lane.requests,
                    input_tokens: lane.input_tokens,
                    block_size_tokens: lane.block_size_tokens,
                    block_bytes: lane.block_bytes,
                    hit_tokens: (0..slot_count).map(|i| lane.slot_hit_tokens(i)).collect(),
                    hit_rates: (0..slot_count).map(|i| lane.slot_hit_rate(i)).collect(),
                    infinite_hit_tokens: lane.infinite_hit_tokens(),
                    infinite_hit_rate: lane.infinite_hit_rate(),
                    unique_blocks: lane.unique_blocks,
                    unique_kv_bytes: lane.unique_kv_bytes(),
                    ttl_expired_blocks: lane.ttl_expired_blocks,
                })
                .collect(),
            total: TotalDto {
                requests: totals.requests,
                input_tokens: totals.input_tokens,
                hit_rates: (0..slot_count).map(|i| totals.slot_hit_rate(i)).collect(),
                hit_tokens: totals.slot_hit_tokens.clone(),
                infinite_hit_tokens: totals.infinite_hit_tokens,
                infinite_hit_rate: totals.infinite_hit_rate(),
                unique_blocks: totals.unique_blocks,
                unique_kv_bytes: totals.unique_kv_bytes,
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
            memory: MemoryDto {
                core_bytes: snap.memory.core_bytes,
                accumulator_bytes: snap.memory.accumulator_bytes,
                facts_buffer_bytes: snap.memory.facts_buffer_bytes,
                monitor_bytes: snap.memory.monitor_bytes,
                resident_bytes: snap.memory.resident_bytes(),
                facts_on_disk_bytes: snap.memory.facts_on_disk_bytes,
            },
            bad_lines: snap.health.bad_lines,
            last_error: snap.health.last_error.as_ref().map(|error| ErrorDto {
                line_number: error.line_number,
                message: error.message.clone(),
            }),
            out_of_order_timestamps: snap.health.out_of_order_timestamps,
            facts_rows: snap.facts_rows,
            facts_write: match &snap.facts_write {
                FactsWrite::Idle => None,
                FactsWrite::Writing { path, .. } => Some(format!("writing {path}")),
                FactsWrite::Done { path, .. } => Some(format!("wrote {path}")),
                FactsWrite::Failed { path, message } => Some(format!("failed {path}: {message}")),
            },
            notice: snap
                .source
                .read_error
                .clone()
                .or_else(|| snap.fatal.clone()),
        }
    }
}

/// A few plain lines for the terminal after the TUI closes.
#[must_use]
pub fn summary_text(snap: &LiveSnapshot) -> String {
    use std::fmt::Write as _;
    let mut text = String::new();
    // One column per slot, then the infinite-capacity bound (as on screen: ∞).
    let columns: Vec<String> = snap
        .slots
        .iter()
        .map(|slot| slot.capacity.to_string())
        .chain(std::iter::once("∞".to_owned()))
        .collect();
    let percent =
        |rate: Option<f64>| rate.map_or_else(|| "-".to_owned(), |r| format!("{:.2}%", r * 100.0));
    let _ = writeln!(
        text,
        "litehit watch {}: {} requests, {} {}; token hit rate at {}",
        snap.source.path,
        snap.totals().requests,
        snap.health.bad_lines,
        litehit_core::display::bad_lines_noun(snap.health.bad_lines),
        columns.join(", ")
    ); // writing to a String cannot fail
    let mut row = |name: &str, slot_rate: &dyn Fn(usize) -> Option<f64>, infinite: Option<f64>| {
        let rates: Vec<String> = (0..snap.slots.len())
            .map(|i| percent(slot_rate(i)))
            .chain(std::iter::once(percent(infinite)))
            .collect();
        let _ = writeln!(text, "  {name}: {}", rates.join(", "));
    };
    for lane in &snap.lanes {
        row(
            &lane.instance_id,
            &|i| lane.slot_hit_rate(i),
            lane.infinite_hit_rate(),
        );
    }
    if snap.lanes.len() > 1 {
        let totals = snap.totals();
        row(
            "total",
            &|i| totals.slot_hit_rate(i),
            totals.infinite_hit_rate(),
        );
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
        };
        let text = summary_text(&snap);
        assert!(
            text.contains("token hit rate at 40 GB, 7 blocks, ∞\n"),
            "{text}"
        );
        assert!(text.contains("  a: 10.00%, 20.00%, 30.00%\n"), "{text}");
        assert!(text.contains("  total: 5.00%, 12.50%, 40.00%\n"), "{text}");

        // Every slot deleted: only the ∞ column, no dangling separator.
        snap.slots.clear();
        for lane in &mut snap.lanes {
            lane.slot_hit_blocks.clear();
        }
        let text = summary_text(&snap);
        assert!(text.contains("token hit rate at ∞\n"), "{text}");
        assert!(text.contains("  a: 30.00%\n"), "{text}");
    }
}
