//! The HTTP servers' budgets: open connections, idle time and the memory bodies hold, and the
//! counters of what each refused.
//!
//! Owns the connection cap (sized from `RLIMIT_NOFILE`, leaving the monitor's own files room,
//! so that held connections never starve the file follower or the facts writer), the global
//! body-memory budget (a posted body takes a lease of what it declared, or of what arrived,
//! before its bytes are held; a lease refused is a 503, never a stop), and [`HttpCounters`],
//! the one place the refusals are counted. The ingest thread copies the counters into the
//! snapshot ([`crate::snapshot::HttpRefusals`]); headless and `/metrics` only format them.
//!
//! What it must never do: read a request or a body (that is [`super`]'s).
//!
//! Without the `http` feature only [`HttpCounters`] is used (the snapshot's type); the
//! server's leases and connection guards are then unused.
#![cfg_attr(not(feature = "http"), allow(dead_code))]

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Duration;

use crate::snapshot::HttpRefusals;

/// Default of `--http-idle-timeout`: a connection that has not sent a whole request head in
/// this long (idle between requests, or half-sent), or pauses this long within a body, is
/// closed.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(30);
/// File descriptors kept for the monitor itself (the followed files, the spill, the facts
/// writer, the file watcher, the runtimes' own), out of `RLIMIT_NOFILE`, when the connection
/// cap is sized from it.
pub const RESERVED_FDS: u64 = 128;
/// The largest default connection cap, however high `RLIMIT_NOFILE` is.
pub const MAX_DEFAULT_CONNECTIONS: u64 = 4096;
/// The reply to a connection over the cap, written once without reading the request.
pub(super) const OVER_CAP_REPLY: &[u8] = b"HTTP/1.1 503 Service Unavailable\r\n\
content-type: application/json\r\nretry-after: 1\r\nconnection: close\r\ncontent-length: 84\r\n\r\n\
{\"error\":\"too many open connections (--max-connections); retry with one kept open\"}\n";

/// The soft `RLIMIT_NOFILE` (`ulimit -n`), `None` when unlimited.
pub fn open_files_limit() -> Option<u64> {
    rustix::process::getrlimit(rustix::process::Resource::Nofile).current
}

/// Default of `--max-connections`: the soft `RLIMIT_NOFILE` less [`RESERVED_FDS`], at most
/// [`MAX_DEFAULT_CONNECTIONS`] (a quarter of a limit too small to keep the reserve).
pub fn default_max_connections(open_files_limit: Option<u64>) -> usize {
    let connections = match open_files_limit {
        None => MAX_DEFAULT_CONNECTIONS,
        Some(limit) if limit > 2 * RESERVED_FDS => {
            (limit - RESERVED_FDS).min(MAX_DEFAULT_CONNECTIONS)
        }
        Some(limit) => (limit / 4).max(1),
    };
    usize::try_from(connections).unwrap_or(usize::MAX)
}

/// What one server refuses before routing: connections over the cap, and idle ones.
#[derive(Debug, Clone)]
pub struct ConnectionLimits {
    /// Close a connection idle (or half-sent) this long (`--http-idle-timeout`).
    pub idle_timeout: Duration,
    /// Connections open at once, across every server sharing `counters`
    /// (`--max-connections`); more get a 503 and are closed.
    pub max_connections: usize,
    /// Names accepted in `Host` (and `Origin`) on a loopback bind besides the loopback ones
    /// (`--allowed-host`).
    pub allowed_hosts: Vec<String>,
    /// Where refusals are counted (shared by both servers and read by the ingest thread).
    pub counters: Arc<HttpCounters>,
}

impl Default for ConnectionLimits {
    fn default() -> Self {
        Self {
            idle_timeout: DEFAULT_IDLE_TIMEOUT,
            max_connections: default_max_connections(open_files_limit()),
            allowed_hosts: Vec::new(),
            counters: Arc::default(),
        }
    }
}

/// Why a request or connection was refused, one counter each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refused {
    /// Over `--max-connections` (503).
    ConnectionCap,
    /// A foreign `Host` or `Origin` (403).
    HostOrOrigin,
    /// No bearer token, or the wrong one (401).
    Token,
    /// A `Content-Type` that is not a JSON-lines one (415).
    ContentType,
    /// Idle or half-sent past `--http-idle-timeout` (closed, or 408 within a body).
    Timeout,
    /// Over `--max-body` (413).
    BodySize,
    /// Over `--max-body-total`, or memory could not hold the body (503).
    BodyMemory,
}

/// The refusals of every server of a run, counted as they happen.
#[derive(Debug, Default)]
pub struct HttpCounters {
    open_connections: AtomicUsize,
    connection_cap: AtomicU64,
    host_or_origin: AtomicU64,
    token: AtomicU64,
    content_type: AtomicU64,
    timeout: AtomicU64,
    body_size: AtomicU64,
    body_memory: AtomicU64,
    /// Bytes of bodies held now (leases), against `--max-body-total`.
    body_bytes_held: AtomicU64,
}

impl HttpCounters {
    pub fn count(&self, refused: Refused) {
        let counter = match refused {
            Refused::ConnectionCap => &self.connection_cap,
            Refused::HostOrOrigin => &self.host_or_origin,
            Refused::Token => &self.token,
            Refused::ContentType => &self.content_type,
            Refused::Timeout => &self.timeout,
            Refused::BodySize => &self.body_size,
            Refused::BodyMemory => &self.body_memory,
        };
        counter.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts so far, as the snapshot shows them.
    pub fn load(&self) -> HttpRefusals {
        let load = |counter: &AtomicU64| counter.load(Ordering::Relaxed);
        HttpRefusals {
            open_connections: self.open_connections.load(Ordering::Relaxed) as u64,
            connection_cap: load(&self.connection_cap),
            host_or_origin: load(&self.host_or_origin),
            token: load(&self.token),
            content_type: load(&self.content_type),
            timeout: load(&self.timeout),
            body_size: load(&self.body_size),
            body_memory: load(&self.body_memory),
            body_bytes_held: load(&self.body_bytes_held),
        }
    }

    /// Opens a connection if fewer than `max` are open; it closes when the guard drops.
    pub(super) fn open_connection(self: &Arc<Self>, max: usize) -> Option<OpenConnection> {
        self.open_connections
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |open| {
                (open < max).then_some(open + 1)
            })
            .ok()?;
        Some(OpenConnection(Arc::clone(self)))
    }

    /// Takes `bytes` more of the body-memory budget `total_bytes` for `lease`, or refuses.
    pub(super) fn grow_lease(&self, lease: &mut BodyLease, bytes: u64, total_bytes: u64) -> bool {
        let taken = self
            .body_bytes_held
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |held| {
                held.checked_add(bytes)
                    .filter(|&after| after <= total_bytes)
            })
            .is_ok();
        if taken {
            lease.bytes += bytes;
        }
        taken
    }
}

/// An open connection, counted until dropped.
#[derive(Debug)]
pub(super) struct OpenConnection(Arc<HttpCounters>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.open_connections.fetch_sub(1, Ordering::AcqRel);
    }
}

/// The body memory one request holds, given back when dropped.
#[derive(Debug)]
pub(super) struct BodyLease {
    counters: Arc<HttpCounters>,
    bytes: u64,
}

impl BodyLease {
    pub(super) fn new(counters: &Arc<HttpCounters>) -> Self {
        Self {
            counters: Arc::clone(counters),
            bytes: 0,
        }
    }

    pub(super) fn bytes(&self) -> u64 {
        self.bytes
    }
}

impl Drop for BodyLease {
    fn drop(&mut self) {
        self.counters
            .body_bytes_held
            .fetch_sub(self.bytes, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_default_cap_leaves_the_reserve_of_the_open_files_limit() {
        assert_eq!(default_max_connections(Some(1024)), 896);
        assert_eq!(default_max_connections(Some(1 << 20)), 4096);
        assert_eq!(default_max_connections(None), 4096);
        assert_eq!(default_max_connections(Some(200)), 50);
        assert_eq!(default_max_connections(Some(2)), 1);
    }

    #[test]
    fn connections_over_the_cap_are_refused_until_one_closes() {
        let counters = Arc::new(HttpCounters::default());
        let first = counters.open_connection(2).unwrap();
        let _second = counters.open_connection(2).unwrap();
        assert!(counters.open_connection(2).is_none());
        assert_eq!(counters.load().open_connections, 2);
        drop(first);
        assert!(counters.open_connection(2).is_some());
    }

    #[test]
    fn body_leases_share_one_budget_and_give_it_back() {
        let counters = Arc::new(HttpCounters::default());
        let mut first = BodyLease::new(&counters);
        assert!(counters.grow_lease(&mut first, 60, 100));
        let mut second = BodyLease::new(&counters);
        assert!(!counters.grow_lease(&mut second, 60, 100));
        assert!(counters.grow_lease(&mut second, 40, 100));
        assert!(!counters.grow_lease(&mut second, u64::MAX, 100));
        assert_eq!(counters.load().body_bytes_held, 100);
        drop(first);
        drop(second);
        assert_eq!(counters.load().body_bytes_held, 0);
    }

    #[test]
    fn the_over_cap_reply_says_its_length() {
        let text = std::str::from_utf8(OVER_CAP_REPLY).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(
            head.contains(&format!("content-length: {}", body.len())),
            "{text}"
        );
        serde_json::from_str::<serde_json::Value>(body).unwrap();
    }
}
