"""The JSON renderer: the stable `ntrace.analysis/1` contract, built from a Profile's frames."""

from __future__ import annotations

from typing import Any

import orjson
import polars as pl

from ntrace.analysis import Analysis
from ntrace.profile import Profile
from ntrace.render.artifacts import session_dict
from ntrace.render.ops import findings_dicts, ops_dicts
from ntrace.render.units import us

SCHEMA = "ntrace.analysis/1"


def _gap(stats: dict[str, Any]) -> dict[str, Any]:
    return {
        "count": stats["count"],
        "total_us": us(stats["total"]),
        "p50_us": us(stats["p50"]),
        "p90_us": us(stats["p90"]),
        "max_us": us(stats["max"]),
        "share": stats["share"],
    }


def profile_dict(profile: Profile) -> dict[str, Any]:
    """One profile as a JSON-ready dict (µs floats); every number comes from the profile's frames."""
    cats = profile.categories
    lanes = []
    for row in profile.lanes.iter_rows(named=True):
        mine = cats.filter(pl.col("lane") == row["lane"])
        lanes.append(
            {
                "lane": row["lane"],
                "events": row["events"],
                "total_us": us(row["total"]),
                "busy_us": us(row["busy"]),
                "share": row["share"],
                "categories": dict(zip(mine["category"].to_list(), mine["events"].to_list())),
            }
        )
    gaps = {row["kind"]: _gap(row) for row in profile.gaps.iter_rows(named=True)}
    busy = [c.removesuffix("_busy") for c in profile.steps.columns if c.endswith("_busy")]  # the lanes with a busy column, in column order
    return {
        "trace": str(profile.path),
        "variant": profile.variant,
        "events": profile.complete_count,
        "window_us": us(profile.window_ns),
        "lanes": lanes,
        "tracks": [
            {"lane": r["lane"], "track": r["track"], "events": r["events"], "total_us": us(r["total"]), "busy_us": us(r["busy"])}
            for r in profile.tracks.iter_rows(named=True)
        ],
        "hardware_tracks": [
            {"track": r["track"], "busy_us": us(r["busy"]), "idle_us": us(r["idle"]), "span_us": us(r["span"]), "gaps": r["gaps"]}
            for r in profile.hardware_tracks.iter_rows(named=True)
        ],
        "gaps": gaps,
        "steps": [
            {
                "step": r["step"],
                "name": r["name"],
                "dur_us": us(r["dur"]),
                "busy_us": {lane: us(r[f"{lane}_busy"]) for lane in busy},
                "hardware_events": r["hardware_events"],
                "hardware_idle_us": us(r["hardware_idle"]),
            }
            for r in profile.steps.iter_rows(named=True)
        ],
        "device": profile.device,
        "ops": ops_dicts(profile),
        "findings": findings_dicts(profile),
        "warnings": list(profile.warnings),
        "artifacts": session_dict(profile.artifacts) if profile.artifacts else None,
    }


def render(analysis: Analysis) -> str:
    """The whole analysis as one JSON object (schema `ntrace.analysis/1`)."""
    doc = {
        "schema": SCHEMA,
        "profiles": [profile_dict(p) for p in analysis.profiles],
        "artifacts": [{"dir": str(s.dir), **session_dict(s)} for s in analysis.artifacts],
        "warnings": analysis.all_warnings,
    }
    return orjson.dumps(doc, option=orjson.OPT_INDENT_2).decode()
