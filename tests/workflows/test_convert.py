"""`ntrace convert` (ntrace.workflows.convert): every trace under a path into the Parquet cache, same relative paths, in parallel alike."""

from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
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
    assert sorted(Path(p).relative_to(tmp_path / "cache").as_posix() for p in ok["parquet"]) == ["node1/rank_1.pt.trace.json.parquet", "rank_0.pt.trace.json.parquet"]
    assert done.filter(pl.col("error").is_not_null())["trace"].to_list() == [str(src / "node1" / "broken.pt.trace.json")]
    assert sorted(p.name for p in (tmp_path / "cache").rglob("*")) == ["node1", "rank_0.pt.trace.json.parquet", "rank_1.pt.trace.json.parquet"]


def test_parallel_convert_writes_the_same_files(tmp_path: Path) -> None:
    src = tmp_path / "run"
    src.mkdir()
    for rank in range(3):
        _small(src, f"rank_{rank}.pt.trace.json")
    convert(src, tmp_path / "one")
    convert(src, tmp_path / "two", jobs=2)
    for rank in range(3):
        name = f"rank_{rank}.pt.trace.json.parquet"
        assert pl.read_parquet(tmp_path / "one" / name).equals(pl.read_parquet(tmp_path / "two" / name))


def test_parquet_name_keeps_the_whole_file_name() -> None:
    root = Path("/r")
    assert parquet_name(Path("/r/a/t.pt.trace.json.gz"), root) == Path("a/t.pt.trace.json.gz.parquet")
    assert parquet_name(Path("/r/trace.json"), root) == Path("trace.json.parquet")


def test_parquet_name_too_long_for_a_file_name_is_shortened_with_a_hash() -> None:
    root = Path("/r")
    names = {parquet_name(root / "d" / f"{'é' * 120}{tail}.json", root) for tail in ("a", "b", "")}
    assert len(names) == 3
    for name in names:
        assert name.parent == Path("d") and len(os.fsencode(name.name)) <= 255 and name.name.endswith(".parquet")
        assert name.name.encode().decode() == name.name  # never cut inside a UTF-8 character
    fits = root / ("x" * 247)  # 247 + ".parquet" = 255 bytes: kept whole
    assert parquet_name(fits, root) == Path("x" * 247 + ".parquet")


def test_same_stem_gzipped_and_not_and_in_two_folders_give_distinct_files(tmp_path: Path) -> None:
    src = tmp_path / "run"
    for where in (src, src / "a", src / "b"):
        where.mkdir(parents=True, exist_ok=True)
        _small(where, "x.json")
    (src / "x.json.gz").write_bytes(gzip.compress((src / "x.json").read_bytes()))
    done = convert(src, tmp_path / "out")
    assert done["error"].is_null().all()
    got = sorted(p.relative_to(tmp_path / "out").as_posix() for p in (tmp_path / "out").rglob("*.parquet"))
    assert got == ["a/x.json.parquet", "b/x.json.parquet", "x.json.gz.parquet", "x.json.parquet"]


def test_name_near_the_limit_converts(tmp_path: Path) -> None:
    src = tmp_path / "run"
    src.mkdir()
    trace = _small(src, "r" * 240 + ".pt.trace.json")  # 254 bytes: its Parquet name must be shortened
    result = CliRunner().invoke(main, ["convert", str(src), "-o", str(tmp_path / "out")])
    assert result.exit_code == 0, result.output
    (written,) = (tmp_path / "out").iterdir()
    assert len(written.name) == 255 and written.name.startswith(trace.name[:200])
    assert CliRunner().invoke(main, ["analyze", str(written), "--format", "json"]).exit_code == 0


def test_full_disk_is_one_error_and_leaves_no_temporary_file(tmp_path: Path) -> None:
    """A file size limit (RLIMIT_FSIZE, SIGXFSZ ignored) stands in for a full disk: Polars reports the failed write as its own error."""
    src = tmp_path / "run"
    src.mkdir()
    _small(src, "rank_0.pt.trace.json")
    _small(src, "rank_1.pt.trace.json")
    out = tmp_path / "out"
    limit = "import resource, signal, sys; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); resource.setrlimit(resource.RLIMIT_FSIZE, (2000, 2000)); "
    code = limit + f"sys.argv = ['ntrace', 'convert', {str(src)!r}, '-o', {str(out)!r}]; from ntrace.cli import run; run()"
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "Traceback" not in proc.stderr, proc.stderr
    assert re.fullmatch(rf"error: {re.escape(str(out))}/rank_0\.pt\.trace\.json\.parquet: cannot be written \(File too large\)\n", proc.stderr), proc.stderr
    assert list(out.iterdir()) == []


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
