"""Profiler steps (ProfilerStep#N) as windows: per step, the busy time of every lane and the hardware idle inside it."""

from __future__ import annotations

import polars as pl

from ntrace.analyses.intervals import group_busy, reaching
from ntrace.lanes import LANES
from ntrace.trace import STEP_NAME


def is_step(name: pl.Expr) -> pl.Expr:
    """Whether an event is a ProfilerStep#N annotation."""
    return name.str.contains(STEP_NAME).fill_null(False)


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


def step_totals(windows: pl.DataFrame, spans: pl.DataFrame, tracks: int, steps: pl.Series) -> pl.DataFrame:
    """One row per step window: its window, and for each lane the busy ns inside it, plus hardware events and idle.

    `spans` are the complete events (lane, track code, ts, end; Profile's spans), `steps` flags
    the step annotations among them (left out), `tracks` is the number of track codes. An event
    belongs to the step in which it starts and is clipped to that step's end, so each step's
    numbers stay inside its own window.
    """
    if windows.is_empty():
        return windows.with_columns(
            *(pl.lit(0, pl.Int64).alias(f"{lane}_busy") for lane in LANES),
            hardware_events=pl.lit(0, pl.Int64),
            hardware_idle=pl.lit(0, pl.Int64),
        )
    starts, ends = windows["start"], windows["end"]
    # the step each event starts in: the last window starting at or before it (a binary search, no sort of the events)
    at = starts.search_sorted(spans["ts"], side="right").cast(pl.Int64) - 1
    clipped = (  # one lazy pass: the events inside a step, clipped to its end, without intermediate copies
        spans.lazy()
        .with_columns(_step=at, _other=~steps)
        .filter(pl.col("_other") & (pl.col("_step") >= 0))
        .with_columns(step_end=pl.lit(ends).gather(pl.col("_step")))
        .filter(pl.col("ts") < pl.col("step_end"))
        .select("_step", "lane", "track", "ts", end=pl.min_horizontal("end", "step_end"))
        .filter(pl.col("end") >= pl.col("ts"))
        .collect()
    )
    lanes = len(LANES)
    by_lane = reaching(clipped.select(_g=pl.col("_step") * lanes + pl.col("lane").to_physical().cast(pl.Int64), ts="ts", end="end"), "_g")
    lane_busy = group_busy(by_lane, "_g").select(_step=pl.col("_g") // lanes, lane=pl.col("_g") % lanes, busy="busy")
    hardware = clipped.filter(pl.col("lane") == "hardware").select(_g=pl.col("_step") * tracks + pl.col("track").cast(pl.Int64), ts="ts", end="end")
    hw = (
        group_busy(reaching(hardware, "_g"), "_g")
        .group_by(_step=pl.col("_g") // tracks)
        .agg(hardware_events=pl.col("events").sum().cast(pl.Int64), hardware_idle=pl.col("idle").sum())
    )
    out = windows.with_row_index("_step").with_columns(pl.col("_step").cast(pl.Int64))
    per_step = lane_busy.group_by("_step").agg(pl.col("busy").filter(pl.col("lane") == code).first().alias(f"{lane}_busy") for code, lane in enumerate(LANES))
    out = out.join(per_step, on="_step", how="left").join(hw, on="_step", how="left")
    return out.select(
        "step", "name", "start", "end", "dur",
        *(pl.col(f"{lane}_busy").fill_null(0) for lane in LANES),
        pl.col("hardware_events").fill_null(0), pl.col("hardware_idle").fill_null(0),
    )
