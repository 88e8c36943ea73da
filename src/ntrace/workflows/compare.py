"""Side-by-side comparison of variants (the seed study's summary table): device time, self CPU, device op calls, idle gaps, speed-up.

Definitions, per variant (summed over its traces):
- device: all hardware execution time (every op's self device time plus the unlinked row).
- self_cpu: self CPU of the ops that reached the device, i.e. the sum of the op table rows that
  carry self device time (the seed's ~124.2 / 47.6 / 98.4 µs are exactly those rows).
- device_op_calls: calls of those rows.
- gap: total hardware idle between executions on the same device.
- speedup: the baseline's device time over this variant's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import polars as pl

from ntrace.analyses.ops import UNLINKED, op_table
from ntrace.errors import InputError
from ntrace.io.discover import find_traces
from ntrace.io.manifest import variant_name
from ntrace.summary import Summary
from ntrace.workflows.analyze import summarize

COMPARE_SCHEMA = pl.Schema(
    {
        "name": pl.String(),
        "path": pl.String(),
        "traces": pl.Int64(),
        "device_name": pl.String(),
        "device": pl.Int64(),
        "self_cpu": pl.Int64(),
        "device_op_calls": pl.Int64(),
        "gap": pl.Int64(),
        "speedup": pl.Float64(),
    }
)


def find_variants(paths: Sequence[str | Path]) -> list[tuple[Path, list[Path]]]:
    """(variant path, its traces) for each variant: every path given, in order, or, for one directory, each entry under it
    that holds traces (ordered later by device time, slowest first)."""
    roots = [Path(p) for p in paths]
    if len(roots) == 1 and roots[0].is_dir():
        root = roots[0]
        groups: dict[Path, list[Path]] = {}
        for trace in find_traces(root):
            first = trace.relative_to(root).parts[0]
            groups.setdefault(root / first, []).append(trace)
        if len(groups) > 1:
            return sorted(groups.items())
    found = [(root, find_traces(root)) for root in roots]
    for root, traces in found:
        if not traces:
            raise InputError(root, "holds no framework trace (*.json, *.json.gz with traceEvents)")
    return found


def variant_row(name: str, path: Path, summaries: Sequence[Summary]) -> dict[str, object]:
    """One variant's numbers (ns) summed over its traces' summaries."""
    device = self_cpu = calls = gap = 0
    for summary in summaries:
        table = op_table(summary.op_groups, summary.hardware_ns)
        device += int(table["self_device"].sum())
        reached = table.filter((pl.col("self_device") > 0) & (pl.col("name") != UNLINKED))
        self_cpu += int(reached["self_cpu"].sum())
        calls += int(reached["calls"].sum())
        gap += int(summary.idle_gaps.sum())
    devices = sorted({s.device for s in summaries} - {"none"})
    return {
        "name": name,
        "path": str(path),
        "traces": len(summaries),
        "device_name": "/".join(devices) or "none",
        "device": device,
        "self_cpu": self_cpu,
        "device_op_calls": calls,
        "gap": gap,
    }


def compare(paths: Sequence[str | Path], baseline: str | None = None) -> pl.DataFrame:
    """One row per variant: name, path, traces, device_name, device, self_cpu, device_op_calls, gap (ns) and speedup vs the baseline.

    Variants keep the order of `paths`; the variants found under one directory go slowest first
    (most device time), as the seed's table does. The baseline is the first variant, or the one
    whose name (or path) is `baseline`.
    """
    variants = find_variants(paths)
    rows = [variant_row(variant_name(path), path, [summarize(t) for t in traces]) for path, traces in variants]
    if len(paths) == 1 and len(rows) > 1:
        rows.sort(key=lambda r: (-int(r["device"]), str(r["name"])))  # type: ignore[call-overload]
    names = [str(r["name"]) for r in rows]
    if len(set(names)) < len(names):  # two variants with one manifest name: tell them apart by path
        for r in rows:
            r["name"] = f"{r['name']} ({r['path']})"
    frame = pl.DataFrame(rows, schema={k: v for k, v in COMPARE_SCHEMA.items() if k != "speedup"})
    pick = frame.with_row_index("_i").filter((pl.col("name") == baseline) | (pl.col("path") == baseline)) if baseline else frame.head(1).with_row_index("_i")
    if pick.is_empty():
        raise InputError(baseline, f"is not one of the variants ({', '.join(frame['name'].to_list())})")
    base = pick["device"][0]
    return frame.with_columns(
        speedup=pl.when(pl.col("device") > 0).then(pl.lit(float(base)) / pl.col("device")).otherwise(None)
    ).cast(COMPARE_SCHEMA)
