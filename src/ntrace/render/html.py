"""The HTML report: one self-contained file (inline SVG and canvas, CSS and JS from package data, nothing from the network): per trace an Overview, a timeline, Operators, Kernels, Memory (when the trace has allocator records), Steps, Findings and Device views.

Why hand-written SVG and canvas rather than a plotting library: the report must open offline, so
a library would have to be embedded whole (plotly's JS alone is ~3.5 MB per file) and added as a
dependency; bars, a histogram and a timeline need only rectangles and text. The timeline is a
canvas the script redraws from embedded data on every zoom (render.timeline says what is
embedded and how the file stays bounded). Every number in the tables comes from the Summary's
frames, never from what was drawn.
"""

from __future__ import annotations

from dataclasses import replace
from functools import partial
from importlib.resources import files
from pathlib import Path

import orjson
import polars as pl

from ntrace.analyses.device import DeviceReport
from ntrace.analyses.part import Part
from ntrace.exprs import on_polars_thread
from ntrace.io import memo
from ntrace.io.atomic import write_text
from ntrace.io.manifest import variant_name
from ntrace.lanes import LANES
from ntrace.profile import POOL_THREAD_MAX
from ntrace.render.distributed import distributed
from ntrace.render.tables import compare_frame, compare_notes, gaps_frame, hardware_tracks_frame, lanes_frame, variant_names
from ntrace.render.timeline import timeline_data
from ntrace.render.views import device, esc as _esc, findings, kernels, memory, operators, overview, steps_view, table
from ntrace.summary import Summary
from ntrace.units import fmt_time, plural
from ntrace.workflows.analyze import Analysis, Jobs, analyze, chunk_size, counted, worker_pool, workers_for
from ntrace.workflows.compare import Comparison, compare_groups

#: The report's inline stylesheet and script (package data: no fonts, styles or scripts from the network).
CSS = files("ntrace.render").joinpath("assets/report.css").read_text()
JS = files("ntrace.render").joinpath("assets/report.js").read_text()

#: With `jobs="auto"`, sections are drawn in worker processes from this many on: a worker's start-up costs about as much as drawing forty small traces' sections.
SECTIONS_MIN = 64

#: Longest bar-chart label drawn whole, and the width budgeted per character (11 px system-ui; wide enough for digits and capitals).
LABEL_CHARS = 48
_CHAR_W = 6.6

_TOOLS = """<div class="tl-controls"><button data-zoom="in">zoom in</button><button data-zoom="out">zoom out</button><button data-zoom="reset">reset</button>
<input class="tl-search" type="search" placeholder="search event names"> <span class="tl-found note"></span>
<span class="legend">{legend}</span></div>"""


def timeline(profile: Summary, span: int, uid: str) -> str:
    """The timeline of one trace: a canvas the page's script draws from the embedded data (render.timeline) on every zoom; `span` (ns) is the shared scale."""
    if profile.timeline is None:
        raise ValueError(f"{profile.path}: the summary holds no timeline (summarize it with timeline=True)")
    data = timeline_data(profile, profile.timeline, span)
    legend = "".join(f'<i class="sw lane-{lane}"></i>{lane} ' for lane in LANES) + '<i class="sw idle"></i>hardware idle <i class="sw step"></i>step'
    note = ""
    if data["exact"] < data["events"] or data["gaps_drawn"] < data["gaps_total"]:
        note = (
            f'<p class="note">{data["exact"]:,} of {data["events"]:,} events embedded exactly (the rest drawn as merged blocks at every zoom); '
            f'{data["gaps_drawn"]:,} of {data["gaps_total"]:,} idle gaps marked. The tables hold the exact numbers.</p>'
        )
    payload = orjson.dumps(data).decode().replace("</", "<\\/")
    return f"""<div class="timeline" id="tl-{uid}">{_TOOLS.format(legend=legend)}
<div class="tl-stage"><canvas class="tl"></canvas><div class="tl-tip" hidden></div></div>
<pre class="tl-drawn" hidden></pre><script type="application/json" class="tl-json">{payload}</script>
<p class="note">Wheel zooms, drag pans, double-click resets; one row per nesting depth; hover for start, duration and args.</p>{note}</div>"""


def bar_chart(labels: list[str], values_ns: list[int], classes: list[str], title: str) -> str:
    """A horizontal bar chart in SVG, values in ns labelled as torch prints times; labels longer than LABEL_CHARS are cut with "…" (the bar's tooltip has them whole) so they never run over the bars."""
    top = max(values_ns, default=0) or 1
    longest = min(max((len(label) for label in labels), default=0), LABEL_CHARS)
    bar_w, label_w, row = 300, max(150, int(longest * _CHAR_W) + 12), 22
    bars = []
    for i, (label, value, cls) in enumerate(zip(labels, values_ns, classes)):
        y = 24 + i * row
        w = value / top * bar_w
        shown = label if len(label) <= LABEL_CHARS else label[: LABEL_CHARS - 1] + "…"
        bars.append(
            f'<text x="0" y="{y + 14}">{_esc(shown)}</text><rect class="bar {cls}" x="{label_w}" y="{y}" width="{w:.2f}" height="{row - 6}"><title>{_esc(label)}: {fmt_time(value)}</title></rect>'
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
    full = pl.DataFrame({"b": pl.int_range(low, high + 1, eager=True)}).join(counts, on="b", how="left", maintain_order="left").fill_null(0)
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
    width = max(420, 60 + full.height * w)
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
    return f'<h2 id="artifacts">Artifacts</h2><p class="note">NEFF/NTFF/.pb files beside the traces; see <code>ntrace artifacts</code> for every file.</p>{table(frame, "artifacts")}'


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


def _comparison(comparison: Comparison, notes: list[str]) -> str:
    """The variants side by side: the seed's table (device time, self CPU, op calls, idle, speed-up) and a bar chart of the same, with the comparison's own warnings (`notes`)."""
    frame = comparison.variants
    labels, values, classes = [], [], []
    for r in frame.iter_rows(named=True):
        labels += [f"{r['name']} · device time", f"{r['name']} · hardware idle", f"{r['name']} · self CPU"]
        values += [r["device"], r["idle"], r["self_cpu"]]
        classes += ["hw", "idle", "fwb"]
    chart = bar_chart(labels, values, classes, "Per variant: device time, dispatch gaps, self CPU of device ops")
    rows = table(compare_frame(comparison).drop("path"), "compare")
    note = "".join(f'<p class="note">{_esc(line)}</p>' for line in compare_notes(comparison))
    warnings = f'<ul class="warn">{"".join(f"<li>{_esc(w)}</li>" for w in notes)}</ul>' if notes else ""
    return f'<h2 id="compare">Comparison of {frame.height} variants</h2>{warnings}<div class="side"><div>{rows}{note}</div><div>{chart}</div></div>'


def profile_section(profile: Summary, name: str, span: int, uid: str, reports: tuple[DeviceReport, ...] = ()) -> str:
    """One trace: Overview, timeline, busy-time chart and idle histogram, Operators, Kernels, Memory, Steps, Findings, Device, then lanes and gaps."""
    lanes = profile.lanes
    busy_chart = bar_chart(list(LANES), lanes["busy"].to_list(), [f"lane-{lane}" for lane in LANES], "Busy time per lane (union of intervals)")
    hw = hardware_tracks_frame(profile)
    warnings = "".join(f"<li>{_esc(w)}</li>" for w in profile.warnings)
    return f"""<section class="profile" id="p-{uid}"><h2>{_esc(name)}</h2>
<p>{_esc(profile.path)} — {profile.events:,} complete events over a {fmt_time(profile.window_ns)} window.</p>
{overview(profile)}
<h3>Timeline</h3>{timeline(profile, span, uid)}
<div class="side">{busy_chart}{idle_histogram(profile)}</div>
{operators(profile)}
{kernels(profile)}
{memory(profile)}
{steps_view(profile)}
{findings(profile)}
{device(reports, profile)}
<h3>Lanes</h3>{table(lanes_frame(profile), "lanes")}
{"<h3>Hardware tracks</h3>" + table(hw, "hwtracks") if hw.height else ""}
<h3>Dispatch gaps</h3>{table(gaps_frame(profile), "gaps")}
{f'<ul class="warn">{warnings}</ul>' if warnings else ""}
</section>"""


def _order(analysis: Analysis, comparison: Comparison | None) -> list[int]:
    """The traces' order in the report: that of the comparison's variants (slowest first) when there is one, else as analyzed."""
    n = len(analysis.summaries)
    if comparison is None:
        return list(range(n))
    paths = comparison.variants["path"].to_list()
    first: dict[Path, int] = {}
    for k, variant in enumerate(paths):
        first.setdefault(Path(variant), k)

    def rank(i: int) -> tuple[int, int]:  # the first variant that is the trace or a directory above it (a lookup per parent, not a scan of the variants)
        path = analysis.summaries[i].path
        return min((first[p] for p in (path, *path.parents) if p in first), default=len(paths)), i

    return sorted(range(n), key=rank)


def render(analysis: Analysis, title: str | None = None, jobs: Jobs = 1) -> str:
    """The whole report as one HTML document, the traces' sections drawn in `jobs` worker processes (see _sections); several traces share one time scale so their timelines compare at a glance."""
    return _page(analysis, title, jobs)[0]


def _page(analysis: Analysis, title: str | None, jobs: Jobs) -> tuple[str, list[str]]:
    """The report (see render) and the warnings of its comparison that are not the traces' own (traces left out of a variant's sums, traces that compare badly)."""
    names = variant_names(analysis.summaries, analysis.root)
    span = max((p.window_ns for p in analysis.summaries), default=1) or 1
    title = title or f"ntrace report: {analysis.root}"
    # the summaries' frames are small, and so are a small trace's timeline events: their many queries run on a pool thread (see ntrace.exprs.on_polars_thread)
    comparison = on_polars_thread(lambda: variant_table(analysis, names)) if len(analysis.summaries) > 1 else None
    known = set(analysis.all_warnings)
    notes = list(dict.fromkeys(w for w in comparison.warnings if w not in known)) if comparison is not None else []
    parts = [_comparison(comparison, notes)] if comparison is not None else []
    parts.append(on_polars_thread(lambda: distributed(analysis.summaries)))
    reports = [analysis.devices.get(session.dir, ()) if session else () for _, session in analysis]
    order = _order(analysis, comparison)
    parts += _sections([analysis.summaries[i] for i in order], [names[i] for i in order], span, [str(i) for i in order], [reports[i] for i in order], jobs)
    parts.append(_artifacts(analysis))
    nav = " · ".join(f'<a href="#p-{i}">{_esc(names[i])}</a>' for i in order)
    run_warnings = "".join(f"<li>{_esc(w)}</li>" for w in analysis.warnings)
    return f"""<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="generator" content="ntrace">
<title>{_esc(title)}</title><style>{CSS}</style></head>
<body><h1>{_esc(title)}</h1>
<p class="note">{plural(len(analysis.summaries), "trace")}: {nav}. Lanes top to bottom as Neuron Explorer draws them: framework (framework/TID), device (framework/Stream),
runtime_api (neuron_rt), hardware (neuron_hw), then other. Timelines share one time scale.</p>
{f'<ul class="warn">{run_warnings}</ul>' if run_warnings else ""}
{"".join(parts)}
<script>{JS}</script>
</body></html>
""", notes


def _sections(summaries: list[Summary], names: list[str], span: int, uids: list[str], reports: list[tuple[DeviceReport, ...]], jobs: Jobs) -> list[str]:
    """Each trace's section (profile_section), in order: the memo's where it holds one, the rest drawn in worker processes as workers_for gives them for `jobs` (for "auto" only from SECTIONS_MIN sections on) and remembered.

    A section is remembered by the digest of the memo entry its summary and timeline came from,
    with its name, the shared time scale and its place; one with device reports is always drawn.
    """
    entries = [memo.section_entry(s.drawn_key, name, span, uid) if not r else None for s, name, uid, r in zip(summaries, names, uids, reports)]
    drawn = [memo.recall_text(entry) for entry in entries]
    todo = [i for i, text in enumerate(drawn) if text is None]
    n = len(todo)
    workers = 1 if jobs == "auto" and n < SECTIONS_MIN else workers_for(jobs, [summaries[i].path for i in todo])
    args = ([summaries[i] for i in todo], [names[i] for i in todo], [span] * n, [uids[i] for i in todo], [reports[i] for i in todo])
    if workers > 1:
        with worker_pool(workers) as pool:
            fresh = counted(pool.map(_section, *args, chunksize=chunk_size(n, workers)), n, "drawing traces")
    else:
        fresh = counted(map(_section, *args), n, "drawing traces")
    sections, drawn_now = [], iter(fresh)
    for entry, text in zip(entries, drawn):
        if text is None:
            text = next(drawn_now)
            memo.remember_text(entry, text)
        sections.append(text)
    return sections


def _section(summary: Summary, name: str, span: int, uid: str, reports: tuple[DeviceReport, ...]) -> str:
    """profile_section, on a thread of Polars' pool for a small trace, whose many small queries cost least there (see ntrace.exprs.on_polars_thread)."""
    section = partial(profile_section, summary, name, span, uid, reports)
    return on_polars_thread(section) if summary.events <= POOL_THREAD_MAX else section()


def write_report(analysis: Analysis, out: str | Path, title: str | None = None, jobs: Jobs = 1) -> Path:
    """Render the report of an analysis made with timelines (workflows.analyze(…, timeline=True)), its sections in `jobs` worker processes, and write it to `out` atomically; returns the path."""
    return write_text(out, render(analysis, title, jobs))


def report(path: str | Path, out: str | Path, *, title: str | None = None, jobs: Jobs = 1, part: Part | None = None) -> tuple[Analysis, Path]:
    """Analyze every trace under `path` (only its `part`, when given) with what its timeline draws and write the report to `out` atomically; returns the analysis (its warnings joined by the comparison's own) and the file written."""
    result = analyze(path, jobs=jobs, timeline=True, part=part)
    page, notes = _page(result, title, jobs)
    return replace(result, warnings=(*result.warnings, *notes)), write_text(out, page)
