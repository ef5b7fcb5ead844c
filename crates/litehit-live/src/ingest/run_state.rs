//! The run's state: reading, paused, finished (the input ended) or stopped (shut down first).
//!
//! The four are exclusive: a run is in exactly one, and each decides what the loop does with
//! the file and with a posted batch. The transitions are the methods (`p`, the end of input,
//! a shutdown); anything else keeps the state as it is:
//!
//! ```text
//!            p                   end of input / out of memory
//! Running ◄─────► Paused         Running, Paused, Stopped ─► Finished
//!
//! shutdown: Running, Paused ─► Stopped; Finished and Stopped stay
//! ```
//!
//! `Finished` outranks `Stopped`: a shutdown's last read that reaches the end of the input
//! (or runs out of memory) ends as `Finished`, and a shutdown after the end keeps it, so what
//! is published says the input was read to its end whenever it was.

use crate::snapshot::FollowState;

/// See the module documentation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub(super) enum RunState {
    /// Reading the input and posted batches.
    #[default]
    Running,
    /// `p`: nothing is read; posted batches are held, to be read on resume.
    Paused,
    /// The input ended (`--exit-at-eof`, the end of standard input) or memory ran out:
    /// nothing more is read, and a posted batch is refused.
    Finished,
    /// The run is ending before the end of its input (a shutdown): what it publishes from
    /// then on says so.
    Stopped,
}

impl RunState {
    /// `p`: `Running` ↔ `Paused`; a finished or stopped run stays as it is (there is nothing
    /// left to pause). Returns whether reading resumed: the held batches are read then.
    pub(super) fn toggle_pause(&mut self) -> bool {
        match *self {
            Self::Running => {
                *self = Self::Paused;
                false
            }
            Self::Paused => {
                *self = Self::Running;
                true
            }
            Self::Finished | Self::Stopped => false,
        }
    }

    /// The input ended or memory ran out: `Finished`, from any state. Returns whether the
    /// state changed (the first time only: the spill is flushed and a snapshot is due then).
    pub(super) fn finish(&mut self) -> bool {
        let changed = *self != Self::Finished;
        *self = Self::Finished;
        changed
    }

    /// A shutdown: `Running` and `Paused` become `Stopped`; `Finished` and `Stopped` stay.
    /// Returns whether the run was reading: only then is the input read one last time (a
    /// paused run reads nothing more, a finished one has read everything).
    pub(super) fn stop(&mut self) -> bool {
        let was_reading = *self == Self::Running;
        if matches!(self, Self::Running | Self::Paused) {
            *self = Self::Stopped;
        }
        was_reading
    }

    /// Whether the file is read (and posted batches are read at once).
    pub(super) fn is_reading(self) -> bool {
        self == Self::Running
    }

    /// Whether posted batches are held for later (paused).
    pub(super) fn holds_batches(self) -> bool {
        self == Self::Paused
    }

    /// The state the snapshot shows: this state's, or, while running, what the reader says
    /// (`reader`: following, catching up, waiting, failed).
    pub(super) fn shown(self, reader: FollowState) -> FollowState {
        match self {
            Self::Running => reader,
            Self::Paused => FollowState::Paused,
            Self::Finished => FollowState::Finished,
            Self::Stopped => FollowState::Stopped,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALL: [RunState; 4] = [
        RunState::Running,
        RunState::Paused,
        RunState::Finished,
        RunState::Stopped,
    ];

    #[test]
    fn pause_toggles_between_running_and_paused_only() {
        let cases = [
            (RunState::Running, RunState::Paused, false),
            (RunState::Paused, RunState::Running, true),
            (RunState::Finished, RunState::Finished, false),
            (RunState::Stopped, RunState::Stopped, false),
        ];
        for (from, to, resumed) in cases {
            let mut state = from;
            assert_eq!(state.toggle_pause(), resumed, "p in {from:?}");
            assert_eq!(state, to, "p in {from:?}");
        }
    }

    #[test]
    fn a_stop_while_paused_stops_without_a_last_read() {
        let mut state = RunState::Paused;
        assert!(!state.stop());
        assert_eq!(state, RunState::Stopped);
        assert_eq!(state.shown(FollowState::Following), FollowState::Stopped);
        // No batch is held once stopped: nobody would resume them.
        assert!(!state.holds_batches());
    }

    #[test]
    fn a_stop_while_running_reads_once_more() {
        let mut state = RunState::Running;
        assert!(state.stop());
        assert_eq!(state, RunState::Stopped);
    }

    #[test]
    fn a_second_stop_changes_nothing() {
        let mut state = RunState::Running;
        assert!(state.stop());
        assert!(!state.stop(), "a second stop reads nothing more");
        assert_eq!(state, RunState::Stopped);
    }

    #[test]
    fn a_stop_after_the_end_of_input_keeps_finished() {
        let mut state = RunState::Finished;
        assert!(!state.stop());
        assert_eq!(state, RunState::Finished);
        assert_eq!(state.shown(FollowState::Following), FollowState::Finished);
    }

    #[test]
    fn input_ending_while_paused_finishes_and_holds_nothing() {
        let mut state = RunState::Paused;
        assert!(state.finish());
        assert_eq!(state, RunState::Finished);
        assert!(!state.holds_batches() && !state.is_reading());
        // `p` does not bring a finished run back to reading.
        assert!(!state.toggle_pause());
        assert_eq!(state, RunState::Finished);
    }

    #[test]
    fn input_ending_in_a_shutdown_last_read_shows_finished() {
        let mut state = RunState::Running;
        state.stop();
        assert!(state.finish());
        assert_eq!(state.shown(FollowState::Following), FollowState::Finished);
    }

    #[test]
    fn the_input_finishes_once() {
        for from in ALL {
            let mut state = from;
            assert_eq!(state.finish(), from != RunState::Finished, "from {from:?}");
            assert!(
                !state.finish(),
                "a second end changes nothing, from {from:?}"
            );
            assert_eq!(state, RunState::Finished);
        }
    }

    #[test]
    fn only_a_running_run_reads_and_shows_the_reader_state() {
        for state in ALL {
            assert_eq!(state.is_reading(), state == RunState::Running, "{state:?}");
            assert_eq!(
                state.shown(FollowState::Failed) == FollowState::Failed,
                state == RunState::Running,
                "{state:?}"
            );
        }
        assert_eq!(
            RunState::Running.shown(FollowState::CatchingUp),
            FollowState::CatchingUp
        );
        assert_eq!(
            RunState::Paused.shown(FollowState::CatchingUp),
            FollowState::Paused
        );
    }
}
