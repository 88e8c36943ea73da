"""Device profiles joined to the framework trace: which executions ran each profiled NEFF, what each op's executions did on the engines, and how fragmented eager mode is into NEFFs (docs/definitions.md section 9).

An execution names its NEFF in its `model_name` arg (Neuron's documented field); a profile names
its NEFF by `ExecutionInfo.neff_name`, `NeffHeader.network_name`, its directory, and — through
the session's NEFF files — the NEFF header's hash and uuid. The k-th execution of a NEFF in the
trace (by start) is the profile's k-th execution (by `execution_index`); device and host clocks
differ, so nothing is matched by time.
"""

from __future__ import annotations

from pathlib import Path
from typing import Iterable, Mapping

import polars as pl

from ntrace.analyses.device import ENGINES, DeviceReport

_ENGINE_NS = [f"{e}_ns" for e in ENGINES]
_SUMS = ["executions", "device_ns", *_ENGINE_NS, "hardware_flops", "model_flops", "hbm_bytes"]

OP_SCHEMA = pl.Schema({"op": pl.String(), "neff": pl.String(), **{c: pl.Int64() for c in _SUMS}})
FRAGMENTATION_SCHEMA = pl.Schema(
    {"step": pl.Int64(), "neffs": pl.Int64(), "executions": pl.Int64(), "dispatch_ns": pl.Int64(), "device_ns": pl.Int64()}
)


def neff_key(name: str | None) -> str | None:
    """A NEFF's name as compared: the last path component without `.neff` (model_name may hold a path or a file name)."""
    if name is None:
        return None
    return Path(name).name.removesuffix(".neff") or None


def model_key() -> pl.Expr:
    """neff_key of the `model` column, as an expression."""
    return pl.col("model").str.split("/").list.last().str.strip_suffix(".neff")


def profile_keys(report: DeviceReport, session_neffs: pl.DataFrame | None) -> set[str]:
    """Every name the profile's NEFF may go by: ExecutionInfo.neff_name, NeffHeader.network_name, the profile directory, and the session's NEFF files whose header hash or uuid is the profile's."""
    names = {neff_key(report.neff.get("file")), neff_key(report.neff.get("name")), report.path.name}
    for neff in report.executions["neff_name"].drop_nulls().unique().to_list():
        names.add(neff_key(neff))
    if session_neffs is not None and session_neffs.height:
        digest, uuid = report.neff.get("hash"), (report.neff.get("uuid") or "").replace("-", "").lower()
        same = session_neffs.filter(
            (pl.col("header_hash") == digest).fill_null(False) | (pl.col("uuid").str.replace_all("-", "").str.to_lowercase() == uuid).fill_null(False)
        )
        for r in same.iter_rows(named=True):
            names |= {neff_key(r["path"]), neff_key(r["neff_name"])}
    return {n for n in names if n}


def match_executions(report: DeviceReport, runs: pl.DataFrame, keys: set[str]) -> tuple[pl.DataFrame, list[str]]:
    """The trace executions (neff_executions rows) that ran the profile's NEFF, paired in order with the profile's executions: their rows plus `execution_index`; and a warning when the counts differ."""
    mine = runs.filter(model_key().is_in(list(keys)).fill_null(False)).sort("ts", "idx")
    profiled = report.executions.sort("execution_index")["execution_index"]
    n = min(mine.height, profiled.len())
    warnings = []
    if mine.height != profiled.len():
        warnings.append(
            f"{report.path}: the profile holds {profiled.len()} executions of its NEFF and the trace {mine.height}; the first {n} are paired in order"
        )
    return mine.head(n).with_columns(execution_index=profiled.head(n)), warnings


def op_breakdown(matched: Iterable[tuple[DeviceReport, pl.DataFrame]]) -> pl.DataFrame:
    """Per (launching op, NEFF): executions, device time in the trace, and from each execution's profile: active time per engine, hardware and model FLOPs, HBM bytes."""
    frames = []
    for report, runs in matched:
        if runs.is_empty():
            continue
        neff = neff_key(report.neff.get("file")) or report.path.name
        joined = runs.join(report.per_execution, on="execution_index", how="left")
        frames.append(joined.select(op=pl.col("op").fill_null("[no op]"), neff=pl.lit(neff), device_ns="dur", **{c: pl.col(c) for c in _SUMS[2:]}))
    if not frames:
        return pl.DataFrame(schema=OP_SCHEMA)
    rows = pl.concat(frames).group_by("op", "neff").agg(executions=pl.len().cast(pl.Int64), **{c: pl.col(c).sum() for c in _SUMS[1:]})
    return rows.select(list(OP_SCHEMA)).cast(OP_SCHEMA).sort(["device_ns", "op", "neff"], descending=[True, False, False])


def fragmentation(runs: pl.DataFrame) -> pl.DataFrame:
    """Per step (null: executions launched outside every step): distinct NEFFs, executions, host dispatch per execution (mean runtime-call time) and device time per execution (mean), ns."""
    if runs.is_empty():
        return pl.DataFrame(schema=FRAGMENTATION_SCHEMA)
    return (
        runs.group_by("step")
        .agg(
            neffs=model_key().n_unique().cast(pl.Int64),
            executions=pl.len().cast(pl.Int64),
            dispatch_ns=pl.col("call_dur").sum() // pl.col("call_dur").count(),
            device_ns=pl.col("dur").sum() // pl.len(),
        )
        .cast(FRAGMENTATION_SCHEMA)
        .sort("step", nulls_last=True)
    )


def variant_device(reports: Iterable[DeviceReport]) -> Mapping[str, float | int | None]:
    """One variant's device figures over its profiles: MFU (Σ model FLOPs over Σ peak × cores × span), active % per engine (Σ active over Σ span), DMA bytes; None without profiles."""
    reports = list(reports)
    span = sum(r.span_ns for r in reports)
    out: dict[str, float | int | None] = {"device_profiles": len(reports), "dma_bytes": None, "mfu_pct": None}
    for engine in ENGINES:
        out[f"{engine}_active_pct"] = None
    if not reports or not span:
        return out
    for engine in ENGINES:
        active = sum(int(r.engines.filter((pl.col("engine") == engine) & pl.col("core").is_null())["active_ns"].sum()) for r in reports)
        out[f"{engine}_active_pct"] = 100.0 * active / span
    out["dma_bytes"] = sum(int(r.dma.filter(pl.col("queue_type") == "all")["bytes"].sum()) for r in reports)
    capacity = 0.0
    model = 0
    for r in reports:
        peak, cores = r.utilization.get("peak_flops"), r.metadata.get("num_physical_cores")
        if peak is None or not cores or r.flops["model"] is None:
            return out
        capacity += peak * cores * r.span_ns / 1e9
        model += r.flops["model"]
    out["mfu_pct"] = 100.0 * model / capacity if capacity else None
    return out
