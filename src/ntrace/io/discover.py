"""Find framework trace files: a path that is a trace, or every trace under a directory (searched recursively)."""

from __future__ import annotations

import os
import re
import zlib
from pathlib import Path

from ntrace.io.files import regular_file_error
from ntrace.neuron.device.layout import is_profile_part

#: File names that are traces whatever their content (so a damaged one is reported, not skipped): "trace" before ".json",
#: which covers trace.json, *.pt.trace.json and neuron_framework_trace_rank_<N>.json.
TRACE_NAME = re.compile(r"trace.*\.json$")
_SUFFIXES = (".json", ".json.gz")
#: What a rank-partitioned dataset's summary file (ntrace.io.dataset) adds to its events file's name (less `.parquet`), after a leading `_`.
SUMMARY_SUFFIX = ".summary.json"
_SNIFF = 4096
#: Keys Kineto writes after "schemaVersion" and before "traceEvents": a job's distributedInfo (every rank of every process group) can push traceEvents far past the sniffed bytes.
_KINETO_HEAD = (b'"deviceProperties"', b'"distributedInfo"')


def is_trace_name(path: Path) -> bool:
    """True when the file name alone says it is a framework trace."""
    name = path.name[:-3] if path.name.endswith(".gz") else path.name
    return bool(TRACE_NAME.search(name))


def is_rank_summary(path: Path) -> bool:
    """True when the file name is a dataset's summary file's (`_<trace>.summary.json`): JSON, but no trace."""
    return path.name.startswith("_") and path.name.endswith(SUMMARY_SUFFIX)


def looks_like_trace(path: Path) -> bool:
    """True when the first bytes of a .json/.json.gz file hold Chrome-trace keys (traceEvents, or an event's "ph") or Kineto's header (schemaVersion with deviceProperties or distributedInfo).

    A file that cannot be opened counts as a trace, so loading it reports why instead of it vanishing.
    """
    try:
        with path.open("rb") as fh:
            head = fh.read(_SNIFF)
    except OSError:
        return True
    try:
        if head[:2] == b"\x1f\x8b":
            head = zlib.decompressobj(wbits=31).decompress(head, _SNIFF)
    except zlib.error:
        return False
    return b'"traceEvents"' in head or b'"ph"' in head or (b'"schemaVersion"' in head and any(key in head for key in _KINETO_HEAD))


def find_traces(root: str | Path, warnings: list[str] | None = None) -> list[Path]:
    """Every framework trace at or under `root`, sorted; a file given directly is returned as is.

    Symbolic links to directories are not followed (no loops); files that are not regular (pipes,
    sockets, devices) and directories that cannot be listed are skipped, each noted in `warnings`.
    """
    root = Path(root)
    notes = warnings if warnings is not None else []
    if not root.is_dir():
        if not root.exists() and (error := regular_file_error(root)):  # missing, a broken link, a link loop
            raise error
        return [root]
    found: list[Path] = []

    def unlistable(exc: OSError) -> None:
        notes.append(f"skipped {exc.filename}: cannot be listed ({exc.strerror or exc})")

    for dirpath, dirnames, filenames in os.walk(root, onerror=unlistable, followlinks=False):
        dirnames.sort()
        for name in sorted(filenames):
            path = Path(dirpath) / name
            if not name.endswith((".parquet", *_SUFFIXES)) or is_profile_part(path) or is_rank_summary(path):  # a processed profile's tables are read as device profiles
                continue
            if (error := regular_file_error(path)) is not None and "cannot be read" not in error.problem:
                notes.append(f"skipped {error}")
            elif name.endswith(".parquet") or is_trace_name(path) or looks_like_trace(path):
                found.append(path)
    return found
