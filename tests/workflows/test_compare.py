"""ntrace compare on the seed fixtures (the seed's summary table), on explicit variant lists, and through the CLI."""

from __future__ import annotations

import gzip
import json
from decimal import Decimal
import shutil
from pathlib import Path

import orjson
import pytest
from click.testing import CliRunner

from helpers import REPO, REAL_TRACES, shared_trace_files, write_trace, x
from ntrace.cli import main
from ntrace.io.manifest import variant_name
from ntrace.workflows.compare import compare, find_variants
from ntrace.errors import InputError

RMSNORM = REPO / "fixtures" / "rmsnorm"
#: formats.md section 8: variant -> (device µs, self CPU µs, op calls that reached the device)
SEED = {"naive": (2354.9, 124.2, 6), "fused": (403.3, 47.6, 1), "compiled": (375.5, 98.4, 1)}

needs_fixtures = pytest.mark.skipif(not RMSNORM.is_dir(), reason="fixtures/rmsnorm not generated")


def plain_seed_numbers(variant: str) -> tuple[float, float, int]:
    """Device time, self CPU of device ops, their calls — by plain dict walking over the fixture's JSON (no ntrace code)."""
    (trace,) = (RMSNORM / variant).rglob("trace.json")
    events = [e for e in json.loads(trace.read_text())["traceEvents"] if e.get("ph") == "X"]
    activities = [e for e in events if e["cat"] in ("kernel", "gpu_memcpy")]
    device = sum(e["dur"] for e in activities)
    host = [e for e in events if e["cat"] not in ("kernel", "gpu_memcpy", "Trace")]
    ops = [e for e in host if e["cat"] == "cpu_op"]
    calls = {e["args"]["correlation"]: e for e in host if e["cat"] == "privateuse1_runtime" and "correlation" in e.get("args", {})}

    def inside(inner: dict, outer: dict) -> bool:
        return inner is not outer and inner["tid"] == outer["tid"] and outer["ts"] <= inner["ts"] and inner["ts"] + inner["dur"] <= outer["ts"] + outer["dur"]

    launching = set()
    for k in activities:
        call = calls[k["args"]["correlation"]]
        around = [o for o in ops if inside(call, o)]
        launching.add(id(min(around, key=lambda o: o["dur"])))
    names = {o["name"] for o in ops if id(o) in launching}
    rows = [o for o in ops if o["name"] in names]
    self_cpu = sum(o["dur"] - sum(c["dur"] for c in host if inside(c, o) and not any(inside(c, m) and inside(m, o) for m in host)) for o in rows)
    return device, self_cpu, len(rows)


@needs_fixtures
def test_compare_reproduces_the_seed_table() -> None:
    result = compare([RMSNORM])
    frame = result.variants
    assert (result.baseline, result.basis) == ("naive", "device")
    assert frame["name"].to_list() == ["naive", "fused", "compiled"]
    for row in frame.iter_rows(named=True):
        device, self_cpu, calls = SEED[row["name"]]
        assert row["device"] == round(device * 1000)
        assert row["self_cpu"] == round(self_cpu * 1000)
        assert row["device_op_calls"] == calls
        plain = plain_seed_numbers(row["name"])
        assert (row["device"] / 1000, row["self_cpu"] / 1000, row["device_op_calls"]) == pytest.approx(plain)
        assert row["device_name"] == "NEURON"
    speed = dict(zip(frame["name"], frame["speedup"]))
    assert speed["naive"] == 1.0
    assert speed["fused"] == pytest.approx(2354.9 / 403.3) and speed["compiled"] == pytest.approx(2354.9 / 375.5)
    gaps = dict(zip(frame["name"], frame["idle"]))
    assert gaps["naive"] > 0 and gaps["fused"] == 0 and gaps["compiled"] == 0
    compute = dict(zip(frame["name"], frame["compute"]))
    assert compute == {"naive": 2_354_900 - 3_200, "fused": 403_300, "compiled": 375_500}  # the naive add's 3.2 µs copy is device time, not compute


@needs_fixtures
def test_explicit_variants_keep_their_order_and_baseline() -> None:
    frame = compare([RMSNORM / "fused", RMSNORM / "naive"], baseline="naive").variants
    assert frame["name"].to_list() == ["fused", "naive"]
    assert frame["speedup"].to_list() == pytest.approx([2354.9 / 403.3, 1.0])
    with pytest.raises(InputError, match="not one of the variants"):
        compare([RMSNORM / "fused", RMSNORM / "naive"], baseline="bogus")


def test_variant_names_come_from_the_manifest_else_the_directory(tmp_path: Path) -> None:
    named = tmp_path / "run-a" / "session" / "ts"
    named.mkdir(parents=True)
    (tmp_path / "run-a" / "capture.json").write_text(json.dumps({"variant": "fused"}))
    write_trace(named / "trace.json", [x("aten::add", "cpu_op", 0, 5)])
    plain = tmp_path / "run-b"
    plain.mkdir()
    write_trace(plain / "trace.json", [x("aten::add", "cpu_op", 0, 5)])
    assert variant_name(named) == "fused" and variant_name(named / "trace.json") == "fused"
    assert variant_name(plain) == "run-b"
    assert [p.name for p, _ in find_variants([tmp_path])] == ["run-a", "run-b"]
    result = compare([tmp_path])
    frame = result.variants
    assert sorted(frame["name"]) == ["fused", "run-b"]
    assert frame["device"].to_list() == [0, 0] and frame["speedup"].to_list() == [None, None]
    assert result.basis == "step" and any("median profiler step" in w for w in result.warnings)


def test_an_empty_directory_is_an_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="holds no framework trace"):
        compare([tmp_path])


def test_real_traces_compare(tmp_path: Path) -> None:
    base, test = REAL_TRACES / "trace_compare__base__base.json.gz", REAL_TRACES / "trace_compare__test__test.json.gz"
    if not base.is_file():
        pytest.skip(f"{REAL_TRACES} is absent")
    frame = compare([base, test]).variants
    assert frame["name"].to_list() == ["trace_compare__base__base", "trace_compare__test__test"]
    sums = [_plain_sums(p) for p in (base, test)]
    assert frame["device"].to_list() == [d for d, _ in sums]  # every kernel, memcpy and memset
    assert frame["compute"].to_list() == [k for _, k in sums] == [432_000, 428_000]  # kernels only
    assert frame["speedup"][1] == sums[0][0] / sums[1][0]


def _plain_sums(path: Path) -> tuple[int, int]:
    """All device activity and kernels only (ns), summed over the JSON with the stdlib."""
    events = json.loads(gzip.decompress(path.read_bytes()), parse_float=Decimal)["traceEvents"]
    ns = [(e["cat"], int(e["dur"] * 1000)) for e in events if e.get("ph") == "X"]
    return sum(d for c, d in ns if c in ("kernel", "gpu_memcpy", "gpu_memset")), sum(d for c, d in ns if c == "kernel")


def test_comparisons_that_cannot_be_compared_warn(tmp_path: Path) -> None:
    """Different device models, different backends, few op names in common: each is a warning of compare and diff, on stderr from the CLI."""
    (tmp_path / "a").mkdir()
    a = write_trace(tmp_path / "a" / "t.json", [x("aten::mm", "cpu_op", 0, 10), x("cudaLaunchKernel", "cuda_runtime", 1, 2, correlation=1),
                                                 x("gemm", "kernel", 5, 3, pid=0, tid=7, correlation=1)], deviceProperties=[{"id": 0, "name": "NVIDIA A100"}])
    (tmp_path / "b").mkdir()
    b = write_trace(tmp_path / "b" / "t.json", [x("aten::conv", "cpu_op", 0, 10), x("hipLaunchKernel", "cuda_runtime", 1, 2, correlation=1),
                                                 x("conv", "kernel", 5, 3, pid=0, tid=7, correlation=1)], deviceProperties=[{"id": 0, "name": "AMD Instinct MI250X"}])
    warnings = compare([a.parent, b.parent]).warnings
    assert any("different device models" in w and "NVIDIA A100" in w and "MI250X" in w for w in warnings)
    assert any("different backends" in w and "ROCm" in w for w in warnings)
    assert any("share only 0 of 2 op names" in w for w in warnings)
    result = CliRunner().invoke(main, ["compare", str(a.parent), str(b.parent), "--format", "json"])
    assert result.exit_code == 0
    assert orjson.loads(result.stdout)["warnings"] == list(warnings)
    assert all(f"warning: {w}" in result.stderr for w in warnings)
    same = compare([a.parent, a.parent]).warnings
    assert same == ()


@needs_fixtures
def test_cli_compare_table_and_json(tmp_path: Path) -> None:
    runner = CliRunner()
    result = runner.invoke(main, ["compare", str(RMSNORM), "--format", "json"])
    assert result.exit_code == 0, result.output
    doc = orjson.loads(result.stdout)
    assert doc["schema"] == "ntrace.compare/3"
    got = {v["name"]: (v["device_time_us"], v["self_cpu_us"], v["device_op_calls"]) for v in doc["variants"]}
    assert got == SEED  # exact µs from integer ns
    assert set(doc["variants"][0]) == {
        "name", "path", "traces", "backend", "device_time_us", "compute_us", "self_cpu_us", "device_op_calls", "idle_us", "median_step_us", "speedup",
        "device_profiles", "mfu_pct", "active_pct", "dma_bytes",
    }  # fmt: skip
    assert (doc["baseline"], doc["basis"]) == ("naive", "device")
    text = runner.invoke(main, ["compare", str(RMSNORM)])
    assert text.exit_code == 0
    assert "2.355ms" in text.output and "403.300us" in text.output and "375.500us" in text.output and "6.27x" in text.output
    missing = runner.invoke(main, ["compare", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "does not exist" in missing.output


@needs_fixtures
def test_cli_compare_of_copied_variants_uses_directory_names(tmp_path: Path) -> None:
    for variant in ("naive", "compiled"):
        (trace,) = (RMSNORM / variant).rglob("trace.json")
        (tmp_path / f"my-{variant}").mkdir()
        shutil.copy(trace, tmp_path / f"my-{variant}" / "trace.json")
    result = CliRunner().invoke(main, ["compare", str(tmp_path / "my-compiled"), str(tmp_path / "my-naive"), "--format", "json"])
    names = [v["name"] for v in orjson.loads(result.stdout)["variants"]]
    assert names == ["my-compiled", "my-naive"]


def test_a_variants_figures_over_many_traces_are_the_sums_of_each_traces() -> None:
    """variant_row stacks every trace's op groups in one query: the result must be what each trace alone gives, added up (each alone is oracle-checked)."""
    from ntrace.workflows.analyze import summarize
    from ntrace.workflows.compare import comparability, variant_row

    summaries = [summarize(p) for p in shared_trace_files()]
    assert len(summaries) >= 8
    together = variant_row("all", REAL_TRACES, summaries)
    alone = [variant_row("one", p.path, [p]) for p in summaries]
    for figure in ("device", "compute", "self_cpu", "device_op_calls", "idle"):
        assert together[figure] == sum(row[figure] for row in alone), figure
    assert sum(row["self_cpu"] > 0 for row in alone) >= 3  # the figures are not all zero
    halves = [("a", summaries[: len(summaries) // 2]), ("b", summaries[len(summaries) // 2 :])]
    assert comparability(halves) == comparability([(n, list(reversed(s))) for n, s in halves])  # op names are a set over the traces


def test_many_variants_at_once_match_each_variant_by_a_plain_oracle() -> None:
    """variant_rows and comparability take every variant's traces in one query per figure: each variant's figures must still be its own, as plain Python over its summaries' rows gives them."""
    from ntrace.workflows.analyze import summarize
    from ntrace.workflows.compare import MIN_COMMON_OPS, comparability, variant_rows

    summaries = [summarize(p) for p in shared_trace_files()]
    sizes = [1, 3, 2, 1, 4, 2, 1]
    groups, at = [], 0
    for i, size in enumerate(sizes):  # consecutive runs of the traces, wrapping round: some traces in two variants
        picked = [summaries[(at + k) % len(summaries)] for k in range(size)]
        at += size
        groups.append((f"v{i}", REAL_TRACES, picked, ()))

    def oracle(picked: list) -> dict:
        per_row: dict = {}
        for t, s in enumerate(picked):
            for r in s.op_groups.to_dicts():
                key = (t, r["name"], r["user_annotation"])
                acc = per_row.setdefault(key, [0, 0, 0])
                acc[0] += r["self_cpu"]
                acc[1] += r["calls"]
                acc[2] += r["self_device"]
        kept = [v for (t, name, ann), v in per_row.items() if not ann and name not in ("[unlinked device time]", "ProfilerStep*") and v[2] > 0]
        steps = sorted(d for s in picked for d in s.steps["dur"].to_list())
        rank = max((50 * len(steps) + 99) // 100, 1)
        return {
            "self_cpu": sum(v[0] for v in kept), "device_op_calls": sum(v[1] for v in kept),
            "compute": sum(r["total"] for s in picked for r in s.lanes.to_dicts() if r["lane"] == "hardware"),
            "step": steps[rank - 1] if steps else 0,
        }

    from ntrace.analyses.ops import UNLINKED

    assert UNLINKED == "[unlinked device time]"
    rows = variant_rows(groups)
    assert [r["name"] for r in rows] == [g[0] for g in groups]
    for row, (_, _, picked, _) in zip(rows, groups):
        assert {k: row[k] for k in ("self_cpu", "device_op_calls", "compute", "step")} == oracle(picked)
    assert sum(r["self_cpu"] > 0 for r in rows) >= 3 and len({r["step"] for r in rows}) >= 3  # not all zero, not all alike

    def names(picked: list) -> set:
        return {r["name"] for s in picked for r in s.op_groups.to_dicts() if not r["user_annotation"] and r["name"] != UNLINKED}

    sides = [(name, picked) for name, _, picked, _ in groups]
    expected = []
    for name, picked in sides[1:]:
        a, b = names(sides[0][1]), names(picked)
        smaller = min(len(a), len(b))
        if smaller and len(a & b) < MIN_COMMON_OPS * smaller:
            expected.append(f"v0 and {name} share only {len(a & b)} of {smaller} op names")
    found = [w for w in comparability(sides) if " share only " in w]
    assert [w.split(": they run")[0] for w in found] == expected and expected
