"""The events frame out of decoded columns, with the value rules both decoders share so they give the same frame: µs as int64 ns, linking keys from text, pid/tid as text, shapes as compact JSON text."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any, Iterable

import polars as pl

from ntrace.io.kineto._keys import MEMORY_KEYS
from ntrace.trace import CATEGORY_COLUMNS, EVENT_SCHEMA, end_fits


#: A JSON number as the grammar writes it: what a string holding a number must match to be read as one.
_JSON_NUMBER = r"^-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][+-]?[0-9]+)?$"
#: µs as a decimal with three places: its physical integer is the value in ns, exact.
_US = pl.Decimal(38, 3)


def json_safe(value: Any) -> Any:
    """A decoded JSON value with what no later step can hold replaced: integers beyond int64 as their digits (text), non-finite floats as null; lists and objects walked."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, int):
        return value if -(2**63) <= value < 2**63 else str(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, list):
        return [json_safe(v) for v in value]
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    return value


def text_ns(values: Iterable[Any]) -> tuple[pl.Series, pl.Series]:
    """µs given as the JSON text of each value (a number, or a string holding one; empty or null where absent) as exact int64 ns; and which were given but are no usable number.

    The decimal digits are read as they are written, never through a binary float: `1712195495505582.988`
    is 1712195495505582988 ns. Digits past the third decimal round half to even. A value that is
    not a JSON number (or a string holding one), or whose ns do not fit int64, is dropped.
    """
    raw = pl.Series(values)
    text = raw.cast(pl.String) if raw.dtype == pl.Binary else raw.cast(pl.String, strict=False)
    t, quoted, inner = pl.col("t"), pl.col("quoted"), pl.col("inner")
    parts = (
        pl.LazyFrame({"t": text})
        .with_columns(quoted=t.str.starts_with('"').fill_null(False))
        .with_columns(given=t.is_not_null() & (t != "") & (t != "null"), inner=pl.when(quoted).then(t.str.slice(1, t.str.len_bytes() - 2)).otherwise(t))
        .with_columns(escaped=quoted & inner.str.contains("\\", literal=True).fill_null(False))
        .collect(engine="in-memory")
    )
    if (escaped := parts["escaped"]).any():  # a string written with escapes: decoded as JSON (rare)
        parts = parts.with_columns(parts["inner"].scatter(escaped.arg_true(), [_decoded(v) for v in text.filter(escaped).to_list()]))
    usable = pl.col("given") & (~quoted | inner.str.contains(_JSON_NUMBER).fill_null(False))
    ns = pl.when(usable).then(inner.cast(_US, strict=False).to_physical().cast(pl.Int64, strict=False)).cast(pl.Int64)
    out = parts.lazy().select(ns=ns, given="given").select("ns", dropped=pl.col("given") & pl.col("ns").is_null()).collect(engine="in-memory")
    return out["ns"], out["dropped"]


def _decoded(text: str) -> str | None:
    """A JSON string literal's value, or None when it is no valid JSON string."""
    import msgspec

    try:
        value = msgspec.json.decode(text)
    except msgspec.DecodeError:
        return None
    return value if isinstance(value, str) else None


def key_ints(values: list[Any]) -> pl.Series:
    """Linking keys as Int64, each by its own type: integers int64 holds kept exactly, text parsed (text_ints), floats truncated, anything else null.

    Each value is read alone, so an integer beside a text in one batch is not read through a float.
    """
    try:
        return pl.Series(values, dtype=pl.Int64)
    except (TypeError, OverflowError):
        pass
    ints = pl.Series([v if type(v) is int and -(2**63) <= v < 2**63 else None for v in values], dtype=pl.Int64)
    texts = text_ints(pl.Series([v if isinstance(v, str) else None for v in values], dtype=pl.String))
    floats = pl.Series([v if isinstance(v, float) else None for v in values], dtype=pl.Float64).cast(pl.Int64, strict=False)
    return ints.fill_null(texts).fill_null(floats)


def text_ints(s: pl.Series) -> pl.Series:
    """Linking keys given as text, as Int64: integer digits read exactly (null past int64), other numeric text through a float (truncated), spaces around ignored, anything else null."""
    text = pl.col("t").str.strip_chars()
    exact = text.str.contains(r"^[+-]?[0-9]+$").fill_null(False)
    number = pl.when(exact).then(text.cast(pl.Int64, strict=False)).otherwise(text.cast(pl.Float64, strict=False).cast(pl.Int64, strict=False))
    return pl.DataFrame({"t": s}).select(number.alias(s.name)).to_series()


def ids_text(values: Iterable[Any]) -> pl.Series:
    """pid/tid as text: Kineto writes numbers for real ids (printed as Python prints them) and strings for pseudo-tracks ("Spans")."""
    return pl.Series(values, dtype=pl.String, strict=False)


def shapes_text(values: Iterable[Any]) -> pl.Series:
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


def shapes_utf8(values: Iterable[Any]) -> bool:
    """Whether every shape (raw JSON bytes, as the fast decoders keep them without checking) is UTF-8; text (shapes_text's output) is."""
    if isinstance(values, pl.Series) and values.dtype == pl.String:
        return True
    distinct = pl.Series(values, dtype=pl.Binary, strict=False).unique().drop_nulls().to_list()
    try:
        b"\n".join(distinct).decode()  # a newline between values: no two halves of a character can join across it
    except UnicodeDecodeError:
        return False
    return True


def frame(cols: dict[str, Any], path: Path, warnings: list[str]) -> pl.DataFrame:
    """Build the typed events frame from columns as decoded (lists, or the batched decoder's final Series), as a Trace holds it (trace.compact); warn about values that had to be dropped.

    `cols` is emptied as its columns are taken: a text column is freed as soon as its categorical
    is made, not when the caller's last reference goes, so no column is held twice at the peak.
    """
    n = len(cols["ph"])
    for column in ("ts", "dur"):
        if f"{column}_dropped" not in cols:  # the values' JSON text as decoded (the fast path gives ns, and what it dropped)
            cols[column], cols[f"{column}_dropped"] = text_ns(cols[column])
        if n_bad := int(cols.pop(f"{column}_dropped").sum()):
            warnings.append(f"{path}: {n_bad} '{column}' values are not numbers or do not fit in int64 ns; dropped")
    taken = {name: _typed(name, cols.pop(name)) for name in EVENT_SCHEMA if name not in ("idx", "end")}
    # as trace.compact leaves it, without its query: a column of nulls only is one constant null (a new Series counts its nulls as it is made)
    empty = [pl.lit(None, column.dtype).alias(name) for name, column in taken.items() if n and column.null_count() == n]
    events = pl.DataFrame({"idx": pl.int_range(0, n, dtype=pl.Int64, eager=True), **taken}).with_columns(empty)
    del taken
    return _clean_complete(events, path, warnings)


def _typed(name: str, values: Any) -> pl.Series:
    """One decoded column in its frame type: times as given (ns), pid/tid and the other texts as text (CATEGORY_COLUMNS as categoricals), shapes compact, linking keys as Int64."""
    column: pl.Series
    if name in ("ts", "dur"):
        column = values
    elif name in ("pid", "tid"):
        column = ids_text(values)
    elif name == "input_dims":
        column = shapes_text(values)
    elif EVENT_SCHEMA[name] == pl.String:
        column = pl.Series(values, dtype=pl.String, strict=name != "ph")
    else:
        column = _ints(values)
    return (column.cast(pl.Categorical) if name in CATEGORY_COLUMNS else column).alias(name)


def _clean_complete(frame: pl.DataFrame, path: Path, warnings: list[str]) -> pl.DataFrame:
    """The frame with `end` (ts + dur), in EVENT_SCHEMA's order: complete events need a start, a non-negative duration and an end int64 holds, so those without a start or whose end does not fit are dropped, the rest clamped, with warnings (one query counts all three)."""
    is_x, ts = pl.col("ph") == "X", pl.col("ts")
    dur = pl.when(pl.col("dur").is_null() | (pl.col("dur") < 0)).then(0).otherwise(pl.col("dur"))  # a missing or negative duration counts as 0, on every event
    fits = end_fits(dur)  # of the clamped duration
    no_ts, bad_dur, past = frame.select(
        no_ts=(is_x & ts.is_null()).sum(), bad_dur=(is_x & ts.is_not_null() & (pl.col("dur").is_null() | (pl.col("dur") < 0))).sum(), past=(is_x & ~fits).sum()
    ).row(0)
    if no_ts:
        warnings.append(f"{path}: {no_ts} complete events have no usable ts; they were left out")
    if bad_dur:
        warnings.append(f"{path}: {bad_dur} complete events have a missing, negative or non-finite dur; counted as 0")
    if past:
        warnings.append(f"{path}: {past} complete events end (ts + dur) beyond what int64 ns hold; they were left out")
    timed = frame.lazy().filter(~(is_x & (ts.is_null() | ~fits))) if no_ts or past else frame.lazy()
    return timed.with_columns(dur=dur).select(*((pl.col("ts") + pl.col("dur")).alias("end") if c == "end" else pl.col(c) for c in EVENT_SCHEMA)).collect(engine="in-memory")


def _ints(values: list[Any] | pl.Series) -> pl.Series:
    """A linking key as Int64 (key_ints), or the column as the fast path built it."""
    return values if isinstance(values, pl.Series) and values.dtype == pl.Int64 else key_ints(list(values))
