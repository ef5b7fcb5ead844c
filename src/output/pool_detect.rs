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
//! The same pass notes which of the given files hold each lane: a lane in several files is
//! legitimate (a facts file split by rows) but also what two overlapping shardings look like.

use std::collections::HashMap;
use std::fmt::Write as _;

use litehit_core::engine::DEFAULT_POOL_NAME;
use litehit_core::facts::FactRecord;

/// Up to this many lanes, a lane is looked up by a linear scan.
const LINEAR_SEARCH_LANES: usize = 16;

/// What one lane's rows add up to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneFingerprint {
    pub instance_id: String,
    /// Every row of the lane (accounted or not).
    pub rows: u64,
    /// Σ `input_token_len` (wrapping).
    pub input_tokens: u64,
    /// Σ xxh3-128 of each row's key (wrapping): equal for equal multisets of keys.
    key_hash_sum: u128,
    /// Indexes (in the order the files were given) of the files with rows of this lane.
    pub files: Vec<usize>,
}

/// The fingerprint of every lane seen, in order of first sight.
#[derive(Debug, Clone, Default)]
pub struct LaneFingerprints {
    lanes: Vec<LaneFingerprint>,
    index: HashMap<String, usize>,
    last_lane: Option<usize>,
    /// Index of the file being read.
    file: usize,
    /// The key bytes of the row being hashed (kept to save an allocation per row).
    key_bytes: Vec<u8>,
}

/// `--pool NAME` named no pool lane.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PoolCheckError {
    #[error(
        "--pool {name}: no facts rows of instance {name} (the lanes are {lanes}; replay with \
         --pool to add the shared pool lane)"
    )]
    NoSuchLane { name: String, lanes: String },
    #[error(
        "--pool {name}: lane {name} is not a shared pool lane: a pool lane holds a copy of \
         every other lane's rows (same trace_id, timestamp_ns, input_token_len and \
         block_size_tokens), and {name} has {rows} rows{against}{found}"
    )]
    NotAPool {
        name: String,
        rows: u64,
        /// How the other lanes compare (`, the other 3 lanes 3000 together`).
        against: String,
        /// Which lane is the pool, if one is (`; the pool lane here is shared`).
        found: String,
    },
}

impl LaneFingerprints {
    #[must_use]
    pub fn new() -> Self {
        Self::default()
    }

    /// The rows that follow are from file `index` (of the files given, in order).
    pub fn start_file(&mut self, index: usize) {
        self.file = index;
        // A lane seen again in this file gets it added to its list on its next row.
        self.last_lane = None;
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
        let lane = &mut self.lanes[lane];
        lane.rows += 1;
        lane.input_tokens = lane.input_tokens.wrapping_add(record.input_token_len);
        lane.key_hash_sum = lane.key_hash_sum.wrapping_add(hash);
    }

    /// Every lane, in order of first sight.
    #[must_use]
    pub fn lanes(&self) -> &[LaneFingerprint] {
        &self.lanes
    }

    /// The lane named `instance_id`, if it has rows.
    #[must_use]
    pub fn lane(&self, instance_id: &str) -> Option<&LaneFingerprint> {
        self.lanes
            .iter()
            .find(|lane| lane.instance_id == instance_id)
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
        let others = self.lanes.len() - 1;
        let other_rows = self.total_rows() - lane.rows;
        let against = match others {
            0 => " and is the only lane".to_owned(),
            1 => format!(", the one other lane {other_rows}"),
            _ => format!(", the other {others} lanes {other_rows} together"),
        };
        let found = match structural {
            Some(pool) => format!("; the pool lane here is {}", pool.instance_id),
            None if others > 0 && lane.rows == other_rows => {
                ": as many, but not the same requests".to_owned()
            }
            None => String::new(),
        };
        Err(PoolCheckError::NotAPool {
            name: name.to_owned(),
            rows: lane.rows,
            against,
            found,
        })
    }

    /// The lane whose rows are all the others' together: the only one with three lanes or
    /// more; with two equal lanes, the one called `tie_name` (if either is).
    fn structural_pool(&self, tie_name: &str) -> Option<&LaneFingerprint> {
        let (rows, input_tokens, key_hash_sum) =
            self.lanes
                .iter()
                .fold((0_u64, 0_u64, 0_u128), |(rows, tokens, keys), lane| {
                    (
                        rows + lane.rows,
                        tokens.wrapping_add(lane.input_tokens),
                        keys.wrapping_add(lane.key_hash_sum),
                    )
                });
        let is_pool = |lane: &&LaneFingerprint| {
            lane.rows == rows - lane.rows
                && lane.input_tokens == input_tokens.wrapping_sub(lane.input_tokens)
                && lane.key_hash_sum == key_hash_sum.wrapping_sub(lane.key_hash_sum)
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
        self.lanes.iter().map(|lane| lane.rows).sum()
    }

    /// Index of the lane of `instance_id`, created on first sight; notes the file.
    fn lane_slot(&mut self, instance_id: &str) -> usize {
        if let Some(last) = self.last_lane
            && self.lanes[last].instance_id == instance_id
        {
            return last;
        }
        // A few lanes (the usual case) are found faster by scanning than by hashing.
        let known = if self.lanes.len() <= LINEAR_SEARCH_LANES {
            self.lanes
                .iter()
                .position(|lane| lane.instance_id == instance_id)
        } else {
            self.index.get(instance_id).copied()
        };
        let index = if let Some(index) = known {
            index
        } else {
            self.lanes.push(LaneFingerprint {
                instance_id: instance_id.to_owned(),
                rows: 0,
                input_tokens: 0,
                key_hash_sum: 0,
                files: Vec::new(),
            });
            self.index
                .insert(instance_id.to_owned(), self.lanes.len() - 1);
            self.lanes.len() - 1
        };
        let files = &mut self.lanes[index].files;
        if files.last() != Some(&self.file) {
            files.push(self.file);
        }
        self.last_lane = Some(index);
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
            .map(|&index| {
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
        assert!(
            error.starts_with("--pool i1: lane i1 is not a shared pool lane")
                && error.contains("i1 has 2 rows, the other 3 lanes 8 together")
                && error.ends_with("; the pool lane here is shared"),
            "{error}"
        );
        let missing = lanes(&FLEET, None).recognise_pool(Some("x")).unwrap_err();
        assert!(
            missing.to_string().contains("the lanes are i1, i2, i3"),
            "{missing}"
        );
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
        assert_eq!(split[0].files, [0, 1]);
        let note = several_files_note(fleet.lanes(), &["A.csv".into(), "B.csv".into()]).unwrap();
        assert_eq!(
            note,
            "note: instance i1 has rows in 2 files (A.csv, B.csv): replay shards are disjoint \
             by instance; check these files are not from overlapping runs\n"
        );
    }
}
