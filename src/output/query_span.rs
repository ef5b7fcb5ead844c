//! The accounted span of a query (`--from`, `--to`, `--exclude-warmup`), shared by
//! `query_jsonl.rs` (the query) and `query_windows.rs` (its windows and the span's
//! resolution): [`TimeRange`], the [`EmptySpan`] error and [`widen_span`], so that imports
//! run one way, `query_windows.rs` → `query_jsonl.rs` (the passes stay where they were).

use litehit_core::display;

/// Which rows the query accounts: timestamps in `[from_ns, to_ns)`. The facts already hold
/// the cache state built from the start of the trace; only the accounting is restricted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TimeRange {
    pub from_ns: i64,
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
