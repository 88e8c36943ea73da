"""Parent/child relations of host events per thread: which event directly encloses which, computed over whole columns.

Among host-side complete events on the same (pid, tid) the parent of an event is the innermost
event that contains it, with torch's tie rules (profiler_util._populate_cpu_children): events are
ordered by (start, longer first, file order); an event that starts where another ends is its
sibling; of two identical spans the first in the file is the parent. Events on one thread are
assumed to nest properly (Kineto writes them so); partly overlapping spans get no defined parent.
"""

from __future__ import annotations

from typing import cast

import polars as pl

from ntrace.analyses.totals import thread_key

#: The rank of an end that sorts before every start at its time.
_FIRST = -(2**63)

_NEST_SCHEMA = pl.Schema({"idx": pl.Int64(), "parent_idx": pl.Int64(), "depth": pl.Int64(), "open_pos": pl.Int64(), "close_pos": pl.Int64()})


#: The complete events that run on host threads and take part in nesting (the profiler's own "Trace" span excluded).
HOST_EVENT = (pl.col("side") == "host") & (pl.col("cat") != "Trace").fill_null(True)


def tree(events: pl.DataFrame) -> tuple[pl.DataFrame, pl.Series]:
    """Per event: (idx, parent_idx, depth, open_pos, close_pos) in idx order, parent_idx null at the top of a thread; and per row the row of its parent (null there too).

    depth counts enclosing events; open_pos/close_pos are the event's start and end in one global
    order of points (by thread, then time), so an event's descendants are exactly the events that
    open between its own open_pos and close_pos.

    Start and end points are sorted so that at equal times ends come before starts and a
    zero-length event closes right after it opens; the running count of open events then gives each
    event's depth, and its parent is the last event opened before it one level up (join_asof).
    """
    if events.is_empty():
        return pl.DataFrame(schema=_NEST_SCHEMA), pl.Series("parent_row", [], dtype=pl.Int64)
    events = events.sort("idx")  # a no-op on Profile frames (flagged sorted); row order is then file order, torch's last tie-break
    thread = thread_key(pl.col("pid").fill_null("?"), pl.col("tid").fill_null("?"))
    spans = events.select(thread, "ts", "end", row=pl.int_range(pl.len(), dtype=pl.Int64))
    zero = pl.col("end") == pl.col("ts")
    # Four integer columns per point: thread, time, `rank` (ends first, then longer spans first; a zero-length
    # event's end ranks as its own start) and `key` = row * 2 + (0 for a start, 1 for an end).
    starts = spans.select("thread", t="ts", rank=-pl.col("end"), key=pl.col("row") * 2)
    ends = spans.select("thread", t="end", rank=pl.when(zero).then(-pl.col("end")).otherwise(pl.lit(_FIRST)), key=pl.col("row") * 2 + 1)
    # Every (t, rank, key) is distinct, so a stable sort by thread after it gives the full order;
    # each thread's points add up to zero, so the running count over all threads is each thread's own.
    if _packs(spans):
        order = _in_rank_order(starts, ends, spans.height).select("thread", "t", "key").sort("t", maintain_order=True)
    else:
        order = pl.concat([starts, ends]).sort(["t", "rank", "key"]).select("thread", "t", "key")
    # Rows, positions and depths are Int32 (exact below 2**31 points), cast back to Int64 at the end.
    points = (
        order.sort("thread", maintain_order=True)
        .select(row=(pl.col("key") // 2).cast(pl.Int32), delta=(1 - 2 * (pl.col("key") % 2)).cast(pl.Int32))
        .with_columns(pos=pl.int_range(pl.len(), dtype=pl.Int32), depth=pl.col("delta").cum_sum() - 1)
    )
    del order
    opens = points.filter(pl.col("delta") == 1).select("row", "pos", "depth")
    closed = points.filter(pl.col("delta") == -1).select("row", "pos")
    del points
    # The last event opened one level up is on the same thread: a thread's points are contiguous and its parent opened among them.
    openers = opens.select("pos", parent_row="row", depth=pl.col("depth") + 1)
    opened = opens.join_asof(openers, on="pos", by="depth", strategy="backward", allow_exact_matches=False, check_sortedness=False)
    del opens, openers
    n = events.height

    def by_row(frame: pl.DataFrame, column: str) -> pl.Series:
        """`column` of a frame holding one row per event, put back in row order (a scatter, no sort)."""
        return pl.repeat(None, n, dtype=frame.schema[column], eager=True).scatter(frame["row"], frame[column])

    idx, parent = events["idx"], by_row(opened, "parent_row").cast(pl.Int64)
    frame = pl.DataFrame(
        {
            "idx": idx,
            "parent_idx": idx.gather(parent),
            "depth": by_row(opened, "depth"),
            "open_pos": by_row(opened, "pos"),
            "close_pos": by_row(closed, "pos"),
        }
    ).cast(_NEST_SCHEMA)
    return frame, parent.alias("parent_row")


def _packs(spans: pl.DataFrame) -> bool:
    """Whether (end span, row) of every event packs into one Int64 below 2**62, as `_in_rank_order` needs."""
    low, high = spans.select(low=pl.col("end").min(), high=pl.col("end").max()).row(0)
    return low is not None and (high - low + 1) * 2 * max(spans.height, 1) < 1 << 62


def _in_rank_order(starts: pl.DataFrame, ends: pl.DataFrame, n: int) -> pl.DataFrame:
    """The points in (rank, key) order, made with one integer sort of the starts instead of sorting all points on two keys.

    Ends of non-zero events rank first (`_FIRST`) and come in row order as made; starts and the
    ends of zero-length events follow by rank (-end, so by end descending), then key, packed in one Int64.
    """
    top = ends["t"].max()
    late = pl.concat([starts, ends.filter(pl.col("rank") != _FIRST)])
    late = late.sort((top + pl.col("rank")) * (2 * n) + pl.col("key"))  # rank = -end: top - end >= 0
    return pl.concat([ends.filter(pl.col("rank") == _FIRST), late])


def subtree_sums(nesting: pl.DataFrame, values: pl.Series) -> pl.Series:
    """Per row of a `tree` frame: the sum of `values` (one per row) over the event and all its descendants.

    Each value is placed at its event's open position and summed up to every position; an event's
    subtree is the sum up to its close minus the sum up to its open, plus its own value. No sort.
    """
    if values.is_empty():
        return values
    opens, closes = nesting["open_pos"], nesting["close_pos"]
    zeros = pl.zeros(cast(int, closes.max()) + 1, dtype=values.dtype, eager=True)
    running = zeros.scatter(opens, values).cum_sum()
    return running.gather(closes) - running.gather(opens) + values


def ancestor_rows(parent: pl.Series, target: pl.Series) -> pl.Series:
    """Per row: the row of the nearest enclosing row (itself excluded) where `target` holds, or null.

    Every row not yet at a target climbs one level per round, all at once: the loop runs over
    nesting depth, never over events.
    """
    anchor = parent
    while True:
        climbs = anchor.is_not_null() & ~target.gather(anchor).fill_null(True)
        if not climbs.any():
            return anchor.alias("anchor_row")
        anchor = parent.gather(anchor).zip_with(climbs, anchor)
