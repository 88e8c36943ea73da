"""Neuron Explorer Parquet input: a SystemProfileEvents table built from the documented schema gives the same lanes, totals and gaps as the equivalent Kineto trace."""

from __future__ import annotations

from pathlib import Path

import polars as pl
import pytest
from click.testing import CliRunner

from helpers import OPS, explorer_rows, write_trace, x
from ntrace import analyze, load
from ntrace.cli import main
from ntrace.errors import TraceFormatError
from ntrace.io.explorer import EXPLORER_SCHEMA, read_explorer_trace

# One naive-RMSNorm-like step: per op, a framework dispatch, a driver event on stream 3, an
# nrt_execute call and a hardware execution, linked by one flow id. Times in µs from 1000.


def kineto_twin(path: Path) -> Path:
    """The same events as a Kineto trace.json, with the categories the lane table maps to the same lanes."""
    cats = {"neuron_rt": "privateuse1_runtime", "neuron_hw": "kernel"}
    events = []
    for r in explorer_rows().iter_rows(named=True):
        ts, dur = r["start_ts"] / 1000, r["duration_ns"] / 1000
        if r["trace_event_source"] == "neuron_hw":
            events.append(x(r["name"], "kernel", ts, dur, pid=0, tid=0, correlation=r["flow_id"]))
        elif r["trace_event_source"] == "neuron_rt":
            events.append(x(r["name"], cats["neuron_rt"], ts, dur, pid=4242, tid=2, correlation=r["flow_id"]))
        elif r["framework_stream_id"] is not None:
            events.append(x(r["name"], "privateuse1_driver", ts, dur, pid=4242, tid=1, stream=3))
        else:
            cat = "user_annotation" if r["name"].startswith("ProfilerStep") else "cpu_op"
            events.append(x(r["name"], cat, ts, dur, pid=4242, tid=1))
    return write_trace(path, events)


@pytest.fixture
def parquet(tmp_path: Path) -> Path:
    path = tmp_path / "system_profile.parquet"
    explorer_rows().write_parquet(path)
    return path


def test_sources_map_to_lanes(parquet: Path) -> None:
    profile = load(parquet)
    counts = dict(profile.lanes.select("lane", "events").iter_rows())
    assert counts == {"framework": 6, "device": 5, "runtime_api": 5, "hardware": 5, "other": 0}
    assert profile.hardware_tracks["track"].to_list() == ["device NC0:0"]
    assert profile.trace.warnings == ()


def test_same_totals_and_gaps_as_kineto(parquet: Path, tmp_path: Path) -> None:
    explorer = load(parquet)
    kineto = load(kineto_twin(tmp_path / "trace.json"))
    assert explorer.window == kineto.window
    assert explorer.lanes.equals(kineto.lanes)
    assert explorer.gaps.equals(kineto.gaps)
    assert explorer.hardware_idle["gap"].to_list() == kineto.hardware_idle["gap"].to_list()
    assert explorer.steps.drop("name").equals(kineto.steps.drop("name"))


def test_totals_match_plain_sums(parquet: Path) -> None:
    rows = explorer_rows()
    hw = rows.filter(pl.col("trace_event_source") == "neuron_hw").sort("start_ts")
    busy = load(parquet).lanes.filter(pl.col("lane") == "hardware")["busy"].item()
    assert busy == hw["duration_ns"].sum()  # hardware executions never overlap here
    idle = sum(b - a for a, b in zip(hw["end_ts"].to_list()[:-1], hw["start_ts"].to_list()[1:]))
    assert load(parquet).gaps.filter(pl.col("kind") == "hardware_idle")["total"].item() == idle


def test_flow_ids_link_runtime_to_hardware(parquet: Path) -> None:
    profile = load(parquet)
    delays = profile.launch_delays
    assert delays.height == len(OPS)
    assert delays["latency"].to_list() == [4000] * len(OPS)  # hardware starts 4 µs after nrt_execute starts
    assert delays["queue"].to_list() == [max(4000 - (dur - 6) * 1000, 0) for _, _, dur in OPS]  # and after it ends, if it ended first
    assert set(delays["call"]) == {"nrt_execute"}


def test_missing_columns_and_unknown_sources(tmp_path: Path) -> None:
    bad = tmp_path / "bad.parquet"
    pl.DataFrame({"name": ["a"], "start_ts": [1]}).write_parquet(bad)
    with pytest.raises(TraceFormatError, match="missing trace_event_source, duration_ns or end_ts"):
        read_explorer_trace(bad)
    odd = tmp_path / "odd.parquet"
    pl.DataFrame({"name": ["a", "b"], "start_ts": [1, None], "end_ts": [5, 9], "trace_event_source": ["mystery", "neuron_hw"]}).write_parquet(odd)
    profile = load(odd)
    assert profile.lanes.filter(pl.col("lane") == "other")["total"].item() == 4
    assert len(profile.trace.warnings) == 2 and "mystery" in profile.trace.warnings[1]
    garbage = tmp_path / "garbage.parquet"
    garbage.write_bytes(b"not parquet at all")
    with pytest.raises(TraceFormatError, match="not a readable Parquet"):
        read_explorer_trace(garbage)


def test_rows_without_a_source_are_warned_about(tmp_path: Path) -> None:
    path = tmp_path / "nulls.parquet"
    pl.DataFrame({"name": ["a", "b"], "start_ts": [1, 2], "end_ts": [5, 9], "trace_event_source": [None, "neuron_hw"]}).write_parquet(path)
    profile = load(path)
    assert profile.lanes.filter(pl.col("lane") == "other")["total"].item() == 4
    assert list(profile.trace.warnings) == [f"{path}: 1 rows have an unknown trace_event_source (null); counted in lane other"]


def test_cli_analyzes_a_directory_with_parquet(parquet: Path) -> None:
    result = CliRunner().invoke(main, ["analyze", str(parquet.parent), "--format", "json"])
    assert result.exit_code == 0, result.output
    assert "system_profile.parquet" in result.output
    assert analyze(parquet.parent).summaries[0].meta["source"] == "neuron_explorer"
