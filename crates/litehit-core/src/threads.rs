//! How many threads LiteHit may use: the one place a worker count is sized from the
//! machine, so an embedder or a shared host can cap it.
//!
//! The order, first found wins: an explicit count (a `--workers` flag, a config file's
//! `pipeline_worker_count`, or what an embedding program passes), then the environment
//! variable `LITEHIT_THREADS`, then the number of cores (`available_parallelism`, 1 when it
//! is unknown). `LITEHIT_THREADS` must be an integer from 1 to [`MAX`]: anything else is an
//! error naming the variable, not a silent fallback — a cap that is ignored would let a
//! replay take every core of a machine its operator meant to share.
//!
//! ```
//! use std::num::NonZeroUsize;
//! use litehit_core::threads;
//!
//! // An embedder's own choice wins over the environment and the core count.
//! let two = NonZeroUsize::new(2);
//! assert_eq!(threads::resolve(two, Some("8".as_ref()), 16)?.get(), 2);
//! assert_eq!(threads::resolve(None, Some("1".as_ref()), 16)?.get(), 1);
//! assert!(threads::resolve(None, Some("0".as_ref()), 16).is_err());
//! # Ok::<(), threads::ThreadsError>(())
//! ```

use std::ffi::OsStr;
use std::num::NonZeroUsize;

/// The environment variable that replaces the core count as the default worker count.
pub const ENV_VAR: &str = "LITEHIT_THREADS";

/// Most workers a count may ask for: far more threads than cores only costs memory, and
/// tens of thousands fail to start.
pub const MAX: usize = 256;

/// A `LITEHIT_THREADS` value that is no integer from 1 to [`MAX`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{ENV_VAR}={value:?}: expected a whole number of threads from 1 to {MAX}")]
pub struct ThreadsError {
    /// The variable's value as set (lossily decoded when it is no UTF-8).
    pub value: String,
}

/// The worker count: `explicit` if given, else `LITEHIT_THREADS` from this process's
/// environment, else the number of cores.
///
/// # Errors
/// When `explicit` is `None` and `LITEHIT_THREADS` is set to anything but an integer from 1
/// to [`MAX`].
pub fn available(explicit: Option<NonZeroUsize>) -> Result<NonZeroUsize, ThreadsError> {
    if let Some(count) = explicit {
        return Ok(count);
    }
    let cores = std::thread::available_parallelism().map_or(1, NonZeroUsize::get);
    resolve(None, std::env::var_os(ENV_VAR).as_deref(), cores)
}

/// [`available`] with its inputs spelled out: `env_value` is what `LITEHIT_THREADS` holds
/// (`None` when unset), `cores` the machine's core count (0 is taken as 1).
///
/// # Errors
/// When `explicit` is `None` and `env_value` is set to anything but an integer from 1 to
/// [`MAX`] (surrounding blanks allowed).
pub fn resolve(
    explicit: Option<NonZeroUsize>,
    env_value: Option<&OsStr>,
    cores: usize,
) -> Result<NonZeroUsize, ThreadsError> {
    if let Some(count) = explicit {
        return Ok(count);
    }
    let Some(value) = env_value else {
        return Ok(NonZeroUsize::new(cores).unwrap_or(NonZeroUsize::MIN));
    };
    value
        .to_str()
        .and_then(|text| text.trim().parse::<NonZeroUsize>().ok())
        .filter(|count| count.get() <= MAX)
        .ok_or_else(|| ThreadsError {
            value: value.to_string_lossy().into_owned(),
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn count(n: usize) -> Option<NonZeroUsize> {
        NonZeroUsize::new(n)
    }

    #[test]
    fn litehit_threads_one_means_one_worker_on_any_machine() {
        for cores in [0, 1, 2, 64] {
            assert_eq!(
                resolve(None, Some("1".as_ref()), cores),
                Ok(NonZeroUsize::MIN)
            );
        }
        assert_eq!(
            resolve(None, Some(" 3\n".as_ref()), 64),
            Ok(count(3).unwrap())
        );
        assert_eq!(
            resolve(None, Some("256".as_ref()), 2),
            Ok(count(MAX).unwrap())
        );
    }

    #[test]
    fn unset_means_one_per_core_and_never_zero() {
        assert_eq!(resolve(None, None, 6), Ok(count(6).unwrap()));
        assert_eq!(resolve(None, None, 0), Ok(NonZeroUsize::MIN));
    }

    #[test]
    fn an_explicit_count_wins_even_over_a_bad_variable() {
        assert_eq!(
            resolve(count(5), Some("2".as_ref()), 64),
            Ok(count(5).unwrap())
        );
        assert_eq!(
            resolve(count(5), Some("zero".as_ref()), 64),
            Ok(count(5).unwrap())
        );
    }

    #[test]
    fn a_bad_value_is_an_error_naming_the_variable_and_the_value() {
        for bad in [
            "0",
            "-1",
            "",
            "two",
            "1.5",
            "257",
            "99999999999999999999999",
        ] {
            let error = resolve(None, Some(bad.as_ref()), 4).unwrap_err();
            let message = error.to_string();
            assert!(message.starts_with("LITEHIT_THREADS="), "{message}");
            assert!(message.contains(&format!("{bad:?}")), "{message}");
            assert!(message.contains("from 1 to 256"), "{message}");
        }
    }
}
