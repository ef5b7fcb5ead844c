//! The stop signals, handled one way by every command: SIGINT (Ctrl-C), SIGTERM and SIGHUP
//! (a closed terminal, `kill`, `timeout`, a service manager) each ask the run to stop
//! cleanly — `replay` removes its temp file and publishes nothing, the monitor (screen or
//! headless) stops its ingest thread, writes `--facts-out` if asked and restores the
//! terminal. Catching them, instead of dying mid-write, is what makes that possible.
//!
//! A first signal only sets a flag that the run polls. What a second one does is the
//! caller's choice ([`SecondSignal`]): `replay` ends at once (the user insists), the monitor
//! keeps catching them, since a closed terminal can send SIGHUP twice (tmux, then the
//! kernel) and the default action of the second would kill the process before it cleans up.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

/// The signals that stop a run: SIGINT, SIGTERM, SIGHUP.
pub const STOP_SIGNALS: [i32; 3] = [
    signal_hook::consts::SIGINT,
    signal_hook::consts::SIGTERM,
    signal_hook::consts::SIGHUP,
];

/// What a second stop signal does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SecondSignal {
    /// Ends the process at once with 128 + the signal.
    Exits,
    /// Is caught like the first (the run is already stopping).
    IsCaught,
}

/// Catches the stop signals while it lives (for [`SecondSignal::IsCaught`], for the rest of
/// the process: see the module docs).
#[derive(Debug)]
pub struct StopSignals {
    received: Arc<AtomicUsize>,
    registrations: Vec<signal_hook::SigId>,
}

impl StopSignals {
    /// Starts catching SIGINT, SIGTERM and SIGHUP.
    pub fn install(second: SecondSignal) -> std::io::Result<Self> {
        let received = Arc::new(AtomicUsize::new(0));
        let seen = Arc::new(AtomicBool::new(false));
        let mut registrations = Vec::new();
        for number in STOP_SIGNALS {
            if second == SecondSignal::Exits {
                // Registered first: a first signal finds `seen` clear and only sets it (below);
                // a second one finds it set and ends the process.
                registrations.push(signal_hook::flag::register_conditional_shutdown(
                    number,
                    128 + number,
                    Arc::clone(&seen),
                )?);
            }
            registrations.push(signal_hook::flag::register(number, Arc::clone(&seen))?);
            registrations.push(signal_hook::flag::register_usize(
                number,
                Arc::clone(&received),
                usize::try_from(number).unwrap_or(usize::MAX),
            )?);
        }
        if second == SecondSignal::IsCaught {
            // Kept for the rest of the process (module docs).
            registrations.clear();
        }
        Ok(Self {
            received,
            registrations,
        })
    }

    /// The last stop signal received, if any.
    #[must_use]
    pub fn received(&self) -> Option<i32> {
        signal_number(&self.received)
    }

    /// A handle to poll from another thread.
    #[must_use]
    pub fn watcher(&self) -> SignalWatcher {
        SignalWatcher(Arc::clone(&self.received))
    }
}

impl Drop for StopSignals {
    fn drop(&mut self) {
        for id in self.registrations.drain(..) {
            signal_hook::low_level::unregister(id);
        }
    }
}

/// Polls [`StopSignals`] from another thread.
#[derive(Debug, Clone)]
pub struct SignalWatcher(Arc<AtomicUsize>);

impl SignalWatcher {
    /// The last stop signal received, if any.
    #[must_use]
    pub fn received(&self) -> Option<i32> {
        signal_number(&self.0)
    }
}

fn signal_number(signal: &AtomicUsize) -> Option<i32> {
    match signal.load(Ordering::Relaxed) {
        0 => None,
        number => i32::try_from(number).ok(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_stop_signal_is_caught_and_named() {
        let signals = StopSignals::install(SecondSignal::IsCaught).unwrap();
        assert_eq!(signals.received(), None);
        for number in STOP_SIGNALS {
            signal_hook::low_level::raise(number).unwrap();
            // Delivered to this thread synchronously by raise(3).
            assert_eq!(signals.received(), Some(number));
            assert_eq!(signals.watcher().received(), Some(number));
        }
    }
}
