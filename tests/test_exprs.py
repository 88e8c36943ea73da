"""ntrace.exprs.fmt gives what pl.format gives: text of every type, nulls, several placeholders."""

from __future__ import annotations

import polars as pl
import pytest

from ntrace.exprs import fmt


def test_fmt_equals_polars_format() -> None:
    frame = pl.DataFrame({"a": ["x", None, "z"], "n": [1, 2, None], "f": [True, False, True]})
    for template, args in (("device {}", ("a",)), ("{}:{} end", ("a", "n")), ("{}{}{}", ("n", "a", "f"))):
        assert frame.select(got=fmt(template, *args))["got"].to_list() == frame.select(want=pl.format(template, *args))["want"].to_list()


def test_fmt_counts_its_placeholders() -> None:
    with pytest.raises(ValueError):
        fmt("{} and {}", "a")
