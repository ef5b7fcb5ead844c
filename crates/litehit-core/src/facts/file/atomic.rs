//! All-or-nothing publication: lock the destination, write a fresh temp file beside it,
//! flush, fsync, rename it over the destination, fsync the directory. Dropping an unpublished
//! file removes the temp file, so a failed or killed run never replaces (or deletes) a
//! previously published file.
//!
//! The temp file is `.<name>.<pid>.<random>.tmp` in the destination's directory, created
//! exclusively (`O_CREAT|O_EXCL`: a symlink, FIFO or anyone's file already at that name is
//! never opened, and another name is drawn), with the umask's permissions as any new file.
//! A user's file never has such a name ([`is_temp_path`]; inputs so named are refused), so
//! the holder of the destination's lock ([`lock`](super::lock)) removes the temp files of
//! killed runs it finds for its destination. Two writers to one destination: the second
//! fails at once, naming the first.
//!
//! Only regular files (or new paths) are published that way. A symlink is followed, so the
//! file it names is replaced and the link stays — but not a link in a sticky world-writable
//! directory (`/tmp`) owned by someone other than this user and the directory's owner, as
//! the kernel's `protected_symlinks` rule. A path that exists and is not a regular
//! file — `/dev/null`, a FIFO, a terminal, `>(cmd)` — is written in place (opened without
//! truncation, never removed): renaming a file over it would replace the device or pipe
//! itself. The process's own standard output under another name (`/dev/stdout`) is the
//! caller's to handle ([`is_standard_output`]): a second open of it would not share its
//! file offset.

use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::os::unix::fs::MetadataExt as _;
use std::path::{Path, PathBuf};

use super::lock::PublishLock;
use super::temp::{create_temp_file, remove_stale_temp_files};
pub use super::temp::{directory_of, is_temp_path};
use super::{FACTS_HEADER, FactsError, Result};

/// Write buffer of an atomic file: large, so the kernel sees few big writes.
const WRITE_BUFFER_BYTES: usize = 1 << 20;

/// `file` behind a [`WRITE_BUFFER_BYTES`] buffer, or unbuffered when memory for the buffer
/// is not there (a facts write as the monitor runs out of memory must not abort): the buffer
/// is tried fallibly first.
fn buffered(file: File) -> BufWriter<File> {
    let mut probe: Vec<u8> = Vec::new();
    let capacity = if probe.try_reserve_exact(WRITE_BUFFER_BYTES).is_ok() {
        WRITE_BUFFER_BYTES
    } else {
        0
    };
    drop(probe);
    BufWriter::with_capacity(capacity, file)
}

/// Checks now, before any work, that `path` can be published: its directory exists and a
/// temp file can be created in it (one is created and removed again). An existing path
/// that is not a regular file (written in place) is left to the writer.
pub fn check_publishable(path: &Path) -> Result<()> {
    let create_error = |source| FactsError::Create {
        path: path.to_path_buf(),
        source,
    };
    if fs::metadata(path).is_ok_and(|metadata| !metadata.is_file()) {
        return Ok(());
    }
    let regular = resolve_symlinks(path).map_err(create_error)?;
    let directory = directory_of(&regular);
    if !directory.is_dir() {
        return Err(create_error(std::io::Error::other(format!(
            "the directory {} does not exist",
            directory.display()
        ))));
    }
    let (temp_path, file) = create_temp_file(&regular)?;
    drop(file);
    match fs::remove_file(&temp_path) {
        // A writer of `path` that started meanwhile took it for a killed run's and removed it.
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => Ok(()),
        removed => removed.map_err(|source| FactsError::Create {
            path: temp_path,
            source,
        }),
    }
}

/// Whether `path` is spelled as a directory: it ends in `/`.
#[must_use]
pub fn ends_in_separator(path: &Path) -> bool {
    path.as_os_str()
        .as_encoded_bytes()
        .ends_with(std::path::MAIN_SEPARATOR_STR.as_bytes())
}

/// How many symlinks [`resolve_symlinks`] follows before giving up (as the kernel's
/// `MAXSYMLINKS`).
const MAX_SYMLINK_HOPS: usize = 40;

/// `path` with its last component's symlinks followed, also a dangling link (so the file is
/// created where the link points). A loop is an error, and so is a link that the kernel's
/// `protected_symlinks` rule would not follow: one in a sticky world-writable directory,
/// owned neither by this user nor by the directory's owner (someone else's trap in `/tmp`).
pub fn resolve_symlinks(path: &Path) -> std::io::Result<PathBuf> {
    let mut resolved = path.to_path_buf();
    for _ in 0..MAX_SYMLINK_HOPS {
        let Ok(target) = fs::read_link(&resolved) else {
            return Ok(resolved);
        };
        check_link_is_trusted(&resolved)?;
        resolved = match resolved.parent() {
            Some(parent) => parent.join(target),
            None => target,
        };
    }
    Err(std::io::Error::other(format!(
        "too many levels of symbolic links from {}",
        path.display()
    )))
}

/// The `protected_symlinks` rule for the symlink at `link`.
fn check_link_is_trusted(link: &Path) -> std::io::Result<()> {
    const STICKY_AND_WORLD_WRITABLE: u32 = 0o1002;
    let directory = directory_of(link);
    let (link_metadata, directory_metadata) =
        (fs::symlink_metadata(link)?, fs::metadata(directory)?);
    let shared = directory_metadata.mode() & STICKY_AND_WORLD_WRITABLE == STICKY_AND_WORLD_WRITABLE;
    let owner = link_metadata.uid();
    let trusted = owner == rustix::process::geteuid().as_raw() || owner == directory_metadata.uid();
    if shared && !trusted {
        return Err(std::io::Error::other(format!(
            "{} is a symbolic link of another user in the shared directory {}; not following it",
            link.display(),
            directory.display()
        )));
    }
    Ok(())
}

/// Whether `path` names this process's standard output (`-`, `/dev/stdout`, `/dev/fd/1`, or
/// the file or pipe stdout was redirected to): such output must go through the stdout
/// handle, which shares the shell's file offset (`>>`) and the process's other output.
#[must_use]
pub fn is_standard_output(path: &Path) -> bool {
    path.as_os_str() == "-" || is_where_stdout_goes(path)
}

/// Whether the file at `path` (an input too, say) is where standard output goes: the same
/// device and inode as fd 1 (`-`, which is a name and not a file, is not).
#[must_use]
pub fn is_where_stdout_goes(path: &Path) -> bool {
    use std::os::fd::AsFd as _;
    use std::os::unix::fs::MetadataExt as _;
    let identity = |metadata: &fs::Metadata| (metadata.dev(), metadata.ino());
    let stdout = std::io::stdout()
        .as_fd()
        .try_clone_to_owned()
        .ok()
        .and_then(|fd| File::from(fd).metadata().ok());
    match (stdout, fs::metadata(path)) {
        (Some(stdout), Ok(target)) => identity(&stdout) == identity(&target),
        _ => false,
    }
}

/// A name for one of this process's open descriptors (`/dev/stderr`, `/dev/fd/2`,
/// `/proc/self/fd/2`, ...), other than standard output, which callers handle: publishing
/// by rename would leave the descriptor on the old, unlinked file.
fn names_a_descriptor(path: &Path) -> bool {
    let text = path.as_os_str().as_encoded_bytes();
    path.starts_with("/dev/fd")
        || (path.starts_with("/proc") && text.windows(4).any(|w| w == b"/fd/"))
        || [Path::new("/dev/stdin"), Path::new("/dev/stderr")].contains(&path)
}

/// A file that appears at its final path only on [`AtomicFile::commit`] (or, for a path that
/// is not a regular file, is written in place: see the module docs).
#[derive(Debug)]
pub struct AtomicFile {
    /// Past its symlinks (as given when written in place).
    final_path: PathBuf,
    /// `.<name>.<pid>.<random>.tmp` beside it; `None` when written in place.
    temp_path: Option<PathBuf>,
    /// Held until the file is published or dropped; `None` when written in place.
    lock: Option<PublishLock>,
    /// `Some` until `commit` takes it.
    writer: Option<BufWriter<File>>,
    published: bool,
}

impl AtomicFile {
    /// Takes the destination's lock (or fails at once, naming its holder), removes the temp
    /// files of killed runs and creates a fresh temp file; for an existing path that is not
    /// a regular file, opens the path itself.
    pub fn create(final_path: &Path) -> Result<Self> {
        let create_error = |path: &Path, source| FactsError::Create {
            path: path.to_path_buf(),
            source,
        };
        let metadata = fs::metadata(final_path);
        if metadata.as_ref().is_ok_and(fs::Metadata::is_dir) {
            return Err(create_error(
                final_path,
                std::io::Error::other("is a directory; name a file"),
            ));
        }
        let in_place = metadata.is_ok_and(|metadata| !metadata.is_file());
        if in_place {
            let file = fs::OpenOptions::new()
                .write(true)
                .open(final_path)
                .map_err(|source| create_error(final_path, source))?;
            return Ok(Self {
                final_path: final_path.to_path_buf(),
                temp_path: None,
                lock: None,
                writer: Some(buffered(file)),
                published: false,
            });
        }
        if names_a_descriptor(final_path) {
            return Err(create_error(
                final_path,
                std::io::Error::other(
                    "names an open descriptor of this process that leads to a regular file; \
                     name that file itself (or - for standard output)",
                ),
            ));
        }
        if ends_in_separator(final_path) {
            return Err(create_error(
                final_path,
                std::io::Error::other("names a directory (it ends in /); name a file"),
            ));
        }
        let regular =
            resolve_symlinks(final_path).map_err(|source| create_error(final_path, source))?;
        let directory = directory_of(&regular);
        if !directory.is_dir() {
            // Said of the path asked for, not of the temp file this would have created.
            return Err(create_error(
                final_path,
                std::io::Error::other(format!(
                    "the directory {} does not exist",
                    directory.display()
                )),
            ));
        }
        let lock = PublishLock::acquire(&regular)?;
        remove_stale_temp_files(&regular);
        let (temp_path, file) = create_temp_file(&regular)?;
        Ok(Self {
            final_path: regular,
            temp_path: Some(temp_path),
            lock: Some(lock),
            writer: Some(buffered(file)),
            published: false,
        })
    }

    /// A placeholder that owns no file and does nothing when dropped (what is left in a
    /// wrapper's field once the real file is taken out).
    fn inert() -> Self {
        Self {
            final_path: PathBuf::new(),
            temp_path: None,
            lock: None,
            writer: None,
            published: true,
        }
    }

    /// The buffered writer of the temp file.
    pub fn writer(&mut self) -> &mut BufWriter<File> {
        self.writer
            .as_mut()
            .expect("the writer is only taken by commit, which consumes self")
    }

    /// Writes `bytes` to the temp file.
    pub fn write_all(&mut self, bytes: &[u8]) -> Result<()> {
        let path = self.temp_path().to_path_buf();
        self.writer
            .as_mut()
            .expect("the writer is only taken by commit, which consumes self")
            .write_all(bytes)
            .map_err(|source| FactsError::Write { path, source })
    }

    /// The path the file is published at (past its symlinks).
    #[must_use]
    pub fn final_path(&self) -> &Path {
        &self.final_path
    }

    /// The path written until commit: the temp file (the final path when written in place).
    #[must_use]
    pub fn temp_path(&self) -> &Path {
        self.temp_path.as_deref().unwrap_or(&self.final_path)
    }

    /// What an unpublished file leaves to remove: its temp file (nothing when written in
    /// place: a device or pipe is never deleted).
    fn discard_path(&self) -> Option<&Path> {
        self.temp_path.as_deref()
    }

    /// The lock file held while writing, if any.
    #[must_use]
    pub fn lock_path(&self) -> Option<&Path> {
        self.lock.as_ref().map(PublishLock::path)
    }

    /// Flushes, fsyncs the file, renames it to its final path and fsyncs the directory.
    pub fn commit(mut self) -> Result<PathBuf> {
        let writer = self
            .writer
            .take()
            .expect("the writer is only taken by commit, which consumes self");
        let written = self.temp_path().to_path_buf();
        let write_error = |source| FactsError::Write {
            path: written.clone(),
            source,
        };
        let file = writer
            .into_inner()
            .map_err(|e| write_error(e.into_error()))?;
        let Some(temp_path) = self.temp_path.clone() else {
            // A device or pipe: nothing to rename, and fsync is not defined for it.
            self.published = true;
            return Ok(self.final_path.clone());
        };
        file.sync_all().map_err(write_error)?;
        drop(file);
        fs::rename(&temp_path, &self.final_path).map_err(|source| FactsError::Publish {
            from: temp_path.clone(),
            to: self.final_path.clone(),
            source,
        })?;
        self.published = true;
        File::open(directory_of(&self.final_path))
            .and_then(|dir| dir.sync_all())
            .map_err(|source| FactsError::Publish {
                from: temp_path.clone(),
                to: self.final_path.clone(),
                source,
            })?;
        Ok(self.final_path.clone())
    }
}

impl Drop for AtomicFile {
    fn drop(&mut self) {
        if self.published {
            return;
        }
        if let Some(writer) = self.writer.take() {
            // Discard the buffer instead of flushing it into a file we are about to delete.
            let (file, _unwritten) = writer.into_parts();
            drop(file);
        }
        if let Some(temp_path) = self.discard_path() {
            // Best effort: the file may never have been created or may be gone already.
            let _ = fs::remove_file(temp_path);
        }
    }
}

/// Writes a whole file at `path` atomically: `write` fills a fresh temp file, published
/// only if `write` succeeds; on any error nothing is published and the temp file is removed.
pub fn write_atomically<T, E>(
    path: &Path,
    write: impl FnOnce(&mut BufWriter<File>) -> Result<T, E>,
) -> Result<T, E>
where
    E: From<FactsError>,
{
    let mut file = AtomicFile::create(path)?;
    let value = write(file.writer())?;
    file.commit()?;
    Ok(value)
}

/// Writes `<output_dir>/litehit_facts.csv` (or a named facts file) all-or-nothing.
///
/// Rows come pre-formatted by [`append_fact_row`](super::append_fact_row). Until
/// [`commit`](Self::commit) everything goes to a fresh temp file; dropping the writer
/// without committing removes the temp file and leaves any earlier `litehit_facts.csv` intact.
#[derive(Debug)]
pub struct AtomicFactsWriter {
    file: AtomicFile,
    rows_written: u64,
    /// The directories this writer created, deepest first: removed again (when empty) if
    /// the facts are never committed, so a failed run leaves nothing behind.
    created_dirs: Vec<PathBuf>,
}

impl AtomicFactsWriter {
    /// Publishes to `facts_path` itself: creates its directory if missing, creates its temp
    /// file ([`AtomicFile::create`]) and writes the header.
    pub fn create_file(facts_path: &Path) -> Result<Self> {
        let mut writer = Self::create_empty_file(facts_path)?;
        writer.file.write_all(FACTS_HEADER.as_bytes())?;
        writer.file.write_all(b"\n")?;
        Ok(writer)
    }

    /// [`Self::create_file`] without the CSV header: the publication of a facts file in
    /// another layout (Parquet), written through [`Self::clone_handle`].
    pub fn create_empty_file(facts_path: &Path) -> Result<Self> {
        let created_dirs = create_directory_of(facts_path)?;
        // On an error the guard removes the directories it made.
        let file = AtomicFile::create(facts_path)?;
        Ok(Self {
            file,
            rows_written: 0,
            created_dirs: created_dirs.into_paths(),
        })
    }

    /// A second handle of the file being written (the temp file), for a writer that must
    /// own its sink; what it writes is published (or discarded) with this writer.
    pub fn clone_handle(&mut self) -> std::io::Result<File> {
        let writer = self.file.writer();
        writer.flush()?;
        writer.get_ref().try_clone()
    }

    /// Writes rows formatted by [`append_fact_row`](super::append_fact_row); each `\n` counts
    /// as one row.
    pub fn write_bytes(&mut self, rows: &[u8]) -> Result<()> {
        self.file.write_all(rows)?;
        self.rows_written += memchr::memchr_iter(b'\n', rows).count() as u64;
        Ok(())
    }

    /// What dropping this writer unpublished removes (the temp file, the lock file, then the
    /// directories it created), as a closure for a path that cannot drop it: a process about
    /// to exit.
    pub fn discard_on_exit(&self) -> impl FnOnce() + Send + 'static {
        let temp_path = self.file.discard_path().map(Path::to_path_buf);
        let remove_lock = self.file.lock.as_ref().map(PublishLock::discard_on_exit);
        let created_dirs = self.created_dirs.clone();
        move || {
            if let Some(temp_path) = temp_path {
                let _ = fs::remove_file(temp_path);
            }
            if let Some(remove_lock) = remove_lock {
                remove_lock();
            }
            remove_created_dirs(created_dirs);
        }
    }

    /// Rows written so far.
    #[must_use]
    pub fn rows_written(&self) -> u64 {
        self.rows_written
    }

    /// The path the facts file is published at.
    #[must_use]
    pub fn final_path(&self) -> &Path {
        self.file.final_path()
    }

    /// The temp path written until commit.
    #[must_use]
    pub fn temp_path(&self) -> &Path {
        self.file.temp_path()
    }

    /// Flushes, fsyncs, renames to `litehit_facts.csv`, fsyncs the directory; returns the path.
    /// If it fails (a full disk), the directories this writer created are removed when
    /// nothing was published in them.
    pub fn commit(mut self) -> Result<PathBuf> {
        let file = std::mem::replace(&mut self.file, AtomicFile::inert());
        let committed = file.commit(); // the temp and lock files are gone either way
        if committed.is_ok() {
            self.created_dirs.clear(); // published: the directories stay
        }
        committed
    }
}

impl Drop for AtomicFactsWriter {
    fn drop(&mut self) {
        if !self.created_dirs.is_empty() {
            // The temp file goes first (the field's own drop runs after this one, so drop it
            // now); then the directories, deepest first, each only if nothing else is in it.
            drop(std::mem::replace(&mut self.file, AtomicFile::inert()));
            remove_created_dirs(std::mem::take(&mut self.created_dirs));
        }
    }
}

/// Creates the directory `facts_path` goes in when it is missing (`create_dir_all`), as
/// `replay --out` and the monitor's `--facts-out` do; a file where that directory should be is
/// an error naming both. Only directories are made: the file itself is published later
/// ([`AtomicFile`]), with its rules for symlinks.
pub fn create_directory_of(facts_path: &Path) -> Result<CreatedDirs> {
    let output_dir = directory_of(facts_path);
    let create_error = |source| FactsError::Create {
        path: output_dir.to_path_buf(),
        source,
    };
    if fs::metadata(output_dir).is_ok_and(|metadata| !metadata.is_dir()) {
        return Err(create_error(std::io::Error::other(format!(
            "{} is a file, not a directory, so {} cannot go in it",
            output_dir.display(),
            facts_path.display()
        ))));
    }
    // The directories `create_dir_all` is about to make, deepest first.
    let created_dirs: Vec<PathBuf> = output_dir
        .ancestors()
        .take_while(|dir| !dir.as_os_str().is_empty() && !dir.exists())
        .map(Path::to_path_buf)
        .collect();
    fs::create_dir_all(output_dir).map_err(create_error)?;
    Ok(CreatedDirs(created_dirs))
}

/// The directories [`create_directory_of`] made, deepest first. Dropped, it removes them
/// again (each only if empty), so a run that publishes nothing in them leaves nothing
/// behind; [`Self::keep`] once something is published there.
#[derive(Debug, Default)]
#[must_use = "dropping it removes the directories it made"]
pub struct CreatedDirs(Vec<PathBuf>);

impl CreatedDirs {
    /// Leaves the directories in place.
    pub fn keep(mut self) {
        self.0.clear();
    }

    /// The directories, deepest first, now the caller's to remove.
    fn into_paths(mut self) -> Vec<PathBuf> {
        std::mem::take(&mut self.0)
    }
}

impl Drop for CreatedDirs {
    fn drop(&mut self) {
        remove_created_dirs(std::mem::take(&mut self.0));
    }
}

/// Removes `created_dirs` (deepest first), each only if it is empty: a directory a run made
/// does not outlive it when nothing was published in it.
fn remove_created_dirs(created_dirs: Vec<PathBuf>) {
    for dir in created_dirs {
        if fs::remove_dir(&dir).is_err() {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 16, point 6: a commit that fails (a full disk) leaves no empty directory the run
    /// made, nor its temp or lock file.
    #[test]
    fn a_failed_commit_removes_the_directories_it_created() {
        let dir = tempfile::tempdir().unwrap();
        let created = dir.path().join("new");
        let facts_path = created.join("deeper/litehit_facts.csv");
        let mut writer = AtomicFactsWriter::create_file(&facts_path).unwrap();
        writer.write_bytes(b"t,i,1,16,16,1,[]\n").unwrap();
        // The buffered rows meet a full disk when the commit flushes them.
        *writer.file.writer().get_mut() = fs::OpenOptions::new()
            .write(true)
            .open("/dev/full")
            .unwrap();
        let error = writer.commit().unwrap_err();
        assert!(error.to_string().starts_with("failed to write"), "{error}");
        assert!(!created.exists(), "the run's directory is left behind");
        assert_eq!(fs::read_dir(dir.path()).unwrap().count(), 0);
    }

    #[test]
    fn a_second_writer_of_one_path_fails_at_once_naming_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("q.jsonl");
        let first = AtomicFile::create(&path).unwrap();
        let lock = first.lock_path().unwrap().to_path_buf();
        assert_eq!(lock, dir.path().join(".q.jsonl.lock"));
        let error = AtomicFile::create(&path).unwrap_err();
        let message = error.to_string();
        assert!(matches!(error, FactsError::Busy { .. }), "{message}");
        let pid = format!("pid {}", std::process::id());
        assert!(message.contains(&pid), "{message}");
        assert!(message.contains(&*path.to_string_lossy()), "{message}");
        first.commit().unwrap();
        assert!(!lock.exists(), "the lock file goes with its writer");
        let second = AtomicFile::create(&path).unwrap();
        drop(second);
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .collect();
        assert_eq!(names, ["q.jsonl"]);
    }
}
