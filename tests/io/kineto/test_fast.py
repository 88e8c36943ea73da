"""The fast decode path (ntrace.io.kineto._fast): windows decoded into columns give exactly the plain decoder's frame, whatever the window and group sizes."""

from __future__ import annotations

import mmap
from pathlib import Path

import pytest

import ntrace.io.kineto._fast as fast_path
import ntrace.io.kineto._windows as windows
from helpers import write_trace, x
from ntrace.io.files import map_json
from ntrace.io.kineto import read_kineto


def _events(n: int) -> list[dict]:
    """Events whose keys change type between windows: integer pids, then names; shapes on some."""
    return [
        x(f"op{i % 7}", "cpu_op" if i % 2 else "kernel", 1000.5 + i, 1.25, pid=i if i < 10 else "Spans", tid=i % 3,
          **{"External id": i, "Input Dims": [[i, 2], []]} if i % 3 else {"correlation": str(i)})
        for i in range(n)
    ]  # fmt: skip


@pytest.mark.parametrize("group", [1, 2, 3, 100])
def test_many_small_windows_equal_the_plain_decoder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, group: int) -> None:
    path = write_trace(tmp_path / "t.json", _events(25))
    monkeypatch.setattr(windows, "WINDOW", 300)  # a few events per window
    monkeypatch.setattr(fast_path, "GROUP", group)  # groups of integer pids, of names, and of both
    fast, plain = read_kineto(path), read_kineto(path, fast=False)
    assert fast.events.height == 25
    assert fast.events.equals(plain.events)
    assert fast.events["pid"].to_list()[9:11] == ["9", "Spans"]
    assert fast.events["correlation"].to_list()[:4] == [0, None, None, 3]
    found = fast_path.columns(path.read_bytes())
    assert found is not None and len({c.n_chunks() for c in found[0].values()}) == 1  # every column in the same chunks


def test_columns_from_a_memory_map_equal_those_from_bytes(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_trace(tmp_path / "t.json", _events(30))
    monkeypatch.setattr(windows, "WINDOW", 300)
    mapped = map_json(path, [])
    assert isinstance(mapped, mmap.mmap)
    from_map, from_bytes = fast_path.columns(mapped), fast_path.columns(path.read_bytes())  # the map's pages are released window by window
    assert from_map is not None and from_bytes is not None
    assert all(from_map[0][k].equals(from_bytes[0][k]) for k in from_bytes[0]) and from_map[1] == from_bytes[1]


def test_a_value_of_another_type_falls_back_to_the_plain_decoder(tmp_path: Path) -> None:
    text = b'{"traceEvents": [{"ph": "X", "ts": "12.5", "dur": 1, "name": "a", "cat": "cpu_op", "pid": 1.5, "tid": 1}]}'
    assert fast_path.columns(text) is None  # a float pid: declined, the caller falls back
    path = tmp_path / "t.json"
    path.write_bytes(text)
    assert read_kineto(path).events.select("ts", "pid").rows() == [(12_500, "1.5")]


def test_times_given_as_text_are_read_by_the_fast_path_like_numbers(tmp_path: Path) -> None:
    text = b'{"traceEvents": [{"ph": "X", "ts": "12.5", "dur": "1"}, {"ph": "X", "ts": 1712195495505582.988, "dur": 0.001}]}'
    found = fast_path.columns(text)
    assert found is not None and found[0]["ts"].to_list() == [12_500, 1712195495505582988] and found[0]["dur"].to_list() == [1000, 1]


def test_a_shape_that_is_not_utf8_declines() -> None:
    text = b'{"traceEvents": [{"ph": "X", "args": {"Input Dims": ["\xff"]}}]}'
    assert fast_path.columns(text) is None  # the caller repairs the text (test_frame.py)


def test_no_events_array_to_cut_raises_uncut() -> None:
    with pytest.raises(windows.Uncut):
        fast_path.columns(b'{"other": 1}')
