"""Render a variant comparison (ntrace.compare) as the seed's side-by-side table and as the `ntrace.compare/1` JSON."""

from __future__ import annotations

import orjson
import polars as pl

from ntrace.render.units import fmt_time, table, us

SCHEMA = "ntrace.compare/1"


def _speedup(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}x"


def render_text(frame: pl.DataFrame) -> str:
    """The comparison table: device time, self CPU of the ops that reached the device, their calls, hardware idle, speed-up."""
    baseline = frame.filter(pl.col("speedup") == 1.0)["name"].head(1).to_list()
    rows = [
        [r["name"], fmt_time(r["device"]), fmt_time(r["self_cpu"]), str(r["device_op_calls"]), fmt_time(r["gap"]), _speedup(r["speedup"]), r["device_name"], str(r["traces"])]
        for r in frame.iter_rows(named=True)
    ]
    note = [
        f"speed-up: device time of {baseline[0] if baseline else 'the baseline'} over each variant's",
        "self CPU and op calls: the op table rows that carry device time; idle: hardware idle between executions",
    ]
    return "\n".join([table(["variant", "device time", "self CPU", "op calls", "idle", "speed-up", "device", "traces"], rows), *note]) + "\n"


def render_json(frame: pl.DataFrame) -> str:
    """`{"schema": "ntrace.compare/1", "variants": [{name, device_us, self_cpu_us, device_op_calls, gap_us, speedup, …}]}`."""
    doc = {
        "schema": SCHEMA,
        "variants": [
            {
                "name": r["name"],
                "device_us": us(r["device"]),
                "self_cpu_us": us(r["self_cpu"]),
                "device_op_calls": r["device_op_calls"],
                "gap_us": us(r["gap"]),
                "speedup": r["speedup"],
                "device": r["device_name"],
                "path": r["path"],
                "traces": r["traces"],
            }
            for r in frame.iter_rows(named=True)
        ],
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()
