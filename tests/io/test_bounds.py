"""Sums that int64 ns cannot hold (ntrace.io.bounds): the events that would carry them are left out with a warning, never summed into a wrapped, negative figure.

The oracles below are plain Python over integers: which events the rule keeps, and the sums of
what is kept.
"""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from click.testing import CliRunner

from helpers import explorer_rows
from ntrace import load
from ntrace.cli import main

INT64_MAX = 2**63 - 1
#: Just under 2**62 ns, written in whole µs: two such durations fit int64, three do not.
LONG_US = 4611686018427387


def _write(path: Path, events: list[tuple[str, str, int, int, int, int]]) -> Path:
    """A Kineto trace of (name, cat, ts µs, dur µs, pid, tid) events; whole µs, so json writes every digit."""
    doc = {"traceEvents": [{"ph": "X", "name": n, "cat": c, "ts": ts, "dur": dur, "pid": pid, "tid": tid} for n, c, ts, dur, pid, tid in events]}
    path.write_text(json.dumps(doc))
    return path


def _kept_by_durations(durations: list[int]) -> list[int]:
    """Oracle: the positions kept when the longest go first (ties: the later in file order) until the rest sum within int64."""
    order = sorted(range(len(durations)), key=lambda i: (durations[i], i))
    kept, total = [], 0
    for i in order:
        total += durations[i]
        if total > INT64_MAX:
            break
        kept.append(i)
    return sorted(kept)


def test_durations_that_sum_past_int64_leave_the_longest_out(tmp_path: Path) -> None:
    events = [("a", "cpu_op", 0, LONG_US, 1, 1), ("b", "cpu_op", 0, LONG_US, 1, 1), ("c", "cpu_op", 0, LONG_US, 1, 1), ("d", "cpu_op", 1, 2, 1, 1)]
    profile = load(_write(tmp_path / "t.json", events))
    durations = [e[3] * 1000 for e in events]
    kept = _kept_by_durations(durations)
    assert sum(durations) > INT64_MAX and len(kept) < len(events)
    assert profile.events["name"].to_list() == [events[i][0] for i in kept]
    lanes = {r["lane"]: r["total"] for r in profile.lanes.iter_rows(named=True)}
    assert lanes["framework"] == sum(durations[i] for i in kept)
    assert [w for w in profile.trace.warnings if "int64" in w] == [
        f"{profile.trace.path}: {len(events) - len(kept)} complete events lie so far apart, or last so long, that their sums would pass what int64 ns hold; they were left out"
    ]


def test_events_centuries_apart_leave_the_far_ones_out(tmp_path: Path) -> None:
    """A kernel 285 years after the rest: the window times its tracks would pass int64, so it goes, and every figure is that of the rest."""
    events = [("a", "cpu_op", 0, 1, 1, 1), ("k", "kernel", 9_000_000_000_000_000, 1, 0, 7), ("c", "cpu_op", 10, 5, 1, 1)]
    profile = load(_write(tmp_path / "t.json", events))
    assert profile.events["name"].to_list() == ["a", "c"]
    assert profile.window == (0, 15_000)
    assert sum(1 for w in profile.trace.warnings if "1 complete events lie so far apart" in w) == 1


def test_real_scale_traces_are_read_whole(tmp_path: Path) -> None:
    """Two tracks days apart and durations of hours sum well within int64: nothing is left out, nothing warned."""
    day_us = 86_400_000_000
    events = [("a", "cpu_op", 0, 3 * 3_600_000_000, 1, 1), ("k", "kernel", 3 * day_us, 10, 0, 7), ("b", "cpu_op", 2 * day_us, 1, 1, 2)]
    profile = load(_write(tmp_path / "t.json", events))
    assert profile.events.height == 3 and not profile.trace.warnings


def _launched(path: Path, pairs: list[tuple[int, int, int, int]]) -> Path:
    """A CUDA-like trace of (call ts µs, call dur µs, kernel ts µs, kernel dur µs) pairs, each call linked to its kernel by correlation id."""
    events = []
    for i, (call_ts, call_dur, kernel_ts, kernel_dur) in enumerate(pairs):
        events.append({"ph": "X", "name": "cudaLaunchKernel", "cat": "cuda_runtime", "ts": call_ts, "dur": call_dur, "pid": 1, "tid": 1, "args": {"correlation": i + 1}})
        events.append({"ph": "X", "name": "k", "cat": "kernel", "ts": kernel_ts, "dur": kernel_dur, "pid": 0, "tid": 7, "args": {"correlation": i + 1}})
    path.write_text(json.dumps({"traceEvents": events}))
    return path


def test_a_long_capture_with_many_kernels_is_read_whole(tmp_path: Path) -> None:
    """48 hours and 60,000 launches: the window times one delay per kernel would pass int64, yet every real sum fits; nothing is left out, and the figures are the plain sums."""
    n, step = 60_000, 48 * 3_600_000_000 // 60_000
    pairs = [(i * step, 3, i * step + 5 + i % 7, 2) for i in range(n)]
    profile = load(_launched(tmp_path / "long.json", pairs))
    window_ns = (pairs[-1][2] + 2 - pairs[0][0]) * 1000
    assert window_ns * (2 + n) > INT64_MAX  # what the bound used to count: two tracks plus a delay per kernel
    assert profile.events.height == 2 * n and not profile.trace.warnings and not profile.analysis_warnings
    lanes = {r["lane"]: (r["events"], r["total"]) for r in profile.lanes.iter_rows(named=True)}
    assert lanes["runtime_api"] == (n, 3000 * n) and lanes["hardware"] == (n, 2000 * n)
    latency = profile.gaps.filter(pl.col("kind") == "launch_latency").row(0, named=True)
    assert (latency["count"], latency["total"], latency["max"]) == (n, sum((k - c) * 1000 for c, _, k, _ in pairs), 11_000)


def test_launch_delays_that_sum_past_int64_leave_the_longest_out(tmp_path: Path) -> None:
    """Three kernels each about 2**61.5 ns after their call: the window times the two tracks fits int64, the three delays do not; the longest goes (ties: the later), with a warning."""
    far = 3_200_000_000_000_000  # µs: 3.2e18 ns
    pairs = [(0, 1, far, 1), (1, 1, far + 1, 1), (2, 1, far + 5, 1)]
    profile = load(_launched(tmp_path / "far.json", pairs))
    assert profile.events.height == 6 and not profile.trace.warnings  # every event kept: the read-time bound holds
    delays = [(k - c) * 1000 for c, _, k, _ in pairs]
    kept = [delays[i] for i in _kept_by_durations(delays)]
    assert sum(delays) > INT64_MAX and len(kept) == 2
    assert sorted(profile.launch_delays["latency"].to_list()) == sorted(kept)
    latency = profile.gaps.filter(pl.col("kind") == "launch_latency").row(0, named=True)
    assert (latency["count"], latency["total"]) == (2, sum(kept))
    assert profile.analysis_warnings == (f"{profile.trace.path}: 1 launch delays are so long that their sums would pass what int64 ns hold; they were left out",)
    summary = profile.summary()
    assert summary.launch_latencies.sort().to_list() == sorted(kept) and summary.warnings[-1] == profile.analysis_warnings[0]
    assert profile.rank_summary().warnings == profile.analysis_warnings


def test_an_explorer_export_with_extreme_times_is_reported(tmp_path: Path) -> None:
    """The fuzzer's case: hardware and framework rows at the ends of int64 made `report` divide by a wrapped, negative span."""
    rows = explorer_rows()
    extreme = rows.head(2).with_columns(
        start_ts=pl.Series([0, -(2**63)], dtype=pl.Int64), end_ts=pl.Series([INT64_MAX, -1], dtype=pl.Int64),
        duration_ns=pl.lit(None, pl.Int64), trace_event_source=pl.Series(["neuron_hw", "framework"]),
    )  # fmt: skip
    path = tmp_path / "events.parquet"
    pl.concat([rows, extreme]).write_parquet(path)
    runner = CliRunner()
    report = runner.invoke(main, ["report", str(path), "-o", str(tmp_path / "r.html"), "-q"], catch_exceptions=False)
    assert report.exit_code == 0, report.output
    done = runner.invoke(main, ["analyze", str(path), "--format", "json"], catch_exceptions=False)
    assert done.exit_code == 0 and "their sums would pass what int64 ns hold" in done.output
    (profile,) = json.loads(done.stdout)["profiles"]
    assert all(lane["total_us"] >= 0 and lane["busy_us"] >= 0 for lane in profile["lanes"])
    kept = load(path)
    durations = kept.events.select("dur", pl.col("lane").cast(pl.String)).rows()
    for lane in kept.lanes.iter_rows(named=True):  # every lane total is the plain sum of the kept events' durations
        want = sum(d for d, name in durations if name == lane["lane"])
        assert lane["total"] == want and 0 <= want <= INT64_MAX


def test_allocator_records_whose_bytes_sum_past_int64_leave_the_largest_out(tmp_path: Path) -> None:
    """Three allocations of 5e18 bytes: each fits int64, any two of them do not; the largest two go (ties: the later), and the memory table sums the rest exactly."""
    sizes = [5 * 10**18, 10**6, 5 * 10**18, 5 * 10**18, -(10**6)]
    records = [
        {"ph": "i", "s": "t", "name": "[memory]", "pid": 1, "tid": 1, "ts": 10 + i, "args": {"Bytes": b, "Total Allocated": 0, "Total Reserved": 0, "Device Type": 0, "Device Id": -1}}
        for i, b in enumerate(sizes)
    ]
    path = tmp_path / "m.json"
    path.write_text(json.dumps({"traceEvents": [{"ph": "X", "name": "op", "cat": "cpu_op", "ts": 0, "dur": 100, "pid": 1, "tid": 1}, *records]}))
    profile = load(path)
    kept = [sizes[i] for i in _kept_by_durations([abs(b) for b in sizes])]  # the same rule, on |bytes|
    assert len(kept) == 3 and profile.memory_series["bytes"].to_list() == kept
    (device,) = profile.memory_devices.iter_rows(named=True)
    assert device["allocated_bytes"] == sum(b for b in kept if b > 0) and device["freed_bytes"] == -sum(b for b in kept if b < 0)
    assert any(w.endswith("2 allocator records move so many bytes that their sums would pass what int64 holds; they were left out") for w in profile.trace.warnings)
