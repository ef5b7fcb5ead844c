//! `litehit query`: glue from [`QueryArgs`] to [`query_facts_files`]; no analysis here.

use std::collections::HashSet;
use std::io;
use std::path::PathBuf;

use color_eyre::eyre::{WrapErr, bail, eyre};

use super::writes_over;
use crate::cli::query_args::{QueryArgs, SpanArgs, TierArgs};
use crate::output::policy_table::query_policy_table;
use crate::output::query_jsonl::{QueryOptions, query_facts_files_planned};
use crate::output::query_windows;
use litehit_core::facts::file::{is_standard_output, write_atomically};
use litehit_core::grammar::{
    GrammarError, TimePoint, parse_capacity_gb, parse_time_point, parse_warmup, parse_window_ns,
};
use litehit_report::{
    EmptySpan, PoolRule, QueryError, QueryPlan, QuerySlots, TierPlan, TimeRange, TimeSpec,
    check_span_order, pool_instance_count, query_windows_with_pool, trace_span_and_instances,
};

/// Runs the facts query: JSONL to OUT (atomically) or to stdout for `-`.
pub fn run(args: &QueryArgs) -> color_eyre::Result<()> {
    if let Some(total) = args.quota.quota_total {
        super::opt_facts(&args.opt, &[], Some("--quota-total"))?;
        return super::quota::run(args, total);
    }
    let plan = plan(args)?;
    let accounting = accounting(&plan)?;
    match plan.window_ns {
        Some(window_ns) => write_windows(&plan, accounting, window_ns),
        None => write_query(&plan, accounting),
    }
}

/// What `query` was asked, checked and in plain data, before any facts row is read.
#[derive(Debug, Clone)]
struct QueryCommandPlan {
    /// FACTS and the shards, globs expanded.
    facts_paths: Vec<PathBuf>,
    out: PathBuf,
    /// OUT is standard output (`-`, or `/dev/stdout`): written through the stdout handle,
    /// which shares the shell's file offset (`>>`) and the process's other output.
    to_stdout: bool,
    /// `--window`'s lines as CSV.
    csv: bool,
    slots: QuerySlots,
    tiers: Option<TierPlan>,
    options: QueryOptions,
    /// `--from`, `--to`, `--exclude-warmup` as typed.
    span: TimeSpec,
    /// `--window` in nanoseconds (at least 1).
    window_ns: Option<i64>,
    /// `--pool [NAME]`.
    pool: PoolRule,
    /// `--model`'s KV bytes per token: each row's block bytes (said in a note).
    kv_bytes_per_token: Option<u64>,
    /// The OPT facts read beside (`--opt`, or the siblings found); empty: none.
    opt: Vec<PathBuf>,
}

/// The plan of `args`: every check that needs no facts row.
fn plan(args: &QueryArgs) -> color_eyre::Result<QueryCommandPlan> {
    // `query FACTS 10 40`: the first capacity would silently become the output file.
    if args.out.as_os_str() != "-" && parse_capacity_gb(&args.out.to_string_lossy()).is_ok() {
        bail!(
            "OUT {} looks like a capacity: the output file comes before the capacities \
             (litehit query FACTS OUT CAPACITY_GB..., OUT - for stdout; ./{} for a file of \
             that name)",
            args.out.display(),
            args.out.display()
        );
    }
    let tiers = tier_plan(&args.tier_args)?;
    let slots = slots_for(args, tiers.is_some())?;
    let facts_paths = super::expand_facts_globs(&args.facts_paths())?;
    super::refuse_repeated_facts(&facts_paths)?;
    facts_paths
        .iter()
        .try_for_each(|path| super::refuse_temp_input(path))?;
    if let Some(input) = facts_paths
        .iter()
        .find(|input| writes_over(&args.out, input))
    {
        bail!(
            "{}: the output is a facts file being read; it would be overwritten (name another \
             OUT, or - for stdout)",
            input.display()
        );
    }
    let opt = super::opt_facts(
        &args.opt,
        &facts_paths,
        args.window.is_some().then_some("--window"),
    )?;
    if let Some(input) = opt.iter().find(|input| writes_over(&args.out, input)) {
        bail!(
            "{}: the output is an OPT facts file being read; it would be overwritten (name \
             another OUT, or - for stdout)",
            input.display()
        );
    }
    let span = time_spec(&args.span)?;
    let kv_bytes_per_token = super::facts_model(&args.model)?;
    let window_ns = args
        .window
        .as_deref()
        .map(|text| {
            parse_window_ns(text)
                .map_err(|_| eyre!("invalid --window: {text} (a duration such as 10m or 600s)"))
        })
        .transpose()?;
    Ok(QueryCommandPlan {
        to_stdout: is_standard_output(&args.out),
        out: args.out.clone(),
        csv: args.csv,
        facts_paths,
        slots,
        tiers,
        options: QueryOptions {
            summary_only: args.summary_only,
        },
        span,
        window_ns,
        pool: args.pool.rule(),
        kv_bytes_per_token,
        opt,
    })
}

/// How the rows are accounted, once trace times are resolved: the span, the trace's first
/// and last `timestamp_ns` (when a first pass read them), the pool rule (recognised by the
/// first pass, if there was one), every instance id and the rows' geometries (of the first
/// pass).
#[derive(Debug, Clone)]
struct Accounting {
    time_range: TimeRange,
    trace: Option<(i64, i64)>,
    pool: PoolRule,
    instance_ids: HashSet<String>,
    geometries: Vec<(u64, u64)>,
}

/// The accounting of `plan`: trace time needs the first (and, for a warm-up share, the last)
/// request, so a first pass over the facts when it is asked for.
fn accounting(plan: &QueryCommandPlan) -> color_eyre::Result<Accounting> {
    let (trace, pool, instance_ids, geometries) =
        if plan.span.needs_span() || plan.window_ns.is_some() {
            if plan.facts_paths.iter().any(|path| path.as_os_str() == "-") {
                bail!(
                    "trace times (--from/--to in seconds, --exclude-warmup, --window) read the \
                     facts twice; standard input cannot be: pass a file, or absolute times (ns)"
                );
            }
            first_pass(plan)?
        } else {
            (None, plan.pool.clone(), HashSet::new(), Vec::new())
        };
    let (first_ns, last_ns) = trace.unwrap_or((0, 0));
    let time_range = if plan.span == TimeSpec::default() {
        TimeRange::default()
    } else {
        plan.span.resolve(first_ns, last_ns)
    };
    check_span_order(time_range, trace.map(|(first, _)| first)).map_err(|error| eyre!(error))?;
    Ok(Accounting {
        time_range,
        trace,
        pool,
        instance_ids,
        geometries,
    })
}

/// The plain query: row lines (unless `--summary-only`) and the summaries, to OUT.
fn write_query(plan: &QueryCommandPlan, accounting: Accounting) -> color_eyre::Result<()> {
    let query_plan = QueryPlan {
        tiers: plan.tiers.clone(),
        time_range: accounting.time_range,
        pool: Some(accounting.pool),
        kv_bytes_per_token: plan.kv_bytes_per_token,
        opt: plan.opt.clone(),
    };
    let summary = if plan.to_stdout {
        query_to(plan, &query_plan, io::stdout())
            .map(|(_, summary)| summary)
            .wrap_err("facts query failed")?
    } else {
        let mut summary = None;
        write_atomically(&plan.out, |out| {
            query_to(plan, &query_plan, out).map(|(_, done)| summary = Some(done))
        })
        .map_err(|e: QueryError| eyre!(e))
        .wrap_err("facts query failed")?;
        println!("facts query done: {}", plan.out.display());
        summary.unwrap_or_default()
    };
    if let Some(table) = query_policy_table(&summary, &plan.slots) {
        // Beside the JSONL on standard output, the table goes to stderr.
        if plan.to_stdout {
            eprint!("{table}");
        } else {
            print!("{table}");
        }
    }
    super::note_lanes_in_several_files(&summary.lanes_in_several_files, &plan.facts_paths);
    super::note(summary.pool_note.as_deref());
    super::warn_implausible_kv_sizes(summary.geometries);
    Ok(())
}

/// The query of `plan`, accounted as `query_plan` says, written to `out`.
fn query_to<W: io::Write + Send>(
    plan: &QueryCommandPlan,
    query_plan: &QueryPlan,
    out: W,
) -> Result<(W, litehit_report::QuerySummary), QueryError> {
    query_facts_files_planned(
        &plan.facts_paths,
        plan.slots.clone(),
        plan.options,
        query_plan,
        out,
    )
}

/// The trace's first and last `timestamp_ns`, the pool lane, every instance id, every
/// distinct `(block_bytes, block_size_tokens)`.
type FirstPass = (
    Option<(i64, i64)>,
    PoolRule,
    HashSet<String>,
    Vec<(u64, u64)>,
);

/// The first pass over the facts: the trace's first and last `timestamp_ns`, and the pool
/// lane recognised by its rows (windows, written as the rows come, need the pool and N up
/// front; for the rest it saves the pool's second read), with every instance id.
fn first_pass(plan: &QueryCommandPlan) -> color_eyre::Result<FirstPass> {
    let facts_paths = &plan.facts_paths;
    let (span, lanes, geometries) = trace_span_and_instances(facts_paths, plan.kv_bytes_per_token)
        .wrap_err("facts query failed")?;
    super::note_lanes_in_several_files(lanes.lanes(), facts_paths);
    super::note(lanes.partial_pool_note().as_deref());
    let named = match &plan.pool {
        PoolRule::Recognise { named } => named.as_deref(),
        PoolRule::Recognised(_) => None,
    };
    let pool = lanes
        .recognise_pool(named)
        .map_err(|error| eyre!(error))
        .wrap_err("facts query failed")?;
    let instance_ids = lanes
        .lanes()
        .iter()
        .map(|lane| lane.instance_id.clone())
        .collect();
    Ok((
        span,
        PoolRule::Recognised(pool.map(str::to_owned)),
        instance_ids,
        geometries,
    ))
}

/// `query --window`: one line per window and slot (or tier, with `--tiers`), to OUT
/// (atomically) or stdout; the pool lane's rows (`--pool`) are left out of those, as in the
/// overall line, and (without `--tiers`) get their own lines at N × each slot.
fn write_windows(
    plan: &QueryCommandPlan,
    accounting: Accounting,
    window_ns: i64,
) -> color_eyre::Result<()> {
    let Accounting {
        time_range,
        trace,
        pool,
        instance_ids,
        geometries,
    } = accounting;
    let first_ns = trace.map_or(0, |(first, _)| first);
    let facts_paths = &plan.facts_paths;
    let pool_instances = pool_instance_count(facts_paths, &pool, time_range, &instance_ids)
        .wrap_err("facts query failed")?;
    let windows = query_windows_with_pool(
        facts_paths,
        plan.slots.clone(),
        plan.tiers.clone(),
        time_range,
        first_ns,
        window_ns,
        Some(pool),
        pool_instances,
        plan.kv_bytes_per_token,
    )
    .wrap_err("facts query failed")?;
    if !time_range.is_everything() && windows.is_empty() {
        return Err(eyre!(EmptySpan {
            range: time_range,
            trace,
        }))
        .wrap_err("facts query failed");
    }
    if plan.to_stdout {
        query_windows::write_windows(&windows, first_ns, plan.csv, &mut io::stdout().lock())?;
    } else {
        write_atomically(&plan.out, |out| {
            query_windows::write_windows(&windows, first_ns, plan.csv, &mut io::BufWriter::new(out))
                .map_err(QueryError::Write)
        })
        .map_err(|e: QueryError| eyre!(e))
        .wrap_err("facts query failed")?;
        println!("facts query done: {}", plan.out.display());
    }
    // As the plain query: the geometries are the first pass's, every row's.
    super::warn_implausible_kv_sizes(geometries);
    Ok(())
}

/// The slots of the query; none for `--window --tiers`, which writes one line per window and
/// tier (and refuses capacities, which it would not use). With `--tiers`, capacities are
/// optional: the tiers define the question (the summaries' per-capacity arrays are then
/// empty).
fn slots_for(args: &QueryArgs, tiered: bool) -> color_eyre::Result<QuerySlots> {
    if !(tiered && args.window.is_some()) {
        let slots = slots(args)?;
        if slots.is_empty() && !tiered {
            bail!(
                "no capacity given: pass CAPACITY_GB values and/or --capacity-blocks (or \
                 --tiers)"
            );
        }
        return Ok(slots);
    }
    if !args.capacity_gb.is_empty() || !args.capacity_blocks.is_empty() {
        bail!(
            "--window with --tiers writes one line per window and tier, not per capacity: \
             leave out the capacities (or run a second query for them)"
        );
    }
    Ok(QuerySlots::default())
}

/// The GB slots (in argument order) and the block slots.
fn slots(args: &QueryArgs) -> color_eyre::Result<QuerySlots> {
    let capacity_gb = args
        .capacity_gb
        .iter()
        .map(|arg| {
            parse_capacity_gb(arg).map_err(|error| {
                let hint = if matches!(error, GrammarError::WrongKind { .. }) {
                    "; block counts go in --capacity-blocks"
                } else {
                    ""
                };
                eyre!(
                    "invalid capacity_gb: {arg} (binary GB such as 40, 0.5 or 40GB, or TB such \
                     as 4TB; -1 or inf = unlimited{hint})"
                )
            })
        })
        .collect::<color_eyre::Result<Vec<_>>>()?;
    Ok(QuerySlots {
        capacity_gb,
        capacity_blocks: args.capacity_blocks.clone(),
    })
}

/// `--from`, `--to` and `--exclude-warmup` as typed.
pub(crate) fn time_spec(args: &SpanArgs) -> color_eyre::Result<TimeSpec> {
    let point = |flag: &str, text: &Option<String>| {
        text.as_deref()
            .map(|text| parse_time_point(text).map_err(|error| eyre!("invalid {flag}: {error}")))
            .transpose()
    };
    let (from, to) = (point("--from", &args.from)?, point("--to", &args.to)?);
    // Typed in the same kind, an inverted span needs no trace to be refused.
    let inverted = match (from, to) {
        (Some(TimePoint::TraceSeconds(from)), Some(TimePoint::TraceSeconds(to))) => from >= to,
        (Some(TimePoint::AbsoluteNs(from)), Some(TimePoint::AbsoluteNs(to))) => from >= to,
        _ => false,
    };
    if inverted {
        bail!(
            "--from {} is not before --to {}: the span between them is empty (--from is \
             its start, --to its end)",
            args.from.as_deref().unwrap_or_default(),
            args.to.as_deref().unwrap_or_default()
        );
    }
    Ok(TimeSpec {
        from,
        to,
        exclude_warmup: args
            .exclude_warmup
            .as_deref()
            .map(|text| {
                parse_warmup(text).map_err(|error| eyre!("invalid --exclude-warmup: {error}"))
            })
            .transpose()?,
    })
}

/// `--tiers` and `--tier-mode`; `None` without `--tiers`.
fn tier_plan_from(
    tiers: &[String],
    mode: litehit_core::projector::tiers::TierMode,
) -> color_eyre::Result<Option<TierPlan>> {
    if tiers.is_empty() {
        return Ok(None);
    }
    let plan = litehit_core::grammar::parse_tier_plan(tiers, mode)
        .map_err(|error| eyre!("invalid --tiers: {error}"))?;
    Ok(Some(plan))
}

/// The tier plan of `--tiers`/`--tier-mode` (after the defaults file filled them in); a
/// mode without tiers is an error, as clap's `requires` would have said before the defaults.
pub(crate) fn tier_plan(args: &TierArgs) -> color_eyre::Result<Option<TierPlan>> {
    if args.tiers.is_empty() && args.tier_mode.is_some() {
        bail!("--tier-mode needs --tiers (or `tiers` in the defaults file, docs/CONFIG.md)");
    }
    tier_plan_from(&args.tiers, args.tier_mode.unwrap_or_default().into()).map_err(|error| {
        // Tiers from the defaults file: name it, not a flag that was never typed.
        match &args.tiers_from_file {
            Some(origin) => eyre!(
                "{origin}: {}",
                error.to_string().trim_start_matches("invalid --tiers: ")
            ),
            None => error,
        }
    })
}
