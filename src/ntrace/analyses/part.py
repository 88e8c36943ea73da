"""Part of a trace: the events of a time window or of a range of profiler steps, cut by one rule (docs/definitions.md section 12).

Host events are kept when they start in the window; a device activity is kept when the runtime
call that launched it starts there (wherever it ran), an unlaunched one when it starts there.
Every other event (flows, instants, counters, metadata) is kept, so links inside the part hold.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import polars as pl

from ntrace.analyses.links import ACTIVITY, CALL, launch_links
from ntrace.analyses.steps import step_windows
from ntrace.errors import InputError
from ntrace.trace import Trace
from ntrace.units import plural, us_text


@dataclass(frozen=True)
class Part:
    """Which part of a trace to analyze: `window` (start, end) in ns from the trace's first event start, end None for the last; or `steps` (first, last) ProfilerStep numbers, both kept."""

    window: tuple[int, int | None] | None = None
    steps: tuple[int, int] | None = None

    def __str__(self) -> str:
        if self.steps is not None:
            return f"--steps {self.steps[0]}-{self.steps[1]}"
        start, end = self.window or (0, None)
        return f"--window {us_text(start)}:{'' if end is None else us_text(end)} µs"


def bounds(trace: Trace, part: Part, complete: pl.DataFrame) -> tuple[int, int | None]:
    """The absolute ns [start, end) of `part` in the trace (end None: no end): the window moved to the first start, or the first chosen step's start to the last one's end."""
    if part.steps is None:
        first = complete["ts"].min()
        start, end = part.window or (0, None)
        origin = int(first) if isinstance(first, int) else 0
        return origin + start, None if end is None else origin + end
    low, high = part.steps
    windows = step_windows(complete.filter(pl.col("side") == "host").select("idx", "name", "ts", "end", "dur"))
    chosen = windows.filter(pl.col("step").is_between(low, high))
    if chosen.is_empty():
        have = windows["step"].sort()
        held = f"its steps are {have[0]}–{have[-1]}" if have.len() else "it has no ProfilerStep#N annotation"
        raise InputError(trace.path, f"{part}: no profiler step in that range ({held})")
    return int(chosen["start"].min()), int(chosen["end"].max())  # type: ignore[arg-type]


def cut(trace: Trace, part: Part) -> Trace:
    """The trace with only the events of `part` (the module's rule), and a warning saying how many complete events that kept; an error when it keeps none."""
    events = trace.events
    complete = events.filter(pl.col("ph") == "X")
    start, end = bounds(trace, part, complete)
    inside = (pl.col("ts") >= start) & (pl.lit(True) if end is None else pl.col("ts") < end)
    links = launch_links(events, complete.filter(CALL | ACTIVITY))
    launched = links.join(complete.select("idx", "ts"), left_on="call_idx", right_on="idx").select(idx="exec_idx", call_inside=inside)
    marked = events.join(launched, on="idx", how="left", maintain_order="left")
    keep = (pl.col("ph") != "X").fill_null(True) | pl.when(ACTIVITY.fill_null(False) & pl.col("call_inside").is_not_null()).then(pl.col("call_inside")).otherwise(inside).fill_null(False)
    kept = marked.filter(keep).drop("call_inside")
    count = int((kept["ph"] == "X").sum())
    if count == 0:
        raise InputError(trace.path, f"{part}: no complete event in that part of the trace")
    note = f"{trace.path}: {part}: analyzed {plural(count, 'complete event')} of {complete.height:,}"
    return replace(trace, events=kept.with_columns(pl.col("idx").set_sorted()), warnings=(*trace.warnings, note))
