//! The facts CSV: writer/reader round trip, upstream parse rules and messages, and the atomic
//! publish guarantees of `AtomicFactsWriter` and `write_atomically`.

use std::fs;
use std::io::Write;
use std::path::Path;

use litehit_core::facts::file::{
    AtomicFactsWriter, FACTS_FILE_NAME, FACTS_HEADER, FactsError, FactsReader, append_fact_row,
    parse_fact_line, write_atomically,
};
use litehit_core::facts::{FactRecord, FactRow, RequestFact};
use proptest::prelude::*;

fn record(trace_id: &str, instance_id: &str, timestamp_ns: i64, pairs: &[[u64; 2]]) -> FactRecord {
    FactRecord {
        trace_id: trace_id.into(),
        instance_id: instance_id.into(),
        timestamp_ns,
        input_token_len: 900,
        block_size_tokens: 256,
        block_bytes: 4_194_304,
        fact: RequestFact::from_pairs(pairs),
    }
}

fn csv_of(records: &[FactRecord]) -> Vec<u8> {
    let mut bytes = format!("{FACTS_HEADER}\n").into_bytes();
    for r in records {
        append_fact_row(&mut bytes, &r.as_row());
    }
    bytes
}

fn read_all(bytes: &[u8]) -> Result<Vec<FactRecord>, FactsError> {
    let mut reader = FactsReader::from_reader(bytes, "mem.csv")?;
    let mut out = Vec::new();
    let mut record = FactRecord::default();
    while reader.next_record(&mut record)? {
        out.push(record.clone());
    }
    Ok(out)
}

fn error_text(bytes: &[u8]) -> String {
    read_all(bytes).unwrap_err().to_string()
}

#[test]
fn upstream_example_round_trips() {
    let r = record(
        "id,with\"quote",
        "engine-0",
        1_720_000_000_000,
        &[[1, 2], [4, 1]],
    );
    let mut line = Vec::new();
    append_fact_row(&mut line, &r.as_row());
    assert_eq!(
        line,
        b"\"id,with\"\"quote\",engine-0,1720000000000,900,256,4194304,\"[[1,2],[4,1]]\"\n"
    );
    assert_eq!(
        parse_fact_line(std::str::from_utf8(&line[..line.len() - 1]).unwrap()).unwrap(),
        r
    );
}

#[test]
fn real_upstream_row_parses() {
    let r = parse_fact_line(
        "250281fc-60c:main/2,kimi-k3.tp8.checkpoint1024,8300000000,68700,1024,675864576,\"[[1,2],[322,63]]\"",
    )
    .unwrap();
    assert_eq!(r.trace_id, "250281fc-60c:main/2");
    assert_eq!(r.block_bytes, 675_864_576);
    assert_eq!(r.fact.to_pairs(), vec![[1, 2], [322, 63]]);
}

#[test]
fn extremes_and_empty_curves_round_trip() {
    let records = vec![
        record("", "", i64::MIN, &[]),
        record("t", "i", i64::MAX, &[[u64::MAX - 1, 1]]),
        FactRecord {
            input_token_len: u64::MAX,
            block_size_tokens: 1,
            ..record("\"", ",", 0, &[[1, u64::MAX]])
        },
        FactRecord {
            input_token_len: u64::MAX,
            block_size_tokens: u64::MAX / 7,
            block_bytes: u64::MAX,
            ..record("a\rb", "tab\there", -1, &[[1, 1], [3, 2], [9, 4]])
        },
    ];
    // One file each: rows whose input tokens sum past 2^64 - 1 are refused together
    // (`input_tokens_that_would_wrap_a_total_are_refused_naming_the_row`).
    for record in records {
        assert_eq!(
            read_all(&csv_of(std::slice::from_ref(&record))).unwrap(),
            [record]
        );
    }
}

#[test]
fn upstream_asserted_rejects_name_file_and_line() {
    let cases = [
        ("a,b,c", "expected 7 fields, got 3"),
        ("t,i,1,2,3,4,\"[[1]]\"", "hit_curve segment expects ','"),
        (
            "t,i,x,2,3,4,\"[]\"",
            "timestamp_ns is not a valid integer: x",
        ),
    ];
    for (row, reason) in cases {
        let bytes = format!("{FACTS_HEADER}\nok,i,1,2,3,4,\"[]\"\n{row}\n");
        assert_eq!(
            error_text(bytes.as_bytes()),
            format!("mem.csv: facts line 3: {reason}")
        );
    }
}

#[test]
fn line_numbers_count_skipped_empty_lines() {
    let bytes = format!("{FACTS_HEADER}\n\nt,i,1,2,3,4,\"[]\"\n\n\nt,i,1,2,3,0,\"[]\"\n");
    assert_eq!(
        error_text(bytes.as_bytes()),
        "mem.csv: facts line 6: block_bytes/block_size_tokens must be positive"
    );
    let bytes = format!("{FACTS_HEADER}\nt,i,1,2,0,4,\"[]\"");
    assert_eq!(
        error_text(bytes.as_bytes()),
        "mem.csv: facts line 2: block_bytes/block_size_tokens must be positive",
        "a last line without newline is still read"
    );
}

#[test]
fn newline_in_trace_id_is_written_but_cannot_be_read_back() {
    let bytes = csv_of(&[record("a\nb", "i", 1, &[])]);
    assert_eq!(
        error_text(&bytes),
        "mem.csv: facts line 2: unterminated quoted field"
    );
}

#[test]
fn header_rules() {
    assert_eq!(error_text(b""), "mem.csv: facts file is empty");
    // A CRLF line end is a line end (a spreadsheet's export); a `\r` elsewhere is not.
    let crlf = format!("{FACTS_HEADER}\r\n");
    assert_eq!(read_all(crlf.as_bytes()).unwrap(), []);
    let inner = format!("{FACTS_HEADER}\r \n");
    assert!(
        error_text(inner.as_bytes())
            .starts_with("mem.csv: facts file header mismatch: expected \"trace_id,"),
        "a header with more after its \\r mismatches"
    );
    let text = error_text(b"trace_id,instance_id\n");
    assert!(text.ends_with("found \"trace_id,instance_id\""), "{text}");
    // A trace passed where facts belong: say what to do.
    let text = error_text(b"{\"timestamp\": 0, \"hash_ids\": [1]}\n");
    assert!(
        text.ends_with("(this looks like a trace: `litehit replay` it first to get its facts)"),
        "{text}"
    );
    assert!(
        read_all(FACTS_HEADER.as_bytes()).unwrap().is_empty(),
        "header only, no newline"
    );
}

#[test]
fn open_errors_name_the_path() {
    let error = FactsReader::open(Path::new("/nonexistent/facts.csv")).unwrap_err();
    assert_eq!(
        error.to_string(),
        "failed to open facts file: /nonexistent/facts.csv"
    );
}

proptest! {
    #[test]
    fn arbitrary_rows_round_trip(
        trace_id in "[^\n]{0,12}",
        instance_id in "[a-z0-9,\"\r .-]{0,12}",
        timestamp_ns in any::<i64>(),
        input_token_len in any::<u64>(),
        block_size_tokens in 1..u64::MAX,
        block_bytes in 1..u64::MAX,
        pairs in proptest::collection::vec(any::<[u64; 2]>(), 0..6),
    ) {
        // A curve never covers more blocks than the request has: the reader refuses that.
        let full_blocks = input_token_len / block_size_tokens;
        let pairs: Vec<[u64; 2]> = pairs
            .iter()
            .map(|&[start, run]| [start, run % (full_blocks / 6 + 1)])
            .collect();
        let r = FactRecord {
            trace_id,
            instance_id,
            timestamp_ns,
            input_token_len,
            block_size_tokens,
            block_bytes,
            fact: RequestFact::from_pairs(&pairs),
        };
        prop_assert_eq!(read_all(&csv_of(std::slice::from_ref(&r))).unwrap(), vec![r]);
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let mut input = format!("{FACTS_HEADER}\n").into_bytes();
        input.extend_from_slice(&bytes);
        let _ = read_all(&input);
    }
}

fn row_bytes(trace_id: &str) -> Vec<u8> {
    let fact = RequestFact::from_pairs(&[[1, 2]]);
    let mut out = Vec::new();
    append_fact_row(
        &mut out,
        &FactRow {
            trace_id,
            instance_id: "i",
            timestamp_ns: 1,
            input_token_len: 8,
            block_size_tokens: 4,
            block_bytes: 16,
            observed_cached_tokens: None,
            fact: &fact,
        },
    );
    out
}

#[test]
fn atomic_writer_publishes_on_commit_only() {
    let dir = tempfile::tempdir().unwrap();
    let output_dir = dir.path().join("nested/out");
    let mut writer = AtomicFactsWriter::create_file(&output_dir.join(FACTS_FILE_NAME)).unwrap();
    let temp = writer.temp_path().to_path_buf();
    assert_eq!(temp.parent(), Some(output_dir.as_path()));
    assert!(
        litehit_core::facts::file::is_temp_path(&temp),
        "{}",
        temp.display()
    );
    let mut rows = row_bytes("a");
    rows.extend(row_bytes("b"));
    writer.write_bytes(&rows).unwrap();
    writer.write_bytes(&row_bytes("c")).unwrap();
    assert_eq!(writer.rows_written(), 3);
    assert!(
        !output_dir.join(FACTS_FILE_NAME).exists(),
        "nothing published before commit"
    );
    let published = writer.commit().unwrap();
    assert_eq!(published, output_dir.join(FACTS_FILE_NAME));
    assert!(!temp.exists());
    let records = read_all(&fs::read(&published).unwrap()).unwrap();
    let ids: Vec<_> = records.iter().map(|r| r.trace_id.as_str()).collect();
    assert_eq!(ids, ["a", "b", "c"]);
}

#[test]
fn dropped_writer_publishes_nothing_and_keeps_previous_file() {
    let dir = tempfile::tempdir().unwrap();
    let final_path = dir.path().join(FACTS_FILE_NAME);
    fs::write(&final_path, "previous run\n").unwrap();
    // A file named as the old temp files were is someone's file: never written or removed.
    fs::write(dir.path().join("litehit_facts.csv.tmp"), "stale garbage").unwrap();
    {
        let mut writer = AtomicFactsWriter::create_file(&dir.path().join(FACTS_FILE_NAME)).unwrap();
        writer.write_bytes(&row_bytes("x")).unwrap();
        let temp = fs::read_to_string(writer.temp_path()).unwrap();
        assert!(
            !temp.contains("stale"),
            "stale temp was truncated: {temp:?}"
        );
        // Dropped without commit, as on any error path.
    }
    assert_eq!(fs::read_to_string(&final_path).unwrap(), "previous run\n");
    assert_eq!(
        fs::read_to_string(dir.path().join("litehit_facts.csv.tmp")).unwrap(),
        "stale garbage"
    );

    let writer = AtomicFactsWriter::create_file(&dir.path().join(FACTS_FILE_NAME)).unwrap();
    writer.commit().unwrap();
    assert_eq!(
        fs::read_to_string(&final_path).unwrap(),
        format!("{FACTS_HEADER}\n")
    );
}

#[test]
fn write_atomically_publishes_only_on_success() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("snapshot.jsonl");
    fs::write(&path, "old").unwrap();
    let failed: Result<(), color_eyre::Report> = write_atomically(&path, |w| {
        w.write_all(b"partial")?;
        Err(color_eyre::eyre::eyre!("boom"))
    });
    assert_eq!(failed.unwrap_err().to_string(), "boom");
    assert_eq!(fs::read_to_string(&path).unwrap(), "old");
    assert!(!dir.path().join("snapshot.jsonl.tmp").exists());

    let value: Result<u32, color_eyre::Report> = write_atomically(&path, |w| {
        w.write_all(b"new")?;
        Ok(7)
    });
    assert_eq!(value.unwrap(), 7);
    assert_eq!(fs::read_to_string(&path).unwrap(), "new");
    assert!(!dir.path().join("snapshot.jsonl.tmp").exists());
}

#[test]
fn create_fails_cleanly_when_directory_cannot_be_made() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("a-file");
    fs::write(&file, "").unwrap();
    let error =
        AtomicFactsWriter::create_file(&file.join("sub").join(FACTS_FILE_NAME)).unwrap_err();
    assert!(
        error.to_string().starts_with("failed to create "),
        "{error}"
    );
}

/// Issue #27 (Low): a facts CSV a spreadsheet exported starts with a UTF-8 byte-order mark;
/// `query` (JSONL and text summary) and `mrc` read it as the same file without the mark, and
/// `replay` reads a trace that starts with one.
#[test]
fn a_byte_order_mark_is_read_by_query_mrc_and_replay() {
    use crate::common::cli_bin::{ok, run_in};
    let dir = tempfile::tempdir().unwrap();
    let rows =
        format!("{FACTS_HEADER}\n1,a,5,32,16,1048576,\"[]\"\n2,a,6,32,16,1048576,\"[[0,2]]\"\n");
    let plain = dir.path().join("plain.csv");
    let marked = dir.path().join("marked.csv");
    fs::write(&plain, &rows).unwrap();
    fs::write(&marked, format!("\u{feff}{rows}")).unwrap();
    for args in [
        &["query", "FACTS", "-", "1"][..],
        &["query", "FACTS", "-", "1", "--summary-only"],
        &["query", "FACTS", "-", "1", "--window", "1s", "--csv"],
        &["mrc", "FACTS"],
        &["mrc", "FACTS", "--json"],
    ] {
        let with = |path: &Path| -> Vec<String> {
            args.iter()
                .map(|arg| {
                    if *arg == "FACTS" {
                        path.display().to_string()
                    } else {
                        (*arg).to_owned()
                    }
                })
                .collect()
        };
        let expected = ok(run_in(None, with(&plain))).stdout;
        assert!(expected.contains('1'), "{expected}");
        assert_eq!(ok(run_in(None, with(&marked))).stdout, expected, "{args:?}");
    }
    let trace = dir.path().join("trace.jsonl");
    fs::write(
        &trace,
        "\u{feff}{\"type\":\"get\",\"instance_id\":\"a\",\"trace_id\":\"t1\",\"timestamp_ns\":1,\"keys\":[1,2],\"input_len\":32}\n\
         {\"type\":\"get\",\"instance_id\":\"a\",\"trace_id\":\"t2\",\"timestamp_ns\":2,\"keys\":[1,2],\"input_len\":32}\n",
    )
    .unwrap();
    let out = dir.path().join("out");
    ok(run_in(
        None,
        [
            "replay",
            trace.to_str().unwrap(),
            "--out",
            out.to_str().unwrap(),
            "--block-size",
            "16",
            "--quiet",
        ],
    ));
    let facts = fs::read_to_string(out.join(FACTS_FILE_NAME)).unwrap();
    assert!(facts.contains("\nt1,a,1,32,16,"), "{facts}");
    assert!(facts.contains("\nt2,a,2,32,16,"), "{facts}");
}

/// Issue #27 (Low): a spreadsheet's "CSV UTF-8" export has a byte-order mark *and* CRLF
/// line ends; `query` (JSONL, `--window`) and `mrc` read it as the plain file (the header
/// was refused as `...hit_curve\r`). A really bad row keeps upstream's message.
#[test]
fn a_spreadsheet_export_with_bom_and_crlf_is_read_by_query_and_mrc() {
    use crate::common::cli_bin::{assert_mentions, failed, ok, run_in};
    let dir = tempfile::tempdir().unwrap();
    let rows =
        format!("{FACTS_HEADER}\n1,a,5,32,16,1048576,\"[]\"\n2,a,6,32,16,1048576,\"[[0,2]]\"\n");
    let plain = dir.path().join("plain.csv");
    let exported = dir.path().join("exported.csv");
    fs::write(&plain, &rows).unwrap();
    fs::write(&exported, format!("\u{feff}{}", rows.replace('\n', "\r\n"))).unwrap();
    for args in [
        &["query", "FACTS", "-", "1"][..],
        &["query", "FACTS", "-", "1", "--window", "1s", "--csv"],
        &["mrc", "FACTS", "--json"],
    ] {
        let with = |path: &Path| -> Vec<String> {
            args.iter()
                .map(|arg| {
                    if *arg == "FACTS" {
                        path.display().to_string()
                    } else {
                        (*arg).to_owned()
                    }
                })
                .collect()
        };
        let expected = ok(run_in(None, with(&plain))).stdout;
        assert!(expected.contains('1'), "{expected}");
        assert_eq!(
            ok(run_in(None, with(&exported))).stdout,
            expected,
            "{args:?}"
        );
    }
    // The reader alone: same records, and a bad row's message is upstream's, CRLF or not.
    let crlf = rows.replace('\n', "\r\n");
    assert_eq!(
        read_all(format!("\u{feff}{crlf}").as_bytes()).unwrap(),
        read_all(rows.as_bytes()).unwrap()
    );
    let bad = |end: &str| {
        let text = format!("{FACTS_HEADER}{end}1,a,x,32,16,1048576,\"[]\"{end}");
        read_all(text.as_bytes()).unwrap_err().to_string()
    };
    assert_eq!(bad("\r\n"), bad("\n"));
    let broken = dir.path().join("broken.csv");
    fs::write(
        &broken,
        format!("\u{feff}{FACTS_HEADER}\r\n1,a,x,32,16,1048576,\"[]\"\r\n"),
    )
    .unwrap();
    let run = run_in(None, ["query", broken.to_str().unwrap(), "-", "1"]);
    assert_mentions(
        failed(&run),
        &["broken.csv: facts line 2: timestamp_ns is not a valid integer: x"],
    );
}

/// Issue #27 (Medium 4): two rows of 2^63 input tokens and one of 1,024 summed to 1,024
/// (wrapped), so `query` gave a hit rate of 12.0 and `mrc` 1200.00 %. Every sum over facts
/// rows follows one rule: the rows read (all the files together) are refused at the row that
/// would take their input tokens past 2^64 − 1, naming file, line and field; summaries,
/// windows, tiers, the pool and `mrc` all read through it.
#[test]
fn input_tokens_that_would_wrap_a_total_are_refused_naming_the_row() {
    use crate::common::cli_bin::{assert_mentions, failed, ok, run_in};
    let dir = tempfile::tempdir().unwrap();
    let half = 1_u64 << 63;
    let rows = |instance: &str, first_trace: u64| {
        format!(
            "{first_trace},{instance},1000000000,{half},16,1048576,\"[]\"\n\
             {},{instance},2000000000,{half},16,1048576,\"[]\"\n\
             {},{instance},3000000000,1024,16,1048576,\"[[0,48]]\"\n",
            first_trace + 1,
            first_trace + 2
        )
    };
    let facts = dir.path().join("wrap.csv");
    fs::write(&facts, format!("{FACTS_HEADER}\n{}", rows("a", 1))).unwrap();
    let facts = facts.to_str().unwrap();
    for args in [
        &["query", facts, "-", "1"][..],
        &["query", facts, "-", "1", "--summary-only"],
        &["query", facts, "-", "1", "--window", "1s"],
        &["query", facts, "-", "1", "--window", "1s", "--csv"],
        &["query", facts, "-", "1", "--tiers", "1,2"],
        &["mrc", facts],
        &["mrc", facts, "--json"],
    ] {
        let run = run_in(None, args);
        assert_mentions(
            failed(&run),
            &[
                &format!("{facts}: facts line 3: input_token_len {half}"),
                &format!("({half} before this row) past 2^64 - 1"),
            ],
        );
        assert_eq!(run.stdout, "", "{args:?}: printed before the error");
    }
    // Across files: each file fits alone, their rows together do not (a pool lane and the
    // summaries sum over every file).
    let first = dir.path().join("first.csv");
    let second = dir.path().join("second.csv");
    fs::write(
        &first,
        format!("{FACTS_HEADER}\n1,a,1,{half},16,1048576,\"[]\"\n"),
    )
    .unwrap();
    fs::write(
        &second,
        format!("{FACTS_HEADER}\n2,b,2,{half},16,1048576,\"[]\"\n"),
    )
    .unwrap();
    let (first, second) = (first.to_str().unwrap(), second.to_str().unwrap());
    for args in [
        &["query", first, "-", "1", "--shard", second][..],
        &[
            "query", first, "-", "1", "--shard", second, "--window", "1s",
        ],
        &["mrc", first, second],
    ] {
        assert_mentions(
            failed(&run_in(None, args)),
            &[&format!("{second}: facts line 2: input_token_len {half}")],
        );
    }
    // Up to 2^64 - 1 in all is read, exactly.
    let most = dir.path().join("most.csv");
    fs::write(
        &most,
        format!(
            "{FACTS_HEADER}\n1,a,1,{half},16,1048576,\"[]\"\n2,a,2,{},16,1048576,\"[]\"\n",
            half - 1
        ),
    )
    .unwrap();
    let run = ok(run_in(
        None,
        ["query", most.to_str().unwrap(), "-", "1", "--summary-only"],
    ));
    assert!(
        run.stdout
            .contains(&format!("\"total_input_tokens\":{}", u64::MAX)),
        "{}",
        run.stdout
    );
}
