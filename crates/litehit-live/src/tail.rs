//! Following what a deployment writes — one growing file, or a directory of rotating files —
//! like `tail -F` done right: no line is skipped, and what cannot be read is counted.
//!
//! [`Tailer`] reads what is there, then what is appended, and hands out only complete lines
//! (a partial last line waits for its newline). It keeps a queue of file **generations** by
//! identity (device + inode):
//!
//! * One file ([`Tailer::new`]): on every [`Tailer::check`], a new file at the path (rename +
//!   create rotation) is opened at once and queued behind the one being read — its
//!   descriptor is held, so however many rotations come before the reader gets to it (or
//!   whatever happens to its name afterwards), its lines stay readable, in order.
//! * A directory ([`Tailer::directory`]): the files whose names match a glob, in name order
//!   (or modification-time order), then each new one as it is created (LMCache's
//!   `lookup_hashes_*.jsonl`, rotated by starting a new name). Files are opened when their
//!   turn comes; one deleted before that is counted as lost, with its size.
//!
//! A generation is finished — and reading moves on — when it has been read to its end, a
//! newer one is queued, and it has been quiet for the rotation grace: no growth seen for that
//! long, or a modification time that long ago (a backlog of old generations drains at full
//! speed). A writer that still appends to a renamed file is read until then.
//!
//! A partial last line (no newline yet) is handed out only when its file is known complete,
//! so it is never read twice or in halves: when its generation is finished (rotation); when
//! the file was renamed away or deleted with nothing new at the path and has been quiet for
//! the rotation grace (it is then finished too, and the next file at the path is waited for);
//! at the end of standard input; and, through [`Tailer::take_partial_line`], when the caller
//! stops (`--exit-at-eof` at the end of the input, or quitting). A file still at its path
//! that merely stopped growing is not known complete: its writer may be in the middle of the
//! line.
//!
//! A generation queued behind the one being read is watched too: truncated (and maybe
//! refilled) before its turn — a writer that restarts within the rotation grace and reopens
//! its log with `"w"` — it counts what it held (seen, never read) as lost bytes, and what it
//! holds then is read. A finished generation of the followed file is remembered by identity
//! with the offset reached and its fingerprints (the last [`REMEMBERED_GENERATIONS`]): when
//! it comes back at the path (a symlink flipped back, a file renamed back) it is read from
//! where reading stopped, so nothing is read twice and what was appended since is read; a
//! file that no longer holds what was read there (inode reused, truncated) is read from its
//! start. A followed directory forgets the files it read once they are gone from it.
//!
//! Truncation is detected by more than length: the file shrank below what was read, or its
//! first bytes are no longer the ones read (truncated and refilled past the old offset before
//! the next check). After a truncation the file is read from its start; what was not read of
//! the old content is taken from a copy beside it when there is one (logrotate's
//! `copytruncate` leaves `trace.jsonl.1`, found by its first bytes and the bytes just before
//! the offset reached), else counted as lost bytes. Non-regular files (FIFOs, devices) met at
//! the path are refused with a notice, and every open is non-blocking, so a FIFO never hangs
//! the reader.
//!
//! [`FileWatcher`] turns notify events into wake-ups, so the caller polls only as a fallback.
//! No parsing happens here: the ingest thread splits the returned bytes into lines.

use std::collections::VecDeque;
use std::fs::{File, Metadata};
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

/// Bytes asked of the OS per read: at least 64 KiB, so a backlog drains at replay speed.
pub const READ_CHUNK_BYTES: usize = 256 * 1024;

/// How many first (and most recent) bytes of a generation identify its content.
const FINGERPRINT_BYTES: usize = 64;

/// Where following starts on the first open.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum StartAt {
    /// Read what is there already, then follow.
    #[default]
    Beginning,
    /// Skip the content there at startup (from the next complete line on; in a directory,
    /// every file but the newest); files created later are read from their start.
    End,
}

/// The order a directory's files are read in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum DirectoryOrder {
    /// By file name (rotation by timestamped or numbered names).
    #[default]
    Name,
    /// By modification time, then name.
    Mtime,
}

/// Something that happened to the followed source, for the status line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TailNotice {
    /// The file does not exist (yet); we wait for it.
    Waiting,
    /// The file was opened (first time, or after it was created late).
    Opened,
    /// The file was truncated in place (copytruncate), or truncated and refilled: reading
    /// goes on from its start; accumulated state is kept. Bytes of the old content that were
    /// not read and not found in a copy are counted in [`Tailer::lost_bytes`].
    Truncated,
    /// After a truncation, the unread rest of the old content was found in a copy beside
    /// the file and is read from there first.
    RecoveredFromCopy,
    /// Reading moved on to the next generation (rotation); the previous one was read to its
    /// end.
    Replaced,
    /// The path vanished (renamed away or deleted). The open file is still read — a writer
    /// may still append to it — until a new file is there and the old one has been quiet for
    /// the rotation grace ([`ROTATION_GRACE`]).
    Deleted,
    /// A FIFO, device or directory is at the path: not followed (a rotation must create a
    /// regular file).
    NotRegular,
    /// A queued file was deleted before it could be read: its bytes are counted as lost.
    Lost,
    /// Standard input ended (its writer closed it): everything it sent was read.
    InputEnded,
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

/// One open file generation.
#[derive(Debug)]
struct Generation {
    file: File,
    /// Where it was found (the followed path, a directory entry, or a copy).
    path: PathBuf,
    identity: Option<FileIdentity>,
    /// Bytes read so far (the position of the next read).
    read_offset: u64,
    /// Length at the last look.
    known_len: u64,
    /// The first bytes of the file as read (up to [`FINGERPRINT_BYTES`]).
    head: Vec<u8>,
    /// The last bytes read (up to [`FINGERPRINT_BYTES`]), to find a copytruncate copy.
    recent: Vec<u8>,
    /// Nobody appends to it (a copy): finished once read to its end.
    complete: bool,
    /// Since when it has been at its end with a successor queued.
    idle_since: Option<Instant>,
}

impl Generation {
    fn open(path: &Path) -> io::Result<Option<Self>> {
        let file = open_non_blocking(path)?;
        let meta = file.metadata()?;
        if !meta.is_file() {
            return Ok(None);
        }
        Ok(Some(Self {
            identity: FileIdentity::of(&meta),
            known_len: meta.len(),
            file,
            path: path.to_owned(),
            read_offset: 0,
            head: Vec::new(),
            recent: Vec::new(),
            complete: false,
            idle_since: None,
        }))
    }

    /// Remembers what was just read at `offset` for the fingerprints.
    fn saw(&mut self, offset: u64, bytes: &[u8]) {
        // Bytes just past the head so far (it may have been taken short, at open) extend it.
        let end = offset.saturating_add(bytes.len() as u64);
        let head_len = self.head.len() as u64;
        if head_len < FINGERPRINT_BYTES as u64 && offset <= head_len && end > head_len {
            let from = usize::try_from(head_len - offset).unwrap_or(0);
            let take = (FINGERPRINT_BYTES - self.head.len()).min(bytes.len() - from);
            self.head.extend_from_slice(&bytes[from..from + take]);
        }
        let keep = FINGERPRINT_BYTES.min(bytes.len());
        self.recent.extend_from_slice(&bytes[bytes.len() - keep..]);
        let excess = self.recent.len().saturating_sub(FINGERPRINT_BYTES);
        self.recent.drain(..excess);
    }

    /// Whether the file no longer holds what was read from it: it shrank below the offset
    /// reached, or its first bytes changed (truncated and refilled).
    fn was_truncated(&self, len: u64) -> io::Result<bool> {
        if len < self.read_offset {
            return Ok(true);
        }
        if self.head.is_empty() {
            return Ok(false);
        }
        let mut now = vec![0; self.head.len()];
        let read = read_at(&self.file, &mut now, 0)?;
        Ok(now[..read] != self.head[..])
    }

    /// For a generation queued and not read yet: whether content it held was replaced since it
    /// was last looked at (it shrank below the length seen, or its first bytes changed — a
    /// writer that restarts and reopens its log with `"w"`). Returns the bytes lost (seen,
    /// never read); what it holds now is then read from its start.
    fn lost_while_queued(&mut self) -> io::Result<Option<u64>> {
        let len = self.file.metadata()?.len();
        let mut now = vec![0; self.head.len()];
        let read = read_at(&self.file, &mut now, 0)?;
        if len >= self.known_len && now[..read] == self.head[..] {
            self.known_len = len;
            if self.head.len() < FINGERPRINT_BYTES && self.read_offset == 0 {
                // Taken short (the file was shorter then): its first bytes now, same prefix.
                self.head.clear();
                self.take_head()?;
            }
            return Ok(None);
        }
        let lost = self.known_len.saturating_sub(self.read_offset);
        self.read_offset = 0;
        self.file.seek(SeekFrom::Start(0))?;
        self.known_len = len;
        self.recent.clear();
        self.head.clear();
        self.take_head()?;
        Ok(Some(lost))
    }

    /// Reads its first bytes (up to [`FINGERPRINT_BYTES`]) as its fingerprint, without moving
    /// the read position: a generation queued now is then known by content as well.
    fn take_head(&mut self) -> io::Result<()> {
        if !self.head.is_empty() || self.read_offset > 0 {
            return Ok(());
        }
        let mut head = vec![0; FINGERPRINT_BYTES];
        let read = read_at(&self.file, &mut head, 0)?;
        head.truncate(read);
        self.head = head;
        Ok(())
    }

    /// Whether this file is `before` (same identity, still holding what was read of it: the
    /// same first bytes and the same bytes just before the offset reached): then reading
    /// resumes there, so nothing is read twice and what was appended since is read.
    fn resume(&mut self, before: &ReadBefore) -> io::Result<bool> {
        if self.identity != Some(before.identity) || self.known_len < before.read_offset {
            return Ok(false);
        }
        let mut head = vec![0; before.head.len()];
        let mut recent = vec![0; before.recent.len()];
        let recent_at = before.read_offset - before.recent.len() as u64;
        if read_at(&self.file, &mut head, 0)? != head.len()
            || head != before.head
            || read_at(&self.file, &mut recent, recent_at)? != recent.len()
            || recent != before.recent
        {
            return Ok(false);
        }
        self.file.seek(SeekFrom::Start(before.read_offset))?;
        self.read_offset = before.read_offset;
        self.head.clone_from(&before.head);
        self.recent.clone_from(&before.recent);
        Ok(true)
    }

    /// Whether its last change is at least `grace` old.
    fn quiet_for(&self, grace: Duration) -> bool {
        let modified = self.file.metadata().and_then(|meta| meta.modified());
        modified.is_ok_and(|modified| {
            SystemTime::now()
                .duration_since(modified)
                .is_ok_and(|age| age >= grace)
        })
    }
}

/// How many finished generations [`Tailer`] remembers (identity, offset reached and
/// fingerprints, about 200 bytes each), so one that comes back at the path (a symlink flipped
/// back, a file renamed back) is not read again; the oldest is forgotten first.
pub const REMEMBERED_GENERATIONS: usize = 256;

/// A generation read before and finished: where reading stopped, and what it held there.
#[derive(Debug, Clone)]
struct ReadBefore {
    identity: FileIdentity,
    read_offset: u64,
    head: Vec<u8>,
    recent: Vec<u8>,
}

/// A file of a followed directory, not opened yet.
#[derive(Debug, Clone)]
struct Pending {
    path: PathBuf,
    identity: Option<FileIdentity>,
    len: u64,
}

/// A generation waiting its turn.
#[derive(Debug)]
enum Queued {
    Open(Generation),
    Pending(Pending),
}

impl Queued {
    fn identity(&self) -> Option<FileIdentity> {
        match self {
            Self::Open(generation) => generation.identity,
            Self::Pending(pending) => pending.identity,
        }
    }

    fn path(&self) -> &Path {
        match self {
            Self::Open(generation) => &generation.path,
            Self::Pending(pending) => &pending.path,
        }
    }

    fn unread_bytes(&self) -> u64 {
        match self {
            Self::Open(generation) => generation.known_len.saturating_sub(generation.read_offset),
            Self::Pending(pending) => pending.len,
        }
    }
}

/// What is followed.
#[derive(Debug, Clone)]
enum Target {
    File(PathBuf),
    Directory {
        dir: PathBuf,
        pattern: glob::Pattern,
        order: DirectoryOrder,
    },
    /// Standard input (`watch -`): one stream, read until its writer closes it.
    Stdin,
}

/// A non-regular file refused at the path, reported once per file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refused {
    Nothing,
    File(Option<FileIdentity>),
}

/// Follows one path or directory; see the module docs.
#[derive(Debug)]
#[expect(
    clippy::struct_excessive_bools,
    reason = "independent facts about the followed source"
)]
pub struct Tailer {
    target: Target,
    start_at: StartAt,
    opened_before: bool,
    /// The generation being read.
    current: Option<Generation>,
    /// The path no longer names the current generation (single-file mode).
    current_renamed_away: bool,
    /// Generations waiting their turn, oldest first.
    queue: VecDeque<Queued>,
    /// Directory entries already read or skipped: `(path, identity)`; entries no longer in
    /// the directory are forgotten at the next listing, so this is bounded by its size.
    done: std::collections::HashSet<(PathBuf, Option<(u64, u64)>)>,
    /// Generations of the followed file read and finished, newest last (at most
    /// [`REMEMBERED_GENERATIONS`]): one back at the path resumes where reading stopped.
    read_before: VecDeque<ReadBefore>,
    /// Read but not yet handed out: `buffer[handed_out..]` starts with the pending partial line.
    buffer: Vec<u8>,
    handed_out: usize,
    /// After `--from-end` opened mid-line: drop bytes up to the next newline.
    skip_to_newline: bool,
    /// Bumped whenever reading restarts on new content (truncation, replacement, creation).
    generation: u64,
    waiting_reported: bool,
    deleted_reported: bool,
    /// The non-regular file last refused at the path (reported once).
    refused: Refused,
    /// The path was missing at some check: when it appears, all of it is new.
    saw_missing: bool,
    lost_bytes: u64,
    lost_generations: u64,
    rotation_grace: Duration,
    /// Standard input reached its end.
    input_ended: bool,
    /// The longest line handed out, without its newline (`--max-line-bytes`).
    max_line_bytes: u64,
    /// Lines dropped for being longer than `max_line_bytes`.
    long_lines: u64,
    /// The last generation was renamed away or deleted and read to its end, last line
    /// included, and no file has been opened since.
    vanished_read: bool,
    /// Where the file watcher saw the followed path renamed to, oldest first (see
    /// [`RenameSink`]).
    renamed_to: RenameSink,
}

/// The new names of the followed file, as the file watcher reports its renames: a generation
/// renamed away before the tailer ever looked at the path (rotations faster than a check,
/// a monitor starved of CPU) is found there, and read in turn.
#[derive(Debug, Clone, Default)]
pub struct RenameSink(std::sync::Arc<std::sync::Mutex<VecDeque<PathBuf>>>);

impl RenameSink {
    fn push(&self, path: PathBuf) {
        if let Ok(mut queue) = self.0.lock() {
            queue.push_back(path);
        }
    }

    fn take(&self) -> Vec<PathBuf> {
        self.0
            .lock()
            .map(|mut queue| queue.drain(..).collect())
            .unwrap_or_default()
    }
}

/// Default of [`Tailer::with_rotation_grace`]: logrotate's `create` makes the new file before
/// the writer is told to reopen, and the writer's last lines still go to the old one.
pub const ROTATION_GRACE: Duration = Duration::from_secs(2);

impl Tailer {
    /// A tailer for the file at `path`; nothing is opened until [`Self::check`].
    pub fn new(path: impl Into<PathBuf>, start_at: StartAt) -> Self {
        Self::with_target(Target::File(path.into()), start_at)
    }

    /// A tailer for the files of `dir` whose names match `pattern` (a glob such as
    /// `lookup_hashes_*.jsonl`), read in `order`.
    pub fn directory(
        dir: impl Into<PathBuf>,
        pattern: glob::Pattern,
        order: DirectoryOrder,
        start_at: StartAt,
    ) -> Self {
        Self::with_target(
            Target::Directory {
                dir: dir.into(),
                pattern,
                order,
            },
            start_at,
        )
    }

    fn with_target(target: Target, start_at: StartAt) -> Self {
        Self {
            target,
            start_at,
            opened_before: false,
            current: None,
            current_renamed_away: false,
            queue: VecDeque::new(),
            done: std::collections::HashSet::new(),
            read_before: VecDeque::new(),
            buffer: Vec::with_capacity(READ_CHUNK_BYTES),
            handed_out: 0,
            skip_to_newline: false,
            generation: 0,
            waiting_reported: false,
            deleted_reported: false,
            refused: Refused::Nothing,
            saw_missing: false,
            lost_bytes: 0,
            lost_generations: 0,
            rotation_grace: ROTATION_GRACE,
            input_ended: false,
            max_line_bytes: litehit_core::formats::DEFAULT_MAX_LINE_BYTES,
            long_lines: 0,
            vanished_read: false,
            renamed_to: RenameSink::default(),
        }
    }

    /// Where a [`FileWatcher`] reports the followed file's renames.
    pub fn rename_sink(&self) -> RenameSink {
        self.renamed_to.clone()
    }

    /// A tailer for standard input (`kubectl logs -f … | litehit watch -`): read as it comes,
    /// until its writer closes it ([`Self::input_ended`]).
    pub fn stdin() -> Self {
        Self::with_target(Target::Stdin, StartAt::Beginning)
    }

    /// Whether the file followed was renamed away or deleted and has been read to its end,
    /// its unterminated last line included, with no file opened since: the end of the input
    /// for `--exit-at-eof`, as a file read to its end is.
    pub fn vanished_read(&self) -> bool {
        self.vanished_read
    }

    /// Whether standard input has ended (everything it sent was read).
    pub fn input_ended(&self) -> bool {
        self.input_ended
    }

    /// Sets how long a finished-looking generation must stay quiet before reading moves on
    /// ([`ROTATION_GRACE`] by default; tests use zero).
    #[must_use]
    pub fn with_rotation_grace(mut self, grace: Duration) -> Self {
        self.rotation_grace = grace;
        self
    }

    /// Sets the longest line read, without its newline (`--max-line-bytes`;
    /// [`litehit_core::formats::DEFAULT_MAX_LINE_BYTES`] by default). A partial line that
    /// grows past it is dropped and the rest of it skipped up to its newline, so the read
    /// buffer never holds more than this plus one read; each such line is counted in
    /// [`Self::long_lines`]. (A complete line past it that came in one read is handed out:
    /// the caller applies the same cap to each line.)
    #[must_use]
    pub fn with_max_line_bytes(mut self, max_line_bytes: u64) -> Self {
        self.max_line_bytes = max_line_bytes;
        self
    }

    /// Lines dropped for being longer than the cap (see [`Self::with_max_line_bytes`]), so
    /// far. A [`Self::read_chunk`] that drops one hands out no line after it: the lines it
    /// returns all came before the dropped one.
    pub fn long_lines(&self) -> u64 {
        self.long_lines
    }

    /// Whether the file being read is no longer at the followed path (appends to it come
    /// without file-system events about the path).
    pub fn is_draining(&self) -> bool {
        self.current.is_some() && self.current_renamed_away
    }

    /// Whether the current generation is read to its end and a newer one is queued, to be
    /// switched to once the grace has passed: the end of the input is not reached yet.
    pub fn switch_pending(&self) -> bool {
        self.current.is_some() && !self.queue.is_empty()
    }

    /// The followed path (the directory, in directory mode).
    pub fn path(&self) -> &Path {
        match &self.target {
            Target::File(path) => path,
            Target::Directory { dir, .. } => dir,
            Target::Stdin => Path::new("-"),
        }
    }

    /// The file being read now, if any.
    pub fn reading(&self) -> Option<&Path> {
        self.current
            .as_ref()
            .map(|generation| generation.path.as_path())
    }

    /// Generations queued behind the one being read.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Bytes that could not be read: old content lost to a truncation (and found in no
    /// copy), and files deleted before their turn.
    pub fn lost_bytes(&self) -> u64 {
        self.lost_bytes
    }

    /// Queued files deleted before their turn.
    pub fn lost_generations(&self) -> u64 {
        self.lost_generations
    }

    /// Increases each time reading restarts on new content; line numbers restart with it.
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// Whether a file is open.
    pub fn is_open(&self) -> bool {
        self.current.is_some()
    }

    /// Bytes not yet handed out as complete lines (the backlog), queued generations included.
    pub fn backlog_bytes(&self) -> u64 {
        let current = self.current.as_ref().map_or(0, |generation| {
            generation.known_len.saturating_sub(self.consumed_offset())
        });
        current + self.queue.iter().map(Queued::unread_bytes).sum::<u64>()
    }

    /// Offset in the current file up to which complete lines were handed out.
    pub fn consumed_offset(&self) -> u64 {
        let pending = (self.buffer.len() - self.handed_out) as u64;
        self.current.as_ref().map_or(0, |generation| {
            generation.read_offset.saturating_sub(pending)
        })
    }

    /// Bytes of a partial last line held back until its newline arrives.
    pub fn pending_partial_bytes(&self) -> usize {
        self.buffer.len() - self.handed_out
    }

    /// Hands out the pending partial line as a final line (with a `\n` added), for a reader
    /// that stops at the end of the input (`--exit-at-eof`). Empty if there is none.
    pub fn take_partial_line(&mut self) -> Vec<u8> {
        let mut line = self.buffer.split_off(self.handed_out);
        if !line.is_empty() {
            line.push(b'\n');
            if let Some(current) = &mut self.current {
                // Count it as consumed: the backlog is now zero.
                current.known_len = current.known_len.max(current.read_offset);
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
    /// paused monitor still shows how far behind it is falling). Returns whether it grew.
    pub fn refresh_len(&mut self) -> bool {
        let Some(current) = self.current.as_mut() else {
            return false;
        };
        let Ok(len) = current.file.metadata().map(|meta| meta.len()) else {
            return false;
        };
        let grown = len > current.known_len;
        current.known_len = current.known_len.max(len);
        grown
    }

    /// Looks at the source: opens a file when it appears, queues new generations, and
    /// detects truncation and deletion. Returns what changed, if anything.
    pub fn check(&mut self) -> io::Result<Option<TailNotice>> {
        match self.target.clone() {
            Target::File(path) => self.check_file(&path),
            Target::Directory {
                dir,
                pattern,
                order,
            } => self.check_directory(&dir, &pattern, order),
            Target::Stdin => self.check_stdin(),
        }
    }

    fn check_stdin(&mut self) -> io::Result<Option<TailNotice>> {
        if self.current.is_some() || self.input_ended {
            return Ok(None);
        }
        let file = stdin_non_blocking()?;
        let meta = file.metadata()?;
        self.begin(Generation {
            identity: FileIdentity::of(&meta),
            known_len: 0,
            file,
            path: PathBuf::from("-"),
            read_offset: 0,
            head: Vec::new(),
            recent: Vec::new(),
            complete: false,
            idle_since: None,
        });
        Ok(Some(TailNotice::Opened))
    }

    fn check_file(&mut self, path: &Path) -> io::Result<Option<TailNotice>> {
        let queued_notice = self.check_queued_truncations()?;
        if self.current.is_some() {
            self.queue_renamed_generations()?;
        }
        Ok(self.check_file_path(path)?.or(queued_notice))
    }

    /// Generations queued behind the one being read can be truncated (and refilled) before
    /// their turn — a writer that restarts within the rotation grace and reopens its log with
    /// `"w"`: what they held is then counted as lost ([`Self::lost_bytes`]), and what they
    /// hold now is read.
    fn check_queued_truncations(&mut self) -> io::Result<Option<TailNotice>> {
        let mut notice = None;
        for queued in &mut self.queue {
            if let Queued::Open(generation) = queued
                && let Some(lost) = generation.lost_while_queued()?
            {
                self.lost_bytes += lost;
                notice = Some(TailNotice::Truncated);
            }
        }
        Ok(notice)
    }

    /// Opens the file at `path` as a new generation: one read before (see
    /// [`REMEMBERED_GENERATIONS`]) resumes where reading stopped; any other is read from its
    /// start, with its first bytes taken as its fingerprint now.
    fn open_generation(&mut self, path: &Path) -> io::Result<Option<Generation>> {
        let Some(mut generation) = Generation::open(path)? else {
            return Ok(None);
        };
        let found = generation.identity.and_then(|identity| {
            self.read_before
                .iter()
                .rposition(|before| before.identity == identity)
        });
        if let Some(index) = found
            && let Some(before) = self.read_before.remove(index)
            && generation.resume(&before)?
        {
            return Ok(Some(generation));
        }
        generation.take_head()?;
        Ok(Some(generation))
    }

    /// Remembers a finished generation of the followed file (see [`ReadBefore`]).
    fn remember(&mut self, generation: &Generation) {
        let Some(identity) = generation.identity else {
            return;
        };
        self.read_before
            .retain(|before| before.identity != identity);
        if self.read_before.len() == REMEMBERED_GENERATIONS {
            self.read_before.pop_front();
        }
        self.read_before.push_back(ReadBefore {
            identity,
            read_offset: generation.read_offset,
            head: generation.head.clone(),
            recent: generation.recent.clone(),
        });
    }

    fn check_file_path(&mut self, path: &Path) -> io::Result<Option<TailNotice>> {
        let path_meta = match std::fs::metadata(path) {
            Ok(meta) => Some(meta),
            Err(err) if err.kind() == io::ErrorKind::NotFound => None,
            Err(err) => return Err(err),
        };
        let Some(meta) = path_meta else {
            self.saw_missing = true;
            if self.current.is_some() {
                self.current_renamed_away = true;
                if !self.deleted_reported {
                    self.deleted_reported = true;
                    return Ok(Some(TailNotice::Deleted));
                }
                return Ok(None);
            }
            if self.waiting_reported {
                return Ok(None);
            }
            self.waiting_reported = true;
            return Ok(Some(TailNotice::Waiting));
        };
        let identity = FileIdentity::of(&meta);
        if !meta.is_file() {
            return Ok(self.refuse(identity));
        }
        self.refused = Refused::Nothing;
        let is_current = self.current.as_ref().map(|generation| generation.identity);
        if let Some(current_identity) = is_current {
            if identity.is_some() && current_identity == identity {
                // Still the same file at the path: only a truncation can have happened.
                self.current_renamed_away = false;
                return self.check_truncation();
            }
            self.current_renamed_away = true;
            if self
                .queue
                .iter()
                .any(|queued| queued.identity() == identity)
            {
                return Ok(None);
            }
            // A new generation: opened now, so no rotation can take it away unread.
            if let Some(generation) = self.open_generation(path)? {
                self.queue.push_back(Queued::Open(generation));
            }
            return Ok(None);
        }
        self.open_first(path)
    }

    /// Queues, in the order they were renamed, the generations the watcher saw renamed away
    /// from the path that are neither being read nor queued: each was the file at the path
    /// once, after the one being read (the current one's own rename is skipped by identity).
    fn queue_renamed_generations(&mut self) -> io::Result<()> {
        for renamed in self.renamed_to.take() {
            let Ok(meta) = std::fs::metadata(&renamed) else {
                continue; // gone again: nothing left to read
            };
            let identity = FileIdentity::of(&meta);
            let known = identity.is_none()
                || self
                    .current
                    .as_ref()
                    .is_some_and(|generation| generation.identity == identity)
                || self
                    .queue
                    .iter()
                    .any(|queued| queued.identity() == identity);
            if !meta.is_file() || known {
                continue;
            }
            if let Some(generation) = self.open_generation(&renamed)?
                && generation.identity == identity
            {
                self.current_renamed_away = true;
                self.queue.push_back(Queued::Open(generation));
            }
        }
        Ok(())
    }

    /// The first file (or one created after the path was missing).
    fn open_first(&mut self, path: &Path) -> io::Result<Option<TailNotice>> {
        let Some(mut generation) = (match self.open_generation(path) {
            Ok(generation) => generation,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(err) => return Err(err),
        }) else {
            return Ok(self.refuse(None));
        };
        self.waiting_reported = false;
        let skip_history =
            !self.opened_before && !self.saw_missing && self.start_at == StartAt::End;
        if skip_history {
            self.skip_existing_content(&mut generation)?;
        }
        self.begin(generation);
        Ok(Some(TailNotice::Opened))
    }

    /// `--from-end` on the first file: reading starts after its last newline (a partial last
    /// line is skipped up to its end), with the first bytes kept as its fingerprint.
    fn skip_existing_content(&mut self, generation: &mut Generation) -> io::Result<()> {
        if generation.known_len > 0 {
            generation.read_offset = generation.known_len;
            let mut last = [0_u8; 1];
            read_at(&generation.file, &mut last, generation.known_len - 1)?;
            self.skip_to_newline = last[0] != b'\n';
            generation.head = vec![
                0;
                usize::try_from(generation.known_len)
                    .map_or(FINGERPRINT_BYTES, |len| len.min(FINGERPRINT_BYTES))
            ];
            let read = read_at(&generation.file, &mut generation.head, 0)?;
            generation.head.truncate(read);
        }
        generation
            .file
            .seek(SeekFrom::Start(generation.read_offset))?;
        Ok(())
    }

    /// Makes `generation` the one read, from its read offset.
    fn begin(&mut self, generation: Generation) {
        if self.opened_before {
            self.generation += 1;
        }
        self.opened_before = true;
        self.current = Some(generation);
        self.current_renamed_away = false;
        self.deleted_reported = false;
        self.vanished_read = false;
    }

    fn refuse(&mut self, identity: Option<FileIdentity>) -> Option<TailNotice> {
        if self.refused == Refused::File(identity) {
            return None;
        }
        self.refused = Refused::File(identity);
        Some(TailNotice::NotRegular)
    }

    /// The current file is still at its path: was it truncated?
    fn check_truncation(&mut self) -> io::Result<Option<TailNotice>> {
        let Some(current) = self.current.as_mut() else {
            return Ok(None);
        };
        let len = current.file.metadata()?.len();
        if !current.was_truncated(len)? {
            current.known_len = current.known_len.max(len);
            return Ok(None);
        }
        let copy = match &self.target {
            Target::File(path) => find_copy(path, current)?,
            Target::Directory { .. } | Target::Stdin => None,
        };
        // Whatever happens next, the truncated file is read again from its start.
        let mut restarted = Generation::open(&current.path)?;
        let notice = if let Some(copy) = copy {
            // The copy continues exactly where reading stopped, partial line included.
            let truncated = std::mem::replace(current, copy);
            drop(truncated);
            if let Some(generation) = restarted.take() {
                self.queue.push_front(Queued::Open(generation));
            }
            TailNotice::RecoveredFromCopy
        } else {
            self.lost_bytes += current.known_len.saturating_sub(current.read_offset)
                + (self.buffer.len() - self.handed_out) as u64;
            self.buffer.clear();
            self.handed_out = 0;
            self.skip_to_newline = false;
            match restarted.take() {
                Some(generation) => {
                    self.current = None;
                    self.begin(generation);
                }
                None => self.current = None,
            }
            TailNotice::Truncated
        };
        Ok(Some(notice))
    }

    fn check_directory(
        &mut self,
        dir: &Path,
        pattern: &glob::Pattern,
        order: DirectoryOrder,
    ) -> io::Result<Option<TailNotice>> {
        let entries = match std::fs::read_dir(dir) {
            Ok(entries) => entries,
            Err(err) if err.kind() == io::ErrorKind::NotFound => {
                if self.waiting_reported {
                    return Ok(None);
                }
                self.waiting_reported = true;
                return Ok(Some(TailNotice::Waiting));
            }
            Err(err) => return Err(err),
        };
        let mut found: Vec<(SystemTime, PathBuf, Pending)> = Vec::new();
        let mut listed = std::collections::HashSet::new();
        for entry in entries {
            let entry = entry?;
            let name = entry.file_name();
            let options = glob::MatchOptions {
                require_literal_leading_dot: true, // no hidden files (temp files, editors')
                ..glob::MatchOptions::new()
            };
            if !name
                .to_str()
                .is_some_and(|name| pattern.matches_with(name, options))
            {
                continue;
            }
            let path = entry.path();
            let Ok(meta) = std::fs::metadata(&path) else {
                continue; // gone already, before it was ever seen
            };
            if !meta.is_file() {
                continue;
            }
            let identity = FileIdentity::of(&meta);
            // A file still waiting its turn: its size now (it may have been listed while
            // being written), so a deletion before its turn counts what it held.
            for queued in &mut self.queue {
                if let Queued::Pending(pending) = queued
                    && pending.path == path
                    && pending.identity == identity
                {
                    if meta.len() < pending.len {
                        // Truncated before its turn: what it held is gone unread.
                        self.lost_bytes += pending.len;
                    }
                    pending.len = meta.len();
                }
            }
            let key = (path.clone(), identity.map(|id| (id.device, id.inode)));
            if self.done.contains(&key) {
                listed.insert(key.clone());
            }
            let known = self.done.contains(&key)
                || self
                    .current
                    .as_ref()
                    .is_some_and(|generation| generation.path == path)
                || self.queue.iter().any(|queued| queued.path() == path);
            if known {
                continue;
            }
            let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            found.push((
                modified,
                path.clone(),
                Pending {
                    path,
                    identity,
                    len: meta.len(),
                },
            ));
        }
        // Files gone from the directory are forgotten: `done` stays as small as the listing.
        self.done.retain(|key| listed.contains(key));
        match order {
            DirectoryOrder::Name => found.sort_by(|a, b| a.1.cmp(&b.1)),
            DirectoryOrder::Mtime => found.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1))),
        }
        let first_look = !self.opened_before && self.current.is_none() && self.queue.is_empty();
        if first_look && self.start_at == StartAt::End && found.len() > 1 {
            // `--from-end`: only the newest file is followed, from its end.
            for (_, _, pending) in found.drain(..found.len() - 1) {
                self.done.insert((
                    pending.path,
                    pending.identity.map(|id| (id.device, id.inode)),
                ));
            }
        }
        self.queue.extend(
            found
                .into_iter()
                .map(|(_, _, pending)| Queued::Pending(pending)),
        );
        if self.current.is_none() {
            return self.next_in_directory();
        }
        Ok(None)
    }

    /// Opens the next queued file of the directory when nothing is being read.
    fn next_in_directory(&mut self) -> io::Result<Option<TailNotice>> {
        while let Some(queued) = self.queue.pop_front() {
            let generation = match queued {
                Queued::Open(generation) => generation,
                Queued::Pending(pending) => match Generation::open(&pending.path) {
                    Ok(Some(generation)) => generation,
                    Ok(None) => continue,
                    Err(err) if err.kind() == io::ErrorKind::NotFound => {
                        self.lost_bytes += pending.len;
                        self.lost_generations += 1;
                        return Ok(Some(TailNotice::Lost));
                    }
                    Err(err) => return Err(err),
                },
            };
            let first = !self.opened_before;
            self.waiting_reported = false;
            let mut generation = generation;
            if first && self.start_at == StartAt::End {
                self.skip_existing_content(&mut generation)?;
            }
            self.begin(generation);
            return Ok(Some(if first {
                TailNotice::Opened
            } else {
                TailNotice::Replaced
            }));
        }
        Ok(None)
    }

    /// Reads up to [`READ_CHUNK_BYTES`] and returns the complete lines now available (each
    /// ending in `\n`; empty when there are none). When a generation is finished (see the
    /// module docs), its unterminated last line (if any) is returned as a final line and
    /// reading moves to the next one, returning the notice.
    pub fn read_chunk(&mut self) -> io::Result<(&[u8], Option<TailNotice>)> {
        // Drop what was handed out last time; keep the partial line at the front.
        if self.handed_out > 0 {
            self.buffer.drain(..self.handed_out);
            self.handed_out = 0;
        }
        let Some(current) = self.current.as_mut() else {
            return Ok((&[], None));
        };
        // Asked before reading: a line appended to the old file just before the new one
        // appeared is then read before the switch.
        let successor_waiting = !self.queue.is_empty();
        // Read until a newline arrives or the file ends (a line longer than the buffer grows it).
        let mut read_now = 0;
        let mut at_end = false;
        let (offset_before, len_before, buffered_before) =
            (current.read_offset, current.known_len, self.buffer.len());
        let (head_before, recent_before) = (current.head.len(), current.recent.clone());
        loop {
            let searched = self.buffer.len();
            let (read, end) = fill_buffer(&mut current.file, &mut self.buffer)?;
            at_end |= end;
            let offset = current.read_offset;
            let fresh = usize::try_from(read).expect("one read fits memory");
            current.saw(offset, &self.buffer[self.buffer.len() - fresh..]);
            current.read_offset += read;
            read_now += read;
            if skip_or_drop(
                &mut self.buffer,
                &mut self.skip_to_newline,
                self.max_line_bytes,
            ) {
                // Nothing else is read now: the caller counts it before the lines after it.
                self.long_lines += 1;
                break;
            }
            let tail = &self.buffer[searched.min(self.buffer.len())..];
            if read == 0 || memchr::memchr(b'\n', tail).is_some() {
                break;
            }
        }
        if read_now > 0
            && matches!(self.target, Target::File(_))
            && !self.current_renamed_away
            && current.was_truncated(current.file.metadata()?.len())?
        {
            // Truncated (and maybe refilled) between the last look and this read: what was
            // just read may be new content at the old offset. Nothing of it is handed out;
            // the truncation is handled as if seen before the read.
            self.buffer.truncate(buffered_before);
            current.read_offset = offset_before;
            current.known_len = len_before;
            current.head.truncate(head_before);
            current.recent = recent_before;
            let notice = self.check_truncation()?;
            self.handed_out = 0;
            return Ok((&[], notice));
        }
        current.known_len = current.known_len.max(current.read_offset);
        if matches!(self.target, Target::Stdin) && at_end && !self.input_ended {
            // The writer closed the stream: its unterminated last line is complete.
            self.input_ended = true;
            if self.buffer.last().is_some_and(|&last| last != b'\n') {
                self.buffer.push(b'\n');
            }
            self.handed_out = self.buffer.len();
            return Ok((
                &self.buffer[..self.handed_out],
                Some(TailNotice::InputEnded),
            ));
        }

        if read_now > 0 {
            current.idle_since = None;
        }
        // A file renamed away or deleted, with nothing new at the path, whose last line has no
        // newline: finished as a rotated one is, so that line is read (once, whole).
        let vanished_with_partial_line = matches!(self.target, Target::File(_))
            && self.current_renamed_away
            && !self.buffer.is_empty();
        let finished = read_now == 0
            && (successor_waiting || vanished_with_partial_line)
            && (current.complete
                || current
                    .idle_since
                    .get_or_insert_with(Instant::now)
                    .elapsed()
                    >= self.rotation_grace
                || current.quiet_for(self.rotation_grace));
        if finished {
            // The generation is finished: an unterminated last line will never get its newline.
            if self.buffer.last().is_some_and(|&last| last != b'\n') {
                self.buffer.push(b'\n');
            }
            self.handed_out = self.buffer.len();
            let done = self.current.take().expect("a generation is being read");
            self.skip_to_newline = false;
            if matches!(self.target, Target::Directory { .. }) {
                self.done.insert((
                    done.path.clone(),
                    done.identity.map(|id| (id.device, id.inode)),
                ));
            } else {
                self.remember(&done);
            }
            let notice = self.next_generation()?;
            return Ok((&self.buffer[..self.handed_out], notice));
        }
        self.handed_out = memchr::memrchr(b'\n', &self.buffer).map_or(0, |newline| newline + 1);
        Ok((&self.buffer[..self.handed_out], None))
    }

    /// After a generation is finished: the next one, opened if it is still pending.
    fn next_generation(&mut self) -> io::Result<Option<TailNotice>> {
        match self.target {
            Target::File(_) | Target::Stdin => {
                let Some(Queued::Open(mut generation)) = self.queue.pop_front() else {
                    // A vanished file finished: the next one at the path is waited for.
                    self.vanished_read = true;
                    return Ok(None);
                };
                // Truncated since the last check: what it held then is lost.
                if let Some(lost) = generation.lost_while_queued()? {
                    self.lost_bytes += lost;
                }
                self.begin(generation);
                Ok(Some(TailNotice::Replaced))
            }
            Target::Directory { .. } => {
                let notice = self.next_in_directory()?;
                Ok(notice.map(|notice| {
                    if notice == TailNotice::Opened {
                        TailNotice::Replaced
                    } else {
                        notice
                    }
                }))
            }
        }
    }
}

/// Drops the bytes of `buffer` up to and including its first newline while `skip_to_newline`
/// (the rest of a line not read); then, if `buffer` is one line past `max_line_bytes` with no
/// newline yet, drops it and skips the rest of it (returns true): no more than the cap is
/// held.
fn skip_or_drop(buffer: &mut Vec<u8>, skip_to_newline: &mut bool, max_line_bytes: u64) -> bool {
    if *skip_to_newline {
        let skip = match memchr::memchr(b'\n', buffer) {
            Some(newline) => {
                *skip_to_newline = false;
                newline + 1
            }
            None => buffer.len(),
        };
        buffer.drain(..skip);
    }
    if *skip_to_newline
        || !litehit_core::formats::is_too_long(buffer.len(), max_line_bytes)
        || memchr::memchr(b'\n', buffer).is_some()
    {
        return false;
    }
    buffer.clear();
    buffer.shrink_to(READ_CHUNK_BYTES);
    *skip_to_newline = true;
    true
}

/// A copy of `current`'s old content beside `path` (logrotate `copytruncate`): a regular
/// file of the same directory, not `path` itself, at least as long as what was read, that
/// starts with the bytes `current` started with and holds the last bytes read right before
/// the offset reached. Opened at that offset, to be read to its end.
fn find_copy(path: &Path, current: &Generation) -> io::Result<Option<Generation>> {
    let directory = litehit_core::facts::file::directory_of(path);
    let Ok(entries) = std::fs::read_dir(directory) else {
        return Ok(None);
    };
    for entry in entries.flatten() {
        let candidate = entry.path();
        if candidate.file_name() == path.file_name() {
            continue;
        }
        let Ok(meta) = std::fs::metadata(&candidate) else {
            continue;
        };
        if !meta.is_file()
            || meta.len() < current.read_offset
            || FileIdentity::of(&meta) == current.identity
        {
            continue;
        }
        let Ok(Some(mut copy)) = Generation::open(&candidate) else {
            continue;
        };
        let mut head = vec![0; current.head.len()];
        let mut recent = vec![0; current.recent.len()];
        let recent_at = current.read_offset - current.recent.len() as u64;
        if read_at(&copy.file, &mut head, 0)? != head.len()
            || head != current.head
            || read_at(&copy.file, &mut recent, recent_at)? != recent.len()
            || recent != current.recent
        {
            continue;
        }
        copy.file.seek(SeekFrom::Start(current.read_offset))?;
        copy.read_offset = current.read_offset;
        copy.head.clone_from(&current.head);
        copy.recent.clone_from(&current.recent);
        copy.complete = true;
        return Ok(Some(copy));
    }
    Ok(None)
}

/// Opens `path` for reading without blocking: a FIFO with no writer must not hang the
/// reader (regular files read the same either way).
fn open_non_blocking(path: &Path) -> io::Result<File> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt as _;
        std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(rustix::fs::OFlags::NONBLOCK.bits().cast_signed())
            .open(path)
    }
    #[cfg(not(unix))]
    {
        File::open(path)
    }
}

/// Reads up to `buffer.len()` bytes at `offset` without moving the file position; returns
/// how many were read (fewer only at the end of the file).
fn read_at(file: &File, buffer: &mut [u8], offset: u64) -> io::Result<usize> {
    use std::os::unix::fs::FileExt as _;
    let mut filled = 0;
    while filled < buffer.len() {
        match file.read_at(&mut buffer[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            Err(err) => return Err(err),
        }
    }
    Ok(filled)
}

/// How the tailer learns that the file changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WakeSource {
    /// File system events (notify) on the parent directory, with a slow safety poll.
    Events,
    /// Polling only: notify could not start or its events do not arrive (network file systems).
    Polling,
}

/// Watches the followed file's directory (or the followed directory) and calls `wake` on
/// every event about what is followed.
pub struct FileWatcher {
    _watcher: notify::RecommendedWatcher,
}

impl std::fmt::Debug for FileWatcher {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("FileWatcher").finish_non_exhaustive()
    }
}

impl FileWatcher {
    /// Starts watching the directory of `path` (so creation, rename and deletion are seen);
    /// the new names the file is renamed to go to `renames`. Fails where notify cannot watch;
    /// the caller then polls.
    pub fn start(
        path: &Path,
        renames: RenameSink,
        wake: impl Fn() + Send + 'static,
    ) -> notify::Result<Self> {
        use notify::event::{EventKind, ModifyKind, RenameMode};
        let directory = litehit_core::facts::file::directory_of(path).to_path_buf();
        let file_name = path.file_name().map(std::ffi::OsStr::to_os_string);
        let is_followed = move |event_path: &Path| {
            event_path.file_name().map(std::ffi::OsStr::to_os_string) == file_name
        };
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let relevant = match &event {
                    Ok(event) => {
                        if event.kind == EventKind::Modify(ModifyKind::Name(RenameMode::Both))
                            && let [from, to] = event.paths.as_slice()
                            && is_followed(from)
                        {
                            renames.push(to.clone());
                        }
                        event.paths.iter().any(|path| is_followed(path))
                    }
                    Err(_) => true,
                };
                if relevant {
                    wake();
                }
            })?;
        notify::Watcher::watch(
            &mut watcher,
            &directory,
            notify::RecursiveMode::NonRecursive,
        )?;
        Ok(Self { _watcher: watcher })
    }

    /// Starts watching the directory `dir` for anything (a followed directory).
    pub fn start_directory(dir: &Path, wake: impl Fn() + Send + 'static) -> notify::Result<Self> {
        Self::watch(dir, |_: &Path| true, wake)
    }

    fn watch(
        directory: &Path,
        relevant: impl Fn(&Path) -> bool + Send + 'static,
        wake: impl Fn() + Send + 'static,
    ) -> notify::Result<Self> {
        use notify::Watcher as _;
        let mut watcher =
            notify::recommended_watcher(move |event: notify::Result<notify::Event>| {
                let relevant = match &event {
                    Ok(event) => event.paths.iter().any(|path| relevant(path)),
                    Err(_) => true,
                };
                if relevant {
                    wake();
                }
            })?;
        watcher.watch(directory, notify::RecursiveMode::NonRecursive)?;
        Ok(Self { _watcher: watcher })
    }
}

/// Standard input as a non-blocking file of its own (a duplicate descriptor): a pipe with
/// nothing in it then reads as "nothing yet", not a wait, and its end as the end.
fn stdin_non_blocking() -> io::Result<File> {
    use std::os::fd::AsFd as _;
    let fd = std::io::stdin().as_fd().try_clone_to_owned()?;
    let flags = rustix::fs::fcntl_getfl(&fd)?;
    rustix::fs::fcntl_setfl(&fd, flags | rustix::fs::OFlags::NONBLOCK)?;
    Ok(File::from(fd))
}

/// Appends up to one buffer's worth (at least half of [`READ_CHUNK_BYTES`]) from `file`;
/// returns the bytes read, and whether the end of the input was reached (a read gave 0; a
/// non-blocking stream with nothing to read now is not at its end).
fn fill_buffer(file: &mut File, buffer: &mut Vec<u8>) -> io::Result<(u64, bool)> {
    let start = buffer.len();
    if buffer.capacity() - start < READ_CHUNK_BYTES / 2 {
        // A partial line longer than memory is an error (the ingest thread stops cleanly on
        // `OutOfMemory`), not an abort.
        buffer.try_reserve(READ_CHUNK_BYTES).map_err(|_| {
            io::Error::new(
                io::ErrorKind::OutOfMemory,
                format!(
                    "out of memory growing the read buffer past {} bytes",
                    start.saturating_add(READ_CHUNK_BYTES)
                ),
            )
        })?;
    }
    buffer.resize(buffer.capacity(), 0);
    let mut filled = start;
    let result = loop {
        if filled == buffer.len() {
            break Ok(false);
        }
        match file.read(&mut buffer[filled..]) {
            Ok(0) => break Ok(true),
            Ok(n) => filled += n,
            Err(err) if err.kind() == io::ErrorKind::Interrupted => {}
            // A stream with nothing to read now: nothing more now, not the end.
            Err(err) if err.kind() == io::ErrorKind::WouldBlock => break Ok(false),
            Err(err) => break Err(err),
        }
    };
    buffer.truncate(filled);
    result.map(|end| ((filled - start) as u64, end))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write as _;

    fn append(path: &Path, text: &str) {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .unwrap()
            .write_all(text.as_bytes())
            .unwrap();
    }

    /// Reads until nothing comes; returns the lines.
    fn drain(tailer: &mut Tailer) -> Vec<String> {
        let mut lines = Vec::new();
        for _ in 0..100 {
            tailer.check().unwrap();
            let (chunk, notice) = tailer.read_chunk().unwrap();
            if chunk.is_empty() && notice.is_none() {
                break;
            }
            lines.extend(String::from_utf8_lossy(chunk).lines().map(str::to_owned));
        }
        lines
    }

    #[test]
    fn bytes_known_but_unread_at_a_truncation_are_counted_as_lost() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        append(&path, "first line\n");
        let mut tailer = Tailer::new(&path, StartAt::Beginning);
        assert_eq!(drain(&mut tailer), ["first line"]);
        append(&path, "never read\n");
        assert!(tailer.refresh_len(), "the longer file is seen, not read");
        std::fs::write(&path, "other content, longer than before\n").unwrap();
        assert_eq!(tailer.check().unwrap(), Some(TailNotice::Truncated));
        assert_eq!(tailer.lost_bytes(), "never read\n".len() as u64);
        assert_eq!(drain(&mut tailer), ["other content, longer than before"]);
    }

    #[test]
    fn a_copytruncate_copy_supplies_the_unread_rest() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        append(&path, "a\nb\n");
        let mut tailer = Tailer::new(&path, StartAt::Beginning);
        assert_eq!(drain(&mut tailer), ["a", "b"]);
        append(&path, "c\nd");
        std::fs::copy(&path, dir.path().join("t.jsonl.1")).unwrap();
        std::fs::write(&path, "e\n").unwrap();
        assert_eq!(tailer.check().unwrap(), Some(TailNotice::RecoveredFromCopy));
        assert_eq!(
            drain(&mut tailer),
            ["c", "d", "e"],
            "the copy, then the new content"
        );
        assert_eq!(tailer.lost_bytes(), 0);
    }

    #[test]
    fn a_fifo_at_the_path_is_refused_without_blocking() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.jsonl");
        let made = std::process::Command::new("mkfifo")
            .arg(&path)
            .status()
            .unwrap();
        assert!(made.success());
        let mut tailer = Tailer::new(&path, StartAt::Beginning);
        assert_eq!(tailer.check().unwrap(), Some(TailNotice::NotRegular));
        assert_eq!(tailer.check().unwrap(), None, "reported once");
        assert!(!tailer.is_open());
    }
}
