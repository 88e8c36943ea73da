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
The JSON text is built with Polars string expressions, one line per event, and written a part at a
time (gzipped as it goes when the output is named *.gz), so the whole text is never held; the
source's args are re-read a window at a time (ntrace.io.source_args). The overlap check (a stack
walk) and that re-read are the only per-event Python.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator

import msgspec
import orjson
import polars as pl

from ntrace.analyses.totals import track
from ntrace.errors import NtraceError
from ntrace.exprs import fmt, json_string, us_text
from ntrace.io import source_args as read_source_args
from ntrace.io.atomic import atomic_open
from ntrace.lanes import LANES
from ntrace.profile import Profile

GAP_CATEGORY = "ntrace_gap"

#: Phases written as events of their own: complete slices, instants, counters.
_PHASES = ("X", "i", "I", "C")

#: The events columns the export reads: those placing an event (dropped once it is placed), then those its line writes.
_PLACING = ("pid", "tid", "end", "lane", "side")
_COLUMNS = (*_PLACING, "idx", "ph", "name", "cat", "ts", "dur", "stream", "external_id", "correlation", "sequence", "device")
#: Events whose lines (or overlap walk values) are made at a time: the whole document is never held.
_CHUNK = 8192

#: args keys written back, in Kineto's spelling, from the events frame's columns.
_ARGS = {"External id": "external_id", "correlation": "correlation", "Sequence number": "sequence", "stream": "stream", "device": "device"}


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


@dataclass(frozen=True)
class Placement:
    """Where the export draws each event: the events with their Perfetto process and thread, and what names those."""

    events: pl.DataFrame  # the complete, instant and counter events, in file order: the columns the lines write, out_pid, out_tid
    processes: pl.DataFrame  # out_pid, proc_name, _rank (the lane's place)
    threads: pl.DataFrame  # out_pid, out_tid, track (the thread's name)
    devices: pl.DataFrame  # track (ntrace's, of a hardware slice), out_pid: where its idle gaps go


def placed(profile: Profile) -> Placement:
    """Every complete, instant and counter event's Perfetto process and thread.

    No text is made per event. What names an event's process and thread (its lane, side, pid,
    tid and stream) takes a few distinct values: the names are written for each of them, ranked
    in drawing order, and each event gets its rank by a join; the events are ordered, and their
    overlap levels walked, by rank, start and end. Only the two ids join the events, by position.
    """
    lane_rank = {lane: i for i, lane in enumerate(LANES)}
    events = profile.events.filter(pl.col("ph").is_in(_PHASES)).select(*_COLUMNS)
    named = ["lane", "side", "pid", "tid", "stream"]
    keys = (
        events.select(named)
        .unique()
        .with_columns(_lane=pl.col("lane").cast(pl.String), ntrace_track=track(), _orig_pid=pl.col("pid").fill_null("?"))
        .with_columns(track=pl.when(pl.col("_lane") == "hardware").then(fmt("{} stream {}", "ntrace_track", pl.coalesce(pl.col("stream").cast(pl.String), pl.col("tid"), pl.lit("?")))).otherwise("ntrace_track"))
        .sort("_lane", "_orig_pid", "track")
        .with_columns(rank=pl.struct("_lane", "_orig_pid", "track").rle_id())
    )
    order = (
        events.select(*named, "idx", "ts", "end", is_slice=pl.col("ph") == "X")
        .join(keys.select(*named, "rank"), on=named, how="left", nulls_equal=True, maintain_order="left")
        .select("idx", "rank", "ts", "end", "is_slice")
        .sort("rank", "ts", pl.col("end"), descending=[False, False, True], maintain_order=True)
    )
    cut = order.filter("is_slice")
    levels = pl.Series(overlap_levels(cut["rank"], cut["ts"], cut["end"]), dtype=pl.Int64)
    order = order.select("idx", "rank", "is_slice", level=pl.zeros(order.height, pl.Int64, eager=True).scatter(order["is_slice"].arg_true(), levels))
    ranks = keys.unique("rank").select("rank", lane="_lane", _orig_pid="_orig_pid", ntrace_track="ntrace_track", base="track")
    drawn = (
        order.select("rank", "level")
        .unique()
        .join(ranks, on="rank")
        .with_columns(track=pl.when(pl.col("level") > 0).then(fmt("{} (overlap {})", "base", "level")).otherwise("base"))
    )
    procs = (
        drawn.select("lane", "_orig_pid")
        .unique()
        .with_columns(_rank=pl.col("lane").replace_strict(lane_rank, return_dtype=pl.Int64))
        .sort("_rank", "_orig_pid")
        .with_columns(out_pid=pl.int_range(1, pl.len() + 1, dtype=pl.Int64))
        .with_columns(proc_name=fmt("{} · {}", "lane", pl.when(pl.col("lane") == "hardware").then(fmt("device {}", "_orig_pid")).otherwise(fmt("pid {}", "_orig_pid"))))
    )
    threads = (
        drawn.select("lane", "_orig_pid", "track")
        .unique()
        .sort("lane", "_orig_pid", "track")
        .with_columns(out_tid=pl.int_range(1, pl.len() + 1, dtype=pl.Int64).over("lane", "_orig_pid"))
        .join(procs.select("lane", "_orig_pid", "out_pid"), on=["lane", "_orig_pid"])
    )
    ids = drawn.join(threads, on=["lane", "_orig_pid", "track"]).select("rank", "level", "out_pid", "out_tid")
    slices = order.filter("is_slice").select("rank").unique().join(ranks.filter(pl.col("lane") == "hardware"), on="rank")
    return Placement(
        events=events.drop(_PLACING).hstack(order.join(ids, on=["rank", "level"], how="left").sort("idx").select("out_pid", "out_tid")),
        processes=procs.select("out_pid", "proc_name", "_rank"),
        threads=threads.select("out_pid", "out_tid", "track"),
        devices=slices.join(procs, on=["lane", "_orig_pid"]).select(track="ntrace_track", out_pid="out_pid").unique("track"),
    )


def overlap_levels(group: pl.Series, ts: pl.Series, end: pl.Series) -> list[int]:
    """Per slice (sorted by group, start, end descending): the first level of its group (0, then overflow 1, 2, …) where it nests in every slice it overlaps.

    A stack walk per level, as Perfetto draws a thread: a slice fits a level when it starts at or
    after the end of the level's open slices, or ends within the innermost one still open. It is
    sequential by nature, hence a Python loop, over _CHUNK slices' values at a time.
    """
    levels: list[int] = []
    stacks: list[list[int]] = []
    previous = None
    for first in range(0, len(group), _CHUNK):
        rows = zip(group.slice(first, _CHUNK).to_list(), ts.slice(first, _CHUNK).to_list(), end.slice(first, _CHUNK).to_list())
        for g, start, stop in rows:
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


def source_args(profile: Profile) -> pl.DataFrame:
    """`idx` and `args` (JSON object text) of each event as the source Kineto JSON file wrote them; empty where the file cannot be re-read or no longer matches."""
    empty = pl.DataFrame(schema={"idx": pl.Int64, "args": pl.String})
    try:
        found = read_source_args(profile.trace.path)
    except (NtraceError, OSError, msgspec.DecodeError, MemoryError, RecursionError):
        return empty  # Explorer Parquet, a file gone or changed, one only the tolerant decoder reads: the linking args stand in
    mine = profile.events.select("idx", "name")
    if mine.height > found.height or not mine.join(found.select("idx", _name="name"), on="idx", how="left").select(pl.col("name").eq_missing(pl.col("_name")).all()).item():
        return empty
    return found.drop_nulls("args").select("idx", "args")


def _metadata(place: Placement) -> list[dict[str, Any]]:
    """M events naming and ordering every process and thread (a handful of rows, built as dicts)."""
    procs = place.processes.sort("out_pid")
    threads = place.threads.sort("out_pid", "out_tid")
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
    common: dict[str, pl.Expr | str | int] = {"name": json_string(pl.col("name")), "cat": json_string(pl.col("cat")), "pid": pl.col("out_pid"), "tid": pl.col("out_tid"), "ts": us_text(pl.col("ts"))}
    args = pl.coalesce(pl.col("args"), _args_text())
    line = (
        pl.when(pl.col("ph") == "X")
        .then(_obj(ph="X", **common, dur=us_text(pl.col("dur")), args=args))
        .otherwise(_obj(ph=json_string(pl.col("ph")), **common, args=args))
    )
    return events.select(line).to_series()


def _flow_lines(profile: Profile, events: pl.DataFrame) -> pl.Series:
    """An ac2g flow start on each linked runtime call and its end (bp "e") on the device activity it launched."""
    where = events.select("idx", "out_pid", "out_tid", "ts")
    links = (
        profile.links.with_row_index("flow", offset=1)
        .join(where.rename(lambda c: f"call_{c}"), on="call_idx", maintain_order="left")  # the lines in link order: an inner join keeps none of its own
        .join(where.rename(lambda c: f"exec_{c}"), on="exec_idx", maintain_order="left")
    )
    flow: dict[str, pl.Expr | str | int] = {"name": "ac2g", "cat": "ac2g", "id": pl.col("flow")}
    start = _obj(ph="s", **flow, pid=pl.col("call_out_pid"), tid=pl.col("call_out_tid"), ts=us_text(pl.col("call_ts")))
    end = _obj(ph="f", bp="e", **flow, pid=pl.col("exec_out_pid"), tid=pl.col("exec_out_tid"), ts=us_text(pl.col("exec_ts")))
    return pl.concat([links.select(start).to_series(), links.select(end).to_series()])


def _gap_lines(profile: Profile, devices: pl.DataFrame) -> pl.Series:
    """Each hardware idle gap as an async slice (b/e pair) on its device's process (`devices`: track, out_pid)."""
    gaps = profile.hardware_idle.join(devices, on="track", maintain_order="left").with_row_index("gap_id", offset=1)  # ids in gap order, run after run
    gap: dict[str, pl.Expr | str | int] = {"name": "hardware idle", "cat": GAP_CATEGORY, "id": pl.col("gap_id"), "pid": pl.col("out_pid"), "tid": 0}
    begin = _obj(ph="b", **gap, ts=us_text(pl.col("gap_start")), args=_obj(idle_us=us_text(pl.col("gap"))))
    end = _obj(ph="e", **gap, ts=us_text(pl.col("gap_end")))
    return pl.concat([gaps.select(begin).to_series(), gaps.select(end).to_series()])


def perfetto_chunks(profile: Profile) -> Iterator[bytes]:
    """The Chrome-trace JSON document for `profile` (UTF-8), in pieces of at most _CHUNK events' lines: no piece holds the whole text."""
    place = placed(profile)
    events = place.events.hstack([place.events.select("idx").join(source_args(profile), on="idx", how="left", maintain_order="left")["args"]])
    head = orjson.dumps({"traceName": f"ntrace export of {profile.trace.path}", "displayTimeUnit": "ns", "otherData": {"exported_by": "ntrace", "source": str(profile.trace.path)}})
    yield head[:-1] + b',"traceEvents":[\n'
    written = False
    for lines in _lines(profile, place, events):
        if len(lines):
            yield (b",\n" if written else b"") + pl.select(lines.str.join(",\n")).item().encode()
            written = True
    yield b"\n]}\n"


def _lines(profile: Profile, place: Placement, events: pl.DataFrame) -> Iterator[pl.Series]:
    """The document's event lines, made a part at a time: process and thread names, the events (with their args) _CHUNK at a time, the flows, the idle gaps."""
    yield pl.Series([orjson.dumps(m).decode() for m in _metadata(place)], dtype=pl.String)
    for first in range(0, events.height, _CHUNK):
        yield _event_lines(events.slice(first, _CHUNK))
    yield _flow_lines(profile, events.filter(pl.col("ph") == "X").select("idx", "out_pid", "out_tid", "ts"))
    yield _gap_lines(profile, place.devices)


def perfetto_json(profile: Profile) -> bytes:
    """The Chrome-trace JSON document for `profile` (bytes, UTF-8)."""
    return b"".join(perfetto_chunks(profile))


def export_perfetto(profile: Profile, out: str | Path) -> Path:
    """Write the Perfetto/Chrome-trace JSON of `profile` to `out` atomically, a piece at a time, gzipped when its name ends in .gz; returns the path written."""
    pack = zlib.compressobj(9, zlib.DEFLATED, 31) if str(out).endswith(".gz") else None  # gzip with no name and time 0, as gzip.compress(mtime=0) writes it
    with atomic_open(out) as fh:
        for chunk in perfetto_chunks(profile):
            fh.write(pack.compress(chunk) if pack else chunk)
        if pack:
            fh.write(pack.flush())
    return Path(out)
