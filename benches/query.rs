//! Throughput of the facts reader, `litehit query` (16 slots) and `litehit mrc` on synthetic
//! facts. Run with `cargo bench --bench query` (release profile); `LITEHIT_BENCH_ROWS` sets
//! the row count (default 1,000,000; 2,000 in smoke mode, `LITEHIT_BENCH_SMOKE=1` or
//! `-- --smoke`, see `common/mod.rs`). Prints one line per measurement. Every measurement
//! checks its answer against what the generator knows it wrote (rows, input tokens, hit
//! tokens at unlimited capacity), the three queries must give the same summary, and the one
//! written to a file must hold a line per row plus the summary lines. `--tiers`, `--window`
//! and the two together are measured at the same 16 slots (windows with tiers take none); the
//! `--tiers` query also looks for the pool lane by its rows, as `litehit query` does.

use std::path::{Path, PathBuf};
use std::time::Instant;

use litehit::output::query_jsonl::{QueryOptions, query_facts_files, query_facts_files_planned};
use litehit_core::facts::file::{FACTS_HEADER, FactsReader, append_fact_row};
use litehit_core::facts::{FactRecord, FactRow, RequestFact};
use litehit_core::projector::Capacity;
use litehit_core::projector::tiers::TierMode;
use litehit_report::{
    MrcCurves, PoolRule, QueryPlan, QuerySlots, QuerySummary, TierPlan, TimeRange, query_windows,
};

#[expect(dead_code, reason = "the query bench reads nothing from ../shared")]
mod common;
use common::Mode;

/// xorshift64: deterministic input without a dependency.
struct Rng(u64);

impl Rng {
    fn below(&mut self, bound: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % bound
    }
}

/// Facts shaped like a real replay: 4 instances, 1024-token blocks, mostly 1–3 segments.
/// Every row is one the facts reader accepts: a canonical curve (starts increase, gaps of at
/// least one) that covers at most the request's full blocks (`input_token_len / 1024`).
/// Returns the totals the readers must find.
fn write_facts(path: &Path, rows: usize) -> Written {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut written = Written::default();
    let mut out = format!("{FACTS_HEADER}\n").into_bytes();
    for row in 0..rows {
        let instance_id = [
            "kimi-k3.tp8.checkpoint1024",
            "engine-1",
            "engine-2",
            "engine-3",
        ][row % INSTANCES];
        let input_token_len = 1 + rng.below(131_072);
        let full_blocks = input_token_len / 1024;
        let mut pairs = Vec::new();
        let mut curve_blocks = 0;
        let mut start = 1 + rng.below(1_200);
        for _ in 0..rng.below(4) {
            // The runs share the request's full blocks: a short request has a short curve.
            let left = full_blocks - curve_blocks;
            if left == 0 {
                break;
            }
            let run = 1 + rng.below(left.min(60));
            pairs.push([start, run]);
            curve_blocks += run;
            start += run + 1 + rng.below(300);
        }
        written.input_tokens += input_token_len;
        written.unlimited_hit_tokens += curve_blocks * 1024;
        let fact = RequestFact::from_pairs(&pairs);
        let trace_id = format!("{:08x}-{row}:main/0", rng.below(1 << 32));
        append_fact_row(
            &mut out,
            &FactRow {
                trace_id: &trace_id,
                instance_id,
                timestamp_ns: 1_000_000_000 + i64::try_from(row).expect("row fits in i64") * 1_000,
                input_token_len,
                block_size_tokens: 1024,
                block_bytes: 675_864_576,
                observed_cached_tokens: None,
                fact: &fact,
            },
        );
    }
    std::fs::write(path, out).expect("write bench facts");
    written
}

/// What `write_facts` wrote, summed over every row: the answers the readers must give.
#[derive(Debug, Default)]
struct Written {
    input_tokens: u64,
    /// Every block of every curve hits at unlimited capacity.
    unlimited_hit_tokens: u64,
}

/// Distinct instance ids in the generated facts (one summary line each, plus the overall one).
const INSTANCES: usize = 4;

/// CPU seconds of the whole process, all threads (`CLOCK_PROCESS_CPUTIME_ID`: exact, unlike
/// the 10 ms ticks of `/proc/self/stat`). On a shared machine this is steadier than the wall
/// clock.
fn process_cpu_seconds() -> f64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    #[expect(clippy::cast_precision_loss, reason = "seconds as a float")]
    let seconds = now.tv_sec as f64 + now.tv_nsec as f64 / 1e9;
    seconds
}

/// Times `work`, printing wall and CPU time and rows per CPU second.
fn measure(label: &str, rows: usize, work: impl FnOnce()) {
    let cpu_before = process_cpu_seconds();
    let started = Instant::now();
    work();
    let wall = started.elapsed().as_secs_f64();
    let cpu = process_cpu_seconds() - cpu_before;
    #[expect(clippy::cast_precision_loss, reason = "reporting only")]
    let rows = rows as f64;
    println!(
        "{label:<36} wall {wall:>7.3} s ({:>5.2} M rows/s)  cpu {cpu:>7.3} s ({:>5.2} M rows/s)",
        rows / wall / 1e6,
        rows / cpu / 1e6
    );
}

fn main() {
    let mode = Mode::from_env_and_args();
    let rows: usize = std::env::var("LITEHIT_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(mode.pick(1_000_000, 2_000));
    let dir = tempfile::tempdir().expect("temp dir");
    let facts: PathBuf = dir.path().join("litehit_facts.csv");
    let written = write_facts(&facts, rows);
    let size = std::fs::metadata(&facts).expect("facts metadata").len();
    println!("{rows} rows, {size} bytes of facts");
    let paths = vec![facts.clone()];
    let rows_u64 = u64::try_from(rows).expect("row count fits in u64");

    measure("read + parse", rows, || {
        let mut reader = FactsReader::open(&facts).expect("open facts");
        let mut record = FactRecord::default();
        let mut count = 0;
        while reader.next_record(&mut record).expect("valid facts") {
            count += 1;
        }
        assert_eq!(count, rows);
    });

    // 15 capacities from 0 to 896 GB, then unlimited (-1) last.
    let slots = || QuerySlots {
        capacity_gb: (0..15).map(|i| f64::from(i) * 64.0).chain([-1.0]).collect(),
        capacity_blocks: Vec::new(),
    };
    let check = |summary: &QuerySummary| {
        let overall = &summary.overall;
        assert_eq!(overall.requests, rows_u64, "query: every row counted");
        assert_eq!(
            overall.total_input_tokens, written.input_tokens,
            "query: input tokens"
        );
        assert_eq!(
            overall.total_hit_tokens.last(),
            Some(&written.unlimited_hit_tokens),
            "query: hit tokens at unlimited capacity"
        );
        assert_eq!(summary.per_instance.len(), INSTANCES.min(rows));
    };
    let mut to_sink = QuerySummary::default();
    measure("query, 16 slots, rows to a sink", rows, || {
        (_, to_sink) = query_facts_files(&paths, slots(), QueryOptions::default(), std::io::sink())
            .expect("query");
    });
    check(&to_sink);
    let out = dir.path().join("query.jsonl");
    let mut to_file = QuerySummary::default();
    measure("query, 16 slots, rows to a file", rows, || {
        let file = std::fs::File::create(&out).expect("create output");
        (_, to_file) =
            query_facts_files(&paths, slots(), QueryOptions::default(), file).expect("query");
    });
    assert_eq!(to_file, to_sink, "the same query to a file and to a sink");
    let lines = std::fs::read_to_string(&out)
        .expect("read query output")
        .lines()
        .count();
    assert_eq!(
        lines,
        rows + to_file.per_instance.len() + 1,
        "query output: a line per row, per instance and overall"
    );
    let mut summary_only = QuerySummary::default();
    measure("query, 16 slots, --summary-only", rows, || {
        (_, summary_only) = query_facts_files(
            &paths,
            slots(),
            QueryOptions { summary_only: true },
            std::io::sink(),
        )
        .expect("query");
    });
    assert_eq!(
        summary_only, to_sink,
        "--summary-only sums what the rows sum"
    );
    tiers_and_windows(&paths, rows, &written, &to_sink);
    measure("mrc: curves + knees + report", rows, || {
        let curves = MrcCurves::from_facts_files(&paths).expect("mrc");
        let report = curves.report(1000);
        assert_eq!(report.total.requests, rows_u64);
        assert_eq!(report.total.total_input_tokens, written.input_tokens);
        assert_eq!(
            report.total.infinite_hit_tokens,
            written.unlimited_hit_tokens
        );
    });
}

/// `query --tiers` and `query --window` at the same 16 slots as the plain query.
fn tiers_and_windows(paths: &[PathBuf], rows: usize, written: &Written, to_sink: &QuerySummary) {
    let slots = || QuerySlots {
        capacity_gb: (0..15).map(|i| f64::from(i) * 64.0).chain([-1.0]).collect(),
        capacity_blocks: Vec::new(),
    };
    let rows_u64 = u64::try_from(rows).expect("row count fits in u64");
    // `query --tiers 80GB,512GB,inf`: the tiers together serve every unlimited hit.
    let plan = QueryPlan {
        tiers: Some(TierPlan {
            names: vec!["hbm".into(), "dram".into(), "pool".into()],
            sizes_text: vec!["80GB".into(), "512GB".into(), "inf".into()],
            capacities: vec![
                Capacity::Gigabytes(80.0),
                Capacity::Gigabytes(512.0),
                Capacity::Infinite,
            ],
            mode: TierMode::Exclusive,
        }),
        time_range: TimeRange::default(),
        kv_bytes_per_token: None,
        // As `litehit query` runs: the pool lane is looked for by its rows (there is none).
        pool: Some(PoolRule::from_flag(None)),
        opt: Vec::new(),
    };
    let mut tiered = QuerySummary::default();
    measure("query, 16 slots, --tiers (3), sink", rows, || {
        (_, tiered) = query_facts_files_planned(
            paths,
            slots(),
            QueryOptions::default(),
            &plan,
            std::io::sink(),
        )
        .expect("query");
    });
    assert_eq!(
        tiered.overall.total_hit_tokens,
        to_sink.overall.total_hit_tokens
    );
    assert_eq!(
        tiered.overall.tier_hit_tokens.iter().sum::<u64>(),
        written.unlimited_hit_tokens,
        "--tiers: the tiers down to an unlimited one serve every hit"
    );
    // `query --window 10ms` (the rows are 1 µs apart).
    measure("query, 16 slots, --window", rows, || {
        let windows = query_windows(
            paths,
            slots(),
            None,
            TimeRange::default(),
            1_000_000_000,
            10_000_000,
        )
        .expect("windows");
        let (requests, unlimited) = windows.windows().fold((0, 0), |(r, u), (_, _, w)| {
            (
                r + w.requests,
                u + w.hit_tokens.last().copied().unwrap_or(0),
            )
        });
        assert_eq!(requests, rows_u64, "--window: every row in one window");
        assert_eq!(unlimited, written.unlimited_hit_tokens, "--window: hits");
    });
    // `query --window 10ms --tiers 80GB,512GB,inf`: one line per window and tier.
    measure("query, --window --tiers (3)", rows, || {
        let windows = query_windows(
            paths,
            QuerySlots::default(),
            plan.tiers.clone(),
            TimeRange::default(),
            1_000_000_000,
            10_000_000,
        )
        .expect("windows");
        let (requests, served) = windows.windows().fold((0, 0), |(r, s), (_, _, w)| {
            (r + w.requests, s + w.tier_hit_tokens.iter().sum::<u64>())
        });
        assert_eq!(
            requests, rows_u64,
            "--window --tiers: every row in one window"
        );
        assert_eq!(
            served, written.unlimited_hit_tokens,
            "--window --tiers: the tiers down to an unlimited one serve every hit"
        );
    });
}
