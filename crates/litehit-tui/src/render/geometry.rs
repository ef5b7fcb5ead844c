//! The geometry line: how a capacity becomes blocks for the lanes on screen — the trace
//! format, tokens and bytes per block, blocks per GiB and the TTL — so a GiB slot's rate can
//! be read (10 GiB of 64 MiB blocks is 160 blocks). Every number goes through the formatter.

use ratatui::Frame;
use ratatui::layout::Rect;
use ratatui::style::{Style, Stylize as _};
use ratatui::text::{Line, Span};

use super::format;
use crate::app::App;
use litehit_core::display::{self, Precision};
use litehit_core::projector::BYTES_PER_GIB;
use litehit_live::LiveSnapshot;
use litehit_live::snapshot::LaneSnapshot;

pub fn render(frame: &mut Frame, area: Rect, snap: &LiveSnapshot, view: &App) {
    let text = text(snap, view);
    let line = Line::from(vec![
        Span::styled(" geometry ", Style::new().bold()),
        Span::raw(fit_parts(&text, usize::from(area.width).saturating_sub(10))),
    ])
    .dim();
    frame.render_widget(line, area);
}

/// The leading ` · `-separated parts of `text` that fit in `width` columns, then `…` if
/// some are left out: a number is shown whole or not at all.
fn fit_parts(text: &str, width: usize) -> String {
    use unicode_width::UnicodeWidthStr as _;
    if text.width() <= width {
        return text.to_owned();
    }
    let mut shown = String::new();
    for part in text.split(" · ") {
        let next = if shown.is_empty() {
            part.to_owned()
        } else {
            format!("{shown} · {part}")
        };
        // Room for the ` …` that says more is left out.
        if next.width() + 2 > width {
            break;
        }
        shown = next;
    }
    if shown.is_empty() {
        format::fit(text, width)
    } else {
        format!("{shown} …")
    }
}

/// One lane's geometry: `16 tok/block · 2.00 MiB/block · 512 blocks/GiB · no TTL`.
pub fn lane_geometry(lane: &LaneSnapshot) -> String {
    let blocks_per_gib = if lane.block_bytes == 0 {
        "-".to_owned()
    } else {
        display::number(
            BYTES_PER_GIB as f64 / lane.block_bytes as f64,
            Precision::Significant(4),
        )
    };
    let ttl = if lane.ttl_ns == 0 {
        "no TTL".to_owned()
    } else if lane.ttl_is_approximate() {
        // Some rows came earlier than the lane's latest: expiry ran on a clamped clock.
        format!(
            "TTL {} (approximate: {} rows out of time order)",
            format::duration(std::time::Duration::from_nanos(lane.ttl_ns)),
            format::count(lane.clamped_timestamps)
        )
    } else {
        format!(
            "TTL {}",
            format::duration(std::time::Duration::from_nanos(lane.ttl_ns))
        )
    };
    // An implausible KV size per token (the core's rule) right after the block bytes, so a
    // narrow screen keeps it.
    let warning =
        litehit_core::config::ImplausibleKvSize::check(lane.block_bytes, lane.block_size_tokens)
            .map(|warning| format!("{} · ", warning.short()))
            .unwrap_or_default();
    format!(
        "{} tok/block · {}/block · {warning}{blocks_per_gib} blocks/GiB · {ttl}",
        format::count(lane.block_size_tokens),
        format::bytes(lane.block_bytes),
    )
}

/// The line's text: the format, then the one geometry every lane shares, or else the
/// selected lane's (named) and how many geometries there are.
fn text(snap: &LiveSnapshot, view: &App) -> String {
    // A converted input (`--format openai`) is named as the user gave it.
    let format = snap.source.converted_from.unwrap_or_else(|| {
        snap.source
            .format
            .map_or("format not known yet", |format| format.name())
    });
    // The model the block bytes came from (`--model`), unless `b` set other bytes since.
    let format = match snap
        .model
        .as_ref()
        .filter(|_| snap.assumed_block_bytes.is_none())
    {
        Some(model) => format!("{format} · {}", model.short()),
        None => format.to_owned(),
    };
    // `--engine vllm|sglang` (the ideal cache, the default, goes unsaid).
    let format = match snap.engine_rule {
        litehit_core::facts::EngineRule::Ideal => format,
        rule => format!("{format} · engine {}", rule.name()),
    };
    let geometries: Vec<String> = snap.lanes.iter().map(lane_geometry).collect();
    let Some(first) = geometries.first() else {
        return format!("{format} · no request yet");
    };
    if geometries.iter().all(|geometry| geometry == first) {
        return format!("{format} · {first}");
    }
    let mut distinct = geometries.clone();
    distinct.sort();
    distinct.dedup();
    let index = view.selected_lane().unwrap_or(0).min(geometries.len() - 1);
    format!(
        "{format} · {}: {} · {} geometries (↑↓)",
        snap.lanes[index].instance_id,
        geometries[index],
        distinct.len()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use litehit_core::formats::TraceFormat;

    fn lane(id: &str, block_bytes: u64, ttl_ns: u64) -> LaneSnapshot {
        LaneSnapshot {
            instance_id: id.to_owned(),
            block_size_tokens: 512,
            block_bytes,
            ttl_ns,
            ..LaneSnapshot::default()
        }
    }

    #[test]
    fn a_narrow_line_drops_whole_parts() {
        let text = "standard · 16 tok/block · 2.00 MiB/block · 511.7 blocks/GiB · no TTL";
        assert_eq!(fit_parts(text, 80), text);
        assert_eq!(
            fit_parts(text, 58),
            "standard · 16 tok/block · 2.00 MiB/block …"
        );
        assert_eq!(fit_parts(text, 5), "stan…");
    }

    #[test]
    fn names_blocks_per_gib_and_the_ttl() {
        assert_eq!(
            lane_geometry(&lane("a", 64 << 20, 0)),
            "512 tok/block · 64.00 MiB/block · 16 blocks/GiB · no TTL"
        );
        assert_eq!(
            lane_geometry(&lane("a", 48 << 20, 90_000_000_000)),
            "512 tok/block · 48.00 MiB/block · 21.33 blocks/GiB · TTL 1m30s"
        );
    }

    /// Issue 26: 1 MiB per 512-token block is 2 KiB per token, no real model's KV size.
    #[test]
    fn warns_of_an_implausible_kv_size_per_token() {
        assert_eq!(
            lane_geometry(&lane("a", 1 << 20, 0)),
            "512 tok/block · 1.00 MiB/block · ⚠ implausible KV size 2 KiB/token · 1024 \
             blocks/GiB · no TTL"
        );
        // 128 KiB per token (an 8B model in bf16): no warning.
        assert!(!lane_geometry(&lane("a", 64 << 20, 0)).contains("implausible"));
    }

    #[test]
    fn one_line_for_a_shared_geometry_else_the_selected_lanes() {
        let mut snap = LiveSnapshot {
            lanes: vec![lane("a", 64 << 20, 0), lane("b", 64 << 20, 0)],
            ..LiveSnapshot::default()
        }
        .finished();
        snap.source.format = Some(TraceFormat::Mooncake);
        let mut view = App::default();
        view.observe(&snap);
        assert_eq!(
            text(&snap, &view),
            "mooncake · 512 tok/block · 64.00 MiB/block · 16 blocks/GiB · no TTL"
        );
        snap.lanes[1].block_bytes = 32 << 20;
        view.observe(&snap);
        view.handle_key(crossterm::event::KeyEvent::from(
            crossterm::event::KeyCode::Down,
        ));
        assert_eq!(
            text(&snap, &view),
            "mooncake · b: 512 tok/block · 32.00 MiB/block · 32 blocks/GiB · no TTL · 2 \
             geometries (↑↓)"
        );
        snap.lanes.clear();
        snap.source.format = None;
        assert_eq!(text(&snap, &view), "format not known yet · no request yet");
    }

    #[test]
    fn names_the_model_and_its_windowed_layers() {
        let mut snap = LiveSnapshot {
            lanes: vec![lane("a", 24_576 * 512, 0)],
            model: Some(
                litehit_core::config::ModelKvSize::resolve("openai/gpt-oss-20b", None).unwrap(),
            ),
            ..LiveSnapshot::default()
        };
        snap.source.format = Some(TraceFormat::Mooncake);
        let view = App::default();
        assert_eq!(
            text(&snap, &view),
            "mooncake · openai/gpt-oss-20b 24 KiB/token ⚠ 12 of 24 layers windowed, not \
             modelled · 512 tok/block · 12.00 MiB/block · 85.33 blocks/GiB · no TTL"
        );
        // Other bytes set live (`b`): the model no longer says the size.
        snap.assumed_block_bytes = Some(1 << 26);
        assert!(!text(&snap, &view).contains("gpt-oss"));
    }

    #[test]
    fn names_an_engine_rule_other_than_the_ideal() {
        let mut snap = LiveSnapshot {
            lanes: vec![lane("a", 64 << 20, 0)],
            ..LiveSnapshot::default()
        };
        snap.source.format = Some(TraceFormat::Mooncake);
        let view = App::default();
        assert!(!text(&snap, &view).contains("engine"));
        snap.engine_rule = litehit_core::facts::EngineRule::Vllm;
        assert!(
            text(&snap, &view).starts_with("mooncake · engine vllm · 512 tok/block"),
            "{}",
            text(&snap, &view)
        );
    }
}
