"""Progress of long reads (bytes read, events decoded): readers report how far they are; whoever opened a sink (the CLI's progress bar) hears it.

`report(stage, done, total, unit)` costs one context-variable lookup when nobody listens, so a
library user who never asks for progress pays nothing. The CLI opens a sink around a run with
`with reporting(sink):` and draws it with a progress-bar library.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from contextvars import ContextVar
from typing import IO, Callable, Iterator

#: Called with (stage, done, total or None, unit) as a read goes on.
Sink = Callable[[str, int, "int | None", str], None]

_SINK: ContextVar[Sink | None] = ContextVar("ntrace_progress", default=None)

_CHUNK = 16 << 20

#: Seconds between the reports `polled` makes.
POLL_SECONDS = 0.2


@contextlib.contextmanager
def reporting(sink: Sink) -> Iterator[None]:
    """Send every report made inside the block (in this context) to `sink`."""
    token = _SINK.set(sink)
    try:
        yield
    finally:
        _SINK.reset(token)


def report(stage: str, done: int, total: int | None = None, unit: str = "") -> None:
    """Tell the sink (if any) how far `stage` is: e.g. report("reading trace.json", n, size, "bytes")."""
    sink = _SINK.get()
    if sink is not None:
        sink(stage, done, total, unit)


def listening() -> bool:
    """Whether a sink hears reports: a reader need not measure its progress otherwise."""
    return _SINK.get() is not None


@contextlib.contextmanager
def polled(stage: str, total: int, done: Callable[[], int], unit: str = "bytes") -> Iterator[None]:
    """While the block runs, report done() (at most `total`, never going back) as `stage` every POLL_SECONDS from a helper thread; nothing when nobody listens.

    For work that runs in C with the GIL released (the native decoder), which cannot report
    itself: the helper reads what it counts and reports in this context, so the same sink hears it.
    """
    if not listening():
        yield
        return
    stop = threading.Event()
    failed: list[BaseException] = []

    def poll() -> None:
        last = -1
        try:
            while not stop.wait(POLL_SECONDS):
                if (now := min(done(), total)) > last:
                    report(stage, now, total, unit)
                    last = now
        except BaseException as exc:  # a sink that fails: raised in the caller once the block ends, as a report made there would be
            failed.append(exc)

    helper = threading.Thread(target=contextvars.copy_context().run, args=(poll,), name="ntrace-progress", daemon=True)
    helper.start()
    try:
        yield
    finally:
        stop.set()
        helper.join()
    if failed:
        raise failed[0]


def read_all(fh: IO[bytes], total: int, stage: str) -> bytes:
    """`fh.read()`, in 16 MiB chunks reported as bytes read; one plain read when nobody listens."""
    if not listening() or total <= _CHUNK:
        return fh.read()
    buffer = bytearray(total)  # filled in place: joining chunks would hold the file twice
    done = 0
    with memoryview(buffer) as view:
        while done < total and (n := fh.readinto(view[done : done + _CHUNK])):  # type: ignore[attr-defined]  # every binary file object has readinto; IO[bytes] does not say so
            done += n
            report(stage, done, total, "bytes")
    del buffer[done:]  # the file shrank while being read
    buffer += fh.read()  # or grew
    return buffer  # type: ignore[return-value]  # a bytearray: every consumer takes any bytes-like buffer
