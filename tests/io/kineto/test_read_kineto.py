"""decode.py: one decode into a typed events frame, ns-exact times, linking keys lifted out of args."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from helpers import write_trace, x
from ntrace.io.kineto import read_kineto
from ntrace.trace import EVENT_COLUMNS
from ntrace.errors import TraceFormatError


def test_schema_and_ns_times(tmp_path: Path) -> None:
    events = [
        x("aten::mul", "cpu_op", 4203669604595.407, 340.024, **{"External id": 7, "Input Dims": [[4, 512], []]}),
        x("k", "kernel", 1695835542515301, 104, pid=0, tid=7, correlation=12, stream=7, device=0),
        {"ph": "s", "id": 12, "pid": 1, "tid": 1, "ts": 1.5, "cat": "ac2g", "name": "ac2g"},
        {"ph": "f", "id": 12, "pid": 0, "tid": 7, "ts": 2, "cat": "ac2g", "name": "ac2g", "bp": "e"},
    ]
    ev = read_kineto(write_trace(tmp_path / "t.json", events)).events
    assert dict(ev.schema) == EVENT_COLUMNS
    first = ev.row(0, named=True)
    assert first["ts"] == 4203669604595407 and first["dur"] == 340024 and first["end"] == 4203669604935431
    assert first["external_id"] == 7 and first["input_dims"] == "[[4,512],[]]"
    kernel = ev.row(1, named=True)
    # an absolute epoch timestamp in µs keeps every integer microsecond (float64 *1000 would not)
    assert kernel["ts"] == 1695835542515301000
    assert (kernel["correlation"], kernel["stream"], kernel["device"], kernel["pid"], kernel["tid"]) == (12, 7, 0, "0", "7")
    assert ev["flow_id"].to_list()[2:] == [12, 12] and ev["flow_bp"].to_list()[3] == "e"


@pytest.mark.parametrize("fast", [True, False])
def test_gzip_and_plain_decode_alike(tmp_path: Path, fast: bool) -> None:
    events = [x(f"op{i}", "cpu_op", i * 10.5, 3.25, tid=i % 3) for i in range(50)]
    plain = read_kineto(write_trace(tmp_path / "a.json", events), fast=fast).events
    zipped = read_kineto(write_trace(tmp_path / "b.json.gz", events, gz=True), fast=fast).events
    assert plain.equals(zipped)


def test_fast_and_plain_paths_agree_on_odd_types(tmp_path: Path) -> None:
    # a string pid and a string ts force nothing special on the typed path; a list name does
    events = [x("a", "cpu_op", "10.5", 2, pid="Spans"), x("b", "cpu_op", 20, "3")]
    path = write_trace(tmp_path / "t.json", events)
    assert read_kineto(path, fast=True).events.equals(read_kineto(path, fast=False).events)
    odd = write_trace(tmp_path / "odd.json", [{**x("a", "cpu_op", 1, 2), "name": ["not", "text"]}])
    assert read_kineto(odd).events["name"].to_list() == ['["not","text"]']


def test_top_level_array_and_metadata(tmp_path: Path) -> None:
    arr = tmp_path / "arr.json"
    arr.write_text(json.dumps([x("a", "cpu_op", 1, 2)]))
    assert read_kineto(arr).events.height == 1
    meta = read_kineto(write_trace(tmp_path / "m.json", [], deviceProperties=[{"id": 0, "name": "A100"}], baseTimeNanoseconds=5)).meta
    assert meta["deviceProperties"][0]["name"] == "A100" and meta["baseTimeNanoseconds"] == 5


def test_negative_duration_clamped_with_warning(tmp_path: Path) -> None:
    decoded = read_kineto(write_trace(tmp_path / "t.json", [x("a", "cpu_op", 1, -5), x("b", "cpu_op", 2, 1)]))
    assert decoded.events["dur"].to_list() == [0, 1000]
    assert any("negative" in w for w in decoded.warnings)


def test_not_json_is_a_format_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.json"
    bad.write_bytes(b"{not json")
    with pytest.raises(TraceFormatError, match="bad.json"):
        read_kineto(bad)
    gz = tmp_path / "bad.json.gz"
    gz.write_bytes(gzip.compress(b"{}")[:-6])
    with pytest.raises(TraceFormatError, match="gzip"):
        read_kineto(gz)
