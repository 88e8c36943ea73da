"""Perfetto / Chrome-trace export: valid JSON, lanes as named processes, flows and gaps kept, and ntrace re-reads it to the same totals."""

from __future__ import annotations

import gzip
import json
import random
from collections import Counter
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from helpers import write_trace, x
from ntrace import load
from ntrace.cli import main
from ntrace.render import perfetto
from ntrace.render.perfetto import GAP_CATEGORY, export_perfetto, overlap_levels, perfetto_json


def _small(path: Path) -> Path:
    """Two launches on one device with an idle gap, a memcpy, a second device, a name that needs escaping."""
    return write_trace(
        path,
        [
            x("ProfilerStep#1", "user_annotation", 0, 100, pid=7, tid=7),
            x('aten::mul "q"\\', "cpu_op", 1, 10, pid=7, tid=7, **{"External id": 1}),
            x("nrt_execute", "privateuse1_runtime", 2, 5, pid=7, tid=8, correlation=11, **{"External id": 1}),
            x("nc_exec_running", "kernel", 9.5, 3.25, pid=0, tid=0, correlation=11, stream=0, device=0),
            x("aten::add", "cpu_op", 20, 10, pid=7, tid=7),
            x("nrt_execute", "privateuse1_runtime", 21, 5, pid=7, tid=8, correlation=12),
            x("nc_exec_running", "kernel", 40.001, 2, pid=0, tid=0, correlation=12),
            x("Memcpy HtoD", "gpu_memcpy", 30, 1, pid=0, tid=1),
            x("nc_exec_running", "kernel", 50, 2, pid=1, tid=0),
        ],
    )


def _events(doc: dict) -> list[dict]:
    return doc["traceEvents"]


def test_structure(tmp_path: Path) -> None:
    profile = load(_small(tmp_path / "trace.json"))
    doc = json.loads(perfetto_json(profile))
    events = _events(doc)
    phases = Counter(e["ph"] for e in events)
    assert phases["X"] == profile.complete.height == 9
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert list(names.values()) == ["framework · pid 7", "device · pid 0", "runtime_api · pid 7", "hardware · device 0", "hardware · device 1"]
    threads = {(e["pid"], e["tid"]) for e in events if e["name"] == "thread_name"}
    assert {(e["pid"], e["tid"]) for e in events if e["ph"] == "X"} == threads  # every slice sits on a named thread
    # flows: one s/f pair per launch link, the end bound to the device slice's start
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert set(starts) == set(ends) and len(starts) == profile.links.height == 2
    assert all(e["bp"] == "e" for e in ends.values())
    assert sorted(e["ts"] for e in ends.values()) == [9.5, 40.001]
    # gaps: one async b/e pair per hardware idle gap, on the device's process
    gaps = [e for e in events if e.get("cat") == GAP_CATEGORY]
    assert Counter(e["ph"] for e in gaps) == {"b": 1, "e": 1}
    begin = next(e for e in gaps if e["ph"] == "b")
    assert begin["ts"] == 12.75 and begin["args"]["idle_us"] == 27.251
    assert names[begin["pid"]] == "hardware · device 0"
    escaped = next(e for e in events if e["ph"] == "X" and e["name"].startswith("aten::mul"))
    assert escaped["name"] == 'aten::mul "q"\\' and escaped["args"] == {"External id": 1}


def test_reread_gives_same_totals(tmp_path: Path) -> None:
    profile = load(_small(tmp_path / "trace.json"))
    again = load(export_perfetto(profile, tmp_path / "out.json"))
    assert again.lanes.equals(profile.lanes)
    assert again.gaps.equals(profile.gaps)
    assert again.window == profile.window
    assert again.steps.equals(profile.steps)
    assert again.hardware_tracks.select("busy", "idle", "gaps").equals(profile.hardware_tracks.select("busy", "idle", "gaps"))


def test_reread_real_traces(shared_trace: Path, tmp_path: Path) -> None:
    profile = load(shared_trace)
    again = load(export_perfetto(profile, tmp_path / "out.json"))
    assert again.lanes.equals(profile.lanes)
    assert again.gaps.equals(profile.gaps)
    assert again.links.height == profile.links.height
    assert again.hardware_tracks.select("busy", "idle", "gaps").equals(profile.hardware_tracks.select("busy", "idle", "gaps"))


def test_cli_export(tmp_path: Path) -> None:
    trace = _small(tmp_path / "trace.json")
    out = tmp_path / "sub.json"
    result = CliRunner().invoke(main, ["export", str(trace), "--perfetto", str(out)])
    assert result.exit_code == 0, result.output
    assert out.is_file() and str(out) in result.output
    assert "9 slices, 2 flows, 1 hardware idle gap;" in result.output  # plurals right
    assert load(out).lanes.equals(load(trace).lanes)
    assert not list(tmp_path.glob(".*.part"))


def test_cli_export_errors(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    write_trace(tmp_path / "a" / "trace.json", [x("k", "kernel", 0, 1)])
    write_trace(tmp_path / "a" / "other.pt.trace.json", [x("k", "kernel", 0, 1)])
    result = CliRunner().invoke(main, ["export", str(tmp_path / "a"), "--perfetto", str(tmp_path / "o.json")])
    assert result.exit_code == 2 and "holds 2 traces" in result.output
    result = CliRunner().invoke(main, ["export", str(tmp_path / "a" / "trace.json"), "--perfetto", str(tmp_path / "missing" / "o.json")])
    assert result.exit_code == 2 and "cannot be written" in result.output


def test_explorer_parquet_exports_too(tmp_path: Path) -> None:
    from helpers import explorer_rows

    path = tmp_path / "explorer.parquet"
    explorer_rows().write_parquet(path)
    profile = load(path)
    again = load(export_perfetto(profile, tmp_path / "out.json"))
    assert again.lanes.equals(profile.lanes) and again.gaps.equals(profile.gaps)


def _properly_nested(events: list[dict]) -> bool:
    """Whether the slices on each (pid, tid) nest: sorted by start then end descending, each starts after the top ends or ends within it (times as exact Decimals)."""
    by_thread: dict[tuple, list[tuple[Decimal, Decimal]]] = {}
    for e in events:
        if e["ph"] == "X":
            by_thread.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for slices in by_thread.values():
        stack: list[Decimal] = []
        for start, end in sorted(slices, key=lambda s: (s[0], -s[1])):
            while stack and stack[-1] <= start:
                stack.pop()
            if stack and end > stack[-1]:
                return False
            stack.append(end)
    return True


def _overlapping(path: Path) -> Path:
    """Two host slices that partly overlap on one thread, two device streams on one device, instants and a counter."""
    return write_trace(
        path,
        [
            x("a", "cpu_op", 0, 10, pid=7, tid=7, **{"Input Dims": [[2, 3]], "extra": "kept"}),
            x("b", "cpu_op", 5, 10, pid=7, tid=7),
            x("c", "cpu_op", 6, 2, pid=7, tid=7),
            x("k1", "kernel", 0, 10, pid=0, tid=1, stream=1),
            x("k2", "kernel", 5, 10, pid=0, tid=2, stream=2),
            {"ph": "i", "name": "mark", "cat": "instant", "pid": 7, "tid": 7, "ts": 3, "s": "t"},
            {"ph": "C", "name": "memory", "pid": 7, "tid": 7, "ts": 4, "args": {"bytes": 12}},
        ],
    )


def test_overlaps_move_to_overflow_threads(tmp_path: Path) -> None:
    profile = load(_overlapping(tmp_path / "trace.json"))
    events = _events(json.loads(perfetto_json(profile), parse_float=Decimal))
    assert _properly_nested(events)
    thread = {(e["pid"], e["tid"]): e["args"]["name"] for e in events if e["name"] == "thread_name"}
    where = {e["name"]: thread[(e["pid"], e["tid"])] for e in events if e["ph"] == "X"}
    assert where["a"] == where["c"] == "pid 7 tid 7" and where["b"] == "pid 7 tid 7 (overlap 1)"
    assert where["k1"] != where["k2"]  # one thread per device stream
    assert next(e for e in events if e["name"] == "a")["args"] == {"Input Dims": [[2, 3]], "extra": "kept"}
    assert [(e["ph"], e["name"]) for e in events if e["ph"] in "iIC"] == [("i", "mark"), ("C", "memory")]
    assert next(e for e in events if e["ph"] == "C")["args"] == {"bytes": 12}


def test_real_traces_nest_and_keep_args(shared_trace: Path) -> None:
    profile = load(shared_trace)
    events = _events(json.loads(perfetto_json(profile), parse_float=Decimal))
    assert _properly_nested(events)
    with gzip.open(shared_trace) as fh:
        source = json.load(fh, parse_float=Decimal)["traceEvents"]
    for ph in ("i", "I", "C"):
        assert sum(e["ph"] == ph for e in events) == sum(isinstance(e, dict) and e.get("ph") == ph for e in source)
    exported = [e for e in events if e["ph"] == "X"]
    inputs = [e for e in source if isinstance(e, dict) and e.get("ph") == "X"]
    assert len(exported) == len(inputs)
    for out, given in list(zip(sorted(exported, key=_key), sorted(inputs, key=_key)))[::97]:
        assert out["name"] == given["name"] and out.get("args", {}) == given.get("args", {})


def _key(e: dict) -> tuple:
    """A sort key that pairs an exported slice with its source: start, duration, name, args."""
    return (float(e["ts"]), float(e.get("dur", 0)), e["name"], json.dumps(e.get("args", {}), sort_keys=True, default=str))


def test_gzip_output_rereads(tmp_path: Path) -> None:
    profile = load(_small(tmp_path / "trace.json"))
    out = export_perfetto(profile, tmp_path / "out.json.gz")
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    again = load(out)
    assert again.lanes.equals(profile.lanes) and again.gaps.equals(profile.gaps)
    assert not list(tmp_path.glob(".*.part"))


def test_parts_change_nothing_and_gzip_streams_as_gzip_compress_writes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The document made _CHUNK events at a time (and the overlap walk fed as many values at a time) is the one made whole; gzipped as it is written, it is what gzip.compress(mtime=0) makes of it."""
    profile = load(_overlapping(tmp_path / "trace.json"))
    whole = perfetto_json(profile)
    monkeypatch.setattr(perfetto, "_CHUNK", 2)
    assert perfetto_json(load(_overlapping(tmp_path / "trace.json"))) == whole
    out = export_perfetto(profile, tmp_path / "out.json.gz")
    assert out.read_bytes() == gzip.compress(whole, mtime=0)
    assert export_perfetto(profile, tmp_path / "out.json").read_bytes() == whole


def test_overlap_levels_equal_a_walk_over_whole_lists() -> None:
    """Levels computed over values fed a few at a time equal a plain walk over whole lists (Perfetto's nesting rule), group by group."""
    rng = random.Random(5)
    rows = sorted(((rng.randrange(3), rng.randrange(50)) for _ in range(400)))
    rows = [(g, ts, ts + rng.randrange(0, 20)) for g, ts in rows]
    rows.sort(key=lambda r: (r[0], r[1], -r[2]))
    expected, stacks, previous = [], [], None
    for g, start, stop in rows:
        if g != previous:
            stacks, previous = [], g
        level = 0
        while True:
            if level == len(stacks):
                stacks.append([])
            stack = [s for s in stacks[level] if s > start]
            if not stack or stop <= stack[-1]:
                stacks[level] = [*stack, stop]
                expected.append(level)
                break
            stacks[level] = stack
            level += 1
    columns = [pl.Series([r[i] for r in rows], dtype=pl.Int64) for i in range(3)]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(perfetto, "_CHUNK", 7)
        assert overlap_levels(*columns) == expected


def test_gaps_and_flows_are_written_in_their_frames_order(tmp_path: Path) -> None:
    """Idle gaps numbered and written in the order of the profile's hardware_idle rows, each on its device's process, and flows in the order of its links:
    the same file on every run (an inner join keeps no order of its own, and its hash seeds change from run to run)."""
    events = []
    # twelve devices, of which the last four idle between two kernels each: fewer gaps than devices
    for k, device in enumerate([*range(12), 11, 10, 9, 8]):
        t = 10 * k
        events += [
            x("cudaLaunchKernel", "cuda_runtime", t, 1, pid=7, tid=8, correlation=k + 1),
            x(f"kernel_{k}", "kernel", t + 2, 3, pid=device, tid=0, correlation=k + 1),
        ]
    profile = load(write_trace(tmp_path / "many.json", events))
    doc = json.loads(perfetto_json(profile))
    lines = _events(doc)
    names = {e["pid"]: e["args"]["name"] for e in lines if e["name"] == "process_name"}
    begins = [e for e in lines if e.get("cat") == GAP_CATEGORY and e["ph"] == "b"]
    idle = profile.hardware_idle
    assert len(begins) == idle.height == 4
    assert [e["id"] for e in begins] == list(range(1, idle.height + 1))
    assert [(names[e["pid"]].removeprefix("hardware · "), Decimal(str(e["ts"]))) for e in begins] == [
        (track, Decimal(ns) / 1000) for track, ns in idle.select("track", "gap_start").iter_rows()
    ]
    starts = [e for e in lines if e["ph"] == "s"]
    assert [e["id"] for e in starts] == list(range(1, profile.links.height + 1))
