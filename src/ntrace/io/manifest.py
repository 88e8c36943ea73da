"""The capture manifest (`capture.json`, written by `ntrace capture` beside each variant) and how a trace finds its own."""

from __future__ import annotations

import stat
from pathlib import Path
from typing import Any

import orjson

CAPTURE_FILE = "capture.json"
CAPTURE_SCHEMA = "ntrace.capture/1"

#: The largest manifest read (ntrace writes a few KB): a larger capture.json (a sparse or runaway file) is ignored, never read into memory.
MANIFEST_LIMIT = 1 << 20
#: How far above a trace's folder a manifest may sit: <variant>/<instance>_pid_<pid>/<timestamp>/trace.json.
_LEVELS = 3


def find_manifest(path: str | Path) -> dict[str, Any] | None:
    """The nearest readable capture.json (a regular file of at most MANIFEST_LIMIT bytes) with a "variant" at `path` (a folder or a trace) or a few folders above it, else None."""
    for manifest in manifest_candidates(path):
        try:
            st = manifest.stat()
            if not stat.S_ISREG(st.st_mode) or st.st_size > MANIFEST_LIMIT:
                continue
            with manifest.open("rb") as fh:
                doc = orjson.loads(fh.read(MANIFEST_LIMIT + 1))
        except (OSError, orjson.JSONDecodeError):
            continue
        if isinstance(doc, dict) and isinstance(doc.get("variant"), str) and doc["variant"]:
            return doc
    return None


def manifest_candidates(path: str | Path) -> list[Path]:
    """Where find_manifest looks for `path`'s capture.json, nearest first: its folder (or itself, a folder) and a few above."""
    path = Path(path).resolve()
    start = path if path.is_dir() else path.parent
    return [where / CAPTURE_FILE for where in (start, *list(start.parents)[:_LEVELS])]


def variant_name(path: str | Path) -> str:
    """The manifest's "variant" for `path`, else the folder's or trace file's own name."""
    doc = find_manifest(path)
    if doc is not None:
        return str(doc["variant"])
    path = Path(path)
    return path.name if path.is_dir() else path.name.removesuffix(".gz").removesuffix(".json").removesuffix(".pt.trace")
