"""The synthetic processed device profiles under fixtures/ follow the reference and agree with an independent oracle.

The column names and dtypes are checked against shared/reference/neuron-device-profile.md itself (its table
lines are parsed here); the derived tables (ActiveTime, OpcodeSummary, Summary, ThrottleSummary, …) against
tests/device_oracle.py; ExecutionInfo against the session's trace.json; NeffHeader against the NEFF's header.
"""

from __future__ import annotations

import json
import os
import re
import runpy
import struct
import sys
from decimal import Decimal
from pathlib import Path

import polars as pl
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))
import device_oracle as oracle  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
FIXTURES = REPO / "fixtures"
DEVICE = FIXTURES / "device"
ENGINES = ("tensor", "vector", "scalar", "gpsimd", "sync")
SESSION_PROFILES = sorted(FIXTURES.glob("rmsnorm/*/*/*/device_profiles/*"))
EXTRA = ("compute_bound", "memory_bound", "collectives", "throttled", "schema_v7", "schema_v12")
HEALTHY = SESSION_PROFILES + [DEVICE / name for name in EXTRA]
DAMAGED = DEVICE / "damaged"
DOCUMENTED_MAJORS = {7, 12}  # 7.4.0 (SDK 2.31.0, in the aws-neuron-sdk repository), 12.0.1 (SDK 2.33.0 web page)
LEAD_NS = 2_000  # the fixtures' convention: profile time 0 is 2 µs before the NEFF's first execution


def _reference_path() -> Path | None:
    env = os.environ.get("NTRACE_REFERENCE")
    candidates = [Path(env)] if env else []
    candidates += [REPO / "tests" / "data" / "reference"]  # the project's copy, so a fresh clone checks the fixtures too
    candidates += [base / "shared" / "reference" for base in (REPO, REPO.parent, REPO.parent.parent)]
    for c in candidates:
        if (c / "neuron-device-profile.md").is_file():
            return c / "neuron-device-profile.md"
    return None


REFERENCE = _reference_path()
REF_DTYPES = {"int64": pl.Int64, "int32": pl.Int32, "float": pl.Float32, "double": pl.Float64, "str": pl.String, "boolean": pl.Boolean, "list<int64>": pl.List(pl.Int64)}


def reference_tables() -> dict[str, dict[str, tuple[str, str | None, bool]]]:
    """{table: {field: (type, unit, required)}} parsed from the reference's `- **Table**: name:type[unit]*, …` lines."""
    assert REFERENCE is not None, "tests/data/reference/neuron-device-profile.md is missing"
    out: dict = {}
    for line in REFERENCE.read_text().splitlines():
        m = re.fullmatch(r"- \*\*(\w+)\*\*: (.+)", line.strip())
        if not m:
            continue
        fields = {}
        for item in m.group(2).split(", "):
            f = re.fullmatch(r"(\w+):(.+?)(?:\[([^\]]*)\])?(\*)?", item.strip())
            assert f, item
            name, typ, unit, star = f.groups()
            typ = re.sub(r"^str \(enum \w+\)$", "str", typ)
            fields[name] = (typ, unit, bool(star))
        out[m.group(1)] = fields
    assert {"Instruction", "Summary", "ActiveTime", "Metadata", "CcOp"} <= set(out)
    return out


def ns(text: str) -> int:
    """µs number text → exact ns (Decimal arithmetic, not float)."""
    value = Decimal(text) * 1000
    assert value == value.to_integral_value(), text
    return int(value)


def trace_executions(trace: Path) -> dict[str, list[tuple[int, int]]]:
    """{neff stem: [(ts_ns, dur_ns)]} of the nc_exec_running kernel events (their model_name arg names the NEFF), read with a regex over the JSON text."""
    out: dict = {}
    pattern = re.compile(r'"cat": "kernel", "name": "nc_exec_running".*?"ts": ([0-9.]+), "dur": ([0-9.]+),.*?"model_name": "([^"]+)\.neff"')
    for m in pattern.finditer(trace.read_text()):
        out.setdefault(m.group(3), []).append((ns(m.group(1)), ns(m.group(2))))
    return {k: sorted(v) for k, v in out.items()}


def one(profile: Path, table: str) -> dict:
    (row,) = oracle.rows(profile, table)
    return row


def check_against_reference(profile: Path, ref: dict) -> list[str]:
    """Problems of a profile directory against the reference: unknown tables/columns, wrong dtypes, missing required columns."""
    problems = []
    for table in oracle.tables(profile):
        if table not in ref:
            problems.append(f"unknown table {table}")
            continue
        for path in oracle.table_files(profile, table):
            schema = pl.read_parquet_schema(path)
            for col, dtype in schema.items():
                if col not in ref[table]:
                    problems.append(f"{path.name}: unknown column {col}")
                elif dtype != REF_DTYPES[ref[table][col][0]]:
                    problems.append(f"{path.name}: {col} is {dtype}, reference says {ref[table][col][0]}")
            for col, (_, _, required) in ref[table].items():
                if required and col not in schema:
                    problems.append(f"{path.name}: required column {col} missing")
    return problems


# ---------------------------------------------------------------- layout and the reference


def test_every_neff_of_every_session_has_one_profile() -> None:
    neffs = sorted(FIXTURES.glob("rmsnorm/*/*/*/*.neff"))
    assert len(neffs) == 8 and len(SESSION_PROFILES) == 8
    assert sorted(p.name for p in SESSION_PROFILES) == sorted(n.stem for n in neffs)
    for p in SESSION_PROFILES:
        assert p.parent.name == "device_profiles" and (p.parents[1] / f"{p.name}.neff").is_file()


@pytest.mark.parametrize("profile", HEALTHY, ids=lambda p: p.name)
def test_tables_follow_the_reference(profile: Path) -> None:
    ref = reference_tables()
    assert check_against_reference(profile, ref) == []
    for table in oracle.tables(profile):
        assert sum(pl.read_parquet(p).height for p in oracle.table_files(profile, table)) > 0, f"{table} written without rows"
    assert {"Metadata", "NeffHeader", "ExecutionInfo", "Summary", "ActiveTime", "Instruction", "OpcodeSummary", "DmaPacket",
            "HbmUsage", "FrameworkInstruction", "HloInstruction", "Warning", "SchemaFields"} <= set(oracle.tables(profile))


@pytest.mark.parametrize("profile", HEALTHY, ids=lambda p: p.name)
def test_schema_fields_describe_exactly_what_is_written(profile: Path) -> None:
    ref = reference_tables()
    kinds = {"int64": ("integer", "int64"), "int32": ("integer", "int32"), "float": ("number", "float"), "double": ("number", "double"),
             "str": ("string", None), "boolean": ("boolean", None), "list<int64>": ("array", "int64")}
    described = {(r["table_name"], r["field_name"]): r for r in oracle.rows(profile, "SchemaFields")}
    written = set()
    for table in oracle.tables(profile):
        for path in oracle.table_files(profile, table):
            written |= {(table, col) for col in pl.read_parquet_schema(path)}
    assert set(described) == written
    for (table, col), r in described.items():
        typ, unit, required = ref[table][col]
        assert (r["field_type"], r["field_format"]) == kinds[typ], (table, col)
        assert r["field_unit"] == unit and r["field_required"] is required, (table, col)
        assert r["table_description"] and r["field_description"]
    assert described[("DmaPacket", "queue_type")]["field_enum_values"] == "instruction,input,output,data,software_dynamic,hardware_dynamic,unknown"


def test_no_collectives_and_no_throttling_in_rmsnorm() -> None:
    for p in SESSION_PROFILES:
        assert not oracle.table_files(p, "CcOp") and not oracle.table_files(p, "Throttle")
        assert "cc_op_count" not in one(p, "Summary")


def test_large_tables_are_split_as_documented() -> None:
    fused = next(p for p in SESSION_PROFILES if "/fused/" in str(p))
    assert sorted(x.name for x in fused.glob("Instruction*")) == ["Instruction_0.parquet", "Instruction_1.parquet"]
    assert len(oracle.table_files(DEVICE / "compute_bound", "Instruction")) >= 3
    compiled = next(p for p in SESSION_PROFILES if "/compiled/" in str(p))
    assert [x.name for x in compiled.glob("Instruction*")] == ["Instruction.parquet"]


def test_metadata_and_schema_versions() -> None:
    majors = {}
    for p in HEALTHY:
        m = one(p, "Metadata")
        version = m["profile_schema_version"]
        assert re.fullmatch(r"\d+\.\d+\.\d+", version)
        majors.setdefault(int(version.split(".")[0]), []).append(p.name)
        assert m["num_physical_cores"] == 2 and m["vnc_enabled"] is True and m["instance_type"] == "trn1.2xlarge"
        assert m["explorer_version"] == "synthetic" and "SYNTHETIC" in m["profile_name"]
        assert m["first_hw_timestamp"] == 0 and m["last_hw_timestamp"] == oracle.execution_span(p)["last_end_ns"]
        assert m["tensor_engine_num_rows"] == m["tensor_engine_num_cols"] == 128
    assert set(majors) == DOCUMENTED_MAJORS
    assert one(DEVICE / "schema_v7", "Metadata")["profile_schema_version"] == "7.4.0"
    assert one(DEVICE / "schema_v12", "Metadata")["profile_schema_version"] == "12.0.1"


# ---------------------------------------------------------------- against the capture sessions


@pytest.mark.parametrize("profile", SESSION_PROFILES, ids=lambda p: p.name)
def test_execution_info_matches_the_trace(profile: Path) -> None:
    runs = trace_executions(profile.parents[1] / "trace.json")[profile.name]
    ex = sorted(oracle.rows(profile, "ExecutionInfo"), key=lambda r: r["execution_index"])
    assert [r["execution_index"] for r in ex] == list(range(len(runs)))
    assert all(r["neff_name"] == f"{profile.name}.neff" for r in ex)
    assert [r["execution_end_ts"] - r["execution_start_ts"] for r in ex] == [dur for _, dur in runs]
    zero = runs[0][0] - LEAD_NS
    assert [r["execution_start_ts"] for r in ex] == [ts - zero for ts, _ in runs]


def test_executions_total_the_seed_device_times() -> None:
    """The six naive NEFFs' executions add up to 2,351.7 µs (the trace's 2,354.9 µs of device time less the 3.2 µs copy of the naive add's epsilon); fused 403.3, compiled 375.5."""
    total = {v: sum(oracle.execution_span(p)["total_ns"] for p in SESSION_PROFILES if f"/{v}/" in str(p)) for v in ("naive", "fused", "compiled")}
    assert total == {"naive": 2_354_900 - 3_200, "fused": 403_300, "compiled": 375_500}


@pytest.mark.parametrize("profile", SESSION_PROFILES, ids=lambda p: p.name)
def test_neff_header_matches_the_neff_file(profile: Path) -> None:
    raw = (profile.parents[1] / f"{profile.name}.neff").read_bytes()[:1024]
    pkg, header_size, data_size, major, minor = struct.unpack_from("<QQQQQ", raw, 0)
    h = one(profile, "NeffHeader")
    assert h["network_name"] == raw[220:476].rstrip(b"\0").decode()
    assert h["uuid"] == raw[204:220].hex() and len(h["uuid"]) == 32
    assert h["hash"] == (raw[172:204] if pkg == 1 else raw[172:188]).hex()
    assert (h["header_size"], h["data_size"], h["major_version"], h["minor_version"], h["package_version"]) == (header_size, data_size, major, minor, str(pkg))
    assert h["build_version"] == raw[40:168].rstrip(b"\0").decode()


# ---------------------------------------------------------------- internal consistency, against the oracle


@pytest.mark.parametrize("profile", HEALTHY, ids=lambda p: p.name)
def test_timeline_rows_lie_inside_their_executions(profile: Path) -> None:
    spans = [(r["execution_start_ts"], r["execution_end_ts"]) for r in oracle.rows(profile, "ExecutionInfo")]
    for table in ("Instruction", "DmaPacket", "CcOp"):
        for r in oracle.rows(profile, table):
            assert r["start_ts"] < r["end_ts"] and r["duration_ns"] == r["end_ts"] - r["start_ts"]
            assert any(s <= r["start_ts"] and r["end_ts"] <= e for s, e in spans), (table, r)
    counts = [sum(s <= r["start_ts"] < e for t in ("Instruction", "DmaPacket", "CcOp") for r in oracle.rows(profile, t)) for s, e in spans]
    assert [r["row_count"] for r in oracle.rows(profile, "ExecutionInfo")] == counts


@pytest.mark.parametrize("profile", HEALTHY, ids=lambda p: p.name)
def test_active_time_is_the_union_of_instructions(profile: Path) -> None:
    got: dict = {}
    for r in oracle.rows(profile, "ActiveTime"):
        assert r["duration_ns"] == r["end_ts"] - r["start_ts"]
        got.setdefault((r["engine"], r["pcore_idx"]), []).append((r["start_ts"], r["end_ts"]))
    assert {k: sorted(v) for k, v in got.items()} == oracle.active_intervals(profile)
    assert {e for e, _ in got} <= set(ENGINES) and {c for _, c in got} <= {0, 1}


@pytest.mark.parametrize("profile", HEALTHY, ids=lambda p: p.name)
def test_opcode_summary_agrees_with_the_oracle(profile: Path) -> None:
    total = oracle.execution_span(profile)["total_ns"]
    want = oracle.opcode_stats(profile)
    got = {(r["engine"], r["opcode"]): r for r in oracle.rows(profile, "OpcodeSummary")}
    assert set(got) == set(want)
    for key, s in want.items():
        r = got[key]
        assert (r["instruction_count"], r["instruction_time_ns"], r["active_time_ns"]) == (s["count"], s["instruction_ns"], s["active_ns"])
        assert r["active_time_percent"] == oracle.f32(100 * s["active_ns"] / total)


@pytest.mark.parametrize("profile", HEALTHY, ids=lambda p: p.name)
def test_summary_agrees_with_the_oracle(profile: Path) -> None:
    s = one(profile, "Summary")
    m = one(profile, "Metadata")
    total = oracle.execution_span(profile)["total_ns"]
    sec = lambda x: oracle.f32(x / 1e9)
    per = lambda x, whole=total: oracle.f32(100 * x / whole)
    assert s["total_time"] == sec(total)
    engines = oracle.engine_stats(profile)
    for engine in ENGINES:
        e = engines.get(engine, {"count": 0, "instruction_ns": 0, "active_ns": 0})
        assert s[f"{engine}_engine_instruction_count"] == e["count"], engine
        assert s[f"{engine}_engine_instruction_time"] == sec(e["instruction_ns"]), engine
        assert s[f"{engine}_engine_active_time"] == sec(e["active_ns"]), engine
        assert s[f"{engine}_engine_active_time_percent"] == per(e["active_ns"]), engine
    hbm = oracle.hbm_bytes(profile)
    assert (s["hbm_read_bytes"], s["hbm_write_bytes"], s["spill_save_bytes"], s["spill_reload_bytes"]) == (hbm["read"], hbm["write"], hbm["spill_save"], hbm["spill_reload"])
    assert oracle.dma_hbm_bytes(profile) == {"read": hbm["read"], "write": hbm["write"]}
    assert sum(oracle.hbm_usage_final(profile).values()) == hbm["read"] + hbm["write"]
    d, q = oracle.dma_totals(profile), oracle.dma_stats(profile)
    assert (s["dma_transfer_total_bytes"], s["dma_transfer_count"]) == (d["bytes"], d["transfers"])
    assert s["dma_transfer_average_bytes"] == oracle.f32(d["bytes"] / d["transfers"])
    assert (s["dma_packet_time"], s["dma_active_time"], s["dma_active_time_percent"]) == (sec(d["packet_ns"]), sec(d["active_ns"]), per(d["active_ns"]))
    assert (s["static_dma_packet_count"], s["static_dma_size"]) == (d["static_packets"], d["static_bytes"])
    for kind in ("software_dynamic", "hardware_dynamic"):
        qs = q.get(kind, {"packets": 0, "bytes": 0})
        assert (s[f"{kind}_dma_packet_count"], s[f"{kind}_dma_size"]) == (qs["packets"], qs["bytes"])
    f = oracle.flops(profile)
    assert (s["hardware_flops"], s["transpose_flops"], s["model_flops"]) == (f["hardware"], f["transpose"], f["model"])
    assert (s["adjusted_hardware_flops"], s["adjusted_transpose_flops"], s["matmul_instruction_count"]) == (f["adjusted_hardware"], f["adjusted_transpose"], f["matmul_count"])
    assert s["mm_arithmetic_intensity"] == oracle.f32((f["hardware"] - f["transpose"]) / (hbm["read"] + hbm["write"]))
    peak = m["tensor_engine_num_rows"] * m["tensor_engine_num_cols"] * 2 * m["tensor_engine_clock_freq"] * 1e9 / m["hbm_ddr_bandwidth"]
    assert s["peak_flops_bandwidth_ratio"] == pytest.approx(peak, rel=1e-6)
    active = oracle.total_active_ns(profile)
    assert (s["total_active_time"], s["total_active_time_percent"]) == (sec(active), per(active))
    assert s["total_exec_time"] == sec(oracle.work_span_ns(profile))
    if oracle.table_files(profile, "CcOp"):
        c = oracle.collective_totals(profile)
        assert (s["cc_op_count"], s["cc_op_time"], s["cc_op_active_time"], s["cc_op_active_time_percent"]) == (c["count"], sec(c["time_ns"]), sec(c["active_ns"]), per(c["active_ns"]))


@pytest.mark.parametrize("profile", HEALTHY, ids=lambda p: p.name)
def test_dma_rows_are_consistent(profile: Path) -> None:
    agg = {r["id"]: r for r in oracle.rows(profile, "DmaPacketAggregated")}
    by_transfer: dict = {}
    for r in oracle.rows(profile, "DmaPacket"):
        assert r["read_bytes"] == r["write_bytes"] == r["transfer_bytes"] > 0
        assert r["throughput"] == oracle.f32(r["transfer_bytes"] / (r["duration_ns"] / 1e9))
        t = agg[r["packet_aggregation_id"]]
        assert (r["queue_type"], r["queue_name"], r["pcore_idx"]) == (t["queue_type"], t["queue_name"], t["pcore_idx"])
        by_transfer.setdefault(t["id"], []).append(r)
    assert set(by_transfer) == set(agg)
    for tid, pk in by_transfer.items():
        t = agg[tid]
        assert t["transfer_bytes"] == sum(r["transfer_bytes"] for r in pk)
        assert (t["start_ts"], t["end_ts"]) == (min(r["start_ts"] for r in pk), max(r["end_ts"] for r in pk))
        assert sorted(r["packet_idx"] for r in pk) == list(range(len(pk)))
    assert set(oracle.dma_stats(profile)) - {"all"} <= {"instruction", "input", "output", "data", "software_dynamic", "hardware_dynamic", "unknown"}


@pytest.mark.parametrize("profile", HEALTHY, ids=lambda p: p.name)
def test_rollups_agree_with_instructions(profile: Path) -> None:
    for table, level, name_col in (("FrameworkInstruction", "framework", "framework_name"), ("HloInstruction", "hlo", "hlo_name")):
        want = oracle.rollup_stats(profile, level)
        got = {r[name_col]: r for r in oracle.rows(profile, table)}
        assert set(got) == set(want), table
        for name, w in want.items():
            r = got[name]
            assert (r["hbm_read_bytes"], r["hbm_write_bytes"]) == (w["hbm_read_bytes"], w["hbm_write_bytes"]), (table, name)
            intervals = [tuple(iv) for iv in json.loads(r["time_intervals"])]
            assert intervals == w["intervals"], (table, name)
            assert (r["start_ts"], r["end_ts"]) == (intervals[0][0], intervals[-1][1])
            assert len(r["element_count_per_interval"]) == len(r["hbm_transfer_size_per_interval"]) == len(intervals)
            assert sum(r["hbm_transfer_size_per_interval"]) == w["hbm_read_bytes"] + w["hbm_write_bytes"]
            if table == "FrameworkInstruction":
                assert all(r[f"{e}_engine_instruction_count"] == w.get(e, 0) for e in ENGINES), name
    assert all("/" in n for n in oracle.rollup_stats(profile, "framework"))


@pytest.mark.parametrize("profile", HEALTHY, ids=lambda p: p.name)
def test_warnings_are_data_quality_rows(profile: Path) -> None:
    warnings = oracle.rows(profile, "Warning")
    assert len(warnings) == 2 and all(w["message"] and w["category"] for w in warnings)
    n = int(re.match(r"(\d+) instructions carry no framework debug info", warnings[0]["message"]).group(1))
    assert n == sum(r.get("raw_framework_id") is None for r in oracle.rows(profile, "Instruction"))


# ---------------------------------------------------------------- what each profile is meant to show


def intensity_vs_peak(profile: Path) -> tuple[float, float]:
    s = one(profile, "Summary")
    return s["mm_arithmetic_intensity"], s["peak_flops_bandwidth_ratio"]


def test_bound_rule_sides() -> None:
    ai, peak = intensity_vs_peak(DEVICE / "compute_bound")
    assert ai > 5 * peak
    for p in [DEVICE / "memory_bound", *SESSION_PROFILES]:
        ai, peak = intensity_vs_peak(p)
        assert ai < peak / 5, p.name


def test_naive_is_small_and_dispatch_bound_fused_is_heavier() -> None:
    naive = [p for p in SESSION_PROFILES if "/naive/" in str(p)]
    fused = next(p for p in SESSION_PROFILES if "/fused/" in str(p))
    assert len(naive) == 6
    for p in naive:
        small = oracle.small_transfers(p)
        assert small["small_packets"] == small["packets"] > 0  # every DMA packet under 4 KiB
        assert oracle.total_active_ns(p) * 20 < oracle.execution_span(p)["total_ns"]  # engines and DMA idle > 95 % of the span
        assert all(r["duration_ns"] < 1_000 for r in oracle.rows(p, "Instruction"))
    heavier = oracle.flops(fused)["hardware"], sum(s["count"] for s in oracle.engine_stats(fused).values())
    for p in naive:
        assert heavier > (oracle.flops(p)["hardware"], sum(s["count"] for s in oracle.engine_stats(p).values()))
        assert intensity_vs_peak(fused)[0] > intensity_vs_peak(p)[0]


def test_memory_bound_spills_and_uses_dynamic_dma() -> None:
    p = DEVICE / "memory_bound"
    hbm = oracle.hbm_bytes(p)
    assert hbm["spill_reload"] * 4 > hbm["read"]  # spill reload > 25 % of HBM reads
    assert {"software_dynamic", "hardware_dynamic", "data", "input", "output", "instruction"} <= set(oracle.dma_stats(p))


def test_collectives_have_one_clear_outlier() -> None:
    p = DEVICE / "collectives"
    stats = oracle.collective_stats(p)
    assert set(stats) == {("AllReduce", "Ring"), ("AllGather", "Ring")}
    assert stats[("AllReduce", "Ring")]["count"] == 5 and stats[("AllGather", "Ring")]["count"] == 4
    assert stats[("AllReduce", "Ring")]["outliers"] == 1 and stats[("AllGather", "Ring")]["outliers"] == 0
    assert stats[("AllReduce", "Ring")]["max_ns"] >= 3 * stats[("AllReduce", "Ring")]["median_ns"]
    triggers = {r["start_ts"] for r in oracle.rows(p, "Instruction") if r["opcode"] == "PSEUDO_TRIGGER_COLLECTIVE" and r["engine"] == "gpsimd"}
    for r in oracle.rows(p, "CcOp"):
        assert r["cc_trigger_start_delay"] == r["start_ts"] - r["trigger_start_ts"] and r["trigger_start_ts"] in triggers
        algbw = max(r["input_size"], r["output_size"]) / (r["duration_ns"] / 1e9)
        assert r["algorithm_bandwidth"] == oracle.f32(algbw)
        assert r["bus_bandwidth"] == oracle.f32(algbw * (1.0 if r["operation"] == "AllReduce" else 0.5))  # ring, 2 ranks
        assert r["replica_group"] == "[[0, 1]]" and r["num_elements"] * 2 == r["input_size"]


def test_throttle_summary_agrees_with_the_oracle() -> None:
    p = DEVICE / "throttled"
    total = oracle.execution_span(p)["total_ns"]
    want = oracle.throttle_stats(p)
    got = {r["throttle_type"]: r for r in oracle.rows(p, "ThrottleSummary")}
    assert set(got) == set(want) == {"activity_0", "activity_1", "all"}
    for kind, w in want.items():
        r = got[kind]
        assert r["nc_idx"] == 0 and r["throttle_active_time_ns"] == w["active_ns"]
        assert r["throttle_active_time_percent"] == oracle.f32(100 * w["active_ns"] / total)
        assert round(r["max_achievable_util_with_throttling_percent"] * 10_000) == w["util_ppm"]
    assert want["all"]["active_ns"] == want["all"]["duration_ns"]  # no overlap: union and sum agree
    tensor = oracle.active_intervals(p)
    overlaps = [any(s < r["timestamp"] + r["duration"] and r["timestamp"] < e for s, e in tensor[("tensor", r["pcore_idx"])]) for r in oracle.rows(p, "Throttle")]
    assert sum(overlaps) >= 3 and not all(overlaps)  # active throttling, and one event while the engine is idle


# ---------------------------------------------------------------- damaged cases


def test_damaged_cases_are_damaged_as_labelled() -> None:
    ref = reference_tables()
    assert sorted(p.name for p in DAMAGED.iterdir()) == ["missing_required_columns", "split_part_missing", "truncated_parquet", "unknown_major_version", "wrong_column_types"]

    d = DAMAGED / "wrong_column_types"
    assert sorted(check_against_reference(d, ref)) == sorted([
        "ActiveTime.parquet: duration_ns is String, reference says int64",
        "Instruction.parquet: engine is Int32, reference says str",
        "Instruction.parquet: start_ts is Float64, reference says int64",
    ])

    d = DAMAGED / "missing_required_columns"
    assert sorted(check_against_reference(d, ref)) == sorted([
        "DmaPacket.parquet: required column queue_type missing",
        "Instruction.parquet: required column duration_ns missing",
        "Instruction.parquet: required column opcode missing",
    ])

    d = DAMAGED / "truncated_parquet"
    raw = (d / "Instruction.parquet").read_bytes()
    assert raw[:4] == b"PAR1" and raw[-4:] != b"PAR1"
    with pytest.raises(Exception):
        pl.read_parquet(d / "Instruction.parquet")
    assert check_against_reference_except(d, ref, "Instruction") == []

    d = DAMAGED / "unknown_major_version"
    assert check_against_reference(d, ref) == []
    version = one(d, "Metadata")["profile_schema_version"]
    assert version == "99.0.0" and int(version.split(".")[0]) not in DOCUMENTED_MAJORS

    d = DAMAGED / "split_part_missing"
    assert sorted(x.name for x in d.glob("Instruction*")) == ["Instruction_0.parquet", "Instruction_2.parquet"]
    with pytest.raises(oracle.MissingPart):
        oracle.rows(d, "Instruction")
    assert check_against_reference_except(d, ref, "Instruction") == []
    present = [r for n in (0, 2) for r in pl.read_parquet(d / f"Instruction_{n}.parquet").to_dicts()]
    active = sum(r["duration_ns"] for r in oracle.rows(d, "ActiveTime"))
    by_parts = sum(oracle.union_ns((r["start_ts"], r["end_ts"]) for r in present if (r["engine"], r["pcore_idx"]) == k) for k in {(r["engine"], r["pcore_idx"]) for r in present})
    assert by_parts < active  # the missing part's instructions are still in ActiveTime

    for case in ("wrong_column_types", "missing_required_columns", "unknown_major_version", "split_part_missing", "truncated_parquet"):
        assert "SYNTHETIC" in one(DAMAGED / case, "Metadata")["profile_name"]


def check_against_reference_except(profile: Path, ref: dict, skip: str) -> list[str]:
    problems = []
    for table in oracle.tables(profile):
        if table == skip:
            continue
        for path in oracle.table_files(profile, table):
            schema = pl.read_parquet_schema(path)
            problems += [f"{path.name}: {c}" for c, t in schema.items() if c not in ref[table] or t != REF_DTYPES[ref[table][c][0]]]
            problems += [f"{path.name}: missing {c}" for c, (_, _, req) in ref[table].items() if req and c not in schema]
    return problems


# ---------------------------------------------------------------- the generator


def device_files(root: Path) -> list[Path]:
    return sorted(p.relative_to(root) for p in [*root.glob("rmsnorm/*/*/*/device_profiles/*/*"), *(root / "device").rglob("*")]
                  if p.is_file() and p.name != "README.md")


def test_generator_regenerates_identical_files(tmp_path: Path) -> None:
    script = runpy.run_path(str(REPO / "scripts" / "make_device_fixtures.py"))
    script["main"](tmp_path, FIXTURES)
    made, committed = device_files(tmp_path), device_files(FIXTURES)
    assert made == committed and len(made) > 100
    assert all((tmp_path / rel).read_bytes() == (FIXTURES / rel).read_bytes() for rel in made)
    assert "SYNTHETIC" in (REPO / "scripts" / "make_device_fixtures.py").read_text().split('"""')[1]


def test_device_fixtures_stay_small() -> None:
    total = sum((FIXTURES / rel).stat().st_size for rel in device_files(FIXTURES))
    assert total < 1_400_000
    assert (DEVICE / "README.md").read_text().lstrip().startswith("# ") and "**SYNTHETIC**" in (DEVICE / "README.md").read_text()[:400]
