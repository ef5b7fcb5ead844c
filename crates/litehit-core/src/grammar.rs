//! One grammar for every value a user types: capacities, byte sizes, block counts and
//! durations.
//!
//! Every entry point reads through here — `query`'s GB arguments and `--capacity-blocks`,
//! `watch --capacity-gb`, the monitor's add-slot dialog, `--block-bytes`,
//! `--kv-bytes-per-token`, `--ttl-seconds` (to the nanosecond), `--interval`,
//! `--window-seconds` — so a spelling that works in one place works in all of them, and is
//! refused with the same words where it
//! does not fit (a block count is no GB argument of `query`, an unlimited size is no TTL).
//!
//! The spellings:
//!
//! | value | spellings |
//! |---|---|
//! | capacity (and tier size) | binary GB: `40`, `0.5`, `40GB`, `40GiB`, `40g`, hex as C's `strtod` (`0x10`); binary TB (1024 GB): `4TB`, `0.5TiB`, `1 tb`; blocks: `1000b`, `1000blk` (as the screens label them), `1000blocks`, `1000 blocks`; unlimited: `inf`, `infinite`, `infinity`, `∞`, any negative number (`-1`), as upstream |
//! | byte size | `1048576`, `128KiB`, `1MiB`, `2GiB`, `1TiB` (binary; a `B` alone is bytes) |
//! | block count | `1000`, `1000b`, `1000blk`, `1000blocks` |
//! | duration | seconds: `30`, `1.5`, `30s`; `250ms`, `10m`, `2h`, `1d` |
//! | time point (`--from`, `--to`) | trace seconds as a duration (`600`, `10m`); absolute `timestamp_ns`: an integer of at least 10^15, or any integer with `ns` |
//! | warm-up (`--exclude-warmup`) | a share `20%` (0 to below 100), or a duration |
//! | lane (`--lane-by`) | `tenant`, `instance,tenant`, a dotted field path (`user`, `body.model`), `instance` |
//!
//! Upstream-compatible spellings are read exactly as upstream reads them: a capacity argument
//! of `query` follows `strtod` (leading white space skipped, nothing after the number, so
//! `"1 "` is refused), and a negative capacity is the unlimited one. Case does not matter in
//! units. This module only reads text; what a value means (bytes → blocks) is the
//! projector's.

use crate::projector::Capacity;

/// The first binary GB whose byte count no longer fits a `u64` (2^34 GB = 16 EiB).
const MAX_TYPED_GB: f64 = (1_u64 << 34) as f64;

/// Why a typed value was refused. Messages are short and say what was expected; the caller
/// names the flag or field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GrammarError {
    /// Nothing was typed.
    #[error("type a size, e.g. 40 (GB) or 1000b (blocks)")]
    Empty,
    /// A block count with a fraction (`1.5b`).
    #[error("{input:?}: expected a whole number of blocks, e.g. 1000b")]
    FractionalBlocks {
        /// The text as typed.
        input: String,
    },
    /// A GB capacity whose bytes do not fit 64 bits.
    #[error("too large (2^34 GB or more); for unlimited, type inf")]
    TooLarge,
    /// A value in a unit this entry point does not take (a block count as `query`'s GB).
    #[error("{input:?}: {why}")]
    WrongKind {
        /// The text as typed.
        input: String,
        /// Why this entry point refuses it, and what to give instead.
        why: &'static str,
    },
    /// Text that is no value of the kind asked for.
    #[error("{input:?}: expected {expected}")]
    Expected {
        /// The text as typed.
        input: String,
        /// What kind of value belongs there, with an example.
        expected: &'static str,
    },
}

type Result<T> = std::result::Result<T, GrammarError>;

/// What a capacity's text says before an entry point decides what it accepts.
#[derive(Debug, Clone, Copy, PartialEq)]
enum CapacityText {
    /// Binary GB as typed; negative (unlimited, as upstream) kept so `query` can echo it.
    Gigabytes(f64),
    Blocks(u64),
    /// An unlimited word, with the GB value `query` echoes for it: `-inf` for a negative
    /// `strtod` infinity (`-inf`, `-Infinity`), which upstream reads as an unlimited slot and
    /// echoes so; else upstream's unlimited `-1` (upstream's `+inf` is undefined behaviour,
    /// and `infinite`, `∞` are LiteHit's words, which upstream's `strtod` check refuses).
    Unlimited(f64),
}

const CAPACITY_EXPECTED: &str = "GB (40, 0.5), TB (4TB) or blocks (1000b)";

/// Reads a capacity after leading white space (as `strtod`): see the module table.
fn capacity_text(input: &str) -> Result<CapacityText> {
    let text = input.trim_start_matches(is_c_space);
    if text.is_empty() {
        return Err(GrammarError::Empty);
    }
    let lower = text.to_ascii_lowercase();
    let unsigned = lower.strip_prefix(['-', '+']).unwrap_or(&lower);
    if is_unlimited_word(unsigned) {
        let strtod_infinity = matches!(unsigned, "inf" | "infinity");
        let echo = if strtod_infinity && lower.starts_with('-') {
            f64::NEG_INFINITY
        } else {
            -1.0
        };
        return Ok(CapacityText::Unlimited(echo));
    }
    if let Some(value) = strtod_number(text) {
        return Ok(CapacityText::Gigabytes(value));
    }
    // Binary TB, before the block suffix `b` could take `4tb`: not negative, not hex.
    if let Some(digits) = ["tib", "tb"]
        .iter()
        .find_map(|suffix| lower.strip_suffix(suffix))
    {
        return match strtod_number(digits.trim_end()) {
            Some(tb) if tb >= 0.0 && !digits.contains('x') => {
                Ok(CapacityText::Gigabytes(tb * 1024.0))
            }
            _ => Err(expected(input, CAPACITY_EXPECTED)),
        };
    }
    if let Some(digits) = ["gib", "gb", "g"]
        .iter()
        .find_map(|suffix| lower.strip_suffix(suffix))
        // Not hexadecimal: in `0x1g` the suffix could not be told from a digit.
        .filter(|digits| !digits.contains('x'))
    {
        return strtod_number(digits.trim_end())
            .map(CapacityText::Gigabytes)
            .ok_or_else(|| expected(input, CAPACITY_EXPECTED));
    }
    if let Some(digits) = lower
        .strip_suffix("blocks")
        .or_else(|| lower.strip_suffix("blk"))
        .or_else(|| lower.strip_suffix('b'))
    {
        let digits = digits.trim_end();
        if let Ok(count) = digits.parse::<u64>() {
            return Ok(CapacityText::Blocks(count));
        }
        if strtod_number(digits).is_some() {
            return Err(GrammarError::FractionalBlocks {
                input: input.to_owned(),
            });
        }
    }
    Err(expected(input, CAPACITY_EXPECTED))
}

/// A capacity slot as `watch --capacity-gb` and the add-slot dialog take it: GB, blocks or
/// unlimited (white space around it is ignored). GB must be below 2^34.
pub fn parse_capacity(input: &str) -> Result<Capacity> {
    match capacity_text(input.trim_end_matches(is_c_space))? {
        CapacityText::Unlimited(_) => Ok(Capacity::Infinite),
        CapacityText::Blocks(count) => Ok(Capacity::Blocks(count)),
        CapacityText::Gigabytes(gb) if gb < 0.0 => Ok(Capacity::Infinite),
        CapacityText::Gigabytes(gb) if gb < MAX_TYPED_GB => Ok(Capacity::Gigabytes(gb)),
        CapacityText::Gigabytes(_) => Err(GrammarError::TooLarge),
    }
}

/// Why a `--tiers` list was refused (the caller names the flag or the defaults-file key).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum TierSpecError {
    /// `=SIZE` without a name: the name is what the table and the metrics show.
    #[error("{entry:?}: a tier name before =")]
    EmptyName {
        /// The list entry as typed.
        entry: String,
    },
    /// Two tiers of one name would be indistinguishable in every output.
    #[error("tier name {name} given twice")]
    DuplicateName {
        /// The repeated name.
        name: String,
    },
    /// The tier's size is no capacity.
    #[error("tier {name}: {error}")]
    Size {
        /// The tier.
        name: String,
        /// Why its size is refused.
        error: GrammarError,
    },
    /// The sizes are in an order the tier mode cannot use.
    #[error(transparent)]
    Order(#[from] crate::projector::tiers::TierOrderError),
}

/// A `--tiers` list, top first (`80GB,512GB,4TB` or `hbm=80GB,dram=512GB`; unnamed tiers are
/// `tier1`, `tier2`, …), read into the one [`TierPlan`](crate::projector::tiers::TierPlan)
/// and checked by it, for the flag and the defaults file alike.
pub fn parse_tier_plan(
    entries: &[String],
    mode: crate::projector::tiers::TierMode,
) -> std::result::Result<crate::projector::tiers::TierPlan, TierSpecError> {
    let mut plan = crate::projector::tiers::TierPlan {
        mode,
        ..crate::projector::tiers::TierPlan::default()
    };
    for (index, entry) in entries.iter().enumerate() {
        let (name, size) = match entry.split_once('=') {
            Some((name, size)) if !name.trim().is_empty() => (name.trim().to_owned(), size),
            Some(_) => {
                return Err(TierSpecError::EmptyName {
                    entry: entry.clone(),
                });
            }
            None => (format!("tier{}", index + 1), entry.as_str()),
        };
        if plan.names.contains(&name) {
            return Err(TierSpecError::DuplicateName { name });
        }
        let capacity = parse_tier_size(size).map_err(|error| TierSpecError::Size {
            name: name.clone(),
            error,
        })?;
        plan.names.push(name);
        plan.sizes_text.push(size.trim().to_owned());
        plan.capacities.push(capacity);
    }
    plan.check()?;
    Ok(plan)
}

/// A cache tier's size (`--tiers`): exactly the spellings of [`parse_capacity`] (one
/// grammar: `80GB`, `4TB`, `0.5TiB`, `1000b`, `inf` mean the same as a tier, a `watch` slot
/// or a `query` GB argument).
pub fn parse_tier_size(input: &str) -> Result<Capacity> {
    parse_capacity(input)
}

/// A `--memory-horizon`: a capacity as the slots take it (GB or blocks), or a byte size
/// (`20TiB`, `512GiB`), which is binary GB to the projector.
pub fn parse_memory_horizon(input: &str) -> Result<Capacity> {
    parse_capacity(input).or_else(|error| {
        parse_byte_size(input)
            .map(|bytes| Capacity::Gigabytes(crate::display::bytes_to_gib(bytes)))
            .map_err(|_| error)
    })
}

/// One GB argument of `query`, read as upstream's `strtod` check reads it (nothing may
/// follow the number, so `"1 "` is refused), plus the spellings [`parse_capacity`] takes
/// for GB and unlimited, so that the output echoes what upstream's would: a negative
/// number is kept as typed, `-inf` and `-infinity` read as −∞ (`strtod`'s value, echoed
/// `-inf` as upstream does), and the other unlimited words (`inf`, `infinity`, `infinite`,
/// `∞`) as `-1`, upstream's unlimited (upstream's `strtod` gives +∞ for `inf`, whose
/// projection is undefined behaviour there, and refuses LiteHit's own words). Every negative
/// value is an unlimited slot. A block count is refused with the flag that takes it.
pub fn parse_capacity_gb(input: &str) -> Result<f64> {
    match capacity_text(input)? {
        CapacityText::Gigabytes(gb) if gb == f64::INFINITY => Err(GrammarError::TooLarge),
        CapacityText::Gigabytes(gb) | CapacityText::Unlimited(gb) => Ok(gb),
        CapacityText::Blocks(_) => Err(GrammarError::WrongKind {
            input: input.to_owned(),
            why: "block counts go in --capacity-blocks",
        }),
    }
}

/// A whole number of blocks: `1000`, `1000b`, `1000blk`, `1000blocks`.
pub fn parse_block_count(input: &str) -> Result<u64> {
    const EXPECTED: &str = "a whole number of blocks, e.g. 1000 or 1000b";
    let lower = input.trim().to_ascii_lowercase();
    let digits = lower
        .strip_suffix("blocks")
        .or_else(|| lower.strip_suffix("blk"))
        .or_else(|| lower.strip_suffix('b'))
        .unwrap_or(&lower)
        .trim_end();
    digits.parse().map_err(|_| expected(input, EXPECTED))
}

/// A whole number of bytes, with an optional binary unit: `1048576`, `128KiB`, `1MiB`,
/// `2GiB`, `1TiB`, `512B`.
pub fn parse_byte_size(input: &str) -> Result<u64> {
    const EXPECTED: &str = "a whole number of bytes, e.g. 1048576 or 1MiB";
    let lower = input.trim().to_ascii_lowercase();
    let (digits, unit) = [
        ("kib", 1_u64 << 10),
        ("mib", 1 << 20),
        ("gib", 1 << 30),
        ("tib", 1 << 40),
        ("b", 1),
    ]
    .iter()
    .find_map(|&(suffix, unit)| lower.strip_suffix(suffix).map(|digits| (digits, unit)))
    .unwrap_or((&lower, 1));
    digits
        .trim_end()
        .parse::<u64>()
        .ok()
        .and_then(|count| count.checked_mul(unit))
        .ok_or_else(|| expected(input, EXPECTED))
}

/// Default of `--max-line-bytes` as typed (help text, defaults file):
/// [`crate::formats::DEFAULT_MAX_LINE_BYTES`] in this grammar.
pub const DEFAULT_MAX_LINE_BYTES_TEXT: &str = "16MiB";

/// A `--max-line-bytes`: a byte size ([`parse_byte_size`]), at least one byte.
pub fn parse_max_line_bytes(input: &str) -> Result<u64> {
    match parse_byte_size(input)? {
        0 => Err(GrammarError::WrongKind {
            input: input.to_owned(),
            why: "a line cap of 0 bytes would refuse every line; give at least 1",
        }),
        bytes => Ok(bytes),
    }
}

/// A duration in seconds: a plain number is seconds (`30`, `1.5`); units `ms`, `s`, `m`,
/// `h`, `d`. Finite and not negative.
pub fn parse_duration_seconds(input: &str) -> Result<f64> {
    const EXPECTED: &str = "a duration, e.g. 30, 1.5s, 250ms, 10m or 2h";
    let lower = input.trim().to_ascii_lowercase();
    let (number, seconds_per_unit) = [
        ("ms", 0.001),
        ("s", 1.0),
        ("m", 60.0),
        ("h", 3600.0),
        ("d", 86_400.0),
    ]
    .iter()
    .find_map(|&(suffix, unit)| lower.strip_suffix(suffix).map(|number| (number, unit)))
    .unwrap_or((&lower, 1.0));
    let number = number.trim_end();
    // Plain decimal numbers only: `inf`, `nan` and hex are no durations.
    if !number
        .bytes()
        .all(|byte| byte.is_ascii_digit() || matches!(byte, b'.' | b'e' | b'E' | b'+' | b'-'))
    {
        return Err(expected(input, EXPECTED));
    }
    match number.parse::<f64>() {
        Ok(value) if value >= 0.0 && (value * seconds_per_unit).is_finite() => {
            Ok(value * seconds_per_unit)
        }
        _ => Err(expected(input, EXPECTED)),
    }
}

/// A duration in whole nanoseconds (a TTL: `--ttl-seconds`): the spellings of
/// [`parse_duration_seconds`] (`600`, `1.5s`, `250ms`, `10m`), rounded to the nearest
/// nanosecond; a plain count of seconds is read exactly. Refused when the nanoseconds do
/// not fit 64 bits (about 584 years).
pub fn parse_duration_ns(input: &str) -> Result<u64> {
    const EXPECTED: &str = "a duration, e.g. 600, 1.5s, 250ms or 10m, below 2^64 ns";
    const NANOS_PER_SECOND: u64 = 1_000_000_000;
    if let Ok(seconds) = input.trim().parse::<u64>() {
        return seconds
            .checked_mul(NANOS_PER_SECOND)
            .ok_or_else(|| expected(input, EXPECTED));
    }
    let ns = (parse_duration_seconds(input).map_err(|_| expected(input, EXPECTED))? * 1e9).round();
    if ns >= u64::MAX as f64 {
        return Err(expected(input, EXPECTED));
    }
    #[allow(
        clippy::cast_possible_truncation,
        clippy::cast_sign_loss,
        reason = "a whole, non-negative number below 2^64"
    )]
    Ok(ns as u64)
}

/// A window width in whole nanoseconds (`query --window`, `litehit.query(window=)`): the
/// spellings of [`parse_duration_seconds`] (`600`, `600s`, `10m`), floored to the
/// nanosecond; at least 1 ns and below 2^63.
pub fn parse_window_ns(input: &str) -> Result<i64> {
    const EXPECTED: &str = "a duration such as 10m or 600s, at least 1 ns";
    let ns = (parse_duration_seconds(input).map_err(|_| expected(input, EXPECTED))? * 1e9).floor();
    if !(1.0..9.2e18).contains(&ns) {
        return Err(expected(input, EXPECTED));
    }
    #[expect(clippy::cast_possible_truncation, reason = "a whole number below 2^63")]
    Ok(ns as i64)
}

/// A plain integer at least this large is an absolute `timestamp_ns` (about 11.6 days after
/// the Unix epoch; trace times are far smaller, epoch nanoseconds far larger).
pub const ABSOLUTE_NS_THRESHOLD: u64 = 1_000_000_000_000_000;

/// A point in trace time as typed (`query`/`mrc --from`, `--to`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum TimePoint {
    /// Seconds since the first request.
    TraceSeconds(f64),
    /// An absolute `timestamp_ns`.
    AbsoluteNs(i64),
}

/// How much of the start to leave out of the accounting (`--exclude-warmup`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Warmup {
    /// A share of the trace's span (first to last request), `0.2` for `20%`.
    Fraction(f64),
    /// A duration from the first request.
    Seconds(f64),
}

/// `--from` / `--to`: trace seconds since the first request (the durations of
/// [`parse_duration_seconds`]: `600`, `600s`, `10m`), or an absolute `timestamp_ns`: a plain
/// integer of at least [`ABSOLUTE_NS_THRESHOLD`], or any integer with `ns`
/// (`1700000000000000000ns`). A plain integer beyond `i64` is refused as too large.
pub fn parse_time_point(input: &str) -> Result<TimePoint> {
    let text = input.trim();
    let absolute = |digits: &str| digits.parse::<i64>().ok().map(TimePoint::AbsoluteNs);
    if let Some(digits) = text.strip_suffix("ns")
        && let Some(point) = absolute(digits.trim_end())
    {
        return Ok(point);
    }
    // A plain integer (digits only) of at least 10^15 is absolute; one beyond i64 is refused.
    if !text.is_empty()
        && text.bytes().all(|byte| byte.is_ascii_digit())
        && text
            .parse::<u64>()
            .ok()
            .is_none_or(|value| value >= ABSOLUTE_NS_THRESHOLD)
    {
        return absolute(text).ok_or(GrammarError::TooLarge);
    }
    parse_duration_seconds(text).map(TimePoint::TraceSeconds)
}

/// `--exclude-warmup`: a share of the span (`20%`, from 0% to below 100%) or a duration
/// (`600s`, `10m`).
pub fn parse_warmup(input: &str) -> Result<Warmup> {
    let text = input.trim();
    if let Some(percent) = text.strip_suffix('%') {
        return match percent.trim_end().parse::<f64>() {
            // 100% would leave only the rows at the last timestamp: no warm-up, a mistake.
            Ok(value) if (0.0..100.0).contains(&value) => Ok(Warmup::Fraction(value / 100.0)),
            _ => Err(GrammarError::Expected {
                input: input.to_owned(),
                expected: "a share from 0% to below 100%, or a duration such as 600s",
            }),
        };
    }
    parse_duration_seconds(text).map(Warmup::Seconds)
}

/// `--lane-by` as typed: `FIELD`, `instance,FIELD`, or `instance` (the default lanes).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LaneBySpec {
    /// The lane keeps the instance (`INSTANCE/VALUE`).
    pub keep_instance: bool,
    /// The field whose value is (part of) the lane: `tenant`, or a field path of an OpenAI
    /// log (`user`, `body.model`); `None`: the instance alone.
    pub field: Option<String>,
}

/// `--lane-by`: `tenant`, `instance,tenant`, a dotted field path (`user`, `body.model`), or
/// `instance`. Which fields a trace has is the caller's to check, once its format is known.
pub fn parse_lane_by(input: &str) -> Result<LaneBySpec> {
    const EXPECTED: &str = "FIELD or instance,FIELD (e.g. tenant, instance,tenant, user)";
    let text = input.trim();
    let (keep_instance, field) = match text.split_once(',') {
        Some((first, field)) if first.trim() == "instance" => (true, field.trim()),
        Some(_) => return Err(expected(input, EXPECTED)),
        None if text == "instance" => {
            return Ok(LaneBySpec {
                keep_instance: true,
                field: None,
            });
        }
        None => (false, text),
    };
    let valid = !field.is_empty()
        && field != "instance"
        && field.split('.').all(|part| {
            !part.is_empty() && !part.contains(|c: char| c.is_whitespace() || c == ',')
        });
    if !valid {
        return Err(expected(input, EXPECTED));
    }
    Ok(LaneBySpec {
        keep_instance,
        field: Some(field.to_owned()),
    })
}

fn expected(input: &str, expected: &'static str) -> GrammarError {
    GrammarError::Expected {
        input: input.to_owned(),
        expected,
    }
}

/// The characters C's `isspace` (and so `strtod`) skips.
fn is_c_space(c: char) -> bool {
    matches!(c, ' ' | '\t' | '\n' | '\x0b' | '\x0c' | '\r')
}

fn is_unlimited_word(lower: &str) -> bool {
    matches!(lower, "inf" | "infinite" | "infinity" | "∞")
}

/// `strtod`'s number, the whole text consumed: decimal (`2.5e1`) or hexadecimal (`0x1.8p3`);
/// NaN and the infinity words are no numbers here (the unlimited words are read before). A
/// number too large for a double overflows to ±∞, as `strtod` returns ±`HUGE_VAL`: `-1e400`
/// is −∞ (an unlimited capacity, as any negative one), `1e400` is +∞ (refused as too large).
fn strtod_number(text: &str) -> Option<f64> {
    let value: f64 = text
        .parse()
        .ok()
        .filter(|_| {
            !text
                .bytes()
                .any(|byte| byte.is_ascii_alphabetic() && !matches!(byte, b'e' | b'E'))
        })
        .or_else(|| parse_hex_float(text))?;
    (!value.is_nan()).then_some(value)
}

/// `strtod`'s hexadecimal form: `[sign] 0x hex-digits [. hex-digits] [p [sign] decimal]`,
/// at least one hex digit, the whole text consumed.
fn parse_hex_float(text: &str) -> Option<f64> {
    let (negative, unsigned) = match text.as_bytes().first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    let digits = unsigned
        .strip_prefix("0x")
        .or_else(|| unsigned.strip_prefix("0X"))?;
    let (mantissa, exponent) = match digits.find(['p', 'P']) {
        Some(at) => (&digits[..at], Some(&digits[at + 1..])),
        None => (digits, None),
    };
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() && fraction.is_empty() {
        return None;
    }
    let mut value = 0.0_f64;
    for digit in whole.chars() {
        value = value * 16.0 + f64::from(digit.to_digit(16)?);
    }
    let mut scale = 1.0 / 16.0;
    for digit in fraction.chars() {
        value += f64::from(digit.to_digit(16)?) * scale;
        scale /= 16.0;
    }
    if let Some(exponent) = exponent {
        value *= 2_f64.powi(exponent.parse().ok()?);
    }
    Some(if negative { -value } else { value })
}

#[cfg(test)]
mod tests {
    #[test]
    fn lane_by_spellings() {
        use super::{LaneBySpec, parse_lane_by};
        let spec = |keep_instance, field: Option<&str>| LaneBySpec {
            keep_instance,
            field: field.map(str::to_owned),
        };
        assert_eq!(parse_lane_by("tenant"), Ok(spec(false, Some("tenant"))));
        assert_eq!(
            parse_lane_by("instance, body.user"),
            Ok(spec(true, Some("body.user")))
        );
        assert_eq!(parse_lane_by("instance"), Ok(spec(true, None)));
        for bad in [
            "",
            "a,b",
            "instance,",
            "body..user",
            "instance,instance",
            "a b",
        ] {
            assert!(parse_lane_by(bad).is_err(), "{bad:?}");
        }
    }

    use super::*;

    #[test]
    fn max_line_bytes_is_a_byte_size_of_at_least_one_and_its_default_reads_as_typed() {
        assert_eq!(
            parse_max_line_bytes(DEFAULT_MAX_LINE_BYTES_TEXT),
            Ok(crate::formats::DEFAULT_MAX_LINE_BYTES)
        );
        assert_eq!(parse_max_line_bytes("64KiB"), Ok(64 << 10));
        assert!(parse_max_line_bytes("0").is_err());
        assert!(parse_max_line_bytes("16MB").is_err());
    }

    #[test]
    fn capacity_inputs() {
        let cases: &[(&str, std::result::Result<Capacity, ()>)] = &[
            ("40", Ok(Capacity::Gigabytes(40.0))),
            ("0.5", Ok(Capacity::Gigabytes(0.5))),
            (" 40GB ", Ok(Capacity::Gigabytes(40.0))),
            ("2g", Ok(Capacity::Gigabytes(2.0))),
            ("1.5GiB", Ok(Capacity::Gigabytes(1.5))),
            ("40 GiB", Ok(Capacity::Gigabytes(40.0))),
            ("0x10", Ok(Capacity::Gigabytes(16.0))),
            ("1000b", Ok(Capacity::Blocks(1000))),
            ("1000B", Ok(Capacity::Blocks(1000))),
            ("7 blocks", Ok(Capacity::Blocks(7))),
            // As the screens label a block slot (issue 26), so a label typed back is the slot.
            ("5000blk", Ok(Capacity::Blocks(5000))),
            ("5000 BLK", Ok(Capacity::Blocks(5000))),
            ("1.5blk", Err(())),
            ("40blocks", Ok(Capacity::Blocks(40))),
            ("inf", Ok(Capacity::Infinite)),
            ("infinite", Ok(Capacity::Infinite)),
            ("Infinity", Ok(Capacity::Infinite)),
            ("∞", Ok(Capacity::Infinite)),
            ("", Err(())),
            ("-1", Ok(Capacity::Infinite)),
            ("-0.5", Ok(Capacity::Infinite)),
            ("-inf", Ok(Capacity::Infinite)),
            ("1.5b", Err(())),
            ("abc", Err(())),
            ("nan", Err(())),
            ("40TB", Ok(Capacity::Gigabytes(40_960.0))),
            ("0.5TiB", Ok(Capacity::Gigabytes(512.0))),
            ("-1TB", Err(())),
            ("17179869183.9", Ok(Capacity::Gigabytes(17_179_869_183.9))),
            ("17179869184", Err(())),
            ("99999999999999999999", Err(())),
        ];
        for (input, expected) in cases {
            assert_eq!(
                parse_capacity(input).map_err(|_| ()),
                *expected,
                "input {input:?}"
            );
        }
        assert_eq!(
            parse_capacity("1.5b"),
            Err(GrammarError::FractionalBlocks {
                input: "1.5b".to_owned()
            })
        );
        assert_eq!(parse_capacity("  "), Err(GrammarError::Empty));
        // Every label the screens show reads back as its slot.
        for capacity in [
            Capacity::Blocks(5000),
            Capacity::Gigabytes(0.5),
            Capacity::Infinite,
        ] {
            let label = crate::display::capacity_label(capacity);
            assert_eq!(parse_capacity(&label), Ok(capacity), "{label}");
        }
        assert_eq!(parse_capacity("1e12"), Err(GrammarError::TooLarge));
    }

    #[test]
    fn tier_sizes_add_binary_terabytes() {
        let cases: &[(&str, std::result::Result<Capacity, ()>)] = &[
            ("80GB", Ok(Capacity::Gigabytes(80.0))),
            ("4TB", Ok(Capacity::Gigabytes(4096.0))),
            (" 0.5 TiB ", Ok(Capacity::Gigabytes(512.0))),
            ("1tb", Ok(Capacity::Gigabytes(1024.0))),
            ("1000b", Ok(Capacity::Blocks(1000))),
            ("inf", Ok(Capacity::Infinite)),
            ("TB", Err(())),
            ("-1TB", Err(())),
            ("0x1tb", Err(())),
            ("1bTB", Err(())),
            ("16777216TB", Err(())),
            ("4T", Err(())),
        ];
        for (input, expected) in cases {
            assert_eq!(
                parse_tier_size(input).map_err(|_| ()),
                *expected,
                "input {input:?}"
            );
        }
        // One grammar: what a tier takes, a capacity takes, and `query`'s GB argument too.
        assert_eq!(parse_capacity("4TB"), Ok(Capacity::Gigabytes(4096.0)));
        assert_eq!(parse_capacity_gb("4TB"), Ok(4096.0));
        assert_eq!(parse_capacity_gb("0.1TiB"), Ok(0.1 * 1024.0));
        assert!(parse_capacity_gb("-1TB").is_err());
    }

    #[test]
    fn capacities_parse_like_strtod_including_hex() {
        for (text, expected) in [
            ("40", 40.0),
            (" 2.5e1", 25.0),
            ("-1", -1.0),
            ("0x10", 16.0),
            ("0X1.8p3", 12.0),
            ("-0x.8", -0.5),
            ("+0xAp-1", 5.0),
        ] {
            assert_eq!(parse_capacity_gb(text).ok(), Some(expected), "{text}");
        }
        for bad in [
            "nan", "0x", "0xg", "0x1p", "0x1.2.3", "12abc", "", "0x1p+", "GB", "1000b", "0x1g",
        ] {
            assert_eq!(parse_capacity_gb(bad).ok(), None, "{bad:?}");
        }
    }

    #[test]
    fn capacity_gb_follows_strtod() {
        assert_eq!(parse_capacity_gb("25").ok(), Some(25.0));
        assert_eq!(parse_capacity_gb(" \t1.5e1").ok(), Some(15.0));
        assert_eq!(parse_capacity_gb("-1").ok(), Some(-1.0));
        // A negative strtod infinity reads as strtod reads it, so `query` echoes `-inf` as
        // upstream does (issue 16).
        for word in ["-inf", "-INF", "-Infinity"] {
            assert_eq!(
                parse_capacity_gb(word).ok(),
                Some(f64::NEG_INFINITY),
                "{word}"
            );
        }
        // A negative number too large for a double is strtod's −∞: unlimited, as upstream
        // reads it (issue 26), in `query` and in every other capacity.
        for overflow in ["-1e400", "-1e999GB", "-0x1p99999"] {
            assert_eq!(
                parse_capacity_gb(overflow).ok(),
                Some(f64::NEG_INFINITY),
                "{overflow}"
            );
            assert_eq!(
                parse_capacity(overflow),
                Ok(Capacity::Infinite),
                "{overflow}"
            );
        }
        for too_large in ["1e400", "1e999", "0x1p99999", "1e400TB"] {
            assert_eq!(
                parse_capacity_gb(too_large),
                Err(GrammarError::TooLarge),
                "{too_large}"
            );
            assert_eq!(
                parse_capacity(too_large),
                Err(GrammarError::TooLarge),
                "{too_large}"
            );
        }
        // +inf (undefined upstream) and LiteHit's own words read as upstream's unlimited -1.
        for unlimited in [
            "inf",
            "INF",
            "+inf",
            "infinity",
            "infinite",
            "∞",
            "-infinite",
            "-∞",
        ] {
            assert_eq!(
                parse_capacity_gb(unlimited).ok(),
                Some(-1.0),
                "read as upstream's -1"
            );
        }
        assert_eq!(parse_capacity_gb("1 ").ok(), None);
        for (text, gb) in [("40GB", 40.0), ("0.5gb", 0.5), ("80GiB", 80.0), ("2g", 2.0)] {
            assert_eq!(parse_capacity_gb(text).ok(), Some(gb), "{text}");
        }
        assert_eq!(parse_capacity_gb("").ok(), None);
        assert_eq!(parse_capacity_gb("nan").ok(), None);
        assert!(matches!(
            parse_capacity_gb("1000b"),
            Err(GrammarError::WrongKind { .. })
        ));
    }

    #[test]
    fn block_counts() {
        for (text, count) in [
            ("1000", 1000),
            ("1000b", 1000),
            ("7blocks", 7),
            ("7blk", 7),
            (" 7 B ", 7),
        ] {
            assert_eq!(parse_block_count(text), Ok(count), "{text}");
        }
        for bad in ["1.5", "-1", "b", "inf", "1e3", "1000GB"] {
            assert!(parse_block_count(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn byte_sizes() {
        for (text, bytes) in [
            ("1048576", 1 << 20),
            ("1MiB", 1 << 20),
            ("128KiB", 128 << 10),
            ("2gib", 2 << 30),
            ("1TiB", 1 << 40),
            ("512B", 512),
            (" 64 MiB ", 64 << 20),
        ] {
            assert_eq!(parse_byte_size(text), Ok(bytes), "{text}");
        }
        for bad in ["1.5MiB", "-1", "", "1MB", "20000000TiB", "0x10"] {
            assert!(parse_byte_size(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn time_points_are_trace_seconds_unless_absolute() {
        assert_eq!(parse_time_point("600"), Ok(TimePoint::TraceSeconds(600.0)));
        assert_eq!(parse_time_point("10m"), Ok(TimePoint::TraceSeconds(600.0)));
        assert_eq!(parse_time_point("1.5s"), Ok(TimePoint::TraceSeconds(1.5)));
        assert_eq!(
            parse_time_point("1700000000000000000"),
            Ok(TimePoint::AbsoluteNs(1_700_000_000_000_000_000))
        );
        assert_eq!(parse_time_point("25ns"), Ok(TimePoint::AbsoluteNs(25)));
        assert_eq!(
            parse_time_point("999999999999999"),
            Ok(TimePoint::TraceSeconds(999_999_999_999_999.0))
        );
        assert!(parse_time_point("10x").is_err());
        assert!(parse_time_point("99999999999999999999").is_err());
    }

    #[test]
    fn warmup_is_a_share_or_a_duration() {
        assert_eq!(parse_warmup("20%"), Ok(Warmup::Fraction(0.2)));
        assert_eq!(parse_warmup("600s"), Ok(Warmup::Seconds(600.0)));
        assert!(parse_warmup("120%").is_err());
        assert!(parse_warmup("-5%").is_err());
    }

    #[test]
    fn durations() {
        for (text, seconds) in [
            ("30", 30.0),
            ("1.5", 1.5),
            ("30s", 30.0),
            ("250ms", 0.25),
            ("10m", 600.0),
            ("2h", 7200.0),
            ("1d", 86_400.0),
            ("0", 0.0),
        ] {
            assert_eq!(parse_duration_seconds(text), Ok(seconds), "{text}");
        }
        for bad in ["-1", "inf", "nan", "", "10 minutes", "0x10", "1e999"] {
            assert!(parse_duration_seconds(bad).is_err(), "{bad}");
        }
        // A TTL takes every duration the README promises (issue 26: `1.5s` was refused).
        assert_eq!(parse_duration_ns("10m"), Ok(600_000_000_000));
        assert_eq!(parse_duration_ns("60"), Ok(60_000_000_000));
        assert_eq!(parse_duration_ns("1.5s"), Ok(1_500_000_000));
        assert_eq!(parse_duration_ns("1.5"), Ok(1_500_000_000));
        assert_eq!(parse_duration_ns("250ms"), Ok(250_000_000));
        assert_eq!(parse_duration_ns("0.1s"), Ok(100_000_000));
        assert_eq!(
            parse_duration_ns("18446744073"),
            Ok(18_446_744_073_000_000_000)
        );
        assert!(parse_duration_ns("18446744074").is_err());
        assert!(parse_duration_ns("1000y").is_err());
        assert!(parse_duration_ns("-1").is_err());
        assert_eq!(parse_window_ns("10m"), Ok(600_000_000_000));
        assert_eq!(parse_window_ns("1.5e-9"), Ok(1));
        assert!(parse_window_ns("0.5e-9").is_err());
        assert!(parse_window_ns("1e10").is_err());
    }
}
