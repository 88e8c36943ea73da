"""Analysis results as flat display frames (µs floats in `*_us` columns, shares as 0..1), shared by the CSV, Markdown and HTML renderers."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ntrace.analysis import Analysis
from ntrace.lanes import LANES
from ntrace.profile import Profile
from ntrace.render.units import fmt_pct, fmt_time

_NS_TO_US = 1000.0


def to_us(*columns: str) -> list[pl.Expr]:
    """ns Int64 columns as `<name>_us` µs floats (rounded to the ns, as the JSON renderer does)."""
    return [(pl.col(c) / _NS_TO_US).round(3).alias(f"{c}_us") for c in columns]


def variant_names(profiles: list[Profile], root: Path) -> list[str]:
    """Short names for profiles found under `root`: the first directory under root when those are unique
    (fixtures/rmsnorm/naive/…/trace.json → "naive"), else the path relative to root."""
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
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:,}"
    if isinstance(value, float):
        return f"{value:,.3f}"
    return str(value)


def header(column: str) -> str:
    """A column name for people: units suffix dropped, underscores as spaces."""
    name = column.removesuffix("_us").removesuffix("_pct")
    return "% window" if name == "share" else name.replace("_", " ") + (" %" if column.endswith("_pct") else "")


def ops_frame(profile: Profile) -> pl.DataFrame | None:
    """The per-op table (torch key_averages() columns) with times as `*_us`, or None when this Profile has no op table."""
    ops = getattr(profile, "ops", None)
    if ops is None:
        return None
    times = [c for c, t in ops.schema.items() if t.is_integer() and c not in ("calls", "events") and not c.endswith("_pct")]
    return ops.select(to_us(c)[0] if c in times else pl.col(c) for c in ops.columns)


def lanes_frame(profile: Profile) -> pl.DataFrame:
    """Per lane: events, total_us, busy_us, share of the window."""
    return profile.lanes.select("lane", "events", *to_us("total", "busy"), "share")


def tracks_frame(profile: Profile) -> pl.DataFrame:
    """Per (lane, track): events, total_us, busy_us, idle_us, gaps."""
    return profile.tracks.select("lane", "track", "events", *to_us("total", "busy", "idle"), "gaps")


def gaps_frame(profile: Profile) -> pl.DataFrame:
    """Per gap kind: count, total, p50, p90, max (µs) and share of the window."""
    return profile.gaps.select("kind", "count", *to_us("total", "p50", "p90", "max"), "share")


def steps_frame(profile: Profile) -> pl.DataFrame:
    """Per profiler step: duration, busy per lane and hardware idle (µs)."""
    return profile.steps.select("name", *to_us("dur", *(f"{lane}_busy" for lane in LANES), "hardware_idle"), "hardware_events")


def summary_row(profile: Profile, name: str) -> dict[str, object]:
    """One profile as one flat row: window, busy and events per lane, both gap kinds' statistics."""
    row: dict[str, object] = {"trace": name, "events": profile.complete.height, "window_us": round(profile.window_ns / _NS_TO_US, 3)}
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
    """One row per profile (see summary_row), named relative to the analyzed path."""
    names = variant_names(analysis.profiles, analysis.root)
    return pl.DataFrame([summary_row(p, name) for p, name in zip(analysis.profiles, names)])
