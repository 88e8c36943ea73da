"""Side-by-side comparison of variants (the source article's summary table), and the checks that say when two sets of traces cannot be compared.

Definitions, per variant (summed over its traces; docs/definitions.md section 7):
- device: all device activity (the op table's device footer); compute: hardware executions only.
- self_cpu: self CPU of the op rows (not user annotations, not ProfilerStep*) that carry self
  device time (124.2 / 47.6 / 98.4 µs on the fixtures, the article's values); device_op_calls:
  their calls.
- idle: total hardware idle between executions on the same device.
- step: the median profiler step duration, nearest rank.
- speedup: the baseline's device time over this variant's; on traces with no device activity at
  all (CPU captures), the baseline's median step over this variant's, and the basis says so.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import polars as pl

from ntrace.analyses.device import ENGINES, DeviceReport
from ntrace.analyses.neffs import variant_device
from ntrace.analyses.ops import GROUP_SCHEMA as OP_GROUP_SCHEMA
from ntrace.analyses.ops import UNLINKED
from ntrace.analyses.stats import nearest_rank_of
from ntrace.analyses.sums import summable_reports, summable_sets
from ntrace.analyses.part import Part
from ntrace.errors import InputError, NtraceError, valid_text
from ntrace.exprs import stacked
from ntrace.io.discover import find_traces
from ntrace.io.manifest import variant_name
from ntrace.neuron.device.layout import find_profiles
from ntrace.summary import Summary
from ntrace.workflows.analyze import Jobs, summarize_all
from ntrace.workflows.device import report

COMPARE_SCHEMA = pl.Schema(
    {
        "name": pl.String(),
        "path": pl.String(),
        "traces": pl.Int64(),
        "device_name": pl.String(),
        "device": pl.Int64(),
        "compute": pl.Int64(),
        "self_cpu": pl.Int64(),
        "device_op_calls": pl.Int64(),
        "idle": pl.Int64(),
        "step": pl.Int64(),
        "device_profiles": pl.Int64(),
        "mfu_pct": pl.Float64(),
        **{f"{engine}_active_pct": pl.Float64() for engine in ENGINES},
        "dma_bytes": pl.Int64(),
        "speedup": pl.Float64(),
    }
)

#: A variant as compare_groups takes it: its name, its path, its traces' summaries and its device profiles.
Group = tuple[str, Path, Sequence[Summary], Sequence[DeviceReport]]

#: Below this share of common op names, two sides run different code and a per-op comparison says little.
MIN_COMMON_OPS = 0.5


@dataclass(frozen=True)
class Comparison:
    """Variants side by side: one row per variant (COMPARE_SCHEMA, ns), the baseline's name, the basis of the speed-up ("device" time or median "step" time) and what could make the comparison wrong."""

    variants: pl.DataFrame
    baseline: str
    basis: str
    warnings: tuple[str, ...]


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


def _variant_figures(sets: Sequence[Sequence[Summary]]) -> list[tuple[int, int, int, int]]:
    """Per set of summaries (a variant's traces): self CPU and calls summed over the op rows that reached the device in each trace, compute (the hardware lane's total) and the median step (nearest rank).

    The op rows are ops (not user annotations, not ProfilerStep*, not the unlinked row) whose
    row of torch's table (per name and user annotation, the default op_table view) has self
    device time.

    One query per figure over the traces of every set, each row keyed by its set: a variant per
    trace (compare of a directory of traces) costs no query of its own.
    """
    every = [s for summaries in sets for s in summaries]
    owner = pl.LazyFrame({"trace": range(len(every)), "set": _owners(sets)}, schema={"trace": pl.Int64, "set": pl.Int64})
    wrapper = pl.col("user_annotation") | pl.col("name").is_in([UNLINKED, "ProfilerStep*"])
    ops = (
        stacked([s.op_groups for s in every], OP_GROUP_SCHEMA)
        .group_by("trace", "name", "user_annotation")
        .agg(pl.col("self_cpu", "calls", "self_device").sum())
        .filter(~wrapper & (pl.col("self_device") > 0))
        .join(owner, on="trace")
        .group_by("set")
        .agg(pl.col("self_cpu").sum(), pl.col("calls").sum())
    )
    lanes = stacked([s.lanes for s in every], pl.Schema({"lane": pl.String(), "total": pl.Int64()}))
    compute = lanes.filter(pl.col("lane") == "hardware").join(owner, on="trace").group_by("set").agg(pl.col("total").sum())
    steps = stacked([s.steps["dur"].to_frame() for s in every], pl.Schema({"dur": pl.Int64()})).join(owner, on="trace").group_by("set").agg(nearest_rank_of(pl.col("dur"), 50))
    ops_of, compute_of, step_of = ({row[0]: row[1:] for row in frame.iter_rows()} for frame in pl.collect_all([ops, compute, steps], engine="in-memory"))
    out = []
    for i in range(len(sets)):
        self_cpu, calls = ops_of.get(i, (0, 0))
        out.append((int(self_cpu), int(calls), int(compute_of.get(i, (0,))[0]), int(step_of.get(i, (0,))[0])))
    return out


def _owners(sets: Sequence[Sequence[Summary]]) -> list[int]:
    """The set of each summary, in the order of all sets' summaries one after another (the `trace` key `stacked` gives them)."""
    return [i for i, summaries in enumerate(sets) for _ in summaries]


def _summable(groups: Sequence[Group]) -> tuple[list[Group], list[str]]:
    """The groups, each less the traces and device profiles that would carry its sums past int64, and a warning for each left out."""
    out: list[Group] = []
    notes: list[str] = []
    for (name, path, _, devices), (kept, left) in zip(groups, summable_sets([(summaries, name) for name, _, summaries, _ in groups])):
        reports, left_reports = summable_reports(devices, name)
        out.append((name, path, kept, reports))
        notes += left + left_reports
    return out, notes


def variant_row(name: str, path: Path, summaries: Sequence[Summary], devices: Sequence[DeviceReport] = ()) -> dict[str, Any]:
    """One variant's numbers (ns) summed over its traces' summaries, and over its processed device profiles (None without any)."""
    return variant_rows([(name, path, summaries, devices)])[0]


def variant_rows(groups: Sequence[Group]) -> list[dict[str, Any]]:
    """variant_row of each group, the figures of all of them from one query each (_variant_figures)."""
    figures = _variant_figures([summaries for _, _, summaries, _ in groups])
    return [
        {
            "name": valid_text(name),
            "path": valid_text(str(path)),
            "traces": len(summaries),
            "device_name": "/".join(sorted({s.device for s in summaries} - {"none"})) or "none",
            "device": sum(s.device_ns for s in summaries),
            "compute": compute,
            "self_cpu": self_cpu,
            "device_op_calls": calls,
            "idle": sum(int(s.idle_gaps.sum()) for s in summaries),
            "step": step,
            **variant_device(devices),
        }
        for (name, path, summaries, devices), (self_cpu, calls, compute, step) in zip(groups, figures)
    ]


def comparability(sides: Sequence[tuple[str, Sequence[Summary]]]) -> list[str]:
    """What makes these sets of traces hard to compare: different device models, different backends, few op names in common with the first (the baseline)."""
    out = []
    models = {name: _models(summaries) for name, summaries in sides}
    if len({frozenset(m) for m in models.values() if m}) > 1:
        out.append("the traces come from different device models: " + "; ".join(f"{n}: {', '.join(sorted(m)) or 'none'}" for n, m in models.items()))
    backends = {name: {_backend(s) for s in summaries} for name, summaries in sides}
    if len({frozenset(b) for b in backends.values()}) > 1:
        out.append("the traces come from different backends: " + "; ".join(f"{n}: {'/'.join(sorted(b))}" for n, b in backends.items()))
    names = list(zip((name for name, _ in sides), _op_names([summaries for _, summaries in sides])))
    for (a, ops_a), (b, ops_b) in ((names[0], other) for other in names[1:]):
        smaller = min(len(ops_a), len(ops_b))
        if smaller and len(ops_a & ops_b) < MIN_COMMON_OPS * smaller:
            out.append(f"{a} and {b} share only {len(ops_a & ops_b)} of {smaller} op names: they run different code, so per-op changes say little")
    return out


def _backend(summary: Summary) -> str:
    """The backend a trace ran on: its device name, with ROCm told from CUDA (torch names both CUDA) by HIP runtime calls."""
    if summary.device == "CUDA" and summary.op_groups["name"].str.starts_with("hip").any():
        return "ROCm"
    return summary.device


def _models(summaries: Sequence[Summary]) -> set[str]:
    """The device model names the traces' deviceProperties list."""
    out = set()
    for s in summaries:
        props = s.meta.get("deviceProperties") if isinstance(s.meta, dict) else None
        for device in props if isinstance(props, list) else []:
            if isinstance(device, dict) and isinstance(device.get("name"), str):
                out.add(device["name"])
    return out


def _op_names(sets: Sequence[Sequence[Summary]]) -> list[set[str]]:
    """Per set of summaries: the names of the ops (not annotations, not the unlinked row) its traces ran, from one query over every set."""
    every = [s for summaries in sets for s in summaries]
    ops = stacked([s.op_groups for s in every], OP_GROUP_SCHEMA).filter(~pl.col("user_annotation") & (pl.col("name") != UNLINKED)).select("trace", "name").collect(engine="in-memory")
    owner = _owners(sets)
    out: list[set[str]] = [set() for _ in sets]
    for trace, name in ops.iter_rows():
        out[owner[trace]].add(name)
    return out


def compare(paths: Sequence[str | Path], baseline: str | None = None, part: Part | None = None, jobs: Jobs = 1) -> Comparison:
    """One row per variant (COMPARE_SCHEMA) with the speed-up over the baseline, the basis it was measured on, and warnings; `part` keeps only that part of every trace.

    Variants keep the order of `paths`; the variants found under one directory go slowest first
    (most device time, or the longest median step), as the article's table does. The baseline is
    the first variant, or the one whose name (or path) is `baseline`. The traces of every variant
    are analyzed together, in `jobs` worker processes (see workers_for); the first that cannot be
    analyzed, in order, is raised.
    """
    variants = find_variants(paths)
    results = iter(summarize_all([t for _, traces in variants for t in traces], jobs=jobs, part=part))
    groups = []
    for path, traces in variants:
        summaries = []
        for _ in traces:
            if isinstance(result := next(results), NtraceError):
                raise result
            summaries.append(result)
        groups.append((variant_name(path), path, summaries, [report(d) for d in find_profiles(path)]))
    return compare_groups(groups, baseline, slowest_first=len(paths) == 1 and len(groups) > 1)


def compare_groups(groups: Sequence[Group], baseline: str | None = None, slowest_first: bool = False) -> Comparison:
    """The comparison of variants given as (name, path, summaries of its traces, its device profiles), in that order or slowest first; the baseline is the first row or the one named `baseline`.

    A variant's traces (or device profiles) whose sums would pass int64 are left out, with a warning (ntrace.analyses.sums).
    """
    groups, left_out = _summable(groups)
    rows = variant_rows(groups)
    basis = "device" if any(r["device"] > 0 for r in rows) else "step"
    if slowest_first:
        rows.sort(key=lambda r: (-r[basis], r["name"]))
    names = [str(r["name"]) for r in rows]
    if len(set(names)) < len(names):  # two variants with one manifest name: tell them apart by path
        for r in rows:
            r["name"] = f"{r['name']} ({r['path']})"
    frame = pl.DataFrame(rows, schema={k: v for k, v in COMPARE_SCHEMA.items() if k != "speedup"})
    pick = frame.filter((pl.col("name") == baseline) | (pl.col("path") == baseline)) if baseline else frame.head(1)
    if pick.is_empty():
        raise InputError(baseline, f"is not one of the variants ({', '.join(frame['name'].to_list())})")
    base = int(pick[basis][0])
    warnings = [w for _, _, summaries, devices in groups for w in (*(x for s in summaries for x in s.warnings), *(x for d in devices for x in d.warnings))]
    warnings += left_out + comparability([(name, summaries) for name, _, summaries, _ in groups])
    if basis == "step":
        warnings.append("no trace holds device activity: the speed-up compares the median profiler step (CPU time), not device time")
    speedup = pl.when((pl.col(basis) > 0) & pl.lit(base > 0)).then(pl.lit(float(base)) / pl.col(basis)).otherwise(None)
    return Comparison(frame.with_columns(speedup=speedup).cast(COMPARE_SCHEMA), str(pick["name"][0]), basis, tuple(warnings))
