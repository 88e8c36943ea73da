"""Profiler steps (ProfilerStep#N) as windows: host busy time per lane inside each CPU window, and per device the work each step launched (docs/definitions.md section 5).

Host events belong to the window in which they start and are clipped to its end. Device work
belongs to the step that launched it (HolisticTraceAnalysis's rule): the window holding the
start of its runtime call, wherever on the device it ran — kernels of step N often run after
step N's CPU window has closed.
"""

from __future__ import annotations

import polars as pl

from ntrace.analyses.intervals import group_busy, reaching
from ntrace.analyses.nesting import previous_reaching
from ntrace.exprs import lookup, matches, nulls
from ntrace.lanes import LANES
from ntrace.trace import STEP_NAME

WINDOW_SCHEMA = pl.Schema({"step": pl.Int64(), "name": pl.String(), "start": pl.Int64(), "end": pl.Int64(), "dur": pl.Int64()})
_EARLIEST = -(2**63)

#: The lanes host events fall in: hardware executions run on devices, so a step's host columns leave that lane out.
HOST_LANES: tuple[str, ...] = tuple(lane for lane in LANES if lane != "hardware")

DEVICE_SCHEMA = pl.Schema({"step": pl.Int64(), "device": pl.String(), "events": pl.Int64(), "busy": pl.Int64(), "idle": pl.Int64(), "span": pl.Int64()})


def is_step() -> pl.Expr:
    """Whether an event is a ProfilerStep#N annotation."""
    return matches("name", STEP_NAME).fill_null(False)


def step_windows(annotations: pl.DataFrame, by: tuple[str, ...] = ()) -> pl.DataFrame:
    """The host-side ProfilerStep#N events (idx, name, ts, end, dur) as windows: (step, name, start, end, dur), the first per N (per `by` key) in file order, sorted by start then file order."""
    return (
        annotations.filter(is_step())
        .sort("idx")
        .with_columns(step=pl.col("name").cast(pl.String).str.extract(STEP_NAME).cast(pl.Int64))
        .unique([*by, "step"], keep="first", maintain_order=True)
        .sort("ts", "idx")
        .select(*by, "step", "name", start="ts", end="end", dur="dur")
        .cast(dict(WINDOW_SCHEMA))  # type: ignore[arg-type]
    )


def overlapping(windows: pl.DataFrame) -> int:
    """How many windows start before the previous one (in start order) has ended: a step inside another steals its events."""
    return int(windows.select((pl.col("start") < pl.col("end").cum_max().shift(1)).sum()).item() or 0)


def host_busy(windows: pl.DataFrame, host: pl.DataFrame | pl.LazyFrame) -> pl.DataFrame:
    """Per window: the busy ns of each host lane (HOST_LANES) over the host events (lane, ts, end; the step annotations left out), each in the last window starting at or before it, clipped to that window's end.

    A lazy `host` is read by the one query that places and clips its events: no copy of them is made first.
    """
    lanes = len(LANES)
    out = windows.with_row_index("_w").with_columns(pl.col("_w").cast(pl.Int64))
    if windows.is_empty():
        return out.drop("_w").with_columns(pl.lit(0, pl.Int64).alias(f"{lane}_busy") for lane in HOST_LANES)
    clipped = (
        host.lazy()
        .with_columns(_w=pl.lit(windows["start"]).search_sorted(pl.col("ts"), side="right").cast(pl.Int64) - 1)
        .filter(pl.col("_w") >= 0)
        .with_columns(_wend=pl.lit(windows["end"]).gather(pl.col("_w")))
        .filter(pl.col("ts") < pl.col("_wend"))
        .select(_g=pl.col("_w") * lanes + pl.col("lane").to_physical().cast(pl.Int64), ts="ts", end=pl.min_horizontal("end", "_wend"))
        .collect(engine="in-memory")
    )
    keyed = reaching(clipped, "_g")
    del clipped  # reaching returned a sorted copy
    busy = group_busy(keyed, "_g").select(_w=pl.col("_g") // lanes, lane=pl.col("_g") % lanes, busy="busy")
    wide = busy.group_by("_w").agg(pl.col("busy").filter(pl.col("lane") == LANES.index(lane)).sum().alias(f"{lane}_busy") for lane in HOST_LANES)
    return out.join(wide, on="_w", how="left", maintain_order="left").drop("_w").with_columns(pl.col(f"{lane}_busy").fill_null(0) for lane in HOST_LANES)


def launch_step(windows: pl.DataFrame, instants: pl.Series) -> pl.Series:
    """For each instant: the row of the last window (in start order) holding it, start ≤ t < end, or null."""
    if windows.is_empty():
        return nulls(instants.len())
    ends = windows["end"]
    first = pl.int_range(windows.height, eager=True) == 0
    previous = previous_reaching(ends, ends, first)  # skipping back along it passes only windows that end sooner
    before = windows["start"].search_sorted(instants.fill_null(_EARLIEST), side="right").cast(pl.Int64) - 1  # the last window starting at or before
    cand = pl.select(pl.when((before >= 0) & instants.is_not_null()).then(before)).to_series()
    while True:
        closed = lookup(ends, cand) <= instants  # null where there is no candidate: any() skips it, zip_with keeps it null
        if not closed.any():
            return cand
        cand = cand.zip_with(~closed, lookup(previous, cand))


def device_work(windows: pl.DataFrame, work: pl.DataFrame, by: tuple[str, ...] = ()) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Per (step, device): events, busy, idle, span of the device activities (idx, device, ts, end, dur, call_ts) each step launched, with the windows' `by` columns; and the idx and dur of the activities launched in no step."""
    step = launch_step(windows, work["call_ts"])
    outside = work.select("idx", "dur").filter(step.is_null())
    inside = work.select("device", "ts", "end", step.alias("_w")).filter(pl.col("_w").is_not_null())  # no copy of every column first
    schema = pl.Schema({**{k: pl.Int64() for k in by}, **DEVICE_SCHEMA})
    if inside.is_empty():
        return pl.DataFrame(schema=schema), outside
    devices = inside["device"].unique().sort()
    code = pl.col("device").cast(pl.Enum(devices)).to_physical().cast(pl.Int64)
    keyed = reaching(inside.select(_g=pl.col("_w") * devices.len() + code, ts="ts", end="end"), "_g")
    per = group_busy(keyed, "_g").select(
        *(pl.lit(windows[k]).gather(pl.col("_g") // devices.len()).alias(k) for k in by),
        step=pl.lit(windows["step"]).gather(pl.col("_g") // devices.len()),
        device=pl.lit(devices).gather(pl.col("_g") % devices.len()),
        events=pl.col("events").cast(pl.Int64), busy="busy", idle="idle", span="span",
    )  # fmt: skip
    return per.cast(schema).sort("step", "device"), outside
