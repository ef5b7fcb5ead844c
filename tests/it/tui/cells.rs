//! The fleet table's number cells on the whole screen: every value printed is the
//! formatter's full text (a column that does not fit is dropped whole, never cut), at any
//! width, for values of 1000–1023.99 of a unit, huge counts and wide (CJK) instance ids; and
//! the marks that say what a number is: `≥` on slots above a memory horizon, `alive` under a
//! TTL.

use litehit_core::projector::Capacity;
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::{LaneSnapshot, Slot};
use litehit_tui::app::App;
use litehit_tui::render::format;
use proptest::prelude::*;

use crate::tui::render::screen_text;

fn slots() -> Vec<Slot> {
    vec![
        Slot {
            id: 1,
            capacity: Capacity::Gigabytes(10.0),
        },
        Slot {
            id: 2,
            capacity: Capacity::Gigabytes(40.0),
        },
        Slot {
            id: 3,
            capacity: Capacity::Blocks(1000),
        },
    ]
}

/// The full text of every number column of a row, in the table's column order.
fn expected_cells(snap: &LiveSnapshot, lanes: &[&LaneSnapshot]) -> Vec<String> {
    let requests: u64 = lanes.iter().map(|lane| lane.requests).sum();
    let input: u64 = lanes.iter().map(|lane| lane.input_tokens).sum();
    let rate = |hit_tokens: u64| (input > 0).then(|| hit_tokens as f64 / input as f64);
    let mut cells = vec![format::count(requests), format::count(input)];
    for (index, slot) in snap.slots.iter().enumerate() {
        let hits: u64 = lanes.iter().map(|lane| lane.slot_hit_tokens(index)).sum();
        let lower_bound = lanes
            .iter()
            .any(|lane| lane.is_lower_bound(slot.capacity.blocks(lane.block_bytes)));
        cells.push(format::percent_bound(rate(hits), lower_bound));
    }
    let infinite: u64 = lanes.iter().map(|lane| lane.infinite_hit_tokens()).sum();
    // Under a memory horizon ∞ and the unique blocks are lower bounds.
    let horizon = lanes.iter().any(|lane| lane.is_lower_bound(None));
    cells.push(format::percent_bound(rate(infinite), horizon));
    cells.push(format::count_bound(
        lanes.iter().map(|lane| lane.unique_blocks).sum(),
        horizon,
    ));
    cells.push(format::bytes_bound(
        lanes.iter().map(|lane| lane.unique_kv_bytes()).sum(),
        horizon,
    ));
    cells
}

/// Whether `rest` (a row after its instance cell) is some of `cells`, whole, in order,
/// separated by blanks: a cut value matches none of them.
fn is_whole_cells(rest: &str, cells: &[String]) -> bool {
    let mut rest = rest.trim_start();
    let mut next = 0;
    while !rest.is_empty() {
        let Some(found) = (next..cells.len()).find(|&index| {
            rest.strip_prefix(cells[index].as_str())
                .is_some_and(|after| after.is_empty() || after.starts_with(' '))
        }) else {
            return false;
        };
        rest = rest[cells[found].len()..].trim_start();
        next = found + 1;
    }
    true
}

/// A value of 1000–1023.99 of a binary unit, as unique blocks of `block_bytes`.
fn kv_band() -> impl Strategy<Value = (u64, u64)> {
    (1i32..5, 1000.0f64..1024.0, 0u32..3).prop_map(|(unit, value, shift)| {
        let block_bytes = 1024u64 << shift;
        let bytes = value * 1024f64.powi(unit);
        #[expect(clippy::cast_possible_truncation, reason = "a test value below 2^52")]
        #[expect(clippy::cast_sign_loss, reason = "positive")]
        let blocks = (bytes / block_bytes as f64).ceil() as u64;
        (blocks, block_bytes)
    })
}

fn lane_strategy() -> impl Strategy<Value = LaneSnapshot> {
    (
        prop_oneof![0u64..100_000, 0u64..1 << 56],
        prop_oneof![1u64..100_000, 1u64..1 << 56],
        prop_oneof![kv_band(), (0u64..1 << 36, 1u64..1 << 22)],
        prop::collection::vec(0.0f64..1.0, 3),
        0.0f64..1.0,
        prop::option::of(1u64..1 << 30),
        any::<bool>(),
    )
        .prop_map(
            |(
                requests,
                input_tokens,
                (unique_blocks, block_bytes),
                shares,
                infinite,
                horizon,
                ttl,
            )| {
                let blocks = input_tokens / 16;
                #[expect(clippy::cast_possible_truncation, reason = "a share of a u64")]
                #[expect(clippy::cast_sign_loss, reason = "positive")]
                let of = |share: f64| (blocks as f64 * share) as u64;
                LaneSnapshot {
                    block_size_tokens: 16,
                    block_bytes,
                    ttl_ns: if ttl { 600_000_000_000 } else { 0 },
                    requests,
                    input_tokens,
                    unique_blocks,
                    slot_hit_blocks: shares.iter().map(|&share| of(share)).collect(),
                    infinite_hit_blocks: of(infinite),
                    memory_horizon_blocks: horizon,
                    ..LaneSnapshot::default()
                }
            },
        )
}

/// Ids of 2–12 wide characters before a distinguishing end `#NNN`.
fn id_strategy() -> impl Strategy<Value = String> {
    prop_oneof!["[推理节点上海北京东区]{2,12}", "[a-z-]{1,40}",]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// Every number in every drawn fleet-table row (lanes and total) is the formatter's full
    /// text, at widths 40–220.
    #[test]
    fn no_number_cell_of_the_fleet_table_is_cut(
        lanes in prop::collection::vec((id_strategy(), lane_strategy()), 1..6),
        width in 40u16..220,
    ) {
        let lanes: Vec<LaneSnapshot> = lanes
            .into_iter()
            .enumerate()
            .map(|(index, (id, lane))| LaneSnapshot {
                instance_id: format!("{id}#{index:03}"),
                ..lane
            })
            .collect();
        let snap = LiveSnapshot {
            slots: slots(),
            lanes,
            ..LiveSnapshot::default()
        }.finished();
        let mut app = App::default();
        app.observe(&snap);
        let screen = screen_text(&snap, &app, width, 60);
        let mut rows: Vec<(String, Vec<String>)> = snap
            .lanes
            .iter()
            .enumerate()
            .map(|(index, lane)| (format!("#{index:03} "), expected_cells(&snap, &[lane])))
            .collect();
        if snap.lanes.len() > 1 {
            let all: Vec<&LaneSnapshot> = snap.lanes.iter().collect();
            rows.push((" total ".to_owned(), expected_cells(&snap, &all)));
        }
        let mut checked = 0;
        for (marker, cells) in &rows {
            let Some(line) = screen.lines().find(|line| line.contains(marker.as_str())) else {
                continue; // an id cut past its end on a narrow screen
            };
            let after = &line[line.find(marker.as_str()).unwrap() + marker.len()..];
            let rest = after.trim_end().trim_end_matches('│');
            prop_assert!(
                is_whole_cells(rest, cells),
                "{rest:?} is not whole cells of {cells:?}\n{screen}"
            );
            checked += 1;
        }
        prop_assert!(width < 60 || checked > 0, "no row found:\n{screen}");
    }
}

fn lane(id: &str, horizon: Option<u64>, ttl_ns: u64) -> LaneSnapshot {
    LaneSnapshot {
        instance_id: id.to_owned(),
        block_size_tokens: 16,
        block_bytes: 2 << 20,
        ttl_ns,
        requests: 1_000,
        input_tokens: 160_000,
        request_blocks: 10_000,
        unique_blocks: 3_000,
        slot_hit_blocks: vec![4_120, 5_000, 2_000],
        infinite_hit_blocks: 6_000,
        memory_horizon_blocks: horizon,
        ..LaneSnapshot::default()
    }
}

#[test]
fn slots_above_the_memory_horizon_read_as_lower_bounds() {
    // 5000 blocks of 2 MiB ≈ 9.77 GiB: the 10 and 40 GiB slots lie above it, 1000 blk below.
    let snap = LiveSnapshot {
        slots: slots(),
        lanes: vec![lane("engine-0", Some(5_000), 0)],
        memory_horizon: Some(Capacity::Blocks(5_000)),
        ..LiveSnapshot::default()
    }
    .finished();
    let mut app = App::default();
    app.observe(&snap);
    for (width, height) in [(120, 40), (80, 24)] {
        let screen = screen_text(&snap, &app, width, height);
        let row = screen
            .lines()
            .find(|line| line.contains("▶ engine-0"))
            .unwrap_or_else(|| panic!("no row:\n{screen}"));
        for (index, bound) in [(0, true), (1, true), (2, false)] {
            let text = format::percent(snap.lanes[0].slot_hit_rate(index));
            let marked = format!("≥{text}");
            assert_eq!(
                row.contains(&marked),
                bound,
                "slot {index} in {row:?}\n{screen}"
            );
            assert!(row.contains(&text), "slot {index} in {row:?}\n{screen}");
        }
        // Issue #26: the ∞ value, the unique blocks and their bytes are lower bounds under
        // the horizon, and marked so.
        assert!(row.contains("≥60.00%"), "the ∞ value: {row:?}");
        if width >= 120 {
            let unique = format!("≥{}", format::count(snap.lanes[0].unique_blocks));
            assert!(row.contains(&unique), "unique blk {unique}: {row:?}");
            let bytes = format!("≥{}", format::bytes(snap.lanes[0].unique_kv_bytes()));
            assert!(row.contains(&bytes), "KV bytes {bytes}: {row:?}");
        }
        assert!(screen.contains("∞ H=5000 blk"), "the ∞ header:\n{screen}");
        assert!(
            screen.contains("≥ lower bound above the horizon"),
            "the title note:\n{screen}"
        );
        if width == 80 {
            // The compact legend on the chart's border names the slots; the horizon's
            // `∞ H=5000 blk` no longer fits beside `1000 blk` at 40 columns (it is in the
            // table's header).
            assert!(
                screen.contains("┊10 GiB─┊40 GiB─┊1000 blk"),
                "compact legend:\n{screen}"
            );
        }
        if width == 120 {
            // The curve's legend marks the same slots.
            assert!(screen.contains("10 GiB ≥41.20%"), "legend:\n{screen}");
            assert!(screen.contains("1000 blk 20.00%"), "legend:\n{screen}");
        }
    }
    // Without a horizon nothing is marked.
    let exact = LiveSnapshot {
        lanes: vec![lane("engine-0", None, 0)],
        memory_horizon: None,
        ..snap
    }
    .finished();
    let screen = screen_text(&exact, &app, 120, 40);
    assert!(!screen.contains('≥'), "{screen}");
}

#[test]
fn a_ttl_lane_counts_alive_blocks_and_says_so() {
    let snap = LiveSnapshot {
        slots: slots(),
        lanes: vec![lane("engine-0", None, 600_000_000_000)],
        ..LiveSnapshot::default()
    }
    .finished();
    let mut app = App::default();
    app.observe(&snap);
    for (width, height) in [(120, 40), (80, 24)] {
        let screen = screen_text(&snap, &app, width, height);
        assert!(!screen.contains("unique blk"), "{screen}");
        if width == 120 {
            assert!(screen.contains("alive blk"), "the column header:\n{screen}");
            assert!(
                screen.contains("alive KV"),
                "the KV column header:\n{screen}"
            );
        }
        assert!(screen.contains("3000 alive blocks"), "the gauge:\n{screen}");
    }
    let untimed = LiveSnapshot {
        lanes: vec![lane("engine-0", None, 0)],
        ..snap
    }
    .finished();
    let screen = screen_text(&untimed, &app, 120, 40);
    assert!(
        screen.contains("unique blk") && !screen.contains("alive"),
        "{screen}"
    );
}

/// The `engine` slot (`--gpu-blocks`, `--gpu-memory`) is headed by its name, first, and
/// its cells are the lane's hits at it.
#[test]
fn the_engine_slot_is_headed_engine_and_comes_first() {
    let mut with_engine = slots();
    with_engine[2] = Slot {
        id: litehit_live::snapshot::ENGINE_SLOT_ID,
        capacity: Capacity::Blocks(1000),
    };
    with_engine.rotate_right(1);
    let snap = LiveSnapshot {
        slots: with_engine,
        lanes: vec![lane("engine-0", None, 0)],
        ..LiveSnapshot::default()
    }
    .finished();
    let mut app = App::default();
    app.observe(&snap);
    let screen = screen_text(&snap, &app, 120, 40);
    let header = screen
        .lines()
        .find(|line| line.contains("10 GiB") && line.contains("engine"))
        .unwrap_or_else(|| panic!("no header with the engine slot:\n{screen}"));
    assert!(
        header.find(" engine").unwrap() < header.find("10 GiB").unwrap(),
        "{header}"
    );
    assert!(!header.contains("1000 blk"), "{header}");
}

/// Issue 31 §3: once a row said the engine's cached tokens, an `observed` column shows the
/// engine's own hit rate before the slots (absent otherwise).
#[test]
fn an_observed_column_shows_the_engines_own_rate() {
    let mut lane = lane("engine-0", None, 0);
    let snap = LiveSnapshot {
        slots: slots(),
        lanes: vec![lane.clone()],
        ..LiveSnapshot::default()
    }
    .finished();
    let mut app = App::default();
    app.observe(&snap);
    assert!(!screen_text(&snap, &app, 120, 40).contains("observed"));
    lane.observed = litehit_core::engine::ObservedCounts {
        requests: 900,
        input_tokens: 150_000,
        hit_tokens: 46_500,
    };
    let snap = LiveSnapshot {
        slots: slots(),
        lanes: vec![lane],
        ..LiveSnapshot::default()
    }
    .finished();
    app.observe(&snap);
    let screen = screen_text(&snap, &app, 120, 40);
    let header = screen
        .lines()
        .find(|line| line.contains("observed"))
        .unwrap_or_else(|| panic!("no observed column:\n{screen}"));
    assert!(header.find("observed").unwrap() < header.find("10 GiB").unwrap());
    let row = screen
        .lines()
        .find(|line| line.contains("▶ engine-0"))
        .unwrap_or_else(|| panic!("no row:\n{screen}"));
    assert!(row.contains("31.00%"), "{row}");
}
