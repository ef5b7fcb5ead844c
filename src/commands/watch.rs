//! `litehit watch`: glue from arguments to the ingest thread and the TUI or headless output.

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use color_eyre::eyre::{WrapErr as _, bail, eyre};

use crate::cli::watch_args::{FileOrder, WatchArgs};
use crate::commands::detect_trace_format;
use litehit_core::config::{ConfigFile, PlanSource};
use litehit_core::engine::pipeline::LinesSeen;
use litehit_core::engine::{CachePolicies, CachePolicy};
use litehit_core::formats::{Compression, peek_first_line, read_magic};
use litehit_core::projector::Capacity;
use litehit_live::LiveSnapshot;
use litehit_live::headless::{self, HeadlessOptions};
use litehit_live::headless_output::{self, HeadlessOutput};
#[cfg(feature = "tokenize")]
use litehit_live::ingest::LineTransform;
use litehit_live::ingest::{self, EngineForFormat, IngestConfig};
use litehit_live::snapshot::FactsWrite;
use litehit_live::tail::{DirectoryOrder, StartAt};
use litehit_tui::TuiOptions;
use litehit_tui::app::FactsOnQuit;

/// Runs the live monitor until the user quits (or, headless, until EOF / Ctrl-C).
pub fn run(args: &WatchArgs) -> color_eyre::Result<()> {
    // `--facts-out DIR/` (or `new/facts.csv`) is created now if missing, as `replay --out`
    // creates its own: the spill waits there and a write at the end cannot fail for it. Held
    // for the run: a directory still empty at the end (nothing published) is removed again.
    let _created_dirs = create_facts_out_directory(args)?;
    // Arguments first: a wrong flag is the thing to fix, whatever the terminal.
    let mut config = ingest_config(args)?;
    let interval = seconds("--interval", args.interval)?;
    if !args.headless {
        litehit_tui::ensure_terminal(args.trace.as_deref() == Some(Path::new("-")))?;
    }
    if args.headless {
        // Every line shows a snapshot newer than the previous line's.
        config.heartbeat = config.heartbeat.min(interval / 2);
    }
    let facts_at_end = config.facts_at_end.then(|| config.facts_out.clone());
    // Bound before the monitor starts: a port in use is said now, and port 0 has its number.
    #[cfg(feature = "http")]
    let bound = super::watch_http::Bound::bind(args, &mut config)?;
    #[cfg(not(feature = "http"))]
    refuse_http_flags(args)?;
    let headless_lines_dropped = Arc::clone(&config.headless_lines_dropped);
    let live = ingest::spawn(config)?;
    #[cfg(feature = "http")]
    let servers = bound.start(&live)?;
    let last = if args.headless {
        let options = HeadlessOptions { interval };
        // Lines go through a bounded queue to a writer thread: a reader that stops reading
        // never blocks ingestion, HTTP or the signals (docs/OPERATIONS.md).
        let out =
            HeadlessOutput::stdout(headless_lines_dropped).wrap_err("opening standard output")?;
        let last = headless::run(&live, options, &out)?;
        // With --facts-out the stopping ingest thread publishes the facts (none without a
        // single fact, as `replay`: the error or the note below says so).
        let stopped = live.shutdown();
        if facts_at_end.is_some() {
            // One more line, so the last one says truly how the facts write went.
            headless::write_final_line(&out, &stopped)?;
        }
        finish_output(out)?;
        report_facts_at_end(&stopped)?;
        refuse_out_of_memory(&stopped)?;
        if let Some(path) = facts_at_end.filter(|_| stopped.facts_write == FactsWrite::Idle) {
            check_lines_used(&stopped, args.from_end)
                .map_err(|error| eyre!("{error}; no facts written to {}", path.display()))?;
            eprintln!(
                "litehit: no facts written to {}: no get/request event was read",
                path.display()
            );
            return Ok(());
        }
        last
    } else {
        // With --facts-out the facts are written on the way out, so quitting loses nothing;
        // without, `q` asks first while some rows are in no snapshot.
        let facts_on_quit = if facts_at_end.is_some() {
            FactsOnQuit::Written
        } else {
            FactsOnQuit::AskFirst
        };
        let options = TuiOptions {
            fps: args.fps,
            facts_on_quit,
            color: crate::cli::defaults_file::use_color(
                args.color,
                std::env::var_os("NO_COLOR").as_deref(),
            ),
            demo: None,
        };
        litehit_tui::run(&live, options)?;
        // The snapshot of the stopped ingest thread: it read an unterminated last line on
        // the way out, if everything else was read, and wrote --facts-out.
        let last = live.shutdown();
        print_summary(&last);
        if facts_at_end.is_some() {
            report_facts_at_end(&last)?;
        }
        refuse_out_of_memory(&last)?;
        if let Some(path) = facts_at_end.filter(|_| last.facts_write == FactsWrite::Idle) {
            check_lines_used(&last, args.from_end)
                .map_err(|error| eyre!("{error}; no facts written to {}", path.display()))?;
            // As in `print_summary`: the terminal may be gone.
            let _ = writeln!(
                std::io::stderr(),
                "litehit: no facts written to {}: no get/request event was read",
                path.display()
            );
            return Ok(());
        }
        last
    };
    // After the ingest thread: batches it answered on the way out still reach their clients.
    #[cfg(feature = "http")]
    drop(servers);
    check_lines_used(&last, args.from_end)
}

/// Ends the headless output: waits at most `headless_output::DRAIN_WAIT` for a slow reader
/// to take the last lines, then says on stderr how many lines its reader never got.
pub(crate) fn finish_output(out: HeadlessOutput) -> color_eyre::Result<()> {
    let finished = out.finish(headless_output::DRAIN_WAIT);
    if finished.dropped_lines > 0 {
        eprintln!(
            "litehit: {} report {} dropped: standard output was not read (a stalled reader; at \
             most {} lines wait for it, and {:?} at exit)",
            finished.dropped_lines,
            if finished.dropped_lines == 1 {
                "line"
            } else {
                "lines"
            },
            headless_output::QUEUE_LINES,
            headless_output::DRAIN_WAIT
        );
    }
    finished.error.map_or(Ok(()), |message| {
        Err(eyre!("writing a report line: {message}"))
    })
}

/// Without the `http` feature: the HTTP flags name what this build lacks (the monitor still
/// follows files and standard input).
#[cfg(not(feature = "http"))]
fn refuse_http_flags(args: &WatchArgs) -> color_eyre::Result<()> {
    let given = [
        ("--listen", args.listen.is_some()),
        ("--metrics-listen", args.metrics_listen.is_some()),
        ("--listen-token-file", args.listen_token_file.is_some()),
        ("--allowed-host", !args.allowed_host.is_empty()),
        ("--max-connections", args.max_connections.is_some()),
        ("--max-body-total", args.max_body_total.is_some()),
    ];
    if let Some((flag, _)) = given.iter().find(|(_, given)| *given) {
        bail!(
            "{flag}: this litehit was built without HTTP (the `http` feature); build it with \
             the default features to take rows over HTTP or serve /metrics"
        );
    }
    Ok(())
}

/// A run whose engine ran out of memory ends with exit 1 and the message (the facts read so
/// far were written first, if asked), as `replay` does.
fn refuse_out_of_memory(last: &LiveSnapshot) -> color_eyre::Result<()> {
    match &last.out_of_memory {
        Some(message) => Err(eyre!("{message}")),
        None => Ok(()),
    }
}

/// `--policy` of `watch` and `demo`: LRU, or LRU with OPT beside it (the monitor shows
/// LRU's figures, and OPT's next to them).
pub(crate) fn live_policies(policies: CachePolicies) -> color_eyre::Result<CachePolicies> {
    if !policies.contains(CachePolicy::Lru) {
        bail!("--policy {policies}: the monitor shows LRU, and OPT beside it: --policy lru,opt");
    }
    Ok(policies)
}

/// `--facts-out`: where the facts went (stderr: stdout holds the JSON lines headless, the
/// summary in the TUI), or the error (exit 1).
fn report_facts_at_end(last: &LiveSnapshot) -> color_eyre::Result<()> {
    match &last.facts_write {
        FactsWrite::Done { path, rows, .. } => {
            eprintln!(
                "litehit: facts written to {path} ({rows} rows){}",
                headless::horizon_note(last)
            );
            if last.totals.opt_slot_hit_tokens.is_some() {
                eprintln!(
                    "litehit: OPT facts (Belady's optimal policy) written to {}",
                    litehit_core::facts::file::opt_facts_path(Path::new(path)).display()
                );
            }
            Ok(())
        }
        FactsWrite::Failed { path, message } => {
            bail!("writing the facts to {path} failed: {message}")
        }
        FactsWrite::Idle | FactsWrite::Writing { .. } => Ok(()),
    }
}

/// After the monitor ends: bad lines are named on stderr (the JSON lines or the screen may
/// not have been read), and a trace of which no line could be used is an error (exit 1)
/// rather than a run that quietly showed nothing — typically the wrong block size or format.
/// `from_end`: the run skipped what the file held, so reading no request proves nothing.
fn check_lines_used(last: &LiveSnapshot, from_end: bool) -> color_eyre::Result<()> {
    let health = &last.health;
    let skipped = (health.bad_lines > 0).then(|| {
        let last_error = health
            .last_error
            .as_ref()
            .map_or_else(String::new, |error| {
                format!("; last: line {}: {}", error.line_number, error.message)
            });
        format!(
            "{} {} skipped{last_error}",
            health.bad_lines,
            litehit_core::display::bad_lines_noun(health.bad_lines)
        )
    });
    let read_to_the_end = last.source.state == litehit_live::snapshot::FollowState::Finished;
    let nothing_usable = health.read_events == 0 && health.write_events == 0;
    if health.read_events == 0
        && ((read_to_the_end && !from_end) || (skipped.is_some() && nothing_usable))
    {
        // As `replay` says of such a trace (empty, only writes, every line bad, or another
        // format's rows that a forced format skips).
        let seen = LinesSeen {
            write_events: health.write_events,
            ..LinesSeen::default()
        };
        bail!(
            "{}: trace contains no valid Request/Get events{}",
            last.source.path,
            skipped.map_or_else(
                || format!(" ({seen}; check --format)"),
                |text| format!(" ({seen}): {text}")
            )
        );
    }
    if let Some(text) = skipped {
        // The terminal may be gone (SIGHUP): nothing to do if nobody can read this.
        let _ = writeln!(
            std::io::stderr(),
            "litehit watch {}: {text}",
            last.source.path
        );
    }
    Ok(())
}

/// The trace's format if it can be told before following it: `--format`, else the first
/// line of a trace that has one (`None` for a file still to come, or empty).
fn format_known_now(
    args: &WatchArgs,
    trace: &Path,
) -> color_eyre::Result<Option<litehit_core::formats::TraceFormat>> {
    if let Some(format) = args.lane.trace_format() {
        return Ok(Some(format));
    }
    let Some(line) = first_complete_line(trace) else {
        // Empty, missing, or its first line still being written: the ingest thread tells
        // the format from the first good line, as for lines that arrive later.
        return Ok(None);
    };
    if let Some(format) = litehit_core::formats::detect_format(&line) {
        return Ok(Some(format));
    }
    if line.trim_ascii_end() == litehit_core::facts::file::FACTS_HEADER.as_bytes()
        || super::looks_like_a_config(&line)
    {
        // Not a trace at all: say so now (the offline reader's message), as `replay` does.
        detect_trace_format(trace)?;
    }
    // A bad first line is skipped and counted like a bad line arriving later; the format
    // comes from the first good one.
    Ok(None)
}

/// The first non-blank line of `path` if it is complete (ends in a newline), as the offline
/// reader peeks it; `None` for a missing or empty file or a first line still being written.
fn first_complete_line(path: &Path) -> Option<Vec<u8>> {
    if !has_first_line(path) {
        return None;
    }
    let peeked = peek_first_line(litehit_core::formats::open_trace(path).ok()?).ok()?;
    peeked.first_line.filter(|_| peeked.first_line_complete)
}

/// Checks the source and tells its format if it can be told now ([`format_known_now`]); with
/// no file (`--listen` alone) only `--format` can tell it.
fn format_of_source(
    args: &WatchArgs,
    trace: Option<&Path>,
) -> color_eyre::Result<Option<litehit_core::formats::TraceFormat>> {
    let Some(trace) = trace else {
        if args.exit_at_eof {
            bail!(
                "--exit-at-eof needs a TRACE: rows posted to --listen have no end of file; stop \
                 the monitor with SIGTERM or Ctrl-C"
            );
        }
        return Ok(args.lane.trace_format());
    };
    refuse_unfollowable(trace, args.glob.as_deref())?;
    format_known_now(args, trace)
}

/// Which kind of [`PlanSource`] a monitor was set up from (the source itself moves into the
/// ingest thread when the format is still to come).
enum SourceKind {
    ConfigFile,
    Flags,
}

/// How the trace is followed: the directory's glob and order (when TRACE is a directory),
/// and the rotation grace.
fn follow_options(
    args: &WatchArgs,
    trace_path: &Path,
) -> color_eyre::Result<(Option<(glob::Pattern, DirectoryOrder)>, Duration)> {
    let directory = if trace_path.is_dir() {
        let text = args.glob.as_deref().unwrap_or("*");
        let pattern =
            glob::Pattern::new(text).map_err(|error| eyre!("--glob {text:?}: {error}"))?;
        let order = match args.order {
            FileOrder::Name => DirectoryOrder::Name,
            FileOrder::Mtime => DirectoryOrder::Mtime,
        };
        Some((pattern, order))
    } else {
        None
    };
    let rotation_grace = Duration::try_from_secs_f64(args.rotation_grace)
        .wrap_err("--rotation-grace is too large")?;
    Ok((directory, rotation_grace))
}

/// With no TRACE, a pool named other than the default may be the trace `--pool TRACE` took
/// as its name (one not there yet: an existing one is caught by the parser).
fn pool_took_a_name(pool: Option<&str>) -> String {
    match pool {
        Some(name) if name != crate::cli::DEFAULT_POOL_NAME => format!(
            "; --pool took '{name}' as the pool's name: write --pool=NAME or put --pool after \
             the trace"
        ),
        _ => String::new(),
    }
}

/// Where the setup comes from (a config file, read once, or the flags), the trace path and
/// the config's capacity slots.
fn plan_source(args: &WatchArgs) -> color_eyre::Result<(PlanSource, PathBuf, Vec<f64>)> {
    let source = if let Some(path) = &args.config {
        let file = ConfigFile::read(path)
            .wrap_err_with(|| format!("loading {}", path.display()))?
            .with_pool(args.lane.pool.clone());
        let config = file.config();
        super::warn_unknown_config_keys(path, &config.unknown_keys);
        let trace = args
            .trace
            .clone()
            .unwrap_or_else(|| config.trace_path.clone());
        let slots = config.capacity_gb.clone();
        (PlanSource::ConfigFile(file), trace, slots)
    } else {
        let trace = match (&args.trace, args.listen) {
            (Some(trace), _) => trace.clone(),
            // Rows come only over HTTP: no file to follow.
            (None, Some(_)) => PathBuf::new(),
            (None, None) => bail!(
                "no trace file: pass TRACE (or --config with trace_file_path, or --listen to \
                 take rows over HTTP){}",
                pool_took_a_name(args.lane.pool.as_deref())
            ),
        };
        let flags = super::single_instance_flags(&args.lane, None)?;
        (PlanSource::Flags(flags), trace, Vec::new())
    };
    Ok(source)
}

/// Resolves the arguments (config file or single-instance flags) into an ingest setup; an
/// OpenAI request log (`--format openai`) is read as the standard rows its lines become.
pub fn ingest_config(args: &WatchArgs) -> color_eyre::Result<IngestConfig> {
    super::check_thread_cap()?;
    #[cfg(not(feature = "tokenize"))]
    {
        super::refuse_openai_log(&args.lane)?;
        trace_ingest_config(args)
    }
    #[cfg(feature = "tokenize")]
    openai_ingest_config(args)
}

/// [`ingest_config`] of an OpenAI request log, or of a trace.
#[cfg(feature = "tokenize")]
fn openai_ingest_config(args: &WatchArgs) -> color_eyre::Result<IngestConfig> {
    if !super::trace::reads_openai_log(&args.lane, &args.openai)? {
        return trace_ingest_config(args);
    }
    if args.config.is_some() {
        bail!("--format openai takes the lane flags (--block-size, ...), not --config");
    }
    // Every file is read and the template rendered once here: a bad one fails at start.
    let block_size = super::trace::openai_lane(&args.lane)
        .block_size
        .unwrap_or(super::trace::DEFAULT_BLOCK_SIZE);
    let converter = Arc::new(super::trace::build_converter(
        &args.openai,
        super::trace::tenant_field(&args.lane),
        block_size,
        false,
    )?);
    let mut standard = args.clone();
    standard.lane = super::trace::openai_lane(&args.lane);
    standard.openai = crate::cli::trace_args::TokenizeFlags::default();
    let mut config = trace_ingest_config(&standard)?;
    let log = config.trace_path.clone();
    let lone_surrogates = Arc::clone(&config.lone_surrogates);
    config.line_transform = Some(LineTransform(Arc::new(move |lines| {
        let chunk = converter.convert_lines(lines, &log);
        if chunk.lone_surrogates > 0 {
            lone_surrogates.fetch_add(chunk.lone_surrogates, std::sync::atomic::Ordering::Relaxed);
        }
        chunk.rows
    })));
    config.source_format = Some(crate::cli::trace_format_arg::FormatArg::OPENAI);
    Ok(config)
}

/// `--capacity-gb`, else the config's slots.
fn typed_or_configured_slots(args: &WatchArgs, config_slots: &[f64]) -> Vec<Capacity> {
    if args.capacity_gb.is_empty() {
        config_slots
            .iter()
            .map(|&gb| Capacity::from_gb(gb))
            .collect()
    } else {
        args.capacity_gb.clone()
    }
}

/// `--lane-by` for a trace in `format`; one still to name its format is checked as a
/// standard one (`tenant`).
fn lane_by(
    lane: &crate::cli::LaneFlags,
    format: Option<litehit_core::formats::TraceFormat>,
) -> color_eyre::Result<litehit_core::formats::LaneBy> {
    lane.lane_by_for(format.unwrap_or(litehit_core::formats::TraceFormat::Standard))
        .map_err(|error| color_eyre::eyre::eyre!(error))
}

/// [`ingest_config`] of a trace.
fn trace_ingest_config(args: &WatchArgs) -> color_eyre::Result<IngestConfig> {
    let (source, trace_path, config_slots) = plan_source(args)?;
    let model = match &source {
        PlanSource::Flags(flags) => flags.model.clone(),
        PlanSource::ConfigFile(_) => None,
    };
    let follow_file = args.config.is_some() || args.trace.is_some();
    // A trace that exists already names its format, and so its native block size, as in
    // `replay`. For one still to be created (or empty), or rows still to be posted, the
    // ingest thread makes the engine once its first line names the format
    // (`engine_for_format`).
    let known = format_of_source(args, follow_file.then_some(&*trace_path))?;
    let plan = match &source {
        PlanSource::ConfigFile(file) => source
            .plan_for(known)
            .wrap_err_with(|| format!("loading {}", file.path().display()))?,
        PlanSource::Flags(_) => source.plan_for(known)?,
    };
    let source_kind = match &source {
        PlanSource::ConfigFile(_) => SourceKind::ConfigFile,
        PlanSource::Flags(_) => SourceKind::Flags,
    };
    let needs_format = match &source {
        PlanSource::ConfigFile(file) => file.config().trace_format.is_none(),
        PlanSource::Flags(_) => true,
    };
    let engine_for_format = if known.is_none() && needs_format {
        // Not there yet (or empty): the first line will name the format.
        let source = Arc::new(source);
        Some(EngineForFormat(Arc::new(move |format| {
            source
                .plan_for(Some(format))
                .map(|plan| plan.engine)
                .map_err(|error| error.to_string())
        })))
    } else {
        if let (Some(format), PlanSource::Flags(_)) = (known, &source) {
            super::warn_assumed_kvcm_key_size(format, &args.lane);
        }
        None
    };
    let engine = plan.engine;
    let format = match &source_kind {
        SourceKind::ConfigFile => plan.trace_format,
        SourceKind::Flags => plan.trace_format.or(known),
    };
    if args.exit_at_eof && trace_path != Path::new("-") && !trace_path.exists() {
        // Without --exit-at-eof the monitor waits for the file to appear; with it, a missing
        // file is most likely a typo.
        bail!("{}: no such file", trace_path.display());
    }
    let slots = typed_or_configured_slots(args, &config_slots);
    // Slots are compared as block counts at the lanes' block bytes once they are known (a
    // trace still to name its format may change them: the ingest thread checks them again
    // when its first line does).
    litehit_live::check_slots(&slots, engine_for_format.is_none().then_some(&engine.lanes))
        .map_err(|error| eyre!(error))?;
    let (directory, rotation_grace) = follow_options(args, &trace_path)?;
    let mut config = IngestConfig::new(trace_path, engine);
    config.model = model;
    config.directory = directory;
    config.rotation_grace = rotation_grace;
    config.max_line_bytes = args.line_cap.max_line_bytes;
    if !slots.is_empty() {
        config.slots = slots;
    }
    // `--format` wins over a config's `trace_format`, as in `replay`.
    config.format = args.lane.trace_format().or(format);
    config.lane_by = lane_by(&args.lane, config.format)?;
    if config.format.is_none() {
        // Checked again when the first line names the format, as `replay` checks it.
        config.lane_by_spec.clone_from(&args.lane.lane_by);
    }
    config.engine_for_format = engine_for_format;
    config.start_at = if args.from_end {
        StartAt::End
    } else {
        StartAt::Beginning
    };
    let facts_out = args
        .facts_out
        .clone()
        .unwrap_or_else(|| PathBuf::from(litehit_core::facts::file::FACTS_FILE_NAME));
    config.facts_out = litehit_core::facts::file::facts_snapshot_path(&facts_out);
    config.facts_out_is_default = args.facts_out.is_none();
    config.follow_file = follow_file;
    config.memory_horizon = args.memory_horizon;
    config.engine_rule = args.engine;
    config.engine_pool = args.engine_pool.pool();
    if let Some(pool) = config.engine_pool {
        pool.slot_capacity(&config.engine.lanes.block_geometry())?;
    }
    config.engine_metrics = engine_endpoints(args)?;
    // On the monitor's interval (the headless lines'), at least every 100 ms.
    config.engine_metrics_interval = std::time::Duration::from_secs_f64(args.interval.max(0.1));
    config.cache_policies = live_policies(args.policy)?;
    // The same grammar and tier bands as `query --tiers`.
    config.tiers = super::query::tier_plan(&args.tier_args)?;
    // `query --quota-total`'s request, planned live by the same planner.
    config.quota = args.quota.request();
    // The write probe only for a --facts-out given: nothing is written where nothing was
    // asked (a service's cwd may be read-only; `s` to the default then says why it failed).
    check_facts_out(
        &config.facts_out,
        follow_file.then_some(&*config.trace_path),
        args.facts_out.is_some(),
    )?;
    // On quit (or SIGTERM / SIGHUP) in the TUI, at the end of input headless.
    config.facts_at_end = args.facts_out.is_some();
    // Facts are kept (spilled) only when something can read them: --facts-out, or `s`.
    config.retain_facts = !args.no_facts && (!args.headless || args.facts_out.is_some());
    // The spill waits beside --facts-out (the disk it takes is where the facts go); without
    // one (the TUI's `s` to the default), in the system temp directory, not the cwd.
    config.spill_dir = spill_dir(args.spill_dir.as_deref(), args.facts_out.is_some());
    if !args.headless {
        // Headless has no screen to refresh: --fps does not apply (nor is it checked).
        config.frame_period = frame_period(args.fps)?;
    }
    config.window_ns = i64::try_from(seconds("--window-seconds", args.window_seconds)?.as_nanos())
        .wrap_err("--window-seconds is too large")?;
    config.exit_at_eof = args.exit_at_eof;
    Ok(config)
}

/// `--engine-metrics`, each resolved and checked now (loopback and private addresses only,
/// unless `--engine-metrics-any-address`).
fn engine_endpoints(
    args: &WatchArgs,
) -> color_eyre::Result<Vec<litehit_live::engine_metrics::EngineEndpoint>> {
    args.engine_metrics
        .iter()
        .map(|text| {
            litehit_live::engine_metrics::EngineEndpoint::parse(
                text,
                args.engine_metrics_any_address,
            )
            .map_err(|reason| eyre!("--engine-metrics: {reason}"))
        })
        .collect()
}

/// Where the facts spill waits: `--spill-dir`, else beside `--facts-out` (`None`), else the
/// system temp directory (`$TMPDIR`, else `/tmp`): nothing is written where nothing was asked.
pub(crate) fn spill_dir(spill_dir: Option<&Path>, facts_out_given: bool) -> Option<PathBuf> {
    match spill_dir {
        Some(dir) => Some(dir.to_path_buf()),
        None if facts_out_given => None,
        None => Some(std::env::temp_dir()),
    }
}

/// Creates the directory `--facts-out` publishes in when it is missing (a path ending in `/`,
/// or a file in a new directory), failing now with the path named if it cannot be.
fn create_facts_out_directory(
    args: &WatchArgs,
) -> color_eyre::Result<Option<litehit_core::facts::file::CreatedDirs>> {
    let Some(facts_out) = &args.facts_out else {
        return Ok(None);
    };
    if litehit_core::facts::file::is_standard_output(facts_out) {
        return Ok(None); // refused by `check_facts_out`, with the reason
    }
    let facts_path = litehit_core::facts::file::facts_snapshot_path(facts_out);
    litehit_core::facts::file::create_directory_of(&facts_path)
        .map(Some)
        .map_err(|error| eyre!(error))
        .wrap_err_with(|| format!("--facts-out {}", facts_out.display()))
}

/// Where `s` writes the facts snapshot (`watch` and `demo`): not standard output, where the
/// monitor draws (or prints JSON lines), and not the trace being followed.
/// `probe_write`: also create (and remove) a temp file there now, for a destination the
/// user named (never for the default, which a run may never write).
pub(crate) fn check_facts_out(
    facts_out: &Path,
    trace_path: Option<&Path>,
    probe_write: bool,
) -> color_eyre::Result<()> {
    if litehit_core::facts::file::is_standard_output(facts_out) {
        bail!(
            "--facts-out {}: that is standard output, where the monitor draws; name a file",
            facts_out.display()
        );
    }
    // Said now, not when `s` is pressed (or a headless run ends) with the facts at stake.
    let directory = litehit_core::facts::file::directory_of(facts_out);
    if !directory.is_dir() {
        bail!(
            "--facts-out {}: {} {}",
            facts_out.display(),
            directory.display(),
            if directory.exists() {
                "is not a directory"
            } else {
                "does not exist"
            }
        );
    }
    if trace_path.is_some_and(|trace_path| super::same_file(facts_out, trace_path)) {
        bail!(
            "--facts-out {}: that is the trace being watched; a snapshot would replace it",
            facts_out.display()
        );
    }
    if let Some(trace_path) = trace_path {
        super::refuse_temp_input(trace_path)?;
    }
    if !probe_write {
        return Ok(());
    }
    // A read-only directory is found now too: a temp file is created there and removed.
    litehit_core::facts::file::check_publishable(facts_out)
        .map_err(|error| eyre!(error))
        .wrap_err_with(|| format!("--facts-out {}", facts_out.display()))?;
    Ok(())
}

/// `--fps` (of `watch` and `demo`) as the period between snapshots: positive (0 would never
/// redraw, NaN cannot be a period), and kept within 0.5–120 per second.
pub(crate) fn frame_period(fps: f64) -> color_eyre::Result<Duration> {
    if !(fps.is_finite() && fps > 0.0) {
        bail!("--fps: expected a positive number of refreshes per second, found {fps}");
    }
    Ok(Duration::from_secs_f64(1.0 / fps.clamp(0.5, 120.0)))
}

/// The slots the monitor starts with, before any block size is known: the one slot policy
/// ([`litehit_core::slots`]) the defaults file and the add-slot dialog apply too.
pub fn check_slots(slots: &[Capacity]) -> color_eyre::Result<()> {
    litehit_live::check_slots(slots, None).map_err(|error| eyre!(error))
}

/// Whether `path` is a file with at least one byte (so its format can be told now).
fn has_first_line(path: &Path) -> bool {
    std::fs::metadata(path).is_ok_and(|metadata| metadata.is_file() && metadata.len() > 0)
}

/// `watch` follows a regular plain-text file as it grows. Refused with what to do instead:
/// standard input and pipes (`<(cmd)`, FIFOs: they cannot be followed, nor read twice — even
/// peeking at their magic bytes would eat them), directories, and compressed traces (a
/// compressed stream cannot be followed meaningfully; its bytes would all be bad lines).
fn refuse_unfollowable(path: &Path, glob: Option<&str>) -> color_eyre::Result<()> {
    if path == Path::new("-") {
        return if glob.is_some() {
            Err(eyre!("--glob applies to a directory, not standard input"))
        } else {
            Ok(()) // a stream, read until its writer closes it
        };
    }
    let metadata = std::fs::metadata(path).ok();
    if metadata.as_ref().is_some_and(std::fs::Metadata::is_dir) {
        return Ok(()); // its files are followed
    }
    if glob.is_some() {
        bail!(
            "{}: --glob needs a directory to follow (watch DIR --glob 'PATTERN')",
            path.display()
        );
    }
    if metadata.is_none() {
        // A trace still to be created is waited for; one in a directory that does not exist
        // is a typo far more often than a directory about to appear.
        let directory = litehit_core::facts::file::directory_of(path);
        if !directory.is_dir() {
            bail!(
                "{}: the directory {} does not exist (watch waits for a trace file that is not \
                 there yet, but in an existing directory)",
                path.display(),
                directory.display()
            );
        }
    }
    if metadata.as_ref().is_some_and(|meta| !meta.is_file()) {
        bail!(
            "{}: watch follows a growing regular file or a directory; for a pipe or a device, \
             run `litehit watch - < {}` (standard input)",
            path.display(),
            path.display()
        );
    }
    let by_name = Compression::from_extension(path);
    let by_content = std::fs::File::open(path)
        .and_then(|mut file| read_magic(&mut file))
        .map_or(Compression::None, |magic| Compression::from_magic(&magic));
    if by_name != Compression::None || by_content != Compression::None {
        bail!(
            "{}: watch follows a growing plain-text trace and does not decompress; \
             replay a compressed trace with `litehit replay` instead",
            path.display()
        );
    }
    Ok(())
}

/// A positive, finite number of seconds.
pub(super) fn seconds(flag: &str, value: f64) -> color_eyre::Result<Duration> {
    if value.is_finite() && value > 0.0 {
        Duration::try_from_secs_f64(value).wrap_err_with(|| format!("{flag} {value}"))
    } else {
        Err(eyre!(
            "{flag}: expected a positive number of seconds, found {value}"
        ))
    }
}

/// After the terminal is restored: what the monitor saw.
pub fn print_summary(last: &Arc<LiveSnapshot>) {
    // The terminal may be gone (SIGHUP when it closed): a summary nobody can read is not an
    // error, and `print!` would panic on it.
    let _ = std::io::stdout().write_all(headless::summary_text(last).as_bytes());
}
