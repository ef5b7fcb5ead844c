//! `docs/SQL.md`'s Spark SQL, checked without Spark: every statement is parsed with
//! `sqlglot`'s Spark grammar (a statement it cannot read fails the test), the query is
//! transpiled to DuckDB and run there on the facts of the real traces (two shards read by
//! glob), and its totals must be `litehit query`'s.
//!
//! What this does not check is Spark itself: the `CREATE TEMPORARY VIEW … USING csv` is read
//! for its options (path, header, escape, schema), which become a DuckDB `read_csv` of the
//! same columns, and `from_json(x, 'array<array<bigint>>')` becomes a cast to that type (the
//! two are what sqlglot does not translate). Running Spark itself would need `pyspark`
//! (Spark's jars, hundreds of MB) and a JVM start per run in CI.
//!
//! Needs `python3` with `duckdb` and `sqlglot` (`.ci/run` installs both from PyPI; locally
//! `pip install duckdb sqlglot`). Without them the test says why and passes, except with `CI`
//! set, where it fails.

use std::path::Path;
use std::process::Command;

use crate::common::cli_bin::{ok, parse_query_output, run_in, u64s};
use crate::common::shared_file;
use serde_json::Value;

/// Parses the documented Spark SQL, transpiles it to DuckDB, runs it in `dir` (its glob is
/// relative) and prints one JSON row a line.
const RUNNER: &str = r#"
import json, re, sys
import duckdb, sqlglot
from sqlglot import exp
doc = open(sys.argv[1], encoding="utf-8").read()
sql = re.search(r"<!-- sql-test: spark -->\n```sql\n(.*?)```", doc, re.S).group(1)
view, query = sqlglot.parse(sql, read="spark", error_level=sqlglot.ErrorLevel.RAISE)
assert isinstance(view, exp.Create) and view.kind == "VIEW", view.sql("spark")
assert view.find(exp.FileFormatProperty).this.name.lower() == "csv"
options = {prop.this.name.lower(): prop.args["value"].name
           for prop in view.find(exp.OptionsProperty).expressions}
schema = sqlglot.parse_one(f"CREATE TABLE t ({options['schema']})", read="spark")
columns = ", ".join(f"'{column.name}': '{column.args['kind'].sql('duckdb')}'"
                    for column in schema.find_all(exp.ColumnDef))
escape = options.get("escape", "\\").replace("'", "''")
con = duckdb.connect()
con.execute(f"CREATE VIEW {view.this.name} AS SELECT * FROM read_csv('{options['path']}', "
            f"header = {options.get('header', 'false')}, quote = '\"', escape = '{escape}', "
            f"columns = {{{columns}}})")
def cast_from_json(node):
    if isinstance(node, exp.FromJson):
        return exp.Cast(this=node.this,
                        to=exp.DataType.build(node.expression.name, dialect="spark"))
    return node
duck = query.transform(cast_from_json).sql(dialect="duckdb")
for instance_id, capacity_gb, requests, input_tokens, hit_tokens in con.execute(duck).fetchall():
    print(json.dumps({"instance_id": instance_id, "capacity_gb": float(capacity_gb),
                      "requests": int(requests), "input_tokens": int(input_tokens),
                      "hit_tokens": int(hit_tokens)}))
"#;

/// The capacities of the documented query, in its order.
const CAPACITIES_GB: [&str; 4] = ["1", "16", "160", "-1"];

fn python_modules_available() -> Result<(), String> {
    match Command::new("python3")
        .args(["-c", "import duckdb, sqlglot"])
        .output()
    {
        Ok(output) if output.status.success() => Ok(()),
        Ok(output) => Err(format!(
            "python3 lacks duckdb or sqlglot (pip install duckdb sqlglot): {}",
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
fn the_documented_spark_sql_transpiled_to_duckdb_gives_the_totals_of_query() {
    if let Err(reason) = python_modules_available() {
        assert!(
            std::env::var_os("CI").is_none(),
            "CI is set, so the Spark SQL check may not skip: {reason}"
        );
        eprintln!("skipping the docs/SQL.md Spark SQL check: {reason}");
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
    let glob = dir.path().join("shards/*/litehit_facts.csv");
    let mut args = vec!["query", glob.to_str().unwrap(), "-", "--summary-only"];
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
        "the documented Spark SQL failed: {}",
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
