"""read_kineto: one Kineto JSON file through the package's stages (see the package's docstring) into a Trace."""

from __future__ import annotations

import mmap
from pathlib import Path
from typing import Any, Mapping

import msgspec
import polars as pl

from ntrace.errors import TraceFormatError
from ntrace.io.files import PLAIN_DECODE_FACTOR, check_fits, map_json, read_json
from ntrace.io.kineto import _ahead, _columnar, _fast, _plain
from ntrace.io.kineto._frame import frame, shapes_utf8
from ntrace.io.kineto._salvage import keep_first_events, repair_json
from ntrace.io.kineto._sanity import checked_events
from ntrace.io.kineto._windows import Outline, Uncut
from ntrace.io.manifest import find_manifest
from ntrace.io.progress import report
from ntrace.lanes import classify, lane_table
from ntrace.trace import Trace


def read_kineto(path: str | Path, *, fast: bool = True, max_events: int | None = None, lanes: Mapping[str, str] | None = None) -> Trace:
    """The Trace of the Kineto JSON file at `path`; `fast=False` forces the plain decoder, `lanes` adds category → lane rows.

    `max_events` keeps only the file's first events (as Kineto lays a file out, the rest is never
    decoded). Damaged files are repaired where they can be, with warnings; an error raised after
    such a warning carries it, so the one-line message says everything.
    """
    path = Path(path)
    warnings: list[str] = []
    try:
        events, meta = _decode(path, fast, max_events, warnings)
    except TraceFormatError as exc:
        if not warnings:
            raise
        notes = "; ".join(w.removeprefix(f"{path}: ") for w in warnings)
        raise TraceFormatError(path, f"{exc.problem} (also: {notes})") from None
    if "lane" not in events.columns:
        events = classify(events, lane_table(lanes) if lanes else None)
    elif lanes:  # classified ahead by the default table
        events = classify(events.drop("lane", "side"), lane_table(lanes))
    manifest = find_manifest(path)
    return Trace(path, events, meta, tuple(warnings), manifest["variant"] if manifest else None)


def _decode(path: Path, fast: bool, max_events: int | None, warnings: list[str]) -> tuple[pl.DataFrame, dict[str, Any]]:
    """read_kineto's work: the checked events frame (before lanes, unless the read-ahead's thread made it: classified then) and the metadata, appending warnings as it goes."""
    raw: bytes | mmap.mmap
    ahead = _ahead.taken(path, f"decoding {path.name}") if fast and max_events is None else None
    if ahead is not None and ahead.built is not None:  # decoded on the read-ahead's thread (decoded_ahead)
        events, meta, notes = ahead.built
        report(f"decoding {path.name}", 0, len(ahead.text), "bytes")
        report(f"decoded {path.name}", events.height, None, "events")
        warnings.extend(notes)
        return events, meta
    if ahead is not None:
        raw, cut = ahead.text, False
    elif max_events is None:
        raw = map_json(path, warnings) if fast else read_json(path, warnings, factor=PLAIN_DECODE_FACTOR)
        cut = False
    else:
        whole = read_json(path, warnings, factor=2)
        raw = keep_first_events(whole, max_events, path, warnings)
        cut = raw is not whole  # keep_first_events warned, with the file's event count
        del whole
        check_fits(path, len(raw))
    report(f"decoding {path.name}", 0, len(raw), "bytes")  # the decoders report how far they are in the events array (at most the text's length)
    cols, meta = _columns(raw, path, fast, warnings, ahead)
    del raw, ahead  # the columns hold what is needed: free the JSON text before the frame is built
    return _events(cols, meta, path, max_events, cut, warnings), meta


def decoded_ahead(path: Path, found: Outline, parts: list[Any]) -> tuple[pl.DataFrame, dict[str, Any], list[str]]:
    """What read_kineto makes of a read-ahead's parse (_ahead.build): the events, classified by the default lane table, the metadata and the warnings.

    Runs on the read-ahead's thread while the CLI imports the analysis (the decoders' modules are
    imported by then). The native parser refuses text that is not UTF-8, so no shape needs the
    repair `_columns` checks for.
    """
    cols, meta = _columnar.joined(parts), _fast.meta(found.doc)
    parts.clear()  # the columns hold the parser's buffers now: none is held twice while the frame is built
    notes: list[str] = []
    return classify(_events(cols, meta, path, None, False, notes)), meta, notes


def _events(cols: dict[str, Any], meta: dict[str, Any], path: Path, max_events: int | None, cut: bool, warnings: list[str]) -> pl.DataFrame:
    """The checked events frame of the decoded columns (emptied as the frame is built), appending warnings; `cut`: the text was already cut to max_events (and said so)."""
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
    return checked_events(frame(cols, path, warnings), path, warnings)


def _columns(raw: bytes | mmap.mmap, path: Path, fast: bool, warnings: list[str], ahead: _ahead.Parsed | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
    """Columns and metadata through the fast path where it reads `raw` (or its read-ahead parsed it), else the plain decoder; damaged text is repaired (_salvage) once."""
    if fast:
        try:
            found = _fast.columns(raw, f"decoding {path.name}", ahead)
        except Uncut:
            found = None
        if found is not None:
            if shapes_utf8(found[0]["input_dims"]):
                return found
            # msgspec keeps shapes as raw bytes without checking them: bytes that are not UTF-8 are repaired as anywhere else
            return _repaired_columns(bytes(raw), path, fast, warnings)
    try:
        plain = _plain.decode(raw)
    except (msgspec.DecodeError, RecursionError):
        return _repaired_columns(bytes(raw), path, fast, warnings)
    return _plain.columns(plain, path, warnings)


def _repaired_columns(raw: bytes, path: Path, fast: bool, warnings: list[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    """Columns of JSON the decoders rejected: repaired text is decoded again, a document that only Python's json reads is used as is."""
    fixed = repair_json(raw, path, warnings)
    if isinstance(fixed, bytes):
        return _columns(fixed, path, fast, warnings)  # terminates: repair_json returns text only when it changed it
    return _plain.columns(fixed, path, warnings)
