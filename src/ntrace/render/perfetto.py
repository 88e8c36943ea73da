"""Export a Profile as Chrome-trace JSON that Perfetto and chrome://tracing open: lanes as named processes, tracks as threads, flows and gaps kept.

Layout: one process per (lane, original pid), named "<lane> · <pid>" and sorted in lane order
(framework, device, runtime_api, hardware, other), so the timeline reads like Neuron Explorer's
framework/TID, framework/Stream, neuron_rt, neuron_hw rows; one thread per ntrace track, named
after it. Every complete event keeps its name, category and linking args (so re-reading the file
with ntrace classifies it into the same lane), times are written as exact decimal microseconds
(int64 ns → "123.456", no float rounding). Launch links become ac2g flow arrows (s → f, bp "e").
Hardware idle gaps become async slices (ph b/e, category `ntrace_gap`) on the device's process:
visible as their own "hardware idle" track, and ignored by any tool that sums complete events.
The JSON text is built with Polars string expressions, one line per event, never per-event Python.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import polars as pl

from ntrace.analyses.totals import track
from ntrace.io.atomic import write_bytes
from ntrace.lanes import LANES
from ntrace.profile import Profile

GAP_CATEGORY = "ntrace_gap"

#: args keys written back, in Kineto's spelling, from the events frame's columns.
_ARGS = {"External id": "external_id", "correlation": "correlation", "Sequence number": "sequence", "stream": "stream", "device": "device"}


def us_text(ns: pl.Expr) -> pl.Expr:
    """Int64 ns as exact decimal µs text ("-1.234", "1700000000000000.125"): JSON numbers without float rounding."""
    mag = ns.abs()
    sign = pl.when(ns < 0).then(pl.lit("-")).otherwise(pl.lit(""))
    return pl.concat_str(sign, (mag // 1000).cast(pl.String), pl.lit("."), (mag % 1000).cast(pl.String).str.zfill(3))


def _json_text(col: str) -> pl.Expr:
    """A string column as a JSON string literal (escaped), or `null`."""
    return pl.struct(pl.col(col).alias("v")).struct.json_encode().str.strip_prefix('{"v":').str.strip_suffix("}")


def _args_text() -> pl.Expr:
    """The non-null linking keys of each event as a JSON object text."""
    parts = [pl.when(pl.col(c).is_not_null()).then(pl.concat_str(pl.lit(f'"{k}":'), pl.col(c), pl.lit(","))).otherwise(pl.lit("")) for k, c in _ARGS.items()]
    return pl.concat_str(pl.lit("{"), pl.concat_str(parts).str.strip_suffix(","), pl.lit("}"))


def _obj(**fields: pl.Expr | str | int) -> pl.Expr:
    """A JSON object text per row: expressions are spliced as JSON text, Python values are encoded once."""
    pieces: list[pl.Expr] = []
    for i, (key, value) in enumerate(fields.items()):
        pieces.append(pl.lit(("{" if i == 0 else ",") + orjson.dumps(key).decode() + ":"))
        pieces.append(value.cast(pl.String) if isinstance(value, pl.Expr) else pl.lit(orjson.dumps(value).decode()))
    return pl.concat_str(*pieces, pl.lit("}"))


def placed(profile: Profile) -> pl.DataFrame:
    """Every complete event with its Perfetto process and thread: adds `track`, `out_pid`, `out_tid`, `proc_name`."""
    lane_rank = {lane: i for i, lane in enumerate(LANES)}
    events = profile.complete.with_columns(pl.col("lane").cast(pl.String), track(), _orig_pid=pl.col("pid").fill_null("?"))
    procs = (
        events.select("lane", "_orig_pid")
        .unique()
        .with_columns(_rank=pl.col("lane").replace_strict(lane_rank, return_dtype=pl.Int64))
        .sort("_rank", "_orig_pid")
        .with_columns(out_pid=pl.int_range(1, pl.len() + 1, dtype=pl.Int64))
        .with_columns(proc_name=pl.format("{} · {}", "lane", pl.when(pl.col("lane") == "hardware").then(pl.format("device {}", "_orig_pid")).otherwise(pl.format("pid {}", "_orig_pid"))))
    )
    threads = (
        events.select("lane", "_orig_pid", "track")
        .unique()
        .sort("lane", "_orig_pid", "track")
        .with_columns(out_tid=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("lane", "_orig_pid"))
    )
    return events.join(procs, on=["lane", "_orig_pid"]).join(threads, on=["lane", "_orig_pid", "track"])


def _metadata(events: pl.DataFrame) -> list[dict[str, Any]]:
    """M events naming and ordering every process and thread (a handful of rows, built as dicts)."""
    procs = events.select("out_pid", "proc_name", "_rank").unique().sort("out_pid")
    threads = events.select("out_pid", "out_tid", "track").unique().sort("out_pid", "out_tid")
    meta: list[dict[str, Any]] = []
    for pid, name, rank in procs.iter_rows():
        meta.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}})
        meta.append({"ph": "M", "name": "process_sort_index", "pid": pid, "tid": 0, "args": {"sort_index": pid}})
        meta.append({"ph": "M", "name": "process_labels", "pid": pid, "tid": 0, "args": {"labels": LANES[rank]}})
    for pid, tid, name in threads.iter_rows():
        meta.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": name}})
        meta.append({"ph": "M", "name": "thread_sort_index", "pid": pid, "tid": tid, "args": {"sort_index": tid}})
    return meta


def _complete_lines(events: pl.DataFrame) -> pl.Series:
    """One JSON object text per complete event."""
    line = _obj(
        ph="X", name=_json_text("name"), cat=_json_text("cat"), pid=pl.col("out_pid"), tid=pl.col("out_tid"),
        ts=us_text(pl.col("ts")), dur=us_text(pl.col("dur")), args=_args_text(),
    )
    return events.select(line).to_series()


def _flow_lines(profile: Profile, events: pl.DataFrame) -> pl.Series:
    """An ac2g flow start on each linked runtime call and its end (bp "e") on the device activity it launched."""
    where = events.select("idx", "out_pid", "out_tid", "ts")
    links = (
        profile.links.with_row_index("flow", offset=1)
        .join(where.rename(lambda c: f"call_{c}"), on="call_idx")
        .join(where.rename(lambda c: f"exec_{c}"), on="exec_idx")
    )
    flow: dict[str, pl.Expr | str | int] = {"name": "ac2g", "cat": "ac2g", "id": pl.col("flow")}
    start = _obj(ph="s", **flow, pid=pl.col("call_out_pid"), tid=pl.col("call_out_tid"), ts=us_text(pl.col("call_ts")))
    end = _obj(ph="f", bp="e", **flow, pid=pl.col("exec_out_pid"), tid=pl.col("exec_out_tid"), ts=us_text(pl.col("exec_ts")))
    return pl.concat([links.select(start).to_series(), links.select(end).to_series()])


def _gap_lines(profile: Profile, events: pl.DataFrame) -> pl.Series:
    """Each hardware idle gap as an async slice (b/e pair) on its device's process."""
    procs = events.filter(pl.col("lane") == "hardware").select("track", "out_pid").unique("track")
    gaps = profile.hardware_idle.join(procs, on="track").with_row_index("gap_id", offset=1)
    gap: dict[str, pl.Expr | str | int] = {"name": "hardware idle", "cat": GAP_CATEGORY, "id": pl.col("gap_id"), "pid": pl.col("out_pid"), "tid": 0}
    begin = _obj(ph="b", **gap, ts=us_text(pl.col("gap_start")), args=_obj(idle_us=us_text(pl.col("gap"))))
    end = _obj(ph="e", **gap, ts=us_text(pl.col("gap_end")))
    return pl.concat([gaps.select(begin).to_series(), gaps.select(end).to_series()])


def perfetto_json(profile: Profile) -> bytes:
    """The Chrome-trace JSON document for `profile` (bytes, UTF-8)."""
    events = placed(profile)
    lines = pl.concat(
        [
            pl.Series([orjson.dumps(m).decode() for m in _metadata(events)], dtype=pl.String),
            _complete_lines(events),
            _flow_lines(profile, events),
            _gap_lines(profile, events),
        ]
    )
    head = orjson.dumps({"traceName": f"ntrace export of {profile.trace.path}", "displayTimeUnit": "ns", "otherData": {"exported_by": "ntrace", "source": str(profile.trace.path)}})
    body = pl.select(lines.str.join(",\n")).item() if len(lines) else ""
    return head[:-1] + b',"traceEvents":[\n' + body.encode() + b"\n]}\n"


def export_perfetto(profile: Profile, out: str | Path) -> Path:
    """Write the Perfetto/Chrome-trace JSON of `profile` to `out` atomically; returns the path written."""
    return write_bytes(out, perfetto_json(profile))
