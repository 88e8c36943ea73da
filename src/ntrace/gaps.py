"""Dispatch gaps: hardware idle between device executions, launch delay from runtime call to device start, their statistics."""

from __future__ import annotations

import polars as pl

from ntrace.intervals import gaps

#: The statistics reported for every gap kind, in this order.
STATS: tuple[str, ...] = ("count", "total", "p50", "p90", "max")


def hardware_idle(tracked: pl.DataFrame) -> pl.DataFrame:
    """Every idle stretch between merged hardware executions on the same device (Profile.tracked): (track, gap_start, gap_end, gap)."""
    return gaps(tracked.filter(pl.col("lane") == "hardware"), ["track"])


def launch_delays(tracked: pl.DataFrame, links: pl.DataFrame) -> pl.DataFrame:
    """For each hardware execution linked to a runtime call (Profile.tracked): device start − call start (ns), with both events' names."""
    calls = tracked.select(call_idx="idx", call=pl.col("name"), call_ts="ts")
    execs = tracked.filter(pl.col("lane") == "hardware").select(exec_idx="idx", exec=pl.col("name"), exec_ts="ts", track="track")
    return (
        links.join(execs, on="exec_idx")
        .join(calls, on="call_idx")
        .with_columns(delay=pl.col("exec_ts") - pl.col("call_ts"))
        .sort("exec_ts")
    )


def stats(values: pl.Series) -> dict[str, int]:
    """count, total, p50, p90, max of a column of ns durations (zeros when empty); percentiles are nearest-rank."""
    if values.is_empty():
        return dict.fromkeys(STATS, 0)
    row = pl.select(
        count=pl.lit(values.len()),
        total=values.sum(),
        p50=values.quantile(0.5, "nearest"),
        p90=values.quantile(0.9, "nearest"),
        max=values.max(),
    ).row(0, named=True)
    return {k: int(v) for k, v in row.items()}
