//! The capacity-for-target line (`render/targets.rs`): what it shows for the selected
//! instance and for all of them equals `knee_capacity_blocks` of an accumulator built here
//! from the same requests (each knee checked minimal against the projector), times the
//! lane's block bytes; and the live monitor's own snapshot of a generated trace carries the
//! same knees.

use std::time::{Duration, Instant};

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers};
use litehit_core::LiteHit;
use litehit_core::facts::RequestFact;
use litehit_core::projector::{CapacityAxisAccumulator, project_blocks};
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::{CAPACITY_FRACTION_PERCENTS, FractionCapacity, LaneSnapshot};
use litehit_tui::app::App;
use litehit_tui::render::targets::{SHOWN_PERCENTS, capacity_text};
use proptest::prelude::*;

use crate::common::cli_bin::{generate, standard_trace, write_file};
use crate::common::traces::prefix_tree_trace;
use litehit_core::workload::WorkloadConfig;

/// The screen's rows as text.
fn rows(snap: &LiveSnapshot, app: &App, width: u16, height: u16) -> Vec<String> {
    crate::tui::render::screen_rows(snap, app, width, height)
}

/// The targets line of the screen.
fn targets_line(snap: &LiveSnapshot, app: &App) -> String {
    rows(snap, app, 200, 50)
        .into_iter()
        .find(|row| row.starts_with(" to reach 90/95/99 % of ∞"))
        .expect("a targets line at 200×50")
}

/// One lane replayed here: its facts and accumulator.
struct Replayed {
    facts: Vec<RequestFact>,
    accumulator: CapacityAxisAccumulator,
}

fn replay(trace: &[Vec<i64>]) -> Replayed {
    let mut core = LiteHit::new();
    let mut accumulator = CapacityAxisAccumulator::new();
    let facts = trace
        .iter()
        .map(|keys| {
            let fact = core.process_request(keys, 0);
            accumulator.add_fact(&fact);
            fact
        })
        .collect();
    Replayed { facts, accumulator }
}

impl Replayed {
    /// The knee for `percent`, checked minimal with the projector: it reaches the target
    /// (`percent` % of the ∞ hits, rounded up to a block) and one block less does not.
    fn knee(&self, percent: u32) -> u64 {
        let knee = self.accumulator.knee_capacity_blocks(percent);
        let infinite = self.accumulator.infinite_hit_blocks();
        let target = (infinite * u64::from(percent)).div_ceil(100);
        let hits = |capacity: u64| -> u64 {
            self.facts
                .iter()
                .map(|fact| project_blocks(fact, capacity))
                .sum()
        };
        assert!(hits(knee) >= target, "the knee reaches {percent} %");
        if knee > 0 {
            assert!(hits(knee - 1) < target, "one block less does not");
        }
        knee
    }
}

/// A snapshot of `lanes` (id, block bytes, replayed) with their knees.
fn snapshot(lanes: &[(&str, u64, &Replayed)]) -> LiveSnapshot {
    LiveSnapshot {
        lanes: lanes
            .iter()
            .map(|(id, block_bytes, replayed)| LaneSnapshot {
                instance_id: (*id).to_owned(),
                block_size_tokens: 16,
                block_bytes: *block_bytes,
                requests: replayed.facts.len() as u64,
                input_tokens: replayed.facts.len() as u64 * 16 * 8,
                infinite_hit_blocks: replayed.accumulator.infinite_hit_blocks(),
                capacity_for_fraction: CAPACITY_FRACTION_PERCENTS
                    .iter()
                    .map(|&percent| {
                        let capacity_blocks = replayed.accumulator.knee_capacity_blocks(percent);
                        FractionCapacity {
                            percent,
                            capacity_blocks,
                            hit_blocks: replayed.accumulator.hit_blocks_at(capacity_blocks),
                        }
                    })
                    .collect(),
                ..LaneSnapshot::default()
            })
            .collect(),
        ..LiveSnapshot::default()
    }
    .finished()
}

/// `a · b · c`: the expected values of one part.
fn expected_values(bytes: &[u64]) -> String {
    bytes
        .iter()
        .map(|&bytes| capacity_text(bytes, false))
        .collect::<Vec<_>>()
        .join(" · ")
}

fn knee_bytes(replayed: &Replayed, block_bytes: u64) -> Option<Vec<u64>> {
    (replayed.accumulator.infinite_hit_blocks() > 0).then(|| {
        SHOWN_PERCENTS
            .iter()
            .map(|&percent| replayed.knee(percent) * block_bytes)
            .collect()
    })
}

fn press(app: &mut App, code: KeyCode) {
    app.handle_key(KeyEvent::new(code, KeyModifiers::NONE));
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn shown_capacities_are_the_knees_of_each_instance_and_their_sum(
        a in prefix_tree_trace(),
        b in prefix_tree_trace(),
        block_bytes_a in 1_u64..(64 << 20),
    ) {
        let (a, b) = (replay(&a), replay(&b));
        let block_bytes_b = 2 << 20;
        let snap = snapshot(&[("a", block_bytes_a, &a), ("b", block_bytes_b, &b)]);
        let mut app = App::default();
        app.observe(&snap);
        let knees_a = knee_bytes(&a, block_bytes_a);
        let knees_b = knee_bytes(&b, block_bytes_b);
        let sums: Option<Vec<u64>> = match (&knees_a, &knees_b) {
            (None, None) => None,
            _ => Some(
                (0..SHOWN_PERCENTS.len())
                    .map(|i| {
                        knees_a.as_ref().map_or(0, |k| k[i]) + knees_b.as_ref().map_or(0, |k| k[i])
                    })
                    .collect(),
            ),
        };
        let part = |knees: &Option<Vec<u64>>| {
            knees.as_deref().map_or_else(|| "no hits yet".to_owned(), expected_values)
        };
        let total = format!("Σ of instance knees: {}", part(&sums));

        // Lane a selected (the first row): a, then the sum.
        let line = targets_line(&snap, &app);
        prop_assert_eq!(
            line.trim_end(),
            format!(" to reach 90/95/99 % of ∞ · a: {} │ {total}", part(&knees_a))
        );
        press(&mut app, KeyCode::Down);
        let line = targets_line(&snap, &app);
        prop_assert_eq!(
            line.trim_end(),
            format!(" to reach 90/95/99 % of ∞ · b: {} │ {total}", part(&knees_b))
        );
        // The totals row: only the sum.
        press(&mut app, KeyCode::End);
        let line = targets_line(&snap, &app);
        prop_assert_eq!(line.trim_end(), format!(" to reach 90/95/99 % of ∞ · {total}"));
    }
}

#[test]
fn small_screens_keep_the_table_and_never_cut_a_number() {
    let trace: Vec<Vec<i64>> = (0..40).map(|i| (0..=(i % 7)).collect()).collect();
    let replayed = replay(&trace);
    let snap = snapshot(&[("a", 1 << 20, &replayed), ("b", 1 << 20, &replayed)]);
    let mut app = App::default();
    app.observe(&snap);
    let knees = knee_bytes(&replayed, 1 << 20).unwrap();
    // Each lane's knees, and their sums (the two lanes are the same replay).
    let values: Vec<String> = knees
        .iter()
        .chain(&knees.iter().map(|&bytes| 2 * bytes).collect::<Vec<_>>())
        .map(|&bytes| capacity_text(bytes, false))
        .collect();
    for (width, height) in [(200, 60), (120, 40), (80, 24), (60, 20), (40, 12)] {
        let screen = rows(&snap, &app, width, height);
        let Some(line) = screen.iter().find(|row| row.contains("90/95/99 % of ∞")) else {
            // Left out only when the whole table would not fit beside it.
            assert!(height < 16, "{width}×{height}:\n{}", screen.join("\n"));
            continue;
        };
        // Every value shown is whole: each piece between separators is a name or a knee's
        // full text.
        let after_label = line.split_once('∞').unwrap().1;
        let pieces: Vec<&str> = after_label
            .split([':', '·', '│'])
            .map(str::trim)
            .filter(|piece| !piece.is_empty())
            .collect();
        for piece in &pieces {
            assert!(
                ["a", "b", "Σ of instance knees"].contains(piece)
                    || values.iter().any(|value| value == piece),
                "{width}×{height}: a cut value {piece:?} in {line:?}"
            );
        }
        let shown = pieces
            .iter()
            .filter(|piece| values.iter().any(|value| value == *piece))
            .count();
        // The selected lane's three at 60 columns and up, the totals too at 120.
        let expected = match width {
            120.. => values.len(),
            60.. => SHOWN_PERCENTS.len(),
            _ => 0,
        };
        assert!(shown >= expected, "{width}×{height}: {line}");
        // The table's rows are all there.
        assert!(
            screen.iter().any(|row| row.contains("total")),
            "{width}×{height}"
        );
    }
}

/// The live monitor (ingest thread, as `watch` sets it up) on a generated trace: its
/// snapshot's knees are those of an accumulator of the same requests, lane by lane, and the
/// screen shows them.
#[test]
fn the_live_snapshot_carries_the_knees_the_screen_shows() {
    let dir = tempfile::tempdir().unwrap();
    let requests = generate(
        WorkloadConfig {
            seed: 11,
            instance_ids: vec!["a".into(), "b".into()],
            live_conversations: 50,
            ..WorkloadConfig::default()
        },
        1500,
    );
    let trace = write_file(dir.path(), "trace.jsonl", &standard_trace(&requests));
    let cli = <litehit::cli::Cli as clap::Parser>::parse_from([
        "litehit",
        "watch",
        trace.to_str().unwrap(),
        "--block-size",
        "16",
        "--block-bytes",
        "1MiB",
        "--no-facts",
    ]);
    let litehit::cli::Command::Watch(args) = cli.command else {
        panic!("watch expected")
    };
    let mut config = litehit::commands::watch::ingest_config(&args).unwrap();
    config.frame_period = Duration::from_millis(10);
    let monitor = litehit_live::ingest::spawn(config).unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    let snap = loop {
        let snap = monitor.latest();
        let read: u64 = snap.lanes.iter().map(|lane| lane.requests).sum();
        if read == requests.len() as u64 {
            break snap;
        }
        assert!(
            Instant::now() < deadline,
            "read {read} of {}",
            requests.len()
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    monitor.shutdown();
    let mut app = App::default();
    app.observe(&snap);
    for lane in &snap.lanes {
        let keys: Vec<Vec<i64>> = requests
            .iter()
            .filter(|request| request.instance_id == lane.instance_id)
            .map(|request| request.keys.clone())
            .collect();
        let replayed = replay(&keys);
        let expected: Vec<u64> = CAPACITY_FRACTION_PERCENTS
            .iter()
            .map(|&percent| replayed.knee(percent))
            .collect();
        let live_knees: Vec<u64> = lane
            .capacity_for_fraction
            .iter()
            .map(|fraction| fraction.capacity_blocks)
            .collect();
        assert_eq!(live_knees, expected, "{}", lane.instance_id);
        let shown = expected_values(&knee_bytes(&replayed, 1 << 20).unwrap());
        let line = targets_line(&snap, &app);
        assert!(
            line.contains(&format!("{}: {shown}", lane.instance_id)),
            "{line}"
        );
        press(&mut app, KeyCode::Down);
    }
}
