"""Replayer: random batch sizes give one replay's facts; not picklable; finished is final."""

from __future__ import annotations

import pickle
import random

import pyarrow as pa
import pytest

import litehit
from conftest import BLOCK_SIZE


def arrow_rows(rows):
    return pa.table(
        {
            "instance_id": [row["instance_id"] for row in rows],
            "timestamp_ns": pa.array([row["timestamp_ns"] for row in rows], pa.int64()),
            "keys": pa.array([row["keys"] for row in rows], type=pa.list_(pa.uint64())),
            "input_len": pa.array([row["input_len"] for row in rows], pa.int64()),
            "trace_id": [row["trace_id"] for row in rows],
        }
    )


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_random_batches_equal_one_replay(trace_rows, seed):
    rng = random.Random(seed)
    whole = pa.table(litehit.replay(trace_rows, block_size=BLOCK_SIZE, pool=True))
    replayer = litehit.Replayer(block_size=BLOCK_SIZE, pool=True)
    parts = []
    start = 0
    while start < len(trace_rows):
        size = rng.choice([0, 1, 2, 7, 50, 333, 1000])
        chunk = trace_rows[start : start + size]
        # Dicts and Arrow tables alike.
        batch = replayer.feed(arrow_rows(chunk) if rng.random() < 0.5 else chunk)
        assert isinstance(batch, pa.RecordBatch)
        parts.append(batch)
        start += size
    assert replayer.rows_fed == len(trace_rows)
    assert pa.Table.from_batches(parts, schema=whole.schema).equals(whole)
    assert replayer.finish() == len(trace_rows)
    with pytest.raises(RuntimeError, match="finished"):
        replayer.feed(trace_rows[:1])


def test_a_replayer_cannot_be_pickled():
    replayer = litehit.Replayer()
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(replayer)
    with pytest.raises(TypeError):
        pickle.dumps(replayer._native)
