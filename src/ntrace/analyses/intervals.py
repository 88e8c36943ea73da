"""Interval arithmetic over whole columns: merge overlapping [start, end) intervals per track, and the gaps between them."""

from __future__ import annotations

import polars as pl

from ntrace.exprs import grouped_on

#: Bits an Int64 sort key holds: (group, start) packed into one key must stay below 2**62.
_KEY_BITS = 62

#: group_busy hashes groups of at least this many rows on average, and sums shorter ones off running sums.
RUN_MIN = 16


def reaching(frame: pl.DataFrame, group: str, start: str = "ts", end: str = "end") -> pl.DataFrame:
    """`frame` sorted by (`group`, `start`) with `_reach`: the latest end before each interval on its group (null for the first).

    `group` is an integer column (a track code). When (group, start) fits one Int64, the sort is one
    integer sort on that packed key: times counted from the frame's first instant (track codes
    times the window's length in ns below 2**62, as in most traces), else from each group's own
    first instant (many groups far apart, as steps × lanes over a long capture). Otherwise a sort
    by start, then a stable one by group, and a running max per group.
    """
    if frame.is_empty():
        return frame.with_columns(pl.col(end).alias("_reach"))
    bounds = frame.select(
        g0=pl.col(group).min(), g1=pl.col(group).max(),
        t0=pl.min_horizontal(pl.col(start).min(), pl.col(end).min()), t1=pl.max_horizontal(pl.col(start).max(), pl.col(end).max()),
        nulls=pl.col(group).null_count() + pl.col(start).null_count() + pl.col(end).null_count(),
    ).row(0, named=True)
    if not bounds["nulls"]:
        groups, width = int(bounds["g1"] - bounds["g0"]), int(bounds["t1"] - bounds["t0"])
        if _packs(groups, width):
            return _packed(frame, group, start, end, bounds["g0"], pl.lit(bounds["t0"], pl.Int64), width.bit_length())
        if width < 2**63:  # each time less its group's first fits an Int64
            low = pl.min_horizontal(start, end).min().over(group)
            offsets = frame.with_columns(_low=low)
            width = int(offsets.select((pl.max_horizontal(start, end) - pl.col("_low")).max()).item())
            if _packs(groups, width):
                return _packed(offsets, group, start, end, bounds["g0"], pl.col("_low"), width.bit_length()).drop("_low")
    ordered = frame.sort(start, maintain_order=True).sort(group, maintain_order=True, nulls_last=True)
    return ordered.with_columns(pl.col(group).set_sorted()).with_columns(_reach=pl.col(end).cum_max().shift(1).over(group))


def _packs(groups: int, width: int) -> bool:
    """Whether group codes spanning `groups` and times spanning `width` ns pack into one key below 2**62."""
    bits = width.bit_length()
    return bits < _KEY_BITS and groups < 1 << (_KEY_BITS - bits)


def _packed(frame: pl.DataFrame, group: str, start: str, end: str, g0: int, low: pl.Expr, bits: int) -> pl.DataFrame:
    """reaching() by one integer sort: (group − g0) in the high bits, time − `low` (its origin) in the low `bits`.

    The running max of packed ends restarts at every group by itself (every end of an earlier
    group is below the group's base); below the base means "first of its group".
    """
    base = (pl.col(group).cast(pl.Int64) - g0) * (1 << bits)
    ordered = frame.sort(base + (pl.col(start) - low), maintain_order=True)
    reach = (base + (pl.col(end) - low)).cum_max().shift(1)
    return ordered.with_columns(pl.col(group).set_sorted(), _reach=pl.when(reach >= base).then(reach - base + low))


def gaps(ordered: pl.DataFrame, group: str, start: str = "ts", end: str = "end") -> pl.DataFrame:
    """The idle gaps of a `reaching` frame: every stretch between merged intervals of a group, as (group, gap_start, gap_end, gap).

    Sorted by start within each group, a gap opens where an interval starts after the latest end
    seen so far (the running max of ends, so overlaps and nesting merge away).
    """
    return ordered.filter(pl.col(start) > pl.col("_reach")).select(group, gap_start="_reach", gap_end=start, gap=pl.col(start) - pl.col("_reach"))


def group_busy(ordered: pl.DataFrame, group: str, start: str = "ts", end: str = "end") -> pl.DataFrame:
    """Per group of a `reaching` frame: events, summed duration, first start, last end, span, idle (sum of gaps), gaps count and busy.

    busy is span − idle, so busy + idle = span holds exactly per group. Rows come in group order.
    Int64 sums wrap the same way however they are taken. Where groups are long (RUN_MIN rows or
    more each, as lanes, tracks and most steps are), the groups are hashed, on Polars' streaming
    engine for a large frame (ntrace.exprs.grouped_on). Where they are short (a long capture's
    many steps), each sum is read off running sums at the run's first and last rows instead:
    hashing so many groups costs several times more, but those running sums hold a copy of the
    frame and more. A frame with nulls in its group or times, which only the slower sort leaves,
    is grouped in first-seen order.
    """
    g, s, e, reach = pl.col(group), pl.col(start), pl.col(end), pl.col("_reach")
    opens_gap = s > reach
    sums = {
        "events": pl.len(), "total": (e - s).sum(), "first": s.min(), "last": e.max(),
        "idle": (s - reach).filter(opens_gap).sum(), "gaps": opens_gap.sum().cast(pl.Int64),
    }  # fmt: skip
    if sum(ordered[c].null_count() for c in (group, start, end)):
        per = ordered.group_by(group, maintain_order=True).agg(**sums)
    elif ordered.height >= RUN_MIN * ordered[group].n_unique():
        hashed = ordered.lazy().group_by(group).agg(**sums).sort(group)
        per = hashed.collect(engine=grouped_on(ordered.height))
    else:
        head, tail = (g != g.shift(1)).fill_null(True), (g != g.shift(-1)).fill_null(True)

        def summed(value: pl.Expr) -> pl.Expr:
            return value.cum_sum().filter(tail) - (value.cum_sum() - value).filter(head)

        row = pl.int_range(pl.len(), dtype=pl.Int64)
        per = ordered.lazy().select(
            g.filter(head),
            events=(row.filter(tail) - row.filter(head) + 1).cast(pl.UInt32),
            total=summed(e - s),
            first=s.filter(head),
            last=pl.max_horizontal(e, reach).filter(tail),  # the ends before the last row reach _reach at most
            idle=summed(pl.when(opens_gap).then(s - reach).otherwise(0)),
            gaps=summed(opens_gap.fill_null(False).cast(pl.Int64)),
        ).collect(engine="in-memory")  # fmt: skip
    return per.with_columns(span=pl.col("last") - pl.col("first")).with_columns(busy=pl.col("span") - pl.col("idle"))


def busy_by(frame: pl.DataFrame, keys: list[str], start: str = "start_ts", end: str = "end_ts") -> pl.DataFrame:
    """Per distinct value of the `keys` columns (any types): events, total (summed lengths) and busy (length of the union) of its [start, end) intervals, in first-seen key order."""
    codes = frame.select(keys).unique(maintain_order=True).with_row_index("_g").with_columns(pl.col("_g").cast(pl.Int64))
    if frame.is_empty():
        return codes.drop("_g").with_columns(events=pl.lit(0, pl.Int64), total=pl.lit(0, pl.Int64), busy=pl.lit(0, pl.Int64))
    keyed = frame.join(codes, on=keys, how="left", nulls_equal=True).select("_g", ts=start, end=end)
    per = group_busy(reaching(keyed, "_g"), "_g").select("_g", events=pl.col("events").cast(pl.Int64), total="total", busy="busy")
    return codes.join(per, on="_g", how="left", maintain_order="left").drop("_g")
