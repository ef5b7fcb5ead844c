//! View state and key handling: `key → Option<Command>`, pure (no I/O, no engine).
//!
//! [`App`] holds what the user is looking at (mode, selected slot and instance) and what it
//! last learned from a snapshot (slot ids, lane count) so that selections stay valid.

use std::collections::VecDeque;
use std::time::Duration;

use crossterm::event::{KeyCode, KeyEvent, KeyEventKind, KeyModifiers, MouseEvent, MouseEventKind};

use litehit_core::grammar::{parse_byte_size, parse_capacity};
use litehit_core::projector::Capacity;
use litehit_live::snapshot::FactsWrite;
use litehit_live::{Command, LiveSnapshot, SlotId};

/// What the screen is in; one at a time.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub enum Mode {
    #[default]
    Normal,
    /// The help overlay listing every key.
    Help,
    /// Typing a new capacity slot.
    SlotEditor(SlotEditor),
    /// Quit was asked with facts rows that no file holds: quit anyway, save first, or stay.
    ConfirmQuit,
    /// Typing the instance filter (`/`); the table follows each key.
    Filter,
    /// Typing the KV bytes per block to assume (`b`), as `--block-bytes` takes it.
    BlockBytes(SlotEditor),
    /// The log of recent notices (`!`), scrolled this many entries from the newest.
    Notices { scroll: usize },
}

/// The column the instance table is sorted by (`o` cycles, `O` reverses).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum SortBy {
    /// By instance id (the default), digit runs compared as numbers (`n2` before `n10`).
    #[default]
    Id,
    Requests,
    InputTokens,
    /// The selected slot's hit rate.
    SlotRate,
    Infinite,
    UniqueBlocks,
}

impl SortBy {
    fn next(self) -> Self {
        match self {
            Self::Id => Self::Requests,
            Self::Requests => Self::InputTokens,
            Self::InputTokens => Self::SlotRate,
            Self::SlotRate => Self::Infinite,
            Self::Infinite => Self::UniqueBlocks,
            Self::UniqueBlocks => Self::Id,
        }
    }
}

/// Rows PgUp / PgDn move by.
pub const PAGE_ROWS: usize = 10;
/// Rows one mouse wheel step moves by.
pub const WHEEL_ROWS: usize = 3;
/// Notices the log keeps (the oldest go first).
pub const NOTICE_LOG_LEN: usize = 100;
/// Bad and out-of-order lines are logged at most once per this much uptime each; those
/// that come in between are folded into the next entry, which says how many it holds (a
/// flood of bad lines adds an entry every 10 s, not one per line).
pub const INPUT_NOTICE_PERIOD: Duration = Duration::from_secs(10);
/// Refreshes per second `+` / `-` stay within (the bounds `--fps` is clamped to).
pub const FPS_BOUNDS: (f64, f64) = (0.5, 120.0);
/// The default refresh rate (`--fps`).
pub const DEFAULT_FPS: f64 = 10.0;

/// One entry of the notice log (`!`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoggedNotice {
    /// Monitor uptime when it was raised.
    pub at: Duration,
    pub text: String,
    /// A problem (error, failed write) rather than news.
    pub problem: bool,
}

/// Where the table's rows were drawn last (the mouse selects by it); filled by the render.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TableRowsOnScreen {
    /// The columns the table spans.
    pub x: std::ops::Range<u16>,
    /// Screen line → `selected_row` value.
    pub rows: Vec<(u16, usize)>,
}

/// The input problems the notice log has told of: `(count told, uptime of its last entry)`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct LoggedInput {
    bad_lines: (u64, Option<Duration>),
    out_of_order: (u64, Option<Duration>),
}

/// Whether `count` (now) holds lines the log has not told of and may tell now; if so, how
/// many, and `logged` becomes now's count and time.
fn input_to_log(logged: &mut (u64, Option<Duration>), count: u64, now: Duration) -> Option<u64> {
    let (told, at) = *logged;
    let new = count.checked_sub(told).filter(|&new| new > 0);
    if count < told {
        logged.0 = count; // counted anew (a new monitor state): nothing to tell
    }
    let new = new?;
    if at.is_some_and(|at| now.saturating_sub(at) < INPUT_NOTICE_PERIOD) {
        return None; // folded into the next entry
    }
    *logged = (count, Some(now));
    Some(new)
}

/// What a lane is sorted and filtered by, from the last snapshot.
#[derive(Debug, Clone, PartialEq, Default)]
struct LaneKeys {
    instance_id: String,
    requests: u64,
    input_tokens: u64,
    slot_rates: Vec<Option<f64>>,
    infinite_rate: Option<f64>,
    unique_blocks: u64,
}

/// What happens to the facts rows when the monitor quits.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum FactsOnQuit {
    /// Nothing writes them (`watch` without `--facts-out`): quit asks first while some rows
    /// are in no snapshot yet.
    #[default]
    AskFirst,
    /// The ingest thread writes them on the way out (`--facts-out`): quit at once.
    Written,
    /// They are of a generated trace (the demo): quit at once.
    Discarded,
}

/// Compares instance ids as people read them: runs of digits by their value (`n2` before
/// `n10`, `n02` beside `n2` by length), everything else character by character.
#[must_use]
pub fn natural_order(a: &str, b: &str) -> std::cmp::Ordering {
    use std::cmp::Ordering;
    let (mut a, mut b) = (a, b);
    loop {
        let (Some(x), Some(y)) = (a.chars().next(), b.chars().next()) else {
            return a.len().cmp(&b.len());
        };
        let ordering = if x.is_ascii_digit() && y.is_ascii_digit() {
            let run = |text: &str| {
                text.find(|ch: char| !ch.is_ascii_digit())
                    .unwrap_or(text.len())
            };
            let (run_a, run_b) = (run(a), run(b));
            let (digits_a, digits_b) = (&a[..run_a], &b[..run_b]);
            let (value_a, value_b) = (
                digits_a.trim_start_matches('0'),
                digits_b.trim_start_matches('0'),
            );
            let ordering = value_a
                .len()
                .cmp(&value_b.len())
                .then_with(|| value_a.cmp(value_b))
                .then_with(|| digits_a.len().cmp(&digits_b.len()));
            a = &a[run_a..];
            b = &b[run_b..];
            ordering
        } else {
            a = &a[x.len_utf8()..];
            b = &b[y.len_utf8()..];
            x.cmp(&y)
        };
        if ordering != Ordering::Equal {
            return ordering;
        }
    }
}

/// The add-slot input line.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SlotEditor {
    pub input: String,
    /// Why the last Enter was refused.
    pub error: Option<String>,
}

/// The longest text a dialog takes.
const DIALOG_INPUT_CHARS: usize = 24;
/// The longest instance filter (`/`).
const FILTER_CHARS: usize = 64;

impl SlotEditor {
    /// Backspace, Ctrl-U (clears the line) and typed characters (up to
    /// [`DIALOG_INPUT_CHARS`]), the same in every dialog; a change clears the last refusal.
    /// `false` for any other key.
    fn edit(&mut self, key: KeyEvent) -> bool {
        if !edit_line(&mut self.input, key, DIALOG_INPUT_CHARS) {
            return false;
        }
        self.error = None;
        true
    }
}

/// One key in a line being typed (a dialog's, the filter's): Backspace drops the last
/// character, Ctrl-U clears the line, a character is appended while the line is shorter than
/// `max_chars`; other keys, and other Ctrl combinations, type nothing. `true` if it was one
/// of these keys.
fn edit_line(line: &mut String, key: KeyEvent, max_chars: usize) -> bool {
    let ctrl = key.modifiers.contains(KeyModifiers::CONTROL);
    match key.code {
        KeyCode::Backspace => {
            line.pop();
        }
        KeyCode::Char('u') if ctrl => line.clear(),
        KeyCode::Char(ch) if !ctrl && !ch.is_control() && line.chars().count() < max_chars => {
            line.push(ch);
        }
        _ => return false,
    }
    true
}

/// The quit key's help under `watch` without `--facts-out` ([`FactsOnQuit::AskFirst`]).
const QUIT_ASKS_FIRST: &str = "quit (asks first if facts would be lost)";

impl FactsOnQuit {
    /// What the quit key does, in the help: it asks only where facts can be lost.
    #[must_use]
    pub fn quit_help(self) -> &'static str {
        match self {
            Self::AskFirst => QUIT_ASKS_FIRST,
            Self::Written => "quit at once (facts are written on exit)",
            Self::Discarded => "quit at once (demo facts are not kept)",
        }
    }
}

/// Every key the monitor knows, for the help overlay (one source of truth with the tests).
pub const KEY_HELP: &[(&str, &str)] = &[
    ("?", "show / hide this help"),
    ("a", "add a slot (40, 0.5 = GiB; 1000b = blocks)"),
    ("b", "assume KV bytes per block"),
    ("d / Del", "delete the selected slot"),
    ("← → / h l", "select a slot"),
    ("↑ ↓ / k j", "select an instance (curve, timeline)"),
    (
        "PgUp PgDn g G",
        "page · Home/g first · End/G the totals row",
    ),
    ("o / O", "by id, then each column / reverse it"),
    ("/", "filter instances by id (Esc clears)"),
    ("s", "write every fact so far to the facts file"),
    ("p", "pause / resume ingestion"),
    ("w", "next timeline window (auto: fits the span)"),
    ("+ / -", "refresh twice / half as often"),
    ("!", "recent notices, with their times"),
    ("mouse", "click selects a row · wheel scrolls"),
    ("q / Ctrl-C", QUIT_ASKS_FIRST),
    ("Esc / Enter", "close / confirm a dialog"),
    ("Ctrl-U", "clear the line being typed"),
];

/// The timeline's window widths `w` cycles through: `None` chooses one from the trace's
/// span (about one window per two columns), the others are fixed (at least the collected
/// windows' own width).
pub const TIMELINE_WINDOWS: [Option<std::time::Duration>; 6] = [
    None,
    Some(std::time::Duration::from_secs(10)),
    Some(std::time::Duration::from_secs(60)),
    Some(std::time::Duration::from_secs(5 * 60)),
    Some(std::time::Duration::from_secs(15 * 60)),
    Some(std::time::Duration::from_secs(60 * 60)),
];

/// Lines the help holds at most (keys and the words on the screen), a bound for scrolling.
pub const HELP_LINES: usize = 64;

/// The monitor's view state.
#[derive(Debug, Clone, PartialEq)]
pub struct App {
    pub mode: Mode,
    /// Index into the snapshot's slots.
    pub selected_slot: usize,
    /// Index into the snapshot's lanes; `lane_count` selects the totals row.
    pub selected_row: usize,
    /// Set once the user asked to quit.
    pub quitting: bool,
    /// Whether quitting may lose facts (and so asks first).
    pub facts_on_quit: FactsOnQuit,
    /// `litehit demo`: what it generates, said in the title instead of the trace's path.
    pub demo: Option<String>,
    /// Facts rows produced so far (from the last snapshot).
    facts_rows: u64,
    /// The most rows a finished `s` snapshot has held.
    saved_rows: u64,
    pub sort_by: SortBy,
    /// Largest first (the default) or smallest first.
    pub sort_descending: bool,
    /// Shows only instances whose id contains this (case-insensitive); empty shows all.
    pub filter: String,
    /// Index into [`TIMELINE_WINDOWS`]: the timeline's window width (`w` cycles it).
    pub timeline_window: usize,
    lane_keys: Vec<LaneKeys>,
    slot_ids: Vec<SlotId>,
    /// The capacities of those slots (a capacity shown already is not added twice).
    slot_capacities: Vec<Capacity>,
    lane_count: usize,
    /// With the shared pool lane (`watch --pool`) in the last snapshot: its row's
    /// `selected_row` value, [`Self::pool_row`], after the totals.
    observed_pool_row: Option<usize>,
    /// Select the next slot that appears (the one just added).
    select_new_slot: bool,
    /// The distinct KV bytes per block of the lanes (a GB slot's block count depends on it).
    lane_block_bytes: Vec<u64>,
    /// Refreshes per second (`+` / `-`; `--fps` at start).
    pub fps: f64,
    /// Lines of the help scrolled off its top (↑↓ while it is open).
    pub help_scroll: usize,
    /// Recent notices, oldest first (`!` shows them).
    pub notice_log: VecDeque<LoggedNotice>,
    /// The block bytes (`b`) the log last said: a change is logged once, when it is seen.
    logged_block_bytes: Option<u64>,
    /// The bad and out-of-order lines the log has told of, and when it last did.
    logged_input: LoggedInput,
    /// Where the table rows were drawn (set by the render, read by the mouse).
    pub table_rows_on_screen: std::cell::RefCell<TableRowsOnScreen>,
}

impl Default for App {
    fn default() -> Self {
        Self {
            mode: Mode::default(),
            selected_slot: 0,
            selected_row: 0,
            quitting: false,
            facts_on_quit: FactsOnQuit::default(),
            demo: None,
            facts_rows: 0,
            saved_rows: 0,
            sort_by: SortBy::default(),
            sort_descending: false,
            filter: String::new(),
            timeline_window: 0,
            lane_keys: Vec::new(),
            slot_ids: Vec::new(),
            slot_capacities: Vec::new(),
            lane_count: 0,
            observed_pool_row: None,
            select_new_slot: false,
            lane_block_bytes: Vec::new(),
            fps: DEFAULT_FPS,
            help_scroll: 0,
            notice_log: VecDeque::new(),
            logged_block_bytes: None,
            logged_input: LoggedInput::default(),
            table_rows_on_screen: std::cell::RefCell::default(),
        }
    }
}

impl App {
    /// Learns the slots and lanes of a new snapshot and keeps the selections valid.
    pub fn observe(&mut self, snap: &LiveSnapshot) {
        self.log_notices(snap);
        let ids: Vec<SlotId> = snap.slots.iter().map(|slot| slot.id).collect();
        let selected_id = self.slot_ids.get(self.selected_slot).copied();
        if self.select_new_slot {
            if let Some(index) = ids.iter().position(|id| !self.slot_ids.contains(id)) {
                self.selected_slot = index;
                self.select_new_slot = false;
            }
        } else if let Some(index) = selected_id.and_then(|id| ids.iter().position(|&x| x == id)) {
            self.selected_slot = index;
        }
        self.selected_slot = self.selected_slot.min(ids.len().saturating_sub(1));
        self.slot_ids = ids;
        self.slot_capacities = snap.slots.iter().map(|slot| slot.capacity).collect();
        self.lane_count = snap.lanes.len();
        self.observed_pool_row = snap.pool.is_some().then_some(self.lane_count + 1);
        self.selected_row = self.selected_row.min(self.max_row());
        self.lane_keys = snap
            .lanes
            .iter()
            .map(|lane| LaneKeys {
                instance_id: lane.instance_id.clone(),
                requests: lane.requests,
                input_tokens: lane.input_tokens,
                slot_rates: (0..snap.slots.len())
                    .map(|index| lane.slot_hit_rate(index))
                    .collect(),
                infinite_rate: lane.infinite_hit_rate(),
                unique_blocks: lane.unique_blocks,
            })
            .collect();
        let mut block_bytes: Vec<u64> = snap
            .lanes
            .iter()
            .map(|lane| lane.block_bytes)
            .filter(|&block_bytes| block_bytes > 0)
            .collect();
        block_bytes.sort_unstable();
        block_bytes.dedup();
        self.lane_block_bytes = block_bytes;
        self.facts_rows = snap.facts_rows;
        if let FactsWrite::Done { rows, .. } = snap.facts_write {
            self.saved_rows = self.saved_rows.max(rows);
        }
    }

    /// Facts rows that quitting now would lose: rows no finished snapshot holds, when
    /// nothing writes them on the way out.
    pub fn unsaved_rows(&self) -> u64 {
        match self.facts_on_quit {
            FactsOnQuit::AskFirst => self.facts_rows.saturating_sub(self.saved_rows),
            FactsOnQuit::Written | FactsOnQuit::Discarded => 0,
        }
    }

    /// The selected lane, or `None` for the totals row (and the pool's).
    pub fn selected_lane(&self) -> Option<usize> {
        if self.selected_pool() {
            return None;
        }
        (self.lane_count <= 1 || self.selected_row < self.lane_count).then_some(self.selected_row)
    }

    /// The `selected_row` value of the shared pool's row (pinned below the totals).
    pub fn pool_row(&self) -> usize {
        self.lane_count + 1
    }

    /// Whether the shared pool's row is selected (then the curve shows the pool).
    pub fn selected_pool(&self) -> bool {
        self.observed_pool_row == Some(self.selected_row)
    }

    /// Lanes in the last snapshot observed.
    pub fn observed_lane_count(&self) -> usize {
        self.lane_keys.len()
    }

    /// Adds the snapshot's notices to the log when they are new.
    fn log_notices(&mut self, snap: &LiveSnapshot) {
        for notice in crate::notice::loggable_notices(snap) {
            let at = snap.uptime.saturating_sub(notice.age.unwrap_or_default());
            // The same event in the next snapshot: same text, same moment (an age-less
            // notice, a problem still current, is one entry while it lasts).
            let known = self.notice_log.iter().rev().take(8).any(|logged| {
                logged.text == notice.text
                    && (notice.age.is_none() || logged.at.abs_diff(at) <= Duration::from_secs(2))
            });
            if known {
                continue;
            }
            self.push_notice(at, notice);
        }
        // Bad and out-of-order lines: one entry per kind at most every INPUT_NOTICE_PERIOD,
        // saying how many lines it folds.
        let health = &snap.health;
        if let Some(count) = input_to_log(
            &mut self.logged_input.bad_lines,
            health.bad_lines,
            snap.uptime,
        ) {
            let notice = crate::notice::bad_lines_notice(count, health.last_error.as_ref());
            self.push_notice(snap.uptime, notice);
        }
        if let Some(count) = input_to_log(
            &mut self.logged_input.out_of_order,
            health.out_of_order_timestamps,
            snap.uptime,
        ) {
            let notice = crate::notice::out_of_order_notice(count);
            self.push_notice(snap.uptime, notice);
        }
        // A `b` change is a state, not an event: logged when it changes (also back to an
        // earlier value), never again while it stays.
        if snap.assumed_block_bytes != self.logged_block_bytes {
            self.logged_block_bytes = snap.assumed_block_bytes;
            if let Some(block_bytes) = snap.assumed_block_bytes {
                let notice = crate::notice::block_bytes_notice(block_bytes);
                self.push_notice(snap.uptime, notice);
            }
        }
    }

    fn push_notice(&mut self, at: Duration, notice: crate::notice::Notice) {
        if self.notice_log.len() == NOTICE_LOG_LEN {
            self.notice_log.pop_front();
        }
        self.notice_log.push_back(LoggedNotice {
            at,
            text: notice.text,
            problem: notice.problem,
        });
    }

    /// The period between two frames at the current refresh rate.
    pub fn frame_period(&self) -> Duration {
        Duration::from_secs_f64(1.0 / self.fps.clamp(FPS_BOUNDS.0, FPS_BOUNDS.1))
    }

    /// `+` (factor 2) / `-` (factor ½): the refresh rate, within [`FPS_BOUNDS`].
    fn change_refresh(&mut self, factor: f64) -> Option<Command> {
        let fps = (self.fps * factor).clamp(FPS_BOUNDS.0, FPS_BOUNDS.1);
        if (fps - self.fps).abs() < f64::EPSILON {
            return None; // at a bound already
        }
        self.fps = fps;
        Some(Command::SetFramePeriod(self.frame_period()))
    }

    /// Why `capacity` is no new slot, if it is not: the one slot policy `watch --capacity-gb`
    /// and the defaults file apply too, at the lanes' block bytes.
    fn refuse_slot(&self, capacity: Capacity) -> Option<String> {
        litehit_core::slots::check_new(&self.slot_capacities, capacity, &self.lane_block_bytes)
            .err()
            .map(|error| error.to_string())
    }

    /// A mouse event: a click on a table row selects it, the wheel moves the selection.
    pub fn handle_mouse(&mut self, mouse: MouseEvent) {
        if self.mode != Mode::Normal {
            return;
        }
        match mouse.kind {
            MouseEventKind::ScrollDown => self.move_selection(WHEEL_ROWS.cast_signed()),
            MouseEventKind::ScrollUp => self.move_selection(-WHEEL_ROWS.cast_signed()),
            MouseEventKind::Down(crossterm::event::MouseButton::Left) => {
                let hit = {
                    let on_screen = self.table_rows_on_screen.borrow();
                    on_screen
                        .x
                        .contains(&mouse.column)
                        .then(|| {
                            on_screen
                                .rows
                                .iter()
                                .find(|&&(y, _)| y == mouse.row)
                                .map(|&(_, row)| row)
                        })
                        .flatten()
                };
                if let Some(row) = hit {
                    self.selected_row = row;
                }
            }
            _ => {}
        }
    }

    /// The lanes the table lists, in its order: filtered by [`Self::filter`], sorted by
    /// [`Self::sort_by`] (ties, and [`SortBy::Id`], by id as [`natural_order`] compares).
    pub fn lane_order(&self) -> Vec<usize> {
        let needle = self.filter.to_lowercase();
        let mut order: Vec<usize> = (0..self.lane_keys.len())
            .filter(|&index| {
                needle.is_empty()
                    || self.lane_keys[index]
                        .instance_id
                        .to_lowercase()
                        .contains(&needle)
            })
            .collect();
        let slot = self.selected_slot;
        let rate = |rate: Option<f64>| rate.unwrap_or(-1.0);
        let key = |index: usize| -> f64 {
            let lane = &self.lane_keys[index];
            match self.sort_by {
                SortBy::Id => 0.0,
                SortBy::Requests => lane.requests as f64,
                SortBy::InputTokens => lane.input_tokens as f64,
                SortBy::SlotRate => rate(lane.slot_rates.get(slot).copied().flatten()),
                SortBy::Infinite => rate(lane.infinite_rate),
                SortBy::UniqueBlocks => lane.unique_blocks as f64,
            }
        };
        let id = |index: usize| self.lane_keys[index].instance_id.as_str();
        order.sort_by(|&a, &b| {
            let (by_key, by_id) = (key(a).total_cmp(&key(b)), natural_order(id(a), id(b)));
            match (self.sort_by, self.sort_descending) {
                (SortBy::Id, true) => by_id.reverse(),
                // Ties of a column stay in id order either way.
                (_, true) => by_key.reverse().then(by_id),
                (_, false) => by_key.then(by_id),
            }
        });
        order
    }

    /// The table's rows top to bottom, as `selected_row` values: the listed lanes, then the
    /// totals row (pinned at the bottom) when there are several lanes.
    pub fn row_order(&self) -> Vec<usize> {
        let mut rows = self.lane_order();
        if self.lane_count > 1 {
            rows.push(self.lane_count);
        }
        rows.extend(self.observed_pool_row);
        rows
    }

    /// Moves the selection `delta` rows down (up if negative) in the table's order, clamped.
    fn move_selection(&mut self, delta: isize) {
        let rows = self.row_order();
        let Some(last) = rows.len().checked_sub(1) else {
            return;
        };
        let at = rows
            .iter()
            .position(|&row| row == self.selected_row)
            .unwrap_or(0);
        let target = at.saturating_add_signed(delta).min(last);
        self.selected_row = rows[target];
    }

    fn select_end(&mut self, last: bool) {
        let rows = self.row_order();
        let row = if last { rows.last() } else { rows.first() };
        if let Some(&row) = row {
            self.selected_row = row;
        }
    }

    fn max_row(&self) -> usize {
        // A totals row exists only with several lanes; the pool's row comes after it.
        if let Some(pool_row) = self.observed_pool_row {
            pool_row
        } else if self.lane_count > 1 {
            self.lane_count
        } else {
            0
        }
    }

    /// Handles one key; returns what the ingest thread must do, if anything.
    pub fn handle_key(&mut self, key: KeyEvent) -> Option<Command> {
        if key.kind != KeyEventKind::Press {
            return None;
        }
        let ctrl_c =
            key.modifiers.contains(KeyModifiers::CONTROL) && key.code == KeyCode::Char('c');
        if self.mode == Mode::ConfirmQuit {
            return match key.code {
                _ if ctrl_c => Some(self.quit()),
                KeyCode::Char('q' | 'y') => Some(self.quit()),
                KeyCode::Char('s') => {
                    self.mode = Mode::Normal;
                    Some(Command::WriteFacts)
                }
                KeyCode::Esc | KeyCode::Char('n') => {
                    self.mode = Mode::Normal;
                    None
                }
                _ => None,
            };
        }
        if ctrl_c {
            return self.ask_to_quit();
        }
        match &mut self.mode {
            Mode::ConfirmQuit => None,
            Mode::Filter => {
                match key.code {
                    KeyCode::Esc => {
                        self.filter.clear();
                        self.mode = Mode::Normal;
                    }
                    KeyCode::Enter => self.mode = Mode::Normal,
                    _ => {
                        edit_line(&mut self.filter, key, FILTER_CHARS);
                    }
                }
                // The selection stays on a listed row.
                self.move_selection(0);
                None
            }
            Mode::Help => self.handle_help_key(key.code),
            Mode::SlotEditor(editor) => match key.code {
                KeyCode::Esc => {
                    self.mode = Mode::Normal;
                    None
                }
                KeyCode::Enter => {
                    let input = editor.input.clone();
                    match parse_capacity(&input) {
                        Ok(capacity) => {
                            if let Some(reason) = self.refuse_slot(capacity) {
                                self.set_editor_error(reason);
                                None
                            } else {
                                self.mode = Mode::Normal;
                                self.select_new_slot = true;
                                Some(Command::AddSlot(capacity))
                            }
                        }
                        Err(message) => {
                            editor.error = Some(message.to_string());
                            None
                        }
                    }
                }
                _ => {
                    editor.edit(key);
                    None
                }
            },
            Mode::BlockBytes(_) => self.handle_block_bytes_key(key),
            Mode::Notices { .. } => self.handle_notices_key(key.code),
            Mode::Normal => self.handle_normal_key(key.code),
        }
    }

    fn handle_help_key(&mut self, code: KeyCode) -> Option<Command> {
        match code {
            KeyCode::Char('?') | KeyCode::Esc | KeyCode::Enter => {
                self.mode = Mode::Normal;
                self.help_scroll = 0;
            }
            KeyCode::Char('q') => return self.ask_to_quit(),
            KeyCode::Down | KeyCode::Char('j') => self.help_scroll += 1,
            KeyCode::Up | KeyCode::Char('k') => {
                self.help_scroll = self.help_scroll.saturating_sub(1);
            }
            KeyCode::PageDown => self.help_scroll += PAGE_ROWS,
            KeyCode::PageUp => {
                self.help_scroll = self.help_scroll.saturating_sub(PAGE_ROWS);
            }
            KeyCode::Home | KeyCode::Char('g') => self.help_scroll = 0,
            _ => {}
        }
        // The render clamps it to the lines that are off screen.
        self.help_scroll = self.help_scroll.min(HELP_LINES);
        None
    }

    fn handle_block_bytes_key(&mut self, key: KeyEvent) -> Option<Command> {
        let Mode::BlockBytes(editor) = &mut self.mode else {
            return None;
        };
        match key.code {
            KeyCode::Esc => {
                self.mode = Mode::Normal;
                None
            }
            KeyCode::Enter => match parse_byte_size(&editor.input) {
                Ok(0) => {
                    editor.error =
                        Some("0 bytes per block: every GB slot would be 0 blocks".to_owned());
                    None
                }
                Ok(block_bytes) => {
                    self.mode = Mode::Normal;
                    Some(Command::SetBlockBytes(block_bytes))
                }
                Err(message) => {
                    editor.error = Some(message.to_string());
                    None
                }
            },
            _ => {
                editor.edit(key);
                None
            }
        }
    }

    fn handle_notices_key(&mut self, code: KeyCode) -> Option<Command> {
        let last = self.notice_log.len().saturating_sub(1);
        if matches!(code, KeyCode::Char('q')) {
            return self.ask_to_quit();
        }
        let Mode::Notices { scroll } = &mut self.mode else {
            return None;
        };
        match code {
            KeyCode::Char('!') | KeyCode::Esc | KeyCode::Enter => self.mode = Mode::Normal,
            KeyCode::Up | KeyCode::Char('k') => *scroll = (*scroll + 1).min(last),
            KeyCode::Down | KeyCode::Char('j') => *scroll = scroll.saturating_sub(1),
            KeyCode::PageUp => *scroll = (*scroll + PAGE_ROWS).min(last),
            KeyCode::PageDown => *scroll = scroll.saturating_sub(PAGE_ROWS),
            KeyCode::Home | KeyCode::Char('g') => *scroll = last,
            KeyCode::End | KeyCode::Char('G') => *scroll = 0,
            _ => {}
        }
        None
    }

    fn set_editor_error(&mut self, reason: String) {
        if let Mode::SlotEditor(editor) = &mut self.mode {
            editor.error = Some(reason);
        }
    }

    fn handle_normal_key(&mut self, code: KeyCode) -> Option<Command> {
        match code {
            KeyCode::Char('q') => return self.ask_to_quit(),
            KeyCode::Char('?') => self.mode = Mode::Help,
            KeyCode::Char('a') => self.mode = Mode::SlotEditor(SlotEditor::default()),
            KeyCode::Char('d') | KeyCode::Delete => {
                return self
                    .slot_ids
                    .get(self.selected_slot)
                    .map(|&id| Command::RemoveSlot(id));
            }
            KeyCode::Char('s') => return Some(Command::WriteFacts),
            KeyCode::Char('p') => return Some(Command::TogglePause),
            KeyCode::Left | KeyCode::Char('h') => {
                self.selected_slot = self.selected_slot.saturating_sub(1);
            }
            KeyCode::Right | KeyCode::Char('l') => {
                self.selected_slot =
                    (self.selected_slot + 1).min(self.slot_ids.len().saturating_sub(1));
            }
            KeyCode::Up | KeyCode::Char('k') => self.move_selection(-1),
            KeyCode::Down | KeyCode::Char('j') => self.move_selection(1),
            KeyCode::PageUp => self.move_selection(-PAGE_ROWS.cast_signed()),
            KeyCode::PageDown => self.move_selection(PAGE_ROWS.cast_signed()),
            KeyCode::Home | KeyCode::Char('g') => self.select_end(false),
            KeyCode::End | KeyCode::Char('G') => self.select_end(true),
            KeyCode::Char('o') => {
                // Numbers largest first; ids from the first.
                self.sort_by = self.sort_by.next();
                self.sort_descending = self.sort_by != SortBy::Id;
            }
            KeyCode::Char('O') => self.sort_descending = !self.sort_descending,
            KeyCode::Char('/') => self.mode = Mode::Filter,
            // A confirmed filter: Esc clears it (as while typing it).
            KeyCode::Esc => {
                self.filter.clear();
                self.move_selection(0);
            }
            KeyCode::Char('w') => {
                self.timeline_window = (self.timeline_window + 1) % TIMELINE_WINDOWS.len();
            }
            KeyCode::Char('b') => self.mode = Mode::BlockBytes(SlotEditor::default()),
            KeyCode::Char('!') => self.mode = Mode::Notices { scroll: 0 },
            KeyCode::Char('+' | '=') => return self.change_refresh(2.0),
            KeyCode::Char('-') => return self.change_refresh(0.5),
            _ => {}
        }
        None
    }

    /// Quits, or asks first when that would lose facts rows.
    fn ask_to_quit(&mut self) -> Option<Command> {
        if self.unsaved_rows() > 0 {
            self.mode = Mode::ConfirmQuit;
            None
        } else {
            Some(self.quit())
        }
    }

    fn quit(&mut self) -> Command {
        self.quitting = true;
        Command::Shutdown
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use litehit_core::projector::Capacity;
    use litehit_live::snapshot::{LaneSnapshot, Slot};
    use litehit_live::tail::TailNotice;

    fn press(code: KeyCode) -> KeyEvent {
        KeyEvent::new(code, KeyModifiers::NONE)
    }

    fn type_text(app: &mut App, text: &str) -> Vec<Command> {
        text.chars()
            .filter_map(|ch| app.handle_key(press(KeyCode::Char(ch))))
            .collect()
    }

    fn snapshot(slot_ids: &[SlotId], lanes: usize) -> LiveSnapshot {
        LiveSnapshot {
            slots: slot_ids
                .iter()
                .map(|&id| Slot {
                    id,
                    capacity: Capacity::Gigabytes(id as f64),
                })
                .collect(),
            lanes: vec![LaneSnapshot::default(); lanes],
            ..LiveSnapshot::default()
        }
        .finished()
    }

    /// The reason the open slot editor shows (panics if it is closed or shows none).
    fn editor_error(app: &App) -> &str {
        let Mode::SlotEditor(editor) = &app.mode else {
            panic!("editor closed")
        };
        editor.error.as_deref().expect("a reason is shown")
    }

    #[test]
    fn a_capacity_shown_already_is_not_added_again() {
        let mut app = App::default();
        app.observe(&snapshot(&[40], 1)); // one slot: 40 GB
        app.handle_key(press(KeyCode::Char('a')));
        type_text(&mut app, "40 GiB");
        assert_eq!(app.handle_key(press(KeyCode::Enter)), None);
        assert!(editor_error(&app).contains("is given twice"));
        for _ in 0..6 {
            app.handle_key(press(KeyCode::Backspace));
        }
        type_text(&mut app, "inf");
        assert_eq!(
            app.handle_key(press(KeyCode::Enter)),
            None,
            "∞ is a column already"
        );
        for _ in 0..3 {
            app.handle_key(press(KeyCode::Backspace));
        }
        type_text(&mut app, "20");
        assert_eq!(
            app.handle_key(press(KeyCode::Enter)),
            Some(Command::AddSlot(Capacity::Gigabytes(20.0)))
        );
    }

    #[test]
    fn add_slot_flow_types_then_confirms() {
        let mut app = App::default();
        assert_eq!(app.handle_key(press(KeyCode::Char('a'))), None);
        assert!(matches!(app.mode, Mode::SlotEditor(_)));
        // Letters that are normal-mode keys are text in the editor.
        assert!(type_text(&mut app, "1000bq").is_empty());
        app.handle_key(press(KeyCode::Backspace));
        assert_eq!(
            app.handle_key(press(KeyCode::Enter)),
            Some(Command::AddSlot(Capacity::Blocks(1000)))
        );
        assert_eq!(app.mode, Mode::Normal);
        assert!(!app.quitting);
    }

    #[test]
    fn bad_slot_input_keeps_the_editor_open_with_a_reason() {
        let mut app = App::default();
        app.handle_key(press(KeyCode::Char('a')));
        type_text(&mut app, "x1");
        assert_eq!(app.handle_key(press(KeyCode::Enter)), None);
        assert!(editor_error(&app).contains("expected GB (40, 0.5), TB"));
        app.handle_key(press(KeyCode::Esc));
        assert_eq!(app.mode, Mode::Normal);
    }

    #[test]
    fn new_slot_gets_selected_when_it_appears() {
        let mut app = App::default();
        app.observe(&snapshot(&[1, 2], 1));
        app.handle_key(press(KeyCode::Char('a')));
        type_text(&mut app, "5");
        app.handle_key(press(KeyCode::Enter));
        app.observe(&snapshot(&[1, 2, 7], 1));
        assert_eq!(app.selected_slot, 2);
    }

    #[test]
    fn delete_names_the_selected_slot_by_id() {
        let mut app = App::default();
        app.observe(&snapshot(&[10, 20, 30], 1));
        app.handle_key(press(KeyCode::Right));
        assert_eq!(
            app.handle_key(press(KeyCode::Char('d'))),
            Some(Command::RemoveSlot(20))
        );
        // After removal the selection stays in range.
        app.observe(&snapshot(&[10, 30], 1));
        assert_eq!(app.selected_slot, 1);
        app.observe(&snapshot(&[], 1));
        assert_eq!(app.handle_key(press(KeyCode::Delete)), None);
    }

    #[test]
    fn selection_follows_the_slot_when_an_earlier_one_goes() {
        let mut app = App::default();
        app.observe(&snapshot(&[10, 20, 30], 1));
        app.handle_key(press(KeyCode::Right));
        app.handle_key(press(KeyCode::Right));
        app.observe(&snapshot(&[20, 30], 1));
        assert_eq!(app.selected_slot, 1, "still on slot 30");
    }

    #[test]
    fn arrows_clamp_and_totals_row_exists_only_with_several_lanes() {
        let mut app = App::default();
        app.observe(&snapshot(&[1, 2], 1));
        for _ in 0..5 {
            app.handle_key(press(KeyCode::Right));
            app.handle_key(press(KeyCode::Down));
        }
        assert_eq!((app.selected_slot, app.selected_row), (1, 0));
        assert_eq!(app.selected_lane(), Some(0));
        app.observe(&snapshot(&[1, 2], 3));
        for _ in 0..5 {
            app.handle_key(press(KeyCode::Down));
        }
        assert_eq!(app.selected_row, 3);
        assert_eq!(app.selected_lane(), None, "totals row");
        app.handle_key(press(KeyCode::Up));
        assert_eq!(app.selected_lane(), Some(2));
        app.handle_key(press(KeyCode::Left));
        app.handle_key(press(KeyCode::Left));
        assert_eq!(app.selected_slot, 0);
    }

    #[test]
    fn simple_keys_map_to_commands() {
        let cases = [
            ('s', Some(Command::WriteFacts)),
            ('p', Some(Command::TogglePause)),
            ('x', None),
        ];
        for (ch, expected) in cases {
            let mut app = App::default();
            assert_eq!(
                app.handle_key(press(KeyCode::Char(ch))),
                expected,
                "key {ch}"
            );
        }
    }

    #[test]
    fn help_toggles_and_quit_works_everywhere() {
        let mut app = App::default();
        app.handle_key(press(KeyCode::Char('?')));
        assert_eq!(app.mode, Mode::Help);
        // Other keys do nothing while help is open.
        assert_eq!(app.handle_key(press(KeyCode::Char('s'))), None);
        app.handle_key(press(KeyCode::Char('?')));
        assert_eq!(app.mode, Mode::Normal);

        assert_eq!(
            app.handle_key(press(KeyCode::Char('q'))),
            Some(Command::Shutdown)
        );
        assert!(app.quitting);

        let mut editing = App::default();
        editing.handle_key(press(KeyCode::Char('a')));
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        assert_eq!(editing.handle_key(ctrl_c), Some(Command::Shutdown));
        assert!(editing.quitting);
    }

    #[test]
    fn key_releases_are_ignored() {
        let mut app = App::default();
        let mut release = press(KeyCode::Char('q'));
        release.kind = KeyEventKind::Release;
        assert_eq!(app.handle_key(release), None);
        assert!(!app.quitting);
    }

    #[test]
    fn help_lists_every_normal_key() {
        let keys = [
            "?", "a", "d", "s", "p", "q", "Ctrl-C", "Esc", "Enter", "←", "↑", "PgUp", "PgDn", "g",
            "G", "o", "O", "/", "b", "+", "-", "!", "mouse", "Ctrl-U",
        ];
        for key in keys {
            assert!(
                KEY_HELP.iter().any(|(k, _)| k.contains(key)),
                "help misses {key}"
            );
        }
    }

    fn with_facts(rows: u64, facts_write: FactsWrite) -> LiveSnapshot {
        LiveSnapshot {
            facts_rows: rows,
            facts_write,
            ..snapshot(&[1], 1)
        }
        .finished()
    }

    fn done(rows: u64) -> FactsWrite {
        FactsWrite::Done {
            path: "facts.csv".to_owned(),
            rows,
            bytes: 1,
        }
    }

    #[test]
    fn quit_asks_first_while_facts_rows_are_in_no_file() {
        let mut app = App::default();
        app.observe(&with_facts(5, FactsWrite::Idle));
        assert_eq!(app.unsaved_rows(), 5);
        assert_eq!(app.handle_key(press(KeyCode::Char('q'))), None);
        assert_eq!(app.mode, Mode::ConfirmQuit);
        assert!(!app.quitting);
        // Other keys do nothing while asking; Esc stays.
        assert_eq!(app.handle_key(press(KeyCode::Char('p'))), None);
        app.handle_key(press(KeyCode::Esc));
        assert_eq!(app.mode, Mode::Normal);
        // From help too; `s` saves first and goes back to the screen.
        app.handle_key(press(KeyCode::Char('?')));
        app.handle_key(press(KeyCode::Char('q')));
        assert_eq!(app.mode, Mode::ConfirmQuit);
        assert_eq!(
            app.handle_key(press(KeyCode::Char('s'))),
            Some(Command::WriteFacts)
        );
        assert_eq!(app.mode, Mode::Normal);
        assert!(!app.quitting);
        // A write in flight saves nothing yet.
        app.observe(&with_facts(
            5,
            FactsWrite::Writing {
                path: "facts.csv".to_owned(),
                rows: 5,
            },
        ));
        assert_eq!(app.unsaved_rows(), 5);
        // Once the snapshot holds every row, quit is at once.
        app.observe(&with_facts(5, done(5)));
        assert_eq!(app.unsaved_rows(), 0);
        assert_eq!(
            app.handle_key(press(KeyCode::Char('q'))),
            Some(Command::Shutdown)
        );
        assert!(app.quitting);
    }

    #[test]
    fn rows_after_the_last_snapshot_ask_again_and_y_or_ctrl_c_quits_anyway() {
        let ctrl_c = KeyEvent::new(KeyCode::Char('c'), KeyModifiers::CONTROL);
        for confirm in [press(KeyCode::Char('y')), press(KeyCode::Char('q')), ctrl_c] {
            let mut app = App::default();
            app.observe(&with_facts(5, done(5)));
            // A later failed write does not forget the rows saved before.
            app.observe(&with_facts(
                7,
                FactsWrite::Failed {
                    path: "facts.csv".to_owned(),
                    message: "disk full".to_owned(),
                },
            ));
            assert_eq!(app.unsaved_rows(), 2);
            assert_eq!(app.handle_key(ctrl_c), None, "asks first");
            assert_eq!(app.mode, Mode::ConfirmQuit);
            assert_eq!(app.handle_key(confirm), Some(Command::Shutdown));
            assert!(app.quitting);
        }
    }

    #[test]
    fn quit_is_at_once_when_facts_are_written_on_quit_or_generated() {
        for facts_on_quit in [FactsOnQuit::Written, FactsOnQuit::Discarded] {
            let mut app = App {
                facts_on_quit,
                ..App::default()
            };
            app.observe(&with_facts(5, FactsWrite::Idle));
            assert_eq!(app.unsaved_rows(), 0);
            assert_eq!(
                app.handle_key(press(KeyCode::Char('q'))),
                Some(Command::Shutdown),
                "{facts_on_quit:?}"
            );
        }
    }

    /// `count` lanes `n00`, `n01`, …; lane `i` has `requests[i]` requests and slot 0 rate
    /// `rates[i]` (hit tokens of 100 input tokens, one token per block).
    fn fleet(requests: &[u64], rates: &[u64]) -> LiveSnapshot {
        LiveSnapshot {
            lanes: requests
                .iter()
                .zip(rates)
                .enumerate()
                .map(|(index, (&requests, &rate))| LaneSnapshot {
                    instance_id: format!("n{index:02}"),
                    block_size_tokens: 1,
                    requests,
                    input_tokens: 100,
                    slot_hit_blocks: vec![rate],
                    ..LaneSnapshot::default()
                })
                .collect(),
            ..snapshot(&[1], 0)
        }
        .finished()
    }

    fn ids(app: &App) -> Vec<String> {
        app.lane_order()
            .into_iter()
            .map(|index| format!("n{index:02}"))
            .collect()
    }

    #[test]
    fn paging_keys_move_by_a_page_and_to_either_end() {
        let mut app = App::default();
        app.observe(&fleet(&[1; 25], &[0; 25]));
        app.handle_key(press(KeyCode::PageDown));
        assert_eq!(app.selected_row, PAGE_ROWS);
        app.handle_key(press(KeyCode::PageDown));
        app.handle_key(press(KeyCode::PageDown));
        assert_eq!(app.selected_row, 25, "clamped at the totals row");
        assert_eq!(app.selected_lane(), None);
        app.handle_key(press(KeyCode::PageUp));
        assert_eq!(app.selected_row, 25 - PAGE_ROWS);
        app.handle_key(press(KeyCode::Char('g')));
        assert_eq!(app.selected_row, 0);
        app.handle_key(press(KeyCode::Char('G')));
        assert_eq!(app.selected_row, 25, "G: the totals row, one key away");
        app.handle_key(press(KeyCode::Home));
        assert_eq!(app.selected_row, 0);
        app.handle_key(press(KeyCode::End));
        assert_eq!(app.selected_row, 25);
    }

    #[test]
    fn sort_cycles_columns_and_the_selection_follows_its_instance() {
        let mut app = App::default();
        app.observe(&fleet(&[5, 9, 1, 9], &[30, 10, 70, 50]));
        assert_eq!(ids(&app), ["n00", "n01", "n02", "n03"]);
        app.handle_key(press(KeyCode::Char('o')));
        assert_eq!(app.sort_by, SortBy::Requests);
        // Largest first; equal keys by id.
        assert_eq!(ids(&app), ["n01", "n03", "n00", "n02"]);
        app.handle_key(press(KeyCode::Char('O')));
        assert_eq!(ids(&app), ["n02", "n00", "n01", "n03"]);
        app.handle_key(press(KeyCode::Char('o')));
        app.handle_key(press(KeyCode::Char('o')));
        assert_eq!(app.sort_by, SortBy::SlotRate);
        assert_eq!(ids(&app), ["n02", "n03", "n00", "n01"]);
        // ↓ walks the sorted order, not the lanes' indices.
        app.handle_key(press(KeyCode::Char('g')));
        assert_eq!(app.selected_row, 2);
        app.handle_key(press(KeyCode::Down));
        assert_eq!(app.selected_row, 3);
        app.handle_key(press(KeyCode::Down));
        assert_eq!(app.selected_row, 0);
        assert_eq!(app.row_order(), [2, 3, 0, 1, 4], "totals row last");
        for _ in 0..3 {
            app.handle_key(press(KeyCode::Char('o')));
        }
        assert_eq!(app.sort_by, SortBy::Id, "the cycle comes back");
        assert!(!app.sort_descending, "ids from the first again");
        assert_eq!(ids(&app), ["n00", "n01", "n02", "n03"]);
    }

    #[test]
    fn the_default_order_is_by_id_whatever_the_arrival() {
        let mut snap = fleet(&[5, 9, 1, 9], &[30, 10, 70, 50]);
        for (lane, id) in snap
            .lanes
            .iter_mut()
            .zip(["node-10", "node-2", "node-1", "a"])
        {
            lane.instance_id = id.to_owned();
        }
        let mut app = App::default();
        app.observe(&snap);
        let listed: Vec<&str> = app
            .lane_order()
            .into_iter()
            .map(|index| snap.lanes[index].instance_id.as_str())
            .collect();
        assert_eq!(listed, ["a", "node-1", "node-2", "node-10"]);
        // Ties of another column: by id as well.
        app.handle_key(press(KeyCode::Char('o')));
        let listed: Vec<&str> = app
            .lane_order()
            .into_iter()
            .map(|index| snap.lanes[index].instance_id.as_str())
            .collect();
        assert_eq!(
            listed,
            ["a", "node-2", "node-10", "node-1"],
            "9, 9, 5, 1 requests"
        );
    }

    #[test]
    fn filter_lists_matching_ids_and_esc_clears_it() {
        let mut app = App::default();
        app.observe(&fleet(&[1; 12], &[0; 12]));
        app.handle_key(press(KeyCode::Char('/')));
        assert_eq!(app.mode, Mode::Filter);
        // Normal-mode keys are text here.
        assert!(type_text(&mut app, "N1").is_empty());
        assert_eq!(ids(&app), ["n10", "n11"], "case-insensitive substring");
        assert_eq!(
            app.selected_row, 10,
            "the selection moves onto a listed row"
        );
        app.handle_key(press(KeyCode::Enter));
        assert_eq!(app.mode, Mode::Normal);
        assert_eq!(app.filter, "N1", "Enter keeps the filter");
        app.handle_key(press(KeyCode::Down));
        assert_eq!(app.selected_row, 11);
        app.handle_key(press(KeyCode::Down));
        assert_eq!(app.selected_row, 12, "the totals row stays reachable");
        app.handle_key(press(KeyCode::Char('/')));
        app.handle_key(press(KeyCode::Backspace));
        app.handle_key(press(KeyCode::Backspace));
        type_text(&mut app, "1");
        assert_eq!(ids(&app), ["n01", "n10", "n11"]);
        app.handle_key(press(KeyCode::Esc));
        assert_eq!(app.filter, "");
        assert_eq!(app.lane_order().len(), 12);
    }
    #[test]
    fn esc_clears_a_confirmed_filter() {
        let mut app = App::default();
        app.observe(&fleet(&[1; 12], &[0; 12]));
        app.handle_key(press(KeyCode::Char('/')));
        type_text(&mut app, "n1");
        app.handle_key(press(KeyCode::Enter));
        assert_eq!(app.lane_order().len(), 2);
        assert_eq!(app.handle_key(press(KeyCode::Esc)), None);
        assert_eq!(app.mode, Mode::Normal);
        assert_eq!(app.filter, "", "Esc clears the confirmed filter");
        assert_eq!(app.lane_order().len(), 12);
    }

    #[test]
    fn ctrl_u_clears_the_line_in_every_input_box_and_types_nothing() {
        let ctrl = |ch| KeyEvent::new(KeyCode::Char(ch), KeyModifiers::CONTROL);
        let mut app = App::default();
        app.observe(&fleet(&[1; 12], &[0; 12]));
        app.handle_key(press(KeyCode::Char('/')));
        type_text(&mut app, "n1");
        app.handle_key(ctrl('u'));
        assert_eq!(app.filter, "", "the filter line is cleared");
        app.handle_key(ctrl('a'));
        assert_eq!(app.filter, "", "other Ctrl keys type nothing");
        app.handle_key(press(KeyCode::Esc));
        for open in ['a', 'b'] {
            app.handle_key(press(KeyCode::Char(open)));
            type_text(&mut app, "40");
            app.handle_key(ctrl('u'));
            let (Mode::SlotEditor(editor) | Mode::BlockBytes(editor)) = &app.mode else {
                panic!("{open}: dialog closed")
            };
            assert_eq!(editor.input, "", "{open}: Ctrl-U clears the line");
            app.handle_key(press(KeyCode::Esc));
        }
    }

    /// One lane with `block_bytes` per block and these slots (capacity, id).
    fn with_geometry(block_bytes: u64, slots: &[Capacity]) -> LiveSnapshot {
        LiveSnapshot {
            slots: slots
                .iter()
                .zip(1..)
                .map(|(&capacity, id)| Slot { id, capacity })
                .collect(),
            lanes: vec![LaneSnapshot {
                block_bytes,
                block_size_tokens: 16,
                ..LaneSnapshot::default()
            }],
            ..LiveSnapshot::default()
        }
        .finished()
    }

    fn try_slot(app: &mut App, text: &str) -> Option<Command> {
        app.mode = Mode::Normal;
        app.handle_key(press(KeyCode::Char('a')));
        type_text(app, text);
        app.handle_key(press(KeyCode::Enter))
    }

    #[test]
    fn the_slot_dialog_refuses_zero_negative_and_sizes_of_an_existing_block_count() {
        let mut app = App::default();
        // 64 MiB blocks: 10 GiB = 160 blocks.
        app.observe(&with_geometry(64 << 20, &[Capacity::Gigabytes(10.0)]));
        for (text, reason) in [
            ("0", "0 GiB is 0 blocks of 64.00 MiB"),
            ("0b", "0 blk is 0 blocks"),
            (
                "-5",
                "unlimited (inf, or any negative size) is always shown",
            ),
            (
                "inf",
                "unlimited (inf, or any negative size) is always shown",
            ),
            ("1e-12", "is 0 blocks of 64.00 MiB"),
            ("160b", "the same block count as the slot 10 GiB"),
            ("10.00000001", "the same block count as the slot 10 GiB"),
            ("10 GiB", "10 GiB is given twice"),
        ] {
            assert_eq!(try_slot(&mut app, text), None, "{text} is refused");
            let shown = editor_error(&app);
            assert!(shown.contains(reason), "{text}: {shown}");
            assert!(
                !shown.contains("always shown") || text == "inf" || text == "-5",
                "{text}: {shown}"
            );
        }
        assert_eq!(
            try_slot(&mut app, "161b"),
            Some(Command::AddSlot(Capacity::Blocks(161)))
        );
        // With other block bytes, 160 blocks is another capacity than 10 GiB.
        app.observe(&with_geometry(1 << 20, &[Capacity::Gigabytes(10.0)]));
        assert_eq!(
            try_slot(&mut app, "160b"),
            Some(Command::AddSlot(Capacity::Blocks(160)))
        );
    }

    #[test]
    fn b_takes_block_bytes_as_the_flag_does_and_refuses_zero() {
        let mut app = App::default();
        app.handle_key(press(KeyCode::Char('b')));
        assert!(matches!(app.mode, Mode::BlockBytes(_)));
        // Normal-mode keys are text here.
        assert!(type_text(&mut app, "0").is_empty());
        assert_eq!(app.handle_key(press(KeyCode::Enter)), None);
        let Mode::BlockBytes(editor) = &app.mode else {
            panic!("the dialog stays open")
        };
        assert!(
            editor
                .error
                .as_deref()
                .unwrap()
                .contains("0 bytes per block")
        );
        app.handle_key(press(KeyCode::Backspace));
        type_text(&mut app, "x");
        app.handle_key(press(KeyCode::Enter));
        let Mode::BlockBytes(editor) = &app.mode else {
            panic!("the dialog stays open")
        };
        assert!(
            editor
                .error
                .as_deref()
                .unwrap()
                .contains("whole number of bytes")
        );
        app.handle_key(press(KeyCode::Backspace));
        type_text(&mut app, "128KiB");
        assert_eq!(
            app.handle_key(press(KeyCode::Enter)),
            Some(Command::SetBlockBytes(128 << 10))
        );
        assert_eq!(app.mode, Mode::Normal);
        app.handle_key(press(KeyCode::Char('b')));
        app.handle_key(press(KeyCode::Esc));
        assert_eq!(app.mode, Mode::Normal, "Esc cancels");
    }

    #[test]
    #[expect(clippy::float_cmp, reason = "powers of two times 10, exact")]
    fn plus_and_minus_double_and_halve_the_refresh_rate_within_bounds() {
        let mut app = App::default();
        assert_eq!(app.fps, DEFAULT_FPS);
        assert_eq!(
            app.handle_key(press(KeyCode::Char('+'))),
            Some(Command::SetFramePeriod(Duration::from_millis(50)))
        );
        assert_eq!(app.fps, 20.0);
        app.handle_key(press(KeyCode::Char('-')));
        app.handle_key(press(KeyCode::Char('-')));
        assert_eq!(app.fps, 5.0);
        assert_eq!(app.frame_period(), Duration::from_millis(200));
        for _ in 0..10 {
            app.handle_key(press(KeyCode::Char('-')));
        }
        assert_eq!(app.fps, FPS_BOUNDS.0);
        assert_eq!(
            app.handle_key(press(KeyCode::Char('-'))),
            None,
            "at the bound"
        );
        for _ in 0..20 {
            app.handle_key(press(KeyCode::Char('=')));
        }
        assert_eq!(app.fps, FPS_BOUNDS.1);
        assert_eq!(
            app.handle_key(press(KeyCode::Char('+'))),
            None,
            "at the bound"
        );
    }

    fn noticed(uptime_s: u64, notice: TailNotice, age_s: u64) -> LiveSnapshot {
        let mut snap = snapshot(&[1], 1);
        snap.uptime = Duration::from_secs(uptime_s);
        snap.source.last_notice = Some((notice, Duration::from_secs(age_s)));
        snap
    }

    fn with_input(uptime_ms: u64, bad_lines: u64, out_of_order: u64) -> LiveSnapshot {
        let mut snap = snapshot(&[1], 1);
        snap.uptime = Duration::from_millis(uptime_ms);
        snap.health.bad_lines = bad_lines;
        snap.health.out_of_order_timestamps = out_of_order;
        snap.health.last_error = Some(litehit_live::snapshot::LineErrorView {
            line_number: bad_lines + 1,
            message: "field \"hash_ids\": expected an array".to_owned(),
        });
        snap
    }

    #[test]
    fn bad_and_out_of_order_lines_are_logged_folded_into_one_entry_per_period() {
        let mut app = App::default();
        app.observe(&with_input(1_000, 0, 0));
        assert!(app.notice_log.is_empty());
        app.observe(&with_input(2_000, 1, 0));
        let entry = app.notice_log.back().expect("the first bad line is logged");
        assert!(entry.problem);
        assert_eq!(entry.at, Duration::from_secs(2));
        assert!(
            entry
                .text
                .starts_with("bad line skipped; the last, line 2: field \"hash_ids\""),
            "{}",
            entry.text
        );
        // A flood: a snapshot every millisecond for 30 s, 100 bad and 3 out-of-order lines
        // each; the log gets one entry per kind per 10 s, and says how many it folds.
        let mut bad = 1;
        let mut out_of_order = 0;
        for ms in 2_001..32_000 {
            bad += 100;
            out_of_order += 3;
            app.observe(&with_input(ms, bad, out_of_order));
        }
        let texts: Vec<&str> = app.notice_log.iter().map(|e| e.text.as_str()).collect();
        assert_eq!(texts.len(), 6, "30 000 snapshots, 6 entries: {texts:#?}");
        assert_eq!(
            texts[1],
            "3 out-of-order timestamps clamped (folded into one entry)"
        );
        // At 12 s: the 10 000 snapshots of 100 lines since the first entry, in one.
        let count = crate::render::format::count;
        assert!(
            texts[2].starts_with(&format!(
                "{} bad lines skipped (folded into one entry); the last, line ",
                count(1_000_000)
            )),
            "{texts:#?}"
        );
        assert_eq!(
            texts[3],
            format!(
                "{} out-of-order timestamps clamped (folded into one entry)",
                count(30_000)
            )
        );
        assert_eq!(app.notice_log[4].at, Duration::from_secs(22));
    }

    #[test]
    fn notices_go_to_the_log_once_with_the_time_they_were_raised() {
        let mut app = App::default();
        app.observe(&noticed(1, TailNotice::Waiting, 1));
        app.observe(&noticed(2, TailNotice::Waiting, 2)); // the same, a second older
        app.observe(&noticed(50, TailNotice::Opened, 5)); // faded on screen, kept here
        app.observe(&noticed(90, TailNotice::Truncated, 0));
        let logged: Vec<(u64, &str)> = app
            .notice_log
            .iter()
            .map(|notice| (notice.at.as_secs(), notice.text.as_str()))
            .collect();
        assert_eq!(logged.len(), 3, "{logged:?}");
        assert_eq!(logged[0].0, 0);
        assert!(logged[0].1.starts_with("waiting"));
        assert_eq!(logged[1].0, 45);
        assert!(logged[1].1.starts_with("opened"));
        assert_eq!(logged[2].0, 90);
        // `!` opens it and scrolls within it; Esc closes it.
        app.handle_key(press(KeyCode::Char('!')));
        assert_eq!(app.mode, Mode::Notices { scroll: 0 });
        for _ in 0..5 {
            app.handle_key(press(KeyCode::Up));
        }
        assert_eq!(
            app.mode,
            Mode::Notices { scroll: 2 },
            "clamped at the oldest"
        );
        app.handle_key(press(KeyCode::End));
        assert_eq!(app.mode, Mode::Notices { scroll: 0 });
        app.handle_key(press(KeyCode::Esc));
        assert_eq!(app.mode, Mode::Normal);
        // The log is bounded.
        for second in 0..2 * NOTICE_LOG_LEN as u64 {
            app.observe(&noticed(1000 + 10 * second, TailNotice::Replaced, 0));
        }
        assert_eq!(app.notice_log.len(), NOTICE_LOG_LEN);
    }

    fn mouse(kind: MouseEventKind, column: u16, row: u16) -> MouseEvent {
        MouseEvent {
            kind,
            column,
            row,
            modifiers: KeyModifiers::NONE,
        }
    }

    #[test]
    fn a_click_selects_the_row_drawn_there_and_the_wheel_moves_the_selection() {
        let mut app = App::default();
        app.observe(&fleet(&[1; 12], &[0; 12]));
        *app.table_rows_on_screen.borrow_mut() = TableRowsOnScreen {
            x: 1..79,
            rows: vec![(4, 0), (5, 1), (6, 2), (7, 12)],
        };
        let left = MouseEventKind::Down(crossterm::event::MouseButton::Left);
        app.handle_mouse(mouse(left, 10, 6));
        assert_eq!(app.selected_row, 2);
        app.handle_mouse(mouse(left, 10, 7));
        assert_eq!(app.selected_lane(), None, "the totals row");
        app.handle_mouse(mouse(left, 79, 5));
        assert_eq!(app.selected_row, 12, "outside the table: nothing");
        app.handle_mouse(mouse(left, 10, 9));
        assert_eq!(app.selected_row, 12, "below the rows: nothing");
        app.handle_mouse(mouse(MouseEventKind::ScrollUp, 0, 0));
        assert_eq!(app.selected_row, 12 - WHEEL_ROWS);
        app.handle_mouse(mouse(MouseEventKind::ScrollDown, 0, 0));
        app.handle_mouse(mouse(MouseEventKind::ScrollDown, 0, 0));
        assert_eq!(app.selected_row, 12, "clamped at the totals row");
        // Not while a dialog is open.
        app.handle_key(press(KeyCode::Char('?')));
        app.handle_mouse(mouse(left, 10, 4));
        assert_eq!(app.selected_row, 12);
    }
}
