"""Keep sums over many traces inside int64: each trace's figures fit (ntrace.io.bounds), but a variant's or a diff side's sum of them need not, and Polars sums Int64 without checking.

A set of traces is summed as it is unless some figure summed over all of them would pass int64
(no real set comes near: that is 292 years of time). Otherwise the first trace is kept and each
later one that would carry a running sum past int64 is left out, with a warning naming it.
Every sum over traces is bounded by one of the sums checked here: Σ|value| per trace of each
column of the lane and op tables, of the device and self-CPU footers and of each gap series.
"""

from __future__ import annotations

from typing import Sequence

import polars as pl

from ntrace.analyses.device import DeviceReport
from ntrace.exprs import stacked
from ntrace.io.bounds import INT64_MAX
from ntrace.summary import Summary

#: The columns of each summary frame that commands sum over traces.
_SUMMED = {
    "lanes": ("events", "total", "busy"),
    "op_groups": ("calls", "self_cpu", "cpu_total", "self_device", "device_total"),
}
#: The gap series (one value per gap) whose values commands pool over traces.
_POOLED = ("idle_gaps", "launch_latencies", "queue_delays")


def summable(summaries: Sequence[Summary], of: str) -> tuple[list[Summary], list[str]]:
    """The summaries in order, less each one that would carry a figure summed over them past int64; a warning names each left out of `of` (what the set is called)."""
    return summable_sets([(summaries, of)])[0]


def summable_sets(sets: Sequence[tuple[Sequence[Summary], str]]) -> list[tuple[list[Summary], list[str]]]:
    """summable of each (summaries, name) set, the sizes of every set's traces found by one query per figure over all of them (not one per set: compare has a set per trace)."""
    every = [s for summaries, _ in sets for s in summaries]
    sizes = [[abs(s.device_ns), abs(s.self_cpu_ns)] for s in every]
    for frame, columns in _SUMMED.items():
        _add(sizes, [getattr(s, frame) for s in every], columns)
    for series in _POOLED:
        _add(sizes, [getattr(s, series).to_frame("value") for s in every], ("value",))
    out = []
    start = 0
    for summaries, of in sets:
        keep = _within(sizes[start : start + len(summaries)])
        start += len(summaries)
        notes = [f"{s.path}: left out of {of}: with it, sums over {of}'s traces would pass what int64 ns hold" for s, k in zip(summaries, keep) if not k]
        out.append(([s for s, k in zip(summaries, keep) if k], notes))
    return out


def summable_reports(reports: Sequence[DeviceReport], of: str) -> tuple[list[DeviceReport], list[str]]:
    """The device reports in order, less each one that would carry a figure summed over them (span, DMA bytes, active time per engine) past int64; a warning names each left out."""
    sizes = [[abs(r.span_ns)] for r in reports]
    _add(sizes, [r.dma for r in reports], ("bytes",))
    _add(sizes, [r.engines for r in reports], ("active_ns",))
    keep = _within(sizes)
    notes = [f"{r.path}: left out of {of}: with it, sums over {of}'s device profiles would pass what int64 holds" for r, k in zip(reports, keep) if not k]
    return [r for r, k in zip(reports, keep) if k], notes


def _add(sizes: list[list[int]], frames: list[pl.DataFrame], columns: tuple[str, ...]) -> None:
    """Append to each trace's sizes the Σ|value| of each of `columns` in its frame (Int128, so these sums cannot wrap themselves): one query for every trace."""
    if not frames:
        return
    per = (
        stacked(frames, frames[0].schema)
        .group_by("trace")
        .agg(pl.col(c).cast(pl.Int128).abs().sum() for c in columns)
        .collect(engine="in-memory")
    )
    found = {row[0]: row[1:] for row in per.iter_rows()}
    for i, size in enumerate(sizes):
        size.extend(int(v or 0) for v in found.get(i, (0,) * len(columns)))


def _within(sizes: list[list[int]]) -> list[bool]:
    """Whether each trace is kept: all of them when every column's total fits int64; else the first (its own figures fit) and each later one that keeps every running total it adds to within int64."""
    if all(sum(column) <= INT64_MAX for column in zip(*sizes)):
        return [True] * len(sizes)
    running = sizes[0]
    keep = [True]
    for size in sizes[1:]:
        keep.append(all(a + b <= INT64_MAX or not b for a, b in zip(running, size)))
        if keep[-1]:
            running = [a + b for a, b in zip(running, size)]
    return keep
