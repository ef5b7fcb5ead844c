//! Recognising the shared pool lane of facts by its rows, whatever its name.
//!
//! `replay --pool[=NAME]` (or a config's `pool_instance_id`, or one more task `replay
//! --instance NAME` beside `--shard` runs) writes every request once in its instance's lane
//! and once more in the pool lane, with the same `trace_id`, `timestamp_ns`,
//! `input_token_len` and `block_size_tokens`. So a lane is the pool exactly when its rows are
//! the rows of all the other lanes together. A name alone proves nothing: an ordinary
//! instance may be called `pool`, and a pool may be called anything.
//!
//! One pass keeps, per lane, a row count, the input tokens and a wrapping 128-bit sum of each
//! row's key hash (xxh3-128): an order-independent fingerprint of the lane's multiset of
//! keys in O(1) memory per lane, compared once at the end. Every row counts, accounted or not
//! (`--from`, `--to`, `--exclude-warmup` and `--window` restrict the accounting only).
//!
//! With exactly two lanes, each is the other's rows: the two are equal in every number, and
//! which one is "the pool" can only be told by name (replay's default name, or `--pool
//! NAME`); otherwise there is no pool. With one lane there is none.
//!
//! The same pass keeps those sums per lane and file: a lane in several files is legitimate
//! (a facts file split by rows) but also what two overlapping shardings look like (a note);
//! two files holding the same rows of a lane are one file given twice (a copy, or two runs
//! of the same replay) and would count every request twice: an error
//! ([`LaneFingerprints::check_no_repeated_rows`]).

use std::fmt::Write as _;

use litehit_core::engine::DEFAULT_POOL_NAME;
use litehit_core::facts::FactRecord;

use crate::lane_index::{LaneIndex, LaneTableFull};

/// What some rows add up to: equal for equal multisets of rows (and, but for a 128-bit hash
/// collision, only for those).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct RowSums {
    /// Every row (accounted or not).
    pub rows: u64,
    /// Σ `input_token_len` (wrapping).
    pub input_tokens: u64,
    /// Σ xxh3-128 of each row's key (wrapping).
    key_hash_sum: u128,
}

impl RowSums {
    fn add(self, other: Self) -> Self {
        Self {
            rows: self.rows + other.rows,
            input_tokens: self.input_tokens.wrapping_add(other.input_tokens),
            key_hash_sum: self.key_hash_sum.wrapping_add(other.key_hash_sum),
        }
    }

    fn sub(self, other: Self) -> Self {
        Self {
            rows: self.rows - other.rows,
            input_tokens: self.input_tokens.wrapping_sub(other.input_tokens),
            key_hash_sum: self.key_hash_sum.wrapping_sub(other.key_hash_sum),
        }
    }
}

/// One lane's rows in one file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaneInFile {
    /// Index of the file (in the order the files were given).
    pub file: usize,
    /// The lane's rows in that file.
    pub sums: RowSums,
}

/// What one lane's rows add up to, file by file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneFingerprint {
    /// The lane.
    pub instance_id: String,
    /// The files with rows of this lane, in the order read, each with the lane's rows in it.
    pub files: Vec<LaneInFile>,
}

impl LaneFingerprint {
    /// The lane's rows over every file.
    #[must_use]
    pub fn sums(&self) -> RowSums {
        self.files
            .iter()
            .fold(RowSums::default(), |sums, in_file| sums.add(in_file.sums))
    }

    /// Every row of the lane (accounted or not).
    #[must_use]
    pub fn rows(&self) -> u64 {
        self.sums().rows
    }

    /// Indexes of the files with rows of this lane, in the order read.
    #[must_use]
    pub fn file_indexes(&self) -> Vec<usize> {
        self.files.iter().map(|in_file| in_file.file).collect()
    }
}

/// The fingerprint of every lane seen, in order of first sight.
#[derive(Debug, Clone, Default)]
pub struct LaneFingerprints {
    lanes: Vec<LaneFingerprint>,
    index: LaneIndex,
    /// Index of the file being read.
    file: usize,
    /// The key bytes of the row being hashed (kept to save an allocation per row).
    key_bytes: Vec<u8>,
}

/// `--pool NAME` named no pool lane.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolCheckError {
    /// No rows of the named lane.
    #[error(
        "--pool {name}: no facts rows of instance {name} (the lanes are {lanes}; replay with \
         --pool to add the shared pool lane)"
    )]
    NoSuchLane {
        /// The name given.
        name: String,
        /// The lanes there are, for the message.
        lanes: String,
    },
    #[error(
        "--pool {name}: lane {name} is not a shared pool lane: a pool lane holds a copy of \
         every other lane's rows (same trace_id, timestamp_ns, input_token_len and \
         block_size_tokens), and {name} has {rows} rows{against}{found}"
    )]
    /// The named lane's rows are not every other lane's.
    NotAPool {
        /// The name given.
        name: String,
        /// Its rows.
        rows: u64,
        /// How the other lanes compare (`, the other 3 lanes 3000 together`; with a pool
        /// lane, the instances besides it: `, the other 2 instances 2000 together`).
        against: String,
        /// Which lane is the pool, if one is (` (the pool lane here is shared, holding all
        /// 3000)`).
        found: String,
    },
}

/// Two files hold the same rows of a lane: one facts file given twice (under two names, or
/// a copy), whose every request would be counted twice.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error(
    "the same rows of instance {instance_id} are in {first} and {second}: one facts file was \
     given twice ({rows} rows each; its requests would be counted twice)"
)]
pub struct RepeatedRows {
    /// The lane.
    pub instance_id: String,
    /// The first file holding them.
    pub first: String,
    /// The file holding them again.
    pub second: String,
    /// Rows of the lane in each.
    pub rows: u64,
}

impl LaneFingerprints {
    #[must_use]
    /// No lane seen yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The rows that follow are from file `index` (of the files given, in order).
    pub fn start_file(&mut self, index: usize) {
        // A lane seen again in this file gets it added to its list on its next row.
        self.file = index;
    }

    /// Room for one more lane, fallibly (call before [`Self::observe`]): the lane table is
    /// what grows large with many instances.
    pub fn try_reserve_lane(&mut self) -> Result<(), LaneTableFull> {
        self.lanes.try_reserve(1)?;
        self.index.try_reserve()
    }

    /// Adds one row (accounted or not) of file `file` (its index, in the order given) to
    /// its lane's fingerprint.
    pub fn observe_in_file(&mut self, record: &FactRecord, file: usize) {
        if file != self.file {
            self.start_file(file);
        }
        self.observe(record);
    }

    /// Adds one row (accounted or not) to its lane's fingerprint.
    pub fn observe(&mut self, record: &FactRecord) {
        let lane = self.lane_slot(&record.instance_id);
        self.key_bytes.clear();
        self.key_bytes
            .extend_from_slice(&record.timestamp_ns.to_le_bytes());
        self.key_bytes
            .extend_from_slice(&record.input_token_len.to_le_bytes());
        self.key_bytes
            .extend_from_slice(&record.block_size_tokens.to_le_bytes());
        // The fixed-width fields first: the rest is the whole trace id, so the encoding is
        // one to one.
        self.key_bytes.extend_from_slice(record.trace_id.as_bytes());
        let hash = xxhash_rust::xxh3::xxh3_128(&self.key_bytes);
        // `lane_slot` put this file last in the lane's list.
        let sums = &mut self.lanes[lane]
            .files
            .last_mut()
            .expect("lane_slot notes the file")
            .sums;
        sums.rows += 1;
        sums.input_tokens = sums.input_tokens.wrapping_add(record.input_token_len);
        sums.key_hash_sum = sums.key_hash_sum.wrapping_add(hash);
    }

    /// `Err` naming the lane and both files when two files hold the same (nonempty) rows of
    /// a lane; `paths` are the files, in the order given. Files that share only part of a
    /// lane's rows pass: a facts file split by rows is legitimate ([`several_files_note`]).
    pub fn check_no_repeated_rows(&self, paths: &[std::path::PathBuf]) -> Result<(), RepeatedRows> {
        let name = |index: usize| {
            paths
                .get(index)
                .map_or_else(|| format!("#{index}"), |path| path.display().to_string())
        };
        for lane in self.lanes_in_several_files() {
            // Equal sums sort next to each other; the file order breaks ties.
            let mut files: Vec<(RowSums, usize)> = lane
                .files
                .iter()
                .map(|in_file| (in_file.sums, in_file.file))
                .collect();
            files.sort_unstable();
            if let Some(pair) = files.windows(2).find(|pair| pair[0].0 == pair[1].0) {
                return Err(RepeatedRows {
                    instance_id: lane.instance_id.clone(),
                    first: name(pair[0].1),
                    second: name(pair[1].1),
                    rows: pair[0].0.rows,
                });
            }
        }
        Ok(())
    }

    /// Every lane, in order of first sight.
    #[must_use]
    pub fn lanes(&self) -> &[LaneFingerprint] {
        &self.lanes
    }

    /// The lane named `instance_id`, if it has rows.
    #[must_use]
    pub fn lane(&self, instance_id: &str) -> Option<&LaneFingerprint> {
        self.index.get(instance_id).map(|index| &self.lanes[index])
    }

    /// The lanes with rows in more than one file.
    pub fn lanes_in_several_files(&self) -> impl Iterator<Item = &LaneFingerprint> {
        self.lanes.iter().filter(|lane| lane.files.len() > 1)
    }

    /// The shared pool lane, recognised by its rows (see the module doc); `named` is `--pool
    /// NAME`, which must name it (else an error saying what the lane holds). `None`: the
    /// facts have no pool lane.
    pub fn recognise_pool(&self, named: Option<&str>) -> Result<Option<&str>, PoolCheckError> {
        let structural = self.structural_pool(named.unwrap_or(DEFAULT_POOL_NAME));
        let Some(name) = named else {
            return Ok(structural.map(|lane| lane.instance_id.as_str()));
        };
        let Some(lane) = self.lane(name) else {
            /// More lanes than this are counted, not listed.
            const LISTED: usize = 8;
            let mut lanes = self
                .lanes
                .iter()
                .take(LISTED)
                .map(|lane| lane.instance_id.as_str())
                .collect::<Vec<_>>()
                .join(", ");
            if self.lanes.len() > LISTED {
                let _ = write!(lanes, " and {} more", self.lanes.len() - LISTED);
            }
            return Err(PoolCheckError::NoSuchLane {
                name: name.to_owned(),
                lanes: if lanes.is_empty() {
                    "none: no rows".to_owned()
                } else {
                    lanes
                },
            });
        };
        if structural.is_some_and(|pool| pool.instance_id == name) {
            return Ok(Some(&lane.instance_id));
        }
        let rows = lane.rows();
        let Some(pool) = structural else {
            let others = self.lanes.len() - 1;
            let other_rows = self.total_rows() - rows;
            let against = match others {
                0 => " and is the only lane".to_owned(),
                1 => format!(", the one other lane {other_rows}"),
                _ => format!(", the other {others} lanes {other_rows} together"),
            };
            let found = if others > 0 && rows == other_rows {
                ": as many, but not the same requests".to_owned()
            } else if others > 0 && rows > other_rows {
                ": more, so if it is the pool, the facts of some instances (shards) are missing"
                    .to_owned()
            } else {
                String::new()
            };
            return Err(PoolCheckError::NotAPool {
                name: name.to_owned(),
                rows,
                against,
                found,
            });
        };
        // The pool is not one of "the others": they are the instances besides it and NAME.
        let pool_rows = pool.rows();
        let others = self.lanes.len() - 2;
        let other_rows = self.total_rows() - rows - pool_rows;
        let against = match others {
            0 => " and is the only instance besides the pool".to_owned(),
            1 => format!(", the one other instance {other_rows}"),
            _ => format!(", the other {others} instances {other_rows} together"),
        };
        Err(PoolCheckError::NotAPool {
            name: name.to_owned(),
            rows,
            against,
            found: format!(
                " (the pool lane here is {}, holding all {pool_rows})",
                pool.instance_id
            ),
        })
    }

    /// A note when no lane is the pool but the lane with replay's default pool name holds more
    /// rows than every other lane together: a pool lane read with only some of the shards
    /// (e.g. the `--instance pool` task's file beside a few shards' files) is counted as one
    /// more instance, and the user should hear why.
    #[must_use]
    pub fn partial_pool_note(&self) -> Option<String> {
        if self.structural_pool(DEFAULT_POOL_NAME).is_some() {
            return None;
        }
        let lane = self.lane(DEFAULT_POOL_NAME)?;
        let rows = lane.rows();
        let other_rows = self.total_rows() - rows;
        (self.lanes.len() > 1 && rows > other_rows).then(|| {
            format!(
                "note: lane {DEFAULT_POOL_NAME} has {rows} rows, more than the other {} lanes \
                 together ({other_rows}), so it is no shared pool lane of these facts and is \
                 counted as an instance; if it is the pool, the facts of some instances (shards) \
                 are missing",
                self.lanes.len() - 1
            )
        })
    }

    /// The lane whose rows are all the others' together: the only one with three lanes or
    /// more; with two equal lanes, the one called `tie_name` (if either is).
    fn structural_pool(&self, tie_name: &str) -> Option<&LaneFingerprint> {
        let total = self
            .lanes
            .iter()
            .fold(RowSums::default(), |sums, lane| sums.add(lane.sums()));
        let is_pool = |lane: &&LaneFingerprint| {
            let sums = lane.sums();
            sums == total.sub(sums)
        };
        match self.lanes.len() {
            0 | 1 => None,
            // Each is the other's rows, or neither is: only a name can tell.
            2 => self
                .lanes
                .iter()
                .filter(is_pool)
                .find(|lane| lane.instance_id == tie_name),
            _ => self.lanes.iter().find(is_pool),
        }
    }

    fn total_rows(&self) -> u64 {
        self.lanes.iter().map(LaneFingerprint::rows).sum()
    }

    /// Index of the lane of `instance_id`, created on first sight; notes the file.
    fn lane_slot(&mut self, instance_id: &str) -> usize {
        let (index, new) = self.index.index_or_insert(instance_id);
        if new {
            self.lanes.push(LaneFingerprint {
                instance_id: instance_id.to_owned(),
                files: Vec::new(),
            });
        }
        let files = &mut self.lanes[index].files;
        if files.last().map(|in_file| in_file.file) != Some(self.file) {
            files.push(LaneInFile {
                file: self.file,
                sums: RowSums::default(),
            });
        }
        index
    }
}

/// The note for the `lanes` with rows in several files (`paths`: the files, in the order
/// given), one line each (`note: instance ...`), or `None` when every lane is in one file.
#[must_use]
pub fn several_files_note(
    lanes: &[LaneFingerprint],
    paths: &[std::path::PathBuf],
) -> Option<String> {
    /// More lanes than this in several files are counted, not listed.
    const LISTED: usize = 5;
    let split: Vec<&LaneFingerprint> = lanes.iter().filter(|lane| lane.files.len() > 1).collect();
    if split.is_empty() {
        return None;
    }
    let mut note = String::new();
    for lane in split.iter().take(LISTED) {
        let names: Vec<String> = lane
            .files
            .iter()
            .map(|in_file| {
                let index = in_file.file;
                paths
                    .get(index)
                    .map_or_else(|| format!("#{index}"), |path| path.display().to_string())
            })
            .collect();
        let _ = writeln!(
            note,
            "note: instance {} has rows in {} files ({}): replay shards are disjoint by \
             instance; check these files are not from overlapping runs",
            lane.instance_id,
            names.len(),
            names.join(", ")
        );
    }
    if split.len() > LISTED {
        let _ = writeln!(
            note,
            "note: and {} more instances have rows in several files",
            split.len() - LISTED
        );
    }
    Some(note)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn row(trace_id: &str, instance_id: &str, timestamp_ns: i64, len: u64) -> FactRecord {
        FactRecord {
            trace_id: trace_id.into(),
            instance_id: instance_id.into(),
            timestamp_ns,
            input_token_len: len,
            block_size_tokens: 4,
            block_bytes: 64,
            ..FactRecord::default()
        }
    }

    /// `rows` of `(trace_id, instance)`, each in its lane and, with `pool`, in that lane too.
    fn lanes(rows: &[(&str, &str)], pool: Option<&str>) -> LaneFingerprints {
        let mut lanes = LaneFingerprints::new();
        for (index, (trace_id, instance)) in rows.iter().enumerate() {
            let t = i64::try_from(index).unwrap();
            lanes.observe(&row(trace_id, instance, t, 10 + index as u64));
            if let Some(pool) = pool {
                lanes.observe(&row(trace_id, pool, t, 10 + index as u64));
            }
        }
        lanes
    }

    const FLEET: [(&str, &str); 5] = [
        ("a", "i1"),
        ("b", "i2"),
        ("c", "i1"),
        ("d", "i3"),
        ("e", "i2"),
    ];

    #[test]
    fn the_pool_is_the_lane_holding_every_other_lanes_rows_whatever_its_name() {
        for name in ["pool", "shared", "i0"] {
            let fleet = lanes(&FLEET, Some(name));
            assert_eq!(fleet.recognise_pool(None), Ok(Some(name)));
            assert_eq!(fleet.recognise_pool(Some(name)), Ok(Some(name)));
        }
        assert_eq!(lanes(&FLEET, None).recognise_pool(None), Ok(None));
    }

    #[test]
    fn an_ordinary_lane_called_pool_is_no_pool() {
        let renamed: Vec<(&str, &str)> = FLEET
            .iter()
            .map(|&(t, i)| (t, if i == "i3" { "pool" } else { i }))
            .collect();
        assert_eq!(lanes(&renamed, None).recognise_pool(None), Ok(None));
        let error = lanes(&renamed, None)
            .recognise_pool(Some("pool"))
            .unwrap_err()
            .to_string();
        assert!(
            error.contains("lane pool is not a shared pool lane")
                && error.contains("has 1 rows, the other 2 lanes 4 together"),
            "{error}"
        );
    }

    #[test]
    fn one_row_off_is_no_pool() {
        let mut fleet = lanes(&FLEET, Some("pool"));
        // The same count, one key differs: a dropped row and a foreign one.
        fleet.observe(&row("x", "pool", 99, 1));
        fleet.observe(&row("y", "i1", 99, 1));
        assert_eq!(fleet.recognise_pool(None), Ok(None));
        let error = fleet.recognise_pool(Some("pool")).unwrap_err().to_string();
        assert!(error.contains("not the same requests"), "{error}");
        // Or only the input tokens differ.
        let mut fleet = lanes(&FLEET, Some("pool"));
        fleet.observe(&row("x", "pool", 99, 1));
        fleet.observe(&row("x", "i1", 99, 2));
        assert_eq!(fleet.recognise_pool(None), Ok(None));
    }

    #[test]
    fn two_equal_lanes_are_told_apart_by_name_only() {
        let single = [("a", "default"), ("b", "default")];
        assert_eq!(
            lanes(&single, Some("pool")).recognise_pool(None),
            Ok(Some("pool"))
        );
        assert_eq!(
            lanes(&single, Some("shared")).recognise_pool(None),
            Ok(None)
        );
        assert_eq!(
            lanes(&single, Some("shared")).recognise_pool(Some("shared")),
            Ok(Some("shared"))
        );
        assert_eq!(
            lanes(&single, Some("shared")).recognise_pool(Some("default")),
            Ok(Some("default"))
        );
        let alone = lanes(&single, None);
        assert!(
            alone
                .recognise_pool(Some("default"))
                .unwrap_err()
                .to_string()
                .contains("is the only lane"),
            "one lane is no pool"
        );
    }

    #[test]
    fn naming_another_lane_says_which_is_the_pool() {
        let error = lanes(&FLEET, Some("shared"))
            .recognise_pool(Some("i1"))
            .unwrap_err()
            .to_string();
        // The pool is not among "the others": i2 and i3 are, with 3 rows (the pool holds 5).
        assert!(
            error.starts_with("--pool i1: lane i1 is not a shared pool lane")
                && error.ends_with(
                    "i1 has 2 rows, the other 2 instances 3 together (the pool lane here is \
                     shared, holding all 5)"
                ),
            "{error}"
        );
        let missing = lanes(&FLEET, None).recognise_pool(Some("x")).unwrap_err();
        assert!(
            missing.to_string().contains("the lanes are i1, i2, i3"),
            "{missing}"
        );
    }

    /// `rows` of `(trace_id, instance)` as one facts file, the first row at `t0`.
    fn read_file(fleet: &mut LaneFingerprints, index: usize, rows: &[(&str, &str)], t0: i64) {
        fleet.start_file(index);
        for (offset, (trace_id, instance)) in rows.iter().enumerate() {
            let t = t0 + i64::try_from(offset).unwrap();
            fleet.observe(&row(trace_id, instance, t, 10 + offset as u64));
        }
    }

    #[test]
    fn a_file_given_twice_is_an_error_naming_the_lane_and_both_files() {
        let paths: Vec<std::path::PathBuf> = vec!["A.csv".into(), "B.csv".into(), "C.csv".into()];
        let mut fleet = LaneFingerprints::new();
        read_file(&mut fleet, 0, &FLEET, 0);
        read_file(&mut fleet, 1, &[("z", "i9")], 100);
        // C.csv holds A.csv's rows in another order: the same multiset.
        let mut shuffled = LaneFingerprints::new();
        read_file(&mut shuffled, 0, &FLEET, 0);
        read_file(&mut shuffled, 1, &[("z", "i9")], 100);
        shuffled.start_file(2);
        for (offset, (trace_id, instance)) in FLEET.iter().enumerate().rev() {
            let t = i64::try_from(offset).unwrap();
            shuffled.observe(&row(trace_id, instance, t, 10 + offset as u64));
        }
        assert_eq!(
            shuffled.check_no_repeated_rows(&paths),
            Err(RepeatedRows {
                instance_id: "i1".into(),
                first: "A.csv".into(),
                second: "C.csv".into(),
                rows: 2,
            })
        );
        assert_eq!(
            shuffled
                .check_no_repeated_rows(&paths)
                .unwrap_err()
                .to_string(),
            "the same rows of instance i1 are in A.csv and C.csv: one facts file was given \
             twice (2 rows each; its requests would be counted twice)"
        );
        // Without the third file, every lane is in one file.
        assert_eq!(fleet.check_no_repeated_rows(&paths), Ok(()));
    }

    #[test]
    fn a_lane_split_by_rows_or_sharing_part_of_its_rows_is_no_error() {
        let paths: Vec<std::path::PathBuf> = vec!["A.csv".into(), "B.csv".into()];
        // Split by rows: each half in one file.
        let mut split = LaneFingerprints::new();
        read_file(&mut split, 0, &FLEET[..3], 0);
        read_file(&mut split, 1, &FLEET[3..], 3);
        assert_eq!(split.check_no_repeated_rows(&paths), Ok(()));
        // Overlapping: B holds A's rows of i1 and one more.
        let mut overlap = LaneFingerprints::new();
        read_file(&mut overlap, 0, &FLEET, 0);
        read_file(&mut overlap, 1, &FLEET, 0);
        overlap.observe(&row("x", "i1", 50, 1));
        let error = overlap.check_no_repeated_rows(&paths).unwrap_err();
        // i1 differs, but i2 and i3 are the same in both: still one file twice.
        assert_eq!(error.instance_id, "i2");
        let mut partial = LaneFingerprints::new();
        read_file(&mut partial, 0, &[("a", "i1"), ("b", "i1")], 0);
        read_file(&mut partial, 1, &[("a", "i1"), ("c", "i1")], 0);
        assert_eq!(partial.check_no_repeated_rows(&paths), Ok(()));
        // The same count and tokens, one key differs: not the same rows.
        let mut one_key = LaneFingerprints::new();
        one_key.start_file(0);
        one_key.observe(&row("a", "i1", 1, 7));
        one_key.start_file(1);
        one_key.observe(&row("b", "i1", 1, 7));
        assert_eq!(one_key.check_no_repeated_rows(&paths), Ok(()));
    }

    #[test]
    fn lanes_note_the_files_they_are_in() {
        let mut fleet = LaneFingerprints::new();
        fleet.start_file(0);
        fleet.observe(&row("a", "i1", 1, 1));
        fleet.observe(&row("b", "i2", 2, 1));
        fleet.observe(&row("c", "i1", 3, 1));
        fleet.start_file(1);
        fleet.observe(&row("d", "i1", 4, 1));
        fleet.observe(&row("e", "i3", 5, 1));
        let split: Vec<_> = fleet.lanes_in_several_files().collect();
        assert_eq!(split.len(), 1);
        assert_eq!(split[0].file_indexes(), [0, 1]);
        let note = several_files_note(fleet.lanes(), &["A.csv".into(), "B.csv".into()]).unwrap();
        assert_eq!(
            note,
            "note: instance i1 has rows in 2 files (A.csv, B.csv): replay shards are disjoint \
             by instance; check these files are not from overlapping runs\n"
        );
    }
}
