"""render.json.exact_us and exprs.us_text (one value, a column): integer ns written as exact µs, checked against digits made with plain Python integers."""

from __future__ import annotations

import orjson
import polars as pl
from hypothesis import example, given
from hypothesis import strategies as st

from ntrace.exprs import us_text
from ntrace.render.json import exact_us


def _oracle(ns: int) -> bytes:
    whole, frac = abs(ns) // 1000, abs(ns) % 1000
    return (("-" if ns < 0 else "") + str(whole) + "." + str(frac).rjust(3, "0")).encode()


@given(st.integers(-(2**63), 2**63 - 1))
@example(0)
@example(-1)
@example(999)
@example(-1000)
@example(2**63 - 1)
@example(-(2**63))
def test_exact_us_writes_the_integer_digits(ns: int) -> None:
    assert orjson.dumps(exact_us(ns)) == _oracle(ns)
    assert orjson.dumps({"t": exact_us(ns)}) == b'{"t":' + _oracle(ns) + b"}"


def test_exact_us_of_nothing_is_null() -> None:
    assert exact_us(None) is None


_EXTREMES = [0, -1, 999, -1000, 1_661_938_466_304_581_123, 2**63 - 1, -(2**63), -(2**63) + 1]


@given(st.lists(st.integers(-(2**63), 2**63 - 1) | st.none(), max_size=20))
def test_us_text_column_writes_the_integer_digits(values: list[int | None]) -> None:
    column = pl.Series(values + _EXTREMES + [None], dtype=pl.Int64)
    got = pl.select(us_text(pl.lit(column))).to_series().to_list()
    assert got == [None if ns is None else _oracle(ns).decode() for ns in column.to_list()]
