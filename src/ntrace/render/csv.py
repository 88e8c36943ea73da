"""The CSV renderer: one flat table, one row per trace (µs floats, shares 0..1), for spreadsheets and scripts."""

from __future__ import annotations

import polars as pl

from ntrace.analysis import Analysis
from ntrace.render.tables import summary_frame


def frame_csv(frame: pl.DataFrame) -> str:
    """Any display frame as CSV text with a header row (nested columns are written as JSON text)."""
    nested = [c for c, t in frame.schema.items() if isinstance(t, (pl.List, pl.Struct, pl.Array))]
    if nested:
        frame = frame.with_columns(pl.struct(pl.col(c).alias("v")).struct.json_encode().str.slice(5).str.strip_suffix("}").alias(c) for c in nested)
    return frame.write_csv()


def render(analysis: Analysis) -> str:
    """The analysis as CSV: per trace its window, per-lane busy time and events, and both gap kinds' statistics."""
    return frame_csv(summary_frame(analysis))
