//! `litehit query` through `commands::query::run`: upstream byte compatibility (the derived
//! offline-runner output and the real zishano excerpt), extensions and failure behaviour.

use crate::common::shared_file;
use std::fs;
use std::path::{Path, PathBuf};

use litehit::cli::query_args::QueryArgs;
use litehit::commands::query::run;

fn fixture(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/fixtures/facts")
        .join(name)
}

fn args(facts: &Path, out: &Path, capacity_gb: &[&str]) -> QueryArgs {
    QueryArgs {
        facts: facts.to_path_buf(),
        out: out.to_path_buf(),
        capacity_gb: capacity_gb.iter().map(|s| (*s).to_owned()).collect(),
        capacity_blocks: Vec::new(),
        summary_only: false,
        shards: Vec::new(),
        ..QueryArgs::default()
    }
}

/// `2 * 16384 / 2^30` GB, spelled so that `strtod` gives the exact double.
const TWO_BLOCKS_GB: &str = "3.0517578125e-05";

const OFFLINE_RUNNER_OUTPUT: &str = concat!(
    r#"{"trace_id":"r1","instance_id":"i1","timestamp_ns":1000,"input_token_len":13,"hit_blocks":[0,0],"hit_rates":[0,0]}"#,
    "\n",
    r#"{"trace_id":"r2","instance_id":"i1","timestamp_ns":2000,"input_token_len":12,"hit_blocks":[2,2],"hit_rates":[0.666667,0.666667]}"#,
    "\n",
    r#"{"trace_id":"r3","instance_id":"i1","timestamp_ns":3000,"input_token_len":13,"hit_blocks":[2,3],"hit_rates":[0.615385,0.923077]}"#,
    "\n",
    r#"{"summary":true,"instance_id":"i1","requests":3,"total_input_tokens":38,"capacity_gb":[3.05176e-05,-1],"total_hit_blocks":[4,5],"total_hit_tokens":[16,20],"hit_rates":[0.421053,0.526316]}"#,
    "\n",
    r#"{"summary":true,"requests":3,"total_input_tokens":38,"capacity_gb":[3.05176e-05,-1],"total_hit_blocks":[4,5],"total_hit_tokens":[16,20],"hit_rates":[0.421053,0.526316]}"#,
    "\n",
);

#[test]
fn offline_runner_fixture_reproduces_derived_output() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("query.jsonl");
    run(&args(
        &fixture("offline_runner.csv"),
        &out,
        &[TWO_BLOCKS_GB, "-1"],
    ))
    .unwrap();
    assert_eq!(fs::read_to_string(&out).unwrap(), OFFLINE_RUNNER_OUTPUT);
    let names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, ["query.jsonl"], "no temp file is left behind");
}

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn zishano_reference_excerpt_is_reproduced_byte_for_byte() {
    let facts = shared_file("reference/zishano_kimi_k3_tp8_litehit_facts.csv");
    let excerpt = shared_file("reference/zishano_kimi_k3_tp8_capacity_query_excerpt.jsonl");
    let mut capacities: Vec<String> = (0..=1000).step_by(25).map(|gb| gb.to_string()).collect();
    capacities.extend(["1024".to_owned(), "-1".to_owned()]);
    let capacities: Vec<&str> = capacities.iter().map(String::as_str).collect();
    assert_eq!(capacities.len(), 43);

    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("capacity_query.jsonl");
    run(&args(&facts, &out, &capacities)).unwrap();
    let ours = fs::read_to_string(&out).unwrap();
    let ours: Vec<&str> = ours.lines().collect();
    let theirs = fs::read_to_string(&excerpt).unwrap();
    let theirs: Vec<&str> = theirs.lines().collect();
    assert_eq!(ours.len(), 133, "131 rows, one instance summary, the total");
    assert_eq!(theirs.len(), 9);
    assert_eq!(ours[..7], theirs[..7], "per-row lines 1-7");
    assert_eq!(ours[131..], theirs[7..], "the two summary lines");
}

#[test]
fn summary_only_block_slots_and_shards_aggregate() {
    let dir = tempfile::tempdir().unwrap();
    let header = fs::read_to_string(fixture("offline_runner.csv")).unwrap();
    let mut lines = header.lines();
    let header = lines.next().unwrap();
    let rows: Vec<&str> = lines.collect();
    let shard_a = dir.path().join("a.csv");
    let shard_b = dir.path().join("b.csv");
    fs::write(&shard_a, format!("{header}\n{}\n", rows[0])).unwrap();
    fs::write(&shard_b, format!("{header}\n{}\n{}\n", rows[1], rows[2])).unwrap();

    let out = dir.path().join("summary.jsonl");
    let mut query = args(&shard_a, &out, &[TWO_BLOCKS_GB, "-1"]);
    query.shards = vec![shard_b];
    query.summary_only = true;
    query.capacity_blocks = vec![4, 0];
    run(&query).unwrap();
    let expected = concat!(
        r#"{"summary":true,"instance_id":"i1","requests":3,"total_input_tokens":38,"capacity_gb":[3.05176e-05,-1],"capacity_blocks":[4,0],"total_hit_blocks":[4,5,5,0],"total_hit_tokens":[16,20,20,0],"hit_rates":[0.421053,0.526316,0.526316,0]}"#,
        "\n",
        r#"{"summary":true,"requests":3,"total_input_tokens":38,"capacity_gb":[3.05176e-05,-1],"capacity_blocks":[4,0],"total_hit_blocks":[4,5,5,0],"total_hit_tokens":[16,20,20,0],"hit_rates":[0.421053,0.526316,0.526316,0]}"#,
        "\n",
    );
    assert_eq!(fs::read_to_string(&out).unwrap(), expected);
}

#[test]
fn design_doc_example_totals() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q.jsonl");
    // 2048 B and 3072 B with 1024-byte blocks, then unlimited.
    let two_kib_gb = (2048.0 / f64::from(1u32 << 30)).to_string();
    let three_kib_gb = (3072.0 / f64::from(1u32 << 30)).to_string();
    let mut query = args(
        &fixture("design_example.csv"),
        &out,
        &[&two_kib_gb, &three_kib_gb, "-1"],
    );
    query.summary_only = true;
    run(&query).unwrap();
    let text = fs::read_to_string(&out).unwrap();
    let total = text.lines().last().unwrap();
    assert!(
        total.contains(r#""total_input_tokens":54,"#)
            && total.contains(r#""total_hit_blocks":[7,7,8],"total_hit_tokens":[28,28,32],"hit_rates":[0.518519,0.518519,0.592593]"#),
        "{total}"
    );
}

#[test]
fn duplicate_zero_and_negative_slots_keep_their_order() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q.jsonl");
    let mut query = args(
        &fixture("offline_runner.csv"),
        &out,
        &["-2.5", "0", TWO_BLOCKS_GB, "0", "-0"],
    );
    query.summary_only = true;
    run(&query).unwrap();
    let text = fs::read_to_string(&out).unwrap();
    assert!(
        text.lines()
            .last()
            .unwrap()
            .contains(r#""capacity_gb":[-2.5,0,3.05176e-05,0,-0],"total_hit_blocks":[5,0,4,0,0],"#),
        "{text}"
    );
}

#[test]
fn invalid_capacity_is_rejected_with_upstream_message() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q.jsonl");
    let error = run(&args(&fixture("offline_runner.csv"), &out, &["1", "12PB"])).unwrap_err();
    // Upstream's message, then what is accepted.
    let message = error.to_string();
    assert!(
        message.starts_with("invalid capacity_gb: 12PB ("),
        "{message}"
    );
    assert!(!out.exists());
}

#[test]
fn no_capacity_at_all_is_an_error() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q.jsonl");
    let error = run(&args(&fixture("offline_runner.csv"), &out, &[])).unwrap_err();
    assert!(error.to_string().contains("no capacity given"), "{error}");
}

#[test]
fn malformed_row_fails_naming_file_and_line_and_publishes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q.jsonl");
    fs::write(&out, "previous result\n").unwrap();
    let facts = fixture("malformed_line4.csv");
    let error = run(&args(&facts, &out, &["1", "-1"])).unwrap_err();
    let chain: Vec<String> = error.chain().map(ToString::to_string).collect();
    assert_eq!(chain[0], "facts query failed");
    assert_eq!(
        chain[1],
        format!(
            "{}: facts line 4: hit_curve segment expects ','",
            facts.display()
        )
    );
    assert_eq!(
        fs::read_to_string(&out).unwrap(),
        "previous result\n",
        "old output intact"
    );
    assert!(
        !dir.path().join("q.jsonl.tmp").exists(),
        "temp file removed"
    );
}

#[test]
fn missing_shard_fails_before_writing() {
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q.jsonl");
    let mut query = args(&fixture("offline_runner.csv"), &out, &["1"]);
    query.shards = vec![dir.path().join("missing.csv")];
    let error = run(&query).unwrap_err();
    let chain: Vec<String> = error.chain().map(ToString::to_string).collect();
    assert!(
        chain[1].starts_with("failed to open facts file: "),
        "{chain:?}"
    );
    assert!(!out.exists());
}

/// Several batches of rows, quoted and escaped ids, several instances and block geometries.
fn many_rows(path: &Path, rows: usize) -> Vec<litehit_core::facts::FactRecord> {
    use litehit_core::facts::file::{FACTS_HEADER, append_fact_row};
    use litehit_core::facts::{FactRecord, RequestFact};
    let mut bytes = format!("{FACTS_HEADER}\n").into_bytes();
    let records: Vec<FactRecord> = (0..rows)
        .map(|row| {
            let n = u64::try_from(row).unwrap();
            let pairs: Vec<[u64; 2]> = (0..n % 4)
                .map(|k| [1 + k * 50 + n % 37, 1 + n % 13])
                .collect();
            let block_size_tokens = [16, 32, 16][row % 3];
            // At least the blocks the curve covers (readers refuse more), then a tail.
            let curve_blocks: u64 = pairs.iter().map(|&[_, run]| run).sum();
            FactRecord {
                trace_id: if row % 97 == 0 {
                    format!("q\"{row},\t\\")
                } else {
                    format!("req-{row}")
                },
                instance_id: ["a", "b\\n", "c"][row % 3].to_owned(),
                timestamp_ns: i64::try_from(row).unwrap() - 5,
                input_token_len: curve_blocks * block_size_tokens + (n * 7919) % 5000,
                block_size_tokens,
                block_bytes: [1 << 20, 1 << 21, 3 << 19][row % 3],
                fact: RequestFact::from_pairs(&pairs),
            }
        })
        .collect();
    for record in &records {
        append_fact_row(&mut bytes, &record.as_row());
    }
    fs::write(path, bytes).unwrap();
    records
}

#[test]
fn two_thread_query_writes_the_same_bytes_as_the_single_thread_writer() {
    use litehit::output::query_jsonl::{QueryJsonlWriter, QueryOptions, query_facts_files};
    use litehit_report::QuerySlots;
    let dir = tempfile::tempdir().unwrap();
    let facts = dir.path().join("many.csv");
    let records = many_rows(&facts, 20_000);
    let slots = QuerySlots {
        capacity_gb: vec![0.0, 0.05, 0.1, -1.0, 0.1],
        capacity_blocks: vec![3, 100],
    };
    let (threaded, threaded_summary) = query_facts_files(
        std::slice::from_ref(&facts),
        slots.clone(),
        QueryOptions::default(),
        Vec::new(),
    )
    .unwrap();
    let mut writer = QueryJsonlWriter::new(Vec::new(), slots.clone(), QueryOptions::default());
    for record in &records {
        writer.write_record(record).unwrap();
    }
    let (single, single_summary) = writer.finish().unwrap();
    assert_eq!(threaded_summary, single_summary);
    assert_eq!(
        String::from_utf8(threaded).unwrap(),
        String::from_utf8(single).unwrap()
    );
    assert_eq!(threaded_summary.overall.requests, 20_000);

    let (summary_only, _) = query_facts_files(
        &[facts],
        slots,
        QueryOptions { summary_only: true },
        Vec::new(),
    )
    .unwrap();
    assert_eq!(String::from_utf8(summary_only).unwrap().lines().count(), 4);
}

/// Accepts `remaining` bytes, then fails like a closed pipe.
#[derive(Debug)]
struct FailingWriter {
    remaining: usize,
}

impl std::io::Write for FailingWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.remaining == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::BrokenPipe,
                "closed",
            ));
        }
        let n = buf.len().min(self.remaining);
        self.remaining -= n;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[test]
fn output_errors_stop_the_query_without_hanging() {
    use litehit::output::query_jsonl::{QueryOptions, query_facts_files};
    use litehit_report::{QueryError, QuerySlots};
    let dir = tempfile::tempdir().unwrap();
    let facts = dir.path().join("many.csv");
    many_rows(&facts, 60_000);
    let slots = QuerySlots {
        capacity_gb: vec![1.0; 16],
        capacity_blocks: vec![],
    };
    for remaining in [0, 10, 5 << 20] {
        let error = query_facts_files(
            std::slice::from_ref(&facts),
            slots.clone(),
            QueryOptions::default(),
            FailingWriter { remaining },
        )
        .unwrap_err();
        assert!(
            matches!(&error, QueryError::Write(e) if e.kind() == std::io::ErrorKind::BrokenPipe)
        );
        assert_eq!(error.to_string(), "write to output log failed");
    }
}

#[test]
fn the_output_never_overwrites_the_facts_being_read() {
    let dir = tempfile::tempdir().unwrap();
    let facts = dir.path().join("f.csv");
    fs::copy(fixture("offline_runner.csv"), &facts).unwrap();
    let before = fs::read(&facts).unwrap();
    let error = run(&args(&facts, &facts, &["-1"])).unwrap_err();
    assert!(
        error.to_string().contains("would be overwritten"),
        "{error}"
    );
    assert_eq!(fs::read(&facts).unwrap(), before, "the facts are untouched");
}

#[test]
fn a_facts_file_given_twice_is_refused() {
    // As FACTS and again as a shard: every request would count twice.
    let dir = tempfile::tempdir().unwrap();
    let out = dir.path().join("q.jsonl");
    let facts = fixture("offline_runner.csv");
    let mut twice = args(&facts, &out, &["-1"]);
    twice.shards = vec![facts.clone()];
    let error = run(&twice).unwrap_err();
    assert!(error.to_string().contains("is given twice"), "{error}");
    assert!(!out.exists());
}

#[test]
fn an_output_symlink_is_followed_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let real = dir.path().join("real.jsonl");
    fs::write(&real, "old\n").unwrap();
    let link = dir.path().join("link.jsonl");
    std::os::unix::fs::symlink("real.jsonl", &link).unwrap();
    run(&args(
        &fixture("offline_runner.csv"),
        &link,
        &[TWO_BLOCKS_GB, "-1"],
    ))
    .unwrap();
    assert!(
        fs::symlink_metadata(&link).unwrap().is_symlink(),
        "the link stays"
    );
    assert_eq!(fs::read_to_string(&real).unwrap(), OFFLINE_RUNNER_OUTPUT);
    let mut names: Vec<_> = fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["link.jsonl", "real.jsonl"], "no temp file is left");
}

#[test]
fn an_output_fifo_is_written_in_place_not_replaced() {
    use std::os::unix::fs::FileTypeExt;
    let dir = tempfile::tempdir().unwrap();
    let fifo = dir.path().join("out.fifo");
    crate::common::cli_bin::make_fifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || fs::read_to_string(fifo).unwrap())
    };
    run(&args(
        &fixture("offline_runner.csv"),
        &fifo,
        &[TWO_BLOCKS_GB, "-1"],
    ))
    .unwrap();
    // Checked before joining: a FIFO renamed over would leave the reader waiting forever.
    assert!(
        fs::symlink_metadata(&fifo).unwrap().file_type().is_fifo(),
        "still a FIFO"
    );
    assert_eq!(reader.join().unwrap(), OFFLINE_RUNNER_OUTPUT);
    assert!(!dir.path().join("out.fifo.tmp").exists());
}

#[test]
fn compressed_facts_are_read_like_plain_ones() {
    let dir = tempfile::tempdir().unwrap();
    let plain = fs::read(fixture("offline_runner.csv")).unwrap();
    let gz = dir.path().join("facts.csv.gz");
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    std::io::Write::write_all(&mut encoder, &plain).unwrap();
    fs::write(&gz, encoder.finish().unwrap()).unwrap();
    let zst = dir.path().join("facts.csv.zst");
    let compressed =
        ruzstd::encoding::compress_to_vec(&plain[..], ruzstd::encoding::CompressionLevel::Fastest);
    fs::write(&zst, compressed).unwrap();
    for facts in [gz, zst] {
        let out = dir.path().join("q.jsonl");
        run(&args(&facts, &out, &[TWO_BLOCKS_GB, "-1"])).unwrap();
        assert_eq!(
            fs::read_to_string(&out).unwrap(),
            OFFLINE_RUNNER_OUTPUT,
            "{}",
            facts.display()
        );
    }
}
