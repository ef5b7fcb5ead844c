//! The rate meter: ingest throughput (requests, blocks, bytes per second) over the last second.
//!
//! It measures the monitor, not the trace: wall-clock throughput is in no engine answer (the
//! cumulative counts it samples are the engine's). It keeps the samples of about the last
//! second and divides the change by the time between the oldest and the newest, so a rate
//! decays to zero once nothing comes in; the catch-up estimate is the backlog over this rate.

use std::collections::VecDeque;
use std::time::{Duration, Instant};

use crate::snapshot::IngestRate;

/// Throughput over the last second of wall time.
#[derive(Debug, Default)]
pub(super) struct RateMeter {
    /// `(when, requests, blocks, bytes)` cumulative samples, oldest first.
    samples: VecDeque<(Instant, u64, u64, u64)>,
}

impl RateMeter {
    pub(super) fn sample(
        &mut self,
        now: Instant,
        requests: u64,
        blocks: u64,
        bytes: u64,
    ) -> IngestRate {
        self.samples.push_back((now, requests, blocks, bytes));
        while self
            .samples
            .get(1)
            .is_some_and(|&(when, ..)| now.duration_since(when) >= Duration::from_secs(1))
        {
            self.samples.pop_front();
        }
        let Some(&(then, requests_then, blocks_then, bytes_then)) = self.samples.front() else {
            return IngestRate::default();
        };
        let seconds = now.duration_since(then).as_secs_f64();
        if seconds <= 0.0 {
            return IngestRate::default();
        }
        IngestRate {
            requests_per_s: (requests - requests_then) as f64 / seconds,
            blocks_per_s: (blocks - blocks_then) as f64 / seconds,
            bytes_per_s: (bytes - bytes_then) as f64 / seconds,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rate_meter_measures_the_last_second() {
        let mut meter = RateMeter::default();
        let start = Instant::now();
        assert_eq!(meter.sample(start, 0, 0, 0), IngestRate::default());
        let rate = meter.sample(start + Duration::from_millis(500), 50, 500, 5_000);
        assert!((rate.requests_per_s - 100.0).abs() < 1e-6);
        assert!((rate.blocks_per_s - 1000.0).abs() < 1e-6);
        // Nothing new for two seconds: the rate decays to zero.
        let idle = meter.sample(start + Duration::from_millis(2600), 50, 500, 5_000);
        assert!(idle.requests_per_s.abs() < 1e-9);
    }
}
