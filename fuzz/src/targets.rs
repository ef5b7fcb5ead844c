//! The bodies of LiteHit's fuzz targets: plain functions over bytes, each driving one reader
//! through its public API exactly as the tool does, and checking what must hold whatever the
//! input. A panic is a bug; so is a broken invariant, which panics too.
//!
//! Two callers share this file: the cargo-fuzz targets in `fuzz/fuzz_targets/` (nightly,
//! libFuzzer) and the stable test `tests/it/formats/fuzz_corpus.rs`, which runs every file of
//! `fuzz/corpus/<target>/` through the function of the same name, so a crash found once stays
//! fixed. [`TARGETS`] lists them by that name.

use litehit_core::config::parse_config_str;
use litehit_core::facts::FactRecord;
use litehit_core::facts::file::{FactsReader, append_fact_row, parse_fact_line};
use litehit_core::formats::{
    LineOutcome, LineParser, ParseOptions, TraceEvent, TraceFormat, detect_format, for_each_line,
};

/// The body of one target: bytes in, a panic on a bug.
pub type Target = fn(&[u8]);

/// Every target: its name (also its corpus folder) and its body.
pub const TARGETS: &[(&str, Target)] = &[
    ("trace_standard", trace_standard),
    ("trace_mooncake", trace_mooncake),
    ("trace_bailian", trace_bailian),
    ("trace_kvcm", trace_kvcm),
    ("trace_lmcache", trace_lmcache),
    ("facts", facts),
    ("config", config),
];

/// Trace block sizes each trace input is read with: the format's native one (`0`) and 16.
const TRACE_BLOCK_SIZES: [u64; 2] = [0, 16];

pub fn trace_standard(data: &[u8]) {
    trace(TraceFormat::Standard, data);
}

pub fn trace_mooncake(data: &[u8]) {
    trace(TraceFormat::Mooncake, data);
}

pub fn trace_bailian(data: &[u8]) {
    trace(TraceFormat::Bailian, data);
}

pub fn trace_kvcm(data: &[u8]) {
    trace(TraceFormat::Kvcm, data);
}

pub fn trace_lmcache(data: &[u8]) {
    trace(TraceFormat::Lmcache, data);
}

/// Every line of `data` through format detection and the `format` reader, as `replay` reads a
/// trace (one reused event, lines numbered from 1). Errors name the line they were given, and
/// an accepted event holds no id with a line break (a facts row could not hold it).
fn trace(format: TraceFormat, data: &[u8]) {
    for trace_block_size_tokens in TRACE_BLOCK_SIZES {
        let mut parser = LineParser::new(
            format,
            ParseOptions {
                trace_block_size_tokens,
                ..ParseOptions::default()
            },
        );
        let mut event = TraceEvent::default();
        let lines = for_each_line(data, |line_number, line| {
            if line_number == 1 {
                // Detection reads the first line of every trace whose format is not given.
                let _ = detect_format(line);
            }
            match parser.parse_line(line, line_number, &mut event) {
                Ok(LineOutcome::Event) => {
                    let has_break = |id: &str| id.contains(['\n', '\r']);
                    assert!(!has_break(&event.trace_id), "{event:?}");
                    assert!(
                        !event.instance_id.as_deref().is_some_and(has_break),
                        "{event:?}"
                    );
                }
                Ok(LineOutcome::Blank | LineOutcome::Ignored) => {}
                Err(error) => assert_eq!(error.line_number, line_number, "{error}"),
            }
            Ok::<(), std::io::Error>(())
        });
        lines.expect("reading from a byte slice cannot fail");
    }
}

/// `data` as a facts file through the streaming reader `query` and `mrc` use, and each of its
/// lines through the row parser. A row the reader accepts is written back the way `replay`
/// writes rows, and that text must read back as the same record.
pub fn facts(data: &[u8]) {
    if let Ok(mut reader) = FactsReader::from_reader(data, "fuzz.csv") {
        let mut record = FactRecord::default();
        let mut written = Vec::new();
        // Each call consumes at least one line, so this ends at the end of `data`.
        while let Ok(true) = reader.next_record(&mut record) {
            written.clear();
            append_fact_row(&mut written, &record.as_row());
            let text = std::str::from_utf8(&written).expect("the writer writes UTF-8");
            let again = parse_fact_line(text.trim_end_matches('\n'))
                .unwrap_or_else(|error| panic!("{text:?} does not read back: {error}"));
            assert_eq!(again, record, "{text:?}");
        }
    }
    for line in data.split(|&byte| byte == b'\n') {
        if let Ok(line) = std::str::from_utf8(line) {
            let _ = parse_fact_line(line);
        }
    }
}

/// `data` as a config file's text through the config reader (which reads no other file).
pub fn config(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let _ = parse_config_str(text);
    }
}
