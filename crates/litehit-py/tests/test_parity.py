"""litehit.replay equals `litehit replay`, value by value, from a path, dicts and Arrow."""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest

import litehit
from conftest import BLOCK_SIZE, cli_replay, read_csv_facts


def test_a_path_replays_to_the_clis_facts(litehit_bin, trace_file, tmp_path):
    for flags, kwargs in [((), {}), (("--pool",), {"pool": True}), (("--ttl-seconds", "0.000002"), {"ttl_seconds": 0.000002})]:
        expected = read_csv_facts(
            cli_replay(litehit_bin, trace_file, tmp_path / "cli", "--block-size", str(BLOCK_SIZE), *flags)
        )
        facts = litehit.replay(trace_file, block_size=BLOCK_SIZE, **kwargs)
        assert facts.num_rows == len(expected)
        assert pa.table(facts).to_pylist() == expected, flags


def test_rows_as_dicts_and_as_arrow_replay_as_the_file(trace_rows, trace_file):
    from_path = pa.table(litehit.replay(str(trace_file), block_size=BLOCK_SIZE, pool="shared"))
    from_dicts = pa.table(litehit.replay(iter(trace_rows), block_size=BLOCK_SIZE, pool="shared"))
    keys = pa.array([row["keys"] for row in trace_rows], type=pa.list_(pa.uint64()))
    arrow_rows = pa.table(
        {
            "instance_id": [row["instance_id"] for row in trace_rows],
            "timestamp_ns": pa.array([row["timestamp_ns"] for row in trace_rows], pa.int64()),
            "keys": keys,
            "input_len": pa.array([row["input_len"] for row in trace_rows], pa.uint64()),
            "trace_id": [row["trace_id"] for row in trace_rows],
        }
    )
    from_arrow = pa.table(litehit.replay(arrow_rows, block_size=BLOCK_SIZE, pool="shared"))
    assert from_dicts.equals(from_path)
    assert from_arrow.equals(from_path)
    assert set(from_path.column("instance_id").to_pylist()) >= {"shared", "engine-0"}


def test_gz_and_forced_format_read_like_the_cli(trace_file, tmp_path):
    import gzip

    packed = tmp_path / "trace.jsonl.gz"
    packed.write_bytes(gzip.compress(trace_file.read_bytes()))
    plain = pa.table(litehit.replay(trace_file, block_size=BLOCK_SIZE))
    assert pa.table(litehit.replay(packed, format="standard", block_size=BLOCK_SIZE)).equals(plain)


MODEL = "Qwen/Qwen3-32B"  # not the default KV size per token


def test_model_replays_as_the_clis_model_flag(litehit_bin, trace_file, trace_rows, tmp_path):
    expected = read_csv_facts(
        cli_replay(litehit_bin, trace_file, tmp_path / "cli", "--block-size", str(BLOCK_SIZE), "--model", MODEL)
    )
    default = pa.table(litehit.replay(trace_file, block_size=BLOCK_SIZE))
    got = pa.table(litehit.replay(trace_file, block_size=BLOCK_SIZE, model=MODEL))
    assert got.to_pylist() == expected
    # The model's KV size, not the default one: the wiring changes the geometry.
    assert got.column("block_bytes") != default.column("block_bytes")
    replayer = litehit.Replayer(block_size=BLOCK_SIZE, model=MODEL)
    assert replayer.feed(trace_rows).to_pylist() == expected
    with pytest.raises(litehit.LitehitError, match="model"):
        litehit.replay(trace_file, model="no-such/model")


def test_policies_replay_as_the_clis_policy_flag(litehit_bin, trace_file, trace_rows, tmp_path):
    flags = ("--block-size", str(BLOCK_SIZE))
    opt_only = read_csv_facts(cli_replay(litehit_bin, trace_file, tmp_path / "opt", *flags, "--policy", "opt"))
    lru_path = cli_replay(litehit_bin, trace_file, tmp_path / "both", *flags, "--policy", "lru,opt")
    lru, opt = read_csv_facts(lru_path), read_csv_facts(lru_path.with_name("litehit_facts.opt.csv"))
    assert opt == opt_only and opt != lru  # OPT beats LRU somewhere on this trace
    assert pa.table(litehit.replay(trace_file, block_size=BLOCK_SIZE, policy="opt")).to_pylist() == opt
    both = litehit.replay(trace_file, block_size=BLOCK_SIZE, policy="lru,opt")
    assert sorted(both) == ["lru", "opt"]
    assert pa.table(both["lru"]).to_pylist() == lru
    assert pa.table(both["opt"]).to_pylist() == opt
    assert pa.table(litehit.replay(iter(trace_rows), block_size=BLOCK_SIZE, policy="opt")).to_pylist() == opt
    # A Replayer fed in batches: each feed gives both policies' facts of its rows.
    replayer = litehit.Replayer(block_size=BLOCK_SIZE, policy="lru,opt")
    fed = {"lru": [], "opt": []}
    for start in range(0, len(trace_rows), 700):
        for name, batch in replayer.feed(trace_rows[start : start + 700]).items():
            fed[name] += batch.to_pylist()
    assert fed == {"lru": lru, "opt": opt}
    with pytest.raises(ValueError, match="policy"):
        litehit.replay(trace_file, policy="fifo")
    with pytest.raises(litehit.LitehitError, match="OPT"):
        litehit.replay(trace_file, block_size=BLOCK_SIZE, policy="opt", ttl_seconds=60)


@pytest.mark.shared
def test_the_real_traces_replay_to_the_clis_facts(litehit_bin, tmp_path):
    traces = [Path(path) for path in os.environ.get("LITEHIT_SHARED_TRACES", "").split(os.pathsep) if path]
    if not traces:
        pytest.fail("LITEHIT_SHARED_TRACES names no trace")
    for index, trace in enumerate(traces):
        expected = read_csv_facts(cli_replay(litehit_bin, trace, tmp_path / f"cli{index}"))
        facts = litehit.replay(trace)
        assert facts.num_rows == len(expected) > 0, trace
        assert pa.table(facts).to_pylist() == expected, trace
