"""The tolerant fallback: a trace decoded into Python objects, every value coerced one by one (numbers given as text, odd types) instead of failing.

It gives the columns the fast path gives (_frame builds the same frame from either), at the cost
of a Python object per value: used only when the fast path cannot read a file. Floats keep their
digits (NumText): times are read from them exactly, as in the fast path.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import msgspec
import orjson

from ntrace.errors import TraceFormatError
from ntrace.io.kineto._frame import json_safe
from ntrace.io.kineto._keys import MEMORY_KEYS

Num = int | float | str | None


class NumText(str):
    """A JSON float as the digits it was written with (so no binary float ever stands between the text and its ns)."""


_DECODER: msgspec.json.Decoder[Any] = msgspec.json.Decoder(float_hook=NumText)
_JSON = msgspec.json.Encoder()


def decode(raw: Any) -> Any:
    """The JSON document as Python objects, floats as NumText; msgspec.DecodeError on text that is no JSON."""
    return _DECODER.decode(raw)

_ARG_KEYS = {
    "external_id": "External id",
    "correlation": "correlation",
    "stream": "stream",
    "device": "device",
    "sequence": "Sequence number",
    "bytes": "bytes",
    **MEMORY_KEYS,
}


def columns(doc: Any, path: Path, warnings: list[str]) -> tuple[dict[str, list[Any]], dict[str, Any]]:
    """Columns and metadata out of orjson's dicts, coercing odd value types instead of failing."""
    evs: Any
    meta: dict[str, Any]
    if isinstance(doc, list):
        evs, meta = doc, {}
    elif isinstance(doc, dict):
        evs = doc.get("traceEvents")
        meta = {k: json_safe(_floats(doc.get(k))) for k in ("deviceProperties", "distributedInfo", "baseTimeNanoseconds", "traceName", "schemaVersion")}
        meta["has_traceEvents"] = isinstance(evs, list)
        if not isinstance(evs, list):
            evs = []
    else:
        raise TraceFormatError(path, f"top level is a JSON {type(doc).__name__}, expected an object with traceEvents or an array")
    listed = len(evs)
    evs = [e for e in evs if isinstance(e, dict)]
    if len(evs) < listed:
        warnings.append(f"{path}: {listed - len(evs)} entries of traceEvents are not JSON objects; they were left out")
    args = [a if isinstance(a := e.get("args"), dict) else {} for e in evs]
    cols: dict[str, list[Any]] = {
        "ph": [_text(e.get("ph")) or "" for e in evs],
        "cat": [_text(e.get("cat")) for e in evs],
        "name": [_text(e.get("name")) for e in evs],
        "pid": [_scalar(e.get("pid")) for e in evs],
        "tid": [_scalar(e.get("tid")) for e in evs],
        "ts": [_number_text(e.get("ts")) for e in evs],
        "dur": [_number_text(e.get("dur")) for e in evs],
        "flow_id": [_scalar(e.get("id")) for e in evs],
        "flow_bp": [_text(e.get("bp")) for e in evs],
        "input_dims": [orjson.dumps(json_safe(_floats(a["Input Dims"]))) if "Input Dims" in a else None for a in args],
        "model": [_text(a.get("model_name")) for a in args],
    }
    for col, key in _ARG_KEYS.items():
        cols[col] = [_scalar(a.get(key)) for a in args]
    return cols, meta


def _text(value: Any) -> str | None:
    """A string field as text; other JSON values as their JSON text, so nothing is lost."""
    if value is None or isinstance(value, str):
        return value
    return orjson.dumps(json_safe(value)).decode()


def _scalar(value: Any) -> Num:
    """A numeric-ish field: numbers and strings kept, anything else (lists, objects, bools) dropped."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    return value


def _number_text(value: Any) -> str | None:
    """A time field as the JSON text it was written as (what _frame.text_ns reads): a number's digits, a string quoted, anything else its JSON."""
    if value is None or isinstance(value, NumText):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    if isinstance(value, float):  # NaN or Infinity, which only Python's json reads (_salvage): no usable number
        return repr(value)
    return _JSON.encode(value).decode()


def _floats(value: Any) -> Any:
    """`value` with every NumText inside it as a float again, for the values that are not times (metadata, shapes), as the fast path decodes them."""
    if isinstance(value, NumText):
        return float(value)
    if isinstance(value, list):
        return [_floats(v) for v in value]
    if isinstance(value, dict):
        return {k: _floats(v) for k, v in value.items()}
    return value
