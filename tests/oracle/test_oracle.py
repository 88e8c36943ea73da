"""Tests of the oracle itself: hand-checked tiny traces (expected integers worked out by hand
from docs/definitions.md), agreement with torch's own key_averages(), and invariants on the
real public traces. Nothing here imports ntrace."""

from __future__ import annotations

import gzip
import json
import os
from decimal import Decimal
from pathlib import Path

import pytest

from . import compact_json, compute, nearest_rank, parse_ns, stats

D = Decimal


# ---------------------------------------------------------------------------------------------
# helpers for hand-made traces
# ---------------------------------------------------------------------------------------------


def X(name, ts, dur, cat="cpu_op", pid=1, tid=1, **args):
    """A complete event; ts/dur in µs (int, Decimal or str are written as they are)."""
    ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        ev["args"] = {k.replace("_", " "): v for k, v in args.items()}
    return ev


def write(tmp_path: Path, events, *, gz=False, bare=False, name="t.json") -> Path:
    """Write a trace with numbers exactly as given (Decimal written as its text)."""
    text = compact_json(events if bare else {"traceEvents": events})
    p = tmp_path / (name + (".gz" if gz else ""))
    p.write_bytes(gzip.compress(text.encode()) if gz else text.encode())
    return p


def op_row(r, name, ua=False):
    return r["ops"][(name, ua)]


# ---------------------------------------------------------------------------------------------
# reading
# ---------------------------------------------------------------------------------------------


def test_parse_ns_exact():
    assert parse_ns(D("1712195495505582.988")) == 1712195495505582988
    assert parse_ns("1712195495505582.988") == 1712195495505582988
    assert parse_ns(3) == 3000
    assert parse_ns(D("1.5e3")) == 1_500_000
    assert parse_ns("1.5e3") == 1_500_000
    assert parse_ns(D("0.0005")) == 0  # ties to even
    assert parse_ns(D("0.0015")) == 2
    assert parse_ns(D("-0.0015")) == -2
    assert parse_ns(D("-0.0005")) == 0
    assert parse_ns(D("0.00050001")) == 1
    assert parse_ns(D("0.0004999")) == 0
    assert parse_ns(D("2.0015")) == 2002
    assert parse_ns(D("2.0025")) == 2002
    for bad in (None, True, "abc", "", " 1", "1.", "NaN", float("nan"), [], {}):
        assert parse_ns(bad) is None


def test_reading_rules(tmp_path):
    evs = [
        {"ph": "M", "name": "process_name", "pid": 1, "args": {"name": "x"}},  # idx 0, not timed
        X("a", 10, 5),  # 1
        X("a", 10, 5),  # 2: duplicate of 1 -> dropped
        X("a", 10, 5, pid="1"),  # 3: pid "1" is pid 1 -> also a duplicate
        X("a", 10, 5, External_id=7),  # 4: differs in an arg ntrace reads -> kept
        X("a", 10, 5, Foo=1),  # 5: differs only in an arg not read -> duplicate
        X("b", "20.5", "1.25"),  # 6: numbers as strings
        X("c", 30, -4),  # 7: negative dur -> 0
        X("d", 40, None),  # 8: null dur -> 0
        {"ph": "X", "cat": "cpu_op", "name": "e", "pid": 1, "tid": 1, "ts": 50},  # 9: no dur -> 0
        {"ph": "X", "cat": "cpu_op", "name": "f", "pid": 1, "tid": 1, "dur": 3},  # 10: no ts -> out
        X("g", 2**62, 1),  # 11: ts*1000 does not fit int64 -> out
        {"ph": "i", "name": "inst", "pid": 1, "tid": 1, "ts": 1},  # 12
        X("h", D("1.0"), D("5.0"), tid=9),  # 13
    ]
    for gz, bare in ((False, False), (True, False), (False, True), (True, True)):
        r = compute(write(tmp_path, evs, gz=gz, bare=bare))
        assert r["events"] == 7
        assert r["window"] == (1000, 50_000)
        assert r["lanes"]["framework"] == {"events": 7, "total": 5000 + 5000 + 1250 + 5000, "busy": 5000 + 1250 + 5000}
        assert sorted(r["parents"]) == [1, 4, 6, 7, 8, 9, 13]
        # 1 and 4 are the same interval: file order decides, 4 is 1's child
        assert r["parents"][4] == 1


def test_lanes_and_tracks(tmp_path):
    evs = [
        X("k", 0, 10, cat="Kernel", pid=0, tid=7),  # case-insensitive category
        X("k", 20, 10, cat="kernel", pid=0, tid=8),  # same device, other stream: one track
        X("cp", 0, 5, cat="gpu_memcpy", pid=0, tid=7),
        X("dma_in", 0, 5, cat="mtia_ccp_events", pid=2, tid=1),
        X("event_wait", 0, 5, cat="mtia_ccp_events", pid=2, tid=1),
        X("gemm", 0, 5, cat="mtia_ccp_events", pid=2, tid=1),
        X("drv", 0, 5, cat="privateuse1_driver", pid=3, tid=4, stream=5),
        X("drv2", 0, 5, cat="privateuse1_driver", pid=3, tid=4),
        X("ann", 0, 5, cat="gpu_user_annotation", pid=0, tid=7),
        X("what", 0, 5, cat="unknown_thing"),
        {"ph": "X", "name": "nocat", "pid": 1, "tid": 1, "ts": 0, "dur": 1},
    ]
    r = compute(write(tmp_path, evs))
    t = r["tracks"]
    assert t[("hardware", "device 0")] == {"events": 2, "total": 20000, "busy": 20000, "span": 30000, "idle": 10000, "gaps": 1}
    assert t[("device", "device 0 stream 7")]["events"] == 1
    assert t[("device", "device 2 stream 1")]["events"] == 2  # the dma_ and event_ name rules
    assert t[("hardware", "device 2")]["events"] == 1
    assert t[("device", "stream 5")]["events"] == 1
    assert t[("device", "pid 3 tid 4")]["events"] == 1
    assert t[("other", "device 0 stream 7")]["events"] == 1  # gpu_user_annotation
    assert t[("other", "pid 1 tid 1")]["events"] == 2
    assert sum(v["events"] for v in r["lanes"].values()) == r["events"] == 11
    assert r["hardware_idle_gaps"] == [("device 0", 10000, 20000)]
    assert r["hardware_idle"] == {"count": 1, "total": 10000, "p50": 10000, "p90": 10000, "max": 10000, "idle": 10000, "span": 35000}
    # device activities: not the gpu_user_annotation
    assert r["device_total"] == 10000 + 10000 + 5000 + 5000 + 5000 + 5000


# ---------------------------------------------------------------------------------------------
# nesting (torch's _populate_cpu_children)
# ---------------------------------------------------------------------------------------------


def test_partial_overlap_example(tmp_path):
    # the example of docs/definitions.md section 4 (µs here, so ns values are × 1000)
    evs = [
        X("ProfilerStep#1", 0, 1000, cat="user_annotation"),
        X("c10d::alltoall_base_", 100, 100),
        X("hccl:all_to_all", 150, 700, cat="user_annotation"),
    ]
    r = compute(write(tmp_path, evs))
    assert r["parents"] == {0: None, 1: 0, 2: 0}
    assert op_row(r, "ProfilerStep*", True)["self_cpu"] == 200_000
    assert op_row(r, "c10d::alltoall_base_")["self_cpu"] == 100_000
    assert op_row(r, "hccl:all_to_all", True)["self_cpu"] == 700_000
    assert r["self_cpu_total"] == 1_000_000
    assert r["negative_self"] == 0


def test_equal_start_times(tmp_path):
    evs = [
        X("short", 0, 5),  # 0: listed first but shorter: sorted after the longer one
        X("long", 0, 10),  # 1
        X("twinA", 20, 5),  # 2
        X("twinB", 20, 5),  # 3: same interval: file order, B is A's child
    ]
    r = compute(write(tmp_path, evs))
    assert r["parents"] == {1: None, 0: 1, 2: None, 3: 2}
    assert op_row(r, "long")["self_cpu"] == 5000
    assert op_row(r, "twinA")["self_cpu"] == 0
    assert op_row(r, "twinB")["self_cpu"] == 5000


def test_zero_length_events(tmp_path):
    evs = [
        X("p", 0, 20),  # 0
        X("z_start", 0, 0),  # 1: at the parent's start -> child (sorted after it: end desc)
        X("z_mid", 10, 0),  # 2: inside -> child
        X("z_end", 20, 0),  # 3: at the parent's end -> E.ts >= P.end -> root
        X("k1", 0, 10, cat="kernel", pid=0, tid=7),
        X("k0", 20, 0, cat="kernel", pid=0, tid=7),  # a zero-length block of its own
        X("k2", 30, 10, cat="kernel", pid=0, tid=7),
    ]
    r = compute(write(tmp_path, evs))
    assert r["parents"] == {0: None, 1: 0, 2: 0, 3: None}
    assert op_row(r, "p")["self_cpu"] == 20_000
    assert r["tracks"][("hardware", "device 0")] == {"events": 3, "total": 20000, "busy": 20000, "span": 40000, "idle": 20000, "gaps": 2}
    assert r["hardware_idle_gaps"] == [("device 0", 10000, 20000), ("device 0", 20000, 30000)]
    assert r["kernels"]["k0"] == {"calls": 1, "total": 0, "min": 0, "max": 0, "streams": ["7"]}


def test_ns_timestamps_near_1_7e15_us(tmp_path):
    # At 1.7e15 µs a float64 has a spacing of 0.25 µs. Read as floats, A would be
    # [583.0, 583.25) and B [583.0, 583.0): B a child of A. Exactly, B ends after A: no nesting.
    base = "1712195495505"
    evs = [
        X("A", D(base + "582.880"), D("0.240")),
        X("B", D(base + "583.110"), D("0.020")),
        X("C", D(base + "582.988"), D("0.012")),  # inside A exactly
    ]
    r = compute(write(tmp_path, evs))
    assert r["window"] == (1712195495505582880, 1712195495505583130)
    assert r["parents"] == {0: None, 1: None, 2: 0}
    assert op_row(r, "A")["self_cpu"] == 240 - 12
    assert op_row(r, "B")["self_cpu"] == 20
    assert r["lanes"]["framework"]["busy"] == 250


def test_overlapping_siblings_negative_self(tmp_path):
    evs = [X("P", 0, 100), X("A", 0, 80), X("B", 20, 80)]
    r = compute(write(tmp_path, evs))
    assert r["parents"] == {0: None, 1: 0, 2: 0}
    assert op_row(r, "P")["self_cpu"] == 100_000 - 80_000 - 80_000
    assert r["negative_self"] == 1
    assert r["self_cpu_total"] == 100_000  # = Σ dur of the roots


def test_threads_compare_as_text(tmp_path):
    evs = [X("P", 0, 100, pid=1, tid=2), X("C", 10, 10, pid="1", tid="2"), X("O", 10, 10, pid=1, tid=3)]
    r = compute(write(tmp_path, evs))
    assert r["parents"] == {0: None, 1: 0, 2: None}


# ---------------------------------------------------------------------------------------------
# links, launching ops, device time, folding
# ---------------------------------------------------------------------------------------------


def test_links_by_correlation_and_launching_op(tmp_path):
    evs = [
        X("aten::mm", 0, 100),  # 0
        X("cudaLaunchKernel", 10, 5, cat="cuda_runtime", correlation=1),  # 1
        X("cudaLaunchKernel", 60, 5, cat="cuda_runtime", correlation=1),  # 2: later call, same correlation
        X("gemm", 30, 40, cat="kernel", pid=0, tid=7, correlation=1),  # 3
        X("gemm", 80, 10, cat="kernel", pid=0, tid=7, correlation=1),  # 4
        X("cudaMemcpyAsync", 100, 5, cat="cuda_runtime", correlation=2),  # 5: at aten::mm's end: closed
        X("Memcpy HtoD", 110, 5, cat="gpu_memcpy", pid=0, tid=8, correlation=2),  # 6
    ]
    r = compute(write(tmp_path, evs))
    assert r["links"] == {3: 1, 4: 1, 6: 5}
    assert r["launch_latency"] == stats([20_000, 70_000, 10_000])
    assert r["queue_delay"] == stats([15_000, 65_000, 5_000])
    assert op_row(r, "aten::mm") == {"calls": 1, "self_cpu": 90_000, "cpu_total": 100_000, "self_device": 50_000, "device_total": 50_000}
    assert r["unlinked"] == {"calls": 1, "total": 5_000}  # the copy: its call has no cpu_op open
    assert r["device_total"] == 55_000
    assert r["kernels"]["gemm"] == {"calls": 2, "total": 50_000, "min": 10_000, "max": 40_000, "streams": ["7"]}


def test_kernel_under_user_annotation_only_is_unlinked(tmp_path):
    evs = [
        X("my_range", 0, 100, cat="user_annotation"),
        X("cudaLaunchKernel", 10, 5, cat="cuda_runtime", correlation=9),
        X("k", 20, 30, cat="kernel", pid=0, tid=7, correlation=9),
    ]
    r = compute(write(tmp_path, evs))
    assert r["links"] == {2: 1}
    assert r["unlinked"] == {"calls": 1, "total": 30_000}
    assert op_row(r, "my_range", True)["self_device"] == 0
    assert op_row(r, "my_range", True)["device_total"] == 0


def test_two_devices(tmp_path):
    evs = [
        X("ProfilerStep#1", 0, 1000, cat="user_annotation"),  # 0
        X("aten::add", 10, 100),  # 1
        X("cudaLaunchKernel", 20, 10, cat="cuda_runtime", correlation=1),  # 2
        X("aten::mul", 200, 100),  # 3
        X("cudaLaunchKernel", 210, 10, cat="cuda_runtime", correlation=2),  # 4
        X("add_k", 40, 20, cat="kernel", pid=0, tid=7, correlation=1),  # 5
        X("mul_k", 230, 50, cat="kernel", pid=1, tid=7, correlation=2),  # 6
        X("mul_k", 300, 50, cat="kernel", pid=1, tid=9, correlation=2),  # 7
    ]
    r = compute(write(tmp_path, evs))
    assert set(k for k in r["tracks"] if k[0] == "hardware") == {("hardware", "device 0"), ("hardware", "device 1")}
    assert r["tracks"][("hardware", "device 1")] == {"events": 2, "total": 100_000, "busy": 100_000, "span": 120_000, "idle": 20_000, "gaps": 1}
    assert r["hardware_idle"]["idle"] == 20_000 and r["hardware_idle"]["span"] == 20_000 + 120_000
    assert op_row(r, "aten::mul")["self_device"] == 100_000
    assert r["kernels"]["mul_k"]["streams"] == ["7", "9"]
    (step,) = r["steps"]
    assert step["devices"] == {
        "0": {"events": 1, "busy": 20_000, "span": 20_000, "idle": 0},
        "1": {"events": 2, "busy": 100_000, "span": 120_000, "idle": 20_000},
    }


def test_flow_links_when_correlation_missing(tmp_path):
    evs = [
        X("aten::relu", 0, 100),  # 0
        X("cudaLaunchKernel", 10, 5, cat="cuda_runtime"),  # 1
        X("relu_k", 20, 30, cat="kernel", pid=0, tid=7),  # 2
        {"ph": "s", "cat": "ac2g", "id": 5, "name": "ac2g", "pid": 1, "tid": 1, "ts": 10},  # 3
        {"ph": "f", "cat": "ac2g", "id": 5, "name": "ac2g", "pid": 0, "tid": 7, "ts": 20, "bp": "e"},  # 4
        # a flow whose start's ts is also that of a cpu_op listed before the call: the flow
        # binds only to the call (never to the op), so the kernel is linked too
        X("aten::neg", 60, 30),  # 5
        X("cudaLaunchKernel", 60, 5, cat="cuda_runtime"),  # 6
        X("neg_k", 70, 10, cat="kernel", pid=0, tid=7),  # 7
        {"ph": "s", "cat": "ac2g", "id": 6, "pid": 1, "tid": 1, "ts": 60},  # 8
        {"ph": "f", "cat": "ac2g", "id": 6, "pid": 0, "tid": 7, "ts": 70},  # 9
    ]
    r = compute(write(tmp_path, evs))
    assert r["links"] == {2: 1, 7: 6}
    assert r["launch_latency"] == stats([10_000, 10_000])
    assert r["queue_delay"] == stats([5_000, 5_000])
    assert op_row(r, "aten::relu")["self_device"] == 30_000
    assert op_row(r, "aten::neg")["self_device"] == 10_000
    assert r["unlinked"] == {"calls": 0, "total": 0}


def test_flow_links_when_cpu_op_starts_with_its_call(tmp_path):
    # The op encloses its runtime call and starts at exactly the call's ts, and comes first in
    # file order; the kernel has no correlation, only the ac2g flow. The flow's start binds to
    # the call (a flow binds only to runtime calls and device activities): the link is made.
    evs = [
        X("aten::relu", 10, 100),  # 0: [10, 110)
        X("cudaLaunchKernel", 10, 5, cat="cuda_runtime"),  # 1: [10, 15), no correlation
        X("relu_k", 30, 30, cat="kernel", pid=0, tid=7),  # 2: [30, 60), no correlation
        {"ph": "s", "cat": "ac2g", "id": 5, "name": "ac2g", "pid": 1, "tid": 1, "ts": 10},  # 3
        {"ph": "f", "cat": "ac2g", "id": 5, "name": "ac2g", "pid": 0, "tid": 7, "ts": 30, "bp": "e"},  # 4
    ]
    r = compute(write(tmp_path, evs))
    assert r["links"] == {2: 1}
    assert r["launch_latency"] == {"count": 1, "total": 20_000, "p50": 20_000, "p90": 20_000, "max": 20_000}
    assert r["queue_delay"] == {"count": 1, "total": 15_000, "p50": 15_000, "p90": 15_000, "max": 15_000}
    assert r["parents"] == {0: None, 1: 0}
    assert r["launchers"] == {2: 0}
    assert op_row(r, "aten::relu") == {"calls": 1, "self_cpu": 95_000, "cpu_total": 100_000, "self_device": 30_000, "device_total": 30_000}
    assert op_row(r, "cudaLaunchKernel") == {"calls": 1, "self_cpu": 5_000, "cpu_total": 5_000, "self_device": 0, "device_total": 0}
    assert r["unlinked"] == {"calls": 0, "total": 0}
    assert r["device_total"] == 30_000


def test_flow_binds_only_to_calls_and_activities_first_in_file_order(tmp_path):
    evs = [
        X("aten::mm", 10, 90),  # 0: [10, 100), starts at the flow's point but is an op
        X("ann", 20, 60, cat="gpu_user_annotation", pid=0, tid=7),  # 1: at the kernel's start, not an activity
        X("cudaLaunchKernel", 10, 5, cat="cuda_runtime"),  # 2: [10, 15): first call at (1, 1, 10)
        X("cuLaunchKernel", 10, 3, cat="cuda_driver"),  # 3: [10, 13): a second call at that point
        X("gemm", 20, 30, cat="kernel", pid=0, tid=7),  # 4: [20, 50)
        {"ph": "s", "cat": "ac2g", "id": 1, "pid": 1, "tid": 1, "ts": 10},  # 5 -> 2
        {"ph": "f", "cat": "ac2g", "id": 1, "pid": 0, "tid": 7, "ts": 20},  # 6 -> 4
        X("cudaLaunchKernel", 60, 2, cat="cuda_runtime"),  # 7: [60, 62)
        X("k_a", 70, 5, cat="kernel", pid=0, tid=7),  # 8: [70, 75)
        X("k_b", 80, 4, cat="kernel", pid=0, tid=8),  # 9: [80, 84)
        {"ph": "s", "cat": "ac2g", "id": 2, "pid": 1, "tid": 1, "ts": 60},  # 10 -> 7
        {"ph": "f", "cat": "ac2g", "id": 2, "pid": 0, "tid": 7, "ts": 70},  # 11 -> 8
        {"ph": "f", "cat": "ac2g", "id": 2, "pid": 0, "tid": 8, "ts": 80},  # 12 -> 9: same id, later: unlinked
        {"ph": "s", "cat": "ac2g", "id": 3, "pid": 1, "tid": 1, "ts": 10},  # 13 -> 2 (call only)
        {"ph": "f", "cat": "ac2g", "id": 3, "pid": 1, "tid": 1, "ts": 50},  # 14: nothing starts there
    ]
    r = compute(write(tmp_path, evs))
    assert r["links"] == {4: 2, 8: 7}
    assert r["launch_latency"] == {"count": 2, "total": 20_000, "p50": 10_000, "p90": 10_000, "max": 10_000}
    assert r["queue_delay"] == {"count": 2, "total": 13_000, "p50": 5_000, "p90": 8_000, "max": 8_000}
    assert r["parents"] == {0: None, 2: 0, 3: 2, 7: 0}
    assert r["launchers"] == {4: 0, 8: 0}
    # self CPU 90 - 5 - 2 µs; own device time 30 + 5 µs
    assert op_row(r, "aten::mm") == {"calls": 1, "self_cpu": 83_000, "cpu_total": 90_000, "self_device": 35_000, "device_total": 35_000}
    assert r["unlinked"] == {"calls": 1, "total": 4_000}  # k_b
    assert r["device_total"] == 39_000


def test_correlation_beats_flow(tmp_path):
    evs = [
        X("cudaLaunchKernel", 10, 5, cat="cuda_runtime", correlation=3),  # 0
        X("cudaLaunchKernel", 50, 5, cat="cuda_runtime", tid=2),  # 1
        X("k", 60, 5, cat="kernel", pid=0, tid=7, correlation=3),  # 2
        {"ph": "s", "cat": "ac2g", "id": 1, "pid": 1, "tid": 2, "ts": 50},
        {"ph": "f", "cat": "ac2g", "id": 1, "pid": 0, "tid": 7, "ts": 60},
    ]
    assert compute(write(tmp_path, evs))["links"] == {2: 0}


def test_flow_point_taken_by_a_correlated_activity(tmp_path):
    # Two kernels start at the same point; the first in file order is linked by correlation.
    # The flow's end binds to it (first activity at the point), so the flow links nothing and
    # the second kernel stays unlinked (AMBIGUITIES.md entry 15).
    evs = [
        X("cudaLaunchKernel", 10, 5, cat="cuda_runtime", correlation=3),  # 0
        X("cudaLaunchKernel", 30, 5, cat="cuda_runtime"),  # 1
        X("k1", 60, 5, cat="kernel", pid=0, tid=7, correlation=3),  # 2
        X("k2", 60, 8, cat="kernel", pid=0, tid=7),  # 3
        {"ph": "s", "cat": "ac2g", "id": 1, "pid": 1, "tid": 1, "ts": 30},  # 4 -> 1
        {"ph": "f", "cat": "ac2g", "id": 1, "pid": 0, "tid": 7, "ts": 60},  # 5 -> 2 (already linked)
    ]
    r = compute(write(tmp_path, evs))
    assert r["links"] == {2: 0}
    assert r["launch_latency"] == {"count": 1, "total": 50_000, "p50": 50_000, "p90": 50_000, "max": 50_000}
    assert r["unlinked"] == {"calls": 2, "total": 13_000}


def test_folding_chain(tmp_path):
    evs = [
        X("X", 0, 100),  # 0
        X("X", 10, 80),  # 1
        X("X", 20, 60),  # 2
        X("Y", 30, 10),  # 3
    ]
    r = compute(write(tmp_path, evs))
    assert r["parents"] == {0: None, 1: 0, 2: 1, 3: 2}  # before folding
    assert r["folded_away"] == [1, 2]
    assert r["folded_parents"] == {0: None, 3: 0}
    assert op_row(r, "X") == {"calls": 1, "self_cpu": 90_000, "cpu_total": 100_000, "self_device": 0, "device_total": 0}
    assert r["self_cpu_total"] == 100_000


def test_folding_not_when_parent_has_other_children(tmp_path):
    evs = [X("aten::copy_", 0, 100), X("aten::copy_", 10, 50), X("aten::empty", 70, 10)]
    r = compute(write(tmp_path, evs))
    assert r["folded_away"] == []
    assert op_row(r, "aten::copy_") == {"calls": 2, "self_cpu": 40_000 + 50_000, "cpu_total": 150_000, "self_device": 0, "device_total": 0}


def test_folding_lifts_the_inner_kernels(tmp_path):
    evs = [
        X("X", 0, 100),  # 0
        X("X", 10, 80),  # 1
        X("cudaLaunchKernel", 20, 10, cat="cuda_runtime", correlation=1),  # 2
        X("k", 40, 7, cat="kernel", pid=0, tid=7, correlation=1),  # 3
    ]
    r = compute(write(tmp_path, evs))
    assert r["launchers"] == {3: 1}
    assert r["folded_away"] == [1]
    assert op_row(r, "X") == {"calls": 1, "self_cpu": 90_000, "cpu_total": 100_000, "self_device": 7_000, "device_total": 7_000}
    assert op_row(r, "cudaLaunchKernel")["device_total"] == 0
    assert r["device_lost_to_folding"] == 0


def test_folding_replaces_the_parents_own_kernels(tmp_path):
    # The outer X launches a kernel itself: its call starts inside X and ends after it, so the
    # call is no child of X (partial overlap) and X's only child is the inner X. Folding
    # replaces X's own device time by the inner one's (0): the kernel's time leaves the table.
    evs = [
        X("X", 0, 100),  # 0
        X("X", 10, 80),  # 1
        X("cudaLaunchKernel", 95, 10, cat="cuda_runtime", correlation=1),  # 2
        X("k", 120, 7, cat="kernel", pid=0, tid=7, correlation=1),  # 3
    ]
    r = compute(write(tmp_path, evs))
    assert r["parents"] == {0: None, 1: 0, 2: None}
    assert r["launchers"] == {3: 0}
    assert r["folded_away"] == [1]
    # X took the inner X's children (none): self CPU = its whole duration
    assert op_row(r, "X") == {"calls": 1, "self_cpu": 100_000, "cpu_total": 100_000, "self_device": 0, "device_total": 0}
    assert r["unlinked"] == {"calls": 0, "total": 0}
    assert r["device_total"] == 7_000
    assert r["device_lost_to_folding"] == 7_000
    assert sum(v["self_device"] for v in r["ops"].values()) + r["unlinked"]["total"] == r["device_total"] - 7_000


def test_folding_compares_renamed_profiler_step_names(tmp_path):
    # torch's FunctionEvent.name is already "ProfilerStep*": a ProfilerStep#1 whose only child
    # is ProfilerStep#2 folds it, and takes over ProfilerStep#2's child.
    evs = [
        X("ProfilerStep#1", 0, 100, cat="user_annotation"),  # 0: [0, 100)
        X("ProfilerStep#2", 10, 80, cat="user_annotation"),  # 1: [10, 90), 0's only child
        X("aten::add", 20, 10),  # 2: [20, 30)
        X("ProfilerStep#3", 200, 100, cat="user_annotation"),  # 3: two children: no fold
        X("ProfilerStep#4", 210, 10, cat="user_annotation"),  # 4
        X("aten::mul", 250, 20),  # 5
    ]
    r = compute(write(tmp_path, evs))
    assert r["parents"] == {0: None, 1: 0, 2: 1, 3: None, 4: 3, 5: 3}
    assert r["folded_away"] == [1]
    assert r["folded_parents"] == {0: None, 2: 0, 3: None, 4: 3, 5: 3}
    # ProfilerStep#1: 100 - 10 µs; ProfilerStep#3: 100 - 10 - 20 µs; ProfilerStep#4: 10 µs
    assert op_row(r, "ProfilerStep*", True) == {"calls": 3, "self_cpu": 90_000 + 70_000 + 10_000, "cpu_total": 210_000, "self_device": 0, "device_total": 0}
    assert op_row(r, "aten::add") == {"calls": 1, "self_cpu": 10_000, "cpu_total": 10_000, "self_device": 0, "device_total": 0}
    assert r["self_cpu_total"] == 200_000
    # folding is the op table's: the folded ProfilerStep#2 is still a step window
    assert [(s["step"], s["start"], s["end"]) for s in r["steps"]] == [
        (1, 0, 100_000), (2, 10_000, 90_000), (3, 200_000, 300_000), (4, 210_000, 220_000)
    ]
    # aten::add -> step 2 (the last window starting at or before 20); aten::mul at 250: the last
    # window starting before it is step 4 [210, 220), which has ended: no step (entry 32)
    assert [s["host_busy"]["framework"] for s in r["steps"]] == [0, 10_000, 0, 0]
    assert ("overlapping step", 1) in r["warnings"] and ("overlapping step", 4) in r["warnings"]


def test_record_function_named_like_an_op_folds(tmp_path):
    # torch compares names only: a record_function "aten::add" holding one aten::add folds it
    evs = [X("aten::add", 0, 100, cat="user_annotation"), X("aten::add", 10, 50), X("aten::add", 200, 10)]
    r = compute(write(tmp_path, evs))
    assert r["folded_away"] == [1]
    assert op_row(r, "aten::add", True) == {"calls": 1, "self_cpu": 100_000, "cpu_total": 100_000, "self_device": 0, "device_total": 0}
    assert op_row(r, "aten::add", False)["calls"] == 1


def test_profiler_step_rows_and_dropped_names(tmp_path):
    evs = [
        X("ProfilerStep#1", 0, 100, cat="user_annotation"),
        X("ProfilerStep#2", 100, 100, cat="user_annotation"),
        X("aten::is_leaf", 10, 5),
        X("[memory]", 20, 0),
        X("PyTorch Profiler (0)", 0, 300, cat="Trace"),
    ]
    r = compute(write(tmp_path, evs))
    assert list(r["ops"]) == [("ProfilerStep*", True)]
    assert op_row(r, "ProfilerStep*", True) == {"calls": 2, "self_cpu": 200_000, "cpu_total": 200_000, "self_device": 0, "device_total": 0}
    assert sorted(r["parents"]) == [0, 1]


def test_group_by_shape(tmp_path):
    evs = [
        X("aten::mm", 0, 10, Input_Dims=[[2, 3], [3, 4]]),
        X("aten::mm", 20, 10, Input_Dims=[[2, 3], [3, 4]]),
        X("aten::mm", 40, 10, Input_Dims=[[5, 5], [5, 5]]),
        X("aten::mm", 60, 10),
    ]
    r = compute(write(tmp_path, evs), group_by_shape=True)
    assert r["ops"][("aten::mm", False, "[[2,3],[3,4]]")]["calls"] == 2
    assert r["ops"][("aten::mm", False, "[[5,5],[5,5]]")]["calls"] == 1
    assert r["ops"][("aten::mm", False, None)]["calls"] == 1


# ---------------------------------------------------------------------------------------------
# statistics
# ---------------------------------------------------------------------------------------------


def test_nearest_rank():
    assert nearest_rank([1, 2, 3, 100], 50) == 2
    assert nearest_rank([100, 3, 2, 1], 90) == 100
    assert nearest_rank([], 50) == 0
    assert nearest_rank([7], 90) == 7
    assert nearest_rank(list(range(1, 11)), 90) == 9  # ceil(9) - 1 = 8 -> v[8] = 9
    assert nearest_rank(list(range(1, 11)), 50) == 5
    assert nearest_rank(list(range(1, 12)), 50) == 6  # ceil(5.5) - 1 = 5
    assert stats([1, 2, 3, 100]) == {"count": 4, "total": 106, "p50": 2, "p90": 100, "max": 100}
    assert stats([]) == {"count": 0, "total": 0, "p50": 0, "p90": 0, "max": 0}


# ---------------------------------------------------------------------------------------------
# steps
# ---------------------------------------------------------------------------------------------


def test_steps_device_work_after_the_cpu_window(tmp_path):
    evs = [
        X("ProfilerStep#2", 100, 100, cat="user_annotation"),  # 0
        X("ProfilerStep#1", 0, 100, cat="user_annotation"),  # 1
        X("ProfilerStep#1", 500, 10, cat="user_annotation"),  # 2: a second #1: not a window
        X("aten::add", 40, 70),  # 3: [40, 110) -> step 1, clipped to [40, 100)
        X("cudaLaunchKernel", 50, 10, cat="cuda_runtime", correlation=1),  # 4: step 1
        X("add_k", 150, 30, cat="kernel", pid=0, tid=7, correlation=1),  # 5: runs in step 2's time
        X("cudaLaunchKernel", 120, 10, cat="cuda_runtime", correlation=2),  # 6: step 2
        X("k2", 190, 20, cat="kernel", pid=0, tid=7, correlation=2),  # 7
        X("k3", 300, 5, cat="kernel", pid=0, tid=7),  # 8: unlinked -> outside
        X("early", -10, 5),  # 9: before the first step
        X("late", 200, 5),  # 10: at step 2's end -> none
        X("Memcpy", 130, 10, cat="gpu_memcpy", pid=0, tid=8, correlation=2),  # 11: step 2, also device 0
    ]
    r = compute(write(tmp_path, evs))
    s1, s2 = r["steps"]
    assert (s1["step"], s1["name"], s1["start"], s1["end"]) == (1, "ProfilerStep#1", 0, 100_000)
    assert (s2["step"], s2["start"], s2["end"]) == (2, 100_000, 200_000)
    assert s1["host_busy"] == {"framework": 60_000, "device": 0, "runtime_api": 10_000, "hardware": 0, "other": 0}
    assert s2["host_busy"] == {"framework": 0, "device": 0, "runtime_api": 10_000, "hardware": 0, "other": 0}
    assert s1["devices"] == {"0": {"events": 1, "busy": 30_000, "span": 30_000, "idle": 0}}
    assert s2["devices"] == {"0": {"events": 2, "busy": 30_000, "span": 80_000, "idle": 50_000}}
    assert r["outside_steps"] == {"events": 1, "total": 5_000}


def test_step_windows_are_host_events_only(tmp_path):
    evs = [
        X("ProfilerStep#1", 0, 500, cat="gpu_user_annotation", pid=0, tid=7),  # 0: device side, first: no window
        X("ProfilerStep#1", 0, 100, cat="user_annotation"),  # 1: the window of step 1
        X("ProfilerStep#2", 100, 200, cat="gpu_user_annotation", pid=0, tid=7),  # 2: no host #2: no step 2
        X("aten::add", 10, 40),  # 3: [10, 50)
        X("cudaLaunchKernel", 20, 10, cat="cuda_runtime", correlation=1),  # 4: [20, 30)
        X("k", 40, 20, cat="kernel", pid=0, tid=7, correlation=1),  # 5: [40, 60): step 1
        X("cudaLaunchKernel", 150, 10, cat="cuda_runtime", correlation=2),  # 6: after step 1's end
        X("k2", 170, 10, cat="kernel", pid=0, tid=7, correlation=2),  # 7: outside
    ]
    r = compute(write(tmp_path, evs))
    (s1,) = r["steps"]
    assert (s1["step"], s1["name"], s1["start"], s1["end"]) == (1, "ProfilerStep#1", 0, 100_000)
    assert s1["host_busy"] == {"framework": 40_000, "device": 0, "runtime_api": 10_000, "hardware": 0, "other": 0}
    assert s1["devices"] == {"0": {"events": 1, "busy": 20_000, "span": 20_000, "idle": 0}}
    assert r["outside_steps"] == {"events": 1, "total": 10_000}
    assert not [w for w in r["warnings"] if w[0] == "overlapping step"]


# ---------------------------------------------------------------------------------------------
# against torch itself
# ---------------------------------------------------------------------------------------------


def _torch_style_shapes(dims_text):
    """Our Input Dims text -> torch's FunctionEvent.input_shapes text: a TensorList input is
    written [] by torch (its structured shapes keep the list), an absent Input Dims is []."""
    if dims_text is None:
        return "[]"
    dims = json.loads(dims_text)
    return str([d if isinstance(d, list) and all(isinstance(x, int) for x in d) else [] for d in dims])


@pytest.fixture(scope="module")
def torch_profile(tmp_path_factory):
    """A small CPU workload profiled by torch (schedule of 5 steps, 2 active), its trace
    exported by on_trace_ready; returns (profiler, trace path)."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    out = tmp_path_factory.mktemp("torch_trace")
    paths = []

    def ready(p):
        path = out / f"trace_{len(paths)}.json"
        p.export_chrome_trace(str(path))
        paths.append(path)

    def work():
        x = torch.randn(32, 32, requires_grad=True)
        with record_function("outer"):
            with record_function("inner"):
                y = torch.relu(x @ x)
            with record_function("aten::add"):  # same name as the op it holds: folded
                z = y + 1
            with record_function("twice"):
                with record_function("twice"):  # a same-name single child: folded
                    w = torch.cat([z, y]).sum()
            w.backward()
            x.to(torch.float64)  # aten::to -> aten::_to_copy -> aten::copy_

    with profile(
        activities=[ProfilerActivity.CPU],
        record_shapes=True,
        schedule=schedule(wait=1, warmup=1, active=2, repeat=1),
        on_trace_ready=ready,
    ) as prof:
        for _ in range(5):
            work()
            prof.step()
    assert len(paths) == 1
    return prof, paths[0]


def test_ops_equal_torch_key_averages(torch_profile):
    prof, path = torch_profile
    r = compute(path)
    ours = r["ops"]
    theirs = {}
    for e in prof.key_averages():
        assert str(e.device_type) == "DeviceType.CPU"
        key = (e.key, bool(e.is_user_annotation))
        assert key not in theirs
        theirs[key] = {
            "calls": e.count,
            "self_cpu": round(e.self_cpu_time_total * 1000),
            "cpu_total": round(e.cpu_time_total * 1000),
            "self_device": round(e.self_device_time_total * 1000),
            "device_total": round(e.device_time_total * 1000),
        }
    assert ours == theirs
    # the record_function "aten::add" absorbed its single aten::add child (one per active step)
    evs = json.loads(path.read_text(), parse_float=Decimal)["traceEvents"]
    folded = [evs[i] for i in r["folded_away"]]
    assert sum(1 for e in folded if e["name"] == "aten::add" and e["cat"] == "cpu_op") == 2
    assert sum(1 for e in folded if e["name"] == "twice") == 2
    assert ours[("twice", True)]["calls"] == 2  # one per active step
    assert ("ProfilerStep*", True) in ours


def test_ops_by_shape_equal_torch_key_averages(torch_profile):
    prof, path = torch_profile
    ours = {}
    for (name, ua, dims), row in compute(path, group_by_shape=True)["ops"].items():
        acc = ours.setdefault((name, ua, _torch_style_shapes(dims)), {"calls": 0, "self_cpu": 0, "cpu_total": 0})
        for k in acc:
            acc[k] += row[k]
    theirs = {
        (e.key, bool(e.is_user_annotation), str(e.input_shapes)): {
            "calls": e.count,
            "self_cpu": round(e.self_cpu_time_total * 1000),
            "cpu_total": round(e.cpu_time_total * 1000),
        }
        for e in prof.key_averages(group_by_input_shape=True)
    }
    assert ours == theirs


def test_self_cpu_total_equals_torch(torch_profile):
    prof, path = torch_profile
    r = compute(path)
    assert r["self_cpu_total"] == round(prof.key_averages().self_cpu_time_total * 1000)
    assert r["device_total"] == 0 and r["unlinked"] == {"calls": 0, "total": 0}


# ---------------------------------------------------------------------------------------------
# invariants on real public traces
# ---------------------------------------------------------------------------------------------


def _real_traces():
    dirs = [
        Path(os.environ["NTRACE_SHARED_TRACES"]) if os.environ.get("NTRACE_SHARED_TRACES") else None,
        Path("/work/main/../shared/traces"),
        Path(__file__).resolve().parents[3] / "shared" / "traces",
        Path("/tmp/hta-data"),
    ]
    seen, files = set(), []
    for d in dirs:
        if d is None or not d.is_dir():
            continue
        for f in sorted(d.glob("*.json.gz")):
            if f.stat().st_size > 0 and f.resolve() not in seen:
                seen.add(f.resolve())
                files.append(f)
    return files


REAL = _real_traces()


@pytest.fixture(scope="module", params=REAL or [None], ids=lambda p: p.name[:40] if p else "absent")
def real(request):
    if request.param is None:
        pytest.skip("no real traces found")
    return request.param, compute(request.param)


def test_real_invariants(real):
    path, r = real
    assert sum(v["events"] for v in r["lanes"].values()) == r["events"]
    assert sum(v["events"] for v in r["tracks"].values()) == r["events"]
    for v in list(r["lanes"].values()) + list(r["tracks"].values()):
        assert 0 <= v["busy"] <= v["total"]
    for v in r["tracks"].values():
        assert v["busy"] + v["idle"] == v["span"]
        assert v["busy"] <= r["window"][1] - r["window"][0]
    hw = [v for k, v in r["tracks"].items() if k[0] == "hardware"]
    assert r["hardware_idle"]["idle"] == sum(v["idle"] for v in hw) == r["hardware_idle"]["total"]
    assert r["hardware_idle"]["count"] == sum(v["gaps"] for v in hw) == len(r["hardware_idle_gaps"])
    # the op table adds up to the device total, less what folding replaced
    self_device = sum(v["self_device"] for v in r["ops"].values())
    assert self_device + r["unlinked"]["total"] == r["device_total"] - r["device_lost_to_folding"]
    assert r["self_cpu_total"] == sum(v["self_cpu"] for v in r["ops"].values())
    assert sum(v["total"] for v in r["kernels"].values()) == r["device_total"]
    # nesting: every parent contains its child, on the same thread
    evs = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)
    evs = evs["traceEvents"] if isinstance(evs, dict) else evs
    for child, parent in r["parents"].items():
        if parent is None:
            continue
        c, p = evs[child], evs[parent]
        assert (str(c["pid"]), str(c["tid"])) == (str(p["pid"]), str(p["tid"]))
        cs, ps = parse_ns(c["ts"]), parse_ns(p["ts"])
        assert ps <= cs and cs + parse_ns(c.get("dur", 0)) <= ps + parse_ns(p.get("dur", 0))
    # self CPU total = Σ dur of the roots of the folded tree
    roots = [i for i, p in r["folded_parents"].items() if p is None]
    assert r["self_cpu_total"] == sum(parse_ns(evs[i].get("dur", 0)) for i in roots)
    # links point from device activities to runtime calls, and delays are consistent
    assert r["launch_latency"]["count"] == r["queue_delay"]["count"] == len(r["links"])
    # steps: device events per step plus the outside line = all device activities
    in_steps = sum(d["events"] for s in r["steps"] for d in s["devices"].values())
    n_act = sum(v["calls"] for v in r["kernels"].values())
    assert in_steps + r["outside_steps"]["events"] == n_act
    for s in r["steps"]:
        for d in s["devices"].values():
            assert d["busy"] + d["idle"] == d["span"]
        for lane, busy in s["host_busy"].items():
            assert 0 <= busy <= s["end"] - s["start"]



def test_compare_figures_and_overlapping_steps(tmp_path):
    evs = [
        X("ProfilerStep#1", 0, 100, cat="user_annotation"),  # 0
        X("ProfilerStep#2", 50, 100, cat="user_annotation"),  # 1: starts inside step 1
        X("aten::mm", 10, 30),  # 2
        X("cudaLaunchKernel", 20, 5, cat="cuda_runtime", correlation=1),  # 3
        X("k", 30, 10, cat="kernel", pid=0, tid=7, correlation=1),  # 4
        X("cp", 45, 4, cat="gpu_memcpy", pid=0, tid=8),  # 5: unlinked copy
    ]
    r = compute(write(tmp_path, evs))
    assert r["compare"] == {"device": 14_000, "compute": 10_000, "self_cpu": 25_000, "device_op_calls": 1, "idle": 0}
    assert ("overlapping step", 1) in r["warnings"]
    # the call at 20 lies in step 1 only; the step 2 window [50, 150) holds nothing of it
    assert [s["devices"] for s in r["steps"]] == [{"0": {"events": 1, "busy": 10_000, "span": 10_000, "idle": 0}}, {}]
