//! `docs/SQL.md`: its DuckDB query, run through the `duckdb` Python package on the facts of
//! the real traces (two shards read by glob), gives the totals of `litehit query`.
//!
//! Needs `python3` with `duckdb` (`.ci/run` installs it from PyPI; locally `pip install
//! duckdb`). Without them the test says why and passes, except with `CI` set, where it fails.

use std::path::Path;
use std::process::Command;

use crate::common::cli_bin::{ok, parse_query_output, run_in, u64s};
use crate::common::shared_file;
use serde_json::Value;

/// Runs the documented query in `dir` (its glob is relative) and prints one JSON row a line.
const RUNNER: &str = r#"
import json, re, sys
import duckdb
doc = open(sys.argv[1], encoding="utf-8").read()
sql = re.search(r"<!-- sql-test: duckdb -->\n```sql\n(.*?)```", doc, re.S).group(1)
statements = [s for s in sql.split(";") if s.strip()]
con = duckdb.connect()
for statement in statements[:-1]:
    con.execute(statement)
for instance_id, capacity_gb, requests, input_tokens, hit_tokens in con.execute(statements[-1]).fetchall():
    print(json.dumps({"instance_id": instance_id, "capacity_gb": float(capacity_gb),
                      "requests": int(requests), "input_tokens": int(input_tokens),
                      "hit_tokens": int(hit_tokens)}))
"#;

/// The capacities of the documented query, in its order.
const CAPACITIES_GB: [&str; 4] = ["1", "16", "160", "-1"];

fn duckdb_available() -> Result<(), String> {
    match Command::new("python3")
        .args(["-c", "import duckdb"])
        .output()
    {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(format!(
            "python3 has no duckdb module (pip install duckdb): {}",
            String::from_utf8_lossy(&output.stderr).trim()
        )),
        Err(error) => Err(format!("no python3: {error}")),
    }
}

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn the_documented_duckdb_query_gives_the_totals_of_query() {
    if let Err(reason) = duckdb_available() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set, so the SQL check may not skip: {reason}"
        );
        eprintln!("skipping the docs/SQL.md check: {reason}");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    for (trace, instance) in [
        ("traces/conversation_trace.jsonl", "conversation"),
        ("traces/synthetic_trace.jsonl", "synthetic"),
    ] {
        let out = dir.path().join("shards").join(instance);
        ok(run_in(
            None,
            [
                "replay",
                shared_file(trace).to_str().unwrap(),
                "--instance",
                instance,
                "--out",
                out.to_str().unwrap(),
                "--quiet",
            ],
        ));
    }
    let shards = |name: &str| {
        dir.path()
            .join("shards")
            .join(name)
            .join("litehit_facts.csv")
    };
    let (first, second) = (shards("conversation"), shards("synthetic"));
    let mut args = vec![
        "query",
        first.to_str().unwrap(),
        "-",
        "--summary-only",
        "--shard",
        second.to_str().unwrap(),
    ];
    args.extend(CAPACITIES_GB);
    let query = parse_query_output(&ok(run_in(None, &args)).stdout);

    let doc = Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/SQL.md");
    let output = Command::new("python3")
        .args(["-c", RUNNER, doc.to_str().unwrap()])
        .current_dir(dir.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "the documented SQL failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let rows: Vec<Value> = String::from_utf8(output.stdout)
        .unwrap()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect();
    let mut summaries = query.instance_summaries.clone();
    summaries.push(query.overall.clone());
    assert_eq!(rows.len(), summaries.len() * CAPACITIES_GB.len());
    for summary in &summaries {
        let instance = summary.get("instance_id").cloned().unwrap_or(Value::Null);
        let hit_tokens = u64s(&summary["total_hit_tokens"]);
        for (slot, capacity) in CAPACITIES_GB.iter().enumerate() {
            let capacity: f64 = capacity.parse().unwrap();
            let row = rows
                .iter()
                .find(|row| row["instance_id"] == instance && row["capacity_gb"] == capacity)
                .unwrap_or_else(|| panic!("no SQL row for {instance} at {capacity} GB"));
            assert_eq!(row["requests"], summary["requests"], "{row}");
            assert_eq!(row["input_tokens"], summary["total_input_tokens"], "{row}");
            assert_eq!(row["hit_tokens"].as_u64(), Some(hit_tokens[slot]), "{row}");
        }
    }
    assert!(
        u64s(&query.overall["total_hit_tokens"])[0] > 0,
        "the smallest capacity hits something, so the check is not all zeros"
    );
}
