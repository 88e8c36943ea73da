"""Render the per-op table the way torch's key_averages().table() prints it, and the findings, as text and as JSON-ready dicts."""

from __future__ import annotations

from typing import Any

import polars as pl

from ntrace.ops import totals
from ntrace.profile import Profile
from ntrace.render.units import fmt_pct, fmt_time, table, us

#: torch's max_name_column_width: longer names are cut and end in "...".
NAME_WIDTH = 55


def _name(name: str) -> str:
    return name if len(name) <= NAME_WIDTH else name[: NAME_WIDTH - 3] + "..."


def ops_text(profile: Profile) -> str:
    """The op table with torch's columns, percentages and footer; device columns named for the device (none on CPU-only traces)."""
    ops = profile.ops
    dev = profile.device
    self_cpu_total, self_dev_total = totals(profile)
    shapes = "input_dims" in ops.columns
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if dev != "none":
        headers += [f"Self {dev}", f"Self {dev} %", f"{dev} total", f"{dev} time avg"]
    headers += ["# of Calls", *(["Input Shapes"] if shapes else [])]

    def share(ns: int, total: int) -> str:
        return fmt_pct(ns / total if total else 0.0)

    rows = []
    for r in ops.iter_rows(named=True):
        row = [_name(r["name"]), share(r["self_cpu"], self_cpu_total), fmt_time(r["self_cpu"]), share(r["cpu_total"], self_cpu_total), fmt_time(r["cpu_total"]), fmt_time(r["cpu_avg"])]
        if dev != "none":
            row += [fmt_time(r["self_device"]), share(r["self_device"], self_dev_total), fmt_time(r["device_total"]), fmt_time(r["device_avg"])]
        row += [str(r["calls"]), *([r["input_dims"] or "[]"] if shapes else [])]
        rows.append(row)
    footer = [f"Self CPU time total: {fmt_time(self_cpu_total)}"]
    if dev != "none":
        footer.append(f"Self {dev} time total: {fmt_time(self_dev_total)}")
    return "\n".join([table(headers, rows, left=0), *footer])


def findings_text(profile: Profile) -> str:
    """Each finding as one line, then the events it rests on (idx, name, start relative to the window, duration)."""
    found = profile.findings
    if found.is_empty():
        return "Findings\n  none"
    start = profile.window[0]
    out = ["Findings"]
    for r in found.iter_rows(named=True):
        out.append(f"  - {r['summary']}")
        events = ", ".join(f"#{e['idx']} {_name(e['name'] or '')} at +{fmt_time(e['ts'] - start)} for {fmt_time(e['dur'])}" for e in r["events"])
        out.append(f"      events: {events}")
    return "\n".join(out)


def ops_dicts(profile: Profile) -> list[dict[str, Any]]:
    """The `ops` array of the analyze JSON (µs floats)."""
    ops = profile.ops
    extra = ["input_dims"] if "input_dims" in ops.columns else []
    return [
        {
            "name": r["name"],
            **{k: r[k] for k in extra},
            "calls": r["calls"],
            "self_cpu_us": us(r["self_cpu"]),
            "cpu_total_us": us(r["cpu_total"]),
            "cpu_avg_us": us(r["cpu_avg"]),
            "self_device_us": us(r["self_device"]),
            "device_total_us": us(r["device_total"]),
            "device_avg_us": us(r["device_avg"]),
            "device_pct": r["device_pct"],
        }
        for r in ops.iter_rows(named=True)
    ]


def findings_dicts(profile: Profile) -> list[dict[str, Any]]:
    """The `findings` array of the analyze JSON: kind, subject, summary, time_us and the events (idx, name, ts_us, dur_us)."""
    found = profile.findings.with_columns(
        pl.col("events").list.eval(pl.struct(pl.element().struct.field("idx"), pl.element().struct.field("name"),
                                             (pl.element().struct.field("ts") / 1000).alias("ts_us"),
                                             (pl.element().struct.field("dur") / 1000).alias("dur_us")))
    )
    return [
        {"kind": r["kind"], "subject": r["subject"], "summary": r["summary"], "time_us": us(r["time"]), "events": r["events"]}
        for r in found.iter_rows(named=True)
    ]
