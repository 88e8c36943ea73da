"""Polars expression and Series helpers every layer may use, and a way to run a function of many small queries on Polars' own thread."""

from __future__ import annotations

import contextvars
import threading
from typing import Callable, Iterable, Literal, TypeVar

import polars as pl

T = TypeVar("T")
U = TypeVar("U")

#: Items each_on_polars_thread hands to one pool thread at a time: a signal waits for one chunk, not for all of them.
CHUNK = 32

#: Rows past which a group-by into few groups runs on Polars' streaming engine (grouped_on): on fewer, starting that engine costs more than it saves.
STREAM_MIN = 100_000


def grouped_on(rows: int) -> Literal["in-memory", "streaming"]:
    """The engine for a group-by of `rows` rows into few groups: the streaming one past STREAM_MIN rows.

    The in-memory engine holds every row's group (and a multi-column key encoded per row) while it
    sums; the streaming one reads the frame a batch at a time and holds a few numbers per group.
    """
    return "streaming" if rows > STREAM_MIN else "in-memory"


def fmt(template: str, *args: pl.Expr | str) -> pl.Expr:
    """`template` with each `{}` replaced by an argument as text (null when any argument is null), as `pl.format` would.

    Built with `concat_str`: Polars' own `format` panics on a frame whose columns hold empty chunks,
    which a filter of a chunked frame (the decoder's output) gives.
    """
    pieces = template.split("{}")
    if len(pieces) != len(args) + 1:
        raise ValueError(f"{template!r} has {len(pieces) - 1} placeholders for {len(args)} arguments")
    exprs: list[pl.Expr] = [pl.lit(pieces[0])]
    for arg, piece in zip(args, pieces[1:]):
        exprs.append((pl.col(arg) if isinstance(arg, str) else arg).cast(pl.String))
        exprs.append(pl.lit(piece))
    return pl.concat_str(exprs)


def matches(column: str, pattern: str) -> pl.Expr:
    """Whether each value of `column` (text or categorical) holds a match of the regex `pattern` (null where the value is), tested once per distinct value: a categorical's rows are never made text."""
    distinct = pl.col(column).unique(maintain_order=True)  # in one order: the values and their test are two evaluations, which must align
    return pl.col(column).is_in(distinct.filter(distinct.cast(pl.String).str.contains(pattern)).implode())


def us_text(ns: pl.Expr) -> pl.Expr:
    """Int64 ns as exact decimal µs text ("-1.234", "1700000000000000.125"), as ntrace.units.us_text writes one value: JSON numbers without float rounding, a column at a time.

    A Decimal of scale 3 holds any Int64 of ns divided by 1000 exactly (38 digits), and Polars
    writes it with its three decimals: faster than cutting the integer's digits apart. The
    quotient is cast to scale 3 again, as older Polars gives it more decimals.
    """
    return (ns.cast(_US) / pl.lit(1000).cast(_US)).cast(_US).cast(pl.String)


#: µs to the ns: the Decimal us_text divides in.
_US = pl.Decimal(38, 3)


def json_string(values: pl.Expr) -> pl.Expr:
    """A string column as JSON string literals, null as `null`: escaped as orjson escapes them (the quote, the backslash and the C0 controls; DEL, C1 and the rest of Unicode left as they are)."""
    return pl.struct(values.alias("v")).struct.json_encode().str.strip_prefix('{"v":').str.strip_suffix("}")


def lookup(values: pl.Series, positions: pl.Series) -> pl.Series:
    """values[positions], null where a position is null: looked up directly, as row indices, where `gather` builds a one-expression query (most of its cost on a small frame).

    Positions are rows of `values`, below 2**32 (Polars numbers rows with 32 bits), so they are
    cast without a range check, a tenth of its cost: one out of range (a negative one wraps past
    every row) is still refused by the lookup's own bounds check.
    """
    return values[positions.cast(pl.UInt32, wrap_numerical=True)]


def nulls(n: int) -> pl.Series:
    """A column of n nulls (Int64), to scatter positions into: one null looked up n times (extend_constant builds a query)."""
    return lookup(pl.Series([None], dtype=pl.Int64), pl.int_range(n, dtype=pl.UInt32, eager=True) * 0)


def stacked(frames: list[pl.DataFrame], schema: pl.Schema, key: str = "trace") -> pl.LazyFrame:
    """The frames one under another (of `schema`), each row keyed by its frame's position in `key`: one query over many traces' small frames instead of one per trace."""
    if not frames:
        return pl.LazyFrame(schema={**schema, key: pl.Int64})
    lengths = pl.Series([f.height for f in frames], dtype=pl.Int64)
    positions = pl.select(pl.int_range(len(frames), dtype=pl.Int64).repeat_by(lengths).explode().drop_nulls()).to_series()
    return pl.concat(frames, how="vertical_relaxed").lazy().with_columns(pl.lit(positions, pl.Int64).alias(key))


def on_polars_thread(fn: Callable[[], T]) -> T:
    """fn() run on a thread of Polars' own pool: its result returned, its exception raised here.

    A query started on any other thread is handed to the pool and waited for, and on a small
    frame that handover (waking a pool thread, then the caller) costs more than the query; one
    started on a pool thread runs right there. So an analysis of many small queries costs a
    fraction of its time on the caller's thread. The caller waits inside Polars meanwhile: a
    signal it gets is handled once fn returns. fn must not wait for Polars work on another
    thread (with one pool thread, that work would never start).

    While other Python threads run, fn runs here instead: one of them could hold a lock fn
    needs (functools.cached_property's is one per attribute of a class in Python 3.11) while it
    waits for its own query, which the pool thread fn occupies would never get to.
    """
    if not _alone():
        return fn()
    result: list[T] = []
    failed: list[BaseException] = []
    context = contextvars.copy_context()

    def call(column: pl.Series, **_: object) -> pl.Series:  # Polars also passes return_dtype
        try:
            result.append(context.run(fn))
        except BaseException as exc:  # raised in the caller's thread
            failed.append(exc)
        return column

    # the aggregation of a one-group frame calls `call` once, on a pool thread
    pl.DataFrame({"group": [0]}).group_by("group").agg(done=pl.col("group").map_batches(call, return_dtype=pl.Int64))
    if failed:
        raise failed[0]
    return result[0] if result else fn()  # fn not called by this Polars: run here


def each_on_polars_thread(fn: Callable[[U], T], items: Iterable[U]) -> list[T]:
    """[fn(x) for x in items], run on a thread of Polars' pool CHUNK items at a time (see on_polars_thread): rendering many small summaries costs least there."""
    pending = list(items)
    out: list[T] = []
    for start in range(0, len(pending), CHUNK):
        part = pending[start : start + CHUNK]
        out += on_polars_thread(lambda: [fn(x) for x in part])
    return out


def _alone() -> bool:
    """Whether the calling thread is the only thread Python started (those Polars started, which Python lists as dummies when they run Python code, aside)."""
    me = threading.current_thread()
    return all(t is me or isinstance(t, threading._DummyThread) for t in threading.enumerate())
