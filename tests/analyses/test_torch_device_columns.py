"""The device columns of the op table against torch's own Python aggregation, on the real GPU traces (no GPU needed).

torch computes key_averages() in two stages: C++ links each device activity to the op whose
correlation id was on top of the thread's op stack when its runtime call ran (that needs a live
profiler), then Python (profiler._parse_kineto_results, profiler_util.EventList) appends each
activity to that op with `append_kernel`, builds the tree, folds same-name only children and
sums. Here the first stage is the oracle's (tests/oracle, written from docs/definitions.md) and the
second is torch's own code, run on FunctionEvents made from the trace as _parse_kineto_results
makes them: every calls, self/total CPU and self/total device figure must equal ntrace's.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from helpers import shared_trace_files
from ntrace import load
from ntrace.analyses.ops import UNLINKED
from oracle import compute, is_device_activity, is_tree_event, load_trace_events, read_events

torch = pytest.importorskip("torch")
from torch.autograd import DeviceType  # noqa: E402
from torch.autograd.profiler_util import EventList, FunctionEvent  # noqa: E402

GPU_TRACES = [p for p in shared_trace_files() if not p.name.startswith("cpu_only")]


def torch_table(path: Path) -> dict[tuple[str, bool, str], dict[str, int]]:
    """key_averages() of the trace by torch's EventList, the device links from the oracle: (name, user annotation, device type) → figures in ns."""
    events, _ = read_events(load_trace_events(path))
    launchers = compute(path)["launchers"]
    t0 = min(e.ts for e in events)
    threads: dict[tuple[str, str], int] = {}
    function_events: dict[int, FunctionEvent] = {}
    for e in events:
        if not is_tree_event(e):
            continue
        function_events[e.idx] = FunctionEvent(
            id=e.idx, name="ProfilerStep*" if e.name.startswith("ProfilerStep#") else e.name, thread=threads.setdefault(e.thread, len(threads)),
            start_us=(e.ts - t0) / 1000, end_us=(e.end - t0) / 1000, use_device="cuda", is_user_annotation=e.catl == "user_annotation", stack=[],
        )  # fmt: skip
    device = []
    for e in events:
        if not is_device_activity(e):
            continue
        device.append(FunctionEvent(id=e.idx, name=e.name, thread=0, start_us=(e.ts - t0) / 1000, end_us=(e.end - t0) / 1000, use_device="cuda", device_type=DeviceType.CUDA, stack=[]))
        if e.idx in launchers:
            function_events[launchers[e.idx]].append_kernel(e.name, 0, e.dur / 1000)
    table = EventList([*function_events.values(), *device], use_device="cuda")
    table._build_tree()
    return {
        (a.key, a.is_user_annotation, str(a.device_type)): {
            "calls": a.count,
            "self_cpu": round(a.self_cpu_time_total * 1000),
            "cpu_total": round(a.cpu_time_total * 1000),
            "self_device": round(a.self_device_time_total * 1000),
            "device_total": round(a.device_time_total * 1000),
        }
        for a in table.key_averages()
    }


@pytest.mark.parametrize("path", GPU_TRACES, ids=lambda p: p.name.split("__")[0])
def test_device_columns_equal_torch(path: Path) -> None:
    theirs = torch_table(path)
    profile = load(path)
    cpu = {k: v for k, v in theirs.items() if k[2] == "DeviceType.CPU"}
    ours = {(r["name"], r["user_annotation"], "DeviceType.CPU"): {k: r[k] for k in ("calls", "self_cpu", "cpu_total", "self_device", "device_total")}
            for r in profile.ops.iter_rows(named=True) if r["name"] != UNLINKED}  # fmt: skip
    assert ours == cpu
    assert any(v["self_device"] for v in cpu.values()) or not profile.attribution["op_idx"].is_not_null().any()
    # torch's rows for the device activities: ntrace's kernel table; their sum is torch's device footer
    kernels = {(k[0]): (v["calls"], v["device_total"]) for k, v in theirs.items() if k[2] == "DeviceType.CUDA"}
    assert kernels == {r["name"]: (r["calls"], r["total"]) for r in profile.kernels.iter_rows(named=True)}
    assert sum(total for _, total in kernels.values()) == profile.device_ns
