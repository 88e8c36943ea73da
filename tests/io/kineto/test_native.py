"""The native decode path (ntrace.io.kineto._native, through _columnar): an independent check, written without reading its code.

Whatever the text, reading a trace with the native path on (NTRACE_NATIVE unset or 1) gives exactly what the msgspec path gives
(NTRACE_NATIVE=0): the same events frame, warnings and metadata, or the same error. Checked on generated documents whose bytes
are written here (spacing, escapes, number spellings, nesting, invalid text), on the same split in two halves on two threads
(_columnar.SPLIT_MIN made small), on hostile hand-made texts and on the real traces. Times are checked against an oracle of plain
Python integers, and the native path must accept what profilers write (ordinary documents and every real trace), not just fall back.
"""

from __future__ import annotations

import gc
import gzip
import mmap
import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

import polars as pl
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from polars.testing import assert_frame_equal

from helpers import shared_trace_files
from ntrace.io.kineto import _columnar, read_kineto
from ntrace.io.kineto._windows import DOCUMENT, Uncut, outline

# The extension is optional in a build without a C compiler, but ./scripts/test builds it: a missing one fails here, never skips.
from ntrace.io.kineto import _native  # noqa: E402

INT64_MIN, INT64_MAX = -(1 << 63), (1 << 63) - 1
_RELAXED = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.large_base_example, HealthCheck.filter_too_much]


# --- reading a text both ways ------------------------------------------------------------------------------------------


@dataclass
class Failed:
    """What a read raised: compared by type and message."""

    kind: type
    message: str


def _read(path: Path, native: bool, **options: Any) -> Any:
    """read_kineto(path) with the native path on or off; an exception becomes a Failed."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NTRACE_NATIVE", "1" if native else "0")
        try:
            return read_kineto(path, **options)
        except Exception as exc:  # noqa: BLE001 - any error, compared below (a crash on one side only is a difference too)
            return Failed(type(exc), str(exc))


def assert_same(path: Path, **options: Any) -> Any:
    """Native on and off read `path` alike: the frames equal exactly, the warnings and metadata too, or the same error; returns the native result."""
    on, off = _read(path, True, **options), _read(path, False, **options)
    if isinstance(on, Failed) or isinstance(off, Failed):
        assert on == off, f"native: {on!r}\nmsgspec: {off!r}"
        return on
    assert_frame_equal(on.events, off.events, check_exact=True)
    assert on.warnings == off.warnings
    assert on.meta == off.meta
    return on


def accepted(text: bytes) -> bool:
    """Whether the native path decoded the events array of `text` itself (rather than declining, so that msgspec decodes it)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("NTRACE_NATIVE", "1")
        try:
            found = outline(text, DOCUMENT)
        except Uncut:
            return False
        return _columnar.columns(text, found) is not None


def check_text(text: bytes, directory: Path, name: str = "t.json", **options: Any) -> Any:
    """Write `text` (gzipped when `name` ends in .gz) and check that both paths read it alike."""
    path = directory / name
    path.write_bytes(gzip.compress(text) if name.endswith(".gz") else text)
    return assert_same(path, **options)


# --- JSON written byte by byte -----------------------------------------------------------------------------------------
# Every value is written at one of three levels: ORDINARY (what profilers write), MILD (valid JSON of the expected kind but
# unusual: escapes, non-ASCII, long or signed decimals, numeric text, nulls, odd spacing, nesting in unknown keys) and WILD
# (any type, any spelling, now and then not JSON at all).

ORDINARY, MILD, WILD = 0, 1, 2

_TEXT_FIELDS = ("ph", "cat", "name", "bp")
_ID_FIELDS = ("pid", "tid", "id")
_TIME_FIELDS = ("ts", "dur")
_ARG_KEYS = ("External id", "correlation", "stream", "device", "Sequence number", "bytes", "Bytes", "Total Allocated", "Total Reserved", "Addr", "Device Type", "Device Id")  # fmt: skip
_UNKNOWN_ARGS = ("Ev Idx", "Record function id", "Concrete Inputs", "Input type", "grid", "block", "name", "labels", "sort_index", "est. achieved occupancy %", "Call stack")  # fmt: skip
_UNKNOWN_KEYS = ("s", "sf", "tts", "args2", "Input Dims", "External id", "cname", "")  # at the event's level: unknown there
_PHASES = ("X", "X", "X", "X", "i", "f", "s", "M", "C", "b", "e", "B", "E", "n")
_CATS = ("cpu_op", "kernel", "gpu_memcpy", "gpu_memset", "cuda_runtime", "cuda_driver", "user_annotation", "gpu_user_annotation", "python_function", "ac2g", "Trace", "cpu_instant_event", "fwdbwd")  # fmt: skip
_STYLES = ("compact", "dumps", "kineto")

_ESCAPES = (rb"\n", rb"\"", rb"\\", rb"\/", rb"\b", rb"\f", rb"\r", rb"\t", rb"\u00e9", rb"\u00E9", rb"\u0041", rb"\u0000", rb"\u001f",
            rb"\u007f", rb"\u2028", rb"\uffff", rb"\ud83d\ude00", rb"\uD83D\uDE00", rb"\udbff\udfff", rb"\u0800", rb"\u07ff")  # fmt: skip
_LONE_SURROGATES = (rb"\ud83d", rb"\ude00", rb"\ud83d\u0041", rb"\ud83dx", rb"\udc00\ud800", rb"\uDFFF", rb"\ud83d\ud83d")
_RAW = tuple(s.encode() for s in ("é", "😀", "中文", "\u2028", "\x7f", "\u00a0", "ß", "\U0010ffff", "\u0800", "\u07ff"))
_TRAPS = (b"}, {", rb"}, {\"ph\": \"X\", \"ts\": 1", rb"\"}, {\"ph\": \"X\"", b"], [", b"{", b"}", b"[", b"]", b",", b":", rb"\\",
          b"}, {  ", b"},{", rb"}\n, {", rb"\\\"}, {")  # fmt: skip
_BAD = (b"\x01", b"\t", b"\n", b"\xff", b"\xc3(", b"\xed\xa0\x80", b"\xf0\x9f\x98", b"\xc0\xaf", b"\\x", b"\\u12", b"\\uzzzz")  # not valid in a JSON string

_ASCII = st.text(st.characters(codec="ascii", exclude_categories=("Cc",), exclude_characters='"\\'), max_size=12).map(str.encode)
_WHITESPACE = (b"", b"", b" ", b"  ", b"\n", b"\t", b"\r\n", b" \n\t ")


def _ws(draw: st.DrawFn, level: int) -> bytes:
    return draw(st.sampled_from(_WHITESPACE)) if level else b""


def _odds(draw: st.DrawFn, pct: int) -> bool:
    """True with about pct% odds."""
    return pct > 0 and draw(st.integers(0, 99)) < pct


@st.composite
def json_string(draw: st.DrawFn, level: int = WILD, traps: bool = False) -> bytes:
    if level == ORDINARY:
        return b'"' + draw(_ASCII) + b'"'
    choices = [_ASCII, st.sampled_from(_ESCAPES), st.sampled_from(_RAW)]
    if traps:
        choices += [st.sampled_from(_TRAPS)] * 2
    if level == WILD:
        choices.append(st.sampled_from(_LONE_SURROGATES))
    pieces = draw(st.lists(st.one_of(*choices), max_size=6))
    if level == WILD and _odds(draw, 5):
        pieces.insert(draw(st.integers(0, len(pieces))), draw(st.sampled_from(_BAD)))
    return b'"' + b"".join(pieces) + b'"'


_INT_EDGES = ((1 << 64) - 1, 1 << 64, -(1 << 64), 10**30, -(10**30), 2**53 + 1, 9_223_372_036_854_775, 9_223_372_036_854_776)


@st.composite
def json_int(draw: st.DrawFn, huge: bool = True) -> bytes:
    value = draw(st.one_of(
        st.integers(-10, 10**6),
        st.integers(INT64_MIN - 2 * huge, INT64_MIN + 2),
        st.integers(INT64_MAX - 2, INT64_MAX + 2 * huge),
        *([st.sampled_from(_INT_EDGES), st.integers(-(1 << 80), 1 << 80)] if huge else [st.integers(INT64_MIN, INT64_MAX)]),
    ))  # fmt: skip
    return b"-0" if value == 0 and draw(st.booleans()) else str(value).encode()


@st.composite
def json_decimal(draw: st.DrawFn, signed: bool = True, int_digits: tuple[int, int] = (1, 22), frac_digits: tuple[int, int] = (0, 25), exponent: bool = False) -> bytes:
    """A JSON number written as a decimal: maybe a sign, integer digits, maybe a fraction, maybe an exponent."""
    sign = draw(st.sampled_from([b"", b"", b"-"])) if signed else b""
    n = draw(st.integers(*int_digits))
    lead = draw(st.sampled_from("123456789"))
    whole = b"0" if draw(st.integers(0, 9)) == 0 else (lead + draw(st.text("0123456789", min_size=n - 1, max_size=n - 1))).encode()
    k = draw(st.integers(*frac_digits))
    frac = b"." + draw(st.text("0123456789", min_size=k, max_size=k)).encode() if k else b""
    exp = b""
    if exponent and draw(st.integers(0, 9)) < 3:
        exp = draw(st.sampled_from([b"e", b"E"])) + draw(st.sampled_from([b"", b"+", b"-"])) + str(draw(st.integers(0, 30))).encode()
    return sign + whole + frac + exp


_NUMBER_SPELLINGS = (b"-0", b"-0.0", b"0e0", b"1E+2", b"1.0e-0", b"2.5E-2", b"1e3", b"1e400", b"-1e400", b"5e-324", b"0.000")
_NOT_NUMBERS = (b"00", b"01", b"+1", b".5", b"1.", b"1e", b"-", b"NaN", b"Infinity", b"-Infinity", b"1.5.5", b"0x10", b"1_000", b"nul", b"True", b"--1")
_TEXT_NUMBERS = (b'"0x0"', b'"12"', b'"-3"', b'" 7"', b'"7 "', b'"1e3"', b'""', b'"1.5"', b'"9223372036854775808"', b'"-0"', b'"+4"',
                 b'"007"', b'"0"', b'"nan"', b'"1_0"', b'"0X1f"', b'"-9223372036854775808"', b'"\\u0031"')  # fmt: skip
#: Text that a number parser might or might not take: Unicode digits and spaces, hex, underscores, floats, int64 and float edges.
_ODD_NUMERIC_TEXT = ('"١٢"'.encode(), rb'"\u0661\u0662"', b'"\xef\xbc\x91"', b'"0x8000000000000000"', b'"0xffffffffffffffff"', b'"-0x1"', b'"0b11"',
                     b'"0o7"', rb'"\t7\n"', rb'"7\u00a0"', '"7\u00a0"'.encode(), b'"1__0"', b'"_1"', b'"0x"', b'"-"', b'"9223372036854775807"',
                     b'"-9223372036854775809"', b'"1.0"', rb'"\u0037"', rb'"\u001c7"', rb'"7\u0085"', rb'"\u20287"', rb'"\u30007"', rb'"\u180e7"',
                     rb'"\u200b7"', rb'"\u000b7"', rb'"\u001f7\u001e"', rb'"\u16807"', rb'"\u00a0\u00a0-7\u2000"', b'"9007199254740993"',
                     b'"-9007199254740993"', b'"1e400"', b'"inf"', b'"Infinity"', b'"-0.0"', b'"1.9999999999999999999"', b'"0.5"', b'"2.5"',
                     b'"-2.5"', b'"4611686018427387904.5"', b'"  "', b'"1 2"', rb'"12\u0000"', b'"9223372036854775295"', b'"9223372036854775296"',
                     b'"-9223372036854776832"', b'"-9223372036854776833"', b'"0.1e1"', b'".5"', b'"5."', b'"1_000.5"', b'"+-1"', b'"- 1"',
                     b'"1d"', b'"1f"', b'"-nan"', b'"1e-400"', b'"4.9e-324"', b'"1e19"', b'"-1e19"', b'"9.2233720368547758e18"')  # fmt: skip
_SMALL_VALUES = (b"[]", b"{}", b"[ ]", b"{ }", b"[[]]", b"[{}]", b"[{}, {}]", b'[{"ph": "X"}, {"ph": "X"}]', b"null", b"true", b"false")


@st.composite
def json_any(draw: st.DrawFn, level: int = WILD, depth: int = 0, traps: bool = False) -> bytes:
    """Any JSON value, nested up to a few levels; at the WILD level now and then something that is not JSON."""
    kind = draw(st.integers(0, 10 if depth < 3 else 7))
    if kind == 0:
        return draw(json_int())
    if kind == 1:
        return draw(json_decimal(exponent=True))
    if kind == 2:
        return draw(st.sampled_from(_NUMBER_SPELLINGS + (_NOT_NUMBERS if level == WILD else ())))
    if kind in (3, 4):
        return draw(json_string(level, traps=traps))
    if kind == 5:
        return draw(st.sampled_from(_TEXT_NUMBERS))
    if kind in (6, 7):
        return draw(st.sampled_from(_SMALL_VALUES))
    if kind in (8, 9):
        items = draw(st.lists(json_any(level, depth + 1, traps), max_size=4))
        return b"[" + _ws(draw, level) + (_ws(draw, level) + b"," + _ws(draw, level)).join(items) + _ws(draw, level) + b"]"
    pairs = draw(st.lists(st.tuples(json_string(level, traps=traps), json_any(level, depth + 1, traps)), max_size=4))
    return b"{" + b",".join(_ws(draw, level) + k + _ws(draw, level) + b":" + _ws(draw, level) + v for k, v in pairs) + _ws(draw, level) + b"}"


@st.composite
def input_dims(draw: st.DrawFn, level: int) -> bytes:
    if level and draw(st.integers(0, 3)) == 0:
        return draw(json_any(level))
    shapes = draw(st.lists(st.lists(st.integers(0, 4096), max_size=4), max_size=4))
    if level == ORDINARY:
        return b"[" + b", ".join(b"[" + b", ".join(str(n).encode() for n in shape) + b"]" for shape in shapes) + b"]"
    inner = [draw(st.sampled_from([b",", b", ", b" , ", b",\n", b"\t,"])) for _ in range(2)]
    return b"[" + _ws(draw, level) + inner[0].join(b"[" + _ws(draw, level) + inner[1].join(str(n).encode() for n in shape) + _ws(draw, level) + b"]" for shape in shapes) + _ws(draw, level) + b"]"


@st.composite
def key_text(draw: st.DrawFn, key: str, level: int) -> bytes:
    """`key` as a JSON string; when wild, now and then spelled with an escape (the same key once decoded)."""
    if level == WILD and key and draw(st.integers(0, 9)) == 0:
        i = draw(st.integers(0, len(key) - 1))
        return b'"' + key[:i].encode() + b"\\u%04x" % ord(key[i]) + key[i + 1 :].encode() + b'"'
    return b'"' + key.encode() + b'"'


def _field_value(draw: st.DrawFn, field: str, level: int) -> bytes:
    """A value for an event field or an args key at this level."""
    if level == WILD and draw(st.integers(0, 2)) == 0:
        return draw(json_any(traps=True))
    nullable = level and draw(st.integers(0, 9)) == 0
    if nullable:
        return b"null"
    if field == "ph":
        if level == ORDINARY:
            return b'"' + draw(st.sampled_from(_PHASES)).encode() + b'"'
        return draw(st.one_of(st.sampled_from([b'"X"', b'"x"', b'""', b'"XX"', b'"\\u0058"', b'"X "']), json_string(level)))
    if field in ("cat", "name", "model_name", "bp"):
        if level == ORDINARY and field in ("cat", "bp"):
            return b'"' + (draw(st.sampled_from(_CATS)) if field == "cat" else "e").encode() + b'"'
        return draw(json_string(level, traps=level > ORDINARY))
    if field in ("pid", "tid"):
        if level == ORDINARY:
            return draw(st.one_of(st.integers(0, 1 << 32).map(lambda n: str(n).encode()), st.sampled_from([b'"Spans"', b'"Traces"', b'"stream 7"'])))
        if level == MILD:
            return draw(st.one_of(json_int(huge=False), json_string(MILD), st.sampled_from(_TEXT_NUMBERS + _ODD_NUMERIC_TEXT)))
        return draw(st.one_of(json_int(), json_decimal(exponent=True), json_string(), st.sampled_from(_TEXT_NUMBERS)))
    if field in ("ts", "dur"):
        if level == ORDINARY:
            return draw(json_decimal(False, int_digits=(13, 16) if field == "ts" else (1, 6), frac_digits=(0, 3)))
        if level == MILD:
            return draw(st.one_of(json_decimal(), json_int(), st.sampled_from([b"-0", b"-0.0", b"0.000"])))
        return draw(st.one_of(json_decimal(exponent=True), json_int(), st.sampled_from(_TEXT_NUMBERS + _NUMBER_SPELLINGS)))
    if field == "Input Dims":
        return draw(input_dims(level))
    # ids and args keys: integers (and numeric text)
    if level == ORDINARY:
        return draw(st.integers(0, 1 << 40).map(lambda n: str(n).encode()))
    if level == MILD:
        return draw(st.one_of(json_int(huge=False), st.sampled_from(_TEXT_NUMBERS + _ODD_NUMERIC_TEXT)))
    return draw(st.one_of(json_int(), json_decimal(exponent=True), st.sampled_from(_TEXT_NUMBERS + _NUMBER_SPELLINGS + _NOT_NUMBERS)))


def _object(draw: st.DrawFn, pairs: list[tuple[bytes, bytes]], style: str, level: int) -> bytes:
    if level:
        body = b",".join(_ws(draw, level) + k + _ws(draw, level) + b":" + _ws(draw, level) + v for k, v in pairs)
        return b"{" + body + _ws(draw, level) + b"}"
    colon, comma = (b"", b"") if style == "compact" else (b" ", b" ")
    return b"{" + (b"," + comma).join(k + b":" + colon + v for k, v in pairs) + b"}"


@st.composite
def args_object(draw: st.DrawFn, levels: Callable[[], int], style: str, doc_level: int) -> bytes:
    keys = draw(st.lists(st.sampled_from(_ARG_KEYS + ("Input Dims", "model_name") + _UNKNOWN_ARGS), max_size=6, unique=True))
    pairs = []
    for key in keys:
        level = levels()
        if key in _UNKNOWN_ARGS:
            value = draw(json_any(level, traps=True)) if level else draw(st.sampled_from([b"0", b"12", b'"python"', b'["", "1"]', b'["float", "ScalarList"]', b"[1, 2, 3]", b'"aten::add"']))
        else:
            value = _field_value(draw, key, level)
        pairs.append((draw(key_text(key, level)), value))
    if pairs and levels() == WILD:  # a key twice
        pairs.insert(draw(st.integers(0, len(pairs))), draw(st.sampled_from(pairs)))
    if levels():  # an unknown key holding anything
        level = levels()
        pairs.append((draw(json_string(WILD if level == WILD else ORDINARY)), draw(json_any(level, traps=True))))  # escapes in keys: wild only
    return _object(draw, pairs, style, doc_level)


@st.composite
def event(draw: st.DrawFn, levels: Callable[[], int], style: str, doc_level: int) -> bytes:
    """One element of the events array: mostly an object with a random subset of the fields read, in a random order."""
    if levels() == WILD and draw(st.integers(0, 3)) == 0:
        return draw(json_any(traps=True))  # not an object
    fields = ["ph", *draw(st.lists(st.sampled_from(_TEXT_FIELDS[1:] + _ID_FIELDS + _TIME_FIELDS + ("args",)), unique=True, max_size=9))]
    if doc_level and draw(st.integers(0, 9)) == 0:
        fields.remove("ph")
    fields = draw(st.permutations(fields)) if draw(st.booleans()) else fields
    pairs = []
    for field in fields:
        level = levels()
        if field != "args":
            value = _field_value(draw, field, level)
        elif level == WILD and draw(st.integers(0, 3)) == 0:
            value = draw(json_any(traps=True))
        else:
            value = draw(args_object(levels, style, doc_level))
        pairs.append((draw(key_text(field, level)), value))
    if pairs and levels() == WILD:  # a field twice: the last one counts
        field = draw(st.sampled_from(fields))
        pairs.insert(draw(st.integers(0, len(pairs))), (b'"' + field.encode() + b'"', _field_value(draw, field, WILD) if field != "args" else b"{}"))
    level = levels()
    if level:  # unknown keys, with anything in them
        key = draw(st.one_of(json_string(WILD, traps=True) if level == WILD else json_string(ORDINARY), st.sampled_from(_UNKNOWN_KEYS).map(lambda k: b'"' + k.encode() + b'"')))
        pairs.insert(draw(st.integers(0, len(pairs))), (key, draw(json_any(level, traps=True))))
    elif draw(st.integers(0, 3)) == 0:
        pairs.append((b'"s"', b'"t"'))  # a key profilers write that is not read
    return _object(draw, pairs, style, doc_level)


@dataclass(frozen=True)
class Doc:
    text: bytes
    level: int  # the most unusual level a value may have; an ORDINARY document must be accepted by the native path

    def __repr__(self) -> str:
        return f"Doc(level={self.level}, text={self.text!r})"


@st.composite
def documents(draw: st.DrawFn, max_events: int = 12, min_events: int = 0, traps: bool = False) -> Doc:
    """A whole trace document's bytes: ordinary ones (every value what profilers write), mild ones, and wild ones."""
    doc_level = draw(st.sampled_from([ORDINARY, ORDINARY, MILD, MILD, WILD]))
    pct = draw(st.sampled_from([5, 20, 60])) if doc_level else 0

    def levels() -> int:
        if not _odds(draw, pct):
            return ORDINARY
        return MILD if doc_level == MILD or draw(st.booleans()) else WILD

    style = draw(st.sampled_from(_STYLES))
    events = draw(st.lists(event(levels, style, doc_level), min_size=min_events, max_size=max_events))
    if traps:  # a long name full of cut-like bytes, so that a cut near the middle may fall inside a string
        trap = b'"' + b"x".join(draw(st.lists(st.sampled_from(_TRAPS), min_size=1, max_size=40))) + b'"'
        events.insert(draw(st.integers(0, len(events))), b'{"ph": "X", "name": ' + trap + b', "ts": 1.5, "dur": 2, "args": {"Input Dims": [[1], []], "x": [{}, {"ph": "X"}]}}')
    if doc_level:
        seps = [_ws(draw, MILD) + b"," + _ws(draw, MILD) for _ in range(max(0, len(events) - 1))]
        body = _ws(draw, MILD) + b"".join(e + s for e, s in zip(events, [*seps, b""])) + _ws(draw, MILD)
        if events and doc_level == WILD and draw(st.integers(0, 9)) == 0:
            body += b","  # a trailing comma
    else:
        sep = b"," + (b"\n  " if style == "kineto" else b" " if style == "dumps" else b"")
        body = (b"\n  " if style == "kineto" and events else b"") + sep.join(events) + (b"\n" if style == "kineto" and events else b"")
    array = b"[" + body + b"]"
    shape = draw(st.integers(0, 9))
    if shape == 0:
        text = array  # a bare array
    elif shape == 1:
        text = b'{"schemaVersion": 1, "deviceProperties": [{"id": 0, "name": "GPU"}], "traceName": "t\\u00e9", "traceEvents": ' + array + b', "displayTimeUnit": "ms", "baseTimeNanoseconds": 1700000000000000000}'
    elif shape == 2:
        text = b'{\n  "schemaVersion": 1,\n  "distributedInfo": {"rank": 0, "x": [{}, {}]},\n  "traceEvents": ' + array + b"\n}"
    else:
        text = b'{"traceEvents": ' + array + b', "schemaVersion": 1}'
    return Doc(text, doc_level)


# --- 1 and 2: native on == native off on generated documents ------------------------------------------------------------


def _differential(max_examples: int, doc_strategy: st.SearchStrategy[Doc], split_min: st.SearchStrategy[int] | None) -> dict[str, int]:
    """Run the differential property; counts of documents, ordinary ones, and those the native path accepted."""
    counts = {"docs": 0, "ordinary": 0, "accepted": 0, "unusual accepted": 0}

    @settings(max_examples=max_examples, deadline=None, suppress_health_check=_RELAXED)
    @given(doc=doc_strategy, split=split_min if split_min is not None else st.none(), name=st.sampled_from(["t.json"] * 8 + ["t.json.gz"]),
           max_events=st.sampled_from([None] * 8 + [0, 1, 3]))
    def run(doc: Doc, split: int | None, name: str, max_events: int | None) -> None:
        with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
            if split is not None:
                mp.setattr(_columnar, "SPLIT_MIN", split)
                mp.delenv("NTRACE_FORK", raising=False)  # the halves on two threads
                if split == 128:
                    mp.setenv("NTRACE_FORK", "0")  # small, but no second thread: one pass
            took = accepted(doc.text)
            counts["docs"] += 1
            counts["ordinary"] += doc.level == ORDINARY
            counts["accepted"] += took
            counts["unusual accepted"] += took and doc.level > ORDINARY
            if doc.level == ORDINARY:
                assert took, "the native path declined a document written the way profilers write"
            check_text(doc.text, Path(tmp), name, **({} if max_events is None else {"max_events": max_events}))

    run()
    return counts


def test_native_equals_msgspec_on_generated_documents() -> None:
    counts = _differential(300, documents(), None)
    assert counts["ordinary"] >= counts["docs"] // 4 and counts["accepted"] >= counts["ordinary"] and counts["unusual accepted"] > 0


@pytest.mark.slow
def test_native_equals_msgspec_on_many_generated_documents() -> None:
    counts = _differential(3000, documents(max_events=25), None)
    assert counts["accepted"] >= counts["ordinary"] > 0 and counts["unusual accepted"] > 0


def _splits() -> st.SearchStrategy[int]:
    return st.sampled_from([0, 1, 64, 128, 256, 256, 256, 1024])


def test_halves_on_two_threads_equal_msgspec() -> None:
    """With SPLIT_MIN small, arrays are parsed as two halves on two threads, cut at a `}, {` near the middle that may lie in a string."""
    assert len(os.sched_getaffinity(0)) >= 2
    counts = _differential(250, documents(max_events=30, min_events=3, traps=True), _splits())
    assert counts["accepted"] >= counts["ordinary"] > 0 and counts["unusual accepted"] > 0


@pytest.mark.slow
def test_halves_on_two_threads_equal_msgspec_many() -> None:
    assert len(os.sched_getaffinity(0)) >= 2
    counts = _differential(2000, documents(max_events=60, min_events=3, traps=True), _splits())
    assert counts["accepted"] >= counts["ordinary"] > 0 and counts["unusual accepted"] > 0


def test_an_ordinary_document_is_accepted_whole_and_split(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A deterministic document like a profiler's, with every field read: accepted by the native path, and read like msgspec reads it."""
    monkeypatch.delenv("NTRACE_FORK", raising=False)
    events = []
    for i in range(40):
        tid = '"Spans"' if i % 7 == 0 else 100 + i
        ev = f'{{"ph": "X", "cat": "{_CATS[i % len(_CATS)]}", "name": "aten::op{i} }}, {{\\"ph\\": \\"X\\"", "pid": {i % 3}, "tid": {tid}, "ts": 1712195495505{i:03d}.{i * 37 % 1000:03d}, "dur": {i}.5{i % 10}9'
        ev += f', "id": {i}, "bp": "e", "args": {{"External id": {i}, "correlation": {i * 2}, "stream": 7, "device": 0, "Sequence number": {i}, "bytes": 1024, "model_name": "m{i}"'
        ev += f', "Bytes": -512, "Total Allocated": {1 << 33}, "Total Reserved": {1 << 34}, "Addr": 140256437436416, "Device Type": 1, "Device Id": 0, "Input Dims": [[{i}, 2], [], [3]], "Ev Idx": {i}, "Concrete Inputs": ["", "1"]}}}}'
        events.append(ev)
    text = ('{"schemaVersion": 1, "traceEvents": [\n  ' + ",\n  ".join(events) + '\n], "traceName": "x"}').encode()
    assert accepted(text)
    monkeypatch.delenv("NTRACE_NATIVE", raising=False)  # unset: on
    assert _columnar.columns(text, outline(text, DOCUMENT)) is not None
    monkeypatch.setenv("NTRACE_NATIVE", "0")  # off: the switch works, so the differential tests compare two paths
    assert _columnar.columns(text, outline(text, DOCUMENT)) is None
    monkeypatch.delenv("NTRACE_NATIVE")
    trace = check_text(text, tmp_path)
    assert trace.events.height == 40 and trace.events["input_dims"][0] is not None
    monkeypatch.setattr(_columnar, "SPLIT_MIN", 256)
    assert accepted(text)
    assert_frame_equal(check_text(text, tmp_path, "u.json").events, trace.events, check_exact=True)


# --- 3: times against an oracle of plain integers ----------------------------------------------------------------------


def oracle_ns(text: str) -> int | None:
    """The exact ns of a decimal µs text (sign, digits, maybe a fraction), rounded half to even at the 3rd decimal; None out of int64."""
    negative = text.startswith("-")
    whole, _, frac = text.lstrip("-").partition(".")
    digits = int(whole + frac)
    k = len(frac)
    if k <= 3:
        magnitude = digits * 10 ** (3 - k)
    else:
        unit = 10 ** (k - 3)
        magnitude, rest = divmod(digits, unit)
        if 2 * rest > unit or (2 * rest == unit and magnitude % 2 == 1):
            magnitude += 1
    ns = -magnitude if negative else magnitude
    return ns if INT64_MIN <= ns <= INT64_MAX else None


def test_the_oracle_itself() -> None:
    assert oracle_ns("1.5") == 1500 and oracle_ns("-0") == 0 and oracle_ns("0.0005") == 0 and oracle_ns("0.0015") == 2
    assert oracle_ns("0.00050000001") == 1 and oracle_ns("-2.0025") == -2002 and oracle_ns("-2.0035") == -2004
    assert oracle_ns("9223372036854775.807") == INT64_MAX and oracle_ns("9223372036854775.8075") is None
    assert oracle_ns("-9223372036854775.808") == INT64_MIN and oracle_ns("-9223372036854775.8085") == INT64_MIN
    assert oracle_ns("-9223372036854775.8095") is None and oracle_ns("12") == 12000


_EDGES = ["9223372036854775.807", "9223372036854775.8075", "9223372036854775.8065", "9223372036854775.80749999999999999999999", "9223372036854775.808",
          "-9223372036854775.808", "-9223372036854775.8085", "-9223372036854775.8095", "-9223372036854775.809", "-9223372036854775.80849999999999999",
          "0.0005", "0.0015", "0.0025", "-0.0005", "-0", "-0.0", "0", "0.000", "0.0004999999999999999999999", "1712195495505582.988",
          "9999999999999999999999.9999999999999999999999999", "-9999999999999999999999", "18446744073709551.616", "9223372036854776"]  # fmt: skip


@st.composite
def decimal_text(draw: st.DrawFn) -> str:
    if draw(st.integers(0, 9)) == 0:
        return draw(st.sampled_from(_EDGES))
    sign = "-" if draw(st.booleans()) else ""
    return sign + draw(json_decimal(False, int_digits=(1, 22), frac_digits=(0, 25))).decode()


@settings(max_examples=150, deadline=None, suppress_health_check=_RELAXED)
@given(times=st.lists(st.tuples(decimal_text(), decimal_text()), min_size=1, max_size=30), split=st.sampled_from([None, None, 64]))
@example(times=[(t, d) for t, d in zip(_EDGES, reversed(_EDGES))], split=None)
@example(times=[(t, d) for t, d in zip(_EDGES, reversed(_EDGES))], split=64)
def test_times_equal_an_integer_oracle(times: list[tuple[str, str]], split: int | None) -> None:
    """ts and dur, in the native path's columns and in the frame, against plain integer arithmetic; whole, and in two halves."""
    text = ('{"traceEvents": [' + ", ".join(f'{{"ph": "X", "name": "e{i}", "pid": 1, "tid": 1, "ts": {t}, "dur": {d}}}' for i, (t, d) in enumerate(times)) + "]}").encode()
    expected = [(oracle_ns(t), oracle_ns(d)) for t, d in times]
    with pytest.MonkeyPatch.context() as mp, tempfile.TemporaryDirectory() as tmp:
        mp.setenv("NTRACE_NATIVE", "1")
        if split is not None:
            mp.setattr(_columnar, "SPLIT_MIN", split)
            mp.delenv("NTRACE_FORK", raising=False)
        found = outline(text, DOCUMENT)
        cols = _columnar.columns(text, found)
        assert cols is not None, "the native path declined plain decimal times"
        assert list(zip(cols["ts"].to_list(), cols["dur"].to_list())) == expected
        assert cols["ts_dropped"].to_list() == [ns is None for ns, _ in expected]
        assert cols["dur_dropped"].to_list() == [ns is None for _, ns in expected]
        frame = check_text(text, Path(tmp)).events  # native on, checked equal to native off
    # complete events without a usable ts are left out; a missing or negative dur counts as 0; an end past int64 leaves the event out
    kept = {i: (ts, dur if dur is not None and dur >= 0 else 0) for i, (ts, dur) in enumerate(expected) if ts is not None}
    kept = {i: (ts, dur) for i, (ts, dur) in kept.items() if INT64_MIN <= ts + dur <= INT64_MAX}
    assert frame["idx"].to_list() == sorted(kept)
    assert {i: (ts, dur) for i, ts, dur in frame.select("idx", "ts", "dur").iter_rows()} == kept


# --- 4: hostile texts ----------------------------------------------------------------------------------------------------

_ORDINARY = (b'{"ph": "X", "cat": "cpu_op", "name": "aten::add", "pid": 1, "tid": 2, "ts": 1712195495505582.988, "dur": 12.5, '
             b'"args": {"External id": 7, "Input Dims": [[1, 2], []], "Ev Idx": 3}}')  # fmt: skip


def _doc(*elements: bytes, bare: bool = False) -> bytes:
    array = b"[" + b", ".join(elements) + b"]"
    return array if bare else b'{"schemaVersion": 1, "traceEvents": ' + array + b', "traceName": "x"}'


def _with(**fields: bytes) -> bytes:
    """An ordinary event with some fields' texts replaced or added (given as raw JSON text)."""
    out = _ORDINARY[:-1]
    for key, value in fields.items():
        out += b', "' + key.replace("_", " ").encode() + b'": ' + value
    return out + b"}"


def _deep(n: int, opening: bytes, closing: bytes, inner: bytes = b"1") -> bytes:
    return opening * n + inner + closing * n


_WHOLE = _doc(_ORDINARY, _ORDINARY.replace(b"aten::add", b"aten::mul"), _ORDINARY)

HOSTILE: dict[str, bytes] = {
    "ordinary": _WHOLE,
    "truncated mid-string": _WHOLE[: _WHOLE.rindex(b"aten::mul") + 4],
    "truncated mid-number": _WHOLE[: _WHOLE.rindex(b"1712195495") + 6],
    "truncated after a comma": _WHOLE[: _WHOLE.rindex(b"}, ") + 2],
    "truncated before the closing bracket": _WHOLE[: _WHOLE.rindex(b"]")],
    "truncated before the last brace": _WHOLE[:-1],
    "truncated bare array": _doc(_ORDINARY, _ORDINARY, bare=True)[:-1],
    "truncated inside args": _WHOLE[: _WHOLE.rindex(b"Input Dims") + 3],
    "truncated to the key": b'{"traceEvents": [',
    "invalid utf-8 in a name": _doc(_ORDINARY.replace(b"aten::add", b"aten\xff::add")),
    "invalid utf-8 in a cat": _doc(_ORDINARY.replace(b"cpu_op", b"cpu\xc3(op")),
    "overlong utf-8 in a name": _doc(_ORDINARY.replace(b"aten::add", b"\xc0\xafadd")),
    "utf-8 surrogate in a name": _doc(_ORDINARY.replace(b"aten::add", b"\xed\xa0\x80add")),
    "cut utf-8 in a name": _doc(_ORDINARY.replace(b"aten::add", b"add\xf0\x9f\x98")),
    "invalid utf-8 in an unknown key's string": _doc(_with(foo=b'"a\xffb"')),
    "invalid utf-8 in an unknown args string": _doc(_ORDINARY.replace(b'"Ev Idx": 3', b'"Ev Idx": "\xfe"')),
    "invalid utf-8 in an unknown key": _doc(_ORDINARY.replace(b'"Ev Idx"', b'"Ev\xffIdx"')),
    "invalid utf-8 in an event key": _doc(_ORDINARY.replace(b'"tid"', b'"t\xffd"')),
    "invalid utf-8 in Input Dims": _doc(_ORDINARY.replace(b"[[1, 2], []]", b'[["\xff"]]')),
    "invalid utf-8 in Input Dims text": _doc(_ORDINARY.replace(b"[[1, 2], []]", b'[[1], "a\xe9b"]')),
    "invalid utf-8 outside strings": _doc(_ORDINARY.replace(b'"pid": 1', b'"pid": 1\xff')),
    "lone high surrogate in a name": _doc(_ORDINARY.replace(b"aten::add", rb"\ud800")),
    "lone low surrogate in a name": _doc(_ORDINARY.replace(b"aten::add", rb"a\udc00b")),
    "high surrogate then a letter": _doc(_ORDINARY.replace(b"aten::add", rb"\ud83d\u0041")),
    "lone surrogate in a cat": _doc(_ORDINARY.replace(b"cpu_op", rb"\udfff")),
    "lone surrogate in Input Dims": _doc(_ORDINARY.replace(b"[[1, 2], []]", rb'[["\ud800"]]')),
    "lone surrogate in model_name": _doc(_ORDINARY.replace(b'"Ev Idx": 3', rb'"model_name": "\ud800"')),
    "surrogate pair in a name": _doc(_ORDINARY.replace(b"aten::add", rb"\ud83d\ude00 \u00e9 \u0000")),
    "bad escape in a name": _doc(_ORDINARY.replace(b"aten::add", rb"a\qb")),
    "short unicode escape": _doc(_ORDINARY.replace(b"aten::add", rb"a\u12")),
    "raw control character in a name": _doc(_ORDINARY.replace(b"aten::add", b"a\x01b")),
    "raw tab in a name": _doc(_ORDINARY.replace(b"aten::add", b"a\tb")),
    "escaped key": _doc(_ORDINARY.replace(b'"name"', rb'"n\u0061me"').replace(b'"Input Dims"', rb'"Input\u0020Dims"')),
    "70 deep lists in args": _doc(_ORDINARY.replace(b'"Ev Idx": 3', b'"deep": ' + _deep(70, b"[", b"]"))),
    "70 deep objects in args": _doc(_ORDINARY.replace(b'"Ev Idx": 3', b'"deep": ' + _deep(70, b'{"a": ', b"}"))),
    "5000 deep lists in args": _doc(_ORDINARY.replace(b'"Ev Idx": 3', b'"deep": ' + _deep(5000, b"[", b"]"))),
    "5000 deep objects in args": _doc(_ORDINARY.replace(b'"Ev Idx": 3', b'"deep": ' + _deep(5000, b'{"a": ', b"}"))),
    "70 deep in Input Dims": _doc(_ORDINARY.replace(b"[[1, 2], []]", _deep(70, b"[", b"]"))),
    "5000 deep in Input Dims": _doc(_ORDINARY.replace(b"[[1, 2], []]", _deep(5000, b"[", b"]"))),
    "5000 deep at the event's level": _doc(_with(deep=_deep(5000, b"[", b"]"))),
    "5000 deep as an element": _doc(_ORDINARY, _deep(5000, b"[", b"]")),
    "unbalanced deep": _doc(_ORDINARY.replace(b'"Ev Idx": 3', b'"deep": ' + _deep(70, b"[", b"]")[:-1])),
    "trailing comma before ]": _doc(_ORDINARY, _ORDINARY).replace(b"}]", b"},]"),
    "trailing comma and space before ]": _doc(_ORDINARY, _ORDINARY).replace(b"}]", b"}, \n]"),
    "trailing comma in a bare array": _doc(_ORDINARY, bare=True).replace(b"}]", b"},]"),
    "trailing comma in args": _doc(_ORDINARY.replace(b'"Ev Idx": 3', b'"Ev Idx": 3,')),
    "trailing comma in an event": _doc(_ORDINARY[:-1] + b",}"),
    "double comma": _doc(_ORDINARY, b"", _ORDINARY),
    "leading comma": b'{"traceEvents": [, ' + _ORDINARY + b"]}",
    "missing comma": b'{"traceEvents": [' + _ORDINARY + b" " + _ORDINARY + b"]}",
    "a number element": _doc(_ORDINARY, b"1"),
    "a string element": _doc(_ORDINARY, b'"x"'),
    "a null element": _doc(b"null", _ORDINARY),
    "an array element": _doc(_ORDINARY, b"[" + _ORDINARY + b"]"),
    "only a non-object": _doc(b"true"),
    "ph null": _doc(_ORDINARY.replace(b'"ph": "X"', b'"ph": null')),
    "ph number": _doc(_ORDINARY.replace(b'"ph": "X"', b'"ph": 1')),
    "ph missing": _doc(_ORDINARY.replace(b'"ph": "X", ', b"")),
    "pid 1.0": _doc(_ORDINARY.replace(b'"pid": 1', b'"pid": 1.0')),
    "pid 1e2": _doc(_ORDINARY.replace(b'"pid": 1', b'"pid": 1e2')),
    "pid -0": _doc(_ORDINARY.replace(b'"pid": 1', b'"pid": -0')),
    "pid true": _doc(_ORDINARY.replace(b'"pid": 1', b'"pid": true')),
    "pid null": _doc(_ORDINARY.replace(b'"pid": 1', b'"pid": null')),
    "pid huge": _doc(_ORDINARY.replace(b'"pid": 1', b'"pid": 99999999999999999999999')),
    "pid int64 max+1": _doc(_ORDINARY.replace(b'"pid": 1', b'"pid": 9223372036854775808')),
    "pid int64 min": _doc(_ORDINARY.replace(b'"pid": 1', b'"pid": -9223372036854775808')),
    "pid object": _doc(_ORDINARY.replace(b'"pid": 1', b'"pid": {"a": 1}')),
    "tid text and int": _doc(_ORDINARY, _ORDINARY.replace(b'"tid": 2', b'"tid": "2"')),
    "duplicate name keys": _doc(_ORDINARY.replace(b'"name": "aten::add"', b'"name": "a", "name": "b"')),
    "duplicate name keys, first wrong type": _doc(_ORDINARY.replace(b'"name": "aten::add"', b'"name": 1, "name": "b"')),
    "duplicate name keys, last wrong type": _doc(_ORDINARY.replace(b'"name": "aten::add"', b'"name": "a", "name": 1')),
    "duplicate ts keys": _doc(_ORDINARY.replace(b'"dur": 12.5', b'"dur": 12.5, "ts": 5, "ts": 6.0005')),
    "duplicate args": _doc(_ORDINARY[:-1] + b', "args": {"correlation": 9}}'),
    "duplicate args key": _doc(_ORDINARY.replace(b'"Ev Idx": 3', b'"External id": 8, "External id": null')),
    "args null": _doc(_ORDINARY.replace(b'"args": {', b'"args": null, "a": {')),
    "args list": _doc(_ORDINARY.replace(b'"args": {', b'"args": [], "a": {')),
    "stream 0x0": _doc(_ORDINARY.replace(b'"Ev Idx": 3', b'"stream": "0x0"')),
    "stream as text": _doc(_ORDINARY.replace(b'"Ev Idx": 3', b'"stream": "12", "correlation": "-3", "device": " 7"')),
    "external id float": _doc(_ORDINARY.replace(b'"External id": 7', b'"External id": 7.0')),
    "external id huge": _doc(_ORDINARY.replace(b'"External id": 7', b'"External id": 18446744073709551616')),
    "Input Dims odd spacing": _doc(_ORDINARY.replace(b"[[1, 2], []]", b"[ [1 ,2] ,\n[ ]\t]")),
    "Input Dims with text": _doc(_ORDINARY.replace(b"[[1, 2], []]", rb'[[1, "a\"b\u00e9"], null, {"k": [1e3]}]')),
    "Input Dims a string": _doc(_ORDINARY.replace(b"[[1, 2], []]", b'"[[1]]"')),
    "Input Dims numbers": _doc(_ORDINARY.replace(b"[[1, 2], []]", b"[[1.50, -0, 1E2, 100000000000000000000000]]")),
    "ts as text": _doc(_ORDINARY.replace(b"1712195495505582.988", b'"1712195495505582.988"')),
    "ts exponent": _doc(_ORDINARY.replace(b"1712195495505582.988", b"1.712195495505582988e15")),
    "ts huge exponent": _doc(_ORDINARY.replace(b"1712195495505582.988", b"1e400")),
    "ts null": _doc(_ORDINARY.replace(b"1712195495505582.988", b"null")),
    "ts NaN": _doc(_ORDINARY.replace(b"1712195495505582.988", b"NaN")),
    "ts leading zero": _doc(_ORDINARY.replace(b"1712195495505582.988", b"01.5")),
    "ts plus sign": _doc(_ORDINARY.replace(b"1712195495505582.988", b"+1.5")),
    "ts bare dot": _doc(_ORDINARY.replace(b"1712195495505582.988", b"1.")),
    "dur negative zero": _doc(_ORDINARY.replace(b"12.5", b"-0.0")),
    "empty array": _doc(),
    "empty bare array": b"[]",
    "whitespace-only array": b'{"traceEvents": [ \n\t\r\n ], "schemaVersion": 1}',
    "whitespace-only bare array": b" \n[ \t ]\n",
    "empty object element": _doc(b"{}"),
    "empty objects": _doc(b"{}", b"{ }", b"{\n}"),
    "bom": b"\xef\xbb\xbf" + _WHOLE,
    "trailing garbage": _WHOLE + b"x",
    "two documents": _WHOLE + _WHOLE,
    "nul byte outside strings": _doc(_ORDINARY.replace(b'"pid": 1,', b'"pid": 1,\x00')),
    "traceEvents twice": b'{"traceEvents": [' + _ORDINARY + b'], "traceEvents": [' + _ORDINARY.replace(b"aten::add", b"second") + b"]}",
    "traceEvents in a string first": b'{"x": "\\"traceEvents\\": [", "traceEvents": [' + _ORDINARY + b"]}",
    "traceEvents nested first": b'{"x": {"traceEvents": [1, 2]}, "traceEvents": [' + _ORDINARY + b"]}",
    "traceEvents not an array": b'{"traceEvents": {"a": [' + _ORDINARY + b"]}}",
    "empty file": b"",
    "whitespace file": b" \n ",
    "null document": b"null",
    "empty object document": b"{}",
    "raw nul in a name": _doc(_ORDINARY.replace(b"aten::add", b"a\x00b")),
    "form feed between tokens": _doc(_ORDINARY.replace(b'"pid": 1,', b'"pid":\x0c1,')),
    "vertical tab between tokens": _doc(_ORDINARY.replace(b'"pid": 1,', b'"pid":\x0b1,')),
    "cut-like name": _doc(_ORDINARY.replace(b"aten::add", rb'}, {\"ph\": \"X\", \"name\": \"y\"'), _ORDINARY, _ORDINARY),
}

#: Input Dims is kept as text: spacing, escapes and number spellings inside it must come out as the msgspec path writes them.
_DIMS = (rb'[["a b", "\u00e9", "\"", "\/", "\\", "\t x"]]', rb'[1.50, 1E2, -0, 1e400, 99999999999999999999999, -0.0, 5e-324]', rb'[{"a": 1, "a": 2}]',
         b"[]", b"[[]]", b"[ ]", b"[ [ ] ]", b"[true, false, null]", rb'["\ud83d\ude00", "\u0000", "\u001f"]', '["é", "😀", "a b"]'.encode(),
         b'{"a": [1]}', b"17", b'"x"', b"null", b"[\n\t1 ,\r\n2 ]", rb'[["\u2028"]]', b"[1e5, 1.0e+5, 100000.0]", b"[0.1, 1.7976931348623157e308]",
         b"[123456789012345678901234567890.5]", b"[-1, -0.5e-3]", b"[[1,2],[3]]", b"[\n [\n  1\n ]\n]", b'[[1], "}, {\\"ph\\": \\"X\\"", [2]]')  # fmt: skip
HOSTILE.update({f"Input Dims variant {i}": _doc(_ORDINARY.replace(b"[[1, 2], []]", dims), _ORDINARY) for i, dims in enumerate(_DIMS)})


@pytest.mark.parametrize("split", [None, 0, 64], ids=["whole", "split0", "split64"])
@pytest.mark.parametrize("name", sorted(HOSTILE))
def test_hostile_texts_read_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, name: str, split: int | None) -> None:
    if split is not None:
        monkeypatch.setattr(_columnar, "SPLIT_MIN", split)
        monkeypatch.delenv("NTRACE_FORK", raising=False)
    check_text(HOSTILE[name], tmp_path)


@pytest.mark.parametrize("limit", [1000, 20_000])
@pytest.mark.parametrize("name", sorted(k for k in HOSTILE if "deep" in k))
def test_deep_texts_read_alike_whatever_the_recursion_limit(tmp_path: Path, name: str, limit: int) -> None:
    """How deep the decoders go follows the recursion limit (mypy raises it for good in test_architecture): alike at either."""
    before = sys.getrecursionlimit()
    sys.setrecursionlimit(limit)
    try:
        check_text(HOSTILE[name], tmp_path)
    finally:
        sys.setrecursionlimit(before)


def test_the_hostile_baseline_is_accepted() -> None:
    assert accepted(HOSTILE["ordinary"]) and accepted(HOSTILE["cut-like name"])


@pytest.mark.parametrize("value", _ODD_NUMERIC_TEXT + _TEXT_NUMBERS + _NUMBER_SPELLINGS, ids=repr)
def test_numeric_text_in_keys_reads_alike(tmp_path: Path, value: bytes) -> None:
    """Ids and args keys given as text (or odd numbers): whatever the msgspec path makes of them, the native path makes too."""
    fields = b", ".join(b'"%s": %s' % (key.encode(), value) for key in ("stream", "correlation", "device", "Sequence number", "bytes", "Addr", "Device Id"))
    text = _doc(_ORDINARY.replace(b'"Ev Idx": 3', fields).replace(b'"pid": 1', b'"pid": ' + value).replace(b'"tid": 2', b'"id": ' + value), _ORDINARY)
    check_text(text, tmp_path)


def _trap_document(padding: int, trap: bytes) -> bytes:
    """Three events, the middle one holding `trap`; `padding` bytes in the first move the array's middle across the trap."""
    first = b'{"ph": "X", "name": "' + b"p" * padding + b'", "ts": 1, "dur": 1}'
    middle = b'{"ph": "X", "cat": "cpu_op", "ts": 2.5, "dur": 3, ' + trap + b', "pid": 1}'
    last = b'{"ph": "X", "name": "z", "ts": 3, "dur": 1, "args": {"External id": 4}}'
    return _doc(first, middle, last)


_TRAP_FIELDS = {
    "escaped quotes": rb'"name": "a}, {\"ph\": \"X\", \"ts\": 9}, {\"ph\": \"X\"}, {x"',
    "escaped backslashes": rb'"name": "a\\", "sf": "b\\\\", "bp": "e}, {\\"',
    "nested objects": rb'"args": {"x": [{"ph": "X", "ts": 7}, {"ph": "X", "ts": 8}, {}, {"a": "}, {"}], "External id": 5}',
    "unknown key": rb'"zz": [{}, {"ph": "X", "name": "n"}, {"ph": "i"}], "name": "q"',
    "input dims": rb'"args": {"Input Dims": [[1], [2], [], [3, 4]], "Concrete Inputs": ["}, {", "], ["]}',
    "unicode": '"name": "é}, {😀}, {\\u00e9}, {中"'.encode(),
    "spacing": b'"name"  :  "}, {"  ,  "args":{"x":[{} , {} ,{}],"y":{"a":{}}}',
}


@pytest.mark.parametrize("trap", sorted(_TRAP_FIELDS))
def test_the_middle_cut_swept_across_a_trap(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, trap: str) -> None:
    """The array's middle moved byte by byte across strings and nesting full of `}, {`: two halves give what one pass gives, and what msgspec gives."""
    assert len(os.sched_getaffinity(0)) >= 2
    monkeypatch.delenv("NTRACE_FORK", raising=False)
    monkeypatch.setenv("NTRACE_NATIVE", "1")
    for padding in range(0, 2 * len(_TRAP_FIELDS[trap]) + 240):  # the middle from before the trap to past it
        text = _trap_document(padding, _TRAP_FIELDS[trap])
        found = outline(text, DOCUMENT)
        monkeypatch.setattr(_columnar, "SPLIT_MIN", 1 << 40)
        whole = _columnar.columns(text, found)
        monkeypatch.setattr(_columnar, "SPLIT_MIN", 0)
        halves = _columnar.columns(text, found)
        assert whole is not None and halves is not None, padding
        assert whole.keys() == halves.keys()
        for key in whole:
            assert whole[key].equals(halves[key], check_names=True), (padding, key)
        if padding % 17 == 0:
            check_text(text, tmp_path)


def test_long_values_read_alike(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A name of a few MB with escapes throughout, a shape list of 100,000 dims, 20,000 events: whole and in halves."""
    name = (rb"ab\n\u00e9\ud83d\ude00" + "é".encode() + b"}, {" * 3) * 100_000
    dims = b"[" + b", ".join(b"[%d, 2]" % i for i in range(100_000)) + b"]"
    events = [b'{"ph": "X", "name": "' + name + b'", "ts": 1.5, "dur": 2, "args": {"Input Dims": ' + dims + b"}}"]
    events += [b'{"ph": "X", "name": "e%d", "ts": %d.%03d, "dur": 1, "pid": %d, "args": {"External id": %d}}' % (i, i, i % 1000, i % 5, i) for i in range(20_000)]
    text = _doc(*events)
    assert accepted(text)
    check_text(text, tmp_path)
    monkeypatch.delenv("NTRACE_FORK", raising=False)
    monkeypatch.setattr(_columnar, "SPLIT_MIN", 4096)
    assert accepted(text)
    check_text(text, tmp_path, "u.json")


# --- 5: the real traces --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("path", shared_trace_files(), ids=lambda p: p.name.split("__")[0])
def test_real_traces_read_alike_and_natively(path: Path, tmp_path: Path) -> None:
    text = gzip.decompress(path.read_bytes())
    assert accepted(text), f"the native path declined {path.name}"
    assert_same(path)


def test_there_are_real_traces() -> None:
    assert len(shared_trace_files()) >= 10


@pytest.mark.parametrize("path", [p for p in shared_trace_files() if p.stat().st_size < 400_000], ids=lambda p: p.name.split("__")[0])
def test_real_traces_split_in_halves(path: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_columnar, "SPLIT_MIN", 4096)
    monkeypatch.delenv("NTRACE_FORK", raising=False)
    text = gzip.decompress(path.read_bytes())
    assert accepted(text)
    check_text(text, tmp_path)


# --- 6: the low-level module ---------------------------------------------------------------------------------------------


def _decoded(text: bytes) -> tuple[Any, ...]:
    found = outline(text, DOCUMENT)
    result = _native.decode(text, found.start, found.end)
    assert result is not None
    return result


def test_a_column_is_exported_once() -> None:
    columns, _keys, reached = _decoded(_WHOLE)
    assert reached == _WHOLE.rindex(b"]")
    assert all(len(col) == 3 for col in columns)
    first = pl.Series(columns[0])
    assert first.len() == 3
    with pytest.raises(RuntimeError):
        pl.Series(columns[0])
    with pytest.raises(RuntimeError):
        columns[0].__arrow_c_array__()
    assert all(pl.Series(col).len() == 3 for col in columns[1:])  # the others still export, once each


def test_an_unexported_column_is_freed() -> None:
    for _ in range(50):
        _decoded(_WHOLE)  # dropped without export: nothing leaks or crashes


@pytest.mark.parametrize(("start", "end"), [(0, 999), (-1, 3), (999, 1000), (0, -2), (5, 5)])
def test_offsets_outside_the_buffer_raise(start: int, end: int) -> None:
    with pytest.raises(ValueError):
        _native.decode(b"[{}]", start, end)


def test_decode_reads_any_buffer() -> None:
    found = outline(_WHOLE, DOCUMENT)
    from_bytes = _native.decode(_WHOLE, found.start, found.end)
    from_array = _native.decode(bytearray(_WHOLE), found.start, found.end)
    from_view = _native.decode(memoryview(_WHOLE), found.start, found.end)
    assert from_bytes is not None and from_array is not None and from_view is not None
    names = [pl.Series(c).to_list() for c in from_bytes[0]]
    assert [pl.Series(c).to_list() for c in from_array[0]] == names == [pl.Series(c).to_list() for c in from_view[0]]


def test_columns_own_their_data(tmp_path: Path) -> None:
    """Columns exported after their buffer was overwritten, freed, or (a memory map, its pages released) closed hold what was decoded."""
    found = outline(_WHOLE, DOCUMENT)
    want = [pl.Series(c).to_list() for c in _decoded(_WHOLE)[0]]
    buffer = bytearray(_WHOLE)
    overwritten = _native.decode(buffer, found.start, found.end)
    buffer[:] = b"x" * len(buffer)
    freed = _native.decode(bytearray(_WHOLE), found.start, found.end)
    gc.collect()
    path = tmp_path / "t.json"
    path.write_bytes(_WHOLE)
    with path.open("rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        unmapped = _native.decode(mapped, found.start, found.end, -1, True)
        mapped.close()
    for result in (overwritten, freed, unmapped):
        assert result is not None
        assert [pl.Series(c).to_list() for c in result[0]] == want


def test_a_cut_inside_the_last_event_is_parsed_to_the_end_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """When the cut falls inside the array's last event, the first half parses to the end: its columns are the answer, with no third parse of nothing."""
    import json
    import re

    names = ["a"] * 5 + ['x}, {"ph": "X", "name": "inner"' + " " * 400]
    doc = ('{"traceEvents": [' + ", ".join(json.dumps({"ph": "X", "name": n, "ts": i, "dur": 1}) for i, n in enumerate(names)) + "]}").encode()
    cut = doc.index(b'}, {\\"ph')
    monkeypatch.setattr(_columnar, "SPLIT_MIN", 0)
    monkeypatch.setattr(_columnar, "next_cut", lambda text, start, end: re.compile(rb"\}, \{").search(text, cut, end))
    monkeypatch.delenv("NTRACE_FORK", raising=False)
    calls: list[tuple[int, int]] = []

    class Counting:
        @staticmethod
        def decode(*args: Any) -> Any:
            calls.append((args[1], args[2]))
            return _native.decode(*args)

    monkeypatch.setattr(_columnar, "_native", Counting)
    cols = _columnar.columns(doc, outline(doc, DOCUMENT))
    assert cols is not None
    assert len(calls) == 2  # the helper's (wasted) part and the first half, which covered everything
    assert all(column.n_chunks() == 1 for column in cols.values())
    assert cols["name"].to_list() == names


def _counter(slots: int = 1) -> tuple[Any, list[memoryview]]:
    """An int64 array of `slots` zeros and a one-value buffer over each slot (what decode's `progress` takes)."""
    import array

    counts = array.array("q", [0] * slots)
    view = memoryview(counts)
    return counts, [view[i : i + 1] for i in range(slots)]


def test_progress_counts_the_bytes_parsed() -> None:
    """decode's `progress` ends at the bytes parsed from `start` (to `reached`), whole or stopped at an element, in any slot of an array."""
    found = outline(_WHOLE, DOCUMENT)
    counts, slots = _counter(3)
    whole = _native.decode(_WHOLE, found.start, found.end, -1, False, slots[2])
    assert whole is not None and counts.tolist() == [0, 0, whole[2] - found.start]
    two = b'[{"ph": "X", "name": "a", "ts": 1, "dur": 1}, {"ph": "X", "name": "b", "ts": 2, "dur": 1}]'
    second = two.index(b", {") + 2  # the second element: parsing stops before it
    first = _native.decode(two, 1, len(two) - 1, second, False, slots[0])
    assert first is not None and first[2] == second and counts[0] == second - 1
    big = b"[" + b",".join(b'{"ph": "X", "name": "op%d", "ts": %d, "dur": 1}' % (i, i) for i in range(60_000)) + b"]"
    assert len(big) > 2 << 20  # more than one report of the parser's along the way
    big_counts, big_slots = _counter()
    done = _native.decode(big, 1, len(big) - 1, -1, False, big_slots[0])
    assert done is not None and big_counts[0] == done[2] - 1 == len(big) - 2


@pytest.mark.parametrize("bad", ["read-only", "misaligned", "misaligned int64s", "short"])
def test_a_progress_buffer_that_is_not_one_writable_aligned_int64_is_refused(bad: str) -> None:
    import array

    counts = array.array("q", [0, 0])
    buffer = {
        "read-only": b"12345678",
        "misaligned": memoryview(bytearray(9))[1:],  # writable, long enough
        "misaligned int64s": memoryview(counts).cast("B")[4:12],
        "short": memoryview(counts).cast("B")[:4],  # writable and aligned: the parser would store past its end
    }[bad]
    with pytest.raises((ValueError, TypeError)):
        _native.decode(_WHOLE, 0, len(_WHOLE), -1, False, buffer)
    assert counts.tolist() == [0, 0]


def test_the_native_parser_reports_progress_while_it_parses(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With a sink listening, the bytes parsed are reported as parsing goes (from a helper thread), rising to the array's length, on one thread or two."""
    from ntrace.io import progress

    monkeypatch.setattr(progress, "POLL_SECONDS", 0.0005)
    path = tmp_path / "big.json"
    events = b",".join(b'{"ph": "X", "cat": "cpu_op", "name": "aten::op%d", "pid": 1, "tid": 1, "ts": %d, "dur": 1}' % (i, i) for i in range(400_000))
    path.write_bytes(b'{"traceEvents": [' + events + b"]}")
    for split in (False, True):
        monkeypatch.setattr(_columnar, "SPLIT_MIN", 0 if split else 1 << 62)
        seen: list[tuple[Any, ...]] = []
        with progress.reporting(lambda *a: seen.append(a)):
            read_kineto(path)
        done = [d for stage, d, total, unit in seen if stage == "decoding big.json" and total is not None]
        array = len(events)
        assert done[-1] == array and done == sorted(done)
        assert any(0 < d < array for d in done), done  # at least one report while the parser ran (~1 ms between polls, tens of ms of parsing)
