"""The `args` of each event as the file wrote them, for `ntrace export` to write back: decoded a window at a time (_windows), so no event's Python object outlives its window."""

from __future__ import annotations

from pathlib import Path

import msgspec
import polars as pl

from ntrace.io.files import map_json
from ntrace.io.kineto._windows import DOCUMENT, Uncut, outline, release, windows

SCHEMA = pl.Schema({"idx": pl.Int64(), "name": pl.Categorical(), "args": pl.String()})


class _Event(msgspec.Struct, gc=False):
    """What is re-read of an event: its name (to check that the file still holds the events analyzed) and its args as written."""

    name: str | None = None
    args: msgspec.Raw = msgspec.Raw(b"")  # empty where the event has none


class _Document(msgspec.Struct, gc=False):
    """A Kineto JSON document's events."""

    traceEvents: list[_Event]  # noqa: N815  # Kineto's spelling


_WINDOW = msgspec.json.Decoder(list[_Event])
_WHOLE = msgspec.json.Decoder(_Document)


def event_args(path: Path) -> pl.DataFrame:
    """idx, name and args (the JSON object text as written, null where an event has none or a value that is no object) of every event of the Kineto JSON document at `path`, in file order.

    An events array that cannot be cut into windows is decoded whole. Raises what reading the
    file raises (NtraceError, OSError) and msgspec.DecodeError where the typed decoder does not
    read the file as it is (a value of another type, JSON that needs repair).
    """
    text = map_json(path, [])
    try:
        found = outline(text, DOCUMENT)
        release(text)  # the pages the outline read
        parts, done, n = [], found.start, 0
        for events, reached in windows(text, found, _WINDOW.decode):
            parts.append(_frame(events, n))
            n += len(events)
            del events
            release(text, done, reached)
            done = reached
    except Uncut:
        return _frame(_WHOLE.decode(text).traceEvents, 0)
    return pl.concat(parts) if parts else SCHEMA.to_frame()


def _frame(events: list[_Event], first: int) -> pl.DataFrame:
    """`event_args`'s rows for these events, the first of which has index `first`."""
    args = pl.Series([bytes(e.args).decode() or None for e in events], dtype=pl.String)
    return pl.DataFrame(
        {
            "idx": pl.int_range(first, first + len(events), eager=True, dtype=pl.Int64),
            "name": pl.Series([e.name for e in events], dtype=pl.String).cast(pl.Categorical),
            "args": pl.select(pl.when(args.str.starts_with("{")).then(args)).to_series(),
        }
    )
