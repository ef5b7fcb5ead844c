//! The TUI's shared pool row (`watch --pool`): selectable with ↓ and the mouse, and then the
//! curve chart shows the pool, its slots at N × each slot (the fleet's total capacity).

use crossterm::event::{KeyCode, KeyEvent, KeyModifiers, MouseButton, MouseEvent, MouseEventKind};
use litehit_core::projector::Capacity;
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::{CurvePoint, LaneSnapshot, Slot};
use litehit_tui::app::App;
use litehit_tui::render::curve::{capacity_x, layout};
use ratatui::layout::Rect;

const BLOCK_BYTES: u64 = 1 << 20;

fn lane(id: &str, requests: u64, hits: u64, curve_end: u64) -> LaneSnapshot {
    LaneSnapshot {
        instance_id: id.to_owned(),
        block_size_tokens: 16,
        block_bytes: BLOCK_BYTES,
        requests,
        input_tokens: 3200,
        slot_hit_blocks: vec![hits],
        infinite_hit_blocks: hits * 2,
        curve: vec![
            CurvePoint {
                capacity_blocks: 1,
                hit_blocks: hits / 4,
            },
            CurvePoint {
                capacity_blocks: curve_end,
                hit_blocks: hits * 2,
            },
        ],
        ..LaneSnapshot::default()
    }
}

fn screen(snap: &LiveSnapshot, app: &App) -> Vec<String> {
    crate::tui::render::screen_rows(snap, app, 120, 40)
}

fn key(code: KeyCode) -> KeyEvent {
    KeyEvent::new(code, KeyModifiers::NONE)
}

#[test]
fn the_pool_row_is_selectable_and_the_curve_then_shows_the_pool_at_n_times_c() {
    let snap = LiveSnapshot {
        slots: vec![Slot {
            id: 1,
            capacity: Capacity::Blocks(64),
        }],
        lanes: vec![
            lane("engine-a", 10, 20, 500),
            lane("engine-b", 30, 30, 700),
            lane("engine-c", 30, 30, 600),
        ],
        pool: Some(lane("pool", 70, 100, 1800)),
        ..LiveSnapshot::default()
    }
    .finished();
    let mut app = App::default();
    app.observe(&snap);
    let area = Rect::new(0, 0, 60, 20);
    let instance_slot_x = layout(area, &snap, &app).unwrap().slots[0].1;
    assert!((instance_slot_x - capacity_x((64 * BLOCK_BYTES) as f64)).abs() < 1e-9);
    // Three lanes, the totals, then the pool: ↓ four times reaches it, and it stays there.
    for _ in 0..6 {
        app.handle_key(key(KeyCode::Down));
    }
    assert!(app.selected_pool());
    assert_eq!(app.selected_lane(), None);
    let chart = layout(area, &snap, &app).unwrap();
    assert_eq!(chart.lanes, vec![0], "one curve: the pool's");
    assert!(
        (chart.slots[0].1 - capacity_x((3 * 64 * BLOCK_BYTES) as f64)).abs() < 1e-9,
        "the slot at N × C"
    );
    let lines = screen(&snap, &app);
    assert!(
        lines.iter().any(|line| line.contains("pool (shared")),
        "{}",
        lines.join("\n")
    );
    app.handle_key(key(KeyCode::Up));
    assert!(!app.selected_pool(), "↑: the totals row");
    assert_eq!(app.selected_lane(), None);

    // A click on the pool's row selects it.
    let lines = screen(&snap, &app);
    let pool_y = lines
        .iter()
        .position(|line| line.contains("pool (shared)"))
        .unwrap();
    let pool_x = lines[pool_y].find("pool (shared)").unwrap();
    app.handle_key(key(KeyCode::Home));
    assert_eq!(app.selected_lane(), Some(0));
    app.handle_mouse(MouseEvent {
        kind: MouseEventKind::Down(MouseButton::Left),
        column: u16::try_from(pool_x).unwrap(),
        row: u16::try_from(pool_y).unwrap(),
        modifiers: KeyModifiers::NONE,
    });
    assert!(app.selected_pool());

    // Without a pool lane the last row is the totals.
    let plain = LiveSnapshot {
        pool: None,
        ..snap.clone()
    }
    .finished();
    let mut app = App::default();
    app.observe(&plain);
    for _ in 0..6 {
        app.handle_key(key(KeyCode::Down));
    }
    assert!(!app.selected_pool());
    assert_eq!(app.selected_lane(), None);
}
