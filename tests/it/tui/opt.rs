//! `watch --policy lru,opt` on screen: the fleet table's OPT column and policy gap at the
//! selected slot, for each instance and the total, OPT's line in the exit summary, and OPT's
//! curve beside LRU's in the hit-curve chart (one lane's, each instance's on the totals row),
//! from hand-built snapshots; none without OPT.

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

/// A lane whose LRU curve rises to its ∞ bound at 1024 blocks and OPT's at 256 (OPT ≥ LRU at
/// every capacity, equal at ∞), sampled as the ingest samples them; `opt` false: no OPT.
fn charted_lane(id: &str, opt: bool) -> LaneSnapshot {
    charted_lane_saturating(id, opt, [1024, 256])
}

/// [`charted_lane`] with LRU reaching its ∞ bound at `saturation_blocks[0]` and OPT at
/// `saturation_blocks[1]`.
fn charted_lane_saturating(id: &str, opt: bool, saturation_blocks: [u64; 2]) -> LaneSnapshot {
    use litehit_core::projector::sampling::log_spaced;
    use litehit_live::snapshot::CurvePoint;
    let infinite_blocks = 800_u64;
    let sampled = |saturation_blocks: u64| -> Vec<CurvePoint> {
        log_spaced(2048, 12)
            .map(|capacity_blocks| CurvePoint {
                capacity_blocks,
                hit_blocks: infinite_blocks
                    .min(capacity_blocks * infinite_blocks / saturation_blocks),
            })
            .collect()
    };
    LaneSnapshot {
        curve: sampled(saturation_blocks[0]),
        opt_curve: opt.then(|| sampled(saturation_blocks[1])),
        saturation_capacity_blocks: saturation_blocks[0],
        ..lane(id, [0, 0], opt.then_some([0, 0]))
    }
}

/// The curve panel alone, drawn into a `width` × `height` test terminal.
fn curve_panel(snap: &LiveSnapshot, app: &App) -> (ratatui::buffer::Buffer, ratatui::layout::Rect) {
    use litehit_tui::render::curve;
    let area = ratatui::layout::Rect::new(0, 0, 110, 26);
    let mut terminal =
        ratatui::Terminal::new(ratatui::backend::TestBackend::new(area.width, area.height))
            .unwrap();
    terminal
        .draw(|frame| curve::render(frame, area, snap, app))
        .unwrap();
    let plot = curve::layout(area, snap, app).expect("a chart").plot.area;
    (terminal.backend().buffer().clone(), plot)
}

fn is_braille(symbol: &str) -> bool {
    symbol
        .chars()
        .any(|c| ('\u{2801}'..='\u{28ff}').contains(&c))
}

/// Per column of the plot: the topmost row holding an OPT dot and the topmost holding LRU's
/// braille (rows grow downwards).
fn topmost_rows(
    buf: &ratatui::buffer::Buffer,
    plot: ratatui::layout::Rect,
) -> Vec<(Option<u16>, Option<u16>)> {
    use litehit_tui::render::curve::OPT_SYMBOL;
    (plot.x..plot.right())
        .map(|x| {
            let first = |wanted: &dyn Fn(&str) -> bool| {
                (plot.y..plot.bottom()).find(|&y| wanted(buf[(x, y)].symbol()))
            };
            (first(&|s| s == OPT_SYMBOL), first(&is_braille))
        })
        .collect()
}

fn buffer_text(buf: &ratatui::buffer::Buffer) -> String {
    let area = buf.area;
    (area.y..area.bottom())
        .map(|y| {
            (area.x..area.right())
                .map(|x| buf[(x, y)].symbol())
                .collect::<String>()
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The hit-curve chart draws OPT's curve beside LRU's: dots in OPT's colour, above LRU's braille
/// where OPT hits more (and never below it), the legend naming both; none without OPT.
#[test]
fn the_chart_draws_the_opt_curve_above_lrus_for_one_lane() {
    use litehit_tui::render::curve::{OPT_COLOR, OPT_SYMBOL};
    let snap = LiveSnapshot {
        lanes: vec![charted_lane("a", true)],
        ..snapshot(true)
    }
    .finished();
    let app = {
        let mut app = App::default();
        app.observe(&snap);
        app
    };
    let (buf, plot) = curve_panel(&snap, &app);
    let text = buffer_text(&buf);
    let dots: Vec<(u16, u16)> = (plot.y..plot.bottom())
        .flat_map(|y| (plot.x..plot.right()).map(move |x| (x, y)))
        .filter(|&(x, y)| buf[(x, y)].symbol() == OPT_SYMBOL)
        .collect();
    assert!(dots.len() >= 10, "OPT's dots missing:\n{text}");
    assert!(
        dots.iter().all(|&(x, y)| buf[(x, y)].fg == OPT_COLOR),
        "OPT's dots in OPT's colour:\n{text}"
    );
    // Where OPT hits more its dots stand clearly above LRU's braille; nowhere are they below
    // it by more than a rounding row.
    let rows = topmost_rows(&buf, plot);
    assert!(
        rows.iter()
            .any(|&pair| matches!(pair, (Some(opt), Some(lru)) if opt + 2 <= lru)),
        "OPT above LRU somewhere:\n{text}"
    );
    assert!(
        rows.iter()
            .all(|&pair| !matches!(pair, (Some(opt), Some(lru)) if opt > lru + 1)),
        "OPT below LRU:\n{text}"
    );
    assert!(
        text.contains("• OPT") && text.contains("⠒ LRU"),
        "the legend names both:\n{text}"
    );

    // Without OPT: no dots, no OPT in the legend.
    let plain = LiveSnapshot {
        lanes: vec![charted_lane("a", false)],
        ..snapshot(false)
    }
    .finished();
    let (buf, _) = curve_panel(&plain, &app);
    let text = buffer_text(&buf);
    assert!(
        !text.contains(OPT_SYMBOL) && !text.contains("OPT"),
        "{text}"
    );
}

/// On the totals row every drawn instance's OPT curve is dotted in that instance's colour.
#[test]
fn the_totals_chart_draws_each_instances_opt_curve_in_its_colour() {
    use litehit_tui::render::curve::{LANE_COLORS, OPT_SYMBOL};
    let snap = LiveSnapshot {
        lanes: vec![
            charted_lane("a", true),
            charted_lane_saturating("b", true, [2048, 64]),
        ],
        ..snapshot(true)
    }
    .finished();
    let mut app = App::default();
    app.observe(&snap);
    app.selected_row = snap.lanes.len(); // the totals row
    assert_eq!(app.selected_lane(), None);
    let (buf, plot) = curve_panel(&snap, &app);
    let text = buffer_text(&buf);
    let dot_colours: Vec<ratatui::style::Color> = (plot.y..plot.bottom())
        .flat_map(|y| (plot.x..plot.right()).map(move |x| (x, y)))
        .filter(|&(x, y)| buf[(x, y)].symbol() == OPT_SYMBOL)
        .map(|(x, y)| buf[(x, y)].fg)
        .collect();
    for colour in &LANE_COLORS[..2] {
        let dots = dot_colours.iter().filter(|&c| c == colour).count();
        assert!(dots >= 5, "{dots} {colour} dots:\n{text}");
    }
    assert!(text.contains("• OPT"), "{text}");
}
