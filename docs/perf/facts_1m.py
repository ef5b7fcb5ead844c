#!/usr/bin/env python3
"""Writes a 1 M-row facts file for whole-process `litehit query` timings.

The rows are the real upstream facts of ../shared/reference (132 rows of the Kimi K3 TP8
replay: their curves, token counts and block sizes), repeated with fresh trace ids, four
instances in turn and a timestamp 1 µs apart, so the file has the shape of a real replay's
facts and every row is one the facts reader accepts.

    python3 docs/perf/facts_1m.py ../shared/reference/zishano_kimi_k3_tp8_litehit_facts.csv big.csv
"""
import csv
import random
import sys

ROWS = 1_000_000
INSTANCES = ["kimi-k3.tp8.checkpoint1024", "engine-1", "engine-2", "engine-3"]

source, target = sys.argv[1], sys.argv[2]
with open(source, newline="", encoding="utf-8") as f:
    header, *rows = list(csv.reader(f))
random.seed(7)
with open(target, "w", newline="", encoding="utf-8") as f:
    out = csv.writer(f, lineterminator="\n")
    out.writerow(header)
    timestamp_ns = 1_000_000_000
    for i in range(ROWS):
        row = list(rows[i % len(rows)])
        row[0] = f"{random.getrandbits(32):08x}-{i}:main/0"
        row[1] = INSTANCES[i % len(INSTANCES)]
        timestamp_ns += 1_000
        row[2] = str(timestamp_ns)
        out.writerow(row)
