"""Read a trace file's JSON bytes without trusting the file: regular files only, gzip bounded by memory, truncated gzip salvaged.

Only regular files are opened (a FIFO or a device would block or never end); a gzip stream is
decompressed with an output cap derived from the memory available, so a small file that
inflates to more than fits (a gzip bomb, or a huge trace) fails early with both sizes named;
a gzip stream cut off mid-write yields what it holds, with a warning; a UTF-8 BOM is dropped.
An uncompressed file can be memory-mapped instead of read (`map_json`), so its pages can be
released as decoding moves on.
"""

from __future__ import annotations

import errno
import mmap
import os
import re
import stat
import zlib
from pathlib import Path

from ntrace.errors import InputError, TraceFormatError
from ntrace.limits import DECODE_FACTOR, available_memory, check_fits, size
from ntrace.progress import read_all

_GZIP_MAGIC = b"\x1f\x8b"
_BOM = b"\xef\xbb\xbf"
_TEXT = re.compile(rb"\s*\S")
_EMPTY = "is empty: no trace events (was the profiler stopped before it wrote?)"


def read_json(path: Path, warnings: list[str], *, factor: int = DECODE_FACTOR) -> bytes:
    """The file's JSON bytes, gunzipped when gzip, without a BOM; `factor` is the memory needed per JSON byte."""
    compressed = _read_regular(path, factor)
    raw = _gunzip(compressed, path, warnings, factor) if compressed[:2] == _GZIP_MAGIC else compressed
    if raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    if not raw or raw.isspace():  # not raw.strip(): that copies the whole file
        raise TraceFormatError(path, _EMPTY)
    return raw


def map_json(path: Path, warnings: list[str], *, factor: int = DECODE_FACTOR) -> bytes | mmap.mmap:
    """The file's JSON as a read-only memory map when it is plain JSON; gzip or a BOM fall back to `read_json`'s bytes.

    The map stays open while anything refers to it (the decoder's raw event slices do). Its
    pages are the page cache's, so they can be released and read again; a file truncated by
    another process while it is being decoded would fault, as with any mapped file.
    """
    if error := regular_file_error(path):
        raise error
    try:
        with path.open("rb") as fh:
            total = os.fstat(fh.fileno()).st_size
            check_fits(path, total, factor=factor)
            head = fh.read(3)
            if not total or head[:2] == _GZIP_MAGIC or head == _BOM:
                return read_json(path, warnings, factor=factor)
            mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None
    if not _TEXT.match(mapped):
        raise TraceFormatError(path, _EMPTY)
    return mapped


def regular_file_error(path: Path) -> InputError | None:
    """Why `path` cannot be read as a trace file (missing, symlink loop, not a regular file), or None when it can."""
    try:
        st = path.stat()
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return InputError(path, "is a symbolic link loop")
        if exc.errno == errno.ENOENT:
            return InputError(path, "is a broken symbolic link" if path.is_symlink() else "does not exist")
        return InputError(path, f"cannot be read ({exc.strerror or exc})")
    if stat.S_ISDIR(st.st_mode):
        return InputError(path, "is a directory, not a trace file")
    if not stat.S_ISREG(st.st_mode):
        return InputError(path, "is not a regular file (a pipe, socket or device?); copy the trace to a file first")
    return None


def _read_regular(path: Path, factor: int) -> bytes:
    """The bytes of `path`, once it is known to be a regular file whose size fits in memory."""
    if error := regular_file_error(path):
        raise error
    try:
        with path.open("rb") as fh:
            total = os.fstat(fh.fileno()).st_size
            check_fits(path, total, factor=factor)
            return read_all(fh, total, f"reading {path.name}")
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None


def _gunzip(data: bytes, path: Path, warnings: list[str], factor: int) -> bytes:
    """Decompress every gzip member, at most the memory available / `factor` bytes; a truncated stream gives what it holds."""
    cap = max(available_memory() // factor, 1)
    parts: list[bytes] = []
    held = 0
    rest = data
    while rest:
        inflater = zlib.decompressobj(wbits=31)
        try:
            part = inflater.decompress(rest, cap - held + 1)
        except zlib.error as exc:
            raise TraceFormatError(path, f"is a corrupt gzip file ({exc}); re-copy it from the source") from None
        held += len(part)
        parts.append(part)
        if held > cap:
            raise InputError(
                path,
                f"is too large to analyze here: its {size(len(data))} of gzip inflate to more than {size(cap)} of JSON, "
                f"which needs more than {size(cap * factor)} of memory; use --max-events, or a machine with more memory",
            )
        if not inflater.eof:
            warnings.append(
                f"{path}: the gzip stream is cut off at byte {len(data):,} (a copy not finished?); "
                f"using the {size(held)} it holds"
            )
            break
        rest = inflater.unused_data.lstrip(b"\0")  # concatenated members; zero padding after the last one
        if rest and rest[:2] != _GZIP_MAGIC:
            warnings.append(f"{path}: {len(rest):,} bytes of trailing data after the gzip stream were ignored")
            break
    return parts[0] if len(parts) == 1 else b"".join(parts)
