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
from ntrace.analyses.findings import findings

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
    (event,) = copies["events"][0]
    (copy,) = [e for e in raw if e.get("name") == "Memcpy HtoD"]
    assert raw[event["idx"]] is copy and event["op"] == "aten::add" and copy["args"]["bytes"] == 2
    assert copies["time"][0] == event["dur"] == round(copy["dur"] * 1000)
    assert "2-byte value" in copies["summary"][0]
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
    assert "self device %" in out and "  calls" in out and "Self CPU time total:" in out and "Self NEURON time total: 2.355ms" in out
    table = out[out.index("Operators"):out.index("Self CPU time total")]
    assert [line.split()[0] for line in table.splitlines()[4:8]] == ["aten::mul", "aten::add", "aten::rsqrt", "aten::mean"]
    assert "Findings" in out and "aten::add copies a 2-byte value from host to device" in out
    assert "Memcpy HtoD (from aten::add) at +" in out  # events named by name, op and time, not by row numbers
    doc = orjson.loads(runner.invoke(main, ["analyze", str(RMSNORM), "-q", "--format", "json"]).stdout)
    by_trace = {Path(p["trace"]).relative_to(RMSNORM).parts[0]: p for p in doc["profiles"]}
    assert {p["backend"] for p in by_trace.values()} == {"NEURON"}
    naive = {o["name"]: o for o in by_trace["naive"]["ops"]}
    assert (naive["aten::mul"]["calls"], naive["aten::mul"]["self_cpu_us"], naive["aten::mul"]["self_device_us"]) == (3, 60.9, 1164.5)
    assert naive["aten::mul"]["self_device_pct"] == pytest.approx(49.45, abs=1e-2)
    kinds = [f["kind"] for f in by_trace["naive"]["findings"]]
    assert kinds.count("device_hotspot") == 3 and "host_to_device_copy" in kinds
    assert all(f["events"] and set(f["events"][0]) == {"name", "op", "ts_us", "dur_us"} for f in by_trace["naive"]["findings"])


def copy_trace(tmp_path: Path) -> Path:
    """Three host→device copies on a CUDA-style trace: a 4 MiB pinned batch in aten::copy_, 4 bytes in aten::copy_, 4 bytes inside aten::mul."""
    events = []
    for i, (op, size) in enumerate([("aten::copy_", 4 << 20), ("aten::copy_", 4), ("aten::mul", 4)]):
        t = i * 100
        events += [
            x(op, "cpu_op", t, 50),
            x("cudaMemcpyAsync", "cuda_runtime", t + 10, 10, correlation=i + 1),
            x("Memcpy HtoD (Pinned -> Device)", "gpu_memcpy", t + 30, 5, pid=0, tid=7, correlation=i + 1, bytes=size, device=0, stream=7),
        ]
    return write_trace(tmp_path / "copies.json", events)


def test_copy_advice_only_for_scalar_copies_inside_compute_ops(tmp_path: Path) -> None:
    """Input batches (large, or copied by a copy op) are the data a step needs: no advice; a 4-byte copy inside aten::mul is a CPU scalar moved per call."""
    profile = load(copy_trace(tmp_path))
    copies = profile.findings.filter(pl.col("kind") == "host_to_device_copy")
    assert copies["subject"].to_list() == ["aten::mul"]
    (event,) = copies["events"][0]
    assert (event["op"], event["ts"], event["dur"]) == ("aten::mul", 230_000, 5_000)
    assert profile.device_ns == 15_000  # every copy is device time, in the table as in torch's
    rows = {r["name"]: r for r in profile.ops.iter_rows(named=True)}
    assert rows["aten::copy_"]["self_device"] == 10_000 and rows["aten::mul"]["self_device"] == 5_000


def test_hotspots_count_calls_as_the_table_does(tmp_path: Path) -> None:
    profile = load(copy_trace(tmp_path))
    hot = profile.findings.filter(pl.col("kind") == "device_hotspot")
    table = {r["name"]: r for r in profile.ops.iter_rows(named=True)}
    for row in hot.iter_rows(named=True):
        calls = table[row["subject"]]["calls"]
        assert row["time"] == table[row["subject"]]["self_device"]
        assert f"in {calls} call{'s' if calls != 1 else ''}," in row["summary"]


def test_mtia_dma_and_waits_are_not_compute(tmp_path: Path) -> None:
    """mtia_ccp_events mixes compute with DMA requests and event waits: only compute makes hardware executions, so no finding proposes fusing waits."""
    events = [x("fc-dtype_Float", "mtia_ccp_events", 0, 5, pid=0, tid=0)]
    events += [x(name, "mtia_ccp_events", 20 + 40 * i, 5, pid=0, tid=0) for i, name in enumerate(["dma_request", "event_wait", "dma_request", "event_wait"])]
    events += [x("fc-dtype_Float", "mtia_ccp_events", 400, 5, pid=0, tid=0)]
    profile = load(write_trace(tmp_path / "mtia.json", events))
    assert profile.executions["name"].to_list() == ["fc-dtype_Float", "fc-dtype_Float"]
    assert profile.device_ns == 30_000  # all six are device activities
    assert profile.findings.filter(pl.col("kind") == "small_executions").is_empty()
    lanes = {r["lane"]: r["events"] for r in profile.lanes.iter_rows(named=True)}
    assert (lanes["hardware"], lanes["device"]) == (2, 4)


def test_findings_read_names_as_categoricals_or_text(tmp_path: Path) -> None:
    """Profile.launched keeps the events' categorical names; findings over it equal findings over the same rows as text, copies listed by op name as text sorts."""
    ops = ["zz_first_seen::op", "mm_second::op", "aa_last_seen::op"]  # new names: their categorical codes follow this order, not the text's
    events = []
    for i, op in enumerate(ops):
        t = i * 100
        events += [
            x(op, "cpu_op", t, 50),
            x("cudaMemcpyAsync", "cuda_runtime", t + 10, 10, correlation=i + 1),
            x("Memcpy HtoD (Pageable -> Device)", "gpu_memcpy", t + 30, 5 + i, pid=0, tid=7, correlation=i + 1, bytes=4, device=0, stream=7),
        ]
    profile = load(write_trace(tmp_path / "three.json", events))
    launched = profile.launched
    assert launched.schema["name"] == launched.schema["op"] == pl.Categorical()
    as_text = launched.with_columns(pl.col("name", "op").cast(pl.String))
    table = profile.op_table().with_columns(device=pl.lit(profile.device), device_ns=pl.lit(profile.device_ns))
    got = findings(table, launched, profile.executions)
    assert got.equals(findings(table, as_text, profile.executions))
    assert got.filter(pl.col("kind") == "host_to_device_copy")["subject"].to_list() == sorted(ops)
    hot = got.filter(pl.col("kind") == "device_hotspot")
    assert hot["subject"].to_list() == list(reversed(ops))  # by self device time: 7, 6, 5 µs
    assert [[e["op"] for e in events] for events in hot["events"]] == [[op] for op in reversed(ops)]
