"""The analyzer on every real public trace (tests/data/kineto), checked against plain sums over the JSON."""

from __future__ import annotations

import gzip
import json
from collections import defaultdict
from pathlib import Path

import pytest

from ntrace import analyze, load
from ntrace.render import json as json_renderer

from helpers import REPO


def _plain_sums(path: Path) -> tuple[dict[str, int], dict[str, float]]:
    """Events and summed dur (µs) per category, straight from the JSON with the stdlib."""
    doc = json.loads(gzip.decompress(path.read_bytes()))
    events: dict[str, int] = defaultdict(int)
    total: dict[str, float] = defaultdict(float)
    for ev in doc["traceEvents"]:
        if ev.get("ph") == "X":
            cat = ev.get("cat") or ""
            events[cat] += 1
            total[cat] += float(ev.get("dur", 0))
    return events, total


def test_lane_totals_equal_plain_sums(shared_trace: Path) -> None:
    doc = json.loads(json_renderer.analysis(analyze(shared_trace)))
    assert doc["schema"] == "ntrace.analysis/1"
    (prof,) = doc["profiles"]
    events, total = _plain_sums(shared_trace)
    assert sum(lane["events"] for lane in prof["lanes"]) == prof["events"] == sum(events.values())
    seen: set[str] = set()
    for lane in prof["lanes"]:
        cats = lane["categories"]
        assert not seen & set(cats), "a category in two lanes"
        seen |= set(cats)
        assert lane["events"] == sum(events[c] for c in cats)
        expected = sum(total[c] for c in cats)
        assert lane["total_us"] == pytest.approx(expected, rel=1e-4, abs=0.01)
        assert lane["busy_us"] <= lane["total_us"] + 1e-6
        assert lane["busy_us"] <= prof["window_us"] + 1e-6
    assert seen == set(events)
    for track in prof["hardware_tracks"]:
        assert track["busy_us"] + track["idle_us"] == pytest.approx(track["span_us"], abs=0.002)
    idle = prof["gaps"]["hardware_idle"]
    assert idle["total_us"] == pytest.approx(sum(t["idle_us"] for t in prof["hardware_tracks"]), abs=0.01)
    assert idle["count"] == sum(t["gaps"] for t in prof["hardware_tracks"])
    for kind in ("hardware_idle", "launch_delay"):
        g = prof["gaps"][kind]
        if g["count"]:
            assert g["p50_us"] <= g["p90_us"] <= g["max_us"] <= g["total_us"] + 1e-6


def test_gpu_traces_have_hardware_and_links(shared_trace: Path) -> None:
    events, _ = _plain_sums(shared_trace)
    prof = load(shared_trace)
    lanes = {r["lane"]: r for r in prof.lanes.iter_rows(named=True)}
    assert lanes["hardware"]["events"] == events.get("kernel", 0)
    if events.get("kernel"):
        # every kernel in these traces carries a correlation id written by Kineto on both sides
        assert prof.launch_delays.height > 0
        assert prof.launch_delays["delay"].min() >= 0
    else:
        assert prof.hardware_tracks.is_empty() and prof.gaps["count"].to_list() == [0, 0]


@pytest.mark.slow
def test_cpu_trace_script_captures_a_real_trace_ntrace_reads(tmp_path: Path) -> None:
    """scripts/cpu_trace.py (real Kineto traces of any size for the benchmarks): one step, written by torch, analyzed cleanly."""
    import subprocess
    import sys

    out = tmp_path / "real.pt.trace.json"
    proc = subprocess.run([sys.executable, str(REPO / "scripts" / "cpu_trace.py"), str(out), "--steps", "1"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    profile = load(out)
    assert not profile.trace.warnings
    assert profile.steps["name"].to_list() == ["ProfilerStep#0"]
    lanes = dict(zip(profile.lanes["lane"], profile.lanes["events"]))
    assert lanes["framework"] > 1000 and lanes["hardware"] == 0
    assert "aten::linear" in profile.ops["name"].to_list()
