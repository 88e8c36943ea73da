"""What a processed Neuron device profile says: engine activity, DMA, HBM traffic, FLOPs and utilisation, the compute- or memory-bound verdict, collectives, throttling and the Summary page's recommendations (docs/definitions.md section 8).

Every time is int64 ns from the profile's own rows. Figures are computed from the row tables
(Instruction, DmaPacket, CcOp, Throttle); the profile's derived tables (ActiveTime, OpcodeSummary,
Summary) are only cross-checked, each disagreement becoming a warning. The execution span — the
sum of the executions' lengths in ExecutionInfo — is the 100 % of every `*_pct`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

import polars as pl

from ntrace.analyses.intervals import busy_by
from ntrace.analyses.stats import nearest_rank
from ntrace.neuron.device.tables import DeviceTables

ENGINES = ("tensor", "vector", "scalar", "gpsimd", "sync")
#: DMA packets carrying less than this are small transfers (the device timeline flags payloads under about 4 KiB).
SMALL_DMA_BYTES = 4096
#: A collective slower than this many times its group's median is an outlier (the documents give no number).
OUTLIER_FACTOR = 2
#: How many opcodes per engine the report lists.
TOP_OPCODES = 3
#: Relative difference above which a derived table disagrees with the rows it summarises (float seconds in Summary).
TOLERANCE = 1e-3

ENGINE_SCHEMA = pl.Schema(
    {"engine": pl.String(), "core": pl.Int64(), "instructions": pl.Int64(), "instruction_ns": pl.Int64(), "active_ns": pl.Int64(), "active_pct": pl.Float64()}
)
RECOMMENDATION_SCHEMA = pl.Schema({"rule": pl.String(), "message": pl.String(), "evidence": pl.String(), "threshold": pl.String()})


@dataclass(frozen=True)
class DeviceReport:
    """One device profile's figures (ns, bytes, FLOPs as integers; shares 0–1, `*_pct` 0–100) and what could not be computed or did not agree."""

    path: Path
    schema_version: str | None
    neff: Mapping[str, str | None]  # name (NeffHeader.network_name), hash, uuid, file (ExecutionInfo.neff_name)
    metadata: Mapping[str, Any]  # instance type, versions, cores, clocks, bandwidths
    executions: pl.DataFrame  # execution_index, neff_name, start, end, dur
    span_ns: int
    engines: pl.DataFrame  # ENGINE_SCHEMA: per (engine, core) and per engine over all cores (core null)
    opcodes: pl.DataFrame  # engine, opcode, instructions, instruction_ns, active_ns: the top per engine
    dma: pl.DataFrame  # queue_type ("all" last), packets, bytes, active_ns, bandwidth (bytes/s), small_packets
    hbm: Mapping[str, int | None]  # read, write, spill_save, spill_reload (bytes)
    flops: Mapping[str, int | None]  # model, hardware, transpose
    utilization: Mapping[str, float | None]  # mfu_pct, hfu_pct, mbu_pct, arithmetic_intensity, peak_flops_bandwidth_ratio, peak_flops, hbm_bandwidth
    bound: str | None  # "memory" | "compute" | None (not enough to say)
    collectives: pl.DataFrame  # operation, algorithm, count, time_ns, active_ns, median_ns, max_ns, outliers, algorithm_bandwidth, bus_bandwidth, trigger_delay_ns
    throttle: pl.DataFrame  # type ("all" last), events, duration_ns, active_ns, active_pct, utilization (0–1)
    framework: pl.DataFrame  # framework op, instructions, <engine>_ns (active), hbm_bytes, hardware_flops
    per_execution: pl.DataFrame  # execution_index, <engine>_ns (active), instructions, hardware_flops, model_flops, hbm_bytes
    recommendations: pl.DataFrame  # RECOMMENDATION_SCHEMA
    profile_warnings: tuple[str, ...]  # the profile's own Warning rows, "category: message"
    warnings: tuple[str, ...] = field(default_factory=tuple)  # reading, missing tables, cross-check disagreements


def _int(value: Any) -> int | None:
    """A scalar as int (None stays None)."""
    return None if value is None else int(value)


def _scalar(frame: pl.DataFrame | None, column: str) -> Any:
    """The first row's value of a one-row table's column, or None."""
    if frame is None or frame.is_empty() or column not in frame.columns:
        return None
    return frame[column][0]


def execution_windows(tables: DeviceTables, warnings: list[str]) -> pl.DataFrame:
    """The executions (execution_index, neff_name, start, end, dur) from ExecutionInfo; without usable start/end ts, one window over every instruction, warned."""
    info = tables.get("ExecutionInfo")
    schema = {"execution_index": pl.Int64, "neff_name": pl.String, "start": pl.Int64, "end": pl.Int64}
    if info is not None and info.height and info["execution_start_ts"].null_count() == 0 and info["execution_end_ts"].null_count() == 0:
        windows = info.select("execution_index", "neff_name", start="execution_start_ts", end="execution_end_ts").cast(schema)  # type: ignore[arg-type]
        return windows.sort("start", "execution_index").with_columns(dur=pl.col("end") - pl.col("start"))
    inst = tables.get("Instruction")
    warnings.append(f"{tables.path}: no ExecutionInfo with start and end times; the execution span is taken as first instruction start to last end")
    if inst is None or inst.is_empty():
        return pl.DataFrame(schema=schema).with_columns(dur=pl.lit(0, pl.Int64))
    row = {"execution_index": 0, "neff_name": None, "start": int(inst["start_ts"].min()), "end": int(inst["end_ts"].max())}  # type: ignore[arg-type]
    return pl.DataFrame([row], schema=schema).with_columns(dur=pl.col("end") - pl.col("start"))


def _pct(part: pl.Expr, whole: int) -> pl.Expr:
    """`part` as a percent of `whole` (0 when whole is 0)."""
    return part * 100.0 / whole if whole else pl.lit(0.0)


def engines(inst: pl.DataFrame, span: int) -> pl.DataFrame:
    """Per (engine, physical core) and per engine over all cores (core null): instructions, instruction time (plain sum), active time (union), active % of the span."""
    keyed = inst.select("engine", core="pcore_idx", start_ts="start_ts", end_ts="end_ts")
    per_core = busy_by(keyed, ["engine", "core"])
    per_engine = busy_by(keyed, ["engine"]).with_columns(core=pl.lit(None, pl.Int64))
    rows = pl.concat([per_core, per_engine.select(per_core.columns)])
    return (
        rows.select("engine", "core", instructions="events", instruction_ns="total", active_ns="busy")
        .with_columns(active_pct=_pct(pl.col("active_ns"), span))
        .cast(ENGINE_SCHEMA)
        .sort(_engine_order(), "engine", pl.col("core").is_null(), "core")
    )


def _engine_order() -> pl.Expr:
    """Engines in the documents' order (tensor, vector, scalar, gpsimd, sync), any other after them."""
    return pl.col("engine").replace_strict(list(ENGINES), list(range(len(ENGINES))), default=len(ENGINES), return_dtype=pl.Int64)


def opcodes(inst: pl.DataFrame, top: int | None = TOP_OPCODES) -> pl.DataFrame:
    """Per (engine, opcode) over all cores: instructions, instruction time, active time; the `top` by instruction time per engine (all when None)."""
    rows = busy_by(inst.select("engine", "opcode", "start_ts", "end_ts"), ["engine", "opcode"]).select(
        "engine", "opcode", instructions="events", instruction_ns="total", active_ns="busy"
    )
    ranked = rows.sort([_engine_order(), "engine", "instruction_ns", "opcode"], descending=[False, False, True, False])
    return ranked.filter(pl.int_range(pl.len()).over("engine") < top) if top else ranked


def dma(packets: pl.DataFrame | None) -> pl.DataFrame:
    """Per DMA queue type and over all ("all", last): packets, bytes, active time (union), achieved bandwidth (bytes/s over the active time), small packets (< SMALL_DMA_BYTES)."""
    schema = {"queue_type": pl.String, "packets": pl.Int64, "bytes": pl.Int64, "active_ns": pl.Int64, "bandwidth": pl.Float64, "small_packets": pl.Int64}
    if packets is None or packets.is_empty():
        return pl.DataFrame(schema=schema)
    frame = packets.select("queue_type", "start_ts", "end_ts", "transfer_bytes")
    both = pl.concat([frame, frame.with_columns(queue_type=pl.lit("all"))])
    busy = busy_by(both.select("queue_type", "start_ts", "end_ts"), ["queue_type"])
    sizes = both.group_by("queue_type").agg(bytes=pl.col("transfer_bytes").sum(), small_packets=(pl.col("transfer_bytes") < SMALL_DMA_BYTES).sum().cast(pl.Int64))
    return (
        busy.join(sizes, on="queue_type")
        .select("queue_type", packets="events", bytes="bytes", active_ns="busy", small_packets="small_packets")
        .with_columns(bandwidth=pl.when(pl.col("active_ns") > 0).then(pl.col("bytes") * 1e9 / pl.col("active_ns")))
        .select(list(schema))
        .cast(schema)  # type: ignore[arg-type]
        .sort(pl.col("queue_type") == "all", "queue_type")
    )


def _sum(inst: pl.DataFrame | None, column: str, where: pl.Expr | None = None) -> int | None:
    """Σ of a column of the instructions (those where `where` holds), None when the column is wholly absent."""
    if inst is None or column not in inst.columns or inst[column].null_count() == inst.height:
        return None
    frame = inst.filter(where) if where is not None else inst
    return int(frame[column].sum())


def hbm_bytes(inst: pl.DataFrame | None, summary: pl.DataFrame | None) -> dict[str, int | None]:
    """HBM read, write, spill-save and spill-reload bytes: Σ over the instructions, else the Summary's (Summary has no spill save)."""
    out = {k: _sum(inst, f"{k}_bytes") for k in ("hbm_read", "hbm_write", "spill_save", "spill_reload")}
    for key in ("hbm_read", "hbm_write", "spill_reload"):
        if out[key] is None:
            out[key] = _int(_scalar(summary, f"{key}_bytes"))
    return {"read": out["hbm_read"], "write": out["hbm_write"], "spill_save": out["spill_save"], "spill_reload": out["spill_reload"]}


def flop_counts(inst: pl.DataFrame | None, summary: pl.DataFrame | None) -> dict[str, int | None]:
    """Hardware FLOPs (Σ raw_flops of tensor-engine instructions), transpose FLOPs (Σ flops_transpose), model FLOPs (hardware − transpose); the Summary's when the rows have none."""
    tensor = pl.col("engine") == "tensor"
    hardware, transpose = _sum(inst, "raw_flops", tensor), _sum(inst, "flops_transpose", tensor)
    if hardware is None:
        hardware, transpose = _int(_scalar(summary, "hardware_flops")), _int(_scalar(summary, "transpose_flops"))
        model = _int(_scalar(summary, "model_flops"))
    else:
        model = hardware - (transpose or 0)
    return {"model": model, "hardware": hardware, "transpose": transpose}


def utilization(metadata: pl.DataFrame | None, summary: pl.DataFrame | None, flops: Mapping[str, int | None], hbm: Mapping[str, int | None], span: int, cores: int) -> dict[str, float | None]:
    """MFU, HFU, MBU (percents), arithmetic intensity (model FLOPs per HBM byte), the peak-FLOPs-to-bandwidth ratio, peak FLOPS of one tensor engine and the HBM bandwidth.

    Peak FLOPS of a tensor engine = rows × columns × 2 × its clock; MFU and HFU divide by that peak
    on every physical core over the execution span; MBU divides the HBM bytes moved by the HBM
    bandwidth over the span. The ratio is the Summary's when it gives one, else peak / HBM bandwidth.
    """
    rows, cols, clock = (_scalar(metadata, c) for c in ("tensor_engine_num_rows", "tensor_engine_num_cols", "tensor_engine_clock_freq"))
    peak = float(rows * cols * 2 * clock * 1e9) if None not in (rows, cols, clock) else None
    bandwidth = _scalar(metadata, "hbm_ddr_bandwidth")
    seconds = span / 1e9
    moved = (hbm["read"] or 0) + (hbm["write"] or 0) if hbm["read"] is not None or hbm["write"] is not None else None

    def per_peak(value: int | None) -> float | None:
        return 100.0 * value / (peak * cores * seconds) if value is not None and peak and cores and seconds else None

    ratio = _scalar(summary, "peak_flops_bandwidth_ratio")
    if ratio is None and peak and bandwidth:
        ratio = peak / bandwidth
    return {
        "mfu_pct": per_peak(flops["model"]),
        "hfu_pct": per_peak(flops["hardware"]),
        "mbu_pct": 100.0 * moved / (bandwidth * seconds) if moved is not None and bandwidth and seconds else None,
        "arithmetic_intensity": flops["model"] / moved if flops["model"] is not None and moved else None,
        "peak_flops_bandwidth_ratio": float(ratio) if ratio is not None else None,
        "peak_flops": peak,
        "hbm_bandwidth": float(bandwidth) if bandwidth is not None else None,
    }


def verdict(intensity: float | None, ratio: float | None) -> str | None:
    """The documented rule: memory-bound when the arithmetic intensity is below the peak-FLOPs-to-bandwidth ratio, else compute-bound; None without both."""
    if intensity is None or ratio is None:
        return None
    return "memory" if intensity < ratio else "compute"


def collectives(ccop: pl.DataFrame | None) -> pl.DataFrame:
    """Per (operation, algorithm): count, time (Σ), active (union), nearest-rank median and max duration, outliers (> OUTLIER_FACTOR × median), mean algorithm and bus bandwidth (bytes/s), mean trigger delay."""
    schema = {
        "operation": pl.String, "algorithm": pl.String, "count": pl.Int64, "time_ns": pl.Int64, "active_ns": pl.Int64, "median_ns": pl.Int64,
        "max_ns": pl.Int64, "outliers": pl.Int64, "algorithm_bandwidth": pl.Float64, "bus_bandwidth": pl.Float64, "trigger_delay_ns": pl.Int64,
    }
    if ccop is None or ccop.is_empty():
        return pl.DataFrame(schema=schema)
    busy = busy_by(ccop.select("operation", "algorithm", "start_ts", "end_ts"), ["operation", "algorithm"])
    rows = []
    for (operation, algorithm), ops in ccop.group_by("operation", "algorithm", maintain_order=True):
        median = nearest_rank(ops["duration_ns"], 50)
        delays = ops["cc_trigger_start_delay"].drop_nulls()
        rows.append(
            {
                "operation": operation, "algorithm": algorithm, "count": ops.height, "time_ns": int(ops["duration_ns"].sum()),
                "median_ns": median, "max_ns": int(ops["duration_ns"].max()),  # type: ignore[arg-type]
                "outliers": int((ops["duration_ns"] > OUTLIER_FACTOR * median).sum()),
                "algorithm_bandwidth": ops["algorithm_bandwidth"].mean(), "bus_bandwidth": ops["bus_bandwidth"].mean(),
                "trigger_delay_ns": int(delays.sum()) // delays.len() if delays.len() else None,
            }
        )  # fmt: skip
    frame = pl.DataFrame(rows, schema={k: v for k, v in schema.items() if k != "active_ns"})
    return frame.join(busy.select("operation", "algorithm", active_ns="busy"), on=["operation", "algorithm"]).select(list(schema)).cast(schema).sort("operation", "algorithm")  # type: ignore[arg-type]


def throttling(events: pl.DataFrame | None, span: int) -> pl.DataFrame:
    """Per throttle type and over all ("all", last): events, Σ duration, active time (union), active % of the span, and the utilisation still allowed (duration-weighted mean of k/n, 0–1)."""
    schema = {"type": pl.String, "events": pl.Int64, "duration_ns": pl.Int64, "active_ns": pl.Int64, "active_pct": pl.Float64, "utilization": pl.Float64}
    if events is None or events.is_empty():
        return pl.DataFrame(schema=schema)
    frame = events.select("type", start_ts="timestamp", end_ts=pl.col("timestamp") + pl.col("duration"), duration="duration", k="k", n="n")
    both = pl.concat([frame, frame.with_columns(type=pl.lit("all"))])
    busy = busy_by(both.select("type", "start_ts", "end_ts"), ["type"])
    weighted = both.group_by("type").agg(
        duration_ns=pl.col("duration").sum(), utilization=(pl.col("duration") * pl.col("k") / pl.col("n")).sum() / pl.col("duration").sum()
    )
    return (
        busy.join(weighted, on="type")
        .select("type", events="events", duration_ns="duration_ns", active_ns="busy", utilization="utilization")
        .with_columns(active_pct=_pct(pl.col("active_ns"), span))
        .select(list(schema))
        .cast(schema)  # type: ignore[arg-type]
        .sort(pl.col("type") == "all", "type")
    )


def _engine_columns(frame: pl.DataFrame, keys: list[str]) -> pl.DataFrame:
    """The active time of each engine (union of its instructions, over all cores) per `keys`, one `<engine>_ns` column each."""
    busy = busy_by(frame.select(*keys, "engine", "start_ts", "end_ts"), [*keys, "engine"])
    wide = busy.group_by(keys, maintain_order=True).agg(pl.col("busy").filter(pl.col("engine") == e).sum().alias(f"{e}_ns") for e in ENGINES)
    return wide.with_columns(pl.col(f"{e}_ns").fill_null(0) for e in ENGINES)


def framework_breakdown(inst: pl.DataFrame | None, framework: pl.DataFrame | None) -> pl.DataFrame:
    """Per framework op (FrameworkInstruction.framework_name, joined on raw_framework_id): instructions, active time per engine, HBM bytes, hardware FLOPs; empty without both tables."""
    if inst is None or framework is None or inst.is_empty() or framework.is_empty():
        return pl.DataFrame(schema={"framework": pl.String, "instructions": pl.Int64, **{f"{e}_ns": pl.Int64 for e in ENGINES}, "hbm_bytes": pl.Int64, "hardware_flops": pl.Int64})
    names = framework.group_by("raw_framework_id").agg(framework=pl.col("framework_name").first())
    named = inst.join(names, on="raw_framework_id", how="inner")
    counts = named.group_by("framework").agg(
        instructions=pl.len().cast(pl.Int64), hardware_flops=pl.col("raw_flops").filter(pl.col("engine") == "tensor").sum()
    )
    hbm = framework.group_by(framework="framework_name").agg(hbm_bytes=(pl.col("hbm_read_bytes") + pl.col("hbm_write_bytes")).sum())
    return (
        _engine_columns(named, ["framework"])
        .join(counts, on="framework")
        .join(hbm, on="framework", how="left")
        .select("framework", "instructions", *(f"{e}_ns" for e in ENGINES), "hbm_bytes", "hardware_flops")
        .sort(pl.sum_horizontal(f"{e}_ns" for e in ENGINES), "framework", descending=[True, False])
    )


def execution_breakdown(inst: pl.DataFrame | None, windows: pl.DataFrame) -> pl.DataFrame:
    """Per execution (the window holding each instruction's start): active time per engine, instructions, hardware and model FLOPs, HBM bytes — what one run of the NEFF did."""
    schema = {"execution_index": pl.Int64, **{f"{e}_ns": pl.Int64 for e in ENGINES}, "instructions": pl.Int64, "hardware_flops": pl.Int64, "model_flops": pl.Int64, "hbm_bytes": pl.Int64}
    if inst is None or inst.is_empty() or windows.is_empty():
        return pl.DataFrame(schema=schema)
    placed = (
        inst.sort("start_ts")
        .join_asof(windows.select("execution_index", "start", "end").sort("start"), left_on="start_ts", right_on="start", strategy="backward")
        .filter(pl.col("start_ts") < pl.col("end"))
    )
    tensor = pl.col("engine") == "tensor"
    totals = placed.group_by("execution_index").agg(
        instructions=pl.len().cast(pl.Int64),
        hardware_flops=pl.col("raw_flops").filter(tensor).sum(),
        model_flops=(pl.col("raw_flops").fill_null(0) - pl.col("flops_transpose").fill_null(0)).filter(tensor).sum(),
        hbm_bytes=(pl.col("hbm_read_bytes").fill_null(0) + pl.col("hbm_write_bytes").fill_null(0)).sum(),
    )
    return _engine_columns(placed, ["execution_index"]).join(totals, on="execution_index").select(list(schema)).cast(schema).sort("execution_index")  # type: ignore[arg-type]


def _differs(stated: float | None, computed: float | None, floor: float = 1.0) -> bool:
    """Whether a derived table's value disagrees with the one computed from the rows: by more than TOLERANCE of it and more than `floor` units."""
    if stated is None or computed is None:
        return False
    return abs(stated - computed) > max(floor, TOLERANCE * abs(computed))


def cross_check(tables: DeviceTables, engine_rows: pl.DataFrame, inst: pl.DataFrame, flops: Mapping[str, int | None], hbm: Mapping[str, int | None]) -> list[str]:
    """Where ActiveTime, OpcodeSummary or Summary disagree with the Instruction rows: one warning each, naming the table, field and both values."""
    out: list[str] = []
    path = tables.path
    active = tables.get("ActiveTime")
    if active is not None:
        stated = active.group_by(["engine", "pcore_idx"]).agg(pl.col("duration_ns").sum()).rename({"pcore_idx": "core"})
        mine = engine_rows.filter(pl.col("core").is_not_null()).select("engine", "core", "active_ns")
        for r in stated.join(mine, on=["engine", "core"], how="full", coalesce=True).iter_rows(named=True):
            if (r["duration_ns"] or 0) != (r["active_ns"] or 0):
                out.append(f"{path}: ActiveTime gives {r['engine']} on core {r['core']} {r['duration_ns'] or 0} ns active, its instructions' union is {r['active_ns'] or 0} ns")
    summary = tables.get("OpcodeSummary")
    if summary is not None:
        mine = opcodes(inst, top=None)
        joined = summary.join(mine, on=["engine", "opcode"], how="full", coalesce=True)
        for r in joined.iter_rows(named=True):
            for stated_col, mine_col in (("instruction_count", "instructions"), ("instruction_time_ns", "instruction_ns"), ("active_time_ns", "active_ns")):
                if (r[stated_col] or 0) != (r[mine_col] or 0):
                    out.append(f"{path}: OpcodeSummary gives {r['engine']} {r['opcode']} {stated_col} {r[stated_col] or 0}, the instructions give {r[mine_col] or 0}")
    totals = tables.get("Summary")
    if totals is not None:
        per_engine = {r["engine"]: r for r in engine_rows.filter(pl.col("core").is_null()).iter_rows(named=True)}
        for engine in ENGINES:
            r = per_engine.get(engine, {"instructions": 0, "instruction_ns": 0, "active_ns": 0})
            checks = (("instruction_count", r["instructions"], 1), ("instruction_time", r["instruction_ns"], 1e-9), ("active_time", r["active_ns"], 1e-9))
            for name, value, scale in checks:
                stated = _scalar(totals, f"{engine}_engine_{name}")
                if _differs(stated / scale if stated is not None else None, value):
                    out.append(f"{path}: Summary gives {engine}_engine_{name} {stated}, the instructions give {value * scale:.9g}")
        for name, value in (("model_flops", flops["model"]), ("hardware_flops", flops["hardware"]), ("transpose_flops", flops["transpose"]), ("hbm_read_bytes", hbm["read"]), ("hbm_write_bytes", hbm["write"])):
            stated = _scalar(totals, name)
            if _differs(stated, value):
                out.append(f"{path}: Summary gives {name} {stated}, the instructions give {value}")
    return out


def recommendations(flops: Mapping[str, int | None], hbm: Mapping[str, int | None], dma_rows: pl.DataFrame, ccs: pl.DataFrame, throttle: pl.DataFrame) -> pl.DataFrame:
    """The recommendations of the Summary page whose condition holds, each with its evidence and threshold."""
    rows = []
    hardware, model, transpose = flops["hardware"], flops["model"], flops["transpose"]
    if hardware and model is not None and model < hardware / 2:
        rows.append(("model_flops_low", "the tensor engine is busy with work that is not the model's matrix multiplies",
                     f"model FLOPs {model:,} of {hardware:,} hardware FLOPs ({100 * model / hardware:.1f} %)", "model FLOPs < 50 % of active FLOPs"))
    if hardware and transpose and transpose > hardware / 10:
        rows.append(("transpose_flops_high", "the memory layout makes the tensor engine transpose",
                     f"transpose FLOPs {transpose:,} of {hardware:,} hardware FLOPs ({100 * transpose / hardware:.1f} %)", "transpose FLOPs > 10 % of hardware FLOPs"))
    if hbm["read"] and hbm["spill_reload"] and hbm["spill_reload"] > hbm["read"] / 4:
        rows.append(("spill_reload_high", "spilled tensors are read back from HBM: reduce live tensors or tile differently",
                     f"spill reloads {hbm['spill_reload']:,} B of {hbm['read']:,} B HBM reads ({100 * hbm['spill_reload'] / hbm['read']:.1f} %)", "spill reload bytes > 25 % of HBM reads"))
    every = throttle.filter(pl.col("type") == "all")
    if every.height:
        r = every.row(0, named=True)
        rows.append(("throttled", "the hardware throttled the engines during the profile",
                     f"{r['events']} throttle events, {r['active_ns']:,} ns ({r['active_pct']:.1f} % of the span) at {100 * r['utilization']:.1f} % allowed utilisation", "any throttling"))
    slow = ccs.filter(pl.col("outliers") > 0)
    for r in slow.iter_rows(named=True):
        rows.append(("collective_outliers", f"{r['operation']} ({r['algorithm']}) has operations far slower than the others of its group",
                     f"{r['outliers']} of {r['count']}, the slowest {r['max_ns']:,} ns against a median of {r['median_ns']:,} ns", f"duration > {OUTLIER_FACTOR} × the group's median"))
    every = dma_rows.filter(pl.col("queue_type") == "all")
    if every.height and every["packets"][0] and every["small_packets"][0] * 2 > every["packets"][0]:
        r = every.row(0, named=True)
        rows.append(("small_dma", "most DMA packets are small: each pays a fixed cost, batch or lay out data to move larger blocks",
                     f"{r['small_packets']:,} of {r['packets']:,} packets carry < {SMALL_DMA_BYTES:,} B", f"more than half of the packets < {SMALL_DMA_BYTES:,} B"))
    return pl.DataFrame(rows, schema=RECOMMENDATION_SCHEMA, orient="row")


def device_report(tables: DeviceTables) -> DeviceReport:
    """Every figure of one device profile, from the tables that could be read (the others leave their sections empty, warned)."""
    warnings = list(tables.warnings)
    windows = execution_windows(tables, warnings)
    span = int(windows["dur"].sum()) if windows.height else 0
    inst = tables.get("Instruction")
    metadata, summary = tables.get("Metadata"), tables.get("Summary")
    if inst is None:
        warnings.append(f"{tables.path}: no usable Instruction table: engine, opcode, FLOPs and per-execution figures are left out")
        inst_rows = pl.DataFrame(schema={"engine": pl.String, "pcore_idx": pl.Int64, "opcode": pl.String, "start_ts": pl.Int64, "end_ts": pl.Int64})
    else:
        inst_rows = inst
    active = tables.get("ActiveTime")
    if inst is None and active is not None:  # what ActiveTime still tells: active time per engine and core, counts unknown
        warnings.append(f"{tables.path}: engine active times are taken from ActiveTime; instruction counts and times are unknown")
        engine_rows = engines(active.select("engine", "pcore_idx", "start_ts", "end_ts"), span).with_columns(instructions=None, instruction_ns=None)
    else:
        engine_rows = engines(inst_rows, span)
    hbm = hbm_bytes(inst, summary)
    flops = flop_counts(inst, summary)
    cores = _int(_scalar(metadata, "num_physical_cores")) or (inst_rows["pcore_idx"].n_unique() if inst_rows.height else 0)
    util = utilization(metadata, summary, flops, hbm, span, cores)
    dma_rows = dma(tables.get("DmaPacket"))
    ccs = collectives(tables.get("CcOp"))
    throttle = throttling(tables.get("Throttle"), span)
    if inst is not None:
        warnings += cross_check(tables, engine_rows, inst, flops, hbm)
    stated = _scalar(summary, "mm_arithmetic_intensity")
    if _differs(stated, util["arithmetic_intensity"], floor=0.0):
        warnings.append(f"{tables.path}: Summary gives mm_arithmetic_intensity {stated}, model FLOPs / HBM bytes is {util['arithmetic_intensity']:.6g}")
    header = tables.get("NeffHeader")
    neff = {
        "name": _scalar(header, "network_name"), "hash": _scalar(header, "hash"), "uuid": _scalar(header, "uuid"),
        "file": windows["neff_name"].drop_nulls().first() if windows.height else None,
    }
    meta_keys = ("instance_type", "num_physical_cores", "tensor_engine_clock_freq", "hbm_ddr_bandwidth", "dma_ddr_bandwidth", "runtime_version", "compiler_version", "explorer_version", "is_simulation")
    warning_rows = tables.get("Warning")
    return DeviceReport(
        path=tables.path, schema_version=tables.schema_version, neff=neff, metadata={k: _scalar(metadata, k) for k in meta_keys},
        executions=windows, span_ns=span, engines=engine_rows, opcodes=opcodes(inst_rows), dma=dma_rows, hbm=hbm, flops=flops,
        utilization=util, bound=verdict(util["arithmetic_intensity"], util["peak_flops_bandwidth_ratio"]), collectives=ccs, throttle=throttle,
        framework=framework_breakdown(inst, tables.get("FrameworkInstruction")), per_execution=execution_breakdown(inst, windows),
        recommendations=recommendations(flops, hbm, dma_rows, ccs, throttle),
        profile_warnings=tuple(f"{r['category']}: {r['message']}" for r in warning_rows.iter_rows(named=True)) if warning_rows is not None else (),
        warnings=tuple(warnings),
    )  # fmt: skip
