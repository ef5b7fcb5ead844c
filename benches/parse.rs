//! Parse-only throughput of the trace readers (MB/s and lines/s on one core).
//!
//! Inputs come from `../shared/traces` (kept outside the repository): the Mooncake conversation
//! trace repeated in memory to about 200 MB, a standard-format rendering of it (prefix-chained
//! keys, the converter's field layout) and the KVCM event-publisher log. A missing file is
//! skipped with a message. Each case reports the best of a few passes; set
//! `LITEHIT_BENCH_PASSES` to change how many. Besides wall-clock MB/s it reports MB per second
//! of this thread's on-CPU time (`CLOCK_THREAD_CPUTIME_ID`), the per-core figure
//! that stays meaningful on a machine shared with other work.
//!
//! Run: `cargo bench --bench parse [-- NAME...]` (only the cases whose name contains a NAME).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use litehit_core::formats::{
    LineOutcome, LineParser, LineSplitter, ParseOptions, TraceEvent, TraceFormat, TraceLines,
};
use litehit_core::preprocess::apply_prefix_hash;

const TARGET_BYTES: usize = 200 * 1024 * 1024;
const MOONCAKE_BLOCK_TOKENS: u64 = 512;

fn main() {
    let traces = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/traces");
    let passes = std::env::var("LITEHIT_BENCH_PASSES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(3_usize);
    let filters: Vec<String> = std::env::args()
        .skip(1)
        .filter(|arg| !arg.starts_with("--"))
        .collect();
    let wanted = |name: &str| {
        filters.is_empty() || filters.iter().any(|filter| name.contains(filter.as_str()))
    };
    println!("parse benchmark: best of {passes} passes, one thread");

    match read_input(&traces.join("conversation_trace.jsonl")) {
        Some(mooncake) => {
            if wanted("mooncake") {
                let repeated = repeat_to(&mooncake, TARGET_BYTES);
                bench_splitter("mooncake", TraceFormat::Mooncake, &repeated, passes);
                bench_reader(
                    "mooncake (TraceLines)",
                    TraceFormat::Mooncake,
                    &repeated,
                    passes,
                );
            }
            if wanted("standard") {
                let standard = repeat_to(&render_standard(&mooncake), TARGET_BYTES);
                bench_splitter("standard", TraceFormat::Standard, &standard, passes);
            }
        }
        None => println!("skipped mooncake and standard: conversation_trace.jsonl not found"),
    }
    match read_input(&traces.join("event_publisher.log")) {
        Some(_) if !wanted("kvcm") => {}
        Some(mut kvcm) => {
            kvcm.push(b'\n');
            let repeated = repeat_to(&kvcm, TARGET_BYTES / 4);
            bench_splitter("kvcm", TraceFormat::Kvcm, &repeated, passes);
        }
        None => println!("skipped kvcm: event_publisher.log not found"),
    }
}

fn read_input(path: &PathBuf) -> Option<Vec<u8>> {
    std::fs::read(path).ok()
}

/// Repeats whole copies of `input` until at least `target` bytes.
fn repeat_to(input: &[u8], target: usize) -> Vec<u8> {
    let copies = target.div_ceil(input.len().max(1));
    input.repeat(copies)
}

/// Renders every Mooncake line as the standard get row the upstream converter writes.
fn render_standard(mooncake: &[u8]) -> Vec<u8> {
    let mut parser = LineParser::new(
        TraceFormat::Mooncake,
        ParseOptions {
            trace_block_size_tokens: MOONCAKE_BLOCK_TOKENS,
        },
    );
    let mut event = TraceEvent::default();
    let mut out = String::new();
    let mut splitter = LineSplitter::default();
    for line in splitter.complete_lines(mooncake) {
        let outcome = parser
            .parse_line(line.bytes, line.line_number, &mut event)
            .expect("the real Mooncake trace parses");
        if outcome == LineOutcome::Blank {
            continue;
        }
        let timestamp_ns = event.timestamp_ns + 1;
        let keys = apply_prefix_hash(&event.keys);
        let keys: Vec<String> = keys.iter().map(ToString::to_string).collect();
        writeln!(
            out,
            "{{\"type\": \"get\", \"instance_id\": \"instance\", \"trace_id\": \"trace_instance_{timestamp_ns}\", \
             \"timestamp_ns\": {timestamp_ns}, \"tokens\": [], \"keys\": [{}], \"input_len\": {}, \
             \"query_type\": \"prefix_match\", \"block_mask\": [], \"sw_size\": 0, \"location_spec_names\": []}}",
            keys.join(", "),
            event.input_token_len
        )
        .expect("writing to a String cannot fail");
    }
    out.into_bytes()
}

/// Parses an in-memory buffer with the splitter (what the live tailer does).
fn bench_splitter(name: &str, format: TraceFormat, input: &[u8], passes: usize) {
    bench_lines(name, format, input, passes, |parse_line| {
        for line in LineSplitter::default().complete_lines(input) {
            parse_line(line.bytes, line.line_number);
        }
    });
}

/// Parses through the offline reader (`TraceLines` over a byte slice).
fn bench_reader(name: &str, format: TraceFormat, input: &[u8], passes: usize) {
    bench_lines(name, format, input, passes, |parse_line| {
        let mut reader = TraceLines::new(input);
        while let Some(line) = reader.next_line().expect("reading memory cannot fail") {
            parse_line(line.bytes, line.line_number);
        }
    });
}

/// Best of `passes` timed runs of `feed_lines`, which hands every `(line, line number)` of
/// `input` to the parser; reports the fastest.
fn bench_lines(
    name: &str,
    format: TraceFormat,
    input: &[u8],
    passes: usize,
    mut feed_lines: impl FnMut(&mut dyn FnMut(&[u8], u64)),
) {
    let best = (0..passes)
        .map(|_| {
            let mut parser = LineParser::new(format, ParseOptions::default());
            let mut event = TraceEvent::default();
            let mut lines = 0_u64;
            let mut checksum = 0_usize;
            let start = Clock::now();
            feed_lines(&mut |line, line_number| {
                parser
                    .parse_line(line, line_number, &mut event)
                    .expect("benchmark input parses");
                lines += 1;
                checksum = checksum.wrapping_add(event.keys.len());
            });
            (start.elapsed(), lines, checksum)
        })
        .min_by_key(|(elapsed, _, _)| elapsed.cpu.unwrap_or(elapsed.wall))
        .expect("at least one pass");
    report(name, input.len(), best);
}

/// Wall-clock and on-CPU time of the current thread.
struct Clock {
    wall: Instant,
    cpu_ns: Option<u64>,
}

#[derive(Clone, Copy)]
struct Elapsed {
    wall: Duration,
    cpu: Option<Duration>,
}

impl Clock {
    fn now() -> Self {
        Self {
            wall: Instant::now(),
            cpu_ns: thread_cpu_ns(),
        }
    }

    fn elapsed(&self) -> Elapsed {
        let wall = self.wall.elapsed();
        let cpu = self
            .cpu_ns
            .zip(thread_cpu_ns())
            .map(|(start, end)| Duration::from_nanos(end.saturating_sub(start)));
        Elapsed { wall, cpu }
    }
}

/// Nanoseconds this thread has spent on a CPU (`CLOCK_THREAD_CPUTIME_ID`; exact, unlike
/// `/proc/thread-self/schedstat`, which is only brought up to date at scheduler ticks).
fn thread_cpu_ns() -> Option<u64> {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    let nanos =
        u64::try_from(now.tv_sec).ok()? * 1_000_000_000 + u64::try_from(now.tv_nsec).ok()?;
    Some(nanos)
}

fn report(name: &str, bytes: usize, (elapsed, lines, checksum): (Elapsed, u64, usize)) {
    let megabytes = bytes as f64 / 1e6;
    let wall_s = elapsed.wall.as_secs_f64();
    let cpu = elapsed.cpu.map_or_else(
        || "cpu n/a".to_owned(),
        |cpu| format!("{:>7.1} MB/s per CPU-second", megabytes / cpu.as_secs_f64()),
    );
    println!(
        "{name:<22} {:>7.1} MB/s wall {cpu} {:>6.2} M lines/s  ({megabytes:.0} MB, {lines} lines, {wall_s:.3} s, {checksum} keys)",
        megabytes / wall_s,
        lines as f64 / 1e6 / wall_s,
    );
}
