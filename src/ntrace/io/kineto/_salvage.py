"""Save what can be saved from damaged trace JSON: bytes that are not UTF-8, NaN/Infinity literals, a file cut off mid-write.

Each repair leaves a warning naming the file and what was done. A trace cut off mid-write (a
crashed or killed profiler, a full disk, a half-done copy) is closed after its last complete
event: the bytes up to some `}` are kept and the open `traceEvents` array and top-level object
are closed, trying `}` positions from the end until the result parses; the repaired text is then
decoded by the fast decoders like any other.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import msgspec

from ntrace.errors import TraceFormatError
from ntrace.io.files import PLAIN_DECODE_FACTOR, check_fits
from ntrace.io.kineto._plain import NumText
from ntrace.units import plural

#: How many `}` positions from the end are tried before a cut-off file is given up as unsalvageable.
_TRIES = 64
#: Where an event object starts in Kineto's writing (`"ph"` is its first key): used to cut at --max-events.
_EVENT_START = re.compile(rb'[\[,]\s*\{\s*"ph"\s*:')
#: Checks JSON syntax and finds the top level's values without building them (memory stays flat).
_SKIM = msgspec.json.Decoder(dict[str, msgspec.Raw] | list[msgspec.Raw])
_EVENTS = msgspec.json.Decoder(list[msgspec.Raw])
#: Values that open at this depth are replaced by null when a document nests too deep for the decoders (no Kineto field nests past a few levels).
MAX_DEPTH = 64
#: One escape in a JSON string: a surrogate pair (kept), a lone surrogate (replaced), or any other escaped character (kept).
_ESCAPE = re.compile(rb"\\(?:u[dD][89abAB][0-9a-fA-F]{2}\\u[dD][c-fC-F][0-9a-fA-F]{2}|(u[dD][89a-fA-F][0-9a-fA-F]{2})|.)", re.DOTALL)
#: A JSON string (skipped whole) or one bracket.
_BRACKET_OR_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"|[\[\]{}]')


def repair_json(raw: bytes, path: Path, warnings: list[str]) -> bytes | Any:
    """Repair JSON text the fast decoders rejected; raise TraceFormatError when nothing can be saved.

    Returns repaired text (bytes) when bytes that are not UTF-8 were replaced or a cut-off file was
    closed, to be decoded the usual way; for text that needed neither (NaN, Infinity, numbers
    beyond the double range, which no fast decoder reads), the document parsed by Python's json.
    Warnings about repairs are added only when the repair succeeds: garbage gets one error.
    """
    notes: list[str] = []
    text = _no_lone_surrogates(_valid_utf8(raw, path, notes), path, notes)
    problem = None
    try:
        _SKIM.decode(text)
    except msgspec.ValidationError:
        pass  # valid JSON of another shape: the decoders say what is wrong with it
    except RecursionError:
        text = _flatten_deep(text, path, notes)
    except msgspec.DecodeError as exc:
        if str(exc).startswith("Input data was truncated"):
            text = _close_cut_off(text, path, notes)
        else:
            problem = exc
    if problem is None and text is not raw:
        warnings.extend(notes)
        return text
    check_fits(path, len(text), factor=PLAIN_DECODE_FACTOR)
    doc = _nonstandard_json(text)
    if doc is None:
        raise TraceFormatError(path, f"is not valid JSON ({problem or 'rejected by every JSON decoder'}); is it a Chrome/Kineto trace?")
    warnings.extend(notes)
    warnings.append(f"{path}: uses non-standard JSON numbers (NaN, Infinity); read them as no number")
    return doc


def _flatten_deep(raw: bytes, path: Path, warnings: list[str]) -> bytes:
    """Valid JSON nested deeper than the decoders go (about 1,000 levels): each value that opens at MAX_DEPTH is replaced by null, with a warning counting them.

    Strings are skipped whole (a bracket inside a name is not one), so only real nesting counts.
    Raises TraceFormatError when the brackets do not balance (then it was not valid JSON).
    """
    depth, start, cuts = 0, -1, []
    for match in _BRACKET_OR_STRING.finditer(raw):
        token = match[0][:1]
        if token == b'"':
            continue
        if token in b"[{":
            depth += 1
            if depth == MAX_DEPTH and start < 0:
                start = match.start()
        else:
            depth -= 1
            if depth == MAX_DEPTH - 1 and start >= 0:
                cuts.append((start, match.end()))
                start = -1
            if depth < 0:
                break
    if depth != 0 or not cuts:
        raise TraceFormatError(path, "is not valid JSON (its brackets do not balance); is it a Chrome/Kineto trace?")
    out, last = bytearray(), 0
    for begin, end in cuts:
        out += raw[last:begin] + b"null"
        last = end
    out += raw[last:]
    warnings.append(f"{path}: {plural(len(cuts), 'value')} nested deeper than {MAX_DEPTH} levels (more than the decoders read) were replaced by null")
    return bytes(out)


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


def _no_lone_surrogates(raw: bytes, path: Path, warnings: list[str]) -> bytes:
    """`raw` with every escaped lone surrogate (`\\udc80` outside a pair: no text can hold it, the fast decoders refuse it) replaced by the escape of U+FFFD, warning with the count."""
    if b"\\u" not in raw:
        return raw
    count = 0

    def replace(match: re.Match[bytes]) -> bytes:
        nonlocal count
        if match[1] is None:
            return match[0]
        count += 1
        return b"\\ufffd"

    text = _ESCAPE.sub(replace, raw)
    if not count:
        return raw
    warnings.append(f"{path}: {plural(count, 'escaped lone surrogate')} (in names?) were replaced by U+FFFD")
    return text


def _nonstandard_json(raw: bytes) -> Any:
    """Python's json module reads NaN and Infinity where msgspec refuses (floats kept as their digits, as the plain decoder keeps them); None when it fails too."""
    try:
        return json.loads(raw, parse_float=NumText)
    except (ValueError, RecursionError):
        return None


def _closer(raw: bytes) -> bytes:
    """What closes an open event list: `]` for the top-level array form, `]}` for the object form."""
    return b"]" if raw.lstrip()[:1] == b"[" else b"]}"


def _close_cut_off(raw: bytes, path: Path, warnings: list[str]) -> bytes:
    """The text of a file cut off mid-write, closed after its last complete event (checked without building objects)."""
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
            doc = _SKIM.decode(buf)
        except (msgspec.DecodeError, msgspec.ValidationError, RecursionError):
            continue
        events = doc if isinstance(doc, list) else doc.get("traceEvents")
        try:
            n = len(_EVENTS.decode(events)) if isinstance(events, msgspec.Raw) else len(events or [])
        except msgspec.ValidationError:
            n = 0  # traceEvents is not an array: no event was closed
        if n:
            warnings.append(
                f"{path}: is cut off at byte {len(raw):,} (a profiler killed mid-write, or a copy not finished?); "
                f"analyzed the {n:,} complete events before the cut"
            )
            return bytes(buf)
        break
    raise TraceFormatError(path, f"is cut off at byte {len(raw):,} before its first complete event; nothing to analyze")
