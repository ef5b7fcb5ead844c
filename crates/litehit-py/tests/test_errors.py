"""Bad input raises LitehitError naming file, line (or row) and field; never a crash."""

from __future__ import annotations

import json

import pyarrow as pa
import pytest

import litehit


def good(index, timestamp_ns=None):
    return {
        "instance_id": "a",
        "trace_id": f"t{index}",
        "timestamp_ns": 1000 + index if timestamp_ns is None else timestamp_ns,
        "keys": [1, 2, index + 3],
        "input_len": 48,
    }


def test_a_bad_trace_line_is_named_by_file_line_and_field(tmp_path):
    trace = tmp_path / "bad.jsonl"
    lines = [json.dumps({"type": "get", **good(i)}) for i in range(2)]
    lines.append(json.dumps({"type": "get", **good(2), "keys": [1, "x"]}))
    trace.write_text("\n".join(lines) + "\n")
    with pytest.raises(litehit.LitehitError) as error:
        litehit.replay(trace, block_size=16)
    message = str(error.value)
    assert str(trace) in message and "line 3" in message and "keys" in message, message
    assert isinstance(error.value, ValueError)


def test_bad_rows_are_named_by_row_and_field():
    rows = [good(0), {**good(1), "keys": "not a list"}]
    with pytest.raises(litehit.LitehitError, match=r'rows: row 2: field "keys"'):
        litehit.replay(rows, block_size=16)
    with pytest.raises(litehit.LitehitError, match=r'row 1: field "instance_id": missing'):
        litehit.replay([{"timestamp_ns": 1, "keys": []}])
    with pytest.raises(litehit.LitehitError, match=r"row 2: .*not sorted by timestamp_ns"):
        litehit.replay([good(0, 5), good(1, 4)], block_size=16)
    with pytest.raises(litehit.LitehitError, match=r'row 1: field "input_len"'):
        litehit.replay([{**good(0), "input_len": -1}])


def test_bad_arrow_rows_name_the_column_or_row_and_field():
    with pytest.raises(litehit.LitehitError, match=r'no column "keys"'):
        litehit.replay(pa.table({"instance_id": ["a"], "timestamp_ns": [1]}))
    table = pa.table(
        {
            "instance_id": ["a", None],
            "timestamp_ns": [1, 2],
            "keys": pa.array([[1], [2]], type=pa.list_(pa.uint64())),
        }
    )
    with pytest.raises(litehit.LitehitError, match=r'row 2: field "instance_id"'):
        litehit.replay(table)


def test_bad_facts_files_are_named(tmp_path):
    missing = tmp_path / "nope.csv"
    with pytest.raises(litehit.LitehitError, match="nope.csv"):
        litehit.Facts.read(missing)
    broken = tmp_path / "broken.csv"
    broken.write_text(
        "trace_id,instance_id,timestamp_ns,input_token_len,block_size_tokens,block_bytes,hit_curve\n"
        't,a,1,64,16,1024,"[[1,2]]"\n'
        't,a,x,64,16,1024,"[]"\n'
    )
    with pytest.raises(litehit.LitehitError, match=r"broken.csv: facts line 3: timestamp_ns"):
        litehit.Facts.read(broken)
    with pytest.raises(litehit.LitehitError, match=r"no column"):
        litehit.Facts.from_arrow(pa.table({"x": [1]}))
    with pytest.raises(TypeError):
        litehit.replay(42)
