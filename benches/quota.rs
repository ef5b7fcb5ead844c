//! The quota planner's dynamic program (`litehit_report::best_split`) on 64 tenants × 512 grid
//! steps, the size the issue asks to answer in under 100 ms. Run with `cargo bench --bench
//! quota` (release profile); smoke mode (`LITEHIT_BENCH_SMOKE=1`, see `common/mod.rs`) takes 8
//! tenants × 64 steps. Prints the best-of-5 CPU time of this thread. Each run checks its
//! answer: the split is within the budget and its tenants' hits sum to the reported total,
//! which no single tenant's best alone beats.

use litehit_report::best_split;

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
}
