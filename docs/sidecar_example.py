#!/usr/bin/env python3
"""Turn the token ids of requests into LiteHit standard trace rows (docs/SIDECAR.md).

Standard library only. Each row's `keys` are parent-chained 64-bit hashes of the request's
FULL blocks of `--block-size` tokens; `input_len` is the number of input tokens, the partial
tail included (it never becomes a key, but it counts in the hit-rate denominator).

    # one JSON object per line on stdin: {"instance_id", "timestamp_ns", "token_ids"[, "trace_id"]}
    python3 sidecar_example.py --block-size 16 < requests.jsonl > trace.jsonl
    # a small made-up multi-turn workload, to try the monitor
    python3 sidecar_example.py --demo --block-size 16
    # POST the rows to `litehit watch --listen 8080` instead of printing them
    python3 sidecar_example.py --demo --block-size 16 --post http://127.0.0.1:8080/v1/trace
    # ... to a monitor started with --listen-token-file token.txt
    python3 sidecar_example.py --demo --block-size 16 --post URL --token-file token.txt
"""

import argparse
import hashlib
import json
import random
import struct
import sys
import urllib.request

# The parent of a request's first block. Any fixed value works, as long as every process that
# writes rows for one trace uses the same one (a per-process random seed would make equal
# prefixes look different).
ROOT_PARENT = 0


def block_hashes(token_ids, block_size, parent=ROOT_PARENT, extra=b""):
    """Parent-chained 64-bit hashes of the full blocks of `token_ids` (signed, as JSON ints).

    key[j] = H(key[j-1], tokens of block j, extra): equal keys mean equal whole prefixes.
    `extra` is for whatever else changes the KV content of a block (a LoRA adapter, an image
    hash, a cache salt); leave it empty when there is nothing of the kind.
    """
    keys = []
    full_blocks = len(token_ids) // block_size
    for j in range(full_blocks):
        block = token_ids[j * block_size : (j + 1) * block_size]
        digest = hashlib.blake2b(digest_size=8)
        digest.update(struct.pack("<q", parent))
        digest.update(struct.pack(f"<{len(block)}I", *block))
        digest.update(extra)
        parent = struct.unpack("<q", digest.digest())[0]
        keys.append(parent)
    return keys


def trace_row(instance_id, timestamp_ns, token_ids, block_size, trace_id=None):
    """One standard `get` row: one cache lookup of a request's prompt."""
    if not token_ids:
        raise ValueError("a request has at least one input token (input_len > 0)")
    row = {
        "type": "get",
        "instance_id": instance_id,
        "timestamp_ns": int(timestamp_ns),
        "keys": block_hashes(token_ids, block_size),
        "input_len": len(token_ids),
    }
    if trace_id is not None:
        row["trace_id"] = trace_id
    return row


def demo_requests(seed=7):
    """A few conversations sharing a system prompt, each turn extending its history."""
    rng = random.Random(seed)
    system_prompt = [rng.randrange(32000) for _ in range(40)]
    histories = {f"chat-{n}": list(system_prompt) for n in range(3)}
    timestamp_ns = 1_000_000_000
    for turn in range(5):
        for name, history in histories.items():
            history.extend(rng.randrange(32000) for _ in range(rng.randrange(5, 30)))
            yield {
                "instance_id": "engine-0",
                "trace_id": f"{name}-turn-{turn}",
                "timestamp_ns": timestamp_ns,
                "token_ids": list(history),
            }
            timestamp_ns += 1_000_000
            history.extend(rng.randrange(32000) for _ in range(rng.randrange(3, 20)))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--block-size", type=int, required=True, help="tokens per block")
    parser.add_argument("--demo", action="store_true", help="made-up requests, not stdin")
    parser.add_argument("--post", metavar="URL", help="POST the rows here instead of printing")
    parser.add_argument("--token-file", metavar="PATH", help="with --post: the bearer token (watch --listen-token-file)")
    args = parser.parse_args()
    if args.block_size <= 0:
        parser.error("--block-size must be positive")
    requests = demo_requests() if args.demo else (json.loads(line) for line in sys.stdin if line.strip())
    lines = []
    for request in requests:
        row = trace_row(
            request["instance_id"],
            request["timestamp_ns"],
            request["token_ids"],
            args.block_size,
            request.get("trace_id"),
        )
        lines.append(json.dumps(row, separators=(",", ":")) + "\n")
    if args.post:
        body = "".join(lines).encode()
        post = urllib.request.Request(args.post, data=body, method="POST")
        # JSON lines: the monitor refuses the types a web page can send (text/plain, forms).
        post.add_header("Content-Type", "application/x-ndjson")
        if args.token_file:
            with open(args.token_file, encoding="utf-8") as token:
                post.add_header("Authorization", "Bearer " + token.read().strip())
        with urllib.request.urlopen(post) as reply:
            print(reply.read().decode(), file=sys.stderr, end="")
    else:
        sys.stdout.writelines(lines)


if __name__ == "__main__":
    main()
