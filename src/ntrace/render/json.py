"""The JSON renderer: the stable contracts other tooling reads (`ntrace.analysis/3`, `ntrace.compare/3`, `ntrace.diff/3`, `ntrace.artifacts/1`, `ntrace.device/1`, `ntrace.ranks/2`), keys from the one vocabulary (ntrace.render.columns), every µs value written exactly from integer ns."""

from __future__ import annotations

from functools import lru_cache
from typing import Any, Sequence

import orjson
import polars as pl

from ntrace.analyses.device import ENGINES, DeviceReport
from ntrace.analyses.memory import OP_COLUMNS as MEMORY_OP_COLUMNS
from ntrace.analyses.memory import device_label
from ntrace.analyses.opview import OpView
from ntrace.exprs import each_on_polars_thread, json_string, on_polars_thread, stacked, us_text as us_text_of
from ntrace.errors import json_safe
from ntrace.render.tables import op_tables_of, rank_figure_name
from ntrace.neuron.artifacts import Session
from ntrace.summary import Summary
from ntrace.units import us_text
from ntrace.workflows.analyze import Analysis
from ntrace.workflows.compare import Comparison
from ntrace.workflows.device import DeviceAnalysis, DeviceJoin
from ntrace.workflows.diff import Diff
from ntrace.workflows.ranks import ALIGNMENT_RULE, RankAnalysis

SCHEMA = "ntrace.analysis/3"
COMPARE_SCHEMA = "ntrace.compare/3"
DIFF_SCHEMA = "ntrace.diff/3"
ARTIFACTS_SCHEMA = "ntrace.artifacts/1"
DEVICE_SCHEMA = "ntrace.device/1"
RANKS_SCHEMA = "ntrace.ranks/2"


def _dumps(doc: dict[str, Any]) -> str:
    """A document as indented JSON whose strings hold no raw control character (orjson leaves DEL and C1 raw)."""
    return json_safe(orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode())


def exact_us(ns: int | None) -> orjson.Fragment | None:
    """Integer ns as a JSON number of µs written exactly (three decimals from the integer): no float rounding, even at epoch timestamps.

    Called per value of every rendered row (steps by the thousand on long captures): the common
    non-negative case is formatted as bytes directly, the text us_text gives.
    """
    if ns is None:
        return None
    ns = int(ns)
    return orjson.Fragment(b"%d.%03d" % divmod(ns, 1000) if ns >= 0 else us_text(ns).encode())


def _stats(row: dict[str, Any]) -> dict[str, Any]:
    """One gap or delay kind's statistics; only hardware idle has a share (of the hardware tracks' spans)."""
    out = {"count": row["count"], **{f"{k}_us": exact_us(row[k]) for k in ("total", "p50", "p90", "max")}}
    return out | ({"share": row["share"]} if row["share"] is not None else {})


#: Where analysis() writes a summary_dict's keys: 2 spaces per level of OPT_INDENT_2, inside the document and its `profiles` array.
_SUMMARY_INDENT = 6


def steps_texts(summaries: Sequence[Summary], indent: int = _SUMMARY_INDENT) -> list[orjson.Fragment]:
    """Each summary's `steps` array as the JSON text orjson's OPT_INDENT_2 writes for it under a key indented `indent` spaces: each step with its host busy time per lane (the lanes with a busy column, in column order) and its devices.

    Long captures hold steps by the ten thousand, too many for a Python object per value, and a
    directory holds tiny traces by the thousand, too many for a query each: the steps of all the
    summaries whose steps have the same columns are written, names escaped as orjson escapes them,
    by one query over them and their device rows stacked, STEPS_PER_QUERY steps at most per query
    (a long capture's cut in slices), so that the texts of many steps are never all built at once.
    tests/render/test_json_steps.py checks the bytes against orjson's own on dicts.
    """
    batches: dict[tuple[str, ...], list[list[tuple[int, pl.DataFrame]]]] = {}
    rows: dict[tuple[str, ...], int] = {}  # the steps in each column set's last batch
    for i, summary in enumerate(summaries):
        columns = tuple(summary.steps.columns)
        for piece in summary.steps.iter_slices(STEPS_PER_QUERY):
            alike = batches.setdefault(columns, [[]])
            if alike[-1] and rows[columns] + piece.height > STEPS_PER_QUERY:
                alike.append([])
                rows[columns] = 0
            alike[-1].append((i, piece))
            rows[columns] = rows.get(columns, 0) + piece.height
    texts: dict[int, list[bytes]] = {}
    for columns, groups in batches.items():
        busy = tuple(c.removesuffix("_busy") for c in columns if c.endswith("_busy"))
        for members in groups:
            for (i, _), text in zip(members, _steps_of([(piece, summaries[i]) for i, piece in members], busy, indent)):
                texts.setdefault(i, []).append(text)
    end = ("\n" + " " * indent + "]").encode()
    return [orjson.Fragment(b"[\n" + b",\n".join(texts[i]) + end) if i in texts else orjson.Fragment(b"[]") for i in range(len(summaries))]


#: The most steps steps_texts writes with one query.
STEPS_PER_QUERY = 1 << 13


def _steps_of(pieces: list[tuple[pl.DataFrame, Summary]], busy: tuple[str, ...], indent: int) -> list[bytes]:
    """Each (steps, their summary) piece's step texts, joined as in the array, for steps whose busy lanes are `busy`: one query over all the pieces' steps and device rows."""
    step_text, step_rest, device_rest = _step_texts(indent, busy)
    item, key, inner, deep = _pads(indent)
    steps = stacked([piece for piece, _ in pieces], pieces[0][0].schema, "_s")
    held = [(s, devices) for s, (piece, summary) in enumerate(pieces) if (devices := _devices_of(piece, summary)).height]
    if held:
        device = pl.concat_str(pl.lit(f'{inner}{{\n{deep}"device": '), json_string(pl.col("device")), device_rest)
        owners = pl.Series([s for s, _ in held], dtype=pl.Int64)
        lists = (
            stacked([devices for _, devices in held], held[0][1].schema, "_d")
            .select(pl.lit(owners).gather(pl.col("_d")).alias("_s"), "step", device.alias("devices"))
            .group_by("_s", "step", maintain_order=True)
            .agg(pl.concat_str(pl.lit("[\n"), pl.col("devices").str.join(",\n"), pl.lit(f"\n{key}]")).alias("devices"))
        )  # fmt: skip
        steps = steps.join(lists, on=["_s", "step"], how="left", nulls_equal=True, maintain_order="left")
    else:
        steps = steps.with_columns(pl.lit(None, pl.String).alias("devices"))
    row = pl.concat_str(step_text, json_string(pl.col("name")), step_rest, pl.col("devices").fill_null("[]"), pl.lit(f"\n{item}}}"))
    joined = steps.group_by("_s").agg(row.str.join(",\n").cast(pl.Binary).alias("text")).collect(engine="in-memory")
    texts = dict(zip(joined["_s"].to_list(), joined["text"].to_list()))
    return [texts[s] for s in range(len(pieces))]


def _devices_of(steps: pl.DataFrame, summary: Summary) -> pl.DataFrame:
    """The device rows of a summary's steps that fall in `steps` (all of its steps, or a slice of them)."""
    if steps.height == summary.steps.height:
        return summary.step_devices
    return summary.step_devices.join(steps.select("step"), on="step", how="semi", nulls_equal=True)


@lru_cache(maxsize=64)
def _step_texts(indent: int, busy: tuple[str, ...]) -> tuple[pl.Expr, pl.Expr, pl.Expr]:
    """The expressions _steps writes numbers with, for steps whose busy lanes are `busy`: a step's text up to its name, from its name to its `devices` key, a device row's text after its name."""
    item, key, inner, deep = _pads(indent)
    lanes = [part for i, lane in enumerate(busy) for part in (pl.lit(("," if i else "") + f"\n{inner}{_json_text(lane)}: "), _us_or_null(pl.col(f"{lane}_busy")))]
    head = pl.concat_str(pl.lit(f'{item}{{\n{key}"step": '), _number_text(pl.col("step")), pl.lit(f',\n{key}"name": ')).alias("head")
    rest = pl.concat_str(
        pl.lit(f',\n{key}"start_us": '), _us_or_null(pl.col("start")),
        pl.lit(f',\n{key}"dur_us": '), _us_or_null(pl.col("dur")),
        pl.lit(f',\n{key}"host_busy_us": {{'), *lanes, pl.lit(f"\n{key}}}" if busy else "}"),
        pl.lit(f',\n{key}"devices": '),
    ).alias("rest")  # fmt: skip
    device = pl.concat_str(
        pl.lit(f',\n{deep}"events": '), _number_text(pl.col("events")),
        *(part for c in ("busy", "idle", "span") for part in (pl.lit(f',\n{deep}"{c}_us": '), _us_or_null(pl.col(c)))),
        pl.lit(f"\n{inner}}}"),
    ).alias("rest")  # fmt: skip
    return head, rest, device


def _pads(indent: int) -> tuple[str, ...]:
    """The indentation of a step, its keys, a device row and that row's keys, for a `steps` key indented `indent` spaces."""
    return tuple(" " * (indent + n) for n in (2, 4, 6, 8))


def _json_text(value: object) -> str:
    """One value as orjson writes it (a string quoted and escaped exactly as in the rest of the document)."""
    return orjson.dumps(value).decode()


def _number_text(values: pl.Expr) -> pl.Expr:
    """An integer column as JSON numbers, null as null."""
    return values.cast(pl.String).fill_null("null")


def _us_or_null(ns: pl.Expr) -> pl.Expr:
    """Integer ns as the exact µs text exact_us writes, null as null."""
    return us_text_of(ns).fill_null("null")


def summary_dict(summary: Summary, session: Session | None, joined: DeviceJoin | None, steps: orjson.Fragment, ops: pl.DataFrame) -> dict[str, Any]:
    """One trace as a JSON-ready dict (exact µs); every number comes from its summary's frames, its steps' text (steps_texts) and its op table in the view shown (op_tables_of), made for every trace at once."""
    # the small frames are grouped here by walking their rows: a Polars filter per lane or step costs more than the rows on small traces, rendered by the thousand
    categories: dict[str, dict[str, int]] = {}
    for c in summary.categories.iter_rows(named=True):
        categories.setdefault(c["lane"], {})[c["category"]] = c["events"]
    lanes = [
        {"lane": row["lane"], "events": row["events"], "total_us": exact_us(row["total"]), "busy_us": exact_us(row["busy"]), "share": row["share"],
         "categories": categories.get(row["lane"], {})}
        for row in summary.lanes.iter_rows(named=True)
    ]  # fmt: skip
    tracks = list(summary.tracks.iter_rows(named=True))
    outside_events, outside_ns = summary.outside_steps
    return {
        "trace": summary.shown_path,
        "variant": summary.variant,
        "events": summary.events,
        "window_us": exact_us(summary.window_ns),
        "start_us": exact_us(summary.window[0]),
        "backend": summary.device,
        "lanes": lanes,
        "tracks": [
            {"lane": r["lane"], "track": r["track"], "events": r["events"], "total_us": exact_us(r["total"]), "busy_us": exact_us(r["busy"]),
             "idle_us": exact_us(r["idle"]), "span_us": exact_us(r["span"]), "gaps": r["gaps"], "idle_share": r["idle_share"]}
            for r in tracks
        ],
        "hardware_tracks": [
            {"track": r["track"], "busy_us": exact_us(r["busy"]), "idle_us": exact_us(r["idle"]), "span_us": exact_us(r["span"]), "gaps": r["gaps"], "idle_share": r["idle_share"]}
            for r in tracks
            if r["lane"] == "hardware"
        ],
        "gaps": {row["kind"]: _stats(row) for row in summary.gaps.iter_rows(named=True)},
        "steps": steps,
        "outside_steps": {"events": outside_events, "total_us": exact_us(outside_ns)},
        "ops": ops_dicts(ops),
        "op_totals": {"self_cpu_us": exact_us(summary.self_cpu_ns), "device_time_us": exact_us(summary.device_ns)},
        "kernels": [
            {"name": r["name"], "calls": r["calls"], **{f"{k}_us": exact_us(r[k]) for k in ("total", "mean", "min", "max")}, "share": r["share"], "streams": r["streams"]}
            for r in summary.kernels.iter_rows(named=True)
        ],
        "findings": findings_dicts(summary),
        "memory": memory_dict(summary),
        "warnings": list(summary.warnings),
        "artifacts": session_dict(session) if session else None,
        "device_profiles": device_join_dict(joined) if joined is not None else None,
    }  # fmt: skip


def analysis(result: Analysis, view: OpView = OpView()) -> str:
    """The whole analysis as one JSON object (schema `ntrace.analysis/3`)."""
    summaries = result.summaries
    # every trace's steps and op table at once: a few queries, not a few per trace
    steps, ops = on_polars_thread(lambda: (steps_texts(summaries), op_tables_of(summaries, view)))
    doc = {
        "schema": SCHEMA,
        "profiles": each_on_polars_thread(
            lambda entry: summary_dict(*entry[0], result.device_join(*entry[0]), entry[1], entry[2]), zip(result, steps, ops)
        ),
        "artifacts": [{"dir": str(s.dir), **session_dict(s)} for s in result.artifacts],
        "warnings": result.all_warnings,
    }
    return _dumps(doc)


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


def memory_dict(summary: Summary) -> dict[str, Any] | None:
    """The allocator records' figures (bytes; times exact µs), None when the trace holds none: per device and per op (torch's CPU Mem / Self CPU Mem and device Mem, largest self CPU Mem first)."""
    if summary.memory_devices is None or summary.memory_ops is None:
        return None
    ops = summary.memory_ops.sort(["self_cpu_mem", "self_device_mem", "name"], descending=[True, True, False])
    return {
        "devices": [
            {"device": device_label(d["device_type"], d["device_id"]), "device_type": d["device_type"], "device_id": d["device_id"],
             "records": d["records"], "allocs": d["allocs"], "frees": d["frees"], "allocated_bytes": d["allocated_bytes"], "freed_bytes": d["freed_bytes"],
             "peak_allocated_bytes": d["peak_allocated"], "peak_us": exact_us(d["peak_ts"]), "peak_reserved_bytes": d["peak_reserved"]}
            for d in summary.memory_devices.iter_rows(named=True)
        ],
        "ops": [{"name": r["name"], "user_annotation": r["user_annotation"], "calls": r["calls"], **{f"{c}_bytes": r[c] for c in MEMORY_OP_COLUMNS}} for r in ops.iter_rows(named=True)],
    }  # fmt: skip


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
    """The comparison as one JSON object (schema `ntrace.compare/3`): baseline, basis, one object per variant (exact µs), warnings."""
    doc = {
        "schema": COMPARE_SCHEMA,
        "baseline": comparison.baseline,
        "basis": comparison.basis,
        "variants": [
            {
                "name": r["name"],
                "path": r["path"],
                "traces": r["traces"],
                "backend": r["device_name"],
                "device_time_us": exact_us(r["device"]),
                "compute_us": exact_us(r["compute"]),
                "self_cpu_us": exact_us(r["self_cpu"]),
                "device_op_calls": r["device_op_calls"],
                "idle_us": exact_us(r["idle"]),
                "median_step_us": exact_us(r["step"]),
                "speedup": r["speedup"],
                "device_profiles": r["device_profiles"],
                "mfu_pct": r["mfu_pct"],
                "active_pct": {e: r[f"{e}_active_pct"] for e in ENGINES},
                "dma_bytes": r["dma_bytes"],
            }
            for r in comparison.variants.iter_rows(named=True)
        ],
        "warnings": list(comparison.warnings),
    }
    return _dumps(doc)


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
        "device_time_us": _sides(d.base_device, d.test_device),
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
    """The diff as one JSON object (schema `ntrace.diff/3`)."""
    return _dumps(diff_dict(d))


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
        "device_profiles": [str(d) for d in session.device_profiles],
        "framework_mappings": [str(m) for m in session.mappings],
    }


def artifacts(sessions: Sequence[Session]) -> str:
    """Every session as one JSON object (schema `ntrace.artifacts/1`), with its directory, traces and .pb files too."""
    doc = {
        "schema": ARTIFACTS_SCHEMA,
        "sessions": [
            {"dir": str(s.dir), "traces": [str(t) for t in s.traces], **session_dict(s), "pb": s.pbs.to_dicts()} for s in sessions
        ],
    }
    return _dumps(doc)




def device_report_dict(r: DeviceReport) -> dict[str, Any]:
    """One device profile as a JSON-ready dict (exact µs from ns; bytes and FLOPs as integers; `*_pct` 0–100, shares 0–1)."""
    u = r.utilization
    all_dma = r.dma.filter(pl.col("queue_type") == "all")
    return {
        "path": str(r.path),
        "schema_version": r.schema_version,
        "neff": dict(r.neff),
        "metadata": dict(r.metadata),
        "executions": [{"index": e["execution_index"], "start_us": exact_us(e["start"]), "dur_us": exact_us(e["dur"])} for e in r.executions.iter_rows(named=True)],
        "span_us": exact_us(r.span_ns),
        "engines": [
            {"engine": e["engine"], "core": e["core"], "instructions": e["instructions"], "instruction_us": exact_us(e["instruction_ns"]),
             "active_us": exact_us(e["active_ns"]), "active_pct": e["active_pct"]}
            for e in r.engines.iter_rows(named=True)
        ],
        "opcodes": [
            {"engine": o["engine"], "opcode": o["opcode"], "instructions": o["instructions"], "instruction_us": exact_us(o["instruction_ns"]), "active_us": exact_us(o["active_ns"])}
            for o in r.opcodes.iter_rows(named=True)
        ],
        "dma": {
            "packets": int(all_dma["packets"].sum()), "bytes": int(all_dma["bytes"].sum()), "active_us": exact_us(int(all_dma["active_ns"].sum())),
            "bandwidth_bytes_per_s": all_dma["bandwidth"][0] if all_dma.height else None,
            "small_packets": int(all_dma["small_packets"].sum()), "small_share": (all_dma["small_packets"][0] / all_dma["packets"][0]) if all_dma.height and all_dma["packets"][0] else None,
            "by_queue_type": [
                {"queue_type": q["queue_type"], "packets": q["packets"], "bytes": q["bytes"], "active_us": exact_us(q["active_ns"]), "bandwidth_bytes_per_s": q["bandwidth"], "small_packets": q["small_packets"]}
                for q in r.dma.filter(pl.col("queue_type") != "all").iter_rows(named=True)
            ],
        },
        "hbm_bytes": dict(r.hbm),
        "flops": dict(r.flops),
        "mfu_pct": u["mfu_pct"],
        "hfu_pct": u["hfu_pct"],
        "mbu_pct": u["mbu_pct"],
        "arithmetic_intensity": u["arithmetic_intensity"],
        "peak_flops_bandwidth_ratio": u["peak_flops_bandwidth_ratio"],
        "peak_flops": u["peak_flops"],
        "bound": r.bound,
        "collectives": [
            {"operation": c["operation"], "algorithm": c["algorithm"], "count": c["count"], "time_us": exact_us(c["time_ns"]), "active_us": exact_us(c["active_ns"]),
             "median_us": exact_us(c["median_ns"]), "max_us": exact_us(c["max_ns"]), "outliers": c["outliers"], "algorithm_bandwidth_bytes_per_s": c["algorithm_bandwidth"],
             "bus_bandwidth_bytes_per_s": c["bus_bandwidth"], "trigger_delay_us": exact_us(c["trigger_delay_ns"])}
            for c in r.collectives.iter_rows(named=True)
        ],
        "throttle": [
            {"type": t["type"], "events": t["events"], "duration_us": exact_us(t["duration_ns"]), "active_us": exact_us(t["active_ns"]), "active_pct": t["active_pct"], "allowed_share": t["utilization"]}
            for t in r.throttle.iter_rows(named=True)
        ],
        "framework_ops": [
            {"name": f["framework"], "instructions": f["instructions"], "active_us": {e: exact_us(f[f"{e}_ns"]) for e in ENGINES}, "hbm_bytes": f["hbm_bytes"], "hardware_flops": f["hardware_flops"]}
            for f in r.framework.iter_rows(named=True)
        ],
        "recommendations": r.recommendations.to_dicts(),
        "profile_warnings": list(r.profile_warnings),
        "warnings": list(r.warnings),
    }  # fmt: skip


def device_join_dict(joined: DeviceJoin) -> dict[str, Any]:
    """A trace's device section: its session's profiles, the device work per (op, NEFF) and the NEFFs per step."""
    return {
        "profiles": [device_report_dict(r) for r in joined.reports],
        "ops": [
            {"op": o["op"], "neff": o["neff"], "executions": o["executions"], "device_time_us": exact_us(o["device_ns"]), "active_us": {e: exact_us(o[f"{e}_ns"]) for e in ENGINES},
             "hardware_flops": o["hardware_flops"], "model_flops": o["model_flops"], "hbm_bytes": o["hbm_bytes"]}
            for o in joined.ops.iter_rows(named=True)
        ],
        "fragmentation": [
            {"step": f["step"], "neffs": f["neffs"], "executions": f["executions"], "dispatch_per_execution_us": exact_us(f["dispatch_ns"]), "device_per_execution_us": exact_us(f["device_ns"])}
            for f in joined.fragmentation.iter_rows(named=True)
        ],
        "warnings": list(joined.warnings),
    }  # fmt: skip


def device(result: DeviceAnalysis) -> str:
    """Every device profile as one JSON object (schema `ntrace.device/1`)."""
    doc = {"schema": DEVICE_SCHEMA, "profiles": [device_report_dict(r) for r in result.reports], "warnings": result.warnings}
    return _dumps(doc)


def _rank_figure(name: str, value: float | None) -> Any:
    """A cross-rank statistic in JSON: exact µs for a time (whole ns, so exact as a float), else the number."""
    return exact_us(int(value)) if value is not None and "_us" in name else value


def ranks(result: RankAnalysis) -> str:
    """Many ranks as one JSON object (schema `ntrace.ranks/2`): per rank, statistics over ranks, outliers, collectives, stragglers, the rules used."""
    times = set(result.figures) - {"steps", "overlap_pct"}
    rows = []
    for r in result.table.iter_rows(named=True):
        row: dict[str, Any] = {"rank": r["rank"], "trace": r["trace"], "rule": r["rule"], "busy_us": {}}
        for c in result.figures:
            value = exact_us(r[c]) if c in times else r[c]
            if c.startswith("busy_"):
                row["busy_us"][c.removeprefix("busy_")] = value
            else:
                row[rank_figure_name(c)] = value
        rows.append(row)
    doc = {
        "schema": RANKS_SCHEMA,
        "alignment": ALIGNMENT_RULE,
        "matching": result.match_rule,
        "ranks": rows,
        "stats": [
            {"figure": (name := rank_figure_name(s["column"])), **{k: _rank_figure(name, s[k]) for k in ("min", "median", "max")}} for s in result.stats.iter_rows(named=True)
        ],
        "outliers": [
            {"figure": (name := rank_figure_name(o["column"])), "rank": o["rank"], **{k: _rank_figure(name, o[k]) for k in ("value", "median", "mad")}}
            for o in result.outliers.iter_rows(named=True)
        ],
        "collectives": [
            {"name": c["name"], "instances": c["instances"], **{f"{k}_{s}_us": exact_us(c[f"{k}_{s}"]) for k, s in (("skew", "p50"), ("skew", "max"), ("transfer", "p50"))}}
            for c in result.collectives.iter_rows(named=True)
        ],
        "stragglers": [
            {"rank": s["rank"], "times_last": s["times_last"], "last_pct": s["pct_last"], "wait_caused_us": exact_us(s["wait_caused"])} for s in result.stragglers.iter_rows(named=True)
        ],
        "warnings": list(result.warnings),
    }
    return _dumps(doc)
