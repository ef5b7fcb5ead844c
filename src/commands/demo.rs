//! `litehit demo`: a generated trace appended at a steady rate to a temporary file, watched
//! live. Works on a fresh machine with no input.

use std::io::Write as _;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use color_eyre::eyre::WrapErr as _;

use super::watch::print_summary;
use crate::cli::watch_args::DemoArgs;
use crate::config::{SingleInstanceFlags, resolve_single_instance};
use crate::formats::TraceFormat;
use crate::live::Command;
use crate::live::headless::{self, HeadlessOptions};
use crate::live::ingest::{self, IngestConfig};
use crate::tui::{self, TuiOptions};
use crate::workload::{Workload, WorkloadConfig};

/// Appends are made in batches this often.
const WRITE_PERIOD: Duration = Duration::from_millis(50);

/// Runs the demo until the user quits.
pub fn run(args: &DemoArgs) -> color_eyre::Result<()> {
    super::watch::check_slots(&args.capacity_gb)?;
    if !args.headless {
        tui::ensure_terminal()?;
    }
    let trace = tempfile::Builder::new()
        .prefix("litehit-demo-")
        .suffix(".jsonl")
        .tempfile()
        .wrap_err("creating the demo trace file")?;
    let workload_config = WorkloadConfig {
        seed: args.seed,
        instance_ids: (0..args.instances.max(1))
            .map(|i| format!("instance-{i}"))
            .collect(),
        ..WorkloadConfig::default()
    };
    let block_size_tokens = workload_config.block_size_tokens;
    let resolved = resolve_single_instance(&SingleInstanceFlags {
        block_size_tokens: Some(block_size_tokens),
        format: Some(TraceFormat::Standard),
        ..SingleInstanceFlags::default()
    })?;
    let mut config = IngestConfig::new(trace.path(), resolved.engine);
    config.format = Some(TraceFormat::Standard);
    config.slots.clone_from(&args.capacity_gb);
    config.facts_out.clone_from(&args.facts_out);
    config.frame_period = Duration::from_secs_f64(1.0 / args.fps.clamp(0.5, 120.0));

    let live = ingest::spawn(config)?;
    let stop = Arc::new(AtomicBool::new(false));
    let writer = {
        let commander = live.commander();
        let stop = Arc::clone(&stop);
        let file = trace
            .reopen()
            .wrap_err("opening the demo trace for appends")?;
        let rate = f64::from(args.rate.max(1));
        let limit = args.requests.unwrap_or(u64::MAX);
        std::thread::Builder::new()
            .name("litehit-demo-writer".to_owned())
            .spawn(move || {
                append_steadily(file, Workload::new(workload_config), rate, limit, &stop);
                // Everything is written: a bounded demo ends once it is all read.
                commander.send(Command::StopAtEof);
            })?
    };
    let result = if args.headless {
        let options = HeadlessOptions {
            interval: Duration::from_secs(1),
        };
        headless::run(&live, options, &mut std::io::stdout().lock()).map(drop)
    } else {
        tui::run(&live, TuiOptions { fps: args.fps }).map(|last| {
            print_summary(&last);
            // As in `print_summary`: the terminal may be gone.
            let _ = std::io::Write::write_all(
                &mut std::io::stdout(),
                b"(the demo trace was a temporary file; it has been removed)\n",
            );
        })
    };
    stop.store(true, Ordering::Relaxed);
    live.shutdown();
    // The writer only appends to a temp file; an error there has nothing left to report to.
    let _ = writer.join();
    result
}

/// Appends `rate` requests per second of wall time until `stop` or `limit` requests.
fn append_steadily(
    mut file: std::fs::File,
    mut workload: Workload,
    rate: f64,
    limit: u64,
    stop: &AtomicBool,
) {
    let started = Instant::now();
    let mut written = 0_u64;
    let mut text = String::new();
    while !stop.load(Ordering::Relaxed) && written < limit {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a small positive count"
        )]
        let due = (started.elapsed().as_secs_f64() * rate) as u64;
        text.clear();
        while written < due.min(limit) {
            let Some(request) = workload.next() else {
                return;
            };
            request.to_standard_jsonl(&mut text);
            written += 1;
        }
        if !text.is_empty() && file.write_all(text.as_bytes()).is_err() {
            return;
        }
        std::thread::sleep(WRITE_PERIOD);
    }
}
