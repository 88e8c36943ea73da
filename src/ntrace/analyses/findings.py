"""Findings: what a reader should look at first — device hotspots, fusable runs of small executions, host→device copies inside ops.

Each finding is one row: kind, the op or track it is about, a one-line summary, the time at stake
(ns) and the events it rests on (idx, name, ts, dur), so every claim can be checked in the trace.
"""

from __future__ import annotations

from typing import Any, Callable

import polars as pl

from ntrace.analyses.ops import launching_ops, op_around, op_name
from ntrace.units import fmt_pct, fmt_time

EVENT = pl.Struct({"idx": pl.Int64, "name": pl.String, "ts": pl.Int64, "dur": pl.Int64})
FINDING_SCHEMA = pl.Schema({"kind": pl.String(), "subject": pl.String(), "summary": pl.String(), "time": pl.Int64(), "events": pl.List(EVENT)})

#: Runtime calls that copy host memory to the device whatever their arguments say.
HOST_TO_DEVICE_CALLS: tuple[str, ...] = ("nrt_tensor_write",)
#: Device-side copy names that say host→device (CUDA's "Memcpy HtoD (Pageable -> Device)", Neuron's "Memcpy HtoD").
_HTOD = r"(?i)htod|host\s*to\s*device"

#: Idle gaps longer than this (1 ms) are the host doing other work, not dispatch overhead that fusion removes.
MAX_DISPATCH_GAP = 1_000_000

#: How many events a finding lists; the time covers all of them.
MAX_EVENTS = 8


def _select(complete: pl.LazyFrame, *columns: str | pl.Expr, where: pl.Expr, **named: str | pl.Expr) -> pl.DataFrame:
    """`columns` of the complete events where `where` holds, in file order (only the columns read are copied)."""
    out = complete.filter(where.fill_null(False)).select(*columns, **named).collect()
    return out.with_columns(pl.col("idx").set_sorted()) if "idx" in out.columns else out


def _events() -> pl.Expr:
    """The first MAX_EVENTS events of a group, as a list of (idx, name, ts, dur) structs."""
    return pl.struct("idx", "name", "ts", "dur").sort_by("ts").head(MAX_EVENTS).alias("events")


def _with_events(chosen: pl.DataFrame, rows: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The chosen groups with the events column listed from `rows` for them alone (listing every group's events costs more than the rest)."""
    listed = rows.join(chosen.select(keys), on=keys).group_by(keys).agg(_events())
    return chosen.join(listed, on=keys, how="left", maintain_order="left")


def _finding(frame: pl.DataFrame, kind: str, subject: str, summary: Callable[[dict[str, Any]], str]) -> pl.DataFrame:
    """Shape aggregated rows into findings; the summary line of each (a handful of rows) is written from its values."""
    lines = [summary(row) for row in frame.iter_rows(named=True)]
    return frame.select(
        kind=pl.lit(kind, dtype=pl.String),
        subject=pl.col(subject),
        summary=pl.Series(lines, dtype=pl.String),
        time="time",
        events="events",
    ).cast(FINDING_SCHEMA)


def hotspots(complete: pl.LazyFrame, attribution: pl.DataFrame, executions: pl.DataFrame, device: str, hw_total: int, top: int = 3) -> pl.DataFrame:
    """The ops with the most self device time, each with the hardware executions attributed to it (device_attribution's rows)."""
    dev = device
    execs = attribution.filter(pl.col("op_idx").is_not_null())
    if execs.is_empty() or not hw_total:
        return pl.DataFrame(schema=FINDING_SCHEMA)
    ops = _select(complete, op_idx="idx", op=op_name(pl.col("name").fill_null("")), where=pl.col("idx").is_in(execs["op_idx"].implode()))
    named = execs.join(ops, on="op_idx").join(executions.select(exec_idx="idx", name="name", ts="ts"), on="exec_idx")
    per_op = (
        named.rename({"exec_idx": "idx"})
        .group_by("op")
        .agg(time=pl.col("dur").sum(), calls=pl.col("op_idx").n_unique(), execs=pl.len(), events=_events())
        .sort(["time", "op"], descending=[True, False])
        .head(top)
    )
    return _finding(
        per_op,
        "device_hotspot",
        "op",
        lambda r: f"{r['op']}: {fmt_time(r['time'])} self {dev} time ({fmt_pct(r['time'] / hw_total)} of all device time) in {r['calls']} calls, {r['execs']} executions",
    )


def small_runs(executions: pl.DataFrame, top: int = 3, max_gap: int = MAX_DISPATCH_GAP) -> pl.DataFrame:
    """Runs of ≥3 consecutive executions on one device where each is followed by an idle gap longer than itself.

    Fused into one execution, the run would lose its inner idle gaps: that sum is the time reported.
    A gap longer than `max_gap` ns is not a dispatch gap (the host was busy elsewhere) and ends a run.
    """
    hw = (
        executions.sort(["track", "ts", "end"])
        .with_columns(gap_after=(pl.col("ts").shift(-1) - pl.col("end")).over("track"))
        .with_columns(small=((pl.col("gap_after") > pl.col("dur")) & (pl.col("gap_after") <= max_gap)).fill_null(False))
        .with_columns(run=(~pl.col("small").shift(1).fill_null(False)).cum_sum().over("track"))
    )
    runs = (
        hw.group_by("track", "run")
        .agg(
            execs=pl.len(),
            time=pl.col("gap_after").filter(pl.col("small")).sum(),
            busy=pl.col("dur").sum(),
            first=pl.col("ts").min(),
        )
        .filter(pl.col("execs") >= 3)
        .sort(["time", "first"], descending=[True, False])
        .head(top)
    )
    return _finding(
        _with_events(runs, hw, ["track", "run"]),
        "small_executions",
        "track",
        lambda r: f"{r['track']}: {r['execs']} executions ({fmt_time(r['busy'])} busy) separated by {fmt_time(r['time'])} of idle gaps, "
        "each longer than the execution before it; fusing them could remove the gaps",
    )


def host_to_device_copies(complete: pl.LazyFrame, links: pl.DataFrame, nest: pl.DataFrame) -> pl.DataFrame:
    """Ops that copy host memory to the device while they run: the copy call, the device copy it started, and the op."""
    device_side = _select(complete, "idx", "name", where=pl.col("side") == "device")
    copies = device_side.filter(pl.col("name").str.contains(_HTOD).fill_null(False))  # the pattern runs on device-side names only
    by_device = launching_ops(copies, links, nest).filter(pl.col("op_idx").is_not_null())
    calls = _select(complete, "idx", where=(pl.col("lane") == "runtime_api") & pl.col("name").is_in(HOST_TO_DEVICE_CALLS))
    by_call = calls.with_columns(op_idx=op_around(nest, calls["idx"])).filter(pl.col("op_idx").is_not_null())
    members = pl.concat(
        [
            by_call.select("op_idx", "idx"),
            by_device.select("op_idx", idx="exec_idx"),
            by_device.filter(pl.col("call_idx").is_not_null()).select("op_idx", idx="call_idx"),
        ]
    ).unique()
    if members.is_empty():
        return pl.DataFrame(schema=FINDING_SCHEMA)
    involved = _select(complete, "idx", "name", "ts", "dur", "side", where=pl.col("idx").is_in(pl.concat([members["idx"], members["op_idx"]]).implode()))
    ops = involved.select(op_idx="idx", op="name", op_ts="ts", op_dur="dur")
    named = members.join(involved.select("idx", "name", "ts", "dur", "side"), on="idx").join(ops, on="op_idx")
    op_rows = named.select(idx="op_idx", name="op", ts="op_ts", dur="op_dur", op="op").unique()
    listed = pl.concat([op_rows, named.select("idx", "name", "ts", "dur", "op")])
    per_op = (
        listed.group_by("op")
        .agg(
            calls=pl.col("idx").filter(pl.col("name") == pl.col("op")).n_unique(),
            events=_events(),
        )
        .join(named.group_by("op").agg(time=pl.col("dur").filter(pl.col("side") == "device").sum(), names=pl.col("name").unique().sort().str.join(", ")), on="op")
        .sort("op")
    )
    return _finding(
        per_op,
        "host_to_device_copy",
        "op",
        lambda r: f"{r['op']} copies host memory to the device inside the op ({r['names']}; {fmt_time(r['time'])} on the device over "
        f"{r['calls']} calls): a CPU scalar or tensor moved per call — create it on the device once",
    )


def findings(
    complete: pl.LazyFrame, attribution: pl.DataFrame, executions: pl.DataFrame, links: pl.DataFrame, nest: pl.DataFrame, device: str, hardware_ns: int
) -> pl.DataFrame:
    """Every finding for one trace: hotspots first, then fusable small-execution runs, then host→device copies.

    `complete` is the trace's complete events (lazy: each finding copies only what it reads);
    the rest are the analyses they rest on (ops.device_attribution, the hardware executions with
    their track, links.launch_links, ops.op_tree's nesting).
    """
    return pl.concat([hotspots(complete, attribution, executions, device, hardware_ns), small_runs(executions), host_to_device_copies(complete, links, nest)])
