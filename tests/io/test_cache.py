"""The Parquet cache (ntrace.io.cache): what `write_cache` writes, what `read_cache_trace` and `read_cache_summary` give back."""

from __future__ import annotations

import json
from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from ntrace import load
from ntrace.io.cache import FORMAT_VERSION, META_KEY, is_cache, read_cache_summary, read_cache_trace, stored_summary, write_cache
from ntrace.trace import Trace

from helpers import write_trace, x


def _small(tmp_path: Path, name: str = "rank_0.pt.trace.json") -> Path:
    events = [
        x("ProfilerStep#1", "user_annotation", 0, 100),
        x("aten::mm", "cpu_op", 1, 20, **{"External id": 1, "Input Dims": [[2, 3], [3, 2]]}),
        x("cudaLaunchKernel", "cuda_runtime", 5, 4, correlation=7),
        x("gemm", "kernel", 12, 30, pid=0, tid=7, correlation=7, stream=7, device=0),
        x("neg", "cpu_op", 50, -1),  # clamped with a warning, which the cache must keep
    ]
    return write_trace(tmp_path / name, events, deviceProperties=[{"id": 0, "name": "A100"}], distributedInfo={"rank": 0})


def _write(trace: Path, out: Path, summary: bool = True) -> Path:
    """The cache file of one trace, with its summary unless told otherwise."""
    profile = load(trace)
    return write_cache(profile.trace, out, profile.summary() if summary else None)


def test_round_trip_keeps_events_meta_warnings_variant_and_source(tmp_path: Path) -> None:
    trace = _small(tmp_path)
    original = load(trace).trace
    back = read_cache_trace(_write(trace, tmp_path / "out" / "t.parquet"))
    assert back.events.equals(original.events)
    assert back.meta == original.meta and back.meta["deviceProperties"][0]["name"] == "A100"
    assert back.warnings == original.warnings and any("negative" in w for w in back.warnings)
    assert back.path == trace and back.variant == original.variant
    assert back.events["lane"].dtype == original.events["lane"].dtype


def test_the_summary_round_trips_and_is_tied_to_the_analysis_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    trace = _small(tmp_path)
    summary = load(trace).summary()
    out = _write(trace, tmp_path / "t.parquet")
    stored = read_cache_summary(out)
    assert stored is not None and stored.device_ns == summary.device_ns == 30_000
    frames = ("lanes", "tracks", "gaps", "steps", "step_devices", "op_groups", "kernels", "findings", "idle_gaps", "launch_latencies", "queue_delays")
    assert all(getattr(stored, f).equals(getattr(summary, f)) for f in frames)
    assert stored.outside_steps == summary.outside_steps and stored.self_cpu_ns == summary.self_cpu_ns
    assert read_cache_summary(_write(trace, tmp_path / "bare.parquet", summary=False)) is None
    import ntrace.summary

    monkeypatch.setattr(ntrace.summary, "analysis_digest", lambda: "other code")
    assert read_cache_summary(out) is None  # computed by other analysis code: not reused


def test_file_is_plain_parquet_any_engine_reads(tmp_path: Path) -> None:
    out = _write(_small(tmp_path), tmp_path / "t.parquet")
    raw = pl.read_parquet(out)
    assert raw["lane"].dtype == pl.String and raw["ts"].dtype == pl.Int64
    assert raw.filter(pl.col("lane") == "hardware")["name"].to_list() == ["gemm"]
    assert json.loads(pl.read_parquet_metadata(out)[META_KEY])["version"] == FORMAT_VERSION
    # the streaming engine over a multi-rank set: sum of hardware time straight from the files
    _write(_small(tmp_path, "rank_1.pt.trace.json"), tmp_path / "t2.parquet")
    total = pl.scan_parquet(tmp_path / "*.parquet").filter(pl.col("lane") == "hardware").select(pl.col("dur").sum()).collect(engine="streaming")
    assert total.item() == 2 * 30_000


def test_extra_lanes_reclassify_like_json(tmp_path: Path) -> None:
    trace = _small(tmp_path)
    out = _write(trace, tmp_path / "t.parquet")
    extra = {"cpu_op": "other"}
    assert read_cache_trace(out, extra).events.equals(load(trace, lanes=extra).events)
    assert load(out, lanes=extra).events.equals(load(trace, lanes=extra).events)


def test_explorer_parquet_is_not_mistaken_for_ours(tmp_path: Path) -> None:
    other = tmp_path / "SystemProfileEvents.parquet"
    pl.DataFrame({"name": ["x"], "start_ts": [1], "duration_ns": [2], "trace_event_source": ["framework"]}).write_parquet(other)
    assert not is_cache(other)
    assert is_cache(_write(_small(tmp_path), tmp_path / "ours.parquet"))
    assert not is_cache(tmp_path / "missing.parquet")


def test_stored_summary_is_ours_or_none_with_one_footer_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import ntrace.io.parquet

    ours, bare = _write(_small(tmp_path), tmp_path / "ours.parquet"), _write(_small(tmp_path), tmp_path / "bare.parquet", summary=False)
    other = tmp_path / "SystemProfileEvents.parquet"
    pl.DataFrame({"name": ["x"], "start_ts": [1]}).write_parquet(other)
    (garbage := tmp_path / "garbage.parquet").write_bytes(b"PAR1 not really")
    reads: list[Path] = []
    real = ntrace.io.parquet.metadata
    monkeypatch.setattr(ntrace.io.parquet, "metadata", lambda path: reads.append(path) or real(path))
    stored = stored_summary(ours)
    assert stored is not None and reads == [ours]  # what is_cache and read_cache_summary read twice
    assert stored.to_bytes() == read_cache_summary(ours).to_bytes()  # type: ignore[union-attr]
    assert [stored_summary(p) for p in (bare, other, garbage, tmp_path / "missing.parquet", _small(tmp_path))] == [None] * 5


def test_unreadable_or_foreign_files_are_one_line_errors(tmp_path: Path) -> None:
    from ntrace.errors import TraceFormatError

    junk = tmp_path / "junk.parquet"
    junk.write_bytes(b"PAR1 not really")
    with pytest.raises(TraceFormatError, match="junk.parquet"):
        read_cache_trace(junk)
    out = tmp_path / "old.parquet"
    load(_small(tmp_path)).events.with_columns(pl.col("lane").cast(pl.String)).write_parquet(out, metadata={META_KEY: json.dumps({"version": 0})})
    with pytest.raises(TraceFormatError, match="convert it again"):
        read_cache_trace(out)
