"""Reading ahead: a large JSON trace's events parsed by the native parser on a thread started before Polars and the analysis are imported, so the parse and those imports run on two cores at once.

Nothing here imports Polars: the parser's raw parts are kept until the reader takes them
(`taken`, from _read) and makes them Polars columns (_columnar.joined). A read-ahead is handed
to the next read only, and only when that read is of the same file, unchanged since it was
mapped (device, inode, size, modification and change times), and the native parser read its
whole events array. In every other case (a file that cannot be mapped, a gzip, text the parser
refuses, any error) it is dropped, and the reader reads the file from the start as always, so
what it reports about a bad file is what it reports without a read-ahead.
"""

from __future__ import annotations

import array
import contextlib
import mmap
import os
import stat
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ntrace.io.files import identity, map_json
from ntrace.io.kineto import _columnar
from ntrace.io.kineto._windows import DOCUMENT, Outline, outline
from ntrace.io.progress import polled

#: Smallest file (bytes) read ahead: below it the parse takes a few ms, about what starting a thread and checking the memo cost.
AHEAD_MIN = 8 << 20


@dataclass(frozen=True)
class Parsed:
    """A file parsed ahead, whole: its mapped text, where its events array lies (and the document around it), the parser's raw parts."""

    text: mmap.mmap
    found: Outline
    parts: list[Any]


@dataclass
class Ahead:
    """One file being read ahead: its identity when started, the bytes parsed so far per parser call, and once done what it parsed (None: the reader reads the file itself)."""

    identity: tuple[int, ...]
    size: int
    counts: array.array[int] = field(default_factory=lambda: array.array("q", [0, 0, 0]))
    parsed: Parsed | None = None

    def run(self, path: Path) -> None:
        """Map, outline and parse the file; keep the result only if the parser read it whole and the file is still the one started on."""
        try:
            text = map_json(path, [])
            if not isinstance(text, mmap.mmap):  # read as bytes (a BOM, an empty file): nothing gained ahead
                return
            found = outline(text, DOCUMENT)
            raw = _columnar.parts(text, found, hasattr(mmap, "MADV_DONTNEED"), self.counts)
            same = identity(os.stat(path)) == self.identity
        except Exception:  # the reader meets the same problem and reports it as it always does
            return
        if same and raw is not None:
            self.parsed = Parsed(text, found, raw)


#: The read-ahead started last and not yet handed over (at most one), with its thread.
_PENDING: list[tuple[Ahead, threading.Thread]] = []


def read_ahead(path: Path) -> None:
    """Start parsing the events of the JSON trace at `path` on a thread, when it is a regular file of AHEAD_MIN bytes or more, not a gzip, and the native parser is available; the next read_kineto of the file takes the columns."""
    if not _columnar.available() or path.name.lower().endswith(".gz"):
        return
    try:
        st = os.stat(path)
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode) or st.st_size < AHEAD_MIN:
        return
    ahead = Ahead(identity(st), st.st_size)
    thread = threading.Thread(target=ahead.run, args=(path,), name="ntrace-read-ahead", daemon=True)
    _PENDING.clear()  # one not handed over ends on its own: nothing waits for it
    _PENDING.append((ahead, thread))
    thread.start()


def taken(path: Path, stage: str) -> Parsed | None:
    """What the read-ahead of the file at `path` parsed, once done (its parsing reported as `stage` meanwhile), if it was started on this very version of the file and parsed it whole; any read-ahead is handed over once, to the next read."""
    if not _PENDING:
        return None
    ahead, thread = _PENDING.pop()
    try:
        same = identity(os.stat(path)) == ahead.identity
    except OSError:
        same = False
    with polled(stage, ahead.size, lambda: sum(ahead.counts)) if same else contextlib.nullcontext():
        thread.join()  # also another file's, or this one's before it changed: no thread may run on while the reader forks (_fork)
    return ahead.parsed if same else None
