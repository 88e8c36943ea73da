"""Memory: the allocator records of a trace profiled with profile_memory=True (`[memory]` instants), as allocated bytes over time per device and per-op allocations the way torch's key_averages() counts them.

torch's rule (torch.autograd.profiler._parse_kineto_results, profiler_util.FunctionEvent): an
op's CPU Mem is the sum of `Bytes` of every record of a CPU-side device type (CPU, MKLDNN,
IDEEP) whose time lies in [op start, op end], on any thread; device Mem likewise for CUDA, HIP,
XPU, PrivateUse1. Self Mem is the op's Mem less its children's (after folding, as the op
table's tree). Records in no op's interval form one "[memory]" row, as in torch's table.
"""

from __future__ import annotations

import polars as pl

from ntrace.analyses.ops import folding
from ntrace.exprs import grouped_on, lookup

#: The name of an allocator record (torch.autograd.profiler.MEMORY_EVENT_NAME).
MEMORY_NAME = "[memory]"
#: c10::DeviceType values torch counts as CPU memory, and as device memory.
CPU_TYPES = (0, 2, 5)
DEVICE_TYPES = (1, 6, 12, 20)

#: c10::DeviceType values → the names torch gives them (others are shown by number).
DEVICE_NAMES = {0: "CPU", 1: "CUDA", 2: "MKLDNN", 5: "IDEEP", 6: "HIP", 12: "XPU", 13: "MPS", 19: "MTIA", 20: "PrivateUse1"}

#: An allocator record: a `[memory]` instant with a start and a size.
RECORD = (pl.col("name") == MEMORY_NAME) & pl.col("ph").is_in(["i", "I"]) & pl.col("ts").is_not_null() & pl.col("mem_bytes").is_not_null()

SERIES_SCHEMA = pl.Schema({"device_type": pl.Int64(), "device_id": pl.Int64(), "ts": pl.Int64(), "bytes": pl.Int64(), "allocated": pl.Int64(), "reserved": pl.Int64()})
DEVICE_SCHEMA = pl.Schema(
    {
        "device_type": pl.Int64(), "device_id": pl.Int64(), "records": pl.Int64(), "allocs": pl.Int64(), "frees": pl.Int64(),
        "allocated_bytes": pl.Int64(), "freed_bytes": pl.Int64(), "peak_allocated": pl.Int64(), "peak_ts": pl.Int64(), "peak_reserved": pl.Int64(),
    }
)  # fmt: skip
#: The per-op memory columns (bytes), as torch names them: CPU Mem, Self CPU Mem, device Mem, Self device Mem.
OP_COLUMNS = ("cpu_mem", "self_cpu_mem", "device_mem", "self_device_mem")
OPS_SCHEMA = pl.Schema({"name": pl.String(), "user_annotation": pl.Boolean(), "calls": pl.Int64(), **{c: pl.Int64() for c in OP_COLUMNS}})


def device_label(device_type: int, device_id: int) -> str:
    """A device as people name it: `CPU`, `CUDA:0`, `PrivateUse1:1` (a negative id, as the CPU's -1, is left out)."""
    name = DEVICE_NAMES.get(device_type, f"device type {device_type}")
    return name if device_id < 0 else f"{name}:{device_id}"


def records(events: pl.DataFrame) -> pl.DataFrame:
    """The allocator records of an events frame, in time order (file order among equal times): SERIES_SCHEMA's columns."""
    if events["mem_bytes"].null_count() == events.height:  # no record holds bytes (profile_memory was off): known without a query
        return pl.DataFrame(schema=SERIES_SCHEMA)
    return (
        events.filter(RECORD)
        .sort("ts", "idx")
        .select(
            device_type=pl.col("mem_device_type").fill_null(-1), device_id=pl.col("mem_device_id").fill_null(-1),
            ts="ts", bytes="mem_bytes", allocated="mem_allocated", reserved="mem_reserved",
        )  # fmt: skip
        .cast(SERIES_SCHEMA)
    )


def devices(series: pl.DataFrame) -> pl.DataFrame:
    """Per (device type, device id): records, allocations and frees (count and bytes), the peak of Total Allocated and when it was first reached, the peak of Total Reserved."""
    return (
        series.group_by("device_type", "device_id")
        .agg(
            records=pl.len(),
            allocs=(pl.col("bytes") > 0).sum(),
            frees=(pl.col("bytes") < 0).sum(),
            allocated_bytes=pl.col("bytes").clip(lower_bound=0).sum(),
            freed_bytes=-pl.col("bytes").clip(upper_bound=0).sum(),
            peak_allocated=pl.col("allocated").max(),
            peak_ts=pl.col("ts").filter(pl.col("allocated") == pl.col("allocated").max()).first(),
            peak_reserved=pl.col("reserved").max(),
        )
        .cast(DEVICE_SCHEMA)
        .sort("device_type", "device_id")
    )


def op_memory(nest: pl.DataFrame, series: pl.DataFrame) -> pl.DataFrame:
    """torch's CPU Mem, Self CPU Mem, device Mem and Self device Mem per (name, user annotation) of the op tree `nest` (ns times, bytes), calls counted after folding, plus the "[memory]" row of records in no op."""
    ts = series["ts"]
    cpu = series["bytes"].zip_with(series["device_type"].is_in(CPU_TYPES), pl.zeros(series.height, pl.Int64, eager=True))
    dev = series["bytes"].zip_with(series["device_type"].is_in(DEVICE_TYPES), pl.zeros(series.height, pl.Int64, eager=True))
    lo = ts.search_sorted(nest["ts"], side="left")
    hi = ts.search_sorted(nest["end"], side="right")
    folded, keeper = folding(nest)
    rows = nest.select("key", "user_annotation").with_columns(cpu_mem=_in_window(cpu, lo, hi), device_mem=_in_window(dev, lo, hi))
    for total in ("cpu_mem", "device_mem"):
        children = pl.DataFrame({"keeper": keeper, "v": rows[total]}).filter(~folded).drop_nulls("keeper").group_by("keeper").agg(pl.col("v").sum())
        rows = rows.with_columns((rows[total] - pl.zeros(nest.height, pl.Int64, eager=True).scatter(children["keeper"], children["v"])).alias(f"self_{total}"))
    grouped = (
        rows.lazy()
        .filter(~folded)
        .group_by(name="key", user_annotation="user_annotation")
        .agg(calls=pl.len(), **{c: pl.col(c).sum() for c in OP_COLUMNS})
        .cast(OPS_SCHEMA)
        .collect(engine=grouped_on(rows.height))
    )
    outside = _outside(series.height, lo, hi)
    if outside.any():
        n, c, d = int(outside.sum()), int(cpu.filter(outside).sum()), int(dev.filter(outside).sum())
        extra = {"name": [MEMORY_NAME], "user_annotation": [False], "calls": [n], "cpu_mem": [c], "self_cpu_mem": [c], "device_mem": [d], "self_device_mem": [d]}
        grouped = pl.concat([grouped, pl.DataFrame(extra, schema=OPS_SCHEMA)])
    return grouped.sort("name", "user_annotation")


def _in_window(values: pl.Series, lo: pl.Series, hi: pl.Series) -> pl.Series:
    """Per window [lo, hi) of positions: the sum of `values` there."""
    running = pl.concat([pl.Series([0], dtype=pl.Int64), values.cum_sum()])
    return lookup(running, hi) - lookup(running, lo)


def _outside(n: int, lo: pl.Series, hi: pl.Series) -> pl.Series:
    """Which of n positions lie in no window [lo, hi)."""
    marks = pl.DataFrame({"at": pl.concat([lo, hi]).cast(pl.Int64), "step": pl.concat([pl.ones(lo.len(), pl.Int64, eager=True), -pl.ones(hi.len(), pl.Int64, eager=True)])})
    steps = marks.group_by("at").agg(pl.col("step").sum())
    cover = pl.zeros(n + 1, pl.Int64, eager=True).scatter(steps["at"], steps["step"]).cum_sum().head(n)
    return cover == 0
