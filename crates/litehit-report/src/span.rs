//! The accounted span of `query` and `mrc` (`--from`, `--to`, `--exclude-warmup`): what was
//! typed ([`TimeSpec`], read by the core's grammar), resolved against the trace's first and
//! last request to a [`TimeRange`], the errors of a span that is inverted or holds no row,
//! and the span as a report states it ([`SpanReport`]).
//!
//! Trace time is seconds since the first request (the smallest `timestamp_ns` of all the
//! facts files). The cache state is always the one built from the start (the facts already
//! hold it); only the accounting is restricted.

use std::path::PathBuf;

use serde::Serialize;

use crate::facts_files::FactsFiles;
use litehit_core::display;
use litehit_core::facts::FactRecord;
use litehit_core::facts::file::FactsError;
use litehit_core::grammar::{TimePoint, Warmup};

const NS_PER_SECOND: f64 = 1e9;

/// Which rows the query accounts: timestamps in `[from_ns, to_ns)`. The facts already hold
/// the cache state built from the start of the trace; only the accounting is restricted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRange {
    /// The first accounted `timestamp_ns` (`i64::MIN`: from the start).
    pub from_ns: i64,
    /// The end, excluded (`i64::MAX`: to the end, included).
    pub to_ns: i64,
}

impl Default for TimeRange {
    fn default() -> Self {
        Self {
            from_ns: i64::MIN,
            to_ns: i64::MAX,
        }
    }
}

impl TimeRange {
    /// Whether a row at `timestamp_ns` is accounted (`to_ns == i64::MAX` includes it).
    #[must_use]
    pub fn contains(&self, timestamp_ns: i64) -> bool {
        timestamp_ns >= self.from_ns && (timestamp_ns < self.to_ns || self.to_ns == i64::MAX)
    }

    /// Whether every row is accounted.
    #[must_use]
    pub fn is_everything(&self) -> bool {
        *self == Self::default()
    }
}

/// A time in a message: `trace time 600 s (timestamp_ns 1700000600000000000)`, the trace
/// time from the trace's first request `first_ns` when there is one.
pub(crate) fn time_in_message(ns: i64, first_ns: Option<i64>) -> String {
    match first_ns {
        Some(first_ns) => format!(
            "trace time {} s (timestamp_ns {ns})",
            display::seconds_of_ns(i128::from(ns) - i128::from(first_ns))
        ),
        None => format!("timestamp_ns {ns}"),
    }
}

/// `from` to `to` of an accounted span (`start`/`end` for an open side), for messages.
fn span_in_message(range: TimeRange, first_ns: Option<i64>) -> String {
    let side = |ns: i64, open: i64, word: &str| {
        if ns == open {
            format!("the {word}")
        } else {
            time_in_message(ns, first_ns)
        }
    };
    format!(
        "from {} to {}",
        side(range.from_ns, i64::MIN, "start"),
        side(range.to_ns, i64::MAX, "end")
    )
}

/// An accounted span (`--from`, `--to`, `--exclude-warmup`) that holds no facts row: an
/// error in `query` and `mrc` alike (zeros would read as a measurement), naming the span and
/// the trace's own, so the user sees which side missed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub struct EmptySpan {
    /// The accounted span.
    pub range: TimeRange,
    /// The first and last `timestamp_ns` of every row read; `None` when there was no row.
    pub trace: Option<(i64, i64)>,
}

impl std::fmt::Display for EmptySpan {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let first_ns = self.trace.map(|(first, _)| first);
        write!(
            f,
            "no facts row in the accounted span ({}): ",
            span_in_message(self.range, first_ns)
        )?;
        match self.trace {
            Some((first, last)) => write!(
                f,
                "the trace's rows run from {} to {}",
                time_in_message(first, first_ns),
                time_in_message(last, first_ns)
            ),
            None => f.write_str("the facts have no rows"),
        }
    }
}

/// `span` (the smallest and largest `timestamp_ns` so far, `None` before any row) widened to
/// hold `timestamp_ns`: every pass that says where the trace's rows are keeps it this way.
#[must_use]
pub fn widen_span(span: Option<(i64, i64)>, timestamp_ns: i64) -> Option<(i64, i64)> {
    Some(span.map_or((timestamp_ns, timestamp_ns), |(first, last)| {
        (first.min(timestamp_ns), last.max(timestamp_ns))
    }))
}

/// What was typed for the accounted span.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct TimeSpec {
    /// `--from`.
    pub from: Option<TimePoint>,
    /// `--to`.
    pub to: Option<TimePoint>,
    /// `--exclude-warmup`.
    pub exclude_warmup: Option<Warmup>,
}

impl TimeSpec {
    /// Whether resolving needs the trace's first and last timestamps.
    #[must_use]
    pub fn needs_span(&self) -> bool {
        matches!(self.from, Some(TimePoint::TraceSeconds(_)))
            || matches!(self.to, Some(TimePoint::TraceSeconds(_)))
            || self.exclude_warmup.is_some()
    }

    /// Whether `--from` and `--to`, typed in the same kind (both trace seconds or both
    /// absolute), leave nothing between them: refused with no trace to look at.
    #[must_use]
    pub fn is_inverted(&self) -> bool {
        match (self.from, self.to) {
            (Some(TimePoint::TraceSeconds(from)), Some(TimePoint::TraceSeconds(to))) => from >= to,
            (Some(TimePoint::AbsoluteNs(from)), Some(TimePoint::AbsoluteNs(to))) => from >= to,
            _ => false,
        }
    }

    /// The accounted range for a trace whose requests span `first_ns..=last_ns`: the later
    /// of `--from` and the end of the warm-up, up to `--to`.
    #[must_use]
    pub fn resolve(&self, first_ns: i64, last_ns: i64) -> TimeRange {
        let at = |point: TimePoint| match point {
            TimePoint::AbsoluteNs(ns) => ns,
            TimePoint::TraceSeconds(seconds) => offset_ns(first_ns, seconds * NS_PER_SECOND),
        };
        let mut range = TimeRange::default();
        if let Some(from) = self.from {
            range.from_ns = at(from);
        }
        if let Some(warmup) = self.exclude_warmup {
            let warmup_ns = match warmup {
                #[expect(clippy::cast_precision_loss, reason = "a span in ns, as a share")]
                Warmup::Fraction(share) => (last_ns.saturating_sub(first_ns)) as f64 * share,
                Warmup::Seconds(seconds) => seconds * NS_PER_SECOND,
            };
            range.from_ns = range.from_ns.max(offset_ns(first_ns, warmup_ns));
        }
        if let Some(to) = self.to {
            range.to_ns = at(to);
        }
        range
    }
}

/// A resolved span that starts at or after its end (`--from 30m --to 10m`, or a warm-up
/// that ends after `--to`): no row could be in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error(
    "the accounted span is empty: it starts at {} (--from, or the end of --exclude-warmup) \
     and --to ends it at {}",
    time_in_message(range.from_ns, *first_ns),
    time_in_message(range.to_ns, *first_ns)
)]
pub struct InvertedSpan {
    /// The resolved span.
    pub range: TimeRange,
    /// The trace's first `timestamp_ns`, when it was read.
    pub first_ns: Option<i64>,
}

/// `Err` with both ends when the resolved span starts at or after its end: no row could be
/// in it.
pub fn check_span_order(range: TimeRange, first_ns: Option<i64>) -> Result<(), InvertedSpan> {
    if range.to_ns == i64::MAX || range.from_ns < range.to_ns {
        return Ok(());
    }
    Err(InvertedSpan { range, first_ns })
}

/// `base_ns + offset_ns`, the offset floored, saturating.
fn offset_ns(base_ns: i64, offset_ns: f64) -> i64 {
    #[expect(
        clippy::cast_possible_truncation,
        reason = "floor, saturating at the i64 range"
    )]
    let offset = offset_ns.floor() as i64;
    base_ns.saturating_add(offset)
}

/// The smallest and largest `timestamp_ns` over every row of `facts_paths` (`None` without
/// rows): a first pass, before the query proper.
pub fn trace_span(facts_paths: &[PathBuf]) -> Result<Option<(i64, i64)>, FactsError> {
    let mut span: Option<(i64, i64)> = None;
    let mut record = FactRecord::default();
    let mut files = FactsFiles::lazy(facts_paths);
    while files.next_record(&mut record)? {
        span = widen_span(span, record.timestamp_ns);
    }
    Ok(span)
}

/// The span of trace time a report accounts (only when it is not the whole trace).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SpanReport {
    /// Seconds since the first request; `None` = from the start.
    pub from_s: Option<f64>,
    /// `None` = to the end.
    pub to_s: Option<f64>,
    /// The first accounted `timestamp_ns`; `None` = from the start.
    pub from_ns: Option<i64>,
    /// The end, excluded; `None` = to the end.
    pub to_ns: Option<i64>,
}

impl SpanReport {
    /// The span of `range` in a trace starting at `first_ns`; `None` for the whole trace.
    #[must_use]
    pub fn new(range: TimeRange, first_ns: i64) -> Option<Self> {
        if range.is_everything() {
            return None;
        }
        #[expect(clippy::cast_precision_loss, reason = "seconds, for display")]
        let seconds = |ns: i64| (i128::from(ns) - i128::from(first_ns)) as f64 / 1e9;
        let from_ns = (range.from_ns != i64::MIN).then_some(range.from_ns);
        let to_ns = (range.to_ns != i64::MAX).then_some(range.to_ns);
        Some(Self {
            from_s: from_ns.map(seconds),
            to_s: to_ns.map(seconds),
            from_ns,
            to_ns,
        })
    }

    /// `trace time 120 s – end`, for the table and the plot subtitle.
    #[must_use]
    pub fn describe(&self) -> String {
        let end =
            |s: Option<f64>, open: &str| s.map_or_else(|| open.to_owned(), |s| format!("{s} s"));
        format!(
            "trace time {} – {}",
            end(self.from_s, "start"),
            end(self.to_s, "end")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolve_takes_the_later_start() {
        let spec = TimeSpec {
            from: Some(TimePoint::TraceSeconds(1.0)),
            to: Some(TimePoint::AbsoluteNs(9_000_000_000)),
            exclude_warmup: Some(Warmup::Fraction(0.5)),
        };
        assert!(spec.needs_span());
        // Span 1 s .. 5 s: the warm-up ends at 3 s, after --from (2 s).
        let range = spec.resolve(1_000_000_000, 5_000_000_000);
        assert_eq!(range.from_ns, 3_000_000_000);
        assert_eq!(range.to_ns, 9_000_000_000);
        assert!(TimeSpec::default().resolve(0, 1).is_everything());
    }
}
