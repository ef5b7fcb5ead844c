//! A query over facts records held in memory (a binding's Arrow facts), with the checks and
//! the pool recognition [`crate::QueryRun`] does over files, so both give the same summary.
//! It also keeps each lane's block size in bytes, which the long-form tables
//! ([`crate::query_table_rows`]) need to state a capacity in both bytes and blocks.

use std::collections::HashMap;
use std::path::PathBuf;

use litehit_core::facts::FactRecord;

use crate::policy_pair::{PolicyPairError, RowCountMismatch, RowMismatch, first_difference};
use crate::query::{QueryError, QueryPlan, QuerySlots, QuerySummary, QueryTotals};
use crate::span::{EmptySpan, TimeRange, widen_span};

/// The name the records go by in errors (they are one "file").
const RECORDS_NAME: &str = "facts";
/// The name the OPT records (`opt=`) go by in errors.
const OPT_RECORDS_NAME: &str = "opt";

/// A lane's `block_bytes`: one value, or several (then no capacity converts for it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaneBlockBytes {
    /// Every row of the lane has this many bytes per block.
    One(u64),
    /// The rows have different block sizes.
    Several,
}

impl LaneBlockBytes {
    /// The one block size, if there is one.
    #[must_use]
    pub fn one(self) -> Option<u64> {
        match self {
            Self::One(bytes) => Some(bytes),
            Self::Several => None,
        }
    }

    pub(crate) fn with(self, block_bytes: u64) -> Self {
        match self {
            Self::One(bytes) if bytes == block_bytes => self,
            _ => Self::Several,
        }
    }
}

/// The summary of a records query, with the block size of each lane and of all rows.
#[derive(Debug, Clone)]
pub struct RecordsSummary {
    /// What `litehit query` sums up over the same rows.
    pub summary: QuerySummary,
    /// Each lane's block size, by `instance_id`.
    pub lane_block_bytes: HashMap<String, LaneBlockBytes>,
    /// The block size of every accounted row (`None`: no row).
    pub all_block_bytes: Option<LaneBlockBytes>,
}

/// A query fed record by record ([`Self::add`]), then [`Self::finish`]ed.
#[derive(Debug)]
pub struct RecordsQuery {
    totals: QueryTotals,
    range: TimeRange,
    span: Option<(i64, i64)>,
    accounted: bool,
    lane_block_bytes: HashMap<String, LaneBlockBytes>,
    all_block_bytes: Option<LaneBlockBytes>,
}

impl RecordsQuery {
    /// A query at `slots` as `plan` says (the pool rule: [`crate::PoolRule::from_flag`]
    /// as `litehit query` uses it by default).
    #[must_use]
    pub fn new(slots: QuerySlots, plan: &QueryPlan) -> Self {
        Self {
            totals: QueryTotals::with_tiers(slots, plan.tiers.clone()).with_pool(plan.pool.clone()),
            range: plan.time_range,
            span: None,
            accounted: false,
            lane_block_bytes: HashMap::new(),
            all_block_bytes: None,
        }
    }

    /// Also sums OPT's hits (`query --opt`): every record then goes through
    /// [`Self::add_pair`] with the OPT record of the same request.
    #[must_use]
    pub fn with_opt(mut self) -> Self {
        self.totals = self.totals.with_opt();
        self
    }

    /// Refuses OPT records that are not as many as the LRU records (`lru_rows`, `opt_rows`):
    /// [`crate::OptRows`]' check, for records in memory.
    pub fn check_opt_rows(lru_rows: u64, opt_rows: u64) -> Result<(), PolicyPairError> {
        if lru_rows == opt_rows {
            return Ok(());
        }
        Err(PolicyPairError::RowCount(Box::new(RowCountMismatch {
            lru: PathBuf::from(RECORDS_NAME),
            opt: PathBuf::from(OPT_RECORDS_NAME),
            lru_rows,
            opt_rows,
            lru_rows_more: false,
        })))
    }

    /// [`Self::add`] with `opt`, the OPT record of the same request (row `row`, from 1, of
    /// both), to OPT's sums; refused as [`crate::OptRows`] refuses a row of another request.
    pub fn add_pair(
        &mut self,
        record: &FactRecord,
        opt: &FactRecord,
        row: u64,
    ) -> Result<(), PolicyPairError> {
        if let Some((field, lru_value, opt_value)) = first_difference(record, opt) {
            return Err(PolicyPairError::Mismatch(Box::new(RowMismatch {
                lru: PathBuf::from(RECORDS_NAME),
                lru_line: row,
                opt: PathBuf::from(OPT_RECORDS_NAME),
                opt_line: row,
                field,
                lru_value,
                opt_value,
            })));
        }
        self.add_with(record, Some(opt));
        Ok(())
    }

    /// Adds one record (in input order); an accounted one is projected at every slot.
    pub fn add(&mut self, record: &FactRecord) {
        self.add_with(record, None);
    }

    fn add_with(&mut self, record: &FactRecord, opt: Option<&FactRecord>) {
        self.totals.observe_in_file(record, 0);
        self.span = widen_span(self.span, record.timestamp_ns);
        if !self.range.contains(record.timestamp_ns) {
            return;
        }
        self.accounted = true;
        let block_bytes = record.block_bytes;
        self.all_block_bytes = Some(
            self.all_block_bytes
                .map_or(LaneBlockBytes::One(block_bytes), |all| {
                    all.with(block_bytes)
                }),
        );
        match self.lane_block_bytes.get_mut(record.instance_id.as_str()) {
            Some(lane) => *lane = lane.with(block_bytes),
            None => {
                self.lane_block_bytes
                    .insert(record.instance_id.clone(), LaneBlockBytes::One(block_bytes));
            }
        }
        self.totals.add_record_pair(record, opt);
    }

    /// The summary. `read_again` hands every record over once more, in order: it is called
    /// only when the pool lane, recognised at the end, is not the lane accumulated as it
    /// (its rows are then summed a second time, as [`crate::QueryRun`] rereads its file).
    pub fn finish<E: From<QueryError>>(
        mut self,
        read_again: impl FnOnce(&mut dyn FnMut(&FactRecord)) -> Result<(), E>,
    ) -> Result<RecordsSummary, E> {
        let paths = [PathBuf::from(RECORDS_NAME)];
        self.totals
            .check_no_repeated_rows(&paths)
            .map_err(QueryError::from)?;
        if !self.range.is_everything() && !self.accounted {
            return Err(QueryError::from(EmptySpan {
                range: self.range,
                trace: self.span,
            })
            .into());
        }
        let pool = self.totals.resolve_pool()?;
        if let Some(name) = &pool
            && !self.totals.is_pool(name)
        {
            self.totals.restart_pool(name);
            let (totals, range) = (&mut self.totals, self.range);
            read_again(&mut |record| {
                if record.instance_id == *name && range.contains(record.timestamp_ns) {
                    totals.add_pool_row(record, None);
                }
            })?;
        }
        Ok(RecordsSummary {
            summary: self.totals.try_into_summary(pool.as_deref())?,
            lane_block_bytes: self.lane_block_bytes,
            all_block_bytes: self.all_block_bytes,
        })
    }
}

#[cfg(test)]
mod tests {
    use litehit_core::facts::RequestFact;
    use litehit_core::facts::file::{FactsFileFormat, FactsFileWriter};

    use super::*;
    use crate::{PoolRule, QueryRun, query_table_rows};

    fn record(
        trace_id: &str,
        instance_id: &str,
        block_bytes: u64,
        pairs: &[[u64; 2]],
    ) -> FactRecord {
        FactRecord {
            trace_id: trace_id.into(),
            instance_id: instance_id.into(),
            timestamp_ns: 1,
            input_token_len: 40,
            block_size_tokens: 4,
            block_bytes,
            fact: RequestFact::from_pairs(pairs),
        }
    }

    #[test]
    fn records_sum_up_as_the_query_of_their_file() {
        let records = [
            record("r1", "b", 1024, &[[1, 2]]),
            record("r2", "a", 1024, &[]),
            record("r3", "b", 1024, &[[1, 1], [3, 4]]),
            record("r4", "a", 2048, &[[2, 3]]),
        ];
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("litehit_facts.csv");
        let mut writer = FactsFileWriter::create_file(&path, FactsFileFormat::Csv).unwrap();
        for record in &records {
            writer.push(&record.as_row());
        }
        writer.commit().unwrap();
        let slots = QuerySlots {
            capacity_gb: vec![-1.0, 0.000_003],
            capacity_blocks: vec![2],
        };
        let plan = QueryPlan {
            pool: Some(PoolRule::from_flag(None)),
            ..QueryPlan::default()
        };
        let mut run = QueryRun::open(&[path], slots.clone(), &plan).unwrap();
        run.read_rows(|_, _| Ok(())).unwrap();
        let from_file = run.finish().unwrap();
        let mut query = RecordsQuery::new(slots.clone(), &plan);
        for record in &records {
            query.add(record);
        }
        let summary = query.finish(|_| Ok::<_, QueryError>(())).unwrap();
        assert_eq!(summary.summary, from_file);
        assert_eq!(summary.lane_block_bytes["b"], LaneBlockBytes::One(1024));
        assert_eq!(summary.lane_block_bytes["a"], LaneBlockBytes::Several);
        let rows = query_table_rows(&summary, &slots, None);
        // Instances a, b and the total, three slots each; 3 µGB = 3221 bytes → 3 blocks of 1024.
        assert_eq!(rows.len(), 9);
        let b = &rows[3..6];
        assert_eq!(b[0].instance_id.as_deref(), Some("b"));
        assert_eq!((b[0].capacity_bytes, b[0].capacity_blocks), (None, None));
        assert_eq!(
            (b[1].capacity_bytes, b[1].capacity_blocks),
            (Some(3221), Some(3))
        );
        assert_eq!(
            (b[2].capacity_bytes, b[2].capacity_blocks),
            (Some(2048), Some(2))
        );
        // Naive: r1 hits 2 blocks at capacity ≥ 2 (1 at 1); r3 1 at ≥ 1, then up to 4 from 3.
        assert_eq!(
            b.iter().map(|row| row.total_hit_blocks).collect::<Vec<_>>(),
            [7, 4, 3]
        );
        // Lane a has two block sizes: a GB slot converts for neither.
        assert_eq!(
            (rows[1].capacity_bytes, rows[1].capacity_blocks),
            (Some(3221), None)
        );
        assert!(rows[6..].iter().all(|row| row.instance_id.is_none()));
    }
}
