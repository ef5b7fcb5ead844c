//! `litehit replay`: trace → engine → `litehit_facts.csv`, published atomically.

use std::fs::File;
use std::io::{IsTerminal, Read};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use color_eyre::eyre::{Result, WrapErr as _, bail, eyre};

use crate::cli::ReplayArgs;
use crate::output::summary::LaneSummary;
use litehit_core::config::{self, ReplayConfig};
use litehit_core::engine::pipeline::{LinesSeen, PipelineTotals, replay_stream_by_policy};
use litehit_core::engine::{CachePolicies, CachePolicy, Engine, EngineConfig, Policy};
use litehit_core::facts::file::{FactsFileFormat, FactsFileWriter};
use litehit_core::formats::{LaneBy, LineParser, ParseOptions, TraceFormat};
use litehit_core::projector::Capacity;

use litehit_live::signals::{SecondSignal, StopSignals};

use super::{OpenedTrace, open_and_detect};

/// Ctrl-C (SIGINT), SIGTERM or SIGHUP during a replay: it stops at the next chunk, removes
/// its temp file and exits with 128 + the signal, like a process the signal ended; a second
/// signal ends it at once (`litehit_live::signals`).
#[derive(Debug, thiserror::Error)]
#[error("interrupted by signal {signal}; nothing was published")]
pub struct Interrupted {
    pub signal: i32,
}

/// Watches for the stop signals while it lives.
struct InterruptWatch {
    signals: StopSignals,
}

impl InterruptWatch {
    fn install() -> Result<Self> {
        Ok(Self {
            signals: StopSignals::install(SecondSignal::Exits)?,
        })
    }

    /// The signal received, if any.
    fn received(&self) -> Option<i32> {
        self.signals.received()
    }

    /// Ends the process if a signal is not acted on within [`STUCK_READ_GRACE`]: the replay
    /// checks for one between chunks, and a read from a terminal or an idle pipe (`replay -`)
    /// can wait for input forever. `discard` removes what the run wrote first. Disarmed when
    /// the returned guard drops (before publishing).
    /// Fails when its thread cannot start (out of memory or threads).
    fn end_stuck_reads(&self, discard: impl FnOnce() + Send + 'static) -> Result<StuckReadGuard> {
        let signal = self.signals.watcher();
        let disarmed = Arc::new(AtomicBool::new(false));
        let thread = {
            let disarmed = Arc::clone(&disarmed);
            std::thread::Builder::new()
                .name("litehit-signals".into())
                .spawn(move || {
                    let mut since: Option<std::time::Instant> = None;
                    while !disarmed.load(Ordering::Relaxed) {
                        // Parked, so that disarming (which unparks) never waits out a nap.
                        std::thread::park_timeout(std::time::Duration::from_millis(50));
                        let Some(number) = signal.received() else {
                            continue;
                        };
                        let first_seen = *since.get_or_insert_with(std::time::Instant::now);
                        if first_seen.elapsed() >= STUCK_READ_GRACE
                            && !disarmed.load(Ordering::Relaxed)
                        {
                            discard();
                            eprintln!("litehit: {}", Interrupted { signal: number });
                            std::process::exit(128 + number);
                        }
                    }
                })
                .wrap_err("starting the signal watch thread")?
        };
        Ok(StuckReadGuard {
            disarmed,
            thread: Some(thread),
        })
    }
}

/// How long a signal may wait for the replay loop before the process ends anyway.
const STUCK_READ_GRACE: std::time::Duration = std::time::Duration::from_millis(500);

/// Keeps [`InterruptWatch::end_stuck_reads`] armed while it lives.
struct StuckReadGuard {
    disarmed: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Drop for StuckReadGuard {
    fn drop(&mut self) {
        self.disarmed.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            thread.thread().unpark();
            let _ = thread.join();
        }
    }
}

/// Everything a replay needs, resolved from a config file or from flags.
struct ReplayPlan {
    trace_path: PathBuf,
    /// The trace, opened once (its first line was read to detect the format, and is read
    /// again from here): a pipe cannot be opened twice.
    trace: Box<dyn Read + Send>,
    /// Where the facts are published.
    facts_path: PathBuf,
    /// In which layout.
    facts_format: FactsFileFormat,
    format: TraceFormat,
    engine: EngineConfig,
    worker_count: usize,
    /// `--max-line-bytes`: a longer line stops the replay.
    max_line_bytes: u64,
    /// `--shard K/N`: only these instances are replayed.
    shard: Option<litehit_core::engine::shard::Shard>,
    /// `--model`, resolved: named in the summary.
    model: Option<config::ModelKvSize>,
    /// `--lane-by`: what each row's lane is.
    lane_by: LaneBy,
}

pub fn run(args: &ReplayArgs) -> Result<()> {
    #[cfg(feature = "tokenize")]
    if super::trace::reads_openai_log(&args.lane, &args.openai)? {
        return run_openai(args, &args.openai);
    }
    #[cfg(not(feature = "tokenize"))]
    super::refuse_openai_log(&args.lane)?;
    let plan = resolve_plan(args)?;
    let started = Instant::now();
    let trace_path = plan.trace_path.clone();
    let trace_format = plan.format;
    let model = plan.model.clone();
    let mut comparison = litehit_report::EngineComparison::new(args.engine_pool.pool())
        .without_pool_lane(plan.engine.pool.clone());
    if let Some(report) = &args.observed_report {
        check_observed_report(report, &plan)?;
        comparison = comparison.with_request_report();
    }
    let (totals, engine, published) = replay_plan(
        plan,
        (args.memory_horizon, args.engine, args.policy),
        !args.quiet && std::io::stderr().is_terminal(),
        &mut comparison,
    )?;
    let facts_path = published[0].1.clone();
    if let Some(report) = &args.observed_report {
        if !comparison.has_observations() {
            eprintln!(
                "litehit: warning: --observed-report {}: no request carried the engine's \
                 cached_tokens, so the report is empty",
                report.display()
            );
        }
        let gaps = comparison.request_gaps();
        litehit_core::facts::file::write_atomically(report, |out| {
            crate::output::observed_report::write_observed_report(&gaps, out)
                .map_err(|error| eyre!(error))
        })
        .wrap_err_with(|| format!("writing --observed-report {}", report.display()))?;
    }
    if let Some(shard) = args.shard
        && let Some(note) = empty_shard_note(&engine, shard, &facts_path)
    {
        eprintln!("litehit: note: {note}");
    }
    if let Some(first) = totals.first_ignored_line {
        // Skipped as upstream's converter does, but a misspelt type should not go unseen.
        eprintln!(
            "litehit: warning: {}: {} {} of other event types than GetCacheLocation, \
             StartWriteCache and FinishWriteCache skipped (the first: line {first})",
            trace_path.display(),
            totals.ignored_lines,
            if totals.ignored_lines == 1 {
                "line"
            } else {
                "lines"
            },
        );
    }
    super::warn_implausible_kv_sizes(
        engine
            .lanes()
            .iter()
            .map(|lane| (lane.spec().block_bytes, lane.spec().block_size_tokens)),
    );
    if !args.quiet {
        let summaries: Vec<LaneSummary> = engine.lanes().iter().map(LaneSummary::of).collect();
        eprint!(
            "{}",
            crate::output::summary::render_replay_summary_of(
                &summaries,
                (trace_format, totals.bytes, args.converted_from),
                started.elapsed(),
                &published
                    .iter()
                    .map(|(policy, path)| (*policy, path.as_path()))
                    .collect::<Vec<_>>()
            )
        );
        if let Some(model) = &model {
            eprint!("{}", crate::output::summary::render_model(model));
        }
        if args.engine != litehit_core::facts::EngineRule::Ideal {
            eprintln!(
                "engine: {} rules: a prompt never hits its last token (at most ⌊(input_len − 1) \
                 / block size⌋ blocks)",
                args.engine.name()
            );
        }
        eprint!(
            "{}",
            crate::output::summary::render_engine_comparison(&comparison)
        );
    }
    Ok(())
}

/// `--observed-report FILE`, checked before any work: not an input or the facts, and
/// publishable, so a replay that fails at its last step publishes no facts.
fn check_observed_report(report: &Path, plan: &ReplayPlan) -> Result<()> {
    if super::same_file(report, &plan.trace_path) || super::same_file(report, &plan.facts_path) {
        bail!(
            "--observed-report {}: that is the trace or the facts file; name another file",
            report.display()
        );
    }
    litehit_core::facts::file::check_publishable(report)
        .wrap_err_with(|| format!("--observed-report {}", report.display()))
}
#[cfg(feature = "tokenize")]
/// `replay LOG --tokenizer ..`: the log is converted by the code of `litehit trace` into a
/// temporary standard trace, which is then replayed as any other.
fn run_openai(args: &ReplayArgs, flags: &crate::cli::trace_args::TokenizeFlags) -> Result<()> {
    if args.out.is_none() {
        bail!(
            "--format openai replays a request log: litehit replay --format openai LOG \
             --tokenizer PATH --out DIR"
        );
    }
    let lane = super::trace::openai_lane(&args.lane);
    let block_size = lane.block_size.unwrap_or(super::trace::DEFAULT_BLOCK_SIZE);
    let converter = super::trace::build_converter(
        flags,
        super::trace::tenant_field(&args.lane),
        block_size,
        false,
    )?;
    let mut trace = tempfile::Builder::new()
        .prefix(".litehit-openai-")
        .suffix(".jsonl")
        .tempfile()
        .wrap_err("creating the temporary trace")?;
    let trace_path = trace.path().to_path_buf();
    let summary = {
        let mut out = std::io::BufWriter::new(trace.as_file_mut());
        let summary = super::trace::convert_file(
            &converter,
            &args.input,
            args.line_cap.max_line_bytes,
            &mut out,
            &trace_path,
        )?;
        std::io::Write::flush(&mut out)?;
        summary
    };
    if !args.quiet {
        eprint!(
            "{}",
            super::trace::render_summary(&summary, block_size, &args.input, None)
        );
    }
    let mut standard = args.clone();
    standard.openai = crate::cli::trace_args::TokenizeFlags::default();
    standard.input = trace_path;
    standard.lane = lane;
    standard.converted_from = Some(crate::output::summary::ConvertedInput {
        format: crate::cli::trace_format_arg::FormatArg::OPENAI,
        bytes: std::fs::metadata(&args.input).map_or(0, |metadata| metadata.len()),
    });
    run(&standard).wrap_err_with(|| format!("replaying the trace of {}", args.input.display()))
}

/// For a time-order error in a trace whose timestamps are not nanoseconds (Mooncake ms,
/// Bailian s): the two times as the trace writes them.
fn in_trace_units(
    error: &litehit_core::engine::pipeline::PipelineError,
    format: TraceFormat,
) -> Option<String> {
    let litehit_core::engine::pipeline::PipelineError::Engine(
        litehit_core::engine::EngineError::OutOfOrder {
            timestamp_ns,
            previous_timestamp_ns,
            ..
        },
    ) = error
    else {
        return None;
    };
    let (field, unit, ns_per_unit) = format.timestamp_field()?;
    let in_units = |ns: i64| ns as f64 / ns_per_unit as f64;
    Some(format!(
        " (`{field}` {} {unit} after {} {unit})",
        in_units(*timestamp_ns),
        in_units(*previous_timestamp_ns)
    ))
}

fn resolve_plan(args: &ReplayArgs) -> Result<ReplayPlan> {
    // `--workers`, else the config's count, else LITEHIT_THREADS, else one per core.
    let worker_count = |configured: Option<usize>| -> Result<usize> {
        let explicit = args.workers.or(configured).map(|n| n.max(1));
        Ok(litehit_core::threads::available(explicit.and_then(std::num::NonZeroUsize::new))?.get())
    };
    let facts_format = facts_format(args)?;
    if let Some(out) = &args.out {
        let facts_path = litehit_core::facts::file::replay_facts_path(out, facts_format);
        if facts_path != *out && std::fs::metadata(out).is_ok_and(|metadata| !metadata.is_dir()) {
            bail!(
                "{}: is a file; --out names a directory ({} goes in it) or a file ending in \
                 .csv or .parquet",
                out.display(),
                facts_format.file_name()
            );
        }
        let OpenedTrace {
            reader,
            format: detected,
        } = open_and_detect(&args.input, args.lane.trace_format())?;
        let flags = super::single_instance_flags(&args.lane, None)?;
        let model = flags.model.clone();
        let plan = config::PlanSource::Flags(flags).plan_for(Some(detected))?;
        super::warn_assumed_kvcm_key_size(detected, &args.lane);
        let format = plan.trace_format.unwrap_or(detected);
        let lane_by = args
            .lane
            .lane_by_for(format)
            .map_err(|error| eyre!(error))?;
        return Ok(ReplayPlan {
            trace_path: args.input.clone(),
            trace: reader,
            facts_path,
            facts_format,
            format,
            engine: plan.engine,
            worker_count: worker_count(None)?,
            max_line_bytes: args.line_cap.max_line_bytes,
            shard: args.shard,
            model,
            lane_by,
        });
    }
    if args.lane.any_lane_parameter() {
        bail!(
            "lane flags (--block-size, --block-bytes, --ttl-seconds, ...) apply to `litehit replay TRACE --out DIR`; \
             with a config file the file sets them"
        );
    }
    let config_file = config::ConfigFile::read(&args.input)
        .map_err(|error| {
            if args.input.extension().is_none_or(|e| e != "json") && args.input.is_file() {
                // Most likely a trace: say how to replay one first, then why it is no config.
                eyre!(
                    "to replay a trace without a config file, add --out DIR (read as a config: \
                 {error})"
                )
            } else {
                eyre!("{error}")
            }
        })?
        .with_pool(args.lane.pool.clone());
    let ReplayConfig {
        trace_path,
        output_dir,
        trace_format,
        pipeline_worker_count,
        unknown_keys,
        ..
    } = config_file.config().clone();
    super::warn_unknown_config_keys(&args.input, &unknown_keys);
    if trace_path != Path::new("-") && !trace_path.exists() {
        bail!(
            "{}: trace_file_path {}: no such file (a config's paths are relative to the \
             working directory, as upstream's)",
            args.input.display(),
            trace_path.display()
        );
    }
    let OpenedTrace { reader, format } =
        open_and_detect(&trace_path, args.lane.trace_format().or(trace_format))?;
    // The block size a config leaves out follows the format the trace is read in, as it
    // does when the config names the format.
    let engine = config::PlanSource::ConfigFile(config_file)
        .plan_for(Some(format))?
        .engine;
    Ok(ReplayPlan {
        trace_path,
        trace: reader,
        facts_path: output_dir.join(facts_format.file_name()),
        facts_format,
        format,
        engine,
        worker_count: worker_count(pipeline_worker_count)?,
        max_line_bytes: args.line_cap.max_line_bytes,
        shard: args.shard,
        model: None,
        lane_by: LaneBy::Instance,
    })
}

/// Each published facts file with its policy, the primary policy's first.
type Published = Vec<(CachePolicy, PathBuf)>;

/// One facts writer per policy: the primary policy's facts at `facts_path`, OPT's beside
/// LRU's when both are computed, in the same file format.
struct PolicyWriters {
    policies: Vec<CachePolicy>,
    /// In a cell: the row and progress callbacks share it (both on one thread).
    writers: std::cell::RefCell<Vec<FactsFileWriter>>,
}

impl PolicyWriters {
    fn create(
        policies: CachePolicies,
        (facts_path, format): (&Path, FactsFileFormat),
        trace_path: &Path,
    ) -> Result<Self> {
        let mut destinations = vec![(policies.primary(), facts_path.to_path_buf())];
        if policies == CachePolicies::BOTH {
            destinations.push((
                CachePolicy::Opt,
                litehit_core::facts::file::opt_facts_path(facts_path),
            ));
        }
        let mut writers = Vec::with_capacity(destinations.len());
        for (_, path) in &destinations {
            if super::same_file(path, trace_path) {
                bail!(
                    "{}: the facts would replace the trace being replayed; choose another --out",
                    path.display()
                );
            }
            writers.push(FactsFileWriter::create_file(path, format)?);
        }
        Ok(Self {
            policies: destinations.into_iter().map(|(policy, _)| policy).collect(),
            writers: std::cell::RefCell::new(writers),
        })
    }

    /// Removes every temp file when the process ends on a stuck read.
    fn discard_on_exit(&self) -> impl FnOnce() + Send + 'static + use<> {
        let discards: Vec<Box<dyn FnOnce() + Send>> = self
            .writers
            .borrow()
            .iter()
            .map(FactsFileWriter::discard_on_exit)
            .collect();
        move || {
            for discard in discards {
                discard();
            }
        }
    }

    fn append(&self, policy: CachePolicy, row: &litehit_core::facts::FactRow<'_>) {
        if let Some(index) = self.policies.iter().position(|p| *p == policy) {
            self.writers.borrow_mut()[index].push(row);
        }
    }

    /// Writes the rows buffered past each writer's batch size.
    fn write_full_batches(&self) -> Result<(), litehit_core::facts::file::FactsError> {
        for writer in self.writers.borrow_mut().iter_mut() {
            writer.flush_full()?;
        }
        Ok(())
    }

    /// Writes what is left and publishes every file.
    fn commit(self) -> Result<Published> {
        let mut published = Vec::with_capacity(self.policies.len());
        for (writer, policy) in self.writers.into_inner().into_iter().zip(self.policies) {
            published.push((policy, writer.commit()?));
        }
        Ok(published)
    }
}

/// `--facts-format`, else the extension of the file `--out` names, else CSV; a flag the
/// named file's extension contradicts is refused.
fn facts_format(args: &ReplayArgs) -> Result<FactsFileFormat> {
    let named = args.out.as_deref().and_then(|out| {
        let facts_path = litehit_core::facts::file::replay_facts_path(out, FactsFileFormat::Csv);
        (facts_path == out).then(|| FactsFileFormat::of_path(out))
    });
    let flag = match args.facts_format.as_deref() {
        None => None,
        Some("parquet") => Some(FactsFileFormat::Parquet),
        Some(_) => Some(FactsFileFormat::Csv),
    };
    match (flag, named) {
        (Some(flag), Some(named)) if flag != named => bail!(
            "--facts-format {} and --out {}: the file's extension says {}; name a .{} file or a \
             directory",
            flag.extension(),
            args.out.as_deref().unwrap_or(Path::new("")).display(),
            named.extension(),
            flag.extension()
        ),
        (flag, named) => Ok(flag.or(named).unwrap_or_default()),
    }
}

/// Replays the plan and publishes the facts, one file per policy (the primary one first);
/// nothing is published on any error.
fn replay_plan(
    plan: ReplayPlan,
    (memory_horizon, engine_rule, policies): (
        Option<Capacity>,
        litehit_core::facts::EngineRule,
        CachePolicies,
    ),
    show_progress: bool,
    comparison: &mut litehit_report::EngineComparison,
) -> Result<(PipelineTotals, Engine, Published)> {
    // The worker count caps the lane threads too (`--workers`, the config, LITEHIT_THREADS or
    // the cores), as it does the parse workers.
    let mut engine = Engine::new(plan.engine.clone(), Policy::FailFast)?
        .without_capacity_curves()
        .with_engine_rule(engine_rule)
        .with_threads(
            std::num::NonZeroUsize::new(plan.worker_count).unwrap_or(std::num::NonZeroUsize::MIN),
        );
    if let Some(horizon) = memory_horizon {
        engine = engine.with_memory_horizon(horizon);
    }
    engine = engine.with_cache_policies(policies)?;
    if let Some(shard) = plan.shard {
        if let Some(pool) = &plan.engine.pool {
            bail!("{}", pool_with_shard(pool, shard));
        }
        engine = engine.with_shard(shard);
    }
    let parser = LineParser::new(
        plan.format,
        ParseOptions {
            trace_block_size_tokens: plan.engine.trace_block_size_tokens,
            lane_by: plan.lane_by,
        },
    );
    let reader = plan.trace;
    super::refuse_temp_input(&plan.trace_path)?;
    let writers = PolicyWriters::create(
        policies,
        (&plan.facts_path, plan.facts_format),
        &plan.trace_path,
    )?;
    let interrupts = InterruptWatch::install()?;
    let stuck_reads = interrupts.end_stuck_reads(writers.discard_on_exit())?;
    let mut interrupted = None;
    let progress = show_progress.then(|| progress_bar(&plan.trace_path));
    let mut write_error = None;
    let replay = replay_stream_by_policy(
        reader,
        &parser,
        &mut engine,
        plan.worker_count,
        plan.max_line_bytes,
        &mut |policy, row| {
            // The engine comparison is LRU's (the `engine` slot, the effective capacity),
            // with OPT at the engine slot beside it.
            match policy {
                CachePolicy::Lru => comparison.add_row(&row, row.observed_cached_tokens),
                CachePolicy::Opt => comparison.add_opt_row(&row, row.observed_cached_tokens),
            }
            writers.append(policy, &row);
        },
        &mut |totals| {
            if let Some(signal) = interrupts.received() {
                interrupted = Some(signal);
                return Err(std::io::Error::other("interrupted"));
            }
            if let Some(bar) = &progress {
                bar.set_position(totals.bytes);
                let seconds = bar.elapsed().as_secs_f64().max(1e-3);
                bar.set_message(format!("{:.0} req/s", totals.lines as f64 / seconds));
            }
            if let Err(error) = writers.write_full_batches() {
                let message = error.to_string();
                write_error = Some(error);
                return Err(std::io::Error::other(message));
            }
            Ok(())
        },
    );
    drop(stuck_reads); // the reads are done; a signal from here on is handled below
    if let Some(bar) = &progress {
        bar.finish_and_clear();
    }
    if let Some(signal) = interrupted.or_else(|| interrupts.received()) {
        // `writer` is dropped on the way out: the temp file goes with it.
        return Err(Interrupted { signal }.into());
    }
    if let Some(error) = write_error {
        return Err(error.into());
    }
    let totals = replay.map_err(|error| {
        let in_trace_units = in_trace_units(&error, plan.format).unwrap_or_default();
        let text = super::chain_text(&error);
        eyre!("{}: {text}{in_trace_units}", plan.trace_path.display())
    })?;
    if engine.stats().read_events == 0 {
        // Say what the lines were: only writes, or another format's events (wrong --format).
        let seen = LinesSeen::of_replay(&totals, engine.stats().write_events);
        bail!(
            "{}: trace contains no valid Request/Get events ({seen}); no facts written",
            plan.trace_path.display()
        );
    }
    let published = writers.commit()?;
    Ok((totals, engine, published))
}

/// `replay --shard K/N` that replayed no row: every instance of the trace is in other
/// shards (with one instance, as in a Mooncake trace without instance ids, all but one shard
/// are empty). Not an error (the N files still add up to the whole), but worth a word.
fn empty_shard_note(
    engine: &Engine,
    shard: litehit_core::engine::shard::Shard,
    facts_path: &Path,
) -> Option<String> {
    if engine.lanes().iter().any(|lane| lane.requests() > 0) {
        return None;
    }
    let (index, count) = (shard.index, shard.count);
    let outside = engine.instances_outside_shard();
    let one = if outside == 1 {
        "; a trace with one instance (rows without instance ids, as Mooncake's, are all one) \
         cannot be split by --shard: replay it whole"
    } else {
        ""
    };
    Some(format!(
        "shard {index}/{count} got none of the trace's {outside} {} (an instance's shard is the \
         FNV-1a hash of its id mod {count}), so {} has no rows{one}",
        if outside == 1 {
            "instance"
        } else {
            "instances"
        },
        facts_path.display()
    ))
}

/// Why `--pool` and `--shard` are refused together: the pool is fed by every row, so it
/// belongs to no one shard; giving it to shard 0 would make that task replay the whole fleet's
/// traffic once more (and its facts depend on which task ran it). The exact, simple way out is
/// one more task: `--instance NAME` routes every row to one lane called NAME, which is the
/// pool lane row for row.
fn pool_with_shard(pool: &str, shard: litehit_core::engine::shard::Shard) -> String {
    format!(
        "--pool {pool:?} cannot be combined with --shard {}/{}: the shared pool is fed by every \
         row, so no shard holds it. Replay the shards without --pool, and the pool as one more \
         task: `litehit replay TRACE --out DIR --instance {pool}` (every row in one lane named \
         {pool}, the pool lane's facts row for row); `query`/`mrc` read all the files together",
        shard.index, shard.count
    )
}

fn progress_bar(trace_path: &Path) -> indicatif::ProgressBar {
    // Standard input (`-`; not a file that happens to be named `-`) and pipes have no size
    // to count towards.
    let plain_size = (trace_path != Path::new("-"))
        .then(|| File::open(trace_path).and_then(|f| f.metadata()).ok())
        .flatten()
        .filter(std::fs::Metadata::is_file)
        .filter(|_| {
            // Compressed inputs report decompressed bytes: no known total.
            !trace_path
                .extension()
                .is_some_and(|e| e == "gz" || e == "zst")
        })
        .map(|m| m.len());
    let bar = match plain_size {
        Some(total) => indicatif::ProgressBar::new(total).with_style(
            indicatif::ProgressStyle::with_template(
                // `wide_bar` takes what the terminal has left, so the line never wraps.
                "{spinner} replaying [{wide_bar}] {bytes}/{total_bytes} {binary_bytes_per_sec} {msg} ETA {eta}",
            )
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar())
            .progress_chars("=> "),
        ),
        None => indicatif::ProgressBar::new_spinner().with_style(
            indicatif::ProgressStyle::with_template("{spinner} replaying {bytes} {binary_bytes_per_sec} {msg}")
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_spinner()),
        ),
    };
    bar.set_draw_target(indicatif::ProgressDrawTarget::stderr_with_hz(5));
    bar
}
