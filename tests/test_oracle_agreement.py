"""ntrace against the independent oracle (tests/oracle, plain Python over exact integers, written from docs/definitions.md without ntrace's code): every figure equal, 0 ns apart.

On every vendored real trace, the RMSNorm fixtures, a CPU capture made here with torch, hand-built
traces with the shapes that broke the first round (partial overlaps, equal starts, ns timestamps
near 1.7e15 µs, two devices) and random traces drawn by hypothesis.
"""

from __future__ import annotations

import random
from decimal import Decimal
from pathlib import Path
from typing import Any

import polars as pl
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ntrace.analyses.intervals as intervals_module
import ntrace.exprs as exprs_module
from helpers import REPO, shared_trace_files
from ntrace import Part, load
from ntrace.analyses.ops import op_rows
from ntrace.analyses.opview import OpView
from ntrace.analyses.steps import HOST_LANES
from ntrace.workflows.compare import variant_row
from oracle import UNLINKED_ROW, compact_json, compute, compute_from_events, cut_events, load_trace_events, read_events

FIXTURES = sorted((REPO / "fixtures").rglob("trace.json"))
#: 1712195495505582.988 µs: Kineto's ns-resolution timestamps, where a float64 of µs is 0.25 µs coarse.
EPOCH = Decimal("1712195495505582.988")


def agree(path: Path, group_by_shape: bool = False, part: Part | None = None) -> dict[str, Any]:
    """Assert every figure ntrace computes for the trace at `path` (only its `part`, when given) equals the oracle's on the events it cuts alike; returns the oracle's result."""
    if part is None:
        want = compute(path, group_by_shape=group_by_shape)
    else:
        want = compute_from_events(cut_events(load_trace_events(path), window=part.window, steps=part.steps), group_by_shape=group_by_shape)
    profile = load(path, part=part)
    summary = profile.summary()
    assert profile.complete_count == want["events"]
    if want["events"]:
        assert profile.window == want["window"]
    lanes = {r["lane"]: {k: r[k] for k in ("events", "total", "busy")} for r in profile.lanes.iter_rows(named=True)}
    assert lanes == want["lanes"]
    tracks = {(r["lane"], r["track"]): {k: r[k] for k in ("events", "total", "busy", "span", "idle", "gaps")} for r in profile.tracks.iter_rows(named=True)}
    assert tracks == want["tracks"]
    assert sorted(profile.hardware_idle.select("track", "gap_start", "gap_end").rows()) == want["hardware_idle_gaps"]
    gaps = {r["kind"]: r for r in profile.gaps.iter_rows(named=True)}
    idle = want["hardware_idle"]
    assert {k: gaps["hardware_idle"][k] for k in ("count", "total", "p50", "p90", "max")} == {k: idle[k] for k in ("count", "total", "p50", "p90", "max")}
    assert gaps["hardware_idle"]["share"] == (idle["idle"] / idle["span"] if idle["span"] else 0.0)
    for kind in ("launch_latency", "queue_delay"):
        assert {k: gaps[kind][k] for k in ("count", "total", "p50", "p90", "max")} == want[kind], kind
        assert gaps[kind]["share"] is None
    assert dict(profile.links.select("exec_idx", "call_idx").iter_rows()) == want["links"]
    assert dict(profile.nesting.select("idx", "parent_idx").iter_rows()) == want["parents"]
    assert dict(profile.attribution.drop_nulls("op_idx").select("idx", "op_idx").iter_rows()) == want["launchers"]
    # the op table, by torch's keys, and its footers
    view = OpView(group_by_shape=group_by_shape)
    table = profile.op_table(view)
    keys = ["name", "user_annotation", *(["input_dims"] if group_by_shape else [])]
    sums = ("calls", "self_cpu", "cpu_total", "self_device", "device_total")
    ops = {tuple(r[k] for k in keys): {k: r[k] for k in sums} for r in table.iter_rows(named=True) if r["name"] != UNLINKED_ROW}
    assert ops == want["ops"]
    assert list(ops) == list(want["ops"])  # and in torch's default order: self CPU, then name
    unlinked = table.filter(pl.col("name") == UNLINKED_ROW)
    assert (unlinked["calls"].sum(), unlinked["self_device"].sum()) == (want["unlinked"]["calls"], want["unlinked"]["total"])
    assert profile.self_cpu_ns == summary.self_cpu_ns == want["self_cpu_total"]
    assert profile.device_ns == summary.device_ns == want["device_total"]
    assert op_rows(profile.nesting, profile.attribution).filter(pl.col("self_cpu") < 0).height == want["negative_self"]
    kernels = {r["name"]: {k: r[k] for k in ("calls", "total", "min", "max", "streams")} for r in profile.kernels.iter_rows(named=True)}
    assert kernels == want["kernels"] and list(kernels) == list(want["kernels"])
    # steps: host columns over each CPU window, device columns by the step that launched the work
    steps = []
    devices = summary.step_devices.partition_by("step", as_dict=True)
    for r in summary.steps.iter_rows(named=True):
        per = devices.get((r["step"],), summary.step_devices.clear())
        steps.append(
            {
                "step": r["step"], "name": r["name"], "start": r["start"], "end": r["end"],
                "host_busy": {lane: r[f"{lane}_busy"] for lane in HOST_LANES},
                "devices": {d["device"]: {k: d[k] for k in ("events", "busy", "span", "idle")} for d in per.iter_rows(named=True)},
            }
        )  # fmt: skip
    expected_steps = [
        {**s, "host_busy": {lane: s["host_busy"][lane] for lane in HOST_LANES}, "devices": {f"device {pid}": d for pid, d in s["devices"].items()}}
        for s in want["steps"]
    ]
    assert steps == expected_steps
    assert all(s["host_busy"]["hardware"] == 0 for s in want["steps"])  # why the host columns leave the hardware lane out
    assert summary.outside_steps == (want["outside_steps"]["events"], want["outside_steps"]["total"])
    if not group_by_shape:  # compare's figures are over the rows by name
        row = variant_row("v", path, [summary])
        assert {k: row[k] for k in want["compare"]} == want["compare"]
    return want


@pytest.mark.parametrize("path", shared_trace_files(), ids=lambda p: p.name.split("__")[0])
def test_real_traces(path: Path) -> None:
    want = agree(path)
    assert want["events"] > 0


@pytest.mark.parametrize("path", shared_trace_files()[:3], ids=lambda p: p.name.split("__")[0])
def test_real_traces_by_shape(path: Path) -> None:
    agree(path, group_by_shape=True)


@pytest.mark.parametrize("path", [p for p in shared_trace_files() if p.name.startswith(("amd", "mtia_trace", "ns_resolution"))], ids=lambda p: p.name.split("__")[0])
def test_real_traces_with_every_group_by_hashed_on_the_streaming_engine(path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The group-bys into few groups (lanes, tracks, steps, op groups) run on Polars' streaming engine past exprs.STREAM_MIN rows, which no
    vendored trace reaches, and group_busy hashes only groups of RUN_MIN rows on average: with both set to 0, every figure is still the oracle's."""
    monkeypatch.setattr(exprs_module, "STREAM_MIN", 0)
    monkeypatch.setattr(intervals_module, "RUN_MIN", 0)
    agree(path, group_by_shape=True)
    events, _ = read_events(load_trace_events(path))
    want: dict[tuple[str, str], list[int]] = {}
    for e in events:  # per (lane, category as written, "" when missing): events and summed duration
        sums = want.setdefault((e.lane, e.cat if e.cat is not None else ""), [0, 0])
        sums[0] += 1
        sums[1] += e.dur
    got = {(r["lane"], r["category"]): [r["events"], r["total"]] for r in load(path).categories.iter_rows(named=True)}
    assert got == want


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: str(p.relative_to(REPO / "fixtures")).split("/")[0] + "/" + p.parts[-4])
def test_fixtures(path: Path) -> None:
    agree(path)


@pytest.fixture(scope="module")
def cpu_capture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A real CPU trace written by torch's profiler, with record_function ranges, steps and shapes."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    out = tmp_path_factory.mktemp("capture") / "trace.json"
    lin = torch.nn.Linear(32, 32)
    data = torch.randn(8, 32)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, schedule=schedule(wait=0, warmup=0, active=3), on_trace_ready=lambda p: p.export_chrome_trace(str(out))) as prof:
        for _ in range(3):
            with record_function("model"):
                lin(data).softmax(-1).sum().backward()
            prof.step()
    return out


def test_cpu_capture(cpu_capture: Path) -> None:
    want = agree(cpu_capture)
    assert want["steps"] and want["ops"]
    agree(cpu_capture, group_by_shape=True)


# --------------------------------------------------------------------------------------------
# hand-built traces: the shapes of the defects the issue found
# --------------------------------------------------------------------------------------------


def X(name: str, ts: Decimal | int, dur: Decimal | int, cat: str = "cpu_op", pid: Any = 1, tid: Any = 1, **args: Any) -> dict[str, Any]:
    """A complete event; ts and dur µs written exactly as given."""
    event = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        event["args"] = args
    return event


def write(path: Path, events: list[dict[str, Any]], **top: Any) -> Path:
    """A trace file with every number written as its exact decimal text."""
    path.write_text(compact_json({"traceEvents": events, **top}))
    return path


def at(us: str) -> Decimal:
    """A timestamp `us` µs after EPOCH (three decimals, so every ns is written)."""
    return EPOCH + Decimal(us)


def test_partial_overlap_of_an_async_collective(tmp_path: Path) -> None:
    """ProfilerStep#1, c10d::alltoall_base_ [100,200), hccl:all_to_all [150,850) and [400,1400): each collective a child of the step (torch's rule)."""
    events = [
        X("ProfilerStep#1", at("0"), 2000, "user_annotation"),
        X("c10d::alltoall_base_", at("100"), 100),
        X("hccl:all_to_all", at("150"), 700, "user_annotation"),
        X("hccl:all_to_all", at("400"), 1000, "user_annotation"),  # a second one, partly over the first: a call of its own, not folded into it
    ]
    want = agree(write(tmp_path / "t.json", events))
    ops = {k[0]: v for k, v in want["ops"].items()}
    assert ops["ProfilerStep*"]["self_cpu"] == 200_000 and ops["c10d::alltoall_base_"]["self_cpu"] == 100_000
    assert ops["hccl:all_to_all"]["calls"] == 2


def test_ns_timestamps_near_the_epoch(tmp_path: Path) -> None:
    """Spans that nest only to the ns: a float64 of µs moves each start by up to 125 ns and breaks them apart."""
    events = [
        X("aten::linear", at("0.001"), Decimal("10.000")),
        X("aten::addmm", at("0.002"), Decimal("9.998")),  # ends at exactly the same ns as its parent
        X("aten::copy_", at("0.125"), Decimal("0.126")),
        X("cudaLaunchKernel", at("0.130"), Decimal("0.003"), "cuda_runtime", correlation=5),
        X("gemm", at("12.001"), Decimal("0.999"), "kernel", pid=0, tid=7, correlation=5, device=0, stream=7),
        X("gemm", at("13.377"), Decimal("1.001"), "kernel", pid=0, tid=7, device=0, stream=7),
    ]
    want = agree(write(tmp_path / "t.json", events))
    assert want["parents"][1] == 0 and want["parents"][2] == 1 and want["hardware_idle"]["total"] == 377


def test_equal_starts_ties_and_zero_lengths(tmp_path: Path) -> None:
    events = [
        X("outer", at("0"), 100),
        X("same", at("0"), 100),  # equal to its parent: the first in the file is the parent
        X("inner", at("0"), 50),
        X("zero", at("50"), 0),
        X("after", at("50"), 25),
        X("zero_at_end", at("100"), 0),
        X("aten::sum", at("200"), 50),
        X("aten::sum", at("210"), 30),  # only child of its name: folded
        X("nrt_execute", at("215"), 5, "privateuse1_runtime", correlation=9),
        X("nc_exec_running", at("300"), 40, "kernel", pid=0, tid=0, correlation=9),
    ]
    want = agree(write(tmp_path / "t.json", events))
    assert want["folded_away"]


def test_two_devices_copies_and_flows(tmp_path: Path) -> None:
    events = [
        X("ProfilerStep#4", at("0"), 300, "user_annotation"),
        X("aten::to", at("5"), 40),
        X("aten::copy_", at("6"), 38),
        X("cudaMemcpyAsync", at("10"), 5, "cuda_runtime", correlation=1),
        X("Memcpy HtoD (Pinned -> Device)", at("20"), 30, "gpu_memcpy", pid=0, tid=7, correlation=1, bytes=1 << 20, device=0, stream=7),
        X("aten::mm", at("60"), 20),
        X("cudaLaunchKernel", at("62"), 4, "cuda_runtime"),
        {"ph": "s", "id": 77, "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 1, "ts": at("62")},
        {"ph": "f", "id": 77, "cat": "ac2g", "name": "ac2g", "pid": 1, "tid": 9, "ts": at("90"), "bp": "e"},
        X("gemm", at("90"), 25, "kernel", pid=1, tid=9, device=1, stream=9),
        X("aten::mul", at("100"), 20),
        X("cudaLaunchKernel", at("101"), 4, "cuda_runtime", correlation=3),
        X("mul", at("110"), 5, "kernel", pid=0, tid=7, correlation=3, device=0, stream=7),
        X("mul", at("500"), 5, "kernel", pid=0, tid=7, correlation=3, device=0, stream=7),  # a second activity of one call
        X("cudaMemsetAsync", at("350"), 3, "cuda_runtime", correlation=4),  # after the step: its work is outside every step
        X("Memset (Device)", at("360"), 2, "gpu_memset", pid=1, tid=9, correlation=4, device=1, stream=9),
    ]
    want = agree(write(tmp_path / "t.json", events))
    assert len(want["steps"][0]["devices"]) == 2 and want["outside_steps"]["events"] == 1


def test_siblings_overlapping_more_than_their_parent(tmp_path: Path) -> None:
    """torch's rule subtracts an overlap of two children twice: the parent's self CPU goes negative, ntrace equals torch and warns."""
    events = [X("parent", at("0"), 100), X("a", at("0"), 80), X("b", at("20"), 80)]
    path = write(tmp_path / "t.json", events)
    want = agree(path)
    assert want["ops"][("parent", False)]["self_cpu"] == -60_000 and want["negative_self"] == 1
    assert any("negative self CPU" in w for w in load(path).summary().warnings)


def test_mtia_mixed_category(tmp_path: Path) -> None:
    events = [
        X("aten::mm", at("0"), 50),
        X("runFunction", at("1"), 5, "mtia_runtime", correlation=1),
        X("dma_request", at("10"), 5, "mtia_ccp_events", pid=2, tid=0, correlation=1),
        X("fc-dtype_Float", at("20"), 10, "mtia_ccp_events", pid=2, tid=0, correlation=1),
        X("event_wait", at("40"), 30, "mtia_ccp_events", pid=2, tid=0, correlation=1),
        X("fc-dtype_Float", at("90"), 10, "mtia_ccp_events", pid=2, tid=0),
    ]
    want = agree(write(tmp_path / "t.json", events))
    assert want["lanes"]["hardware"]["events"] == 2 and want["compare"]["compute"] == 20_000 and want["device_total"] == 55_000


# --------------------------------------------------------------------------------------------
# random traces
# --------------------------------------------------------------------------------------------


def random_trace(seed: int, n: int) -> list[dict[str, Any]]:
    """A trace of n host spans on two threads (ops, annotations, steps, runtime calls; partial overlaps and ties) and the device work they launch on two devices."""
    rnd = random.Random(seed)
    events: list[dict[str, Any]] = []
    for step in range(rnd.randint(0, 3)):
        events.append(X(f"ProfilerStep#{step}", at(str(step * 200)), rnd.choice([150, 200, 250]), "user_annotation", tid=1))
    corr = 0
    for _ in range(n):
        tid = rnd.choice([1, 2])
        start = Decimal(rnd.randint(0, 600)) / rnd.choice([1, 1, 10, 1000])
        dur = Decimal(rnd.randint(0, 60)) / rnd.choice([1, 10, 1000])
        kind = rnd.random()
        if kind < 0.45:
            events.append(X(rnd.choice(["aten::mm", "aten::add", "aten::sum", "aten::copy_"]), at(str(start)), dur, tid=tid))
        elif kind < 0.6:
            events.append(X(rnd.choice(["outer", "hccl:all_reduce"]), at(str(start)), dur, "user_annotation", tid=tid))
        else:
            corr += 1
            events.append(X("cudaLaunchKernel", at(str(start)), dur / 10, "cuda_runtime", tid=tid, correlation=corr))
            for _ in range(rnd.choice([0, 1, 1, 2])):
                device = rnd.choice([0, 1])
                cat, name = rnd.choice([("kernel", "gemm"), ("kernel", "relu"), ("gpu_memcpy", "Memcpy HtoD"), ("gpu_memset", "Memset")])
                events.append(X(name, at(str(start + Decimal(rnd.randint(0, 80)))), Decimal(rnd.randint(0, 30)) / 10, cat, pid=device, tid=7 + device,
                                correlation=corr, device=device, stream=7 + device))  # fmt: skip
    rnd.shuffle(events)
    return events


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.integers(0, 2**32), st.integers(0, 80))
def test_random_traces(tmp_path: Path, seed: int, n: int) -> None:
    agree(write(tmp_path / f"r{seed}.json", random_trace(seed, n)))


def test_ends_beyond_int64_are_left_out(tmp_path: Path) -> None:
    """ts fits int64 ns but ts + dur does not: the event is left out (warned), on both decoders, never wrapped to a negative end."""
    events = [X("a", Decimal("9223372036854775.000"), 5), X("b", Decimal("9223372036854775.000"), Decimal("0.807")), X("c", 1, 2)]
    path = write(tmp_path / "t.json", events)
    want = agree(path)
    assert want["events"] == 2 and want["window"] == (1000, 9223372036854775807)
    for fast in (True, False):
        trace = load(path, fast=fast).trace
        assert trace.events["name"].to_list() == ["b", "c"] and (trace.events["end"] >= trace.events["ts"]).all()
        assert any("beyond what int64 ns hold" in w for w in trace.warnings)
