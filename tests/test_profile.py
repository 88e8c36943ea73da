"""profile.py with links.py, gaps.py, steps.py and totals.py on a small hand-made Neuron-style trace."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from conftest import write_trace, x
from ntrace import load

HOST = {"pid": 100, "tid": 100}
CORE = {"pid": 0, "tid": 0}


@pytest.fixture
def trace(tmp_path: Path) -> Path:
    events = [
        x("ProfilerStep#1", "user_annotation", 0, 100, **HOST),
        x("aten::mul", "cpu_op", 10, 20, **HOST, **{"External id": 1}),
        x("nrt_execute", "privateuse1_runtime", 15, 5, **HOST, correlation=1),
        x("nc_exec_running", "kernel", 30, 10, **CORE, correlation=1),
        x("aten::add", "cpu_op", 40, 20, **HOST),
        x("nrt_execute", "privateuse1_runtime", 45, 5, **HOST),  # no correlation: linked by the flow below
        {"ph": "s", "id": 9, "cat": "ac2g", "name": "ac2g", "ts": 45, **HOST},
        {"ph": "f", "id": 9, "cat": "ac2g", "name": "ac2g", "ts": 70, "bp": "e", **CORE},
        x("nc_exec_running", "kernel", 70, 10, **CORE),
        x("nc_exec_running", "kernel", 75, 10, **CORE),  # overlaps the previous one, never linked
        x("driver", "privateuse1_driver", 46, 2, **HOST, stream=3),
        x("ProfilerStep#2", "user_annotation", 100, 50, **HOST),
        x("aten::mean", "cpu_op", 105, 10, **HOST),
        x("nrt_execute", "privateuse1_runtime", 106, 4, **HOST, correlation=3),
        x("nc_exec_running", "kernel", 120, 10, **CORE, correlation=3),
        {"ph": "M", "name": "process_name", "pid": 100, "args": {"name": "python"}},
    ]
    return write_trace(tmp_path / "trace.json", events)


def test_lanes_and_window(trace: Path) -> None:
    p = load(trace)
    assert p.window == (0, 150_000) and p.complete.height == 13
    lanes = {r["lane"]: r for r in p.lanes.iter_rows(named=True)}
    assert [lanes[k]["events"] for k in ("framework", "device", "runtime_api", "hardware", "other")] == [5, 1, 3, 4, 0]
    assert lanes["hardware"]["total"] == 40_000 and lanes["hardware"]["busy"] == 35_000
    assert lanes["hardware"]["share"] == pytest.approx(35 / 150)


def test_hardware_track_busy_idle_span(trace: Path) -> None:
    (hw,) = load(trace).hardware_tracks.iter_rows(named=True)
    assert hw["track"] == "device 0"
    assert (hw["busy"], hw["idle"], hw["span"], hw["gaps"]) == (35_000, 65_000, 100_000, 2)
    idle = load(trace).hardware_idle
    assert idle["gap"].to_list() == [30_000, 35_000]


def test_links_by_correlation_and_flow(trace: Path) -> None:
    p = load(trace)
    vias = p.links.join(p.events.select("idx", "ts"), left_on="exec_idx", right_on="idx").sort("ts")["via"].to_list()
    assert vias == ["correlation", "flow", "correlation"]
    assert p.launch_delays["delay"].to_list() == [15_000, 25_000, 14_000]
    stats = p.gaps.filter(pl.col("kind") == "launch_delay").row(0, named=True)
    assert (stats["count"], stats["total"], stats["p50"], stats["max"]) == (3, 54_000, 15_000, 25_000)


def test_steps_are_windows(trace: Path) -> None:
    steps = load(trace).steps
    assert steps["step"].to_list() == [1, 2]
    s1, s2 = steps.iter_rows(named=True)
    assert (s1["dur"], s1["hardware_busy"], s1["hardware_idle"], s1["hardware_events"]) == (100_000, 25_000, 30_000, 3)
    assert (s2["hardware_busy"], s2["hardware_idle"], s2["framework_busy"], s2["runtime_api_busy"]) == (10_000, 0, 10_000, 4_000)


def test_device_lane_is_tracked_by_stream(trace: Path) -> None:
    tracks = load(trace).tracks
    assert tracks.filter(pl.col("lane") == "device")["track"].to_list() == ["stream 3"]
    assert tracks.filter(pl.col("lane") == "framework")["track"].to_list() == ["pid 100 tid 100"]
