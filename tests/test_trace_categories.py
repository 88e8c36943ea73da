"""A Trace holds its few-valued text columns as categoricals (ntrace.trace.CATEGORY_COLUMNS): the same texts, a code per event, and no figure of the analysis changes."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import fields
from pathlib import Path

import polars as pl
import pytest

from helpers import REPO, shared_trace_files
from ntrace.io import read_trace
from ntrace.profile import Profile
from ntrace.summary import Summary
from ntrace.trace import CATEGORY_COLUMNS, EVENT_COLUMNS, Trace, compact

#: Every real trace, and the synthetic Neuron fixtures (hardware executions, NEFF names).
TRACES = [*shared_trace_files(), *sorted((REPO / "fixtures" / "rmsnorm").glob("*/*/*/trace.json"))]


def test_same_texts_as_codes() -> None:
    frame = pl.DataFrame({"ph": ["X", None, "i"], "pid": ["1", "2", None], "tid": ["7", "7", "8"], "side": ["host", "device", "host"], "name": ["a", "b", "c"], "cat": ["x", "y", "z"], "flow_bp": [None, "e", None], "input_dims": ["[]", None, "[[1]]"]})
    held = compact(frame)
    assert [held.schema[c] for c in CATEGORY_COLUMNS] == [pl.Categorical()] * len(CATEGORY_COLUMNS) and held.schema["input_dims"] == pl.String
    assert held.with_columns(pl.col(CATEGORY_COLUMNS).cast(pl.String)).equals(frame)
    assert compact(held).equals(held) and compact(frame.drop("side")).schema["pid"] == pl.Categorical()  # the columns it has
    empty = compact(frame.with_columns(pl.lit(None, pl.String).alias("ph")))  # a category column holding only nulls: a constant null of its new type
    assert empty.schema["ph"] == pl.Categorical() and empty["ph"].null_count() == frame.height


def test_a_read_trace_holds_codes() -> None:
    events = read_trace(TRACES[0]).events
    assert events.schema == EVENT_COLUMNS and all(events.schema[c] == pl.Categorical() for c in CATEGORY_COLUMNS)


@pytest.mark.parametrize("path", TRACES, ids=lambda p: p.parent.parent.parent.name if p.name == "trace.json" else p.name.split(".")[0])
def test_no_figure_changes(path: Path) -> None:
    """Every field of the trace's summary (each frame's types and values) equals that of the same events with those columns as plain text."""
    trace = read_trace(path)
    as_text = Trace(trace.path, trace.events, trace.meta, trace.warnings, trace.variant)
    object.__setattr__(as_text, "events", trace.events.with_columns(pl.col(CATEGORY_COLUMNS).cast(pl.String)))  # past __post_init__, which would make them codes again
    assert as_text.events.schema["pid"] == pl.String
    held, plain = Profile(trace).summary(), Profile(as_text).summary()
    assert [f.name for f in fields(held) if not _same(getattr(held, f.name), getattr(plain, f.name))] == []


#: Computes one trace's summary (argv[1]) in a fresh process and prints its stored bytes, after first casting its texts
#: (names, pids, tids, categories) to Polars' process-wide categorical in reverse order when argv[2] says so.
_SUMMARY_AFTER = """
import gzip
import json
import sys
import polars as pl
from ntrace.io import read_trace
from ntrace.profile import Profile
if sys.argv[2] == "reversed":  # the file's texts read as JSON, not through ntrace, which would cast them first
    raw = open(sys.argv[1], "rb").read()
    events = json.loads(gzip.decompress(raw) if sys.argv[1].endswith(".gz") else raw)["traceEvents"]
    texts = {str(e[k]) for e in events for k in ("name", "pid", "tid", "cat", "ph") if e.get(k) is not None} | {"?", "", "host", "device"}
    pl.Series(sorted(texts, reverse=True)).cast(pl.Categorical)  # first seen in reverse order: the codes the trace gets differ from a fresh process's
sys.stdout.buffer.write(Profile(read_trace(sys.argv[1])).summary().to_bytes())
"""


@pytest.mark.parametrize("path", [TRACES[1], TRACES[-1]], ids=["real", "neuron"])
def test_no_figure_depends_on_the_texts_a_process_saw_before(path: Path) -> None:
    """Categorical codes come from one mapping per process, numbered as texts are first seen: a summary is the same whatever the process read before."""
    fresh, seen = (
        Summary.from_bytes(subprocess.run([sys.executable, "-c", _SUMMARY_AFTER, str(path), order], capture_output=True, timeout=120, check=True).stdout)
        for order in ("fresh", "reversed")
    )
    assert fresh is not None and seen is not None
    assert [f.name for f in fields(fresh) if f.compare and not _same(getattr(fresh, f.name), getattr(seen, f.name))] == []  # not the bytes each was read from


def _same(a: object, b: object) -> bool:
    """Whether two summary fields are equal: frames and columns in their types and values, anything else by ==."""
    if isinstance(a, (pl.DataFrame, pl.Series)) and isinstance(b, type(a)):
        return (a.schema == b.schema if isinstance(a, pl.DataFrame) else a.dtype == b.dtype) and a.equals(b)  # type: ignore[union-attr]
    return a == b
