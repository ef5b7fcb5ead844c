//! Core-only throughput (no parsing: keys are pre-loaded), one lane, exact results.
//!
//! `cargo bench --bench core -- [conversation] [large] [adjacency] [opt] [--requests N] [--keys dense|random]`
//!
//! Smoke mode (`LITEHIT_BENCH_SMOKE=1` or `-- --smoke`, see `common/mod.rs`): 2 runs of the
//! conversation trace, a 20,000-request large trace (2 runs per key style) and `adjacency`
//! on it, with every check below.
//!
//! * `conversation`: `../shared/traces/conversation_trace.jsonl` (Mooncake, 512-token blocks,
//!   full blocks only), replayed repeatedly on one core reset between runs (allocations
//!   kept), and on a fresh core each run.
//! * `large`: a generated trace of the large shape (≥ 100 M accesses, ≥ 30 M unique blocks),
//!   with dense ids (Mooncake-like) and with every key replaced by a random-looking 64-bit
//!   hash (real producers' keys), best of 3 fresh-core runs each; `--keys` picks one style.
//!   Reports bytes of core state per unique key, counted as `LiteHit::memory_usage_bytes()`
//!   (heap capacities of every container) / unique keys.
//!
//! * `adjacency`: how the large trace's block accesses would be found by the key table
//!   (`hitcore/key_table.rs`): next to the previous block's entry, through the index, or new.
//!   A plain `HashMap` model of the entry order, not the core.
//!
//! * `opt`: the large trace (dense ids) replayed by the LRU core alone, the OPT core
//!   (`litehit_core::OptCore`) alone and both, one fresh run each: CPU seconds, block accesses per
//!   second, bytes of core state per unique key, and the both / OPT alone time ratio. Checks
//!   that OPT gives the same facts alone and beside LRU, and OPT(∞) = LRU(∞) on every request.
//!
//! Every run checks exactness cheaply: both key styles must give identical facts digests.

use std::hint::black_box;
use std::time::Instant;

use litehit_core::LiteHit;
use litehit_core::OptCore;
use litehit_core::facts::RequestFact;
use litehit_core::projector::project_infinite;
use litehit_core::workload::{SyntheticRequest, Workload};

mod common;
use common::Mode;

/// CPU time of this thread in seconds (`CLOCK_THREAD_CPUTIME_ID`), so figures stay
/// comparable while other processes share the machine. Not `/proc/thread-self/schedstat`:
/// its run time is only brought up to date at scheduler ticks, so on a run of a few
/// milliseconds (the conversation trace) it can miss half the time, and a best-of-N then
/// reports the most under-counted run.
fn thread_cpu_seconds() -> f64 {
    let now = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    #[expect(clippy::cast_precision_loss, reason = "seconds as a float")]
    let seconds = now.tv_sec as f64 + now.tv_nsec as f64 / 1e9;
    seconds
}

/// All requests' keys back to back, plus each request's end offset.
struct FlatTrace {
    keys: Vec<i64>,
    ends: Vec<usize>,
}

impl FlatTrace {
    fn accesses(&self) -> usize {
        self.keys.len()
    }
    fn requests(&self) -> impl Iterator<Item = &[i64]> {
        let mut start = 0;
        self.ends.iter().map(move |&end| {
            let request = &self.keys[start..end];
            start = end;
            request
        })
    }
}

/// Replays the trace once on `core` (fresh or reset); returns (seconds, facts digest,
/// unique blocks, core bytes).
fn replay(core: &mut LiteHit, trace: &FlatTrace) -> (f64, u64, u64, usize) {
    let mut fact = RequestFact::default();
    let mut digest = 0_u64;
    let cpu_started = thread_cpu_seconds();
    let mut requests = trace.requests().peekable();
    while let Some(request) = requests.next() {
        if let Some(next) = requests.peek() {
            core.prefetch(next);
        }
        core.process_request_into(request, 0, &mut fact);
        for segment in &fact.hit_curve {
            digest = digest
                .wrapping_mul(31)
                .wrapping_add(segment.start_required_blocks ^ (segment.run_length << 32));
        }
        digest = digest.wrapping_add(project_infinite(&fact));
    }
    // CPU time, not wall time: wall time also counts time stolen by other processes.
    let seconds = thread_cpu_seconds() - cpu_started;
    (
        seconds,
        black_box(digest),
        core.current_unique_blocks(),
        core.memory_usage_bytes(),
    )
}

fn load_conversation() -> Option<FlatTrace> {
    let path = common::shared_trace("conversation_trace.jsonl", "conversation")?;
    let text = std::fs::read_to_string(&path).expect("read the conversation trace");
    let mut trace = FlatTrace {
        keys: Vec::new(),
        ends: Vec::new(),
    };
    for line in text.lines() {
        let row: serde_json::Value = serde_json::from_str(line).expect("valid Mooncake row");
        let input_length = row["input_length"].as_u64().expect("input_length");
        let full_blocks = usize::try_from(input_length / 512).expect("small");
        let ids = row["hash_ids"].as_array().expect("hash_ids");
        trace.keys.extend(
            ids[..full_blocks]
                .iter()
                .map(|v| v.as_i64().expect("integer id")),
        );
        trace.ends.push(trace.keys.len());
    }
    Some(trace)
}

fn generate_large(requests: usize) -> FlatTrace {
    let config = common::large_workload_config();
    let mut workload = Workload::new(config);
    let mut request = SyntheticRequest::default();
    let mut trace = FlatTrace {
        keys: Vec::with_capacity(requests * 62),
        ends: Vec::with_capacity(requests),
    };
    for _ in 0..requests {
        workload.fill_next(&mut request);
        trace.keys.extend_from_slice(&request.keys);
        trace.ends.push(trace.keys.len());
    }
    trace
}

/// Fresh-core replays of each large trace; the best is reported (the machines are noisy, and
/// noise only ever adds time), with the median run beside it.
const LARGE_RUNS: usize = 3;

/// A bijective 64-bit mix: distinct ids stay distinct, so the prefix contract is kept.
#[expect(
    clippy::cast_sign_loss,
    clippy::cast_possible_wrap,
    reason = "bit reinterpretation"
)]
fn random_looking(key: i64) -> i64 {
    litehit_core::workload::mix64((key as u64).wrapping_add(0x9e37_79b9_7f4a_7c15)) as i64
}

/// Best of `runs` replays, and the median run (the upper one for an even `runs`). `warm`: one core reset between runs (allocations kept, no page
/// faults or table growth); otherwise a fresh core per run (what a one-shot replay pays).
fn report(name: &str, trace: &FlatTrace, runs: usize, warm: bool) -> u64 {
    let mut seconds_per_run = Vec::with_capacity(runs);
    let mut digest = 0;
    let mut unique = 0;
    let mut bytes = 0;
    let mut core = LiteHit::new();
    for _ in 0..runs {
        if warm {
            core.reset();
        } else {
            core = LiteHit::new();
        }
        let (seconds, d, u, b) = replay(&mut core, trace);
        seconds_per_run.push(seconds);
        (digest, unique, bytes) = (d, u, b);
    }
    seconds_per_run.sort_by(f64::total_cmp);
    let best = seconds_per_run[0];
    // The median run too, so a reader sees how much the machine's noise moved the best.
    let median = seconds_per_run[seconds_per_run.len() / 2];
    let rate = |seconds: f64| trace.accesses() as f64 / seconds / 1e6;
    println!(
        "{name:<28} requests {:>9}  accesses {:>11}  unique {:>10}  best {:>8.3} s cpu  {:>7.1} M accesses/s (median run {:.1} M/s)  {:>5.1} B/unique key  digest {digest:016x}",
        trace.ends.len(),
        trace.accesses(),
        unique,
        best,
        rate(best),
        rate(median),
        bytes as f64 / unique as f64,
    );
    digest
}

/// Replays the entry order of the key table with a `HashMap` (key → entry id, new keys
/// appended head first, as the core commits them) and counts where each access is found.
fn report_adjacency(trace: &FlatTrace) {
    let mut entry_ids: std::collections::HashMap<i64, usize> = std::collections::HashMap::new();
    let (mut next_to_previous, mut through_index, mut new) = (0_u64, 0_u64, 0_u64);
    for request in trace.requests() {
        let mut previous_entry: Option<usize> = None;
        for key in request {
            if let Some(&entry) = entry_ids.get(key) {
                if previous_entry.is_some_and(|previous| previous + 1 == entry) {
                    next_to_previous += 1;
                } else {
                    through_index += 1;
                }
                previous_entry = Some(entry);
            } else {
                new += 1;
                previous_entry = None;
            }
        }
        for &key in request {
            let next_id = entry_ids.len();
            entry_ids.entry(key).or_insert(next_id);
        }
    }
    let total = (next_to_previous + through_index + new) as f64;
    println!(
        "adjacency: {:.1} % of accesses next to the previous block's entry, {:.1} % through the index, {:.1} % new",
        100.0 * next_to_previous as f64 / total,
        100.0 * through_index as f64 / total,
        100.0 * new as f64 / total,
    );
}

/// One run of [`report_policies`].
struct PolicyRun {
    seconds: f64,
    opt_digest: u64,
    /// Σ over requests of LRU's ∞ hits minus OPT's, when both ran (must be 0).
    infinite_difference: i64,
    unique: u64,
    lru_bytes: usize,
    opt_bytes: usize,
}

fn digest_of(digest: u64, fact: &RequestFact) -> u64 {
    fact.hit_curve.iter().fold(digest, |d, segment| {
        d.wrapping_mul(31)
            .wrapping_add(segment.start_required_blocks ^ (segment.run_length << 32))
    })
}

/// Replays `trace` on fresh cores of the chosen policies, one request through both before the
/// next (as a lane does).
fn replay_policies(trace: &FlatTrace, lru: bool, opt: bool) -> PolicyRun {
    let (mut lru_core, mut opt_core) = (LiteHit::new(), OptCore::new());
    let (mut lru_fact, mut opt_fact) = (RequestFact::default(), RequestFact::default());
    let (mut opt_digest, mut infinite_difference) = (0_u64, 0_i64);
    let cpu_started = thread_cpu_seconds();
    let mut requests = trace.requests().peekable();
    while let Some(request) = requests.next() {
        if lru {
            if let Some(next) = requests.peek() {
                lru_core.prefetch(next);
            }
            lru_core.process_request_into(request, 0, &mut lru_fact);
        }
        if opt {
            opt_core
                .try_process_request_into(request, 0, &mut opt_fact)
                .expect("the bench fits in memory");
            opt_digest = digest_of(opt_digest, &opt_fact);
        }
        if lru && opt {
            infinite_difference += i64::try_from(project_infinite(&lru_fact)).expect("small")
                - i64::try_from(project_infinite(&opt_fact)).expect("small");
        }
    }
    let seconds = thread_cpu_seconds() - cpu_started;
    PolicyRun {
        seconds,
        opt_digest: black_box(opt_digest),
        infinite_difference,
        unique: lru_core
            .current_unique_blocks()
            .max(opt_core.current_unique_blocks()),
        lru_bytes: if lru {
            lru_core.memory_usage_bytes()
        } else {
            0
        },
        opt_bytes: if opt {
            opt_core.memory_usage_bytes()
        } else {
            0
        },
    }
}

/// LRU alone, OPT alone and both over one trace (the `opt` target).
fn report_policies(trace: &FlatTrace) {
    let lru = replay_policies(trace, true, false);
    let opt = replay_policies(trace, false, true);
    let both = replay_policies(trace, true, true);
    assert_eq!(
        opt.opt_digest, both.opt_digest,
        "OPT's facts must not depend on LRU beside it"
    );
    assert_eq!(both.infinite_difference, 0, "OPT(∞) must equal LRU(∞)");
    let rate = |run: &PolicyRun| trace.accesses() as f64 / run.seconds / 1e6;
    let per_key = |bytes: usize| bytes as f64 / lru.unique.max(1) as f64;
    println!(
        "policies: requests {}  accesses {}  unique {}",
        trace.ends.len(),
        trace.accesses(),
        lru.unique
    );
    println!(
        "  lru      {:>8.3} s cpu  {:>6.2} M accesses/s  {:>5.1} B/unique key",
        lru.seconds,
        rate(&lru),
        per_key(lru.lru_bytes)
    );
    println!(
        "  opt      {:>8.3} s cpu  {:>6.2} M accesses/s  {:>5.1} B/unique key  digest {:016x}",
        opt.seconds,
        rate(&opt),
        per_key(opt.opt_bytes),
        opt.opt_digest
    );
    println!(
        "  lru,opt  {:>8.3} s cpu  {:>6.2} M accesses/s  {:>5.1} B/unique key  ({:.2}× opt alone)",
        both.seconds,
        rate(&both),
        per_key(both.lru_bytes + both.opt_bytes),
        both.seconds / opt.seconds
    );
}

fn main() {
    let mode = Mode::from_env_and_args();
    let args = common::bench_args();
    let wants = |name: &str| {
        args.is_empty()
            || args.iter().any(|a| a == name)
            || !args
                .iter()
                .any(|a| a == "conversation" || a == "large" || a == "adjacency" || a == "opt")
    };
    let large_requests = args
        .iter()
        .position(|a| a == "--requests")
        .and_then(|i| args.get(i + 1))
        .and_then(|v| v.parse().ok())
        .unwrap_or(mode.pick(2_000_000, 20_000));
    let large_runs = mode.pick(LARGE_RUNS, 2);
    if wants("conversation")
        && let Some(trace) = load_conversation()
    {
        let runs = mode.pick(20, 2);
        let fresh = report("conversation, fresh core", &trace, runs, false);
        let warm = report("conversation, reset core", &trace, runs, true);
        assert_eq!(fresh, warm, "a reset core must give the same facts");
    }
    // Smoke mode runs every path, the adjacency model included.
    if mode == Mode::Smoke || args.iter().any(|a| a == "adjacency") {
        report_adjacency(&generate_large(large_requests));
    }
    if wants("opt") {
        report_policies(&generate_large(large_requests));
    }
    if wants("large") {
        let started = Instant::now();
        let dense = generate_large(large_requests);
        eprintln!(
            "generated {} requests in {:.1} s",
            dense.ends.len(),
            started.elapsed().as_secs_f64()
        );
        let only = args
            .iter()
            .position(|a| a == "--keys")
            .and_then(|i| args.get(i + 1))
            .map(String::as_str);
        let dense_digest =
            (only != Some("random")).then(|| report("large, dense ids", &dense, large_runs, false));
        if only == Some("dense") {
            return;
        }
        let hashed = FlatTrace {
            keys: dense.keys.iter().map(|&k| random_looking(k)).collect(),
            ends: dense.ends.clone(),
        };
        drop(dense);
        let hashed_digest = report("large, random 64-bit keys", &hashed, large_runs, false);
        if let Some(dense_digest) = dense_digest {
            assert_eq!(
                dense_digest, hashed_digest,
                "key representation must not change any fact"
            );
        }
    }
}
