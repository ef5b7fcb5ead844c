//! `litehit query`: glue from [`QueryArgs`] to [`query_facts_files`]; no analysis here.

use std::collections::HashSet;
use std::io;

use color_eyre::eyre::{WrapErr, bail, eyre};

use super::writes_over;
use crate::cli::query_args::{QueryArgs, SpanArgs, TierArgs};
use crate::output::query_jsonl::{QueryOptions, query_facts_files_planned};
use crate::output::query_windows;
use litehit_core::facts::file::{is_standard_output, write_atomically};
use litehit_core::grammar::{
    GrammarError, TimePoint, parse_capacity_gb, parse_duration_seconds, parse_time_point,
    parse_warmup,
};
use litehit_report::{
    EmptySpan, PoolRule, QueryError, QueryPlan, QuerySlots, TierPlan, TimeRange, TimeSpec,
    check_span_order, pool_instance_count, query_windows_with_pool, trace_span_and_instances,
};

/// Runs the facts query: JSONL to OUT (atomically) or to stdout for `-`.
pub fn run(args: &QueryArgs) -> color_eyre::Result<()> {
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
    let options = QueryOptions {
        summary_only: args.summary_only,
    };
    let facts_paths = super::expand_facts_globs(&args.facts_paths())?;
    super::refuse_repeated_facts(&facts_paths)?;
    facts_paths
        .iter()
        .try_for_each(|path| super::refuse_temp_input(path))?;
    // `-`, or stdout under another name (`/dev/stdout`): through the stdout handle, which
    // shares the shell's file offset (`>>`) and the process's other output.
    let to_stdout = is_standard_output(&args.out);
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
    let spec = time_spec(&args.span)?;
    let window_ns = args
        .window
        .as_deref()
        .map(|text| {
            parse_duration_seconds(text)
                .ok()
                .map(|seconds| (seconds * 1e9).floor())
                .filter(|ns| *ns >= 1.0 && *ns < 9.2e18)
                .ok_or_else(|| eyre!("invalid --window: {text} (a duration such as 10m or 600s)"))
        })
        .transpose()?;
    // Trace time needs the first (and, for a warm-up share, the last) request: a first pass.
    let (span, pool_rule, instance_ids, geometries) = if spec.needs_span() || window_ns.is_some() {
        if facts_paths.iter().any(|path| path.as_os_str() == "-") {
            bail!(
                "trace times (--from/--to in seconds, --exclude-warmup, --window) read the facts \
                 twice; standard input cannot be: pass a file, or absolute times (ns)"
            );
        }
        first_pass(args, &facts_paths)?
    } else {
        (None, args.pool.rule(), HashSet::new(), Vec::new())
    };
    let (first_ns, last_ns) = span.unwrap_or((0, 0));
    let time_range = if spec == TimeSpec::default() {
        TimeRange::default()
    } else {
        spec.resolve(first_ns, last_ns)
    };
    check_span_order(time_range, span.map(|(first, _)| first)).map_err(|error| eyre!(error))?;
    if let Some(window_ns) = window_ns {
        #[expect(clippy::cast_possible_truncation, reason = "checked below 2^63 above")]
        let window_ns = window_ns as i64;
        return write_windows(
            args,
            &facts_paths,
            (slots, tiers),
            (time_range, span, window_ns),
            (&pool_rule, &instance_ids, geometries),
        );
    }
    let plan = QueryPlan {
        tiers,
        time_range,
        pool: Some(pool_rule),
    };
    let summary = if to_stdout {
        query_facts_files_planned(&facts_paths, slots, options, &plan, io::stdout())
            .map(|(_, summary)| summary)
            .wrap_err("facts query failed")?
    } else {
        let mut summary = None;
        write_atomically(&args.out, |out| {
            query_facts_files_planned(&facts_paths, slots, options, &plan, out)
                .map(|(_, done)| summary = Some(done))
        })
        .map_err(|e: QueryError| eyre!(e))
        .wrap_err("facts query failed")?;
        println!("facts query done: {}", args.out.display());
        summary.unwrap_or_default()
    };
    super::note_lanes_in_several_files(&summary.lanes_in_several_files, &facts_paths);
    super::note(summary.pool_note.as_deref());
    super::warn_implausible_kv_sizes(summary.geometries);
    Ok(())
}

/// The trace's first and last `timestamp_ns`, the pool lane, every instance id, every
/// distinct `(block_bytes, block_size_tokens)`.
type FirstPass = (
    Option<(i64, i64)>,
    PoolRule,
    std::collections::HashSet<String>,
    Vec<(u64, u64)>,
);

/// The first pass over the facts: the trace's first and last `timestamp_ns`, and the pool
/// lane recognised by its rows (windows, written as the rows come, need the pool and N up
/// front; for the rest it saves the pool's second read), with every instance id.
fn first_pass(
    args: &QueryArgs,
    facts_paths: &[std::path::PathBuf],
) -> color_eyre::Result<FirstPass> {
    let (span, lanes, geometries) =
        trace_span_and_instances(facts_paths).wrap_err("facts query failed")?;
    super::note_lanes_in_several_files(lanes.lanes(), facts_paths);
    super::note(lanes.partial_pool_note().as_deref());
    let pool = lanes
        .recognise_pool(args.pool.name.as_deref())
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
    args: &QueryArgs,
    facts_paths: &[std::path::PathBuf],
    (slots, tiers): (QuerySlots, Option<TierPlan>),
    (time_range, span, window_ns): (TimeRange, Option<(i64, i64)>, i64),
    (rule, instance_ids, geometries): (
        &PoolRule,
        &std::collections::HashSet<String>,
        Vec<(u64, u64)>,
    ),
) -> color_eyre::Result<()> {
    let first_ns = span.map_or(0, |(first, _)| first);
    let to_stdout = is_standard_output(&args.out);
    let pool_instances = pool_instance_count(facts_paths, rule, time_range, instance_ids)
        .wrap_err("facts query failed")?;
    let windows = query_windows_with_pool(
        facts_paths,
        slots,
        tiers,
        time_range,
        first_ns,
        window_ns,
        Some(rule.clone()),
        pool_instances,
    )
    .wrap_err("facts query failed")?;
    if !time_range.is_everything() && windows.is_empty() {
        return Err(eyre!(EmptySpan {
            range: time_range,
            trace: span,
        }))
        .wrap_err("facts query failed");
    }
    if to_stdout {
        query_windows::write_windows(&windows, first_ns, args.csv, &mut io::stdout().lock())?;
    } else {
        write_atomically(&args.out, |out| {
            query_windows::write_windows(&windows, first_ns, args.csv, &mut io::BufWriter::new(out))
                .map_err(QueryError::Write)
        })
        .map_err(|e: QueryError| eyre!(e))
        .wrap_err("facts query failed")?;
        println!("facts query done: {}", args.out.display());
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
