//! `litehit demo`: a generated trace appended at a steady rate to a temporary file, watched
//! live. Works on a fresh machine with no input.

use std::fmt::Write as _;
use std::io::{Seek as _, Write as _};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use color_eyre::eyre::WrapErr as _;

use super::watch::print_summary;
use crate::cli::watch_args::DemoArgs;
use litehit_core::config::{PlanSource, SingleInstanceFlags};
use litehit_core::formats::TraceFormat;
use litehit_core::workload::{Workload, WorkloadConfig};
use litehit_live::Command;
use litehit_live::headless::{self, HeadlessOptions};
use litehit_live::headless_output::HeadlessOutput;
use litehit_live::ingest::{self, IngestConfig};
use litehit_tui::TuiOptions;
use litehit_tui::app::FactsOnQuit;

/// Appends are made in batches this often.
const WRITE_PERIOD: Duration = Duration::from_millis(50);
/// The demo's trace starts over once it holds this much (about a minute at the default
/// rate), so a demo left running does not fill the temp directory.
const DEMO_TRACE_MAX_BYTES: u64 = 256 << 20;

/// Runs the demo until the user quits.
pub fn run(args: &DemoArgs) -> color_eyre::Result<()> {
    super::watch::check_slots(&args.capacity_gb)?;
    // Flags first, as `watch` does: a wrong one is the thing to fix, whatever the terminal.
    let facts_out = litehit_core::facts::file::facts_snapshot_path(&args.facts_out);
    // Its trace is a fresh temp file; `s` says then if the directory cannot be written (a
    // demo started in a read-only directory still runs).
    super::watch::check_facts_out(&facts_out, None, false)?;
    let frame_period = super::watch::frame_period(args.fps)?;
    if !args.headless {
        litehit_tui::ensure_terminal(false)?;
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
    let what = describe(args, block_size_tokens);
    // Said before the screen opens, so it stays on the terminal after `q` (and headless, the
    // JSON lines on stdout stay clean).
    let _ = writeln!(
        std::io::stderr(),
        "litehit demo: {what}, appended to {} (removed on exit); `litehit watch TRACE` follows \
         your own",
        trace.path().display()
    );
    let plan = PlanSource::Flags(SingleInstanceFlags {
        block_size_tokens: Some(block_size_tokens),
        pool: args.pool.clone(),
        ..SingleInstanceFlags::default()
    })
    .plan_for(Some(TraceFormat::Standard))?;
    let mut config = IngestConfig::new(trace.path(), plan.engine);
    config.format = Some(TraceFormat::Standard);
    config.slots.clone_from(&args.capacity_gb);
    config.facts_out = facts_out;
    // Not in the working directory: the spill of a generated trace is the demo's own.
    config.spill_dir = Some(std::env::temp_dir());
    config.frame_period = frame_period;

    let headless_lines_dropped = Arc::clone(&config.headless_lines_dropped);
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
                append_steadily(
                    file,
                    Workload::new(workload_config),
                    rate,
                    limit,
                    &stop,
                    DEMO_TRACE_MAX_BYTES,
                );
                // Everything is written: a bounded demo ends once it is all read.
                commander.send(Command::StopAtEof);
            })?
    };
    let result = if args.headless {
        let options = HeadlessOptions {
            interval: Duration::from_secs(1),
        };
        match HeadlessOutput::stdout(Arc::clone(&headless_lines_dropped)) {
            Ok(out) => headless::run(&live, options, &out)
                .map_err(color_eyre::Report::from)
                .and_then(|_| super::watch::finish_output(out)),
            Err(error) => Err(color_eyre::Report::from(error).wrap_err("opening standard output")),
        }
    } else {
        let options = TuiOptions {
            fps: args.fps,
            // The facts are of a generated trace: quitting loses nothing a seed cannot redo.
            facts_on_quit: FactsOnQuit::Discarded,
            demo: Some(what),
            color: crate::cli::defaults_file::use_color(
                args.color,
                std::env::var_os("NO_COLOR").as_deref(),
            ),
        };
        litehit_tui::run(&live, options)
            .map(|last| {
                print_summary(&last);
                // As in `print_summary`: the terminal may be gone.
                let _ = std::io::stdout()
                    .write_all(b"(the demo trace was a temporary file; it has been removed)\n");
            })
            .map_err(color_eyre::Report::from)
    };
    stop.store(true, Ordering::Relaxed);
    live.shutdown();
    // The writer only appends to a temp file; an error there has nothing left to report to.
    let _ = writer.join();
    result
}

/// What the demo generates, in a few words: the title line and the start-up message.
fn describe(args: &DemoArgs, block_size_tokens: u64) -> String {
    let instances = args.instances.max(1);
    let mut text = format!(
        "generated trace: {} request{}/s over {instances} instance{} (multi-turn chats \
         sharing system prompts, {block_size_tokens}-token blocks, seed {})",
        litehit_core::display::count(u64::from(args.rate)),
        if args.rate == 1 { "" } else { "s" },
        if instances == 1 { "" } else { "s" },
        args.seed,
    );
    if let Some(pool) = &args.pool {
        let _ = write!(text, ", with the shared pool lane {pool}");
    }
    if let Some(limit) = args.requests {
        let _ = write!(
            text,
            ", {} requests in all",
            litehit_core::display::count(limit)
        );
    }
    text
}

/// Appends `rate` requests per second of wall time until `stop` or `limit` requests.
fn append_steadily(
    mut file: std::fs::File,
    mut workload: Workload,
    rate: f64,
    limit: u64,
    stop: &AtomicBool,
    max_file_bytes: u64,
) {
    let started = Instant::now();
    let mut written = 0_u64;
    let mut file_bytes = 0_u64;
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
        file_bytes += text.len() as u64;
        if file_bytes >= max_file_bytes {
            // Start the file over: the monitor keeps its totals across a truncation (as for
            // any truncated trace), and the temp directory does not fill up.
            if file.set_len(0).and_then(|()| file.rewind()).is_err() {
                return;
            }
            file_bytes = 0;
        }
        std::thread::sleep(WRITE_PERIOD);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_demo_trace_starts_over_at_its_size_cap() {
        let written_with_cap = |max_file_bytes: u64| {
            let file = tempfile::tempfile().unwrap();
            let reader = file.try_clone().unwrap();
            let stop = AtomicBool::new(false);
            let workload = Workload::new(WorkloadConfig::default());
            // 3000 requests in a few 50 ms writes.
            append_steadily(file, workload, 20_000.0, 3000, &stop, max_file_bytes);
            reader.metadata().unwrap().len()
        };
        let uncapped = written_with_cap(u64::MAX);
        assert!(uncapped > 100_000, "{uncapped}");
        let capped = written_with_cap(1);
        assert_eq!(
            capped, 0,
            "every write passed the cap and started the file over"
        );
    }
}
