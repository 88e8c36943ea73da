"""The fast decode path: the `traceEvents` array parsed natively (_columnar) where it can be, else decoded a window at a time by a typed msgspec decoder, each window straight into Polars columns.

The windows are cut at element boundaries (_windows); a large array's second half is decoded by
a forked helper meanwhile (_fork). Each window is decoded with `_Event`, a struct of only the
fields ntrace reads (every other `args` key is skipped without building it; no struct is
tracked by the garbage collector), turned into typed Polars columns and dropped before the next
window, so at most one window of Python objects exists at a time; every GROUP windows are
joined into one chunk in final form. When the JSON text is a memory map, its pages are released
as windows are decoded (they are read again from the page cache when touched), so the text
never counts in full twice.

Value types a profiler does not write (a `ts` given as text, a float pid, a JSON array as a
name) fail the typed decode: `columns` then returns None and the caller falls back to the plain
decoder (_plain), which coerces per value and yields the same columns.
"""

from __future__ import annotations

import json
import time
from dataclasses import replace
from operator import attrgetter
from typing import TYPE_CHECKING, Any

import msgspec
import orjson
import polars as pl

from ntrace.io.kineto import _columnar, _fork
from ntrace.io.kineto._frame import ids_text, json_safe, key_ints, shapes_text, text_ns
from ntrace.io.kineto._keys import MEMORY_KEYS
from ntrace.io.kineto._windows import DOCUMENT, Document, Outline, Uncut, outline, release, windows
from ntrace.io.progress import report

if TYPE_CHECKING:
    from ntrace.io.kineto._ahead import Parsed

#: Windows joined into one chunk of each column: 330k events in 12 chunks (190 unjoined windows made the analysis slower).
GROUP = 16

Key = int | str | None
Columns = dict[str, pl.Series]


class _Args(msgspec.Struct, gc=False):
    """The `args` keys the analysis reads."""

    external_id: Key = msgspec.field(default=None, name="External id")
    correlation: Key = None
    stream: Key = None
    device: Key = None
    sequence: Key = msgspec.field(default=None, name="Sequence number")
    bytes: Key = None
    model_name: str | None = None
    mem_bytes: Key = msgspec.field(default=None, name="Bytes")
    mem_allocated: Key = msgspec.field(default=None, name="Total Allocated")
    mem_reserved: Key = msgspec.field(default=None, name="Total Reserved")
    mem_addr: Key = msgspec.field(default=None, name="Addr")
    mem_device_type: Key = msgspec.field(default=None, name="Device Type")
    mem_device_id: Key = msgspec.field(default=None, name="Device Id")
    input_dims: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="Input Dims")


class _Event(msgspec.Struct, gc=False):
    """One trace event with the value types profilers write: numbers for times, integers or names for ids."""

    ph: str = ""
    cat: str | None = None
    name: str | None = None
    pid: Key = None
    tid: Key = None
    ts: msgspec.Raw = msgspec.Raw(b"")  # the number's text: read into ns exactly (_frame.text_ns), never through a float
    dur: msgspec.Raw = msgspec.Raw(b"")
    id: Key = None
    bp: str | None = None
    args: _Args | None = None


_BATCH = msgspec.json.Decoder(list[_Event])
_NO_ARGS = _Args()

_TEXT = ("ph", "cat", "name", "bp")
_IDS = ("pid", "tid")
_TIMES = ("ts", "dur")
#: The linking keys and memory record fields in `args`: integers (or numeric text).
_KEYS = ("external_id", "correlation", "stream", "device", "sequence", "bytes", *MEMORY_KEYS)


def columns(text: Any, stage: str = "decoding", ahead: Parsed | None = None) -> tuple[Columns, dict[str, Any]] | None:
    """Columns of the trace's events and its metadata, or None when a value has a type the typed decoder rejects; `ahead`, a read-ahead of `text` (_ahead), gives the parsed events and outline.

    Raises _windows.Uncut when the events array cannot be found or cut into windows.
    """
    if ahead is not None:
        return _columnar.joined(ahead.parts), meta(ahead.found.doc)
    found = outline(text, DOCUMENT)
    release(text)  # the pages the outline read
    cols = _columnar.columns(text, found, stage)
    if cols is None:
        cols = _window_columns(text, found, stage)
    else:
        report(stage, found.end - found.start, found.end - found.start, "bytes")
    return None if cols is None else (cols, meta(found.doc))


def meta(doc: Document | None) -> dict[str, Any]:
    """The file's metadata (empty for a bare event array), the large values decoded only now."""
    if doc is None:
        return {}
    return {
        "deviceProperties": _raw_json(doc.deviceProperties),
        "distributedInfo": _raw_json(doc.distributedInfo),
        "baseTimeNanoseconds": doc.baseTimeNanoseconds,
        "traceName": doc.traceName,
        "schemaVersion": doc.schemaVersion,
        "has_traceEvents": True,
    }


def _raw_json(raw: msgspec.Raw) -> Any:
    """Decode a lazily kept metadata value, or None when it was absent; bytes that are not UTF-8 (never checked when skipped) become U+FFFD.

    Numbers orjson refuses (beyond int64, or a float that overflows to infinity) are read by
    Python's json and kept as json_safe makes them (big integers as text, non-finite as null).
    """
    if not len(raw):
        return None
    text = bytes(raw).decode(errors="replace")
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json_safe(json.loads(text, parse_constant=lambda _: None))


def _window_columns(text: Any, found: Outline, stage: str) -> Columns | None:
    """Columns of the events in `found`'s array, decoded a window at a time, or None when a value has a type the typed decoder rejects (or a shape is not UTF-8).

    A large array's second half is decoded by a forked helper meanwhile (_fork). A memory map
    has the pages of each window released once it is decoded. Progress is reported per window.
    """
    mine, helper = _fork.split(text, found, lambda part: _part_columns(text, part))
    if helper is None:
        return _part_columns(text, found, stage)
    try:
        began = time.monotonic()
        try:
            first = _part_columns(text, mine, stage, found)
        except Uncut:  # the helper's start was no element boundary: decode everything here
            helper.close()
            return _part_columns(text, found, stage)
        if first is None:
            return None
        rest = helper.columns(patience=max(1.0, 2 * (time.monotonic() - began)))
        if rest is None:  # the helper failed or hangs: its part is decoded here (raising what it met)
            helper.close()
            rest = _part_columns(text, replace(found, start=helper.start), stage, found)
        return None if rest is None else {name: pl.concat([first[name], rest[name]], rechunk=False) for name in first}
    finally:
        helper.close()


def _part_columns(text: Any, part: Outline, stage: str | None = None, whole: Outline | None = None) -> Columns | None:
    """_window_columns for the events from `part.start` to `part.end` (which must be element boundaries), reporting progress through `whole` when a stage is given."""
    whole = whole or part
    chunks = _Chunks()
    done = part.start
    try:
        for events, reached in windows(text, part, _BATCH.decode):
            chunks.add(events)
            del events
            release(text, done, reached)
            done = reached
            if stage:
                report(stage, reached - whole.start, whole.end - whole.start, "bytes")
        if not chunks.groups and not chunks.batches:  # `[]`: no window to decode
            chunks.add([])
        return chunks.columns()
    except (msgspec.ValidationError, UnicodeDecodeError, RecursionError, pl.exceptions.ComputeError):  # ComputeError: a shape not UTF-8
        return None


class _Chunks:
    """The columns of the batches decoded so far, every GROUP batches joined into one chunk in final form: times in ns (and what was dropped), pid/tid and shapes as text.

    Joining as decoding goes keeps the chunks few (later steps are slower on many), and the
    small buffers it frees are reused by the next batches; converting a group at a time, no
    whole column is converted (and held twice) at the end.
    """

    def __init__(self) -> None:
        self.batches: dict[str, list[pl.Series]] = {}  # not yet joined
        self.groups: dict[str, list[pl.Series]] = {}
        self.text_ids: set[str] = set()  # pid/tid columns that held a name in an earlier batch: built as text at once

    def add(self, events: list[_Event]) -> None:
        """Append one batch of events."""
        for name, column in _event_columns(events, self.text_ids).items():
            self.batches.setdefault(name, []).append(column)
        if len(self.batches["ph"]) == GROUP:
            self._join()

    def columns(self) -> dict[str, pl.Series]:
        """Every column as one Series of its chunks (not copied into one buffer: that would hold the frame twice)."""
        if self.batches:
            self._join()
        return {name: pl.concat(parts, rechunk=False) for name, parts in self.groups.items()}

    def _join(self) -> None:
        """The pending batches of every column as one final chunk."""
        group = {name: pl.concat(_one_type(parts), rechunk=True) for name, parts in self.batches.items()}
        self.batches = {}
        for name in _IDS:
            group[name] = ids_text(group[name])
        for name in _TIMES:
            group[name], group[f"{name}_dropped"] = text_ns(group[name])
        group["input_dims"] = shapes_text(group["input_dims"])
        for name, column in group.items():
            self.groups.setdefault(name, []).append(column)


def _one_type(parts: list[pl.Series]) -> list[pl.Series]:
    """Chunks of one column, as text where their types differ (pid/tid: integers in some batches, names in others)."""
    return [ids_text(p) for p in parts] if len({p.dtype for p in parts}) > 1 else parts


def _event_columns(events: list[_Event], text_ids: set[str]) -> dict[str, pl.Series]:
    """One batch of events as typed columns: text, pid/tid as Int64 or text, times as their JSON text (raw bytes), keys as Int64, shapes as raw JSON bytes (empty where absent).

    pid/tid named in `text_ids` are built as text directly; one found to hold a name is added to it.
    """
    args = [e.args or _NO_ARGS for e in events]
    cols: dict[str, pl.Series] = {}
    for name in _TEXT:
        column = "flow_bp" if name == "bp" else name
        cols[column] = pl.Series(column, list(map(attrgetter(name), events)), dtype=pl.String)
    for name in _IDS:
        cols[name] = _ids(name, list(map(attrgetter(name), events)), name in text_ids)
        if cols[name].dtype == pl.String:
            text_ids.add(name)
    for name in _TIMES:
        cols[name] = pl.Series(name, list(map(bytes, map(attrgetter(name), events))), dtype=pl.Binary)  # b"" where absent
    cols["flow_id"] = _int_keys("flow_id", list(map(attrgetter("id"), events)))
    for name in _KEYS:
        cols[name] = _int_keys(name, list(map(attrgetter(name), args)))
    cols["input_dims"] = pl.Series("input_dims", list(map(bytes, map(attrgetter("input_dims"), args))), dtype=pl.Binary)  # b"" where absent
    cols["model"] = pl.Series("model", list(map(attrgetter("model_name"), args)), dtype=pl.String)
    return cols


def _ids(name: str, values: list[Any], as_text: bool = False) -> pl.Series:
    """pid/tid as Int64 when all are integers (made text once, for all batches, by decode), else as text: integers printed by Polars, names kept.

    `as_text` (an earlier batch held names) skips the Int64 attempt, which would fail again on most
    traces (GPU ones name their tracks); the text is the same either way.
    """
    if not as_text:
        try:
            return pl.Series(name, values, dtype=pl.Int64)
        except (TypeError, OverflowError):
            pass
    return pl.Series(name, values, dtype=pl.String, strict=False)


def _int_keys(name: str, values: list[Any]) -> pl.Series:
    """A linking key as Int64 (key_ints)."""
    return key_ints(values).alias(name)
