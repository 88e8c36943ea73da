"""The JSON renderer: the stable contracts other tooling reads (`ntrace.analysis/2`, `ntrace.compare/2`, `ntrace.diff/2`, `ntrace.artifacts/1`), every µs value written exactly from integer ns."""

from __future__ import annotations

from typing import Any, Sequence

import orjson
import polars as pl

from ntrace.analyses.ops import OpView, op_table
from ntrace.neuron.artifacts import Session
from ntrace.summary import Summary
from ntrace.units import us_text
from ntrace.workflows.analyze import Analysis
from ntrace.workflows.compare import Comparison
from ntrace.workflows.diff import Diff

SCHEMA = "ntrace.analysis/2"
COMPARE_SCHEMA = "ntrace.compare/2"
DIFF_SCHEMA = "ntrace.diff/2"
ARTIFACTS_SCHEMA = "ntrace.artifacts/1"


def exact_us(ns: int | None) -> orjson.Fragment | None:
    """Integer ns as a JSON number of µs written exactly (three decimals from the integer): no float rounding, even at epoch timestamps."""
    return None if ns is None else orjson.Fragment(us_text(int(ns)).encode())


def _stats(row: dict[str, Any]) -> dict[str, Any]:
    """One gap or delay kind's statistics; only hardware idle has a share (of the hardware tracks' spans)."""
    out = {"count": row["count"], **{f"{k}_us": exact_us(row[k]) for k in ("total", "p50", "p90", "max")}}
    return out | ({"share": row["share"]} if row["share"] is not None else {})


def summary_dict(summary: Summary, session: Session | None, view: OpView = OpView()) -> dict[str, Any]:
    """One trace as a JSON-ready dict (exact µs); every number comes from its summary's frames."""
    cats = summary.categories
    lanes = []
    for row in summary.lanes.iter_rows(named=True):
        mine = cats.filter(pl.col("lane") == row["lane"])
        lanes.append(
            {
                "lane": row["lane"],
                "events": row["events"],
                "total_us": exact_us(row["total"]),
                "busy_us": exact_us(row["busy"]),
                "share": row["share"],
                "categories": dict(zip(mine["category"].to_list(), mine["events"].to_list())),
            }
        )
    devices = summary.step_devices.partition_by("step", as_dict=True)
    busy = [c.removesuffix("_busy") for c in summary.steps.columns if c.endswith("_busy")]  # the lanes with a busy column, in column order
    outside_events, outside_ns = summary.outside_steps
    return {
        "trace": str(summary.path),
        "variant": summary.variant,
        "events": summary.events,
        "window_us": exact_us(summary.window_ns),
        "start_us": exact_us(summary.window[0]),
        "device": summary.device,
        "lanes": lanes,
        "tracks": [
            {"lane": r["lane"], "track": r["track"], "events": r["events"], "total_us": exact_us(r["total"]), "busy_us": exact_us(r["busy"]),
             "idle_us": exact_us(r["idle"]), "span_us": exact_us(r["span"]), "gaps": r["gaps"], "idle_share": r["idle_share"]}
            for r in summary.tracks.iter_rows(named=True)
        ],
        "hardware_tracks": [
            {"track": r["track"], "busy_us": exact_us(r["busy"]), "idle_us": exact_us(r["idle"]), "span_us": exact_us(r["span"]), "gaps": r["gaps"], "idle_share": r["idle_share"]}
            for r in summary.hardware_tracks.iter_rows(named=True)
        ],
        "gaps": {row["kind"]: _stats(row) for row in summary.gaps.iter_rows(named=True)},
        "steps": [
            {
                "step": r["step"],
                "name": r["name"],
                "start_us": exact_us(r["start"]),
                "dur_us": exact_us(r["dur"]),
                "host_busy_us": {lane: exact_us(r[f"{lane}_busy"]) for lane in busy},
                "devices": [
                    {"device": d["device"], "events": d["events"], "busy_us": exact_us(d["busy"]), "idle_us": exact_us(d["idle"]), "span_us": exact_us(d["span"])}
                    for d in devices.get((r["step"],), summary.step_devices.clear()).iter_rows(named=True)
                ],
            }
            for r in summary.steps.iter_rows(named=True)
        ],
        "outside_steps": {"events": outside_events, "total_us": exact_us(outside_ns)},
        "ops": ops_dicts(op_table(summary.op_groups, summary.self_cpu_ns, summary.device_ns, view)),
        "op_totals": {"self_cpu_us": exact_us(summary.self_cpu_ns), "device_us": exact_us(summary.device_ns)},
        "kernels": [
            {"name": r["name"], "calls": r["calls"], **{f"{k}_us": exact_us(r[k]) for k in ("total", "mean", "min", "max")}, "share": r["share"], "streams": r["streams"]}
            for r in summary.kernels.iter_rows(named=True)
        ],
        "findings": findings_dicts(summary),
        "warnings": list(summary.warnings),
        "artifacts": session_dict(session) if session else None,
    }  # fmt: skip


def analysis(result: Analysis, view: OpView = OpView()) -> str:
    """The whole analysis as one JSON object (schema `ntrace.analysis/2`)."""
    doc = {
        "schema": SCHEMA,
        "profiles": [summary_dict(s, session, view) for s, session in result],
        "artifacts": [{"dir": str(s.dir), **session_dict(s)} for s in result.artifacts],
        "warnings": result.all_warnings,
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()


def ops_dicts(ops: pl.DataFrame) -> list[dict[str, Any]]:
    """The `ops` array of the analyze JSON (exact µs, percents 0–100), from an op table view."""
    extra = ["input_dims"] if "input_dims" in ops.columns else []
    return [
        {
            "name": r["name"],
            "user_annotation": r["user_annotation"],
            **{k: r[k] for k in extra},
            "calls": r["calls"],
            "self_cpu_us": exact_us(r["self_cpu"]),
            "self_cpu_pct": r["self_cpu_pct"],
            "cpu_total_us": exact_us(r["cpu_total"]),
            "cpu_total_pct": r["cpu_total_pct"],
            "cpu_avg_us": exact_us(r["cpu_avg"]),
            "self_device_us": exact_us(r["self_device"]),
            "self_device_pct": r["self_device_pct"],
            "device_total_us": exact_us(r["device_total"]),
            "device_avg_us": exact_us(r["device_avg"]),
        }
        for r in ops.iter_rows(named=True)
    ]


def findings_dicts(summary: Summary) -> list[dict[str, Any]]:
    """The `findings` array of the analyze JSON: kind, subject, summary, time_us and the events it rests on (name, op, start and duration in exact µs)."""
    return [
        {
            "kind": r["kind"],
            "subject": r["subject"],
            "summary": r["summary"],
            "time_us": exact_us(r["time"]),
            "events": [{"name": e["name"], "op": e["op"], "ts_us": exact_us(e["ts"]), "dur_us": exact_us(e["dur"])} for e in r["events"]],
        }
        for r in summary.findings.iter_rows(named=True)
    ]


def compare(comparison: Comparison) -> str:
    """The comparison as one JSON object (schema `ntrace.compare/2`): baseline, basis, one object per variant (exact µs), warnings."""
    doc = {
        "schema": COMPARE_SCHEMA,
        "baseline": comparison.baseline,
        "basis": comparison.basis,
        "variants": [
            {
                "name": r["name"],
                "path": r["path"],
                "traces": r["traces"],
                "device": r["device_name"],
                "device_us": exact_us(r["device"]),
                "compute_us": exact_us(r["compute"]),
                "self_cpu_us": exact_us(r["self_cpu"]),
                "device_op_calls": r["device_op_calls"],
                "idle_us": exact_us(r["idle"]),
                "step_us": exact_us(r["step"]),
                "speedup": r["speedup"],
            }
            for r in comparison.variants.iter_rows(named=True)
        ],
        "warnings": list(comparison.warnings),
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()


def _sides(base: int | None, test: int | None) -> dict[str, Any]:
    """A base/test pair of ns as exact µs; null where a side has no such row."""
    return {"base": exact_us(base), "test": exact_us(test)}


def diff_dict(d: Diff) -> dict[str, Any]:
    """The diff as a JSON-ready dict (exact µs; change percents 0–100)."""
    return {
        "schema": DIFF_SCHEMA,
        "base": str(d.base),
        "test": str(d.test),
        "threshold_pct": d.threshold,
        "device_us": _sides(d.base_device, d.test_device),
        "device_change_pct": d.device_change_pct,
        "ops": [
            {
                "name": r["name"],
                "user_annotation": r["user_annotation"],
                "status_device": r["status_device"],
                "status_cpu": r["status_cpu"],
                "calls": {"base": r["base_calls"], "test": r["test_calls"]},
                "self_device_us": _sides(r["base_self_device"], r["test_self_device"]),
                "self_device_change_pct": r["self_device_change_pct"],
                "self_cpu_us": _sides(r["base_self_cpu"], r["test_self_cpu"]),
                "self_cpu_change_pct": r["self_cpu_change_pct"],
            }
            for r in d.ops.iter_rows(named=True)
        ],
        "lanes": [
            {"lane": r["lane"], "total_us": _sides(r["base_total"], r["test_total"]), "busy_us": _sides(r["base_busy"], r["test_busy"])}
            for r in d.lanes.iter_rows(named=True)
        ],
        "gaps": {
            kind: {
                (r["stat"] if r["stat"] == "count" else f"{r['stat']}_us"): ({"base": r["base"], "test": r["test"]} if r["stat"] == "count" else _sides(r["base"], r["test"]))
                for r in d.gaps.iter_rows(named=True)
                if r["kind"] == kind
            }
            for kind in d.gaps["kind"].unique(maintain_order=True).to_list()
        },
        "warnings": list(d.warnings),
    }


def diff(d: Diff) -> str:
    """The diff as one JSON object (schema `ntrace.diff/2`)."""
    return orjson.dumps(diff_dict(d), option=orjson.OPT_INDENT_2).decode()


def session_dict(session: Session) -> dict[str, Any]:
    """The `artifacts` object of the analyze JSON: session, neff, ntff, pairs, unpaired."""
    return {
        "session": {"instance": session.instance, "pid": session.pid, "timestamp": session.timestamp},
        "neff": [
            {
                "path": r["path"], "hash": r["hash"], "name": r["neff_name"], "uuid": r["uuid"], "neff_version": r["neff_version"],
                "data_size": r["data_size"], "members": r["members"], "valid": r["valid"], "problem": r["problem"],
            }
            for r in session.neffs.iter_rows(named=True)
        ],
        "ntff": [{"path": r["path"], "hash": r["hash"], "core": r["core"], "size": r["size"]} for r in session.ntffs.iter_rows(named=True)],
        "pairs": session.pairs.to_dicts(),
        "unpaired": session.unpaired.to_dicts(),
    }


def artifacts(sessions: Sequence[Session]) -> str:
    """Every session as one JSON object (schema `ntrace.artifacts/1`), with its directory, traces and .pb files too."""
    doc = {
        "schema": ARTIFACTS_SCHEMA,
        "sessions": [
            {"dir": str(s.dir), "traces": [str(t) for t in s.traces], **session_dict(s), "pb": s.pbs.to_dicts()} for s in sessions
        ],
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()


