"""The analysis stored with a Parquet cache: a profile's result frames, written by `ntrace convert`, reused by `ntrace analyze`.

Everything `analyze` prints is a handful of small frames (lanes, categories, tracks, gaps,
steps, the op groups every op-table view sums, findings) and a few numbers. `convert` computes
them once and stores them in the Parquet file's metadata (Arrow IPC, zstd, base64), keyed by a
digest of ntrace's own source code: results written by any other code, or classified with extra
lane rows, are never reused, the analysis is recomputed from the stored events instead. A
profile read with its stored analysis reads its events from the file only when something asks
for them (the HTML timeline, a Perfetto export, an analysis that is not stored).
"""

from __future__ import annotations

import base64
import hashlib
import io
from functools import cache, cached_property
from pathlib import Path
from typing import Any, Callable

import orjson
import polars as pl

from ntrace.profile import Profile

#: The Profile frames stored, by attribute name.
FRAMES: tuple[str, ...] = ("lanes", "categories", "tracks", "gaps", "steps", "op_groups", "findings")
#: The Profile values stored (JSON numbers and text; window is a pair).
VALUES: tuple[str, ...] = ("window", "complete_count", "device", "hardware_ns", "self_cpu_ns")


@cache
def code_digest() -> str:
    """A digest of every ntrace source file: stored results are reused only by the code that computed them."""
    root = Path(__file__).parent
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*.py")):
        digest.update(path.relative_to(root).as_posix().encode() + b"\0" + path.read_bytes() + b"\0")
    return digest.hexdigest()


def analysis(profile: Profile) -> dict[str, Any]:
    """The stored attributes (name → frame or value) of a profile; computes whatever it has not computed yet."""
    profile.compute()
    return {name: getattr(profile, name) for name in (*FRAMES, *VALUES)}


def pack(profile: Profile) -> str:
    """The profile's analysis as one metadata value (JSON text)."""
    stored = analysis(profile)
    frames = {}
    for name in FRAMES:
        buf = io.BytesIO()
        stored[name].write_ipc(buf, compression="zstd")
        frames[name] = base64.b64encode(buf.getvalue()).decode()
    values = {name: stored[name] for name in VALUES}
    return orjson.dumps({"code": code_digest(), "values": values, "frames": frames}).decode()


def unpack(text: str) -> dict[str, Any] | None:
    """The stored attributes (name → value) when `text` was packed by this very code, else None (so the analysis is recomputed)."""
    try:
        doc = orjson.loads(text)
        if doc.get("code") != code_digest():
            return None
        out: dict[str, Any] = {name: pl.read_ipc(io.BytesIO(base64.b64decode(doc["frames"][name]))) for name in FRAMES}
        values = doc["values"]
        out.update({name: values[name] for name in VALUES})
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, AttributeError, pl.exceptions.PolarsError, OSError):
        return None  # damaged or foreign: the events are still there to analyze
    out["window"] = tuple(out["window"])
    return out


class StoredProfile(Profile):
    """A Profile whose analysis was computed elsewhere (read from a Parquet cache, or made by a worker process); its events are read on first use."""

    def __init__(self, path: Path, read_events: Callable[[], pl.DataFrame], meta: dict[str, Any], warnings: list[str], stored: dict[str, Any]) -> None:
        self.path, self.meta, self.warnings, self.artifacts = path, meta, warnings, None
        self._read_events = read_events
        self.__dict__.update(stored)  # the cached_property values, as if computed

    @classmethod
    def of(cls, profile: Profile, read_events: Callable[[], pl.DataFrame]) -> "StoredProfile":
        """`profile` reduced to its analysis (small to send between processes); `read_events` gives its events again when needed."""
        return cls(profile.path, read_events, profile.meta, profile.warnings, analysis(profile))

    def compute(self) -> "StoredProfile":
        """Nothing to compute: every result was stored."""
        return self

    @cached_property
    def events(self) -> pl.DataFrame:  # type: ignore[override]
        """The events frame, read (from the Parquet file, or decoded again) the first time an analysis needs it."""
        return self._read_events()
