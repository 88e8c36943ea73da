"""Render a regression diff (ntrace.diff) as text tables and as the `ntrace.diff/1` JSON."""

from __future__ import annotations

from typing import Any

import orjson

from ntrace.diff import Diff
from ntrace.render.units import fmt_time, table, us

SCHEMA = "ntrace.diff/1"


def _pct(value: float | None) -> str:
    return "-" if value is None else f"{value:+.1f}%"


def _us(ns: int | None) -> float | None:
    """µs for JSON, keeping "absent on this side" as null."""
    return None if ns is None else us(ns)


def render_text(d: Diff) -> str:
    """Total device time change, per-op statuses, lane totals and gap statistics, BASE → TEST."""
    counts = {s: d.ops.filter(d.ops["status_device"] == s).height for s in ("added", "removed", "slower", "faster", "unchanged")}
    out = [
        f"BASE {d.base}",
        f"TEST {d.test}",
        f"device time: {fmt_time(d.base_device)} -> {fmt_time(d.test_device)} ({_pct(d.device_change_pct)}); threshold {d.threshold:g}%",
        "ops by device time: " + ", ".join(f"{n} {s}" for s, n in counts.items()),
        "",
        "Ops (largest device time change first)",
        table(
            ["op", "device", "cpu", "calls", "base device", "test device", "change", "base self CPU", "test self CPU", "change"],
            [
                [
                    r["name"], r["status_device"], r["status_cpu"], f"{r['base_calls'] or 0} -> {r['test_calls'] or 0}",
                    fmt_time(r["base_self_device"]), fmt_time(r["test_self_device"]), _pct(r["self_device_change_pct"]),
                    fmt_time(r["base_self_cpu"]), fmt_time(r["test_self_cpu"]), _pct(r["self_cpu_change_pct"]),
                ]
                for r in d.ops.iter_rows(named=True)
            ],
            left=3,
        ),
        "",
        "Lanes (summed duration / busy)",
        table(
            ["lane", "base total", "test total", "base busy", "test busy"],
            [[r["lane"], fmt_time(r["base_total"]), fmt_time(r["test_total"]), fmt_time(r["base_busy"]), fmt_time(r["test_busy"])] for r in d.lanes.iter_rows(named=True)],
        ),
        "",
        "Gaps",
        table(
            ["gap", "stat", "base", "test"],
            [
                [r["kind"], r["stat"], *(str(r[s]) if r["stat"] == "count" else fmt_time(r[s]) for s in ("base", "test"))]
                for r in d.gaps.iter_rows(named=True)
            ],
            left=2,
        ),
    ]
    return "\n".join(out) + "\n"


def diff_dict(d: Diff) -> dict[str, Any]:
    """The diff as a JSON-ready dict (µs floats)."""
    return {
        "schema": SCHEMA,
        "base": str(d.base),
        "test": str(d.test),
        "threshold_pct": d.threshold,
        "device_us": {"base": us(d.base_device), "test": us(d.test_device)},
        "device_change_pct": d.device_change_pct,
        "ops": [
            {
                "name": r["name"],
                "status_device": r["status_device"],
                "status_cpu": r["status_cpu"],
                "calls": {"base": r["base_calls"], "test": r["test_calls"]},
                "self_device_us": {"base": _us(r["base_self_device"]), "test": _us(r["test_self_device"])},
                "self_device_change_pct": r["self_device_change_pct"],
                "self_cpu_us": {"base": _us(r["base_self_cpu"]), "test": _us(r["test_self_cpu"])},
                "self_cpu_change_pct": r["self_cpu_change_pct"],
            }
            for r in d.ops.iter_rows(named=True)
        ],
        "lanes": [
            {"lane": r["lane"], "total_us": {"base": us(r["base_total"]), "test": us(r["test_total"])}, "busy_us": {"base": us(r["base_busy"]), "test": us(r["test_busy"])}}
            for r in d.lanes.iter_rows(named=True)
        ],
        "gaps": {
            kind: {
                (r["stat"] if r["stat"] == "count" else f"{r['stat']}_us"): {s: (r[s] if r["stat"] == "count" else us(r[s])) for s in ("base", "test")}
                for r in d.gaps.iter_rows(named=True)
                if r["kind"] == kind
            }
            for kind in d.gaps["kind"].unique(maintain_order=True).to_list()
        },
    }


def render_json(d: Diff) -> str:
    """The diff as one JSON object (schema `ntrace.diff/1`)."""
    return orjson.dumps(diff_dict(d), option=orjson.OPT_INDENT_2).decode()
