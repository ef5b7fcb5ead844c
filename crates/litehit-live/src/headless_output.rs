//! Where `--headless` report lines go: a bounded queue and a writer thread, so a reader that
//! stops reading (a stuck log shipper, a full pipe or FIFO) never blocks the run.
//!
//! The run offers each line with [`HeadlessOutput::offer`], which never waits: while
//! [`QUEUE_LINES`] lines are still unwritten, the offered line is dropped and counted (the
//! newest, so the lines that do get through stay in order and each one's `dropped_lines`
//! says how many were skipped before it). Only the writer thread calls `write(2)`, on its own
//! descriptor of standard output (not `std::io::Stdout`, whose lock it would hold while
//! blocked). The run's last line is always queued ([`HeadlessOutput::push_last`]), and
//! [`HeadlessOutput::finish`] waits at most [`DRAIN_WAIT`] for the queue to be written: a
//! reader that is still stuck then loses what is left (counted), and the process exits
//! anyway. The drop count goes to the ingest thread's counter, so `/metrics` and the exit
//! summary show it too.
//!
//! Must not format a line (`headless` does) or wait on the reader anywhere but in the
//! writer thread.

use std::collections::VecDeque;
use std::io::{self, Write};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, PoisonError};
use std::time::{Duration, Instant};

/// Lines waiting for the reader at most (beyond them, new lines are dropped and counted).
pub const QUEUE_LINES: usize = 16;

/// How long [`HeadlessOutput::finish`] waits for a stalled reader before the run exits
/// without the lines it has not taken.
pub const DRAIN_WAIT: Duration = Duration::from_secs(2);

/// What happened to standard output so far.
#[derive(Debug, Default)]
struct State {
    queue: VecDeque<Vec<u8>>,
    /// No more lines will come: the writer ends once the queue is empty.
    closed: bool,
    /// The writer is inside `write(2)` with a line taken from the queue.
    writing: bool,
    /// The reader closed its end (`| head -1`): lines are discarded from then on.
    reader_gone: bool,
    /// A write failed otherwise (the first error, as text).
    error: Option<String>,
}

/// The shared state and the condition variable the writer and the run wait on.
#[derive(Debug, Default)]
struct Shared {
    state: Mutex<State>,
    changed: Condvar,
}

impl Shared {
    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        // A panicking writer leaves the state as it was: still usable.
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// The headless report's output (see the module docs).
#[derive(Debug)]
pub struct HeadlessOutput {
    shared: Arc<Shared>,
    /// Lines dropped so far (shared with the ingest thread, which publishes it).
    dropped: Arc<AtomicU64>,
    writer: Option<std::thread::JoinHandle<()>>,
}

/// How the output ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    /// Lines the reader never got, in all.
    pub dropped_lines: u64,
    /// The first failed write (a closed reader is not one).
    pub error: Option<String>,
}

/// Whether the run can go on printing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputState {
    Open,
    /// Standard output is closed (`| head -1` exited): the run ends cleanly.
    ReaderGone,
}

impl HeadlessOutput {
    /// Lines to a new descriptor of this process's standard output; drops counted in
    /// `dropped`.
    pub fn stdout(dropped: Arc<AtomicU64>) -> io::Result<Self> {
        use std::os::fd::AsFd as _;
        let fd = io::stdout().as_fd().try_clone_to_owned()?;
        Self::to_writer(std::fs::File::from(fd), dropped)
    }

    /// Lines to `out`, written on a thread of their own.
    pub fn to_writer(
        out: impl Write + Send + 'static,
        dropped: Arc<AtomicU64>,
    ) -> io::Result<Self> {
        let shared = Arc::new(Shared::default());
        let writer = {
            let shared = Arc::clone(&shared);
            std::thread::Builder::new()
                .name("litehit-headless-out".to_owned())
                .spawn(move || write_lines(out, &shared))?
        };
        Ok(Self {
            shared,
            dropped,
            writer: Some(writer),
        })
    }

    /// Lines dropped so far (this count goes into the next line that is queued).
    #[must_use]
    pub fn dropped_lines(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Queues `line` (with its newline) unless [`QUEUE_LINES`] are still unwritten: then it
    /// is dropped and counted. Never waits. A failed write is returned here (once).
    pub fn offer(&self, line: Vec<u8>) -> Result<OutputState, String> {
        let mut state = self.shared.lock();
        if let Some(error) = state.error.take() {
            return Err(error);
        }
        if state.reader_gone {
            return Ok(OutputState::ReaderGone);
        }
        if state.queue.len() >= QUEUE_LINES {
            self.dropped.fetch_add(1, Ordering::Relaxed);
        } else {
            state.queue.push_back(line);
            self.shared.changed.notify_all();
        }
        Ok(OutputState::Open)
    }

    /// Queues the run's last line whatever the queue holds (one line beyond the bound), so
    /// a reader that is only slow still gets it.
    pub fn push_last(&self, line: Vec<u8>) {
        let mut state = self.shared.lock();
        if !state.reader_gone {
            state.queue.push_back(line);
            self.shared.changed.notify_all();
        }
    }

    /// Ends the output: waits at most `wait` for the queued lines to be written, then counts
    /// those still unwritten as dropped.
    pub fn finish(mut self, wait: Duration) -> Finished {
        let deadline = Instant::now() + wait;
        let mut state = self.shared.lock();
        state.closed = true;
        self.shared.changed.notify_all();
        while !state.queue.is_empty() || state.writing {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            state = self
                .shared
                .changed
                .wait_timeout(state, left)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
        }
        let stuck = state.queue.len() as u64 + u64::from(state.writing);
        state.queue.clear();
        self.dropped.fetch_add(stuck, Ordering::Relaxed);
        let error = state.error.take();
        let drained = stuck == 0;
        drop(state);
        if drained && let Some(writer) = self.writer.take() {
            // It has written everything and is ending: nothing can block it now.
            let _ = writer.join();
        }
        // Otherwise it stays blocked in `write(2)` on a reader that does not read; the
        // process exits without it.
        Finished {
            dropped_lines: self.dropped.load(Ordering::Relaxed),
            error,
        }
    }
}

impl Drop for HeadlessOutput {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        state.closed = true;
        self.shared.changed.notify_all();
    }
}

/// The writer thread: takes lines one at a time and writes them, until the output is
/// closed and empty, or the reader is gone.
fn write_lines(mut out: impl Write, shared: &Shared) {
    loop {
        let line = {
            let mut state = shared.lock();
            loop {
                if let Some(line) = state.queue.pop_front() {
                    state.writing = true;
                    break line;
                }
                if state.closed || state.reader_gone {
                    return;
                }
                state = shared
                    .changed
                    .wait(state)
                    .unwrap_or_else(PoisonError::into_inner);
            }
        };
        let written = out.write_all(&line).and_then(|()| out.flush());
        let mut state = shared.lock();
        state.writing = false;
        match written {
            Ok(()) => {}
            Err(error) if error.kind() == io::ErrorKind::BrokenPipe => {
                state.reader_gone = true;
                state.queue.clear();
            }
            Err(error) => {
                state.error.get_or_insert_with(|| error.to_string());
                state.queue.clear();
            }
        }
        shared.changed.notify_all();
        if state.reader_gone || state.error.is_some() {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A writer that blocks every write until `open` is set.
    struct Gate {
        open: Arc<(Mutex<bool>, Condvar)>,
        written: Arc<Mutex<Vec<u8>>>,
    }

    impl Write for Gate {
        fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
            let (open, changed) = &*self.open;
            let mut is_open = open.lock().unwrap();
            while !*is_open {
                is_open = changed.wait(is_open).unwrap();
            }
            self.written.lock().unwrap().extend_from_slice(buf);
            Ok(buf.len())
        }
        fn flush(&mut self) -> io::Result<()> {
            Ok(())
        }
    }

    #[test]
    fn a_stalled_reader_never_blocks_offers_and_drops_are_counted() {
        let open = Arc::new((Mutex::new(false), Condvar::new()));
        let written = Arc::new(Mutex::new(Vec::new()));
        let gate = Gate {
            open: Arc::clone(&open),
            written: Arc::clone(&written),
        };
        let dropped = Arc::new(AtomicU64::new(0));
        let output = HeadlessOutput::to_writer(gate, Arc::clone(&dropped)).unwrap();
        // The writer takes the first line and blocks in write; QUEUE_LINES more are queued;
        // every other offer returns at once, dropped.
        let offers = QUEUE_LINES as u64 + 1 + 100;
        for i in 0..offers {
            assert_eq!(
                output.offer(format!("{i}\n").into_bytes()),
                Ok(OutputState::Open)
            );
        }
        // Until the writer has taken the first line, it is one more in the queue.
        let dropped_now = dropped.load(Ordering::Relaxed);
        assert!((100..=101).contains(&dropped_now), "{dropped_now}");
        output.push_last(b"last\n".to_vec());
        // Still stalled: finish gives up after its wait and counts what is left.
        let finished = output.finish(Duration::from_millis(50));
        assert_eq!(
            finished,
            Finished {
                dropped_lines: offers + 1,
                error: None
            },
            "every line was dropped: none was written"
        );
        *open.0.lock().unwrap() = true;
        open.1.notify_all();
    }

    #[test]
    fn a_reader_that_reads_gets_every_line_in_order() {
        let open = Arc::new((Mutex::new(true), Condvar::new()));
        let written = Arc::new(Mutex::new(Vec::new()));
        let gate = Gate {
            open,
            written: Arc::clone(&written),
        };
        let dropped = Arc::new(AtomicU64::new(0));
        let output = HeadlessOutput::to_writer(gate, Arc::clone(&dropped)).unwrap();
        output.offer(b"a\n".to_vec()).unwrap();
        output.push_last(b"b\n".to_vec());
        let finished = output.finish(Duration::from_secs(600));
        assert_eq!(&*written.lock().unwrap(), b"a\nb\n");
        assert_eq!(finished.dropped_lines, 0);
    }

    #[test]
    fn a_closed_reader_is_told_not_an_error() {
        struct Closed;
        impl Write for Closed {
            fn write(&mut self, _: &[u8]) -> io::Result<usize> {
                Err(io::ErrorKind::BrokenPipe.into())
            }
            fn flush(&mut self) -> io::Result<()> {
                Ok(())
            }
        }
        let output = HeadlessOutput::to_writer(Closed, Arc::default()).unwrap();
        assert_eq!(output.offer(b"a\n".to_vec()), Ok(OutputState::Open));
        {
            let state = output.shared.lock();
            let (state, timeout) = output
                .shared
                .changed
                .wait_timeout_while(state, Duration::from_secs(600), |state| !state.reader_gone)
                .unwrap();
            assert!(!timeout.timed_out());
            drop(state);
        }
        assert_eq!(output.offer(b"b\n".to_vec()), Ok(OutputState::ReaderGone));
        assert_eq!(output.finish(Duration::from_secs(600)).error, None);
    }
}
