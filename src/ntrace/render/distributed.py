"""The report's Distributed view, when the traces are several ranks of one job: rank × step heat maps of step time and device idle, each rank's communication, and `ntrace ranks`' table.

The figures are those of workflows.ranks and the Summary's step frames (docs/definitions.md §5,
§10); communication is per rank over the whole trace (the ranks table's comm and exposed comm),
as no per-step figure of it is defined.
"""

from __future__ import annotations

from typing import Sequence

import polars as pl

from ntrace.analyses.ranks import rank_summary
from ntrace.render.tables import ranks_frame
from ntrace.render.views import esc, table
from ntrace.summary import Summary
from ntrace.units import fmt_time
from ntrace.workflows.ranks import rank_analysis, ranked_summaries

#: Steps drawn per heat map (the first ones by number).
MAX_STEPS = 80

_CELL_H = 16
_LABEL_W = 70


def _shade(value: int, low: int, high: int, rgb: tuple[int, int, int]) -> str:
    """A light tint of `rgb` at `low` (still visible on white) to `rgb` itself at `high`."""
    f = 0.15 + 0.85 * ((value - low) / (high - low) if high > low else 1.0)
    return "#" + "".join(f"{round(255 - (255 - c) * f):02x}" for c in rgb)


def heat_map(title: str, rows: list[tuple[int, dict[int, int]]], columns: list[tuple[int, str]], rgb: tuple[int, int, int]) -> str:
    """An SVG heat map: one row per rank, one cell per column (key, label), shaded from the smallest to the largest value (ns); cells carry their value in `data-v`."""
    values = [v for _, cells in rows for v in cells.values()]
    low, high = min(values, default=0), max(values, default=0)
    cell_w = max(6, min(40, 640 // max(len(columns), 1))) if len(columns) > 4 else 90
    heading = f"{title} (lightest {fmt_time(low)}, darkest {fmt_time(high)})"
    parts = [f'<text x="0" y="12" font-weight="bold">{esc(heading)}</text>']
    for i, (rank, cells) in enumerate(rows):
        y = 20 + i * _CELL_H
        parts.append(f'<text x="0" y="{y + 12}">rank {rank}</text>')
        for j, (col, label) in enumerate(columns):
            if col in cells:
                v = cells[col]
                parts.append(
                    f'<rect class="cell" data-v="{v}" x="{_LABEL_W + j * cell_w}" y="{y}" width="{cell_w - 1}" height="{_CELL_H - 1}" fill="{_shade(v, low, high, rgb)}">'
                    f"<title>rank {rank} · {esc(label)}: {fmt_time(v)}</title></rect>"
                )
            if len(columns) <= 4 and i == len(rows) - 1:
                parts.append(f'<text x="{_LABEL_W + j * cell_w}" y="{y + _CELL_H + 12}">{esc(label)}</text>')
    width, height = max(_LABEL_W + len(columns) * cell_w + 10, int(len(heading) * 6.6)), 26 + (len(rows) + 1) * _CELL_H
    return f'<svg class="chart heat" width="{width}" height="{height}" viewBox="0 0 {width} {height}">{"".join(parts)}</svg>'


def _per_step(summary: Summary) -> tuple[dict[int, int], dict[int, int]]:
    """A rank's step durations and device idle (Σ over its devices) by step number."""
    durations = dict(summary.steps.select("step", "dur").iter_rows())
    idle = dict(summary.step_devices.group_by("step").agg(pl.col("idle").sum()).iter_rows()) if summary.step_devices.height else {}
    return durations, idle


def distributed(summaries: Sequence[Summary]) -> str:
    """The Distributed view, or "" unless at least two of the summaries are distinct ranks."""
    ranked, notes = ranked_summaries(list(summaries))
    if len(ranked) < 2:
        return ""
    result = rank_analysis([(rank, rule, rank_summary(s)) for rank, rule, s in ranked], notes)
    per_rank = [(rank, *_per_step(s)) for rank, _, s in ranked]
    steps = [(n, f"step {n}") for n in sorted({n for _, durations, _ in per_rank for n in durations})[:MAX_STEPS]]
    maps = []
    if steps:
        maps.append(heat_map("Step time", [(r, d) for r, d, _ in per_rank], steps, (78, 121, 167)))
        maps.append(heat_map("Device idle in the step's device work", [(r, i) for r, _, i in per_rank], steps, (237, 201, 72)))
    comm = [(int(row["rank"]), {0: int(row["comm"]), 1: int(row["exposed_comm"])}) for row in result.table.iter_rows(named=True)]
    maps.append(heat_map("Communication per rank", comm, [(0, "comm"), (1, "exposed comm")], (89, 161, 79)))
    more = f'<p class="note">first {MAX_STEPS} steps</p>' if len(steps) == MAX_STEPS else ""
    warnings = "".join(f"<li>{esc(w)}</li>" for w in result.warnings)
    return (
        f'<h2 id="distributed">Distributed: {len(ranked)} ranks</h2><p class="note">Step time and device idle per rank and step (steps matched by number); '
        f'comm = union of each device\'s collectives, exposed = the part no compute overlaps (see <code>ntrace ranks</code>).</p>'
        f'<div class="side">{"".join(maps)}</div>{more}{table(ranks_frame(result), "ranks", search=True)}'
        + (f'<ul class="warn">{warnings}</ul>' if warnings else "")
    )
