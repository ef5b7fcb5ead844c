//! `query --window` over facts records held in memory (a binding's Arrow facts): the first
//! pass the command makes over its files (the trace's first request, the pool lane
//! recognised by its rows), then the rows into [`QueryWindows`], so both give the same sums.

use std::path::PathBuf;

use litehit_core::facts::FactRecord;

use crate::pool_detect::LaneFingerprints;
use crate::query::{PoolRule, QueryError, QuerySlots, QueryWindows, TierPlan};
use crate::records_query::LaneBlockBytes;
use crate::span::{TimeRange, widen_span};

/// The windows of records, with what their long form needs besides.
#[derive(Debug, Clone)]
pub struct RecordsWindows {
    /// The sums per window; the shared pool lane's rows are left out, as in the overall
    /// summary (its own lines at N × C are not summed here).
    pub windows: QueryWindows,
    /// The first request's `timestamp_ns`: the windows' origin, and time 0 of their seconds.
    pub first_ns: i64,
    /// The block size of every row (`None`: no row).
    pub all_block_bytes: Option<LaneBlockBytes>,
}

/// The records `each_record` hands over (it is called twice, handing every record in the
/// same order each time) in windows of `width_ns` of trace time from the first request, at
/// `slots` or, with `tiers`, split among the tiers: `litehit query --window` without a span.
pub fn records_windows<E: From<QueryError>>(
    slots: QuerySlots,
    tiers: Option<TierPlan>,
    width_ns: i64,
    mut each_record: impl FnMut(&mut dyn FnMut(&FactRecord)) -> Result<(), E>,
) -> Result<RecordsWindows, E> {
    let mut span = None;
    let mut lanes = LaneFingerprints::new();
    let mut all_block_bytes: Option<LaneBlockBytes> = None;
    each_record(&mut |record| {
        span = widen_span(span, record.timestamp_ns);
        lanes.observe(record);
        all_block_bytes = Some(
            all_block_bytes.map_or(LaneBlockBytes::One(record.block_bytes), |all| {
                all.with(record.block_bytes)
            }),
        );
    })?;
    lanes
        .check_no_repeated_rows(&[PathBuf::from("facts")])
        .map_err(QueryError::from)?;
    let pool = lanes
        .recognise_pool(None)
        .map_err(QueryError::from)?
        .map(str::to_owned);
    let first_ns = span.map_or(0, |(first, _)| first);
    let mut windows = QueryWindows::with_tiers_and_pool(
        slots,
        tiers,
        Some(PoolRule::Recognised(pool)),
        TimeRange::default(),
        first_ns,
        width_ns,
    );
    each_record(&mut |record| windows.add_record(record))?;
    Ok(RecordsWindows {
        windows,
        first_ns,
        all_block_bytes,
    })
}
