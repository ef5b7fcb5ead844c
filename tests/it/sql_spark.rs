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

use crate::sql::check_documented_sql;

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

#[cfg_attr(
    litehit_shared_absent,
    ignore = "needs ../shared, the real traces kept outside the repository (once it is there: touch build.rs)"
)]
#[test]
fn the_documented_spark_sql_transpiled_to_duckdb_gives_the_totals_of_query() {
    check_documented_sql(
        RUNNER,
        &["duckdb", "sqlglot"],
        "the docs/SQL.md Spark SQL check",
    );
}
