"""The CSV renderer: one flat table per command (µs floats, shares 0..1), for spreadsheets and scripts; text cells are made inert (no control characters, no formulas)."""

from __future__ import annotations

from typing import Sequence

import polars as pl

from ntrace.analyses.ops import OpView
from ntrace.errors import one_line
from ntrace.neuron.artifacts import Session
from ntrace.render.tables import artifact_files_frame, compare_frame, device_frame, diff_ops_frame, ranks_frame, summary_frame
from ntrace.workflows.analyze import Analysis
from ntrace.workflows.compare import Comparison
from ntrace.workflows.device import DeviceAnalysis
from ntrace.workflows.diff import Diff
from ntrace.workflows.ranks import RankAnalysis


#: A cell a spreadsheet would run as a formula: it starts with =, +, -, @, a tab or a carriage return.
_FORMULA_START = r"^[=+\-@\t\r]"
#: C0 controls, DEL and C1 controls: what a terminal or a spreadsheet would act on.
_CONTROL = r"[\x00-\x1f\x7f-\x9f]"


def frame_csv(frame: pl.DataFrame) -> str:
    """Any display frame as CSV text with a header row (nested columns are written as JSON text), every text cell made inert.

    Text cells holding control characters get them as escapes (\\x1b, \\r), as in the text output;
    a text cell starting like a spreadsheet formula (=, +, -, @) gets a leading ' (OWASP's CSV
    injection advice), so a spreadsheet shows it as text and never runs it. Numbers are untouched.
    """
    nested = [c for c, t in frame.schema.items() if isinstance(t, (pl.List, pl.Struct, pl.Array))]
    if nested:
        frame = frame.with_columns(pl.struct(pl.col(c).alias("v")).struct.json_encode().str.slice(5).str.strip_suffix("}").alias(c) for c in nested)
    return frame.with_columns(_inert(c) for c, t in frame.schema.items() if t == pl.String).write_csv()


def _inert(column: str) -> pl.Expr:
    """A text column with control characters escaped and formula-like cells prefixed by '."""
    col = pl.col(column)
    escaped = pl.when(col.str.contains(_CONTROL)).then(col.map_elements(one_line, return_dtype=pl.String)).otherwise(col)
    return pl.when(escaped.str.contains(_FORMULA_START)).then(pl.lit("'") + escaped).otherwise(escaped).alias(column)


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
