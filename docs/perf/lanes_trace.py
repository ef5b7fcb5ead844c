#!/usr/bin/env python3
"""Writes a standard trace whose rows make the same lanes by instance and by tenant.

The Mooncake conversation trace (../shared/traces) repeated REPEATS times, each repetition's
block ids offset by 1,000,000 (a new working set), its full blocks only (the length contract
floor(input_length / 512)). Every row gets instance_id "i{g}" and tenant "t{g}" with
g = its second block id mod 8 (a conversation stays in one group), so `replay` makes the same
8 lanes of the same rows with or without `--lane-by tenant`: only how a row finds its lane
differs, which is what docs/PERFORMANCE.md compares.

    python3 docs/perf/lanes_trace.py ../shared/traces/conversation_trace.jsonl lanes.jsonl 20
"""
import json
import sys


def main() -> None:
    source, destination, repeats = sys.argv[1], sys.argv[2], int(sys.argv[3])
    with open(source) as lines:
        rows = [json.loads(line) for line in lines]
    with open(destination, "w") as out:
        number = 0
        for repeat in range(repeats):
            for row in rows:
                ids = row["hash_ids"]
                group = ids[1] % 8
                keys = [key + repeat * 1_000_000 for key in ids[: row["input_length"] // 512]]
                timestamp_ns = (repeat * 3_600_000 + row["timestamp"] + 1) * 1_000_000
                line = {
                    "type": "get",
                    "instance_id": f"i{group}",
                    "tenant": f"t{group}",
                    "trace_id": f"r{number}",
                    "timestamp_ns": timestamp_ns,
                    "keys": keys,
                    "input_len": row["input_length"],
                }
                out.write(json.dumps(line, separators=(",", ":")) + "\n")
                number += 1


if __name__ == "__main__":
    main()
