"""LiteHit: exact LRU prefix-cache hit rates at any capacity from one pass over a trace.

A pure-Python API over the native module ``litehit._litehit`` (Rust, the same library
crates as the ``litehit`` CLI, so every number equals the CLI's). See docs/PYTHON.md.
"""

from __future__ import annotations

import functools
import os
from typing import TYPE_CHECKING, Any, Dict, Iterable, List, Mapping, Optional, Sequence, Union

from ._litehit import Facts, FactsBatch, LitehitError, __version__
from ._litehit import Replayer as _NativeReplayer
from ._litehit import replay_path as _replay_path
from ._litehit import mrc_table as _mrc_table
from ._litehit import parse_capacity_gb as _parse_capacity_gb
from ._litehit import query_table as _query_table
from ._litehit import replay_rows as _replay_rows

if TYPE_CHECKING:
    import pyarrow

__all__ = ["Facts", "LitehitError", "Replayer", "mrc", "query", "replay", "__version__"]

PathLike = Union[str, "os.PathLike[str]"]


def _policy_name(policy: str) -> str:
    """``policy`` as ``--policy`` spells it (checked by the native module)."""
    if not isinstance(policy, str):
        raise TypeError(f'policy must be "lru", "opt" or "lru,opt", not {type(policy).__name__}')
    return policy


def _by_policy(pairs: list) -> Any:
    """One policy: its facts; ``"lru,opt"``: a dict of each policy's facts by name."""
    if len(pairs) == 1:
        return pairs[0][1]
    return dict(pairs)


def _options(
    block_size: Optional[int],
    trace_block_size: Optional[int],
    block_bytes: Optional[int],
    kv_bytes_per_token: Optional[int],
    ttl_seconds: Union[float, int, str, None],
    pool: Union[bool, str, None],
    model: Optional[str] = None,
    policy: str = "lru",
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
        "model": None if model is None else os.fspath(model),
        "policy": _policy_name(policy),
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
) -> Union[Facts, Dict[str, Facts]]:
    """Replays a trace and returns its facts (one row per request and lane).

    ``source`` is a path (any format and compression ``litehit replay`` reads; ``format``
    as its ``--format``, default detected), or rows: an Arrow stream or batch (pyarrow,
    polars, DuckDB) or an iterable of dicts with ``instance_id``, ``timestamp_ns``,
    ``keys`` (list of uint64), ``input_len`` and optionally ``trace_id``. The keyword
    arguments are ``litehit replay``'s flags of the same names (``pool=True`` is the pool
    lane named ``pool``; ``model`` is ``--model``: a preset's Hugging Face id or a
    ``config.json``, giving the KV bytes per token). ``policy`` is ``"lru"``, ``"opt"``
    (Belady's optimal policy) or ``"lru,opt"``, which returns ``{"lru": Facts, "opt": Facts}``.
    The GIL is released while the replay runs; Ctrl-C stops it.
    Bad input raises :class:`LitehitError` naming the file, line (or row) and field.
    """
    options = _options(
        block_size, trace_block_size, block_bytes, kv_bytes_per_token, ttl_seconds, pool, model, policy
    )
    if isinstance(source, (str, os.PathLike)):
        return _by_policy(_replay_path(os.fspath(source), format, options))
    if format != "auto":
        raise ValueError("format= applies to a path; rows are standard trace rows")
    return _by_policy(_replay_rows(source, options))


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
        self._native = _NativeReplayer(
            _options(
                block_size, trace_block_size, block_bytes, kv_bytes_per_token, ttl_seconds, pool, model, policy
            )
        )

    def feed(
        self, batch: Union[Iterable[Mapping[str, Any]], Any]
    ) -> Union["pyarrow.RecordBatch", Dict[str, "pyarrow.RecordBatch"]]:
        """Replays the rows of ``batch`` (as :func:`replay` takes rows) after those fed
        before; the facts of these rows as a ``pyarrow.RecordBatch`` (with
        ``policy="lru,opt"``: a dict of one per policy, ``"lru"`` and ``"opt"``). The GIL is
        released while it replays."""
        import pyarrow

        batches = [(name, pyarrow.record_batch(facts)) for name, facts in self._native.feed(batch)]
        return _by_policy(batches)

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


#: ``litehit mrc``'s default ``--max-curve-points``.
DEFAULT_MAX_CURVE_POINTS = 1000


def _facts_of(facts: Any) -> Facts:
    """``Facts``, a facts file (CSV or Parquet, or the directory holding one), or any Arrow
    stream with the facts columns."""
    if isinstance(facts, Facts):
        return facts
    if isinstance(facts, (str, os.PathLike)):
        return Facts.read(os.fspath(facts))
    return Facts.from_arrow(facts)


def _list_of(values: Any) -> list:
    if values is None:
        return []
    if isinstance(values, (str, bytes, int, float)):
        return [values]
    return list(values)


def _capacity_gb(value: Any) -> float:
    if isinstance(value, bool):
        raise TypeError("a capacity is a number of binary GB or a size such as \"40GB\", not a bool")
    if isinstance(value, str):
        return _parse_capacity_gb(value)
    return _parse_capacity_gb(repr(float(value)))


def _tier_entries(tiers: Any) -> Optional[List[str]]:
    """``tiers=`` as ``--tiers`` entries: ``"hbm=80GB,dram=512GB"``, a list of such entries or
    sizes, or a dict of sizes by name (top tier first)."""
    if tiers is None:
        return None
    if isinstance(tiers, str):
        entries = tiers.split(",")
    elif isinstance(tiers, Mapping):
        entries = [f"{name}={size}" for name, size in tiers.items()]
    else:
        entries = [str(entry) for entry in tiers]
    if not entries:
        raise ValueError("tiers: no tier given (sizes such as \"80GB,512GB\", or \"hbm=80GB,dram=512GB\")")
    return entries


def _window_text(window: Any) -> Optional[str]:
    """``window=`` as ``--window`` reads it: a duration (``"10m"``, ``"600s"``) or seconds."""
    if window is None or isinstance(window, str):
        return window
    if isinstance(window, bool):
        raise TypeError("window is a duration such as \"10m\" or a number of seconds, not a bool")
    if isinstance(window, int):
        return str(window)
    return repr(float(window))


@functools.lru_cache(maxsize=None)
def _query_schema(tiered: bool, with_opt: bool) -> "pyarrow.Schema":
    import pyarrow as pa

    fields = [("instance_id", pa.string())]
    if tiered:
        fields.append(("tier", pa.string()))
    fields += [
        ("capacity_bytes", pa.uint64()),
        ("capacity_blocks", pa.uint64()),
        ("total_input_tokens", pa.uint64()),
        ("total_hit_blocks", pa.uint64()),
        ("total_hit_tokens", pa.uint64()),
        ("hit_rate", pa.float64()),
    ]
    if tiered:
        fields.append(("miss_share", pa.float64()))
    if with_opt:
        fields += [
            ("opt_hit_tokens", pa.uint64()),
            ("opt_hit_rate", pa.float64()),
            ("cold_miss_tokens", pa.uint64()),
            ("capacity_miss_tokens", pa.uint64()),
            ("policy_miss_tokens", pa.int64()),
        ]
    return pa.schema(fields)


@functools.lru_cache(maxsize=None)
def _window_schema(tiered: bool) -> "pyarrow.Schema":
    import pyarrow as pa

    fields = [
        ("window_start_ns", pa.int64()),
        ("window_end_ns", pa.int64()),
        ("window_start_s", pa.float64()),
        ("window_end_s", pa.float64()),
    ]
    if tiered:
        fields.append(("tier", pa.string()))
    fields += [
        ("capacity_bytes", pa.uint64()),
        ("capacity_blocks", pa.uint64()),
        ("requests", pa.uint64()),
        ("total_input_tokens", pa.uint64()),
        ("total_hit_tokens", pa.uint64()),
        ("hit_rate", pa.float64()),
    ]
    if tiered:
        fields.append(("miss_share", pa.float64()))
    return pa.schema(fields)


@functools.lru_cache(maxsize=None)
def _mrc_schema() -> "pyarrow.Schema":
    import pyarrow as pa

    return pa.schema(
        [
            ("instance_id", pa.string()),
            ("kind", pa.string()),
            ("percent", pa.uint32()),
            ("target_hit_rate", pa.float64()),
            ("capacity_blocks", pa.uint64()),
            ("capacity_bytes", pa.uint64()),
            ("capacity_gb", pa.float64()),
            ("hit_blocks", pa.uint64()),
            ("hit_tokens", pa.uint64()),
            ("hit_rate", pa.float64()),
        ]
    )


def query(
    facts: Any,
    capacities: Union[float, str, Sequence[Union[float, str]], None] = None,
    *,
    capacities_blocks: Union[int, Sequence[int], None] = None,
    tiers: Union[str, Sequence[str], Mapping[str, Union[str, float]], None] = None,
    tier_mode: str = "exclusive",
    window: Union[str, float, None] = None,
    opt: Any = None,
) -> "pyarrow.Table":
    """The numbers ``litehit query FACTS - CAPACITIES... --capacity-blocks BLOCKS...`` prints,
    in long form: one row per (instance, capacity), instances in byte order of their id, the
    capacities in the order given (``capacities`` in binary GB, or sizes such as ``"40GB"``,
    ``"4TB"``; negative or ``"inf"`` = unlimited; then ``capacities_blocks``), then the rows
    of the total over instances (``instance_id`` null; the pool lane's rows left out, as in
    the CLI's overall line). ``facts``: :class:`Facts`, a facts file (CSV or Parquet), an
    Arrow stream of facts, or the dict ``replay(..., policy="lru,opt")`` returns (then
    ``opt`` is its OPT facts).

    ``tiers`` (``--tiers``: ``"hbm=80GB,dram=512GB"``, a list of entries or sizes, or a dict
    of sizes by name, top first) and ``tier_mode`` (``--tier-mode``: ``"exclusive"`` or
    ``"inclusive"``) add a ``tier`` column and, after each instance's capacity rows, one row
    per tier: its size, the blocks and tokens it served, its share as ``hit_rate``, and
    ``miss_share``. ``opt`` (``--opt``: the OPT facts of the same replay) adds the columns
    ``opt_hit_tokens``, ``opt_hit_rate``, ``cold_miss_tokens``, ``capacity_miss_tokens`` and
    ``policy_miss_tokens``. ``window`` (``--window``: ``"10m"``, or seconds) returns the
    windows' table instead: one row per window of trace time and capacity (or tier); see
    docs/PYTHON.md.
    """
    import pyarrow as pa

    if isinstance(facts, Mapping) and set(facts) == {"lru", "opt"}:
        if opt is not None:
            raise ValueError("opt= given twice: in the dict of replay(policy=\"lru,opt\") and as opt=")
        facts, opt = facts["lru"], facts["opt"]
    capacity_gb = [_capacity_gb(value) for value in _list_of(capacities)]
    capacity_blocks = [int(value) for value in _list_of(capacities_blocks)]
    if any(value < 0 for value in capacity_blocks):
        raise ValueError("capacities_blocks are block counts: 0 or more")
    entries = _tier_entries(tiers)
    if not capacity_gb and not capacity_blocks and entries is None:
        raise ValueError(
            "no capacity given: pass capacities (binary GB) and/or capacities_blocks (or tiers)"
        )
    asked = {
        "tiers": entries,
        "tier_mode": tier_mode,
        "window": _window_text(window),
        "opt": None if opt is None else _facts_of(opt),
    }
    columns = _query_table(_facts_of(facts), capacity_gb, capacity_blocks, asked)
    if window is not None:
        return pa.table(columns, schema=_window_schema(entries is not None))
    return pa.table(columns, schema=_query_schema(entries is not None, opt is not None))


def mrc(facts: Any, *, max_curve_points: int = DEFAULT_MAX_CURVE_POINTS) -> "pyarrow.Table":
    """``litehit mrc FACTS --json``'s curves as a table: per instance (in byte order of its
    id; the shared pool lane's own curve after them) its curve points (``kind`` ``"curve"``:
    the exact breakpoints, or an exact sample of at most ``max_curve_points``), its knees
    (``"knee"``: the smallest capacity reaching ``percent`` 50, 90, 95, 99 % of the
    unlimited-capacity hit rate, that target in ``target_hit_rate``) and its
    saturation point (``"saturation"``); then the total's (``instance_id`` null: every
    instance with its own cache of the same size in bytes; ``hit_blocks`` null, and
    ``capacity_blocks`` null unless every instance has one block size).
    """
    import pyarrow as pa

    if max_curve_points < 2:
        raise ValueError("max_curve_points: at least 2")
    columns = _mrc_table(_facts_of(facts), int(max_curve_points))
    return pa.table(columns, schema=_mrc_schema())
