"""The CSV renderer: one flat table per run (µs floats, shares 0..1, columns from the one vocabulary), for spreadsheets and scripts; `--table` picks which (ntrace.render.tables.CSV_TABLES); text cells are made inert (no control characters, no formulas)."""

from __future__ import annotations

from typing import Callable, Sequence

import polars as pl

from ntrace.analyses.opview import OpView
from ntrace.errors import one_line
from ntrace.exprs import each_on_polars_thread
from ntrace.neuron.artifacts import Session
from ntrace.render.tables import (
    artifact_files_frame, compare_frame, device_frame, diff_gaps_frame, diff_lanes_frame, diff_ops_frame, findings_frame, gaps_frame, kernels_frame, lanes_frame,
    memory_devices_frame, memory_ops_frame, ops_frame, rank_collectives_frame, rank_stats_values, ranks_frame, step_devices_frame, steps_frame, stragglers_frame, summary_frame, tracks_frame, variant_names,
)
from ntrace.summary import Summary
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


#: analyze's per-trace tables, by --table name; each row gets the trace's name in a leading `trace` column.
_PER_TRACE: dict[str, Callable[[Summary, OpView], pl.DataFrame]] = {
    "lanes": lambda s, v: lanes_frame(s),
    "tracks": lambda s, v: tracks_frame(s),
    "gaps": lambda s, v: gaps_frame(s),
    "steps": lambda s, v: steps_frame(s),
    "step_devices": lambda s, v: step_devices_frame(s),
    "ops": ops_frame,
    "kernels": lambda s, v: kernels_frame(s).head(v.top) if v.top else kernels_frame(s),
    "findings": lambda s, v: findings_frame(s),
    "memory_devices": lambda s, v: memory_devices_frame(s),
    "memory_ops": lambda s, v: memory_ops_frame(s),
}


def analysis(result: Analysis, view: OpView = OpView(), table: str = "summary") -> str:
    """The analysis as CSV: `summary` is one row per trace (window, events and busy per lane, gap statistics, footers); any other table of CSV_TABLES["analyze"] has every trace's rows, each led by its `trace`."""
    if table == "summary":
        return frame_csv(summary_frame(result))
    names = variant_names(result.summaries, result.root)

    def rows(item: tuple[Summary, str]) -> pl.DataFrame:
        summary, name = item
        return _PER_TRACE[table](summary, view).select(pl.lit(name).alias("trace"), pl.all())

    frames = each_on_polars_thread(rows, zip(result.summaries, names))
    return frame_csv(pl.concat(frames, how="diagonal_relaxed")) if frames else ""


def compare(comparison: Comparison) -> str:
    """A variant comparison (ntrace.compare) as CSV: one row per variant."""
    return frame_csv(compare_frame(comparison))


def diff(d: Diff, table: str = "ops") -> str:
    """A diff as CSV: `ops` one row per op (statuses, calls, self device/CPU before and after in µs, change in %), `lanes` per lane, `gaps` per gap kind."""
    return frame_csv({"ops": diff_ops_frame, "lanes": diff_lanes_frame, "gaps": diff_gaps_frame}[table](d))


def artifacts(sessions: Sequence[Session]) -> str:
    """Artifact sessions as CSV: one row per NEFF, NTFF or .pb file."""
    return frame_csv(artifact_files_frame(sessions))


def device(result: DeviceAnalysis) -> str:
    """Device profiles as CSV: one row per profile."""
    return frame_csv(device_frame(result))


def ranks(result: RankAnalysis, table: str = "ranks") -> str:
    """Many ranks as CSV: `ranks` one row per rank (figures in µs, overlap in percent, clock offset, rank rule, trace); `stats`, `collectives`, `stragglers` as their names say."""
    frames = {"ranks": ranks_frame, "stats": rank_stats_values, "collectives": rank_collectives_frame, "stragglers": stragglers_frame}
    return frame_csv(frames[table](result))
