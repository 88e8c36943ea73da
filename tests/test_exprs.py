"""ntrace.exprs: fmt gives what pl.format gives (text of every type, nulls, several placeholders); lookup and nulls give what plain list indexing gives."""

from __future__ import annotations

import polars as pl
import pytest

from hypothesis import given
from hypothesis import strategies as st

from ntrace.exprs import fmt, lookup, nulls, stacked


def test_fmt_equals_polars_format() -> None:
    frame = pl.DataFrame({"a": ["x", None, "z"], "n": [1, 2, None], "f": [True, False, True]})
    for template, args in (("device {}", ("a",)), ("{}:{} end", ("a", "n")), ("{}{}{}", ("n", "a", "f"))):
        assert frame.select(got=fmt(template, *args))["got"].to_list() == frame.select(want=pl.format(template, *args))["want"].to_list()


def test_fmt_counts_its_placeholders() -> None:
    with pytest.raises(ValueError):
        fmt("{} and {}", "a")


@given(st.lists(st.one_of(st.none(), st.integers(-(2**63), 2**63 - 1)), min_size=1, max_size=30), st.data())
def test_lookup_is_list_indexing_with_null_positions(values: list[int | None], data: st.DataObject) -> None:
    """Every mix of positions, all null and none included, against indexing a Python list."""
    positions = data.draw(st.lists(st.one_of(st.none(), st.integers(0, len(values) - 1)), max_size=40))
    got = lookup(pl.Series(values, dtype=pl.Int64), pl.Series(positions, dtype=pl.Int64))
    assert got.dtype == pl.Int64 and got.to_list() == [None if i is None else values[i] for i in positions]


def test_lookup_keeps_the_type_and_nulls_has_the_length() -> None:
    names = pl.Series(["a", None, "c"], dtype=pl.String)
    assert lookup(names, pl.Series([2, None, 1, 0], dtype=pl.Int64)).to_list() == ["c", None, None, "a"]
    assert lookup(names, pl.Series([None, None], dtype=pl.Int64)).to_list() == [None, None]  # all null: Series indexing alone refuses this
    for n in (0, 1, 7):
        made = nulls(n)
        assert made.dtype == pl.Int64 and made.to_list() == [None] * n


@given(st.lists(st.lists(st.tuples(st.text(max_size=3), st.integers(-(2**63), 2**63 - 1)), max_size=4), max_size=6))
def test_stacked_is_the_rows_in_order_each_keyed_by_its_frame(frames: list[list[tuple[str, int]]]) -> None:
    schema = pl.Schema({"name": pl.String(), "n": pl.Int64()})
    given_frames = [pl.DataFrame(rows, schema=schema, orient="row") for rows in frames]
    out = stacked(given_frames, schema, key="k").collect()
    assert out.columns == ["name", "n", "k"] and out.schema["k"] == pl.Int64
    assert out.rows() == [(name, n, k) for k, rows in enumerate(frames) for name, n in rows]  # the oracle: plain list concatenation
