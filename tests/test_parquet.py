"""The Parquet cache: what `convert_to_parquet` writes, what `read_parquet` gives back, and the `ntrace convert` command."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from ntrace import load
from ntrace.cli import main
from ntrace.parquet import META_KEY, convert_to_parquet, is_ntrace_parquet, parquet_name, read_parquet, write_parquet

from conftest import write_trace, x


def _small(tmp_path: Path, name: str = "rank_0.pt.trace.json") -> Path:
    events = [
        x("ProfilerStep#1", "user_annotation", 0, 100),
        x("aten::mm", "cpu_op", 1, 20, **{"External id": 1, "Input Dims": [[2, 3], [3, 2]]}),
        x("cudaLaunchKernel", "cuda_runtime", 5, 4, correlation=7),
        x("gemm", "kernel", 12, 30, pid=0, tid=7, correlation=7, stream=7, device=0),
        x("neg", "cpu_op", 50, -1),  # clamped with a warning, which the cache must keep
    ]
    return write_trace(tmp_path / name, events, deviceProperties=[{"id": 0, "name": "A100"}], distributedInfo={"rank": 0})


def test_round_trip_keeps_events_meta_warnings_and_source(tmp_path: Path) -> None:
    trace = _small(tmp_path)
    profile = load(trace)
    out = write_parquet(profile, tmp_path / "out" / "t.parquet")
    back = read_parquet(out)
    assert back.events.equals(profile.events)
    assert back.meta == profile.meta and back.meta["deviceProperties"][0]["name"] == "A100"
    assert back.warnings == profile.warnings and any("negative" in w for w in back.warnings)
    assert back.path == trace
    assert back.events["lane"].dtype == profile.events["lane"].dtype


def test_file_is_plain_parquet_any_engine_reads(tmp_path: Path) -> None:
    out = write_parquet(load(_small(tmp_path)), tmp_path / "t.parquet")
    raw = pl.read_parquet(out)
    assert raw["lane"].dtype == pl.String and raw["ts"].dtype == pl.Int64
    assert raw.filter(pl.col("lane") == "hardware")["name"].to_list() == ["gemm"]
    assert json.loads(pl.read_parquet_metadata(out)[META_KEY])["version"] == 1
    # the streaming engine over a multi-rank set: sum of hardware time straight from the files
    write_parquet(load(_small(tmp_path, "rank_1.pt.trace.json")), tmp_path / "t2.parquet")
    total = pl.scan_parquet(tmp_path / "*.parquet").filter(pl.col("lane") == "hardware").select(pl.col("dur").sum()).collect(engine="streaming")
    assert total.item() == 2 * 30_000


def test_extra_lanes_reclassify_like_json(tmp_path: Path) -> None:
    trace = _small(tmp_path)
    out = write_parquet(load(trace), tmp_path / "t.parquet")
    extra = {"cpu_op": "other"}
    assert read_parquet(out, extra).events.equals(load(trace, lanes=extra).events)
    assert load(out, lanes=extra).events.equals(load(trace, lanes=extra).events)


def test_explorer_parquet_is_not_mistaken_for_ours(tmp_path: Path) -> None:
    other = tmp_path / "SystemProfileEvents.parquet"
    pl.DataFrame({"name": ["x"], "start_ts": [1], "duration_ns": [2], "trace_event_source": ["framework"]}).write_parquet(other)
    assert not is_ntrace_parquet(other)
    assert is_ntrace_parquet(write_parquet(load(_small(tmp_path)), tmp_path / "ours.parquet"))
    assert not is_ntrace_parquet(tmp_path / "missing.parquet")


def test_convert_directory_keeps_relative_paths_and_leaves_no_temporary_files(tmp_path: Path) -> None:
    src = tmp_path / "run"
    (src / "node1").mkdir(parents=True)
    _small(src)
    _small(src / "node1", "rank_1.pt.trace.json")
    (src / "node1" / "broken.pt.trace.json").write_text("[1, 2")  # one bad file never stops the rest
    done = convert_to_parquet(src, tmp_path / "cache")
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
    convert_to_parquet(src, tmp_path / "one")
    convert_to_parquet(src, tmp_path / "two", jobs=2)
    for rank in range(3):
        name = f"rank_{rank}.pt.trace.parquet"
        assert pl.read_parquet(tmp_path / "one" / name).equals(pl.read_parquet(tmp_path / "two" / name))


def test_parquet_name_strips_json_and_gz() -> None:
    root = Path("/r")
    assert parquet_name(Path("/r/a/t.pt.trace.json.gz"), root) == Path("a/t.pt.trace.parquet")
    assert parquet_name(Path("/r/trace.json"), root) == Path("trace.parquet")


def test_unreadable_or_foreign_files_are_one_line_errors(tmp_path: Path) -> None:
    from ntrace.errors import TraceFormatError

    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"PAR1 not really")
    with pytest.raises(TraceFormatError, match="junk.parquet"):
        read_parquet(junk)
    out = tmp_path / "old.parquet"
    load(_small(tmp_path)).events.with_columns(pl.col("lane").cast(pl.String)).write_parquet(out, metadata={META_KEY: json.dumps({"version": 0})})
    with pytest.raises(TraceFormatError, match="convert it again"):
        read_parquet(out)


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
