//! `replay --facts-format parquet`: the same facts as the CSV, value by value; `query` and
//! `mrc` read them unchanged; a directory holding both files is refused naming both.

use std::path::Path;

use crate::common::cli_bin::{FACTS, failed, generate, ok, run_in, standard_trace};
use litehit_core::facts::FactRecord;
use litehit_core::facts::file::{FactsReader, PARQUET_FACTS_FILE_NAME};
use litehit_core::workload::WorkloadConfig;

fn records(path: &Path) -> Vec<FactRecord> {
    let mut reader = FactsReader::open(path).unwrap();
    let mut record = FactRecord::default();
    let mut rows = Vec::new();
    while reader.next_record(&mut record).unwrap() {
        rows.push(record.clone());
    }
    rows
}

fn run(args: &[&str]) -> String {
    ok(run_in(None, args)).stdout
}

#[test]
fn parquet_facts_hold_the_csv_rows_and_query_and_mrc_read_them_alike() {
    let dir = tempfile::tempdir().unwrap();
    let requests = generate(
        WorkloadConfig {
            seed: 5,
            instance_ids: (0..3).map(|i| format!("engine-{i}")).collect(),
            live_conversations: 40,
            ..WorkloadConfig::default()
        },
        1500,
    );
    let trace = dir.path().join("trace.jsonl");
    std::fs::write(&trace, standard_trace(&requests)).unwrap();
    let trace = trace.to_str().unwrap();
    let csv_dir = dir.path().join("csv");
    let parquet_dir = dir.path().join("parquet");
    let (csv_out, parquet_out) = (csv_dir.to_str().unwrap(), parquet_dir.to_str().unwrap());
    let lane = ["--trace-block-size", "16", "--pool", "--quiet"];
    run(&[&["replay", trace, "--out", csv_out][..], &lane[..]].concat());
    run(&[
        &[
            "replay",
            trace,
            "--out",
            parquet_out,
            "--facts-format",
            "parquet",
        ][..],
        &lane[..],
    ]
    .concat());
    let csv = csv_dir.join(FACTS);
    let parquet = parquet_dir.join(PARQUET_FACTS_FILE_NAME);
    assert!(!parquet_dir.join(FACTS).exists());
    let rows = records(&csv);
    assert_eq!(rows.len(), 1500 * 2, "every row on its lane and the pool's");
    assert_eq!(records(&parquet), rows);

    // The directory (which now holds the Parquet file only) and the file itself.
    for facts in [parquet_out, parquet.to_str().unwrap()] {
        let capacities = ["-", "1", "8", "64", "-1"];
        assert_eq!(
            run(&[&["query", facts][..], &capacities[..]].concat()),
            run(&[&["query", csv_out][..], &capacities[..]].concat())
        );
        assert_eq!(
            run(&["mrc", facts, "--json"]),
            run(&["mrc", csv_out, "--json"])
        );
    }

    // A file named `.parquet` is Parquet without the flag; the flag must agree with it.
    let named = dir.path().join("named.parquet");
    run(&[
        &["replay", trace, "--out", named.to_str().unwrap()][..],
        &lane[..],
    ]
    .concat());
    assert_eq!(records(&named), rows);
    let clash = run_in(
        None,
        [
            "replay",
            trace,
            "--out",
            named.to_str().unwrap(),
            "--facts-format",
            "csv",
        ],
    );
    assert!(
        failed(&clash).contains("--facts-format csv"),
        "{}",
        clash.stderr
    );

    // Both files in one directory: which is meant cannot be told.
    std::fs::copy(&csv, parquet_dir.join(FACTS)).unwrap();
    for command in [
        &["query", parquet_out, "-", "1"][..],
        &["mrc", parquet_out][..],
    ] {
        let both = run_in(None, command);
        let message = failed(&both);
        assert!(
            message.contains(&parquet_dir.join(FACTS).display().to_string())
                && message.contains(&parquet.display().to_string()),
            "{message}"
        );
    }
}
