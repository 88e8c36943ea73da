"""Dispatch gaps: launch delay from runtime call to device start, and the statistics of every gap kind."""

from __future__ import annotations

import polars as pl

#: The statistics reported for every gap kind, in this order.
STATS: tuple[str, ...] = ("count", "total", "p50", "p90", "max")


def launch_delays(links: pl.DataFrame, calls: pl.DataFrame, execs: pl.DataFrame) -> pl.DataFrame:
    """For each hardware execution linked to a runtime call: device start − call start (ns), with both events' names.

    `calls` (idx, name, ts) and `execs` (idx, name, ts, track) are the complete events on either end of the links.
    """
    return (
        links.join(execs.select(exec_idx="idx", exec="name", exec_ts="ts", track="track"), on="exec_idx")
        .join(calls.select(call_idx="idx", call="name", call_ts="ts"), on="call_idx")
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
