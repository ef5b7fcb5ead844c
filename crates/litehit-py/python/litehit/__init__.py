"""LiteHit: exact LRU prefix-cache hit rates at any capacity from one pass over a trace.

A pure-Python API over the native module ``litehit._litehit`` (Rust, the same library
crates as the ``litehit`` CLI, so every number equals the CLI's). See docs/PYTHON.md.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any, Iterable, Mapping, Optional, Union

from ._litehit import Facts, FactsBatch, LitehitError, __version__
from ._litehit import Replayer as _NativeReplayer
from ._litehit import replay_path as _replay_path
from ._litehit import replay_rows as _replay_rows

if TYPE_CHECKING:
    import pyarrow

__all__ = ["Facts", "LitehitError", "Replayer", "replay", "__version__"]

PathLike = Union[str, "os.PathLike[str]"]


def _not_built_yet(model: Any, policy: str) -> None:
    """``model=`` and ``policy="opt"`` are accepted, and refused until they land."""
    if model is not None:
        raise NotImplementedError(
            "model= (the KV geometry of a named model) is not available in this version; "
            "pass kv_bytes_per_token= or block_bytes="
        )
    if policy != "lru":
        if policy == "opt":
            raise NotImplementedError(
                'policy="opt" (Belady\'s optimal policy) is not available in this version'
            )
        raise ValueError(f'policy {policy!r}: expected "lru" (or "opt", not available yet)')


def _options(
    block_size: Optional[int],
    trace_block_size: Optional[int],
    block_bytes: Optional[int],
    kv_bytes_per_token: Optional[int],
    ttl_seconds: Union[float, int, str, None],
    pool: Union[bool, str, None],
) -> dict:
    if pool is True:
        pool = "pool"
    elif pool is False:
        pool = None
    return {
        "block_size": block_size,
        "trace_block_size": trace_block_size,
        "block_bytes": block_bytes,
        "kv_bytes_per_token": kv_bytes_per_token,
        "ttl_seconds": None if ttl_seconds is None else str(ttl_seconds),
        "pool": pool,
    }


def replay(
    source: Union[PathLike, Iterable[Mapping[str, Any]], Any],
    *,
    format: str = "auto",
    block_size: Optional[int] = None,
    trace_block_size: Optional[int] = None,
    block_bytes: Optional[int] = None,
    kv_bytes_per_token: Optional[int] = None,
    model: Optional[str] = None,
    ttl_seconds: Union[float, int, str, None] = None,
    pool: Union[bool, str, None] = None,
    policy: str = "lru",
) -> Facts:
    """Replays a trace and returns its facts (one row per request and lane).

    ``source`` is a path (any format and compression ``litehit replay`` reads; ``format``
    as its ``--format``, default detected), or rows: an Arrow stream or batch (pyarrow,
    polars, DuckDB) or an iterable of dicts with ``instance_id``, ``timestamp_ns``,
    ``keys`` (list of uint64), ``input_len`` and optionally ``trace_id``. The keyword
    arguments are ``litehit replay``'s flags of the same names (``pool=True`` is the pool
    lane named ``pool``). The GIL is released while the replay runs; Ctrl-C stops it.
    Bad input raises :class:`LitehitError` naming the file, line (or row) and field.
    """
    _not_built_yet(model, policy)
    options = _options(block_size, trace_block_size, block_bytes, kv_bytes_per_token, ttl_seconds, pool)
    if isinstance(source, (str, os.PathLike)):
        return _replay_path(os.fspath(source), format, options)
    if format != "auto":
        raise ValueError("format= applies to a path; rows are standard trace rows")
    return _replay_rows(source, options)


class Replayer:
    """A streaming replay: ``feed`` batches of rows in time order, get each batch's facts.

    Holds the core's state (the LRU order of every lane) between calls, so feeding a trace
    in any batch sizes gives the facts of one :func:`replay` of it. Lanes are independent:
    one ``Replayer`` per instance (a Spark group, a Ray partition by instance) is exact; the
    pool lane (``pool=``) needs every row in one ``Replayer``.

    Not picklable: its state is native memory. Create it inside the task that feeds it.
    """

    def __init__(
        self,
        *,
        block_size: Optional[int] = None,
        trace_block_size: Optional[int] = None,
        block_bytes: Optional[int] = None,
        kv_bytes_per_token: Optional[int] = None,
        model: Optional[str] = None,
        ttl_seconds: Union[float, int, str, None] = None,
        pool: Union[bool, str, None] = None,
        policy: str = "lru",
    ) -> None:
        _not_built_yet(model, policy)
        self._native = _NativeReplayer(
            _options(block_size, trace_block_size, block_bytes, kv_bytes_per_token, ttl_seconds, pool)
        )

    def feed(self, batch: Union[Iterable[Mapping[str, Any]], Any]) -> "pyarrow.RecordBatch":
        """Replays the rows of ``batch`` (as :func:`replay` takes rows) after those fed
        before; the facts of these rows as a ``pyarrow.RecordBatch`` (the GIL is released
        while it replays)."""
        import pyarrow

        return pyarrow.record_batch(self._native.feed(batch))

    def finish(self) -> int:
        """Ends the replay and frees its state (a later ``feed`` raises); rows fed."""
        return self._native.finish()

    @property
    def rows_fed(self) -> int:
        """Rows fed so far."""
        return self._native.rows_fed

    def __reduce__(self) -> Any:
        raise TypeError(
            "a litehit.Replayer holds a replay's native state and cannot be pickled: "
            "create one inside each task and feed it there"
        )
