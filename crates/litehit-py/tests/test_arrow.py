"""Facts through the Arrow PyCapsule interface: pyarrow (no copy of the curve buffers),
polars, DuckDB; Facts.read / Facts.write for CSV and Parquet."""

from __future__ import annotations

import subprocess

import pyarrow as pa
import pyarrow.parquet as pq

import litehit
from conftest import BLOCK_SIZE, cli_replay, read_csv_facts

FACTS_SCHEMA = pa.schema(
    [
        pa.field("trace_id", pa.string(), nullable=False),
        pa.field("instance_id", pa.string(), nullable=False),
        pa.field("timestamp_ns", pa.int64(), nullable=False),
        pa.field("input_token_len", pa.uint64(), nullable=False),
        pa.field("block_size_tokens", pa.uint64(), nullable=False),
        pa.field("block_bytes", pa.uint64(), nullable=False),
        pa.field(
            "hit_curve",
            pa.list_(
                pa.field(
                    "item",
                    pa.struct(
                        [
                            pa.field("start", pa.uint64(), nullable=False),
                            pa.field("run", pa.uint64(), nullable=False),
                        ]
                    ),
                    nullable=False,
                )
            ),
            nullable=False,
        ),
    ]
)


def curve_addresses(table: pa.Table) -> list[tuple[int, int]]:
    addresses = []
    for chunk in table.column("hit_curve").chunks:
        segments = chunk.values
        addresses.append(
            (segments.field(0).buffers()[1].address, segments.field(1).buffers()[1].address)
        )
    return addresses


def test_pyarrow_shares_the_curve_buffers_both_ways(trace_file):
    facts = litehit.replay(trace_file, block_size=BLOCK_SIZE)
    table = pa.table(facts)
    assert table.schema == FACTS_SCHEMA
    native = facts._curve_buffer_addresses()
    assert curve_addresses(table) == native, "pyarrow copied the curve buffers"
    assert any(chunk.values.field(0).buffers()[1].size > 0 for chunk in table.column("hit_curve").chunks)
    back = litehit.Facts.from_arrow(table)
    assert back._curve_buffer_addresses() == native, "Facts.from_arrow copied the curve buffers"
    assert pa.table(back).equals(table)
    # A second export is a second stream over the same buffers.
    assert curve_addresses(pa.table(facts)) == native


def test_polars_reads_the_facts_and_they_come_back(trace_file):
    import polars as pl

    facts = litehit.replay(trace_file, block_size=BLOCK_SIZE, pool=True)
    table = pa.table(facts)
    frame = pl.DataFrame(facts)
    assert frame.shape == (table.num_rows, 7)
    assert frame.to_dicts() == table.to_pylist()
    assert frame["input_token_len"].dtype == pl.UInt64
    per_instance = frame.group_by("instance_id").agg(pl.col("input_token_len").sum()).sort("instance_id")
    expected = {}
    for row in table.to_pylist():
        expected[row["instance_id"]] = expected.get(row["instance_id"], 0) + row["input_token_len"]
    assert dict(zip(per_instance["instance_id"], per_instance["input_token_len"])) == expected
    # polars' own layouts (string views, large lists) are rebuilt into the facts schema.
    assert pa.table(litehit.Facts.from_arrow(frame)).equals(table)


def test_duckdb_queries_the_facts_and_unnests_the_curves(trace_file):
    import duckdb

    facts = litehit.replay(trace_file, block_size=BLOCK_SIZE)
    rows = pa.table(facts).to_pylist()
    counts = duckdb.sql(
        "select instance_id, count(*), sum(input_token_len) from facts group by 1 order by 1"
    ).fetchall()
    expected = {}
    for row in rows:
        count, tokens = expected.get(row["instance_id"], (0, 0))
        expected[row["instance_id"]] = (count + 1, tokens + row["input_token_len"])
    assert [(name, count, int(tokens)) for name, count, tokens in counts] == sorted(
        (name, count, tokens) for name, (count, tokens) in expected.items()
    )
    [(run_blocks,)] = duckdb.sql(
        "select sum(segment.run) from (select unnest(hit_curve) as segment from facts)"
    ).fetchall()
    assert int(run_blocks) == sum(s["run"] for row in rows for s in row["hit_curve"]) > 0


def test_write_and_read_csv_and_parquet(litehit_bin, trace_file, tmp_path):
    cli_csv = cli_replay(litehit_bin, trace_file, tmp_path / "cli", "--block-size", str(BLOCK_SIZE))
    facts = litehit.Facts.read(cli_csv)
    assert pa.table(facts).to_pylist() == read_csv_facts(cli_csv)
    csv_path = tmp_path / "out" / "facts.csv"
    parquet_path = tmp_path / "out" / "litehit_facts.parquet"
    assert facts.write(csv_path) == str(csv_path)
    assert csv_path.read_bytes() == cli_csv.read_bytes(), "the CSV is the CLI's, byte for byte"
    facts.write(parquet_path)
    assert sorted(p.name for p in parquet_path.parent.iterdir()) == ["facts.csv", "litehit_facts.parquet"]
    assert parquet_path.stat().st_size * 2 <= csv_path.stat().st_size
    assert pa.table(litehit.Facts.read(parquet_path)).equals(pa.table(facts))
    assert pq.read_table(parquet_path).to_pylist() == read_csv_facts(cli_csv)
    # The CLI reads the Parquet the package wrote, to the same answers.
    query = lambda path: subprocess.run(  # noqa: E731
        [litehit_bin, "query", str(path), "-", "0.001", "1", "-1"], check=True, capture_output=True, text=True
    ).stdout
    assert query(parquet_path) == query(cli_csv)
    # The CLI's Parquet reads back as the same facts.
    subprocess.run(
        [litehit_bin, "replay", str(trace_file), "--out", str(tmp_path / "pq"), "--quiet",
         "--block-size", str(BLOCK_SIZE), "--facts-format", "parquet"],
        check=True,
    )
    assert pa.table(litehit.Facts.read(tmp_path / "pq")).equals(pa.table(facts))


def test_the_documented_parquet_table_gives_the_csv_tables_totals(litehit_bin, trace_file, tmp_path, monkeypatch):
    """docs/SQL.md's DuckDB query over Parquet facts (its `facts` table swapped for the
    Parquet one) equals the query over the CSV (which tests/it/query/sql.rs checks against
    `litehit query`)."""
    import re
    from pathlib import Path

    import duckdb

    doc = (Path(__file__).resolve().parents[3] / "docs" / "SQL.md").read_text()
    block = lambda name: re.search(  # noqa: E731
        rf"<!-- sql-test: {name} -->\n```sql\n(.*?)```", doc, re.S
    ).group(1)
    csv_sql = block("duckdb")
    parquet_table = block("duckdb-parquet").strip()
    csv_table = re.search(r"CREATE OR REPLACE TABLE facts AS.*?;", csv_sql, re.S).group(0)
    parquet_sql = csv_sql.replace(csv_table, parquet_table, 1)
    assert parquet_sql != csv_sql
    for shard, instance in [("a", "engine-a"), ("b", "engine-b")]:
        out = tmp_path / "shards" / shard
        cli_replay(litehit_bin, trace_file, out, "--block-size", str(BLOCK_SIZE), "--instance", instance)
        litehit.Facts.read(out / "litehit_facts.csv").write(out / "litehit_facts.parquet")
    monkeypatch.chdir(tmp_path)

    def run(sql):
        con = duckdb.connect()
        statements = [s for s in sql.split(";") if s.strip()]
        for statement in statements[:-1]:
            con.execute(statement)
        return con.execute(statements[-1]).fetchall()

    from_csv = run(csv_sql)
    assert run(parquet_sql) == from_csv
    assert len(from_csv) == 3 * 4 and any(row[-1] > 0 for row in from_csv)
