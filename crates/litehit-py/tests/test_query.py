"""litehit.query and litehit.mrc equal `litehit query --summary-only` and `litehit mrc --json`,
value by value, and the query's numbers equal a naive projection of the facts written here."""

from __future__ import annotations

import json
import math
import os
import subprocess
from pathlib import Path

import pyarrow as pa
import pytest

import litehit
from conftest import BLOCK_SIZE, cli_replay

CAPACITY_GB = ["0.001", "-1", "0.01", "0.001"]  # a repeat and unlimited, in this order
CAPACITY_BLOCKS = [0, 1, 3, 17, 100]
GIB = 1 << 30


def cli_query_jsonl(litehit_bin: str, facts: Path, capacity_gb, capacity_blocks) -> list[dict]:
    args = [litehit_bin, "query", str(facts), "-", *capacity_gb, "--summary-only"]
    if capacity_blocks:
        args += ["--capacity-blocks", *map(str, capacity_blocks)]
    out = subprocess.run(args, check=True, capture_output=True, text=True).stdout
    return [json.loads(line) for line in out.splitlines()]


def expected_query_rows(lines: list[dict], slot_count: int) -> list[dict]:
    """The CLI's summary lines in long form: instances (in the CLI's order), then the overall
    line as instance_id None; the pool's comparison line is not a row."""
    rows = []
    for line in lines:
        if "pool" in line:
            continue
        for slot in range(slot_count):
            rows.append(
                {
                    "instance_id": line.get("instance_id"),
                    "total_input_tokens": line["total_input_tokens"],
                    "total_hit_blocks": line["total_hit_blocks"][slot],
                    "total_hit_tokens": line["total_hit_tokens"][slot],
                    "hit_rate": line["hit_rates"][slot],
                }
            )
    return rows


def g6(value: float) -> float:
    """The CLI prints rates with %g (6 significant digits)."""
    return float(f"{value:.6g}")


def naive_hit_blocks(curve: list[dict], capacity_blocks) -> int:
    """A segment {start, run} hits with its k-th block (k from 0) at capacities >= start + k."""
    if capacity_blocks is None:
        return sum(segment["run"] for segment in curve)
    return sum(min(s["run"], max(0, capacity_blocks - s["start"] + 1)) for s in curve)


def slot_capacities(block_bytes: int):
    """Per slot: (capacity_bytes, capacity_blocks) for lanes of `block_bytes`, computed here."""
    slots = []
    for text in CAPACITY_GB:
        gb = float(text)
        if gb < 0:
            slots.append((None, None))
        else:
            capacity_bytes = math.floor(gb * GIB)
            slots.append((capacity_bytes, capacity_bytes // block_bytes))
    for blocks in CAPACITY_BLOCKS:
        slots.append((blocks * block_bytes, blocks))
    return slots


def check_query(litehit_bin: str, facts_dir: Path, facts: litehit.Facts, pool_name=None):
    table = litehit.query(facts, CAPACITY_GB, capacities_blocks=CAPACITY_BLOCKS)
    assert table.column_names == [
        "instance_id",
        "capacity_bytes",
        "capacity_blocks",
        "total_input_tokens",
        "total_hit_blocks",
        "total_hit_tokens",
        "hit_rate",
    ]
    got = table.to_pylist()
    slot_count = len(CAPACITY_GB) + len(CAPACITY_BLOCKS)
    lines = cli_query_jsonl(litehit_bin, facts_dir, CAPACITY_GB, CAPACITY_BLOCKS)
    expected = expected_query_rows(lines, slot_count)
    assert len(got) == len(expected) > slot_count
    for ours, theirs in zip(got, expected):
        assert g6(ours["hit_rate"]) == theirs["hit_rate"], (ours, theirs)
        for field in ["instance_id", "total_input_tokens", "total_hit_blocks", "total_hit_tokens"]:
            assert ours[field] == theirs[field], (field, ours, theirs)
        assert ours["hit_rate"] == (
            ours["total_hit_tokens"] / ours["total_input_tokens"] if ours["total_input_tokens"] else 0.0
        )
    # The naive oracle: every facts row projected here, summed per instance and in total
    # (the pool lane's rows out of the total, as the CLI's overall line).
    facts_rows = pa.table(facts).to_pylist()
    block_bytes = {row["block_bytes"] for row in facts_rows}
    assert len(block_bytes) == 1
    capacities = slot_capacities(block_bytes.pop())
    by_instance: dict = {}
    for row in facts_rows:
        for key in [row["instance_id"]] + ([None] if row["instance_id"] != pool_name else []):
            sums = by_instance.setdefault(key, [0, [0] * slot_count, [0] * slot_count])
            sums[0] += row["input_token_len"]
            for slot, (_, capacity_blocks) in enumerate(capacities):
                hits = naive_hit_blocks(row["hit_curve"], capacity_blocks)
                sums[1][slot] += hits
                sums[2][slot] += hits * row["block_size_tokens"]
    for index, row in enumerate(got):
        slot = index % slot_count
        input_tokens, hit_blocks, hit_tokens = by_instance[row["instance_id"]]
        assert (row["capacity_bytes"], row["capacity_blocks"]) == capacities[slot], row
        assert row["total_input_tokens"] == input_tokens
        assert row["total_hit_blocks"] == hit_blocks[slot], row
        assert row["total_hit_tokens"] == hit_tokens[slot], row
    assert [row["instance_id"] for row in got[-slot_count:]] == [None] * slot_count
    return table


def test_query_equals_the_clis_summary_and_a_naive_projection(litehit_bin, trace_file, tmp_path):
    for flags, kwargs, pool_name in [((), {}, None), (("--pool",), {"pool": True}, "pool")]:
        out = tmp_path / f"cli{len(flags)}"
        cli_replay(litehit_bin, trace_file, out, "--block-size", str(BLOCK_SIZE), *flags)
        facts = litehit.replay(trace_file, block_size=BLOCK_SIZE, **kwargs)
        table = check_query(litehit_bin, out, facts, pool_name)
        # A facts file, CSV or Parquet, gives the same table.
        parquet = tmp_path / f"facts{len(flags)}.parquet"
        facts.write(parquet)
        assert litehit.query(parquet, CAPACITY_GB, capacities_blocks=CAPACITY_BLOCKS).equals(table)
        assert litehit.query(out, CAPACITY_GB, capacities_blocks=CAPACITY_BLOCKS).equals(table)


def test_a_pool_with_a_name_of_its_own_is_recognised_as_the_cli_does(litehit_bin, trace_file, tmp_path):
    # Not the default name: the pool is found only at the end and its rows summed again.
    out = tmp_path / "cli"
    cli_replay(litehit_bin, trace_file, out, "--block-size", str(BLOCK_SIZE), "--pool", "shared")
    check_query(litehit_bin, out, litehit.replay(trace_file, block_size=BLOCK_SIZE, pool="shared"), "shared")


def test_query_arguments_are_checked(trace_file):
    facts = litehit.replay(trace_file, block_size=BLOCK_SIZE)
    with pytest.raises(ValueError, match="no capacity"):
        litehit.query(facts)
    with pytest.raises(ValueError, match="capacity"):
        litehit.query(facts, ["40 parsecs"])
    table = litehit.query(facts, "40GB", capacities_blocks=5)
    block_bytes = pa.table(facts).column("block_bytes")[0].as_py()
    assert table.column("capacity_bytes").to_pylist()[:2] == [40 * GIB, 5 * block_bytes]
    assert table.column("capacity_blocks").to_pylist()[:2] == [40 * GIB // block_bytes, 5]
    # tiers=, window= and opt= are checked as the CLI checks --tiers, --window and --opt
    # (their values: tests/test_query_plan.py).
    for name, error in [("tiers", ValueError), ("window", ValueError), ("opt", litehit.LitehitError)]:
        with pytest.raises(error, match=name if name != "opt" else "facts"):
            litehit.query(facts, [1], **{name: "x"})


def mrc_rows_of_report(report: dict) -> list[dict]:
    """`mrc --json` in the long form of litehit.mrc, read here from the CLI's JSON."""
    rows = []

    def point_row(instance_id, kind, point):
        return {
            "instance_id": instance_id,
            "kind": kind,
            "percent": point.get("percent"),
            "target_hit_rate": point.get("target_hit_rate"),
            "capacity_blocks": point.get("capacity_blocks"),
            "capacity_bytes": point["capacity_bytes"],
            "capacity_gb": point["capacity_gb"],
            "hit_blocks": point.get("hit_blocks"),
            "hit_tokens": point["hit_tokens"],
            "hit_rate": point["hit_rate"],
        }

    instances = list(report["instances"])
    if report.get("pool"):
        instances.append(report["pool"]["own"])
    for instance in instances:
        name = instance["instance_id"]
        rows += [point_row(name, "curve", p) for p in instance["curve"]["points"]]
        rows += [point_row(name, "knee", k) for k in instance["knees"]]
        rows.append(point_row(name, "saturation", instance["saturation"]))
    total = report["total"]
    rows += [point_row(None, "curve", p) for p in total["curve"]["points"]]
    rows += [point_row(None, "knee", k) for k in total["knees"]]
    rows.append(point_row(None, "saturation", total["saturation"]))
    return rows


def check_mrc(litehit_bin: str, facts_path: Path, facts: litehit.Facts, max_curve_points=None):
    args = [litehit_bin, "mrc", str(facts_path), "--json"]
    kwargs = {}
    if max_curve_points is not None:
        args += ["--max-curve-points", str(max_curve_points)]
        kwargs["max_curve_points"] = max_curve_points
    report = json.loads(subprocess.run(args, check=True, capture_output=True, text=True).stdout)
    expected = mrc_rows_of_report(report)
    got = litehit.mrc(facts, **kwargs).to_pylist()
    assert len(got) == len(expected) > 0
    for ours, theirs in zip(got, expected):
        assert ours == theirs


def test_mrc_equals_the_clis_json(litehit_bin, trace_file, tmp_path):
    for flags, kwargs in [((), {}), (("--pool",), {"pool": True})]:
        out = tmp_path / f"cli{len(flags)}"
        facts_path = cli_replay(litehit_bin, trace_file, out, "--block-size", str(BLOCK_SIZE), *flags)
        facts = litehit.replay(trace_file, block_size=BLOCK_SIZE, **kwargs)
        check_mrc(litehit_bin, facts_path, facts)
        check_mrc(litehit_bin, facts_path, facts, max_curve_points=7)


@pytest.mark.shared
def test_query_and_mrc_equal_the_clis_on_the_real_traces(litehit_bin, tmp_path):
    traces = [Path(path) for path in os.environ.get("LITEHIT_SHARED_TRACES", "").split(os.pathsep) if path]
    if not traces:
        pytest.fail("LITEHIT_SHARED_TRACES names no trace")
    for index, trace in enumerate(traces):
        out = tmp_path / f"cli{index}"
        facts_path = cli_replay(litehit_bin, trace, out)
        facts = litehit.replay(trace)
        table = litehit.query(facts, CAPACITY_GB, capacities_blocks=CAPACITY_BLOCKS)
        slot_count = len(CAPACITY_GB) + len(CAPACITY_BLOCKS)
        expected = expected_query_rows(cli_query_jsonl(litehit_bin, out, CAPACITY_GB, CAPACITY_BLOCKS), slot_count)
        got = table.to_pylist()
        assert len(got) == len(expected) > 0, trace
        for ours, theirs in zip(got, expected):
            assert g6(ours.pop("hit_rate")) == theirs.pop("hit_rate"), trace
            assert {key: ours[key] for key in theirs} == theirs, trace
        check_mrc(litehit_bin, facts_path, facts)
