//! Throughput of the facts reader, `litehit query` (16 slots) and `litehit mrc` on synthetic
//! facts. Run with `cargo bench --bench query` (release profile); `LITEHIT_BENCH_ROWS` sets
//! the row count (default 1,000,000). Prints one line per measurement.

use std::path::{Path, PathBuf};
use std::time::Instant;

use litehit::output::mrc::MrcCurves;
use litehit::output::query_jsonl::{QueryOptions, QuerySlots, query_facts_files};
use litehit_core::facts::file::{FACTS_HEADER, FactsReader, append_fact_row};
use litehit_core::facts::{FactRecord, FactRow, RequestFact};

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
fn write_facts(path: &Path, rows: usize) {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut out = format!("{FACTS_HEADER}\n").into_bytes();
    for row in 0..rows {
        let instance_id = [
            "kimi-k3.tp8.checkpoint1024",
            "engine-1",
            "engine-2",
            "engine-3",
        ][row % 4];
        let mut pairs = Vec::new();
        let mut start = 1 + rng.below(1_200);
        for _ in 0..rng.below(4) {
            let run = 1 + rng.below(60);
            pairs.push([start, run]);
            start += run + 1 + rng.below(300);
        }
        let fact = RequestFact::from_pairs(&pairs);
        let trace_id = format!("{:08x}-{row}:main/0", rng.below(1 << 32));
        append_fact_row(
            &mut out,
            &FactRow {
                trace_id: &trace_id,
                instance_id,
                timestamp_ns: 1_000_000_000 + i64::try_from(row).expect("row fits in i64") * 1_000,
                input_token_len: 1 + rng.below(131_072),
                block_size_tokens: 1024,
                block_bytes: 675_864_576,
                fact: &fact,
            },
        );
    }
    std::fs::write(path, out).expect("write bench facts");
}

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
    let rows: usize = std::env::var("LITEHIT_BENCH_ROWS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let dir = tempfile::tempdir().expect("temp dir");
    let facts: PathBuf = dir.path().join("litehit_facts.csv");
    write_facts(&facts, rows);
    let size = std::fs::metadata(&facts).expect("facts metadata").len();
    println!("{rows} rows, {size} bytes of facts");
    let paths = vec![facts.clone()];

    measure("read + parse", rows, || {
        let mut reader = FactsReader::open(&facts).expect("open facts");
        let mut record = FactRecord::default();
        let mut count = 0;
        while reader.next_record(&mut record).expect("valid facts") {
            count += 1;
        }
        assert_eq!(count, rows);
    });

    let slots = || QuerySlots {
        capacity_gb: (0..15).map(|i| f64::from(i) * 64.0).chain([-1.0]).collect(),
        capacity_blocks: Vec::new(),
    };
    measure("query, 16 slots, rows to a sink", rows, || {
        query_facts_files(&paths, slots(), QueryOptions::default(), std::io::sink())
            .expect("query");
    });
    let out = dir.path().join("query.jsonl");
    measure("query, 16 slots, rows to a file", rows, || {
        let file = std::fs::File::create(&out).expect("create output");
        query_facts_files(&paths, slots(), QueryOptions::default(), file).expect("query");
    });
    measure("query, 16 slots, --summary-only", rows, || {
        query_facts_files(
            &paths,
            slots(),
            QueryOptions { summary_only: true },
            std::io::sink(),
        )
        .expect("query");
    });
    measure("mrc: curves + knees + report", rows, || {
        let curves = MrcCurves::from_facts_files(&paths).expect("mrc");
        let report = curves.report(1000);
        assert_eq!(report.total.requests, rows as u64);
    });
}
