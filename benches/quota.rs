//! The quota planner on 64 tenants × 512 grid steps, the size the issue asks to answer in
//! under 100 ms: its dynamic program alone (`litehit_report::best_split`), and the whole
//! planner from facts curves (`plan_quotas`: every tenant's hits at every grid point through
//! the projector, the DP, the pool and equal-split comparisons), 64 tenant lanes of 2,000
//! requests each. Run with `cargo bench --bench quota` (release profile); smoke mode
//! (`LITEHIT_BENCH_SMOKE=1`, see `common/mod.rs`) takes 8 tenants × 64 steps. Prints the
//! best-of-5 CPU time of this thread for each. Each run checks its answer: the split is within
//! the budget and its tenants' hits sum to the reported total, which no single tenant's best
//! alone beats.

use litehit_core::facts::{FactRecord, RequestFact};
use litehit_core::projector::Capacity;
use litehit_report::{MrcBuilder, MrcCurves, QuotaRequest, best_split, plan_quotas};

#[expect(dead_code, reason = "the quota bench reads nothing from ../shared")]
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

/// CPU time of this thread in seconds (`CLOCK_THREAD_CPUTIME_ID`), as `core.rs` measures it.
fn thread_cpu_seconds() -> f64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    #[expect(clippy::cast_precision_loss, reason = "seconds as a float")]
    let seconds = now.tv_sec as f64 + now.tv_nsec as f64 / 1e9;
    seconds
}

/// Step curves like real tenants': flat stretches, then jumps (a working set that fits).
fn curves(tenants: usize, steps: usize) -> Vec<Vec<u64>> {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    (0..tenants)
        .map(|_| {
            let mut hits = 0;
            (0..=steps)
                .map(|step| {
                    if step > 0 && rng.below(8) == 0 {
                        hits += rng.below(100_000);
                    }
                    hits
                })
                .collect()
        })
        .collect()
}

/// Blocks per grid step of the whole-planner run.
const STEP_BLOCKS: u64 = 8;

/// `tenants` lanes of `requests` facts each, with random prefix hits over the grid's range.
fn facts_curves(tenants: usize, requests: usize, steps: usize) -> MrcCurves {
    let mut rng = Rng(0x2545_f491_4f6c_dd1d);
    let mut builder = MrcBuilder::new();
    let range_blocks = steps as u64 * STEP_BLOCKS;
    for tenant in 0..tenants {
        for request in 0..requests {
            let start = 1 + rng.below(range_blocks);
            let run = 1 + rng.below(24);
            let record = FactRecord {
                trace_id: format!("r{request}"),
                instance_id: format!("tenant-{tenant:02}"),
                timestamp_ns: i64::try_from(request).expect("small"),
                input_token_len: 16 * (run + 8),
                block_size_tokens: 16,
                block_bytes: 1 << 20,
                fact: RequestFact::from_pairs(&[[start, run]]),
            };
            builder.add_record(&record).expect("one geometry");
        }
    }
    builder.try_finish().expect("curves")
}

/// `plan_quotas` over `tenants` lanes: its best-of-5 CPU seconds.
fn whole_planner(tenants: usize, steps: usize) -> f64 {
    let curves = facts_curves(tenants, 2_000, steps);
    let request = QuotaRequest {
        total: Capacity::Blocks(steps as u64 * STEP_BLOCKS),
        floors: Vec::new(),
        step: Some(Capacity::Blocks(STEP_BLOCKS)),
    };
    let mut best_seconds = f64::INFINITY;
    for _ in 0..5 {
        let start = thread_cpu_seconds();
        let plan = plan_quotas(&curves, &request).expect("a plan");
        best_seconds = best_seconds.min(thread_cpu_seconds() - start);
        assert_eq!(plan.tenants.len(), tenants);
        let quotas: u64 = plan.tenants.iter().map(|t| t.quota_blocks).sum();
        assert!(quotas <= plan.quota_total_blocks);
        let hits: u64 = plan.tenants.iter().map(|t| t.hit_tokens).sum();
        assert_eq!(hits, plan.isolated_hit_tokens);
        assert!(plan.isolated_hit_tokens >= plan.equal_split_hit_tokens);
    }
    best_seconds
}

fn main() {
    let mode = Mode::from_env_and_args();
    let (tenants, steps) = mode.pick((64, 512), (8, 64));
    let curves = curves(tenants, steps);
    let floors = vec![0; tenants];
    let mut best_seconds = f64::INFINITY;
    for _ in 0..5 {
        let start = thread_cpu_seconds();
        let split = best_split(&curves, &floors, steps).expect("no floors: always feasible");
        best_seconds = best_seconds.min(thread_cpu_seconds() - start);
        assert!(split.steps.iter().sum::<usize>() <= steps);
        let sum: u64 = split.steps.iter().zip(&curves).map(|(&k, c)| c[k]).sum();
        assert_eq!(sum, split.hit_tokens);
        let single_best = curves.iter().map(|c| c[steps]).max().unwrap_or(0);
        assert!(split.hit_tokens >= single_best);
    }
    println!(
        "quota planner: {tenants} tenants × {steps} steps: {:.2} ms CPU (best of 5)",
        best_seconds * 1e3
    );
    println!(
        "plan_quotas from facts curves: {tenants} tenants × {steps} steps: {:.2} ms CPU (best of 5)",
        whole_planner(tenants, steps) * 1e3
    );
}
