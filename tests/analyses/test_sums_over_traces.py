"""Sums over many traces (ntrace.analyses.sums, the ranks' clock alignment): each trace fits int64 ns, their sums need not; what is left out is named, and what is kept equals plain Python integer arithmetic exactly."""

from __future__ import annotations

import json
import os
import random
import subprocess
import sys
from pathlib import Path

import polars as pl

from ntrace.analyses import ranks as rk
from ntrace.workflows.compare import compare
from ntrace.workflows.diff import diff
from ntrace.workflows.ranks import ranks

INT64_MAX = 2**63 - 1
NCCL = "ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevComm*, unsigned long, ncclWork*)"


def _kernel(name: str, ts_us: int, dur_us: int) -> dict[str, object]:
    return {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": ts_us, "dur": dur_us, "args": {"device": 0, "stream": 7}}


def _trace(path: Path, events: list[dict[str, object]], **top: object) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({**top, "traceEvents": events}))
    return path


def _variant(root: Path, durations_us: list[int]) -> Path:
    """One trace per duration, each a CPU op and one kernel of that length (µs)."""
    for i, dur in enumerate(durations_us):
        cpu = {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 0, "dur": 10}
        _trace(root / f"t{i}.json", [cpu, _kernel("gemm", 20, dur)])
    return root


def _kept(durations_ns: list[int]) -> list[bool]:
    """Plain Python: the first trace kept, each later one kept if the running sum of kept kernel time stays within int64."""
    keep, running = [], 0
    for i, d in enumerate(durations_ns):
        keep.append(i == 0 or running + d <= INT64_MAX)
        running += d if keep[-1] else 0
    return keep


def test_compare_sums_each_variant_within_int64_and_names_what_it_left_out(tmp_path: Path) -> None:
    rnd = random.Random(20)
    durations_us = [rnd.randint(1, 4 * 10**15) for _ in range(8)]  # up to 4e18 ns each (what one such trace holds): a few fit together
    a, b = _variant(tmp_path / "a", durations_us), _variant(tmp_path / "b", durations_us[:1])
    keep = _kept([d * 1000 for d in durations_us])
    assert not all(keep)  # the sums do pass int64
    result = compare([a, b])
    row = result.variants.row(0, named=True)
    assert row["device"] == row["compute"] == sum(d * 1000 for d, k in zip(durations_us, keep) if k)
    assert row["traces"] == sum(keep)
    left = [w for w in result.warnings if "left out of a" in w]
    assert left == [f"{a / f't{i}.json'}: left out of a: with it, sums over a's traces would pass what int64 ns hold" for i, k in enumerate(keep) if not k]
    assert result.variants.row(1, named=True)["device"] == durations_us[0] * 1000


def test_compare_of_many_variants_checks_each_variants_sums_on_its_own(tmp_path: Path) -> None:
    """The sizes of every variant's traces come from one query over all of them (summable_sets): each variant keeps what its own running sums allow, not what its neighbours' would."""
    rnd = random.Random(21)
    plans = {"a": [rnd.randint(1, 4 * 10**15) for _ in range(6)], "b": [5], "c": [4 * 10**15] * 3, "d": [rnd.randint(1, 10**6) for _ in range(3)]}
    roots = [_variant(tmp_path / name, durations) for name, durations in plans.items()]
    result = compare(roots)
    assert result.variants["name"].to_list() == list(plans)
    for row, (name, durations_us) in zip(result.variants.iter_rows(named=True), plans.items()):
        keep = _kept([d * 1000 for d in durations_us])
        assert row["device"] == row["compute"] == sum(d * 1000 for d, k in zip(durations_us, keep) if k), name
        assert row["traces"] == sum(keep), name
        left = [w for w in result.warnings if f"left out of {name}:" in w]
        assert left == [f"{tmp_path / name / f't{i}.json'}: left out of {name}: with it, sums over {name}'s traces would pass what int64 ns hold" for i, k in enumerate(keep) if not k]
    assert not all(_kept([d * 1000 for d in plans["c"]])) and all(_kept([d * 1000 for d in plans["d"]]))


def test_diff_sums_each_side_within_int64(tmp_path: Path) -> None:
    durations_us = [3 * 10**15, 4 * 10**15, 25 * 10**14, 10**9]  # 3e18 + 4e18 fit, + 2.5e18 does not, + 1e12 does
    base, test = _variant(tmp_path / "base", durations_us), _variant(tmp_path / "test", [5])
    keep = _kept([d * 1000 for d in durations_us])
    assert keep == [True, True, False, True]
    result = diff(base, test)
    want = sum(d * 1000 for d, k in zip(durations_us, keep) if k)
    assert result.base_device == want and result.test_device == 5000
    hardware = result.lanes.filter(pl.col("lane") == "hardware").row(0, named=True)
    assert hardware["base_total"] == want and hardware["test_total"] == 5000
    assert [w for w in result.warnings if "left out" in w] == [f"{base / 't2.json'}: left out of base: with it, sums over base's traces would pass what int64 ns hold"]


def test_cli_compare_warns_in_one_line_and_prints_exact_sums(tmp_path: Path) -> None:
    a, b = _variant(tmp_path / "a", [4 * 10**15] * 3), _variant(tmp_path / "b", [7])  # each of a's fits int64 ns (ntrace.io.bounds), two together do, three do not
    run = subprocess.run([sys.executable, "-m", "ntrace", "compare", str(a), str(b), "--format", "json"], capture_output=True, text=True, env={**os.environ, "NTRACE_CACHE": "0"})
    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    assert run.stderr.splitlines() == [f"warning: {a / f't{i}.json'}: left out of a: with it, sums over a's traces would pass what int64 ns hold" for i in (2,)]
    variants = {v["name"]: v for v in json.loads(run.stdout)["variants"]}
    assert variants["a"]["device_time_us"] == 8 * 10**15 and variants["a"]["traces"] == 2
    assert variants["b"]["device_time_us"] == 7


def _ranks(root: Path, starts_us: dict[int, list[int]]) -> Path:
    """One trace per rank: an all-reduce kernel (10 µs) at each start."""
    for rank, starts in starts_us.items():
        _trace(root / f"r{rank}.json", [_kernel(NCCL, ts, 10) for ts in starts], distributedInfo={"rank": rank, "world_size": len(starts_us)})
    return root


def test_a_rank_whose_clock_int64_cannot_reach_is_left_out_of_the_matching(tmp_path: Path) -> None:
    far = 4_700_000_000_000_000  # µs: ranks 0 and 2 lie 9.4e18 ns apart
    root = _ranks(tmp_path, {0: [-far, -far + 100, -far + 200], 1: [0, 100, 300], 2: [far, far + 100, far + 200]})
    result = ranks([root])
    offsets = dict(result.table.select("rank", "offset").iter_rows())
    ends = {0: [(-far + d + 10) * 1000 for d in (0, 100, 200)], 1: [(d + 10) * 1000 for d in (0, 100, 300)]}
    diffs = sorted(e1 - e0 for e0, e1 in zip(ends[0], ends[1]))
    assert offsets == {0: 0, 1: diffs[(len(diffs) * 50 + 99) // 100 - 1], 2: 0}  # nearest-rank median of plain-Python differences
    assert "rank 2: its clock lies further from rank 0's than int64 ns reach; left out of the collective matching (offset 0)" in result.warnings
    assert result.collectives["instances"].to_list() == [3]  # matched on ranks 0 and 1
    skews = sorted(abs((s1 * 1000 - offsets[1]) - s0 * 1000) for s0, s1 in zip([-far, -far + 100, -far + 200], [0, 100, 300]))
    assert result.collectives["skew_max"].to_list() == [skews[-1]]


def test_instances_whose_waits_would_pass_int64_are_left_out_and_the_rest_exact() -> None:
    far = 4_620_000_000_000_000_000  # ns
    starts = {0: [0, 0, 0, 0], 1: [-far, 5, 0, far]}  # rank 1's median offset is 0; instances 0 and 3 wait 4.62e18 each
    rows = [{"name": NCCL, "key": k, "rank": r, "ts": t, "end": t + 10} for r, ts in starts.items() for k, t in enumerate(ts)]
    found = pl.DataFrame(rows, schema={"name": pl.String, "key": pl.Int64, "rank": pl.Int64, "ts": pl.Int64, "end": pl.Int64})
    offsets, unreachable = rk.clock_offsets(found, [0, 1])
    assert unreachable == [] and offsets["offset"].to_list() == [0, 0]
    per, left_out = rk.aligned_instances(found, offsets)
    behind = {k: max(starts[0][k], starts[1][k]) * 2 - starts[0][k] - starts[1][k] for k in range(4)}  # plain Python: Σ latest − start
    kept, running = [], 0
    for k in sorted(behind, key=lambda k: (behind[k], k)):  # the least behind first, file order among ties
        if running + behind[k] <= INT64_MAX:
            kept.append(k)
            running += behind[k]
    assert left_out == 4 - len(kept) == 1
    assert per["key"].to_list() == sorted(kept) and per["behind"].to_list() == [behind[k] for k in sorted(kept)]
    waits = dict(rk.stragglers(found, offsets, per).select("rank", "wait_caused").iter_rows())
    want = {0: sum(behind[k] for k in kept if starts[0][k] > starts[1][k]), 1: sum(behind[k] for k in kept if starts[1][k] > starts[0][k])}
    assert waits == want and max(waits.values()) <= INT64_MAX


def test_report_shows_and_prints_the_traces_its_comparison_left_out(tmp_path: Path) -> None:
    _variant(tmp_path / "run" / "x", [4 * 10**15] * 3)
    _variant(tmp_path / "run" / "y", [7])
    out = tmp_path / "report.html"
    run = subprocess.run([sys.executable, "-m", "ntrace", "report", str(tmp_path / "run"), "-o", str(out)], capture_output=True, text=True, env={**os.environ, "NTRACE_CACHE": "0"})
    assert run.returncode == 0, run.stderr
    line = f"{tmp_path / 'run' / 'x' / 't2.json'}: left out of x: with it, sums over x&#x27;s traces would pass what int64 ns hold"
    page = out.read_text()
    assert page.count(line) == 1 and "-9" not in page.split('id="compare"')[1].split("</table>")[0]
    assert [w for w in run.stderr.splitlines() if "left out" in w] == [f"warning: {tmp_path / 'run' / 'x' / 't2.json'}: left out of x: with it, sums over x's traces would pass what int64 ns hold"]
