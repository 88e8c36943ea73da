"""The Profile facade with the links, stats, steps and totals analyses on a small hand-made Neuron-style trace, and the Summary it hands out."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest

from dataclasses import fields

from helpers import write_trace, x
from ntrace import Summary, load

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


_FRAMES = ("lanes", "categories", "tracks", "hardware_tracks", "hardware_idle", "links", "launch_delays", "gaps", "steps", "nesting", "attribution", "ops")


def test_frames_are_the_same_whether_or_not_complete_was_made_first(trace: Path) -> None:
    """The analyses read columns of the events through a mask, or of Profile.complete once someone made it: same frames both ways."""
    lean, full = load(trace), load(trace)
    assert full.complete.height == 13  # made first: every analysis below reads it instead of the events
    for name in _FRAMES:
        assert getattr(lean, name).equals(getattr(full, name)), name
    assert "complete" not in lean.__dict__  # none of them made the full copy
    assert lean.complete_count == full.complete_count == lean.complete.height
    assert lean.window == full.window == (0, 150_000)


def test_select_complete_and_executions(trace: Path) -> None:
    profile = load(trace)
    hardware = pl.col("lane") == "hardware"
    picked = profile.select_complete("idx", "name", where=hardware, ts_us=pl.col("ts") / 1000)
    assert picked["idx"].flags["SORTED_ASC"]  # joins on idx merge
    assert picked.equals(profile.complete.filter(hardware).select("idx", "name", ts_us=pl.col("ts") / 1000))
    expected = profile.tracked.filter(pl.col("lane") == "hardware").select("idx", "name", "ts", "end", "dur", "track")
    assert profile.executions.equals(expected)
    assert profile.executions["track"].to_list() == ["device 0"] * 4


def test_op_around_looks_calls_up_in_the_op_tree(trace: Path) -> None:
    from ntrace.analyses.ops import op_around

    profile = load(trace)
    # 2: nrt_execute inside aten::mul (1); 3: a kernel, not in the host tree; 5: nrt_execute inside aten::add (4); 0: the top step
    got = op_around(profile.nesting, pl.Series([2, 3, None, 5, 0], dtype=pl.Int64)).to_list()
    assert got == [1, None, None, 4, None]
    assert got == [dict(profile.nesting.select("idx", "op_idx").iter_rows()).get(i) for i in (2, 3, None, 5, 0)]


def _same(a: Summary, b: Summary) -> bool:
    """Every field of two summaries equal (frames and series by value)."""
    return all(
        x.equals(y) if isinstance(x, (pl.DataFrame, pl.Series)) else x == y
        for x, y in ((getattr(a, f.name), getattr(b, f.name)) for f in fields(Summary))
    )


def _one_at_a_time(path: Path, monkeypatch: pytest.MonkeyPatch) -> Summary:
    """The summary computed with its two branches one after the other, no thread started."""

    class NoThread:
        def __init__(self, *args: object, **kwargs: object) -> None:
            raise AssertionError("a thread was started above TWO_THREADS_MAX")

    with monkeypatch.context() as patch:
        patch.setattr("ntrace.profile.TWO_THREADS_MAX", 0)
        patch.setattr("ntrace.profile.threading.Thread", NoThread)
        return load(path).summary()


def test_summary_in_two_threads_equals_one_at_a_time(trace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _same(load(trace).summary(), _one_at_a_time(trace, monkeypatch))


def test_summary_in_two_threads_on_real_traces(shared_trace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    assert _same(load(shared_trace).summary(), _one_at_a_time(shared_trace, monkeypatch))


def test_summary_raises_what_the_second_branch_raised_and_joins_it(trace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from ntrace.errors import TraceFormatError

    def broken(events: pl.DataFrame, *rest: object) -> pl.DataFrame:
        raise TraceFormatError(trace, "broken in the second branch")

    monkeypatch.setattr("ntrace.profile.lane_totals", broken)  # `lanes`: the second branch only
    with pytest.raises(TraceFormatError, match="second branch"):
        load(trace).summary()
    assert not [t for t in threading.enumerate() if t.name == "ntrace-analysis"]


def test_a_stored_summary_is_returned_as_given(trace: Path) -> None:
    from ntrace.profile import Profile

    profile = load(trace)
    stored = profile.summary()
    assert Profile(profile.trace, stored).summary() is stored
