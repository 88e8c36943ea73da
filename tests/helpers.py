"""Shared test helpers: where the real public traces live, a writer for small hand-made traces, a brute-force interval union, the fake torch_neuronx."""

from __future__ import annotations

import gzip
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

import polars as pl

REPO = Path(__file__).resolve().parents[1]
#: The real public Kineto traces, vendored with their licence (tests/data/kineto/LICENSE); NTRACE_REAL_TRACES points elsewhere.
REAL_TRACES = Path(os.environ.get("NTRACE_REAL_TRACES", REPO / "tests" / "data" / "kineto"))


def shared_trace_files() -> list[Path]:
    """The real Kineto traces (vendored under tests/data/kineto)."""
    return sorted(REAL_TRACES.glob("*.json.gz")) if REAL_TRACES.is_dir() else []


def write_trace(path: Path, events: list[dict[str, Any]], gz: bool = False, **top: Any) -> Path:
    """Write a Kineto-style trace with these events (and extra top-level keys) to `path`."""
    doc = {"schemaVersion": 1, "traceEvents": events, **top}
    data = json.dumps(doc).encode()
    path.write_bytes(gzip.compress(data) if gz else data)
    return path


def x(name: str, cat: str, ts: float, dur: float, pid: Any = 1, tid: Any = 1, **args: Any) -> dict[str, Any]:
    """A complete event, times in µs as Kineto writes them."""
    ev = {"ph": "X", "cat": cat, "name": name, "pid": pid, "tid": tid, "ts": ts, "dur": dur}
    if args:
        ev["args"] = args
    return ev


def brute_union(spans: list[tuple[int, int]]) -> int:
    """Length of the union of [start, end) intervals by sorting and merging in plain Python: an oracle independent of Polars."""
    total, reach = 0, None
    for start, end in sorted(spans):
        if reach is None or start > reach:
            total += end - start
            reach = end
        elif end > reach:
            total += end - reach
            reach = end
    return total


#: The ops of the Neuron Explorer example: (name, start µs, duration µs).
OPS = [("aten::mul", 0, 20), ("aten::mean", 40, 15), ("aten::add", 70, 12), ("aten::rsqrt", 100, 18), ("aten::mul", 140, 20)]


def explorer_rows() -> pl.DataFrame:
    """A Neuron Explorer SystemProfileEvents table (the documented schema) of a small framework → runtime → hardware run."""
    from ntrace.io.explorer import EXPLORER_SCHEMA

    rows = []
    for i, (op, start, dur) in enumerate(OPS):
        t = 1000 + start
        flow = 100 + i
        rows += [
            dict(name=op, source="framework", ts=t, dur=dur, tid=1, stream=None, flow=flow, nc=None, pc=None),
            dict(name="PrivateUse1 driver", source="framework", ts=t + 2, dur=3, tid=1, stream=3, flow=None, nc=None, pc=None),
            dict(name="nrt_execute", source="neuron_rt", ts=t + 5, dur=dur - 6, tid=2, stream=None, flow=flow, nc=0, pc=None),
            dict(name="nc_exec_running", source="neuron_hw", ts=t + 9, dur=dur - 12, tid=None, stream=None, flow=flow, nc=0, pc=0),
        ]
    rows.append(dict(name="ProfilerStep#3", source="framework", ts=995, dur=180, tid=1, stream=None, flow=None, nc=None, pc=None))
    frame = pl.DataFrame(rows)
    return pl.DataFrame(
        {
            "id": pl.int_range(0, frame.height, eager=True),
            "name": frame["name"],
            "start_ts": frame["ts"] * 1000,
            "end_ts": (frame["ts"] + frame["dur"]) * 1000,
            "duration_ns": frame["dur"] * 1000,
            "trace_event_source": frame["source"],
            "instance_id": pl.Series(["i-0ade06f040a13f2bf"] * frame.height),
            "process_id": pl.Series([4242] * frame.height),
            "thread_id": frame["tid"],
            "nc_idx": frame["nc"],
            "pcore_idx": frame["pc"],
            "worker_gid": pl.Series([0] * frame.height),
            "flow_id": frame["flow"],
            "framework_stream_id": frame["stream"],
            "extra_attributes_json": pl.Series(["{}"] * frame.height),
        },
        schema_overrides=EXPLORER_SCHEMA,
    )


#: The fake torch_neuronx package: the documented API of the Neuron profiler, logging every call in its CALLS list.
FAKE_NEURONX = REPO / "tests" / "capture" / "fake_neuronx"


def imported_fake_neuronx(monkeypatch: Any, record: Callable[[Any, list[tuple[Any, ...]]], None]) -> Iterator[Any]:
    """Import the fake torch_neuronx afresh with its CALLS log cleared and `record(monkeypatch, CALLS)` applied, yield it, then forget it (a fixture's body)."""
    def forget() -> list[str]:
        return [m for m in sys.modules if m == "torch_neuronx" or m.startswith("torch_neuronx.")]

    for name in forget():
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.syspath_prepend(str(FAKE_NEURONX))
    import torch_neuronx
    import torch_neuronx.profiling  # noqa: F401

    torch_neuronx.CALLS.clear()
    record(monkeypatch, torch_neuronx.CALLS)
    yield torch_neuronx
    for name in forget():
        del sys.modules[name]
