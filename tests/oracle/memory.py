"""Reference for the memory figures (ntrace.analyses.memory), plain Python over the raw JSON, written from torch's profiler source (profiler._parse_kineto_results, profiler_util.FunctionEvent.self_cpu_memory_usage) and docs/definitions.md.

An op's Mem: the Bytes of every `[memory]` record of its kind (CPU: device types 0, 2, 5;
device: 1, 6, 12, 20) with op.ts <= record ts <= op.end, any thread. Self Mem: Mem less the
Mem of its children after folding. Records in no op make one "[memory]" row.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from .reference import fold, is_tree_event, load_trace_events, nest, parse_ns, read_events, row_name

CPU_TYPES = {0, 2, 5}
DEVICE_TYPES = {1, 6, 12, 20}


def _int(value: Any) -> int | None:
    """An arg as an int (JSON integers, or text holding one), else None."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str) and value.strip().lstrip("-").isdigit():
        return int(value.strip())
    return None


def records(raw: list[Any]) -> list[dict[str, int]]:
    """The `[memory]` instants with a time and Bytes, in (ts, file position) order."""
    out = []
    for i, ev in enumerate(raw):
        if not isinstance(ev, dict) or ev.get("name") != "[memory]" or ev.get("ph") not in ("i", "I"):
            continue
        args = ev.get("args") if isinstance(ev.get("args"), dict) else {}
        ts, size = parse_ns(ev.get("ts")), _int(args.get("Bytes"))
        if ts is None or size is None:
            continue
        kind = _int(args.get("Device Type"))
        dev = _int(args.get("Device Id"))
        out.append({"i": i, "ts": ts, "bytes": size, "allocated": _int(args.get("Total Allocated")), "reserved": _int(args.get("Total Reserved")),
                    "device_type": -1 if kind is None else kind, "device_id": -1 if dev is None else dev})  # fmt: skip
    return sorted(out, key=lambda r: (r["ts"], r["i"]))


def devices(recs: list[dict[str, int]]) -> dict[tuple[int, int], dict[str, Any]]:
    """Per (device type, device id): counts, bytes allocated and freed, peak Total Allocated (and its first time), peak Total Reserved."""
    out: dict[tuple[int, int], dict[str, Any]] = {}
    for r in recs:
        d = out.setdefault((r["device_type"], r["device_id"]), {"records": 0, "allocs": 0, "frees": 0, "allocated_bytes": 0, "freed_bytes": 0, "peak_allocated": None, "peak_ts": None, "peak_reserved": None})
        d["records"] += 1
        d["allocs"] += r["bytes"] > 0
        d["frees"] += r["bytes"] < 0
        d["allocated_bytes"] += max(r["bytes"], 0)
        d["freed_bytes"] += max(-r["bytes"], 0)
        if r["allocated"] is not None and (d["peak_allocated"] is None or r["allocated"] > d["peak_allocated"]):
            d["peak_allocated"], d["peak_ts"] = r["allocated"], r["ts"]
        if r["reserved"] is not None and (d["peak_reserved"] is None or r["reserved"] > d["peak_reserved"]):
            d["peak_reserved"] = r["reserved"]
    return out


def op_memory(path: str | Path) -> dict[tuple[str, bool], dict[str, int]]:
    """(row name, user annotation) → calls, cpu_mem, self_cpu_mem, device_mem, self_device_mem, by walking every op over every record."""
    raw = load_trace_events(path)
    events, _ = read_events(raw)
    tree = [e for e in events if is_tree_event(e)]
    removed, _, children, _, _ = fold(tree, nest(tree), {})
    recs = records(raw)
    mem = {}
    for e in tree:
        inside = [r for r in recs if e.ts <= r["ts"] <= e.end]
        mem[e.idx] = (sum(r["bytes"] for r in inside if r["device_type"] in CPU_TYPES), sum(r["bytes"] for r in inside if r["device_type"] in DEVICE_TYPES))
    table: dict[tuple[str, bool], dict[str, int]] = {}
    for e in tree:
        if e.idx in removed:
            continue
        row = table.setdefault((row_name(e.name), e.catl == "user_annotation"), dict.fromkeys(["calls", "cpu_mem", "self_cpu_mem", "device_mem", "self_device_mem"], 0))
        cpu, dev = mem[e.idx]
        row["calls"] += 1
        row["cpu_mem"] += cpu
        row["device_mem"] += dev
        row["self_cpu_mem"] += cpu - sum(mem[c][0] for c in children[e.idx])
        row["self_device_mem"] += dev - sum(mem[c][1] for c in children[e.idx])
    outside = [r for r in recs if not any(e.ts <= r["ts"] <= e.end for e in tree)]
    if outside:
        cpu = sum(r["bytes"] for r in outside if r["device_type"] in CPU_TYPES)
        dev = sum(r["bytes"] for r in outside if r["device_type"] in DEVICE_TYPES)
        table[("[memory]", False)] = {"calls": len(outside), "cpu_mem": cpu, "self_cpu_mem": cpu, "device_mem": dev, "self_device_mem": dev}
    return table
