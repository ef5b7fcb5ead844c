//! The miss-ratio-curve report of `litehit mrc`: the exact cumulative token hit rate at every
//! capacity, the knees and the saturation point, per instance and in total.
//!
//! One [`CapacityAxisAccumulator`] per instance answers hits at any capacity exactly, so the
//! whole curve comes from one pass over the facts (no sweep of projections).
//!
//! * **Per instance** everything is in blocks first: rows of one instance must share
//!   `block_size_tokens` and `block_bytes` (fanout gives each geometry its own instance id), and
//!   a capacity of `b` blocks is `b × block_bytes` bytes. The hit rate is hit blocks ×
//!   `block_size_tokens` / input tokens.
//! * **Total** means every instance with its own cache of the same size in bytes, exactly as
//!   the overall summary line of `litehit query`: at `B` bytes the total hit tokens are
//!   `Σᵢ hitsᵢ(floor(B / block_bytesᵢ)) × block_size_tokensᵢ`. Its knees are **equal-share
//!   knees** (the smallest equal per-instance size `B` whose total reaches the target; not
//!   the live monitor's "Σ of instance knees", each instance's own knee summed), in JSON
//!   `total.knees` (per-instance capacities). They are found by a binary
//!   search over bytes (the total is a non-decreasing step function of `B`); they are also
//!   given in blocks when every instance has the same `block_bytes`.
//! * **Knee p%**: the smallest capacity whose cumulative hit rate reaches p% of the
//!   unlimited-capacity hit rate (target hits rounded up to a whole block or token).
//!   **Saturation**: the smallest capacity that reaches the unlimited-capacity hit rate.

mod curves;
mod policy;
mod report;
mod tiers;

use std::path::PathBuf;

use litehit_core::facts::file::FactsError;

use crate::pool_detect::{PoolCheckError, RepeatedRows};

pub use curves::{
    Curve, CurvePoint, GeometryMismatch, InstanceCurve, MrcBuilder, MrcCurves, TotalPoint,
};
pub use policy::{PolicyGapPoint, PolicyReport};
pub use report::{
    InstanceReport, Knee, KvSizeWarning, MrcReport, PoolComparison, PoolKnee, PoolPoint,
    PoolReport, SampledHits, TotalKnee, TotalReport,
};
pub use tiers::{PoolTierRow, TierReport, TierRow, tier_report};

/// Knee levels reported, in percent of the unlimited-capacity hit rate.
pub const KNEE_PERCENTS: [u32; 4] = [50, 90, 95, 99];

/// Building the curves failed.
#[derive(Debug, thiserror::Error)]
pub enum MrcError {
    #[error(transparent)]
    /// A facts file could not be read, or a row is malformed.
    Facts(#[from] FactsError),
    #[error(transparent)]
    /// `--pool NAME` named no pool lane.
    Pool(#[from] PoolCheckError),
    #[error(transparent)]
    /// One facts file was given twice.
    RepeatedRows(#[from] RepeatedRows),
    #[error(
        "{}: facts line {line}: instance {instance_id:?} mixes block geometry: expected \
         block_size_tokens {expected_block_size_tokens} and block_bytes {expected_block_bytes} \
         (as in its first row), found {found_block_size_tokens} and {found_block_bytes}",
        path.display()
    )]
    /// Rows of one instance with two block geometries.
    MixedBlockGeometry {
        /// The facts file.
        path: PathBuf,
        /// The row's line (1-based).
        line: u64,
        /// The instance.
        instance_id: String,
        /// `block_size_tokens` of its first row.
        expected_block_size_tokens: u64,
        /// `block_bytes` of its first row.
        expected_block_bytes: u64,
        /// `block_size_tokens` of this row.
        found_block_size_tokens: u64,
        /// `block_bytes` of this row.
        found_block_bytes: u64,
    },
}
