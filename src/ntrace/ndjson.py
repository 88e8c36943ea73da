"""The fastest decode path: raw event texts (sliced out by msgspec) parsed into columns by Polars' multithreaded NDJSON reader.

msgspec splits the `traceEvents` array into zero-copy `Raw` slices without building any
Python object per field; batches of them are joined with newlines and read by Polars with a
fixed schema, so only the fields ntrace needs are materialized and no per-event Python objects
exist. Every value that feeds an integer key is read as text and parsed by the shared column
builder, so this path yields exactly the columns of the typed and plain decoders. Polars rejects
values it cannot read with the schema (a `ts` given as text, say); the caller then falls back to
the typed decoder. One difference is left: a pid/tid written as a float (which no profiler
does) reads as Polars prints it (`1`), where the plain decoder keeps Python's text (`1.0`).
"""

from __future__ import annotations

import io
from typing import Sequence

import msgspec
import orjson
import polars as pl

#: Events per NDJSON batch: bounds the joined text held at once (about 25 MB at Kineto's ~250 B per event).
BATCH = 100_000

_S = pl.String
_SCHEMA = {
    "ph": _S,
    "cat": _S,
    "name": _S,
    "pid": _S,
    "tid": _S,
    "ts": pl.Float64,
    "dur": pl.Float64,
    "id": _S,
    "bp": _S,
    "args": pl.Struct({"External id": _S, "correlation": _S, "stream": _S, "device": _S, "Sequence number": _S, "Input Dims": _S}),
}

#: Line breaks inside an event become spaces; the NUL joining two events becomes the line break.
_ONE_LINE = bytes.maketrans(b"\n\r\0", b"  \n")

#: The fields that are text in a trace; any other JSON value in them is kept as its JSON text.
_TEXT = ("ph", "cat", "name", "bp")

#: NDJSON field → column name of the raw columns the shared frame builder takes.
_RENAME = {
    "id": "flow_id",
    "bp": "flow_bp",
    "External id": "external_id",
    "Sequence number": "sequence",
    "Input Dims": "input_dims",
}


def raw_columns(raws: Sequence[msgspec.Raw]) -> dict[str, pl.Series] | None:
    """Columns (ph, cat, name, pid, tid, ts, dur, flow_id, flow_bp and the args keys) of the events, or None when Polars cannot read them."""
    parts = []
    for start in range(0, len(raws), BATCH):
        batch = raws[start : start + BATCH]
        # Kineto writes each event over several lines; JSON text holds NUL and raw line breaks
        # only as whitespace between tokens, so one translate makes each event one line.
        text = b"\0".join(batch).translate(_ONE_LINE)
        if not text.startswith(b"{") or text.count(b"\n{") != len(batch) - 1:
            return None  # a non-object element
        try:
            part = pl.read_ndjson(io.BytesIO(text), schema=_SCHEMA)
        except (pl.exceptions.PolarsError, ValueError):
            return None
        del text
        if part.height != len(batch):
            return None
        parts.append(part.unnest("args"))
    if not parts:
        return None
    frame = pl.concat(parts, rechunk=True)
    if not _text_fields_are_strings(frame, raws):
        return None
    frame = frame.rename(_RENAME).with_columns(pl.col("ph").fill_null(""))
    return {name: frame.get_column(name) for name in frame.columns}


def _text_fields_are_strings(frame: pl.DataFrame, raws: Sequence[msgspec.Raw]) -> bool:
    """False when a text field held a JSON array or object, which Polars re-spaces; the plain decoder keeps it exactly.

    Only values that look like one (start with `[` or `{`, as "[param|cuda]" does) are decoded again to tell.
    """
    looks = pl.any_horizontal(pl.col(c).str.starts_with("[") | pl.col(c).str.starts_with("{") for c in _TEXT)
    for i in frame.select(pl.arg_where(looks)).to_series():
        event = orjson.loads(bytes(raws[i]))
        if not all(isinstance(event.get(c), (str, type(None))) for c in _TEXT):
            return False
    return True
