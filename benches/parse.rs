//! Parse-only throughput of the trace readers (MB/s and lines/s on one core).
//!
//! Inputs come from `../shared/traces` (kept outside the repository): the Mooncake conversation
//! trace repeated in memory to about 200 MB, a standard-format rendering of it (prefix-chained
//! keys, the converter's field layout) and the KVCM event-publisher log. A missing file is
//! skipped with a message, or fails the run when `CI` is set. Each case reports the best of a
//! few passes; set
//! `LITEHIT_BENCH_PASSES` to change how many. Besides wall-clock MB/s it reports MB per second
//! of this thread's on-CPU time (`CLOCK_THREAD_CPUTIME_ID`), the per-core figure
//! that stays meaningful on a machine shared with other work.
//!
//! Run: `cargo bench --bench parse [-- NAME...]` (only the cases whose name contains a NAME).
//! Smoke mode (`LITEHIT_BENCH_SMOKE=1` or `-- --smoke`, see `common/mod.rs`): each input once,
//! not repeated, one pass.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use litehit_core::apply_prefix_hash;
use litehit_core::formats::{
    LineOutcome, LineParser, LineSplitter, ParseOptions, TraceEvent, TraceFormat, TraceLines,
};

mod common;
use common::Mode;

const TARGET_BYTES: usize = 200 * 1024 * 1024;
const MOONCAKE_BLOCK_TOKENS: u64 = 512;

fn main() {
    let mode = Mode::from_env_and_args();
    let passes = std::env::var("LITEHIT_BENCH_PASSES")
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(mode.pick(3_usize, 1));
    // In smoke mode each input is parsed once as it is (`repeat_to` keeps one copy).
    let target_bytes = mode.pick(TARGET_BYTES, 0);
    let filters: Vec<String> = common::bench_args()
        .into_iter()
        .filter(|arg| !arg.starts_with("--"))
        .collect();
    let wanted = |name: &str| {
        filters.is_empty() || filters.iter().any(|filter| name.contains(filter.as_str()))
    };
    println!("parse benchmark: best of {passes} passes, one thread");

    if (wanted("mooncake") || wanted("standard"))
        && let Some(path) =
            common::shared_trace("conversation_trace.jsonl", "mooncake and standard")
    {
        let mooncake = std::fs::read(&path).expect("read the conversation trace");
        if wanted("mooncake") {
            let repeated = repeat_to(&mooncake, target_bytes);
            bench_splitter("mooncake", TraceFormat::Mooncake, &repeated, passes);
            bench_reader(
                "mooncake (TraceLines)",
                TraceFormat::Mooncake,
                &repeated,
                passes,
            );
        }
        if wanted("standard") {
            let standard = repeat_to(&render_standard(&mooncake), target_bytes);
            bench_splitter("standard", TraceFormat::Standard, &standard, passes);
        }
    }
    if wanted("kvcm")
        && let Some(path) = common::shared_trace("event_publisher.log", "kvcm")
    {
        let mut kvcm = std::fs::read(&path).expect("read the KVCM event log");
        kvcm.push(b'\n');
        let repeated = repeat_to(&kvcm, target_bytes / 4);
        bench_splitter("kvcm", TraceFormat::Kvcm, &repeated, passes);
    }
}

/// Repeats whole copies of `input` until at least `target` bytes (at least one copy).
fn repeat_to(input: &[u8], target: usize) -> Vec<u8> {
    let copies = target.div_ceil(input.len().max(1)).max(1);
    input.repeat(copies)
}

/// Renders every Mooncake line as the standard get row the upstream converter writes.
fn render_standard(mooncake: &[u8]) -> Vec<u8> {
    let mut parser = LineParser::new(
        TraceFormat::Mooncake,
        ParseOptions {
            trace_block_size_tokens: MOONCAKE_BLOCK_TOKENS,
            ..ParseOptions::default()
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
