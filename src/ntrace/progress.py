"""A progress bar on stderr for long loads (bytes read, events decoded): drawn only on a terminal, only after about a second.

Loading code calls `report(stage, done, total)` wherever it knows how far it is; it costs one
context-variable lookup when no bar is active, so library users who never ask for a bar pay
nothing. The CLI opens a bar around a load with `with progress(enabled=not quiet):`. A
background thread redraws the line ten times a second, starting only after `delay` seconds,
so a fast load prints nothing; the line is erased when the load ends.
"""

from __future__ import annotations

import contextlib
import sys
import threading
import time
from contextvars import ContextVar
from typing import BinaryIO, Iterator, TextIO

from ntrace.limits import size

_ACTIVE: ContextVar["Bar | None"] = ContextVar("ntrace_progress", default=None)

_WIDTH = 24


class Bar:
    """The state of one progress line and the thread that draws it."""

    def __init__(self, stream: TextIO, delay: float = 1.0, interval: float = 0.1) -> None:
        self.stream = stream
        self.delay = delay
        self.interval = interval
        self.started = time.monotonic()
        self.stage, self.done, self.total, self.unit = "loading", 0, None, ""
        self.drawn = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ntrace-progress", daemon=True)

    def update(self, stage: str, done: int, total: int | None = None, unit: str = "") -> None:
        """Record how far `stage` is (read by the drawing thread; plain attribute writes are atomic)."""
        self.stage, self.done, self.total, self.unit = stage, done, total, unit

    def line(self) -> str:
        """The text of the progress line as it is now."""
        elapsed = time.monotonic() - self.started
        count = size(self.done) if self.unit == "bytes" else f"{self.done:,}{' ' + self.unit if self.unit else ''}"
        if self.total:
            frac = min(1.0, self.done / self.total)
            full = int(frac * _WIDTH)
            bar = "#" * full + "-" * (_WIDTH - full)
            of = size(self.total) if self.unit == "bytes" else f"{self.total:,}"
            return f"{self.stage} [{bar}] {frac * 100:5.1f}% {count} of {of}  {elapsed:.1f}s"
        spin = "|/-\\"[int(elapsed / self.interval) % 4]
        return f"{self.stage} {spin} {count}  {elapsed:.1f}s"

    def _draw(self) -> None:
        text = self.line()
        self.stream.write("\r" + text.ljust(self.drawn))
        self.stream.flush()
        self.drawn = len(text)

    def _run(self) -> None:
        if self._stop.wait(self.delay):
            return
        while not self._stop.is_set():
            self._draw()
            self._stop.wait(self.interval)

    def start(self) -> None:
        self._thread.start()

    def close(self) -> None:
        """Stop drawing and erase the line, so what follows starts on a clean line."""
        self._stop.set()
        self._thread.join()
        if self.drawn:
            self.stream.write("\r" + " " * self.drawn + "\r")
            self.stream.flush()


@contextlib.contextmanager
def progress(enabled: bool = True, stream: TextIO | None = None, delay: float = 1.0) -> Iterator[Bar | None]:
    """Show a progress bar for the block on `stream` (stderr) when enabled and the stream is a terminal."""
    stream = stream or sys.stderr
    if not enabled or not stream.isatty():
        yield None
        return
    bar = Bar(stream, delay)
    token = _ACTIVE.set(bar)
    bar.start()
    try:
        yield bar
    finally:
        _ACTIVE.reset(token)
        bar.close()


def report(stage: str, done: int, total: int | None = None, unit: str = "") -> None:
    """Tell the active bar (if any) how far `stage` is: e.g. report("reading trace.json", n, size, "bytes")."""
    bar = _ACTIVE.get()
    if bar is not None:
        bar.update(stage, done, total, unit)


_CHUNK = 16 << 20


def read_all(fh: BinaryIO, total: int, stage: str) -> bytes:
    """`fh.read()`, in 16 MiB chunks reported to the active bar as bytes read; one plain read when no bar is active."""
    bar = _ACTIVE.get()
    if bar is None or total <= _CHUNK:
        return fh.read()
    buffer = bytearray(total)  # filled in place: joining chunks would hold the file twice
    done = 0
    with memoryview(buffer) as view:
        while done < total and (n := fh.readinto(view[done : done + _CHUNK])):
            done += n
            bar.update(stage, done, total, "bytes")
    del buffer[done:]  # the file shrank while being read
    buffer += fh.read()  # or grew
    return buffer  # type: ignore[return-value]  # a bytearray: every consumer takes any bytes-like buffer
