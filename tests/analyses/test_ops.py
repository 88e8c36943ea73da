"""The per-op table against torch's own key_averages() of the same run, against the real GPU traces, and on hand-made traces."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import polars as pl
import pytest

from helpers import REAL_TRACES, shared_trace_files, write_trace, x
from ntrace import load
from ntrace.analyses.ops import UNLINKED, kernels, op_table
from ntrace.analyses.opview import SORT_KEYS, OpView
from ntrace.render.tables import op_tables_of
from ntrace.units import fmt_time


def torch_ns(us: float) -> int:
    """A time torch's key_averages() reports (float µs of integer ns) back as the integer ns it was made of."""
    return round(us * 1000)


@pytest.fixture(scope="module")
def torch_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[Any], list[Any]]:
    """A real CPU profile captured with torch: its trace file and key_averages() (by name and by shape)."""
    torch = pytest.importorskip("torch")
    from torch.profiler import ProfilerActivity, profile, record_function, schedule

    out = tmp_path_factory.mktemp("torch") / "trace.json"
    got: dict[str, Any] = {}

    def ready(prof: Any) -> None:
        prof.export_chrome_trace(str(out))
        got["by_name"] = list(prof.key_averages())
        got["by_shape"] = list(prof.key_averages(group_by_input_shape=True))

    x_in = torch.randn(32, 64)
    lin = torch.nn.Linear(64, 64)
    with profile(activities=[ProfilerActivity.CPU], record_shapes=True, schedule=schedule(wait=1, warmup=1, active=2), on_trace_ready=ready) as prof:
        for _ in range(4):
            with record_function("outer"):
                y = lin(x_in).relu()
                with record_function("inner"):
                    (y * 2 + 1).sum().item()
            torch.rms_norm(x_in, (64,))
            prof.step()
    return out, got["by_name"], got["by_shape"]


def test_self_cpu_matches_torch_key_averages(torch_run: tuple[Path, list[Any], list[Any]]) -> None:
    path, by_name, _ = torch_run
    table = load(path).ops
    ours = {r["name"]: r for r in table.iter_rows(named=True)}
    assert set(ours) == {e.key for e in by_name}
    assert "ProfilerStep*" in ours and "outer" in ours and "aten::linear" in ours
    for evt in by_name:
        row = ours[evt.key]
        assert row["calls"] == evt.count, evt.key
        assert row["self_cpu"] == torch_ns(evt.self_cpu_time_total), (evt.key, row["self_cpu"], evt.self_cpu_time_total)
        assert row["cpu_total"] == torch_ns(evt.cpu_time_total), (evt.key, row["cpu_total"], evt.cpu_time_total)
    assert load(path).device == "none"
    assert table["self_device"].sum() == 0


def test_group_by_shape_matches_torch(torch_run: tuple[Path, list[Any], list[Any]]) -> None:
    path, _, by_shape = torch_run
    table = load(path).op_table(OpView(group_by_shape=True))
    ours = {(r["name"], r["input_dims"] or "[]"): r for r in table.iter_rows(named=True)}
    theirs = {(e.key, json.dumps(e.input_shapes, separators=(",", ":"))): e for e in by_shape}
    assert set(ours) == set(theirs)
    for key, evt in theirs.items():
        assert ours[key]["calls"] == evt.count, key
        assert ours[key]["self_cpu"] == torch_ns(evt.self_cpu_time_total), key
        assert ours[key]["cpu_total"] == torch_ns(evt.cpu_time_total), key


def test_device_time_adds_up_to_every_device_activity(shared_trace: Path) -> None:
    """torch's device footer: every device-side activity (kernels, copies, memsets), not only the hardware lane's compute."""
    profile = load(shared_trace)
    table = profile.ops
    device = profile.complete.filter(pl.col("side") == "device", pl.col("cat").str.to_lowercase() != "gpu_user_annotation")["dur"].sum()
    assert table["self_device"].sum() == profile.device_ns == device
    assert profile.kernels["total"].sum() == device and profile.kernels["calls"].sum() == profile.activities.height
    if device:
        assert table["self_device_pct"].sum() == pytest.approx(100.0)
    unlinked = table.filter(pl.col("name") == UNLINKED)
    assert unlinked.height <= 1
    # the unlinked row is the only one that carries device time without CPU time
    assert table.filter(pl.col("cpu_total") == 0, pl.col("self_device") > 0, pl.col("name") != UNLINKED).height == 0


@pytest.mark.parametrize("name", ["amd_trace__mi250_minitoy_train_ROCm6_2_kineto.json.gz", "triton_example__triton_example.json.gz"])
def test_self_device_per_op_matches_external_ids_in_the_json(name: str) -> None:
    """Where device activities carry their launching op's External id (newer Kineto), group their time by it in plain Python: the cpu_op, never a user annotation."""
    path = REAL_TRACES / name
    if not path.is_file():
        pytest.skip(f"{path} is absent")
    events = [e for e in json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)["traceEvents"] if e.get("ph") == "X"]
    op_of = {}
    for e in events:
        if e.get("cat") == "cpu_op" and "External id" in e.get("args", {}):
            op_of.setdefault(e["args"]["External id"], e["name"])
    want: Counter[str] = Counter()
    for e in events:
        if e.get("cat") in ("kernel", "gpu_memcpy", "gpu_memset"):
            want[op_of.get(e.get("args", {}).get("External id"), UNLINKED)] += int(e["dur"] * 1000)
    table = load(path).ops
    got = {r["name"]: r["self_device"] for r in table.iter_rows(named=True) if r["self_device"]}
    assert got == {k.replace("ProfilerStep#", "ProfilerStep*") if k.startswith("ProfilerStep#") else k: v for k, v in want.items() if v}


def test_device_names(tmp_path: Path) -> None:
    neuron = write_trace(tmp_path / "n.json", [x("nrt_execute", "privateuse1_runtime", 0, 1)])
    assert load(neuron).device == "NEURON"
    cuda = write_trace(tmp_path / "c.json", [x("cudaLaunchKernel", "cuda_runtime", 0, 1)])
    assert load(cuda).device == "CUDA"
    cpu = write_trace(tmp_path / "p.json", [x("aten::add", "cpu_op", 0, 1)])
    assert load(cpu).device == "none"


def neuron_events() -> list[dict[str, Any]]:
    """A step with an outer op whose child launches one execution, a direct launch, and an execution nobody launched."""
    return [
        x("ProfilerStep#7", "user_annotation", 0, 200),
        x("aten::outer", "cpu_op", 10, 100),
        x("aten::inner", "cpu_op", 20, 40),
        x("nrt_execute", "privateuse1_runtime", 30, 10, correlation=1),
        x("nrt_execute", "privateuse1_runtime", 80, 10, correlation=2),
        x("aten::mul", "cpu_op", 150, 20),
        x("aten::mul", "cpu_op", 175, 20),
        x("nc_exec_running", "kernel", 100, 30, pid=0, tid=0, correlation=1),
        x("nc_exec_running", "kernel", 140, 50, pid=0, tid=0, correlation=2),
        x("nc_exec_running", "kernel", 300, 7, pid=0, tid=0),
    ]


def test_self_and_total_device_time_on_a_hand_made_trace(tmp_path: Path) -> None:
    profile = load(write_trace(tmp_path / "t.json", neuron_events()))
    table = profile.op_table(OpView(sort_by="self_privateuse1_time_total"))
    rows = {r["name"]: r for r in table.iter_rows(named=True)}
    assert profile.device == "NEURON"
    assert table["name"].to_list()[:3] == ["aten::outer", "aten::inner", UNLINKED]
    assert rows["aten::inner"]["self_device"] == 30_000 and rows["aten::inner"]["device_total"] == 30_000
    assert rows["aten::outer"]["self_device"] == 50_000 and rows["aten::outer"]["device_total"] == 80_000
    assert rows["ProfilerStep*"]["self_device"] == 0 and rows["ProfilerStep*"]["device_total"] == 80_000
    assert rows[UNLINKED]["self_device"] == 7_000 and rows[UNLINKED]["calls"] == 1
    assert rows["aten::outer"]["self_cpu"] == 100_000 - 40_000 - 10_000
    assert rows["aten::mul"]["calls"] == 2 and rows["aten::mul"]["cpu_avg"] == 20_000
    assert rows["aten::outer"]["self_device_pct"] == pytest.approx(50 / 87 * 100)
    assert rows["aten::outer"]["self_cpu_pct"] == pytest.approx(50 / 200 * 100) and rows["aten::outer"]["cpu_total_pct"] == pytest.approx(100 / 200 * 100)
    assert rows["nrt_execute"]["calls"] == 2 and rows["nrt_execute"]["self_device"] == 0


def test_same_name_only_child_folds_into_its_parent(tmp_path: Path) -> None:
    """torch's _remove_dup_nodes: aten::sum inside aten::sum (only child) counts as one call."""
    events = [x("aten::sum", "cpu_op", 0, 100), x("aten::sum", "cpu_op", 10, 50), x("aten::fill_", "cpu_op", 20, 5)]
    rows = {r["name"]: r for r in load(write_trace(tmp_path / "t.json", events)).ops.iter_rows(named=True)}
    assert rows["aten::sum"]["calls"] == 1
    assert rows["aten::sum"]["self_cpu"] == 95_000 and rows["aten::sum"]["cpu_total"] == 100_000


@pytest.mark.parametrize("key", sorted(SORT_KEYS))
def test_sort_keys(tmp_path: Path, key: str) -> None:
    table = load(write_trace(tmp_path / "t.json", neuron_events())).op_table(OpView(sort_by=key))
    column = table[SORT_KEYS[key]].to_list()
    assert column == sorted(column, reverse=True)


def test_unknown_sort_key(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="self_cpu_time_total"):
        OpView(sort_by="bogus")


def test_cli_analyze_op_table_views(tmp_path: Path, torch_run: tuple[Path, list[Any], list[Any]]) -> None:
    from click.testing import CliRunner

    from ntrace.cli import main

    path, by_name, _ = torch_run
    runner = CliRunner()
    cpu = runner.invoke(main, ["analyze", str(path), "-q", "--top", "3", "--sort-by", "cpu_time_total"])
    assert cpu.exit_code == 0, cpu.output
    assert "self cpu %" in cpu.output and "self device" not in cpu.output and "NEURON" not in cpu.output
    table = cpu.output[cpu.output.index("Operators"):cpu.output.index("Self CPU time total")]
    assert table.splitlines()[4].split()[0] == "ProfilerStep*"  # the step encloses everything
    assert len([line for line in table.splitlines() if line and not line.startswith("-")]) == 1 + 1 + 3
    total = sum(e.self_cpu_time_total for e in by_name)
    footer = cpu.output[cpu.output.index("Self CPU time total: ") :].split()[4]
    assert footer == fmt_time(torch_ns(total)), (footer, total)
    shapes = runner.invoke(main, ["analyze", str(path), "-q", "--group-by-shape", "--format", "json"])
    rows = [o for o in orjson.loads(shapes.stdout)["profiles"][0]["ops"] if o["name"] == "aten::addmm"]
    assert rows and all(o["input_dims"] for o in rows)
    bad = runner.invoke(main, ["analyze", str(path), "--sort-by", "bogus"])
    assert bad.exit_code == 2


def test_a_span_that_outlives_the_op_it_starts_in(tmp_path: Path) -> None:
    """The issue's minimal case: ProfilerStep#1 [0,1000), c10d::alltoall_base_ [100,200), hccl:all_to_all [150,850) → self 200 / 100 / 700 µs.

    The collective starts inside the op and ends after it, so torch's stack pops the op and the
    collective's parent is the step: nothing is subtracted from the op it only starts in.
    """
    events = [
        x("ProfilerStep#1", "user_annotation", 0, 1000),
        x("c10d::alltoall_base_", "cpu_op", 100, 100),
        x("hccl:all_to_all", "user_annotation", 150, 700),
    ]
    rows = {r["name"]: r for r in load(write_trace(tmp_path / "t.json", events)).ops.iter_rows(named=True)}
    assert {n: r["self_cpu"] for n, r in rows.items()} == {"ProfilerStep*": 200_000, "c10d::alltoall_base_": 100_000, "hccl:all_to_all": 700_000}
    assert all(r["calls"] == 1 for r in rows.values())


def test_device_time_goes_to_the_op_not_the_annotation_around_it(tmp_path: Path) -> None:
    """A kernel launched inside record_function("block") inside aten::linear is aten::linear's; a launch with only annotations open is unlinked (torch keeps annotations on a separate stack)."""
    events = [
        x("aten::linear", "cpu_op", 0, 100),
        x("block", "user_annotation", 10, 50),
        x("cudaLaunchKernel", "cuda_runtime", 20, 5, correlation=1),
        x("gemm", "kernel", 40, 30, pid=0, tid=7, correlation=1),
        x("nccl:all_reduce", "user_annotation", 200, 50),
        x("cudaLaunchKernel", "cuda_runtime", 210, 5, correlation=2),
        x("ncclKernel", "kernel", 220, 80, pid=0, tid=7, correlation=2),
    ]
    rows = {r["name"]: r for r in load(write_trace(tmp_path / "t.json", events)).ops.iter_rows(named=True)}
    assert rows["aten::linear"]["self_device"] == 30_000 and rows["block"]["self_device"] == 0 and rows["block"]["device_total"] == 0
    assert rows["nccl:all_reduce"]["self_device"] == 0 and rows[UNLINKED]["self_device"] == 80_000


VIEWS = [OpView(), OpView(sort_by="device_time_total", top=3), OpView(sort_by="count", group_by_shape=True), OpView(sort_by="cpu_time", top=1, group_by_shape=True)]


@pytest.fixture(scope="module")
def many_summaries(tmp_path_factory: pytest.TempPathFactory) -> list[Any]:
    """Every real trace's summary and three hand-made ones: footers of 0 (one zero-length op, no device), only the unlinked device time row, no row at all (the profiler's own span)."""
    tmp = tmp_path_factory.mktemp("ops")
    zero = write_trace(tmp / "zero.json", [x("aten::empty", "cpu_op", 5, 0)])
    unlinked = write_trace(tmp / "unlinked.json", [x("Memcpy HtoD", "gpu_memcpy", 5, 3, pid=0, tid=7)])
    none = write_trace(tmp / "none.json", [x("PyTorch Profiler (0)", "Trace", 0, 10)])
    summaries = [load(p).summary() for p in [*shared_trace_files(), zero, unlinked, none]]
    assert (summaries[-3].self_cpu_ns, summaries[-3].device_ns, summaries[-2].op_groups.height, summaries[-1].op_groups.height) == (0, 0, 1, 0)
    return summaries


@pytest.mark.parametrize("view", VIEWS, ids=repr)
def test_many_traces_op_tables_at_once_are_each_traces_own(many_summaries: list[Any], view: OpView) -> None:
    """The op tables of many traces made by one query (as the analyze JSON of a directory makes them) are, frame for frame, each trace's table made alone; percents are the plain-Python product of the time and the footer's reciprocal."""
    together = op_tables_of(many_summaries, view)
    for summary, table in zip(many_summaries, together, strict=True):
        alone = op_table(summary.op_groups, summary.self_cpu_ns, summary.device_ns, view)
        assert table.equals(alone) and table.schema == alone.schema, summary.path
        for row in table.iter_rows(named=True):
            for pct, ns, total in (("self_cpu_pct", "self_cpu", summary.self_cpu_ns), ("cpu_total_pct", "cpu_total", summary.self_cpu_ns), ("self_device_pct", "self_device", summary.device_ns)):
                assert row[pct] == (row[ns] * 100.0 * (1.0 / total) if total else 0.0), (summary.path, row["name"], pct)


#: A device time total whose reciprocal times itself is one bit below 1.0 (d * (1 / d) < 1): a true division and Polars' product differ there.
_ODD_TOTAL = 61_513_760


@pytest.mark.parametrize("totals", [[_ODD_TOTAL], [_ODD_TOTAL, 5], [3, 7, _ODD_TOTAL - 10]], ids=["one_row", "two_rows", "three_rows"])
def test_kernel_shares_are_what_dividing_by_the_total_gave(totals: list[int]) -> None:
    """The shares stay those of the formula published before, Polars' column / number on the kernels' frame: a true division for one row, the reciprocal's product for more."""
    device_ns = sum(totals) if len(totals) > 1 else totals[0]
    activities = pl.DataFrame({"name": [f"k{i}" for i in range(len(totals))], "tid": ["7"] * len(totals), "dur": totals})
    got = kernels(activities, device_ns)
    assert got["share"].to_list() == got.select(pl.col("total") / device_ns).to_series().to_list()
    if len(totals) == 1:
        assert got["share"].to_list() == [1.0] != [_ODD_TOTAL * (1.0 / _ODD_TOTAL)]
    else:
        assert got["share"].to_list() == [t * (1.0 / device_ns) for t in got["total"].to_list()]
    stacked = pl.concat([activities.with_columns(trace=pl.lit(k, pl.Int64)) for k in (0, 1)])
    keyed = kernels(stacked.with_columns(pl.Series("device_ns", [device_ns] * stacked.height)), "device_ns", ("trace",))  # a column, as joined in
    for k in (0, 1):
        assert keyed.filter(pl.col("trace") == k).drop("trace").equals(got)
