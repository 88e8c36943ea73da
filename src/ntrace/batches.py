"""The fast decode path: trace events decoded by a typed msgspec decoder in batches, each batch straight into Polars columns.

The batches are the windows of the `traceEvents` array (ntrace.windows, `window_columns`) or,
where the array cannot be cut so, groups of its elements split first into zero-copy `Raw`
slices (`typed_columns`). Each batch is decoded with `_Event`, a struct of only the fields
ntrace reads (every other `args` key is skipped without building it; no struct is tracked by
the garbage collector), turned into typed Polars columns and dropped before the next batch, so
at most one batch of Python objects exists at a time; every GROUP batches are joined into one
chunk in final form. When the JSON text is a memory map, its pages are released as batches are
decoded (they are read again from the page cache when touched), so the text never counts in
full twice.

Value types a profiler does not write (a `ts` given as text, a float pid, a JSON array as a
name) fail the typed decode; the caller then falls back to the decoders that coerce per value,
which yield the same columns.
"""

from __future__ import annotations

import mmap
import time
from dataclasses import replace
from operator import attrgetter
from typing import Sequence

import msgspec
import polars as pl

from ntrace import forked
from ntrace.columns import ids_text, shapes_text, text_ints, us_to_ns
from ntrace.progress import report
from ntrace.windows import Outline, Uncut, windows

#: Events per batch of raw slices (the fallback): bounds the Python objects held at once (about 5 MB at Kineto's ~250 B per event).
BATCH = 10_000
#: Batches joined into one chunk of each column: 330k events in 12 chunks (190 unjoined windows made the analysis slower).
GROUP = 16

Key = int | str | None


class _Args(msgspec.Struct, gc=False):
    """The `args` keys the analysis reads."""

    external_id: Key = msgspec.field(default=None, name="External id")
    correlation: Key = None
    stream: Key = None
    device: Key = None
    sequence: Key = msgspec.field(default=None, name="Sequence number")
    input_dims: msgspec.Raw = msgspec.field(default=msgspec.Raw(b""), name="Input Dims")


class _Event(msgspec.Struct, gc=False):
    """One trace event with the value types profilers write: numbers for times, integers or names for ids."""

    ph: str = ""
    cat: str | None = None
    name: str | None = None
    pid: Key = None
    tid: Key = None
    ts: float | None = None
    dur: float | None = None
    id: Key = None
    bp: str | None = None
    args: _Args | None = None


_BATCH = msgspec.json.Decoder(list[_Event])
_NO_ARGS = _Args()

_TEXT = ("ph", "cat", "name", "bp")
_IDS = ("pid", "tid")
_TIMES = ("ts", "dur")
#: The linking keys in `args`: integers (or numeric text).
_KEYS = ("external_id", "correlation", "stream", "device", "sequence")


def typed_columns(raws: Sequence[msgspec.Raw], text: object = None, stage: str = "decoding") -> dict[str, pl.Series] | None:
    """Columns (the shape decode's frame builder takes) of the events, or None when a value has a type the typed decoder rejects.

    `text` is the buffer the raws point into; a memory map has its pages released after each
    batch. Progress is reported per batch under `stage`.
    """
    if not raws:
        return None
    _release(text)  # the pages the split into raws read
    chunks = _Chunks()
    try:
        for start in range(0, len(raws), BATCH):
            batch = list(raws[start : start + BATCH])
            batch[0] = b"[" + bytes(batch[0])  # brackets on the end items: wrapping the joined text would copy it twice
            batch[-1] = bytes(batch[-1]) + b"]"
            chunks.add(_BATCH.decode(b",".join(batch)))
            del batch
            _release(text)
            report(stage, min(start + BATCH, len(raws)), len(raws), "events")
        return chunks.columns()
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError, pl.exceptions.ComputeError):  # ComputeError: a shape not UTF-8
        return None


def window_columns(text: object, found: Outline, stage: str = "decoding") -> dict[str, pl.Series] | None:
    """Columns of the events in `found`'s array, decoded a window at a time (ntrace.windows), or None when a value has a type the typed decoder rejects (or a shape is not UTF-8).

    A large array's second half is decoded by a forked helper meanwhile (ntrace.forked).
    Raises windows.Uncut when the array cannot be cut into windows. A memory map has the pages
    of each window released once it is decoded. Progress is reported per window under `stage`.
    """
    _release(text)  # the pages the outline read
    mine, helper = forked.split(text, found, lambda part: _part_columns(text, part))
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


def _part_columns(text: object, part: Outline, stage: str | None = None, whole: Outline | None = None) -> dict[str, pl.Series] | None:
    """window_columns for the events from `part.start` to `part.end` (which must be element boundaries), reporting progress through `whole` when a stage is given."""
    whole = whole or part
    chunks = _Chunks()
    done = part.start
    try:
        for events, reached in windows(text, part, _BATCH.decode):
            chunks.add(events)
            del events
            _release(text, done, reached)
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

    def add(self, events: list[_Event]) -> None:
        """Append one batch of events."""
        for name, column in _event_columns(events).items():
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
            group[name], group[f"{name}_dropped"] = us_to_ns(group[name])
        group["input_dims"] = shapes_text(group["input_dims"])
        for name, column in group.items():
            self.groups.setdefault(name, []).append(column)


def _one_type(parts: list[pl.Series]) -> list[pl.Series]:
    """Chunks of one column, as text where their types differ (pid/tid: integers in some batches, names in others)."""
    return [ids_text(p) for p in parts] if len({p.dtype for p in parts}) > 1 else parts


def _release(text: object, start: int = 0, stop: int | None = None) -> None:
    """Drop a memory map's pages (those from `start` to `stop`) from this process; touched again, they are read back from the page cache."""
    if isinstance(text, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):  # not on Windows
        start -= start % mmap.PAGESIZE
        stop = len(text) if stop is None else stop
        if stop > start:
            text.madvise(mmap.MADV_DONTNEED, start, stop - start)


def _event_columns(events: list[_Event]) -> dict[str, pl.Series]:
    """One batch of events as typed columns: text, pid/tid as Int64 or text, times as float µs, keys as Int64, shapes as raw JSON bytes (empty where absent)."""
    args = [e.args or _NO_ARGS for e in events]
    cols: dict[str, pl.Series] = {}
    for name in _TEXT:
        column = "flow_bp" if name == "bp" else name
        cols[column] = pl.Series(column, list(map(attrgetter(name), events)), dtype=pl.String)
    for name in _IDS:
        cols[name] = _ids(name, list(map(attrgetter(name), events)))
    for name in _TIMES:
        cols[name] = pl.Series(name, list(map(attrgetter(name), events)), dtype=pl.Float64)
    cols["flow_id"] = _int_keys("flow_id", list(map(attrgetter("id"), events)))
    for name in _KEYS:
        cols[name] = _int_keys(name, list(map(attrgetter(name), args)))
    cols["input_dims"] = pl.Series("input_dims", list(map(bytes, map(attrgetter("input_dims"), args))), dtype=pl.Binary)  # b"" where absent
    return cols


def _ids(name: str, values: list) -> pl.Series:
    """pid/tid as Int64 when all are integers (made text once, for all batches, by decode), else as text: integers printed by Polars, names kept."""
    try:
        return pl.Series(name, values, dtype=pl.Int64)
    except (TypeError, OverflowError):
        return pl.Series(name, values, dtype=pl.String, strict=False)


def _int_keys(name: str, values: list) -> pl.Series:
    """A linking key as Int64: integers kept, numeric text parsed (text_ints), anything else null."""
    try:
        return pl.Series(name, values, dtype=pl.Int64)
    except (TypeError, OverflowError):
        return text_ints(pl.Series(name, values, dtype=pl.String, strict=False))
