//! `watch --policy lru,opt` on screen: the fleet table's OPT column and policy gap at the
//! selected slot, for each instance and the total, and OPT's line in the exit summary, from a
//! hand-built snapshot; none without OPT.

use litehit_core::projector::Capacity;
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::{LaneSnapshot, Slot};
use litehit_tui::app::App;

use crate::tui::render::screen_text;

fn lane(id: &str, lru: [u64; 2], opt: Option<[u64; 2]>) -> LaneSnapshot {
    LaneSnapshot {
        instance_id: id.to_owned(),
        block_size_tokens: 10,
        block_bytes: 1 << 20,
        requests: 100,
        input_tokens: 10_000,
        request_blocks: 1_000,
        unique_blocks: 300,
        slot_hit_blocks: lru.to_vec(),
        opt_slot_hit_blocks: opt.map(|opt| opt.to_vec()),
        infinite_hit_blocks: 800,
        ..LaneSnapshot::default()
    }
}

fn snapshot(opt: bool) -> LiveSnapshot {
    LiveSnapshot {
        slots: vec![
            Slot {
                id: 1,
                capacity: Capacity::Blocks(100),
            },
            Slot {
                id: 2,
                capacity: Capacity::Blocks(400),
            },
        ],
        lanes: vec![
            lane("a", [150, 600], opt.then_some([321, 700])),
            lane("b", [50, 500], opt.then_some([99, 650])),
        ],
        ..LiveSnapshot::default()
    }
    .finished()
}

#[test]
fn the_fleet_table_shows_opt_and_the_policy_gap_at_the_selected_slot() {
    let snap = snapshot(true);
    let mut app = App::default();
    app.observe(&snap);
    let screen = screen_text(&snap, &app, 160, 40);
    assert!(
        screen.contains("OPT 100 blk") && screen.contains("OPT−LRU"),
        "{screen}"
    );
    // Slot 0 selected: a 15.00% LRU, 32.10% OPT, +17.10 pp; b 5.00%, 9.90%, +4.90 pp; the
    // total 10.00%, 21.00%, +11.00 pp.
    for (row, cells) in [
        ("▶ a", ["15.00%", "32.10%", "+17.10 pp"]),
        ("  b", ["5.00%", "9.90%", "+4.90 pp"]),
        ("total", ["10.00%", "21.00%", "+11.00 pp"]),
    ] {
        let line = screen
            .lines()
            .find(|line| line.contains(row))
            .unwrap_or_else(|| panic!("no row {row}:\n{screen}"));
        for cell in cells {
            assert!(line.contains(cell), "{cell} in {line:?}\n{screen}");
        }
    }
    // The summary printed after the screen closes has OPT's total line.
    let summary = litehit_live::headless::summary_text(&snap);
    assert!(
        summary.contains("OPT (Belady's optimal policy), total: 21.00%, 67.50%, 80.00%"),
        "{summary}"
    );
    // Without OPT there is no such column, nor line.
    let plain = snapshot(false);
    let screen = screen_text(&plain, &app, 160, 40);
    assert!(!screen.contains("OPT"), "{screen}");
    assert!(!litehit_live::headless::summary_text(&plain).contains("OPT"));
}
