//! The terminal front end of `litehit watch`: terminal setup, the event loop, drawing.
//!
//! Reads `Arc<LiveSnapshot>`s from the ingest thread and sends [`litehit_live::Command`]s; it
//! never calls the engine or the projector and does no I/O besides the terminal. The loop
//! `select!`s over key/resize events, new snapshots and a frame tick; a key is handled and
//! drawn at once, a snapshot waits for the next tick, and a tick with nothing new draws
//! nothing. `ratatui::init` (after the binary's error hooks) puts a panic hook in place that
//! restores the terminal; quitting and errors restore it too.

pub mod app;
pub mod event;
pub mod notice;
pub mod render;

use std::sync::Arc;

use ratatui::DefaultTerminal;

use app::{App, FactsOnQuit};
use event::{Event, EventSource};
use litehit_live::signals::{SecondSignal, StopSignals};
use litehit_live::{Command, LiveHandle, LiveSnapshot};

/// Front-end settings.
#[derive(Debug, Clone, PartialEq)]
pub struct TuiOptions {
    /// Redraws per second at most (keys are drawn at once regardless).
    pub fps: f64,
    /// What becomes of the facts rows on quit (whether `q` asks first).
    pub facts_on_quit: FactsOnQuit,
    /// `litehit demo`: what the generated trace is (the title says it is a demo and this).
    pub demo: Option<String>,
    /// Draw in colour (`false`: `--color never`, or `NO_COLOR` with `auto`). Without colour
    /// the screen keeps bold, reverse and dim, so the selection still shows.
    pub color: bool,
}

impl Default for TuiOptions {
    fn default() -> Self {
        Self {
            fps: 10.0,
            facts_on_quit: FactsOnQuit::default(),
            color: true,
            demo: None,
        }
    }
}

/// Why the screen could not start or go on.
#[derive(Debug, thiserror::Error)]
pub enum TuiError {
    /// stdin or stdout is not a terminal.
    #[error(
        "the live monitor needs a terminal (stdin and stdout); without one, pass --headless \
         for JSON lines"
    )]
    NotATerminal,
    /// A terminal or runtime call failed; `doing` says which step, the source why.
    #[error("{doing}")]
    Io {
        doing: &'static str,
        #[source]
        source: std::io::Error,
    },
}

fn io_error(doing: &'static str) -> impl FnOnce(std::io::Error) -> TuiError {
    move |source| TuiError::Io { doing, source }
}

/// Fails with a clear message unless the monitor has a terminal to draw on (stdout) and to
/// read keys from: stdin, or — when stdin carries the trace (`watch -`) — the process's
/// controlling terminal (`/dev/tty`, where crossterm reads keys when stdin is no terminal).
/// Call before starting any work.
pub fn ensure_terminal(stdin_is_the_trace: bool) -> Result<(), TuiError> {
    use std::io::IsTerminal as _;
    let keys = if stdin_is_the_trace {
        std::fs::File::open("/dev/tty").is_ok()
    } else {
        std::io::stdin().is_terminal()
    };
    if keys && std::io::stdout().is_terminal() {
        Ok(())
    } else {
        Err(TuiError::NotATerminal)
    }
}

/// Runs the monitor until the user quits; returns the last snapshot for a summary.
pub fn run(live: &LiveHandle, options: TuiOptions) -> Result<Arc<LiveSnapshot>, TuiError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_time()
        .build()
        .map_err(io_error("starting the UI runtime"))?;
    // SIGTERM / SIGHUP (a closed terminal, `kill`, `timeout`) quit like `q` (without asking;
    // `--facts-out` is written on the way out all the same): the terminal is restored and a
    // demo's generated trace removed, instead of dying mid-frame. (In raw mode
    // Ctrl-C is a key, not SIGINT.) The handlers stay for the rest of the process.
    let signals = StopSignals::install(SecondSignal::IsCaught)
        .map_err(io_error("listening for termination signals"))?;
    // crossterm leaves colours out whenever NO_COLOR is set; the caller has decided already
    // (`--color always` wins over NO_COLOR, `never` over a terminal that has colours).
    crossterm::style::force_color_output(options.color);
    let mut terminal = ratatui::try_init().map_err(io_error("setting up the terminal"))?;
    // Clicks select a row, the wheel scrolls the table. Released on every way out: below on
    // return, and by a panic hook that runs before ratatui's (which restores the rest).
    let mouse = crossterm::execute!(std::io::stdout(), crossterm::event::EnableMouseCapture);
    if mouse.is_ok() {
        release_mouse_on_panic();
    }
    let result = runtime.block_on(event_loop(&mut terminal, live, options, &signals));
    if mouse.is_ok() {
        let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture);
    }
    // Not `ratatui::restore()`: it reports a failure with `eprintln!`, which panics when the
    // terminal is gone (SIGHUP), and then nothing is cleaned up. For the same reason a
    // terminal that cannot be restored is not dropped: its drop would `eprintln!` too.
    if ratatui::try_restore().is_err() {
        std::mem::forget(terminal);
    }
    result
}

/// Chains a panic hook that turns mouse capture off before the previous hook (ratatui's,
/// which restores the screen) runs: a shell after a panic gets no mouse escape codes.
fn release_mouse_on_panic() {
    let previous = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let _ = crossterm::execute!(std::io::stdout(), crossterm::event::DisableMouseCapture);
        previous(info);
    }));
}

async fn event_loop(
    terminal: &mut DefaultTerminal,
    live: &LiveHandle,
    options: TuiOptions,
    signals: &StopSignals,
) -> Result<Arc<LiveSnapshot>, TuiError> {
    let mut app = App::default();
    app.fps = options.fps;
    app.facts_on_quit = options.facts_on_quit;
    app.demo = options.demo;
    let mut events = EventSource::new(live.snapshots(), app.frame_period());
    let mut snap = events.latest();
    app.observe(&snap);
    let mut dirty = true;
    loop {
        if signals.received().is_some() {
            live.send(Command::Shutdown);
            return Ok(snap);
        }
        let draw_now = match events
            .next()
            .await
            .map_err(io_error("reading terminal events"))?
        {
            Event::Key(key) => {
                if let Some(command) = app.handle_key(key) {
                    if let Command::SetFramePeriod(period) = command {
                        events.set_frame_period(period);
                    }
                    live.send(command);
                }
                if app.quitting {
                    live.send(Command::Shutdown);
                    return Ok(snap);
                }
                true
            }
            Event::Mouse(mouse) => {
                app.handle_mouse(mouse);
                true
            }
            Event::Resize => true,
            Event::Snapshot(new) => {
                snap = new;
                app.observe(&snap);
                dirty = true;
                false
            }
            Event::Tick => dirty,
            Event::InputClosed => return Ok(snap),
        };
        if draw_now {
            terminal
                .draw(|frame| render::draw(frame, &snap, &app))
                .map_err(io_error("drawing the screen"))?;
            dirty = false;
        }
    }
}
