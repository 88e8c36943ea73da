"""Value rules every decoder shares, so the fast, coercing and plain paths give the same columns: µs as int64 ns, linking keys from text, pid/tid as text, shapes as compact JSON text."""

from __future__ import annotations

from typing import Iterable

import polars as pl


#: µs values whose ns would overflow int64 (2**63 ns ≈ 9.22e15 µs).
_NS_LIMIT = 9.2e15


def us_to_ns(values: Iterable) -> tuple[pl.Series, pl.Series]:
    """Microsecond values (int, float or numeric text) as int64 ns, exact to the ns for floats below 2**53 µs, and which values were dropped (not finite, or too large).

    The whole part is converted exactly and only the fraction goes through float rounding, so
    absolute epoch timestamps (≈1.7e15 µs) keep every integer microsecond.
    """
    s = pl.Series(values, dtype=pl.Float64, strict=False)
    dropped = s.is_not_null() & (~s.is_finite() | (s.abs() >= _NS_LIMIT))
    if dropped.any():
        s = pl.select(pl.when(dropped).then(None).otherwise(s)).to_series()
    whole = s.floor()
    return whole.cast(pl.Int64) * 1000 + ((s - whole) * 1000).round().cast(pl.Int64), dropped


def text_ints(s: pl.Series) -> pl.Series:
    """Linking keys given as text, as Int64: numeric text parsed (spaces around ignored), anything else null."""
    return s.str.strip_chars().cast(pl.Float64, strict=False).cast(pl.Int64, strict=False)


def ids_text(values: Iterable) -> pl.Series:
    """pid/tid as text: Kineto writes numbers for real ids (printed as Python prints them) and strings for pseudo-tracks ("Spans")."""
    return pl.Series(values, dtype=pl.String, strict=False)


def shapes_text(values: Iterable) -> pl.Series:
    """Shapes (raw JSON bytes, empty or None where absent) as compact JSON text; text is taken as already compact (this function's own output).

    Shapes are lists of ints: the writer's spacing is dropped so every decoder gives the same
    text, once per distinct value (a trace holds a few dozen) rather than per event.
    """
    if isinstance(values, pl.Series) and values.dtype == pl.String:
        return values
    text = pl.Series(values, dtype=pl.Binary, strict=False).cast(pl.String, strict=False)
    distinct = text.unique()
    compact = distinct.str.replace_all(r"\s", "")
    return text.replace_strict(distinct, pl.select(pl.when(compact != "").then(compact)).to_series(), return_dtype=pl.String)


def shapes_utf8(values: Iterable) -> bool:
    """Whether every shape (raw JSON bytes, as the fast decoders keep them without checking) is UTF-8; text (shapes_text's output) is."""
    if isinstance(values, pl.Series) and values.dtype == pl.String:
        return True
    distinct = pl.Series(values, dtype=pl.Binary, strict=False).unique().drop_nulls().to_list()
    try:
        b"\n".join(distinct).decode()  # a newline between values: no two halves of a character can join across it
    except UnicodeDecodeError:
        return False
    return True
