//! The UI's inputs as one stream: terminal events (keys, resizes), new snapshots and the
//! frame tick. Only key presses count (`KeyEventKind::Press`; releases and repeats on
//! terminals that report them are dropped here), and of the mouse only clicks and the wheel.

use std::sync::Arc;
use std::time::Duration;

use crossterm::event::{
    Event as TerminalEvent, EventStream, KeyEvent, KeyEventKind, MouseEvent, MouseEventKind,
};
use futures_core::Stream as _;
use tokio::sync::watch;
use tokio::time::{Interval, MissedTickBehavior};

use litehit_live::LiveSnapshot;

/// One thing the UI loop reacts to.
#[derive(Debug)]
pub enum Event {
    /// A key press: handle it and redraw at once.
    Key(KeyEvent),
    /// A mouse click or wheel step: handle it and redraw at once.
    Mouse(MouseEvent),
    /// The terminal changed size: redraw at once.
    Resize,
    /// The ingest thread published a new snapshot: redraw at the next tick.
    Snapshot(Arc<LiveSnapshot>),
    /// Frame period elapsed: redraw if something changed.
    Tick,
    /// The terminal input ended.
    InputClosed,
}

/// Merges the terminal, the snapshot channel and the frame ticker.
pub struct EventSource {
    terminal: EventStream,
    snapshots: watch::Receiver<Arc<LiveSnapshot>>,
    snapshots_open: bool,
    ticker: Interval,
}

impl std::fmt::Debug for EventSource {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EventSource").finish_non_exhaustive()
    }
}

impl EventSource {
    /// Must be called inside a tokio runtime with time enabled.
    pub fn new(snapshots: watch::Receiver<Arc<LiveSnapshot>>, frame_period: Duration) -> Self {
        let mut ticker = tokio::time::interval(frame_period);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
        Self {
            terminal: EventStream::new(),
            snapshots,
            snapshots_open: true,
            ticker,
        }
    }

    /// Ticks once per `frame_period` from now on (`+` / `-`).
    pub fn set_frame_period(&mut self, frame_period: Duration) {
        let mut ticker = tokio::time::interval(frame_period);
        ticker.set_missed_tick_behavior(MissedTickBehavior::Skip);
        self.ticker = ticker;
    }

    /// The latest snapshot (without waiting).
    pub fn latest(&mut self) -> Arc<LiveSnapshot> {
        Arc::clone(&self.snapshots.borrow_and_update())
    }

    /// Waits for the next event.
    pub async fn next(&mut self) -> std::io::Result<Event> {
        loop {
            tokio::select! {
                terminal = next_terminal_event(&mut self.terminal) => match terminal {
                    Some(Ok(TerminalEvent::Key(key))) if key.kind == KeyEventKind::Press => return Ok(Event::Key(key)),
                    Some(Ok(TerminalEvent::Resize(..))) => return Ok(Event::Resize),
                    // Moves and drags are dropped here: only clicks and the wheel act.
                    Some(Ok(TerminalEvent::Mouse(mouse))) if matches!(
                        mouse.kind,
                        MouseEventKind::Down(_) | MouseEventKind::ScrollDown | MouseEventKind::ScrollUp
                    ) => return Ok(Event::Mouse(mouse)),
                    Some(Ok(_)) => {}
                    Some(Err(err)) => return Err(err),
                    None => return Ok(Event::InputClosed),
                },
                changed = self.snapshots.changed(), if self.snapshots_open => match changed {
                    Ok(()) => return Ok(Event::Snapshot(self.latest())),
                    // The ingest thread ended: keep showing the last snapshot.
                    Err(_) => self.snapshots_open = false,
                },
                _ = self.ticker.tick() => return Ok(Event::Tick),
            }
        }
    }
}

/// The stream's next item: the one thing the UI needs of `futures` (`StreamExt::next`),
/// written over `futures-core`'s `Stream`, which crossterm's `EventStream` implements.
async fn next_terminal_event(stream: &mut EventStream) -> Option<std::io::Result<TerminalEvent>> {
    std::future::poll_fn(|cx| std::pin::Pin::new(&mut *stream).poll_next(cx)).await
}
