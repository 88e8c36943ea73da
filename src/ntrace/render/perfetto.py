"""Export a Profile as Chrome-trace JSON that Perfetto and chrome://tracing open: lanes as named processes, tracks as threads, flows and gaps kept.

Layout: one process per (lane, original pid), named "<lane> · <pid>" and sorted in lane order
(framework, device, runtime_api, hardware, other), so the timeline reads like Neuron Explorer's
framework/TID, framework/Stream, neuron_rt, neuron_hw rows; one thread per ntrace track, named
after it, and per device stream on hardware. Perfetto mis-draws two slices of one thread that
partly overlap, so a slice that does not nest in the ones before it moves to an overflow thread
("<track> (overlap 1)"). Every complete, instant (i/I) and counter (C) event keeps its name,
category and all its args as the source file wrote them (re-read from a Kineto JSON file; other
sources keep the linking args, so re-reading the export with ntrace classifies it into the same
lane); times are written as exact decimal microseconds (int64 ns → "123.456", no float rounding). Launch links become ac2g flow arrows (s → f, bp "e").
Hardware idle gaps become async slices (ph b/e, category `ntrace_gap`) on the device's process:
visible as their own "hardware idle" track, and ignored by any tool that sums complete events.
The JSON text is built with Polars string expressions, one line per event; the overlap check (a
stack walk) and the source's args are the only per-event Python. An output named *.gz is gzipped.
"""

from __future__ import annotations

import gzip
from pathlib import Path
from typing import Any

import msgspec
import orjson
import polars as pl

from ntrace.analyses.totals import track
from ntrace.errors import NtraceError
from ntrace.exprs import fmt, us_text
from ntrace.io.files import read_json
from ntrace.io.atomic import write_bytes
from ntrace.lanes import LANES
from ntrace.profile import Profile

GAP_CATEGORY = "ntrace_gap"

#: Phases written as events of their own: complete slices, instants, counters.
_PHASES = ("X", "i", "I", "C")

#: args keys written back, in Kineto's spelling, from the events frame's columns.
_ARGS = {"External id": "external_id", "correlation": "correlation", "Sequence number": "sequence", "stream": "stream", "device": "device"}


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
    """Every complete, instant and counter event with its Perfetto process and thread: adds `track` (the thread drawn), `ntrace_track` (ntrace's track), `out_pid`, `out_tid`, `proc_name`."""
    lane_rank = {lane: i for i, lane in enumerate(LANES)}
    events = (
        profile.events.filter(pl.col("ph").is_in(_PHASES))
        .with_columns(pl.col("lane").cast(pl.String), track(), _orig_pid=pl.col("pid").fill_null("?"))
        .with_columns(pl.col("track").alias("ntrace_track"), track=pl.when(pl.col("lane") == "hardware").then(fmt("{} stream {}", "track", pl.coalesce(pl.col("stream").cast(pl.String), pl.col("tid"), pl.lit("?")))).otherwise("track"))
        .sort("lane", "_orig_pid", "track", "ts", pl.col("end"), descending=[False, False, False, False, True], maintain_order=True)
    )
    is_slice = events.select(pl.col("ph") == "X").to_series()
    cut = events.filter(is_slice).select("lane", "_orig_pid", "track", "ts", "end")
    level = pl.Series("_level", overlap_levels(cut["lane"] + "\0" + cut["_orig_pid"] + "\0" + cut["track"], cut["ts"], cut["end"]), dtype=pl.Int64)
    events = pl.concat([events.filter(is_slice).with_columns(level), events.filter(~is_slice).with_columns(_level=pl.lit(0, pl.Int64))]).with_columns(
        track=pl.when(pl.col("_level") > 0).then(fmt("{} (overlap {})", "track", "_level")).otherwise("track")
    )
    procs = (
        events.select("lane", "_orig_pid")
        .unique()
        .with_columns(_rank=pl.col("lane").replace_strict(lane_rank, return_dtype=pl.Int64))
        .sort("_rank", "_orig_pid")
        .with_columns(out_pid=pl.int_range(1, pl.len() + 1, dtype=pl.Int64))
        .with_columns(proc_name=fmt("{} · {}", "lane", pl.when(pl.col("lane") == "hardware").then(fmt("device {}", "_orig_pid")).otherwise(fmt("pid {}", "_orig_pid"))))
    )
    threads = (
        events.select("lane", "_orig_pid", "track")
        .unique()
        .sort("lane", "_orig_pid", "track")
        .with_columns(out_tid=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("lane", "_orig_pid"))
    )
    return events.join(procs, on=["lane", "_orig_pid"]).join(threads, on=["lane", "_orig_pid", "track"]).sort("idx")


def overlap_levels(group: pl.Series, ts: pl.Series, end: pl.Series) -> list[int]:
    """Per slice (sorted by group, start, end descending): the first level of its group (0, then overflow 1, 2, …) where it nests in every slice it overlaps.

    A stack walk per level, as Perfetto draws a thread: a slice fits a level when it starts at or
    after the end of the level's open slices, or ends within the innermost one still open. It is
    sequential by nature, hence a Python loop.
    """
    levels: list[int] = []
    stacks: list[list[int]] = []
    previous = None
    for g, start, stop in zip(group.to_list(), ts.to_list(), end.to_list()):
        if g != previous:
            stacks, previous = [], g
        for k, stack in enumerate(stacks):
            while stack and stack[-1] <= start:
                stack.pop()
            if not stack or stop <= stack[-1]:
                stack.append(stop)
                levels.append(k)
                break
        else:
            stacks.append([stop])
            levels.append(len(stacks) - 1)
    return levels


class _Event(msgspec.Struct):
    """What the export re-reads of a source event: its name (to check it is the same event) and its args as written."""

    name: str | None = None
    args: msgspec.Raw = msgspec.Raw(b"")  # empty where the event has none


class _Document(msgspec.Struct):
    """The events of a Kineto JSON document."""

    traceEvents: list[_Event]  # noqa: N815  # Kineto's spelling


def source_args(profile: Profile) -> pl.DataFrame:
    """`idx` and `args` (JSON object text) of each event as the source Kineto JSON file wrote them; empty where the file cannot be re-read or no longer matches."""
    empty = pl.DataFrame(schema={"idx": pl.Int64, "args": pl.String})
    try:
        doc = msgspec.json.decode(read_json(profile.trace.path, []), type=_Document)
    except (NtraceError, OSError, msgspec.DecodeError, MemoryError, RecursionError):
        return empty  # Explorer Parquet, a file gone or changed, one only the tolerant decoder reads: the linking args stand in
    raw = doc.traceEvents
    # one Python step per event: msgspec hands each args object over as its raw bytes
    found = pl.DataFrame(
        {"idx": pl.int_range(0, len(raw), eager=True, dtype=pl.Int64), "_name": [e.name for e in raw], "args": [bytes(e.args).decode() or None for e in raw]},
        schema={"idx": pl.Int64, "_name": pl.String, "args": pl.String},
    )
    mine = profile.events.select("idx", "name")
    if mine.height > found.height or not mine.join(found, on="idx", how="left").select((pl.col("name").eq_missing(pl.col("_name"))).all()).item():
        return empty
    return found.filter(pl.col("args").str.starts_with("{")).select("idx", "args")


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


def _event_lines(events: pl.DataFrame) -> pl.Series:
    """One JSON object text per complete, instant and counter event, with its source args (else its linking args)."""
    common: dict[str, pl.Expr | str | int] = {"name": _json_text("name"), "cat": _json_text("cat"), "pid": pl.col("out_pid"), "tid": pl.col("out_tid"), "ts": us_text(pl.col("ts"))}
    args = pl.coalesce(pl.col("args"), _args_text())
    line = (
        pl.when(pl.col("ph") == "X")
        .then(_obj(ph="X", **common, dur=us_text(pl.col("dur")), args=args))
        .otherwise(_obj(ph=_json_text("ph"), **common, args=args))
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
    procs = events.filter(pl.col("lane") == "hardware").select(pl.col("ntrace_track").alias("track"), "out_pid").unique("track")
    gaps = profile.hardware_idle.join(procs, on="track").with_row_index("gap_id", offset=1)
    gap: dict[str, pl.Expr | str | int] = {"name": "hardware idle", "cat": GAP_CATEGORY, "id": pl.col("gap_id"), "pid": pl.col("out_pid"), "tid": 0}
    begin = _obj(ph="b", **gap, ts=us_text(pl.col("gap_start")), args=_obj(idle_us=us_text(pl.col("gap"))))
    end = _obj(ph="e", **gap, ts=us_text(pl.col("gap_end")))
    return pl.concat([gaps.select(begin).to_series(), gaps.select(end).to_series()])


def perfetto_json(profile: Profile) -> bytes:
    """The Chrome-trace JSON document for `profile` (bytes, UTF-8)."""
    events = placed(profile).join(source_args(profile), on="idx", how="left")
    complete = events.filter(pl.col("ph") == "X")
    lines = pl.concat(
        [
            pl.Series([orjson.dumps(m).decode() for m in _metadata(events)], dtype=pl.String),
            _event_lines(events),
            _flow_lines(profile, complete),
            _gap_lines(profile, complete),
        ]
    )
    head = orjson.dumps({"traceName": f"ntrace export of {profile.trace.path}", "displayTimeUnit": "ns", "otherData": {"exported_by": "ntrace", "source": str(profile.trace.path)}})
    body = pl.select(lines.str.join(",\n")).item() if len(lines) else ""
    return head[:-1] + b',"traceEvents":[\n' + body.encode() + b"\n]}\n"


def export_perfetto(profile: Profile, out: str | Path) -> Path:
    """Write the Perfetto/Chrome-trace JSON of `profile` to `out` atomically, gzipped when its name ends in .gz; returns the path written."""
    data = perfetto_json(profile)
    return write_bytes(out, gzip.compress(data, mtime=0) if str(out).endswith(".gz") else data)
