"""Interval arithmetic over whole columns: merge overlapping [start, end) intervals per track, and the gaps between them."""

from __future__ import annotations

from typing import Sequence

import polars as pl

#: Bits an Int64 sort key holds: (group, start) packed into one key must stay below 2**62.
_KEY_BITS = 62


def _sort_keys(frame: pl.DataFrame, by: Sequence[str]) -> list[pl.Expr]:
    """Integer stand-ins for the `by` columns that sort the same way (text in lexical order), so sorts and windows compare integers."""
    keys = []
    for name in by:
        dtype = frame.schema[name]
        if dtype == pl.String or isinstance(dtype, pl.Categorical):
            values = frame.get_column(name).cast(pl.String).drop_nulls().unique().sort()
            keys.append(pl.col(name).cast(pl.String).cast(pl.Enum(values)).to_physical().alias(f"_key_{name}"))
        elif isinstance(dtype, pl.Enum):
            keys.append(pl.col(name).to_physical().alias(f"_key_{name}"))
        else:
            keys.append(pl.col(name).alias(f"_key_{name}"))
    return keys


def _group(frame: pl.DataFrame, by: list[str]) -> pl.Expr:
    """One Int64 per distinct `by` tuple that sorts like the tuple: the one key itself, or the dense rank of several."""
    keys = _sort_keys(frame, by)
    key = keys[0] if len(keys) == 1 else pl.struct(keys).rank("dense")
    return key.cast(pl.Int64).alias("_track")


def reaching(frame: pl.DataFrame, group: str, start: str = "ts", end: str = "end") -> pl.DataFrame:
    """`frame` sorted by (`group`, `start`) with `_reach`: the latest end before each interval on its group (null for the first).

    `group` is an integer column (a track code). When (group, start) fits one Int64 (track codes
    times the window's length in ns below 2**62, as in any real trace) the sort is one integer
    sort on that packed key; otherwise a sort by start, then a stable one by group.
    """
    if frame.is_empty():
        return frame.with_columns(pl.col(end).alias("_reach"))
    bounds = frame.select(
        g0=pl.col(group).min(), g1=pl.col(group).max(),
        t0=pl.min_horizontal(pl.col(start).min(), pl.col(end).min()), t1=pl.max_horizontal(pl.col(start).max(), pl.col(end).max()),
        nulls=pl.col(group).null_count() + pl.col(start).null_count() + pl.col(end).null_count(),
    ).row(0, named=True)
    bits = int(bounds["t1"] - bounds["t0"]).bit_length() if bounds["t0"] is not None else _KEY_BITS
    if not bounds["nulls"] and bits < _KEY_BITS and int(bounds["g1"] - bounds["g0"]) < 1 << (_KEY_BITS - bits):
        # group and time packed in one Int64: one integer sort, and the running max of packed ends restarts at every group
        # by itself (every end of an earlier group is below the group's base); below the base means "first of its group"
        base = (pl.col(group).cast(pl.Int64) - bounds["g0"]) * (1 << bits)
        ordered = frame.sort(base + (pl.col(start) - bounds["t0"]), maintain_order=True)
        reach = (base + (pl.col(end) - bounds["t0"])).cum_max().shift(1)
        return ordered.with_columns(pl.col(group).set_sorted()).with_columns(
            _reach=pl.when(reach >= base).then(reach - base + bounds["t0"])
        )
    ordered = frame.sort(start, maintain_order=True).sort(group, maintain_order=True, nulls_last=True)
    return ordered.with_columns(pl.col(group).set_sorted()).with_columns(_reach=pl.col(end).cum_max().shift(1).over(group))


def _reaching(frame: pl.DataFrame, by: list[str], start: str, end: str) -> pl.DataFrame:
    """The intervals sorted by track and start, with `_track` (one sorted integer per track) and `_reach` (latest end before each)."""
    return reaching(frame.select(*by, start, end, _group(frame, by)), "_track", start, end)


def gaps(frame: pl.DataFrame, by: Sequence[str], start: str = "ts", end: str = "end") -> pl.DataFrame:
    """Idle gaps per track: every stretch between merged intervals, as (*by, gap_start, gap_end, gap).

    Sorted by start within each track, a gap opens where an interval starts after the latest end
    seen so far (the running max of ends, so overlaps and nesting merge away).
    """
    by = list(by)
    return (
        _reaching(frame, by, start, end)
        .filter(pl.col(start) > pl.col("_reach"))
        .select(*by, gap_start=pl.col("_reach"), gap_end=pl.col(start), gap=pl.col(start) - pl.col("_reach"))
    )


def group_busy(ordered: pl.DataFrame, group: str, start: str = "ts", end: str = "end") -> pl.DataFrame:
    """Per group of a `reaching` frame: events, summed duration, first start, last end, span, idle (sum of gaps), gaps count and busy.

    busy is span − idle, so busy + idle = span holds exactly per group. Rows come in group order.
    """
    opens_gap = pl.col(start) > pl.col("_reach")
    return (
        ordered.group_by(group, maintain_order=True)
        .agg(
            events=pl.len(),
            total=(pl.col(end) - pl.col(start)).sum(),
            first=pl.col(start).min(),
            last=pl.col(end).max(),
            idle=(pl.col(start) - pl.col("_reach")).filter(opens_gap).sum(),
            gaps=opens_gap.sum().cast(pl.Int64),
        )
        .with_columns(span=pl.col("last") - pl.col("first"))
        .with_columns(busy=pl.col("span") - pl.col("idle"))
    )


def busy(frame: pl.DataFrame, by: Sequence[str], start: str = "ts", end: str = "end") -> pl.DataFrame:
    """Per track: events, summed duration, first start, last end, span, idle (sum of gaps), gaps count and busy (union).

    busy is span − idle, so busy + idle = span holds exactly per track; the union itself is checked
    against an independent computation in the tests. Spans and gaps come from one sorted pass,
    grouped on its integer track key.
    """
    by = list(by)
    ordered = _reaching(frame, by, start, end)
    names = ordered.group_by("_track", maintain_order=True).agg(pl.col(name).first() for name in by)
    return names.join(group_busy(ordered, "_track", start, end), on="_track", maintain_order="left").drop("_track").sort(by)
