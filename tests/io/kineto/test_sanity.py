"""Suspicious content becomes warnings: exact duplicate complete events dropped, unknown ph counted, everything else kept."""

from __future__ import annotations

from pathlib import Path

from helpers import write_trace, x
from ntrace.io.kineto import read_kineto


def test_exact_duplicate_complete_events_are_dropped(tmp_path: Path) -> None:
    a, b = x("a", "cpu_op", 0, 5), x("b", "cpu_op", 1, 2)
    near = x("a", "cpu_op", 0, 5, **{"External id": 7})  # same slot, different args: a different event
    meta = {"ph": "M", "name": "thread_name", "pid": 1, "tid": 1, "args": {"name": "t"}}
    got = read_kineto(write_trace(tmp_path / "t.json", [a, b, a, near, meta, meta, a]))
    assert got.events["idx"].to_list() == [0, 1, 3, 4, 5]  # the two later copies of `a` gone; duplicate metadata kept
    assert list(got.warnings) == [f"{tmp_path / 't.json'}: 2 complete events are exact duplicates of earlier ones; the copies were dropped"]


def test_unknown_ph_is_kept_and_counted(tmp_path: Path) -> None:
    evs = [x("a", "cpu_op", 0, 5), {"ph": "Q", "name": "q"}, {"ph": "Q", "name": "r"}, {"name": "no ph"}, {"ph": "i", "name": "ok", "ts": 1}]
    got = read_kineto(write_trace(tmp_path / "t.json", evs))
    assert got.events.height == 5
    assert list(got.warnings) == [f"{tmp_path / 't.json'}: 3 events have a ph the trace format does not define ('', 'Q'); they were not analyzed"]


def test_sound_trace_gets_no_warning(tmp_path: Path) -> None:
    evs = [x("a", "cpu_op", 0, 5), x("a", "cpu_op", 0, 5, tid=2), {"ph": "s", "id": 1, "ts": 0}, {"ph": "f", "id": 2, "ts": 1, "bp": "e"}]
    assert list(read_kineto(write_trace(tmp_path / "t.json", evs)).warnings) == []


def test_every_duplicate_is_found_whatever_its_hash(tmp_path: Path) -> None:
    """One event written twice, in 16 traces with different times: found every time (a slot hash of 2**63 or more once made the check miss it)."""
    for i in range(16):
        a = x(f"op{i}", "cpu_op", 10 * i + 0.5, 3 + i)
        got = read_kineto(write_trace(tmp_path / f"t{i}.json", [x("b", "cpu_op", 1, 1), a, a]))
        assert got.events["idx"].to_list() == [0, 1], i
        assert list(got.warnings) == [f"{tmp_path / f't{i}.json'}: 1 complete events are exact duplicates of earlier ones; the copies were dropped"]
