//! Arguments of `litehit query` (upstream `lite_hit_facts_query_main`, REFERENCE §8.1).

use std::path::PathBuf;

/// Capacity query over a facts file: per-request hit blocks and rates plus summaries.
#[derive(Debug, Clone, PartialEq, clap::Args)]
#[command(
    after_long_help = "Output (JSON Lines, byte-compatible with upstream's facts query): one line per \
facts row with \"hit_blocks\" and \"hit_rates\" per slot, then one summary line per instance_id \
(byte order), then the overall summary. With --capacity-blocks, each summary also has a \
\"capacity_blocks\" array after \"capacity_gb\", and every per-slot array lists the GB slots first, \
then the block slots.\n\nShards: the rows of FACTS and then of each --shard file are written in \
that order, and the summaries add up all files, as if they were one facts file.\n\nExample:\n  \
litehit query out/litehit_facts.csv query.jsonl 0 25 50 100 -1"
)]
pub struct QueryArgs {
    /// Facts CSV (`litehit_facts.csv`, from `litehit replay` or upstream `lite_hit_main`;
    /// `.gz` / `.zst` are read too, `-` is standard input, a directory means the
    /// `litehit_facts.csv` in it)
    #[arg(value_name = "FACTS")]
    pub facts: PathBuf,

    /// Output JSONL file, published atomically (temp file + rename; a FIFO or device is
    /// written in place); `-` (or `/dev/stdout`) writes to stdout
    #[arg(value_name = "OUT")]
    pub out: PathBuf,

    /// Cache capacities in binary GB (GB × 2^30 bytes, floored to whole blocks of each row's
    /// `block_bytes`): 40, 0.5 or 40GB. Order is kept; duplicates and 0 are allowed; a
    /// negative value (e.g. -1) or inf means unlimited capacity
    #[arg(value_name = "CAPACITY_GB", allow_negative_numbers = true)]
    pub capacity_gb: Vec<String>,

    /// Extra capacity slots in blocks (independent of `block_bytes`), after the GB slots;
    /// comma-separated or repeated
    #[arg(long, value_name = "N,...", value_delimiter = ',', value_parser = parse_block_count)]
    pub capacity_blocks: Vec<u64>,

    /// Write only the summary lines (per instance and overall), not one line per row
    #[arg(long)]
    pub summary_only: bool,

    /// Another facts file of the same run (e.g. one per replay shard); repeatable. Its rows
    /// follow those of FACTS and the summaries aggregate every file
    #[arg(long = "shard", value_name = "PATH")]
    pub shards: Vec<PathBuf>,
}

impl QueryArgs {
    /// FACTS followed by every `--shard`, in order; a directory stands for the
    /// `litehit_facts.csv` in it.
    #[must_use]
    pub fn facts_paths(&self) -> Vec<PathBuf> {
        std::iter::once(&self.facts)
            .chain(&self.shards)
            .map(|path| litehit_core::facts::file::facts_input_path(path))
            .collect()
    }

    /// Whether OUT is `-` (stdout).
    #[must_use]
    pub fn writes_to_stdout(&self) -> bool {
        self.out.as_os_str() == "-"
    }
}

/// One `--capacity-blocks` value: a whole number of blocks, `1000` or (as `watch` spells
/// it) `1000b`.
fn parse_block_count(text: &str) -> Result<u64, String> {
    let digits = text.strip_suffix(['b', 'B']).unwrap_or(text);
    digits
        .parse()
        .map_err(|_| "expected a whole number of blocks, e.g. 1000 or 1000b".to_owned())
}

/// Parses one `CAPACITY_GB` argument like upstream's `strtod` check: leading white space is
/// skipped and the rest must be one number (hexadecimal floats such as `0x10` or `0x1.8p3`
/// too). A negative capacity (`-1`) is the unlimited one, as upstream. Beyond upstream, the
/// spellings `watch` takes are accepted too: a `GB` / `GiB` / `G` suffix (binary GB either
/// way) and `inf` / `infinity` / `∞` for unlimited (read as `-1`, so the output stays what
/// upstream writes; a literal infinity would be a number no JSON parser reads). NaN is
/// rejected.
#[must_use]
pub fn parse_capacity_gb(arg: &str) -> Option<f64> {
    let text = arg.trim_start_matches([' ', '\t', '\n', '\x0b', '\x0c', '\r']);
    if ["inf", "infinity", "∞", "-inf", "-infinity", "-∞"]
        .iter()
        .any(|unlimited| text.eq_ignore_ascii_case(unlimited))
    {
        return Some(-1.0);
    }
    let number = |text: &str| -> Option<f64> {
        let value: f64 = text.parse().ok().or_else(|| parse_hex_float(text))?;
        value.is_finite().then_some(value)
    };
    number(text).or_else(|| {
        let lower = text.to_ascii_lowercase();
        let digits = ["gib", "gb", "g"]
            .iter()
            .find_map(|suffix| lower.strip_suffix(suffix))?;
        // Not hexadecimal: in `0x1g` the suffix could not be told from a digit.
        (!digits.contains('x')).then(|| number(digits)).flatten()
    })
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
    use super::*;
    use clap::Parser;

    #[derive(Debug, Parser)]
    struct Wrapper {
        #[command(flatten)]
        args: QueryArgs,
    }

    fn parse(argv: &[&str]) -> QueryArgs {
        Wrapper::try_parse_from(std::iter::once("query").chain(argv.iter().copied()))
            .unwrap()
            .args
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
            assert_eq!(parse_capacity_gb(text), Some(expected), "{text}");
        }
        for bad in [
            "nan", "0x", "0xg", "0x1p", "0x1.2.3", "12abc", "", "0x1p+", "GB", "1e999", "1000b",
            "0x1g",
        ] {
            assert_eq!(parse_capacity_gb(bad), None, "{bad:?}");
        }
    }

    #[test]
    fn negative_capacities_are_positional_values() {
        let args = parse(&[
            "f.csv",
            "-",
            "0",
            "-1",
            "2.5",
            "-0.5",
            "1e3",
            "--summary-only",
        ]);
        assert_eq!(args.capacity_gb, ["0", "-1", "2.5", "-0.5", "1e3"]);
        assert!(args.summary_only);
        assert!(args.writes_to_stdout());
    }

    #[test]
    fn block_slots_take_the_b_suffix() {
        assert_eq!(
            parse(&["f.csv", "-", "--capacity-blocks", "1000b,7"]).capacity_blocks,
            [1000, 7]
        );
        let error = Wrapper::try_parse_from(["query", "f.csv", "-", "--capacity-blocks", "1.5"])
            .unwrap_err()
            .to_string();
        assert!(error.contains("a whole number of blocks"), "{error}");
    }

    #[test]
    fn capacity_gb_follows_strtod() {
        assert_eq!(parse_capacity_gb("25"), Some(25.0));
        assert_eq!(parse_capacity_gb(" \t1.5e1"), Some(15.0));
        assert_eq!(parse_capacity_gb("-1"), Some(-1.0));
        for unlimited in ["inf", "INF", "infinity", "∞", "-inf"] {
            assert_eq!(
                parse_capacity_gb(unlimited),
                Some(-1.0),
                "read as upstream's -1"
            );
        }
        assert_eq!(parse_capacity_gb("1 "), None);
        for (text, gb) in [("40GB", 40.0), ("0.5gb", 0.5), ("80GiB", 80.0), ("2g", 2.0)] {
            assert_eq!(parse_capacity_gb(text), Some(gb), "{text}");
        }
        assert_eq!(parse_capacity_gb(""), None);
        assert_eq!(parse_capacity_gb("nan"), None);
    }

    #[test]
    fn block_slots_and_shards() {
        let args = parse(&[
            "f.csv",
            "o.jsonl",
            "--capacity-blocks",
            "1,2",
            "--capacity-blocks=3",
            "--shard",
            "g.csv",
            "--shard",
            "h.csv",
            "-1",
        ]);
        assert_eq!(args.capacity_blocks, [1, 2, 3]);
        assert_eq!(args.capacity_gb, ["-1"]);
        assert_eq!(
            args.facts_paths(),
            [
                PathBuf::from("f.csv"),
                PathBuf::from("g.csv"),
                PathBuf::from("h.csv")
            ]
        );
        assert!(!args.writes_to_stdout());
    }
}
