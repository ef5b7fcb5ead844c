"""docs/SCALE.md's PySpark and Ray Data recipes, the code blocks themselves, in a local Spark
session and a local Ray cluster: their facts equal `litehit replay`'s value by value, and their
totals (Spark SQL, DuckDB) equal `litehit query`'s on the unsharded facts (per instance and in
total); the pool recipes equal `replay --pool`."""

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


def recipe(engine: str = "spark") -> dict:
    """The recipe's code block, run as a module of its own (Spark and Ray pickle its functions
    by value, as they would a notebook's)."""
    text = SCALE_MD.read_text()
    match = re.search(rf"<!-- py-test: {engine} -->\n```python\n(.*?)```", text, re.S)
    assert match, f"{SCALE_MD}: no <!-- py-test: {engine} --> python block"
    namespace = {"__name__": f"litehit_scale_recipe_{engine}"}
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


def cli_totals(litehit_bin: str, cli_dir: Path) -> dict:
    """`litehit query`'s summaries at the recipes' capacities, by (instance, capacity)."""
    query = subprocess.run(
        [litehit_bin, "query", str(cli_dir), "-", "-1", "--summary-only", "--capacity-blocks",
         *map(str, CAPACITY_BLOCKS)],
        check=True, capture_output=True, text=True,
    ).stdout
    expected_totals = {}
    for line in map(json.loads, query.splitlines()):
        # The CLI's slots: -1 GB first, then the block counts; the recipe's -1 sorts first.
        for slot, capacity in enumerate([-1, *CAPACITY_BLOCKS]):
            expected_totals[(line.get("instance_id"), capacity)] = (
                line["requests"],
                line["total_input_tokens"],
                line["total_hit_blocks"][slot],
                line["total_hit_tokens"][slot],
            )
    return expected_totals


def test_the_spark_recipe_equals_the_unsharded_cli(spark, litehit_bin, trace_file, tmp_path):
    steps = recipe()
    assert steps["BLOCK_SIZE"] == BLOCK_SIZE
    cli_dir = tmp_path / "cli"
    expected = read_csv_facts(cli_replay(litehit_bin, trace_file, cli_dir, "--block-size", str(BLOCK_SIZE)))
    facts_dir = tmp_path / "facts"
    steps["replay_on_spark"](spark, str(trace_file), str(facts_dir))
    got = parquet_facts(facts_dir)
    assert got == sorted(expected, key=lambda row: (row["trace_id"], row["instance_id"]))

    expected_totals = cli_totals(litehit_bin, cli_dir)
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


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory):
    import ray

    # Logical CPUs: the pool recipe's two actors hold one each while tasks read and write.
    ray.init(
        num_cpus=4,
        include_dashboard=False,
        log_to_driver=False,
        configure_logging=False,
        _temp_dir=str(tmp_path_factory.mktemp("ray")),
    )
    yield ray
    ray.shutdown()


def test_the_ray_recipe_equals_the_unsharded_cli(ray_cluster, litehit_bin, trace_file, tmp_path):
    steps = recipe("ray")
    assert steps["BLOCK_SIZE"] == BLOCK_SIZE
    cli_dir = tmp_path / "cli"
    expected = read_csv_facts(cli_replay(litehit_bin, trace_file, cli_dir, "--block-size", str(BLOCK_SIZE)))
    facts_dir = tmp_path / "facts"
    steps["replay_on_ray"](str(trace_file), str(facts_dir))
    assert parquet_facts(facts_dir) == sorted(expected, key=lambda row: (row["trace_id"], row["instance_id"]))
    totals = {
        (instance_id, capacity): tuple(sums)
        for instance_id, capacity, *sums in steps["totals"](str(facts_dir))
    }
    assert totals == cli_totals(litehit_bin, cli_dir)
    assert len({instance for instance, _ in totals}) > 2  # instances and the total


def test_the_ray_pool_recipe_equals_replay_pool(ray_cluster, litehit_bin, trace_file, tmp_path):
    steps = recipe("ray")
    expected = read_csv_facts(
        cli_replay(litehit_bin, trace_file, tmp_path / "cli", "--block-size", str(BLOCK_SIZE), "--pool")
    )
    facts_dir = tmp_path / "facts"
    steps["replay_with_pool_on_ray"](str(trace_file), str(facts_dir))
    got = parquet_facts(facts_dir)
    assert any(row["instance_id"] == "pool" for row in got)
    assert got == sorted(expected, key=lambda row: (row["trace_id"], row["instance_id"]))
