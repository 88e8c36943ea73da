"""Findings: what a reader should look at first — device hotspots, fusable runs of small executions, scalar-sized host→device copies inside compute ops.

Each finding is one row: kind, the op or track it is about, a one-line summary, the time at
stake (ns) and the events it rests on (name, start, duration, and the op that launched each),
so every claim can be checked in the trace. Hotspots count calls and time as the op table does.
"""

from __future__ import annotations

from typing import Any, Callable

import polars as pl

from ntrace.analyses.ops import UNLINKED
from ntrace.exprs import matches
from ntrace.units import fmt_pct, fmt_time, plural

EVENT = pl.Struct({"idx": pl.Int64(), "name": pl.String(), "ts": pl.Int64(), "dur": pl.Int64(), "op": pl.String()})
FINDING_SCHEMA = pl.Schema({"kind": pl.String(), "subject": pl.String(), "summary": pl.String(), "time": pl.Int64(), "events": pl.List(EVENT)})

#: Device-side copy names that say host→device (CUDA's "Memcpy HtoD (Pageable -> Device)", Neuron's "Memcpy HtoD").
_HTOD = r"(?i)htod|host\s*to\s*device"
#: Largest copy that is a scalar moved per call (a few values), not a batch of input data.
SCALAR_BYTES = 64
#: Ops whose job is to copy: a copy inside them is the point of the op, not a hidden cost.
COPY_OPS: tuple[str, ...] = ("aten::copy_", "aten::to", "aten::_to_copy", "aten::contiguous", "aten::clone", "aten::pin_memory", "aten::_copy_from")

#: Idle gaps longer than this (1 ms) are the host doing other work, not dispatch overhead that fusion removes.
MAX_DISPATCH_GAP = 1_000_000

#: Fewest consecutive small executions that make a run worth fusing.
MIN_RUN = 3

#: How many events a finding lists; the time covers all of them.
MAX_EVENTS = 8


def _events(op: pl.Expr = pl.lit(None, pl.String)) -> pl.Expr:
    """The first MAX_EVENTS events of a group (by start), as a list of (idx, name, ts, dur, op) structs."""
    return pl.struct("idx", "name", "ts", "dur", op.alias("op")).sort_by("ts", "idx").head(MAX_EVENTS).alias("events")


def _finding(frame: pl.DataFrame, kind: str, subject: str, summary: Callable[[dict[str, Any]], str], by: tuple[str, ...] = ()) -> pl.DataFrame:
    """Shape aggregated rows into findings (keyed by their `by` columns); the summary line of each (a handful of rows) is written from its values."""
    lines = [summary(row) for row in frame.iter_rows(named=True)]
    return frame.select(
        *by,
        kind=pl.lit(kind, dtype=pl.String),
        subject=pl.col(subject),
        summary=pl.Series(lines, dtype=pl.String),
        time="time",
        events="events",
    ).cast(dict(FINDING_SCHEMA))  # type: ignore[arg-type]


def hotspots(table: pl.DataFrame, launched: pl.DataFrame, top: int = 3, by: tuple[str, ...] = ()) -> pl.DataFrame:
    """The op table rows (ops, not annotations or the unlinked row) with the most self device time, each with the device activities it launched.

    `table` is the op table by name, each row with its trace's `device` name and device time
    total (`device_ns`); `launched` holds each attributed device activity (idx, name, ts, dur) with
    its launching op's row name (`op`), names as text or categoricals. Both may be keyed by the
    `by` columns (traces stacked): each key gets its own top rows.
    """
    rows = table.filter(~pl.col("user_annotation") & (pl.col("name") != UNLINKED) & (pl.col("self_device") > 0) & (pl.col("device_ns") != 0))
    if rows.is_empty():
        return pl.DataFrame(schema={**{k: pl.Int64() for k in by}, **FINDING_SCHEMA})
    ranked = rows.sort([*by, "self_device", "name"], descending=[*[False] * len(by), True, False])
    chosen = (ranked.filter(pl.int_range(pl.len()).over(by) < top) if by else ranked.head(top)).select(
        *by, "device", "device_ns", op="name", time="self_device", calls="calls"
    )
    listed = (
        launched.join(chosen.select(*by, pl.col("op").cast(launched.schema["op"])), on=[*by, "op"], how="semi")  # names as categoricals: the few rows kept are made text
        .group_by(*by, "op")
        .agg(_events(pl.col("op")), activities=pl.len())
        .with_columns(pl.col("op").cast(pl.String))
    )
    per_op = chosen.join(listed, on=[*by, "op"], how="left", maintain_order="left").with_columns(pl.col("activities").fill_null(0))
    return _finding(
        per_op,
        "device_hotspot",
        "op",
        lambda r: f"{r['op']}: {fmt_time(r['time'])} self {r['device']} time ({fmt_pct(r['time'] / r['device_ns'])} of all device time) in "
        f"{plural(r['calls'], 'call')}, {plural(r['activities'], 'device activity', 'device activities')}",
        by,
    )


def small_runs(executions: pl.DataFrame, top: int = 3, max_gap: int = MAX_DISPATCH_GAP, by: tuple[str, ...] = ()) -> pl.DataFrame:
    """Runs of ≥MIN_RUN consecutive executions on one device (idx, name, ts, end, dur, track) where each is followed by an idle gap longer than itself.

    Fused into one execution, the run would lose its inner idle gaps: that sum is the time reported.
    A gap longer than `max_gap` ns is not a dispatch gap (the host was busy elsewhere) and ends a run.
    Tracks of different keys of the `by` columns (traces stacked) are told apart.
    """
    tracks = [*by, "track"]
    same_track = pl.all_horizontal(pl.col(c) == pl.col(c).shift(-1) for c in tracks)
    new_run = ~pl.col("small").shift(1).fill_null(False) | pl.any_horizontal((pl.col(c) != pl.col(c).shift(1)).fill_null(True) for c in tracks)
    hw = (
        executions.lazy()
        .sort([*tracks, "ts", "end", "idx"])
        .with_columns(gap_after=pl.when(same_track).then(pl.col("ts").shift(-1) - pl.col("end")))
        .with_columns(small=((pl.col("gap_after") > pl.col("dur")) & (pl.col("gap_after") <= max_gap)).fill_null(False))
        .with_columns(run=new_run.cum_sum())  # numbered across tracks: a run's number names it alone
        .collect(engine="in-memory")
    )
    ranked = (
        hw.lazy()
        .group_by(*tracks, "run")
        .agg(execs=pl.len(), time=pl.col("gap_after").filter(pl.col("small")).sum(), busy=pl.col("dur").sum(), first=pl.col("ts").min())
        .filter(pl.col("execs") >= MIN_RUN)
        .sort([*by, "time", "first", "track"], descending=[*[False] * len(by), True, False, False])
    )
    runs = (ranked.filter(pl.int_range(pl.len()).over(by) < top) if by else ranked.head(top)).collect(engine="in-memory")
    if runs.is_empty():  # no run long enough: nothing to list
        return pl.DataFrame(schema={**{k: pl.Int64() for k in by}, **FINDING_SCHEMA})
    # the events only of the runs reported, not of every run
    listed = hw.join(runs.select("run"), on="run").group_by("run").agg(_events())
    runs = runs.join(listed, on="run", how="left", maintain_order="left")
    return _finding(
        runs,
        "small_executions",
        "track",
        lambda r: f"{r['track']}: {r['execs']} executions ({fmt_time(r['busy'])} busy) separated by {fmt_time(r['time'])} of idle gaps, "
        "each longer than the execution before it; fusing them could remove the gaps",
        by,
    )


def scalar_copies(copies: pl.DataFrame, by: tuple[str, ...] = ()) -> pl.DataFrame:
    """Compute ops that copy a scalar from host to device on every call: the device copies (idx, name, ts, dur, bytes, op, op_idx) of at most SCALAR_BYTES launched by an op that is not a copy op.

    Large copies (input batches, often from pinned memory) are the data a step needs, not a cost fusion or a device-side constant removes, so they are not reported.
    """
    small = copies.filter(
        matches("name", _HTOD).fill_null(False) & (pl.col("bytes") <= SCALAR_BYTES).fill_null(False)
        & pl.col("op").is_not_null() & ~pl.col("op").is_in(COPY_OPS)
    )  # fmt: skip
    if small.is_empty():
        return pl.DataFrame(schema={**{k: pl.Int64() for k in by}, **FINDING_SCHEMA})
    per_op = (
        small.group_by(*by, "op")
        .agg(time=pl.col("dur").sum(), copies=pl.len(), calls=pl.col("op_idx").n_unique(), largest=pl.col("bytes").max(), events=_events(pl.col("op")))
        .sort(*by, "op")
    )
    return _finding(
        per_op,
        "host_to_device_copy",
        "op",
        lambda r: f"{r['op']} copies a {r['largest']}-byte value from host to device inside the op on every call ({plural(r['copies'], 'copy', 'copies')}, "
        f"{fmt_time(r['time'])} on the device): a CPU scalar moved per call — create it on the device once",
        by,
    )


def findings(table: pl.DataFrame, launched: pl.DataFrame, executions: pl.DataFrame, by: tuple[str, ...] = ()) -> pl.DataFrame:
    """Every finding for one trace (or per key of the `by` columns: traces stacked): hotspots first, then fusable small-execution runs, then scalar host→device copies.

    `table` is the op table by name with each row's `device` and `device_ns` (see hotspots),
    `launched` every attributed device activity (idx, name, ts, dur, bytes, op, op_idx),
    `executions` the hardware executions with their track.
    """
    return pl.concat([hotspots(table, launched, by=by), small_runs(executions, by=by), scalar_copies(launched, by)])
