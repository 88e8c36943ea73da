"""An independent checker for processed Neuron device profiles: plain Python over the rows' integers.

Polars is used only to read a Parquet file into Python lists; every figure is then computed here by
sorting, merging and summing integers, so it can be compared with what a profile's own derived tables
(ActiveTime, OpcodeSummary, Summary, ThrottleSummary, …) or a reader such as ntrace says.

Conventions (the same as tests/test_device_fixtures.py and fixtures/device/README.md):

- intervals are [start_ts, end_ts) in int64 ns; a union is computed by sorting and merging, and two
  intervals that overlap or touch (next start <= current end) merge;
- the execution span of a profile is the SUM of its executions' durations (ExecutionInfo
  execution_end_ts - execution_start_ts), not first start to last end: idle between executions is not
  device time. It is the denominator of every percent (Summary.total_time);
- per-engine totals with no pcore in the key are taken over both physical cores: counts and plain sums
  add up, active time is the union of both cores' intervals;
- the median of a group is nearest-rank: sorted v[ceil(N/2) - 1] (the lower middle for even N);
- a collective is an outlier when its duration is more than OUTLIER_FACTOR times its group's median
  (the documents name the recommendation but give no threshold; 2 is this checker's choice).

Every function returns plain dicts (of dicts) of ints, keyed by strings or tuples of strings/ints.
"""

from __future__ import annotations

import re
import struct
from fractions import Fraction
from pathlib import Path

import polars as pl

OUTLIER_FACTOR = 2
SMALL_DMA_BYTES = 4096  # the device timeline warns about DMA payloads under about 4 KiB
SETUP_OPCODES = {"NOP", "SET_ORDERING_MODE", "EVENT_SEMAPHORE", "EVENT_SEMAPHORE_RANGE_CLEAR", "NOTIFY", "COMPARE_BRANCH", "DRAIN", "WRITE", "TENSOR_LOAD", "MODIFY_POOL_CONFIG"}
STATIC_QUEUES = {"instruction", "input", "output", "data"}


class MissingPart(ValueError):
    """A split table whose numbered parts are not 0, 1, …, k without a gap."""


# ---------------------------------------------------------------- reading


def table_files(profile: Path, table: str) -> list[Path]:
    """The files holding `table`: [<table>.parquet], or its parts <table>_0.parquet … in order; [] when absent."""
    single = profile / f"{table}.parquet"
    parts = {}
    for path in profile.glob(f"{table}_*.parquet"):
        m = re.fullmatch(re.escape(table) + r"_(\d+)\.parquet", path.name)
        if m:
            parts[int(m.group(1))] = path
    if single.exists():
        if parts:
            raise MissingPart(f"{table}: both {single.name} and numbered parts")
        return [single]
    if parts and sorted(parts) != list(range(len(parts))):
        raise MissingPart(f"{table}: parts {sorted(parts)} are not 0..{len(parts) - 1}")
    return [parts[n] for n in sorted(parts)]


def rows(profile: Path, table: str) -> list[dict]:
    """Every row of `table` (all parts) as plain dicts; [] when the table was not written."""
    out: list[dict] = []
    for path in table_files(profile, table):
        out.extend(pl.read_parquet(path).to_dicts())
    return out


def tables(profile: Path) -> list[str]:
    """The table names present in a profile directory (a split table counted once)."""
    names = set()
    for path in profile.glob("*.parquet"):
        names.add(re.sub(r"_\d+$", "", path.stem))
    return sorted(names)


# ---------------------------------------------------------------- intervals


def merge(spans) -> list[tuple[int, int]]:
    """Sorted, disjoint union of [start, end) spans (spans that overlap or touch merge)."""
    out: list[list[int]] = []
    for start, end in sorted((int(s), int(e)) for s, e in spans):
        if out and start <= out[-1][1]:
            if end > out[-1][1]:
                out[-1][1] = end
        else:
            out.append([start, end])
    return [(s, e) for s, e in out]


def union_ns(spans) -> int:
    return sum(e - s for s, e in merge(spans))


def f32(x: float) -> float:
    """x rounded to float32, as a `float` field stores it."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def nearest_rank_median(values: list[int]) -> int:
    v = sorted(values)
    return v[(len(v) + 1) // 2 - 1]


# ---------------------------------------------------------------- figures


def execution_span(profile: Path) -> dict:
    """{"executions", "total_ns" (sum of durations: the chosen span), "first_start_ns", "last_end_ns"}."""
    ex = rows(profile, "ExecutionInfo")
    return {
        "executions": len(ex),
        "total_ns": sum(r["execution_end_ts"] - r["execution_start_ts"] for r in ex),
        "first_start_ns": min(r["execution_start_ts"] for r in ex),
        "last_end_ns": max(r["execution_end_ts"] for r in ex),
    }


def active_intervals(profile: Path) -> dict:
    """{(engine, pcore_idx): [(start, end), …]}: the union of the instruction intervals of each engine of each core."""
    spans: dict = {}
    for r in rows(profile, "Instruction"):
        spans.setdefault((r["engine"], r["pcore_idx"]), []).append((r["start_ts"], r["end_ts"]))
    return {k: merge(v) for k, v in sorted(spans.items())}


def instruction_stats(profile: Path) -> dict:
    """{(engine, pcore_idx): {"count", "instruction_ns" (plain sum of duration_ns), "active_ns" (union)}}."""
    out: dict = {}
    spans: dict = {}
    for r in rows(profile, "Instruction"):
        key = (r["engine"], r["pcore_idx"])
        s = out.setdefault(key, {"count": 0, "instruction_ns": 0, "active_ns": 0})
        s["count"] += 1
        s["instruction_ns"] += r["duration_ns"]
        spans.setdefault(key, []).append((r["start_ts"], r["end_ts"]))
    for key, s in out.items():
        s["active_ns"] = union_ns(spans[key])
    return dict(sorted(out.items()))


def engine_stats(profile: Path) -> dict:
    """{engine: {"count", "instruction_ns", "active_ns"}} over both physical cores (active = union of both)."""
    out: dict = {}
    spans: dict = {}
    for r in rows(profile, "Instruction"):
        s = out.setdefault(r["engine"], {"count": 0, "instruction_ns": 0, "active_ns": 0})
        s["count"] += 1
        s["instruction_ns"] += r["duration_ns"]
        spans.setdefault(r["engine"], []).append((r["start_ts"], r["end_ts"]))
    for engine, s in out.items():
        s["active_ns"] = union_ns(spans[engine])
    return dict(sorted(out.items()))


def opcode_stats(profile: Path) -> dict:
    """{(engine, opcode): {"count", "instruction_ns", "active_ns"}} over both physical cores."""
    out: dict = {}
    spans: dict = {}
    for r in rows(profile, "Instruction"):
        key = (r["engine"], r["opcode"])
        s = out.setdefault(key, {"count": 0, "instruction_ns": 0, "active_ns": 0})
        s["count"] += 1
        s["instruction_ns"] += r["duration_ns"]
        spans.setdefault(key, []).append((r["start_ts"], r["end_ts"]))
    for key, s in out.items():
        s["active_ns"] = union_ns(spans[key])
    return dict(sorted(out.items()))


def dma_stats(profile: Path) -> dict:
    """{queue_type: {"packets", "bytes" (transfer_bytes), "active_ns" (union of its packets)}}, plus "all"."""
    out: dict = {}
    spans: dict = {}
    for r in rows(profile, "DmaPacket"):
        for key in (r["queue_type"], "all"):
            s = out.setdefault(key, {"packets": 0, "bytes": 0, "active_ns": 0})
            s["packets"] += 1
            s["bytes"] += r["transfer_bytes"]
            spans.setdefault(key, []).append((r["start_ts"], r["end_ts"]))
    for key, s in out.items():
        s["active_ns"] = union_ns(spans[key])
    return dict(sorted(out.items()))


def dma_totals(profile: Path) -> dict:
    """{"packets", "bytes", "packet_ns" (plain sum), "active_ns", "transfers" (distinct packet_aggregation_id),
    "static_packets", "static_bytes", "static_active_ns", "dynamic_active_ns"}."""
    pk = rows(profile, "DmaPacket")
    static = [r for r in pk if r["queue_type"] in STATIC_QUEUES]
    dynamic = [r for r in pk if r["queue_type"] not in STATIC_QUEUES]
    return {
        "packets": len(pk),
        "bytes": sum(r["transfer_bytes"] for r in pk),
        "packet_ns": sum(r["duration_ns"] for r in pk),
        "active_ns": union_ns((r["start_ts"], r["end_ts"]) for r in pk),
        "transfers": len({r["packet_aggregation_id"] for r in pk}),
        "static_packets": len(static),
        "static_bytes": sum(r["transfer_bytes"] for r in static),
        "static_active_ns": union_ns((r["start_ts"], r["end_ts"]) for r in static),
        "dynamic_active_ns": union_ns((r["start_ts"], r["end_ts"]) for r in dynamic),
    }


def small_transfers(profile: Path, limit: int = SMALL_DMA_BYTES) -> dict:
    """{"packets", "small_packets" (transfer_bytes < limit), "bytes", "small_bytes"}: the small-transfer share as two counts."""
    pk = rows(profile, "DmaPacket")
    small = [r for r in pk if r["transfer_bytes"] < limit]
    return {"packets": len(pk), "small_packets": len(small), "bytes": sum(r["transfer_bytes"] for r in pk), "small_bytes": sum(r["transfer_bytes"] for r in small)}


def hbm_bytes(profile: Path) -> dict:
    """{"read", "write", "spill_save", "spill_reload"}: sums of the Instruction columns."""
    inst = rows(profile, "Instruction")
    return {k: sum(r.get(f"{col}_bytes") or 0 for r in inst) for k, col in
            (("read", "hbm_read"), ("write", "hbm_write"), ("spill_save", "spill_save"), ("spill_reload", "spill_reload"))}


def dma_hbm_bytes(profile: Path) -> dict:
    """{"read", "write"}: bytes of the DMA packets whose transfer (DmaPacketAggregated) reads from or writes to HBM."""
    agg = {r["id"]: r for r in rows(profile, "DmaPacketAggregated")}
    out = {"read": 0, "write": 0}
    for r in rows(profile, "DmaPacket"):
        t = agg[r["packet_aggregation_id"]]
        out["read"] += r["transfer_bytes"] if t["source"] == "HBM" else 0
        out["write"] += r["transfer_bytes"] if t["dest"] == "HBM" else 0
    return out


def hbm_usage_final(profile: Path) -> dict:
    """{pcore_idx: last total_transfer_bytes of HbmUsage}."""
    last: dict = {}
    for r in sorted(rows(profile, "HbmUsage"), key=lambda r: (r["pcore_idx"], r["timestamp"])):
        last[r["pcore_idx"]] = r["total_transfer_bytes"]
    return last


def flops(profile: Path) -> dict:
    """{"hardware", "transpose", "adjusted_hardware", "adjusted_transpose", "model" (= hardware - transpose), "matmul_count"}."""
    t = [r for r in rows(profile, "Instruction") if r["engine"] == "tensor"]
    hw = sum(r.get("raw_flops") or 0 for r in t)
    tr = sum(r.get("flops_transpose") or 0 for r in t)
    return {
        "hardware": hw,
        "transpose": tr,
        "adjusted_hardware": sum(r.get("adjusted_flops") or 0 for r in t),
        "adjusted_transpose": sum(r.get("adjusted_flops_transpose") or 0 for r in t),
        "model": hw - tr,
        "matmul_count": sum(r["opcode"] == "MATMUL" for r in t),
    }


def collective_stats(profile: Path, factor: int = OUTLIER_FACTOR) -> dict:
    """{(operation, algorithm): {"count", "time_ns", "active_ns", "median_ns", "max_ns", "outliers"}}."""
    groups: dict = {}
    for r in rows(profile, "CcOp"):
        groups.setdefault((r["operation"], r["algorithm"]), []).append(r)
    out = {}
    for key, ops in sorted(groups.items()):
        durations = [r["duration_ns"] for r in ops]
        median = nearest_rank_median(durations)
        out[key] = {
            "count": len(ops), "time_ns": sum(durations), "active_ns": union_ns((r["start_ts"], r["end_ts"]) for r in ops),
            "median_ns": median, "max_ns": max(durations), "outliers": sum(d > factor * median for d in durations),
        }
    return out


def collective_totals(profile: Path) -> dict:
    """{"count", "time_ns", "active_ns"} over every CcOp row."""
    ops = rows(profile, "CcOp")
    return {"count": len(ops), "time_ns": sum(r["duration_ns"] for r in ops), "active_ns": union_ns((r["start_ts"], r["end_ts"]) for r in ops)}


def throttle_stats(profile: Path) -> dict:
    """{type or "all": {"events", "duration_ns" (plain sum), "active_ns" (union), "util_ppm"}}.

    util_ppm: the duration-weighted mean of k/n over the throttled periods, in millionths, rounded half to even.
    """
    ev = rows(profile, "Throttle")
    out = {}
    for kind in [*sorted({r["type"] for r in ev}), "all"]:
        mine = [r for r in ev if kind in ("all", r["type"])]
        total = sum(r["duration"] for r in mine)
        util = sum(Fraction(r["duration"] * r["k"], r["n"]) for r in mine) / total
        out[kind] = {"events": len(mine), "duration_ns": total, "active_ns": union_ns((r["timestamp"], r["timestamp"] + r["duration"]) for r in mine),
                     "util_ppm": round(util * 1_000_000)}
    return out


def total_active_ns(profile: Path) -> int:
    """Union of every instruction, DMA packet and collective interval."""
    spans = [(r["start_ts"], r["end_ts"]) for r in rows(profile, "Instruction")]
    spans += [(r["start_ts"], r["end_ts"]) for r in rows(profile, "DmaPacket")]
    spans += [(r["start_ts"], r["end_ts"]) for r in rows(profile, "CcOp")]
    return union_ns(spans)


def work_span_ns(profile: Path) -> int:
    """Earliest start to latest end of the non-setup instructions and the DMA packets (Summary.total_exec_time)."""
    spans = [(r["start_ts"], r["end_ts"]) for r in rows(profile, "Instruction") if r["opcode"] not in SETUP_OPCODES]
    spans += [(r["start_ts"], r["end_ts"]) for r in rows(profile, "DmaPacket")]
    return max(e for _, e in spans) - min(s for s, _ in spans)


def rollup_stats(profile: Path, level: str) -> dict:
    """{framework_name or hlo_name: {"instructions", "hbm_read_bytes", "hbm_write_bytes", "<engine>": count, "intervals": [(s, e)]}}.

    level "framework" joins Instruction.raw_framework_id to FrameworkInstruction; level "hlo" groups Instruction.hlo_name.
    """
    inst = rows(profile, "Instruction")
    if level == "framework":
        names = {r["raw_framework_id"]: r["framework_name"] for r in rows(profile, "FrameworkInstruction")}
        key = lambda r: names.get(r.get("raw_framework_id"))
    else:
        key = lambda r: r.get("hlo_name")
    groups: dict = {}
    for r in inst:
        if key(r) is not None:
            groups.setdefault(key(r), []).append(r)
    out = {}
    for name, mine in sorted(groups.items()):
        s = {"instructions": len(mine), "hbm_read_bytes": sum(r["hbm_read_bytes"] for r in mine), "hbm_write_bytes": sum(r["hbm_write_bytes"] for r in mine)}
        for r in mine:
            s[r["engine"]] = s.get(r["engine"], 0) + 1
        s["intervals"] = merge((r["start_ts"], r["end_ts"]) for r in mine)
        out[name] = s
    return out


def profile_numbers(profile: Path) -> dict:
    """Everything above for one profile, in one dict."""
    out = {
        "span": execution_span(profile),
        "instructions": instruction_stats(profile),
        "engines": engine_stats(profile),
        "opcodes": opcode_stats(profile),
        "dma": dma_stats(profile),
        "dma_totals": dma_totals(profile),
        "small_dma": small_transfers(profile),
        "hbm": hbm_bytes(profile),
        "flops": flops(profile),
        "total_active_ns": total_active_ns(profile),
        "work_span_ns": work_span_ns(profile),
    }
    if table_files(profile, "CcOp"):
        out["collectives"] = collective_stats(profile)
    if table_files(profile, "Throttle"):
        out["throttle"] = throttle_stats(profile)
    return out
