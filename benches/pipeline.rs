//! `litehit replay` end to end, in process: read → parse (worker threads) → engine → facts
//! rows formatted and written to a file — compared, in the same run, with parse-only and
//! core-only passes over the same trace, so the figures are ratios on one machine.
//!
//! `cargo bench --bench pipeline -- [conversation] [generated] [generated-mooncake] [large]
//! [--gb N] [--requests N] [--workers N] [--policy lru|opt|lru,opt]`
//!
//! * `conversation`: `../shared/traces/conversation_trace.jsonl` (skipped if absent).
//! * `generated`: a seeded standard-format trace (prefix-hash chained 64-bit keys) of `--gb`
//!   GB (default 1.0), written once to `target/bench-data/` and reused.
//! * `generated-mooncake`: the same workload as a Mooncake-format trace (dense ids,
//!   512-token blocks), also `--gb` GB.
//! * `large`: the core bench's large workload (`common::large_workload_config`, dense ids) of
//!   `--requests` requests (default 2 M: ≈ 150 M block accesses) as a Mooncake trace, written
//!   once to `target/bench-data/`. Named only: the default set leaves it out.
//!
//! `--policy` (default `lru`) is the eviction policies replayed, as `litehit replay --policy`:
//! the core-only pass runs each policy's core one request after the other as a lane does, the
//! end-to-end pass writes each policy's facts file, and each policy's digest must agree.
//!
//! Reports wall time, CPU time of the whole process (all threads), block accesses per second
//! and the peak resident memory (`VmHWM`) next to the core state size. Every run checks that
//! the pipeline writes one row per request with the same facts as the core alone (a digest of
//! every hit curve), or aborts.
//!
//! Smoke mode (`LITEHIT_BENCH_SMOKE=1` or `-- --smoke`, see `common/mod.rs`): 2 runs of the
//! conversation trace and generated traces of 0.01 GB (`--gb` still overrides), and a
//! 20,000-request `large` trace replayed with `lru,opt`; same checks.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use litehit_core::engine::pipeline::replay_stream_by_policy;
use litehit_core::engine::{
    CachePolicies, CachePolicy, Engine, EngineConfig, LaneSet, LaneSpec, Policy, Routing,
};
use litehit_core::facts::RequestFact;
use litehit_core::facts::file::append_fact_row;
use litehit_core::formats::{
    LineOutcome, LineParser, ParseOptions, TraceEvent, TraceFormat, detect_format, for_each_line,
    open_trace,
};
use litehit_core::{LiteHit, OptCore};

/// The policies a run can replay, in the order their digests are kept.
const POLICIES: [CachePolicy; 2] = [CachePolicy::Lru, CachePolicy::Opt];

mod common;
use common::Mode;
#[path = "common/generated.rs"]
mod generated;
use generated::{Generated, generated_trace};

/// CPU seconds of the whole process, all threads (`CLOCK_PROCESS_CPUTIME_ID`: exact, unlike
/// the 10 ms ticks of `/proc/self/stat`).
fn process_cpu_seconds() -> f64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    #[expect(clippy::cast_precision_loss, reason = "seconds as a float")]
    let seconds = now.tv_sec as f64 + now.tv_nsec as f64 / 1e9;
    seconds
}

fn peak_resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .and_then(|l| l.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<u64>().ok())
        .map_or(0, |kb| kb * 1024)
}

fn engine_config(format: TraceFormat) -> EngineConfig {
    let block_size_tokens = format.native_block_size_tokens().unwrap_or(16);
    EngineConfig {
        trace_block_size_tokens: block_size_tokens,
        lanes: LaneSet::OnTheFly(LaneSpec {
            instance_id: "default".into(),
            block_size_tokens,
            block_bytes: block_size_tokens * 131_072,
            ttl_ns: 0,
            enable_prefix_hash: false,
        }),
        routing: Routing::ByInstance,
        pool: None,
    }
}

fn format_of(path: &Path) -> TraceFormat {
    let mut first = Vec::new();
    let _ = for_each_line::<_, std::io::Error>(open_trace(path).expect("open"), |_, line| {
        if first.is_empty() && !line.iter().all(u8::is_ascii_whitespace) {
            first = line.to_vec();
        }
        Ok(())
    });
    detect_format(&first).expect("detectable format")
}

/// Order-sensitive digest of a fact stream (as in the core bench): every segment of every hit
/// curve, request by request.
fn add_to_digest(digest: u64, fact: &RequestFact) -> u64 {
    fact.hit_curve
        .iter()
        .fold(digest.wrapping_mul(31), |d, segment| {
            d.wrapping_mul(31)
                .wrapping_add(segment.start_required_blocks ^ (segment.run_length << 32))
        })
}

struct Measured {
    wall_seconds: f64,
    cpu_seconds: f64,
}

/// Best wall time of `runs` runs (small traces finish in milliseconds: repeat them).
fn measure(runs: usize, mut run: impl FnMut()) -> Measured {
    let mut best = Measured {
        wall_seconds: f64::INFINITY,
        cpu_seconds: f64::INFINITY,
    };
    for _ in 0..runs.max(1) {
        let cpu = process_cpu_seconds();
        let started = Instant::now();
        run();
        let wall_seconds = started.elapsed().as_secs_f64();
        if wall_seconds < best.wall_seconds {
            best = Measured {
                wall_seconds,
                cpu_seconds: process_cpu_seconds() - cpu,
            };
        }
    }
    best
}

#[expect(
    clippy::too_many_lines,
    reason = "one benchmark scenario, read top to bottom"
)]
fn bench_trace(name: &str, path: &Path, workers: usize, runs: usize, policies: CachePolicies) {
    let format = format_of(path);
    let bytes = std::fs::metadata(path).map_or(0, |m| m.len());
    let config = engine_config(format);
    let parser = LineParser::new(
        format,
        ParseOptions {
            trace_block_size_tokens: config.trace_block_size_tokens,
            ..ParseOptions::default()
        },
    );

    // 1. Parse only (one thread), keeping the keys for the core-only pass.
    let mut keys: Vec<i64> = Vec::new();
    let mut ends: Vec<usize> = Vec::new();
    let parse = measure(runs, || {
        keys.clear();
        ends.clear();
        let mut parser = parser.clone();
        let mut event = TraceEvent::default();
        for_each_line::<_, std::io::Error>(open_trace(path).expect("open"), |line_number, line| {
            if parser
                .parse_line(line, line_number, &mut event)
                .expect("valid trace")
                == LineOutcome::Event
            {
                keys.extend_from_slice(&event.keys);
                ends.push(keys.len());
            }
            Ok(())
        })
        .expect("read");
    });
    let accesses = keys.len() as f64;

    // 2. Core only, same keys (normalization is the identity for these lanes): each policy's
    //    core, one request after the other, as a lane runs them.
    let (mut lru_bytes, mut opt_bytes, mut unique) = (0, 0, 0);
    let mut core_digests = [0_u64; POLICIES.len()];
    let core = measure(runs, || {
        let (mut lru, mut opt) = (LiteHit::new(), OptCore::new());
        let mut fact = RequestFact::default();
        let mut digests = [0_u64; POLICIES.len()];
        let mut start = 0;
        for (index, &end) in ends.iter().enumerate() {
            let request = &keys[start..end];
            if policies.contains(CachePolicy::Lru) {
                if let Some(&next_end) = ends.get(index + 1) {
                    lru.prefetch(&keys[end..next_end]);
                }
                lru.process_request_into(request, 0, &mut fact);
                digests[0] = add_to_digest(digests[0], &fact);
            }
            if policies.contains(CachePolicy::Opt) {
                opt.try_process_request_into(request, 0, &mut fact)
                    .expect("the bench fits in memory");
                digests[1] = add_to_digest(digests[1], &fact);
            }
            start = end;
        }
        lru_bytes = lru.memory_usage_bytes();
        opt_bytes = opt.memory_usage_bytes();
        unique = lru.current_unique_blocks().max(opt.current_unique_blocks());
        core_digests = digests;
    });
    let requests = ends.len() as u64;
    drop(keys);
    drop(ends);

    // 3. End to end: the replay pipeline, each policy's rows formatted and written to its file.
    let out_dir = tempfile::tempdir().expect("temp dir");
    let mut rows_written = [0_u64; POLICIES.len()];
    let mut pipeline_digests = [0_u64; POLICIES.len()];
    let end_to_end = measure(runs, || {
        rows_written = [0; POLICIES.len()];
        pipeline_digests = [0; POLICIES.len()];
        // As `litehit replay` runs it: facts only, no capacity-axis accumulators.
        let mut engine = Engine::new(config.clone(), Policy::FailFast)
            .expect("valid lanes")
            .without_capacity_curves()
            .with_cache_policies(policies)
            .expect("replayable policies");
        let mut outs = POLICIES.map(|policy| {
            let file = out_dir.path().join(format!("litehit_facts.{policy}.csv"));
            (
                BufWriter::with_capacity(1 << 20, File::create(file).expect("create")),
                Vec::with_capacity(1 << 21),
            )
        });
        let outs_cell = std::cell::RefCell::new(&mut outs);
        replay_stream_by_policy(
            open_trace(path).expect("open"),
            &parser,
            &mut engine,
            workers,
            litehit_core::formats::DEFAULT_MAX_LINE_BYTES,
            &mut |policy, row| {
                let slot = POLICIES.iter().position(|&p| p == policy).expect("known");
                append_fact_row(&mut outs_cell.borrow_mut()[slot].1, &row);
                pipeline_digests[slot] = add_to_digest(pipeline_digests[slot], row.fact);
                rows_written[slot] += 1;
            },
            &mut |_| {
                for (out, rows) in outs_cell.borrow_mut().iter_mut() {
                    if rows.len() > 1 << 20 {
                        out.write_all(rows)?;
                        rows.clear();
                    }
                }
                Ok(())
            },
        )
        .expect("replay");
        for (out, rows) in &mut outs {
            out.write_all(rows).expect("write");
            out.flush().expect("flush");
        }
    });

    for (slot, policy) in POLICIES.iter().enumerate() {
        if !policies.contains(*policy) {
            continue;
        }
        assert_eq!(
            rows_written[slot], requests,
            "{name}: one {policy} facts row per request"
        );
        assert_eq!(
            pipeline_digests[slot], core_digests[slot],
            "{name}: the pipeline must write the {policy} facts the core computes"
        );
    }

    let mb = bytes as f64 / 1e6;
    println!(
        "{name}: {mb:.0} MB, {accesses:.0} block accesses, {unique} unique blocks, {requests} requests, {workers} parse workers, policy {policies}"
    );
    for (stage, m) in [
        ("parse only (1 thread)", &parse),
        ("core only", &core),
        ("replay end to end", &end_to_end),
    ] {
        println!(
            "  {stage:<24} wall {:>7.2} s  cpu {:>7.2} s  {:>7.1} M accesses/s  {:>7.0} MB/s",
            m.wall_seconds,
            m.cpu_seconds,
            accesses / m.wall_seconds / 1e6,
            mb / m.wall_seconds,
        );
    }
    let per_key = |bytes: usize| bytes as f64 / unique.max(1) as f64;
    println!(
        "  end to end / core only: {:.2}   peak RSS {:.0} MB, core state {:.0} MB (B/unique key: LRU {:.1}, OPT {:.1})  digests {:016x} {:016x}",
        core.wall_seconds / end_to_end.wall_seconds,
        peak_resident_bytes() as f64 / 1e6,
        (lru_bytes + opt_bytes) as f64 / 1e6,
        per_key(lru_bytes),
        per_key(opt_bytes),
        core_digests[0],
        core_digests[1],
    );
}

fn main() {
    let mode = Mode::from_env_and_args();
    let args = common::bench_args();
    let value_of = |flag: &str| {
        args.iter()
            .position(|a| a == flag)
            .and_then(|i| args.get(i + 1))
            .cloned()
    };
    let gigabytes: f64 = value_of("--gb")
        .and_then(|v| v.parse().ok())
        .unwrap_or(mode.pick(1.0, 0.01));
    let workers: usize = value_of("--workers")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, std::num::NonZero::get));
    let policy_flag: Option<CachePolicies> =
        value_of("--policy").map(|v| v.parse().unwrap_or_else(|e| panic!("--policy {v}: {e}")));
    let policies = policy_flag.unwrap_or(CachePolicies::LRU);
    let named: Vec<&String> = args
        .iter()
        .filter(|a| {
            ["conversation", "generated", "generated-mooncake", "large"].contains(&a.as_str())
        })
        .collect();
    let wants = |name: &str| named.is_empty() || named.iter().any(|a| a.as_str() == name);
    if wants("conversation")
        && let Some(path) = common::shared_trace("conversation_trace.jsonl", "conversation")
    {
        bench_trace(
            "conversation (Mooncake)",
            &path,
            workers,
            mode.pick(20, 2),
            policies,
        );
    }
    if wants("generated") {
        let path = generated_trace(gigabytes, Generated::StandardHashed);
        bench_trace(
            &format!("generated standard trace, hashed keys ({gigabytes} GB)"),
            &path,
            workers,
            1,
            policies,
        );
    }
    if wants("generated-mooncake") {
        let path = generated_trace(gigabytes, Generated::MooncakeDense);
        bench_trace(
            &format!("generated Mooncake trace, dense ids ({gigabytes} GB)"),
            &path,
            workers,
            1,
            policies,
        );
    }
    // Named only, but smoke mode runs it small with both policies so CI keeps the OPT
    // pipeline path working.
    if named.iter().any(|a| a.as_str() == "large") || (named.is_empty() && mode == Mode::Smoke) {
        let requests: u64 = value_of("--requests")
            .and_then(|v| v.parse().ok())
            .unwrap_or(mode.pick(2_000_000, 20_000));
        let path = generated_trace(gigabytes, Generated::Large { requests });
        bench_trace(
            &format!("large trace, dense ids ({requests} requests)"),
            &path,
            workers,
            1,
            policy_flag.unwrap_or(mode.pick(CachePolicies::LRU, CachePolicies::BOTH)),
        );
    }
}
