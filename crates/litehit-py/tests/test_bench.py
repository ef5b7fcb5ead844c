"""The package's benchmark (bench/bench.py) in a seconds-long smoke run: tiny inputs, one round,
the same checks (Python's CSV equal to the CLI's byte for byte, both facts formats' query
summaries equal), so a benchmark that no longer runs fails the suite."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parent.parent / "bench" / "bench.py"


def test_the_benchmark_runs_its_checks_on_a_small_trace(litehit_bin, tmp_path):
    result = subprocess.run(
        [sys.executable, str(BENCH), "--litehit", litehit_bin, "--requests", "300",
         "--rounds", "1"],
        capture_output=True, text=True, env=dict(os.environ, TMPDIR=str(tmp_path)), timeout=600,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "checks: Python's CSV = the CLI's byte for byte" in result.stdout, result.stdout
    assert "x faster wall" in result.stdout, result.stdout
