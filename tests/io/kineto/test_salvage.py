"""Salvage of damaged JSON: a cut-off trace keeps exactly the events complete before the cut; --max-events cuts exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import x
from ntrace.io.kineto import read_kineto
from ntrace.errors import TraceFormatError
from ntrace.io.kineto._salvage import keep_first_events, repair_json

EVENTS = [x(f"op{i}", "cpu_op", i * 10, 5, **{"External id": i, "Input Dims": [[i, 2], []], "nested": {"a": {"b": "}]"}}}) for i in range(12)]
DOC = ('{"schemaVersion": 1, "traceEvents": [\n  ' + ",\n  ".join(json.dumps(e) for e in EVENTS) + '\n], "traceName": "t"}').encode()
ENDS = [DOC.index(json.dumps(e).encode()) + len(json.dumps(e)) for e in EVENTS]  # byte just after each event


@settings(max_examples=150, deadline=None)
@given(st.integers(ENDS[0], len(DOC) - 1))
def test_cut_keeps_exactly_the_complete_events(cut: int) -> None:
    warnings: list[str] = []
    fixed = repair_json(DOC[:cut], Path("t.json"), warnings)
    assert isinstance(fixed, bytes) and fixed.startswith(DOC[: ENDS[0]])  # repaired text, decoded the usual way next
    doc = json.loads(fixed)
    complete = sum(1 for end in ENDS if end <= cut)
    assert doc["traceEvents"] == EVENTS[:complete]
    assert len(warnings) == 1
    assert warnings[0].startswith(f"t.json: is cut off at byte {cut:,} ") and f"analyzed the {complete:,} complete events" in warnings[0]


@given(st.integers(0, ENDS[0] - 1))
def test_cut_before_the_first_event_is_an_error(cut: int) -> None:
    with pytest.raises(TraceFormatError):
        repair_json(DOC[:cut], Path("t.json"), [])


@pytest.mark.parametrize("head", [b'{"traceEvents": 5, "x": [{"a": 1}, {"b', b'{"traceEvents": {"a": 1}, "x": [{"a": 1}, {"b'])
def test_cut_file_whose_trace_events_is_no_array_is_a_format_error(head: bytes) -> None:
    # closing it after a `}` gives valid JSON whose traceEvents is not a list: one error, not a traceback
    with pytest.raises(TraceFormatError, match="^t.json: is cut off at byte .* before its first complete event"):
        repair_json(head, Path("t.json"), [])


@pytest.mark.parametrize("n", [1, 5, 11, 12, 50])
def test_max_events_cut_equals_the_head_of_the_full_decode(n: int, tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(DOC)
    full = read_kineto(path).events
    capped = read_kineto(path, max_events=n)
    assert capped.events.equals(full.head(n))
    cut = keep_first_events(DOC, n, path, [])
    assert (len(cut) < len(DOC)) == (n < len(EVENTS))
    assert list(capped.warnings) == ([f"{path}: --max-events {n}: analyzed the first {n:,} of about {len(EVENTS):,} events"] if n < len(EVENTS) else [])


def test_non_utf8_bytes_become_replacement_characters(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(DOC.replace(b'"op3"', b'"op\xff3"'))
    got = read_kineto(path)
    assert got.events["name"][3] == "op\ufffd3" and got.events["name"][4] == "op4"
    assert list(got.warnings) == [f"{path}: 1 byte sequences that are not UTF-8 (in names?) were replaced by U+FFFD"]


def _without_lone_surrogates(text: str) -> str:
    """Oracle: `text` with each surrogate code point that is not half of a high-low pair replaced by U+FFFD, scanned one code point at a time."""
    out, i = [], 0
    while i < len(text):
        c = text[i]
        if "\ud800" <= c <= "\udbff" and i + 1 < len(text) and "\udc00" <= text[i + 1] <= "\udfff":
            out.append(chr(0x10000 + ((ord(c) - 0xD800) << 10) + ord(text[i + 1]) - 0xDC00))
            i += 2
            continue
        out.append("\ufffd" if "\ud800" <= c <= "\udfff" else c)
        i += 1
    return "".join(out)


_NAME_CHARS = st.sampled_from(["a", "\\", '"', "u", "d", "8", "c", "0", "\ud800", "\udbff", "\udc00", "\udfff", "\ud83d", "\ude00", "\u00e9", "\U0001f600"])


@settings(max_examples=200, deadline=None)
@given(name=st.lists(_NAME_CHARS, max_size=12).map("".join), fast=st.booleans())
def test_escaped_lone_surrogates_become_replacement_characters(tmp_path_factory: pytest.TempPathFactory, name: str, fast: bool) -> None:
    """A name written with JSON escapes (as json.dumps writes them, lone surrogates included) is read as its text with every lone surrogate replaced, pairs joined."""
    path = tmp_path_factory.mktemp("s") / "t.json"
    events = [x(name, "cpu_op", 0, 5), x("after", "cpu_op", 10, 5, **{"External id": 3})]
    path.write_bytes(json.dumps({"traceEvents": events, "distributedInfo": {"rank": 0, "note": name}}).encode())
    got = read_kineto(path, fast=fast)
    want = _without_lone_surrogates(name)
    assert got.events["name"].to_list() == [want, "after"] and got.events["external_id"][1] == 3
    lone = 2 * want.count("\ufffd")  # the name is written twice: the event's and the metadata's
    assert [w for w in got.warnings if "surrogate" in w] == ([f"{path}: {lone} escaped lone surrogate{'s' if lone != 1 else ''} (in names?) were replaced by U+FFFD"] if lone else [])


def test_nan_and_infinity_are_dropped_values_not_errors(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(DOC.replace(b'"dur": 5', b'"dur": NaN', 1).replace(b'"ts": 10', b'"ts": Infinity', 1))
    got = read_kineto(path)
    assert got.events.height == len(EVENTS) - 1  # the event without a usable ts
    assert got.events["dur"][0] == 0 and got.events["dur"][1] == 5000
    assert any("non-standard JSON" in w for w in got.warnings)


def test_max_events_with_some_events_not_starting_with_ph(tmp_path: Path) -> None:
    """Metadata events written name-first are not cut points: the cut keeps a few extra, trimmed after decoding, one warning."""
    meta = [{"name": "thread_name", "ph": "M", "pid": 1, "tid": i, "args": {"name": "t"}} for i in range(3)]
    path = tmp_path / "t.json"
    path.write_text('{"traceEvents": [\n' + ",\n".join(json.dumps(e) for e in meta + EVENTS) + "\n]}")
    got = read_kineto(path, max_events=6)
    assert got.events["name"].to_list() == ["thread_name"] * 3 + ["op0", "op1", "op2"]
    assert list(got.warnings) == [f"{path}: --max-events 6: analyzed the first 6 of about {len(EVENTS) + 3} events"]
