"""Columns a trace leaves empty are kept as one constant null (ntrace.trace.compact): the same values and types, without a value per event."""

from __future__ import annotations

import polars as pl

from helpers import shared_trace_files
from ntrace.io import read_trace
from ntrace.trace import EVENT_COLUMNS, MEMORY_COLUMNS, compact


def test_same_values_and_types() -> None:
    frame = pl.DataFrame({"a": [1, 2, 3], "b": [None, None, None], "c": [None, "x", None]}, schema={"a": pl.Int64, "b": pl.String, "c": pl.String})
    kept = compact(frame)
    assert kept.schema == frame.schema and kept.equals(frame)
    assert kept.filter(pl.col("a") > 1).equals(frame.filter(pl.col("a") > 1))
    assert compact(frame.clear()).equals(frame.clear())


def test_a_real_traces_empty_columns_cost_nothing_per_event() -> None:
    """A trace profiled without profile_memory: its six memory columns take a few bytes in all, not 8 per event; its events are read as before."""
    path = next(p for p in shared_trace_files() if "alexnet" in p.name)
    events = read_trace(path).events
    assert events.schema == EVENT_COLUMNS and events.select(pl.col(MEMORY_COLUMNS).is_null().all()).row(0) == (True,) * len(MEMORY_COLUMNS)
    assert events.estimated_size() - events.drop(MEMORY_COLUMNS).estimated_size() < 1024 < 8 * events.height
    every_row = events.with_columns(pl.Series(c, [None] * events.height, dtype=pl.Int64) for c in MEMORY_COLUMNS)
    assert events.equals(every_row)
