"""Launch latency and queue delay of each linked device activity, and the statistics of gaps and delays (nearest-rank percentiles, on integers)."""

from __future__ import annotations

import polars as pl

from ntrace.io.bounds import largest

#: The statistics reported for every gap or delay kind, in this order.
STATS: tuple[str, ...] = ("count", "total", "p50", "p90", "max")


def launch_delays(links: pl.DataFrame, calls: pl.DataFrame, activities: pl.DataFrame) -> pl.DataFrame:
    """Per linked device activity: the call and activity, `latency` (activity start − call start) and `queue` (activity start − call end, at least 0: HolisticTraceAnalysis's queue delay).

    `calls` (idx, name, ts, end) and `activities` (idx, name, ts, track) are the complete events on either end of the links.
    """
    return (
        links.join(activities.select(exec_idx="idx", exec="name", exec_ts="ts", track="track"), on="exec_idx")
        .join(calls.select(call_idx="idx", call="name", call_ts="ts", call_end="end"), on="call_idx")
        .with_columns(latency=pl.col("exec_ts") - pl.col("call_ts"), queue=pl.max_horizontal(pl.col("exec_ts") - pl.col("call_end"), pl.lit(0)))
        .sort("exec_ts", "exec_idx")
    )


def summable_delays(delays: pl.DataFrame) -> tuple[pl.DataFrame, int]:
    """`delays` (a launch_delays frame) less the activities with the longest delays until the rest's delays sum within int64, and how many were left out.

    A delay's size is the larger of |latency| and its queue delay, summed in Int128 so the check
    cannot wrap itself; the longest go first, ties the later activity (io.bounds.largest, the rule
    the read-time bounds use). No real trace comes near (292 years of delays), but one can be written to.
    """
    longest = largest(delays, pl.max_horizontal(pl.col("latency").cast(pl.Int128).abs(), pl.col("queue").cast(pl.Int128)), "exec_idx")
    return (delays.filter(~pl.col("exec_idx").is_in(longest.implode())), longest.len()) if longest.len() else (delays, 0)


def nearest_rank(values: pl.Series, p: int) -> int:
    """The p-th percentile of integer values by nearest rank: the ⌈p·n/100⌉-th smallest (0 for no values)."""
    n = values.len()
    if not n:
        return 0
    rank = max((p * n + 99) // 100, 1)
    return int(values.sort()[rank - 1])


def nearest_rank_of(values: pl.Expr, p: int) -> pl.Expr:
    """nearest_rank as an aggregation (per group of a group_by): the ⌈p·n/100⌉-th smallest of `values`, null for none."""
    rank = pl.max_horizontal((p * pl.len().cast(pl.Int64) + 99) // 100, pl.lit(1, pl.Int64))
    return values.sort().get(rank - 1)


def stats(values: pl.Series) -> dict[str, int]:
    """count, total, p50, p90, max of a column of ns durations (zeros when empty)."""
    if values.is_empty():
        return dict.fromkeys(STATS, 0)
    return {"count": values.len(), "total": int(values.sum()), "p50": nearest_rank(values, 50), "p90": nearest_rank(values, 90), "max": int(values.max())}  # type: ignore[arg-type]
