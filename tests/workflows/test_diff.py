"""ntrace diff: per-op statuses with a threshold, lanes and gaps before/after, and the --fail-above exit code."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from helpers import REPO, REAL_TRACES, write_trace, x
from ntrace.cli import main
from ntrace.workflows.diff import diff

RMSNORM = REPO / "fixtures" / "rmsnorm"
BASE = REAL_TRACES / "trace_compare__base__base.json.gz"
TEST = REAL_TRACES / "trace_compare__test__test.json.gz"
needs_fixtures = pytest.mark.skipif(not RMSNORM.is_dir(), reason="fixtures/rmsnorm not generated")
needs_traces = pytest.mark.skipif(not BASE.is_file(), reason=f"{REAL_TRACES} is absent")


def total_ns(path: Path, cats: tuple[str, ...] = ("kernel", "gpu_memcpy", "gpu_memset")) -> int:
    """Summed duration of the events of these categories (default: every device activity) by plain JSON walking, exact ns."""
    events = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)["traceEvents"]
    return sum(int(e["dur"] * 1000) for e in events if e.get("ph") == "X" and e.get("cat") in cats)


def step(tmp_path: Path, name: str, mul_us: float, add_us: float | None, cpu_us: float = 10) -> Path:
    """A one-op-per-kernel trace: aten::mul (and aten::add) each launching one execution of the given length."""
    events = [x("aten::mul", "cpu_op", 0, cpu_us), x("nrt_execute", "privateuse1_runtime", 1, 1, correlation=1),
              x("nc_exec_running", "kernel", 20, mul_us, pid=0, tid=0, correlation=1)]
    if add_us is not None:
        events += [x("aten::add", "cpu_op", 100, 10), x("nrt_execute", "privateuse1_runtime", 101, 1, correlation=2),
                   x("nc_exec_running", "kernel", 120, add_us, pid=0, tid=0, correlation=2)]
    return write_trace(tmp_path / f"{name}.json", events)


def test_statuses_follow_the_threshold(tmp_path: Path) -> None:
    base = step(tmp_path, "base", mul_us=100, add_us=50)
    d = diff(base, step(tmp_path, "slower", mul_us=110, add_us=None, cpu_us=10.4), threshold=5)
    rows = {r["name"]: r for r in d.ops.iter_rows(named=True)}
    assert rows["aten::mul"]["status_device"] == "slower" and rows["aten::mul"]["self_device_change_pct"] == pytest.approx(10)
    assert rows["aten::mul"]["status_cpu"] == "unchanged"  # self CPU 9 µs -> 9.4 µs is 4.4 %
    assert rows["aten::add"]["status_device"] == "removed" and rows["aten::add"]["test_calls"] is None
    assert d.base_device == 150_000 and d.test_device == 110_000 and d.device_change_pct == pytest.approx(-100 * 40 / 150)
    assert not d.fails(0)
    d = diff(step(tmp_path, "small", mul_us=100, add_us=None), base, threshold=60)
    rows = {r["name"]: r for r in d.ops.iter_rows(named=True)}
    assert rows["aten::add"]["status_device"] == "added" and rows["aten::mul"]["status_device"] == "unchanged"
    assert d.fails(49) and not d.fails(50)
    d = diff(step(tmp_path, "fast", mul_us=80, add_us=50), base)
    assert dict(zip(d.ops["name"], d.ops["status_device"]))["aten::mul"] == "slower"
    d = diff(base, step(tmp_path, "fast2", mul_us=80, add_us=50))
    assert dict(zip(d.ops["name"], d.ops["status_device"]))["aten::mul"] == "faster"


def test_identical_inputs_are_unchanged(tmp_path: Path) -> None:
    base = step(tmp_path, "base", mul_us=100, add_us=50)
    d = diff(base, base)
    judged = d.ops.filter(d.ops["status_device"].is_not_null())
    assert set(judged["status_device"]) == {"unchanged"} and set(d.ops["status_cpu"]) == {"unchanged"}
    assert set(judged["name"]) == {"aten::mul", "aten::add"}  # the runtime calls carry no device time: not judged on it
    assert d.device_change_pct == 0 and not d.fails(0)
    assert (d.lanes["base_total"] == d.lanes["test_total"]).all()


@needs_traces
def test_real_before_after_pair() -> None:
    d = diff(BASE, TEST)
    assert d.base_device == total_ns(BASE) and d.test_device == total_ns(TEST)
    status = dict(zip(d.ops["name"], d.ops["status_device"]))
    # this sampled trace launches everything outside any cpu_op: all device time is unlinked, which is compared, never "added"
    assert {n: s for n, s in status.items() if s is not None} == {"[unlinked device time]": "unchanged"}
    cpu = dict(zip(d.ops["name"], d.ops["status_cpu"]))
    assert {n for n, s in cpu.items() if s == "added"} == {"AddmmBackward0", "All2All_Pooled_Req", "CatBackward0"}
    gaps = {(r["kind"], r["stat"]): (r["base"], r["test"]) for r in d.gaps.iter_rows(named=True)}
    assert gaps[("hardware_idle", "count")] == (5, 4)
    hw = d.lanes.filter(d.lanes["lane"] == "hardware").row(0, named=True)
    assert (hw["base_total"], hw["test_total"]) == (total_ns(BASE, ("kernel",)), total_ns(TEST, ("kernel",)))


@needs_traces
def test_cli_exit_codes_on_the_real_pair() -> None:
    runner = CliRunner()
    shrink = runner.invoke(main, ["diff", str(BASE), str(TEST), "--fail-above", "0"])
    assert shrink.exit_code == 0, shrink.output
    assert "1.694ms -> 1.690ms (-0.2%)" in shrink.output
    grow = runner.invoke(main, ["diff", str(TEST), str(BASE), "--fail-above", "0.2"])
    assert grow.exit_code == 1 and "fail: device time grew +0.2%" in grow.output
    assert runner.invoke(main, ["diff", str(TEST), str(BASE), "--fail-above", "0.3"]).exit_code == 0
    assert runner.invoke(main, ["diff", str(TEST), str(BASE)]).exit_code == 0


@needs_fixtures
def test_cli_on_two_fixture_variants(tmp_path: Path) -> None:
    runner = CliRunner()
    worse = runner.invoke(main, ["diff", str(RMSNORM / "fused"), str(RMSNORM / "naive"), "--fail-above", "10", "--format", "json"])
    assert worse.exit_code == 1
    doc = orjson.loads(worse.stdout)
    assert doc["schema"] == "ntrace.diff/3"
    assert doc["device_time_us"] == {"base": 403.3, "test": 2354.9}
    status = {o["name"]: o["status_device"] for o in doc["ops"]}
    assert status["aten::_fused_rms_norm"] == "removed"
    assert {status[n] for n in ("aten::mul", "aten::add", "aten::rsqrt", "aten::mean")} == {"added"}
    assert doc["gaps"]["hardware_idle"]["count"] == {"base": 0, "test": 5}
    better = runner.invoke(main, ["diff", str(RMSNORM / "naive"), str(RMSNORM / "compiled"), "--fail-above", "0"])
    assert better.exit_code == 0 and "(-84.1%)" in better.output
    bad = runner.invoke(main, ["diff", str(RMSNORM / "naive"), str(tmp_path / "missing")])
    assert bad.exit_code == 2 and "error:" in bad.output


def test_unlinked_device_time_is_compared_never_added(tmp_path: Path) -> None:
    """BASE has no unlinked device time, TEST has some: the row is device time that grew ("slower"), not a new op."""
    base = step(tmp_path, "base", mul_us=100, add_us=None)
    events = json.loads(base.read_text())["traceEvents"] + [x("nc_exec_running", "kernel", 300, 40, pid=0, tid=0)]
    test = write_trace(tmp_path / "test.json", events)
    d = diff(base, test)
    row = d.ops.filter(d.ops["name"] == "[unlinked device time]").row(0, named=True)
    assert (row["status_device"], row["status_cpu"], row["base_self_device"], row["test_self_device"]) == ("slower", None, None, 40_000)
    assert d.device_change_pct == 40.0


def test_diff_warns_when_sides_cannot_be_compared(tmp_path: Path) -> None:
    a = write_trace(tmp_path / "a.json", [x("aten::mm", "cpu_op", 0, 10)], deviceProperties=[{"id": 0, "name": "NVIDIA A100"}])
    b = write_trace(tmp_path / "b.json", [x("aten::conv", "cpu_op", 0, 10)], deviceProperties=[{"id": 0, "name": "NVIDIA H100"}])
    d = diff(a, b)
    assert any("different device models" in w for w in d.warnings) and any("share only 0 of 1 op names" in w for w in d.warnings)
    result = CliRunner().invoke(main, ["diff", str(a), str(b), "--format", "json"])
    assert result.exit_code == 0 and orjson.loads(result.stdout)["warnings"] == list(d.warnings)
    assert all(f"warning: {w}" in result.stderr for w in d.warnings)
