"""Find framework trace files: a path that is a trace, or every trace under a directory (searched recursively)."""

from __future__ import annotations

import gzip
import os
import re
import zlib
from pathlib import Path

from ntrace.errors import InputError

#: File names that are traces whatever their content (so a damaged one is reported, not skipped).
TRACE_NAME = re.compile(r"(^trace\.json$|\.pt\.trace\.json$|^neuron_framework_trace_rank_\d+\.json$|trace.*\.json$)")
_SUFFIXES = (".json", ".json.gz")
_SNIFF = 4096


def is_trace_name(path: Path) -> bool:
    """True when the file name alone says it is a framework trace."""
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    return bool(TRACE_NAME.search(name))


def looks_like_trace(path: Path) -> bool:
    """True when the first bytes of a .json/.json.gz file hold Chrome-trace keys (traceEvents, or an event's "ph")."""
    try:
        with path.open("rb") as fh:
            head = fh.read(_SNIFF)
        if head[:2] == b"\x1f\x8b":
            head = zlib.decompressobj(wbits=31).decompress(head, _SNIFF)
    except (OSError, zlib.error, EOFError, gzip.BadGzipFile):
        return False
    return b'"traceEvents"' in head or b'"ph"' in head


def find_traces(root: str | Path) -> list[Path]:
    """Every framework trace at or under `root`, sorted; a file given directly is returned as is."""
    root = Path(root)
    if not root.exists():
        raise InputError(root, "does not exist")
    if root.is_file():
        return [root]
    found: list[Path] = []
    for dirpath, dirnames, filenames in os.walk(root, onerror=None, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if name.endswith(".parquet") or (name.endswith(_SUFFIXES) and (is_trace_name(path) or looks_like_trace(path))):
                found.append(path)
    return found
