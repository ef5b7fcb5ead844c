//! `docs/SQL.md`'s Spark SQL, checked twice on the facts of the real traces (two shards read
//! by glob), each time against the totals of `litehit query`:
//!
//! * in Spark itself: both statements, verbatim, in a local `pyspark` session (one core, no
//!   UI, one shuffle partition, bound to 127.0.0.1). This is what checks that Spark's CSV
//!   reader (the quoted `hit_curve`, the empty `"[]"` curves) and its `from_json` read the
//!   file as `litehit query` does, and every option of the view (one the transpiled check
//!   ignores, a `quote '|'`, say, fails here). It also checks the types Spark gave the view's
//!   columns (`DESCRIBE facts`) and the query's totals: `bigint`, since a view whose columns
//!   were all read as `STRING` still gives equal totals by implicit casts (as `DOUBLE`).
//!   About 20 s of CPU: a JVM start, then the query.
//! * without a JVM: every statement is parsed with `sqlglot`'s Spark grammar (a statement it
//!   cannot read fails the test, naming it), the query is transpiled to DuckDB and run there.
//!   The `CREATE TEMPORARY VIEW facts (columns…) USING csv` is read for its declared columns
//!   and its options (path, header, escape; any other fails the test), which become a DuckDB
//!   `read_csv` of the same columns, and
//!   `from_json(x, 'array<array<bigint>>')` becomes a cast to that type (the two are what
//!   sqlglot does not translate). Kept beside the Spark run: it is quick to read when it
//!   fails, and it keeps the query within what a second engine runs.
//!
//! Needs `python3` with `pyspark` and a `java` (17 or later, for Spark 4), and with `duckdb`
//! and `sqlglot` (`.ci/run` installs them, pyspark pinned to 4.3.0; locally `pip install
//! pyspark duckdb sqlglot`). Without them a test says why and passes, except with `CI` set,
//! where it fails.

use crate::query::sql::{check_documented_sql, check_documented_window_clause};

/// Runs the documented Spark SQL, both statements verbatim, in a local Spark session in `dir`
/// (its glob is relative) and prints one JSON row a line. Spark's scratch files go under `dir`;
/// the session is stopped and its JVM waited for, so none outlives the test.
const SPARK_RUNNER: &str = r#"
import json, os, re, sys
from pyspark.sql import SparkSession
doc = open(sys.argv[1], encoding="utf-8").read()
sql = re.search(r"<!-- sql-test: spark -->\n```sql\n(.*?)```", doc, re.S).group(1)
if len(sys.argv) > 2:  # a documented WHERE clause, before the query's GROUP BY
    sql = sql.replace("\nGROUP BY", "\n" + sys.argv[2] + "\nGROUP BY", 1)
statements = [s for s in sql.split(";") if s.strip()]
os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
spark = (SparkSession.builder.master("local[1]").appName("litehit docs/SQL.md check")
         .config("spark.ui.enabled", "false")
         .config("spark.ui.showConsoleProgress", "false")
         .config("spark.sql.shuffle.partitions", "1")
         .config("spark.driver.memory", "512m")
         .config("spark.driver.bindAddress", "127.0.0.1")
         .config("spark.driver.host", "127.0.0.1")
         .config("spark.local.dir", os.path.abspath("spark-scratch"))
         .config("spark.sql.warehouse.dir", os.path.abspath("spark-warehouse"))
         .getOrCreate())
jvm = spark.sparkContext._gateway.proc
try:
    spark.sparkContext.setLogLevel("ERROR")
    for statement in statements[:-1]:
        spark.sql(statement)
    # Equal totals alone would not show the columns were read as text: Spark casts a STRING
    # to a number where the arithmetic needs one, and its sums then come back as DOUBLE.
    view_types = {name: kind for name, kind, *_ in spark.sql("DESCRIBE facts").collect()}
    for column in ["timestamp_ns", "input_token_len", "block_size_tokens", "block_bytes"]:
        assert view_types.get(column) == "bigint", \
            f"DESCRIBE facts: {column} is {view_types.get(column)}, not bigint: {view_types}"
    result = spark.sql(statements[-1])
    result_types = {field.name: field.dataType.simpleString() for field in result.schema.fields}
    for column in ["requests", "total_input_tokens", "total_hit_tokens"]:
        assert result_types.get(column) == "bigint", \
            f"the query's {column} is {result_types.get(column)}, not bigint: {result_types}"
    for instance_id, capacity_gb, requests, input_tokens, hit_tokens in result.collect():
        print(json.dumps({"instance_id": instance_id, "capacity_gb": float(capacity_gb),
                          "requests": int(requests), "input_tokens": int(input_tokens),
                          "hit_tokens": int(hit_tokens)}))
finally:
    spark.stop()
    # The JVM exits at the end of its stdin; waiting for it here means none outlives the test.
    jvm.stdin.close()
    jvm.wait(timeout=60)
"#;

/// Parses the documented Spark SQL, transpiles it to DuckDB, runs it in `dir` (its glob is
/// relative) and prints one JSON row a line.
const TRANSPILE_RUNNER: &str = r#"
import json, re, sys
import duckdb, sqlglot
from sqlglot import exp
doc = open(sys.argv[1], encoding="utf-8").read()
sql = re.search(r"<!-- sql-test: spark -->\n```sql\n(.*?)```", doc, re.S).group(1)
if len(sys.argv) > 2:  # a documented WHERE clause, before the query's GROUP BY
    sql = sql.replace("\nGROUP BY", "\n" + sys.argv[2] + "\nGROUP BY", 1)
view, query = sqlglot.parse(sql, read="spark", error_level=sqlglot.ErrorLevel.RAISE)
assert isinstance(view, exp.Create) and view.kind == "VIEW", view.sql("spark")
assert view.find(exp.FileFormatProperty).this.name.lower() == "csv"
options = {prop.this.name.lower(): prop.args["value"].name
           for prop in view.find(exp.OptionsProperty).expressions}
# Spark ignores a `schema` option here (every column is then a STRING), and an option not
# mapped below would be checked by the Spark run only: name it.
unmapped = set(options) - {"path", "header", "escape"}
assert not unmapped, f"the view's options {sorted(unmapped)} are not mapped to DuckDB"
# Declared columns make the view's `this` a Schema: the name, then one ColumnDef a column.
assert isinstance(view.this, exp.Schema), f"the view declares no columns: {view.sql('spark')}"
columns = ", ".join(f"'{column.name}': '{column.args['kind'].sql('duckdb')}'"
                    for column in view.this.expressions)
escape = options.get("escape", "\\").replace("'", "''")
con = duckdb.connect()
con.execute(f"CREATE VIEW {view.this.this.name} AS SELECT * FROM read_csv('{options['path']}', "
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

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn the_documented_spark_sql_run_in_spark_gives_the_totals_of_query() {
    check_documented_sql(
        SPARK_RUNNER,
        &["pyspark"],
        &["java"],
        "the docs/SQL.md Spark SQL run in Spark",
    );
}

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn the_documented_spark_sql_transpiled_to_duckdb_gives_the_totals_of_query() {
    check_documented_sql(
        TRANSPILE_RUNNER,
        &["duckdb", "sqlglot"],
        &[],
        "the docs/SQL.md Spark SQL check",
    );
}

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn the_documented_spark_time_window_run_in_spark_gives_the_totals_of_query_from() {
    check_documented_window_clause(
        SPARK_RUNNER,
        &["pyspark"],
        &["java"],
        "the docs/SQL.md Spark SQL time-window run in Spark",
        "Spark SQL",
    );
}

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn the_documented_spark_time_window_transpiled_to_duckdb_gives_the_totals_of_query_from() {
    check_documented_window_clause(
        TRANSPILE_RUNNER,
        &["duckdb", "sqlglot"],
        &[],
        "the docs/SQL.md Spark SQL time-window check",
        "Spark SQL",
    );
}
