//! Trace formats: bytes → **formats** → `preprocess`.
//!
//! Owns reading every trace format users have (upstream standard JSONL, Mooncake,
//! Qwen-Bailian, KVCM event-publisher logs, `LMCache` lookup logs) into one reusable
//! [`TraceEvent`], straight from byte buffers. It validates each line and reports
//! [`ParseError`]s naming the line and field; it never decides policy (skip vs fail) — that is
//! `engine::policy`'s job — and never looks at LRU state.
//!
//! Map: `lines` (line splitting for offline and live), `open` (gzip/zstd), `detect` (format
//! from the first line), `json` (the single-pass byte scanner), and one reader per format:
//! `standard`, `mooncake`, `bailian`, `kvcm_log`, `lmcache`. No reader allocates per line once
//! its event's buffers are warm, and none uses serde.

/// Which trace dialect a file is in.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TraceFormat {
    /// Upstream standard trace JSONL (`type` get/request/write, `timestamp_ns`, `keys`, `input_len`).
    Standard,
    /// Mooncake FAST'25 (`timestamp` ms, `input_length`, `hash_ids`, prefix-chained dense ids).
    Mooncake,
    /// Qwen-Bailian (`timestamp` s, `input_length`, per-block `hash_ids`; chained on read).
    Bailian,
    /// KVCM event-publisher log (`GetCacheLocation` reads, `*WriteCache` writes).
    Kvcm,
    /// `LMCache` lookup-hash log (hex `chunk_hashes`, already chained).
    Lmcache,
}

/// Whether an event reads the cache (produces a fact) or only writes it (ignored for facts,
/// but still subject to the timestamp-order check).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EventKind {
    /// A lookup: it produces a fact.
    #[default]
    Read,
    /// A store only: it changes the cache, not the facts.
    Write,
}

/// One parsed trace line. Parsers overwrite it in place so its buffers are reused.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TraceEvent {
    /// A lookup (makes a fact) or a store (only checked for time order).
    pub kind: EventKind,
    /// The instance (lane) the event belongs to; `None` for formats without one.
    pub instance_id: Option<String>,
    /// The trace's own request id; empty when the format has none (the engine derives one).
    pub trace_id: String,
    /// The event's time in nanoseconds, converted from the format's own unit.
    pub timestamp_ns: i64,
    /// Block keys at trace granularity (already prefix-chained unless the lane chains them).
    pub keys: Vec<i64>,
    /// Input tokens including the incomplete tail; `0` = unknown (derived from the keys).
    pub input_token_len: i64,
    /// The tenant (the standard format's optional `tenant`, `LMCache`'s `cache_salt` or
    /// `model`); `None` when the line has none. Only `--lane-by` reads it.
    pub tenant: Option<String>,
    /// The serving engine's own count of cached prompt tokens for this request, when the
    /// line says it (the standard format's optional `cached_tokens`, from a request log's
    /// `usage.prompt_tokens_details.cached_tokens`): the observed hits, beside the ideal.
    pub cached_tokens: Option<u64>,
    /// Keys of the blocks the engine filled while generating this request's output, at trace
    /// granularity, continuing the prompt's key chain (the standard format's optional
    /// `output_keys`, written by `--format openai --cache-output`): they enter the cache after
    /// the request, and its hits count only `keys`.
    pub output_keys: Vec<i64>,
}

/// What a row's lane (its facts' `instance_id`) is: `--lane-by`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum LaneBy {
    /// The row's instance (the default).
    #[default]
    Instance,
    /// The row's tenant ([`NO_TENANT`] for a row without one).
    Tenant,
    /// Both, as `INSTANCE/TENANT` (the tenant alone for a format without instances).
    InstanceAndTenant,
}

impl LaneBy {
    /// The lanes of a trace in `format` for `--lane-by [instance,]FIELD` (`field: None`: the
    /// instance alone). The trace formats take FIELD `tenant` (or the format's own name for
    /// it, `cache_salt` in `LMCache`); a field path of an OpenAI log has become the `tenant`
    /// of its standard rows before this is asked.
    ///
    /// # Errors
    /// A format whose rows carry no tenant, or another FIELD, with what to type instead.
    pub fn for_format(
        format: TraceFormat,
        keep_instance: bool,
        field: Option<&str>,
    ) -> std::result::Result<Self, String> {
        let Some(field) = field else {
            return Ok(Self::Instance);
        };
        let Some(own) = format.tenant_field() else {
            return Err(format!(
                "--lane-by {field}: {} rows carry no tenant (the standard format's `tenant`, \
                 LMCache's `cache_salt` or `model`, or a field path of --format openai)",
                format.name()
            ));
        };
        if field != "tenant" && field != own {
            return Err(format!(
                "--lane-by {field}: {} rows name their tenant `tenant`; field paths such as \
                 `{field}` are for --format openai",
                format.name()
            ));
        }
        Ok(if keep_instance {
            Self::InstanceAndTenant
        } else {
            Self::Tenant
        })
    }
}

/// The lane of a row without a tenant under `--lane-by tenant`: such rows share one lane.
pub const NO_TENANT: &str = "-";

/// Between the instance and the tenant in a `--lane-by instance,FIELD` lane.
pub const LANE_SEPARATOR: char = '/';

mod bailian;
mod detect;
mod hash_ids_row;
mod json;
mod kvcm_log;
mod lines;
mod lmcache;
mod mooncake;
mod open;
mod standard;

pub use detect::detect_format;
pub use lines::{
    CompleteLines, DEFAULT_MAX_LINE_BYTES, LineCapReader, LineSplitter, MIN_READ_BYTES, SplitLine,
    TraceLines, for_each_line, is_too_long, line_too_long, line_too_long_reason,
    split_complete_lines,
};
pub use lmcache::chunk_hash_key;
pub use open::{
    Compression, MAX_PEEK_BYTES, PeekedTrace, ZstdFrames, open_trace, peek_first_line, read_magic,
};

use json::Fault;

impl TraceFormat {
    /// Every format, in the order help texts list them.
    pub const ALL: [Self; 5] = [
        Self::Standard,
        Self::Mooncake,
        Self::Bailian,
        Self::Kvcm,
        Self::Lmcache,
    ];

    /// The format a name (as [`TraceFormat::name`] spells it) stands for, if any. `--format`
    /// and a config's `trace_format` read names through this one function.
    #[must_use]
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|format| format.name() == name)
    }

    /// One line on what the format is, for help texts.
    #[must_use]
    pub fn description(self) -> &'static str {
        match self {
            Self::Standard => {
                "Upstream standard trace JSONL (`type` get/request/write, `timestamp_ns`, `keys`, `input_len`)"
            }
            Self::Mooncake => {
                "Mooncake FAST'25 (`timestamp` ms, `input_length`, `hash_ids`, prefix-chained dense ids)"
            }
            Self::Bailian => {
                "Qwen-Bailian (`timestamp` s, `input_length`, per-block `hash_ids`; chained on read)"
            }
            Self::Kvcm => {
                "KVCM event-publisher log (`GetCacheLocation` reads, `*WriteCache` writes)"
            }
            Self::Lmcache => "`LMCache` lookup-hash log (hex `chunk_hashes`, already chained)",
        }
    }

    /// The name `--format` and a config's `trace_format` take (`mooncake`, ...).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Standard => "standard",
            Self::Mooncake => "mooncake",
            Self::Bailian => "bailian",
            Self::Kvcm => "kvcm",
            Self::Lmcache => "lmcache",
        }
    }

    /// A timestamp field the reader converts to nanoseconds: its name, its unit and the
    /// nanoseconds per unit (`None` where the trace's time is in nanoseconds already, or not
    /// a field of its own). Errors about time order say the values as the trace has them.
    #[must_use]
    pub fn timestamp_field(self) -> Option<(&'static str, &'static str, i64)> {
        match self {
            Self::Mooncake => Some(("timestamp", "ms", 1_000_000)),
            Self::Bailian => Some(("timestamp", "s", 1_000_000_000)),
            Self::Standard | Self::Kvcm | Self::Lmcache => None,
        }
    }

    /// The field a format's rows name their tenant in (`--lane-by tenant`), if it has one.
    #[must_use]
    pub fn tenant_field(self) -> Option<&'static str> {
        match self {
            Self::Standard => Some("tenant"),
            Self::Lmcache => Some("cache_salt"),
            Self::Mooncake | Self::Bailian | Self::Kvcm => None,
        }
    }

    /// The block size (tokens per key) a format's public traces use, if it has a fixed one:
    /// Mooncake 512, Qwen-Bailian 16, `LMCache` 256 (its default `chunk_size`).
    pub fn native_block_size_tokens(self) -> Option<u64> {
        match self {
            Self::Mooncake => Some(512),
            Self::Bailian => Some(16),
            Self::Lmcache => Some(256),
            Self::Standard | Self::Kvcm => None,
        }
    }
}

/// What a reader needs to know beyond the line itself.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ParseOptions {
    /// Tokens per trace key. Mooncake and Bailian keep `floor(input_length / this)` keys;
    /// `LMCache` checks each line's `chunk_size` against it. `0` means the format's native size
    /// ([`TraceFormat::native_block_size_tokens`]; for `LMCache` each line's own `chunk_size`).
    /// Standard and KVCM lines ignore it (the engine checks lengths there).
    pub trace_block_size_tokens: u64,
    /// The lane each event gets as its `instance_id` (`--lane-by`).
    pub lane_by: LaneBy,
}

/// What [`LineParser::parse_line`] did with a line.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineOutcome {
    /// The line is an event; the event was overwritten.
    Event,
    /// The line is blank; the event is untouched.
    Blank,
    /// The line is an event that is not a cache access (a KVCM event of another `type`):
    /// skipped, as upstream's converter does, but counted so that a typo in a type shows;
    /// the event is untouched.
    Ignored,
}

/// Why one trace line was rejected. The caller adds the file path.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line_number}: {}{}{message}", TraceIdLabel(self.trace_id.as_deref()), FieldLabel(*.field))]
pub struct ParseError {
    /// 1-based line number in the file.
    pub line_number: u64,
    /// The line's `trace_id`, when it has a readable one (looked up only once the line
    /// failed, so a bad line is named the way the engine names a bad request).
    pub trace_id: Option<String>,
    /// The top-level field at fault, if the fault is in one.
    pub field: Option<&'static str>,
    /// What is wrong, without the line and field (the message adds them).
    pub message: String,
}

/// Renders `field "name": ` before a message, or nothing.
struct FieldLabel(Option<&'static str>);

impl std::fmt::Display for FieldLabel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(field) => write!(f, "field \"{field}\": "),
            None => Ok(()),
        }
    }
}

/// Renders `trace_id[id]: ` before a message (as engine errors do), or nothing.
struct TraceIdLabel<'a>(Option<&'a str>);

impl std::fmt::Display for TraceIdLabel<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.0 {
            Some(trace_id) => write!(f, "trace_id[{trace_id}]: "),
            None => Ok(()),
        }
    }
}

/// The value of a top-level `"trace_id"` string field of a (possibly broken) JSON line, if
/// one can be read: for error messages only.
fn trace_id_of_line(line: &[u8]) -> Option<String> {
    const FIELD: &[u8] = b"\"trace_id\"";
    let start = memchr::memmem::find(line, FIELD)? + FIELD.len();
    let rest = &line[start..];
    let colon = rest.iter().position(|&b| !b" \t".contains(&b))?;
    let rest = rest[colon..].strip_prefix(b":")?;
    let quote = rest.iter().position(|&b| !b" \t".contains(&b))?;
    let value = rest[quote..].strip_prefix(b"\"")?;
    let end = value.iter().position(|&b| b == b'"' || b == b'\\')?;
    (value.get(end) == Some(&b'"'))
        .then(|| String::from_utf8_lossy(&value[..end]).into_owned())
        .filter(|id| !id.is_empty())
}

/// Shorthand for a parse result.
pub type Result<T, E = ParseError> = std::result::Result<T, E>;

/// Parses lines of one format into a reused [`TraceEvent`] (enum dispatch, owns its scratch).
#[derive(Debug, Clone)]
pub struct LineParser {
    options: ParseOptions,
    reader: Reader,
}

#[derive(Debug, Clone)]
enum Reader {
    Standard(standard::StandardReader),
    Mooncake,
    Bailian(bailian::BailianReader),
    Kvcm(kvcm_log::KvcmReader),
    Lmcache,
}

impl LineParser {
    /// A parser for `format`; one per worker thread, since it owns its scratch buffers.
    pub fn new(format: TraceFormat, options: ParseOptions) -> Self {
        let reader = match format {
            TraceFormat::Standard => Reader::Standard(standard::StandardReader::default()),
            TraceFormat::Mooncake => Reader::Mooncake,
            TraceFormat::Bailian => Reader::Bailian(bailian::BailianReader::default()),
            TraceFormat::Kvcm => Reader::Kvcm(kvcm_log::KvcmReader::default()),
            TraceFormat::Lmcache => Reader::Lmcache,
        };
        Self { options, reader }
    }

    /// The format this parser reads, as chosen at construction (detection happens before).
    pub fn format(&self) -> TraceFormat {
        match self.reader {
            Reader::Standard(_) => TraceFormat::Standard,
            Reader::Mooncake => TraceFormat::Mooncake,
            Reader::Bailian(_) => TraceFormat::Bailian,
            Reader::Kvcm(_) => TraceFormat::Kvcm,
            Reader::Lmcache => TraceFormat::Lmcache,
        }
    }

    /// The options it was built with, so a caller can make another parser alike.
    pub fn options(&self) -> ParseOptions {
        self.options
    }

    /// Parses one line (without its `\n`) into `event`, overwriting every field and reusing
    /// its buffers. Blank lines (only spaces, tabs, `\r`, `\n`) give [`LineOutcome::Blank`] and
    /// leave `event` untouched. On error `event` holds partial data.
    pub fn parse_line(
        &mut self,
        line: &[u8],
        line_number: u64,
        event: &mut TraceEvent,
    ) -> Result<LineOutcome> {
        let line = strip_bom(line);
        if is_blank(line) {
            return Ok(LineOutcome::Blank);
        }
        let block = self.options.trace_block_size_tokens;
        let outcome = match &mut self.reader {
            Reader::Standard(reader) => reader.parse(line, event),
            Reader::Mooncake => mooncake::MooncakeReader::parse(
                line,
                line_number,
                block_or_native(block, TraceFormat::Mooncake),
                event,
            ),
            Reader::Bailian(reader) => {
                reader.parse(line, block_or_native(block, TraceFormat::Bailian), event)
            }
            Reader::Kvcm(reader) => reader.parse(line, event),
            Reader::Lmcache => lmcache::LmcacheReader::parse(line, block, event),
        }
        .and_then(|outcome| {
            if outcome == LineOutcome::Event {
                self.check_line_breaks(event)?;
                set_lane(self.options.lane_by, event);
            }
            Ok(outcome)
        });
        outcome.map_err(|fault| {
            let mut message = fault.message;
            // A line of another format (`--format standard` on a Mooncake file): say which.
            if let Some(detected) = detect_format(line)
                && detected != self.format()
            {
                let name = detected.name();
                for part in [
                    " (this line looks like ",
                    name,
                    ": --format ",
                    name,
                    ", or no --format to detect it)",
                ] {
                    message.push_str(part);
                }
            }
            ParseError {
                line_number,
                trace_id: trace_id_of_line(line),
                field: fault.field,
                message,
            }
        })
    }
}

impl LineParser {
    /// Ids go into the facts CSV, one row per line: a line break in one (a JSON `\n`) would
    /// split its row, and no reader, upstream's or this one, could read the file back.
    fn check_line_breaks(&self, event: &TraceEvent) -> std::result::Result<(), Fault> {
        let (trace_id_field, instance_field) = match self.format() {
            TraceFormat::Kvcm => ("id", "source"),
            _ => ("trace_id", "instance_id"),
        };
        let has_break = |text: &str| text.contains(['\n', '\r']);
        if has_break(&event.trace_id) {
            return Err(Fault::field(
                trace_id_field,
                "contains a line break, which a facts row cannot hold",
            ));
        }
        if event.instance_id.as_deref().is_some_and(has_break) {
            return Err(Fault::field(
                instance_field,
                "contains a line break, which a facts row cannot hold",
            ));
        }
        if self.options.lane_by != LaneBy::Instance
            && event.tenant.as_deref().is_some_and(has_break)
        {
            return Err(Fault::field(
                self.format().tenant_field().unwrap_or("tenant"),
                "contains a line break, which a facts row cannot hold",
            ));
        }
        Ok(())
    }
}

/// Makes the event's `instance_id` its lane under `lane_by`, reusing the buffers (so lanes
/// by tenant cost a copy of two short strings per row, no allocation once warm).
fn set_lane(lane_by: LaneBy, event: &mut TraceEvent) {
    let tenant = event.tenant.as_deref().unwrap_or(NO_TENANT);
    match lane_by {
        LaneBy::Instance => {}
        LaneBy::Tenant => {
            let lane = event.instance_id.get_or_insert_with(String::new);
            lane.clear();
            lane.push_str(tenant);
        }
        LaneBy::InstanceAndTenant => match &mut event.instance_id {
            Some(lane) => {
                lane.push(LANE_SEPARATOR);
                lane.push_str(tenant);
            }
            None => event.instance_id = Some(tenant.to_owned()),
        },
    }
}

fn block_or_native(block: u64, format: TraceFormat) -> u64 {
    match (block, format.native_block_size_tokens()) {
        (0, Some(native)) => native,
        _ => block,
    }
}

/// Upstream skips lines that are empty or hold only `" \t\r\n"`.
fn is_blank(line: &[u8]) -> bool {
    line.iter()
        .all(|b| matches!(b, b' ' | b'\t' | b'\r' | b'\n'))
}

/// Resets `event` to a read with no keys, keeping its buffers.
fn reset_event(event: &mut TraceEvent, instance: InstanceSlot) {
    event.kind = EventKind::Read;
    event.trace_id.clear();
    event.keys.clear();
    event.timestamp_ns = 0;
    event.input_token_len = 0;
    event.tenant = None;
    event.cached_tokens = None;
    event.output_keys.clear();
    match instance {
        InstanceSlot::None => event.instance_id = None,
        InstanceSlot::Keep => {
            if let Some(instance_id) = &mut event.instance_id {
                instance_id.clear();
            }
        }
    }
}

/// Whether a format leaves the instance out or writes one (reusing the old allocation).
#[derive(Clone, Copy)]
enum InstanceSlot {
    None,
    Keep,
}

/// Returns the instance buffer of `event`, creating it on first use.
fn instance_buffer(event: &mut TraceEvent) -> &mut String {
    event.instance_id.get_or_insert_with(String::new)
}

/// Keeps the `floor(input_len / block)` complete-block keys of a format whose key list may
/// also hold the partial tail block (`ceil`), checking the count is one of the two.
fn keep_full_blocks(
    keys: &mut Vec<i64>,
    input_len: u64,
    block_size_tokens: u64,
    field: &'static str,
    length_field: &'static str,
) -> Result<(), Fault> {
    if block_size_tokens == 0 {
        return Err(Fault::field(
            field,
            "expected a positive trace block size, found 0",
        ));
    }
    let full = input_len / block_size_tokens;
    let with_tail = input_len.div_ceil(block_size_tokens);
    let found = u64::try_from(keys.len()).unwrap_or(u64::MAX);
    if found != full && found != with_tail {
        let expected = if full == with_tail {
            format!("{full} keys")
        } else {
            format!("{with_tail} keys (or {full} without the partial tail)")
        };
        let fits = crate::preprocess::block_size_hint(input_len, found, block_size_tokens, true);
        return Err(Fault::field(
            field,
            format!(
                "expected {expected} ({length_field} {input_len}, block {block_size_tokens}), found {found}{fits}"
            ),
        ));
    }
    // `full <= found <= usize::MAX`, so the conversion is lossless.
    keys.truncate(usize::try_from(full).unwrap_or(usize::MAX));
    Ok(())
}

/// `line` without a leading UTF-8 byte-order mark: editors on Windows start files with one,
/// and it only ever opens the first line.
#[must_use]
pub fn strip_bom(line: &[u8]) -> &[u8] {
    line.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(line)
}

/// Seconds (an exact JSON integer or a float) to nanoseconds as Python's
/// `int(timestamp * 1_000_000_000)` computes it: exact for integers, one IEEE-754 product
/// truncated toward zero for floats.
fn seconds_to_ns(seconds: json::JsonNumber) -> Option<i64> {
    const NS_PER_S: i64 = 1_000_000_000;
    match seconds {
        json::JsonNumber::Int(int) => int.exact_i64()?.checked_mul(NS_PER_S),
        json::JsonNumber::Float(value) => {
            let product = value * 1e9;
            // `i64::MIN as f64` is exact (-2^63); every finite f64 in [-2^63, 2^63) truncates
            // into range.
            let in_range =
                product.is_finite() && product >= i64::MIN as f64 && product < -(i64::MIN as f64);
            #[expect(clippy::cast_possible_truncation, reason = "range checked just above")]
            in_range.then_some(product.trunc() as i64)
        }
    }
}
