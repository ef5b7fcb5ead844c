//! LiteHit's analysis of facts files: what `litehit query` and `litehit mrc` compute, as a
//! library, so that any front end (the `litehit` binary, a Python binding, a service) gets
//! the same numbers.
//!
//! Facts are capacity-free (`litehit_core::facts`); this crate puts capacities to them, only
//! through the core's projector: the query's totals per slot, instance and tier
//! ([`QueryRun`], [`QueryTotals`]), windows of trace time ([`QueryWindows`]), the shared pool
//! lane recognised by its rows ([`LaneFingerprints`]) and compared at N × C ([`PoolSummary`]),
//! and the miss-ratio curves with their knees and saturation ([`MrcCurves`], [`MrcReport`],
//! [`tier_report`]), and the best split of one cache among tenant lanes ([`plan_quotas`]).
//! Several facts files are read as one ([`FactsFiles`]).
//! A replay's rows compared with the serving engine (its pool's slot, its observed hits, the
//! effective capacity): [`EngineComparison`].
//!
//! It depends on `litehit-core` only, and never prints, parses a command line or touches a
//! terminal: its results are plain structs (the `mrc` report derives `Serialize`), which the
//! binary's `output/` encodes as JSONL, CSV, tables and plots.
//!
//! A query of two facts rows at unlimited capacity and at 2 blocks (the summary `litehit query
//! FACTS - -1 --capacity-blocks 2` prints):
//!
//! ```
//! use litehit_core::facts::{FactRecord, RequestFact};
//! use litehit_report::{QuerySlots, QueryTotals};
//!
//! let row = |trace_id: &str, pairs: &[[u64; 2]]| FactRecord {
//!     trace_id: trace_id.into(),
//!     instance_id: "engine-0".into(),
//!     timestamp_ns: 1,
//!     input_token_len: 16,
//!     block_size_tokens: 4,
//!     block_bytes: 1024,
//!     fact: RequestFact::from_pairs(pairs),
//! };
//! let slots = QuerySlots { capacity_gb: vec![-1.0], capacity_blocks: vec![2] };
//! let mut totals = QueryTotals::new(slots);
//! for record in [row("r1", &[]), row("r2", &[[1, 2], [4, 1]])] {
//!     totals.add_record(&record); // its hit blocks per slot: [0, 0], then [3, 2]
//! }
//! let summary = totals.into_summary();
//! assert_eq!(summary.overall.total_hit_tokens, [12, 8]); // 3 and 2 blocks of 4 tokens
//! assert_eq!(summary.overall.hit_rates(), [0.375, 0.25]); // of 32 input tokens
//! ```
#![warn(missing_docs)]

mod facts_files;
mod lane_index;
mod long_form;
mod mrc;
mod observed;
mod policy_pair;
mod pool_detect;
mod query;
mod quota;
mod records_query;
mod records_windows;
mod span;

pub use facts_files::{FactsFiles, FactsGlobError, expand_facts_globs};
pub use lane_index::LaneTableFull;
pub use long_form::{
    MrcRowKind, MrcTableRow, OptCells, QueryTableRow, WindowTableRow, mrc_table_rows,
    query_table_rows, window_table_rows,
};
pub use mrc::{
    Curve, CurvePoint, GeometryMismatch, InstanceCurve, InstanceReport, KNEE_PERCENTS, Knee,
    KvSizeWarning, MrcBuilder, MrcCurves, MrcError, MrcReport, PolicyGapPoint, PolicyReport,
    PoolComparison, PoolKnee, PoolPoint, PoolReport, PoolTierRow, SampledHits, TierReport, TierRow,
    TotalKnee, TotalPoint, TotalReport, tier_report,
};
pub use observed::{
    ComparisonRow, ComparisonSums, EngineComparison, InstanceComparison, RequestGap,
};
pub use policy_pair::{
    OptRows, PolicyPairError, RowCountMismatch, RowMismatch, check_same_trace, opt_siblings,
};
pub use pool_detect::{
    LaneFingerprint, LaneFingerprints, LaneInFile, PoolCheckError, RepeatedRows, RowSums,
    several_files_note,
};
pub use query::{
    MissSplit, OptTotals, PoolLaneCapacities, PoolRule, PoolSummary, QueryError, QueryPlan,
    QueryRun, QuerySlots, QuerySummary, QueryTotals, QueryWindows, SlotTotals, SpanAndInstances,
    TierPlan, WindowTotals, pool_instance_count, query_windows, query_windows_with_pool,
    tier_miss_share, trace_span_and_instances,
};
pub use quota::{
    DEFAULT_GRID_STEPS, GridHits, MAX_GRID_STEPS, QuotaError, QuotaPlan, QuotaRequest, Split,
    TenantCurve, TenantQuota, best_split, plan_quota_split, plan_quotas,
};
pub use records_query::{LaneBlockBytes, RecordsQuery, RecordsSummary};
pub use records_windows::{RecordsWindows, records_windows};
pub use span::{
    EmptySpan, InvertedSpan, SpanReport, TimeRange, TimeSpec, check_span_order, trace_span,
    widen_span,
};

/// `numerator / denominator`, or 0 for an empty denominator: the rates of `query`, `mrc` and
/// the replay summary print 0 there, as upstream (`litehit_core::display::ratio` says `None`).
#[must_use]
pub fn ratio(numerator: u64, denominator: u64) -> f64 {
    litehit_core::display::ratio(numerator, denominator).unwrap_or(0.0)
}
