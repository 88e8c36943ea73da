"""Processed Neuron device profiles: every figure equals the independent plain-Python checker (tests/device_oracle.py) to the ns and byte, the verdict follows the documented rule on both sides of it, damaged tables give warnings, and the CLI, analyze and compare show it all.

All profiles here are SYNTHETIC (fixtures/device/README.md): these tests check ntrace against the
published schema, not against a real Neuron Explorer output.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path

import orjson
import polars as pl
import pytest
from click.testing import CliRunner

import device_oracle as oracle
from helpers import REPO
from ntrace.analyses.device import OUTLIER_FACTOR, SMALL_DMA_BYTES, verdict
from ntrace.cli import main
from ntrace.neuron.device.layout import find_profiles
from ntrace.workflows.device import device, report

FIXTURES = REPO / "fixtures"
PROFILES = [p for p in find_profiles(FIXTURES) if "damaged" not in p.parts]
DAMAGED = FIXTURES / "device" / "damaged"


def ids(path: Path) -> str:
    return path.name if path.parent.name != "device_profiles" else f"{path.parents[3].name}/{path.name}"


def test_the_fixtures_hold_the_profiles() -> None:
    assert len([p for p in PROFILES if "rmsnorm" in p.parts]) == 8 and len([p for p in PROFILES if "device" in p.parts]) == 6


@pytest.mark.parametrize("path", PROFILES, ids=ids)
def test_every_figure_equals_the_checker(path: Path) -> None:
    r = report(path)
    want = oracle.profile_numbers(path)
    assert r.warnings == ()  # the profile's derived tables agree with its rows
    assert (r.executions.height, r.span_ns) == (want["span"]["executions"], want["span"]["total_ns"])
    per_core = {(e["engine"], e["core"]): {"count": e["instructions"], "instruction_ns": e["instruction_ns"], "active_ns": e["active_ns"]}
                for e in r.engines.filter(pl.col("core").is_not_null()).iter_rows(named=True)}  # fmt: skip
    assert per_core == want["instructions"]
    per_engine = {e["engine"]: {"count": e["instructions"], "instruction_ns": e["instruction_ns"], "active_ns": e["active_ns"]}
                  for e in r.engines.filter(pl.col("core").is_null()).iter_rows(named=True)}  # fmt: skip
    assert per_engine == want["engines"]
    for e in r.engines.iter_rows(named=True):
        assert e["active_pct"] == pytest.approx(100 * e["active_ns"] / want["span"]["total_ns"])
    ops = {(o["engine"], o["opcode"]): {"count": o["instructions"], "instruction_ns": o["instruction_ns"], "active_ns": o["active_ns"]} for o in r.opcodes.iter_rows(named=True)}
    assert ops.items() <= want["opcodes"].items()
    for engine in {k[0] for k in want["opcodes"]}:  # the top ones per engine, by instruction time
        mine = sorted((v["instruction_ns"] for k, v in want["opcodes"].items() if k[0] == engine), reverse=True)[:3]
        assert sorted((v["instruction_ns"] for k, v in ops.items() if k[0] == engine), reverse=True) == mine
    dma = {d["queue_type"]: {"packets": d["packets"], "bytes": d["bytes"], "active_ns": d["active_ns"]} for d in r.dma.iter_rows(named=True)}
    assert dma == want["dma"]
    small = r.dma.filter(pl.col("queue_type") == "all").row(0, named=True)["small_packets"]
    assert small == want["small_dma"]["small_packets"] and SMALL_DMA_BYTES == oracle.SMALL_DMA_BYTES
    assert r.hbm == want["hbm"]
    assert r.flops == {k: want["flops"][k] for k in ("model", "hardware", "transpose")}
    if "collectives" in want:
        got = {(c["operation"], c["algorithm"]): {k: c[k] for k in ("count", "time_ns", "active_ns", "median_ns", "max_ns", "outliers")} for c in r.collectives.iter_rows(named=True)}
        assert got == want["collectives"] and OUTLIER_FACTOR == oracle.OUTLIER_FACTOR
    if "throttle" in want:
        got = {t["type"]: {"events": t["events"], "duration_ns": t["duration_ns"], "active_ns": t["active_ns"], "util_ppm": round(t["utilization"] * 1_000_000)} for t in r.throttle.iter_rows(named=True)}
        assert got == want["throttle"]


@pytest.mark.parametrize("path", PROFILES, ids=ids)
def test_framework_breakdown_equals_the_checker(path: Path) -> None:
    r = report(path)
    want = oracle.rollup_stats(path, "framework")
    got = {f["framework"]: f for f in r.framework.iter_rows(named=True)}
    assert set(got) == set(want)
    for name, w in want.items():
        assert got[name]["instructions"] == w["instructions"]
        assert got[name]["hbm_bytes"] == sum(row["hbm_read_bytes"] + row["hbm_write_bytes"] for row in oracle.rows(path, "FrameworkInstruction") if row["framework_name"] == name)


@pytest.mark.parametrize("path", PROFILES, ids=ids)
def test_per_execution_engines_add_up(path: Path) -> None:
    """Each execution's instructions are those starting in its window, and its engine active time is their union, per engine."""
    r = report(path)
    inst = oracle.rows(path, "Instruction")
    windows = [(e["execution_start_ts"], e["execution_end_ts"]) for e in oracle.rows(path, "ExecutionInfo")]
    for row in r.per_execution.iter_rows(named=True):
        s, e = sorted(windows)[row["execution_index"]] if len(windows) > 1 else windows[0]
        mine = [i for i in inst if s <= i["start_ts"] < e]
        assert row["instructions"] == len(mine)
        for engine in ("tensor", "vector", "scalar", "gpsimd", "sync"):
            assert row[f"{engine}_ns"] == oracle.union_ns((i["start_ts"], i["end_ts"]) for i in mine if i["engine"] == engine)


def test_the_verdict_follows_the_documented_rule() -> None:
    assert report(FIXTURES / "device" / "compute_bound").bound == "compute"
    assert report(FIXTURES / "device" / "memory_bound").bound == "memory"
    assert verdict(111.0, 111.5) == "memory" and verdict(111.5, 111.5) == "compute" and verdict(None, 1.0) is None


def _profile(tmp_path: Path, name: str, flops: int, transpose: int, hbm: int, ratio: float) -> Path:
    """A minimal profile: one execution of two tensor instructions (FLOPs and transposes) moving `hbm` bytes; the Summary's peak ratio."""
    d = tmp_path / name
    shutil.copytree(FIXTURES / "device" / "schema_v7", d)
    for path in d.glob("*.parquet"):
        if path.stem not in ("Metadata", "ExecutionInfo"):
            path.unlink()
    inst = pl.DataFrame(
        {"start_ts": [2_100, 3_000], "end_ts": [2_900, 3_800], "duration_ns": [800, 800], "engine": ["tensor", "tensor"], "opcode": ["MATMUL", "MATMUL"],
         "operands": ["", ""], "id": [0, 1], "pc": [0, 1], "bir_id": ["a", "b"], "pcore_idx": [0, 0], "raw_flops": [flops - transpose, transpose],
         "flops_transpose": [0, transpose], "hbm_read_bytes": [hbm, 0], "hbm_write_bytes": [0, 0]}
    )  # fmt: skip
    inst.write_parquet(d / "Instruction.parquet")
    pl.DataFrame({"peak_flops_bandwidth_ratio": [ratio]}, schema={"peak_flops_bandwidth_ratio": pl.Float32}).write_parquet(d / "Summary.parquet")
    return d


def test_verdict_on_profiles_built_either_side_of_the_ratio(tmp_path: Path) -> None:
    """Intensity 100 FLOP/B against ratios 100.5 (memory-bound) and 99.5 (compute-bound), stated with both numbers."""
    below = report(_profile(tmp_path, "below", 100_000, 0, 1_000, 100.5))
    above = report(_profile(tmp_path, "above", 100_000, 0, 1_000, 99.5))
    assert below.utilization["arithmetic_intensity"] == above.utilization["arithmetic_intensity"] == 100.0
    assert (below.bound, above.bound) == ("memory", "compute")
    text = CliRunner().invoke(main, ["device", str(tmp_path / "below")]).output
    assert "memory-bound: arithmetic intensity 100.0 FLOP/B < peak FLOPs / bandwidth 100.5 FLOP/B" in text


def test_flop_recommendations_with_their_thresholds(tmp_path: Path) -> None:
    """Transpose FLOPs 60 % of hardware FLOPs: both the model-FLOPs (< 50 %) and the transpose (> 10 %) recommendations, each with its evidence."""
    r = report(_profile(tmp_path, "transposes", 100_000, 60_000, 1_000, 100.0))
    rules = dict(zip(r.recommendations["rule"], r.recommendations["evidence"]))
    assert rules["model_flops_low"] == "model FLOPs 40,000 of 100,000 hardware FLOPs (40.0 %)"
    assert rules["transpose_flops_high"] == "transpose FLOPs 60,000 of 100,000 hardware FLOPs (60.0 %)"
    fine = report(_profile(tmp_path, "fine", 100_000, 10_000, 1_000, 100.0))
    assert "transpose_flops_high" not in fine.recommendations["rule"].to_list() and "model_flops_low" not in fine.recommendations["rule"].to_list()


def test_recommendations_of_the_fixtures() -> None:
    def rules(name: str) -> list[str]:
        return report(FIXTURES / "device" / name).recommendations["rule"].to_list()

    assert rules("memory_bound") == ["spill_reload_high"]  # 1 MiB reloaded of 3.2 MiB read: 31 %
    assert rules("collectives") == ["collective_outliers"]
    assert rules("throttled") == ["throttled"]
    assert rules("compute_bound") == []
    naive = [report(p) for p in PROFILES if "naive" in p.parts]
    assert all(r.recommendations["rule"].to_list() == ["small_dma"] for r in naive)


def test_a_derived_table_that_disagrees_is_named(tmp_path: Path) -> None:
    d = tmp_path / "p"
    shutil.copytree(FIXTURES / "device" / "compute_bound", d)
    active = pl.read_parquet(d / "ActiveTime.parquet")
    active.with_columns(pl.when(pl.int_range(pl.len()) == 0).then(pl.col("duration_ns") + 7).otherwise(pl.col("duration_ns")).alias("duration_ns")).write_parquet(d / "ActiveTime.parquet")
    r = report(d)
    first = active.row(0, named=True)
    assert any(f"ActiveTime gives {first['engine']} on core {first['pcore_idx']}" in w for w in r.warnings), r.warnings


def test_instructions_without_an_engine_or_opcode_are_left_out_and_counted(tmp_path: Path) -> None:
    d = tmp_path / "p"
    shutil.copytree(FIXTURES / "device" / "compute_bound", d)
    kept: dict[str, int] = {}
    dropped = total = 0
    for i, part in enumerate(sorted(d.glob("Instruction_*.parquet"))):
        frame = pl.read_parquet(part)
        column = ("engine", "opcode")[i % 2]
        gone = pl.int_range(pl.len()) % 3 == 0
        frame = frame.with_columns(pl.when(gone).then(None).otherwise(pl.col(column)).alias(column))
        frame.write_parquet(part)
        for row in frame.iter_rows(named=True):
            total += 1
            if row["engine"] is None or row["opcode"] is None:
                dropped += 1
            else:
                kept[row["engine"]] = kept.get(row["engine"], 0) + 1
    assert dropped
    r = report(d)
    assert any(f"{dropped:,} of {total:,} Instruction rows have no engine or opcode; they were left out" in w for w in r.warnings), r.warnings
    per_engine = r.engines.filter(pl.col("core").is_null())
    assert dict(zip(per_engine["engine"], per_engine["instructions"])) == kept
    for fmt in ("table", "json", "csv", "markdown"):
        result = CliRunner().invoke(main, ["device", str(d), "--format", fmt])
        assert result.exit_code == 0 and result.exception is None and "Traceback" not in result.output, (fmt, result.output[-500:])


def test_a_dma_packet_without_a_queue_type_is_left_out_of_every_queue_and_the_total(tmp_path: Path) -> None:
    d = tmp_path / "p"
    shutil.copytree(FIXTURES / "device" / "compute_bound", d)
    packets = pl.read_parquet(d / "DmaPacket.parquet")
    gone = pl.int_range(pl.len()) % 5 == 1
    packets.with_columns(pl.when(gone).then(None).otherwise(pl.col("queue_type")).alias("queue_type")).write_parquet(d / "DmaPacket.parquet")
    kept: dict[str, tuple[int, int]] = {}
    for i, row in enumerate(packets.iter_rows(named=True)):
        if i % 5 != 1:
            n, b = kept.get(row["queue_type"], (0, 0))
            kept[row["queue_type"]] = (n + 1, b + row["transfer_bytes"])
    dropped = packets.height - sum(n for n, _ in kept.values())
    r = report(d)
    assert f"{d / 'DmaPacket.parquet'}: {dropped:,} of {packets.height:,} DmaPacket rows have no queue_type; they were left out" in r.warnings
    got = {q: (n, b) for q, n, b in r.dma.select("queue_type", "packets", "bytes").iter_rows() if q != "all"}
    assert got == kept
    assert r.dma.filter(pl.col("queue_type") == "all").select("packets", "bytes").row(0) == (sum(n for n, _ in kept.values()), sum(b for _, b in kept.values()))


def _digests(root: Path) -> dict[str, tuple[str, int]]:
    return {str(p): (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mtime_ns) for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.mark.parametrize(
    ("damage", "says"),
    [
        ("wrong_column_types", "column start_ts is Float64, the schema says int"),
        ("missing_required_columns", "required column duration_ns is missing"),
        ("truncated_parquet", "is not a readable Parquet file"),
        ("unknown_major_version", "MAJOR version 99 is not one ntrace knows (7, 12)"),
        ("split_part_missing", "Instruction_1.parquet is missing"),
    ],
)
def test_damaged_profiles_warn_and_write_nothing(damage: str, says: str) -> None:
    before = _digests(DAMAGED / damage)
    result = CliRunner().invoke(main, ["device", str(DAMAGED / damage)])
    assert result.exit_code == 0 and "Traceback" not in result.output
    assert any(line.startswith("warning: ") and says in line for line in result.stderr.splitlines()), result.stderr
    doc = orjson.loads(CliRunner().invoke(main, ["device", str(DAMAGED / damage), "--format", "json"]).stdout)
    assert any(says in w for w in doc["warnings"])
    assert _digests(DAMAGED / damage) == before


def test_no_profile_is_a_one_line_error(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("x")
    for args in (["device", str(tmp_path)], ["device", str(tmp_path / "missing")]):
        result = CliRunner().invoke(main, args)
        assert result.exit_code == 2 and result.output.count("\n") == 1 and result.output.startswith("error: ")


def test_json_contract() -> None:
    doc = orjson.loads(CliRunner().invoke(main, ["device", str(FIXTURES / "device"), "--format", "json"]).stdout)
    assert doc["schema"] == "ntrace.device/1"
    (bound,) = [p for p in doc["profiles"] if p["path"].endswith("compute_bound")]
    assert set(bound) >= {
        "path", "schema_version", "neff", "span_us", "engines", "dma", "flops", "mfu_pct", "hfu_pct", "mbu_pct", "arithmetic_intensity",
        "peak_flops_bandwidth_ratio", "bound", "collectives", "recommendations", "warnings",
    }  # fmt: skip
    assert {"name", "hash"} <= set(bound["neff"]) and bound["bound"] == "compute" and bound["span_us"] == 180.0
    assert set(bound["engines"][0]) == {"engine", "core", "instructions", "instruction_us", "active_us", "active_pct"}
    want = oracle.profile_numbers(FIXTURES / "device" / "compute_bound")
    assert bound["dma"]["bytes"] == want["dma"]["all"]["bytes"] and bound["flops"]["hardware"] == want["flops"]["hardware"]


def test_analyze_shows_each_variants_device_section_and_the_per_op_breakdown() -> None:
    runner = CliRunner()
    text = runner.invoke(main, ["analyze", str(FIXTURES / "rmsnorm"), "-q"]).output
    assert text.count("Device profiles (") == 3 and text.count("Device work by op") == 3 and "NEFFs per step" in text
    doc = orjson.loads(runner.invoke(main, ["analyze", str(FIXTURES / "rmsnorm"), "--format", "json", "-q"]).stdout)
    by_variant = {p["variant"]: p["device_profiles"] for p in doc["profiles"]}
    assert [len(by_variant[v]["profiles"]) for v in ("naive", "fused", "compiled")] == [6, 1, 1]
    naive_ops = by_variant["naive"]["ops"]
    assert sorted(o["op"] for o in naive_ops) == ["aten::add", "aten::mean", "aten::mul", "aten::mul", "aten::mul", "aten::rsqrt"]
    for o in naive_ops:  # each op's executions through its NEFF's profile: the checker's per-engine union of that execution
        (path,) = [p for p in PROFILES if p.name == o["neff"]]
        inst = oracle.rows(path, "Instruction")
        assert o["active_us"]["vector"] * 1000 == pytest.approx(oracle.union_ns((i["start_ts"], i["end_ts"]) for i in inst if i["engine"] == "vector"), abs=0.5)
        assert o["executions"] == 1
    (frag,) = by_variant["naive"]["fragmentation"]
    assert (frag["neffs"], frag["executions"]) == (6, 6)
    assert by_variant["fused"]["ops"][0]["op"] == "aten::_fused_rms_norm"


def test_each_traces_device_join_is_made_once_and_only_for_its_own_summary() -> None:
    """A render and the run's warnings both read a trace's device join: it is made once, and a copy of the summary (another object) gets one of its own, equal to it."""
    from dataclasses import replace

    from ntrace import analyze

    result = analyze(FIXTURES / "rmsnorm")
    joins = [(summary, session, result.device_join(summary, session)) for summary, session in result]
    assert all(j is not None for _, _, j in joins) and len(joins) == 3
    for summary, session, joined in joins:
        assert result.device_join(summary, session) is joined
        copy = replace(summary)
        other = result.device_join(copy, session)
        assert other is not joined and other is not None and other.warnings == joined.warnings and other.ops.equals(joined.ops)


def test_compare_gains_device_columns() -> None:
    doc = orjson.loads(CliRunner().invoke(main, ["compare", str(FIXTURES / "rmsnorm"), "--format", "json"]).stdout)
    rows = {v["name"]: v for v in doc["variants"]}
    assert [rows[v]["device_profiles"] for v in ("naive", "fused", "compiled")] == [6, 1, 1]
    naive = [p for p in PROFILES if "naive" in p.parts]
    assert rows["naive"]["dma_bytes"] == sum(oracle.dma_stats(p)["all"]["bytes"] for p in naive)
    span = sum(oracle.execution_span(p)["total_ns"] for p in naive)
    vector = sum(oracle.engine_stats(p).get("vector", {"active_ns": 0})["active_ns"] for p in naive)
    assert rows["naive"]["active_pct"]["vector"] == pytest.approx(100 * vector / span)
    text = CliRunner().invoke(main, ["compare", str(FIXTURES / "rmsnorm")]).output
    assert "Device profiles per variant" in text


def test_artifacts_list_processed_profiles_and_framework_mappings() -> None:
    session = next((FIXTURES / "rmsnorm" / "naive").glob("*/*"))
    doc = orjson.loads(CliRunner().invoke(main, ["artifacts", str(FIXTURES / "rmsnorm" / "naive"), "--format", "json"]).stdout)
    (s,) = doc["sessions"]
    assert len(s["device_profiles"]) == 6 and [Path(m).name for m in s["framework_mappings"]] == ["framework_mapping_20260115_093012_000.json"]
    assert json.loads((session / "framework_mapping_20260115_093012_000.json").read_text())["synthetic"] is True


def test_profile_tables_are_never_read_as_traces() -> None:
    result = CliRunner().invoke(main, ["analyze", str(FIXTURES / "rmsnorm"), "-q"])
    assert result.exit_code == 0 and "SystemProfileEvents" not in result.stderr and "warning" not in result.stderr


def test_library_call_returns_the_same_frames() -> None:
    result = device(FIXTURES / "device" / "collectives")
    (r,) = result.reports
    assert isinstance(r.engines, pl.DataFrame) and r.collectives.height == 2


def test_a_lone_trace_finds_profiles_beside_it_not_deep_below(tmp_path: Path) -> None:
    """A trace given alone in a plain directory joins a profile in that directory's subdirectories, never one buried deeper (analyzing /tmp/x.json must not walk /tmp)."""
    (trace,) = (FIXTURES / "rmsnorm" / "fused").rglob("trace.json")
    shutil.copy(trace, tmp_path / "trace.json")
    shutil.copytree(FIXTURES / "device" / "collectives", tmp_path / "beside")
    shutil.copytree(FIXTURES / "device" / "collectives", tmp_path / "other" / "run" / "deep")
    doc = orjson.loads(CliRunner().invoke(main, ["analyze", str(tmp_path / "trace.json"), "--format", "json", "-q"]).stdout)
    (prof,) = doc["profiles"]
    assert [Path(p["path"]).name for p in prof["device_profiles"]["profiles"]] == ["beside"]
