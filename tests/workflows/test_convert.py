"""`ntrace convert` (ntrace.workflows.convert): every trace under a path into the Parquet cache, same relative paths, in parallel alike."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
from click.testing import CliRunner

from helpers import write_trace, x
from ntrace.cli import main
from ntrace.workflows.convert import convert, parquet_name


def _small(tmp_path: Path, name: str = "rank_0.pt.trace.json") -> Path:
    events = [
        x("ProfilerStep#1", "user_annotation", 0, 100),
        x("aten::mm", "cpu_op", 1, 20, **{"External id": 1, "Input Dims": [[2, 3], [3, 2]]}),
        x("cudaLaunchKernel", "cuda_runtime", 5, 4, correlation=7),
        x("gemm", "kernel", 12, 30, pid=0, tid=7, correlation=7, stream=7, device=0),
    ]
    return write_trace(tmp_path / name, events, deviceProperties=[{"id": 0, "name": "A100"}], distributedInfo={"rank": 0})


def test_convert_directory_keeps_relative_paths_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    src = tmp_path / "run"
    (src / "node1").mkdir(parents=True)
    _small(src)
    _small(src / "node1", "rank_1.pt.trace.json")
    (src / "node1" / "broken.pt.trace.json").write_text("[1, 2")  # one bad file never stops the rest
    done = convert(src, tmp_path / "cache")
    assert done.height == 3
    ok = done.filter(pl.col("error").is_null())
    assert sorted(Path(p).relative_to(tmp_path / "cache").as_posix() for p in ok["parquet"]) == ["node1/rank_1.pt.trace.parquet", "rank_0.pt.trace.parquet"]
    assert done.filter(pl.col("error").is_not_null())["trace"].to_list() == [str(src / "node1" / "broken.pt.trace.json")]
    assert sorted(p.name for p in (tmp_path / "cache").rglob("*")) == ["node1", "rank_0.pt.trace.parquet", "rank_1.pt.trace.parquet"]


def test_parallel_convert_writes_the_same_files(tmp_path: Path) -> None:
    src = tmp_path / "run"
    src.mkdir()
    for rank in range(3):
        _small(src, f"rank_{rank}.pt.trace.json")
    convert(src, tmp_path / "one")
    convert(src, tmp_path / "two", jobs=2)
    for rank in range(3):
        name = f"rank_{rank}.pt.trace.parquet"
        assert pl.read_parquet(tmp_path / "one" / name).equals(pl.read_parquet(tmp_path / "two" / name))


def test_parquet_name_strips_json_and_gz() -> None:
    root = Path("/r")
    assert parquet_name(Path("/r/a/t.pt.trace.json.gz"), root) == Path("a/t.pt.trace.parquet")
    assert parquet_name(Path("/r/trace.json"), root) == Path("trace.parquet")


def test_cli_convert_then_analyze_gives_the_json_result(tmp_path: Path) -> None:
    src = tmp_path / "run"
    src.mkdir()
    _small(src)
    _small(src, "rank_1.pt.trace.json")
    runner = CliRunner()
    converted = runner.invoke(main, ["convert", str(src), "-o", str(tmp_path / "cache"), "-j", "2"])
    assert converted.exit_code == 0, converted.output
    assert converted.output.count("wrote ") == 2
    from_json = runner.invoke(main, ["analyze", str(src), "--format", "json", "-q"])
    from_parquet = runner.invoke(main, ["analyze", str(tmp_path / "cache"), "--format", "json", "-q"])
    assert from_json.exit_code == from_parquet.exit_code == 0
    assert json.loads(from_parquet.stdout) == json.loads(from_json.stdout)


def test_cli_convert_nothing_to_convert_exits_2(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    result = CliRunner().invoke(main, ["convert", str(tmp_path / "empty"), "-o", str(tmp_path / "out")])
    assert result.exit_code == 2 and "no JSON framework trace" in result.output
