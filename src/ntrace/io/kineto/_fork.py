"""Decode the second half of a large events array in a forked process while this one decodes the first, so a load uses two cores.

A fork is safe only while no native thread but those `import polars` starts runs: Polars starts
its thread pool on first use, and a child forked after that deadlocks in it. So the helper is
forked on Linux only, with two or more cores, while every other thread is a Python thread or one
of those (a fresh CLI run, or a library process that has not run Polars yet), and only for
arrays of SPLIT_MIN bytes or more. It decodes from the event after a cut near the middle, writes
its columns as Arrow IPC into an unnamed in-memory file and says so through a pipe. The parent's
part ends at that cut, so its last window decodes only if the cut is an element boundary
(_windows' proof), which makes the child's start one too; the child's columns are taken
only then, only if it succeeded and only if it finished in time (twice the parent's own time,
at least a second), and otherwise the parent decodes that part itself. Nothing is written
anywhere but memory.
"""

from __future__ import annotations

import contextlib
import os
import select
import signal
import sys
import threading
import warnings
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Callable

from ntrace.io.kineto._windows import Buffer, Outline, next_cut

if TYPE_CHECKING:  # imported where used: the native parse (_ahead) runs this module's second_core before Polars is imported
    import polars as pl

    Columns = dict[str, pl.Series]

#: Smallest events array (bytes) worth a helper: the fork and the columns' trip back cost about 10 ms, decoding 8 MiB about 45 ms.
SPLIT_MIN = 8 << 20
#: The helper's share of the array: a little under half, as it starts later and must write its columns out.
SHARE = 0.45
#: Threads `import polars` starts: jemalloc's background threads (jemalloc makes them safe to fork) and the idle spill cleaner.
_IDLE_AT_IMPORT = {"jemalloc_bg_thd", "polars-ooc-clea"}
_DONE = b"1"


@dataclass
class Helper:
    """A forked process decoding the part of the array from `start`; this process decodes up to `boundary`."""

    pid: int
    fd: int  # the in-memory file the helper writes its columns to
    done: int  # read end of the pipe the helper writes _DONE to once its columns are written
    boundary: int  # where this process's part ends: just after an event's `}`
    start: int  # where the helper's part starts: the `{` of the next event

    def columns(self, patience: float) -> Columns | None:
        """The helper's columns once it has written them, waiting at most `patience` seconds; None when it failed or took longer."""
        import polars as pl

        ready, _, _ = select.select([self.done], [], [], patience)
        if not ready or os.read(self.done, 1) != _DONE:
            return None
        try:
            with open(self.fd, "rb", closefd=False) as fh:
                fh.seek(0)
                frame = pl.read_ipc(fh)
        except (OSError, pl.exceptions.PolarsError):
            return None
        return {name: frame[name] for name in frame.columns}

    def close(self) -> None:
        """Stop the helper (it is done, or no longer wanted) and free its memory; idempotent."""
        if self.pid:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
            self.pid = 0
        for fd in (self.fd, self.done):
            if fd >= 0:
                os.close(fd)
        self.fd = self.done = -1


def split(text: Buffer, found: Outline, decode: Callable[[Outline], Columns | None]) -> tuple[Outline, Helper | None]:
    """This process's part of `found` and the helper decoding the rest with `decode`, or (`found`, None) when no helper is forked."""
    if found.end - found.start < SPLIT_MIN or not _can_fork():
        return found, None
    cut = next_cut(text, found.end - int((found.end - found.start) * SHARE), found.end)
    if cut is None:
        return found, None
    fd = done = signal_done = -1
    try:
        fd = os.memfd_create("ntrace-decode", os.MFD_CLOEXEC)
        done, signal_done = os.pipe()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", DeprecationWarning)  # Python 3.12+ warns of forking with threads; only safe ones run here
            pid = os.fork()
    except OSError:  # no memfd (a sandbox), or no memory or process left for a fork: decode alone
        for each in (fd, done, signal_done):
            if each >= 0:
                os.close(each)
        return found, None
    if pid == 0:
        os.close(done)
        _child(decode, Outline(cut.end() - 1, found.end, None), fd, signal_done)
    os.close(signal_done)
    return replace(found, end=cut.start() + 1), Helper(pid, fd, done, cut.start() + 1, cut.end() - 1)


def _child(decode: Callable[[Outline], Columns | None], part: Outline, fd: int, signal_done: int) -> None:
    """The helper: decode `part`, write its columns to `fd`, then _DONE to `signal_done`; it never returns, and a failure just exits."""
    import polars as pl

    try:
        cols = decode(part)
        if cols is not None:
            with open(fd, "wb", closefd=False) as fh:
                pl.DataFrame(cols).write_ipc(fh, compression="uncompressed")
            os.write(signal_done, _DONE)
    finally:
        os._exit(0)  # no interpreter teardown, atexit handler or flush of the parent's buffered output


def in_worker() -> None:
    """Initializer of --jobs worker processes: they fork no helper, as they already share out the cores."""
    os.environ["NTRACE_FORK"] = "0"


def second_core() -> bool:
    """Whether this process may put a second core to work on decoding: NTRACE_FORK is not 0 (--jobs workers set it: they already share out the cores) and two or more cores are ours."""
    return os.environ.get("NTRACE_FORK") != "0" and hasattr(os, "sched_getaffinity") and len(os.sched_getaffinity(0)) >= 2


def _can_fork() -> bool:
    """Whether forking is wanted (second_core), safe and useful: Linux, and no native thread but those `import polars` starts."""
    if sys.platform != "linux" or not second_core():
        return False
    python = {t.native_id for t in threading.enumerate()}
    try:
        return all(int(t) in python or _name(t) in _IDLE_AT_IMPORT for t in os.listdir("/proc/self/task"))
    except (OSError, ValueError):
        return False


def _name(task: str) -> str:
    """The name of one of this process's threads."""
    with open(f"/proc/self/task/{task}/comm") as fh:
        return fh.read().strip()
