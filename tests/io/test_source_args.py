"""ntrace.io.source_args: the args each event of a Kineto file wrote, re-read a window at a time, checked against Python's json over the same text."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

from helpers import write_trace, x
from ntrace.io import source_args
from ntrace.io.kineto import _args, _windows


def _trace(path: Path) -> Path:
    """About 2,000 events whose args are nested, escaped, non-ASCII, empty, absent, null or no object: windows of a few KiB cut it many times."""
    events = []
    for i in range(2000):
        args: object = {"External id": i, "Input Dims": [[i % 7, 3], []], "name \"q\"": f"é\\{i}\n", "nested": {"ph": "X", "a": [1, {"b": None}]}}
        if i % 5 == 1:
            args = {}
        elif i % 5 == 2:
            args = None
        elif i % 11 == 3:
            args = [1, 2]
        ev = x(f"op {i % 13}", "cpu_op", i, 1)
        if i % 5 != 4:
            ev["args"] = args
        if i % 17 == 0:
            ev["name"] = None
        events.append(ev)
    return write_trace(path, events)


def _oracle(path: Path) -> list[tuple[int, str | None, object]]:
    """(idx, name, args) per event with an args object, by Python's json."""
    events = json.loads(path.read_text())["traceEvents"]
    return [(i, e.get("name"), e["args"]) for i, e in enumerate(events) if isinstance(e.get("args"), dict)]


def _read(path: Path) -> tuple[list[str | None], list[tuple[int, str | None, object]]]:
    frame = source_args(path)
    assert frame["idx"].to_list() == list(range(frame.height))
    names = frame["name"].cast(str).to_list()
    kept = [(i, n, json.loads(a)) for i, n, a in zip(frame["idx"].to_list(), names, frame["args"].to_list()) if a is not None]
    return names, kept


@pytest.mark.parametrize("window", [1 << 12, 1 << 19])
def test_args_equal_pythons_reading_window_by_window(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, window: int) -> None:
    path = _trace(tmp_path / "t.json")
    monkeypatch.setattr(_windows, "WINDOW", window)
    names, kept = _read(path)
    assert names == [e.get("name") for e in json.loads(path.read_text())["traceEvents"]]
    assert kept == _oracle(path)


def test_an_array_not_cut_into_windows_is_read_whole(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _trace(tmp_path / "t.json")

    def uncut(*_: object, **__: object) -> None:
        raise _windows.Uncut

    monkeypatch.setattr(_args, "windows", uncut)
    assert _read(path)[1] == _oracle(path)


def test_a_value_of_another_type_is_refused(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "t.json", [x("a", "cpu_op", 0, 1), {"ph": "X", "name": 7, "ts": 1}])
    with pytest.raises(msgspec.ValidationError):
        source_args(path)
