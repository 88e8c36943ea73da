"""The value rules every decoder shares (ntrace.columns): linking keys from text, pid/tid as text, shapes as compact JSON text."""

from __future__ import annotations

from pathlib import Path

import orjson
import polars as pl
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ntrace.io.kineto import _fast, _plain, read_kineto
from ntrace.io.kineto._frame import frame, ids_text, shapes_text, shapes_utf8, text_ints
from ntrace.trace import CATEGORY_COLUMNS, compact


def test_text_ints_parse_numbers_and_null_the_rest() -> None:
    got = text_ints(pl.Series(["7", " 8 ", "9.0", "0x1f", "", None, "1e3"])).to_list()
    assert got == [7, 8, 9, None, None, None, 1000]


def test_ids_print_integers_as_python_does_and_keep_names() -> None:
    assert ids_text([2910249, "Spans", None, -1]).to_list() == ["2910249", "Spans", None, "-1"]
    assert ids_text(pl.Series([1, 2**40])).to_list() == ["1", str(2**40)]


def test_shapes_are_compact_json_and_absent_ones_null() -> None:
    shapes = [[[256, 4096], [4096, 256], []], [], [[1]]]
    written = [orjson.dumps(s, option=orjson.OPT_INDENT_2) for s in shapes] + [b"", None, b"[ [1] ,\n [2] ]"]
    got = shapes_text(written)
    assert got.to_list() == [orjson.dumps(s).decode() for s in shapes] + [None, None, "[[1],[2]]"]
    assert got.dtype == pl.String and shapes_text(got).to_list() == got.to_list()  # its own output is kept as is


def test_shapes_utf8_is_checked_per_value() -> None:
    assert shapes_utf8([b"[1]", None, b'["\xc3\xa9"]', b""])
    assert not shapes_utf8([b"[1]", b'["\xff"]'])
    assert not shapes_utf8([b'["\xc3', b'\xa9"]'])  # two halves of one character in two values


def test_shapes_not_utf8_are_repaired_as_the_plain_path_does(tmp_path: Path) -> None:
    path = tmp_path / "t.json"
    path.write_bytes(b'{"traceEvents": [{"ph": "X", "name": "a", "ts": 1, "dur": 1, "args": {"Input Dims": ["\xff", [2]]}}]}')
    fast, plain = read_kineto(path), read_kineto(path, fast=False)  # the fast path raised a Polars ComputeError here
    assert fast.events.equals(plain.events) and fast.warnings == plain.warnings
    assert fast.events["input_dims"].to_list() == ['["\ufffd",[2]]'] and "not UTF-8" in fast.warnings[0]


_WIDE = st.one_of(st.integers(-(2**70), 2**70), st.integers(2**53, 2**63 - 1), st.integers(-(2**63), -(2**53)), st.sampled_from([2**63, -(2**63) - 1]))


@settings(max_examples=300, deadline=None)
@example([(2**53 + 1, "", ""), (-(2**63) - 1, " ", ""), (2**63 - 1, "", "+")])
@given(st.lists(st.tuples(_WIDE, st.sampled_from(["", " ", "  "]), st.sampled_from(["", "+"])), max_size=20))
def test_integer_text_keys_are_read_digit_for_digit(keys: list[tuple[int, str, str]]) -> None:
    """An id written as text ("9007199254740993") is read exactly, not through a float; past int64 it is null (plain Python ints as the oracle)."""
    texts = [f"{pad}{sign if value >= 0 else ''}{value}{pad}" for value, pad, sign in keys]
    expected = [value if -(2**63) <= value < 2**63 else None for value, _, _ in keys]
    assert text_ints(pl.Series(texts, dtype=pl.String)).to_list() == expected


def test_frame_takes_its_columns_and_builds_them_as_a_trace_holds_them(tmp_path: Path) -> None:
    """`frame` empties the columns it is given (each text column is freed once its categorical is made) and its frame is already compact, from every decoder, with the texts as written."""
    names = ["aten::mm", "a longer name than twelve bytes", "aten::mm", None]
    events = [
        {"ph": "X", "name": names[0], "cat": "cpu_op", "pid": 7, "tid": "Spans", "ts": 1.5, "dur": 2, "args": {"External id": 3}},
        {"ph": "X", "name": names[1], "cat": "kernel", "pid": 0, "tid": 7, "ts": 4, "dur": 1, "args": {"correlation": 9}},
        {"ph": "f", "name": names[2], "cat": "ac2g", "pid": 0, "tid": 7, "ts": 4, "id": 9, "bp": "e"},
        {"ph": "i", "cat": "cpu_op", "pid": 7, "tid": 1, "ts": 6},
    ]
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps({"traceEvents": events}))
    raw = path.read_bytes()
    decoded = {"native": _fast.columns(raw), "plain": _plain.columns(_plain.decode(raw), path, [])}
    frames = []
    for how, got in decoded.items():
        assert got is not None, how
        cols = got[0]
        built = frame(cols, path, [])
        assert cols == {}, how
        assert all(built.schema[c] == pl.Categorical for c in CATEGORY_COLUMNS if c in built.schema), how
        assert built.equals(compact(built)), how
        texts = built.with_columns(pl.col(c).cast(pl.String) for c in CATEGORY_COLUMNS if c in built.schema)
        assert texts["name"].to_list() == names and texts["pid"].to_list() == ["7", "0", "0", "7"]
        assert texts["tid"].to_list() == ["Spans", "7", "7", "1"] and texts["flow_bp"].to_list() == [None, None, "e", None]
        assert texts["ts"].to_list() == [1500, 4000, 4000, 6000] and texts["mem_bytes"].to_list() == [None] * 4
        frames.append(texts)
    assert frames[0].equals(frames[1])


def test_complete_events_without_a_start_a_duration_or_an_end_int64_holds(tmp_path: Path) -> None:
    """One query counts the three faults: a complete event without ts is left out, a missing or negative dur counts as 0 (on every event), an end past int64 is left out; each warned with its count, on both decoders."""
    big = 9223372036854775  # µs: its ns fit int64, and 0.808 µs more do not
    events = [
        {"ph": "X", "name": "no ts", "cat": "cpu_op", "pid": 1, "tid": 1, "dur": 3},
        {"ph": "X", "name": "negative", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 10, "dur": -4},
        {"ph": "X", "name": "no dur", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 20},
        {"ph": "X", "name": "past", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": big, "dur": 1},
        {"ph": "X", "name": "last that fits", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": big, "dur": 0.807},
        {"ph": "X", "name": "no ts, negative", "cat": "cpu_op", "pid": 1, "tid": 1, "dur": -1},
        {"ph": "i", "name": "instant", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 30},
        {"ph": "X", "name": "fine", "cat": "cpu_op", "pid": 1, "tid": 1, "ts": 40, "dur": 2},
    ]
    path = tmp_path / "t.json"
    path.write_bytes(orjson.dumps({"traceEvents": events}))
    for fast in (True, False):
        trace = read_kineto(path, fast=fast)
        got = trace.events.select(pl.col("name").cast(pl.String), "ts", "dur", "end").rows()
        assert got == [
            ("negative", 10_000, 0, 10_000), ("no dur", 20_000, 0, 20_000), ("last that fits", big * 1000, 807, 2**63 - 1),
            ("instant", 30_000, 0, 30_000), ("fine", 40_000, 2000, 42_000),
        ], fast
        assert [w.removeprefix(f"{path}: ") for w in trace.warnings] == [
            "2 complete events have no usable ts; they were left out",
            "2 complete events have a missing, negative or non-finite dur; counted as 0",
            "1 complete events end (ts + dur) beyond what int64 ns hold; they were left out",
        ], fast
