"""The HTML report: one self-contained file (inline SVG, CSS and a little JS, nothing from the network) with the lanes as a zoomable timeline and charts.

Why hand-written SVG rather than a plotting library: the report must open offline, so a library
would have to be embedded whole (plotly's JS alone is ~3.5 MB per file) and added as a
dependency; the four lanes, three bar charts and a histogram need only rectangles and text,
which SVG draws natively and every browser zooms. The report of fixtures/rmsnorm is ~40 KB.

Large traces are downsampled for drawing only: a track with more than `MAX_EVENTS_PER_TRACK`
events is drawn as the union of its events on a grid of `BINS_PER_WIDTH` bins across the
timeline (each drawn block says how many events it merges); at most `MAX_GAPS_PER_TRACK` idle
gaps per track are drawn (the longest). Every number in the tables comes from the Summary's
frames, never from what was drawn.
"""

from __future__ import annotations

import html
from importlib.resources import files
from pathlib import Path

import polars as pl

from ntrace.io.atomic import write_text
from ntrace.io.manifest import variant_name
from ntrace.lanes import LANES
from ntrace.render.tables import cell, compare_frame, compare_notes, gaps_frame, hardware_tracks_frame, header, lanes_frame, ops_frame, variant_names
from ntrace.summary import Summary, Timeline
from ntrace.units import fmt_time
from ntrace.workflows.analyze import Analysis, analyze
from ntrace.analyses.device import DeviceReport
from ntrace.workflows.compare import Comparison, compare_groups

#: The report's inline stylesheet and script (package data: no fonts, styles or scripts from the network).
CSS = files("ntrace.render").joinpath("assets/report.css").read_text()
JS = files("ntrace.render").joinpath("assets/report.js").read_text()

#: Drawing limits (never applied to the numbers).
MAX_EVENTS_PER_TRACK = 3000
BINS_PER_WIDTH = 2
MAX_GAPS_PER_TRACK = 2000
MAX_OP_ROWS = 100

_LABEL_W = 260  # px of the track-label column
_DATA_W = 1200  # px of the drawing area (user units; the SVG scales to the page)
_ROW_H = 18
_AXIS_H = 20


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _esc_expr(col: pl.Expr) -> pl.Expr:
    """HTML-escape a string column (for <title> text built in Polars)."""
    return (
        col.fill_null("").str.replace_all("&", "&amp;", literal=True).str.replace_all("<", "&lt;", literal=True)
        .str.replace_all(">", "&gt;", literal=True).str.replace_all('"', "&quot;", literal=True)
    )


def html_table(frame: pl.DataFrame, cls: str = "") -> str:
    """A display frame as an HTML table, cells formatted as in the Markdown renderer."""
    numeric = [t.is_numeric() for t in frame.dtypes]
    head = "".join(f"<th>{_esc(header(c))}</th>" for c in frame.columns)
    rows = [
        "<tr>" + "".join(f'<td{" class=num" if n else ""}>{_esc(cell(c, v))}</td>' for c, v, n in zip(frame.columns, row, numeric)) + "</tr>"
        for row in frame.iter_rows()
    ]
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'


def _rows(profile: Summary) -> pl.DataFrame:
    """The timeline's rows: one per (lane, track), in lane order, with their index."""
    order = {lane: i for i, lane in enumerate(LANES)}
    return (
        profile.tracks.select("lane", "track", "events")
        .with_columns(_o=pl.col("lane").replace_strict(order, return_dtype=pl.Int64))
        .sort("_o", "track")
        .with_row_index("row")
        .drop("_o")
    )


def drawn_blocks(profile: Summary, timeline: Timeline, t0: int, span: int) -> pl.DataFrame:
    """What the timeline draws per row: (row, lane, x, w, title, merged). Exact events for small tracks, binned unions for large ones."""
    rows = _rows(profile)
    scale = _DATA_W / max(span, 1)
    events = timeline.events.join(rows.select("lane", "track", "row", "events"), on=["lane", "track"])
    small = events.filter(pl.col("events") <= MAX_EVENTS_PER_TRACK).select(
        "row", "lane",
        x=(pl.col("ts") - t0) * scale,
        w=pl.max_horizontal(pl.col("dur") * scale, pl.lit(_DATA_W / 4000)),
        title=pl.format("{} · {}us", _esc_expr(pl.col("name")), (pl.col("dur") / 1000).round(3)),
        merged=pl.lit(1, pl.UInt32),
    )
    bins = _DATA_W * BINS_PER_WIDTH
    binned = (
        events.filter(pl.col("events") > MAX_EVENTS_PER_TRACK)
        .select(  # in Int128: a window spanning most of int64 would overflow, and ceiling division without negation (Int128 has none)
            "row", "lane",
            b0=((pl.col("ts").cast(pl.Int128) - t0) * bins // max(span, 1)).cast(pl.Int64),
            b1=(((pl.col("end").cast(pl.Int128) - t0) * bins + max(span, 1) - 1) // max(span, 1)).cast(pl.Int64),
        )  # fmt: skip
        .with_columns(b1=pl.max_horizontal("b1", pl.col("b0") + 1))
        .sort("row", "b0")
        .with_columns(_reach=pl.col("b1").cum_max().shift(1).over("row"))
        .with_columns(_grp=(pl.col("_reach").is_null() | (pl.col("b0") > pl.col("_reach"))).cum_sum().over("row"))
        .group_by("row", "lane", "_grp")
        .agg(b0=pl.col("b0").min(), b1=pl.col("b1").max(), merged=pl.len())
        .select(
            "row", "lane",
            x=pl.col("b0") / BINS_PER_WIDTH,
            w=(pl.col("b1") - pl.col("b0")) / BINS_PER_WIDTH,
            title=pl.format("{} events merged for drawing", pl.col("merged")),
            merged="merged",
        )
    )
    return pl.concat([small, binned.cast(small.schema)]).sort("row", "x")


def drawn_gaps(profile: Summary, timeline: Timeline, t0: int, span: int) -> pl.DataFrame:
    """The hardware idle gaps to draw: (row, x, w, title), at most MAX_GAPS_PER_TRACK longest per track."""
    rows = _rows(profile).filter(pl.col("lane") == "hardware").select("track", "row")
    scale = _DATA_W / max(span, 1)
    return (
        timeline.idle.join(rows, on="track")
        .with_columns(_rank=pl.col("gap").rank("ordinal", descending=True).over("track"))
        .filter(pl.col("_rank") <= MAX_GAPS_PER_TRACK)
        .select("row", x=(pl.col("gap_start") - t0) * scale, w=pl.col("gap") * scale, title=pl.format("hardware idle {}us", (pl.col("gap") / 1000).round(3)))
    )


def _rect_lines(frame: pl.DataFrame, cls: pl.Expr, y: pl.Expr, h: float) -> str:
    """SVG <rect> elements with <title>s, built as one Polars string column."""
    if frame.is_empty():
        return ""
    return str(frame.select(
        pl.format('<rect class="{}" x="{}" y="{}" width="{}" height="{}"><title>{}</title></rect>', cls, pl.col("x").round(3), y, pl.col("w").round(4), pl.lit(h), "title")
        .str.join("\n")
    ).item())


def timeline(profile: Summary, span: int, uid: str) -> str:
    """The zoomable four-lane timeline of one trace: one row per track, dispatch gaps highlighted. `span` (ns) sets the scale."""
    if profile.timeline is None:
        raise ValueError(f"{profile.path}: the summary holds no timeline (summarize it with timeline=True)")
    t0 = profile.window[0]
    rows = _rows(profile)
    height = rows.height * _ROW_H
    blocks = drawn_blocks(profile, profile.timeline, t0, span)
    gaps = drawn_gaps(profile, profile.timeline, t0, span)
    labels = [
        f'<text x="4" y="{_AXIS_H + r * _ROW_H + 13}"><title>{_esc(lane)} · {_esc(tr)} ({n:,} events)</title>{_esc(lane)} · {_esc(tr[:34] + ("…" if len(tr) > 34 else ""))}</text>'
        for r, lane, tr, n in rows.iter_rows()
    ]
    backgrounds = "".join(f'<rect class="rowbg" x="0" y="{r * _ROW_H}" width="{_DATA_W}" height="{_ROW_H}"/>' for r in range(rows.height))
    ev = _rect_lines(blocks, pl.when(pl.col("merged") > 1).then(pl.format("ev merged lane-{}", "lane")).otherwise(pl.format("ev lane-{}", "lane")), pl.col("row") * _ROW_H + 2, _ROW_H - 4)
    bands = _rect_lines(gaps, pl.lit("gapband"), pl.lit(0), height)
    marks = _rect_lines(gaps, pl.lit("gap"), pl.col("row") * _ROW_H, _ROW_H)
    ticks = "".join(f'<text x="{_LABEL_W + _DATA_W * i / 5 - (56 if i == 5 else 0)}" y="14"></text>' for i in range(6))
    drawn_note = ""
    n_merged = int(blocks.filter(pl.col("merged") > 1)["merged"].sum() or 0)
    if n_merged or gaps.height < profile.idle_gaps.len():
        drawn_note = f'<p class="note">Downsampled for drawing: {n_merged:,} events merged into blocks; {gaps.height:,} of {profile.idle_gaps.len():,} gaps drawn. The tables hold the exact numbers.</p>'
    return f"""<div class="timeline" id="tl-{uid}">
<div class="tl-controls"><button data-zoom="in">zoom in</button><button data-zoom="out">zoom out</button><button data-zoom="reset">reset</button>
<span class="note">wheel zooms, drag pans, double-click resets; red: hardware idle (dispatch gaps)</span></div>
<svg class="tl" data-w="{_DATA_W}" data-span="{span}" viewBox="0 0 {_LABEL_W + _DATA_W} {height + _AXIS_H}">
<g class="axis">{ticks}</g>
{"".join(labels)}
<svg class="tl-data" x="{_LABEL_W}" y="{_AXIS_H}" width="{_DATA_W}" height="{height}" viewBox="0 0 {_DATA_W} {height}" preserveAspectRatio="none">
{backgrounds}
{bands}
{ev}
{marks}
</svg></svg>{drawn_note}</div>"""


def bar_chart(labels: list[str], values_ns: list[int], classes: list[str], title: str) -> str:
    """A horizontal bar chart in SVG, values in ns labelled as torch prints times."""
    top = max(values_ns, default=0) or 1
    bar_w, label_w, row = 300, 150, 22
    bars = []
    for i, (label, value, cls) in enumerate(zip(labels, values_ns, classes)):
        y = 24 + i * row
        w = value / top * bar_w
        bars.append(
            f'<text x="0" y="{y + 14}">{_esc(label)}</text><rect class="bar {cls}" x="{label_w}" y="{y}" width="{w:.2f}" height="{row - 6}"><title>{_esc(label)}: {fmt_time(value)}</title></rect>'
            f'<text x="{label_w + w + 4:.2f}" y="{y + 14}">{fmt_time(value)}</text>'
        )
    height = 30 + len(labels) * row
    return f'<svg class="chart" width="{label_w + bar_w + 90}" height="{height}" viewBox="0 0 {label_w + bar_w + 90} {height}"><text x="0" y="14" font-weight="bold">{_esc(title)}</text>{"".join(bars)}</svg>'


def idle_histogram(profile: Summary) -> str:
    """A histogram of hardware idle gap lengths on log-spaced bins (4 per decade of µs)."""
    gaps = profile.idle_gaps.alias("gap").to_frame()
    if gaps.is_empty():
        return '<svg class="chart hist" width="420" height="40"><text x="0" y="14" font-weight="bold">Hardware idle gaps</text><text x="0" y="32">no idle gap between hardware executions</text></svg>'
    counts = (
        gaps.select(b=(pl.col("gap").clip(lower_bound=1).cast(pl.Float64).log10() * 4).floor().cast(pl.Int64))
        .group_by("b").agg(n=pl.len()).sort("b")
    )
    low, high = counts["b"].min(), counts["b"].max()
    assert isinstance(low, int) and isinstance(high, int)
    full = pl.DataFrame({"b": pl.int_range(low, high + 1, eager=True)}).join(counts, on="b", how="left").fill_null(0)
    top = full["n"].max()
    w, h, plot_h = 26, 200, 140
    bars = []
    for i, (b, n) in enumerate(full.iter_rows()):
        bh = n / top * plot_h
        lo, hi = 10 ** (b / 4), 10 ** ((b + 1) / 4)
        x = 10 + i * w
        bars.append(
            f'<rect class="bar idle" x="{x}" y="{32 + plot_h - bh:.2f}" width="{w - 4}" height="{bh:.2f}"><title>{fmt_time(lo)} – {fmt_time(hi)}: {n} gaps</title></rect>'
            + (f'<text x="{x}" y="{32 + plot_h - bh - 2:.2f}">{n}</text>' if n else "")
        )
    ticks = [f'<text x="{10 + i * w}" y="{h - 16}">{fmt_time(10 ** (b / 4))}</text>' for i, (b, _) in enumerate(full.iter_rows()) if b % 4 == 0]
    width = max(420, 20 + full.height * w)
    return (
        f'<svg class="chart hist" width="{width}" height="{h}" viewBox="0 0 {width} {h}">'
        f'<text x="0" y="14" font-weight="bold">Hardware idle gaps ({gaps.height:,}; log-spaced bins)</text>{"".join(bars)}{"".join(ticks)}</svg>'
    )


def _artifacts(analysis: Analysis) -> str:
    """A table of capture sessions and their NEFF/NTFF/.pb files, when the input has any (the sessions analyze already read)."""
    found = {s.dir: s for s in [*(s for _, s in analysis if s), *analysis.artifacts] if s.has_artifacts}
    sessions = [found[d] for d in sorted(found)]
    if not sessions:
        return ""
    base = analysis.root if analysis.root.is_dir() else analysis.root.parent
    frame = pl.DataFrame(
        [
            {
                "session": str(s.dir.relative_to(base)) if s.dir.is_relative_to(base) else str(s.dir),
                "traces": len(s.traces), "neff": s.neffs.height, "ntff": s.ntffs.height, "pb": s.pbs.height,
                "pairs": s.pairs.height, "unpaired": s.unpaired.height,
            }
            for s in sessions
        ]
    )
    return f'<h2 id="artifacts">Artifacts</h2><p class="note">NEFF/NTFF/.pb files beside the traces; see <code>ntrace artifacts</code> for every file.</p>{html_table(frame, "artifacts")}'


def variant_table(analysis: Analysis, names: list[str]) -> Comparison:
    """The seed's comparison (ntrace.compare's) from the traces' summaries: one row per variant, slowest first.

    Variants are the entries directly under the analyzed directory when there are several (named
    from capture.json where there is one), else the traces themselves (also when the summaries were
    read from a Parquet cache elsewhere, whose traces are not under the directory analyzed).
    """
    root = analysis.root
    groups: dict[Path, list[Summary]] = {}
    variants: list[tuple[str, Path, list[Summary], tuple[DeviceReport, ...]]]
    if root.is_dir() and all(p.path.is_relative_to(root) for p in analysis.summaries):
        for p in analysis.summaries:
            groups.setdefault(root / p.path.relative_to(root).parts[0], []).append(p)
    devices = {session.dir: analysis.devices.get(session.dir, ()) for _, session in analysis if session}
    if len(groups) > 1:
        variants = [(variant_name(path), path, profiles, tuple(r for d, rs in devices.items() if d.is_relative_to(path) for r in rs)) for path, profiles in groups.items()]
    else:
        variants = [(name, s.path, [s], analysis.devices.get(session.dir, ()) if session else ()) for name, (s, session) in zip(names, analysis)]
    return compare_groups(variants, slowest_first=True)


def _comparison(analysis: Analysis, names: list[str]) -> str:
    """The variants side by side: the seed's table (device time, self CPU, op calls, idle, speed-up) and a bar chart of the same."""
    comparison = variant_table(analysis, names)
    frame = comparison.variants
    labels, values, classes = [], [], []
    for r in frame.iter_rows(named=True):
        labels += [f"{r['name']} · device time", f"{r['name']} · hardware idle", f"{r['name']} · self CPU"]
        values += [r["device"], r["idle"], r["self_cpu"]]
        classes += ["hw", "idle", "fwb"]
    chart = bar_chart(labels, values, classes, "Per variant: device time, dispatch gaps, self CPU of device ops")
    table = html_table(compare_frame(comparison).drop("path"), "compare")
    note = "".join(f'<p class="note">{_esc(line)}</p>' for line in compare_notes(comparison))
    return f'<h2 id="compare">Comparison of {frame.height} variants</h2><div class="side"><div>{table}{note}</div><div>{chart}</div></div>'


def profile_section(profile: Summary, name: str, span: int, uid: str) -> str:
    """One profile: headline, timeline, busy-time chart and idle histogram side by side, then the tables."""
    lanes = profile.lanes
    busy_chart = bar_chart(list(LANES), lanes["busy"].to_list(), [f"lane-{lane}" for lane in LANES], "Busy time per lane (union of intervals)")
    hw = hardware_tracks_frame(profile)
    ops = ops_frame(profile)
    ops_html = ""
    if ops.height:
        shown = ops.head(MAX_OP_ROWS)
        more = f'<p class="note">first {MAX_OP_ROWS} of {ops.height} rows</p>' if ops.height > MAX_OP_ROWS else ""
        ops_html = f"<h3>Operators (torch key_averages() columns, computed from the trace)</h3>{html_table(shown, 'ops')}{more}"
    warnings = "".join(f"<li>{_esc(w)}</li>" for w in profile.warnings)
    return f"""<section class="profile" id="p-{uid}"><h2>{_esc(name)}</h2>
<p>{_esc(profile.path)} — {profile.events:,} complete events over a {fmt_time(profile.window_ns)} window.</p>
{timeline(profile, span, uid)}
<div class="side">{busy_chart}{idle_histogram(profile)}</div>
<h3>Lanes</h3>{html_table(lanes_frame(profile), "lanes")}
{"<h3>Hardware tracks</h3>" + html_table(hw, "hwtracks") if hw.height else ""}
<h3>Dispatch gaps</h3>{html_table(gaps_frame(profile), "gaps")}
{ops_html}
{f'<ul class="warn">{warnings}</ul>' if warnings else ""}
</section>"""


def render(analysis: Analysis, title: str | None = None) -> str:
    """The whole report as one HTML document; several traces share one time scale so their timelines compare at a glance."""
    names = variant_names(analysis.summaries, analysis.root)
    span = max((p.window_ns for p in analysis.summaries), default=1) or 1
    title = title or f"ntrace report: {analysis.root}"
    parts = [_comparison(analysis, names)] if len(analysis.summaries) > 1 else []
    parts += [profile_section(p, n, span, str(i)) for i, (p, n) in enumerate(zip(analysis.summaries, names))]
    parts.append(_artifacts(analysis))
    run_warnings = "".join(f"<li>{_esc(w)}</li>" for w in analysis.warnings)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="generator" content="ntrace">
<title>{_esc(title)}</title><style>{CSS}</style></head>
<body><h1>{_esc(title)}</h1>
<p class="note">{len(analysis.summaries)} trace(s). Lanes top to bottom as Neuron Explorer draws them: framework (framework/TID), device (framework/Stream),
runtime_api (neuron_rt), hardware (neuron_hw), then other. Timelines share one time scale.</p>
{f'<ul class="warn">{run_warnings}</ul>' if run_warnings else ""}
{"".join(parts)}
<script>{JS}</script>
</body></html>
"""


def write_report(analysis: Analysis, out: str | Path, title: str | None = None) -> Path:
    """Render the report of an analysis made with timelines (workflows.analyze(…, timeline=True)) and write it to `out` atomically; returns the path."""
    return write_text(out, render(analysis, title))


def report(path: str | Path, out: str | Path, *, title: str | None = None, jobs: int = 1) -> tuple[Analysis, Path]:
    """Analyze every trace under `path` with what its timeline draws and write the report to `out` atomically; returns the analysis and the file written."""
    result = analyze(path, jobs=jobs, timeline=True)
    return result, write_report(result, out, title)
