//! Binary-unit scaling shared by every printer (replay summary, `mrc` table, live gauges), so
//! "how many KiB is this" is answered in one place. Each caller picks its own precision.

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

/// `bad line` or `bad lines`, as the count asks.
#[must_use]
pub fn bad_lines_noun(count: u64) -> &'static str {
    if count == 1 { "bad line" } else { "bad lines" }
}

#[cfg(test)]
mod tests {
    use super::*;

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
}
