"""The analyzer on every real public trace (tests/data/kineto), checked against plain sums over the JSON."""

from __future__ import annotations

import gzip
import json
from decimal import ROUND_HALF_EVEN, Decimal
from collections import defaultdict
from pathlib import Path

import pytest

from ntrace import analyze, load
from ntrace.render import json as json_renderer

from helpers import REPO
from oracle import lane_of


def _ns(value: object) -> int:
    """A JSON number of µs read as Decimal, to int ns (half to even)."""
    return int((Decimal(str(value)) * 1000).to_integral_value(ROUND_HALF_EVEN))


#: Categories whose events ntrace splits over two lanes by name (docs/definitions.md, the name rules).
MIXED = {"mtia_ccp_events"}


def _plain_sums(path: Path) -> tuple[dict[str, int], dict[str, int], dict[str, int]]:
    """Events and summed dur (ns, exact) per category, and events per lane (by the oracle's table), straight from the JSON with the stdlib."""
    doc = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)
    events: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    lanes: dict[str, int] = defaultdict(int)
    for ev in doc["traceEvents"]:
        if ev.get("ph") == "X":
            cat = ev.get("cat") or ""
            events[cat] += 1
            total[cat] += _ns(ev.get("dur", 0))
            lanes[lane_of(ev.get("cat"), ev.get("name"))[0]] += 1
    return events, total, lanes


def test_lane_totals_equal_plain_sums(shared_trace: Path) -> None:
    doc = json.loads(json_renderer.analysis(analyze(shared_trace)), parse_float=Decimal)
    assert doc["schema"] == "ntrace.analysis/3"
    (prof,) = doc["profiles"]
    events, total, per_lane = _plain_sums(shared_trace)
    assert sum(lane["events"] for lane in prof["lanes"]) == prof["events"] == sum(events.values())
    seen: set[str] = set()
    mixed: dict[str, int] = defaultdict(int)
    for lane in prof["lanes"]:
        cats = lane["categories"]
        assert not (seen & set(cats)) - MIXED, "a category in two lanes"
        seen |= set(cats)
        assert lane["events"] == per_lane.get(lane["lane"], 0)
        for cat, n in cats.items():
            mixed[cat] += n
        if not set(cats) & MIXED:
            assert lane["events"] == sum(events[c] for c in cats)
            assert _ns(lane["total_us"]) == sum(total[c] for c in cats)
        assert lane["busy_us"] <= lane["total_us"]
        assert lane["busy_us"] <= prof["window_us"]
    assert dict(mixed) == {c: n for c, n in events.items() if n}  # every event of every category in some lane
    assert seen == set(events)
    for track in prof["hardware_tracks"]:
        assert track["busy_us"] + track["idle_us"] == track["span_us"]
    idle = prof["gaps"]["hardware_idle"]
    assert idle["total_us"] == sum(t["idle_us"] for t in prof["hardware_tracks"])
    assert idle["count"] == sum(t["gaps"] for t in prof["hardware_tracks"])
    for kind in ("hardware_idle", "launch_latency", "queue_delay"):
        g = prof["gaps"][kind]
        if g["count"]:
            assert g["p50_us"] <= g["p90_us"] <= g["max_us"] <= g["total_us"]


def test_gpu_traces_have_hardware_and_links(shared_trace: Path) -> None:
    _, _, per_lane = _plain_sums(shared_trace)
    prof = load(shared_trace)
    lanes = {r["lane"]: r for r in prof.lanes.iter_rows(named=True)}
    assert lanes["hardware"]["events"] == per_lane.get("hardware", 0)
    if per_lane.get("hardware"):
        # device work in these traces carries a correlation id or a flow written by Kineto on both sides
        assert prof.launch_delays.height > 0
        assert prof.launch_delays["queue"].min() >= 0
        assert (prof.launch_delays["latency"] >= prof.launch_delays["queue"]).all()
    else:
        assert prof.hardware_tracks.is_empty() and prof.gaps["count"].to_list() == [0, 0, 0]


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
