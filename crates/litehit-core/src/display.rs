//! The one formatter for what people read: bytes in binary units, percents, counts, rates,
//! durations, significant digits, trimmed decimals, axis ticks and cut-to-fit labels. The
//! replay summary, `mrc`'s table and plots, the headless report and every TUI panel format
//! numbers here, so a value reads the same everywhere; each surface picks only a precision.
//! Display only: nothing here decides a hit (bytes become blocks in the projector).

use crate::projector::BYTES_PER_GIB;

/// `bytes` in binary gigabytes (`bytes / 2^30`), for display and chart axes — never for hits
/// (the projector converts bytes to blocks).
#[must_use]
pub fn bytes_to_gib(bytes: u64) -> f64 {
    bytes as f64 / BYTES_PER_GIB as f64
}

/// Binary byte units, smallest first.
const BYTE_UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];

/// `bytes` in the largest binary unit that keeps it at least 1 (below 1 KiB: bytes), as
/// `(value, unit)`. Negative and NaN inputs count as 0.
#[must_use]
pub fn scale_bytes(bytes: f64) -> (f64, &'static str) {
    let mut value = if bytes.is_nan() { 0.0 } else { bytes.max(0.0) };
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < BYTE_UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    (value, BYTE_UNITS[unit])
}

/// How many digits a scaled number shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Precision {
    /// This many decimals, always (`1.50`).
    Decimals(usize),
    /// About this many significant digits, trailing zeros trimmed (`644.5`).
    Significant(i32),
}

/// A byte count in binary units: whole bytes below 1 KiB (`512 B`), else the largest unit
/// that keeps it at least 1, at `precision` (`1.50 KiB`, `644.5 MiB`).
#[must_use]
pub fn bytes(value: u64, precision: Precision) -> String {
    match scale_bytes(value as f64) {
        (_, "B") => format!("{value} B"),
        (scaled, unit) => format!("{} {unit}", number(scaled, precision)),
    }
}

/// A byte rate in binary units, always scaled (`12.50 MiB/s`, `0.00 B/s`).
#[must_use]
pub fn bytes_per_second(value: f64, precision: Precision) -> String {
    let (scaled, unit) = scale_bytes(value);
    format!("{} {unit}/s", number(scaled, precision))
}

/// `value` at `precision`.
#[must_use]
pub fn number(value: f64, precision: Precision) -> String {
    match precision {
        Precision::Decimals(decimals) => format!("{value:.decimals$}"),
        Precision::Significant(digits) => significant(value, digits),
    }
}

/// `numerator / denominator`, `None` for an empty denominator.
#[must_use]
pub fn ratio(numerator: u64, denominator: u64) -> Option<f64> {
    (denominator > 0).then(|| numerator as f64 / denominator as f64)
}

/// A rate as a percentage with `decimals` decimals (`51.85%`), `-` without a denominator.
#[must_use]
pub fn percent(rate: Option<f64>, decimals: usize) -> String {
    rate.map_or_else(
        || "-".to_owned(),
        |rate| format!("{:.decimals$}%", rate * 100.0),
    )
}

/// Before a number that is only a lower bound (`≥41.20%`): a capacity above the memory
/// horizon, or the ∞ column under one. Every surface marks a bound with it.
pub const LOWER_BOUND_MARK: &str = "≥";

/// [`percent`], marked [`LOWER_BOUND_MARK`] when it is only a lower bound (`≥41.20%`); the
/// percent's text stays whole after the mark, and `-` (no rate) is never marked.
#[must_use]
pub fn percent_bound(rate: Option<f64>, decimals: usize, lower_bound: bool) -> String {
    let text = percent(rate, decimals);
    if lower_bound && rate.is_some() {
        format!("{LOWER_BOUND_MARK}{text}")
    } else {
        text
    }
}

/// A count, with a metric suffix past five digits (`12345`, `1.23M`).
#[must_use]
pub fn count(value: u64) -> String {
    const UNITS: [(f64, &str); 4] = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    if value < 100_000 {
        return value.to_string();
    }
    let value = value as f64;
    for (scale, unit) in UNITS {
        if value >= scale {
            return format!("{:.2}{unit}", value / scale);
        }
    }
    format!("{value}")
}

/// A rate per second with a metric suffix (`1.20M blocks/s`).
#[must_use]
pub fn per_second(value: f64, what: &str) -> String {
    const UNITS: [(f64, &str); 3] = [(1e9, "G"), (1e6, "M"), (1e3, "k")];
    for (scale, unit) in UNITS {
        if value >= scale {
            return format!("{:.2}{unit} {what}/s", value / scale);
        }
    }
    format!("{value:.0} {what}/s")
}

/// A short duration (`850ms`, `12s`, `3m05s`, `2h01m`).
#[must_use]
pub fn duration(value: std::time::Duration) -> String {
    let secs = value.as_secs();
    if secs == 0 {
        format!("{}ms", value.subsec_millis())
    } else if secs < 60 {
        format!("{secs}s")
    } else if secs < 3600 {
        format!("{}m{:02}s", secs / 60, secs % 60)
    } else {
        format!("{}h{:02}m", secs / 3600, (secs % 3600) / 60)
    }
}

/// A decimal text without trailing zeros after its point (`40.500` → `40.5`, `2.000` → `2`);
/// text without a point is left as it is.
#[must_use]
pub fn trim_zeros(text: &str) -> &str {
    if text.contains('.') {
        text.trim_end_matches('0').trim_end_matches('.')
    } else {
        text
    }
}

/// `value` with about `digits` significant digits, without exponent or trailing zeros.
#[must_use]
pub fn significant(value: f64, digits: i32) -> String {
    significant_rounded(value, digits, false)
}

/// [`significant`] rounded up at the last digit shown (`7.705078` → `7.706`), for capacities
/// that must not fall short of what they stand for.
#[must_use]
pub fn significant_up(value: f64, digits: i32) -> String {
    significant_rounded(value, digits, true)
}

fn significant_rounded(value: f64, digits: i32, up: bool) -> String {
    if value == 0.0 || !value.is_finite() {
        return format!("{value}");
    }
    #[expect(
        clippy::cast_possible_truncation,
        reason = "log10 of a finite f64 is within ±324"
    )]
    let magnitude = value.abs().log10().floor() as i32;
    let decimals = (digits - 1 - magnitude).max(0);
    let value = if up {
        let scale = 10_f64.powi(decimals);
        // The tolerance keeps a value that is exact at this precision (40, 0.5) as it is.
        (value * scale - 1e-9).ceil() / scale
    } else {
        value
    };
    let decimals = usize::try_from(decimals).unwrap_or(0);
    trim_zeros(&format!("{value:.decimals$}")).to_owned()
}

/// The smallest of 1, 2, 2.5, 5 × 10^k at or above `value` (> 0, within a relative
/// `tolerance` below it): the one rule for round axis ends and tick steps.
#[must_use]
pub fn nice_step(value: f64, tolerance: f64) -> f64 {
    if !(value.is_finite() && value > 0.0) {
        return value;
    }
    let scale = 10_f64.powf(value.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|step| step * scale)
        .find(|&end| end >= value * (1.0 - tolerance))
        .unwrap_or(10.0 * scale)
}

/// `(axis_max, step)` for an axis from 0 to `data_max`: a [`nice_step`] giving about
/// `target_ticks` ticks, and the first tick at or above `data_max`.
#[must_use]
pub fn nice_axis(data_max: f64, target_ticks: u32) -> (f64, f64) {
    let step = nice_step(data_max / f64::from(target_ticks), 0.0);
    ((data_max / step).ceil() * step, step)
}

/// Cuts `text` to `width` characters, ending with `…` when cut.
#[must_use]
pub fn fit(text: &str, width: usize) -> String {
    if text.chars().count() <= width {
        return text.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let mut out: String = text.chars().take(width - 1).collect();
    out.push('…');
    out
}

/// Cuts `text` to `width` characters by dropping its middle (`…`), keeping its start and its
/// end: an error message's end often holds the clue (which field, which size fits).
#[must_use]
pub fn fit_middle(text: &str, width: usize) -> String {
    let length = text.chars().count();
    if length <= width {
        return text.to_owned();
    }
    if width == 0 {
        return String::new();
    }
    let tail = (width - 1) / 2;
    let head = width - 1 - tail;
    let mut out: String = text.chars().take(head).collect();
    out.push('…');
    out.extend(text.chars().skip(length - tail));
    out
}

/// A capacity slot's label in binary units, the one spelling readers see (`40 GiB`,
/// `0.5 GiB`, `1000 blk`, `∞`; `blk`, not `b`, which reads as bytes): the TUI, its exit summary and the tier panel; typed input keeps
/// accepting `40`, `40gb` and `40 GiB` alike.
#[must_use]
pub fn capacity_label(capacity: crate::projector::Capacity) -> String {
    use crate::projector::Capacity;
    match capacity {
        Capacity::Gigabytes(gb) => format!("{} GiB", short_float(gb)),
        Capacity::Blocks(blocks) => format!("{blocks} blk"),
        Capacity::Infinite => "∞".to_owned(),
    }
}

/// A float in its shortest form when that is short (`40`, `0.5`), else without trailing
/// zeros (three decimals at most), or `1.00e-7` for a tiny one (never `0`).
#[must_use]
pub fn short_float(value: f64) -> String {
    let shortest = format!("{value}");
    if shortest.len() <= 8 {
        shortest
    } else if value != 0.0 && value.abs() < 1e-3 {
        format!("{value:.2e}")
    } else {
        trim_float(value)
    }
}

/// A float without trailing zeros (`40`, `0.5`, `1.25`), three decimals at most.
#[must_use]
pub fn trim_float(value: f64) -> String {
    trim_zeros(&format!("{value:.3}")).to_owned()
}

/// Nanoseconds as seconds, exactly: the decimal of `ns / 10^9` without trailing zeros
/// (`1_000_000` → `0.001`, `-1_500_000_000` → `-1.5`, `707_399_800_000` → `707.3998`), so
/// a window of 1 ms has a start and an end that differ, however far into the trace.
#[must_use]
pub fn seconds_of_ns(ns: i128) -> String {
    let sign = if ns < 0 { "-" } else { "" };
    let magnitude = ns.unsigned_abs();
    let (whole, fraction) = (magnitude / 1_000_000_000, magnitude % 1_000_000_000);
    if fraction == 0 {
        format!("{sign}{whole}")
    } else {
        let fraction = format!("{fraction:09}");
        format!("{sign}{whole}.{}", fraction.trim_end_matches('0'))
    }
}

/// `bad line` or `bad lines`, as the count asks.
#[must_use]
pub fn bad_lines_noun(count: u64) -> &'static str {
    if count == 1 { "bad line" } else { "bad lines" }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn seconds_of_ns_is_the_exact_decimal() {
        for (ns, text) in [
            (0, "0"),
            (1_000_000, "0.001"),
            (2_000_000, "0.002"),
            (1, "0.000000001"),
            (707_399_800_000, "707.3998"),
            (600_000_000_000, "600"),
            (-1_500_000_000, "-1.5"),
            (i128::from(i64::MAX), "9223372036.854775807"),
        ] {
            assert_eq!(seconds_of_ns(ns), text, "{ns}");
        }
    }

    #[test]
    fn scales_to_the_largest_unit_at_least_one() {
        assert_eq!(scale_bytes(512.0), (512.0, "B"));
        assert_eq!(scale_bytes(1536.0), (1.5, "KiB"));
        assert_eq!(scale_bytes(3.0 * f64::from(1 << 30)), (3.0, "GiB"));
        assert_eq!(scale_bytes(-5.0), (0.0, "B"));
        assert_eq!(
            scale_bytes(1024.0_f64.powi(7)).1,
            "PiB",
            "largest unit caps"
        );
    }

    #[test]
    fn one_formatter_at_each_precision() {
        assert_eq!(bytes(512, Precision::Decimals(2)), "512 B");
        assert_eq!(bytes(1536, Precision::Decimals(1)), "1.5 KiB");
        assert_eq!(bytes(3 << 30, Precision::Decimals(2)), "3.00 GiB");
        assert_eq!(bytes(675_864_576, Precision::Significant(4)), "644.6 MiB");
        assert_eq!(
            bytes_per_second(1536.0, Precision::Decimals(2)),
            "1.50 KiB/s"
        );
        assert_eq!(percent(Some(28.0 / 54.0), 2), "51.85%");
        assert_eq!(percent(None, 2), "-");
        assert_eq!(percent_bound(Some(0.412), 2, true), "≥41.20%");
        assert_eq!(percent_bound(Some(0.412), 2, false), "41.20%");
        assert_eq!(percent_bound(None, 2, true), "-");
        assert_eq!(ratio(1, 4), Some(0.25));
        assert_eq!(ratio(1, 0), None);
        assert_eq!(count(99_999), "99999");
        assert_eq!(count(1_234_567), "1.23M");
        assert_eq!(per_second(1_200_000.0, "blocks"), "1.20M blocks/s");
        assert_eq!(duration(std::time::Duration::from_secs(185)), "3m05s");
        assert_eq!(trim_zeros("40.500"), "40.5");
        assert_eq!(trim_zeros("2.000"), "2");
        assert_eq!(trim_zeros("100"), "100");
        assert_eq!(significant(7.705_078, 4), "7.705");
        assert_eq!(significant_up(7.705_078, 4), "7.706");
        assert_eq!(significant_up(40.0, 4), "40");
        assert_eq!(nice_axis(331.0, 6), (400.0, 100.0));
        assert_eq!(nice_axis(91.0, 5), (100.0, 20.0));
        assert!((nice_step(170.467, 1e-12) - 200.0).abs() < 1e-9);
        assert!((nice_step(100.0, 1e-12) - 100.0).abs() < 1e-9);
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit_middle("abcdefgh", 5), "ab…gh");
    }
}
