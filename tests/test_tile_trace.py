"""scripts/tile_trace.py on the real traces, checked in plain Python over exact integer ns.

The oracle parses input and output with parse_float=Decimal and never uses a float: copy k must be
the input's non-metadata events shifted by k x period and with ids offset by k x (max + 1).
More real traces (e.g. the MTIA or ns-resolution ones from HolisticTraceAnalysis) can be added by
pointing NTRACE_EXTRA_TRACES at a folder of *.json.gz.
"""

from __future__ import annotations

import collections
import copy
import gzip
import json
import os
import re
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import pytest

from helpers import REAL_TRACES as SHARED_TRACES, REPO, shared_trace_files

SCRIPT = REPO / "scripts" / "tile_trace.py"
COPIES = 3
ID_ARGS = {  # arg -> id group (members of a group share one offset)
    "correlation": "correlation",
    "wait_on_cuda_event_record_corr_id": "correlation",
    "External id": "External id",
    "Sequence number": "Sequence number",
    "Python id": "Python id",
    "Python parent id": "Python id",
}
STEP = re.compile(r"ProfilerStep#(\d+)\Z")


def extra_traces() -> list[Path]:
    d = os.environ.get("NTRACE_EXTRA_TRACES")
    return sorted(p for p in Path(d).glob("*.json.gz") if p.stat().st_size) if d and Path(d).is_dir() else []


TRACES = shared_trace_files() + extra_traces()


def run(*args: object) -> str:
    r = subprocess.run([sys.executable, str(SCRIPT), *map(str, args)], capture_output=True, text=True, check=True)
    return r.stdout


def load(path: Path):
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        raw = gzip.decompress(raw)
    return json.loads(raw, parse_float=Decimal)


def ns(v) -> int:
    """Exact integer ns of a µs value written as an integer or decimal text."""
    assert isinstance(v, (int, Decimal)) and not isinstance(v, bool), v
    n = Decimal(v) * 1000
    assert n == n.to_integral_value(), v
    return int(n)


def is_id(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and v >= 0


def id_maxes(events) -> dict[str, int]:
    m = collections.defaultdict(lambda: -1)
    for e in events:
        for k, g in ID_ARGS.items():
            v = (e.get("args") or {}).get(k)
            if is_id(v):
                m[g] = max(m[g], v)
        if e.get("ph") in ("s", "f", "t", "b", "n", "e") and is_id(e.get("id")):
            m["flow id"] = max(m["flow id"], e["id"])
    return m


def step_numbers(events) -> list[int]:
    return [int(m.group(1)) for e in events if isinstance(e.get("name"), str) and (m := STEP.match(e["name"]))]


def expected_copy(e: dict, k: int, period: int, maxes, nsteps: int) -> dict:
    """The input event e as copy k must be (ts as int ns)."""
    e = copy.deepcopy(e)
    e["ts"] = ns(e["ts"]) + k * period
    if "args" in e:
        for a, g in ID_ARGS.items():
            if is_id(e["args"].get(a)):
                e["args"][a] += k * (maxes[g] + 1)
    if e.get("ph") in ("s", "f", "t", "b", "n", "e") and is_id(e.get("id")):
        e["id"] += k * (maxes["flow id"] + 1)
    if isinstance(e.get("name"), str) and (m := STEP.match(e["name"])):
        e["name"] = f"ProfilerStep#{int(m.group(1)) + k * nsteps}"
    return e


def depth_histogram(events) -> collections.Counter:
    """Nesting depth of complete events per (pid, tid) lane: a stack over (start, -dur, order)."""
    lanes = collections.defaultdict(list)
    for i, e in enumerate(events):
        if e.get("ph") == "X" and "dur" in e:
            s = ns(e["ts"])
            lanes[(str(e["pid"]), str(e["tid"]))].append((s, -ns(e["dur"]), i, s + ns(e["dur"])))
    hist = collections.Counter()
    for spans in lanes.values():
        stack: list[int] = []
        for s, _, _, end in sorted(spans):
            while stack and stack[-1] <= s:
                stack.pop()
            hist[len(stack)] += 1
            stack.append(end)
    return hist


def cat_totals(events):
    count, total = collections.Counter(), collections.Counter()
    for e in events:
        if e.get("ph") == "X":
            count[e.get("cat")] += 1
            total[e.get("cat")] += ns(e["dur"]) if "dur" in e else 0
    return count, total


@pytest.fixture(params=TRACES or [None], ids=lambda p: p.name.split("__")[0][:40] if p else "absent")
def real_trace(request) -> Path:
    if request.param is None:
        pytest.skip(f"{SHARED_TRACES} is absent")
    return request.param


def test_three_copies_are_exact(real_trace: Path, tmp_path: Path) -> None:
    out = tmp_path / "tiled.json"
    printed = run(real_trace, out, "--repeat", COPIES)
    src, doc = load(real_trace), load(out)
    if isinstance(src, list):
        src = {"traceEvents": src}
    events = src["traceEvents"]
    meta = [e for e in events if e.get("ph") == "M"]
    unit = [e for e in events if e.get("ph") != "M"]
    n = len(unit)

    # top-level keys once, with their values; metadata once, unchanged, ahead of the copies
    assert [k for k in doc if k != "ntrace_tile"] == list(src)
    for k in src:
        if k != "traceEvents":
            assert doc[k] == src[k], k
    got = doc["traceEvents"]
    assert got[: len(meta)] == meta
    assert len(got) == len(meta) + COPIES * n
    copies = [got[len(meta) + k * n: len(meta) + (k + 1) * n] for k in range(COPIES)]
    assert f"{COPIES} copies" in printed and f"{len(got):,} events" in printed

    # the period: whole µs, longer than the unit's span, so copies never overlap
    lo = min(ns(e["ts"]) for e in unit)
    hi = max(ns(e["ts"]) + (ns(e["dur"]) if e.get("ph") == "X" and "dur" in e else 0) for e in unit)
    period = ns(copies[1][0]["ts"]) - ns(copies[0][0]["ts"])
    assert period % 1000 == 0 and period > hi - lo
    assert doc["ntrace_tile"]["period_ns"] == period and doc["ntrace_tile"]["copies"] == COPIES

    maxes = id_maxes(unit)
    steps = step_numbers(unit)
    nsteps = max(steps) - min(steps) + 1 if steps else 0
    for k, block in enumerate(copies):
        for orig, e in zip(unit, block):
            want = expected_copy(orig, k, period, maxes, nsteps)
            have = dict(e, ts=ns(e["ts"]))
            assert have == want
            # decimal text stays decimal with three places; integer µs stay integers
            if isinstance(orig["ts"], int):
                assert isinstance(e["ts"], int)
            else:
                assert isinstance(e["ts"], Decimal) and e["ts"].as_tuple().exponent == -3
            if "dur" in orig:
                assert str(e["dur"]) == str(orig["dur"])
        # nothing in copy k reaches copy k+1
        if k + 1 < COPIES:
            end = max(ns(e["ts"]) + (ns(e["dur"]) if e.get("ph") == "X" and "dur" in e else 0) for e in block)
            assert end < min(ns(e["ts"]) for e in copies[k + 1])

    # category mix and exact duration sums: 3x
    c0, t0 = cat_totals(unit)
    c3, t3 = cat_totals([e for e in got if e.get("ph") != "M"])
    assert c3 == {c: COPIES * v for c, v in c0.items()}
    assert t3 == {c: COPIES * v for c, v in t0.items()}

    # no id shared between copies
    for group in ("correlation", "External id", "Sequence number", "Python id", "flow id"):
        seen: dict[int, int] = {}
        for k, block in enumerate(copies):
            for e in block:
                vals = [e["id"]] if group == "flow id" and e.get("ph") in ("s", "f", "t", "b", "n", "e") and is_id(e.get("id")) else []
                vals += [v for a, g in ID_ARGS.items() if g == group and is_id(v := (e.get("args") or {}).get(a))]
                for v in vals:
                    assert seen.setdefault(v, k) == k, (group, v)
    names = [step_numbers(c) for c in copies]
    assert len(set().union(*map(set, names))) == sum(len(set(s)) for s in names)

    # nesting depth per copy as in the input
    want = depth_histogram(unit)
    for block in copies:
        assert depth_histogram(block) == want


def test_gzip_output_equals_plain(tmp_path: Path) -> None:
    src = SHARED_TRACES / "critical_path__alexnet__benchmark_result_2869224_1695835535_trace.json.gz"
    if not src.exists():
        pytest.skip(f"{src} is absent")
    run(src, tmp_path / "a.json", "--repeat", 2)
    run(src, tmp_path / "a.json.gz", "--repeat", 2)
    raw = gzip.decompress((tmp_path / "a.json.gz").read_bytes())
    assert raw == (tmp_path / "a.json").read_bytes()
    json.loads(raw)


def test_size_target(tmp_path: Path) -> None:
    src = SHARED_TRACES / "nccl_parser_config__nccl_data.json.gz"
    if not src.exists():
        pytest.skip(f"{src} is absent")
    out = tmp_path / "big.json.gz"
    printed = run(src, out, "--size", "30MB")
    raw = gzip.decompress(out.read_bytes())
    doc = json.loads(raw)
    copies = doc["ntrace_tile"]["copies"]
    per_copy = len(raw) / copies
    assert abs(len(raw) - 30_000_000) <= per_copy / 2 + 1
    assert f"{len(raw):,} bytes" in printed and f"{copies} copies" in printed


def test_edge_cases(tmp_path: Path) -> None:
    """Hand-written text: '%' and non-ASCII in strings, NaN, integer µs, negative ids kept, a
    device ProfilerStep, two-decimal ts written with three, 'i' and flow events."""
    text = """{"schemaVersion": 1, "traceEvents": [
 {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#7", "pid": 1, "tid": 1, "ts": 10.5, "dur": 100,
  "args": {"External id": 3, "note": "50% \u00b5s \u2603"}},
 {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 20, "dur": 5.25,
  "args": {"External id": 4, "Sequence number": -1, "correlation": 0, "x": NaN, "big": 1e400}},
 {"ph": "s", "id": 9, "pid": 1, "tid": 1, "ts": 21, "cat": "ac2g", "name": "ac2g"},
 {"ph": "f", "id": 9, "pid": 0, "tid": 7, "ts": 30.001, "cat": "ac2g", "name": "ac2g", "bp": "e"},
 {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 30.001, "dur": 2,
  "args": {"External id": 4, "correlation": 9}},
 {"ph": "X", "cat": "gpu_user_annotation", "name": "ProfilerStep#8", "pid": 0, "tid": 8, "ts": 29, "dur": 90},
 {"ph": "i", "s": "g", "name": "Record Window End", "pid": "", "tid": "", "ts": 200},
 {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "ts": 0, "args": {"name": "p"}},
 {"ph": "X", "cat": "cpu_op", "name": "early", "pid": 2, "tid": 2, "ts": -100.25, "dur": 1}
], "traceName": "x"}"""
    src = tmp_path / "edge.json"
    src.write_text(text, encoding="utf-8")
    out = tmp_path / "out.json"
    run(src, out, "--repeat", 3)
    raw = out.read_text(encoding="utf-8")
    assert "NaN" in raw and "1E+400" in raw
    doc = json.loads(raw, parse_float=Decimal, parse_constant=str)
    ev = doc["traceEvents"]
    assert ev[0]["ph"] == "M" and len(ev) == 1 + 3 * 8
    period = doc["ntrace_tile"]["period_ns"]
    assert period == 302_000  # span -100.25 .. 200 µs = 300.25 µs, + 1 µs gap, rounded up to whole µs
    P = 302
    c1, c2 = ev[1 + 8: 1 + 16], ev[1 + 16:]
    assert c1[7]["ts"] == Decimal("201.75") and c2[7]["ts"] == Decimal("503.75")  # from -100.25: exact ns, e-3
    assert "-100250e-3" in raw and "201750e-3" in raw
    assert c2[0]["name"] == "ProfilerStep#11" and c2[5]["name"] == "ProfilerStep#12"
    assert c2[0]["ts"] == Decimal("614.5") and str(c2[0]["ts"]) == "614.500"
    assert c2[0]["args"] == {"External id": 3 + 2 * 5, "note": "50% \u00b5s \u2603"}
    assert c2[1]["ts"] == 20 + 2 * P and isinstance(c2[1]["ts"], int) and str(c2[1]["dur"]) == "5.25"
    assert c2[1]["args"]["Sequence number"] == -1 and c2[1]["args"]["correlation"] == 2 * 10
    assert c2[2]["id"] == c2[3]["id"] == 9 + 2 * 10 == c2[4]["args"]["correlation"]
    assert str(c2[3]["ts"]) == "634.001"
    assert c2[6]["ts"] == 200 + 2 * P
