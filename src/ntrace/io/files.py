"""Read input files without trusting them: regular files only, sizes checked against the memory available, gzip inflated with a ceiling, a cut-off gzip salvaged.

Only regular files are opened (a FIFO or a device would block or never end). Decoding holds
the JSON text, the decoder's objects and the columns at once: the fast path peaks at about
DECODE_FACTOR times the uncompressed JSON and the plain Python-object path at
PLAIN_DECODE_FACTOR, so a file whose estimate exceeds the memory available (the smallest of
MemAvailable, the cgroup's headroom, the RLIMIT_AS and RLIMIT_DATA headroom and `NTRACE_MEMORY_LIMIT`) fails before decoding with both
sizes named, instead of being killed half-way. A gzip stream is inflated in chunks with an
output cap derived from the same limit (a gzip bomb fails early); a stream cut off mid-write
yields what it holds, with a warning; a UTF-8 BOM is dropped. Files whose first bytes say they are
something else (bzip2, xz, zstd, lz4, zip, 7-Zip, Parquet, NUL bytes) are refused by name. An uncompressed file can be
memory-mapped instead of read (`map_json`), so its pages can be released as decoding moves on.
"""

from __future__ import annotations

import contextlib
import errno
import io
import mmap
import os
import re
import stat
import tempfile
import zlib
from pathlib import Path
from typing import BinaryIO, Iterator

from ntrace.errors import InputError, TraceFormatError
from ntrace.io.progress import read_all, report
from ntrace.units import size

try:  # imported here, not when first needed: the read-ahead's thread maps files while the caller imports (ntrace.io.kineto._ahead)
    import resource
except ImportError:  # not on POSIX
    resource = None  # type: ignore[assignment]

#: Peak memory while decoding, as a multiple of the uncompressed JSON size (fast path).
DECODE_FACTOR = 4
#: The same for the plain decoder, which builds a Python dict per event.
PLAIN_DECODE_FACTOR = 12

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def available_memory() -> int:
    """Bytes this process may still allocate: the smallest of MemAvailable, the cgroup's headroom, the address-space and data limits' headroom (ulimit -v, -d) and NTRACE_MEMORY_LIMIT."""
    limits = (_meminfo_available() or _sysconf_available(), _cgroup_headroom(), _rlimit_headroom(), _env_limit())
    return min(v for v in limits if v is not None)


def check_fits(path: Path, json_bytes: int, *, factor: int = DECODE_FACTOR, what: str = "JSON") -> None:
    """Raise InputError when `json_bytes` of JSON, needing `factor` bytes of memory each, would not fit."""
    need = json_bytes * factor
    have = available_memory()
    if need > have:
        raise InputError(
            path,
            f"is too large to analyze here: {size(json_bytes)} of {what} needs about {size(need)} of memory, "
            f"only {size(have)} is available; use --max-events to analyze the start of it, or a machine with more memory",
        )


def _meminfo_available() -> int | None:
    """MemAvailable from /proc/meminfo (free memory plus reclaimable cache), or None off Linux."""
    try:
        text = Path("/proc/meminfo").read_text()
    except OSError:
        return None
    match = re.search(r"^MemAvailable:\s+(\d+) kB", text, re.MULTILINE)
    return int(match.group(1)) * 1024 if match else None


def _sysconf_available() -> int:
    """Free physical memory from sysconf; effectively unlimited where the platform cannot say."""
    try:
        return os.sysconf("SC_AVPHYS_PAGES") * os.sysconf("SC_PAGE_SIZE")
    except (ValueError, OSError, AttributeError):
        return 1 << 62


def _cgroup_headroom() -> int | None:
    """memory.max − memory.current of this process's cgroup (v2), or None when unlimited or unknown."""
    try:
        line = Path("/proc/self/cgroup").read_text().splitlines()[0]
        base = Path("/sys/fs/cgroup") / line.split(":", 2)[2].lstrip("/")
        limit = (base / "memory.max").read_text().strip()
        current = int((base / "memory.current").read_text())
    except (OSError, IndexError, ValueError):
        return None
    return None if limit == "max" else max(int(limit) - current, 0)


def _rlimit_headroom() -> int | None:
    """The soft RLIMIT_AS and RLIMIT_DATA less what this process already maps (VmSize, VmData), or None when neither is set (or off Linux)."""
    if resource is None:
        return None
    try:
        status = Path("/proc/self/status").read_text()
    except OSError:
        return None
    room = []
    for limit, field in ((resource.RLIMIT_AS, "VmSize"), (resource.RLIMIT_DATA, "VmData")):
        soft = resource.getrlimit(limit)[0]
        match = re.search(rf"^{field}:\s+(\d+) kB", status, re.MULTILINE)
        if soft != resource.RLIM_INFINITY and match:
            room.append(max(soft - int(match.group(1)) * 1024, 0))
    return min(room) if room else None


def _env_limit() -> int | None:
    """NTRACE_MEMORY_LIMIT in bytes (suffixes K, M, G, T), or None when unset or unreadable."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMGT]?)i?B?\s*", os.environ.get("NTRACE_MEMORY_LIMIT", ""), re.IGNORECASE)
    return int(match.group(1)) * _UNITS[match.group(2).upper()] if match else None


_GZIP_MAGIC = b"\x1f\x8b"
#: What other files a trace name may hold, by their first bytes: refused with what they are, never decoded as JSON.
_OTHER_FORMATS = (
    (b"BZh", "bzip2-compressed; decompress it first (bunzip2 -k) or recompress it with gzip"),
    (b"\xfd7zXZ\x00", "xz-compressed; decompress it first (unxz -k) or recompress it with gzip"),
    (b"\x28\xb5\x2f\xfd", "zstd-compressed; decompress it first (unzstd) or recompress it with gzip"),
    (b"\x04\x22\x4d\x18", "lz4-compressed; decompress it first (unlz4) or recompress it with gzip"),
    (b"PK\x03\x04", "a zip archive; extract the trace from it first"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-Zip archive; extract the trace from it first"),
    (b"PAR1", "a Parquet file; name it *.parquet to read it as an ntrace cache or a Neuron Explorer export"),
    (b"\0\0\0\0", "not valid JSON: it starts with NUL bytes (a zero-filled or sparse file, a copy never written?)"),
)
_BOM = b"\xef\xbb\xbf"
_TEXT = re.compile(rb"\s*\S")
#: Compressed bytes read, and most bytes inflated, at a time.
_IN_CHUNK = 1 << 20
_OUT_CHUNK = 16 << 20
_EMPTY = "is empty: no trace events (was the profiler stopped before it wrote?)"


def read_json(path: Path, warnings: list[str], *, factor: int = DECODE_FACTOR) -> bytes:
    """The file's JSON bytes, gunzipped when gzip, without a BOM; `factor` is the memory needed per JSON byte."""
    with _open_regular(path, factor) as (fh, total):
        if fh.read(2) == _GZIP_MAGIC:
            fh.seek(0)
            sink = io.BytesIO()
            _gunzip(fh, total, sink, path, warnings, factor)
            raw: bytes = sink.getvalue()  # the buffer itself, not a copy
        else:
            fh.seek(0)
            raw = read_all(fh, total, f"reading {path.name}")
    if raw.startswith(_BOM):
        raw = raw[len(_BOM) :]
    if not raw or raw.isspace():  # not raw.strip(): that copies the whole file
        raise TraceFormatError(path, _EMPTY)
    return raw


def map_json(path: Path, warnings: list[str], *, factor: int = DECODE_FACTOR) -> mmap.mmap | bytes:
    """The file's JSON as a read-only memory map, so a decoder can release pages it has read; gzip is streamed into an unnamed temporary file first.

    The map stays open while anything refers to it (the decoder's raw event slices do). Its
    pages are the page cache's, so they can be released and read again; a file truncated by
    another process while it is being decoded would fault, as with any mapped file. A file
    that starts with a BOM is read as bytes instead.
    """
    with _open_regular(path, factor) as (fh, total):
        head = fh.read(3)
        if head[:2] == _GZIP_MAGIC:
            notes: list[str] = []
            try:
                mapped = _gunzip_mapped(fh, total, path, notes, factor)
            except OSError:  # no room for the temporary file: inflate into memory instead
                return read_json(path, warnings, factor=factor)
            warnings.extend(notes)
        elif not total or head == _BOM:
            return read_json(path, warnings, factor=factor)
        else:
            try:
                mapped = mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ)
            except OSError:  # a file system that cannot map files: read it
                return read_json(path, warnings, factor=factor)
    if not _TEXT.match(mapped):
        raise TraceFormatError(path, _EMPTY)
    return mapped


def identity(st: os.stat_result) -> tuple[int, ...]:
    """What tells one version of a file from another without reading it (as git's index does): device, inode, size, modification and change times (ns)."""
    return (st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


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


def _gunzip_mapped(fh: BinaryIO, total: int, path: Path, warnings: list[str], factor: int) -> mmap.mmap:
    """The gzip file `fh` inflated into an unnamed temporary file, memory-mapped (the file goes when the map does)."""
    fh.seek(0)
    with tempfile.TemporaryFile(prefix="ntrace-") as tmp:
        if not _gunzip(fh, total, tmp, path, warnings, factor):
            raise TraceFormatError(path, _EMPTY)
        tmp.seek(0)
        if tmp.read(3) == _BOM:
            tmp.seek(0)
            tmp.write(b"   ")  # JSON whitespace in place of the BOM: the map starts at offset 0
        tmp.flush()
        return mmap.mmap(tmp.fileno(), 0, access=mmap.ACCESS_READ)


@contextlib.contextmanager
def _open_regular(path: Path, factor: int) -> Iterator[tuple[BinaryIO, int]]:
    """The open file and its size, once it is known to be a regular file whose size fits in memory."""
    if error := regular_file_error(path):
        raise error
    try:
        with path.open("rb") as fh:
            total = os.fstat(fh.fileno()).st_size
            _refuse_other_formats(fh.read(8), path)
            fh.seek(0)
            check_fits(path, total, factor=factor)
            yield fh, total
    except OSError as exc:
        raise InputError(path, f"cannot be read ({exc.strerror or exc})") from None


def _refuse_other_formats(head: bytes, path: Path) -> None:
    """Raise TraceFormatError when the file's first bytes say it is compressed otherwise than gzip, an archive, Parquet or zeros."""
    for magic, what in _OTHER_FORMATS:
        if head.startswith(magic):
            raise TraceFormatError(path, f"is {what}")


def _gunzip(src: BinaryIO, total: int, sink: BinaryIO, path: Path, warnings: list[str], factor: int) -> int:
    """Stream every gzip member of `src` (`total` bytes) into `sink`, at most the memory available / `factor` bytes; returns the bytes written.

    A truncated stream gives what it holds, with a warning; zero padding after the last member
    is skipped, other trailing data is ignored with a warning.
    """
    cap = max(available_memory() // factor, 1)
    held = read = 0
    inflater = zlib.decompressobj(wbits=31)
    pending = b""
    while True:
        if not pending:
            pending = src.read(_IN_CHUNK)
            read += len(pending)
            report(f"reading {path.name}", read, total, "bytes")
            if not pending:
                break
        try:
            out = inflater.decompress(pending, _OUT_CHUNK)
        except zlib.error as exc:
            raise TraceFormatError(path, f"is a corrupt gzip file ({exc}); re-copy it from the source") from None
        pending = inflater.unconsumed_tail
        held += len(out)
        if held > cap:
            raise InputError(
                path,
                f"is too large to analyze here: its {size(total)} of gzip inflate to more than {size(cap)} of JSON, "
                f"which needs more than {size(cap * factor)} of memory; use --max-events, or a machine with more memory",
            )
        sink.write(out)
        if not inflater.eof:
            continue
        pending = inflater.unused_data.lstrip(b"\0")  # concatenated members; zero padding after the last one
        while len(pending) < 2 and (more := src.read(_IN_CHUNK)):
            read += len(more)
            pending = (pending + more).lstrip(b"\0")
        if not pending:
            return held
        if pending[:2] != _GZIP_MAGIC:
            warnings.append(f"{path}: {len(pending) + total - read:,} bytes of trailing data after the gzip stream were ignored")
            return held
        inflater = zlib.decompressobj(wbits=31)
    warnings.append(f"{path}: the gzip stream is cut off at byte {total:,} (a copy not finished?); using the {size(held)} it holds")
    return held
