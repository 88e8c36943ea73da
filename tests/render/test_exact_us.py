"""render.json.exact_us: integer ns written as exact µs, checked against digits made with plain Python integers."""

from __future__ import annotations

import orjson
from hypothesis import example, given
from hypothesis import strategies as st

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
