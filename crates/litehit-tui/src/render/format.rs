//! Number and label formatting shared by the panels (no I/O, no analysis).

use std::time::Duration;

use litehit_core::projector::{BYTES_PER_GIB, Capacity};

/// A rate as a percentage with two decimals (`51.85%`), `-` without a denominator.
pub fn percent(rate: Option<f64>) -> String {
    rate.map_or_else(|| "-".to_owned(), |rate| format!("{:.2}%", rate * 100.0))
}

/// A count with a metric suffix past five digits (`12345`, `1.23M`).
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
pub fn per_second(value: f64, what: &str) -> String {
    const UNITS: [(f64, &str); 3] = [(1e9, "G"), (1e6, "M"), (1e3, "k")];
    for (scale, unit) in UNITS {
        if value >= scale {
            return format!("{:.2}{unit} {what}/s", value / scale);
        }
    }
    format!("{value:.0} {what}/s")
}

/// Bytes in binary units (`512 B`, `1.50 KiB`, `3.00 GiB`).
pub fn bytes(value: u64) -> String {
    match litehit_core::units::scale_bytes(value as f64) {
        (_, "B") => format!("{value} B"),
        (scaled, unit) => format!("{scaled:.2} {unit}"),
    }
}

/// A byte rate in binary units (`12.50 MiB/s`).
pub fn bytes_per_second(value: f64) -> String {
    let (scaled, unit) = litehit_core::units::scale_bytes(value);
    format!("{scaled:.2} {unit}/s")
}

/// A capacity slot's label (`40 GB`, `0.5 GB`, `1000 b`, `∞`).
pub fn capacity(capacity: Capacity) -> String {
    match capacity {
        Capacity::Gigabytes(gb) => format!("{} GB", short_float(gb)),
        Capacity::Blocks(blocks) => format!("{blocks} b"),
        Capacity::Infinite => "∞".to_owned(),
    }
}

/// Binary gigabytes of `blocks` at `block_bytes` per block (for chart axes).
pub fn blocks_to_gb(blocks: u64, block_bytes: u64) -> f64 {
    blocks as f64 * block_bytes as f64 / BYTES_PER_GIB as f64
}

/// A chart axis label in binary GB: `40 GB`, `0.5 GB`, and past 100 000 GB in scientific
/// notation (`1.00e20 GB`), so a huge capacity slot cannot push the labels off the chart.
pub fn axis_gb(value: f64) -> String {
    if value == 0.0 || (1e-3..1e5).contains(&value) {
        format!("{} GB", trim_float(value))
    } else {
        format!("{value:.2e} GB")
    }
}

/// A float as typed when that is short (`0.0001`, `40`, `0.5`), else [`trim_float`]: slot
/// labels must tell apart capacities that differ (`0` and `0.0001` both trim to `0`).
pub fn short_float(value: f64) -> String {
    let shortest = format!("{value}");
    if shortest.len() <= 8 {
        shortest
    } else if value != 0.0 && value.abs() < 1e-3 {
        format!("{value:.2e}") // 1.00e-7: tiny, but not 0
    } else {
        trim_float(value)
    }
}

/// The smallest of 1, 2, 2.5, 5 × 10^k at or above `value` (> 0): a round end for an axis.
pub fn nice_ceiling(value: f64) -> f64 {
    if !(value.is_finite() && value > 0.0) {
        return value;
    }
    let scale = 10_f64.powf(value.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .into_iter()
        .map(|step| step * scale)
        .find(|&end| end >= value * (1.0 - 1e-12))
        .unwrap_or(10.0 * scale)
}

/// A float without trailing zeros (`40`, `0.5`, `1.25`).
pub fn trim_float(value: f64) -> String {
    let text = format!("{value:.3}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    if text.is_empty() {
        "0".to_owned()
    } else {
        text.to_owned()
    }
}

/// A short duration (`850ms`, `12s`, `3m05s`, `2h01m`).
pub fn duration(value: Duration) -> String {
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

/// Cuts `text` to `width` characters, ending with `…` when cut.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats() {
        assert_eq!(percent(Some(28.0 / 54.0)), "51.85%");
        assert_eq!(percent(None), "-");
        assert_eq!(count(99_999), "99999");
        assert_eq!(count(1_234_567), "1.23M");
        assert_eq!(bytes(512), "512 B");
        assert_eq!(bytes(3 << 30), "3.00 GiB");
        assert_eq!(capacity(Capacity::Gigabytes(0.5)), "0.5 GB");
        assert_eq!(capacity(Capacity::Gigabytes(40.0)), "40 GB");
        assert_eq!(capacity(Capacity::Gigabytes(0.0001)), "0.0001 GB");
        assert_eq!(capacity(Capacity::Gigabytes(0.0)), "0 GB");
        assert_eq!(capacity(Capacity::Gigabytes(1.0 / 3.0)), "0.333 GB");
        assert_eq!(axis_gb(40.0), "40 GB");
        assert!((nice_ceiling(170.467) - 200.0).abs() < 1e-9);
        assert!((nice_ceiling(40.0) - 50.0).abs() < 1e-9);
        assert!((nice_ceiling(0.21) - 0.25).abs() < 1e-12);
        assert!((nice_ceiling(100.0) - 100.0).abs() < 1e-9);
        assert_eq!(axis_gb(0.125), "0.125 GB");
        assert_eq!(axis_gb(1e20), "1.00e20 GB");
        assert_eq!(axis_gb(0.0002), "2.00e-4 GB");
        assert_eq!(capacity(Capacity::Gigabytes(1e-7)), "1.00e-7 GB");
        assert_eq!(capacity(Capacity::Blocks(1000)), "1000 b");
        assert_eq!(per_second(1_200_000.0, "blocks"), "1.20M blocks/s");
        assert_eq!(duration(Duration::from_secs(185)), "3m05s");
        assert_eq!(fit("abcdef", 4), "abc…");
        assert_eq!(fit("abc", 4), "abc");
        assert_eq!(fit_middle("abcdefgh", 5), "ab…gh");
        assert_eq!(fit_middle("abcdefgh", 6), "abc…gh");
        assert_eq!(fit_middle("abc", 4), "abc");
        assert!((blocks_to_gb(1024, 1 << 20) - 1.0).abs() < 1e-12);
        assert_eq!(bytes_per_second(1536.0), "1.50 KiB/s");
    }
}
