//! `litehit mrc`: glue from [`MrcArgs`] to the curves, the report and the plots.

use std::io::{self, Write};
use std::path::{Path, PathBuf};

use color_eyre::eyre::{WrapErr, bail, eyre};

use super::{same_file, writes_over};
use crate::cli::mrc_args::MrcArgs;
use crate::output::mrc::{
    ModelJson, PlannedReport, render_policy_tables, render_table, render_tier_table,
};
use crate::output::plot::{PlotData, render_png, render_svg};
use crate::output::quota::render_quota_table;
use litehit_core::facts::file::{is_standard_output, write_atomically};
use litehit_report::{
    EmptySpan, MrcBuilder, MrcCurves, MrcReport, PolicyReport, PoolRule, QuotaPlan, QuotaRequest,
    SpanReport, TierPlan, TierReport, TimeRange, TimeSpec, check_same_trace, check_span_order,
    plan_quotas, tier_report, trace_span,
};

/// Builds the curves from the facts, prints the table (or JSON) and writes the plots.
pub fn run(args: &MrcArgs) -> color_eyre::Result<()> {
    let plan = plan(args)?;
    let (range, span) = accounted_range(&plan)?;
    let curves = build_curves(&plan, range)?;
    super::note_lanes_in_several_files(&curves.lanes_in_several_files, &plan.facts);
    super::note(curves.pool_note.as_deref());
    if curves.instances.is_empty() {
        // No curve, no knee: a header-only file (e.g. a replay of a trace with only writes).
        bail!(
            "{}: no facts rows, so there is no curve to draw",
            joined_paths(&plan.facts)
        );
    }
    let report = curves.report(plan.max_curve_points);
    let quota = plan
        .quota
        .as_ref()
        .map(|request| plan_quotas(&curves, request))
        .transpose()
        .map_err(|error| eyre!(error))
        .wrap_err("planning the quotas failed")?;
    let opt = opt_curves(&plan, range)?.map(|opt| {
        (
            curves.policy_report(&report, &opt, plan.max_curve_points),
            opt,
        )
    });
    super::warn_implausible_kv_sizes(
        report
            .instances
            .iter()
            .map(|instance| (instance.block_bytes, instance.block_size_tokens)),
    );
    write_plots(
        &plan,
        (&curves, &report, quota.as_ref()),
        opt.as_ref(),
        span.as_ref(),
    )?;
    // An image on standard output (`--png -`, `--png /dev/stdout`) sends the table to stderr.
    let mut out: Box<dyn Write> = if plan.image_to_stdout {
        Box::new(io::stderr().lock())
    } else {
        Box::new(io::stdout().lock())
    };
    let tier_report = plan.tiers.as_ref().map(|tiers| tier_report(&curves, tiers));
    write_report(
        &mut out,
        plan.json,
        (
            &report,
            plan.model.as_ref(),
            opt.as_ref().map(|(policy, _)| policy),
        ),
        span,
        tier_report,
        quota.as_ref(),
    )?;
    out.flush()?;
    Ok(())
}

/// What `mrc` was asked, checked and in plain data, before any facts row is read.
#[derive(Debug, Clone)]
struct MrcPlan {
    /// FACTS, globs expanded (a directory stands for its `litehit_facts.csv`).
    facts: Vec<PathBuf>,
    tiers: Option<TierPlan>,
    /// `--from`, `--to`, `--exclude-warmup` as typed.
    span: TimeSpec,
    pool: PoolRule,
    max_curve_points: usize,
    json: bool,
    png: Option<PathBuf>,
    svg: Option<PathBuf>,
    /// A plot goes to standard output: the table goes to stderr.
    image_to_stdout: bool,
    /// `--title`: the trace as the plot's subtitle names it.
    title: Option<String>,
    /// `--model`: each row's block bytes its KV size × block size (said in a note, the
    /// table, the JSON and the plots' subtitle).
    model: Option<litehit_core::config::ModelKvSize>,
    /// The OPT facts read beside (`--opt`, or the siblings found); empty: none.
    opt: Vec<PathBuf>,
    /// `--tenants`: the plots draw the lanes as tenants (no total or pool line).
    tenants: bool,
    /// `--quota-total` and its flags: each tenant's quota marked on its curve.
    quota: Option<QuotaRequest>,
}

/// The plan of `args`: every check that needs no facts row.
fn plan(args: &MrcArgs) -> color_eyre::Result<MrcPlan> {
    // A directory stands for the `litehit_facts.csv` a replay published in it.
    let facts: Vec<PathBuf> = args
        .facts
        .iter()
        .map(|path| litehit_core::facts::file::facts_input_path(path))
        .collect();
    let facts = super::expand_facts_globs(&facts)?;
    super::refuse_repeated_facts(&facts)?;
    facts
        .iter()
        .try_for_each(|path| super::refuse_temp_input(path))?;
    let outputs: Vec<&PathBuf> = args.png.iter().chain(&args.svg).collect();
    if let [png, svg] = outputs[..]
        && (same_file(png, svg) || (is_standard_output(png) && is_standard_output(svg)))
    {
        bail!("--png and --svg name the same file {}", png.display());
    }
    // `--png plot.svg` would write PNG bytes under an SVG name.
    for (flag, path, other_extension, other_image, other_flag) in [
        ("--png", &args.png, "svg", "an SVG", "--svg"),
        ("--svg", &args.svg, "png", "a PNG", "--png"),
    ] {
        if let Some(path) = path
            && path
                .extension()
                .is_some_and(|extension| extension.eq_ignore_ascii_case(other_extension))
        {
            bail!(
                "{flag} {}: that name is for {other_image} image; use {other_flag}",
                path.display()
            );
        }
    }
    let image_to_stdout = outputs.iter().any(|path| is_standard_output(path));
    if let Some(output) = outputs
        .iter()
        .find(|output| facts.iter().any(|input| writes_over(output, input)))
    {
        bail!(
            "{}: a plot would overwrite a facts file being read",
            output.display()
        );
    }
    let tiers = super::query::tier_plan(&args.tier_args)?;
    let span = super::query::time_spec(&args.span)?;
    let model = super::resolve_model(&args.model)?;
    super::facts_model_note(model.as_ref());
    let opt = super::opt_facts(&args.opt, &facts, None)?;
    if !opt.is_empty() && facts.iter().chain(&opt).any(|path| path.as_os_str() == "-") {
        bail!(
            "--opt reads the facts twice (to check that both files are of one trace); \
             standard input cannot be: pass files"
        );
    }
    Ok(MrcPlan {
        facts,
        tiers,
        span,
        pool: args.pool.rule(),
        max_curve_points: args.max_curve_points,
        json: args.json,
        png: args.png.clone(),
        svg: args.svg.clone(),
        image_to_stdout,
        title: args.title.clone(),
        model,
        opt,
        tenants: args.tenants.tenants,
        quota: args.tenants.quota_request(),
    })
}

/// `--png` and `--svg`, when asked for.
fn write_plots(
    plan: &MrcPlan,
    (curves, report, quota): (&MrcCurves, &MrcReport, Option<&QuotaPlan>),
    opt: Option<&(PolicyReport, MrcCurves)>,
    span: Option<&SpanReport>,
) -> color_eyre::Result<()> {
    if plan.png.is_none() && plan.svg.is_none() {
        return Ok(());
    }
    // The trace as `--title` names it (facts do not record it), else the facts files by
    // their directory and name (`run-0412/litehit_facts.csv`: the file name alone is
    // mostly the default), or the paths as given when those repeat.
    let names: Vec<String> = plan.facts.iter().map(|p| directory_and_name(p)).collect();
    let repeated = names
        .iter()
        .enumerate()
        .any(|(i, name)| names[..i].contains(name));
    let source = match &plan.title {
        Some(title) => format!("trace: {title}"),
        None if repeated => format!("facts: {}", joined_paths(&plan.facts)),
        None => format!("facts: {}", names.join(", ")),
    };
    let source = match span {
        Some(span) => format!("{source} · {}", span.describe()),
        None => source,
    };
    let source = match &plan.model {
        Some(model) => format!("{source} · model {}", model.short()),
        None => source,
    };
    let mut plot = if plan.tenants {
        PlotData::for_tenants(curves, report, quota, &source)
    } else {
        PlotData::from_curves(curves, report, &source)
    };
    if let Some((policy, opt_curves)) = opt {
        plot.add_opt(curves, opt_curves, &policy.report);
    }
    if let Some(path) = &plan.png {
        write_file(path, &render_png(&plot))?;
    }
    if let Some(path) = &plan.svg {
        write_file(path, render_svg(&plot).as_bytes())?;
    }
    Ok(())
}

/// OPT's curves of the rows in `range` (with `--opt`), once the OPT facts are checked to be
/// of the LRU facts' trace.
fn opt_curves(plan: &MrcPlan, range: TimeRange) -> color_eyre::Result<Option<MrcCurves>> {
    if plan.opt.is_empty() {
        return Ok(None);
    }
    check_same_trace(&plan.facts, &plan.opt).wrap_err("comparing LRU with OPT failed")?;
    let mut builder = MrcBuilder::new()
        .with_pool(plan.pool.clone())
        .with_kv_bytes_per_token(plan.model.as_ref().map(|model| model.kv_bytes_per_token));
    builder
        .add_facts_files_in(&plan.opt, range)
        .wrap_err("building OPT's miss-ratio curve failed")?;
    builder
        .try_finish()
        .map(Some)
        .wrap_err("building OPT's miss-ratio curve failed")
}

/// The curves of the rows in `range`; a span without rows is an error (in `query`'s words:
/// the span, and where the trace's rows are).
fn build_curves(plan: &MrcPlan, range: TimeRange) -> color_eyre::Result<MrcCurves> {
    let mut builder = MrcBuilder::new()
        .with_pool(plan.pool.clone())
        .with_kv_bytes_per_token(plan.model.as_ref().map(|model| model.kv_bytes_per_token));
    builder
        .add_facts_files_in(&plan.facts, range)
        .wrap_err("building the miss-ratio curve failed")?;
    // First: a file given twice is the error, whatever the span holds.
    builder
        .check_no_repeated_rows()
        .wrap_err("building the miss-ratio curve failed")?;
    if !range.is_everything() && !builder.has_rows() {
        bail!(EmptySpan {
            range,
            trace: builder.seen_span(),
        });
    }
    builder
        .try_finish()
        .wrap_err("building the miss-ratio curve failed")
}

/// The table (with the span line and the tier table when asked) or the JSON report.
fn write_report(
    out: &mut dyn Write,
    json: bool,
    (report, model, opt): (
        &MrcReport,
        Option<&litehit_core::config::ModelKvSize>,
        Option<&PolicyReport>,
    ),
    span: Option<SpanReport>,
    tier_report: Option<TierReport>,
    quota: Option<&QuotaPlan>,
) -> color_eyre::Result<()> {
    if json {
        let planned = PlannedReport {
            report,
            accounted_span: span,
            tiers: tier_report,
            model: model.map(ModelJson::of),
            opt,
            quota,
        };
        serde_json::to_writer_pretty(&mut *out, &planned).wrap_err("writing the JSON report")?;
        writeln!(out)?;
    } else {
        if let Some(span) = &span {
            writeln!(out, "accounted: {}", span.describe())?;
        }
        if let Some(model) = model {
            out.write_all(crate::output::summary::render_model(model).as_bytes())?;
        }
        out.write_all(render_table(report).as_bytes())?;
        if let Some(opt) = opt {
            writeln!(out)?;
            out.write_all(render_policy_tables(opt).as_bytes())?;
        }
        if let Some(tier_report) = &tier_report {
            writeln!(out)?;
            out.write_all(render_tier_table(tier_report).as_bytes())?;
        }
        if let Some(quota) = quota {
            writeln!(out)?;
            out.write_all(render_quota_table(quota).as_bytes())?;
        }
    }
    Ok(())
}

/// The rows `--from/--to/--exclude-warmup` account, and the span to report (`None` for the
/// whole trace).
fn accounted_range(plan: &MrcPlan) -> color_eyre::Result<(TimeRange, Option<SpanReport>)> {
    let (spec, facts) = (plan.span, &plan.facts);
    if spec == TimeSpec::default() {
        return Ok((TimeRange::default(), None));
    }
    if facts.iter().any(|path| path.as_os_str() == "-") && spec.needs_span() {
        bail!(
            "trace times (--from/--to in seconds, --exclude-warmup) read the facts twice; \
             standard input cannot be: pass a file, or absolute times (ns)"
        );
    }
    let trace = if spec.needs_span() {
        trace_span(facts).wrap_err("building the miss-ratio curve failed")?
    } else {
        None
    };
    let (first_ns, last_ns) = trace.unwrap_or((0, 0));
    let range = spec.resolve(first_ns, last_ns);
    check_span_order(range, trace.map(|(first, _)| first)).map_err(|error| eyre!(error))?;
    Ok((range, SpanReport::new(range, first_ns)))
}

/// Writes a plot atomically, or to standard output through its handle.
fn write_file(path: &Path, bytes: &[u8]) -> color_eyre::Result<()> {
    if is_standard_output(path) {
        let mut stdout = io::stdout().lock();
        return stdout
            .write_all(bytes)
            .and_then(|()| stdout.flush())
            .wrap_err("writing the plot to standard output");
    }
    write_atomically(path, |out| out.write_all(bytes).map_err(|e| eyre!(e)))
        .wrap_err_with(|| format!("writing {}", path.display()))
}

/// `run-0412/litehit_facts.csv`: a facts file's name after its directory's (the name alone
/// when it has none).
fn directory_and_name(path: &std::path::Path) -> String {
    let name = path
        .file_name()
        .unwrap_or(path.as_os_str())
        .to_string_lossy();
    let directory = path
        .parent()
        .and_then(std::path::Path::file_name)
        .map(std::ffi::OsStr::to_string_lossy);
    match directory {
        Some(directory) => format!("{directory}/{name}"),
        None => name.into_owned(),
    }
}

/// `a.csv, b/a.csv`: the paths as given, for messages and plot subtitles.
fn joined_paths(paths: &[std::path::PathBuf]) -> String {
    paths
        .iter()
        .map(|path| path.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
