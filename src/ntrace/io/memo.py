"""The summary memo: each trace file's Summary (or RankSummary, or for `report` the Summary with its timeline) kept between runs in the user's cache directory, so every command after the first reads a directory of traces in seconds.

An entry is keyed by the path as given (outputs print it), the file's identity and change times
(device, inode, size, mtime, ctime: what git's index compares), the same for every capture.json
the trace's variant could come from, the decoder used, and a digest of ntrace's own code and of
the libraries that decode and compute: a changed trace, manifest, ntrace or Polars is a miss. Only
the default analysis is kept (no extra lanes, --max-events, --window or --steps), never one of a
downloaded copy. Entries are written whole (a temporary file renamed) and read like any stored
summary, a damaged one being recomputed; the memo never makes a command fail, and never writes
beside the inputs.

NTRACE_CACHE=0 turns it off; NTRACE_CACHE_DIR moves it (default $XDG_CACHE_HOME/ntrace, else
~/.cache/ntrace); it keeps at most NTRACE_CACHE_MB megabytes (default 1024), dropping the entries
least recently used, and drops at once every entry of other ntrace code, which can never be read.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import shutil
import tempfile
from dataclasses import dataclass, replace
from functools import lru_cache
from importlib.machinery import EXTENSION_SUFFIXES
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from ntrace.errors import NtraceError, valid_text
from ntrace.io.atomic import atomic_open
from ntrace.io.files import identity
from ntrace.io.manifest import manifest_candidates
from ntrace.io.remote import COPIES_PREFIX

if TYPE_CHECKING:  # imported where used: entry() is asked before Polars is imported (ntrace.io.read_ahead)
    from ntrace.summary import RankSummary, Summary

#: The kinds of entry: a trace's whole Summary, the same with what its HTML timeline draws (`report`), or the RankSummary `ntrace ranks` computes alone.
Kind = Literal["summary", "timeline", "rank"]
_SUFFIX: dict[Kind, str] = {"summary": ".summary", "timeline": ".timeline", "rank": ".rank"}
#: The suffix of a report section's entry: its HTML, keyed by the digest of the timeline entry it was drawn from (section_entry).
_SECTION = ".section"

#: Largest entry written or read: a summary holds every idle gap and launch latency, so a huge trace's can be large.
ENTRY_LIMIT = 64 << 20
#: Default ceiling of the whole memo, MB (NTRACE_CACHE_MB).
DEFAULT_MB = 1024
#: How many entries a process writes between checks of the memo's size (and the first write checks).
_CHECK_EVERY = 256
#: Once over its ceiling, the memo is cut to this share of it, so it is not pruned again at the next write.
_KEEP = 0.75
#: The libraries whose versions are part of the key: they decode the JSON and compute every figure.
_LIBRARIES = ("polars", "msgspec", "orjson")

_writes = 0  # entries this process has written (the size is checked every _CHECK_EVERY)


def recall(entry: Path | None, path: Path) -> Summary | RankSummary | None:
    """What `entry` (see entry()) holds for the trace at `path`, or None (no memo, no such entry, a damaged one)."""
    from ntrace.summary import RankSummary, Summary

    if entry is None or (data := _read(entry)) is None:
        return None
    found: Summary | RankSummary | None
    if entry.suffix == _SUFFIX["summary"]:
        found = Summary.from_bytes(data)
    elif entry.suffix == _SUFFIX["timeline"]:
        found = Summary.from_bytes(data)
        if found is None or found.timeline is None:  # written whole or not at all: a forged or foreign entry
            return None
        found = replace(found, drawn_key=_digest(data))
    else:
        try:
            found = RankSummary.from_bytes(data)
        except ValueError:
            return None
    return found if found is not None and str(found.path) == str(path) else None


def remember(entry: Path | None, result: Summary | RankSummary) -> str | None:
    """Keep `result` in `entry` (see entry()); returns the digest of what was written, None when nothing was (the memo is off, cannot be written, or the entry would be too large)."""
    from ntrace.summary import Summary

    if entry is None:
        return None
    if isinstance(result, Summary) and result.timeline is not None and result.timeline.events.estimated_size() > ENTRY_LIMIT:
        return None  # a large trace's timeline: not serialized only to be found too large
    data = result.to_bytes()
    return _digest(data) if _write(entry, data) else None


def section_entry(drawn_key: str | None, *key: object) -> Path | None:
    """The entry of a report section drawn from the summary whose timeline entry has the digest `drawn_key`, with the rest of what it is drawn from (`key`); None without a digest or a memo."""
    root = directory()
    if drawn_key is None or root is None:
        return None
    return root / _code_dir() / (_digest(repr((drawn_key, key)).encode()) + _SECTION)


def recall_text(entry: Path | None) -> str | None:
    """The text `entry` (section_entry) holds, or None (no memo, no such entry, one that cannot be read or whose digest does not match it)."""
    if (data := _read(entry)) is None:
        return None
    digest, _, body = data.partition(b"\n")
    return body.decode() if digest.decode(errors="replace") == _digest(body) else None


def remember_text(entry: Path | None, text: str) -> None:
    """Keep `text` in `entry` (section_entry) after its digest, which recall_text checks; does nothing when the memo is off or cannot be written."""
    body = valid_text(text).encode()  # a lone surrogate (an undecodable file name) kept as its escape, as the page is written
    data = _digest(body).encode() + b"\n" + body
    if entry is not None and len(data) <= ENTRY_LIMIT:
        _write(entry, data)


def _read(entry: Path | None) -> bytes | None:
    """The bytes of `entry`, marked as just used; None when there is none, it cannot be read or it is larger than ENTRY_LIMIT."""
    if entry is None:
        return None
    try:
        with entry.open("rb") as fh:
            data = fh.read(ENTRY_LIMIT + 1)
    except OSError:
        return None
    if len(data) > ENTRY_LIMIT:
        return None
    with contextlib.suppress(OSError):  # a memo that cannot be written is still read
        os.utime(entry)  # the least recently used go first
    return data


def _write(entry: Path, data: bytes) -> bool:
    """Write `data` to `entry` whole (a temporary file renamed), pruning the memo every _CHECK_EVERY writes; whether it was written."""
    global _writes
    try:
        entry.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        with atomic_open(entry, durable=False) as fh:
            fh.write(data)
    except (OSError, NtraceError):
        return False
    if _writes % _CHECK_EVERY == 0:
        prune(entry.parent.parent)
    _writes += 1
    return True


def _digest(data: bytes) -> str:
    """The SHA-256 of `data`, in hex."""
    return hashlib.sha256(data).hexdigest()


def directory() -> Path | None:
    """Where the memo lives (NTRACE_CACHE_DIR, else the XDG cache directory), or None when NTRACE_CACHE=0 turns it off."""
    if os.environ.get("NTRACE_CACHE", "1").strip().lower() in ("0", "off", "no", "false"):
        return None
    return location()


def location() -> Path:
    """Where the memo is, on or off: NTRACE_CACHE_DIR, else ntrace's folder in the XDG cache directory (~/.cache by default)."""
    if given := os.environ.get("NTRACE_CACHE_DIR"):
        return Path(given)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "ntrace"


@dataclass(frozen=True)
class Usage:
    """Where the memo is, whether it is on, and what this ntrace's entries hold (what `ntrace cache` prints)."""

    directory: str
    enabled: bool
    entries: int
    bytes: int
    ceiling_bytes: int


def usage() -> Usage:
    """The memo's Usage now."""
    entries = _scan(location() / _code_dir())
    return Usage(str(location()), directory() is not None, len(entries), sum(size for _, size, _ in entries), _ceiling())


def clear() -> int:
    """Remove every entry (of this and of other ntrace code), and only those; returns how many files were removed."""
    root = location()
    removed = 0
    with contextlib.suppress(OSError):
        for code in root.iterdir():
            if code.name.startswith("summaries-") and code.is_dir() and not code.is_symlink():
                removed += len(_scan(code))
                shutil.rmtree(code, ignore_errors=True)
    return removed


def prune(root: Path) -> None:
    """Drop every entry directory of other ntrace code, then, when the rest passes the ceiling, the least recently used entries down to _KEEP of it."""
    current = _code_dir()
    with contextlib.suppress(OSError):
        for other in root.iterdir():
            if other.name.startswith("summaries-") and other.name != current:
                shutil.rmtree(other, ignore_errors=True)
    entries = _scan(root / current)
    total, ceiling = sum(size for _, size, _ in entries), _ceiling()
    if total <= ceiling:
        return
    for _, size, name in sorted(entries):
        if total <= ceiling * _KEEP:
            break
        with contextlib.suppress(OSError):
            os.unlink(name)
            total -= size


def _scan(where: Path) -> list[tuple[int, int, str]]:
    """The entries in one code's directory as (mtime ns, size, path); none when it cannot be listed."""
    entries = []
    with contextlib.suppress(OSError):
        for item in os.scandir(where):
            with contextlib.suppress(OSError):
                if item.is_file(follow_symlinks=False):
                    st = item.stat(follow_symlinks=False)
                    entries.append((st.st_mtime_ns, st.st_size, item.path))
    return entries


def _ceiling() -> int:
    """The memo's largest size in bytes (NTRACE_CACHE_MB, default DEFAULT_MB)."""
    try:
        mb = int(os.environ.get("NTRACE_CACHE_MB", DEFAULT_MB))
    except ValueError:
        mb = DEFAULT_MB
    return max(0, mb) << 20


def entry(path: Path, kind: Kind, fast: bool = True) -> Path | None:
    """The file of the entry of `kind` for the trace at `path` as it is now, or None when the memo is off, the trace is a downloaded copy or cannot be stat'ed.

    Taken before the trace is read, so a file that changes while it is analyzed never gets the
    summary of what was read under its new identity.
    """
    root = directory()
    if root is None or _is_copy(path):
        return None
    try:
        versions = [identity(os.stat(path))] + [_identity_or_absent(m) for m in manifest_candidates(path)]
        key = _digest(repr((os.fsencode(path), fast, versions)).encode())
    except (OSError, UnicodeError):  # UnicodeError: a name with a lone surrogate, which no file system can hold
        return None
    return root / _code_dir() / (key + _SUFFIX[kind])


def _identity_or_absent(path: Path) -> tuple[int, ...] | None:
    """The identity of the file at `path` (ntrace.io.files.identity), or None for a file that is not there (or cannot be stat'ed)."""
    try:
        return identity(os.stat(path))
    except OSError:
        return None


def _is_copy(path: Path) -> bool:
    """Whether `path` lies in a run's temporary directory of downloaded copies (removed after the run: an entry could never be read)."""
    try:
        inside = Path(os.path.abspath(path)).relative_to(os.path.abspath(tempfile.gettempdir()))
    except ValueError:
        return False
    return bool(inside.parts) and inside.parts[0].startswith(COPIES_PREFIX)


@lru_cache(maxsize=1)
def _code_dir() -> str:
    """The directory of this code's entries: named by a digest of every ntrace source file (Python, C and the built native modules) and the versions of the libraries that decode and compute."""
    from importlib import metadata  # here: slow to import, and entry() is asked before a read-ahead starts

    package = Path(__file__).resolve().parent.parent
    digest = hashlib.sha256()
    for library in _LIBRARIES:
        with contextlib.suppress(metadata.PackageNotFoundError):
            digest.update(f"{library}=={metadata.version(library)}\0".encode())
    kinds = (".py", ".c", *EXTENSION_SUFFIXES)
    for source in sorted(p for p in package.rglob("*") if p.name.endswith(kinds) and p.is_file()):
        digest.update(source.relative_to(package).as_posix().encode() + b"\0" + source.read_bytes() + b"\0")
    return f"summaries-{digest.hexdigest()[:24]}"
