"""The native decode path: the `traceEvents` array parsed by the C module _native straight into Arrow columns, a large array's two halves on two threads.

_native reads the common, well-formed case and refuses the rest (a value of a type the typed
decoder rejects, a key with escapes or given twice, a time with an exponent, deep nesting, any
JSON error): `columns` then returns None and the msgspec path (_fast) decodes the file, giving
the reference answer. Where _native answers, its columns equal the msgspec path's, value for
value (tests/io/kineto/test_native.py). `NTRACE_NATIVE=0` turns the path off; a build without
a C compiler has no _native and always takes the msgspec path. The parse (`parts`) needs no
Polars, so a read-ahead (_ahead) runs it before Polars is imported; `joined` makes the columns.
"""

from __future__ import annotations

import array
import importlib
import mmap
import os
import threading
from typing import TYPE_CHECKING, Any

from ntrace.io.kineto._fork import second_core
from ntrace.io.kineto._keys import MEMORY_KEYS
from ntrace.io.kineto._windows import Buffer, Outline, next_cut
from ntrace.io.progress import polled

try:  # imported by name: the import graph (grimp, tests/test_architecture.py) cannot see a C module and reads `from ntrace.io.kineto import _native` as an import of the package, a cycle that is not there
    _native: Any = importlib.import_module("ntrace.io.kineto._native")
except ImportError:  # built without a C compiler: the msgspec path decodes everything
    _native = None

#: The columns _native.decode returns, in its order (the events frame's names; times with what was dropped).
NAMES = (
    "ph", "cat", "name", "flow_bp", "pid", "tid", "ts", "ts_dropped", "dur", "dur_dropped", "flow_id",
    "external_id", "correlation", "stream", "device", "sequence", "bytes", *MEMORY_KEYS, "input_dims", "model",
)  # fmt: skip
#: The linking keys, in the order of _native.decode's key texts.
KEYS = ("flow_id", "external_id", "correlation", "stream", "device", "sequence", "bytes", *MEMORY_KEYS)
#: Smallest events array (bytes) parsed as two halves on two threads.
SPLIT_MIN = 8 << 20

if TYPE_CHECKING:  # imported where used: _ahead runs the parse (parts) before Polars is imported
    import polars as pl

    Columns = dict[str, pl.Series]


def available() -> bool:
    """Whether the native path is built and not turned off (NTRACE_NATIVE=0)."""
    return _native is not None and os.environ.get("NTRACE_NATIVE") != "0"


def columns(text: Buffer, found: Outline, stage: str = "decoding") -> Columns | None:
    """The columns of the events in `found`'s array, or None where the native path does not read them (or is not available).

    A memory map has its pages given back as they are parsed. The bytes parsed are reported as
    `stage` while the parser runs, if anyone listens (ntrace.io.progress).
    """
    if not available():
        return None
    release = isinstance(text, mmap.mmap) and hasattr(mmap, "MADV_DONTNEED")
    counts = array.array("q", [0, 0, 0])  # bytes parsed by each call of the parser: first part, second, tail
    with polled(stage, found.end - found.start, lambda: sum(counts)):
        raw = parts(text, found, release, counts)
    return None if raw is None else joined(raw)


def joined(parts: list[Any]) -> Columns:
    """The Polars columns of the parser's raw parts (as `parts` returns them, and _ahead keeps them), one part after the other."""
    import polars as pl

    named = [_named(*part) for part in parts]
    if len(named) == 1:
        return named[0]
    return {name: pl.concat([part[name] for part in named], rechunk=False) for name in NAMES}


def _named(cols: tuple[Any, ...], key_texts: tuple[Any, ...]) -> Columns:
    """One part's columns by name, each linking key given as text in some events parsed as _frame.key_ints does (text_ints)."""
    import polars as pl

    from ntrace.io.kineto._frame import text_ints

    named = {name: pl.Series(name, col) for name, col in zip(NAMES, cols)}
    for name, texts in zip(KEYS, key_texts):
        if texts is not None:
            named[name] = named[name].fill_null(text_ints(pl.Series(name, texts)))
    return named


def parts(text: Buffer, found: Outline, release: bool, counts: array.array[int]) -> list[Any] | None:
    """The raw columns of the array, as one part or two (split at an element boundary near the middle, parsed at once on two threads); None when _native refuses.

    Each call of the parser stores the bytes it has parsed in its own slot of `counts` as it goes.
    """
    start, end = found.start, found.end
    cut = next_cut(text, start + (end - start) // 2, end) if end - start >= SPLIT_MIN and second_core() else None
    slots = memoryview(counts)

    def decode(begin: int, stop: int, slot: int) -> Any:
        """_native.decode from `begin` (up to `stop`, or the end when -1), counting its bytes in `slot` of `counts`."""
        return _native.decode(text, begin, end, stop, release, slots[slot : slot + 1])

    if cut is None:
        whole = decode(start, -1, 0)
        return None if whole is None else [whole[:2]]
    second = cut.end() - 1  # the `{` after the cut
    got: dict[str, Any] = {}

    def rest() -> None:
        try:
            got["rest"] = decode(second, -1, 1)
        except MemoryError as exc:
            got["error"] = exc

    helper = threading.Thread(target=rest, name="ntrace-decode", daemon=True)
    helper.start()
    try:
        first = decode(start, second, 0)
    finally:
        helper.join()
    if first is None:
        return None
    reached = first[2]
    if reached == second:  # the cut is an element boundary: the helper parsed exactly the rest
        if "error" in got:
            raise got["error"]
        return None if got["rest"] is None else [first[:2], got["rest"][:2]]
    # the cut lay inside an element, so the helper's start was none: the rest is parsed from where this part ended
    if reached >= end:  # no element starts after the cut: the first part holds every event
        return [first[:2]]
    tail = decode(reached, -1, 2)
    return None if tail is None else [first[:2], tail[:2]]
