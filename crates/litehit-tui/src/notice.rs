//! The notice model: what the status line and the notice log (`!`) say about the snapshot
//! (problems, the facts snapshot, file events, write events) and the app's own entries
//! (bad lines, out-of-order timestamps, a `b` change). `render/status.rs` shows the current
//! one; `app.rs` logs them.

use std::time::Duration;

use ratatui::style::Style;

use crate::render::format;
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::{FactsWrite, LineErrorView};
use litehit_live::tail::TailNotice;

/// A notice of the status line (and the `!` log).
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    /// Without its age.
    pub text: String,
    /// How long ago it happened, for notices that fade.
    pub age: Option<Duration>,
    pub style: Style,
    /// A problem rather than news.
    pub problem: bool,
}

impl Notice {
    fn new(text: String, style: Style, problem: bool) -> Self {
        Self {
            text,
            age: None,
            style,
            problem,
        }
    }

    /// As the status line shows it: with its age, if it has one.
    pub(crate) fn line(&self) -> String {
        match self.age {
            Some(age) => format!(" {} ({} ago)", self.text, format::duration(age)),
            None => format!(" {}", self.text),
        }
    }
}

/// Every notice the snapshot holds, current or faded, for the log (`!`): the status line
/// shows only the first current one.
pub fn loggable_notices(snap: &LiveSnapshot) -> Vec<Notice> {
    let mut notices: Vec<Notice> = Vec::new();
    notices.extend(problem(snap));
    notices.extend(facts_notice(snap));
    notices.extend(file_notice(snap));
    notices.extend(write_events_notice(snap));
    notices.extend(engine_metrics_notice(snap));
    notices
}

/// `--engine-metrics`: each engine's hit rate over the last window beside LiteHit's (at the
/// `engine` slot, else ∞), or why its last scrape failed (a problem, with the count).
pub fn engine_metrics_notice(snap: &LiveSnapshot) -> Option<Notice> {
    let mut problem = false;
    let parts: Vec<String> = snap
        .engine_metrics
        .iter()
        .map(|view| {
            if let Some(error) = &view.last_error {
                problem = true;
                return format!(
                    "engine {}: scrape failed ({} so far): {}",
                    view.label,
                    format::count(view.failed_scrapes),
                    format::fit(error, LOGGED_ERROR_CHARS)
                );
            }
            match view.window {
                Some(window) => format!(
                    "engine {}: {} vs LiteHit {} at {} (last window)",
                    view.label,
                    format::percent(window.engine_hit_rate()),
                    format::percent(window.litehit_hit_rate()),
                    if view.compared_at_engine_slot {
                        "engine"
                    } else {
                        "∞"
                    }
                ),
                None => format!("engine {}: waiting for two scrapes", view.label),
            }
        })
        .collect();
    if parts.is_empty() {
        return None;
    }
    let style = if problem {
        Style::new().yellow()
    } else {
        Style::new()
    };
    Some(Notice::new(parts.join(" · "), style, problem))
}

/// The longest error message a notice log entry keeps (a line's error can quote the line).
const LOGGED_ERROR_CHARS: usize = 160;

/// The log's entry for `count` bad lines skipped since its last one (folded into this one),
/// with the last line's error.
pub fn bad_lines_notice(count: u64, last_error: Option<&LineErrorView>) -> Notice {
    let noun = litehit_core::display::bad_lines_noun(count);
    let what = if count == 1 {
        format!("{noun} skipped")
    } else {
        format!(
            "{} {noun} skipped (folded into one entry)",
            format::count(count)
        )
    };
    let text = match last_error {
        Some(error) => format!(
            "{what}; the last, line {}: {}",
            error.line_number,
            format::fit(&error.message, LOGGED_ERROR_CHARS)
        ),
        None => what,
    };
    Notice::new(text, Style::new().yellow(), true)
}

/// The log's entry for `count` out-of-order timestamps (clamped) since its last one.
pub fn out_of_order_notice(count: u64) -> Notice {
    let noun = if count == 1 {
        "out-of-order timestamp"
    } else {
        "out-of-order timestamps"
    };
    let folded = if count == 1 {
        ""
    } else {
        " (folded into one entry)"
    };
    Notice::new(
        format!("{} {noun} clamped{folded}", format::count(count)),
        Style::new().yellow(),
        false,
    )
}

/// The notice of a `b` change to `block_bytes`: logged once per change by the app (the
/// snapshot holds the value, not when it changed).
pub fn block_bytes_notice(block_bytes: u64) -> Notice {
    Notice::new(
        format!(
            "assuming {} per block (b): GB slots re-projected, facts rows keep theirs",
            format::bytes(block_bytes)
        ),
        Style::new(),
        false,
    )
}

/// After a facts snapshot under a memory horizon: its curves stop at the horizon, so what
/// `query` / `mrc` read from it above the horizon (and at ∞) are lower bounds.
fn horizon_note(snap: &LiveSnapshot) -> String {
    match format::memory_horizon(snap) {
        Some(horizon) => {
            format!("; memory horizon {horizon}: hits above it (and at ∞) are lower bounds")
        }
        None => String::new(),
    }
}

pub(crate) fn problem(snap: &LiveSnapshot) -> Option<Notice> {
    if let Some(fatal) = &snap.fatal {
        return Some(Notice::new(
            format!("error: {fatal}"),
            Style::new().white().on_red(),
            true,
        ));
    }
    snap.source.read_error.as_ref().map(|error| {
        Notice::new(
            format!("cannot read {}: {error} (retrying)", snap.source.path),
            Style::new().red(),
            true,
        )
    })
}

pub(crate) fn facts_notice(snap: &LiveSnapshot) -> Option<Notice> {
    match &snap.facts_write {
        FactsWrite::Writing { path, rows } => Some(Notice::new(
            format!("writing {} facts rows to {path}…", format::count(*rows)),
            Style::new().cyan(),
            false,
        )),
        FactsWrite::Failed { path, message } => Some(Notice::new(
            format!("facts snapshot to {path} failed: {message}"),
            Style::new().red(),
            true,
        )),
        // A write done a while ago gives way to newer notices (rotation, truncation).
        FactsWrite::Done { path, rows, bytes } => Some(Notice {
            age: Some(snap.facts_write_age),
            ..Notice::new(
                format!(
                    "wrote {} facts rows ({}) to {path}{}",
                    format::count(*rows),
                    format::bytes(*bytes),
                    horizon_note(snap),
                ),
                Style::new().green(),
                false,
            )
        }),
        FactsWrite::Idle => None,
    }
}

pub(crate) fn file_notice(snap: &LiveSnapshot) -> Option<Notice> {
    let (notice, age) = snap.source.last_notice?;
    let text = match notice {
        TailNotice::Waiting => "waiting for the trace file to appear".to_owned(),
        TailNotice::Opened => format!("opened {}", snap.source.path),
        TailNotice::Truncated => "file truncated: reading the new content, totals kept".to_owned(),
        TailNotice::Replaced => {
            "file replaced (rotated): reading the new file, totals kept".to_owned()
        }
        TailNotice::Deleted => {
            "file renamed or deleted: still following it until a new one appears, totals kept"
                .to_owned()
        }
        TailNotice::RecoveredFromCopy => {
            "file truncated: reading its unread rest from the copy beside it, totals kept"
                .to_owned()
        }
        TailNotice::NotRegular => {
            "not a regular file at the path (FIFO, device?): not followed, waiting".to_owned()
        }
        TailNotice::InputEnded => "input ended: everything it sent was read".to_owned(),
        TailNotice::Lost => format!(
            "a queued file was deleted before it was read: {} lost so far",
            format::bytes(snap.source.lost_bytes)
        ),
    };
    Some(Notice {
        age: Some(age),
        ..Notice::new(text, Style::new().yellow(), notice == TailNotice::Lost)
    })
}

/// Write events (KVCM `StartWriteCache` / `FinishWriteCache`, standard `write` rows) are no
/// lookups: they are counted in the input gauge and said once in the log.
fn write_events_notice(snap: &LiveSnapshot) -> Option<Notice> {
    (snap.health.write_events > 0).then(|| {
        Notice::new(
            "write events seen: counted in the input gauge, not replayed (writes are no \
             lookups, as upstream)"
                .to_owned(),
            Style::new(),
            false,
        )
    })
}
