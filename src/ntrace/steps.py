"""Profiler steps (ProfilerStep#N) as windows: per step, the busy time of every lane and the hardware idle inside it."""

from __future__ import annotations

import polars as pl

from ntrace.intervals import busy, clip
from ntrace.lanes import LANES

STEP_NAME = r"^ProfilerStep#(\d+)$"


def step_windows(complete: pl.DataFrame) -> pl.DataFrame:
    """The ProfilerStep#N annotations as windows: (step, name, start, end, dur), sorted by start."""
    return (
        complete.filter(pl.col("name").str.contains(STEP_NAME))
        .select(
            step=pl.col("name").str.extract(STEP_NAME).cast(pl.Int64),
            name="name",
            start="ts",
            end="end",
            dur="dur",
        )
        .unique("step", keep="first")
        .sort("start")
    )


def step_totals(tracked: pl.DataFrame) -> pl.DataFrame:
    """One row per step of Profile.tracked: its window, and for each lane the busy ns inside it, plus hardware events and idle.

    An event belongs to the step in which it starts and is clipped to that step's end, so each
    step's numbers stay inside its own window.
    """
    windows = step_windows(tracked)
    if windows.is_empty():
        return windows.with_columns(
            *(pl.lit(0, pl.Int64).alias(f"{lane}_busy") for lane in LANES),
            hardware_events=pl.lit(0, pl.Int64),
            hardware_idle=pl.lit(0, pl.Int64),
        )
    in_step = (
        tracked.filter(~pl.col("name").str.contains(STEP_NAME).fill_null(False))
        .select("lane", "track", "ts", "end")  # only what busy() needs travels through the sort
        .sort("ts")
        .join_asof(windows.select("step", "start", step_end="end").sort("start"), left_on="ts", right_on="start", strategy="backward")
        .filter(pl.col("step").is_not_null() & (pl.col("ts") < pl.col("step_end")))
    )
    clipped = clip(in_step, "ts", "step_end")
    lane_busy = (
        busy(clipped, ["step", "lane"])
        .pivot(on="lane", index="step", values="busy")
    )
    hw = busy(clipped.filter(pl.col("lane") == "hardware"), ["step", "track"]).group_by("step").agg(
        hardware_events=pl.col("events").sum().cast(pl.Int64), hardware_idle=pl.col("idle").sum()
    )
    out = windows.join(lane_busy, on="step", how="left").join(hw, on="step", how="left")
    return out.select(
        "step", "name", "start", "end", "dur",
        *((pl.col(lane) if lane in out.columns else pl.lit(None, pl.Int64)).fill_null(0).alias(f"{lane}_busy") for lane in LANES),
        pl.col("hardware_events").fill_null(0), pl.col("hardware_idle").fill_null(0),
    )
