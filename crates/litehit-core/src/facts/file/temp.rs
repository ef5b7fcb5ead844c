//! The temp files of a publication: `.<name>.<pid>.<random>.tmp` beside the destination,
//! created exclusively, and the rule that tells such a name from a user's file. Shared by
//! the publication ([`atomic`](super::atomic)) and the lock ([`lock`](super::lock)), whose
//! lock file is born as such a temp file.

use std::ffi::{OsStr, OsString};
use std::fs::{self, File};
use std::hash::{BuildHasher as _, Hasher as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

use super::{FactsError, Result};

/// The directory `path` is in: its parent, or `.` for a bare file name.
#[must_use]
pub fn directory_of(path: &Path) -> &Path {
    path.parent()
        .filter(|dir| !dir.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// How many temp names [`create_temp_file`] tries before giving up (each taken name is
/// someone else's file: a random 64-bit name is taken by chance practically never).
const MAX_TEMP_ATTEMPTS: usize = 16;

/// A fresh temp path for publishing `final_path`: `.<name>.<pid>.<16 hex digits>.tmp` in
/// its directory, hidden and with a random part no one can guess ahead.
fn new_temp_path(final_path: &Path) -> PathBuf {
    static DRAWN: AtomicU64 = AtomicU64::new(0);
    // `RandomState` keys come from the OS's random source; the counter and the clock make
    // each name of this process differ too.
    let mut hasher = std::hash::RandomState::new().build_hasher();
    hasher.write_u64(DRAWN.fetch_add(1, Ordering::Relaxed));
    hasher.write_u128(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |since| since.as_nanos()),
    );
    let mut name = OsString::from(".");
    name.push(final_path.file_name().unwrap_or_default());
    name.push(format!(
        ".{}.{:016x}.tmp",
        std::process::id(),
        hasher.finish()
    ));
    final_path.with_file_name(name)
}

/// The destination file name a temp file name stands for: `NAME` for
/// `.NAME.<digits>.<16 hex digits>.tmp`, else `None`.
fn temp_name_target(name: &OsStr) -> Option<&[u8]> {
    let inner = name
        .as_encoded_bytes()
        .strip_prefix(b".")?
        .strip_suffix(b".tmp")?;
    let (rest, random) = inner.split_at(inner.len().checked_sub(16)?);
    let rest = rest.strip_suffix(b".")?;
    let digits = rest.iter().rev().take_while(|b| b.is_ascii_digit()).count();
    let (target, pid) = rest.split_at(rest.len() - digits);
    let target = target.strip_suffix(b".")?;
    let well_formed = !pid.is_empty()
        && !target.is_empty()
        && random
            .iter()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'));
    well_formed.then_some(target)
}

/// Whether `path` is named as LiteHit's temp files are (`.NAME.<pid>.<random>.tmp`): such a
/// file may be a publication in progress, or a killed run's that the next writer of `NAME`
/// removes, so the commands refuse it as an input.
#[must_use]
pub fn is_temp_path(path: &Path) -> bool {
    path.file_name().and_then(temp_name_target).is_some()
}

/// Creates a fresh temp file for `final_path` exclusively: never an existing file, symlink
/// or FIFO; permissions `0666` less the umask, as `File::create`.
pub(super) fn create_temp_file(final_path: &Path) -> Result<(PathBuf, File)> {
    let mut temp_path = new_temp_path(final_path);
    for _ in 1..MAX_TEMP_ATTEMPTS {
        match fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temp_path)
        {
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                temp_path = new_temp_path(final_path);
            }
            opened => {
                return opened
                    .map(|file| (temp_path.clone(), file))
                    .map_err(|source| FactsError::Create {
                        path: temp_path,
                        source,
                    });
            }
        }
    }
    Err(FactsError::Create {
        path: temp_path,
        source: std::io::Error::other("every temp name tried was taken"),
    })
}

/// Removes the temp files of killed runs that published `final_path` (regular files named
/// as [`new_temp_path`] names them); only for the holder of its lock, so none is in use.
pub(super) fn remove_stale_temp_files(final_path: &Path) {
    let Some(name) = final_path.file_name() else {
        return;
    };
    let Ok(entries) = fs::read_dir(directory_of(final_path)) else {
        return;
    };
    for entry in entries.flatten() {
        let stale = temp_name_target(&entry.file_name()) == Some(name.as_encoded_bytes())
            && entry.file_type().is_ok_and(|kind| kind.is_file());
        if stale {
            // Best effort: a sticky directory may refuse to delete another user's file.
            let _ = fs::remove_file(entry.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn temp_names_are_hidden_unique_and_recognised() {
        let final_path = Path::new("out/litehit_facts.csv");
        let first = new_temp_path(final_path);
        let second = new_temp_path(final_path);
        assert_ne!(first, second, "each temp name is drawn afresh");
        for temp in [&first, &second] {
            assert_eq!(temp.parent(), Some(Path::new("out")));
            assert!(is_temp_path(temp), "{}", temp.display());
            assert_eq!(
                temp_name_target(temp.file_name().unwrap()),
                Some(&b"litehit_facts.csv"[..])
            );
        }
    }

    #[test]
    fn only_the_temp_pattern_is_a_temp_name() {
        for (name, target) in [
            (".a.csv.1.0123456789abcdef.tmp", Some(&b"a.csv"[..])),
            (".x.42.ffffffffffffffff.tmp", Some(&b"x"[..])),
            ("litehit_facts.csv.tmp", None),
            (".a.csv.tmp", None),
            (".a.csv.1.0123456789ABCDEF.tmp", None),
            (".a.csv.1.0123456789abcde.tmp", None),
            (".a.csv.x1.0123456789abcdef.tmp", None),
            ("..1.0123456789abcdef.tmp", None),
            (".a.csv..0123456789abcdef.tmp", None),
            ("a.csv.1.0123456789abcdef.tmp", None),
            (".a.csv.lock", None),
        ] {
            assert_eq!(temp_name_target(OsStr::new(name)), target, "{name}");
        }
    }
}
