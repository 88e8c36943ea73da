"""Atomic output files: every file ntrace writes goes to a temporary name beside its target, then is renamed, so no reader ever sees half a file."""

from __future__ import annotations

import contextlib
import io
import os
import secrets
from pathlib import Path
from typing import Any, BinaryIO, Iterator

from ntrace.errors import OutputError, valid_text

#: Temporary files of the writes in progress: each is removed when its write ends without a rename,
#: and `remove_partial_files` removes what an interrupt left (one arriving during that cleanup, say).
_PARTIAL: set[str] = set()


@contextlib.contextmanager
def atomic_open(path: str | Path, durable: bool = True) -> Iterator[BinaryIO]:
    """Open a binary file that appears at `path` only when the block ends without an exception.

    The data goes to a hidden temporary file beside `path` (same directory, so the final
    `os.replace` is one atomic rename on the same file system); it is flushed and fsynced
    before the rename. On any exception, including KeyboardInterrupt, the temporary file is
    removed and an existing file at `path` is left as it was. When `path` is a symbolic link,
    the file it points to is written (as `cp` does) and the link is kept. `durable=False` skips the
    fsync, for files that may be lost in a crash (an entry of the summary memo, recomputed then).
    """
    path = Path(path)
    if path.is_symlink():
        path = Path(os.path.realpath(path))
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = _create_temporary(path, directory)
    raw = _File(fd, "wb")
    try:
        with io.BufferedWriter(raw) as fh:
            yield fh
            fh.flush()
            if durable:
                os.fsync(fd)
        os.chmod(tmp, 0o666 & ~_umask())
        os.replace(tmp, path)
        _PARTIAL.discard(tmp)
    except OSError as exc:
        raise OutputError(path, f"cannot be written ({exc.strerror or exc})") from None
    except Exception:
        if raw.failure is None:
            raise
        raise OutputError(path, f"cannot be written ({raw.failure.strerror or raw.failure})") from None  # a writer's own error for it (Polars: "transport error")
    finally:
        _remove(tmp)


class _File(io.FileIO):
    """The temporary file, remembering why a write failed (a full disk, a file size limit) for writers that report it as their own error.

    It hides its descriptor (`fileno` raises), so writers such as Polars write through `write`
    instead of to the descriptor directly, where the failure would never be seen.
    """

    failure: OSError | None = None

    def fileno(self) -> int:
        """Refuse, as a file without a descriptor does."""
        raise io.UnsupportedOperation("fileno")

    def write(self, data: Any) -> int | None:  # type: ignore[override]  # typeshed's Buffer parameter; any bytes-like object here
        """Write `data`, keeping the OSError when it fails."""
        try:
            return super().write(data)
        except OSError as exc:
            self.failure = exc
            raise


def _create_temporary(path: Path, directory: Path) -> tuple[int, str]:
    """Create a new hidden temporary file beside `path`, registered in `_PARTIAL` before it exists (an interrupt at any point leaves nothing behind)."""
    stem = os.fsdecode(os.fsencode(path.name)[:200])  # room for the prefix and suffix within a 255-byte name
    while True:
        tmp = str(directory / f".{stem}.{secrets.token_hex(4)}.part")
        _PARTIAL.add(tmp)
        try:
            return os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600), tmp
        except FileExistsError:
            _PARTIAL.discard(tmp)
        except OSError as exc:
            _PARTIAL.discard(tmp)
            raise OutputError(path, f"cannot be written ({exc.strerror or exc}); check that {directory} exists and is writable") from None


def remove_partial_files() -> None:
    """Remove the temporary file of every atomic write still in progress (the CLI calls this when interrupted)."""
    for tmp in list(_PARTIAL):
        _remove(tmp)


def _remove(tmp: str) -> None:
    """Remove `tmp` if it is still a write's unrenamed temporary file."""
    if tmp in _PARTIAL:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        _PARTIAL.discard(tmp)


def write_bytes(path: str | Path, data: bytes) -> Path:
    """Write `data` to `path` atomically; returns the path."""
    with atomic_open(path) as fh:
        fh.write(data)
    return Path(path)


def write_text(path: str | Path, text: str) -> Path:
    """Write `text` (UTF-8, a file name's undecodable bytes as escapes) to `path` atomically; returns the path."""
    return write_bytes(path, valid_text(text).encode())


def _umask() -> int:
    """The process umask (read by setting and restoring it: there is no getter)."""
    mask = os.umask(0)
    os.umask(mask)
    return mask
