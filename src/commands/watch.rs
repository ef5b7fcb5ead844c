//! `litehit watch`: glue from arguments to the ingest thread and the TUI or headless output.

use std::sync::Arc;
use std::time::Duration;

use color_eyre::eyre::{WrapErr as _, eyre};

use crate::cli::watch_args::WatchArgs;
use crate::config::{load_config_file, resolve_single_instance};
use crate::live::LiveSnapshot;
use crate::live::headless::{self, HeadlessOptions};
use crate::live::ingest::{self, IngestConfig};
use crate::live::tail::StartAt;
use crate::projector::Capacity;
use crate::tui::{self, TuiOptions};

/// Runs the live monitor until the user quits (or, headless, until EOF / Ctrl-C).
pub fn run(args: &WatchArgs) -> color_eyre::Result<()> {
    let config = ingest_config(args)?;
    let live = ingest::spawn(config)?;
    let last = if args.headless {
        let options = HeadlessOptions {
            interval: seconds("--interval", args.interval)?,
        };
        headless::run(&live, options, &mut std::io::stdout().lock())?
    } else {
        let last = tui::run(&live, TuiOptions { fps: args.fps })?;
        print_summary(&last);
        last
    };
    drop(last);
    live.shutdown();
    Ok(())
}

/// Resolves the arguments (config file or single-instance flags) into an ingest setup.
pub fn ingest_config(args: &WatchArgs) -> color_eyre::Result<IngestConfig> {
    let (trace_path, engine, format, config_slots) = if let Some(path) = &args.config {
        let config =
            load_config_file(path).wrap_err_with(|| format!("loading {}", path.display()))?;
        let trace = args.trace.clone().unwrap_or(config.trace_path);
        (
            trace,
            config.engine,
            config.trace_format,
            config.capacity_gb,
        )
    } else {
        let trace = args
            .trace
            .clone()
            .ok_or_else(|| eyre!("no trace file: pass TRACE (or --config with trace_file_path)"))?;
        let resolved = resolve_single_instance(&args.lane.to_single_instance_flags(None))?;
        (trace, resolved.engine, resolved.trace_format, Vec::new())
    };
    let gigabytes = if args.capacity_gb.is_empty() {
        config_slots
    } else {
        args.capacity_gb.clone()
    };
    let mut config = IngestConfig::new(trace_path, engine);
    if !gigabytes.is_empty() {
        config.slots = gigabytes.iter().map(|&gb| Capacity::from_gb(gb)).collect();
    }
    config.format = format.or(args.lane.format);
    config.start_at = if args.from_end {
        StartAt::End
    } else {
        StartAt::Beginning
    };
    config.facts_out.clone_from(&args.facts_out);
    config.frame_period = Duration::from_secs_f64(1.0 / args.fps.clamp(0.5, 120.0));
    config.window_ns = i64::try_from(seconds("--window-seconds", args.window_seconds)?.as_nanos())
        .wrap_err("--window-seconds is too large")?;
    config.exit_at_eof = args.exit_at_eof;
    Ok(config)
}

/// A positive, finite number of seconds.
fn seconds(flag: &str, value: f64) -> color_eyre::Result<Duration> {
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
    print!("{}", headless::summary_text(last));
}
