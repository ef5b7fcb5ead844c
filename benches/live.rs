//! The live monitor per eviction policy (issue 29): `--policy lru` against `--policy lru,opt`
//! on the same trace, interleaved in one run, so the figures are ratios on one machine.
//!
//! * **Catch-up**: the real binary, `litehit watch TRACE --headless --exit-at-eof --policy P`
//!   (as docs/PERFORMANCE.md times LRU's): wall time, CPU time (its rusage as a child), block
//!   accesses per second.
//! * **Command latency while catching up**: the ingest thread in process (what the TUI runs),
//!   a slot added (the `a` key) every 50 ms, timed from the command to the first snapshot
//!   holding it (frames every 1 ms, so no wait for a frame is counted): the part of a
//!   keypress that waits for the ingest thread's current chunk and its snapshot, which OPT's
//!   work lengthens. The key-to-screen time of a key the UI answers alone (`?`) is
//!   `docs/perf/keypress_latency.py TRACE BINARY --policy P`.
//!
//! Checks (abort on a mismatch): every run reads every request; LRU's hit tokens at every
//! slot are the same with and without OPT; with OPT, OPT's are there and at least LRU's at
//! every slot (the generated keys are prefix-chained); every added slot shows up.
//!
//! `cargo bench --bench live -- [--gb N] [--runs N]`: the generated Mooncake trace of `--gb` GB
//! (default 1, as the LRU figures; `target/bench-data/`, shared with `pipeline`), `--runs`
//! catch-ups per policy (default 2). Smoke mode (`LITEHIT_BENCH_SMOKE=1`): 0.01 GB, one run
//! each, the same checks, both policies.

#[expect(dead_code, reason = "the live bench reads nothing from ../shared")]
mod common;
#[expect(dead_code, reason = "the live bench reads the Mooncake trace only")]
#[path = "common/generated.rs"]
mod generated;

use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use litehit_core::config::{SingleInstanceFlags, resolve_single_instance};
use litehit_core::engine::CachePolicies;
use litehit_core::formats::{
    LineOutcome, LineParser, ParseOptions, TraceEvent, TraceFormat, detect_format, for_each_line,
    open_trace,
};
use litehit_core::projector::Capacity;
use litehit_live::Command as LiveCommand;
use litehit_live::ingest::{IngestConfig, spawn};
use serde_json::Value;

use generated::{Generated, generated_trace};

/// The policies compared, as `--policy` takes them.
const POLICIES: [(&str, CachePolicies); 2] = [
    ("lru", CachePolicies::LRU),
    ("lru,opt", CachePolicies::BOTH),
];

/// The slots every catch-up reports (GB slots at 1 MiB per block: blocks = GB × 1024).
const SLOTS: &str = "1,4,16";

/// Time between two added slots in the latency measurement.
const COMMAND_PERIOD: Duration = Duration::from_millis(50);

/// Longest wait for one answer (a command, the end of a catch-up).
const WAIT: Duration = Duration::from_secs(600);

fn main() {
    let mode = common::Mode::from_env_and_args();
    let args = common::bench_args();
    let value = |flag: &str| {
        args.iter()
            .position(|arg| arg == flag)
            .and_then(|i| args.get(i + 1))
            .map(|text| {
                text.parse::<f64>()
                    .unwrap_or_else(|_| panic!("{flag} takes a number"))
            })
    };
    let gigabytes = value("--gb").unwrap_or_else(|| mode.pick(1.0, 0.01));
    #[expect(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a count"
    )]
    let runs = value("--runs").map_or_else(|| mode.pick(2, 1), |runs| runs as usize);
    let trace = generated_trace(gigabytes, Generated::MooncakeDense);
    let (requests, accesses) = count(&trace);
    println!(
        "trace {} ({requests} requests, {accesses} block accesses)",
        trace.display()
    );

    // Catch-up, the policies interleaved run by run.
    let mut catch_up: Vec<Vec<(f64, f64)>> = vec![Vec::new(); POLICIES.len()];
    let mut lru_hits: Option<Vec<u64>> = None;
    for _ in 0..runs.max(1) {
        for (index, (policy, _)) in POLICIES.iter().enumerate() {
            let (wall, cpu, total) = watch_to_end(&trace, policy);
            check_totals(&total, policy, requests, &mut lru_hits);
            catch_up[index].push((wall, cpu));
        }
    }
    // Command latency, each policy in turn.
    let latencies: Vec<Vec<f64>> = POLICIES
        .iter()
        .map(|&(_, policies)| command_latencies_ms(&trace, policies, requests))
        .collect();

    println!(
        "\n| policy | catch-up wall s (best) | CPU s | M accesses/s (best) | command latency ms (min / median / max, n) |"
    );
    println!("|---|---:|---:|---:|---|");
    let best = |runs: &[(f64, f64)]| {
        runs.iter()
            .copied()
            .fold((f64::INFINITY, 0.0), |best, run| {
                if run.0 < best.0 { run } else { best }
            })
    };
    for (index, (policy, _)) in POLICIES.iter().enumerate() {
        let (wall, cpu) = best(&catch_up[index]);
        let mut sorted = latencies[index].clone();
        sorted.sort_by(f64::total_cmp);
        println!(
            "| {policy} | {wall:.2} | {cpu:.2} | {:.1} | {:.1} / {:.1} / {:.1}, {} |",
            accesses as f64 / wall / 1e6,
            sorted.first().copied().unwrap_or(f64::NAN),
            sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN),
            sorted.last().copied().unwrap_or(f64::NAN),
            sorted.len()
        );
    }
    let (lru, opt) = (best(&catch_up[0]), best(&catch_up[1]));
    let median = |values: &[f64]| {
        let mut sorted = values.to_vec();
        sorted.sort_by(f64::total_cmp);
        sorted.get(sorted.len() / 2).copied().unwrap_or(f64::NAN)
    };
    println!(
        "\nlru,opt / lru: catch-up wall {:.2}×, CPU {:.2}×; median command latency {:.2}×",
        opt.0 / lru.0,
        opt.1 / lru.1,
        median(&latencies[1]) / median(&latencies[0])
    );
}

/// Requests and block accesses (keys) of `trace`, parsed as the monitor parses it.
fn count(trace: &Path) -> (u64, u64) {
    let mut first = Vec::new();
    let _ = for_each_line::<_, std::io::Error>(open_trace(trace).expect("open"), |_, line| {
        if first.is_empty() && !line.iter().all(u8::is_ascii_whitespace) {
            first = line.to_vec();
        }
        Ok(())
    });
    let format = detect_format(&first).expect("a detectable format");
    let mut parser = LineParser::new(
        format,
        ParseOptions {
            trace_block_size_tokens: format.native_block_size_tokens().unwrap_or(16),
            ..ParseOptions::default()
        },
    );
    let (mut requests, mut accesses) = (0_u64, 0_u64);
    let mut event = TraceEvent::default();
    for_each_line::<_, std::io::Error>(open_trace(trace).expect("open"), |number, line| {
        if parser
            .parse_line(line, number, &mut event)
            .expect("a valid trace")
            == LineOutcome::Event
        {
            requests += 1;
            accesses += event.keys.len() as u64;
        }
        Ok(())
    })
    .expect("read the trace");
    (requests, accesses)
}

/// CPU seconds (user + system) of the waited-for children of this process so far:
/// `/proc/self/stat`'s `cutime` and `cstime`, in the kernel's fixed 100 ticks per second
/// (`USER_HZ`), so 10 ms resolution (the catch-ups take seconds).
fn children_cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("/proc/self/stat");
    // The fields after the command name (which may hold spaces), from the state on.
    let after_name = &stat[stat.rfind(')').expect("a command name") + 2..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    // `cutime` and `cstime` are fields 16 and 17 of the line: 13 and 14 from the state (3).
    let ticks = |index: usize| fields[index].parse::<f64>().expect("a tick count");
    (ticks(13) + ticks(14)) / 100.0
}

/// `litehit watch TRACE --headless --exit-at-eof --policy POLICY`: wall and CPU seconds, and
/// the last line's `total`.
fn watch_to_end(trace: &Path, policy: &str) -> (f64, f64, Value) {
    let cpu = children_cpu_seconds();
    let started = Instant::now();
    let output = Command::new(env!("CARGO_BIN_EXE_litehit"))
        .arg("watch")
        .arg(trace)
        .args(["--headless", "--exit-at-eof", "--interval", "60"])
        .args([
            "--block-bytes",
            "1MiB",
            "--capacity-gb",
            SLOTS,
            "--policy",
            policy,
        ])
        .env("XDG_CONFIG_HOME", "/nonexistent/litehit-bench-config-home")
        .stdin(Stdio::null())
        .output()
        .expect("the litehit binary runs");
    let wall = started.elapsed().as_secs_f64();
    assert!(
        output.status.success(),
        "watch --policy {policy} failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let last = String::from_utf8(output.stdout)
        .expect("UTF-8 lines")
        .lines()
        .last()
        .map(|line| serde_json::from_str::<Value>(line).expect("a JSON line"))
        .expect("a report line");
    assert_eq!(last["state"], "finished", "{last}");
    (wall, children_cpu_seconds() - cpu, last["total"].clone())
}

fn u64s(value: &Value) -> Vec<u64> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|v| v.as_u64().expect("a count"))
        .collect()
}

/// Every request read; LRU's hits the same under every policy; OPT's at least LRU's.
fn check_totals(total: &Value, policy: &str, requests: u64, lru_hits: &mut Option<Vec<u64>>) {
    assert_eq!(
        total["requests"].as_u64(),
        Some(requests),
        "{policy}: {total}"
    );
    let lru = u64s(&total["hit_tokens"]);
    match lru_hits {
        Some(first) => assert_eq!(&lru, first, "LRU's hits under --policy {policy}"),
        None => *lru_hits = Some(lru.clone()),
    }
    if policy.contains("opt") {
        let opt = u64s(&total["opt_hit_tokens"]);
        assert_eq!(opt.len(), lru.len(), "{total}");
        assert!(
            opt.iter().zip(&lru).all(|(opt, lru)| opt >= lru),
            "OPT below LRU: {opt:?} vs {lru:?}"
        );
    } else {
        assert!(total.get("opt_hit_tokens").is_none(), "{total}");
    }
}

/// The ingest thread on `trace` under `policies`: while it catches up, a slot added every
/// [`COMMAND_PERIOD`], each timed to the first snapshot holding it (ms).
fn command_latencies_ms(trace: &Path, policies: CachePolicies, requests: u64) -> Vec<f64> {
    // The generated trace's format and its native block size, as `watch` finds them.
    let flags = SingleInstanceFlags {
        block_bytes: Some(1 << 20),
        format: Some(TraceFormat::Mooncake),
        ..SingleInstanceFlags::default()
    };
    let engine = resolve_single_instance(&flags)
        .expect("the default lane flags")
        .engine;
    let mut config = IngestConfig::new(trace, engine);
    config.format = Some(TraceFormat::Mooncake);
    config.cache_policies = policies;
    config.frame_period = Duration::from_millis(1);
    config.slots = vec![Capacity::Gigabytes(1.0)];
    let live = spawn(config).expect("the ingest thread starts");
    let mut latencies = Vec::new();
    let mut blocks = 1_000_u64;
    let deadline = Instant::now() + WAIT;
    loop {
        blocks += 1;
        let sent = Instant::now();
        live.send(LiveCommand::AddSlot(Capacity::Blocks(blocks)));
        loop {
            let shown = live
                .latest()
                .slots
                .iter()
                .any(|slot| slot.capacity == Capacity::Blocks(blocks));
            if shown {
                break;
            }
            assert!(Instant::now() < deadline, "slot {blocks} never shown");
            std::thread::sleep(Duration::from_micros(200));
        }
        latencies.push(sent.elapsed().as_secs_f64() * 1e3);
        if live.latest().totals.requests == requests {
            break; // caught up: no chunk left to wait for (one command at least, in smoke mode)
        }
        assert!(
            Instant::now() < deadline,
            "the ingest never read every request"
        );
        std::thread::sleep(COMMAND_PERIOD);
    }
    live.send(LiveCommand::Shutdown);
    latencies
}
