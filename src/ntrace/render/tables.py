"""Analysis results as flat display frames (µs floats in `*_us` columns, shares as 0..1), shared by the CSV, Markdown and HTML renderers."""

from __future__ import annotations

from pathlib import Path
from typing import Sequence

import polars as pl

from ntrace.analyses.ops import OpView, op_table
from ntrace.lanes import LANES
from ntrace.neuron.artifacts import Session
from ntrace.summary import Summary
from ntrace.units import fmt_pct, fmt_time
from ntrace.workflows.analyze import Analysis
from ntrace.workflows.diff import Diff

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


def cell(column: str, value: object) -> str:
    """One value for people: `*_us` as a torch-style time, shares and `*_pct` as percentages, integers with separators."""
    if value is None:
        return "-"
    if column.endswith("_us") and isinstance(value, (int, float)):
        return fmt_time(value * 1000)
    if (column == "share" or column.endswith(("_share", "_pct"))) and isinstance(value, float):
        return fmt_pct(value)
    if column.endswith("_change") and isinstance(value, float):
        return f"{value:+.1f}%"
    if column == "speedup" and isinstance(value, float):
        return f"{value:.2f}x"
    if isinstance(value, bool):
        return "yes" if value else "NO"
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}"
    return str(value)


def header(column: str) -> str:
    """A column name for people: units suffix dropped, underscores as spaces."""
    name = column.removesuffix("_us").removesuffix("_pct")
    return "% window" if name == "share" else name.replace("_", " ") + (" %" if column.endswith("_pct") else "")


def ops_frame(summary: Summary, view: OpView = OpView()) -> pl.DataFrame:
    """The per-op table (torch key_averages() columns) in a view, with times as `*_us`."""
    ops = op_table(summary.op_groups, summary.hardware_ns, view)
    times = [c for c, t in ops.schema.items() if t.is_integer() and c not in ("calls", "events") and not c.endswith("_pct")]
    return ops.select(to_us(c)[0] if c in times else pl.col(c) for c in ops.columns)


def lanes_frame(profile: Summary) -> pl.DataFrame:
    """Per lane: events, total_us, busy_us, share of the window."""
    return profile.lanes.select("lane", "events", *to_us("total", "busy"), "share")


def tracks_frame(profile: Summary) -> pl.DataFrame:
    """Per (lane, track): events, total_us, busy_us, idle_us, gaps."""
    return profile.tracks.select("lane", "track", "events", *to_us("total", "busy", "idle"), "gaps")


def hardware_tracks_frame(profile: Summary) -> pl.DataFrame:
    """The hardware lane's rows of tracks_frame, without the lane column."""
    return tracks_frame(profile).filter(pl.col("lane") == "hardware").drop("lane")


def gaps_frame(profile: Summary) -> pl.DataFrame:
    """Per gap kind: count, total, p50, p90, max (µs) and share of the window."""
    return profile.gaps.select("kind", "count", *to_us("total", "p50", "p90", "max"), "share")


def steps_frame(profile: Summary) -> pl.DataFrame:
    """Per profiler step: duration, busy per lane and hardware idle (µs)."""
    return profile.steps.select("name", *to_us("dur", *(f"{lane}_busy" for lane in LANES), "hardware_idle"), "hardware_events")


def summary_row(profile: Summary, name: str) -> dict[str, object]:
    """One trace as one flat row: window, busy and events per lane, both gap kinds' statistics."""
    row: dict[str, object] = {"trace": name, "events": profile.events, "window_us": round(profile.window_ns / _NS_TO_US, 3)}
    for r in profile.lanes.iter_rows(named=True):
        row[f"{r['lane']}_events"] = r["events"]
        row[f"{r['lane']}_busy_us"] = round(r["busy"] / _NS_TO_US, 3)
    for g in profile.gaps.iter_rows(named=True):
        row[f"{g['kind']}_count"] = g["count"]
        for stat in ("total", "p50", "max"):
            row[f"{g['kind']}_{stat}_us"] = round(g[stat] / _NS_TO_US, 3)
        row[f"{g['kind']}_share"] = g["share"]
    row["steps"] = profile.steps.height
    return row


def summary_frame(analysis: Analysis) -> pl.DataFrame:
    """One row per trace (see summary_row), named relative to the analyzed path."""
    names = variant_names(analysis.summaries, analysis.root)
    return pl.DataFrame([summary_row(p, name) for p, name in zip(analysis.summaries, names)])


def compare_frame(frame: pl.DataFrame) -> pl.DataFrame:
    """A variant comparison (ntrace.compare) for display: device time, self CPU, op calls, hardware idle, speed-up."""
    return frame.select(
        variant="name", device_time_us=pl.col("device") / _NS_TO_US, self_cpu_us=pl.col("self_cpu") / _NS_TO_US, op_calls="device_op_calls",
        idle_us=pl.col("gap") / _NS_TO_US, speedup="speedup", backend="device_name", traces="traces", path="path",
    )


def diff_ops_frame(d: Diff) -> pl.DataFrame:
    """A diff's per-op rows for display: statuses, calls, self device and self CPU before/after (µs) and their change (%)."""
    times = ["base_self_device", "test_self_device", "base_self_cpu", "test_self_cpu"]
    return d.ops.select(
        (to_us(c)[0] if c in times else pl.col(c).alias(c.removesuffix("_pct")) if c.endswith("_change_pct") else pl.col(c)) for c in d.ops.columns
    )


def diff_lanes_frame(d: Diff) -> pl.DataFrame:
    """A diff's lane totals, base and test side by side (µs)."""
    return d.lanes.select("lane", *to_us("base_total", "test_total", "base_busy", "test_busy"))


def diff_gaps_frame(d: Diff) -> pl.DataFrame:
    """A diff's gap statistics as one row per gap kind: count, total, p50, max, base and test side by side."""
    wide = d.gaps.pivot(on="stat", index="kind", values=["base", "test"])
    cols = [pl.col(f"{side}_count") for side in ("base", "test")]
    cols += [(pl.col(f"{side}_{stat}") / _NS_TO_US).alias(f"{side}_{stat}_us") for stat in ("total", "p50", "max") for side in ("base", "test")]
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
                s.pbs.select("path", kind=pl.format("pb ({})", "kind"), size="size", hash=pl.lit(None, pl.String), valid=pl.lit(None, pl.Boolean), note=pl.lit(None, pl.String)),
            ],
            how="vertical_relaxed",
        )
        frames.append(
            files.join(partners, on="path", how="left")
            .join(s.unpaired.select("path", reason="reason"), on="path", how="left")
            .select(session=pl.lit(str(s.dir)), file="path", kind="kind", size="size", hash="hash", valid="valid", paired_with="paired_with", rule="rule", note=pl.coalesce("note", "reason"))
        )
    return pl.concat(frames, how="vertical_relaxed") if frames else pl.DataFrame()
