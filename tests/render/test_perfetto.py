"""Perfetto / Chrome-trace export: valid JSON, lanes as named processes, flows and gaps kept, and ntrace re-reads it to the same totals."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import polars as pl
from click.testing import CliRunner

from helpers import write_trace, x
from ntrace import load
from ntrace.cli import main
from ntrace.render.perfetto import GAP_CATEGORY, export_perfetto, perfetto_json, us_text


def _small(path: Path) -> Path:
    """Two launches on one device with an idle gap, a memcpy, a second device, a name that needs escaping."""
    return write_trace(
        path,
        [
            x("ProfilerStep#1", "user_annotation", 0, 100, pid=7, tid=7),
            x('aten::mul "q"\\', "cpu_op", 1, 10, pid=7, tid=7, **{"External id": 1}),
            x("nrt_execute", "privateuse1_runtime", 2, 5, pid=7, tid=8, correlation=11, **{"External id": 1}),
            x("nc_exec_running", "kernel", 9.5, 3.25, pid=0, tid=0, correlation=11, stream=0, device=0),
            x("aten::add", "cpu_op", 20, 10, pid=7, tid=7),
            x("nrt_execute", "privateuse1_runtime", 21, 5, pid=7, tid=8, correlation=12),
            x("nc_exec_running", "kernel", 40.001, 2, pid=0, tid=0, correlation=12),
            x("Memcpy HtoD", "gpu_memcpy", 30, 1, pid=0, tid=1),
            x("nc_exec_running", "kernel", 50, 2, pid=1, tid=0),
        ],
    )


def _events(doc: dict) -> list[dict]:
    return doc["traceEvents"]


def test_us_text_is_exact() -> None:
    ns = pl.Series([0, 1, 999, 1000, 1_661_938_466_304_581_123, -1234])
    assert pl.select(us_text(pl.lit(ns))).to_series().to_list() == ["0.000", "0.001", "0.999", "1.000", "1661938466304581.123", "-1.234"]


def test_structure(tmp_path: Path) -> None:
    profile = load(_small(tmp_path / "trace.json"))
    doc = json.loads(perfetto_json(profile))
    events = _events(doc)
    phases = Counter(e["ph"] for e in events)
    assert phases["X"] == profile.complete.height == 9
    names = {e["pid"]: e["args"]["name"] for e in events if e["name"] == "process_name"}
    assert list(names.values()) == ["framework · pid 7", "device · pid 0", "runtime_api · pid 7", "hardware · device 0", "hardware · device 1"]
    threads = {(e["pid"], e["tid"]) for e in events if e["name"] == "thread_name"}
    assert {(e["pid"], e["tid"]) for e in events if e["ph"] == "X"} == threads  # every slice sits on a named thread
    # flows: one s/f pair per launch link, the end bound to the device slice's start
    starts = {e["id"]: e for e in events if e["ph"] == "s"}
    ends = {e["id"]: e for e in events if e["ph"] == "f"}
    assert set(starts) == set(ends) and len(starts) == profile.links.height == 2
    assert all(e["bp"] == "e" for e in ends.values())
    assert sorted(e["ts"] for e in ends.values()) == [9.5, 40.001]
    # gaps: one async b/e pair per hardware idle gap, on the device's process
    gaps = [e for e in events if e.get("cat") == GAP_CATEGORY]
    assert Counter(e["ph"] for e in gaps) == {"b": 1, "e": 1}
    begin = next(e for e in gaps if e["ph"] == "b")
    assert begin["ts"] == 12.75 and begin["args"]["idle_us"] == 27.251
    assert names[begin["pid"]] == "hardware · device 0"
    escaped = next(e for e in events if e["ph"] == "X" and e["name"].startswith("aten::mul"))
    assert escaped["name"] == 'aten::mul "q"\\' and escaped["args"] == {"External id": 1}


def test_reread_gives_same_totals(tmp_path: Path) -> None:
    profile = load(_small(tmp_path / "trace.json"))
    again = load(export_perfetto(profile, tmp_path / "out.json"))
    assert again.lanes.equals(profile.lanes)
    assert again.gaps.equals(profile.gaps)
    assert again.window == profile.window
    assert again.steps.equals(profile.steps)
    assert again.hardware_tracks.select("busy", "idle", "gaps").equals(profile.hardware_tracks.select("busy", "idle", "gaps"))


def test_reread_real_traces(shared_trace: Path, tmp_path: Path) -> None:
    profile = load(shared_trace)
    again = load(export_perfetto(profile, tmp_path / "out.json"))
    assert again.lanes.equals(profile.lanes)
    assert again.gaps.equals(profile.gaps)
    assert again.links.height == profile.links.height
    assert again.hardware_tracks.select("busy", "idle", "gaps").equals(profile.hardware_tracks.select("busy", "idle", "gaps"))


def test_cli_export(tmp_path: Path) -> None:
    trace = _small(tmp_path / "trace.json")
    out = tmp_path / "sub.json"
    result = CliRunner().invoke(main, ["export", str(trace), "--perfetto", str(out)])
    assert result.exit_code == 0, result.output
    assert out.is_file() and str(out) in result.output
    assert load(out).lanes.equals(load(trace).lanes)
    assert not list(tmp_path.glob(".*.part"))


def test_cli_export_errors(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    write_trace(tmp_path / "a" / "trace.json", [x("k", "kernel", 0, 1)])
    write_trace(tmp_path / "a" / "other.pt.trace.json", [x("k", "kernel", 0, 1)])
    result = CliRunner().invoke(main, ["export", str(tmp_path / "a"), "--perfetto", str(tmp_path / "o.json")])
    assert result.exit_code == 2 and "holds 2 traces" in result.output
    result = CliRunner().invoke(main, ["export", str(tmp_path / "a" / "trace.json"), "--perfetto", str(tmp_path / "missing" / "o.json")])
    assert result.exit_code == 2 and "cannot be written" in result.output


def test_explorer_parquet_exports_too(tmp_path: Path) -> None:
    from helpers import explorer_rows

    path = tmp_path / "explorer.parquet"
    explorer_rows().write_parquet(path)
    profile = load(path)
    again = load(export_perfetto(profile, tmp_path / "out.json"))
    assert again.lanes.equals(profile.lanes) and again.gaps.equals(profile.gaps)
