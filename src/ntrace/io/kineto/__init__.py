"""Decode one Kineto/Chrome trace JSON file into a Trace: one fast path, one tolerant fallback, salvage of damaged text.

The way of a file through this package:

1. `ntrace.io.files` maps (or reads, or gunzips) the file within the memory available;
2. the fast path (_fast) finds the `traceEvents` array (_windows) and parses it with the C
   module _native straight into Arrow columns, two halves of a large array on two threads
   (_columnar); where _native refuses the text (anything but the common, well-formed case) or
   was not built, the array is cut into windows at element boundaries (_windows) and decoded
   with a typed msgspec decoder, a forked helper process taking the second half (_fork);
3. where the fast path cannot read the file (no array to cut, a value of an odd type), the
   plain decoder (_plain) reads it into Python objects, coercing value by value;
4. JSON no decoder accepts is repaired where it can be (_salvage: a file cut off mid-write, bytes
   that are not UTF-8, NaN), with a warning, and decoded again;
5. the columns become the events frame (_frame), checked for oddities (_sanity), and are
   classified into lanes (ntrace.lanes).

Beside that way, `_args` re-reads the `args` objects as the file wrote them, a window at a time
(_windows), for the Perfetto export (`ntrace.io.source_args`): a Trace keeps only the keys it links by.

The package's top imports no Polars: `read_ahead` (_ahead) starts step 2's native parse of a
large file on a thread before Polars and the analysis are imported, then imports the decoders
while it parses; the thread goes on to make the events (step 5, _read.decoded_ahead) while the
caller imports the analysis, and `read_kineto` (_read) takes them.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from ntrace.io.kineto import _ahead
from ntrace.io.kineto._fork import in_worker

if TYPE_CHECKING:
    from ntrace.io.kineto._read import read_kineto

__all__ = ["in_worker", "read_ahead", "read_kineto"]


def read_ahead(path: Path) -> None:
    """Start parsing the events of the JSON trace file at `path` on a thread (see _ahead.read_ahead); if it started, import the decoders (and Polars) meanwhile and have the thread make the events once parsed, so that the caller's next imports and that work share the cores; the next read_kineto of the file takes them."""
    if _ahead.read_ahead(path):
        from ntrace.io.kineto._read import decoded_ahead

        _ahead.build(decoded_ahead)


def __getattr__(name: str) -> Any:
    """read_kineto, imported on first use: the decoders import Polars, which read_ahead starts before."""
    if name == "read_kineto":
        from ntrace.io.kineto._read import read_kineto

        return read_kineto
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
