"""The files a capture writes beside each trace: `capture.json` (what was run, where, with which versions) and `key_averages.json` (what torch's own key_averages() reported: the oracle for ntrace's numbers)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from ntrace.errors import CaptureError
from ntrace.io.atomic import write_bytes
from ntrace.io.manifest import CAPTURE_FILE, CAPTURE_SCHEMA, find_manifest

KEY_AVERAGES_FILE = "key_averages.json"
#: Schema tag of key_averages.json; neither side file may hold a "traceEvents" or "ph" key (ntrace.io.discover would take it for a trace).
KEY_AVERAGES_SCHEMA = "ntrace.key_averages/1"


def check_output(out: Path, force: bool) -> None:
    """Refuse an output path that is a file, or a directory that is not empty unless `force` (which never deletes anything); creates nothing."""
    if out.exists() and not out.is_dir():
        raise CaptureError(out, "exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not force:
        raise CaptureError(out, "exists and is not empty; pass --force to overwrite the files capture writes (nothing else is deleted)")


def write_json(path: Path, doc: dict[str, Any]) -> None:
    """Write a side file atomically (temporary name, then rename), so an interrupted capture leaves no half file."""
    write_bytes(path, orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n")


def key_averages(prof: Any) -> list[dict[str, Any]]:
    """Per op, what torch's key_averages() reports (µs, torch's own numbers)."""
    return [
        {
            "name": e.key,
            "count": e.count,
            "self_cpu_time_total": e.self_cpu_time_total,
            "cpu_time_total": e.cpu_time_total,
            "self_device_time_total": e.self_device_time_total,
            "device_time_total": e.device_time_total,
        }
        for e in prof.key_averages()
    ]


def capture_info(trace: str | Path) -> dict[str, Any] | None:
    """The capture.json that `ntrace capture` wrote for a trace (in its folder or a few above, as Neuron nests traces), or None."""
    doc = find_manifest(trace)
    return doc if doc is not None and doc.get("schema") == CAPTURE_SCHEMA else None
