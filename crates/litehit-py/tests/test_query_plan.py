"""litehit.query's tiers=, opt= and window= equal `litehit query --tiers`, `--opt` and
`--window`, value by value, on generated traces and on the real ones."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

import litehit
from conftest import BLOCK_SIZE, cli_replay

CAPACITY_GB = ["0.001", "-1"]
CAPACITY_BLOCKS = [0, 3, 17]
SLOT_COUNT = len(CAPACITY_GB) + len(CAPACITY_BLOCKS)
TIERS = {"hbm": "3b", "dram": "20b", "disk": "inf"}


def cli_lines(litehit_bin: str, facts: Path, *flags: str) -> list[dict]:
    out = subprocess.run(
        [litehit_bin, "query", str(facts), "-", *flags], check=True, capture_output=True, text=True
    ).stdout
    return [json.loads(line) for line in out.splitlines()]


def capacity_flags(capacity_gb=CAPACITY_GB, capacity_blocks=CAPACITY_BLOCKS) -> list[str]:
    flags = list(capacity_gb)
    if capacity_blocks:
        flags += ["--capacity-blocks", *map(str, capacity_blocks)]
    return flags


def g6(value: float) -> float:
    """The CLI prints rates with %g (6 significant digits)."""
    return float(f"{value:.6g}")


def summary_lines(lines: list[dict]) -> list[dict]:
    """The instances' and the overall summary lines (the pool's comparison line is no row)."""
    return [line for line in lines if line.get("summary") and "pool" not in line]


def check_tiers(litehit_bin: str, facts_dir: Path, facts, mode: str) -> None:
    tier_flag = ",".join(f"{name}={size}" for name, size in TIERS.items())
    lines = summary_lines(
        cli_lines(litehit_bin, facts_dir, *capacity_flags(), "--tiers", tier_flag, "--tier-mode", mode, "--summary-only")
    )
    table = litehit.query(facts, CAPACITY_GB, capacities_blocks=CAPACITY_BLOCKS, tiers=TIERS, tier_mode=mode)
    assert table.column_names == [
        "instance_id",
        "tier",
        "capacity_bytes",
        "capacity_blocks",
        "total_input_tokens",
        "total_hit_blocks",
        "total_hit_tokens",
        "hit_rate",
        "miss_share",
    ]
    rows = table.to_pylist()
    per_line = SLOT_COUNT + len(TIERS)
    assert len(rows) == len(lines) * per_line > 0
    for index, line in enumerate(lines):
        block = rows[index * per_line : (index + 1) * per_line]
        capacity_rows, tier_rows = block[:SLOT_COUNT], block[SLOT_COUNT:]
        assert all(row["instance_id"] == line.get("instance_id") for row in block)
        assert [row["tier"] for row in capacity_rows] == [None] * SLOT_COUNT
        assert [row["total_hit_tokens"] for row in capacity_rows] == line["total_hit_tokens"]
        assert [row["tier"] for row in tier_rows] == line["tier_names"] == list(TIERS)
        assert [row["total_hit_blocks"] for row in tier_rows] == line["tier_hit_blocks"]
        assert [row["total_hit_tokens"] for row in tier_rows] == line["tier_hit_tokens"]
        assert [g6(row["hit_rate"]) for row in tier_rows] == line["tier_shares"]
        assert {g6(row["miss_share"]) for row in tier_rows} == {line["miss_share"]}
        # A tier's size both ways: 3 and 20 blocks, the last unlimited.
        assert [row["capacity_blocks"] for row in tier_rows] == [3, 20, None]
        # The tiers serve what they serve, the rest is the miss share.
        served = sum(row["total_hit_tokens"] for row in tier_rows)
        assert tier_rows[0]["miss_share"] == pytest.approx(1 - served / line["total_input_tokens"])


def test_tiers_equal_the_clis_summary(litehit_bin, trace_file, tmp_path):
    out = tmp_path / "cli"
    cli_replay(litehit_bin, trace_file, out, "--block-size", str(BLOCK_SIZE), "--pool")
    facts = litehit.replay(trace_file, block_size=BLOCK_SIZE, pool=True)
    for mode in ["exclusive", "inclusive"]:
        check_tiers(litehit_bin, out, facts, mode)
    # Tiers alone: the tier rows only, as the CLI's empty per-capacity arrays.
    table = litehit.query(facts, tiers="hbm=3b,dram=20b")
    assert table.column("tier").null_count == 0
    assert table.num_rows == 2 * len(summary_lines(cli_lines(litehit_bin, out, "--tiers", "3b,20b", "--summary-only")))
    with pytest.raises(ValueError, match="tiers"):
        litehit.query(facts, [1], tiers="hbm=3 parsecs")
    with pytest.raises(ValueError, match="tier_mode"):
        litehit.query(facts, [1], tiers="3b", tier_mode="stacked")


OPT_FIELDS = ["opt_hit_tokens", "cold_miss_tokens", "capacity_miss_tokens", "policy_miss_tokens"]


def check_opt(litehit_bin: str, facts_dir: Path, pair: dict) -> None:
    lines = summary_lines(
        cli_lines(
            litehit_bin,
            facts_dir / "litehit_facts.csv",
            *capacity_flags(),
            "--opt",
            str(facts_dir / "litehit_facts.opt.csv"),
            "--summary-only",
        )
    )
    table = litehit.query(pair, CAPACITY_GB, capacities_blocks=CAPACITY_BLOCKS)
    assert table.column_names[-5:] == [
        "opt_hit_tokens",
        "opt_hit_rate",
        "cold_miss_tokens",
        "capacity_miss_tokens",
        "policy_miss_tokens",
    ]
    rows = table.to_pylist()
    assert len(rows) == len(lines) * SLOT_COUNT > 0
    for index, line in enumerate(lines):
        block = rows[index * SLOT_COUNT : (index + 1) * SLOT_COUNT]
        assert all(row["instance_id"] == line.get("instance_id") for row in block)
        for field in OPT_FIELDS:
            assert [row[field] for row in block] == line[field], field
        assert [g6(row["opt_hit_rate"]) for row in block] == line["opt_hit_rates"]
        # LRU's misses split by cause: cold + capacity + policy + LRU's hits = input tokens.
        for row in block:
            parts = row["cold_miss_tokens"] + row["capacity_miss_tokens"] + row["policy_miss_tokens"]
            assert parts + row["total_hit_tokens"] == row["total_input_tokens"], row
    # The same given as opt=, a file path included.
    assert litehit.query(pair["lru"], CAPACITY_GB, capacities_blocks=CAPACITY_BLOCKS, opt=pair["opt"]).equals(table)
    opt_path = facts_dir / "litehit_facts.opt.csv"
    assert litehit.query(pair["lru"], CAPACITY_GB, capacities_blocks=CAPACITY_BLOCKS, opt=opt_path).equals(table)


def test_opt_equals_the_clis_summary(litehit_bin, trace_file, tmp_path):
    out = tmp_path / "cli"
    cli_replay(litehit_bin, trace_file, out, "--block-size", str(BLOCK_SIZE), "--policy", "lru,opt")
    pair = litehit.replay(trace_file, block_size=BLOCK_SIZE, policy="lru,opt")
    check_opt(litehit_bin, out, pair)
    # The OPT facts of another trace (here: of fewer rows, then of other requests) are refused.
    shorter = litehit.replay(trace_file, block_size=BLOCK_SIZE, policy="opt")
    fewer = litehit.Facts.from_arrow(__import__("pyarrow").table(shorter).slice(1))
    with pytest.raises(litehit.LitehitError, match="rows"):
        litehit.query(pair["lru"], [1], opt=fewer)
    other = litehit.replay(trace_file, block_size=BLOCK_SIZE, block_bytes=12345, policy="opt")
    with pytest.raises(litehit.LitehitError, match="not the same trace"):
        litehit.query(pair["lru"], [1], opt=other)
    with pytest.raises(ValueError, match="window"):
        litehit.query(pair, [1], window="1s")


WINDOW_FIELDS = ["requests", "total_input_tokens", "total_hit_tokens"]


def check_windows(litehit_bin: str, facts_dir: Path, facts, window, window_flag: str, tiers=None) -> int:
    flags = ["--window", window_flag]
    if tiers:
        flags += ["--tiers", ",".join(f"{name}={size}" for name, size in tiers.items())]
    else:
        flags = capacity_flags() + flags
    lines = [line for line in cli_lines(litehit_bin, facts_dir, *flags) if "pool" not in line]
    kwargs = {"tiers": tiers} if tiers else {}
    capacities = ([], []) if tiers else (CAPACITY_GB, CAPACITY_BLOCKS)
    table = litehit.query(facts, capacities[0], capacities_blocks=capacities[1], window=window, **kwargs)
    rows = table.to_pylist()
    assert len(rows) == len(lines) > 0
    for row, line in zip(rows, lines):
        assert row["window_start_ns"] == line["window_start_ns"]
        assert row["window_start_s"] == line["window_start_s"]
        assert row["window_end_s"] == line["window_end_s"]
        if tiers:
            assert row["tier"] == line["tier"]
            assert row["total_hit_tokens"] == line["tier_hit_tokens"]
            assert g6(row["hit_rate"]) == line["tier_share"]
            assert g6(row["miss_share"]) == line["miss_share"]
            assert row["requests"] == line["requests"]
            assert row["total_input_tokens"] == line["total_input_tokens"]
        else:
            assert row["capacity_blocks"] == line.get("capacity_blocks", row["capacity_blocks"])
            assert g6(row["hit_rate"]) == line["hit_rate"]
            assert {field: row[field] for field in WINDOW_FIELDS} == {field: line[field] for field in WINDOW_FIELDS}
    return len(rows)


def test_windows_equal_the_clis_lines(litehit_bin, trace_file, trace_rows, tmp_path):
    out = tmp_path / "cli"
    cli_replay(litehit_bin, trace_file, out, "--block-size", str(BLOCK_SIZE), "--pool")
    facts = litehit.replay(trace_file, block_size=BLOCK_SIZE, pool=True)
    # Seconds as a number, or a duration as the CLI reads it.
    rows = check_windows(litehit_bin, out, facts, 0.0002, "0.0002")
    assert rows > 2 * SLOT_COUNT
    check_windows(litehit_bin, out, facts, "1ms", "1ms")
    check_windows(litehit_bin, out, facts, "0.0003", "0.0003", tiers=TIERS)
    # A naive oracle: the windows' requests and input tokens are the trace's rows per window
    # (the pool lane's copies left out).
    table = litehit.query(facts, [], capacities_blocks=[0], window=0.0002)
    first_ns = trace_rows[0]["timestamp_ns"]
    by_window: dict = {}
    for row in trace_rows:
        start = first_ns + (row["timestamp_ns"] - first_ns) // 200_000 * 200_000
        requests, tokens = by_window.get(start, (0, 0))
        by_window[start] = (requests + 1, tokens + row["input_len"])
    got = {row["window_start_ns"]: (row["requests"], row["total_input_tokens"]) for row in table.to_pylist()}
    assert got == by_window
    with pytest.raises(ValueError, match="window"):
        litehit.query(facts, [1], window="ten minutes")
    with pytest.raises(ValueError, match="tiers"):
        litehit.query(facts, [1], window="1s", tiers="3b")


@pytest.mark.shared
def test_tiers_opt_and_windows_equal_the_clis_on_the_real_traces(litehit_bin, tmp_path):
    traces = [Path(path) for path in os.environ.get("LITEHIT_SHARED_TRACES", "").split(os.pathsep) if path]
    if not traces:
        pytest.fail("LITEHIT_SHARED_TRACES names no trace")
    for index, trace in enumerate(traces):
        out = tmp_path / f"cli{index}"
        cli_replay(litehit_bin, trace, out, "--policy", "lru,opt")
        pair = litehit.replay(trace, policy="lru,opt")
        check_tiers(litehit_bin, out / "litehit_facts.csv", pair["lru"], "exclusive")
        check_opt(litehit_bin, out, pair)
        check_windows(litehit_bin, out / "litehit_facts.csv", pair["lru"], "10m", "10m")
