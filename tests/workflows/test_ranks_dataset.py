"""`ntrace convert --by-rank` and `ntrace ranks DATASET` on a SYNTHETIC 8-rank set (scripts/make_ranks.py, rank 5 late, clocks shifted): the same JSON as the rank traces themselves, from the per-rank summaries alone.

The oracle is `ntrace ranks` on the JSON traces, whose every figure tests/workflows/test_ranks.py
checks against plain Python; here the dataset must give that document byte for byte.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from helpers import REAL_TRACES, REPO, write_trace, x
from ntrace.cli import main
from ntrace.io.dataset import dataset_parts, summary_path
from ntrace.workflows.convert import convert
from ntrace.workflows.ranks import ranks

SRC = REAL_TRACES / "nccl_parser_config__nccl_data.json.gz"
N = 8

pytestmark = pytest.mark.skipif(not SRC.exists(), reason=f"{SRC} is absent")


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """The 8 rank traces and their dataset."""
    out = tmp_path_factory.mktemp("ranks")
    subprocess.run(
        [sys.executable, str(REPO / "scripts" / "make_ranks.py"), str(SRC), str(out / "set"), "--ranks", str(N), "--offsets-seed", "17",
         "--delay-rank", "5", "--delay-us", "250", "--collectives", "AllReduce", "--manifest", str(out / "manifest.json")],
        check=True, capture_output=True,
    )  # fmt: skip
    done = convert(out / "set", out / "dataset", by_rank=True)
    assert done["error"].null_count() == N
    return out / "set", out / "dataset"


def _json(*args: str) -> str:
    res = CliRunner().invoke(main, ["ranks", *args, "--format", "json", "-q"])
    assert res.exit_code == 0, res.output
    return res.stdout


@pytest.fixture(scope="module")
def expected(made: tuple[Path, Path]) -> str:
    """`ranks` on the JSON traces."""
    return _json(str(made[0]))


def _copy(dataset: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(dataset, tmp_path / "dataset"))


def test_layout_is_hive_partitioned_events_with_a_summary_beside_each(made: tuple[Path, Path]) -> None:
    traces, dataset = made
    assert sorted(p.relative_to(dataset).as_posix() for p in dataset.rglob("*") if p.is_file()) == sorted(
        f"rank={r}/{name}" for r in range(N) for name in (f"rank-{r}.trace.json.parquet", f"_rank-{r}.trace.json.summary.json")
    )
    per_rank = pl.scan_parquet(dataset / "rank=*" / "**" / "*.parquet", hive_partitioning=True).group_by("rank").len().sort("rank").collect()
    assert per_rank["rank"].to_list() == list(range(N))
    for r in range(N):  # every event of a rank's trace, in its partition
        doc = json.loads((traces / f"rank-{r}.trace.json").read_bytes())
        assert per_rank["len"][r] == pl.read_parquet(dataset / f"rank={r}" / f"rank-{r}.trace.json.parquet").height
        summary = json.loads(summary_path(dataset / f"rank={r}" / f"rank-{r}.trace.json.parquet").read_bytes())
        assert (summary["schema"], summary["rank"], summary["rule"], summary["source"]) == ("ntrace.rank-summary/1", r, "distributedInfo.rank", str(traces / f"rank-{r}.trace.json"))
        assert summary["meta"]["distributedInfo"] == doc["distributedInfo"]


def test_ranks_on_the_dataset_is_the_json_traces_document(made: tuple[Path, Path], expected: str) -> None:
    assert _json(str(made[1])) == expected
    assert _json(str(made[1]), "--jobs", "2") == expected
    assert ranks([made[1]]).table.equals(ranks([made[0]]).table)


def test_only_the_summaries_are_read(made: tuple[Path, Path], expected: str, tmp_path: Path) -> None:
    dataset = _copy(made[1], tmp_path)
    for events in dataset.glob("rank=*/*.parquet"):
        events.unlink()
    assert _json(str(dataset)) == expected


def test_a_summary_from_other_analysis_code_is_computed_again_from_the_events(made: tuple[Path, Path], expected: str, tmp_path: Path) -> None:
    dataset = _copy(made[1], tmp_path)
    path = dataset / "rank=3" / "_rank-3.trace.json.summary.json"
    doc = json.loads(path.read_bytes())
    path.write_text(json.dumps({**doc, "code": "other", "figures": {**doc["figures"], "idle": 1}}))
    assert _json(str(dataset)) == expected


def test_a_damaged_summary_is_named_and_its_rank_summarized_again(made: tuple[Path, Path], expected: str, tmp_path: Path) -> None:
    dataset = _copy(made[1], tmp_path)
    path = dataset / "rank=3" / "_rank-3.trace.json.summary.json"
    path.write_bytes(path.read_bytes()[:100])
    res = CliRunner().invoke(main, ["ranks", str(dataset), "--format", "json", "-q"])
    assert res.exit_code == 0
    got, want = json.loads(res.stdout), json.loads(expected)
    (note,) = got["warnings"]
    assert note.startswith(f"{path}: is not a readable rank summary (damaged (JSONDecodeError") and note.endswith(f"; rank 3 summarized again from {dataset / 'rank=3' / 'rank-3.trace.json.parquet'}")
    assert {**got, "warnings": []} == want
    assert f"warning: {note}" in res.stderr


def test_a_rank_whose_files_are_both_damaged_is_named_and_the_others_analyzed(made: tuple[Path, Path], tmp_path: Path) -> None:
    dataset = _copy(made[1], tmp_path)
    events = dataset / "rank=6" / "rank-6.trace.json.parquet"
    for path in (events, summary_path(events)):
        path.write_bytes(path.read_bytes()[:200])
    got = json.loads(_json(str(dataset)))
    assert [r["rank"] for r in got["ranks"]] == [0, 1, 2, 3, 4, 5, 7]
    warnings = got["warnings"]
    assert warnings[0].startswith(f"{summary_path(events)}: is not a readable rank summary") and warnings[0].endswith(f"rank 6 summarized again from {events}")
    assert warnings[1].startswith(f"skipped {events}: is not a readable Parquet file")
    assert "ranks missing from 0..7: 6" in warnings
    assert got["stragglers"][0]["rank"] == 5


def test_damaged_events_beside_a_good_summary_are_named(made: tuple[Path, Path], expected: str, tmp_path: Path) -> None:
    dataset = _copy(made[1], tmp_path)
    events = dataset / "rank=2" / "rank-2.trace.json.parquet"
    events.write_bytes(events.read_bytes()[:300])
    got = json.loads(_json(str(dataset)))
    (note,) = got["warnings"]
    assert note.startswith(f"{events}: damaged events file (") and note.endswith("); rank 2 analyzed from its summary")
    assert {**got, "warnings": []} == json.loads(expected)


def test_events_without_a_summary_are_summarized_and_said_so(made: tuple[Path, Path], expected: str, tmp_path: Path) -> None:
    dataset = _copy(made[1], tmp_path)
    events = dataset / "rank=4" / "rank-4.trace.json.parquet"
    summary_path(events).unlink()
    got = json.loads(_json(str(dataset)))
    assert got["warnings"] == [f"{events}: no rank summary beside it; summarized from its events"]
    assert {**got, "warnings": []} == json.loads(expected)


def test_convert_by_rank_refuses_a_trace_without_rank_and_keeps_the_rest(tmp_path: Path) -> None:
    src = tmp_path / "run"
    (src / "sub").mkdir(parents=True)
    write_trace(src / "sub" / "w.pt.trace.json", [x("ProfilerStep#1", "user_annotation", 0, 100)], distributedInfo={"rank": 2})
    write_trace(src / "anon.pt.trace.json", [x("ProfilerStep#1", "user_annotation", 0, 100)])
    res = CliRunner().invoke(main, ["convert", str(src), "-o", str(tmp_path / "ds"), "--by-rank"])
    assert res.exit_code == 0, res.output
    assert res.stdout == f"wrote {tmp_path / 'ds' / 'rank=2' / 'sub' / 'w.pt.trace.json.parquet'}\n"
    assert res.stderr == f"warning: skipped {src / 'anon.pt.trace.json'}: has no rank (no distributedInfo.rank, no rank number in the file name, no single worker_gid); not written\n"
    (part,) = dataset_parts(tmp_path / "ds")
    assert (part.rank, part.events, part.summary) == (2, tmp_path / "ds" / "rank=2" / "sub" / "w.pt.trace.json.parquet", tmp_path / "ds" / "rank=2" / "sub" / "_w.pt.trace.json.summary.json")


def test_step_counts_and_partial_collectives_warn_with_counts_as_on_the_traces(tmp_path: Path) -> None:
    src = tmp_path / "run"
    src.mkdir()
    write_trace(src / "rank0.json", [x("ProfilerStep#1", "user_annotation", 0, 100), x("ncclDevKernel_AllReduce", "kernel", 30, 35, pid=0)])
    write_trace(src / "rank1.json", [x("ProfilerStep#1", "user_annotation", 0, 100), x("ProfilerStep#2", "user_annotation", 100, 100), x("gemm", "kernel", 10, 20, pid=0)])
    convert(src, tmp_path / "dataset", by_rank=True)
    on_dataset, on_traces = ranks([tmp_path / "dataset"]), ranks([src])
    assert on_dataset.warnings == on_traces.warnings
    assert "collective ncclDevKernel_AllReduce: 1 instances are not on every rank (instances per rank: rank 0 1); left out of the matching" in on_dataset.warnings
    assert "ranks have different step counts: rank 0 1, rank 1 2" in on_dataset.warnings
    assert on_dataset.table.equals(on_traces.table)


def test_a_summary_alone_that_is_stale_or_damaged_leaves_its_rank_out_by_name(made: tuple[Path, Path], tmp_path: Path) -> None:
    dataset = _copy(made[1], tmp_path)
    for r in (1, 2):
        (dataset / f"rank={r}" / f"rank-{r}.trace.json.parquet").unlink()
    stale, damaged = dataset / "rank=1" / "_rank-1.trace.json.summary.json", dataset / "rank=2" / "_rank-2.trace.json.summary.json"
    stale.write_text(json.dumps({**json.loads(stale.read_bytes()), "code": "other"}))
    damaged.write_text("{")
    got = json.loads(_json(str(dataset)))
    assert [r["rank"] for r in got["ranks"]] == [0, 3, 4, 5, 6, 7]
    assert got["warnings"][0] == f"{stale}: written by other ntrace analysis code, and no events file beside it; rank 1 left out"
    assert got["warnings"][1].startswith(f"{damaged}: is not a readable rank summary") and got["warnings"][1].endswith("; rank 2 left out")
    assert "ranks missing from 0..7: 1, 2" in got["warnings"]


def test_analyze_on_a_dataset_reads_its_events_files_not_its_summaries(made: tuple[Path, Path]) -> None:
    res = CliRunner().invoke(main, ["analyze", str(made[1]), "--format", "json", "-q"])
    assert res.exit_code == 0 and res.stderr == ""
    assert [p["trace"] for p in json.loads(res.stdout)["profiles"]] == [str(made[0] / f"rank-{r}.trace.json") for r in range(N)]
