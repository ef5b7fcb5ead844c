//! The panels' choices of precision over the one formatter (`litehit_core::display`), and
//! the labels only the screen has (slot names, chart axes). No I/O, no analysis.

use litehit_core::display::{self, Precision};
use litehit_core::projector::{BYTES_PER_GIB, Capacity};
use litehit_live::LiveSnapshot;

pub use litehit_core::display::{count, duration, fit, fit_middle, per_second};

/// The leading `parts` that fit, whole, in a line of `width` columns of which `used` are
/// taken, each after its separator (`first` before the first part, `between` before the
/// others): a number is shown entire or not at all, never cut.
pub fn whole_parts(
    parts: impl IntoIterator<Item = String>,
    (first, between): (&str, &str),
    used: usize,
    width: usize,
) -> Vec<String> {
    let mut used = used;
    let mut shown = Vec::new();
    for part in parts {
        let piece = format!("{}{part}", if shown.is_empty() { first } else { between });
        let piece_width = display_width(&piece);
        if used + piece_width > width {
            break;
        }
        used += piece_width;
        shown.push(piece);
    }
    shown
}

/// Columns `text` takes on a terminal.
pub fn display_width(text: &str) -> usize {
    use unicode_width::UnicodeWidthStr as _;
    text.width()
}

/// A rate as a percentage with two decimals (`51.85%`), `-` without a denominator.
pub fn percent(rate: Option<f64>) -> String {
    display::percent(rate, 2)
}

/// A difference of two rates in percentage points, signed (`+12.34 pp`), `-` without one.
pub fn points(difference: Option<f64>) -> String {
    difference.map_or_else(|| "-".to_owned(), |d| format!("{:+.2} pp", d * 100.0))
}

/// [`percent`], marked `≥` when it is only a lower bound (a capacity above the memory
/// horizon: `≥41.20%`): the core's one spelling ([`display::percent_bound`]).
pub fn percent_bound(rate: Option<f64>, lower_bound: bool) -> String {
    display::percent_bound(rate, 2, lower_bound)
}

pub use display::LOWER_BOUND_MARK;

/// [`percent`], marked `≤` when it is only an upper bound (the tiers' miss share under a
/// memory horizon: `≤90.33%`).
pub fn percent_upper_bound(rate: Option<f64>, upper_bound: bool) -> String {
    let text = percent(rate);
    if upper_bound && rate.is_some() {
        format!("{UPPER_BOUND_MARK}{text}")
    } else {
        text
    }
}

/// Before a number that is only an upper bound.
pub const UPPER_BOUND_MARK: &str = "≤";

/// [`count`], marked `≥` when it is only a lower bound (the unique blocks under a memory
/// horizon: forgotten keys leave the count).
pub fn count_bound(value: u64, lower_bound: bool) -> String {
    mark_lower_bound(count(value), lower_bound)
}

/// [`bytes`], marked `≥` when it is only a lower bound.
pub fn bytes_bound(value: u64, lower_bound: bool) -> String {
    mark_lower_bound(bytes(value), lower_bound)
}

fn mark_lower_bound(text: String, lower_bound: bool) -> String {
    if lower_bound {
        format!("{LOWER_BOUND_MARK}{text}")
    } else {
        text
    }
}

/// Bytes in binary units (`512 B`, `1.50 KiB`, `3.00 GiB`).
pub fn bytes(value: u64) -> String {
    display::bytes(value, Precision::Decimals(2))
}

/// A byte rate in binary units (`12.50 MiB/s`).
pub fn bytes_per_second(value: f64) -> String {
    display::bytes_per_second(value, Precision::Decimals(2))
}

/// Cuts `text` to `width` terminal columns by dropping its middle (`…`), measuring each
/// character by its display width (a CJK character takes two): ids keep their start and the
/// end that tells them apart.
pub fn fit_middle_columns(text: &str, width: usize) -> String {
    use unicode_width::{UnicodeWidthChar as _, UnicodeWidthStr as _};
    if text.width() <= width {
        return text.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let room = width - 1; // the `…`
    let tail_room = room / 2;
    let head_room = room - tail_room;
    let mut head = String::new();
    let mut used = 0;
    for ch in text.chars() {
        let w = ch.width().unwrap_or(0);
        if used + w > head_room {
            break;
        }
        head.push(ch);
        used += w;
    }
    // The end gets what the head left over, so a wide character at the cut wastes no column.
    let mut tail_room = room - used;
    let mut tail: Vec<char> = Vec::new();
    for ch in text.chars().rev() {
        let w = ch.width().unwrap_or(0);
        if w > tail_room {
            break;
        }
        tail.push(ch);
        tail_room -= w;
    }
    head.push('…');
    head.extend(tail.into_iter().rev());
    head
}

/// A capacity slot's label in binary units (`40 GiB`, `1000 blk`, `∞`): the core's one spelling.
pub fn capacity(capacity: Capacity) -> String {
    display::capacity_label(capacity)
}

/// A slot's label: its name (`engine`) if it has one, else [`capacity`].
pub fn slot(slot: &litehit_live::snapshot::Slot) -> String {
    slot.name()
        .map_or_else(|| capacity(slot.capacity), str::to_owned)
}

/// The snapshot's memory horizon as it was given, in binary bytes (`20.00 TiB`, the
/// snapshot's `memory_horizon_bytes`) or blocks (`50000000 blk`); `None` without one.
pub fn memory_horizon(snap: &LiveSnapshot) -> Option<String> {
    match (snap.memory_horizon?, snap.memory_horizon_bytes) {
        (_, Some(horizon_bytes)) => Some(bytes(horizon_bytes)),
        (Capacity::Blocks(blocks), None) => Some(format!("{blocks} blk")),
        (Capacity::Gigabytes(_), None) => Some(bytes(u64::MAX)),
        (Capacity::Infinite, None) => None,
    }
}

/// The ∞ column's header and legend: `∞`, or under a memory horizon `∞ H=20.00 TiB` /
/// `∞ H=50000000 blk`: still the unlimited cache, but of a monitor that forgets keys deeper
/// than H, so its hits (marked `≥`) are a lower bound of the unlimited ones. (Not `≤ H`,
/// which read as "a cache of up to H".)
pub fn infinite_label(snap: &LiveSnapshot) -> String {
    match memory_horizon(snap) {
        Some(horizon) => format!("∞ H={horizon}"),
        None => "∞".to_owned(),
    }
}

/// Binary gigabytes of `blocks` at `block_bytes` per block (for chart axes).
pub fn blocks_to_gb(blocks: u64, block_bytes: u64) -> f64 {
    blocks as f64 * block_bytes as f64 / BYTES_PER_GIB as f64
}

/// A chart axis label in binary gigabytes: `40 GiB`, `0.5 GiB`, and past 100 000 GiB in
/// scientific notation (`1.00e20 GiB`), so a huge capacity slot cannot push the labels off the chart.
pub fn axis_gb(value: f64) -> String {
    if value == 0.0 || (1e-3..1e5).contains(&value) {
        format!("{} GiB", trim_float(value))
    } else {
        format!("{value:.2e} GiB")
    }
}

pub use display::short_float;

/// The smallest of 1, 2, 2.5, 5 × 10^k at or above `value` (> 0): a round end for an axis.
pub fn nice_ceiling(value: f64) -> f64 {
    display::nice_step(value, 1e-12)
}

pub use display::trim_float;

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn formats() {
        assert_eq!(percent(Some(28.0 / 54.0)), "51.85%");
        assert_eq!(percent(None), "-");
        assert_eq!(percent_bound(Some(0.412), true), "≥41.20%");
        assert_eq!(percent_upper_bound(Some(0.9033), true), "≤90.33%");
        assert_eq!(percent_upper_bound(Some(0.9033), false), "90.33%");
        assert_eq!(percent_upper_bound(None, true), "-");
        assert_eq!(percent_bound(Some(0.412), false), "41.20%");
        assert_eq!(percent_bound(None, true), "-");
        assert_eq!(count(99_999), "99999");
        assert_eq!(count(1_234_567), "1.23M");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(3 << 30), "3.00 GiB");
        assert_eq!(capacity(Capacity::Gigabytes(0.5)), "0.5 GiB");
        assert_eq!(capacity(Capacity::Gigabytes(40.0)), "40 GiB");
        assert_eq!(capacity(Capacity::Gigabytes(0.0001)), "0.0001 GiB");
        assert_eq!(capacity(Capacity::Gigabytes(0.0)), "0 GiB");
        assert_eq!(capacity(Capacity::Gigabytes(1.0 / 3.0)), "0.333 GiB");
        assert_eq!(axis_gb(40.0), "40 GiB");
        assert!((nice_ceiling(170.467) - 200.0).abs() < 1e-9);
        assert!((nice_ceiling(40.0) - 50.0).abs() < 1e-9);
        assert!((nice_ceiling(0.21) - 0.25).abs() < 1e-12);
        assert!((nice_ceiling(100.0) - 100.0).abs() < 1e-9);
        assert_eq!(axis_gb(0.125), "0.125 GiB");
        assert_eq!(axis_gb(1e20), "1.00e20 GiB");
        assert_eq!(axis_gb(0.0002), "2.00e-4 GiB");
        assert_eq!(capacity(Capacity::Gigabytes(1e-7)), "1.00e-7 GiB");
        assert_eq!(capacity(Capacity::Blocks(1000)), "1000 blk");
        let horizon = |memory_horizon| {
            LiveSnapshot {
                memory_horizon,
                ..LiveSnapshot::default()
            }
            .finished()
        };
        assert_eq!(infinite_label(&horizon(None)), "∞");
        assert_eq!(
            infinite_label(&horizon(Some(Capacity::Gigabytes(20.0 * 1024.0)))),
            "∞ H=20.00 TiB"
        );
        assert_eq!(
            infinite_label(&horizon(Some(Capacity::Blocks(50_000_000)))),
            "∞ H=50000000 blk"
        );
        assert_eq!(per_second(1_200_000.0, "blocks"), "1.20M blocks/s");
        assert_eq!(duration(Duration::from_secs(185)), "3m05s");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abc", 4), "abc");
        assert_eq!(fit_middle("abcdefgh", 5), "ab…gh");
        assert_eq!(fit_middle("abcdefgh", 6), "abc…gh");
        assert_eq!(fit_middle("abc", 4), "abc");
        assert_eq!(fit_middle_columns("abcdefgh", 5), "ab…gh");
        // Wide characters count two columns: the result is at most `width` columns wide.
        assert_eq!(fit_middle_columns("推理节点-上海-0042", 12), "推理节…-0042");
        assert_eq!(
            fit_middle_columns("推理节点-上海-0042", 40),
            "推理节点-上海-0042"
        );
        assert_eq!(fit_middle_columns("推理", 1), "…");
        assert!((blocks_to_gb(1024, 1 << 20) - 1.0).abs() < 1e-12);
        assert_eq!(bytes_per_second(1536.0), "1.50 KiB/s");
    }
}
