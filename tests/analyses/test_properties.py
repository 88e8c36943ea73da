"""Property tests (hypothesis) over generated traces: lanes partition the events, busy ≤ total, busy + idle = span, order and gzip invariance, no warnings on valid input."""

from __future__ import annotations

import json
import random
import tempfile
from pathlib import Path
from typing import Any

import polars as pl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import brute_union, write_trace
from ntrace import load
from ntrace.io.kineto import read_kineto
from ntrace.analyses.intervals import group_busy, reaching
from ntrace.lanes import LANE_ROWS, LANES
from ntrace.analyses.totals import track

CATEGORIES = [row[0] for row in LANE_ROWS] + ["some_new_category", "Kernel"]
SETTINGS = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@st.composite
def complete_events(draw: st.DrawFn) -> dict[str, Any]:
    """One complete event as Kineto writes it: µs times with at most 3 decimals (whole ns)."""
    ts_ns = draw(st.integers(0, 5_000_000))
    dur_ns = draw(st.integers(0, 200_000))
    ev = {
        "ph": "X",
        "cat": draw(st.sampled_from(CATEGORIES)),
        "name": draw(st.sampled_from(["aten::mm", "nrt_execute", "nc_exec_running", "ProfilerStep#1", "ünïcode op", ""])),
        "pid": draw(st.sampled_from([0, 1, 100, "Spans"])),
        "tid": draw(st.integers(0, 3)),
        "ts": ts_ns / 1000 if draw(st.booleans()) else ts_ns // 1000,
        "dur": dur_ns / 1000,
    }
    if draw(st.booleans()):
        ev["args"] = {"correlation": draw(st.integers(1, 20)), "External id": draw(st.integers(1, 20))}
    return ev


def _other_events(draw: st.DrawFn) -> list[dict[str, Any]]:
    flows = draw(st.lists(st.tuples(st.sampled_from("sf"), st.integers(1, 20), st.integers(0, 5_000_000)), max_size=6))
    return [{"ph": ph, "id": i, "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 0, "ts": t / 1000, **({"bp": "e"} if ph == "f" else {})} for ph, i, t in flows] + [
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python"}}
    ]


@st.composite
def traces(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A valid trace's events: distinct complete events (exact duplicates are a defect ntrace warns about), flows, metadata."""
    evs = draw(st.lists(complete_events(), min_size=1, max_size=60, unique_by=lambda e: json.dumps(e, sort_keys=True)))
    return evs + _other_events(draw)


@SETTINGS
@given(traces())
def test_lanes_partition_and_busy_bounds(events: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        profile = load(write_trace(Path(tmp) / "t.json", events))
    complete = profile.complete
    n_complete = sum(1 for e in events if e["ph"] == "X")
    assert complete.height == n_complete
    assert complete["lane"].null_count() == 0 and set(complete["lane"].cast(pl.String)) <= set(LANES)
    lanes = profile.lanes
    assert lanes["events"].sum() == n_complete  # every complete event in exactly one lane
    assert lanes["total"].sum() == complete["dur"].sum()
    for row in lanes.iter_rows(named=True):
        assert 0 <= row["busy"] <= row["total"]
        assert row["busy"] <= profile.window_ns
    for row in profile.tracks.iter_rows(named=True):
        assert 0 <= row["busy"] <= row["total"] and row["busy"] <= row["span"]
        assert row["busy"] + row["idle"] == row["span"]
    for row in profile.hardware_tracks.iter_rows(named=True):
        assert row["busy"] + row["idle"] == row["span"]


@SETTINGS
@given(traces())
def test_lane_busy_equals_brute_force_union(events: list[dict[str, Any]]) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        profile = load(write_trace(Path(tmp) / "t.json", events))
    rows = profile.complete.select(pl.col("lane").cast(pl.String), "ts", "end").rows()
    for row in profile.lanes.iter_rows(named=True):
        mine = [(ts, end) for lane, ts, end in rows if lane == row["lane"]]
        assert row["busy"] == brute_union(mine), row["lane"]
    tracked = profile.complete.with_columns(pl.col("lane").cast(pl.String), track()).select("lane", "track", "ts", "end").rows()
    for row in profile.tracks.iter_rows(named=True):
        mine = [(ts, end) for lane, trk, ts, end in tracked if (lane, trk) == (row["lane"], row["track"])]
        assert row["busy"] == brute_union(mine) and row["events"] == len(mine), row["track"]


@SETTINGS
@given(st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 500), st.sampled_from(["a", "b", "c"])), min_size=1, max_size=80))
def test_interval_busy_is_the_union(spans: list[tuple[int, int, str]]) -> None:
    codes = {"a": 0, "b": 1, "c": 2}
    frame = pl.DataFrame({"g": [codes[t] for _, _, t in spans], "ts": [s for s, _, _ in spans], "end": [s + d for s, d, _ in spans]})
    got = {"abc"[r["g"]]: r for r in group_busy(reaching(frame, "g"), "g").iter_rows(named=True)}
    for track in {t for _, _, t in spans}:
        mine = [(s, s + d) for s, d, t in spans if t == track]
        assert got[track]["busy"] == brute_union(mine)
        assert got[track]["span"] == max(e for _, e in mine) - min(s for s, _ in mine)
        assert got[track]["busy"] + got[track]["idle"] == got[track]["span"]


@SETTINGS
@given(traces(), st.randoms(use_true_random=False))
def test_analysis_is_invariant_to_event_order_and_gzip(events: list[dict[str, Any]], rnd: random.Random) -> None:
    shuffled = list(events)
    rnd.shuffle(shuffled)
    with tempfile.TemporaryDirectory() as tmp:
        first = load(write_trace(Path(tmp) / "a.json", events))
        second = load(write_trace(Path(tmp) / "b.json.gz", shuffled, gz=True))
    assert first.window == second.window
    assert first.lanes.equals(second.lanes)
    assert first.tracks.equals(second.tracks)
    assert first.hardware_tracks.equals(second.hardware_tracks)
    assert first.categories.sort(["lane", "category"]).equals(second.categories.sort(["lane", "category"]))
    assert first.hardware_idle.sort(pl.all()).equals(second.hardware_idle.sort(pl.all()))


@SETTINGS
@given(traces(), st.booleans(), st.booleans())
def test_decoding_a_valid_trace_never_warns(events: list[dict[str, Any]], gz: bool, fast: bool) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        decoded = read_kineto(write_trace(Path(tmp) / ("t.json.gz" if gz else "t.json"), events, gz=gz), fast=fast)
    assert decoded.warnings == ()
    assert decoded.events.height == len(events)
