"""Keep a trace's sums inside int64 ns: Polars sums Int64 columns without checking, so events far enough apart would wrap a figure silently.

Every figure the analysis adds up is bounded by one of two sums: the complete events' durations
(lane and op totals, self CPU, device time per op), or the window's length times the number of
tracks (their spans and idle). A trace where both fit int64 is read as it is; reading real traces,
that is every one. The launch delays, one per device activity, are checked by their own sum where
they are computed (ntrace.analyses.stats.summable_delays): bounding them by the window here would
leave out most of a real capture of a day or two with a million kernels.
Where they do not (times written to break the arithmetic), the complete events furthest from the
median start are left out until the window fits, then the longest until the durations do, and
a warning counts them. Allocator records are summed by their bytes (allocated and freed per
device): where those sums would pass int64, the records moving the most bytes are left out.
"""

from __future__ import annotations

from dataclasses import replace

import polars as pl

from ntrace.trace import Trace

#: The largest value an Int64 holds.
INT64_MAX = (1 << 63) - 1

_COMPLETE = pl.col("ph") == "X"


def summable(trace: Trace) -> Trace:
    """`trace` with the events left out that would carry a sum past int64 (none, on any real trace): complete events by their ns, allocator records by their bytes; a warning counts each."""
    events, notes = trace.events, []
    if not _fits(events, None):  # every complete event counted as spanning the window: the cheap bound
        kept = _by_durations(_by_window(events))
        if dropped := events.height - kept.height:
            notes.append(f"{trace.path}: {dropped} complete events lie so far apart, or last so long, that their sums would pass what int64 ns hold; they were left out")
        events = kept
    if (too_many := largest(events, pl.col("mem_bytes").cast(pl.Int128).abs())).len():
        kept = events.filter(~pl.col("idx").is_in(too_many.implode()))
        notes.append(f"{trace.path}: {events.height - kept.height} allocator records move so many bytes that their sums would pass what int64 holds; they were left out")
        events = kept
    return replace(trace, events=events, warnings=(*trace.warnings, *notes)) if notes else trace


def largest(rows: pl.DataFrame, size: pl.Expr, key: str = "idx") -> pl.Series:
    """The `key` of the rows with the largest `size` (non-null, Int128), smallest first, beyond those whose sizes sum within int64 (ties: the later `key` goes first)."""
    if int(rows.select(size.sum()).item() or 0) <= INT64_MAX:  # the common case: one sum
        return rows[key].clear()
    running = rows.select(key, size=size).drop_nulls("size").sort("size", key).with_columns(total=pl.col("size").cum_sum())
    return running.filter(pl.col("total") > INT64_MAX)[key]


def _fits(events: pl.DataFrame, measured: int | None, durations: bool = True) -> bool:
    """Whether the complete events' durations sum within int64 (unless not `durations`), and so does their window times `measured` (how many quantities span it; None: the complete events' count)."""
    row = events.select(
        count=_COMPLETE.sum(), total=pl.col("dur").filter(_COMPLETE).cast(pl.Int128).sum(),
        first=pl.col("ts").filter(_COMPLETE).min(), last=pl.col("end").filter(_COMPLETE).max(),
    ).row(0, named=True)  # fmt: skip
    if not row["count"]:
        return True
    if durations and int(row["total"]) > INT64_MAX:
        return False
    return (int(row["last"]) - int(row["first"])) * max(row["count"] if measured is None else measured, 1) <= INT64_MAX


def _measured(events: pl.DataFrame) -> int:
    """How many quantities can span the window: the tracks, at most one per distinct pid, tid, stream, lane and side of a complete event."""
    return int(events.filter(_COMPLETE).select(pl.struct("pid", "tid", "stream", "lane", "side").n_unique()).item())


def _by_window(events: pl.DataFrame) -> pl.DataFrame:
    """The events, less the complete ones outside a window around the median start short enough that the window times _measured fits int64."""
    measured = _measured(events)
    if _fits(events, measured, durations=False):
        return events
    half = INT64_MAX // measured // 2
    middle = int(events.filter(_COMPLETE)["ts"].median())  # type: ignore[arg-type]  # a float: where the window sits need not be exact
    outside = (pl.col("ts").cast(pl.Int128) < middle - half) | (pl.col("end").cast(pl.Int128) > middle + half)
    return events.filter(~(_COMPLETE & outside))


def _by_durations(events: pl.DataFrame) -> pl.DataFrame:
    """The events, less the longest complete ones until the rest's durations sum within int64 (ties broken by file order)."""
    too_long = largest(events, pl.when(_COMPLETE).then(pl.col("dur").cast(pl.Int128)))
    return events.filter(~pl.col("idx").is_in(too_long.implode())) if too_long.len() else events
