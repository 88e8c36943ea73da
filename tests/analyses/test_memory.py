"""The memory figures (ntrace.analyses.memory): the decoder keeps every `[memory]` arg exactly on all paths, the figures equal the plain-Python oracle's, and on a real CPU capture made here the per-op CPU Mem and Self CPU Mem equal torch's own key_averages()."""

from __future__ import annotations

import json
from collections import defaultdict
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

import ntrace.exprs as exprs_module
from helpers import write_trace, x
from ntrace import load
from ntrace.cli import main
from ntrace.summary import Summary
from ntrace.io.kineto import read_kineto
from ntrace.trace import MEMORY_COLUMNS
from oracle import memory as oracle

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def capture(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, tuple[int, int]]]:
    """A real CPU capture with profile_memory=True of a small model's forward and backward, and torch's (CPU Mem, Self CPU Mem) per key_averages() row."""
    path = tmp_path_factory.mktemp("memory") / "mem.json"
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    data = torch.randn(32, 64)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], profile_memory=True, record_shapes=True) as prof:
        for _ in range(2):
            model(data).sum().backward()
    prof.export_chrome_trace(str(path))
    return path, {a.key: (a.cpu_memory_usage, a.self_cpu_memory_usage) for a in prof.key_averages()}


def _by_name(rows: pl.DataFrame) -> dict[str, tuple[int, int]]:
    """(CPU Mem, Self CPU Mem) per name, user annotations and ops of one name added as torch's key does."""
    out: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for r in rows.iter_rows(named=True):
        out[r["name"]][0] += r["cpu_mem"]
        out[r["name"]][1] += r["self_cpu_mem"]
    return {k: (a, b) for k, (a, b) in out.items()}


def test_per_op_cpu_mem_equals_torch_key_averages(capture: tuple[Path, dict[str, tuple[int, int]]]) -> None:
    path, torch_rows = capture
    ours = _by_name(load(path).memory_ops)
    assert any(v != (0, 0) for v in torch_rows.values())
    assert {k: v for k, v in ours.items() if v != (0, 0)} == {k: v for k, v in torch_rows.items() if v != (0, 0)}


def test_memory_figures_equal_the_oracle(capture: tuple[Path, dict[str, tuple[int, int]]]) -> None:
    path, _ = capture
    profile = load(path)
    ours = {(r.pop("name"), r.pop("user_annotation")): r for r in profile.memory_ops.iter_rows(named=True)}
    assert ours == oracle.op_memory(path)
    recs = oracle.records(json.loads(path.read_text())["traceEvents"])
    assert profile.memory_series.drop("bytes").rows() == [(r["device_type"], r["device_id"], r["ts"], r["allocated"], r["reserved"]) for r in recs]
    assert {(r.pop("device_type"), r.pop("device_id")): r for r in profile.memory_devices.iter_rows(named=True)} == oracle.devices(recs)


def _record(ts: float, size: int, allocated: int, kind: int = 0, dev: int = -1, tid: int = 1) -> dict[str, object]:
    """A `[memory]` instant as Kineto writes it."""
    args = {"Total Reserved": 0, "Total Allocated": allocated, "Bytes": size, "Device Id": dev, "Device Type": kind, "Addr": 2**47 + 12345, "finished": False, "Ev Idx": 1}
    return {"ph": "i", "cat": "cpu_instant_event", "s": "t", "name": "[memory]", "pid": 1, "tid": tid, "ts": ts, "args": args}


SYNTHETIC = [
    x("outer", "cpu_op", 0, 10),
    x("outer", "cpu_op", 1, 8),  # folded into its parent of the same name
    x("inner", "cpu_op", 2, 2),
    x("other", "cpu_op", 3, 2, tid=2),  # another thread: records in its window count for it too
    _record(2, 4096, 4096),
    _record(4, -1024, 3072),  # at inner's end: inside (torch's window is closed)
    _record(4.5, 2**40, 2**40 + 3072, kind=1, dev=0),  # device memory
    _record(7, 512, 3584),
    _record(20, -512, 3072),  # in no op: the "[memory]" row
]


@pytest.mark.parametrize("stream_min", [0, 2**62], ids=["streaming", "in-memory"])
def test_synthetic_trace_equals_the_oracle(tmp_path: Path, stream_min: int, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(exprs_module, "STREAM_MIN", stream_min)  # the per-op group-by on either engine (a large trace's is streamed)
    path = write_trace(tmp_path / "t.json", SYNTHETIC)
    profile = load(path)
    ours = {(r.pop("name"), r.pop("user_annotation")): r for r in profile.memory_ops.iter_rows(named=True)}
    assert ours == oracle.op_memory(path)
    assert ours[("inner", False)]["self_cpu_mem"] == 3072
    assert ours[("outer", False)] == {"calls": 1, "cpu_mem": 3584, "self_cpu_mem": 512, "device_mem": 2**40, "self_device_mem": 2**40}
    assert ours[("[memory]", False)]["cpu_mem"] == -512
    peaks = profile.memory_devices.filter(pl.col("device_type") == 1).row(0, named=True)
    assert (peaks["peak_allocated"], peaks["peak_ts"]) == (2**40 + 3072, 4_500)


def test_every_decoder_keeps_the_memory_args_exactly(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "t.json", SYNTHETIC)
    fast, plain = read_kineto(path), read_kineto(path, fast=False)
    assert fast.events.equals(plain.events)
    rows = fast.events.filter(pl.col("name") == "[memory]").select(MEMORY_COLUMNS).rows()
    assert rows[2] == (2**40, 2**40 + 3072, 0, 2**47 + 12345, 1, 0)
    assert fast.events.filter(pl.col("name") != "[memory]").select(MEMORY_COLUMNS).drop_nulls().is_empty()
    cut = tmp_path / "cut.json"
    cut.write_bytes(path.read_bytes()[:-60])  # cut off mid-write: salvaged, the records before the cut kept
    salvaged = read_kineto(cut).events.filter(pl.col("name") == "[memory]").select(MEMORY_COLUMNS).rows()
    assert 0 < len(salvaged) < len(rows) and salvaged == rows[: len(salvaged)]


def test_no_memory_events_give_none(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "t.json", SYNTHETIC[:4])
    assert load(path).summary().memory_ops is None


def test_analyze_json_and_stored_summaries_carry_the_memory_figures(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "t.json", SYNTHETIC)
    summary = load(path).summary()
    stored = Summary.from_bytes(summary.to_bytes())  # what the Parquet cache and --jobs workers hand back
    assert stored is not None and summary.memory_ops is not None and summary.memory_series is not None
    assert stored.memory_ops is not None and stored.memory_ops.equals(summary.memory_ops) and stored.memory_series is not None and stored.memory_series.equals(summary.memory_series)
    empty = load(write_trace(tmp_path / "e.json", SYNTHETIC[:4])).summary()
    assert (restored := Summary.from_bytes(empty.to_bytes())) is not None and restored.memory_ops is None
    doc = json.loads(CliRunner().invoke(main, ["analyze", str(path), "--format", "json"]).stdout)
    mem = doc["profiles"][0]["memory"]
    assert [d["device"] for d in mem["devices"]] == ["CPU", "CUDA:0"]
    cpu = mem["devices"][0]
    assert (cpu["records"], cpu["allocs"], cpu["frees"], cpu["allocated_bytes"], cpu["freed_bytes"], cpu["peak_allocated_bytes"], cpu["peak_us"]) == (4, 2, 2, 4608, 1536, 4096, 2.0)
    assert {(o["name"], o["self_cpu_mem_bytes"]) for o in mem["ops"]} == {(k[0], v["self_cpu_mem"]) for k, v in oracle.op_memory(path).items()}
    plain = json.loads(CliRunner().invoke(main, ["analyze", str(write_trace(tmp_path / "n.json", SYNTHETIC[:4])), "--format", "json"]).stdout)
    assert plain["profiles"][0]["memory"] is None


def test_text_markdown_and_csv_show_the_memory_figures(tmp_path: Path) -> None:
    """Every output format has the memory tables: the CSV tables hold the oracle's bytes exactly, text and Markdown show each device's peak and each op; a trace without records shows none."""
    import csv
    import io

    path = write_trace(tmp_path / "t.json", SYNTHETIC)
    want = oracle.op_memory(path)
    run = lambda *args: CliRunner().invoke(main, ["analyze", *map(str, args)])  # noqa: E731
    ops = list(csv.DictReader(io.StringIO(run(path, "--format", "csv", "--table", "memory_ops").stdout)))
    assert {(r["name"], int(r["self_cpu_mem"]), int(r["device_mem"])) for r in ops} == {(k[0], v["self_cpu_mem"], v["device_mem"]) for k, v in want.items()}
    devices = {r["device"]: r for r in csv.DictReader(io.StringIO(run(path, "--format", "csv", "--table", "memory_devices").stdout))}
    assert (int(devices["CPU"]["peak_allocated_mem"]), int(devices["CUDA:0"]["peak_allocated_mem"])) == (4096, 2**40 + 3072)
    for fmt in ("table", "markdown"):
        out = run(path, "--format", fmt).stdout
        assert "Memory" in out and "Memory by op" in out and "CUDA:0" in out and "1.0 TiB" in out, fmt
        assert all(name in out.split("Memory by op")[1] for name, _ in want), fmt
        assert "Memory" not in run(write_trace(tmp_path / "n.json", SYNTHETIC[:4]), "--format", fmt).stdout
