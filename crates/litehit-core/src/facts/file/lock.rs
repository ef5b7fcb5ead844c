//! One writer per destination: an advisory `flock` on `.<name>.lock` beside the file being
//! published, held from before its temp file is created until after the rename.
//!
//! A lock file is born complete, so its holder can always be named: a writer creates a
//! private temp file (named as [`temp`](super::temp) names temp files), writes its pid
//! into it, locks it, and only then links it to `.<name>.lock`. `link` fails when the name
//! exists, so one writer's file stands there at a time. A writer that finds the name taken
//! opens that file without following a symlink (`O_NOFOLLOW`) or blocking on a FIFO
//! (`O_NONBLOCK`), and it must be a regular file holding a pid (or empty, as an older
//! LiteHit left its lock): when its lock is held, the writer named in it is publishing; when
//! it is free, that writer was killed before its clean-up, and the file is removed while
//! locked and the claim starts over. A holder deletes its lock file (while still holding it)
//! on release; a writer that opened it before that deletion finds the name gone or another
//! inode there, and starts over, so two writers never both hold "the" lock.
//!
//! The same rule tells a live owner's file from a killed one's, for files that live as long
//! as a run (the monitor's facts spill): the owner holds a `flock` on the file itself
//! ([`hold_owned_file`]), which the kernel releases however the owner ends (`kill -9`), and a
//! later run removes the files whose lock it can take ([`remove_unowned_files`]); an owner
//! that finds, once it holds the lock, that its path no longer names its file (a sweep took it
//! just before) makes another.

use std::fs::{self, File};
use std::io::{ErrorKind, Read as _, Write as _};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use rustix::fs::{FlockOperation, Mode, OFlags};

use super::temp::{create_temp_file, remove_stale_temp_files};
use super::{FactsError, Result};

/// How often [`PublishLock::acquire`] starts over: each time, another writer released,
/// replaced or cleaned the lock file between two steps of this one.
const MAX_LOCK_ATTEMPTS: usize = 200;

/// The pause before starting over, so a writer in the middle of its release or clean-up
/// (descheduled on a busy machine) can finish it.
const RETRY_PAUSE: Duration = Duration::from_millis(1);

/// The most a lock file holds: a pid and a newline.
const MAX_LOCK_FILE_BYTES: u64 = 32;

/// The exclusive right to publish one destination, released when dropped.
#[derive(Debug)]
pub(super) struct PublishLock {
    /// Holds the `flock`; closing it releases the lock.
    _file: File,
    path: PathBuf,
    /// The locked file's device and inode.
    identity: (u64, u64),
}

/// What a claim of the lock's name found.
enum Claim {
    Held(PublishLock),
    /// The name changed hands meanwhile: start over.
    Retry,
    /// The name is held by a writer this process cannot see: one removing a killed writer's
    /// lock, which a next attempt finds gone — or a live writer in another pid namespace,
    /// which this error names when no attempt gets past it.
    RetryOr(FactsError),
}

impl PublishLock {
    /// Takes the lock for publishing `final_path` (a path past its symlinks) or fails at
    /// once, naming the process that holds it.
    pub(super) fn acquire(final_path: &Path) -> Result<Self> {
        let lock_path = lock_path_for(final_path);
        let mut unseen_holder = None;
        for _ in 0..MAX_LOCK_ATTEMPTS {
            let (temp_path, file) = create_temp_file(&lock_path)?;
            let claim = claim(file, &temp_path, &lock_path, final_path);
            // Linked, the lock's name keeps the inode; not linked, the attempt is over.
            let _ = fs::remove_file(&temp_path);
            match claim? {
                Claim::Held(lock) => {
                    // Killed writers' lock temp files; a live writer whose temp file this
                    // removes starts over (its link finds no file).
                    remove_stale_temp_files(&lock_path);
                    return Ok(lock);
                }
                Claim::Retry => {}
                Claim::RetryOr(busy) => unseen_holder = Some(busy),
            }
            std::thread::sleep(RETRY_PAUSE);
        }
        Err(unseen_holder.unwrap_or_else(|| FactsError::Create {
            path: lock_path,
            source: std::io::Error::other("other writers kept replacing it; try again"),
        }))
    }

    /// The lock file's path.
    pub(super) fn path(&self) -> &Path {
        &self.path
    }

    /// What dropping the lock removes, as a closure for a process about to exit (which
    /// still holds the lock until it has exited).
    pub(super) fn discard_on_exit(&self) -> impl FnOnce() + Send + 'static {
        let (path, identity) = (self.path.clone(), self.identity);
        move || remove_lock_file(&path, identity)
    }
}

impl Drop for PublishLock {
    fn drop(&mut self) {
        remove_lock_file(&self.path, self.identity);
        // Closing the file (after this) releases the lock.
    }
}

/// Writes this process's pid into the fresh `file` at `temp_path`, locks it and links it to
/// `lock_path`; when that name is taken, looks at the file there.
fn claim(mut file: File, temp_path: &Path, lock_path: &Path, final_path: &Path) -> Result<Claim> {
    let temp_error = |source| FactsError::Create {
        path: temp_path.to_path_buf(),
        source,
    };
    writeln!(file, "{}", std::process::id()).map_err(temp_error)?;
    rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive)
        .map_err(|errno| temp_error(errno.into()))?;
    let metadata = file.metadata().map_err(temp_error)?;
    match fs::hard_link(temp_path, lock_path) {
        Ok(()) => Ok(Claim::Held(PublishLock {
            _file: file,
            path: lock_path.to_path_buf(),
            identity: (metadata.dev(), metadata.ino()),
        })),
        // The holder's clean-up took this temp file for a killed writer's.
        Err(error) if error.kind() == ErrorKind::NotFound => Ok(Claim::Retry),
        Err(error) if error.kind() == ErrorKind::AlreadyExists => {
            examine_existing(lock_path, final_path)
        }
        Err(source) => Err(FactsError::Create {
            path: lock_path.to_path_buf(),
            source,
        }),
    }
}

/// What the file at the lock's name says: a live holder (an error naming it), or a killed
/// writer's lock (removed), or one that changed hands meanwhile.
fn examine_existing(lock_path: &Path, final_path: &Path) -> Result<Claim> {
    let create_error = |source| FactsError::Create {
        path: lock_path.to_path_buf(),
        source,
    };
    let not_ours = |what: &str| {
        create_error(std::io::Error::other(format!(
            "is {what}, not litehit's lock file; remove it"
        )))
    };
    let fd = match rustix::fs::open(
        lock_path,
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY,
        Mode::empty(),
    ) {
        Ok(fd) => fd,
        // Released between the link and this open.
        Err(rustix::io::Errno::NOENT) => return Ok(Claim::Retry),
        Err(rustix::io::Errno::LOOP) => return Err(not_ours("a symbolic link")),
        Err(errno) => return Err(create_error(errno.into())),
    };
    let file = File::from(fd);
    let found = file.metadata().map_err(create_error)?;
    if !found.is_file() {
        return Err(not_ours("not a regular file, so"));
    }
    let writer = read_writer(&file).map_err(create_error)?;
    let Some(writer) = writer else {
        return Err(not_ours("a file with other content"));
    };
    let identity = (found.dev(), found.ino());
    let still_named =
        || fs::symlink_metadata(lock_path).is_ok_and(|now| (now.dev(), now.ino()) == identity);
    match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
        Err(rustix::io::Errno::WOULDBLOCK) => {
            // Released meanwhile (its holder deletes it first), or held by a writer removing
            // a killed writer's lock: either way the name is about to change hands.
            if !still_named() {
                return Ok(Claim::Retry);
            }
            let busy = FactsError::Busy {
                path: final_path.to_path_buf(),
                holder: writer.describe(),
                lock: lock_path.to_path_buf(),
            };
            match writer {
                Writer::Pid(pid) if !process_exists(pid) => Ok(Claim::RetryOr(busy)),
                _ => Err(busy),
            }
        }
        Ok(()) => {
            // No one holds it: its writer was killed before its clean-up. Holding its lock,
            // this writer alone may remove it (another finds it locked, or gone).
            if still_named() {
                fs::remove_file(lock_path).map_err(|source| FactsError::Create {
                    path: lock_path.to_path_buf(),
                    source: std::io::Error::new(
                        source.kind(),
                        format!("a killed writer's lock file could not be removed: {source}"),
                    ),
                })?;
            }
            Ok(Claim::Retry)
        }
        Err(errno) => Err(create_error(errno.into())),
    }
}

/// Who wrote a lock file, as its content says.
#[derive(Clone, Copy)]
enum Writer {
    Pid(u32),
    /// An empty file: the lock of a LiteHit from before lock files held a pid.
    OlderLiteHit,
}

impl Writer {
    /// `pid N, COMMAND` (the command when the system says).
    fn describe(self) -> String {
        let Self::Pid(pid) = self else {
            return "an older litehit, which does not write its pid".to_owned();
        };
        if !process_exists(pid) {
            return format!("pid {pid}, not seen from this process's pid namespace");
        }
        let command: String = fs::read_to_string(format!("/proc/{pid}/comm"))
            .unwrap_or_default()
            .trim()
            .chars()
            .filter(|c| c.is_ascii_graphic() || *c == ' ')
            .collect();
        if command.is_empty() {
            format!("pid {pid}")
        } else {
            format!("pid {pid}, {command}")
        }
    }
}

/// The writer a lock file names: `Some` for `<pid>\n` or an empty file, `None` for any other
/// content (a file that is not litehit's).
fn read_writer(file: &File) -> std::io::Result<Option<Writer>> {
    let mut content = Vec::new();
    file.take(MAX_LOCK_FILE_BYTES).read_to_end(&mut content)?;
    if content.is_empty() {
        return Ok(Some(Writer::OlderLiteHit));
    }
    Ok(content
        .strip_suffix(b"\n")
        .filter(|digits| !digits.is_empty() && digits.iter().all(u8::is_ascii_digit))
        .and_then(|digits| std::str::from_utf8(digits).ok()?.parse().ok())
        .map(Writer::Pid))
}

/// Whether a process `pid` exists (in this pid namespace).
fn process_exists(pid: u32) -> bool {
    Path::new("/proc").join(pid.to_string()).exists()
}

/// Deletes the lock file at `path` if it still is the regular file with `identity`
/// (device, inode) held locked: a file that replaced it is left alone.
fn remove_lock_file(path: &Path, identity: (u64, u64)) {
    let Ok(now) = fs::symlink_metadata(path) else {
        return;
    };
    if now.is_file() && (now.dev(), now.ino()) == identity {
        // Best effort: a sticky directory may refuse to delete another user's file.
        let _ = fs::remove_file(path);
    }
}

/// `.<name>.lock` beside `final_path`.
pub(super) fn lock_path_for(final_path: &Path) -> PathBuf {
    let mut name = std::ffi::OsString::from(".");
    name.push(final_path.file_name().unwrap_or_default());
    name.push(".lock");
    final_path.with_file_name(name)
}
/// Opens an existing `path` for locking only: never through a symlink, never waiting on a
/// FIFO, never becoming a controlling terminal.
fn open_for_lock(path: &Path) -> std::io::Result<File> {
    let flags =
        OFlags::RDONLY | OFlags::NOFOLLOW | OFlags::NONBLOCK | OFlags::CLOEXEC | OFlags::NOCTTY;
    let fd = rustix::fs::open(path, flags, Mode::empty())?;
    Ok(File::from(fd))
}

/// Marks `file`, just created at `path`, as owned by this live process: an exclusive `flock`
/// on it, held while the file stays open (see the module docs). `Ok(false)` when `path` no
/// longer names `file` once locked (a later run's sweep took it for a killed run's): the
/// caller creates another.
pub fn hold_owned_file(file: &File, path: &Path) -> std::io::Result<bool> {
    rustix::fs::flock(file, FlockOperation::NonBlockingLockExclusive)?;
    let held = file.metadata()?;
    Ok(fs::symlink_metadata(path)
        .is_ok_and(|now| now.is_file() && (now.dev(), now.ino()) == (held.dev(), held.ino())))
}

/// Removes the regular files of `dir` whose names `is_candidate` accepts and whose owner is
/// gone: their `flock` ([`hold_owned_file`]) can be taken, so no live process holds them.
/// A live owner's file, a symlink, or a file this user cannot open is left alone. Best
/// effort; returns the paths removed.
pub fn remove_unowned_files(
    dir: &Path,
    is_candidate: impl Fn(&std::ffi::OsStr) -> bool,
) -> Vec<PathBuf> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Vec::new();
    };
    let mut removed = Vec::new();
    for entry in entries.flatten() {
        if !is_candidate(&entry.file_name()) || !entry.file_type().is_ok_and(|kind| kind.is_file())
        {
            continue;
        }
        let path = entry.path();
        let Ok(file) = open_for_lock(&path) else {
            continue;
        };
        let Ok(locked) = file.metadata() else {
            continue;
        };
        if !locked.is_file()
            || rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive).is_err()
        {
            continue; // its owner is alive (or it is not such a file)
        }
        // Held by us now: the owner is gone. Removed only if the path still names it.
        let still_there = fs::symlink_metadata(&path)
            .is_ok_and(|now| (now.dev(), now.ino()) == (locked.dev(), locked.ino()));
        if still_there && fs::remove_file(&path).is_ok() {
            removed.push(path);
        }
    }
    removed
}
