"""Fixtures of the pytest suite: the CLI to compare with, and generated traces.

Run by `cargo test` (tests/it/python/), which builds the extension, puts it beside a copy
of python/litehit and sets LITEHIT_BIN to the CLI it built. By hand:
LITEHIT_BIN=target/debug/litehit PYTHONPATH=<that copy> python3 -m pytest crates/litehit-py/tests
"""

from __future__ import annotations

import csv
import json
import os
import random
import subprocess
from pathlib import Path

import pytest

BLOCK_SIZE = 16


def pytest_configure(config):
    config.addinivalue_line("markers", "shared: needs the real traces (LITEHIT_SHARED_TRACES)")


@pytest.fixture(scope="session")
def litehit_bin() -> str:
    binary = os.environ.get("LITEHIT_BIN")
    if not binary:
        pytest.fail("LITEHIT_BIN must name the litehit CLI the facts are compared with")
    return binary


def generated_rows(seed: int, requests: int, instances: int = 3) -> list[dict]:
    """Standard trace rows with shared prefixes: conversations that grow turn by turn
    (independent of the Rust workload generator)."""
    rng = random.Random(seed)
    conversations: list[list[int]] = []
    next_key = 1
    rows = []
    timestamp_ns = 1_000
    for index in range(requests):
        if not conversations or rng.random() < 0.3:
            conversations.append([])
        conversation = rng.choice(conversations)
        for _ in range(rng.randint(0, 6)):
            conversation.append(next_key)
            next_key += rng.choice([1, 1, 1, 2**63])  # some keys above 2^63 - 1
            next_key %= 2**64
        keys = list(conversation)
        timestamp_ns += rng.choice([0, 1, 1000])
        rows.append(
            {
                "instance_id": f"engine-{rng.randrange(instances)}",
                "trace_id": f"r{index}",
                "timestamp_ns": timestamp_ns,
                "keys": keys,
                "input_len": len(keys) * BLOCK_SIZE + rng.randrange(1, BLOCK_SIZE),
            }
        )
    return rows


def write_trace(path: Path, rows: list[dict]) -> Path:
    with path.open("w") as out:
        for row in rows:
            out.write(json.dumps({"type": "get", **row}) + "\n")
    return path


def cli_replay(litehit_bin: str, trace: Path, out_dir: Path, *flags: str) -> Path:
    subprocess.run(
        [litehit_bin, "replay", str(trace), "--out", str(out_dir), "--quiet", *flags],
        check=True,
    )
    return out_dir / "litehit_facts.csv"


def read_csv_facts(path: Path) -> list[dict]:
    """The CLI's facts CSV read with Python's own csv and json modules (not litehit's
    reader), in the columns and types of the Arrow facts."""
    with path.open(newline="") as handle:
        rows = []
        for row in csv.DictReader(handle):
            rows.append(
                {
                    "trace_id": row["trace_id"],
                    "instance_id": row["instance_id"],
                    "timestamp_ns": int(row["timestamp_ns"]),
                    "input_token_len": int(row["input_token_len"]),
                    "block_size_tokens": int(row["block_size_tokens"]),
                    "block_bytes": int(row["block_bytes"]),
                    "hit_curve": [
                        {"start": start, "run": run} for start, run in json.loads(row["hit_curve"])
                    ],
                }
            )
        return rows


@pytest.fixture(scope="session")
def trace_rows() -> list[dict]:
    return generated_rows(seed=7, requests=3000)


@pytest.fixture(scope="session")
def trace_file(tmp_path_factory, trace_rows) -> Path:
    return write_trace(tmp_path_factory.mktemp("trace") / "trace.jsonl", trace_rows)
