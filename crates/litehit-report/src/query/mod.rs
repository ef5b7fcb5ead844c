//! `litehit query` as a library: upstream's facts query (per-row hits and rates at every
//! slot, a summary per instance and overall), and what LiteHit adds — block slots, cache
//! tiers, an accounted span, windows of trace time, and the shared pool lane at N × C.
//!
//! Slots keep the caller's order: the GB slots first (duplicates and zeros allowed, negative =
//! unlimited), then the block slots. Hits come from the projector only. A front end writes the
//! rows [`QueryRun::read_rows`] hands over and the [`QuerySummary`] it ends with (the binary's
//! JSONL is byte-compatible with upstream's).

mod first_pass;
mod plan;
mod pool;
mod run;
mod totals;
mod windows;

use std::io;

use litehit_core::facts::file::FactsError;

use crate::pool_detect::{PoolCheckError, RepeatedRows};

pub use first_pass::{SpanAndInstances, pool_instance_count, trace_span_and_instances};
pub use plan::{PoolRule, QueryPlan, QuerySlots, TierPlan};
pub use pool::PoolSummary;
pub use run::QueryRun;
pub use totals::{MissSplit, OptTotals, QuerySummary, QueryTotals, SlotTotals, tier_miss_share};
pub use windows::{
    PoolLaneCapacities, QueryWindows, WindowTotals, query_windows, query_windows_with_pool,
};

/// The query failed: a facts file could not be read, or the output could not be written.
#[derive(Debug, thiserror::Error)]
pub enum QueryError {
    /// A facts file could not be read, or a row is malformed (file and line named).
    #[error(transparent)]
    Facts(#[from] FactsError),
    /// The caller's output failed (what [`QueryRun::read_rows`]'s row handler returned).
    #[error("write to output log failed")]
    Write(#[source] io::Error),
    /// The output thread could not start (out of memory or threads).
    #[error("starting the output thread")]
    Spawn(#[source] io::Error),
    /// `--pool NAME` named no pool lane.
    #[error(transparent)]
    Pool(#[from] PoolCheckError),
    /// One facts file was given twice.
    #[error(transparent)]
    RepeatedRows(#[from] RepeatedRows),
    /// The pool lane, recognised only at the end, cannot be read a second time.
    #[error(
        "{path}: lane {name} is the shared pool lane (its rows are every other lane's), and its \
         N × C comparison reads its rows a second time, which {path} cannot be: pass the facts \
         as a file, or name the lane with --pool {name} (then it is read once)"
    )]
    PoolNotRereadable {
        /// The pool lane's `instance_id`.
        name: String,
        /// The file that cannot be read again (`-`, a pipe).
        path: String,
    },
    /// The pool lane's rows have several block sizes.
    #[error(
        "pool {name}: its rows have several block geometries ({first} and {other} bytes per \
         block); one shared pool holds blocks of one size"
    )]
    PoolGeometry {
        /// The pool lane's `instance_id`.
        name: String,
        /// The `block_bytes` of its first row.
        first: u64,
        /// Another `block_bytes` among its rows.
        other: u64,
    },
    /// The OPT facts (`--opt`) are not of the same trace.
    #[error(transparent)]
    PolicyPair(#[from] crate::policy_pair::PolicyPairError),
    /// An accounted span (`--from`, `--to`, `--exclude-warmup`) holds no row.
    #[error(transparent)]
    EmptySpan(#[from] crate::span::EmptySpan),
}
