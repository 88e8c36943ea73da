"""The Summary stored with a Parquet cache: reused as computed (its events never read), never when stale, and the same output as from the trace."""

from __future__ import annotations

import json
from pathlib import Path

import orjson
import polars as pl
import pytest
from click.testing import CliRunner

import ntrace.io.cache as cache
import ntrace.workflows.analyze as workflow
from helpers import REPO, write_trace, x
from ntrace import analyze, load
from ntrace.cli import main
from ntrace.errors import InputError
from ntrace.io.cache import META_KEY, SUMMARY_KEY, write_cache
from ntrace.render import json as renderer
from ntrace.render import text
from ntrace.workflows.convert import convert

FIXTURES = REPO / "fixtures" / "rmsnorm"


def _trace(tmp_path: Path) -> Path:
    events = [
        x("ProfilerStep#1", "user_annotation", 0, 100),
        x("aten::mm", "cpu_op", 1, 20, **{"External id": 1, "Input Dims": [[2, 3], [3, 2]]}),
        x("cudaLaunchKernel", "cuda_runtime", 5, 4, correlation=7),
        x("gemm", "kernel", 12, 30, pid=0, tid=7, correlation=7, stream=7, device=0),
        x("aten::add", "cpu_op", 40, 10, **{"External id": 2, "Input Dims": [[2], [2]]}),
        x("cudaLaunchKernel", "cuda_runtime", 42, 3, correlation=8),
        x("add_kernel", "kernel", 60, 5, pid=0, tid=7, correlation=8, stream=7, device=0),
    ]
    return write_trace(tmp_path / "t.pt.trace.json", events)


def _cli(*args: str) -> str:
    result = CliRunner().invoke(main, [*args, "-q"] if args[0] == "analyze" else list(args))
    assert result.exit_code == 0, result.output
    return result.stdout


def _convert(trace: Path, out: Path, summary: bool = True) -> Path:
    """The cache file of one trace, with its summary unless told otherwise."""
    profile = load(trace)
    return write_cache(profile.trace, out, profile.summary() if summary else None)


def _rewrite(parquet: Path, out: Path, change) -> Path:  # type: ignore[no-untyped-def]
    """A copy of `parquet` whose stored summary (parsed JSON) went through `change`."""
    metadata = dict(pl.read_parquet_metadata(parquet))
    doc = orjson.loads(metadata[SUMMARY_KEY])
    change(doc)
    metadata[SUMMARY_KEY] = orjson.dumps(doc).decode()
    pl.read_parquet(parquet).write_parquet(out, metadata=metadata)
    return out


def _events_never_read(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make reading a cache's events fail: whatever still works used only the stored summary."""

    def refuse(*_: object, **__: object) -> None:
        raise AssertionError("the cache's events were read")

    monkeypatch.setattr(workflow, "read_trace", refuse)
    monkeypatch.setattr(cache, "read_cache_trace", refuse)


def test_stored_summary_is_used_without_reading_events(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    parquet = _convert(_trace(tmp_path), tmp_path / "t.parquet")
    expected = {tuple(_flags(view)): _cli("analyze", "--format", "json", *_flags(view), str(_trace(tmp_path))) for view in _VIEWS}
    _events_never_read(monkeypatch)
    for view in _VIEWS:
        assert _cli("analyze", "--format", "json", *_flags(view), str(parquet)) == expected[tuple(_flags(view))]
    analysis = analyze(parquet)
    assert renderer.analysis(analysis) and text.analysis(analysis)


_VIEWS = ({}, {"sort_by": "self_device_time_total", "top": 1}, {"group_by_shape": True})


def _flags(view: dict) -> list[str]:
    out = []
    for key, value in view.items():
        out += [f"--{key.replace('_', '-')}"] + ([] if value is True else [str(value)])
    return out


def test_stored_numbers_are_the_ones_shown(tmp_path: Path) -> None:
    """A stored value that differs from the events' shows through: proof that the stored analysis is what analyze prints."""
    parquet = _convert(_trace(tmp_path), tmp_path / "t.parquet")
    forged = _rewrite(parquet, tmp_path / "forged.parquet", lambda doc: doc["values"].update(events=12345))
    assert json.loads(_cli("analyze", "--format", "json", str(forged)))["profiles"][0]["events"] == 12345
    assert json.loads(_cli("analyze", "--format", "json", "--recompute", str(forged)))["profiles"][0]["events"] == 7


def test_stale_or_damaged_analysis_is_recomputed(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    parquet = _convert(trace, tmp_path / "t.parquet")
    expected = _cli("analyze", "--format", "json", str(trace))

    def other_code(doc: dict) -> None:
        doc["code"] = "0" * 64
        doc["values"]["events"] = 12345

    def broken_frame(doc: dict) -> None:
        doc["frames"]["lanes"] = "not base64 ipc"

    for name, change in (("stale", other_code), ("broken", broken_frame)):
        copy = _rewrite(parquet, tmp_path / f"{name}.parquet", change)
        assert cache.read_cache_summary(copy) is None
        assert _cli("analyze", "--format", "json", str(copy)) == expected
    plain = _convert(trace, tmp_path / "bare.parquet", summary=False)
    assert SUMMARY_KEY not in pl.read_parquet_metadata(plain) and META_KEY in pl.read_parquet_metadata(plain)
    assert _cli("analyze", "--format", "json", str(plain)) == expected


def test_extra_lanes_and_recompute_ignore_the_stored_summary(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    parquet = _convert(trace, tmp_path / "t.parquet")
    forged = _rewrite(parquet, tmp_path / "forged.parquet", lambda doc: doc["values"].update(events=12345))
    assert load(forged).summary().events == 12345 and load(forged, recompute=True).summary().events == 7
    extra = {"kernel": "other"}
    with_lanes = load(forged, lanes=extra)
    assert with_lanes.summary().events == 7 and with_lanes.summary().lanes.equals(load(trace, lanes=extra).lanes)
    assert with_lanes.lanes.filter(pl.col("lane") == "hardware")["events"].item() == 0


def test_events_read_back_equal_and_missing_file_is_one_line_error(tmp_path: Path) -> None:
    trace = _trace(tmp_path)
    profile = load(trace)
    parquet = _convert(trace, tmp_path / "t.parquet")
    stored = load(parquet)
    assert stored.events.equals(profile.events)
    assert stored.links.equals(profile.links)  # an analysis not stored is computed from the events read back
    parquet.unlink()
    with pytest.raises(InputError, match="does not exist"):
        load(parquet)
    with pytest.raises(InputError, match="does not exist"):
        analyze(parquet)


def _without_artifacts(text: str) -> dict:
    """The analyze JSON less the artifacts and device profiles (found next to the file read: the NEFFs and device tables stay beside the traces, not in the cache)."""
    doc = json.loads(text)
    for profile in doc["profiles"]:
        profile.pop("artifacts")
        profile.pop("device_profiles")
    doc.pop("artifacts")
    doc["warnings"] = [w for w in doc["warnings"] if "NEFF" not in w and "NTFF" not in w]
    return doc


def test_fixtures_every_format_same_from_stored_analysis(tmp_path: Path) -> None:
    convert(FIXTURES, tmp_path / "pq")
    for fmt in ("table", "json", "csv", "markdown"):
        for extra in ([], ["--group-by-shape", "--sort-by", "cpu_time_total", "--top", "3"]):
            cached = _cli("analyze", "--format", fmt, *extra, str(tmp_path / "pq"))
            assert cached == _cli("analyze", "--format", fmt, "--recompute", *extra, str(tmp_path / "pq")), (fmt, extra)
            if fmt == "json":
                assert _without_artifacts(cached) == _without_artifacts(_cli("analyze", "--format", fmt, *extra, str(FIXTURES)))
    device_free = _cli("compare", str(FIXTURES)).split("\n\nDevice profiles per variant")[0]  # the device tables stay beside the traces
    assert _cli("compare", str(tmp_path / "pq")).split("\n\nDevice profiles per variant")[0].rstrip() == device_free.rstrip()


def test_parallel_load_of_stored_profiles(tmp_path: Path) -> None:
    convert(FIXTURES, tmp_path / "pq")
    one = _cli("analyze", "--format", "json", str(tmp_path / "pq"))
    assert _cli("analyze", "--format", "json", "--jobs", "2", str(tmp_path / "pq")) == one
    assert len(json.loads(one)["profiles"]) == 3


def test_report_diff_and_export_from_a_converted_directory(tmp_path: Path) -> None:
    """Commands that need more than the stored analysis (timeline, gaps, flows) read the events back; a cache directory elsewhere works."""
    convert(FIXTURES, tmp_path / "pq")
    out = tmp_path / "r.html"
    result = CliRunner().invoke(main, ["report", str(tmp_path / "pq"), "-o", str(out), "-q"])
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert all(name in page for name in ("naive", "fused", "compiled")) and "<svg" in page
    diff = _cli("diff", str(tmp_path / "pq" / "naive"), str(tmp_path / "pq" / "fused"))
    assert diff == _cli("diff", str(FIXTURES / "naive"), str(FIXTURES / "fused")).replace(str(FIXTURES), str(tmp_path / "pq"))


def test_jobs_send_back_summaries_equal_to_one_process(tmp_path: Path) -> None:
    """--jobs workers analyze their traces and return only Summaries; the output equals one process's."""
    for rank in range(3):
        folder = tmp_path / f"rank{rank}"
        folder.mkdir()
        _trace(folder)
    one, two = analyze(tmp_path), analyze(tmp_path, jobs=2)
    assert renderer.analysis(two) == renderer.analysis(one) and text.analysis(two) == text.analysis(one)
    assert [s.idle_gaps.equals(t.idle_gaps) and s.launch_latencies.equals(t.launch_latencies) and s.queue_delays.equals(t.queue_delays) for s, t in zip(two.summaries, one.summaries)] == [True] * 3
