"""Shared test helpers: where the real public traces live, and a writer for small hand-made traces."""

from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any

import pytest

REPO = Path(__file__).resolve().parents[1]
#: The real public Kineto traces, vendored with their licence (tests/data/kineto/LICENSE); NTRACE_SHARED_TRACES points elsewhere.
SHARED_TRACES = Path(os.environ.get("NTRACE_SHARED_TRACES", REPO / "tests" / "data" / "kineto"))


def shared_trace_files() -> list[Path]:
    """The real Kineto traces (vendored under tests/data/kineto)."""
    return sorted(SHARED_TRACES.glob("*.json.gz")) if SHARED_TRACES.is_dir() else []


@pytest.fixture(params=shared_trace_files(), ids=lambda p: p.name.split("__")[0])
def shared_trace(request: pytest.FixtureRequest) -> Path:
    """Each real trace in turn."""
    return request.param


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
