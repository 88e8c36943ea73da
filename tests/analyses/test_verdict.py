"""The report's verdict (docs/definitions.md §11) against the oracle's integers on hand-made traces of each class, the fixtures and the real traces."""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import REPO, shared_trace_files, write_trace, x
from ntrace import load
from ntrace.analyses.verdict import verdict
from oracle import compute
from oracle.verdict import verdict as oracle_verdict

FIXTURES = sorted((REPO / "fixtures").rglob("trace.json"))
SMALL = [p for p in shared_trace_files() if p.stat().st_size < 1_000_000]
LARGE = [p for p in shared_trace_files() if p.stat().st_size >= 1_000_000]


def _agree(path: Path) -> str:
    summary = load(path).summary()
    got = verdict(summary.tracks, summary.idle_gaps, summary.kernels)
    want = oracle_verdict(compute(path))
    assert {k: getattr(got, k) for k in want} == want
    assert got.kind in got.line
    return got.kind


def _kernels(tmp_path: Path, starts_durs: list[tuple[float, float]]) -> Path:
    return write_trace(tmp_path / "t.json", [x(f"k{i}", "kernel", ts, dur, pid=0, tid=7) for i, (ts, dur) in enumerate(starts_durs)] + [x("aten::mm", "cpu_op", 0, 1)])


@pytest.mark.parametrize(
    ("spans", "kind"),
    [
        ([(0, 10), (11, 10), (22, 10)], "device-bound"),  # idle 2 of 32
        ([(0, 10), (20, 10), (40, 10), (60, 10)], "launch-bound"),  # idle 30 of 70 in 10 µs gaps
        ([(0, 10), (3000, 10)], "host-bound"),  # one 2.99 ms gap
        ([(0, 10), (10, 10)], "device-bound"),  # no gap
    ],
)
def test_each_class(tmp_path: Path, spans: list[tuple[float, float]], kind: str) -> None:
    assert _agree(_kernels(tmp_path, spans)) == kind


def test_thresholds_are_inclusive_as_defined(tmp_path: Path) -> None:
    # idle exactly 25 % of the span is not device-bound; long idle exactly half the idle is host-bound
    assert _agree(_kernels(tmp_path, [(0, 30), (40, 0)])) == "launch-bound"  # idle 10 of 40
    starts, t = [], 0
    for gap in [1001] + [91] * 11:  # long idle 1001 µs = half of the 2002 µs idle
        starts.append((t, 1))
        t += 1 + gap
    assert _agree(_kernels(tmp_path, [*starts, (t, 1)])) == "host-bound"


def test_no_device(tmp_path: Path) -> None:
    assert _agree(write_trace(tmp_path / "t.json", [x("aten::mm", "cpu_op", 0, 5)])) == "no-device"


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.parent.name)
def test_fixtures(path: Path) -> None:
    _agree(path)


@pytest.mark.parametrize("path", SMALL, ids=lambda p: p.name.split("__")[0])
def test_small_real_traces(path: Path) -> None:
    _agree(path)


@pytest.mark.slow
@pytest.mark.parametrize("path", LARGE, ids=lambda p: p.name.split("__")[0])
def test_large_real_traces(path: Path) -> None:
    _agree(path)
