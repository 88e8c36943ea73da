"""Reading ahead: a large JSON trace's events parsed by the native parser on a thread started before Polars and the analysis are imported, so the parse and those imports run on two cores at once.

Nothing here imports Polars: the parser's raw parts are kept until the reader takes them
(`taken`, from _read) and makes them Polars columns (_columnar.joined), or, once a caller that
has imported Polars and the decoders hands over how (`build`), made into the reader's events on
the thread itself, while that caller goes on importing the analysis. A read-ahead is handed
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
from typing import Any, Callable

from ntrace.io.files import identity, map_json
from ntrace.io.kineto import _columnar
from ntrace.io.kineto._windows import DOCUMENT, Outline, outline
from ntrace.io.progress import polled

#: Smallest file (bytes) read ahead: below it the parse takes a few ms, about what starting a thread and checking the memo cost.
AHEAD_MIN = 8 << 20


#: What the thread makes of its parse once handed over how (see `build`): from the file's path, outline and the parser's raw parts (which it may empty).
Build = Callable[[Path, Outline, list[Any]], Any]


@dataclass(frozen=True)
class Parsed:
    """A file parsed ahead, whole: its mapped text, where its events array lies (and the document around it), and the parser's raw parts or what `build` made of them (`built`)."""

    text: mmap.mmap
    found: Outline
    parts: list[Any]
    built: Any = None


@dataclass
class Ahead:
    """One file being read ahead: its path and identity when started, the bytes parsed so far per parser call, what to make of the parse once parsed (`go` set: `build`, or nothing) and once done what it parsed (None: the reader reads the file itself)."""

    path: Path
    identity: tuple[int, ...]
    size: int
    counts: array.array[int] = field(default_factory=lambda: array.array("q", [0, 0, 0]))
    go: threading.Event = field(default_factory=threading.Event)
    build: Build | None = None
    parsed: Parsed | None = None

    def run(self) -> None:
        """Map, outline and parse the file; keep the result only if the parser read it whole and the file is still the one started on; then, once told, build on it."""
        try:
            text = map_json(self.path, [])
            if not isinstance(text, mmap.mmap):  # read as bytes (a BOM, an empty file): nothing gained ahead
                return
            found = outline(text, DOCUMENT)
            raw = _columnar.parts(text, found, hasattr(mmap, "MADV_DONTNEED"), self.counts)
            same = identity(os.stat(self.path)) == self.identity
        except Exception:  # the reader meets the same problem and reports it as it always does
            return
        if not same or raw is None:
            return
        self.go.wait()
        if self.build is None:
            self.parsed = Parsed(text, found, raw)
            return
        try:
            self.parsed = Parsed(text, found, [], self.build(self.path, found, raw))
        except Exception:  # as above: the reader reads the file from the start
            return


#: The read-ahead started last and not yet handed over (at most one), with its thread.
_PENDING: list[tuple[Ahead, threading.Thread]] = []


def read_ahead(path: Path) -> bool:
    """Start parsing the events of the JSON trace at `path` on a thread, when it is a regular file of AHEAD_MIN bytes or more, not a gzip, and the native parser is available; the next read_kineto of the file takes the columns. Whether it started."""
    if not _columnar.available() or path.name.lower().endswith(".gz"):
        return False
    try:
        st = os.stat(path)
    except OSError:
        return False
    if not stat.S_ISREG(st.st_mode) or st.st_size < AHEAD_MIN:
        return False
    ahead = Ahead(path, identity(st), st.st_size)
    thread = threading.Thread(target=ahead.run, name="ntrace-read-ahead", daemon=True)
    for dropped, _ in _PENDING:  # one not handed over ends on its own, building nothing: nothing waits for it
        dropped.build = None
        dropped.go.set()
    _PENDING.clear()
    _PENDING.append((ahead, thread))
    thread.start()
    return True


def build(make: Build) -> None:
    """Have the pending read-ahead, once parsed, run `make` on its thread and keep what it returns for the reader: called by whoever has imported everything `make` runs, so that the thread imports nothing while that caller imports on."""
    if _PENDING:
        ahead = _PENDING[-1][0]
        ahead.build = make
        ahead.go.set()


def taken(path: Path, stage: str) -> Parsed | None:
    """What the read-ahead of the file at `path` parsed, once done (its parsing reported as `stage` meanwhile), if it was started on this very version of the file and parsed it whole; any read-ahead is handed over once, to the next read."""
    if not _PENDING:
        return None
    ahead, thread = _PENDING.pop()
    try:
        same = identity(os.stat(path)) == ahead.identity
    except OSError:
        same = False
    if not same:  # another file's, or this one's before it changed: nothing to build
        ahead.build = None
    ahead.go.set()  # with no `build`, the thread keeps the raw parts
    with polled(stage, ahead.size, lambda: sum(ahead.counts)) if same else contextlib.nullcontext():
        thread.join()  # also another file's, or this one's before it changed: no thread may run on while the reader forks (_fork)
    if not same or (ahead.parsed is not None and ahead.parsed.built is not None and path != ahead.path):
        return None  # what was built names the path it was started with in its warnings: only for a read of that path
    return ahead.parsed
