"""Decode one Kineto/Chrome trace file into a Polars events frame: int64 ns times, linking keys lifted out of `args`.

Three decoders produce the same frame: typed msgspec decoders that skip every `args` key the
analysis does not read — in batches straight into Polars columns (ntrace.batches, the fast
path), or over the whole file where values need coercing (a `ts` given as text) — and a plain
orjson decoder into dicts (fallback for files whose value types the typed decoders reject).
Column building is shared, so all agree.
"""

from __future__ import annotations

import mmap
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable

import msgspec
import orjson
import polars as pl

from ntrace.errors import TraceFormatError
from ntrace.limits import PLAIN_DECODE_FACTOR, check_fits
from ntrace.batches import typed_columns, window_columns
from ntrace.columns import ids_text, shapes_text, shapes_utf8, text_ints, us_to_ns
from ntrace.progress import report
from ntrace.readfile import map_json, read_json
from ntrace.salvage import keep_first_events, repair_json
from ntrace.sanity import checked_events
from ntrace.windows import Uncut, outline

Num = int | float | str | None

#: Columns of the events frame, in order, with their dtypes: the contract every stage reads.
EVENT_SCHEMA: dict[str, pl.DataType] = {
    "idx": pl.Int64,  # position in the file's event list: a stable identity for each event
    "ph": pl.String,
    "cat": pl.String,
    "name": pl.String,
    "pid": pl.String,
    "tid": pl.String,
    "ts": pl.Int64,  # ns, as written (no rebasing)
    "dur": pl.Int64,  # ns
    "end": pl.Int64,  # ns, ts + dur
    "external_id": pl.Int64,  # args["External id"]: CPU op <-> runtime call
    "correlation": pl.Int64,  # args["correlation"]: runtime call <-> device activity
    "flow_id": pl.Int64,  # "id" of flow events (ph s/f)
    "flow_bp": pl.String,  # "bp" of flow ends ("e": binds to the enclosing slice)
    "stream": pl.Int64,
    "device": pl.Int64,
    "sequence": pl.Int64,  # args["Sequence number"]
    "input_dims": pl.String,  # args["Input Dims"] as compact JSON text, for grouping by shape
}


class _Args(msgspec.Struct):
    """The `args` keys the analysis reads; msgspec skips every other key without building it."""

    external_id: Num = msgspec.field(default=None, name="External id")
    correlation: Num = None
    stream: Num = None
    device: Num = None
    sequence: Num = msgspec.field(default=None, name="Sequence number")
    input_dims: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="Input Dims")


class _Event(msgspec.Struct):
    """One trace event, reduced to the fields ntrace uses."""

    ph: str = ""
    cat: str | None = None
    name: str | None = None
    pid: int | str | None = None
    tid: int | str | None = None
    ts: Num = None
    dur: Num = None
    id: int | str | None = None
    bp: str | None = None
    args: _Args | None = None


class _Doc(msgspec.Struct):
    """The top-level object of a Kineto trace; metadata kept raw and decoded only when asked for."""

    traceEvents: list[_Event] | None = None
    deviceProperties: msgspec.Raw = msgspec.Raw(b"")
    distributedInfo: msgspec.Raw = msgspec.Raw(b"")
    baseTimeNanoseconds: int | None = None
    traceName: str | None = None
    schemaVersion: int | str | None = None


_TYPED = msgspec.json.Decoder(_Doc | list[_Event])


class _RawDoc(_Doc):
    """The top-level object with each event kept as its raw JSON text, for the batched typed decoder."""

    traceEvents: list[msgspec.Raw] | None = None  # type: ignore[assignment]


_RAW = msgspec.json.Decoder(_RawDoc | list[msgspec.Raw])


class _Outline(_Doc):
    """The top-level object with the events array replaced by a marker, to check where the array lies (ntrace.windows)."""

    traceEvents: msgspec.Raw = msgspec.Raw(b"")  # type: ignore[assignment]


_OUTLINE = msgspec.json.Decoder(_Outline | str)


@dataclass
class DecodedTrace:
    """What decoding one trace file yields: the events frame, the file's metadata, and any warnings."""

    path: Path
    events: pl.DataFrame
    meta: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)


def decode_trace(path: str | Path, *, fast: bool = True, max_events: int | None = None) -> DecodedTrace:
    """Decode the trace at `path` into a `DecodedTrace`; `fast=False` forces the plain orjson path.

    `max_events` keeps only the file's first events (as Kineto lays a file out, the rest is never
    decoded). Damaged files are repaired where they can be (see ntrace.salvage), with warnings;
    an error raised after such a warning carries it, so the one-line message says everything.
    """
    path = Path(path)
    warnings: list[str] = []
    try:
        return _decode(path, fast, max_events, warnings)
    except TraceFormatError as exc:
        if not warnings:
            raise
        notes = "; ".join(w.removeprefix(f"{path}: ") for w in warnings)
        raise TraceFormatError(path, f"{exc.problem} (also: {notes})") from None


def _decode(path: Path, fast: bool, max_events: int | None, warnings: list[str]) -> DecodedTrace:
    """decode_trace's work, appending warnings as it goes."""
    if max_events is None:
        raw = map_json(path, warnings) if fast else read_json(path, warnings, factor=PLAIN_DECODE_FACTOR)
        cut = False
    else:
        whole = read_json(path, warnings, factor=2)
        raw = keep_first_events(whole, max_events, path, warnings)
        cut = raw is not whole  # keep_first_events warned, with the file's event count
        del whole
        check_fits(path, len(raw))
    report(f"decoding {path.name}", len(raw), None, "bytes")
    cols, meta = _columns(raw, path, fast, warnings)
    del raw  # the columns hold what is needed: free the JSON text before the frame is built
    if not meta.get("has_traceEvents", True):
        raise TraceFormatError(path, "has no traceEvents array: not a Chrome/Kineto trace")
    n = len(cols["ph"])
    report(f"decoded {path.name}", n, None, "events")
    if max_events is not None and n > max_events:
        if not cut:
            warnings.append(f"{path}: --max-events {max_events}: analyzed the first {max_events:,} of {n:,} events")
        cols = {k: v[:max_events] for k, v in cols.items()}
    if n == 0:
        warnings.append(f"{path}: holds no trace events; nothing to analyze")
    return DecodedTrace(path, checked_events(_frame(cols, path, warnings), path, warnings), meta, warnings)


def _columns(raw: bytes | mmap.mmap, path: Path, fast: bool, warnings: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Columns and metadata through the fastest decoder that accepts `raw`; damaged text is repaired (ntrace.salvage) once."""
    if fast:
        cols, meta = _batch_columns(raw, f"decoding {path.name}")
        if cols is None:
            raw = bytes(raw)  # a memory map: the coercing decoders and the repairs take bytes
            try:
                cols, meta = _typed_columns(_TYPED.decode(raw))
            except msgspec.ValidationError:
                pass  # a value of an unexpected type: the plain path coerces it per value
            except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
                return _repaired_columns(raw, path, fast, warnings)
        if cols is not None:
            if shapes_utf8(cols["input_dims"]):
                return cols, meta
            # msgspec keeps shapes as raw bytes without checking them: bytes that are not UTF-8 are repaired as anywhere else
            return _repaired_columns(bytes(raw), path, fast, warnings)
    try:
        plain = orjson.loads(raw)
    except orjson.JSONDecodeError:
        return _repaired_columns(raw, path, fast, warnings)
    return _plain_columns(plain, path, warnings)


def _repaired_columns(raw: bytes, path: Path, fast: bool, warnings: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Columns of JSON the decoders rejected: repaired text is decoded again, a document that only Python's json reads is used as is."""
    fixed = repair_json(raw, path, warnings)
    if isinstance(fixed, bytes):
        return _columns(fixed, path, fast, warnings)  # terminates: repair_json returns text only when it changed it
    return _plain_columns(fixed, path, warnings)


def _batch_columns(raw: bytes | mmap.mmap, stage: str) -> tuple[dict[str, pl.Series] | None, dict[str, Any]]:
    """Columns through the batched typed decoder (ntrace.batches), or (None, {}) when the file needs a coercing decoder.

    The events array is decoded a window at a time where it can be cut into windows (ntrace.windows),
    else split into raw events first.
    """
    try:
        found = outline(raw, _OUTLINE)
        cols = window_columns(raw, found, stage)
        return (cols, _meta(found.doc or [])) if cols is not None else (None, {})
    except Uncut:
        pass
    try:
        listed = _RAW.decode(raw)
    except (msgspec.ValidationError, msgspec.DecodeError, UnicodeDecodeError, RecursionError):
        return None, {}  # the typed and plain decoders coerce, repair or report it
    cols = typed_columns(listed if isinstance(listed, list) else listed.traceEvents or [], raw, stage)
    return (cols, _meta(listed)) if cols is not None else (None, {})


def _typed_columns(doc: _Doc | list[_Event]) -> tuple[dict[str, list], dict[str, Any]]:
    """Columns and metadata out of the typed decoder's structs."""
    evs = doc if isinstance(doc, list) else doc.traceEvents or []
    meta = _meta(doc)
    none = _Args()
    args = [e.args or none for e in evs]
    cols = {
        "ph": [e.ph for e in evs],
        "cat": [e.cat for e in evs],
        "name": [e.name for e in evs],
        "pid": [e.pid for e in evs],
        "tid": [e.tid for e in evs],
        "ts": [e.ts for e in evs],
        "dur": [e.dur for e in evs],
        "flow_id": [e.id for e in evs],
        "flow_bp": [e.bp for e in evs],
        "external_id": [a.external_id for a in args],
        "correlation": [a.correlation for a in args],
        "stream": [a.stream for a in args],
        "device": [a.device for a in args],
        "sequence": [a.sequence for a in args],
        "input_dims": [bytes(a.input_dims) or None for a in args],
    }
    return cols, meta


def _meta(doc: _Doc | list) -> dict[str, Any]:
    """The file's metadata (empty for a bare event array), the large values decoded only now."""
    if isinstance(doc, list):
        return {}
    return {
        "deviceProperties": _raw_json(doc.deviceProperties),
        "distributedInfo": _raw_json(doc.distributedInfo),
        "baseTimeNanoseconds": doc.baseTimeNanoseconds,
        "traceName": doc.traceName,
        "schemaVersion": doc.schemaVersion,
        "has_traceEvents": doc.traceEvents is not None,
    }


_ARG_KEYS = {
    "external_id": "External id",
    "correlation": "correlation",
    "stream": "stream",
    "device": "device",
    "sequence": "Sequence number",
}


def _plain_columns(doc: Any, path: Path, warnings: list[str]) -> tuple[dict[str, list], dict[str, Any]]:
    """Columns and metadata out of orjson's dicts, coercing odd value types instead of failing."""
    if isinstance(doc, list):
        evs, meta = doc, {}
    elif isinstance(doc, dict):
        evs = doc.get("traceEvents")
        meta = {k: doc.get(k) for k in ("deviceProperties", "distributedInfo", "baseTimeNanoseconds", "traceName", "schemaVersion")}
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
    cols: dict[str, list] = {
        "ph": [_text(e.get("ph")) or "" for e in evs],
        "cat": [_text(e.get("cat")) for e in evs],
        "name": [_text(e.get("name")) for e in evs],
        "pid": [_scalar(e.get("pid")) for e in evs],
        "tid": [_scalar(e.get("tid")) for e in evs],
        "ts": [_scalar(e.get("ts")) for e in evs],
        "dur": [_scalar(e.get("dur")) for e in evs],
        "flow_id": [_scalar(e.get("id")) for e in evs],
        "flow_bp": [_text(e.get("bp")) for e in evs],
        "input_dims": [orjson.dumps(a["Input Dims"]) if "Input Dims" in a else None for a in args],
    }
    for col, key in _ARG_KEYS.items():
        cols[col] = [_scalar(a.get(key)) for a in args]
    return cols, meta


def _text(value: Any) -> str | None:
    """A string field as text; other JSON values as their JSON text, so nothing is lost."""
    if value is None or isinstance(value, str):
        return value
    return orjson.dumps(value).decode()


def _scalar(value: Any) -> Num:
    """A numeric-ish field: numbers and strings kept, anything else (lists, objects, bools) dropped."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    return value


def _raw_json(raw: msgspec.Raw) -> Any:
    """Decode a lazily kept metadata value, or None when it was absent.

    The fast decoders skip these values without checking their UTF-8, so bytes that are not
    UTF-8 are replaced by U+FFFD here rather than failing.
    """
    if not len(raw):
        return None
    try:
        return orjson.loads(bytes(raw))
    except orjson.JSONDecodeError:
        return orjson.loads(bytes(raw).decode(errors="replace"))


def _frame(cols: dict[str, Any], path: Path, warnings: list[str]) -> pl.DataFrame:
    """Build the typed events frame from columns as decoded (lists, or the batched decoder's final Series); warn about values that had to be dropped."""
    n = len(cols["ph"])
    for column in ("ts", "dur"):
        if f"{column}_dropped" not in cols:  # µs as decoded (the batched decoder gives ns, and what it dropped)
            cols[column], cols[f"{column}_dropped"] = us_to_ns(cols[column])
        if n_bad := int(cols[f"{column}_dropped"].sum()):
            warnings.append(f"{path}: {n_bad} '{column}' values are not finite or too large for int64 ns; dropped")
    frame = pl.DataFrame(
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
    frame = _clean_complete(frame, path, warnings)
    return frame.with_columns(end=pl.col("ts") + pl.col("dur")).select(list(EVENT_SCHEMA))


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


def _ints(values: list) -> pl.Series:
    """A linking key as Int64: integers kept, numeric text parsed, anything else null."""
    s = pl.Series(values, strict=False)
    if s.dtype == pl.Int64:
        return s
    if s.dtype == pl.String:
        return text_ints(s)
    return s.cast(pl.Float64, strict=False).cast(pl.Int64, strict=False)
