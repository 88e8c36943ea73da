"""The events frame out of decoded columns, with the value rules both decoders share so they give the same frame: µs as int64 ns, linking keys from text, pid/tid as text, shapes as compact JSON text."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

import polars as pl

from ntrace.trace import EVENT_SCHEMA


#: µs values whose ns would overflow int64 (2**63 ns ≈ 9.22e15 µs).
_NS_LIMIT = 9.2e15


def us_to_ns(values: Iterable[Any]) -> tuple[pl.Series, pl.Series]:
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
    """Build the typed events frame from columns as decoded (lists, or the batched decoder's final Series); warn about values that had to be dropped."""
    n = len(cols["ph"])
    for column in ("ts", "dur"):
        if f"{column}_dropped" not in cols:  # µs as decoded (the batched decoder gives ns, and what it dropped)
            cols[column], cols[f"{column}_dropped"] = us_to_ns(cols[column])
        if n_bad := int(cols[f"{column}_dropped"].sum()):
            warnings.append(f"{path}: {n_bad} '{column}' values are not finite or too large for int64 ns; dropped")
    events = pl.DataFrame(
        {
            "idx": pl.int_range(0, n, dtype=pl.Int64, eager=True),
            "ph": pl.Series(cols["ph"], dtype=pl.String),
            "cat": pl.Series(cols["cat"], dtype=pl.String, strict=False),
            "name": pl.Series(cols["name"], dtype=pl.String, strict=False),
            "pid": ids_text(cols["pid"]),
            "tid": ids_text(cols["tid"]),
            "ts": cols["ts"].alias("ts"),
            "dur": cols["dur"].alias("dur"),
            "external_id": _ints(cols["external_id"]),
            "correlation": _ints(cols["correlation"]),
            "flow_id": _ints(cols["flow_id"]),
            "flow_bp": pl.Series(cols["flow_bp"], dtype=pl.String, strict=False),
            "stream": _ints(cols["stream"]),
            "device": _ints(cols["device"]),
            "sequence": _ints(cols["sequence"]),
            "input_dims": shapes_text(cols["input_dims"]),
        }
    )
    events = _clean_complete(events, path, warnings)
    return events.with_columns(end=pl.col("ts") + pl.col("dur")).select(list(EVENT_SCHEMA))


def _clean_complete(frame: pl.DataFrame, path: Path, warnings: list[str]) -> pl.DataFrame:
    """Complete events need a start and a non-negative duration: drop those without a start, clamp the rest, warn."""
    is_x = pl.col("ph") == "X"
    no_ts = frame.select((is_x & pl.col("ts").is_null()).sum()).item()
    if no_ts:
        warnings.append(f"{path}: {no_ts} complete events have no usable ts; they were left out")
        frame = frame.filter(~(is_x & pl.col("ts").is_null()))
    bad_dur = frame.select((is_x & (pl.col("dur").is_null() | (pl.col("dur") < 0))).sum()).item()
    if bad_dur:
        warnings.append(f"{path}: {bad_dur} complete events have a missing, negative or non-finite dur; counted as 0")
    return frame.with_columns(
        dur=pl.when(pl.col("dur").is_null() | (pl.col("dur") < 0)).then(0).otherwise(pl.col("dur"))
    )


def _ints(values: list[Any]) -> pl.Series:
    """A linking key as Int64: integers kept, numeric text parsed, anything else null."""
    s = pl.Series(values, strict=False)
    if s.dtype == pl.Int64:
        return s
    if s.dtype == pl.String:
        return text_ints(s)
    return s.cast(pl.Float64, strict=False).cast(pl.Int64, strict=False)
