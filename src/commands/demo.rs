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
/// rate) and the monitor has read all of it, so a demo left running does not fill the temp
/// directory and never loses a row of its own.
const DEMO_TRACE_MAX_BYTES: u64 = 256 << 20;

/// Runs the demo until the user quits.
pub fn run(args: &DemoArgs) -> color_eyre::Result<()> {
    super::check_thread_cap()?;
    let plan = plan(args)?;
    if !plan.headless {
        litehit_tui::ensure_terminal(false)?;
    }
    // The generated trace and the facts spill in a temp directory of their own, removed at
    // exit (the working directory gets only what `s` is asked to write).
    let temp_dir = tempfile::Builder::new()
        .prefix("litehit-demo-")
        .tempdir()
        .wrap_err("creating the demo's temp directory")?;
    let trace_path = temp_dir.path().join("trace.jsonl");
    let trace = std::fs::File::create_new(&trace_path)
        .wrap_err_with(|| format!("creating the demo trace {}", trace_path.display()))?;
    // Said before the screen opens, so it stays on the terminal after `q` (and headless, the
    // JSON lines on stdout stay clean).
    let _ = writeln!(
        std::io::stderr(),
        "litehit demo: {}, appended to {} (removed on exit); `litehit watch TRACE` follows \
         your own",
        plan.what,
        trace_path.display()
    );
    let mut config = IngestConfig::new(&trace_path, plan.engine);
    config.model = plan.model;
    config.format = Some(TraceFormat::Standard);
    config.slots = plan.slots;
    config.engine_pool = plan.engine_pool;
    config.facts_out = plan.facts_out;
    // Not in the working directory: the spill of a generated trace is the demo's own.
    config.spill_dir = Some(temp_dir.path().to_path_buf());
    config.frame_period = plan.frame_period;
    config.cache_policies = super::watch::live_policies(args.policy)?;
    let (workload_config, pace, what) = (plan.workload, plan.pace, plan.what);

    let headless_lines_dropped = Arc::clone(&config.headless_lines_dropped);
    let live = ingest::spawn(config)?;
    let stop = Arc::new(AtomicBool::new(false));
    let writer = spawn_writer(&live, trace, Workload::new(workload_config), pace, &stop)
        .wrap_err("starting the demo writer thread")?;
    let result = if plan.headless {
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
            fps: plan.fps,
            // The facts are of a generated trace: quitting loses nothing a seed cannot redo.
            facts_on_quit: FactsOnQuit::Discarded,
            demo: Some(what),
            color: plan.color,
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
    drop(temp_dir); // the trace and the spill with it
    result
}

/// What `demo` was asked, checked and in plain data, before anything is created.
#[derive(Debug)]
struct DemoPlan {
    /// Where `s` writes the facts.
    facts_out: std::path::PathBuf,
    frame_period: Duration,
    /// The generated traffic.
    workload: WorkloadConfig,
    pace: Pace,
    /// What the demo generates, in a few words (the title line and the start-up message).
    what: String,
    /// The engine's plan: one lane per instance of the standard trace's blocks.
    engine: litehit_core::engine::EngineConfig,
    /// `--model`, resolved: named on the monitor's geometry line.
    model: Option<litehit_core::config::ModelKvSize>,
    /// `--capacity-gb`.
    slots: Vec<litehit_core::projector::Capacity>,
    /// `--gpu-blocks` or `--gpu-memory`: the `engine` slot.
    engine_pool: Option<litehit_core::engine_pool::EnginePool>,
    headless: bool,
    fps: f64,
    color: bool,
}

/// The plan of `args`: flags first, as `watch` does — a wrong one is the thing to fix,
/// whatever the terminal.
fn plan(args: &DemoArgs) -> color_eyre::Result<DemoPlan> {
    super::watch::check_slots(&args.capacity_gb)?;
    let facts_out = litehit_core::facts::file::facts_snapshot_path(&args.facts_out);
    // Its trace is a fresh temp file; `s` says then if the directory cannot be written (a
    // demo started in a read-only directory still runs).
    super::watch::check_facts_out(&facts_out, None, false)?;
    let frame_period = super::watch::frame_period(args.fps)?;
    let workload = WorkloadConfig {
        seed: args.seed,
        instance_ids: (0..args.instances.max(1))
            .map(|i| format!("instance-{i}"))
            .collect(),
        ..WorkloadConfig::default()
    };
    let block_size_tokens = workload.block_size_tokens;
    let model = super::resolve_model(&args.model)?;
    let engine = PlanSource::Flags(SingleInstanceFlags {
        block_size_tokens: Some(block_size_tokens),
        pool: args.pool.clone(),
        model: model.clone(),
        ..SingleInstanceFlags::default()
    })
    .plan_for(Some(TraceFormat::Standard))?
    .engine;
    Ok(DemoPlan {
        facts_out,
        frame_period,
        what: describe(args, block_size_tokens),
        workload,
        pace: Pace {
            rate: f64::from(args.rate.max(1)),
            limit: args.requests.unwrap_or(u64::MAX),
        },
        engine,
        model,
        slots: args.capacity_gb.clone(),
        engine_pool: args.engine_pool.pool(),
        headless: args.headless,
        fps: args.fps,
        color: crate::cli::defaults_file::use_color(
            args.color,
            std::env::var_os("NO_COLOR").as_deref(),
        ),
    })
}

/// What the demo generates, in a few words: the title line and the start-up message.
fn describe(args: &DemoArgs, block_size_tokens: u64) -> String {
    let instances = args.instances.max(1);
    // Short enough that the title line at 160 columns shows it whole.
    let mut text = format!(
        "generated: {} req/s over {instances} instance{} · multi-turn chats, shared system \
         prompts · {block_size_tokens}-token blocks · seed {}",
        litehit_core::display::count(u64::from(args.rate)),
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

/// Starts the thread that appends the generated trace (see [`append_steadily`]); once it
/// has written everything, a bounded demo ends when it is all read.
fn spawn_writer(
    live: &litehit_live::LiveHandle,
    file: std::fs::File,
    workload: Workload,
    pace: Pace,
    stop: &Arc<AtomicBool>,
) -> std::io::Result<std::thread::JoinHandle<()>> {
    let commander = live.commander();
    let stop = Arc::clone(stop);
    let snapshots = live.snapshots();
    std::thread::Builder::new()
        .name("litehit-demo-writer".to_owned())
        .spawn(move || {
            // How far the monitor has read the trace (published at its frame rate).
            let read_offset = || snapshots.borrow().source.consumed_bytes;
            let target = AppendTarget {
                max_file_bytes: DEMO_TRACE_MAX_BYTES,
                read_offset: &read_offset,
            };
            append_steadily(file, workload, pace, &stop, &target);
            commander.send(Command::StopAtEof);
        })
}

/// How fast and how many requests the demo appends.
#[derive(Debug, Clone, Copy)]
struct Pace {
    /// Requests per second of wall time.
    rate: f64,
    /// Requests in all.
    limit: u64,
}

/// The trace file's bound, and how far its reader has got.
struct AppendTarget<'a> {
    /// The file starts over once it holds this much and every byte of it was read.
    max_file_bytes: u64,
    /// The byte offset the monitor has read the file to.
    read_offset: &'a dyn Fn() -> u64,
}

/// Appends `pace.rate` requests per second of wall time until `stop` or `pace.limit`
/// requests. At `target.max_file_bytes` the file starts over, but only once the monitor has
/// read all of it (the generator waits meanwhile: back-pressure, never a lost row), and the
/// next rows are appended only once the monitor has seen the file start over.
fn append_steadily(
    mut file: std::fs::File,
    mut workload: Workload,
    pace: Pace,
    stop: &AtomicBool,
    target: &AppendTarget<'_>,
) {
    let started = Instant::now();
    let mut written = 0_u64;
    let mut file_bytes = 0_u64;
    let mut text = String::new();
    // Rows not generated while waiting for the reader are not owed afterwards.
    let mut waited = Duration::ZERO;
    while !stop.load(Ordering::Relaxed) && written < pace.limit {
        #[expect(
            clippy::cast_possible_truncation,
            clippy::cast_sign_loss,
            reason = "a small positive count"
        )]
        let due = ((started.elapsed().saturating_sub(waited)).as_secs_f64() * pace.rate) as u64;
        text.clear();
        while written < due.min(pace.limit) {
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
        if file_bytes >= target.max_file_bytes {
            let waiting = Instant::now();
            // Every byte read first: a truncation must never take rows the monitor has not
            // read (it keeps its totals across one, as for any truncated trace).
            if !wait_until(stop, || (target.read_offset)() >= file_bytes) {
                return;
            }
            if file.set_len(0).and_then(|()| file.rewind()).is_err() {
                return;
            }
            // And seen the file start over before it grows again, or it could take the new
            // rows for the rest of the old file.
            if !wait_until(stop, || (target.read_offset)() == 0) {
                return;
            }
            file_bytes = 0;
            waited += waiting.elapsed();
        }
        std::thread::sleep(WRITE_PERIOD);
    }
}

/// Waits (a write period at a time) until `done`; `false` if `stop` came first.
fn wait_until(stop: &AtomicBool, done: impl Fn() -> bool) -> bool {
    while !done() {
        if stop.load(Ordering::Relaxed) {
            return false;
        }
        std::thread::sleep(WRITE_PERIOD);
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Appends up to `limit` requests with a reader that reads everything at once; the
    /// file's length at the end.
    fn written_with_cap(max_file_bytes: u64, limit: u64) -> u64 {
        let file = tempfile::tempfile().unwrap();
        let reader = file.try_clone().unwrap();
        let stop = AtomicBool::new(false);
        let workload = Workload::new(WorkloadConfig::default());
        let read_offset = || reader.metadata().unwrap().len();
        let target = AppendTarget {
            max_file_bytes,
            read_offset: &read_offset,
        };
        let pace = Pace {
            rate: 20_000.0,
            limit,
        };
        append_steadily(file, workload, pace, &stop, &target);
        reader.metadata().unwrap().len()
    }

    #[test]
    fn the_title_shows_the_default_demo_whole_at_160_columns() {
        use clap::Parser as _;
        let crate::cli::Command::Demo(args) =
            crate::cli::Cli::parse_from(["litehit", "demo"]).command
        else {
            panic!("not the demo");
        };
        let what = describe(&args, 16);
        let mut view = litehit_tui::app::App::default();
        view.demo = Some(what.clone());
        let mut snap = litehit_live::LiveSnapshot::default();
        snap.source.state = litehit_live::snapshot::FollowState::Following;
        let mut terminal =
            ratatui::Terminal::new(ratatui::backend::TestBackend::new(160, 40)).unwrap();
        terminal
            .draw(|frame| litehit_tui::render::draw(frame, &snap, &view))
            .unwrap();
        let buffer = terminal.backend().buffer();
        let title: String = (0..160).map(|x| buffer[(x, 0)].symbol()).collect();
        assert!(title.contains(&what), "cut: {title:?} lacks {what:?}");
    }

    #[test]
    fn the_demo_trace_starts_over_at_its_size_cap() {
        // 3000 requests in a few 50 ms writes.
        let uncapped = written_with_cap(u64::MAX, 3000);
        assert!(uncapped > 100_000, "{uncapped}");
        assert_eq!(
            written_with_cap(1, 3000),
            0,
            "every write passed the cap and started the file over"
        );
    }

    /// Issue #26: the demo's size cap truncated rows the monitor had not read.
    #[test]
    fn the_demo_never_truncates_rows_not_read() {
        let file = tempfile::tempfile().unwrap();
        let reader = file.try_clone().unwrap();
        let stop = AtomicBool::new(false);
        let workload = Workload::new(WorkloadConfig::default());
        // A reader that has read nothing, asked 20 times; then the demo is stopped.
        let asked = std::cell::Cell::new(0_u32);
        let read_offset = || {
            asked.set(asked.get() + 1);
            if asked.get() >= 20 {
                stop.store(true, Ordering::Relaxed);
            }
            0
        };
        let target = AppendTarget {
            max_file_bytes: 1,
            read_offset: &read_offset,
        };
        let pace = Pace {
            rate: 20_000.0,
            limit: 3000,
        };
        append_steadily(file, workload, pace, &stop, &target);
        assert!(asked.get() >= 20, "the generator waited for the reader");
        assert!(
            reader.metadata().unwrap().len() > 0,
            "the unread rows were not truncated"
        );
    }
}
