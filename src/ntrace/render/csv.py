"""The CSV renderer: one flat table per command (µs floats, shares 0..1), for spreadsheets and scripts."""

from __future__ import annotations

from typing import Sequence

import polars as pl

from ntrace.analyses.ops import OpView
from ntrace.neuron.artifacts import Session
from ntrace.render.tables import artifact_files_frame, compare_frame, device_frame, diff_ops_frame, ranks_frame, summary_frame
from ntrace.workflows.analyze import Analysis
from ntrace.workflows.compare import Comparison
from ntrace.workflows.device import DeviceAnalysis
from ntrace.workflows.diff import Diff
from ntrace.workflows.ranks import RankAnalysis


def frame_csv(frame: pl.DataFrame) -> str:
    """Any display frame as CSV text with a header row (nested columns are written as JSON text)."""
    nested = [c for c, t in frame.schema.items() if isinstance(t, (pl.List, pl.Struct, pl.Array))]
    if nested:
        frame = frame.with_columns(pl.struct(pl.col(c).alias("v")).struct.json_encode().str.slice(5).str.strip_suffix("}").alias(c) for c in nested)
    return frame.write_csv()


def analysis(result: Analysis, view: OpView = OpView()) -> str:
    """The analysis as CSV: per trace its window, per-lane busy time and events, and both gap kinds' statistics."""
    return frame_csv(summary_frame(result))


def compare(comparison: Comparison) -> str:
    """A variant comparison (ntrace.compare) as CSV: one row per variant."""
    return frame_csv(compare_frame(comparison))


def diff(d: Diff) -> str:
    """A diff as CSV: one row per op (statuses, calls, self device/CPU before and after in µs, change in %)."""
    return frame_csv(diff_ops_frame(d))


def artifacts(sessions: Sequence[Session]) -> str:
    """Artifact sessions as CSV: one row per NEFF, NTFF or .pb file."""
    return frame_csv(artifact_files_frame(sessions))


def device(result: DeviceAnalysis) -> str:
    """Device profiles as CSV: one row per profile."""
    return frame_csv(device_frame(result))


def ranks(result: RankAnalysis) -> str:
    """Many ranks as CSV: one row per rank (figures in µs, overlap in percent, clock offset, rank rule, trace)."""
    return frame_csv(ranks_frame(result))
