//! `litehit mrc`: glue from [`MrcArgs`] to the curves, the report and the plots.

use std::io::{self, Write};
use std::path::Path;

use color_eyre::eyre::{WrapErr, bail, eyre};

use super::{same_file, writes_over};
use crate::cli::mrc_args::MrcArgs;
use crate::output::mrc::{PlannedReport, render_table, render_tier_table};
use crate::output::plot::{PlotData, render_png, render_svg};
use litehit_core::facts::file::{is_standard_output, write_atomically};
use litehit_report::{
    EmptySpan, MrcBuilder, SpanReport, TimeRange, TimeSpec, check_span_order, tier_report,
    trace_span,
};

/// Builds the curves from the facts, prints the table (or JSON) and writes the plots.
pub fn run(args: &MrcArgs) -> color_eyre::Result<()> {
    // A directory stands for the `litehit_facts.csv` a replay published in it.
    let facts: Vec<std::path::PathBuf> = args
        .facts
        .iter()
        .map(|path| litehit_core::facts::file::facts_input_path(path))
        .collect();
    let facts = super::expand_facts_globs(&facts)?;
    super::refuse_repeated_facts(&facts)?;
    facts
        .iter()
        .try_for_each(|path| super::refuse_temp_input(path))?;
    let outputs: Vec<&std::path::PathBuf> = args.png.iter().chain(&args.svg).collect();
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
    // An image on standard output (`--png -`, `--png /dev/stdout`) sends the table to stderr.
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
    let (range, span) = accounted_range(args, &facts)?;
    let curves = build_curves(args, &facts, range)?;
    super::note_lanes_in_several_files(&curves.lanes_in_several_files, &facts);
    super::note(curves.pool_note.as_deref());
    if curves.instances.is_empty() {
        // No curve, no knee: a header-only file (e.g. a replay of a trace with only writes).
        bail!(
            "{}: no facts rows, so there is no curve to draw",
            joined_paths(&facts)
        );
    }
    let report = curves.report(args.max_curve_points);
    super::warn_implausible_kv_sizes(
        report
            .instances
            .iter()
            .map(|instance| (instance.block_bytes, instance.block_size_tokens)),
    );
    if args.png.is_some() || args.svg.is_some() {
        // The trace as `--title` names it (facts do not record it), else the facts files by
        // their directory and name (`run-0412/litehit_facts.csv`: the file name alone is
        // mostly the default), or the paths as given when those repeat.
        let names: Vec<String> = facts.iter().map(|p| directory_and_name(p)).collect();
        let repeated = names
            .iter()
            .enumerate()
            .any(|(i, name)| names[..i].contains(name));
        let source = match &args.title {
            Some(title) => format!("trace: {title}"),
            None if repeated => format!("facts: {}", joined_paths(&facts)),
            None => format!("facts: {}", names.join(", ")),
        };
        let source = match &span {
            Some(span) => format!("{source} · {}", span.describe()),
            None => source,
        };
        let plot = PlotData::from_curves(&curves, &report, &source);
        if let Some(path) = &args.png {
            write_file(path, &render_png(&plot))?;
        }
        if let Some(path) = &args.svg {
            write_file(path, render_svg(&plot).as_bytes())?;
        }
    }
    let mut out: Box<dyn Write> = if image_to_stdout {
        Box::new(io::stderr().lock())
    } else {
        Box::new(io::stdout().lock())
    };
    let tier_report = tiers.as_ref().map(|plan| tier_report(&curves, plan));
    write_report(&mut out, args.json, &report, span, tier_report)?;
    out.flush()?;
    Ok(())
}

/// The curves of the rows in `range`; a span without rows is an error (in `query`'s words:
/// the span, and where the trace's rows are).
fn build_curves(
    args: &MrcArgs,
    facts: &[std::path::PathBuf],
    range: TimeRange,
) -> color_eyre::Result<litehit_report::MrcCurves> {
    let mut builder = MrcBuilder::new().with_pool(args.pool.rule());
    builder
        .add_facts_files_in(facts, range)
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
    report: &litehit_report::MrcReport,
    span: Option<SpanReport>,
    tier_report: Option<litehit_report::TierReport>,
) -> color_eyre::Result<()> {
    if json {
        let planned = PlannedReport {
            report,
            accounted_span: span,
            tiers: tier_report,
        };
        serde_json::to_writer_pretty(&mut *out, &planned).wrap_err("writing the JSON report")?;
        writeln!(out)?;
    } else {
        if let Some(span) = &span {
            writeln!(out, "accounted: {}", span.describe())?;
        }
        out.write_all(render_table(report).as_bytes())?;
        if let Some(tier_report) = &tier_report {
            writeln!(out)?;
            out.write_all(render_tier_table(tier_report).as_bytes())?;
        }
    }
    Ok(())
}

/// The rows `--from/--to/--exclude-warmup` account, and the span to report (`None` for the
/// whole trace).
fn accounted_range(
    args: &MrcArgs,
    facts: &[std::path::PathBuf],
) -> color_eyre::Result<(TimeRange, Option<SpanReport>)> {
    let spec = super::query::time_spec(&args.span)?;
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
