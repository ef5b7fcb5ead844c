"""The GIL is released while a replay runs: a second Python thread makes progress during it;
and Ctrl-C stops a replay that would never end.

The replay reads a FIFO that only another Python thread of the same process writes: it can
finish only if that thread runs while the replay waits for input. It runs in a child process
with a timeout, so a replay holding the GIL fails the test (a deadlock there) instead of
hanging the suite.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from conftest import BLOCK_SIZE

CHILD = textwrap.dedent(
    """
    import os, sys, threading
    import litehit

    fifo, trace = sys.argv[1], sys.argv[2]
    written = []

    def writer():
        with open(trace, "rb") as source, open(fifo, "wb") as sink:
            for line in source:
                sink.write(line)
                written.append(1)

    thread = threading.Thread(target=writer)
    thread.start()
    facts = litehit.replay(fifo, format="standard", block_size=BLOCK_SIZE)
    thread.join()
    print(facts.num_rows, len(written))
    """
).replace("BLOCK_SIZE", str(BLOCK_SIZE))


def test_another_thread_runs_while_a_replay_waits_for_input(trace_file, trace_rows, tmp_path):
    import os

    fifo = tmp_path / "trace.fifo"
    os.mkfifo(fifo)
    child = subprocess.run(
        [sys.executable, "-c", CHILD, str(fifo), str(trace_file)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert child.returncode == 0, child.stderr
    rows, lines = map(int, child.stdout.split())
    assert rows == lines == len(trace_rows)


INTERRUPTED = textwrap.dedent(
    """
    import json, os, signal, sys, threading
    import litehit

    fifo = sys.argv[1]

    def writer():
        # An endless trace: only Ctrl-C ends the replay reading it.
        try:
            with open(fifo, "w") as sink:
                for index in range(10**9):
                    row = {"type": "get", "instance_id": "a", "timestamp_ns": index + 1,
                           "keys": [index], "input_len": 16}
                    sink.write(json.dumps(row) + "\\n")
                    if index == 1000:
                        sink.flush()
                        os.kill(os.getpid(), signal.SIGINT)
        except (BrokenPipeError, OSError):
            pass

    threading.Thread(target=writer, daemon=True).start()
    try:
        litehit.replay(fifo, format="standard", block_size=16)
    except KeyboardInterrupt:
        print("interrupted")
    """
)


def test_ctrl_c_stops_a_replay(tmp_path):
    import os

    fifo = tmp_path / "endless.fifo"
    os.mkfifo(fifo)
    child = subprocess.run(
        [sys.executable, "-c", INTERRUPTED, str(fifo)], capture_output=True, text=True, timeout=300
    )
    assert child.stdout.strip() == "interrupted", (child.returncode, child.stdout, child.stderr)
