"""Atomic output files: every file ntrace writes goes to a temporary name beside its target, then is renamed, so no reader ever sees half a file."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import BinaryIO, Iterator

from ntrace.errors import OutputError


@contextlib.contextmanager
def atomic_open(path: str | Path) -> Iterator[BinaryIO]:
    """Open a binary file that appears at `path` only when the block ends without an exception.

    The data goes to a hidden temporary file beside `path` (same directory, so the final
    `os.replace` is one atomic rename on the same file system); it is flushed and fsynced
    before the rename. On any exception, including KeyboardInterrupt, the temporary file is
    removed and an existing file at `path` is left as it was.
    """
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".part", dir=directory)
    except OSError as exc:
        raise OutputError(path, f"cannot be written ({exc.strerror or exc}); check that {directory} exists and is writable") from None
    try:
        with os.fdopen(fd, "wb") as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
    except BaseException as exc:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        if isinstance(exc, OSError):
            raise OutputError(path, f"cannot be written ({exc.strerror or exc})") from None
        raise


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write `data` to `path` atomically; returns the path."""
    with atomic_open(path) as fh:
        fh.write(data)
    return Path(path)


def write_text(path: str | Path, text: str) -> Path:
    """Write `text` (UTF-8) to `path` atomically; returns the path."""
    return write_bytes(path, text.encode())


def _umask() -> int:
    """The process umask (read by setting and restoring it: there is no getter)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask
