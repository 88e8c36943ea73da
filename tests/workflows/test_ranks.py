"""ntrace ranks on a SYNTHETIC 8-rank set made by scripts/make_ranks.py from the real NCCL trace: rank 5 late by D before every all-reduce, every clock shifted.

The oracle is plain Python over each rank file's JSON (Decimal µs → integer ns) and the
offsets make_ranks drew (its manifest); the per-rank figures are each rank's own `analyze`.
"""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from helpers import REAL_TRACES, REPO, brute_union, shared_trace_files, write_trace, x
from ntrace.cli import main
from ntrace.workflows.analyze import analyze
from ntrace.workflows.ranks import ranks

SRC = REAL_TRACES / "nccl_parser_config__nccl_data.json.gz"
N, LATE, D_US = 8, 5, 250
D = D_US * 1000

pytestmark = pytest.mark.skipif(not SRC.exists(), reason=f"{SRC} is absent")


def ns(v: Any) -> int:
    """µs (JSON number read as Decimal) → integer ns."""
    return int(Decimal(v) * 1000)


def nearest(values: list[int], p: int) -> int:
    """Nearest-rank percentile, written out: the ⌈p·n/100⌉-th smallest."""
    return sorted(values)[max(-(-p * len(values) // 100), 1) - 1] if values else 0


def events(path: Path) -> list[dict[str, Any]]:
    raw = path.read_bytes()
    return json.loads(gzip.decompress(raw) if raw[:2] == b"\x1f\x8b" else raw, parse_float=Decimal)["traceEvents"]


def kernels(path: Path) -> list[tuple[str, int, int]]:
    """The complete kernel events (name, start, end) in ns, by start."""
    out = [(e["name"], ns(e["ts"]), ns(e["ts"]) + ns(e["dur"])) for e in events(path) if e.get("ph") == "X" and e.get("cat") == "kernel"]
    return sorted(out, key=lambda k: k[1])


def is_comm(name: str) -> bool:
    return "nccl" in name.lower() or "rccl" in name.lower()


def covered(spans: list[tuple[int, int]], by: list[tuple[int, int]]) -> int:
    """Length of union(spans) ∩ union(by), by merging each and walking both lists."""

    def merged(s: list[tuple[int, int]]) -> list[list[int]]:
        out: list[list[int]] = []
        for a, b in sorted(s):
            if out and a <= out[-1][1]:
                out[-1][1] = max(out[-1][1], b)
            else:
                out.append([a, b])
        return out

    total = 0
    for a, b in merged(spans):
        for c, d in merged(by):
            total += max(0, min(b, d) - max(a, c))
    return total


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    out = tmp_path_factory.mktemp("ranks")
    manifest = out.parent / f"{out.name}-manifest.json"
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "make_ranks.py"), str(SRC), str(out), "--ranks", str(N), "--offsets-seed", "17",
         "--delay-rank", str(LATE), "--delay-us", str(D_US), "--collectives", "AllReduce", "--manifest", str(manifest)],
        check=True, capture_output=True,
    )  # fmt: skip
    return out, json.loads(manifest.read_text())


@pytest.fixture(scope="module")
def result(made: tuple[Path, dict[str, Any]]):  # type: ignore[no-untyped-def]
    return ranks([made[0]])


def files(out: Path) -> list[Path]:
    return [out / f"rank-{r}.trace.json" for r in range(N)]


def test_offsets_are_recovered_exactly(made, result) -> None:
    out, manifest = made
    assert manifest["offsets_ns"][0] == 0 and len(set(manifest["offsets_ns"])) == N
    assert result.table["offset"].to_list() == manifest["offsets_ns"]


def test_skew_is_the_injected_delay_and_rank_5_the_straggler(made, result) -> None:
    out, manifest = made
    offsets = manifest["offsets_ns"]
    per_rank = [[k for k in kernels(p) if is_comm(k[0])] for p in files(out)]
    # plain Python: the n-th collective of a name on every rank is one instance; skew = latest − earliest start on rank 0's clock
    by_name: dict[str, list[int]] = {}
    last: dict[int, int] = {}
    wait: dict[int, int] = {}
    for i in range(len(per_rank[0])):
        name = per_rank[0][i][0]
        starts = [per_rank[r][i][1] - offsets[r] for r in range(N)]
        assert all(per_rank[r][i][0] == name for r in range(N))
        skew = max(starts) - min(starts)
        by_name.setdefault(name, []).append(skew)
        if skew:
            who = starts.index(max(starts))
            last[who] = last.get(who, 0) + 1
            wait[who] = wait.get(who, 0) + sum(max(starts) - s for s in starts)
    allreduce = [n for n in by_name if "AllReduce" in n]
    assert len(allreduce) == 1 and set(by_name[allreduce[0]]) == {D}  # every all-reduce: exactly the delay
    assert all(set(v) == {0} for n, v in by_name.items() if n not in allreduce)  # broadcasts were not delayed
    rows = {r["name"]: r for r in result.collectives.iter_rows(named=True)}
    assert rows[allreduce[0]]["skew_p50"] == rows[allreduce[0]]["skew_max"] == D
    assert {n: r["instances"] for n, r in rows.items()} == {n: len(v) for n, v in by_name.items()}
    assert all(rows[n]["skew_max"] == 0 for n in by_name if n not in allreduce)
    top = result.stragglers.row(0, named=True)
    instances = sum(len(v) for v in by_name.values())
    assert last == {LATE: len(by_name[allreduce[0]])}
    assert top == {"rank": LATE, "times_last": last[LATE], "pct_last": 100 * last[LATE] / instances, "wait_caused": wait[LATE]}
    assert wait[LATE] == len(by_name[allreduce[0]]) * (N - 1) * D
    assert result.stragglers.filter(result.stragglers["rank"] != LATE)["times_last"].to_list() == [0] * (N - 1)
    assert result.warnings == ()


def test_every_figure_is_the_ranks_own_analysis(made, result) -> None:
    out, _ = made
    for r, path in enumerate(files(out)):
        row = result.table.row(r, named=True)
        summary = analyze(path).summaries[0]
        durations = summary.steps["dur"].to_list()
        ks = kernels(path)
        comm = [(a, b) for n, a, b in ks if is_comm(n)]
        compute = [(a, b) for n, a, b in ks if not is_comm(n)]  # one device (pid 0) in this trace
        expected = {
            "rank": r, "trace": str(path), "rule": "distributedInfo.rank", "steps": len(durations),
            "step_p50": nearest(durations, 50), "step_p90": nearest(durations, 90),
            **{f"busy_{lane}": busy for lane, busy in summary.lanes.select("lane", "busy").iter_rows()},
            "idle": sum(summary.idle_gaps.to_list()), "comm": brute_union(comm), "exposed_comm": brute_union(comm) - covered(comm, compute),
            "launch_latency_p50": nearest(summary.launch_latencies.to_list(), 50),
        }  # fmt: skip
        assert {k: row[k] for k in expected} == expected
        assert row["overlap_pct"] == 100 * (expected["comm"] - expected["exposed_comm"]) / expected["comm"]


def test_one_clock_gives_offset_zero_and_jobs_give_the_same(made, tmp_path: Path) -> None:
    out, _ = made
    same = tmp_path / "same"
    subprocess.run([sys.executable, str(REPO / "scripts" / "make_ranks.py"), str(SRC), str(same), "--ranks", "3", "--manifest", str(tmp_path / "m.json")], check=True, capture_output=True)
    one = ranks([same])
    assert one.table["offset"].to_list() == [0, 0, 0]
    assert one.collectives["skew_max"].to_list() == [0, 0]
    assert one.stragglers["times_last"].to_list() == [0, 0, 0]
    pooled = ranks([same], jobs=2)
    assert pooled.table.equals(one.table) and pooled.collectives.equals(one.collectives)


def test_json_contract(made) -> None:
    out, manifest = made
    res = CliRunner().invoke(main, ["ranks", str(out), "--format", "json"])
    assert res.exit_code == 0, res.output
    doc = json.loads(res.stdout, parse_float=Decimal)
    assert doc["schema"] == "ntrace.ranks/2"
    assert set(doc) == {"schema", "alignment", "matching", "ranks", "stats", "outliers", "collectives", "stragglers", "warnings"}
    keys = {"rank", "trace", "rule", "steps", "step_p50_us", "step_p90_us", "busy_us", "idle_us", "comm_us", "exposed_comm_us", "overlap_pct", "launch_latency_p50_us", "offset_us"}
    assert all(set(r) == keys for r in doc["ranks"])
    assert [ns(r["offset_us"]) for r in doc["ranks"]] == manifest["offsets_ns"]
    assert {"name", "instances", "skew_p50_us", "skew_max_us", "transfer_p50_us"} == set(doc["collectives"][0])
    assert doc["stragglers"][0]["rank"] == LATE and set(doc["stragglers"][0]) == {"rank", "times_last", "last_pct", "wait_caused_us"}
    assert {"figure", "min", "median", "max"} == set(doc["stats"][0])
    assert {(o["figure"], o["rank"]) for o in doc["outliers"]} >= {("comm_us", LATE)}
    for fmt in ("table", "csv", "markdown"):
        res = CliRunner().invoke(main, ["ranks", str(out), "--format", fmt])
        assert res.exit_code == 0 and "rank" in res.stdout


def small(path: Path, start: float, late: float = 0.0, **top: Any) -> Path:
    """A tiny trace: one step, a compute kernel, then an all-reduce starting `late` µs after the others'."""
    evs = [
        x("ProfilerStep#1", "user_annotation", start, 100),
        x("gemm", "kernel", start + 10, 20, pid=0, tid=7),
        x("ncclDevKernel_AllReduce", "kernel", start + 25 + late, 40 - late, pid=0, tid=9),
    ]
    return write_trace(path, evs, **top)


def test_rank_rules_unreadable_rank_and_warnings(tmp_path: Path) -> None:
    small(tmp_path / "rank_0.json", 1000)
    small(tmp_path / "worker-rank2.json", 5000, late=5)
    small(tmp_path / "b.json", 3000, distributedInfo={"rank": 1, "world_size": 5})
    small(tmp_path / "c.json", 3000, distributedInfo={"rank": 1})
    (tmp_path / "rank-3.json").write_text('{"traceEvents": [{"ph": "X", "ts": ')
    result = ranks([tmp_path])
    assert result.table.select("rank", "rule").rows() == [(0, "file name"), (1, "distributedInfo.rank"), (2, "file name")]
    text = "\n".join(result.warnings)
    assert "rank-3.json" in text and f"{tmp_path / 'c.json'}: rank 1 (distributedInfo.rank) repeats {tmp_path / 'b.json'}" in text
    assert "ranks missing from 0..4: 3, 4" in text
    assert result.table["offset"].to_list() == [0, 2000_000, 4000_000]  # end − rank 0's end: 3000 − 1000 µs, 5000 − 1000 µs
    assert result.stragglers.row(0) == (2, 1, 100.0, 2 * 5000)  # 5 µs after each of the two others
    assert result.table.row(2, named=True)["exposed_comm"] == 35_000  # [30, 65) µs less the kernel's [10, 30): all exposed
    assert result.table.row(0, named=True)["exposed_comm"] == 35_000 and result.table.row(0, named=True)["comm"] == 40_000


def test_partial_collectives_and_step_counts_warn(tmp_path: Path) -> None:
    small(tmp_path / "rank0.json", 0)
    write_trace(tmp_path / "rank1.json", [x("ProfilerStep#1", "user_annotation", 0, 100), x("ProfilerStep#2", "user_annotation", 100, 100), x("gemm", "kernel", 10, 20, pid=0)])
    result = ranks([tmp_path / "rank0.json", tmp_path / "rank1.json"])
    text = "\n".join(result.warnings)
    assert "collective ncclDevKernel_AllReduce: 1 instances are not on every rank (instances per rank: rank 0 1)" in text
    assert "different step counts: rank 0 1, rank 1 2" in text and "not aligned" in text
    assert result.collectives.is_empty() and result.table["offset"].to_list() == [0, 0]


def test_cli_errors(tmp_path: Path) -> None:
    res = CliRunner().invoke(main, ["ranks", str(tmp_path / "nope")])
    assert res.exit_code == 2 and res.stderr.startswith(f"error: {tmp_path / 'nope'}: ")
    (tmp_path / "rank-0.json").write_text('{"traceEvents": [{"ph": "X", "ts": ')
    res = CliRunner().invoke(main, ["ranks", str(tmp_path)])
    assert res.exit_code == 2 and res.stderr.count("\n") == 1 and "rank-0.json" in res.stderr
    assert CliRunner().invoke(main, ["ranks"]).exit_code == 2


@pytest.mark.parametrize("path", shared_trace_files(), ids=lambda p: p.name)
def test_rank_path_computes_what_the_full_summary_gives(path: Path) -> None:
    """summarize_rank skips the op tree and table, yet every figure, step and collective equals those ranks takes from the full Summary."""
    from ntrace.analyses.ranks import rank_summary
    from ntrace.workflows.analyze import summarize, summarize_rank

    quick, full = summarize_rank(path), rank_summary(summarize(path))
    assert (quick.path, quick.meta, quick.warnings, quick.figures) == (full.path, full.meta, full.warnings, full.figures)
    assert quick.steps.equals(full.steps) and quick.collectives.equals(full.collectives)


def test_ranks_leave_out_op_table_warnings_from_traces_and_datasets_alike(tmp_path: Path) -> None:
    """torch's rule giving negative self CPU is an op-table warning: analyze shows it, ranks (no op table) does not, whether it reads the trace or a dataset's summary."""
    from ntrace.workflows.convert import convert

    events = [x("ProfilerStep#1", "user_annotation", 0, 200), x("parent", "cpu_op", 1, 100), x("a", "cpu_op", 1, 80), x("b", "cpu_op", 21, 80)]
    (tmp_path / "run").mkdir()
    trace = write_trace(tmp_path / "run" / "rank0.pt.trace.json", events)
    assert any("negative self CPU" in w for w in analyze(trace).all_warnings)
    convert(tmp_path / "run", tmp_path / "ds", by_rank=True)
    for source in (tmp_path / "run", tmp_path / "ds"):
        result = ranks([source])
        assert result.table["steps"].to_list() == [1] and not any("negative self CPU" in w for w in result.warnings), source


def test_a_huge_rank_or_world_size_is_counted_not_listed(tmp_path: Path) -> None:
    """A rank number or world size near 2**62 (a damaged or hostile trace) gives a warning that lists 20 missing ranks and counts the rest, in no more memory than the ranks present need."""
    events = [x("ProfilerStep#1", "user_annotation", 0, 100)]
    write_trace(tmp_path / "a.json", events, distributedInfo={"rank": 0, "world_size": 2**62})
    write_trace(tmp_path / "b.json", events, distributedInfo={"rank": 2**62 - 5})
    result = ranks([tmp_path])
    assert result.table["rank"].to_list() == [0, 2**62 - 5]
    (line,) = [w for w in result.warnings if w.startswith("ranks missing")]
    assert line == f"ranks missing from 0..{2**62 - 1}: {', '.join(map(str, range(1, 21)))}, … ({2**62 - 2:,} in all)"
    report = CliRunner().invoke(main, ["report", str(tmp_path), "-o", str(tmp_path / "r.html"), "-q"])
    assert report.exit_code == 0, report.output
