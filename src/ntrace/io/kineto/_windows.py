"""Cut a trace's `traceEvents` array into windows of whole events, found without parsing the whole file first, so it is decoded a few MB at a time.

The array is located by its key (`"traceEvents": [`, or a `[` that opens the document) and by
its closing `]`, tried from the end of the text (where only a few metadata keys follow): a
`]` is taken when a `}` ends the content before it, the JSON after it is what follows an
array (the last events before it decode as an array), and the document with the array
replaced by a marker string decodes with the marker as its top-level `traceEvents` (or as the
document, for a bare array): that proves the array's place, and gives the metadata.

Windows are cut after a `}` that is followed by `, {` (first where the `{` opens an event as
Kineto writes one, `"ph"` first: nested objects in `args` would fail a window). The first window
starts at the array's first element and each next one where the last one ended, so each starts
at a true element boundary; decoded as `[` + window + `]`, it succeeds only if it also ends at one: a cut inside
a string leaves that string unterminated, a cut inside a nested value leaves it unbalanced,
and either is a decode error, on which the window is extended to the next cut. So when every
window decodes, the whole text is valid JSON and the windows' events are exactly those of its
traceEvents array. Anything else (no key, a closing `]` not found near the end, no good cut
within a few tries) raises Uncut, and the caller decodes the file another way.
"""

from __future__ import annotations

import mmap
import re
import secrets
from dataclasses import dataclass
from typing import Any, Callable, Iterator

import msgspec

#: Bytes of JSON per window: about 1,700 events at Kineto's ~300 B per event, whose Python objects stay in the CPU's cache.
WINDOW = 512 << 10
#: Cuts (and closing brackets) tried before giving up on this way of decoding.
_TRIES = 8
#: Most bytes after the array: the metadata keys Kineto writes there are small.
_TAIL = 4 << 20
_CUT = re.compile(rb"\}\s*,\s*\{")
#: A cut before an event as Kineto writes one (`"ph"` first): nested objects in `args` rarely start so.
_EVENT_CUT = re.compile(rb'\}\s*,\s*\{(?=\s*"ph"\s*:)')
_KEY = re.compile(rb'"traceEvents"\s*:\s*\[')
_BARE = re.compile(rb"\s*\[")
#: How far before a closing `]` the last events are looked for.
_LAST = 1 << 16
#: How far after a window's length a cut before an event that starts with `"ph"` is looked for (longer than most events).
_AHEAD = 1 << 16
_SKIM = msgspec.json.Decoder(list[msgspec.Raw])
#: Stands in for the array when the rest of the document is checked; random, so no file can hold it.
_MARKER = f"ntrace-{secrets.token_hex(16)}"
_MARKER_JSON = f'"{_MARKER}"'.encode()

Buffer = Any  # bytes or a memory map: anything re and memoryview take


class Uncut(Exception):
    """The events array could not be found, or not cut at element boundaries: decode the file another way."""


@dataclass(frozen=True)
class Outline:
    """Where the events array lies in the text, and the rest of the document decoded."""

    start: int  # offset of the array's first content byte (after its `[`)
    end: int  # offset of its closing `]`
    doc: Any  # the document with the array as the marker, as `decoder` gave it; None for a bare array


class Document(msgspec.Struct):
    """The top-level object of a Kineto trace with its events array replaced by a marker (outline), the metadata kept raw until asked for."""

    traceEvents: msgspec.Raw = msgspec.Raw(b"")
    deviceProperties: msgspec.Raw = msgspec.Raw(b"")
    distributedInfo: msgspec.Raw = msgspec.Raw(b"")
    baseTimeNanoseconds: int | None = None
    traceName: str | None = None
    schemaVersion: int | str | None = None


#: The decoder outline takes for a Kineto trace: its document, or the marker alone for a bare array.
DOCUMENT = msgspec.json.Decoder(Document | str)


def outline(text: Buffer, decoder: msgspec.json.Decoder[Any]) -> Outline:
    """The events array of `text` and the document around it; `decoder` must give a str, or an object whose `traceEvents` is a msgspec.Raw."""
    bare = _BARE.match(text)
    key = bare or _KEY.search(text)
    if key is None:
        raise Uncut
    opening = key.end() - 1
    head = text[:opening]
    end, tries = len(text), 0
    while tries < _TRIES:
        end = text.rfind(b"]", opening + 1, end)
        if end < 0 or len(text) - end > _TAIL:
            break
        if not _closes_array(text, opening, end):
            continue
        tries += 1
        try:
            doc = decoder.decode(head + _MARKER_JSON + text[end + 1 :])
        except (msgspec.DecodeError, msgspec.ValidationError, UnicodeDecodeError, RecursionError):
            continue
        marked = (doc == _MARKER) if bare else bytes(getattr(doc, "traceEvents", b"")) == _MARKER_JSON
        if marked and _ends_with_events(text, opening + 1, end):
            return Outline(opening + 1, end, None if bare else doc)
    raise Uncut


def _closes_array(text: Buffer, opening: int, end: int) -> bool:
    """Whether the `]` at `end` can close the array opened at `opening`: the content before it is empty or ends with an event's `}`."""
    before = text[max(opening + 1, end - 64) : end].rstrip()
    return before.endswith(b"}") or (not before and end - opening <= 65)


def _ends_with_events(text: Buffer, start: int, end: int) -> bool:
    """Whether the text before `end` ends with whole events: from one of the last cuts before it, it decodes as an array.

    A `]` after the array (closing a list of objects in the metadata after it) fails this:
    from any cut, the text runs past the array's own `]`.
    """
    if end - start <= _LAST:
        starts = [start]
    else:
        starts = [m.end() - 1 for m in _CUT.finditer(text, end - _LAST, end)][-3:]
    for first in reversed(starts):
        try:
            _SKIM.decode(b"".join((b"[", text[first:end], b"]")))
            return True
        except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):
            continue
    return False


def next_cut(text: Buffer, start: int, end: int) -> re.Match[bytes] | None:
    """Where to try ending a window first: before the next event that starts with `"ph"` (looked for in the next _AHEAD bytes), else at any cut; None (the array's end) when the end is nearer."""
    ahead = min(end, start + _AHEAD)
    return _EVENT_CUT.search(text, start, ahead) or (_CUT.search(text, start, end) if ahead < end else None)


def windows(text: Buffer, found: Outline, decode: Callable[[bytes], list[Any]], size: int | None = None) -> Iterator[tuple[list[Any], int]]:
    """Each window's decoded events, with the offset of the text decoded up to; Uncut when a window fails at every cut tried.

    `decode` takes `[` + window + `]`; its msgspec.DecodeError means a bad cut, anything else
    it raises goes to the caller.
    """
    size = size or WINDOW
    pos, end = found.start, found.end
    with memoryview(text) as view:
        while pos < end:
            cut = next_cut(text, pos + size, end) if pos + size < end else None
            for _ in range(_TRIES):
                stop = cut.start() + 1 if cut else end
                try:
                    events = decode(b"".join((b"[", view[pos:stop], b"]")))
                    break
                except msgspec.ValidationError:
                    raise  # a value of another type (a DecodeError too): not a bad cut
                except msgspec.DecodeError:
                    if cut is None:
                        raise Uncut from None
                    cut = _CUT.search(text, cut.end() - 1, end)
            else:
                raise Uncut
            yield events, stop
            del events  # the caller is done with them: freed now, their memory is reused (still in cache) for the next window's
            pos = cut.end() - 1 if cut else end


def release(text: object, start: int = 0, stop: int | None = None) -> None:
    """Drop a memory map's pages (those from `start` to `stop`) from this process; touched again, they are read back from the page cache."""
    if isinstance(text, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED"):  # not on Windows
        start -= start % mmap.PAGESIZE
        stop = len(text) if stop is None else stop
        if stop > start:
            text.madvise(mmap.MADV_DONTNEED, start, stop - start)
