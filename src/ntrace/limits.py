"""Memory limits for decoding: how much is available, how much a trace will need, and failing early when it will not fit.

Decoding holds the JSON text, the decoder's objects and the columns at the same time. Measured
(peak RSS less the interpreter's, a 143 MiB synthetic trace of 500 000 events): the fast path
peaks at 3.6× the uncompressed JSON, the plain Python-object path (`--plain`, and repairs of
damaged files) at 11.8×; DECODE_FACTOR and PLAIN_DECODE_FACTOR round these up. A trace
whose estimate exceeds the memory available fails before decoding, with a message naming both
sizes, instead of being killed by the OS half-way. `NTRACE_MEMORY_LIMIT` (bytes, or with a
K/M/G suffix) lowers the limit, for shared machines and for tests.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from ntrace.errors import InputError

#: Peak memory while decoding, as a multiple of the uncompressed JSON size (fast path).
DECODE_FACTOR = 4
#: The same for the plain decoder, which builds a Python dict per event.
PLAIN_DECODE_FACTOR = 12

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def available_memory() -> int:
    """Bytes this process may still allocate: the smallest of MemAvailable, the cgroup's headroom and NTRACE_MEMORY_LIMIT."""
    limits = (_meminfo_available() or _sysconf_available(), _cgroup_headroom(), _env_limit())
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


def size(n: int) -> str:
    """A byte count for people: 1.5 GiB, 320.0 MiB, 12 bytes."""
    for unit, scale in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= scale:
            return f"{n / scale:.1f} {unit}"
    return f"{n} bytes"


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


def _env_limit() -> int | None:
    """NTRACE_MEMORY_LIMIT in bytes (suffixes K, M, G, T), or None when unset or unreadable."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMGT]?)i?B?\s*", os.environ.get("NTRACE_MEMORY_LIMIT", ""), re.IGNORECASE)
    return int(match.group(1)) * _UNITS[match.group(2).upper()] if match else None
