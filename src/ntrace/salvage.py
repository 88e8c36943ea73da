"""Save what can be saved from damaged trace JSON: bytes that are not UTF-8, NaN/Infinity literals, a file cut off mid-write.

Each repair leaves a warning naming the file and what was done. A trace cut off mid-write (a
crashed or killed profiler, a full disk, a half-done copy) is closed after its last complete
event: the bytes up to some `}` are kept and the open `traceEvents` array and top-level object
are closed, trying `}` positions from the end until the result parses.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import orjson

from ntrace.errors import TraceFormatError

#: How many `}` positions from the end are tried before a cut-off file is given up as unsalvageable.
_TRIES = 64
#: Where an event object starts in Kineto's writing (`"ph"` is its first key): used to cut at --max-events.
_EVENT_START = re.compile(rb'[\[,]\s*\{\s*"ph"\s*:')


def repair_json(raw: bytes, path: Path, warnings: list[str]) -> Any:
    """Parse JSON that the fast decoders rejected, repairing what can be repaired; raise TraceFormatError otherwise.

    Warnings about repairs are added only when the repaired text parses: garbage gets one error.
    """
    notes: list[str] = []
    raw = _valid_utf8(raw, path, notes)
    try:
        doc = orjson.loads(raw)
    except orjson.JSONDecodeError as exc:
        if str(exc).startswith("unexpected end of data"):
            doc = _close_cut_off(raw, path, notes)
        elif (doc := _nonstandard_json(raw)) is None:
            raise TraceFormatError(path, f"is not valid JSON ({exc}); is it a Chrome/Kineto trace?") from None
        else:
            notes.append(f"{path}: uses non-standard JSON numbers (NaN, Infinity, or beyond the double range); read them as non-finite")
    warnings.extend(notes)
    return doc


def keep_first_events(raw: bytes, n: int, path: Path, warnings: list[str]) -> bytes:
    """The trace's JSON cut after its first `n` events and closed again, so only they are decoded (for --max-events).

    Returns `raw` unchanged when it holds no more than `n` events or is not laid out the way
    Kineto writes (events starting with `"ph"`); the caller then trims after decoding.
    """
    starts = _EVENT_START.finditer(raw)
    for i, match in enumerate(starts):
        if i == n:
            total = raw.count(b'"ph"')
            warnings.append(f"{path}: --max-events {n}: analyzed the first {n:,} of about {total:,} events")
            return raw[: match.start()] + _closer(raw)
    return raw


def _valid_utf8(raw: bytes, path: Path, warnings: list[str]) -> bytes:
    """`raw` with every byte that is not UTF-8 replaced by U+FFFD, warning with the count."""
    try:
        raw.decode()
        return raw
    except UnicodeDecodeError:
        text = raw.decode(errors="replace")
    bad = text.count("\ufffd") - raw.count("\ufffd".encode())
    warnings.append(f"{path}: {bad} byte sequences that are not UTF-8 (in names?) were replaced by U+FFFD")
    return text.encode()


def _nonstandard_json(raw: bytes) -> Any:
    """Python's json module reads NaN, Infinity and 1e400 where orjson refuses; None when it fails too."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError):
        return None


def _closer(raw: bytes) -> bytes:
    """What closes an open event list: `]` for the top-level array form, `]}` for the object form."""
    return b"]" if raw.lstrip()[:1] == b"[" else b"]}"


def _close_cut_off(raw: bytes, path: Path, warnings: list[str]) -> Any:
    """The document of a file cut off mid-write, closed after its last complete event."""
    closer = _closer(raw)
    buf = bytearray(raw)
    end = len(raw)
    for _ in range(_TRIES):
        end = raw.rfind(b"}", 0, end)
        if end < 0:
            break
        del buf[end + 1 :]
        buf += closer
        try:
            doc = orjson.loads(buf)
        except orjson.JSONDecodeError:
            continue
        events = doc if isinstance(doc, list) else doc.get("traceEvents") if isinstance(doc, dict) else None
        if isinstance(events, list) and events:
            warnings.append(
                f"{path}: is cut off at byte {len(raw):,} (a profiler killed mid-write, or a copy not finished?); "
                f"analyzed the {len(events):,} complete events before the cut"
            )
            return doc
        break
    raise TraceFormatError(path, f"is cut off at byte {len(raw):,} before its first complete event; nothing to analyze")
