"""Analysis results as flat display frames named in the one vocabulary (ntrace.render.columns: µs floats in `*_us` columns, shares 0–1, `*_pct` percents 0–100), shared by the CSV, Markdown and HTML renderers."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Iterable, Sequence

import polars as pl

from ntrace.analyses.device import ENGINES
from ntrace.analyses.memory import OP_COLUMNS as MEMORY_OP_COLUMNS
from ntrace.analyses.memory import device_label
from ntrace.analyses.ops import GROUP_SCHEMA, op_table, op_tables
from ntrace.analyses.opview import OpView
from ntrace.exprs import fmt, stacked
from ntrace.lanes import LANES
from ntrace.neuron.artifacts import Session
from ntrace.render.columns import base_name, header
from ntrace.summary import Summary
from ntrace.units import fmt_pct, fmt_time, rate, size
from ntrace.workflows.analyze import Analysis
from ntrace.workflows.compare import Comparison
from ntrace.workflows.device import DeviceAnalysis, DeviceJoin
from ntrace.workflows.diff import Diff
from ntrace.workflows.ranks import RankAnalysis

_NS_TO_US = 1000.0


def to_us(*columns: str) -> list[pl.Expr]:
    """ns Int64 columns as `<name>_us` µs floats (rounded to the ns, as the JSON renderer does)."""
    return [(pl.col(c) / _NS_TO_US).round(3).alias(f"{c}_us") for c in columns]


def variant_names(profiles: Sequence[Summary], root: Path) -> list[str]:
    """Short names for profiles found under `root`: their capture manifests' variants when those are unique, else the
    first directory under root when those are (fixtures/rmsnorm/naive/…/trace.json → "naive"), else the path relative to root."""
    named = [p.variant for p in profiles]
    if None not in named and len(set(named)) == len(named):
        return [str(n) for n in named]
    rel = []
    for p in profiles:
        try:
            rel.append(p.path.relative_to(root) if root.is_dir() else Path(p.path.name))
        except ValueError:
            rel.append(Path(p.path.name))
    first = [r.parts[0] if len(r.parts) > 1 else r.name for r in rel]
    return first if len(set(first)) == len(first) else [str(r) for r in rel]


#: Re-exported for the renderers that name columns through this module.
__all__ = ["header"]


def cells(column: str, values: Iterable[object]) -> list[str]:
    """The values of one column for people, by its unit (ntrace.render.columns): `*_us` as torch-style times, shares and `*_pct` as percentages, integers with separators, nulls as "-".

    Each type's formatter is picked once per column, not per value: long captures hold steps by the ten thousand.
    """
    values = list(values)
    picked = {kind: _formatter(column, kind) for kind in set(map(type, values))}
    return ["-" if v is None else picked[type(v)](v) for v in values]


def frame_cells(frame: pl.DataFrame) -> list[list[str]]:
    """Every value of a display frame as `cells` writes it: one list of texts per column."""
    return [cells(c, frame.get_column(c).to_list()) for c in frame.columns]


def _formatter(column: str, kind: type) -> Callable[[Any], str]:
    """How `cells` writes a value of Python type `kind` (never None) in `column`."""
    column = base_name(column)
    number, real = issubclass(kind, (int, float)), issubclass(kind, float)
    if column.endswith("_us") and number:
        return lambda v: fmt_time(v * 1000)
    if column.endswith("_change_pct") and real:
        return "{:+.1f}%".format
    if column.endswith("_pct") and real:
        return "{:.2f}%".format
    if (column == "share" or column.endswith("_share")) and real:
        return fmt_pct
    if column.endswith("_mem") and issubclass(kind, int):
        return size
    if column.endswith("_bytes_per_s") and real:
        return rate
    if column == "speedup" and real:
        return "{:.2f}x".format
    if issubclass(kind, bool):
        return (lambda v: "yes" if v else "NO") if column == "valid" else (lambda v: "yes" if v else "no")
    if issubclass(kind, int):
        return "{:,}".format
    if real:
        return "{:,.3f}".format
    return str


def op_tables_of(summaries: Sequence[Summary], view: OpView = OpView()) -> list[pl.DataFrame]:
    """Each summary's op table in `view` (what op_table gives), all made by one query (ntrace.analyses.ops.op_tables)."""
    footers = {c: pl.Series([getattr(s, c) for s in summaries], dtype=pl.Int64) for c in ("self_cpu_ns", "device_ns")}
    groups = stacked([s.op_groups for s in summaries], GROUP_SCHEMA, "trace").with_columns(pl.lit(v).gather(pl.col("trace")).alias(c) for c, v in footers.items())
    table = op_tables(groups, view, by=("trace",)).collect(engine="in-memory")
    parts = table.partition_by("trace", as_dict=True, include_key=False, maintain_order=True)
    empty = table.clear().drop("trace")
    return [parts.get((i,), empty) for i in range(len(summaries))]


def ops_frame(summary: Summary, view: OpView = OpView(), ops: pl.DataFrame | None = None) -> pl.DataFrame:
    """The per-op table (torch key_averages() columns) in a view, with times as `*_us`; `ops` is the table in that view when already made (op_tables_of)."""
    if ops is None:
        ops = op_table(summary.op_groups, summary.self_cpu_ns, summary.device_ns, view)
    times = [c for c, t in ops.schema.items() if t.is_integer() and c not in ("calls", "events") and not c.endswith("_pct")]
    return ops.select(to_us(c)[0] if c in times else pl.col(c) for c in ops.columns)


def memory_devices_frame(profile: Summary) -> pl.DataFrame:
    """Per device with allocator records: records, allocations, frees, bytes allocated and freed (`*_mem`), peak allocated and when (µs into the window), peak reserved."""
    if profile.memory_devices is None:
        return pl.DataFrame()
    return profile.memory_devices.select(
        device=pl.struct("device_type", "device_id").map_elements(lambda d: device_label(d["device_type"], d["device_id"]), return_dtype=pl.String),
        records="records", allocs="allocs", frees="frees", allocated_mem="allocated_bytes", freed_mem="freed_bytes",
        peak_allocated_mem="peak_allocated", peak_at_us=(pl.col("peak_ts") - profile.window[0]) / _NS_TO_US, peak_reserved_mem="peak_reserved",
    )  # fmt: skip


def memory_ops_frame(profile: Summary) -> pl.DataFrame:
    """torch's memory columns per op (CPU Mem, Self CPU Mem, device Mem, Self device Mem as `*_mem` bytes), largest self CPU Mem first."""
    if profile.memory_ops is None:
        return pl.DataFrame()
    ops = profile.memory_ops.sort(["self_cpu_mem", "self_device_mem", "name"], descending=[True, True, False])
    return ops.select("name", "user_annotation", "calls", *MEMORY_OP_COLUMNS)


def lanes_frame(profile: Summary) -> pl.DataFrame:
    """Per lane: events, total_us, busy_us, share of the window."""
    return profile.lanes.select("lane", "events", *to_us("total", "busy"), "share")


def tracks_frame(profile: Summary) -> pl.DataFrame:
    """Per (lane, track): events, total_us, busy_us, idle_us, span_us, gaps and the idle share of the track's span."""
    return profile.tracks.select("lane", "track", "events", *to_us("total", "busy", "idle", "span"), "gaps", "idle_share")


def hardware_tracks_frame(profile: Summary) -> pl.DataFrame:
    """The hardware lane's rows of tracks_frame, without the lane column."""
    return tracks_frame(profile).filter(pl.col("lane") == "hardware").drop("lane")


def gaps_frame(profile: Summary) -> pl.DataFrame:
    """Per kind (hardware idle, launch latency, queue delay): count, total, p50, p90, max (µs); hardware idle also its share of the hardware tracks' spans."""
    return profile.gaps.select("kind", "count", *to_us("total", "p50", "p90", "max"), "share")


def steps_frame(profile: Summary) -> pl.DataFrame:
    """Per profiler step (its CPU window): number, name, start, duration and the busy time of each lane's host events inside it (µs, `host_busy_us.<lane>`)."""
    lanes = [lane for lane in LANES if f"{lane}_busy" in profile.steps.columns]
    return profile.steps.select(
        "step", "name", *to_us("start", "dur"), *((pl.col(f"{lane}_busy") / _NS_TO_US).round(3).alias(f"host_busy_us.{lane}") for lane in lanes)
    )


def step_devices_frame(profile: Summary) -> pl.DataFrame:
    """Per (step, device): the device work the step launched, its events, busy, idle and span (µs; busy + idle = span)."""
    names = profile.steps.select("step", "name")
    return profile.step_devices.join(names, on="step", how="left", maintain_order="left").select("step", "name", "device", "events", *to_us("busy", "idle", "span"))


def findings_frame(profile: Summary) -> pl.DataFrame:
    """Per finding: kind, subject, summary, the time it costs (µs) and how many events it rests on."""
    return profile.findings.select("kind", "subject", "summary", *to_us("time"), events=pl.col("events").list.len().cast(pl.Int64))


def kernels_frame(profile: Summary) -> pl.DataFrame:
    """Per device activity name: calls, total, mean, min, max (µs), share of all device time and the streams it ran on."""
    return profile.kernels.select("name", "calls", *to_us("total", "mean", "min", "max"), "share", streams=pl.col("streams").list.join(", "))


def summary_row(profile: Summary, name: str) -> dict[str, object]:
    """One trace as one flat row: window, events and busy per lane (`events.<lane>`, `busy_us.<lane>`), each gap kind's statistics (`count.<kind>`, `p50_us.<kind>`, …), the op table's footers."""
    row: dict[str, object] = {"trace": name, "events": profile.events, "window_us": round(profile.window_ns / _NS_TO_US, 3)}
    for r in profile.lanes.iter_rows(named=True):
        row[f"events.{r['lane']}"] = r["events"]
        row[f"busy_us.{r['lane']}"] = round(r["busy"] / _NS_TO_US, 3)
    for g in profile.gaps.iter_rows(named=True):
        row[f"count.{g['kind']}"] = g["count"]
        for stat in ("total", "p50", "max"):
            row[f"{stat}_us.{g['kind']}"] = round(g[stat] / _NS_TO_US, 3)
        if g["share"] is not None:
            row[f"share.{g['kind']}"] = g["share"]
    row["steps"] = profile.steps.height
    row["self_cpu_us"] = round(profile.self_cpu_ns / _NS_TO_US, 3)
    row["device_time_us"] = round(profile.device_ns / _NS_TO_US, 3)
    return row


def summary_frame(analysis: Analysis) -> pl.DataFrame:
    """One row per trace (see summary_row), named relative to the analyzed path."""
    names = variant_names(analysis.summaries, analysis.root)
    return pl.DataFrame([summary_row(p, name) for p, name in zip(analysis.summaries, names)])


def compare_frame(comparison: Comparison) -> pl.DataFrame:
    """A variant comparison (ntrace.compare) for display: device time, compute, self CPU and calls of the ops that reached the device, hardware idle, median step, speed-up."""
    device, compute, self_cpu, idle, step = to_us("device", "compute", "self_cpu", "idle", "step")
    frame = comparison.variants.select(
        "name", device_time_us=device, compute_us=compute, self_cpu_us=self_cpu, device_op_calls="device_op_calls", idle_us=idle, median_step_us=step,
        speedup="speedup", backend="device_name", traces="traces", path="path",
    )
    if comparison.variants["device_profiles"].sum():  # the device columns, when any variant has processed device profiles
        engines = (pl.col(f"{e}_active_pct").alias(f"active_pct.{e}") for e in ENGINES)
        frame = frame.with_columns(comparison.variants.select("device_profiles", "mfu_pct", *engines, "dma_bytes"))
    return frame


def compare_notes(comparison: Comparison) -> list[str]:
    """What the comparison's columns mean, the speed-up's basis first."""
    basis = "device time" if comparison.basis == "device" else "median profiler step (no trace holds device activity)"
    return [
        f"speedup: the {basis} of {comparison.baseline} over each variant's",
        "device time: all device activity (kernels, copies, memsets); compute: hardware executions only; idle: hardware idle between executions",
        "self cpu and device op calls: the ops (not annotations or ProfilerStep*) that carry self device time",
    ]


def _sides(figure: str, name: str, ns: bool) -> list[pl.Expr]:
    """The base and test columns of one diff figure as `name.base`, `name.test` (µs when `ns`)."""
    return [((pl.col(f"{side}_{figure}") / _NS_TO_US).round(3) if ns else pl.col(f"{side}_{figure}")).alias(f"{name}.{side}") for side in ("base", "test")]


def diff_ops_frame(d: Diff) -> pl.DataFrame:
    """A diff's per-op rows for display: statuses, calls, self device and self CPU before/after (µs, `self_device_us.base` …) and their change (%)."""
    return d.ops.select(
        "name", "user_annotation", "status_device", "status_cpu", *_sides("calls", "calls", False),
        *_sides("self_device", "self_device_us", True), "self_device_change_pct", *_sides("self_cpu", "self_cpu_us", True), "self_cpu_change_pct",
    )  # fmt: skip


def diff_lanes_frame(d: Diff) -> pl.DataFrame:
    """A diff's lane totals, base and test side by side (µs)."""
    return d.lanes.select("lane", *_sides("total", "total_us", True), *_sides("busy", "busy_us", True))


def diff_gaps_frame(d: Diff) -> pl.DataFrame:
    """A diff's gap statistics as one row per gap kind: count, total, p50, p90, max, base and test side by side."""
    wide = d.gaps.pivot(on="stat", index="kind", values=["base", "test"])
    cols = [pl.col(f"{side}_count").alias(f"count.{side}") for side in ("base", "test")]
    cols += [(pl.col(f"{side}_{stat}") / _NS_TO_US).alias(f"{stat}_us.{side}") for stat in ("total", "p50", "p90", "max") for side in ("base", "test")]
    return wide.select("kind", *cols)


def artifact_files_frame(sessions: Sequence[Session]) -> pl.DataFrame:
    """Every NEFF, NTFF and .pb file of the sessions, one row each: kind, size, hash, validity, what it pairs with and why, any problem."""
    frames = []
    for s in sessions:
        partners = pl.concat(
            [s.pairs.select(path="neff", other="ntff", rule="rule"), s.pairs.select(path="ntff", other="neff", rule="rule")]
        ).group_by("path").agg(paired_with=pl.col("other").str.split("/").list.last().str.join(", "), rule=pl.col("rule").unique().sort().str.join(", "))
        files = pl.concat(
            [
                s.neffs.select("path", kind=pl.lit("neff"), size="size", hash="hash", valid="valid", note="problem"),
                s.ntffs.select("path", kind=pl.lit("ntff"), size="size", hash="hash", valid=pl.lit(None, pl.Boolean), note=pl.lit(None, pl.String)),
                s.pbs.select("path", kind=fmt("pb ({})", "kind"), size="size", hash=pl.lit(None, pl.String), valid=pl.lit(None, pl.Boolean), note=pl.lit(None, pl.String)),
                pl.DataFrame({"path": [str(d) for d in s.device_profiles]}, schema={"path": pl.String}).select(
                    "path", kind=pl.lit("device profile"), size=pl.lit(None, pl.Int64), hash=pl.lit(None, pl.String), valid=pl.lit(None, pl.Boolean), note=pl.lit(None, pl.String)
                ),
                pl.DataFrame({"path": [str(m) for m in s.mappings]}, schema={"path": pl.String}).select(
                    "path", kind=pl.lit("framework mapping"), size=pl.lit(None, pl.Int64), hash=pl.lit(None, pl.String), valid=pl.lit(None, pl.Boolean), note=pl.lit(None, pl.String)
                ),
            ],
            how="vertical_relaxed",
        )
        frames.append(
            files.join(partners, on="path", how="left", maintain_order="left")
            .join(s.unpaired.select("path", reason="reason"), on="path", how="left", maintain_order="left")
            .select(dir=pl.lit(str(s.dir)), path="path", kind="kind", size="size", hash="hash", valid="valid", paired_with="paired_with", rule="rule", note=pl.coalesce("note", "reason"))
        )
    return pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame()


def device_frame(result: DeviceAnalysis) -> pl.DataFrame:
    """One row per device profile: NEFF, executions, span, active % per engine (all cores), DMA bytes and bandwidth, HBM bytes, FLOPs, MFU, HFU, MBU, intensity, ratio, verdict."""
    rows = []
    for r in result.reports:
        dma = r.dma.filter(pl.col("queue_type") == "all")
        engines = {e["engine"]: e["active_pct"] for e in r.engines.filter(pl.col("core").is_null()).iter_rows(named=True)}
        rows.append(
            {
                "path": str(r.path), "neff": r.neff.get("file") or r.neff.get("name"), "executions": r.executions.height, "span_us": r.span_ns / _NS_TO_US,
                **{f"active_pct.{e}": engines.get(e, 0.0) for e in ENGINES},
                "dma_bytes": int(dma["bytes"].sum()), "bandwidth_bytes_per_s": dma["bandwidth"][0] if dma.height else None,
                "hbm_bytes.read": r.hbm["read"], "hbm_bytes.write": r.hbm["write"], "model_flops": r.flops["model"], "hardware_flops": r.flops["hardware"],
                "mfu_pct": r.utilization["mfu_pct"], "hfu_pct": r.utilization["hfu_pct"], "mbu_pct": r.utilization["mbu_pct"],
                "arithmetic_intensity": r.utilization["arithmetic_intensity"], "peak_flops_bandwidth_ratio": r.utilization["peak_flops_bandwidth_ratio"], "bound": r.bound,
                "recommendations": ", ".join(r.recommendations["rule"].to_list()),
            }
        )  # fmt: skip
    return pl.DataFrame(rows, infer_schema_length=None)


def device_ops_frame(joined: DeviceJoin) -> pl.DataFrame:
    """A trace's device work per (op, NEFF): executions, device time and active time per engine (`active_us.<engine>`), FLOPs, HBM bytes."""
    engines = [(pl.col(f"{e}_ns") / _NS_TO_US).round(3).alias(f"active_us.{e}") for e in ENGINES]
    device = (pl.col("device_ns") / _NS_TO_US).round(3).alias("device_time_us")
    return joined.ops.select("op", "neff", "executions", device, *engines, "hardware_flops", "model_flops", "hbm_bytes")


def rank_figure_name(column: str) -> str:
    """The vocabulary name of a per-rank figure column: `step_p50` → `step_p50_us`, `busy_hardware` → `busy_us.hardware`, `idle` → `idle_us`."""
    if column.startswith("busy_"):
        return f"busy_us.{column.removeprefix('busy_')}"
    if column in ("steps", "overlap_pct"):
        return column
    return f"{column}_us"


def _rank_value(name: str, value: float | None) -> str:
    """A cross-rank statistic for people: a time where the figure is one, else the number."""
    if value is None:
        return "-"
    if "_us" in name:
        return fmt_time(value)
    return f"{value:.2f}%" if name.endswith("_pct") else f"{value:,.0f}"


def ranks_frame(result: RankAnalysis) -> pl.DataFrame:
    """One row per rank for display: its figures in µs (`*_us`), overlap in percent, the rank rule and the trace."""
    times = set(result.figures) - {"steps", "overlap_pct"}
    figures = ((pl.col(c) / _NS_TO_US).round(3) if c in times else pl.col(c) for c in result.figures)
    return result.table.select("rank", *(f.alias(rank_figure_name(c)) for f, c in zip(figures, result.figures)), "rule", "trace")


def rank_stats_frame(result: RankAnalysis) -> pl.DataFrame:
    """The cross-rank statistics for display (text cells): figure, min, median, max, and the outlier ranks."""
    flagged = result.outliers.group_by("column", maintain_order=True).agg(pl.col("rank").cast(pl.String).str.join(", ").alias("outliers"))
    rows = []
    for r in result.stats.iter_rows(named=True):
        name = rank_figure_name(r["column"])
        hit = flagged.filter(pl.col("column") == r["column"])["outliers"]
        rows.append({"figure": name, **{k: _rank_value(name, r[k]) for k in ("min", "median", "max")}, "outliers": hit[0] if hit.len() else "-"})
    return pl.DataFrame(rows, schema={"figure": pl.String, "min": pl.String, "median": pl.String, "max": pl.String, "outliers": pl.String})


def rank_stats_values(result: RankAnalysis) -> pl.DataFrame:
    """The cross-rank statistics as numbers (CSV): figure, min, median, max, times in µs."""
    rows = []
    for r in result.stats.iter_rows(named=True):
        name = rank_figure_name(r["column"])
        scale = _NS_TO_US if name.partition(".")[0].endswith("_us") else 1.0
        rows.append({"figure": name, **{k: None if r[k] is None else r[k] / scale for k in ("min", "median", "max")}})
    return pl.DataFrame(rows, schema={"figure": pl.String, "min": pl.Float64, "median": pl.Float64, "max": pl.Float64})


def rank_collectives_frame(result: RankAnalysis) -> pl.DataFrame:
    """Per collective name for display: matched instances, arrival skew p50 and max, transfer p50 (µs)."""
    return result.collectives.select("name", "instances", *to_us("skew_p50", "skew_max", "transfer_p50"))


def stragglers_frame(result: RankAnalysis) -> pl.DataFrame:
    """Per rank for display, most wait first: times it arrived last, percent of matched instances, the wait it caused (µs)."""
    return result.stragglers.select("rank", "times_last", last_pct="pct_last", *to_us("wait_caused"))

