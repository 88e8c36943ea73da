"""The Profile facade with the links, stats, steps and totals analyses on a small hand-made Neuron-style trace, and the Summary it hands out."""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl
import pytest
from polars.testing import assert_frame_equal

from dataclasses import fields

from helpers import shared_trace_files, write_trace, x
from ntrace import Summary, load
from ntrace.summary import RankSummary
from ntrace.analyses.findings import findings
from ntrace.analyses.ranks import COLLECTIVE, communication_time
from ntrace.analyses.steps import device_work, host_busy, is_step
from ntrace.exprs import fmt
from ntrace.profile import HOST as HOST_SIDE
from ntrace.profile import NEFF_EXECUTION_SCHEMA, Profile

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
    delays = p.launch_delays.sort("exec_idx")
    assert delays["latency"].to_list() == [15_000, 25_000, 14_000]  # call start -> device start
    assert delays["queue"].to_list() == [10_000, 20_000, 10_000]  # call end -> device start
    latency = p.gaps.filter(pl.col("kind") == "launch_latency").row(0, named=True)
    assert (latency["count"], latency["total"], latency["p50"], latency["max"], latency["share"]) == (3, 54_000, 15_000, 25_000, None)
    queue = p.gaps.filter(pl.col("kind") == "queue_delay").row(0, named=True)
    assert (queue["count"], queue["total"], queue["p50"], queue["max"], queue["share"]) == (3, 40_000, 10_000, 20_000, None)


def test_steps_are_windows(trace: Path) -> None:
    steps = load(trace).steps
    assert steps["step"].to_list() == [1, 2]
    s1, s2 = steps.iter_rows(named=True)
    assert "hardware_busy" not in steps.columns  # host columns: hardware executions run on the device
    assert (s1["dur"], s1["framework_busy"], s1["runtime_api_busy"], s1["device_busy"]) == (100_000, 40_000, 10_000, 2_000)
    assert (s2["dur"], s2["framework_busy"], s2["runtime_api_busy"], s2["device_busy"]) == (50_000, 10_000, 4_000, 0)


def test_device_work_belongs_to_the_step_that_launched_it(trace: Path) -> None:
    """The kernel at 70 µs ran after aten::add's call at 45 µs in step 1; the one at 75 µs has no call: it is outside every step."""
    p = load(trace)
    assert p.step_devices.rows() == [(1, "device 0", 2, 20_000, 30_000, 50_000), (2, "device 0", 1, 10_000, 0, 10_000)]
    assert p.outside_steps == (1, 10_000)


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


def test_device_activities_are_own_time_of_the_op_open_when_their_call_starts(trace: Path) -> None:
    profile = load(trace)
    # kernel 3: call 2 inside aten::mul (1); kernel 8: call 5 (by flow) inside aten::add (4); kernel 9: no call; kernel 14: call 13 inside aten::mean (12)
    got = profile.attribution.sort("idx").select("idx", "call_idx", "op_idx").rows()
    assert got == [(3, 2, 1), (8, 5, 4), (9, None, None), (14, 13, 12)]
    assert profile.device_ns == 40_000


def _same(a: Summary, b: Summary) -> bool:
    """Every field of two summaries equal (frames and series by value)."""
    return all(
        x.equals(y) if isinstance(x, (pl.DataFrame, pl.Series)) else x == y
        for x, y in ((getattr(a, f.name), getattr(b, f.name)) for f in fields(Summary))
    )


#: How summary() can run: the POOL_THREAD_MAX forcing each way on any trace.
_MODES = {"pool thread": 10**12, "two threads": -1}


def _summary_in(mode: str, path: Path, monkeypatch: pytest.MonkeyPatch) -> tuple[Summary, RankSummary]:
    """The summary and rank summary computed the way `mode` names; a thread is started only in "two threads", and only there is one allowed."""
    import threading

    pool_max = _MODES[mode]
    started: list[str] = []

    class Counted(threading.Thread):
        def start(self) -> None:
            started.append(self.name)
            super().start()

    with monkeypatch.context() as patch:
        patch.setattr("ntrace.profile.POOL_THREAD_MAX", pool_max)
        patch.setattr("ntrace.profile.threading.Thread", Counted)
        result = load(path).summary(), load(path).rank_summary()
    analysis = [name for name in started if name != "ntrace-decode"]  # the native parser's second half of a large array (io/kineto/_columnar)
    assert analysis == (["ntrace-analysis"] if mode == "two threads" else []), mode
    return result


def _same_everywhere(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every way of running summary() and rank_summary() gives the same results."""
    (summary, ranked), *others = (_summary_in(mode, path, monkeypatch) for mode in _MODES)
    for other, other_ranked in others:
        assert _same(summary, other)
        assert ranked.figures == other_ranked.figures and ranked.steps.equals(other_ranked.steps) and ranked.collectives.equals(other_ranked.collectives)


def test_summary_is_the_same_on_a_pool_thread_and_in_two_threads(trace: Path, monkeypatch: pytest.MonkeyPatch, alone: None) -> None:
    _same_everywhere(trace, monkeypatch)


def test_summary_is_the_same_every_way_on_real_traces(shared_trace: Path, monkeypatch: pytest.MonkeyPatch, alone: None) -> None:
    _same_everywhere(shared_trace, monkeypatch)


def test_a_small_trace_is_analyzed_on_a_pool_thread(trace: Path, monkeypatch: pytest.MonkeyPatch, alone: None) -> None:
    import threading

    import ntrace.profile

    seen: list[int] = []
    lane_totals = ntrace.profile.lane_totals

    def watched(*args: object) -> pl.DataFrame:
        seen.append(threading.get_native_id())
        return lane_totals(*args)  # type: ignore[arg-type]

    monkeypatch.setattr("ntrace.profile.lane_totals", watched)
    load(trace).summary()  # 13 complete events: under POOL_THREAD_MAX
    assert len(seen) == 1 and seen[0] != threading.get_native_id()


def test_summary_raises_what_the_second_branch_raised_and_joins_it(trace: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import threading

    from ntrace.errors import TraceFormatError

    def broken(events: pl.DataFrame, *rest: object) -> pl.DataFrame:
        raise TraceFormatError(trace, "broken in the second branch")

    monkeypatch.setattr("ntrace.profile.lane_totals", broken)  # `lanes`: the second branch only
    monkeypatch.setattr("ntrace.profile.POOL_THREAD_MAX", -1)  # the two threads, not the pool thread
    with pytest.raises(TraceFormatError, match="second branch"):
        load(trace).summary()
    assert not [t for t in threading.enumerate() if t.name == "ntrace-analysis"]


def test_summary_on_a_pool_thread_raises_what_the_analysis_raised(trace: Path, monkeypatch: pytest.MonkeyPatch, alone: None) -> None:
    from ntrace.errors import TraceFormatError

    def broken(events: pl.DataFrame, *rest: object) -> pl.DataFrame:
        raise TraceFormatError(trace, "broken on the pool thread")

    monkeypatch.setattr("ntrace.profile.lane_totals", broken)
    for run in (lambda p: p.summary(), lambda p: p.rank_summary()):
        with pytest.raises(TraceFormatError, match="pool thread") as caught:
            run(load(trace))
        assert caught.value.path == str(trace)  # the analysis's own error, not one of Polars wrapping it
    monkeypatch.undo()
    assert load(trace).summary().events == 13  # and the next analysis runs


def test_a_stored_summary_is_returned_as_given(trace: Path) -> None:
    from ntrace.profile import Profile

    profile = load(trace)
    stored = profile.summary()
    assert Profile(profile.trace, stored).summary() is stored


def _general_findings(p: Profile) -> pl.DataFrame:
    """The findings by the analyses' general path, with no shortcut for traces without device work."""
    return findings(p.op_table().with_columns(device=pl.lit(p.device), device_ns=pl.lit(p.device_ns)), p.launched, p.executions)


def _general_results(p: Profile) -> tuple[pl.DataFrame, pl.DataFrame, tuple[int, int], pl.DataFrame]:
    """steps, step_devices, outside_steps and communication by the analyses' general path, with none of Profile's shortcuts for traces without steps or collectives."""
    windows = p._windows
    steps = host_busy(windows, p.select_complete("lane", "ts", "end", where=HOST_SIDE & ~is_step()))
    work = p.activities.select("idx", device=fmt("device {}", pl.col("pid").fill_null("?")), ts="ts", end="end", dur="dur").join(
        p.links.select(idx="exec_idx", call_idx="call_idx").join(p.calls.select(call_idx="idx", call_ts="ts"), on="call_idx"), on="idx", how="left"
    )
    devices, unplaced = device_work(windows, work)
    outside = (unplaced.height, int(unplaced["dur"].sum()))
    compute = p.executions.filter(~COLLECTIVE).select(device="track", ts="ts", end="end")
    return steps, devices, outside, communication_time(p.collectives, compute)


def _without_steps(trace: Path, tmp_path: Path) -> Path:
    events = [e for e in orjson.loads(trace.read_bytes())["traceEvents"] if not str(e.get("name", "")).startswith("ProfilerStep#")]
    return write_trace(tmp_path / "no_steps.json", events)


@pytest.mark.parametrize("steps", [True, False], ids=["steps", "no_steps"])
def test_shortcuts_for_traces_without_steps_or_collectives_equal_the_general_path(trace: Path, tmp_path: Path, steps: bool) -> None:
    p = load(trace if steps else _without_steps(trace, tmp_path))
    assert p._windows.is_empty() is not steps
    general = _general_results(p)
    for got, want in zip((p.steps, p.step_devices, p.communication), (general[0], general[1], general[3])):
        assert_frame_equal(got, want)  # values and column types
    assert p.outside_steps == general[2]


def test_shortcuts_equal_the_general_path_on_real_traces(shared_trace: Path) -> None:
    p = load(shared_trace)
    general = _general_results(p)
    for got, want in zip((p.steps, p.step_devices, p.communication), (general[0], general[1], general[3])):
        assert_frame_equal(got, want)
    assert p.outside_steps == general[2]
    assert_frame_equal(p.findings, _general_findings(p))


@pytest.mark.parametrize("kept", ["host", "host_and_two_executions", "everything"])
def test_findings_shortcut_for_traces_without_device_work_equals_the_general_path(trace: Path, tmp_path: Path, kept: str) -> None:
    events = orjson.loads(trace.read_bytes())["traceEvents"]
    if kept != "everything":
        limit = 2 if kept == "host_and_two_executions" else 0
        executions = [e for e in events if e.get("name") == "nc_exec_running"][:limit]
        events = [e for e in events if e.get("pid") == HOST["pid"] or e in executions]
    p = load(write_trace(tmp_path / f"{kept}.json", events))
    assert p.activities.height == {"host": 0, "host_and_two_executions": 2, "everything": 4}[kept]
    assert_frame_equal(p.findings, _general_findings(p))


def test_neff_executions_have_one_schema_with_and_without_neff_names(trace: Path, tmp_path: Path) -> None:
    events = orjson.loads(trace.read_bytes())["traceEvents"]
    for e in events:
        if e.get("name") == "nc_exec_running":
            e.setdefault("args", {})["model_name"] = "model.neff"
    named = load(write_trace(tmp_path / "named.json", events))
    assert named.neff_executions.height == 4 and named.neff_executions.schema == NEFF_EXECUTION_SCHEMA
    assert load(trace).neff_executions.schema == NEFF_EXECUTION_SCHEMA  # no NEFF named: the shortcut
    for e in events:  # a NEFF named only on a host event: the general path, with nothing to keep
        e.get("args", {}).pop("model_name", None)
        if e.get("name") == "aten::mul":
            e["args"]["model_name"] = "model.neff"
    host_named = load(write_trace(tmp_path / "host_named.json", events))
    assert_frame_equal(host_named.neff_executions, pl.DataFrame(schema=NEFF_EXECUTION_SCHEMA))


@pytest.mark.parametrize("source", shared_trace_files()[:6], ids=lambda p: p.name[:40])
def test_nesting_gives_each_op_its_events_columns(source: Path) -> None:
    """Profile.nesting joins the name and category, which the op tree no longer keeps, back from the events: every row holds its event's own values (read by idx in plain Python), in the documented column order, and key and user_annotation follow from them as torch names and marks ops."""
    profile = load(source)
    nest = profile.nesting
    assert nest.columns == [
        "idx", "pid", "tid", "ts", "end", "dur", "name", "cat", "input_dims", "thread", "first",
        "pos", "parent", "parent_idx", "depth", "last", "key", "user_annotation",
    ]  # fmt: skip
    own = ("pid", "tid", "ts", "end", "dur", "name", "cat", "input_dims")
    events = {row["idx"]: row for row in profile.events.select("idx", *own).iter_rows(named=True)}
    for row in nest.iter_rows(named=True):
        event = events[row["idx"]]
        assert {c: row[c] for c in own} == {c: event[c] for c in own}
        name = event["name"] or ""
        assert row["key"] == ("ProfilerStep*" if name.startswith("ProfilerStep#") else name)
        assert row["user_annotation"] == ((event["cat"] or "").lower() == "user_annotation")
    assert nest.height == len({r["idx"] for r in nest.iter_rows(named=True)}) > 0
