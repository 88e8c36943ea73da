"""Cutting the traceEvents array into windows (ntrace.io.kineto._windows): cuts that land inside strings or nested values, where the array ends, and the fallbacks."""

from __future__ import annotations

import json
from pathlib import Path

import msgspec
import pytest

import ntrace.io.kineto._windows as windows
from ntrace.io.kineto import read_kineto

from helpers import write_trace, x

_EVENTS = msgspec.json.Decoder(list[msgspec.Raw])


def _tricky(n: int) -> list[dict]:
    """Events whose text holds what a cut looks for: `}, {` inside names, and nested arrays of objects inside args, some starting with "ph" as events do."""
    return [
        x(f'op}}, {{"ph": "X", "name": "{i}"}}, ' if i % 3 == 0 else f"op{i}", "cpu_op", 10.0 + i, 1.5,
          **{"External id": i, "Input Dims": [[i, 1]], "nested": [{"ph": "X", "a": {"b": i}}, {"ph": "}, {"}], "more": {"d": [{"e": 1}, {}]}})
        for i in range(n)
    ]


def _cut_all(text: bytes, size: int) -> tuple[list[bytes], int]:
    """The events as raw JSON, decoded window by window with windows of `size` bytes, and how many windows it took."""
    found = windows.outline(text, windows.DOCUMENT)
    parts = list(windows.windows(text, found, _EVENTS.decode, size))
    return [bytes(raw) for events, _ in parts for raw in events], len(parts)


@pytest.mark.parametrize("size", [1, 2, 3, 5, 8, 13, 40, 90, 200, 1000, 10**6])
def test_windows_of_any_size_give_every_event_once(size: int) -> None:
    events = _tricky(12)
    text = json.dumps({"schemaVersion": 1, "traceEvents": events, "deviceProperties": [{"id": 0}, {"id": 1}]}, indent=1).encode()
    raws, count = _cut_all(text, size)
    assert [json.loads(r) for r in raws] == events
    assert (count > 1) == (size < len(text) // 2)  # small windows really cut, a big one takes the array whole


def test_a_cut_inside_a_string_or_a_nested_value_is_extended(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every candidate cut but the true ones fails to decode, and the window grows to the next; the event count says none was split or lost."""
    events = _tricky(9)
    text = json.dumps({"traceEvents": events}).encode()
    tried: list[int] = []

    def decode(window: bytes) -> list:
        tried.append(len(window))
        return _EVENTS.decode(window)

    found = windows.outline(text, windows.DOCUMENT)
    decoded = [e for evs, _ in windows.windows(text, found, decode, 1) for e in evs]
    assert len(decoded) == 9 and len(tried) > 9  # some windows were retried at a later cut


@pytest.mark.parametrize("size", [1, 64, 10**6])
def test_fast_path_with_small_windows_equals_the_plain_path(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    path = write_trace(tmp_path / "t.json", _tricky(30), deviceProperties=[{"id": 0}], traceName="t")
    monkeypatch.setattr(windows, "WINDOW", size)
    fast, plain = read_kineto(path), read_kineto(path, fast=False)
    assert fast.events.height == 30 and fast.events.equals(plain.events)
    assert fast.meta == plain.meta and fast.meta["traceName"] == "t"


def _layouts(events: list[dict]) -> dict[str, bytes]:
    return {
        "metadata after, list of objects": json.dumps({"traceEvents": events, "deviceProperties": [{"id": 0}]}, separators=(",", ":")).encode(),
        "log lines with brackets after": json.dumps({"traceEvents": events, "INFO": ["a.cpp:12] x", "}]"], "traceName": "]"}).encode(),
        "bare array": b"  " + json.dumps(events).encode() + b"\n",
        "empty": b'{"traceEvents": [ ], "schemaVersion": 1}',
        "key nested in metadata first": json.dumps({"meta": {"traceEvents": [{"ph": "M"}]}, "traceEvents": events}).encode(),
        "key in a string first": json.dumps({"note": 'say "traceEvents": [ here', "traceEvents": events}).encode(),
    }


@pytest.mark.parametrize("layout", list(_layouts([])))
def test_every_layout_decodes_like_the_plain_path(tmp_path: Path, layout: str) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(_layouts(_tricky(5))[layout])
    fast, plain = read_kineto(path), read_kineto(path, fast=False)
    assert fast.events.equals(plain.events) and fast.meta == plain.meta and fast.warnings == plain.warnings


@pytest.mark.parametrize("layout", ["metadata after, list of objects", "log lines with brackets after", "bare array", "empty", "key in a string first"])
def test_common_layouts_are_outlined(layout: str) -> None:
    text = _layouts(_tricky(5))[layout]
    found = windows.outline(text, windows.DOCUMENT)
    content = json.loads(b"[" + text[found.start : found.end] + b"]")
    assert content == (json.loads(text) if layout == "bare array" else json.loads(text)["traceEvents"])


def test_the_marker_must_come_back_as_the_top_level_array() -> None:
    with pytest.raises(windows.Uncut):  # the first key found is nested: the marker lands in `meta`
        windows.outline(_layouts(_tricky(2))["key nested in metadata first"], windows.DOCUMENT)
    with pytest.raises(windows.Uncut):
        windows.outline(b'{"traceEvents": {"not": "an array"}}', windows.DOCUMENT)


@pytest.mark.parametrize(
    "text",
    [
        b'{"traceEvents": [{"ph": "X"},]}',  # trailing comma: no decoder accepts it
        b'{"traceEvents": [{"ph": "X"}, {"ph": "X"}, {"ph": "X", "name": "a\xff"}]}',  # not UTF-8
        b'{"traceEvents": [{"ph": "X"}, {"ph": "X", "ts": NaN}]}',  # non-standard numbers
        b'{"traceEvents": [{"ph": "X"}, {"ph": "X", "ts": 1}',  # cut off
    ],
)
def test_damaged_text_falls_back_with_the_same_outcome(tmp_path: Path, text: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(text)
    monkeypatch.setattr(windows, "WINDOW", 1)
    outcomes = []
    for fast in (True, False):
        try:
            got = read_kineto(path, fast=fast)
            outcomes.append((got.events.to_dicts(), got.warnings))
        except Exception as exc:  # the same error either way
            outcomes.append((type(exc), str(exc)))
    assert outcomes[0] == outcomes[1]


def test_a_value_of_another_type_goes_to_the_plain_decoder(tmp_path: Path) -> None:
    path = write_trace(tmp_path / "t.json", [x("a", "cpu_op", 1, 2), {"ph": "X", "ts": "12.5", "dur": 1}])
    events = read_kineto(path).events
    assert events["ts"].to_list() == [1000, 12500]


def test_a_file_that_cannot_be_cut_is_decoded_by_the_plain_decoder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = write_trace(tmp_path / "t.json", _tricky(6))
    monkeypatch.setattr(windows, "_TRIES", 1)  # one cut per window: the cuts inside names and args now fail it
    monkeypatch.setattr(windows, "WINDOW", 1)
    with pytest.raises(windows.Uncut):
        list(windows.windows(path.read_bytes(), windows.outline(path.read_bytes(), windows.DOCUMENT), _EVENTS.decode))
    assert read_kineto(path).events.equals(read_kineto(path, fast=False).events)


def test_a_long_tail_after_the_array_is_not_searched(monkeypatch: pytest.MonkeyPatch) -> None:
    text = json.dumps({"traceEvents": _tricky(2), "INFO": ["x" * 100]}).encode()
    monkeypatch.setattr(windows, "_TAIL", 50)
    with pytest.raises(windows.Uncut):
        windows.outline(text, windows.DOCUMENT)


@pytest.mark.parametrize("size", [1, 500, 5000])
def test_args_with_many_nested_objects_are_still_cut(size: int) -> None:
    """Cuts before an event's `"ph"` are tried first: with 30 objects in each event's args, any cut would fail far more than _TRIES times in a row."""
    events = [{"ph": "X", "name": f"op{i}", "ts": i, "dur": 1, "args": {"list": [{"k": j} for j in range(30)]}} for i in range(40)]
    text = json.dumps({"traceEvents": events}, indent=1).encode()
    raws, count = _cut_all(text, size)
    assert [json.loads(r) for r in raws] == events and count > 1
