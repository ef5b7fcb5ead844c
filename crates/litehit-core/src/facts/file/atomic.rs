//! All-or-nothing publication: write `<path>.tmp`, flush, fsync, rename to `<path>`, fsync the
//! directory. Dropping an unpublished file removes the temp file, so a failed or killed run
//! never replaces (or deletes) a previously published file.
//!
//! Only regular files (or new paths) are published that way. A symlink is followed, so the
//! file it names is replaced and the link stays. A path that exists and is not a regular
//! file — `/dev/null`, a FIFO, a terminal, `>(cmd)` — is written in place (opened without
//! truncation, never removed): renaming a file over it would replace the device or pipe
//! itself. The process's own standard output under another name (`/dev/stdout`) is the
//! caller's to handle ([`is_standard_output`]): a second open of it would not share its
//! file offset.

use std::ffi::OsString;
use std::fs::{self, File};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

use super::{FACTS_HEADER, FactsError, Result};

/// Write buffer of an atomic file: large, so the kernel sees few big writes.
const WRITE_BUFFER_BYTES: usize = 1 << 20;

/// The temp path used while writing `path`: `path` with `.tmp` appended.
#[must_use]
pub fn temp_path_for(path: &Path) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(".tmp");
    PathBuf::from(name)
}

/// The directory `path` is in: its parent, or `.` for a bare file name.
#[must_use]
pub fn directory_of(path: &Path) -> &Path {
    path.parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
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
/// created where the link points). A loop is an error.
pub fn resolve_symlinks(path: &Path) -> std::io::Result<PathBuf> {
    let mut resolved = path.to_path_buf();
    for _ in 0..MAX_SYMLINK_HOPS {
        let Ok(target) = fs::read_link(&resolved) else {
            return Ok(resolved);
        };
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
    /// `<final path>.tmp`; `None` when written in place.
    temp_path: Option<PathBuf>,
    /// `Some` until `commit` takes it.
    writer: Option<BufWriter<File>>,
    published: bool,
}

impl AtomicFile {
    /// Opens `<final_path>.tmp` for writing, truncating any stale temp file of a killed run;
    /// for an existing path that is not a regular file, opens the path itself.
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
                writer: Some(BufWriter::with_capacity(WRITE_BUFFER_BYTES, file)),
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
        let temp_path = temp_path_for(&regular);
        let file = File::create(&temp_path).map_err(|source| create_error(&temp_path, source))?;
        Ok(Self {
            final_path: regular,
            temp_path: Some(temp_path),
            writer: Some(BufWriter::with_capacity(WRITE_BUFFER_BYTES, file)),
            published: false,
        })
    }

    /// A placeholder that owns no file and does nothing when dropped (what is left in a
    /// wrapper's field once the real file is taken out).
    fn inert() -> Self {
        Self {
            final_path: PathBuf::new(),
            temp_path: None,
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

/// Writes a whole file at `path` atomically: `write` fills `<path>.tmp`, which is published
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
/// [`commit`](Self::commit) everything goes to `litehit_facts.csv.tmp`; dropping the writer
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
    /// Publishes to `facts_path` itself: creates its directory if missing, opens
    /// `<facts_path>.tmp` (truncating a stale one) and writes the header.
    pub fn create_file(facts_path: &Path) -> Result<Self> {
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
        let mut writer = Self {
            file: AtomicFile::create(facts_path)?,
            rows_written: 0,
            created_dirs,
        };
        writer.file.write_all(FACTS_HEADER.as_bytes())?;
        writer.file.write_all(b"\n")?;
        Ok(writer)
    }

    /// Writes rows formatted by [`append_fact_row`](super::append_fact_row); each `\n` counts
    /// as one row.
    pub fn write_bytes(&mut self, rows: &[u8]) -> Result<()> {
        self.file.write_all(rows)?;
        self.rows_written += memchr::memchr_iter(b'\n', rows).count() as u64;
        Ok(())
    }

    /// What dropping this writer unpublished removes (the temp file, then the directories it
    /// created), as a closure for a path that cannot drop it: a process about to exit.
    pub fn discard_on_exit(&self) -> impl FnOnce() + Send + 'static {
        let temp_path = self.file.discard_path().map(Path::to_path_buf);
        let created_dirs = self.created_dirs.clone();
        move || {
            if let Some(temp_path) = temp_path {
                let _ = fs::remove_file(temp_path);
            }
            for dir in created_dirs {
                if fs::remove_dir(&dir).is_err() {
                    break;
                }
            }
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
    pub fn commit(mut self) -> Result<PathBuf> {
        self.created_dirs.clear(); // published: the directories stay, even if the commit fails
        let file = std::mem::replace(&mut self.file, AtomicFile::inert());
        file.commit()
    }
}

impl Drop for AtomicFactsWriter {
    fn drop(&mut self) {
        if !self.created_dirs.is_empty() {
            // The temp file goes first (the field's own drop runs after this one, so drop it
            // now); then the directories, deepest first, each only if nothing else is in it.
            drop(std::mem::replace(&mut self.file, AtomicFile::inert()));
            for dir in self.created_dirs.drain(..) {
                if fs::remove_dir(&dir).is_err() {
                    break;
                }
            }
        }
    }
}
