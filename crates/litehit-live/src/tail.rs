//! Following a growing trace file, like `tail -F` done right.
//!
//! [`Tailer`] reads what the file already holds, then what is appended, and hands out only
//! complete lines (a partial last line waits for its newline). It notices truncation
//! (copytruncate), replacement (logrotate rename + create), deletion and late creation by
//! comparing the path's identity and length with the open handle's on every
//! [`Tailer::check`]. [`FileWatcher`] turns notify events on the parent directory into wake-ups
//! and reports whether events arrive at all, so the caller can fall back to polling.
//!
//! No parsing happens here: the ingest thread splits the returned bytes into lines.

use std::fs::{File, Metadata};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

/// Bytes asked of the OS per read: at least 64 KiB, so a backlog drains at replay speed.
pub const READ_CHUNK_BYTES: usize = 256 * 1024;

/// Where following starts on the first open of the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartAt {
    /// Read what the file already holds, then follow.
    #[default]
    Beginning,
    /// Skip the content the file holds at startup (from the next complete line on); a file
    /// created later is read from its start.
    End,
}

/// Something that happened to the followed path, for the status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TailNotice {
    /// The file does not exist (yet); we wait for it.
    Waiting,
    /// The file was opened (first time, or after it was created late).
    Opened,
    /// The file shrank below what we had read: it was truncated in place (copytruncate).
    /// Reading continues from its start; accumulated state is kept.
    Truncated,
    /// The path now names a new file (rename + create); the old one was read to its end.
    Replaced,
    /// The path vanished (renamed away or deleted). The old file is still followed — a
    /// writer may still append to it — until a new file is at the path and the old one has
    /// been quiet for the rotation grace period ([`ROTATION_GRACE`]).
    Deleted,
}

/// Device and inode of a file, to tell a replaced file from the same one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct FileIdentity {
    device: u64,
    inode: u64,
}

impl FileIdentity {
    #[cfg(unix)]
    #[expect(clippy::unnecessary_wraps, reason = "None on platforms without inodes")]
    fn of(meta: &Metadata) -> Option<Self> {
        use std::os::unix::fs::MetadataExt;
        Some(Self {
            device: meta.dev(),
            inode: meta.ino(),
        })
    }

    #[cfg(not(unix))]
    fn of(_meta: &Metadata) -> Option<Self> {
        None
    }
}

/// The open generation of the followed file.
#[derive(Debug)]
struct OpenFile {
    file: File,
    identity: Option<FileIdentity>,
    /// Bytes read from the file so far (the position of the next read).
    read_offset: u64,
    /// The path no longer names this file: read it to its end, then switch.
    draining: bool,
    /// While draining: since when the old file has had nothing new while a new file waits
    /// at the path (the switch comes [`Tailer::rotation_grace`] later).
    idle_with_successor_since: Option<std::time::Instant>,
}

/// Follows one path; see the module docs.
#[derive(Debug)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent facts about the followed path"
)]
pub struct Tailer {
    path: PathBuf,
    start_at: StartAt,
    opened_before: bool,
    open: Option<OpenFile>,
    /// Read but not yet handed out: `buffer[handed_out..]` starts with the pending partial line.
    buffer: Vec<u8>,
    handed_out: usize,
    /// After `--from-end` opened mid-line: drop bytes up to the next newline.
    skip_to_newline: bool,
    /// File length at the last check or read.
    known_len: u64,
    /// Bumped whenever reading restarts on new content (truncation, replacement, creation).
    generation: u64,
    waiting_reported: bool,
    /// The file was missing at some check: when it appears, all of it is new.
    saw_missing: bool,
    /// How long a renamed-away file must stay idle, once a new file is at the path, before
    /// reading moves to the new one: logrotate's `create` makes the new file before the
    /// writer is told to reopen, and the writer's last lines still go to the old one.
    rotation_grace: std::time::Duration,
}

/// Default of [`Tailer::with_rotation_grace`].
pub const ROTATION_GRACE: std::time::Duration = std::time::Duration::from_secs(2);

impl Tailer {
    /// A tailer for `path`; nothing is opened until [`Self::check`].
    pub fn new(path: impl Into<PathBuf>, start_at: StartAt) -> Self {
        Self {
            path: path.into(),
            start_at,
            opened_before: false,
            open: None,
            buffer: Vec::with_capacity(READ_CHUNK_BYTES),
            handed_out: 0,
            skip_to_newline: false,
            known_len: 0,
            generation: 0,
            waiting_reported: false,
            saw_missing: false,
            rotation_grace: ROTATION_GRACE,
        }
    }

    /// Sets how long a renamed-away file is still read once a new file is at the path and
    /// the old one has gone quiet ([`ROTATION_GRACE`] by default; tests use zero).
    #[must_use]
    pub fn with_rotation_grace(mut self, grace: std::time::Duration) -> Self {
        self.rotation_grace = grace;
        self
    }

    /// Whether a renamed-away or deleted file is still being read (appends to it come
    /// without file-system events about the followed path).
    pub fn is_draining(&self) -> bool {
        self.open.as_ref().is_some_and(|open| open.draining)
    }

    /// Whether the old file is read to its end and a new file waits at the path, to be
    /// switched to once [`Self::with_rotation_grace`]'s period has passed: the end of the
    /// trace is not reached yet (`--exit-at-eof` waits for the new file).
    pub fn switch_pending(&self) -> bool {
        self.open
            .as_ref()
            .is_some_and(|open| open.draining && open.idle_with_successor_since.is_some())
    }

    /// The followed path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Increases each time reading restarts on new content; line numbers restart with it.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether a file is open.
    pub fn is_open(&self) -> bool {
        self.open.is_some()
    }

    /// Bytes of the file not yet handed out as complete lines (the backlog).
    pub fn backlog_bytes(&self) -> u64 {
        self.known_len.saturating_sub(self.consumed_offset())
    }

    /// Offset in the current file up to which complete lines were handed out.
    pub fn consumed_offset(&self) -> u64 {
        let pending = (self.buffer.len() - self.handed_out) as u64;
        self.open
            .as_ref()
            .map_or(0, |open| open.read_offset.saturating_sub(pending))
    }

    /// Bytes of a partial last line held back until its newline arrives.
    pub fn pending_partial_bytes(&self) -> usize {
        self.buffer.len() - self.handed_out
    }

    /// Hands out the pending partial line as a final line (with a `\n` added), for a reader
    /// that stops at the end of the file (`--exit-at-eof`). Empty if there is none.
    pub fn take_partial_line(&mut self) -> Vec<u8> {
        let mut line = self.buffer.split_off(self.handed_out);
        if !line.is_empty() {
            line.push(b'\n');
            if let Some(open) = &self.open {
                // Count it as consumed: the backlog is now zero.
                self.known_len = self.known_len.max(open.read_offset);
            }
        }
        self.handed_out = self.buffer.len();
        line
    }

    /// Heap bytes of the read buffer.
    pub fn memory_usage_bytes(&self) -> usize {
        self.buffer.capacity()
    }

    /// Learns how long the open file is now without reading or acting on any change (a
    /// paused monitor still shows how far behind it is falling). Returns whether the known
    /// length changed.
    pub fn refresh_len(&mut self) -> bool {
        let Some(len) = self
            .open
            .as_ref()
            .and_then(|open| open.file.metadata().ok())
            .map(|m| m.len())
        else {
            return false;
        };
        let grown = len > self.known_len;
        self.known_len = self.known_len.max(len);
        grown
    }

    /// Compares the path with the open file: opens it when it appears, and detects
    /// truncation, replacement and deletion. Returns what changed, if anything.
    pub fn check(&mut self) -> io::Result<Option<TailNotice>> {
        let path_meta = match std::fs::metadata(&self.path) {
            Ok(meta) => Some(meta),
            Err(err) if err.kind() == io::ErrorKind::NotFound => None,
            Err(err) => return Err(err),
        };
        let Some(open) = self.open.as_mut() else {
            return self.try_open();
        };
        if open.draining {
            return Ok(None);
        }
        let open_meta = open.file.metadata()?;
        let same_file = match (&path_meta, open.identity) {
            (Some(meta), Some(identity)) => FileIdentity::of(meta) == Some(identity),
            (Some(_), None) => true,
            (None, _) => false,
        };
        if same_file {
            let len = open_meta.len();
            if len < open.read_offset {
                open.read_offset = 0;
                open.file.seek(SeekFrom::Start(0))?;
                self.buffer.clear();
                self.handed_out = 0;
                self.skip_to_newline = false;
                self.known_len = len;
                self.generation += 1;
                return Ok(Some(TailNotice::Truncated));
            }
            self.known_len = len;
            return Ok(None);
        }
        // Renamed away or deleted: finish the old file first (writers may have appended just
        // before the rotation, or still append until they reopen); `read_chunk` switches
        // once it reaches the old file's end and the path names a file again.
        self.known_len = open_meta.len();
        open.draining = true;
        Ok(path_meta.is_none().then_some(TailNotice::Deleted))
    }

    fn try_open(&mut self) -> io::Result<Option<TailNotice>> {
        let mut file = match File::open(&self.path) {
            Ok(file) => file,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                self.saw_missing = true;
                if self.waiting_reported {
                    return Ok(None);
                }
                self.waiting_reported = true;
                return Ok(Some(TailNotice::Waiting));
            }
            Err(err) => return Err(err),
        };
        self.waiting_reported = false;
        let meta = file.metadata()?;
        let mut read_offset = 0;
        let skip_history =
            !self.opened_before && !self.saw_missing && self.start_at == StartAt::End;
        if skip_history && meta.len() > 0 {
            // Start after the last newline; a partial last line is skipped up to its end.
            read_offset = meta.len();
            file.seek(SeekFrom::Start(read_offset - 1))?;
            let mut last = [0_u8; 1];
            file.read_exact(&mut last)?;
            self.skip_to_newline = last[0] != b'\n';
        }
        if self.opened_before {
            self.generation += 1;
        }
        self.opened_before = true;
        self.buffer.clear();
        self.handed_out = 0;
        self.known_len = meta.len();
        self.open = Some(OpenFile {
            identity: FileIdentity::of(&meta),
            file,
            read_offset,
            draining: false,
            idle_with_successor_since: None,
        });
        Ok(Some(TailNotice::Opened))
    }

    /// Reads up to [`READ_CHUNK_BYTES`] and returns the complete lines now available (each
    /// ending in `\n`; empty when there are none). When a rotated-away file has been read to
    /// its end, its unterminated last line (if any) is returned as a final line and the
    /// tailer switches to the new file, returning the notice.
    pub fn read_chunk(&mut self) -> io::Result<(&[u8], Option<TailNotice>)> {
        // Drop what was handed out last time; keep the partial line at the front.
        if self.handed_out > 0 {
            self.buffer.drain(..self.handed_out);
            self.handed_out = 0;
        }
        let Some(open) = self.open.as_mut() else {
            return Ok((&[], None));
        };
        // Asked before reading: a line appended to the old file just before the new file
        // appears is then read before the switch.
        let successor_waiting = open.draining && self.path.exists();
        // Read until a newline arrives or the file ends (a line longer than the buffer grows it).
        let mut read_now = 0;
        loop {
            let searched = self.buffer.len();
            let read = fill_buffer(&mut open.file, &mut self.buffer)?;
            open.read_offset += read;
            read_now += read;
            if self.skip_to_newline {
                let skip = match memchr::memchr(b'\n', &self.buffer) {
                    Some(newline) => {
                        self.skip_to_newline = false;
                        newline + 1
                    }
                    None => self.buffer.len(),
                };
                self.buffer.drain(..skip);
            }
            let tail = &self.buffer[searched.min(self.buffer.len())..];
            if read == 0 || memchr::memchr(b'\n', tail).is_some() {
                break;
            }
        }
        self.known_len = self.known_len.max(open.read_offset);

        if read_now > 0 {
            open.idle_with_successor_since = None;
        }
        let switch = read_now == 0
            && successor_waiting
            && open
                .idle_with_successor_since
                .get_or_insert_with(std::time::Instant::now)
                .elapsed()
                >= self.rotation_grace;
        if switch {
            // The old file is finished: an unterminated last line will never get its newline.
            if self.buffer.last().is_some_and(|&last| last != b'\n') {
                self.buffer.push(b'\n');
            }
            self.open = None;
            self.handed_out = self.buffer.len();
            let reopened = self.reopen_after_rotation()?;
            let notice = if reopened {
                TailNotice::Replaced
            } else {
                TailNotice::Deleted
            };
            return Ok((&self.buffer[..self.handed_out], Some(notice)));
        }
        self.handed_out = memchr::memrchr(b'\n', &self.buffer).map_or(0, |newline| newline + 1);
        Ok((&self.buffer[..self.handed_out], None))
    }

    /// After the rotated file is drained: open the new file if there is one, else wait.
    /// Returns whether a new file was opened.
    fn reopen_after_rotation(&mut self) -> io::Result<bool> {
        self.waiting_reported = true;
        match File::open(&self.path) {
            Ok(file) => {
                let meta = file.metadata()?;
                // The buffer still holds the last lines of the old file until the next call.
                self.generation += 1;
                self.known_len = meta.len();
                self.open = Some(OpenFile {
                    identity: FileIdentity::of(&meta),
                    file,
                    read_offset: 0,
                    draining: false,
                    idle_with_successor_since: None,
                });
                self.waiting_reported = false;
                Ok(true)
            }
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                self.known_len = 0;
                Ok(false)
            }
            Err(err) => Err(err),
        }
    }
}

/// How the tailer learns that the file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeSource {
    /// File system events (notify) on the parent directory, with a slow safety poll.
    Events,
    /// Polling only: notify could not start or its events do not arrive (network file systems).
    Polling,
}

/// Watches the followed file's parent directory and calls `wake` on every event about it.
pub struct FileWatcher {
    _watcher: notify::RecommendedWatcher,
}

impl std::fmt::Debug for FileWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileWatcher").finish_non_exhaustive()
    }
}

impl FileWatcher {
    /// Starts watching the directory of `path` (so creation, rename and deletion are seen).
    /// Fails where notify cannot watch; the caller then polls.
    pub fn start(path: &Path, wake: impl Fn() + Send + 'static) -> notify::Result<Self> {
        use notify::Watcher as _;
        let directory = litehit_core::facts::file::directory_of(path).to_path_buf();
        let file_name = path.file_name().map(std::ffi::OsStr::to_os_string);
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let relevant = match &event {
                    Ok(event) => event
                        .paths
                        .iter()
                        .any(|p| p.file_name().map(std::ffi::OsStr::to_os_string) == file_name),
                    Err(_) => true,
                };
                if relevant {
                    wake();
                }
            })?;
        watcher.watch(&directory, notify::RecursiveMode::NonRecursive)?;
        Ok(Self { _watcher: watcher })
    }
}

/// Appends up to one buffer's worth (at least half of [`READ_CHUNK_BYTES`]) from `file`;
/// returns the bytes read (`0` at the end of the file).
fn fill_buffer(file: &mut File, buffer: &mut Vec<u8>) -> io::Result<u64> {
    let start = buffer.len();
    if buffer.capacity() - start < READ_CHUNK_BYTES / 2 {
        buffer.reserve(READ_CHUNK_BYTES);
    }
    buffer.resize(buffer.capacity(), 0);
    let mut filled = start;
    let result = loop {
        if filled == buffer.len() {
            break Ok(());
        }
        match file.read(&mut buffer[filled..]) {
            Ok(0) => break Ok(()),
            Ok(n) => filled += n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => break Err(err),
        }
    };
    buffer.truncate(filled);
    result.map(|()| (filled - start) as u64)
}
