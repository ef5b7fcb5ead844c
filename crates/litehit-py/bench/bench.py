"""The Python package's performance figures (docs/PERFORMANCE.md), as ratios measured in one run:

1. `litehit.replay(path)` against `litehit replay PATH --out DIR` (whole process), on the same
   generated trace; also `replay` + `Facts.write(csv)`, the CLI's whole job in Python;
2. `polars.DataFrame(facts)` (and `pyarrow.table(facts)`) against the replay's time;
3. Parquet facts against CSV: file size, and `litehit query FACTS - <16 capacities>
   --summary-only` over each (whole process, `/usr/bin/time`), on the replay's facts and on
   `--query-facts` (e.g. the 1 M rows of docs/perf/facts_1m.py), converted by `Facts.write`.

Needs the release CLI and the release extension laid out as a package (see docs/PYTHON.md):
    cargo build --release --bin litehit && cargo build --release -p litehit-py
    mkdir -p /tmp/lh/litehit && cp crates/litehit-py/python/litehit/* /tmp/lh/litehit/ \\
        && cp target/release/lib_litehit.so /tmp/lh/litehit/_litehit.abi3.so
    PYTHONPATH=/tmp/lh python3 crates/litehit-py/bench/bench.py --litehit target/release/litehit

The trace (seeded, `--requests` rows of growing conversations over 8 instances) and the facts
go to a scratch folder under /tmp, removed at the end. Each replay timing is the best of
`--rounds`; the query comparison gives the medians of its interleaved rounds. The test suite
runs it on a tiny trace (crates/litehit-py/tests/test_bench.py).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import resource
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import polars
import pyarrow

import litehit

CAPACITIES_GB = ["0.25", "0.5", "1", "2", "4", "8", "16", "32", "64", "128", "256", "512", "1024",
                 "2048", "4096", "-1"]  # 16 slots


def write_trace(path: Path, requests: int, seed: int = 7) -> None:
    """Conversations that grow turn by turn, over 8 instances (keys chained 64-bit values)."""
    rng = random.Random(seed)
    conversations: list[list[int]] = []
    timestamp_ns = 1_000_000_000
    with path.open("w") as out:
        for index in range(requests):
            if not conversations or rng.random() < 0.2:
                conversations.append([rng.getrandbits(64) for _ in range(rng.randint(8, 64))])
            conversation = rng.choice(conversations[-200:])
            conversation.extend(rng.getrandbits(64) for _ in range(rng.randint(1, 16)))
            keys = conversation[-256:]
            timestamp_ns += rng.randint(0, 2_000_000)
            out.write(json.dumps({
                "type": "get", "instance_id": f"instance-{rng.randrange(8)}",
                "trace_id": f"r{index}", "timestamp_ns": timestamp_ns,
                "input_len": len(keys) * 16, "keys": keys,
            }) + "\n")


def cpu_seconds(who: int) -> float:
    usage = resource.getrusage(who)
    return usage.ru_utime + usage.ru_stime


def cpu_of(who: int, run) -> float:
    """CPU seconds (user + system, every thread) `run` took, of this process or its children."""
    before = cpu_seconds(who)
    run()
    return cpu_seconds(who) - before


def best_of(rounds: int, run) -> float:
    times = []
    for _ in range(rounds):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def timed_process(args: list[str]) -> tuple[float, float, int]:
    """A process's wall seconds and CPU seconds (user + system, of every thread), to the
    microsecond (`/usr/bin/time` prints hundredths), and its max RSS (KiB, `/usr/bin/time`)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(["/usr/bin/time", "-f", "%M", *args], check=True,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu, int(result.stderr.strip().splitlines()[-1])


def compare_formats(args, label: str, csv_facts: Path, parquet_facts: Path) -> None:
    """Size, and `litehit query` at 16 capacities over each (interleaved rounds)."""
    csv_bytes, parquet_bytes = csv_facts.stat().st_size, parquet_facts.stat().st_size
    print(f"{label}: CSV {csv_bytes / 1e6:.1f} MB, Parquet {parquet_bytes / 1e6:.1f} MB "
          f"({parquet_bytes / csv_bytes:.3f} x CSV)")
    runs = {"csv": [], "parquet": []}
    for _ in range(args.rounds):  # interleaved, so both see the same load
        for name, path in [("csv", csv_facts), ("parquet", parquet_facts)]:
            runs[name].append(timed_process(
                [args.litehit, "query", str(path), "-", *CAPACITIES_GB, "--summary-only"]))
    # Medians: one round at a busy moment moves them least.
    csv_wall, csv_cpu, csv_rss = (statistics.median(m) for m in zip(*runs["csv"]))
    pq_wall, pq_cpu, pq_rss = (statistics.median(m) for m in zip(*runs["parquet"]))
    print(f"  query, 16 capacities, --summary-only (medians of {args.rounds} rounds): "
          f"CSV {csv_wall:.3f} s wall / {csv_cpu:.3f} s CPU / {csv_rss / 1024:.0f} MiB; "
          f"Parquet {pq_wall:.3f} s / {pq_cpu:.3f} s / {pq_rss / 1024:.0f} MiB: "
          f"{csv_wall / max(pq_wall, 1e-6):.2f} x faster wall, "
          f"{csv_cpu / max(pq_cpu, 1e-6):.2f} x less CPU")
    summaries = [
        subprocess.run([args.litehit, "query", str(path), "-", *CAPACITIES_GB, "--summary-only"],
                       check=True, capture_output=True).stdout
        for path in [csv_facts, parquet_facts]
    ]
    assert summaries[0] == summaries[1], f"{label}: the two formats' summaries differ"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--litehit", required=True, help="the release CLI")
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--query-facts", help="a large facts CSV for the query comparison too "
                        "(docs/perf/facts_1m.py writes one)")
    args = parser.parse_args()
    scratch = Path(tempfile.mkdtemp(prefix="litehit-py-bench-"))
    try:
        trace = scratch / "trace.jsonl"
        write_trace(trace, args.requests)
        print(f"trace: {args.requests} requests, {trace.stat().st_size / 1e6:.1f} MB")
        cli = [args.litehit, "replay", str(trace), "--block-size", "16", "--quiet"]

        def cli_replay(out: Path, *flags: str) -> None:
            subprocess.run([*cli, "--out", str(out), *flags], check=True)

        # Interleaved rounds, so both see the same load; best of each, wall and CPU.
        cli_times, py_times, py_write_times, cli_cpu, py_cpu = [], [], [], [], []
        csv_out = scratch / "py.csv"
        for _ in range(args.rounds):
            cli_times.append(best_of(1, lambda: cli_replay(scratch / "cli")))
            py_times.append(best_of(1, lambda: litehit.replay(trace, block_size=16)))
            py_write_times.append(
                best_of(1, lambda: litehit.replay(trace, block_size=16).write(csv_out))
            )
            cli_cpu.append(cpu_of(resource.RUSAGE_CHILDREN, lambda: cli_replay(scratch / "cli")))
            py_cpu.append(cpu_of(resource.RUSAGE_SELF, lambda: litehit.replay(trace, block_size=16)))
        cli_s, py_s, py_write_s = min(cli_times), min(py_times), min(py_write_times)
        ratios = sorted(p / c for p, c in zip(py_times, cli_times))
        cpu_ratios = sorted(p / c for p, c in zip(py_cpu, cli_cpu))
        print(f"  litehit.replay / CLI per round, wall: {', '.join(f'{r:.3f}' for r in ratios)}; "
              f"CPU: {', '.join(f'{r:.3f}' for r in cpu_ratios)} "
              f"(best CPU: CLI {min(cli_cpu):.3f} s, Python {min(py_cpu):.3f} s)")
        # Same facts as the CLI's, byte for byte (the CSV writer is the CLI's).
        assert csv_out.read_bytes() == (scratch / "cli" / "litehit_facts.csv").read_bytes()
        print(f"replay: CLI (whole process, writes the CSV) {cli_s:.3f} s; "
              f"litehit.replay {py_s:.3f} s ({py_s / cli_s:.3f} x CLI); "
              f"litehit.replay + Facts.write(csv) {py_write_s:.3f} s ({py_write_s / cli_s:.3f} x CLI)")

        facts = litehit.replay(trace, block_size=16)
        polars.DataFrame(facts), pyarrow.table(facts)  # warm-up: lazy imports on first use
        polars_s = best_of(args.rounds, lambda: polars.DataFrame(facts))
        arrow_s = best_of(args.rounds, lambda: pyarrow.table(facts))
        frame = polars.DataFrame(facts)
        assert frame.height == facts.num_rows
        print(f"Facts -> polars: {polars_s * 1e3:.2f} ms ({polars_s / py_s:.4%} of the replay); "
              f"-> pyarrow: {arrow_s * 1e3:.2f} ms ({arrow_s / py_s:.4%}); {facts.num_rows} rows")

        cli_replay(scratch / "pq", "--facts-format", "parquet")
        compare_formats(args, "the replay's facts", scratch / "cli" / "litehit_facts.csv",
                        scratch / "pq" / "litehit_facts.parquet")
        if args.query_facts:
            parquet = scratch / "query_facts.parquet"
            litehit.Facts.read(args.query_facts).write(parquet)
            compare_formats(args, args.query_facts, Path(args.query_facts), parquet)
        print("checks: Python's CSV = the CLI's byte for byte; query summaries equal over both")
    finally:
        shutil.rmtree(scratch)


if __name__ == "__main__":
    main()
