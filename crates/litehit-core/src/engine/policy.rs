//! One check, two policies: the same error either stops an offline run or is counted by the
//! live monitor. Parsers and the engine report errors identically in both modes; only this
//! enum decides what happens next.

/// What to do with a line that fails a check.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Policy {
    /// Offline replay: the first bad line fails the run and nothing is published.
    #[default]
    FailFast,
    /// Live monitor: skip the line, count it, remember the last error, keep going.
    /// Out-of-order timestamps are clamped (for TTL) and counted, not rejected.
    SkipAndCount,
}
