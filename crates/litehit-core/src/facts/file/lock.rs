//! One writer per destination: an advisory `flock` on `.<name>.lock` beside the file being
//! published, held from before its temp file is created until after the rename.
//!
//! The lock file is opened without following a symlink (`O_NOFOLLOW`) and without blocking
//! on a FIFO (`O_NONBLOCK`), must be a regular file, and is never written to. Its holder
//! deletes it (while still holding it) when it is an empty regular file; a writer that
//! opened it before that deletion finds, once it holds the lock, that the path no longer
//! names the inode it locked, and starts over, so two writers never both hold "the" lock.
//!
//! The same rule tells a live owner's file from a killed one's, for files that live as long
//! as a run (the monitor's facts spill): the owner holds a `flock` on the file itself
//! ([`hold_owned_file`]), which the kernel releases however the owner ends (`kill -9`), and a
//! later run removes the files whose lock it can take ([`remove_unowned_files`]); an owner
//! that finds, once it holds the lock, that its path no longer names its file (a sweep took it
//! just before) makes another.

use std::fs::{self, File};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use rustix::fs::{FlockOperation, Mode, OFlags};

use super::{FactsError, Result};

/// How often [`PublishLock::acquire`] starts over when the lock file was replaced between
/// opening and locking it (each time, another writer finished in between).
const MAX_LOCK_ATTEMPTS: usize = 16;

/// The exclusive right to publish one destination, released when dropped.
#[derive(Debug)]
pub(super) struct PublishLock {
    /// Holds the `flock`; closing it releases the lock.
    _file: File,
    path: PathBuf,
    /// The locked file's device and inode.
    identity: (u64, u64),
}

impl PublishLock {
    /// Takes the lock for publishing `final_path` (a path past its symlinks) or fails at
    /// once, naming the process that holds it.
    pub(super) fn acquire(final_path: &Path) -> Result<Self> {
        let lock_path = lock_path_for(final_path);
        let create_error = |source| FactsError::Create {
            path: lock_path.clone(),
            source,
        };
        for _ in 0..MAX_LOCK_ATTEMPTS {
            let fd = rustix::fs::open(
                &lock_path,
                OFlags::RDONLY
                    | OFlags::CREATE
                    | OFlags::NOFOLLOW
                    | OFlags::NONBLOCK
                    | OFlags::CLOEXEC
                    | OFlags::NOCTTY,
                Mode::from_bits_truncate(0o666),
            )
            .map_err(|errno| {
                let source = std::io::Error::from(errno);
                if errno == rustix::io::Errno::LOOP {
                    create_error(std::io::Error::other(
                        "is a symbolic link, not litehit's lock file; remove it",
                    ))
                } else {
                    create_error(source)
                }
            })?;
            let file = File::from(fd);
            let locked = file.metadata().map_err(create_error)?;
            if !locked.is_file() {
                return Err(create_error(std::io::Error::other(
                    "is not a regular file, so not litehit's lock file; remove it",
                )));
            }
            match rustix::fs::flock(&file, FlockOperation::NonBlockingLockExclusive) {
                Ok(()) => {}
                Err(rustix::io::Errno::WOULDBLOCK) => {
                    return Err(FactsError::Busy {
                        path: final_path.to_path_buf(),
                        holder: lock_holder(locked.ino()),
                        lock: lock_path,
                    });
                }
                Err(errno) => return Err(create_error(errno.into())),
            }
            // Locked; but if its holder deleted the file meanwhile, the lock is on an inode
            // no other writer will ever open: start over with the file at the path now.
            let still_there = fs::symlink_metadata(&lock_path)
                .is_ok_and(|now| (now.dev(), now.ino()) == (locked.dev(), locked.ino()));
            if still_there {
                return Ok(Self {
                    _file: file,
                    path: lock_path,
                    identity: (locked.dev(), locked.ino()),
                });
            }
        }
        Err(create_error(std::io::Error::other(
            "other writers kept replacing it; try again",
        )))
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

/// Deletes the lock file at `path` if it still is the empty regular file with `identity`
/// (device, inode) held locked: a file someone put there with content, or one that
/// replaced it, is left alone.
fn remove_lock_file(path: &Path, identity: (u64, u64)) {
    let Ok(now) = fs::symlink_metadata(path) else {
        return;
    };
    if now.is_file() && now.len() == 0 && (now.dev(), now.ino()) == identity {
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

/// Who holds the `flock` on inode `inode`, as `pid N, COMMAND`, from `/proc/locks` (the
/// kernel's word, not anything written in the file), if it can be told.
fn lock_holder(inode: u64) -> Option<String> {
    let locks = fs::read_to_string("/proc/locks").ok()?;
    let pid = locks.lines().find_map(|line| {
        let fields: Vec<&str> = line.split_whitespace().collect();
        // `1: FLOCK  ADVISORY  WRITE 4242 00:2f:1234 0 EOF`; a waiter's line has `->`.
        let [_, kind, _, _, pid, device_inode, ..] = fields.as_slice() else {
            return None;
        };
        let lock_inode = device_inode.rsplit(':').next()?.parse::<u64>().ok()?;
        (*kind == "FLOCK" && lock_inode == inode).then(|| pid.parse::<u32>().ok())?
    })?;
    let command: String = fs::read_to_string(format!("/proc/{pid}/comm"))
        .unwrap_or_default()
        .trim()
        .chars()
        .filter(|c| c.is_ascii_graphic() || *c == ' ')
        .collect();
    Some(if command.is_empty() {
        format!("pid {pid}")
    } else {
        format!("pid {pid}, {command}")
    })
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
