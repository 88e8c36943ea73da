"""Per-lane and per-track totals: event counts, summed duration, busy time (union of intervals), share of the window."""

from __future__ import annotations

import polars as pl

from ntrace.analyses.intervals import gaps, group_busy, reaching
from ntrace.exprs import lookup
from ntrace.lanes import LANES


def track() -> pl.Expr:
    """The track an event is drawn on: thread for host lanes, stream for device interaction, device for hardware."""
    pid, tid = pl.col("pid").fill_null("?"), pl.col("tid").fill_null("?")
    hardware, device_side = (pl.col("lane") == "hardware").fill_null(False), (pl.col("side") == "device").fill_null(False)
    stream = (pl.col("lane") == "device").fill_null(False) & pl.col("stream").is_not_null()
    # "device {pid}" | "device {pid} stream {tid}" | "stream {stream}" | "pid {pid} tid {tid}", in that order of
    # precedence, as four short pieces: one concatenation instead of formatting all four strings for every event.
    on_device, by_stream = hardware | device_side, ~(hardware | device_side) & stream
    return pl.concat_str(
        pl.when(on_device).then(pl.lit("device ")).when(stream).then(pl.lit("stream ")).otherwise(pl.lit("pid ")),
        pl.when(by_stream).then(pl.col("stream").cast(pl.String)).otherwise(pid),
        pl.when(hardware).then(pl.lit("")).when(device_side).then(pl.lit(" stream ")).when(stream).then(pl.lit("")).otherwise(pl.lit(" tid ")),
        pl.when(hardware | by_stream).then(pl.lit("")).otherwise(tid),
    ).alias("track")


def thread_key(pid: pl.Expr, tid: pl.Expr) -> pl.Expr:
    """One Int64 per (pid, tid) text pair (null when either is null), so sorts and windows on threads compare integers, not text.

    The codes hold within the frame the expression runs on; Polars may renumber categories once no
    column holds them, so never join two frames on keys made separately.
    """
    pid_code, tid_code = (e.cast(pl.Categorical).to_physical().cast(pl.Int64) for e in (pid, tid))
    return (pid_code * (1 << 32) + tid_code).alias("thread")


def _text_code(name: str) -> pl.Expr:
    """An integer per distinct text of a column (null read as "?"): equal texts, equal codes, within one frame."""
    return pl.col(name).fill_null("?").cast(pl.Categorical).to_physical()


def spans(events: pl.DataFrame, keep: pl.Series, by: tuple[str, ...] = ()) -> tuple[pl.DataFrame, pl.Series]:
    """The events where `keep` holds as (lane, track, ts, end) and their `by` columns, track an integer code; and the track names by code.

    Codes follow the names' lexical order (within each key of the `by` columns, which make tracks of
    their own: many traces stacked), so sorting on codes sorts on names. No text is made per
    event: each event gets a small integer key of what its track name is made of (pid and tid as
    category codes, the stream), the name is written once per distinct key (by `track()` on one
    event of each), and the keys are joined to the codes.
    """
    hardware, device_side = (pl.col("lane") == "hardware").fill_null(False), (pl.col("side") == "device").fill_null(False)
    stream = (pl.col("lane") == "device").fill_null(False) & pl.col("stream").is_not_null()
    kind = pl.when(hardware).then(0).when(device_side).then(1).when(stream).then(2).otherwise(3).cast(pl.UInt8)
    parts = [*by, "kind", "pid", "tid", "stream"]
    keys = events.lazy().filter(keep).select(
        *by,
        kind.alias("kind"),
        pid=pl.when(~stream | hardware | device_side).then(_text_code("pid")),  # every track but a stream's names its pid
        tid=pl.when(~hardware & (device_side | ~stream)).then(_text_code("tid")),  # device streams and threads name their tid
        stream=pl.when(~hardware & ~device_side & stream).then(pl.col("stream")),
    ).collect(engine="in-memory")
    first = keys.with_row_index("row").unique(parts, keep="first")
    rows = lookup(keep.arg_true(), first["row"])
    first = first.with_columns(name=events[rows].select(track()).to_series())
    named = first.select(*by, "name").unique().sort([*by, "name"]).with_row_index("track").with_columns(pl.col("track").cast(pl.UInt32))
    first = first.join(named, on=[*by, "name"]).select(*parts, "track")
    codes = keys.join(first, on=parts, how="left", nulls_equal=True, maintain_order="left")["track"]
    return events.select(*by, "lane", "ts", "end").filter(keep).with_columns(track=codes).select(*by, "lane", "track", "ts", "end"), named["name"]


def window(spans: pl.DataFrame) -> tuple[int, int]:
    """The profiled window in ns: first start to last end over all complete events ((0, 0) when empty)."""
    if spans.is_empty():
        return 0, 0
    row = spans.select(pl.col("ts").min(), pl.col("end").max()).row(0)
    return int(row[0]), int(row[1])


def _lane_name(code: pl.Expr) -> pl.Expr:
    """The lane's name for its Enum code."""
    return code.replace_strict(list(range(len(LANES))), list(LANES), return_dtype=pl.String)


def lane_totals(spans: pl.DataFrame, windows: pl.DataFrame, key: str | None = None) -> pl.DataFrame:
    """One row per lane (all five, empty ones included) of the `spans` frame: events, total, busy, share of the window (busy / window).

    `windows` holds the window's length (`window_ns`): one row, or one per value of the integer
    column `key` of both frames (many traces stacked), whose rows then come per key.
    """
    n = len(LANES)
    code = pl.col("lane").to_physical().cast(pl.Int64)
    keys = [key] if key else []
    ordered = reaching(spans.select(_g=code if key is None else pl.col(key).cast(pl.Int64) * n + code, ts="ts", end="end"), "_g")
    per_lane = group_busy(ordered, "_g").select(
        *((pl.col("_g") // n).alias(k) for k in keys), lane=_lane_name(pl.col("_g") % n), events="events", total="total", busy="busy"
    )
    base = windows.join(pl.DataFrame({"lane": list(LANES)}), how="cross", maintain_order="left_right")
    window = pl.col("window_ns")
    return (
        base.join(per_lane, on=[*keys, "lane"], how="left", maintain_order="left")
        .with_columns(
            pl.col("events").fill_null(0).cast(pl.Int64),
            pl.col("total").fill_null(0),
            pl.col("busy").fill_null(0),
        )
        .with_columns(share=pl.when(window != 0).then(pl.col("busy") * (1.0 / window)).otherwise(pl.lit(0.0)))  # as Polars divides by a number
        .drop("window_ns")
    )


def lane_categories(complete: pl.LazyFrame, by: tuple[str, ...] = ()) -> pl.LazyFrame:
    """Events and summed duration per (lane, category), so a reader sees what each lane is made of: a query on the complete events' lane, cat and dur (and the `by` columns, which key rows of their own)."""
    return (
        complete.group_by(*by, "lane", "cat")  # grouped on the lane's code and the text as written, named after
        .agg(events=pl.len().cast(pl.Int64), total=pl.col("dur").sum())
        .group_by(*by, "lane", category=pl.col("cat").fill_null(""))  # a missing category counts as "" (few rows)
        .agg(pl.col("events").sum(), pl.col("total").sum())
        .with_columns(pl.col("lane").cast(pl.String))
        .sort([*by, "lane", "events", "category"], descending=[*[False] * len(by), False, True, False])  # category breaks ties: same input, same order
    )


def track_totals(spans: pl.DataFrame, names: pl.Series) -> tuple[pl.DataFrame, pl.DataFrame]:
    """Of the `spans` frame, in one sorted pass: one row per (lane, track) with events, total, busy, idle, gaps, span, idle share
    of the span, first start and last end (ns); and every idle gap between hardware executions on the same device (track, gap_start, gap_end, gap).
    """
    n = max(len(names), 1)
    lane, hardware = pl.col("_g") // n, LANES.index("hardware")
    ordered = reaching(spans.select(_g=pl.col("lane").to_physical().cast(pl.Int64) * n + pl.col("track"), ts="ts", end="end"), "_g")
    per_track = (
        group_busy(ordered, "_g")
        .with_columns(lane=_lane_name(lane), track=pl.lit(names).gather(pl.col("_g") % n), idle_share=pl.when(pl.col("span") > 0).then(pl.col("idle") / pl.col("span")).otherwise(0.0))
        .select("lane", "track", "events", "total", "busy", "idle", "gaps", "span", "idle_share", "first", "last")
        .sort("lane", "track")
    )
    idle = gaps(ordered.filter(lane == hardware), "_g").select(track=pl.lit(names).gather(pl.col("_g") % n), gap_start="gap_start", gap_end="gap_end", gap="gap")
    return per_track, idle
