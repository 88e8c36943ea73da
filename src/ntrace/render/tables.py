"""Analysis results as flat display frames (µs floats in `*_us` columns, shares as 0..1), shared by the CSV, Markdown and HTML renderers."""

from __future__ import annotations

from pathlib import Path

import polars as pl

from ntrace.analysis import Analysis
from ntrace.lanes import LANES
from ntrace.profile import Profile

_NS_TO_US = 1000.0


def to_us(*columns: str) -> list[pl.Expr]:
    """ns Int64 columns as `<name>_us` µs floats (rounded to the ns, as the JSON renderer does)."""
    return [(pl.col(c) / _NS_TO_US).round(3).alias(f"{c}_us") for c in columns]


def variant_name(profile: Profile, root: Path) -> str:
    """A short name for a profile under `root`: its path relative to root (the parent directory when the file is `trace.json`)."""
    path = profile.path
    try:
        rel = path.relative_to(root) if root.is_dir() else Path(path.name)
    except ValueError:
        rel = Path(path.name)
    return str(rel.parent) if rel.name in ("trace.json", "trace.json.gz") and str(rel.parent) != "." else str(rel)


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
    return pl.DataFrame([summary_row(p, variant_name(p, analysis.root)) for p in analysis.profiles])
