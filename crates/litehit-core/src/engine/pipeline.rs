//! The offline pipeline: bytes → parse (worker threads) → engine (this thread) → rows, in
//! input order.
//!
//! ```text
//! reader ──chunk i──► worker (i mod W): split + parse ──► this thread, chunk by chunk in
//!                                                          order: Engine::process_event
//! ```
//! A reader thread cuts the stream into ~64 KiB chunks at line boundaries and deals them
//! round-robin to `W` parse workers; this thread takes the parsed chunks back in the same
//! round-robin order, so rows come out in input order whatever `W` is, and output is
//! byte-identical for any worker count. Channels are bounded, so memory is bounded by the
//! chunks in flight, not by the trace size. Buffers are recycled: no allocation per line.

use std::io::Read;
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use crate::engine::{CachePolicy, Engine, EngineError};
use crate::facts::FactRow;
use crate::formats::{LineOutcome, LineParser, LineSplitter, ParseError, TraceEvent};

/// Bytes per chunk handed to a parse worker. Small enough that the core starts within a
/// fraction of a millisecond on small traces; larger chunks measured no faster on 1 GB.
const CHUNK_BYTES: usize = 64 << 10;
/// Chunks queued per worker, each way.
const CHUNKS_IN_FLIGHT_PER_WORKER: usize = 2;

/// Why the pipeline stopped.
#[derive(Debug, thiserror::Error)]
pub enum PipelineError {
    /// The trace could not be read, or `on_progress` returned an error (which stops the run).
    #[error("reading the trace")]
    Io(#[from] std::io::Error),
    /// A reader or parse thread could not start (out of memory or threads).
    #[error("starting the {thread} thread")]
    Spawn {
        /// Which thread (`read` or `parse`), named in the message.
        thread: &'static str,
        /// Why the system refused it.
        source: std::io::Error,
    },
    /// A line is no event of the trace's format; it names the line and field.
    #[error(transparent)]
    Parse(#[from] ParseError),
    /// An event was refused by the engine; it names the line and trace id.
    #[error(transparent)]
    Engine(#[from] EngineError),
}

impl PipelineError {
    /// The 1-based trace line at fault, if the error is about one line.
    #[must_use]
    pub fn line_number(&self) -> Option<u64> {
        match self {
            Self::Io(_) | Self::Spawn { .. } => None,
            Self::Parse(error) => Some(error.line_number),
            Self::Engine(error) => error.line_number(),
        }
    }
}

/// What the pipeline read.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PipelineTotals {
    /// Bytes taken from the reader, for progress and throughput.
    pub bytes: u64,
    /// Lines read, blank ones included.
    pub lines: u64,
    /// Lines that are events of no interest ([`LineOutcome::Ignored`]: a KVCM event of
    /// another type), and the first of them.
    pub ignored_lines: u64,
    /// The first such line (1-based), to show one example.
    pub first_ignored_line: Option<u64>,
}

/// What a trace that gave no read event held, for the message that refuses it ("trace contains
/// no valid Request/Get events: 300 lines, all write events"): the lines read (when known) and
/// how many of each kind. Displays without a leading separator.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct LinesSeen {
    /// Lines read, blank ones included; `None` when the reader does not count them.
    pub lines: Option<u64>,
    /// Write events seen: a trace of only writes has no facts, and the message says so.
    pub write_events: u64,
    /// Events of no interest ([`LineOutcome::Ignored`]) and the first of them.
    pub ignored_lines: u64,
    /// The first such line (1-based), to show one example.
    pub first_ignored_line: Option<u64>,
    /// Lines refused (parse, routing or length errors) where they are skipped.
    pub bad_lines: u64,
}

impl LinesSeen {
    /// The lines of an offline replay (which fails on the first bad line) that read no event.
    #[must_use]
    pub fn of_replay(totals: &PipelineTotals, write_events: u64) -> Self {
        Self {
            lines: Some(totals.lines),
            write_events,
            ignored_lines: totals.ignored_lines,
            first_ignored_line: totals.first_ignored_line,
            bad_lines: 0,
        }
    }
}

impl std::fmt::Display for LinesSeen {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        fn plural(count: u64, one: &'static str, many: &'static str) -> &'static str {
            if count == 1 { one } else { many }
        }
        let counted = self.write_events + self.ignored_lines + self.bad_lines;
        let blank = self.lines.map_or(0, |lines| lines.saturating_sub(counted));
        let first_ignored = self
            .first_ignored_line
            .map_or_else(String::new, |first| format!(" (the first at line {first})"));
        let kinds: Vec<(u64, &str, &str)> = [
            (
                self.write_events,
                plural(self.write_events, "write event", "write events"),
                "",
            ),
            (
                self.ignored_lines,
                plural(
                    self.ignored_lines,
                    "event of another type",
                    "events of other types",
                ),
                first_ignored.as_str(),
            ),
            (
                self.bad_lines,
                plural(self.bad_lines, "bad line", "bad lines"),
                "",
            ),
            (blank, plural(blank, "blank line", "blank lines"), ""),
        ]
        .into_iter()
        .filter(|&(count, _, _)| count > 0)
        .collect();
        match (self.lines, kinds.as_slice()) {
            (Some(0), _) => f.write_str("it is empty")?,
            (None, []) => f.write_str("no event in it")?,
            (Some(lines @ 2..), [(_, kind, note)]) => write!(f, "{lines} lines, all {kind}{note}")?,
            (lines, kinds) => {
                if let Some(lines) = lines {
                    write!(f, "{lines} {}: ", plural(lines, "line", "lines"))?;
                }
                for (index, (count, kind, note)) in kinds.iter().enumerate() {
                    let separator = if index == 0 { "" } else { ", " };
                    write!(f, "{separator}{count} {kind}{note}")?;
                }
            }
        }
        if self.ignored_lines > 0 {
            f.write_str("; is the format right? (--format or trace_format)")?;
        }
        Ok(())
    }
}

/// Raw bytes of whole lines (the last chunk may end without `\n`).
struct RawChunk {
    bytes: Vec<u8>,
    first_line_number: u64,
    is_last: bool,
}

/// Parsed events of one chunk, plus the parse error that cut it short, if any.
#[derive(Default)]
struct ParsedChunk {
    events: Vec<TraceEvent>,
    line_numbers: Vec<u64>,
    event_count: usize,
    lines: u64,
    bytes: u64,
    ignored_lines: u64,
    first_ignored_line: Option<u64>,
    error: Option<ParseError>,
}

/// Replays `reader` through `engine`, calling `on_fact` for every row in input order and
/// `on_progress(totals)` after each chunk (an error from it stops the run, e.g. when the
/// output cannot be written). With `worker_count == 0` or `1`, one parse worker. A line
/// longer than `max_line_bytes` stops it with [`crate::formats::line_too_long`]; no more than
/// that of a line is held.
pub fn replay_stream<R: Read + Send>(
    reader: R,
    parser: &LineParser,
    engine: &mut Engine,
    worker_count: usize,
    max_line_bytes: u64,
    on_fact: &mut dyn FnMut(FactRow<'_>),
    on_progress: &mut dyn FnMut(PipelineTotals) -> std::io::Result<()>,
) -> Result<PipelineTotals, PipelineError> {
    let primary = engine.cache_policies().primary();
    replay_stream_by_policy(
        reader,
        parser,
        engine,
        worker_count,
        max_line_bytes,
        &mut |policy, row| {
            if policy == primary {
                on_fact(row);
            }
        },
        on_progress,
    )
}

/// [`replay_stream`], handing out every computed policy's row of each request, each with its
/// policy ([`Engine::process_events_by_policy`]).
pub fn replay_stream_by_policy<R: Read + Send>(
    reader: R,
    parser: &LineParser,
    engine: &mut Engine,
    worker_count: usize,
    max_line_bytes: u64,
    on_fact: &mut dyn FnMut(CachePolicy, FactRow<'_>),
    on_progress: &mut dyn FnMut(PipelineTotals) -> std::io::Result<()>,
) -> Result<PipelineTotals, PipelineError> {
    let worker_count = worker_count.max(1);
    std::thread::scope(|scope| {
        let mut raw_senders = Vec::with_capacity(worker_count);
        let mut parsed_receivers = Vec::with_capacity(worker_count);
        let mut recycle_senders = Vec::with_capacity(worker_count);
        let (raw_recycle_sender, raw_recycle_receiver) =
            sync_channel::<Vec<u8>>(worker_count * (CHUNKS_IN_FLIGHT_PER_WORKER + 2));
        for _ in 0..worker_count {
            let (raw_sender, raw_receiver) = sync_channel::<RawChunk>(CHUNKS_IN_FLIGHT_PER_WORKER);
            let (parsed_sender, parsed_receiver) =
                sync_channel::<ParsedChunk>(CHUNKS_IN_FLIGHT_PER_WORKER);
            let (recycle_sender, recycle_receiver) =
                sync_channel::<ParsedChunk>(CHUNKS_IN_FLIGHT_PER_WORKER + 2);
            let mut worker_parser = parser.clone();
            let raw_recycle = raw_recycle_sender.clone();
            // Named threads: `top -H`, `perf` and panics tell the stages apart.
            std::thread::Builder::new()
                .name(format!("litehit-parse-{}", raw_senders.len()))
                .spawn_scoped(scope, move || {
                    parse_worker(
                        &mut worker_parser,
                        max_line_bytes,
                        &raw_receiver,
                        &parsed_sender,
                        &recycle_receiver,
                        &raw_recycle,
                    );
                })
                .map_err(|source| PipelineError::Spawn {
                    thread: "parse",
                    source,
                })?;
            raw_senders.push(raw_sender);
            parsed_receivers.push(parsed_receiver);
            recycle_senders.push(recycle_sender);
        }
        drop(raw_recycle_sender);
        let reader_thread = std::thread::Builder::new()
            .name("litehit-read".into())
            .spawn_scoped(scope, move || {
                read_chunks(reader, max_line_bytes, &raw_senders, &raw_recycle_receiver)
            })
            .map_err(|source| PipelineError::Spawn {
                thread: "read",
                source,
            })?;

        let mut totals = PipelineTotals::default();
        let mut outcome = Ok(());
        for index in 0.. {
            let worker = index % worker_count;
            let Ok(chunk) = parsed_receivers[worker].recv() else {
                break; // the reader is done (or failed; its result is checked below)
            };
            let events = &chunk.events[..chunk.event_count];
            let line_numbers = &chunk.line_numbers[..chunk.event_count];
            if let Err(error) = engine.process_events_by_policy(events, line_numbers, on_fact) {
                outcome = Err(PipelineError::from(error));
                break;
            }
            totals.bytes += chunk.bytes;
            totals.lines += chunk.lines;
            totals.ignored_lines += chunk.ignored_lines;
            totals.first_ignored_line = totals.first_ignored_line.or(chunk.first_ignored_line);
            if let Err(error) = on_progress(totals) {
                outcome = Err(PipelineError::Io(error));
                break;
            }
            if let Some(error) = &chunk.error {
                outcome = Err(PipelineError::from(error.clone()));
                break;
            }
            // A closed recycle channel only means the worker already exited.
            let _ = recycle_senders[worker].try_send(chunk);
        }
        // Dropping the receivers unblocks the workers and then the reader on early exit.
        drop(parsed_receivers);
        drop(recycle_senders);
        let read_result = reader_thread
            .join()
            .expect("the reader thread does not panic");
        outcome?;
        match read_result {
            Err(PipelineError::Io(error)) if error.kind() == std::io::ErrorKind::OutOfMemory => {
                // What the lanes hold plus the headroom the reader could not find.
                let headroom = crate::hitcore::GROWTH_HEADROOM_BYTES as u64;
                Err(PipelineError::Engine(engine.out_of_memory(headroom)))
            }
            other => other.map(|()| totals),
        }
    })
}

/// Cuts the stream into chunks of whole lines and deals them round-robin. A partial line
/// grown past `max_line_bytes` stops it: memory holds no more of a line than that (plus one
/// read).
fn read_chunks<R: Read>(
    mut reader: R,
    max_line_bytes: u64,
    senders: &[SyncSender<RawChunk>],
    recycled: &Receiver<Vec<u8>>,
) -> Result<(), PipelineError> {
    let mut carry: Vec<u8> = Vec::new();
    let mut next_line_number = 1_u64;
    let mut sent_chunks = 0_usize;
    loop {
        let mut bytes = recycled.try_recv().unwrap_or_default();
        bytes.clear();
        grow_to(&mut bytes, carry.len())?;
        bytes.append(&mut carry);
        let mut at_eof = false;
        // Read until the chunk is big enough and holds at least one whole line (or EOF).
        let mut scanned_for_newline = 0;
        let mut has_newline = false;
        while !at_eof && (bytes.len() < CHUNK_BYTES || !has_newline) {
            let filled = bytes.len();
            let wanted = filled.max(CHUNK_BYTES) + (1 << 16);
            grow_to(&mut bytes, wanted)?;
            bytes.resize(wanted, 0);
            match reader.read(&mut bytes[filled..]) {
                Ok(0) => {
                    bytes.truncate(filled);
                    at_eof = true;
                }
                Ok(read) => bytes.truncate(filled + read),
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {
                    bytes.truncate(filled);
                }
                Err(error) => return Err(error.into()),
            }
            if !has_newline {
                has_newline = memchr::memchr(b'\n', &bytes[scanned_for_newline..]).is_some();
                scanned_for_newline = bytes.len();
                if !has_newline && crate::formats::is_too_long(bytes.len(), max_line_bytes) {
                    // The whole buffer is one line, still without its end.
                    return Err(
                        crate::formats::line_too_long(next_line_number, max_line_bytes).into(),
                    );
                }
            }
        }
        if !at_eof {
            // Keep the partial last line for the next chunk.
            let newline = memchr::memrchr(b'\n', &bytes)
                .expect("the read loop stops only at EOF or with a newline");
            grow_to(&mut carry, bytes.len() - newline - 1)?;
            carry.extend_from_slice(&bytes[newline + 1..]);
            bytes.truncate(bytes.len() - carry.len());
        }
        let lines = memchr::memchr_iter(b'\n', &bytes).count() as u64;
        let chunk = RawChunk {
            bytes,
            first_line_number: next_line_number,
            is_last: at_eof,
        };
        next_line_number += lines;
        // Chunk `n` goes to worker `n mod W`: the consumer reads them back in that order.
        if senders[sent_chunks % senders.len()].send(chunk).is_err() || at_eof {
            return Ok(()); // consumer gone (it stopped on an error) or input finished
        }
        sent_chunks += 1;
    }
}

/// Makes room for `len` bytes in `buffer` without aborting: a failed allocation (a long line
/// near an address-space limit) is an `OutOfMemory` I/O error, which `replay_stream` reports
/// as the engine's out-of-memory error, so the run exits 1 with the message, never aborts.
/// The error is a bare kind: one with a payload would be boxed, an allocation that fails
/// there too (and aborts).
fn grow_to(buffer: &mut Vec<u8>, len: usize) -> std::io::Result<()> {
    buffer
        .try_reserve(len.saturating_sub(buffer.len()))
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::OutOfMemory))
}

fn parse_worker(
    parser: &mut LineParser,
    max_line_bytes: u64,
    raw: &Receiver<RawChunk>,
    parsed: &SyncSender<ParsedChunk>,
    recycled: &Receiver<ParsedChunk>,
    raw_recycle: &SyncSender<Vec<u8>>,
) {
    while let Ok(chunk) = raw.recv() {
        let mut out = recycled.try_recv().unwrap_or_default();
        out.event_count = 0;
        out.error = None;
        out.bytes = chunk.bytes.len() as u64;
        out.lines = 0;
        out.ignored_lines = 0;
        out.first_ignored_line = None;
        parse_chunk(parser, max_line_bytes, &chunk, &mut out);
        // The raw buffer can be reused by the reader; a full queue just drops it.
        let _ = raw_recycle.try_send(chunk.bytes);
        if parsed.send(out).is_err() {
            return;
        }
    }
}

fn parse_chunk(
    parser: &mut LineParser,
    max_line_bytes: u64,
    chunk: &RawChunk,
    out: &mut ParsedChunk,
) {
    let mut splitter = LineSplitter::starting_at(chunk.first_line_number);
    let mut rest = &chunk.bytes[..];
    loop {
        let line = match splitter.next_complete(rest) {
            Some((line, used)) => {
                rest = &rest[used..];
                line
            }
            None if chunk.is_last => match splitter.final_line(rest) {
                Some(line) => {
                    rest = &[];
                    line
                }
                None => return,
            },
            None => return,
        };
        out.lines += 1;
        if crate::formats::is_too_long(line.bytes.len(), max_line_bytes) {
            out.error = Some(crate::formats::line_too_long(
                line.line_number,
                max_line_bytes,
            ));
            return;
        }
        if out.event_count == out.events.len() {
            out.events.push(TraceEvent::default());
            out.line_numbers.push(0);
        }
        match parser.parse_line(
            line.bytes,
            line.line_number,
            &mut out.events[out.event_count],
        ) {
            Ok(LineOutcome::Event) => {
                out.line_numbers[out.event_count] = line.line_number;
                out.event_count += 1;
            }
            Ok(LineOutcome::Blank) => {}
            Ok(LineOutcome::Ignored) => {
                out.ignored_lines += 1;
                out.first_ignored_line.get_or_insert(line.line_number);
            }
            Err(error) => {
                out.error = Some(error);
                return;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{EngineConfig, LaneSet, LaneSpec, Policy, Routing};
    use crate::formats::{ParseOptions, TraceFormat};
    use crate::workload::{Workload, WorkloadConfig};

    fn engine() -> Engine {
        let spec = LaneSpec {
            instance_id: "default".into(),
            block_size_tokens: 16,
            block_bytes: 4096,
            ttl_ns: 0,
            enable_prefix_hash: false,
        };
        let config = EngineConfig {
            trace_block_size_tokens: 16,
            lanes: LaneSet::OnTheFly(spec),
            routing: Routing::ByInstance,
            pool: None,
        };
        Engine::new(config, Policy::FailFast).unwrap()
    }

    fn trace(requests: usize) -> String {
        let config = WorkloadConfig {
            instance_ids: vec!["a".into(), "b".into()],
            ..WorkloadConfig::default()
        };
        let mut text = String::new();
        for request in Workload::new(config).take(requests) {
            request.to_standard_jsonl(&mut text);
        }
        text
    }

    fn run(text: &str, workers: usize) -> Result<(Vec<String>, PipelineTotals), PipelineError> {
        run_capped(text, workers, crate::formats::DEFAULT_MAX_LINE_BYTES)
    }

    fn run_capped(
        text: &str,
        workers: usize,
        max_line_bytes: u64,
    ) -> Result<(Vec<String>, PipelineTotals), PipelineError> {
        let parser = LineParser::new(TraceFormat::Standard, ParseOptions::default());
        let mut engine = engine();
        let mut rows = Vec::new();
        let totals = replay_stream(
            text.as_bytes(),
            &parser,
            &mut engine,
            workers,
            max_line_bytes,
            &mut |row| {
                rows.push(format!(
                    "{} {} {:?}",
                    row.trace_id,
                    row.instance_id,
                    row.fact.to_pairs()
                ));
            },
            &mut |_| Ok(()),
        )?;
        Ok((rows, totals))
    }

    #[test]
    fn any_worker_count_gives_identical_rows_in_input_order() {
        let text = trace(6000); // several MiB: many chunks
        assert!(text.len() > 3 * CHUNK_BYTES);
        let (one, totals) = run(&text, 1).unwrap();
        assert_eq!(one.len(), 6000);
        assert_eq!(totals.lines, 6000);
        assert_eq!(totals.bytes, text.len() as u64);
        for workers in [2, 3, 4] {
            assert_eq!(run(&text, workers).unwrap().0, one, "{workers} workers");
        }
    }

    #[test]
    fn parse_error_stops_after_earlier_lines_with_its_line_number() {
        let mut text = trace(3000);
        let good_lines = text.lines().count();
        text.push_str("{not json\n");
        text.push_str(&trace(10));
        let error = run(&text, 2).unwrap_err();
        assert_eq!(error.line_number(), Some(good_lines as u64 + 1), "{error}");
    }

    #[test]
    fn a_line_longer_than_a_chunk_keeps_the_order() {
        let mut text = trace(2000);
        // One huge line (all keys blank-padded) in the middle.
        let huge = format!(
            "{{\"type\":\"get\",\"instance_id\":\"a\",\"timestamp_ns\":1,\"input_len\":16,\"keys\":[1{}]}}\n",
            " ".repeat(3 * CHUNK_BYTES)
        );
        let split = text.len() / 2;
        let split = split + text[split..].find('\n').unwrap() + 1;
        text.insert_str(split, &huge);
        // The huge line's timestamp is out of order: the error must name its line.
        let expected_line = text[..split].lines().count() as u64 + 1;
        for workers in [1, 2, 3] {
            let error = run(&text, workers).unwrap_err();
            assert_eq!(
                error.line_number(),
                Some(expected_line),
                "{workers} workers: {error}"
            );
        }
    }

    #[test]
    fn lines_seen_say_what_a_trace_without_reads_held() {
        let seen = |lines, write_events, ignored_lines, bad_lines| LinesSeen {
            lines,
            write_events,
            ignored_lines,
            first_ignored_line: (ignored_lines > 0).then_some(3),
            bad_lines,
        };
        for (lines_seen, text) in [
            (seen(Some(300), 300, 0, 0), "300 lines, all write events"),
            (seen(Some(1), 1, 0, 0), "1 line: 1 write event"),
            (seen(Some(0), 0, 0, 0), "it is empty"),
            (seen(Some(4), 0, 0, 0), "4 lines, all blank lines"),
            (
                seen(Some(10), 7, 0, 0),
                "10 lines: 7 write events, 3 blank lines",
            ),
            (
                seen(Some(5), 1, 4, 0),
                "5 lines: 1 write event, 4 events of other types (the first at line 3); is the \
                 format right? (--format or trace_format)",
            ),
            (seen(None, 2, 0, 5), "2 write events, 5 bad lines"),
            (seen(None, 0, 0, 0), "no event in it"),
        ] {
            assert_eq!(lines_seen.to_string(), text);
        }
    }

    #[test]
    fn a_line_past_the_cap_stops_the_replay_naming_it_complete_or_not() {
        let text = trace(3);
        let longest = text.lines().map(str::len).max().unwrap() as u64;
        assert!(
            run_capped(&text, 2, longest).is_ok(),
            "a line at the cap is read"
        );
        let error = run_capped(&text, 2, longest - 1).unwrap_err();
        assert!(
            error.to_string().contains("--max-line-bytes") && error.line_number().is_some(),
            "{error}"
        );
        // A line that never ends, far past the cap (and past a chunk): stopped at the cap.
        let endless = format!("{text}{}", "x".repeat(4 * CHUNK_BYTES));
        let error = run_capped(&endless, 1, 1000).unwrap_err();
        assert_eq!(error.line_number(), Some(4), "{error}");
        assert!(
            error
                .to_string()
                .starts_with("line 4: longer than --max-line-bytes (1000 B)")
        );
    }

    #[test]
    fn last_line_without_newline_is_read() {
        let text = trace(5);
        let (rows, totals) = run(text.trim_end(), 2).unwrap();
        assert_eq!(rows.len(), 5);
        assert_eq!(totals.lines, 5);
    }

    #[test]
    fn engine_error_names_the_line() {
        let text = "{\"type\":\"get\",\"instance_id\":\"a\",\"timestamp_ns\":5,\"input_len\":16,\"keys\":[1]}\n\
                    {\"type\":\"get\",\"instance_id\":\"a\",\"timestamp_ns\":4,\"input_len\":16,\"keys\":[1]}\n";
        let error = run(text, 2).unwrap_err();
        assert_eq!(error.line_number(), Some(2));
        assert!(error.to_string().contains("not sorted"), "{error}");
    }
}
