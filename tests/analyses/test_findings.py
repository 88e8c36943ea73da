"""Findings: device hotspots, fusable runs of small executions, host→device copies inside ops — each naming its events."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import polars as pl
import pytest
from click.testing import CliRunner

from helpers import REPO, write_trace, x
from ntrace import load
from ntrace.cli import main

RMSNORM = REPO / "fixtures" / "rmsnorm"


def found(path: Path, kind: str) -> pl.DataFrame:
    """The findings of one kind for the trace at `path`."""
    return load(path).findings.filter(pl.col("kind") == kind)


def trace_of(variant: str) -> Path:
    (trace,) = (RMSNORM / variant).rglob("trace.json")
    return trace


def plain_events(path: Path) -> list[dict]:
    return json.loads(path.read_text())["traceEvents"]


def test_naive_hotspots_name_their_executions() -> None:
    path = trace_of("naive")
    hot = found(path, "device_hotspot")
    assert hot["subject"].to_list() == ["aten::mul", "aten::add", "aten::rsqrt"]
    assert hot["time"].to_list() == [1_164_500, 434_600, 415_000]
    raw = plain_events(path)
    for event in hot["events"][0]:
        assert raw[event["idx"]]["name"] == event["name"] == "nc_exec_running"
    assert sorted(raw[e["idx"]]["dur"] for e in hot["events"][0]) == [387.3, 388.2, 389.0]
    assert "49.45% of all device time" in hot["summary"][0]


def test_naive_add_copies_its_epsilon_to_the_device() -> None:
    path = trace_of("naive")
    copies = found(path, "host_to_device_copy")
    assert copies["subject"].to_list() == ["aten::add"]
    raw = plain_events(path)
    names = {raw[e["idx"]]["name"] for e in copies["events"][0]}
    assert names == {"aten::add", "nrt_tensor_write", "Memcpy HtoD"}
    (copy,) = [e for e in raw if e.get("name") == "Memcpy HtoD"]
    assert copies["time"][0] == round(copy["dur"] * 1000)
    for variant in ("fused", "compiled"):
        assert found(trace_of(variant), "host_to_device_copy").is_empty()


def run_trace(tmp_path: Path, execs: list[tuple[float, float]]) -> Path:
    """Executions (start µs, dur µs) on one NeuronCore, no host side."""
    return write_trace(tmp_path / "t.json", [x("nc_exec_running", "kernel", ts, dur, pid=0, tid=0) for ts, dur in execs])


def test_small_runs_and_the_time_fusion_could_remove(tmp_path: Path) -> None:
    # four 5 µs executions 20 µs apart, then one that follows after 2 ms (not a dispatch gap), then two big ones close together
    execs = [(0, 5), (25, 5), (50, 5), (75, 5), (2080, 5), (2100, 100), (2210, 100)]
    runs = found(run_trace(tmp_path, execs), "small_executions")
    assert runs.height == 1
    assert runs["time"][0] == 3 * 20_000
    assert [e["idx"] for e in runs["events"][0]] == [0, 1, 2, 3]
    assert "4 executions" in runs["summary"][0]


def test_no_run_when_gaps_are_shorter_than_the_executions(tmp_path: Path) -> None:
    assert found(run_trace(tmp_path, [(0, 50), (60, 50), (120, 50), (180, 50)]), "small_executions").is_empty()


def test_cpu_only_trace_has_no_findings(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "t.json", [x("aten::add", "cpu_op", 0, 5)])
    assert load(path).findings.is_empty()


def test_analyze_prints_the_op_table_and_findings() -> None:
    runner = CliRunner()
    text = runner.invoke(main, ["analyze", str(RMSNORM / "naive"), "-q", "--sort-by", "self_privateuse1_time_total", "--top", "4"])
    assert text.exit_code == 0, text.output
    out = text.output
    assert "Self NEURON %" in out and "# of Calls" in out and "Self CPU time total:" in out and "Self NEURON time total: 2.355ms" in out
    table = out[out.index("Operators"):out.index("Self CPU time total")]
    assert [line.split()[0] for line in table.splitlines()[4:8]] == ["aten::mul", "aten::add", "aten::rsqrt", "aten::mean"]
    assert "Findings" in out and "aten::add copies host memory to the device" in out
    doc = orjson.loads(runner.invoke(main, ["analyze", str(RMSNORM), "-q", "--format", "json"]).stdout)
    by_trace = {Path(p["trace"]).relative_to(RMSNORM).parts[0]: p for p in doc["profiles"]}
    assert {p["device"] for p in by_trace.values()} == {"NEURON"}
    naive = {o["name"]: o for o in by_trace["naive"]["ops"]}
    assert (naive["aten::mul"]["calls"], naive["aten::mul"]["self_cpu_us"], naive["aten::mul"]["self_device_us"]) == (3, 60.9, 1164.5)
    assert naive["aten::mul"]["device_pct"] == pytest.approx(0.4945, abs=1e-4)
    kinds = [f["kind"] for f in by_trace["naive"]["findings"]]
    assert kinds.count("device_hotspot") == 3 and "host_to_device_copy" in kinds
    assert all(f["events"] and {"idx", "name", "ts_us", "dur_us"} <= set(f["events"][0]) for f in by_trace["naive"]["findings"])
