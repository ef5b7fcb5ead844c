"""docs/SCALE.md's PySpark recipe, the code block itself, in a local Spark session: its facts
equal `litehit replay`'s value by value, and its Spark SQL totals equal `litehit query`'s on the
unsharded facts (per instance and in total); the pool recipe equals `replay --pool`."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from conftest import BLOCK_SIZE, cli_replay, read_csv_facts

SCALE_MD = Path(__file__).resolve().parents[3] / "docs" / "SCALE.md"
CAPACITY_BLOCKS = [0, 1, 4, 16, 64]  # the recipe's, with -1 (unlimited) last


def recipe() -> dict:
    """The recipe's code block, run as a module of its own (Spark pickles its functions by
    value, as it would a notebook's)."""
    text = SCALE_MD.read_text()
    match = re.search(r"<!-- py-test: spark -->\n```python\n(.*?)```", text, re.S)
    assert match, f"{SCALE_MD}: no <!-- py-test: spark --> python block"
    namespace = {"__name__": "litehit_scale_recipe"}
    exec(compile(match.group(1), str(SCALE_MD), "exec"), namespace)
    return namespace


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    from pyspark.sql import SparkSession

    scratch = tmp_path_factory.mktemp("spark")
    session = (
        SparkSession.builder.master("local[1]")
        .appName("litehit docs/SCALE.md check")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.driver.memory", "512m")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.local.dir", str(scratch / "local"))
        .config("spark.sql.warehouse.dir", str(scratch / "warehouse"))
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


def parquet_facts(directory: Path) -> list[dict]:
    rows = pq.read_table(directory).to_pylist()
    return sorted(rows, key=lambda row: (row["trace_id"], row["instance_id"]))


def test_the_spark_recipe_equals_the_unsharded_cli(spark, litehit_bin, trace_file, tmp_path):
    steps = recipe()
    assert steps["BLOCK_SIZE"] == BLOCK_SIZE
    cli_dir = tmp_path / "cli"
    expected = read_csv_facts(cli_replay(litehit_bin, trace_file, cli_dir, "--block-size", str(BLOCK_SIZE)))
    facts_dir = tmp_path / "facts"
    steps["replay_on_spark"](spark, str(trace_file), str(facts_dir))
    got = parquet_facts(facts_dir)
    assert got == sorted(expected, key=lambda row: (row["trace_id"], row["instance_id"]))

    query = subprocess.run(
        [litehit_bin, "query", str(cli_dir), "-", "-1", "--summary-only", "--capacity-blocks",
         *map(str, CAPACITY_BLOCKS)],
        check=True, capture_output=True, text=True,
    ).stdout
    lines = [json.loads(line) for line in query.splitlines()]
    expected_totals = {}
    for line in lines:
        # The CLI's slots: -1 GB first, then the block counts; the recipe's -1 sorts first.
        for slot, capacity in enumerate([-1, *CAPACITY_BLOCKS]):
            expected_totals[(line.get("instance_id"), capacity)] = (
                line["requests"],
                line["total_input_tokens"],
                line["total_hit_blocks"][slot],
                line["total_hit_tokens"][slot],
            )
    totals = {
        (row.instance_id, row.capacity_blocks): (
            row.requests, row.total_input_tokens, row.total_hit_blocks, row.total_hit_tokens
        )
        for row in steps["totals"](spark, str(facts_dir))
    }
    assert totals == expected_totals
    assert len({instance for instance, _ in totals}) > 2  # instances and the total


def test_the_spark_pool_recipe_equals_replay_pool(spark, litehit_bin, trace_file, tmp_path):
    steps = recipe()
    expected = read_csv_facts(
        cli_replay(litehit_bin, trace_file, tmp_path / "cli", "--block-size", str(BLOCK_SIZE), "--pool")
    )
    facts_dir = tmp_path / "facts"
    steps["replay_with_pool_on_spark"](spark, str(trace_file), str(facts_dir))
    got = parquet_facts(facts_dir)
    assert any(row["instance_id"] == "pool" for row in got)
    assert got == sorted(expected, key=lambda row: (row["trace_id"], row["instance_id"]))
