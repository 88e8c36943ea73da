"""The report's views of one trace besides the timeline: Overview (verdict, step statistics, time by lane per step), Operators, Kernels, Memory, Steps, Findings, Device.

Every number comes from the Summary's frames (oracle-checked analyses) or analyses.verdict; the
views only lay them out. Tables are `sortable`: the page's script sorts them by a header click
(numbers by their exact `data-v` value), filters them by a search box and shows the rows past
the first `top` on request.
"""

from __future__ import annotations

import html
from typing import Any, Sequence

import polars as pl

from ntrace.analyses.device import DeviceReport
from ntrace.analyses.memory import device_label
from ntrace.analyses.stats import stats
from ntrace.analyses.steps import HOST_LANES
from ntrace.analyses.findings import MAX_DISPATCH_GAP
from ntrace.analyses.verdict import IDLE_BOUND_PCT, verdict
from ntrace.render.tables import cells, device_frame, header, kernels_frame, memory_devices_frame, memory_ops_frame, ops_frame, step_devices_frame, steps_frame
from ntrace.summary import Summary
from ntrace.units import fmt_pct, fmt_time, plural, size
from ntrace.workflows.device import DeviceAnalysis

#: Rows of a long table shown before "show all".
TOP = 20
#: Points drawn per device in the Memory view's chart: longer series keep each bucket's lowest and highest record (so the peak is always drawn).
MEMORY_POINTS = 2000
#: Steps drawn in the Overview's time-by-lane chart (the Steps table holds every one).
MAX_STEP_BARS = 12


def esc(text: object) -> str:
    """Text for HTML, quotes escaped."""
    return html.escape(str(text), quote=True)


def _cells(column: str, dtype: pl.DataType, values: list[Any]) -> list[str]:
    """A column's cells as the Markdown renderer writes them; a list column's as each list's items joined."""
    if isinstance(dtype, (pl.List, pl.Array)):
        return ["-" if v is None else ", ".join(str(x) for x in v) for v in values]
    return cells(column, values)


def table(frame: pl.DataFrame, cls: str = "", *, top: int = 0, search: bool = False) -> str:
    """A display frame as an HTML table (cells as the Markdown renderer writes them); numeric cells carry their value for sorting; `top` rows shown until "show all", a filter box when `search`."""
    numeric = [t.is_numeric() for t in frame.dtypes]
    head = "".join(f'<th title="sort">{esc(header(c))}</th>' for c in frame.columns)
    columns = []  # each column's <td> elements, built column by column
    for (c, dtype), n in zip(frame.schema.items(), numeric):
        values = frame.get_column(c).to_list()
        texts = _cells(c, dtype, values) if n else [esc(t) for t in _cells(c, dtype, values)]  # a number's text holds nothing to escape
        columns.append([f'<td class=num data-v="{"" if v is None else v}">{t}</td>' for v, t in zip(values, texts)] if n else [f"<td>{t}</td>" for t in texts])
    rows = ["<tr>" + "".join(row) + "</tr>" for row in zip(*columns)]
    top_attr = f' data-top="{top}"' if top and frame.height > top else ""
    controls = '<input class="tfilter" type="search" placeholder="filter rows">' if search else ""
    more = f'<button class="tmore">show all {frame.height:,} rows</button>' if top_attr else ""
    body = f'<table class="sortable {cls}"{top_attr}><thead><tr>{head}</tr></thead><tbody>{"".join(rows)}</tbody></table>'
    return f'<div class="twrap">{controls}{body}{more}</div>'


def overview(summary: Summary) -> str:
    """The verdict line with its evidence, the step-time statistics and the time by lane per step."""
    v = verdict(summary.tracks, summary.idle_gaps, summary.kernels)
    lines = [f'<p class="verdict verdict-{v.kind}">{esc(v.line).replace(v.kind, f"<b>{v.kind}</b>", 1)}</p>']
    lines.append(
        f'<p class="note">Rule and thresholds: docs/definitions.md §11 (device-bound under {IDLE_BOUND_PCT} % idle; '
        f"host-bound when half the idle time is in gaps over {fmt_time(MAX_DISPATCH_GAP)}).</p>"
    )
    steps = summary.steps
    if steps.height:
        s = stats(steps["dur"])
        lines.append(
            f"<p>{plural(steps.height, 'step')}: step time p50 {fmt_time(s['p50'])}, p90 {fmt_time(s['p90'])}, max {fmt_time(s['max'])}, "
            f"total {fmt_time(s['total'])}.</p>{step_lanes_chart(steps)}"
        )
    else:
        lines.append('<p class="note">No ProfilerStep#N annotations: no step statistics.</p>')
    return f'<h3>Overview</h3>{"".join(lines)}'


def step_lanes_chart(steps: pl.DataFrame) -> str:
    """Per step (the first MAX_STEP_BARS), one thin bar per host lane: its busy time inside the step window, scaled to the longest step."""
    shown = steps.head(MAX_STEP_BARS)
    longest = int(shown["dur"].max() or 1) or 1  # type: ignore[arg-type]
    label_w, bar_w, lane_h = 110, 420, 4
    row_h = lane_h * len(HOST_LANES) + 6
    parts = []
    for i, r in enumerate(shown.iter_rows(named=True)):
        y = 22 + i * row_h
        parts.append(f'<text x="0" y="{y + row_h / 2 + 2}">{esc(r["name"])}</text>')
        parts.append(f'<rect class="stepbg" x="{label_w}" y="{y}" width="{r["dur"] / longest * bar_w:.2f}" height="{row_h - 4}"><title>{esc(r["name"])}: {fmt_time(r["dur"])}</title></rect>')
        for j, lane in enumerate(HOST_LANES):
            busy = r[f"{lane}_busy"]
            parts.append(
                f'<rect class="lane-{lane}" x="{label_w}" y="{y + j * lane_h}" width="{busy / longest * bar_w:.2f}" height="{lane_h - 1}">'
                f'<title>{esc(r["name"])} · {lane} busy {fmt_time(busy)} ({fmt_pct(busy / r["dur"] if r["dur"] else None)} of the step)</title></rect>'
            )
    height = 26 + shown.height * row_h
    legend = " ".join(f'<tspan class="lane-{lane}">■</tspan> {lane}' for lane in HOST_LANES)
    more = f" (first {MAX_STEP_BARS} of {steps.height})" if steps.height > MAX_STEP_BARS else ""
    return (
        f'<svg class="chart steps" width="{label_w + bar_w + 20}" height="{height}" viewBox="0 0 {label_w + bar_w + 20} {height}">'
        f'<text x="0" y="12" font-weight="bold">Time by lane per step{more}: {legend}</text>{"".join(parts)}</svg>'
    )


def operators(summary: Summary) -> str:
    """The op table (torch's key_averages() columns), sortable and searchable, the first TOP rows until expanded."""
    ops = ops_frame(summary)
    if not ops.height:
        return ""
    return f"<h3>Operators</h3><p class=note>torch key_averages() columns, computed from the trace; click a header to sort.</p>{table(ops, 'ops', top=TOP, search=True)}"


def kernels(summary: Summary) -> str:
    """Per device activity name: calls, times, share of device time, streams."""
    frame = kernels_frame(summary)
    if not frame.height:
        return ""
    return f"<h3>Kernels</h3>{table(frame, 'kernels', top=TOP, search=True)}"


def memory(summary: Summary) -> str:
    """Allocated bytes over time per device (the allocator's Total Allocated after each record), the peaks, and torch's per-op memory columns; nothing when the trace holds no allocator records."""
    if summary.memory_series is None:
        return ""
    devices = memory_devices_frame(summary)
    charts = "".join(allocated_chart(summary, d) for d in summary.memory_devices.iter_rows(named=True)) if summary.memory_devices is not None else ""
    note = (
        "<p class=note>From the <code>[memory]</code> records of profile_memory=True. CPU Mem / Self CPU Mem (and device Mem) as torch's key_averages() counts them: "
        "the bytes of every record inside an op's time (freed bytes negative), less its children's for Self.</p>"
    )
    return f'<h3 id="memory-{esc(summary.path.name)}" class="memory">Memory</h3>{note}<div class="side">{charts}</div>{table(devices, "memdev")}{table(memory_ops_frame(summary), "memops", top=TOP, search=True)}'


def allocated_chart(summary: Summary, device: dict[str, Any]) -> str:
    """One device's allocated bytes as a step line over the trace window, its peak marked (SVG)."""
    assert summary.memory_series is not None
    series = summary.memory_series.filter((pl.col("device_type") == device["device_type"]) & (pl.col("device_id") == device["device_id"])).drop_nulls("allocated")
    t0, span = summary.window[0], max(summary.window_ns, 1)
    if series.height > MEMORY_POINTS:
        bucket = ((pl.col("ts") - t0) * (MEMORY_POINTS // 2) // span).alias("b")
        series = pl.concat([series.sort("allocated", "ts").group_by(bucket, maintain_order=True).agg(pl.all().first()), series.sort("allocated", "ts", descending=[True, False]).group_by(bucket, maintain_order=True).agg(pl.all().first())]).sort("ts").drop("b")
    peak, at = device["peak_allocated"] or 0, device["peak_ts"]
    low = min(int(series["allocated"].min() or 0), 0)  # type: ignore[arg-type]  # below 0: frees of memory allocated before profiling began
    scale = max(peak - low, 1)
    w, h, left, pad = 520, 160, 70, 24
    x = [left + min(max(t - t0, 0), span) / span * w for t in series["ts"].to_list()]
    y = [pad + (peak - a) / scale * h for a in series["allocated"].to_list()]
    base = pad + peak / scale * h  # where 0 bytes is drawn
    points = [f"{left:.1f},{base:.1f}"] + [f"{xi:.1f},{yp:.1f} {xi:.1f},{yi:.1f}" for xi, yi, yp in zip(x, y, [base, *y[:-1]])] + ([f"{left + w:.1f},{y[-1]:.1f}"] if y else [])
    name = device_label(device["device_type"], device["device_id"])
    marker = f'<circle class="mempeak" cx="{left + (at - t0) / span * w:.1f}" cy="{pad:.1f}" r="3"><title>peak {size(peak)} at +{fmt_time(at - t0)}</title></circle>' if at is not None else ""
    return (
        f'<svg class="chart mem" width="{left + w + 20}" height="{h + pad + 30}" viewBox="0 0 {left + w + 20} {h + pad + 30}">'
        f'<text x="0" y="14" font-weight="bold">{esc(name)}: allocated over time (peak {size(peak)})</text>'
        f'<text x="0" y="{pad + 10}">{size(peak)}</text><text x="0" y="{base:.1f}">0</text>'
        f'<polyline class="memline" fill="none" points="{" ".join(points)}"/>{marker}'
        f'<text x="{left}" y="{pad + h + 16}">0</text><text x="{left + w - 40}" y="{pad + h + 16}">{fmt_time(span)}</text></svg>'
    )


def steps_view(summary: Summary) -> str:
    """Per step: its window and host busy per lane, then the device work each step launched."""
    if not summary.steps.height:
        return ""
    devices = step_devices_frame(summary)
    outside = summary.outside_steps
    note = f'<p class="note">Device activities in no step: {plural(outside[0], "activity", "activities")}, {fmt_time(outside[1])}.</p>' if outside[0] else ""
    return f"<h3>Steps</h3>{table(steps_frame(summary), 'steps', top=TOP)}{table(devices, 'stepdev', top=TOP) if devices.height else ''}{note}"


def findings(summary: Summary) -> str:
    """Each finding: its kind, subject, line and time at stake, with the events it rests on (start relative to the window)."""
    found = summary.findings
    if found.is_empty():
        return '<h3>Findings</h3><p class="note">none</p>'
    t0 = summary.window[0]
    items = []
    for r in found.iter_rows(named=True):
        events = ", ".join(
            f"{e['name']}{' (from ' + e['op'] + ')' if e['op'] else ''} at +{fmt_time(e['ts'] - t0)} for {fmt_time(e['dur'])}" for e in r["events"]
        )
        items.append(f'<li><b>{esc(r["kind"])}</b> · {esc(r["summary"])}<div class="note">events: {esc(events)}</div></li>')
    return f'<h3>Findings</h3><ul class="findings">{"".join(items)}</ul>'


def device(reports: Sequence[DeviceReport], summary: Summary) -> str:
    """The processed device profiles of the trace's capture session, when it has any (ntrace device's table)."""
    if not reports:
        return ""
    frame = device_frame(DeviceAnalysis(summary.path.parent, tuple(reports)))
    return f"<h3>Device</h3><p class=note>Processed device profiles of this capture session (see <code>ntrace device</code>).</p>{table(frame, 'device')}"
